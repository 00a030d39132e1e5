"""The engine after errors, around fork, and under a loop that never syncs (issue 17, items 4-6).

* Memory after errors: a failed op's arrays (and its inputs) are freed when the user drops
  them, although its error is kept for a sync point, and the engine goes idle again (small
  ops back on the inline path).
* Fork: ``os.fork`` returns at once while another thread keeps issuing work, and the child
  works; what the parent was still computing is a clear error in the child.
* Back-pressure: a loop that never syncs cannot queue unbounded host tasks.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import nda
from nda.engine.threaded import ThreadedEngine

from test_engine_threaded import parked  # noqa: F401  (the fixture: every op a task for an executor that runs only when told)


def test_a_failed_op_behind_pending_work_frees_its_arrays_and_the_engine_goes_idle(parked, failing_sin):
    engine, executor = parked
    refs = []
    for _ in range(50):
        x = nda.ones((3, 5))  # pending: the parked executor has not run it
        y = nda.sin(x)  # fails in its kernel, after x
        refs += [weakref.ref(x), weakref.ref(y)]
        del x, y
    executor.run_all()
    with pytest.raises(ZeroDivisionError, match="kernel exploded") as info:
        nda.waitall()
    assert any("op 'sin'" in n for n in info.value.__notes__)
    del info
    gc.collect()
    assert sum(r() is not None for r in refs) == 0, "a kept error keeps a failed array or its input alive"
    assert nda.engine.state.limit == engine.idle_limit, "the engine must be idle again: small ops inline"


def test_the_error_raised_at_a_sync_point_does_not_keep_the_array(parked, failing_sin):
    _, executor = parked
    y = nda.sin(nda.ones((3, 5)))
    executor.run_all()
    for _ in range(2):  # raised twice (each read raises it again), kept in between
        with pytest.raises(ZeroDivisionError) as info:
            y.asnumpy()
        assert info.value.__cause__ is not None and "exploding_sin" in str(info.value.__cause__), "the kernel's traceback"
    ref = weakref.ref(y)
    del y, info
    gc.collect()
    assert ref() is None


def test_memory_stays_flat_over_many_failures_behind_pending_work(parked, failing_sin):
    """The issue's measurement, shrunk: 2000 failing ops behind pending work keep nothing."""
    engine, executor = parked

    def failures(n: int) -> None:
        for _ in range(n):
            y = nda.sin(nda.ones((3, 5)))
            del y
        executor.run_all()
        with pytest.raises(ZeroDivisionError):
            nda.waitall()
        gc.collect()

    failures(200)  # warm up the caches
    before = len(gc.get_objects())
    failures(2000)
    assert len(gc.get_objects()) - before < 200  # before the fix: tens of thousands (frames, arrays, tasks)
    assert not engine._graph.poison


# ----------------------------------------------------------------------------- fork


def _child(queue, pending):
    try:
        fine = float(nda.sum(nda.arange(10, dtype=nda.float64)))
        try:
            pending.asnumpy()
            seen = "value"
        except RuntimeError as err:
            seen = str(err)
        queue.put((fine, seen))
    except BaseException as err:  # noqa: BLE001
        queue.put(("error", repr(err)))


@pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "fork"), reason="fork is POSIX-only")
@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_fork_returns_promptly_while_another_thread_issues_work(device):
    if device == "sim":
        pytest.importorskip("nda_sim")
    previous = nda.engine.current()
    nda.engine.use(ThreadedEngine(inline_limit=0))  # every cpu op a worker's task: work is always in flight
    stop = threading.Event()

    def busy() -> None:
        x = nda.ones(1 << 16, device=device)
        while not stop.is_set():
            x = nda.exp(x * 0.0)

    issuer = threading.Thread(target=busy, daemon=True)
    issuer.start()
    try:
        time.sleep(0.2)
        pending = nda.exp(nda.ones(1 << 20, device=device))
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        start = time.perf_counter()
        proc = ctx.Process(target=_child, args=(queue, pending))
        proc.start()
        forked_in = time.perf_counter() - start
        fine, seen = queue.get(timeout=60)
        proc.join(timeout=60)
        assert forked_in < 2.0, f"fork took {forked_in:.1f} s: it waited for the engine to go quiet"
        assert proc.exitcode == 0 and fine == 45.0
        assert seen == "value" or "still being computed when the process forked" in seen
        assert float(pending[0]) == pytest.approx(np.e)  # the parent is unaffected
    finally:
        stop.set()
        issuer.join(10)
        nda.waitall()
        nda.engine.use(previous if previous.name != "threaded" else "threaded")


# ----------------------------------------------------------------------------- back-pressure


def test_a_loop_that_never_syncs_stays_within_the_bound_of_pending_tasks(parked):
    """The executor never runs on its own here: at the bound, the issuing thread runs queued
    work itself (the oldest first), so the loop finishes with never more than 64 pending."""
    engine, executor = parked
    engine.max_pending = 64
    seen = []
    nda.profiler.start()
    x = nda.ones(4)
    for _ in range(500):
        x = x + 1.0
        seen.append(engine.pending())
    events = nda.profiler.stop()
    assert max(seen) <= 64
    assert sum(e.thread == "MainThread" for e in events) >= 500 - 64
    executor.run_all()
    np.testing.assert_array_equal(x.asnumpy(), np.full(4, 501.0))


# ----------------------------------------------------------------------------- threads


@pytest.mark.parametrize("engine", ["threaded", "naive"])
@pytest.mark.parametrize(("device", "n"), [("cpu", 8), ("cpu", 1 << 21), ("sim", 8), ("sim", 1 << 18)])
def test_in_place_updates_from_threads_under_a_lock_are_never_lost(engine, device, n):
    """The README's rule for one array updated by several threads: synchronize them (a lock).

    Then every update lands, whether an op runs inline, as an engine task or on a device
    queue where the op has only been *enqueued* when the lock is released: nda orders each
    op after the ops issued before it on the same array, from any thread.
    """
    if device == "sim":
        pytest.importorskip("nda_sim")
    previous = nda.engine.current()
    nda.engine.use(engine)
    try:
        x = nda.zeros(n, device=device)
        lock = threading.Lock()

        def work() -> None:
            for _ in range(100):
                with lock:
                    x.__iadd__(1.0)  # x += 1.0 on the shared array

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        np.testing.assert_array_equal(x.asnumpy(), np.full(n, 300.0))
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")
