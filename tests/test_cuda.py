"""nda-cuda (``plugins/nda-cuda``): the unavailable path everywhere, the GPU for real where there is one.

Three groups:

* **Without a GPU** (and with one): ``import nda`` imports neither CuPy nor nda_cuda; the
  backend's probe runs the real CuPy against the real driver, and ``nda.backends.status()``
  says what CUDA said; cuda arrays raise a clear error while cpu and sim keep working.
* **Not a GPU test**: nda-cuda's kernel table built over NumPy (``_cuda_numpy_mirror``) runs
  nda's conformance kit against cpu. It checks the op -> function mapping and the argument
  conventions the CuPy table uses; CuPy's own kernels are checked only on a GPU.
* **GPU** (skipped with the probe's reason when there is none): the conformance kit for
  ``cuda`` against cpu over the whole catalog in worker processes (one per core up to 16,
  ``NDA_KIT_JOBS=N`` to choose; the deep profile with ``NDA_CUDA_DEEP=1``), the H100's
  minimal examples, flush-to-zero as declared, the engine's stateful test on cuda, DLPack
  with CuPy, PyTorch and JAX (``nda.from_dlpack`` zero-copy), memory statistics and
  out-of-memory, CUDA-event markers that do not block, copies.

nda-cuda's workarounds for CuPy 14.2, over a model of CuPy on NumPy: ``tests/test_cuda_workarounds.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import nda

cupy = pytest.importorskip("cupy", reason="nda-cuda's tests need CuPy installed (pip install ./plugins/nda-cuda)")


def _probe() -> tuple[int, str]:
    """(number of GPUs, why none) straight from CuPy, as the backend's probe sees it."""
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as err:
        return 0, str(err)
    return count, "" if count else "CUDA reports no device"


GPUS, NO_GPU_REASON = _probe()
needs_gpu = pytest.mark.skipif(GPUS == 0, reason=f"no usable NVIDIA GPU: {NO_GPU_REASON}")
without_gpu = pytest.mark.skipif(GPUS > 0, reason=f"this machine has {GPUS} GPU(s); the unavailable path is tested where there is none")


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env={**os.environ, **env}, timeout=180)


# ----------------------------------------------------------------------------- everywhere


def test_cuda_is_an_installed_backend_and_import_nda_stays_light():
    result = _run(
        """
        import sys, json
        import nda
        names = [r["name"] for r in nda.backends.status()]
        heavy = sorted(m for m in ("cupy", "nda_cuda", "array_api_compat") if m in sys.modules)
        x = nda.arange(4) + 1
        print(json.dumps([names, heavy, x.tolist(), sorted(m for m in ("cupy", "nda_cuda") if m in sys.modules)]))
        """
    )
    assert result.returncode == 0, result.stderr
    names, heavy, values, after_cpu_work = json.loads(result.stdout)
    assert "cuda" in names, "the nda.backends entry point of plugins/nda-cuda is not installed"
    assert heavy == [] and after_cpu_work == [], "neither import nda nor cpu work may import CuPy or nda_cuda"
    assert values == [1, 2, 3, 4]


def test_status_reports_what_the_cuda_probe_found():
    result = _run(
        """
        import json, sys, nda
        try:
            nda.backends.load("cuda")
        except nda.backends.BackendError as err:
            print(json.dumps({"error": str(err)}))
        rec = next(r for r in nda.backends.status() if r["name"] == "cuda")
        print(json.dumps(rec))
        print(nda.backends.status_table())
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    if GPUS == 0:
        error, rec = json.loads(lines[0]), json.loads(lines[1])
        assert rec["state"] == "unavailable"
        assert rec["device_types"] == ["cuda"]
        if NO_GPU_REASON == "CUDA reports no device":
            assert rec["reason"] == "no device found"
        else:
            # CuPy's own words, e.g. "cudaErrorInsufficientDriver: CUDA driver version is insufficient ..."
            code, _, text = NO_GPU_REASON.partition(": ")
            assert rec["reason"].startswith("device probe failed: CudaUnavailableError: no usable NVIDIA GPU: ")
            assert text in rec["reason"] and code in rec["reason"] and cupy.__version__ in rec["reason"]
            assert text in error["error"]
        table_row = next(line for line in lines if line.startswith("cuda "))
        assert "unavailable" in table_row and ("no usable NVIDIA GPU" in table_row or "no device found" in table_row)
    else:
        rec = json.loads(lines[0])
        assert rec["state"] == "loaded", rec["reason"]
        assert [d["device"] for d in rec["devices"]] == [f"cuda:{i}" for i in range(GPUS)]


@without_gpu
def test_without_a_gpu_cuda_arrays_fail_clearly_and_everything_else_works():
    with pytest.raises(ValueError, match="device type 'cuda' is not available.*unavailable"):
        nda.zeros(3, device="cuda")
    assert nda.backends.devices("cuda") == []
    assert (nda.arange(3) * 2).tolist() == [0, 2, 4]
    assert (nda.arange(3, device="sim") + 1).tolist() == [1, 2, 3]


@without_gpu
def test_gpu_tests_skip_with_the_probe_reason():
    """The skip reason GPU tests show is CUDA's own message, not a generic "no GPU"."""
    assert needs_gpu.kwargs["reason"] == f"no usable NVIDIA GPU: {NO_GPU_REASON}"
    assert NO_GPU_REASON  # e.g. "cudaErrorInsufficientDriver: CUDA driver version is insufficient ..."


# ----------------------------------------------------------------------------- not a GPU test


@pytest.fixture(scope="module")
def mirror():
    if not nda.backends.serves("cudamirror"):
        nda.backends.load("_cuda_numpy_mirror:backend")
    import _cuda_numpy_mirror

    return _cuda_numpy_mirror.backend


def test_kernel_table_over_numpy_matches_the_cpu_reference(mirror):
    """nda-cuda's kernel mapping and argument conventions, exercised over NumPy (not CuPy)."""
    from nda.testing import conformance

    from nda.ops.random_dist import DISTRIBUTIONS
    from nda_cuda._kernels import HOST_FALLBACK

    # nda.random's rejection-sampled distributions (issue 37) have no CUDA kernel yet: on a GPU
    # they take the host fallback, which gives the same bits (nda.ops._philox_dist)
    expected = set(HOST_FALLBACK) | {f"random.philox_{name}" for name in DISTRIBUTIONS}
    assert set(mirror.unmapped) == expected, f"ops without a derived kernel: {mirror.unmapped}"
    report = conformance.run("cudamirror", reference="cpu", dtypes=["bool", "int8", "uint16", "int64", "float32", "complex128"])
    assert report.ok, report.table()
    counts = report.counts()
    assert counts.get("passed", 0) >= 400, counts
    csr_passed = {r.op for r in report.results if r.layout == "csr" and r.status == "passed"}
    assert set(mirror.csr_sources) <= csr_passed, f"csr kernels not exercised: {set(mirror.csr_sources) - csr_passed}"


def test_csr_layer_over_scipy_holds_only_what_cusparse_can(mirror):
    """nda-cuda's csr layer (over scipy.sparse here): its storage dtypes decide conversions and routes."""
    import warnings

    from nda_cuda._sparse import STORED

    assert {"matmul", "sum", "add", "multiply", "sin", "astype", "permute_dims"} <= set(mirror.csr_sources)
    host = np.array([[0, 1.5, 0], [2, 0, -np.inf], [0, 0, 0]], dtype=np.float32)
    x = nda.asarray(host, device="cudamirror").to_layout("csr")
    assert x.layout.name == "csr" and nda.sparse.nnz(x) == 3
    b = np.array([[1.0, 0.0], [np.nan, 1.0], [0.0, 2.0]], dtype=np.float32)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal((x @ nda.asarray(b, device="cudamirror")).asnumpy(), host @ b)
    with pytest.raises(ValueError, match=r"holds bool, complex128, complex64, float32, float64 values, not int32"):
        nda.asarray(np.eye(2, dtype=np.int32), device="cudamirror").to_layout("csr")
    with pytest.raises(ValueError, match="not int64"):
        nda.sparse.csr_array(([1, 2], [0, 1], [0, 1, 2]), shape=(2, 2), device="cudamirror")
    with pytest.raises(ValueError, match="not int8"):
        x.to_device("cpu").astype(nda.int8).to_device("cudamirror")
    # An op whose result the device cannot hold in csr takes the layout fallback and says why.
    nda.dispatch.clear_caches()
    nda.dispatch._warned_routes.clear()  # warned once per route and process: make this test see it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = x.astype(nda.int8)
        z = x.astype(nda.float64)
    assert (y.layout.name, y.dtype, z.layout.name, z.dtype) == ("strided", nda.int8, "csr", nda.float64)
    assert [str(w.message) for w in caught if issubclass(w.category, nda.FallbackWarning) and "cannot hold int8 results in csr" in str(w.message)]
    assert "cannot hold int8 results in csr" in str(nda.dispatch.explain("astype", x, nda.int8))
    assert nda.dispatch.explain("astype", x, nda.float64).out_layout.name == "csr"
    cov = nda.dispatch.coverage("cudamirror", layout="csr").as_dict()
    assert cov["negative"]["float32"] == "native" and cov["negative"]["int8"] == "missing" and cov["exp"]["float32"] == "fallback"
    assert {d for d, status in cov["abs"].items() if status != "missing"} <= set(STORED)


def test_catalog_ops_are_found_by_name_with_overrides_only_where_needed(mirror):
    from nda_cuda import _kernels

    sources = mirror.sources
    assert sources["add"] == "cupy_model.add"  # a NumPy reference: the array module's function of that name
    assert sources["zeros_like"] == "array_api_compat_model.zeros"  # _ref_zeros names the function
    assert sources["cumulative_sum"] == "array_api_compat_model.cumulative_sum"
    overridden = {op for op, src in sources.items() if src.startswith("nda_cuda override")}
    assert overridden == set(_kernels.OVERRIDES) & set(sources)


def test_integer_index_bounds_are_checked_on_the_device():
    """CuPy wraps out-of-bounds integer indices; nda-cuda computes NumPy's IndexError on the device.

    The check is a flag computed with array ops (no host read at the call) and read when the
    op's marker is reached; over NumPy the same code runs with host flags.
    """
    from nda_cuda._kernels import _index_bounds

    x = np.zeros((3, 4))
    assert _index_bounds(np, x, (np.array([0, 2, -3]), slice(None)))() is None
    assert _index_bounds(np, x, (slice(None), 1)) is None  # no integer array: nothing to check
    err = _index_bounds(np, x, (Ellipsis, np.array([1, 4])))()
    assert isinstance(err, IndexError) and "index 4 is out of bounds for axis 1 with size 4" in str(err)
    err = _index_bounds(np, x, (np.array([-4]),))()
    assert isinstance(err, IndexError) and "index -4 is out of bounds for axis 0 with size 3" in str(err)
    err = _index_bounds(np, x, (None, np.array([True, False, True]), np.array([9], dtype=np.uint8)))()
    assert isinstance(err, IndexError) and "axis 1 with size 4" in str(err)


@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_data_dependent_errors_of_the_device_surface_at_sync_points(mirror, engine):
    """Out-of-bounds indices (getitem, setitem, take, take_along_axis) and negative integer
    powers fail on nda-cuda's kernels at the sync point that reads the result, with the op's
    note; under the naive engine at the call. Unrelated arrays stay usable."""
    previous = nda.engine.current()
    nda.engine.use(engine)
    try:
        dev = "cudamirror"
        x = nda.arange(4, dtype=nda.float64, device=dev)
        i = nda.asarray([0, 7], device=dev)
        cases = {
            "getitem": lambda: x[i],
            "take": lambda: nda.take(x, i),
            "take_along_axis": lambda: nda.take_along_axis(x, i),
            "pow": lambda: nda.asarray([2, 3], device=dev) ** nda.asarray([1, -1], device=dev),
        }
        for name, call in cases.items():
            expected = IndexError if name != "pow" else ValueError
            if engine == "naive":
                with pytest.raises(expected) as info:
                    call()
            else:
                y = call()  # returns: the check runs when the work is done
                ok = x + 1
                with pytest.raises(expected) as info:
                    y.asnumpy()
                np.testing.assert_array_equal(ok.asnumpy(), [1, 2, 3, 4])
                with pytest.raises(expected):
                    (y * 2).asnumpy()  # computed from a failed array: fails the same way
            assert any(f"op '{name}'" in note and "test_cuda.py" in note for note in info.value.__notes__), info.value.__notes__
        z = nda.zeros(4, device=dev)
        if engine == "naive":
            with pytest.raises(IndexError):
                z[i] = 1.0
        else:
            z[i] = 1.0
            with pytest.raises(IndexError, match="index 7 is out of bounds"):
                nda.waitall()
            with pytest.raises(IndexError):
                z.asnumpy()  # a failed in-place write leaves its target undefined: it stays failed
    finally:
        nda.engine.use(previous)


# ----------------------------------------------------------------------------- GPU


@needs_gpu
def test_devices_report_name_memory_and_compute_capability():
    infos = nda.backends.devices("cuda")
    assert [str(i.device) for i in infos] == [f"cuda:{i}" for i in range(GPUS)]
    for i, info in enumerate(infos):
        props = cupy.cuda.runtime.getDeviceProperties(i)
        assert info.memory == props["totalGlobalMem"] > 0
        assert info.extra["compute_capability"] == f"{props['major']}.{props['minor']}"
        assert info.name


def _kit_jobs() -> int:
    """Worker processes for the GPU kit runs: NDA_KIT_JOBS, else one per core up to 16 (a 16-core
    GPU machine runs the whole catalog in 16 processes, each with its own CUDA context)."""
    from nda.testing.conformance._parallel import default_jobs

    return default_jobs() if os.environ.get("NDA_KIT_JOBS") else min(default_jobs(), 16)


@needs_gpu
def test_conformance_kit_cuda_against_cpu():
    """The whole catalog, quick profile, split over processes (NDA_KIT_JOBS=N to choose how many)."""
    from nda.testing import conformance

    report = conformance.run("cuda", reference="cpu", jobs=_kit_jobs())
    print(report.table())
    assert report.ok, report.table()
    assert report.environment["flushes_subnormals"] == ["complex64", "float32"]


@needs_gpu
@pytest.mark.skipif(os.environ.get("NDA_CUDA_DEEP") != "1", reason="the deep profile (200 cases per cell) runs with NDA_CUDA_DEEP=1")
def test_conformance_kit_cuda_against_cpu_deep_profile():
    from nda.testing import conformance

    report = conformance.run("cuda", reference="cpu", profile="deep", jobs=_kit_jobs())
    print(report.table())
    assert report.ok, report.table()


@needs_gpu
def test_h100_minimal_examples_on_the_gpu():
    """The H100's failing cells' minimal examples (tests/test_cuda_workarounds.py) on cuda itself."""
    import test_cuda_workarounds as w

    for name in sorted(w.EXAMPLES):
        w.check_example(name, "cuda")


@needs_gpu
def test_h200_1128_minimal_examples_on_the_gpu():
    """The H200's failing cells of 2026-11-28 (tests/test_cuda_h200_1128.py, issue 38) on cuda itself, with
    the kit's comparison; and complex pow's edge sweep, 24 of whose 1521 elements differed."""
    import warnings

    import test_cuda_h200_1128 as h
    from nda._devices import as_layout
    from nda._dtypes import as_dtype
    from nda.testing.conformance._cases import sweep
    from nda.testing.conformance._kit import Cell, Runner

    runner = Runner("cuda", "cpu")
    failures = []
    cases = [(op, dtype, case) for op, dtype, case in h.H200_CASES]
    cases += [("pow", d, case) for d in ("complex64", "complex128") for case in sweep("pow", as_dtype(d))]
    for op, dtype, case in cases:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                runner.check(case, Cell(op, as_dtype(dtype), as_layout("strided"), "native"))
            except Exception as err:  # noqa: BLE001 - collected, all reported at once
                failures.append(f"{op} {dtype}: {case!r}: {type(err).__name__}: {str(err)[:300]}")
    assert not failures, "\n".join(failures)


@needs_gpu
def test_cuda_declares_and_does_flush_float32_subnormals():
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    record = next(r for r in nda.backends.status() if r["name"] == "cuda")
    assert record["flushes_subnormals"] == ["float32", "complex64"]
    from nda_cuda._elementwise import from_environment

    x = nda.asarray(np.float32([tiny]), device="cuda")
    settings = from_environment()
    kept = settings.enabled and not settings.ftz  # nda-cuda's generated kernels keep float32 subnormals (issue 28)
    assert nda.less(nda.zeros(1, dtype=nda.float32, device="cuda"), x).tolist() == [kept]
    strided = nda.asarray(np.float32([tiny, 1.0, tiny]), device="cuda")[::2]  # not generated: CuPy's kernel (-ftz=true)
    assert nda.less(nda.zeros(2, dtype=nda.float32, device="cuda"), strided).tolist() == [False, False]
    assert x.asnumpy()[0] == tiny  # copies keep it
    assert nda.less(nda.zeros(1, device="cuda"), nda.asarray([5e-324], device="cuda")).tolist() == [True]  # float64 keeps them
    assert "flushes float32 subnormal inputs and results to zero" in str(nda.dispatch.explain("less", x, x))


@needs_gpu
def test_engine_stateful_programs_on_cuda():
    from hypothesis import settings

    import test_engine_stateful as stateful

    class CudaPrograms(stateful.EnginePrograms):
        device = "cuda"

    CudaPrograms.TestCase.settings = settings(stateful.EnginePrograms.TestCase.settings, max_examples=25)
    CudaPrograms.TestCase().runTest()


@needs_gpu
def test_values_round_trip_and_ops_run_on_the_gpu():
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = nda.asarray(host, device="cuda")
    y = nda.exp(x) + x @ nda.ones((4, 2), dtype=nda.float32, device="cuda")[:, :1]
    want = np.exp(host) + host @ np.ones((4, 1), dtype=np.float32)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)
    assert y.device == nda.Device("cuda", 0)
    assert isinstance(y._buf, cupy.ndarray) and y._buf.device.id == 0


@needs_gpu
def test_out_of_bounds_index_raises_at_the_sync_point():
    x = nda.arange(6, device="cuda")
    bad = x[nda.asarray([1, 9], device="cuda")]
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 6"):
        bad.asnumpy()


@needs_gpu
def test_dlpack_with_cupy_is_zero_copy_both_ways():
    import nda_cuda

    x = nda.arange(8, dtype=nda.float32, device="cuda")
    c = cupy.from_dlpack(x)
    assert c.data.ptr == x._buf.data.ptr
    c[0] = 42  # shares memory: visible through nda
    assert x.asnumpy()[0] == 42
    back = nda_cuda.from_dlpack(c)
    assert back.device == nda.Device("cuda", 0) and back._buf.data.ptr == c.data.ptr
    assert (back + 1).asnumpy().tolist()[:2] == [43.0, 2.0]
    assert x.__dlpack_device__() == (2, 0)


@needs_gpu
def test_dlpack_with_torch_is_zero_copy_both_ways():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch build has no CUDA")
    import nda_cuda

    x = nda.arange(5, dtype=nda.float32, device="cuda")
    t = torch.from_dlpack(x)
    assert t.is_cuda and t.data_ptr() == x._buf.data.ptr
    y = nda_cuda.from_dlpack(torch.arange(4, device="cuda", dtype=torch.float64) * 2)
    assert y.dtype == nda.float64 and y.asnumpy().tolist() == [0.0, 2.0, 4.0, 6.0]


@needs_gpu
def test_from_dlpack_takes_cupy_torch_and_jax_cuda_arrays_without_a_copy():
    """nda.from_dlpack routes a kDLCUDA producer to nda-cuda (CudaBackend.import_dlpack)."""
    c = cupy.arange(6, dtype=cupy.float32)
    x = nda.from_dlpack(c)
    assert x.device == nda.Device("cuda", 0) and x._buf.data.ptr == c.data.ptr
    c[0] = 7
    assert x.asnumpy()[0] == 7
    assert nda.from_dlpack(c, copy=True)._buf.data.ptr != c.data.ptr
    assert nda.from_dlpack(c, device="cpu").device == nda.Device("cpu", 0)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch build has no CUDA")
    t = torch.arange(4.0, device="cuda") + 1  # pending on PyTorch's stream: the DLPack handshake orders it first
    y = nda.from_dlpack(t)  # raised "BufferError: Unsupported device in DLTensor" before (through NumPy)
    assert y.device == nda.Device("cuda", 0) and y._buf.data.ptr == t.data_ptr()
    assert (y * 2).asnumpy().tolist() == [2.0, 4.0, 6.0, 8.0]
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return
    if not any(d.platform == "gpu" for d in jax.devices()):
        return
    j = jnp.arange(3.0, dtype=jnp.float32)
    z = nda.from_dlpack(j)
    assert z.device == nda.Device("cuda", 0) and z.asnumpy().tolist() == [0.0, 1.0, 2.0]
    assert z._buf.data.ptr == j.unsafe_buffer_pointer()


@needs_gpu
def test_writes_to_memory_shared_with_cupy_are_seen_both_ways_without_a_sync():
    """Issue 38 (the H200, 2026-11-28): nda-cuda's non-blocking stream was not ordered after CuPy's.
    Long queued work on either side makes an unordered read see the old values (nda_cuda._shared)."""
    n = 1 << 24  # float64: every sum below is exact, whatever the order of reduction
    c = cupy.zeros(n, dtype=cupy.float64)
    x = nda.from_dlpack(c)
    for _ in range(20):
        c += 1  # queued on CuPy's stream (the legacy default one)
    assert float(nda.sum(x)) == 20 * n  # nda's kernel waits for CuPy's stream
    assert x[-1].asnumpy() == 20  # and so does a host read
    for _ in range(20):
        x += 1  # nda's stream
    assert float(c.sum()) == 40 * n  # CuPy's next op waits for nda's
    y = x * 2  # queued on nda's stream, reading shared memory ...
    c.fill(-1)  # ... which CuPy overwrites next: after nda's read
    assert float(nda.max(y)) == 80 and float(c[0]) == -1
    z = nda.zeros(n, dtype=nda.float64, device="cuda")
    d = cupy.from_dlpack(z)  # the other direction of the exchange
    for _ in range(20):
        z += 1
    assert float(d.sum()) == 20 * n
    d += 1
    assert float(nda.sum(z)) == 21 * n
    s = cupy.cuda.Stream(non_blocking=True)
    with s:  # another current stream of CuPy's: nda orders with that one
        c.fill(3)
        assert float(nda.min(x)) == 3


@needs_gpu
def test_writes_to_memory_shared_with_torch_are_seen_both_ways_without_a_sync():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch build has no CUDA")
    n = 1 << 24
    t = torch.zeros(n, device="cuda", dtype=torch.float64)
    x = nda.from_dlpack(t)
    for _ in range(20):
        t += 1  # PyTorch's current stream
    assert float(nda.sum(x)) == 20 * n
    for _ in range(20):
        x += 1
    assert float(t.sum()) == 40 * n
    z = nda.zeros(n, dtype=nda.float64, device="cuda")
    u = torch.from_dlpack(z)
    for _ in range(20):
        z += 1
    assert float(u.sum()) == 20 * n
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # a non-default stream of PyTorch's (non-blocking): ordered with it too
        u += 1
        assert float(nda.sum(z)) == 21 * n


@needs_gpu
def test_memory_statistics_release_and_out_of_memory():
    x = nda.ones((1 << 20,), dtype=nda.float32, device="cuda")
    x.wait_to_read()
    stats = nda.backends.memory_stats("cuda:0")
    assert stats["in_use"] >= 4 << 20 and stats["capacity"] > stats["device_free"] > 0
    del x
    nda.waitall()
    released = nda.backends.release_all("cuda:0")
    assert released >= 0 and nda.backends.memory_stats("cuda:0")["cached"] == 0
    too_big = stats["capacity"] // 4 + 1  # float32 elements: more bytes than the device has
    with pytest.raises(MemoryError, match=r"cuda:0: .*bytes free"):
        nda.empty((too_big,), dtype=nda.float32, device="cuda").wait_to_read()


_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


@needs_gpu
def test_markers_are_cuda_events_recorded_and_polled_without_blocking():
    """Backend API 1.3: ``record_marker`` returns at once behind pending GPU work, ``marker_reached``
    polls it without waiting, ``synchronize_marker`` waits for exactly that work."""
    backend = nda.backends.load("cuda")
    device = nda.Device("cuda", 0)
    spin = cupy.RawKernel(_SPIN, "spin")
    rate = cupy.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1000  # cycles per second
    with backend._stream(device).stream:
        spin((1,), (1,), (np.int64(rate // 2),))  # about half a second of GPU work
    issued = time.perf_counter()
    marker = backend.record_marker(device)
    polled = backend.marker_reached(marker)
    returned = time.perf_counter() - issued
    assert not polled, f"the marker was reached before the GPU work finished (recording and polling took {returned:.3f} s)"
    assert returned < 0.25, f"recording a marker blocked for {returned:.3f} s"
    backend.synchronize_marker(marker)
    assert backend.marker_reached(marker) and time.perf_counter() - issued > 0.2


@needs_gpu
def test_copies_between_host_and_devices():
    host = np.random.default_rng(0).random((5, 3))
    x = nda.asarray(host, device="cuda")
    assert np.array_equal(x.to_device("cpu").asnumpy(), host)
    target = nda.zeros((5, 3), dtype=nda.float64, device="cuda")
    nda.asarray(host).copyto(target)
    assert np.array_equal(target.asnumpy(), host)
    if GPUS > 1:
        y = x.to_device("cuda:1")
        x += 1  # after the copy was issued: must not reach it
        assert y.device == nda.Device("cuda", 1) and np.array_equal(y.asnumpy(), host)


@needs_gpu
def test_coverage_lists_native_cuda_kernels():
    coverage = nda.dispatch.coverage("cuda")
    counts = coverage.counts()
    assert counts["native"] > 0 and counts["missing"] == 0
    assert coverage.as_dict()["add"]["float32"] == "native"


@needs_gpu
def test_csr_on_the_gpu_matches_scipy_and_stays_on_the_device():
    import scipy.sparse as sp

    import cupyx.scipy.sparse

    a = sp.random(300, 200, density=0.05, format="csr", dtype=np.float32, random_state=0)
    x = nda.sparse.csr_array((a.data, a.indices, a.indptr), shape=a.shape, device="cuda")
    assert isinstance(x._buf, cupyx.scipy.sparse.csr_matrix) and x.device == nda.Device("cuda", 0)
    block = np.random.default_rng(1).standard_normal((200, 16)).astype(np.float32)
    y = x @ nda.asarray(block, device="cuda")
    assert isinstance(y._buf, cupy.ndarray) and y._buf.flags.c_contiguous
    np.testing.assert_allclose(y.asnumpy(), a @ block, rtol=1e-4, atol=1e-4)
    # a.sum(axis=1) of a SciPy *matrix* is a (300, 1) np.matrix: compare with its values as a vector
    np.testing.assert_allclose(nda.sum(x, axis=1).asnumpy(), np.asarray(a.sum(axis=1)).ravel(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose((x.T).asnumpy(), a.T.toarray())
    np.testing.assert_allclose((x + x * 2.0).asnumpy(), (a * 3).toarray(), rtol=1e-6)
    back = x.to_device("cpu")
    assert back.layout.name == "csr" and (back.asnumpy() == a.toarray()).all()
    dense = nda.asarray(a.toarray(), device="cuda").to_layout("csr")
    assert nda.sparse.nnz(dense) == a.nnz
