"""Heavy ops on arrays that share NumPy's memory keep the engine's overlap (issue 34).

``nda.asarray(numpy_array)`` on cpu shares the NumPy array's memory (``nda.engine.share``).
Before, every op reading such an array completed before its call returned, so two 1200 x 1200
matmuls on such inputs took longer to issue than one took to run. Now a heavy op (matmul,
linalg, fft, sort: cost >= 4x its shared elements and >= the inline limit, ``nda._snapshots``)
copies its shared inputs at the call and is queued like any op on arrays nda owns:

* a NumPy write made before the call is in its result, one made after never is;
* on the threaded engine the call returns with its work not done (checked without clocks: the
  engine still has a write pending for the result right after the call);
* writes into shared arrays and cheap ops (element-wise, reductions, a matrix-vector product)
  still complete at the call, as before;
* a heavy op that fails raises at the sync point that reads its result, with the op's note.

The suite runs on both engines (``NDA_ENGINE=naive`` runs everything at the call: the value
checks hold there too); the subprocess test checks both engines in fresh interpreters.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nda

N = 1024  # 1024 x 1024 = 2**20 elements: at the threaded engine's inline limit, so engine work
THREADED = nda.engine.current().name == "threaded"


def _pending(y: nda.NDArray) -> bool:
    """Whether the engine still has a write of ``y`` to do (never blocks)."""
    return nda.engine.current().writes_pending(y)


def _matrix(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, N)) + N**0.5 * np.eye(N)  # well conditioned


F64 = np.asarray  # the first input as it is (C order, float64)

#: case -> (the nda call, NumPy's, how the first input is made from a float64 C-order matrix)
CASES = {
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, F64),
    "matmul, a transposed view": (lambda a, b: a @ b.T, lambda a, b: a @ b.T, F64),
    "matmul, a view of rows": (lambda a, b: a[: N // 2] @ b, lambda a, b: a[: N // 2] @ b, F64),
    # views of one base covering it: one copy of the base, the views rebuilt on it
    "matmul, a @ a.T": (lambda a, b: a @ a.T, lambda a, b: a @ a.T, F64),
    "matmul, shifted views of one array": (lambda a, b: a[1:].T @ a[:-1], lambda a, b: a[1:].T @ a[:-1], F64),
    "matmul, flipped views of one array": (lambda a, b: a[::-1] @ a[:, ::-1], lambda a, b: a[::-1] @ a[:, ::-1], F64),
    "matmul, a @ a.T, Fortran order": (lambda a, b: a @ a.T, lambda a, b: a @ a.T, np.asfortranarray),
    # a "view" whose reshape had to copy: its memory is not its base's, so it is copied itself
    "matmul, a reshape that copied": (
        lambda a, b: a @ nda.reshape(nda.reshape(a.T, (N * N,)), (N, N)),
        lambda a, b: a @ a.T.reshape(-1).reshape(N, N),
        F64,
    ),
    # a shared float32 array promoted by the matmul: a cast argument of the kernel
    "matmul, float32 cast on the way in": (lambda a, b: a @ b, lambda a, b: a.astype(np.float64) @ b, lambda m: m.astype(np.float32)),
    "linalg.inv": (lambda a, b: nda.linalg.inv(a), lambda a, b: np.linalg.inv(a), F64),
    "linalg.solve": (lambda a, b: nda.linalg.solve(a, b), lambda a, b: np.linalg.solve(a, b), F64),
    "linalg.slogdet (two outputs)": (lambda a, b: nda.linalg.slogdet(a).logabsdet, lambda a, b: np.linalg.slogdet(a).logabsdet, F64),
    "fft.fft": (lambda a, b: nda.fft.fft(a), lambda a, b: np.fft.fft(a), F64),
    "sort": (lambda a, b: nda.sort(a, axis=0), lambda a, b: np.sort(a, axis=0), F64),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_heavy_op_on_shared_inputs_is_queued_and_reads_the_values_at_the_call(case):
    nda_fn, np_fn, make = CASES[case]
    a_np, b_np = make(_matrix(0)), _matrix(1)
    a, b = nda.asarray(a_np), nda.asarray(b_np)
    assert np.shares_memory(np.asarray(a), a_np)
    nda.waitall()
    a_np[0, :] = 3.0  # before the call: always seen
    want = np_fn(a_np, b_np)
    y = nda_fn(a, b)
    if THREADED:
        assert _pending(y), "the call waited for its work: a heavy op on shared inputs must be queued"
    a_np[...] = 0.0  # after the call: never seen
    b_np[...] = 0.0
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6 if a_np.dtype == np.float32 else 1e-9, atol=1e-9)
    assert float(a[0, 0]) == 0.0  # the write is the array's own (shared memory)


class ParkingExecutor:
    """The cpu workers of a threaded engine that run nothing until the test says so: a task
    still parked here was certainly not waited for by the call that issued it."""

    def __init__(self) -> None:
        self.parked: list = []

    def submit(self, fn) -> None:
        self.parked.append(fn)

    def run_all(self) -> None:
        while self.parked:
            self.parked.pop(0)()


@pytest.fixture
def parked():
    from nda.engine.threaded import ThreadedEngine

    executor = ParkingExecutor()
    previous = nda.engine.current()
    engine = nda.engine.use(ThreadedEngine(executor_factory=lambda device: executor))  # the usual inline limit
    yield engine, executor
    executor.run_all()
    try:
        nda.waitall()
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")


def test_two_matmuls_on_shared_inputs_are_left_to_the_workers(parked):
    """On the threaded engine whatever NDA_ENGINE says: its workers park every task, so a matmul
    still pending after the calls was neither run by its call nor waited for there."""
    engine, executor = parked
    a_np, b_np = _matrix(2), _matrix(3)
    a, b = nda.asarray(a_np), nda.asarray(b_np)
    want_p, want_q = a_np @ b_np, b_np @ a_np
    nda.waitall()
    p = a @ b  # held by the engine: nothing else is pending
    q = b @ a  # p becomes a task for the (parked) workers; q is held
    assert _pending(p) and _pending(q) and engine.pending() == 2
    a_np[...] = np.nan  # NumPy writes after the calls: never seen
    b_np[...] = np.nan
    executor.run_all()
    np.testing.assert_allclose(p.asnumpy(), want_p, rtol=1e-9)
    np.testing.assert_allclose(q.asnumpy(), want_q, rtol=1e-9)


def test_an_nda_write_into_a_shared_input_after_a_heavy_call_is_seen_by_numpy_at_once_and_not_by_the_call():
    a_np, b_np = _matrix(6), _matrix(7)
    a, b = nda.asarray(a_np), nda.asarray(b_np)
    want = a_np @ b_np
    nda.waitall()
    y = a @ b
    if THREADED:
        assert _pending(y)
    a += 1.0  # a write into shared memory: done at the call (NumPy may read it at once)
    np.testing.assert_array_equal(a_np, _matrix(6) + 1.0)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-9)


@pytest.mark.parametrize("op", ["exp", "multiply", "sum", "matrix-vector"])
def test_cheap_ops_on_shared_inputs_still_complete_at_the_call(op):
    """A copy would cost as much as these ops: they complete at the call, as before (a guard:
    it held before the change and must still hold)."""
    size = (1 << 20) + 3
    buf = np.full(size, 2.0)
    x = nda.asarray(buf)
    nda.waitall()
    if op == "exp":
        y, want = nda.exp(x), np.exp(buf)
    elif op == "multiply":
        y, want = x * 3.0, buf * 3.0
    elif op == "sum":
        y, want = nda.sum(x), np.sum(buf)
    else:
        m_np = _matrix(4)
        m, v_np = nda.asarray(m_np), np.ones(N)
        y, want = m @ nda.asarray(v_np), m_np @ v_np
        m_np[...] = 0.0
    if THREADED:
        assert not _pending(y)
    buf[:] = -1.0
    np.testing.assert_allclose(y.asnumpy(), want)


def test_a_failing_heavy_op_on_a_shared_input_raises_at_the_sync_point():
    singular = np.zeros((N, N))
    x = nda.asarray(singular)
    nda.waitall()
    if not THREADED:
        with pytest.raises(np.linalg.LinAlgError):
            nda.linalg.inv(x)  # the naive engine runs it at the call
        return
    y = nda.linalg.inv(x)  # returns: the failure is the data's, found when the op runs
    z = y + 1.0
    singular[...] = np.eye(N)  # after the call: not seen, the op still fails
    with pytest.raises(np.linalg.LinAlgError) as info:
        z.asnumpy()
    assert "op 'linalg.inv' issued at" in info.value.__notes__[0]
    nda.waitall()  # already raised: the engine is clean
    assert float(nda.sum(x)) == N  # the shared array is fine


@pytest.mark.skipif(not THREADED, reason="the naive engine runs every op at the call: no snapshot to record")
def test_the_profiler_shows_the_snapshot_and_the_queued_op():
    a_np = _matrix(5)
    a = nda.asarray(a_np)
    nda.waitall()
    with nda.profiler.profile() as prof:
        y = a @ a
        queued = _pending(y)
        a_np[...] = 0.0
        y.wait_to_read()
    assert queued
    names = [e.name for e in prof]
    assert "matmul (snapshot)" in names and "matmul" in names
    np.testing.assert_allclose(y.asnumpy(), _matrix(5) @ _matrix(5), rtol=1e-9)


_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import nda

    engine = nda.engine.current()
    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal((1200, 1200)) for _ in range(4)]
    xs = [nda.asarray(h) for h in hosts]
    want = (hosts[0] @ hosts[1], hosts[2] @ hosts[3])
    nda.waitall()
    p = xs[0] @ xs[1]
    q = xs[2] @ xs[3]
    pending = engine.pending() if engine.name == "threaded" else 0
    for h in hosts:
        h[...] = np.nan  # after the calls: never seen
    np.testing.assert_allclose(p.asnumpy(), want[0], rtol=1e-9)
    np.testing.assert_allclose(q.asnumpy(), want[1], rtol=1e-9)
    print(engine.name, pending)
    """
)


@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_in_a_fresh_interpreter_two_matmuls_on_numpy_memory_are_queued(engine):
    env = dict(os.environ, NDA_ENGINE=engine)
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    name, pending = done.stdout.split()
    assert name == engine
    if engine == "threaded":
        assert int(pending) >= 1, "both matmuls ran at their calls"
