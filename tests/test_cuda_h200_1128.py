"""The H200 run of 2026-11-28 (``../shared/gpu/h200-2026-11-28``, issue 38 item 7), checked on the CuPy model.

That run (main a93b309) left the deep kit (one op per process) with 10 failing cells, the quick kit
with 2 (complex ``pow``), the GPU tests with 1 (``nda.from_dlpack`` of a CuPy array: CuPy's later
write not seen) and the generated kernels' check with 3 (integer ``pow``). Here, without a GPU:

* the model of CuPy (``tests/_cupy_*.py``) does what the H200 measured: thrust's complex ``log`` of
  a NaN with an infinity, ``isin`` behind a negative NaN, cuBLAS's complex ``alpha``, cuSOLVER on
  subnormals and tiny off-diagonals, ``searchsorted`` of a Python scalar, and streams whose writes
  land in stream order (``tests/_cupy_streams.py``);
* every minimal failing example of the run, as a kit case on the mirror (nda-cuda's kernel table
  over the model) against cpu; each failed before its fix in ``nda_cuda``;
* memory shared through DLPack is ordered with the other library's stream both ways
  (``nda_cuda._shared``), on both engines; the benchmark harness reads a kernel's device flag
  only after its stream got there.

The GPU confirmation is owed: ``benchmarks/gpu_session.sh`` (the deep kit alone, the GPU tests,
``tests/test_cuda.py``'s DLPack tests with CuPy and PyTorch, the generated kernels' check).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import nda
from nda._dtypes import as_dtype
from nda._devices import as_layout
from nda.testing.conformance._cases import Case, sweep
from nda.testing.conformance._kit import Cell, Runner, _Invalid

pytest.importorskip("scipy")
import _cupy_streams as streams  # noqa: E402
from _cupy_quirks import compat_model, cupy_model  # noqa: E402
from _cupy_solver import CUSOLVERError  # noqa: E402
from test_cuda_h200 import _a, _c, _quiet  # noqa: E402

D = "cudamirror"
inf, nan = math.inf, math.nan
S32 = 1.401298464324817e-45  # the smallest float32 subnormal
S64 = 5e-324


@pytest.fixture(scope="module")
def mirror():
    if not nda.backends.serves(D):
        nda.backends.load("_cuda_numpy_mirror:backend")
    import _cuda_numpy_mirror

    return _cuda_numpy_mirror.backend


@pytest.fixture(params=["threaded", "naive"])
def engine(request):
    previous = nda.engine.current()
    nda.engine.use(request.param)
    yield request.param
    nda.engine.use(previous)


def dev(value, dtype=None):
    return cupy_model.asarray(np.asarray(value, dtype=dtype))


def _neg_nan() -> float:
    return float(np.copysign(np.nan, -1.0))


# ----------------------------------------------------------------------------- the model


def test_the_model_computes_what_the_h200_measured():
    ctx = _quiet()
    try:
        with np.errstate(all="ignore"):
            # thrust's clog: log(x*x + y*y) once a part is NaN (C99 and NumPy: +inf for an infinite part)
            for z in (complex(nan, inf), complex(-inf, nan)):
                got = cupy_model.log(dev(z)).get()
                assert np.isnan(got.real) and np.isinf(np.log(np.complex128(z)).real)
            # isin: x2 sorted by thrust's radix order (a negative NaN first), then binary-searched
            assert not bool(cupy_model.isin(dev(0.0), dev([_neg_nan(), 0.0])))
            assert bool(cupy_model.isin(dev(0.0), dev([nan, 0.0])))
            # cuBLAS's gemm multiplies each complex sum by alpha = 1 + 0j; CuPy's einsum contracts with it
            a, b = dev([[complex(1.7976931348623157e308, -1)] * 3] * 2), dev([[1j] * 4] * 3)
            assert str(cupy_model.einsum("ij,jk->ik", a, b).get()[0, 0]) == "(nan+infj)"
            assert str(cupy_model.matmul(a, b).get()[0, 0]) == "(nan+infj)"
            assert np.einsum("ij,jk->ik", a.get(), b.get())[0, 0] == complex(3, inf)  # NumPy's own loop
            # cuSOLVER: NaN eigenvalues (zheevd), an internal error (geev), inf singular values (gesvd)
            tiny = 2.136137685217669e-179
            h = [[3, -tiny * 1j, -tiny * 1j], [tiny * 1j, 2, 0], [tiny * 1j, 0, 2]]
            assert np.isnan(cupy_model.linalg.eigvalsh(dev(h, np.complex128)).get()).all()
            with pytest.raises(CUSOLVERError, match="CUSOLVER_STATUS_INTERNAL_ERROR"):
                cupy_model.linalg.eigvals(dev([[25, 0, S32], [0, 25, 0], [8j, 0, 25]], np.complex64))
            assert compat_model.linalg.svdvals(dev([[1.0, S64], [S64, S64]])).get()[0] == inf
            p = cupy_model.linalg.pinv(dev([[S64, S64], [S64, S64]])).get()
            assert np.isinf(p[:, 0]).all() and np.isnan(p[:, 1]).all()  # NumPy: inf everywhere
            # searchsorted: a Python scalar becomes a float64 array (array-api-compat); x1 is flushed, x2 not
            assert int(compat_model.searchsorted(dev([S32], np.float32), S32)) == 1  # NumPy: 0
    finally:
        ctx.__exit__(None, None, None)


def test_the_models_streams_order_writes_only_by_events_or_the_legacy_rule():
    """A write enqueued on the legacy default stream (CuPy's, PyTorch's) is not seen on a non-blocking
    stream until that stream waits on an event after it; a blocking stream sees it at once."""
    cuda = streams.cuda
    c = dev([0.0, 0.0])
    other = cuda.Stream(non_blocking=True)
    c[0] = 7.0  # on the legacy default stream: queued
    assert streams.pending() and c.get(stream=other)[0] == 0.0  # read on an unordered stream: the old value
    other.wait_event(cuda.Stream.null.record())
    assert c.get(stream=other)[0] == 7.0
    c[1] = 5.0
    assert c.get(stream=cuda.Stream(non_blocking=False))[1] == 5.0  # a blocking stream: implicit order
    with other:
        c[0] = 1.0  # queued on the non-blocking stream ...
    assert c.get()[0] == 7.0  # ... the legacy stream does not wait for it
    streams.synchronize_all()
    assert c.get().tolist() == [1.0, 5.0] and not streams.pending()


# ----------------------------------------------------------------------------- the run's minimal examples


def _einsum(spec, *operands, **kwargs):
    return Case("einsum", (spec, list(operands)), kwargs)


_TINY = 2.136137685217669e-179
_BIG64, _BIG32 = 1.7976931348623157e308, 3.4028234663852886e38

#: (op, dtype, case): the failing cells of deep-alone.txt and session-summary.txt (the kit's and the deep kit's).
H200_CASES = [
    ("einsum", "complex128", _einsum("ij,jk->ik", _a([[complex(_BIG64, -1)] * 3] * 2, "complex128"), _a([[1j] * 4] * 3, "complex128"))),
    ("einsum", "complex64", _einsum("ij,jk->ik", _a([[complex(_BIG32, -1)] * 3] * 2, "complex64"), _a([[1j] * 4] * 3, "complex64"))),
    (
        "einsum",
        "complex64",
        _einsum(
            "ij,jk,kl->il",
            _a([[28925j] * 3] * 2, "complex64"),
            _a([[5.892000204403507e16j]] * 3, "complex64"),
            _a([[6.655521265077453e16j] * 2], "complex64"),
            optimize=False,
        ),
    ),
    ("isin", "float64", _c("isin", _a(0.0, "float64"), _a([_neg_nan(), 0.0], "float64"))),
    ("linalg.eigvals", "complex64", _c("linalg.eigvals", _a([[25, 0, S32], [0, 25, 0], [8j, 0, 25]], "complex64"))),
    (
        "linalg.eigvalsh",
        "complex128",
        _c("linalg.eigvalsh", _a([[3, -_TINY * 1j, -_TINY * 1j], [_TINY * 1j, 2, 0], [_TINY * 1j, 0, 2]], "complex128")),
    ),
    ("linalg.pinv", "float64", _c("linalg.pinv", _a([[S64, S64], [S64, S64]], "float64"))),
    ("linalg.svdvals", "float64", _c("linalg.svdvals", _a([[[1.0, S64], [S64, S64]]], "float64"))),
    ("pow", "complex64", _c("pow", _a(complex(-inf, nan), "complex64"), _a([complex(-1, 1)], "complex64"))),
    ("pow", "complex128", _c("pow", _a(complex(nan, inf), "complex128"), _a([complex(-1, 1)], "complex128"))),
    ("pow", "complex64", _c("pow", _a(complex(-inf, nan), "complex64"), _a(complex(-inf, nan), "complex64"))),
    ("pow", "complex128", _c("pow", _a(complex(-inf, nan), "complex128"), _a(complex(-inf, nan), "complex128"))),
    ("searchsorted", "float32", _c("searchsorted", _a([S32], "float32"), S32, sorter=_a([0], "int64"))),
    ("searchsorted", "float32", _c("searchsorted", _a([-S32], "float32"), -S32, side="right", sorter=_a([0], "int64"))),
    # found on the mirror after the fixes above, what the H200 would have met next: NumPy's pinv formula
    # overflows (1 / 5e-324) where a scaled one does not, and NumPy multiplies each term's factors from the left
    ("linalg.pinv", "float64", _c("linalg.pinv", _a([[0.0, S64]], "float64"))),
    ("linalg.pinv", "complex128", _c("linalg.pinv", _a([[complex(S64, 0)]], "complex128"))),
    (
        "einsum",
        "complex128",
        _einsum(
            "ij,jk,kl->il",
            _a([[0j] * 3] * 2, "complex128"),
            _a([[266244345565j]] * 3, "complex128"),
            _a([[6.752042493324739e296j] * 2], "complex128"),
            optimize=False,
        ),
    ),
]


@pytest.mark.parametrize("op, dtype, case", H200_CASES, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(H200_CASES)])
def test_h200_minimal_examples_pass_the_kit_on_the_mirror(mirror, op, dtype, case):
    runner = Runner(D, "cpu")
    cell = Cell(op, as_dtype(dtype), as_layout("strided"), "native")
    ctx = _quiet()
    try:
        with np.errstate(all="ignore"):
            runner.check(case, cell)
    except _Invalid:
        pytest.fail(f"{case!r} does not plan to the cell {cell.id}: the example is not what the H200 ran")
    finally:
        ctx.__exit__(None, None, None)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_complex_pow_edge_sweep_passes_on_the_mirror(mirror, dtype):
    """The quick kit's edge sweep of complex ``pow``: 24 of 1521 elements differed on the H200 (complex128),
    each a base with a NaN and an infinite part (thrust's ``log`` made its real part NaN)."""
    runner = Runner(D, "cpu")
    cell = Cell("pow", as_dtype(dtype), as_layout("strided"), "native")
    for case in sweep("pow", as_dtype(dtype)):
        ctx = _quiet()
        try:
            with np.errstate(all="ignore"):
                runner.check(case, cell)
        finally:
            ctx.__exit__(None, None, None)


def test_complex_logs_of_a_nan_with_an_infinity_are_numpys(mirror):
    """``log``, ``log2``, ``log10``, ``log1p``: ``+inf`` real part for a NaN with an infinite part, as C99 and NumPy."""
    z = np.array([complex(nan, inf), complex(-inf, nan), complex(inf, nan), complex(nan, -inf)], dtype=np.complex128)
    for name in ("log", "log2", "log10", "log1p"):
        with np.errstate(all="ignore"):
            want = getattr(np, name)(z)
        got = getattr(nda, name)(nda.asarray(z, device=D)).asnumpy()
        assert (got.real == want.real).all() and np.isnan(got.imag).all(), name


def test_einsum_without_optimize_sums_complex_products_as_numpy_does(mirror):
    a = np.full((2, 3), complex(_BIG64, -1))
    b = np.full((3, 4), 1j)
    got = nda.einsum("ij,jk->ik", nda.asarray(a, device=D), nda.asarray(b, device=D)).asnumpy()
    assert (got == complex(3, inf)).all()  # cuBLAS's alpha gave nan+infj
    # optimize: NumPy contracts through BLAS itself, as CuPy does (its alpha included)
    with np.errstate(all="ignore"):
        want = np.einsum("ij,jk->ik", a, b, optimize=True)
    got = nda.einsum("ij,jk->ik", nda.asarray(a, device=D), nda.asarray(b, device=D), optimize=True).asnumpy()
    assert np.isnan(want[0, 0].real) and np.isnan(got[0, 0].real)
    rng = np.random.default_rng(0)
    ops = [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64) for s in ((2, 3), (3, 4), (4, 2))]
    got = nda.einsum("ij,jk,kl->il", *[nda.asarray(o, device=D) for o in ops]).asnumpy()
    np.testing.assert_allclose(got, np.einsum("ij,jk,kl->il", *ops), rtol=1e-5)
    assert got.dtype == np.complex64


def test_the_kits_complex_einsum_cases_keep_each_product_finite():
    """A term's ``a c - b d`` rounded once (a GPU's GEMM: fused) or twice (NumPy's loop) is ``inf`` or ``nan``
    once a product overflows: the kit bounds complex einsum parts as it does ``multiply``'s."""
    from hypothesis import HealthCheck, given, settings

    from nda.testing.conformance._generators import strategy

    checked = []

    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy("einsum", as_dtype("complex128")))
    def run(case):
        operands = case.args[1]
        largest = [float(np.max(np.abs(np.concatenate([o.base.real.ravel(), o.base.imag.ravel()])), initial=0.0)) for o in operands]
        assert math.prod(largest) <= 2.0**1021 and all(np.isfinite(largest))
        checked.append(len(operands))

    run()
    assert checked


def test_pinv_of_subnormal_doubles_overflows_as_numpys(mirror):
    for x in ([[0.0, S64]], [[S64, S64], [S64, S64]], [[1.0, S64], [S64, S64]], [[3.0, 1e-160], [1e-160, 2.0]]):
        x = np.array(x)
        with np.errstate(all="ignore"):
            want = np.linalg.pinv(x)
        got = nda.linalg.pinv(nda.asarray(x, device=D)).asnumpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        finite = np.isfinite(want)
        scale = float(np.abs(want[finite]).max(initial=0.0))  # entries below 1.5e-154 of the largest are zeros
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-15 * scale)


# ----------------------------------------------------------------------------- memory shared through DLPack


def test_writes_to_memory_shared_through_dlpack_are_seen_both_ways_without_a_sync(mirror, engine):
    """The H200: ``x = nda.from_dlpack(c); c[0] = 7; x.asnumpy()[0]`` was 0. nda-cuda's non-blocking stream
    now waits for CuPy's current stream before each op on shared memory, and CuPy's waits for nda's after."""
    c = cupy_model.arange(6, dtype=np.float32)
    x = nda.from_dlpack(c)
    c[0] = 7  # enqueued on CuPy's stream (the legacy default one)
    assert x.asnumpy()[0] == 7
    c[1] = 5
    assert (x + 1).asnumpy()[1] == 6  # a kernel on nda's stream sees it too
    x[2] = 42  # nda's write, on nda's stream ...
    assert c.get()[2] == 42 and float(c[2]) == 42  # ... seen by CuPy's next op
    assert float(cupy_model.sum(c)) == 7 + 5 + 42 + 3 + 4 + 5
    # the other direction of the exchange: CuPy imports nda's memory
    z = nda.arange(4, dtype=nda.float32, device=D)
    d = cupy_model.from_dlpack(z)
    z[0] = 9
    assert d.get()[0] == 9
    d[1] = 11
    assert z.asnumpy()[1] == 11 and nda.sum(z[:2]).asnumpy() == 20
    # on another current stream of CuPy's: the same, with that stream
    other = streams.cuda.Stream(non_blocking=True)
    with other:
        c[3] = -1
    with other:
        assert x.asnumpy()[3] == -1
    assert not streams.pending() or streams.synchronize_all() is None


def test_nda_cudas_stream_is_not_ordered_with_cupys_by_itself(mirror):
    """What the ordering is for: a read on nda-cuda's stream misses CuPy's queued write until the stream
    waits for CuPy's (``nda_cuda._streams.DeviceStream.wait_for``, what ``nda_cuda._shared`` does)."""
    ds = mirror.stream
    c = dev([0.0])
    c[0] = 7.0
    assert c.get(stream=ds.stream)[0] == 0.0
    ds.wait_for([streams.get_current_stream().ptr])
    assert c.get(stream=ds.stream)[0] == 7.0


def test_only_shared_buffers_pay_the_ordering(mirror):
    shared = mirror.shared
    c = cupy_model.arange(3, dtype=np.float64)
    x = nda.from_dlpack(c)
    y = nda.arange(3, dtype=nda.float64, device=D)
    assert shared.holds(x._buf) and shared.holds(x[1:]._buf) and not shared.holds(y._buf)
    key = len(shared.owners)
    del x
    import gc

    gc.collect()
    nda.waitall()
    assert len(shared.owners) <= key  # the mark goes with the memory's owner


# ----------------------------------------------------------------------------- the generated kernels' check


def test_the_generated_kernels_check_reads_the_pow_flag_after_the_stream(mirror):
    """benchmarks/gpu_elementwise_check read integer pow's negative-exponent flag (copied to host memory
    without a sync) at once: the H200 reported "Integers to negative integer powers" for 0-d and size-0
    cases with no negative exponent. Over the model's streams an early read sees the buffer unfilled."""
    why = pytest.importorskip("_cuda_host_kernels").available()
    if why is not None:
        pytest.skip(why)
    if not nda.backends.serves("cudagen"):
        nda.backends.load("_cuda_numpy_mirror:codegen_backend")
    import _cuda_numpy_mirror

    from benchmarks import gpu_elementwise_check as check

    gen = _cuda_numpy_mirror.codegen_backend.generator

    class PowOnly:  # the check's pow cases only (its where/astype cases run for every dtype)
        def serves(self, op, dtype):
            return op == "pow" and gen.serves(op, dtype)

        def wrap(self, *args, **kwargs):
            return gen.wrap(*args, **kwargs)

    fallbacks = check.cupy_kernels(cupy_model, compat_model)
    fallbacks["astype_ref"] = fallbacks["astype"]
    saved = check.DTYPES
    check.DTYPES = ("int32", "int64")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chk = check.check_values(cupy_model, PowOnly(), fallbacks, synchronize=streams.drain)
    finally:
        check.DTYPES = saved
    assert chk.cases > 40 and chk.failures == []
