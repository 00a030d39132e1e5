"""The threaded engine: concurrency, ordering, errors at sync points, Ctrl-C, fork, async completion, profiler."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

import nda
from nda import dispatch
from nda.engine import Completion


def test_results_match_numpy_with_every_op_a_task(all_tasks):
    x = nda.reshape(nda.arange(12, dtype=nda.float64), (3, 4))
    y = x * 2 + 1
    y += x
    v = y[1]
    v *= 10
    s = nda.sum(nda.sin(y), axis=0)
    assert all_tasks.pending() >= 0
    host = np.arange(12, dtype=np.float64).reshape(3, 4)
    ref = host * 2 + 1
    ref += host
    ref[1] *= 10
    np.testing.assert_allclose(y.asnumpy(), ref)
    np.testing.assert_allclose(s.asnumpy(), np.sin(ref).sum(axis=0))
    nda.waitall()
    assert all_tasks.pending() == 0


def test_error_raised_at_sync_point_with_op_and_site(all_tasks, failing_sin):
    x = nda.ones((3, 5))
    y = nda.sin(x)  # fails in the kernel, not here
    z = y + 1  # reads a poisoned array: does not run, inherits the error
    ok = nda.cos(nda.ones((2, 2)))  # independent: fine
    np.testing.assert_allclose(ok.asnumpy(), np.cos(np.ones((2, 2))))
    with pytest.raises(ZeroDivisionError, match="kernel exploded") as info:
        y.asnumpy()
    note = "\n".join(getattr(info.value, "__notes__", []))
    assert "op 'sin'" in note and f"{os.path.basename(__file__)}:" in note
    with pytest.raises(ZeroDivisionError):
        z.wait_to_read()
    nda.waitall()  # already raised at a sync point: waitall does not raise it again
    assert (nda.ones(2) + 1).tolist() == [2.0, 2.0]
    w = nda.sin(nda.ones((3, 5)))  # fails again, and nobody reads it
    with pytest.raises(ZeroDivisionError):
        nda.waitall()
    nda.waitall()  # raised once, then clean
    with pytest.raises(ZeroDivisionError):
        w.asnumpy()  # the array itself stays failed
    assert (nda.ones(2) + 1).tolist() == [2.0, 2.0]


def test_waitall_raises_first_error_once_in_default_engine(threaded, failing_sin):
    big = nda.ones(1 << 21)  # large: deferred (held, then a worker's task once the next op comes)
    y = nda.sin(nda.ones((3, 5)))
    with pytest.raises(ZeroDivisionError):
        nda.waitall()
    nda.waitall()
    assert float(nda.sum(big)) == float(1 << 21)
    with pytest.raises(ZeroDivisionError):
        repr(y)


def test_out_of_memory_surfaces_as_memory_error(all_tasks):
    huge = nda.zeros((1 << 20, 1 << 20, 1 << 10))  # 8 PiB: the allocation fails in the kernel
    assert huge.shape == (1 << 20, 1 << 20, 1 << 10)
    fine = nda.arange(3) + 1
    with pytest.raises(MemoryError):
        huge.wait_to_read()
    assert fine.tolist() == [1, 2, 3]
    nda.waitall()


def test_error_inside_view_write_poisons_the_base(all_tasks):
    x = nda.zeros(10)
    v = x[2:6]
    v[nda.asarray([7])] = 1.0  # index 7 is out of bounds for the view: only the kernel knows
    unrelated = nda.ones(3) * 2
    with pytest.raises(IndexError):
        x.asnumpy()
    with pytest.raises(IndexError):
        v.asnumpy()
    assert unrelated.tolist() == [2.0, 2.0, 2.0]
    nda.waitall()


def test_two_independent_chains_overlap(threaded):
    """Large ops go to the workers: issuing two chains returns before the work is done."""
    a = nda.ones(1 << 22)
    b = nda.ones(1 << 22)
    nda.waitall()
    start = time.perf_counter()
    for _ in range(4):
        a = nda.exp(nda.sin(a))
        b = nda.exp(nda.sin(b))
    issued = time.perf_counter() - start
    a.wait_to_read()
    b.wait_to_read()
    total = time.perf_counter() - start
    assert issued < total, "issuing must not wait for the work"
    np.testing.assert_allclose(a.asnumpy()[:3], b.asnumpy()[:3])


def test_async_completion_is_awaited(all_tasks):
    """A kernel may return a Completion; dependants wait until it is signalled."""
    finished = []

    def slow_fill(x):
        done = Completion()

        def later():
            time.sleep(0.2)
            x[...] = 7.0
            finished.append(True)
            done.done()

        threading.Thread(target=later).start()
        return done

    x = nda.zeros(4)
    dispatch.register(
        "setitem",
        "cpu",
        ["float64"],
        lambda x, key, value: slow_fill(x),
        priority=100,
        supports=lambda x, key, value: value == -123.0,
        backend="test-async",
    )
    try:
        x[...] = -123.0
        y = x + 1
        assert y.tolist() == [8.0] * 4
        assert finished == [True]
    finally:
        dispatch.unregister_backend("test-async")


def test_many_user_threads(all_tasks):
    results = {}

    def work(i):
        x = nda.full((50,), float(i))
        for _ in range(20):
            x = x + 1
        results[i] = float(nda.sum(x))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == {i: 50.0 * (i + 20) for i in range(3)}


def _child_computes(queue):
    x = nda.arange(1 << 21, dtype=nda.float64)  # large: uses the child's fresh engine
    queue.put(float(nda.sum(x * 2)))


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method is POSIX-only")
def test_fork_child_gets_a_fresh_engine():
    pending = nda.exp(nda.ones(1 << 20))  # work in flight in the parent at fork time
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_computes, args=(queue,))
    proc.start()
    value = queue.get(timeout=60)
    proc.join(timeout=60)
    assert proc.exitcode == 0
    n = 1 << 21
    assert value == float(n * (n - 1))
    assert float(pending[0]) == pytest.approx(np.e)


@contextlib.contextmanager
def _wait_interrupted_by_ctrl_c(slow):
    """Register ``slow`` as the float64 (1, 1, 1) ``positive`` kernel, issue ``y = positive(ones)``
    and wait for it with a KeyboardInterrupt arriving 0.2 s in; yields ``y`` once the interrupt
    has ended the wait (well before ``slow`` could finish)."""
    dispatch.register("positive", "cpu", ["float64"], slow, priority=100, supports=lambda x: x.shape == (1, 1, 1), backend="test-slow")
    old = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        y = nda.positive(nda.ones((1, 1, 1)))
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        start = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            y.wait_to_read()
        assert time.perf_counter() - start < 1.2, "the wait must be interrupted, not finish"
        yield y
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        dispatch.unregister_backend("test-slow")


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_ctrl_c_interrupts_a_wait_and_leaves_the_engine_consistent(all_tasks):
    def slow(x):
        time.sleep(1.5)
        return x

    with _wait_interrupted_by_ctrl_c(slow) as y:
        assert y.tolist() == [[[1.0]]], "the op still completes; the engine is consistent"


def test_profiler_records_ops_and_writes_chrome_trace(threaded, tmp_path):
    nda.profiler.start()
    x = nda.ones(8)
    y = nda.exp(x) + x
    big = nda.sin(nda.ones(1 << 21))
    y.wait_to_read()
    events = nda.profiler.stop()
    names = [e.name for e in events]
    assert {"ones", "exp", "add", "sin"} <= set(names)
    add = next(e for e in events if e.name == "add")
    assert add.route_name == "numpy.add" and add.device == "cpu:0" and add.end >= add.start
    trace = nda.profiler.chrome_trace(str(tmp_path / "trace.json"))
    assert (tmp_path / "trace.json").stat().st_size > 0
    assert any(ev.get("name") == "sin" and ev["ph"] == "X" for ev in trace["traceEvents"])
    assert "exp" in nda.profiler.summary()
    assert big.shape == (1 << 21,)
    assert nda.engine.state.limit > 0, "after stop() small ops run inline again"


def test_env_selects_engine():
    import subprocess

    code = "import nda; print(nda.engine.current().name)"
    for name in ("naive", "threaded", "deferred"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "NDA_ENGINE": name}, timeout=60)
        assert out.stdout.strip() == name, out.stderr
    bad = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "NDA_ENGINE": "turbo"}, timeout=60)
    assert bad.returncode != 0 and "NDA_ENGINE must be one of deferred, naive, sync, threaded, got 'turbo'" in bad.stderr


def test_dropping_an_array_waits_for_the_ops_that_use_it(all_tasks):
    """A task keeps the arrays it reads alive: freeing is ordered after the ops using them."""
    import gc
    import weakref

    x = nda.arange(1 << 16, dtype=nda.float64)
    probe = weakref.ref(x)
    y = nda.sin(x) * 2
    del x
    gc.collect()
    np.testing.assert_allclose(y.asnumpy(), np.sin(np.arange(1 << 16, dtype=np.float64)) * 2)
    nda.waitall()
    gc.collect()
    assert probe() is None, "once the work is done the array is freed"


class ParkingExecutor:
    """An injected executor that runs nothing until the test releases what it was given."""

    def __init__(self) -> None:
        self.parked: list = []
        self._lock = threading.Lock()

    def submit(self, fn) -> None:
        with self._lock:
            self.parked.append(fn)

    def run_all(self) -> None:
        while True:
            with self._lock:
                if not self.parked:
                    return
                fn = self.parked.pop(0)
            fn()

    def release_later(self, seconds: float) -> threading.Thread:
        """Run the parked work on a thread named ``parked-worker`` after ``seconds``."""

        def later():
            time.sleep(seconds)
            self.run_all()

        thread = threading.Thread(target=later, name="parked-worker", daemon=True)
        thread.start()
        return thread


@pytest.fixture
def parked():
    """A threaded engine whose every op is a task handed to a ParkingExecutor."""
    from nda.engine.threaded import ThreadedEngine

    executor = ParkingExecutor()
    previous = nda.engine.current()
    engine = nda.engine.use(ThreadedEngine(executor_factory=lambda device: executor, inline_limit=0))
    yield engine, executor
    executor.run_all()
    try:
        nda.waitall()
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")


def test_a_sync_point_runs_queued_work_itself(parked):
    """Work nobody has started is run by the thread that waits for it, exactly once."""
    engine, executor = parked
    watchdog = executor.release_later(10.0)  # without the sync point's help the wait would end only here
    nda.profiler.start()
    start = time.perf_counter()
    x = nda.arange(16, dtype=nda.float64)
    y = nda.exp(x) * 2  # three queued tasks, the last two pending on the first
    unrelated = nda.ones(4)
    np.testing.assert_allclose(y.asnumpy(), np.exp(np.arange(16.0)) * 2)
    assert time.perf_counter() - start < 5.0 and watchdog.is_alive()
    assert engine.pending() == 1, "only what y needs ran; the unrelated op still waits for its executor"
    executor.run_all()  # dequeues the three taken tasks (skipped) and runs 'ones'
    assert engine.pending() == 0
    events = nda.profiler.stop()
    assert sorted(e.name for e in events) == ["arange", "exp", "multiply", "ones"], "no task ran twice"
    assert {e.thread for e in events} == {"MainThread"}
    assert unrelated.tolist() == [1.0] * 4


def test_a_sync_point_leaves_read_modify_write_work_to_the_workers(parked):
    """``x += 1`` reads what it writes, so a waiting thread never runs it (it could not restart it)."""
    _, executor = parked
    x = nda.zeros(8)
    x.wait_to_read()
    nda.profiler.start()
    x += 1
    executor.release_later(0.3)
    start = time.perf_counter()
    assert x.tolist() == [1.0] * 8
    events = nda.profiler.stop()
    assert time.perf_counter() - start >= 0.25, "the wait lasted until the executor ran the op"
    assert [(e.name, e.thread) for e in events] == [("add (in-place)", "parked-worker")]


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_ctrl_c_while_a_sync_point_runs_an_op_hands_it_back(parked):
    """Interrupted while running an op itself, the waiting thread re-queues it; it completes once, elsewhere."""
    _, executor = parked
    calls = []

    def slow(x):
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            time.sleep(1.5)  # interrupted on the caller's thread
        return x

    with _wait_interrupted_by_ctrl_c(slow) as y:
        # positive handed back (ones and positive ran or started on the caller before they were ever sent: nda.engine._held)
        assert calls == ["MainThread"] and len(executor.parked) == 1, "positive, handed back to the executor"
        executor.release_later(0.0).join(timeout=30)
        assert y.tolist() == [[[1.0]]], "the op completed on a worker"
        assert calls == ["MainThread", "parked-worker"]


def test_work_a_sync_point_ran_does_not_keep_arrays_alive_in_the_queue(parked):
    import gc
    import weakref

    engine, executor = parked
    x = nda.arange(1 << 10, dtype=nda.float64)
    w = nda.ones(2)  # independent: sends arange to the executor (an entry the sync points below make stale)
    w.wait_to_read()
    y = nda.exp(x)
    y.wait_to_read()  # the caller ran them all; the executor's queue still holds stale entries
    assert len(executor.parked) >= 1 and engine.pending() == 0
    probe = weakref.ref(x)
    del x
    gc.collect()
    assert probe() is None, "the stale queue entries hold no arrays"
    executor.run_all()
    assert engine.pending() == 0
