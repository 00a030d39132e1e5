"""No global engine modes (issue 34): another thread's ``autograd.record()`` leaves this thread's
ops on their fast paths, and no transition of the engine leaves its inline limit stale.

The fast paths are told apart from the slow ones structurally, never by timing: a profile hook
counts the Python frames one call enters (the C fast path enters none, the Python one a single
frame, a slow path several). Every test runs on both engines and with and without nda's C
extension (the suite runs with NDA_NATIVE=0 too); where a device matters, on cpu and sim.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import nda
from nda import engine

DEVICES = ["cpu", "sim"]


def _frames(call):
    """The Python frames ``call()`` enters (the profile hook's 'call' events)."""
    seen = []

    def hook(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)

    enabled = gc.isenabled()
    gc.disable()  # a collection during the call would add its callbacks' frames
    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
        if enabled:
            gc.enable()
    return [name for name in seen if name != "_frames"]


class _Recording:
    """Another thread inside ``autograd.record()`` (or a hybridized function's trace) until closed."""

    def __init__(self, scope=None):
        self.inside, self.leave = threading.Event(), threading.Event()
        self.scope = scope or nda.autograd.record
        self.thread = threading.Thread(target=self._run)

    def _run(self):
        with self.scope():
            self.inside.set()
            self.leave.wait(30)

    def __enter__(self):
        self.thread.start()
        assert self.inside.wait(30)
        return self

    def __exit__(self, *exc):
        self.leave.set()
        self.thread.join(30)


def _limit_is_the_engines():
    return engine.state.limit == (0 if engine.profiler.active else engine.current().current_limit())


CALLS = {
    "x + y": lambda x, y: x + y,
    "x * 0.5": lambda x, y: x * 0.5,
    "2.0 * x": lambda x, y: 2.0 * x,
    "-x": lambda x, y: -x,
    "nda.exp(x)": lambda x, y: nda.exp(x),
    "nda.sum(x)": lambda x, y: nda.sum(x),
    "x @ y": lambda x, y: x @ y,
    "x[1]": lambda x, y: x[1],
    "x[1:]": lambda x, y: x[1:],
}


@pytest.mark.parametrize("what", sorted(CALLS))
def test_another_threads_record_leaves_this_threads_tiny_ops_on_their_fast_paths(what):
    """Before: installing an interceptor on any thread made ``engine.state.limit`` 0 for every
    thread, so a tiny ``x + y`` here left its fast path (6.2x its idle time) while another
    thread recorded."""
    call = CALLS[what]
    x = nda.asarray(np.arange(1.0, 5.0, dtype=np.float32)) + 0  # not sharing NumPy's memory
    y = x * 2.0
    for _ in range(3):
        call(x, y)  # the caches know the call
    engine.waitall()
    idle = _frames(lambda: call(x, y))
    with _Recording():
        assert _limit_is_the_engines()
        busy = _frames(lambda: call(x, y))
        np.testing.assert_array_equal(call(x, y).asnumpy(), call(x + 0, y + 0).asnumpy())
    assert busy == idle, f"{what}: {busy} while another thread records, {idle} alone"


@pytest.mark.parametrize("device", DEVICES)
def test_the_recording_thread_still_sees_every_fast_path_call(device):
    """Interception is the thread's own flag: with the fast caches warm and the engine idle, each
    fast path (C or Python: operators with arrays and floats, reflected, unary functions,
    reductions, matmul, integer and slice keys, row iteration) is recorded inside record(), and
    another thread's record() ending meanwhile changes nothing."""
    xs = np.array([[1.0, 2.0], [3.0, 4.0]])
    x = nda.asarray(xs, device=device) + 0
    w = nda.asarray(np.array([[0.5, -1.0], [2.0, 1.5]]), device=device) + 0

    def f(x, w):
        rows = sum(nda.sum(r * r) for r in x)  # row iteration: sum_i x_i^2
        return nda.sum(x * w) + nda.sum(2.0 * x) + nda.sum(-x) + nda.sum(nda.exp(x * 0.5)) + nda.sum(x @ w) + x[1][0] + nda.sum(x[0:1]) + rows

    for _ in range(3):
        f(x, w).wait_to_read()  # warm every fast cache
    engine.waitall()
    x.attach_grad()
    with _Recording():
        with nda.autograd.record():
            y = f(x, w)
    y.backward()
    wn = np.array([[0.5, -1.0], [2.0, 1.5]])
    expected = wn + 2.0 - 1.0 + 0.5 * np.exp(0.5 * xs) + wn.sum(axis=1)[None, :] + 2 * xs
    expected[1, 0] += 1.0
    expected[0, :] += 1.0
    np.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-12)


def test_a_tracing_thread_leaves_other_threads_on_their_fast_paths():
    """hybridize's first call traces through an interceptor on its own thread only."""
    x = nda.asarray(np.ones(4, dtype=np.float32)) + 0
    y = x + x
    for _ in range(3):
        x + y
    engine.waitall()
    idle = _frames(lambda: x + y)
    inside, leave = threading.Event(), threading.Event()

    @nda.hybridize
    def traced(a):
        inside.set()
        leave.wait(30)
        return a * 2.0

    worker = threading.Thread(target=lambda: traced(nda.ones(3)).wait_to_read())
    worker.start()
    try:
        assert inside.wait(30)
        assert _frames(lambda: x + y) == idle
        assert _limit_is_the_engines()
    finally:
        leave.set()
        worker.join(30)


def test_a_collected_failed_array_leaves_no_stale_limit_with_shared_memory_alive():
    """Before: after an op behind pending work failed and its (never read) result was collected,
    ``state.limit`` stayed 0 while the engine was idle again: with any array sharing NumPy's
    memory alive, every later tiny op ran through ``push`` inline and nothing refreshed it (9x
    slower for the rest of the session)."""
    if engine.current().name != "threaded":
        pytest.skip("the threaded engine's limit changes with its work")
    shared = nda.asarray(np.zeros(3))  # shares NumPy's memory: ops reach the shared push
    x = nda.ones(4)
    (x + x).wait_to_read()
    big = nda.ones((1200, 1200))
    z = big @ big  # a large op: the take below waits for it, so it fails on the engine, not here
    bad = nda.take(z[0], nda.asarray([5000]) + 0)  # out of bounds
    deadline = time.monotonic() + 30
    while engine.current().current_limit() != 0 or not engine.current()._graph.poison:
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    z.wait_to_read()
    del bad
    gc.collect()
    for _ in range(2):
        x + x  # the first may find the stale limit; it refreshes it
    assert _limit_is_the_engines(), (engine.state.limit, engine.current().current_limit())
    assert engine.state.limit > 0
    idle = _frames(lambda: x + x)
    assert idle == _frames(lambda: x + x)
    with pytest.raises(IndexError):
        engine.waitall()  # the error no read raised, reported once
    del shared


@pytest.mark.parametrize("device", DEVICES)
def test_every_transition_leaves_the_limit_the_engines(device):
    """Errors raised at a sync point, a failed held op, the profiler started and stopped, and
    record() entered and left here and on another thread: each leaves ``limit`` what the
    engine wants, as soon as the next op is issued."""
    x = nda.ones(8, device=device)
    (x + x).wait_to_read()
    assert _limit_is_the_engines()

    with nda.autograd.record():
        assert _limit_is_the_engines()
    with _Recording():
        assert _limit_is_the_engines()
    assert _limit_is_the_engines()

    nda.profiler.start()
    try:
        assert engine.state.limit == 0
        (x + x).wait_to_read()
    finally:
        nda.profiler.stop()
    assert _limit_is_the_engines()

    big = nda.ones(1 << 21, device=device)
    with pytest.raises(IndexError):
        nda.take(big, nda.asarray([1 << 22], device=device) + 0).wait_to_read()  # a large op: held, then failed
    engine.waitall()
    (x + x).wait_to_read()
    assert _limit_is_the_engines()

    with pytest.raises(IndexError):  # at the call (inline) or at the read (queued)
        y = nda.take(x, nda.asarray([99], device=device) + 0)
        y.wait_to_read()
    gc.collect()
    (x + x).wait_to_read()
    assert _limit_is_the_engines()


def test_another_threads_record_keeps_the_fast_path_in_a_fresh_process():
    """The same, from a fresh interpreter (no pytest imports or warning filters), on the
    engine and fast paths the suite runs with."""
    code = textwrap.dedent("""
        import sys, threading
        import numpy as np
        import nda
        x = nda.asarray(np.ones(4, dtype=np.float32)) + 0
        y = x + x
        for _ in range(3):
            x + y
        def frames():
            seen = []
            sys.setprofile(lambda f, e, a: seen.append(f.f_code.co_name) if e == "call" else None)
            x + y
            sys.setprofile(None)
            return seen
        idle = frames()
        inside, leave = threading.Event(), threading.Event()
        def rec():
            with nda.autograd.record():
                inside.set()
                leave.wait(30)
        t = threading.Thread(target=rec)
        t.start()
        inside.wait(30)
        busy = frames()
        leave.set()
        t.join()
        print("same" if busy == idle else f"differ {busy} {idle}", nda.engine.state.limit == nda.engine.current().current_limit())
    """)
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == ["same", "True"], found.stdout + found.stderr


def test_a_device_asked_before_its_backend_loaded_gets_the_backends_completion_hook(tmp_path):
    """Before: the engine cached each device's ``record_completion``/``synchronize`` hook at its
    first lookup, for good. A device asked before its backend was loaded at run time (no
    backend: None) kept None after ``nda.backends.load``: that backend's asynchronous work was
    never awaited at sync points. The cache is now forgotten whenever a backend registers or
    is taken out."""
    (tmp_path / "_late_backend.py").write_text(
        textwrap.dedent("""
        import _toy_backend
        import nda

        CALLS = []

        class Late(_toy_backend.ToyBackend):
            name = "late"
            device_types = ("late",)

            def devices(self):
                return [nda.backends.DeviceInfo(nda.Device("late", 0), "late device", 1 << 20)]

            def record_completion(self, device):
                CALLS.append(("completion", str(device)))
                return None

            def synchronize(self, device):
                CALLS.append(("synchronize", str(device)))

        backend = Late()
    """)
    )
    code = textwrap.dedent("""
        import nda
        from nda import engine
        dev = nda.Device("late", 0)
        before = (engine.device_completion(dev), engine.device_sync(dev))  # no backend yet: None, cached
        late = nda.backends.load("_late_backend:backend")
        engine.device_completion(dev)
        engine.device_sync(dev)
        import _late_backend
        print(before, _late_backend.CALLS)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]))
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "(None, None) [('completion', 'late:0'), ('synchronize', 'late:0')]", found.stdout + found.stderr


def _keep_a_failed_array(device):
    """A float32 array of shape (4,) on ``device`` whose work failed on the engine, still referenced."""
    big = nda.ones((1200, 1200), device=device)
    z = (big @ big).astype(nda.float32)  # the take below waits for it, so it fails on the engine
    bad = nda.take(z[0], nda.asarray([10**6] * 4, device=device) + 0)
    with pytest.raises(IndexError):
        bad.asnumpy()
    engine.waitall()
    assert len(engine.state.failed) >= 1  # kept while ``bad`` lives
    return bad


def _same_path(device, frames, idle, what):
    if device == "cpu":
        assert frames == idle, f"{what}: {frames}, on an idle engine: {idle}"
    else:  # sim's queue does its own bookkeeping now and then (settling): no more engine frames than idle
        engine_frames = {"invoke", "push", "_shared_push", "run_now", "_issue_now", "_try_hold"}
        assert set(frames) & engine_frames <= set(idle) & engine_frames, f"{what}: {frames}, on an idle engine: {idle}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("what", sorted(CALLS))
def test_while_a_failed_array_is_kept_other_ops_keep_their_fast_paths_and_its_readers_fail(what, device):
    """Before: with a failed array still referenced (a notebook's variable), every later op on the
    threaded engine left its fast path: first each became a task (20-30x a tiny op's inline time),
    then (one release later) a slow path that ran it on the caller (~10x). The engine's failed
    arrays are now ``engine.state.failed``, which the fast paths (C and Python) look their inputs
    up in while it is not empty: ops that touch no failed array enter exactly the frames they
    enter on an idle engine, and ops that read one still fail with its error."""
    if engine.current().name != "threaded":
        pytest.skip("the threaded engine keeps failed arrays (the naive one raises at the call)")
    call = CALLS[what]
    x = nda.asarray(np.arange(1.0, 5.0, dtype=np.float32), device=device) + 0  # not sharing NumPy's memory
    y = x * 2.0
    for _ in range(3):
        call(x, y)  # the caches know the call
    engine.waitall()
    idle = _frames(lambda: call(x, y))
    bad = _keep_a_failed_array("cpu")
    call(x, y)  # the caches again (a slow path's resolution may have been forgotten meanwhile)
    kept = [f for f in _frames(lambda: call(x, y)) if f not in ("touches_failed", "_writes")]  # the one lookup of the failed arrays
    _same_path(device, kept, idle, f"{what}, a failed array kept")
    np.testing.assert_array_equal(call(x, y).asnumpy(), call(x + 0, y + 0).asnumpy())
    bad = bad.to_device(device) if device != "cpu" else bad  # a copy of a failed array fails the same way
    with pytest.raises(IndexError):
        call(bad, y).asnumpy()  # a reader of the failed array fails with its error
    if what in ("x + y", "x @ y"):
        with pytest.raises(IndexError):
            call(x, bad).asnumpy()
    with pytest.raises(IndexError):
        bad.asnumpy()
    engine.waitall()
    del bad
    gc.collect()
    engine.waitall()
    _same_path(device, _frames(lambda: call(x, y)), idle, f"{what}, the failed array dropped")
