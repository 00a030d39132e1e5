"""Mid-size ops on the threaded engine (issue 29, item 6): no worker for ``y = f(x); read y``.

A large op issued while nothing is pending is *held* (``nda.engine._held``): a sync point
that needs it runs it on the caller's thread, without a worker or a graph node; the next op
turns it into a task, sent to a worker at once when that op is independent (so independent
chains still overlap) and kept for the sync point when it depends on pending work. A read
of an array nothing writes takes no lock. Speed itself is measured in
``benchmarks/engine.py`` (section "mid-size ops"), never asserted here; these tests check
the mechanisms, with an executor that counts what it is given.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nda
from nda.engine.threaded import ThreadedEngine, WorkerPool


class CountingExecutor:
    """Real worker threads, and a record of the tasks they were handed."""

    def __init__(self) -> None:
        self.pool = WorkerPool("counting", 2)
        self.submitted = 0

    def submit(self, fn) -> None:
        self.submitted += 1
        self.pool.submit(fn)

    def shutdown(self) -> None:
        self.pool.shutdown()


@pytest.fixture
def counted():
    executor = CountingExecutor()
    previous = nda.engine.current()
    engine = nda.engine.use(ThreadedEngine(executor_factory=lambda device: executor, inline_limit=1 << 12))
    yield engine, executor
    try:
        nda.waitall()
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")


N = 1 << 14  # above the fixture's inline threshold


def test_an_op_read_right_away_never_reaches_a_worker(counted):
    engine, executor = counted
    host = np.random.default_rng(0).random(N)
    x = nda.asarray(host)
    x.wait_to_read()
    for k in range(3):  # different values each time
        nda.profiler.start()
        y = nda.exp(x) * float(k + 1)
        np.testing.assert_allclose(y.asnumpy(), np.exp(host) * (k + 1))
        events = nda.profiler.stop()
        assert {e.name for e in events} == {"exp", "multiply"}
        assert {e.thread for e in events} == {threading.current_thread().name}, "the reading thread ran both"
    assert executor.submitted == 0, "no worker was woken for work the caller waited for"
    assert engine.pending() == 0 and nda.engine.state.limit == engine.idle_limit, "idle again: small ops inline"


def test_an_independent_op_sends_the_held_one_to_a_worker(counted):
    engine, executor = counted
    a, b = nda.full(N, 0.5), nda.full(N, 2.0)  # nda's own memory (NumPy's would be shared: ops on it complete at once)
    nda.waitall()
    before = executor.submitted
    ya = nda.sin(a)  # held
    assert executor.submitted == before and engine.pending() == 1
    za = nda.cos(ya)  # depends on it: the held op becomes a task, kept for a sync point
    assert executor.submitted == before
    yb = nda.sin(b)  # independent: the first chain goes to a worker now, overlapping with this one
    assert executor.submitted > before
    np.testing.assert_allclose(za.asnumpy(), np.cos(np.sin(np.full(N, 0.5))))
    np.testing.assert_allclose(yb.asnumpy(), np.sin(np.full(N, 2.0)))


def test_a_held_op_is_ordered_before_later_ops_from_other_threads(counted):
    """Another thread's op that reads the held op's output waits for it (it became a task first)."""
    x = nda.arange(N, dtype=nda.float64)
    x.wait_to_read()
    y = x * 3.0  # held
    results = {}

    def reader() -> None:
        results["z"] = (y + 1.0).asnumpy()

    t = threading.Thread(target=reader)
    t.start()
    t.join(30)
    np.testing.assert_array_equal(results["z"], np.arange(N) * 3.0 + 1.0)
    np.testing.assert_array_equal(y.asnumpy(), np.arange(N) * 3.0)


def test_a_failed_held_op_raises_at_the_read_with_its_note_and_poisons_its_output(counted):
    def exploding_positive(x):
        raise ZeroDivisionError("kernel exploded")

    nda.dispatch.register("positive", "cpu", ["float64"], exploding_positive, priority=100, supports=lambda x: x.shape == (N,), backend="test-held")
    try:
        x = nda.ones(N)
        x.wait_to_read()
        y = nda.positive(x)  # held: fails only when a read runs it
        with pytest.raises(ZeroDivisionError, match="kernel exploded") as info:
            y.wait_to_read()
        assert any("op 'positive'" in n and "test_engine_held.py" in n for n in info.value.__notes__)
        with pytest.raises(ZeroDivisionError):
            (y + 1.0).asnumpy()  # what reads it fails the same way
        assert (x + 1.0).asnumpy()[0] == 2.0  # its input is fine
    finally:
        nda.dispatch.unregister_backend("test-held")


def test_a_read_of_a_ready_array_takes_no_lock(threaded):
    """The read of an array nothing is computing does not touch the engine's lock (a
    10k-element ``(x + y).wait_to_read()`` paid for it: 1.9x NumPy)."""
    x = nda.ones(8) + 1
    engine = threaded
    with engine._lock:  # another thread inside the engine: the read must not wait for it
        done = threading.Event()
        t = threading.Thread(target=lambda: (x.wait_to_read(), done.set()))
        t.start()
        assert done.wait(5), "wait_to_read of a finished array blocked on the engine's lock"
    t.join(5)


def test_the_default_inline_threshold_covers_mid_size_ops():
    """Ops under 2**20 elements run inline on an idle engine (``NDA_INLINE_MAX``): below that, the
    engine's bookkeeping after a cache-emptying op cost more than any overlap could gain."""
    assert ThreadedEngine().idle_limit == 1 << 20 or "NDA_INLINE_MAX" in __import__("os").environ


def test_two_independent_chains_still_run_at_the_same_time(threaded):
    """The overlap the engine exists for: chain A's first op is held only until chain B's first
    op is issued, then both chains run on workers at once (their kernels' time intervals overlap)."""
    n = 2 * threaded.idle_limit
    a, b = nda.full(n, 0.25), nda.full(n, 0.75)
    nda.waitall()
    nda.profiler.start()
    ra, rb = a, b
    for i in range(4):
        ra = nda.exp(ra) if i % 2 == 0 else nda.sin(ra)
    for i in range(4):
        rb = nda.exp(rb) if i % 2 == 0 else nda.sin(rb)
    ra.wait_to_read()
    rb.wait_to_read()
    events = nda.profiler.stop()
    assert len(events) == 8
    assert len({e.thread for e in events}) >= 2, "the two chains ran on more than one thread"
    overlapping = sum(1 for e in events for f in events if e is not f and e.start < f.end and f.start < e.end)
    assert overlapping > 0, "no two ops ran at the same time"
    ref_a, ref_b = np.full(4, 0.25), np.full(4, 0.75)
    for i in range(4):
        ref_a = np.exp(ref_a) if i % 2 == 0 else np.sin(ref_a)
        ref_b = np.exp(ref_b) if i % 2 == 0 else np.sin(ref_b)
    np.testing.assert_allclose(ra.asnumpy()[:4], ref_a)
    np.testing.assert_allclose(rb.asnumpy()[:4], ref_b)
