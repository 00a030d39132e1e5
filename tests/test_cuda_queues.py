"""nda-cuda's queue on a real GPU: markers on demand, timing events for the profiler, small sums.

GPU tests (skipped with CUDA's reason without one). Without a GPU the same rules are tested
on nda-sim and on the cuda mirror (``tests/test_queues.py``, ``tests/test_profiler.py``,
``tests/test_cuda_reductions.py``).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import nda

cupy = pytest.importorskip("cupy", reason="nda-cuda's tests need CuPy installed (pip install ./plugins/nda-cuda)")


def _gpus() -> tuple[int, str]:
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as err:
        return 0, str(err)
    return count, "" if count else "CUDA reports no device"


GPUS, WHY = _gpus()
pytestmark = pytest.mark.skipif(GPUS == 0, reason=f"no usable NVIDIA GPU: {WHY}")


def _queue():
    from nda.engine import queues as _queues

    nda.ones(1, device="cuda").wait_to_read()
    return _queues.queue_of_device(nda.Device("cuda", 0))


def test_cuda_records_an_event_only_where_the_host_waits(threaded):
    """Tiny ops record no event; a read of the newest version copies on the compute stream
    (no event either: one stream synchronize, as CuPy's own float(x)); a read of an older
    version records one event after it, which also covers the work after it."""
    queue = _queue()
    x = nda.ones(4, dtype=nda.float32, device="cuda")
    y = nda.ones(4, dtype=nda.float32, device="cuda")
    nda.waitall()
    before = queue.markers
    z = x
    for _ in range(100):
        z = z * 1.0001 + y  # 200 tiny ops: no event
    assert queue.markers == before
    total = float(nda.sum(z))  # a read of the newest work: no event
    expected = np.float32(4 * sum(np.float32(1.0001) ** k for k in range(101)))
    np.testing.assert_allclose(total, expected, rtol=1e-4)
    assert [float(nda.sum(x + y)) for _ in range(5)] == [8.0] * 5
    assert queue.markers == before
    a = x + 1.0
    b = nda.exp(a)  # issued after a: reading a waits for an event after a
    assert a.asnumpy().tolist() == [2.0] * 4 and queue.markers == before + 1
    np.testing.assert_allclose(b.asnumpy(), np.exp(np.full(4, 2.0, np.float32)), rtol=1e-6)
    assert queue.markers == before + 1  # that event covered b as well


def test_the_profiler_records_when_the_gpu_ran_each_op(threaded):
    a = nda.asarray(np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32), device="cuda")
    nda.tanh(a @ a).wait_to_read()  # first calls load cuBLAS and compile tanh: tens of ms on the host
    with nda.profiler.profile() as prof:
        issued = time.perf_counter()
        y = a @ a
        z = nda.tanh(y)
        z.wait_to_read()
        read = time.perf_counter()
    host = {e.name: e for e in prof}
    device = {e.name: e for e in prof.queue_events if e.device == "cuda:0"}
    mm, th = device["matmul"], device["tanh"]
    assert mm.thread == "queue" and mm.duration > 5 * host["matmul"].duration  # ~1 ms of GPU time, a few µs to issue
    assert issued - 1e-3 <= mm.start <= mm.end <= th.start + 1e-6 <= th.end <= read + 1e-3
    lanes = [lane.label for lane in prof.lanes()]
    assert "cuda:0 · queue" in lanes
    trace = prof.chrome_trace()
    assert any(e["ph"] == "M" and e["args"].get("name") == "cuda:0 queue" for e in trace["traceEvents"])
    np.testing.assert_allclose(z[:2, :2].asnumpy(), np.tanh(a.asnumpy()[:2] @ a.asnumpy()[:, :2]), rtol=1e-3, atol=1e-3)


def test_small_reductions_are_cupy_s_own_calls_and_exact():
    x = nda.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device="cuda")
    assert nda.dispatch.explain("sum", x).kernel.qualname.endswith("sum_small]")  # cuda[array_api_compat.cupy.sum sum_small]
    for axis in (None, 0, 1, (0, 1)):
        for keepdims in (False, True):
            np.testing.assert_array_equal(
                nda.sum(x, axis=axis, keepdims=keepdims).asnumpy(), np.arange(12, dtype=np.float32).reshape(3, 4).sum(axis=axis, keepdims=keepdims)
            )
    i8 = nda.asarray(np.array([100, 100, 100], dtype=np.int8), device="cuda")
    assert nda.sum(i8).dtype == nda.int64 and int(nda.sum(i8)) == 300  # summed in int64, as NumPy does
    assert float(nda.max(x)) == 11.0 and float(nda.mean(x)) == 5.5 and bool(nda.any(x > 10.0))
