"""The H200 run of 2026-11-26 (``../shared/gpu/h200-2026-11-26``), checked without a GPU on the CuPy model.

That run found nda-cuda depending on things real CuPy 14.2 refuses or computes differently, which
the model in ``tests/_cupy_quirks.py`` allowed, so CI stayed green. Three groups here:

* the model refuses what CuPy refuses (implicit host conversion, host arrays as kernel operands,
  DLPack capsules of another device type) and reproduces each behaviour the H200 measured;
* every minimal failing example of the run's reports, as a conformance-kit case on the mirror
  (nda-cuda's kernel table over the model) against cpu, with the kit's own comparison (flushed
  subnormals, tolerances, signed zeros); each failed before its fix in ``nda_cuda``;
* the two failing gradients (``cholesky(upper=True)``, ``solve`` with a broadcast batch).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import nda
from nda._dtypes import as_dtype
from nda.testing import conformance
from nda.testing.conformance._cases import Arr, Case
from nda.testing.conformance._kit import Cell, Runner, _Invalid
from nda._devices import as_layout

pytest.importorskip("scipy")
from _cupy_device import DeviceArray, IllegalAddress  # noqa: E402
from _cupy_quirks import compat_model, cupy_model, sparse_model  # noqa: E402

D = "cudamirror"
inf, nan = math.inf, math.nan


@pytest.fixture(scope="module")
def mirror():
    if not nda.backends.serves(D):
        nda.backends.load("_cuda_numpy_mirror:backend")
    import _cuda_numpy_mirror

    return _cuda_numpy_mirror.backend


def dev(value, dtype=None):
    return cupy_model.asarray(np.asarray(value, dtype=dtype))


def _quiet():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore")
    return ctx


# ----------------------------------------------------------------------------- CuPy's refusals


class _ClaimsCuda:
    """A producer that says it is on a CUDA device but hands over host memory (what real CuPy refuses)."""

    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__()


def test_the_model_refuses_what_cupy_refuses():
    x = dev([1.0, 2.0])
    assert not isinstance(x, np.ndarray)
    with pytest.raises(TypeError, match=r"^Implicit conversion to a NumPy array is not allowed\. Please use `\.get\(\)`"):
        np.asarray(x)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray((x, x))  # a tuple of device arrays (what nda-cuda's nonzero handed it on the H200)
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy\.ndarray'>"):
        cupy_model.add(x, np.ones(2))  # a host operand of a kernel
    with pytest.raises(TypeError, match="Unsupported type"):
        x + np.array(1.0)  # 0-d host arrays too
    with pytest.raises(TypeError, match="Unsupported type"):
        cupy_model.concatenate([np.ones(2), np.ones(2)])
    with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill"):
        x[...] = np.ones(2)
    assert x.get().tolist() == [1.0, 2.0] and (np.sin(x) + 1).get()[0] == pytest.approx(1 + math.sin(1.0))  # NumPy's protocols dispatch
    assert np.concatenate([x, x]).__class__ is DeviceArray
    # DLPack, as cupy.from_dlpack: the capsule's own device type decides
    with pytest.raises(RuntimeError, match="CuPy is built against CUDA, different from the backend that backs the incoming DLPack tensor"):
        cupy_model.from_dlpack(_ClaimsCuda(np.arange(3.0)))
    with pytest.raises(TypeError, match="CPU arrays cannot be directly imported to CuPy"):
        cupy_model.from_dlpack(np.arange(3.0))
    y = cupy_model.from_dlpack(x)
    assert y.__class__ is DeviceArray and x.__dlpack_device__() == (2, 0)
    y[0] = 7.0
    assert x.get()[0] == 7.0  # zero-copy
    with pytest.raises(ValueError, match="cannot be exported to CPU without copy"):
        x.__dlpack__(dl_device=(1, 0), copy=False)
    assert np.from_dlpack(x, device="cpu", copy=True).tolist() == [7.0, 2.0]
    with pytest.raises((BufferError, RuntimeError), match="Unsupported device"):
        np.from_dlpack(x)  # NumPy refuses CUDA memory, as with a real CuPy array
    with pytest.raises(BufferError, match="real CUDA consumer"):
        x.__dlpack__(stream=0x5A5A5A5A)  # a real stream (CuPy's, PyTorch's): the model's host memory never reaches it


def test_the_model_reproduces_what_the_h200_measured():
    ctx = _quiet()
    try:
        with np.errstate(all="ignore"):
            assert cupy_model.exp(dev(complex(-inf, -inf))).get().tobytes() == np.complex128(0j).tobytes()  # NumPy: (0, -0)
            assert not np.signbit(cupy_model.log1p(dev(complex(0, -0.0))).get().imag)  # NumPy: -0
            assert cupy_model.log1p(dev([complex(-2, -0.0)], np.complex64)).get()[0].imag > 3  # NumPy: -pi
            big = complex(1.3407807929942597e154, 9.989595361011177e145)
            assert np.isfinite(cupy_model.multiply(dev([big]), dev([big])).get()[0].real)  # fused multiply-add; NumPy: inf
            assert np.isnan(cupy_model.power(dev(0j), dev(complex(inf, nan))).get())  # NumPy: 0j
            assert not np.signbit(cupy_model.power(dev(-0.0), 0.5).get())  # C's pow; NumPy's x ** 0.5 is sqrt: -0.0
            sin = cupy_model.sin(dev([complex(1.401298464324817e-45, 193)], np.complex64)).get()[0]
            assert np.isnan(sin.real) and sin.imag == inf  # NumPy on the flushed input: (0, inf)
            assert cupy_model.log(dev([-5e-324])).get()[0] == -inf  # NumPy: nan
            assert int(cupy_model.argmin(dev([0.0, nan, nan], np.float32))) == 2  # NumPy: 1, the first NaN
            with pytest.raises(OverflowError, match="out of bounds for uint64"):
                cupy_model.matmul(dev([[0]], np.int64), dev([[[[0]], [[0]]]], np.int64)[::-1])
            with pytest.raises(ZeroDivisionError):
                cupy_model.linalg.solve(dev([[[1.0]]]), dev(np.empty((1, 1, 0))))
            with pytest.raises(ValueError, match=r"b must have \(\.\.\., M, K\)"):
                compat_model.linalg.solve(dev(np.ones((2, 1, 1))), dev(np.ones((1, 1))))  # array_api_compat.cupy: CuPy's own solve
            with pytest.raises(ValueError, match="CUPY_CUB_MAX which has no identity"):
                compat_model.linalg.vector_norm(dev(np.empty((0,))), ord=inf)
            assert 1e-9 < float(compat_model.linalg.svdvals(dev([[1.0, 1.0], [1.0, 1.0]], np.float32))[1]) < 1e-7
            empty = sparse_model.csr_matrix((dev([], np.float64), dev([], np.int32), dev([0], np.int32)), shape=(1, 0))
            with pytest.raises(IllegalAddress, match="csrgeam2"):
                empty - empty
            with pytest.raises(IllegalAddress, match="denseToSparse"):
                sparse_model.csr_matrix(dev(np.empty((1, 0))))
    finally:
        ctx.__exit__(None, None, None)


# ----------------------------------------------------------------------------- the run's minimal examples


def _c(op, *args, **kwargs):
    """A case as the kit's generators make it: element-wise cases compare signs of zeros by the kit's rule."""
    from nda.ops import CATALOG
    from nda.testing.conformance._cases import signed_zeros

    first = next(a for a in args if isinstance(a, Arr))
    zeros = CATALOG[op].family in ("unary", "binary") and signed_zeros(op, as_dtype(first.base.dtype.name))
    return Case(op, args, kwargs, signed_zeros=zeros)


def _a(values, dtype, view=None):
    return Arr(np.array(values, dtype=dtype), view)


def _e(shape, dtype):
    return Arr(np.empty(shape, dtype=dtype))


_BIG = complex(1.3407807929942597e154, 9.989595361011177e145)

#: (op, dtype, layout, case): the minimal examples of kit-quick-cuda-vs-cpu.txt and kit-deep-one-op-per-process-failures.txt.
H200_CASES = [
    ("subtract", "float64", "csr", _c("subtract", _e((1, 0), "float64"), _e((1, 0), "float64"))),
    ("add", "float32", "csr", _c("add", _e((1, 0), "float32"), _e((1, 0), "float32"))),
    ("subtract", "float32", "csr", _c("subtract", _a([[0.0]], "float32"), _a([[0.0]], "float32"))),
    ("subtract", "complex64", "csr", _c("subtract", _a([[0j]], "complex64"), _a([[0j]], "complex64"))),
    ("nonzero", "bool", "strided", _c("nonzero", _e((0,), "bool"))),
    ("nonzero", "int16", "strided", _c("nonzero", _a([1, 0, 2], "int16"))),
    ("nonzero", "complex128", "strided", _c("nonzero", _e((0,), "complex128"))),
    ("exp", "complex64", "strided", _c("exp", _a(complex(-inf, -inf), "complex64"))),
    ("exp", "complex128", "strided", _c("exp", _a(complex(-inf, -inf), "complex128"))),
    ("expm1", "complex64", "strided", _c("expm1", _a(complex(-inf, -inf), "complex64"))),
    ("expm1", "complex128", "strided", _c("expm1", _a(complex(-inf, -inf), "complex128"))),
    ("log1p", "complex64", "strided", _c("log1p", _a(complex(0, -0.0), "complex64"))),
    ("log1p", "complex128", "strided", _c("log1p", _a(complex(0, -0.0), "complex128"))),
    ("log1p", "complex64", "csr", _c("log1p", _a([[complex(-2, -0.0)]], "complex64"))),
    ("log1p", "complex64", "csr", _c("log1p", _a([[complex(-inf, -0.0)]], "complex64"))),
    ("log1p", "complex128", "csr", _c("log1p", _a([[complex(-inf, -0.0)]], "complex128"))),
    ("sin", "complex64", "csr", _c("sin", _a([[complex(1.401298464324817e-45, 193)]], "complex64"))),
    ("pow", "float64", "strided", _c("pow", _a(-0.0, "float64"), 0.5)),
    ("pow", "complex64", "strided", _c("pow", _a(0j, "complex64"), _a(complex(inf, nan), "complex64"))),
    ("pow", "complex128", "strided", _c("pow", _a(2j, "complex128"), _a(complex(-inf, 0), "complex128"))),
    ("pow", "complex64", "strided", _c("pow", _a(complex(0, inf), "complex64"), complex(-inf, 0))),
    # multiply complex128 csr, (1.34e154+9.99e145j)**2: inf on the H200's cpu, 1.797e308 on the GPU (a fused
    # multiply-add). Not compared by decision (nda.testing.conformance._cases.COMPLEX_PRODUCTS): see below.
    ("multiply", "complex128", "strided", _c("multiply", _a([complex(1 + 2**-27, 1)], "complex128"), _a([complex(1 - 2**-27, 1)], "complex128"))),
    ("multiply", "complex128", "csr", _c("multiply", _a([[complex(1 + 2**-27, 1)]], "complex128"), _a([[complex(1 - 2**-27, 1)]], "complex128"))),
    ("square", "complex64", "strided", _c("square", _a([complex(1 + 2**-12, 1 - 2**-12)], "complex64"))),
    ("log", "float64", "strided", _c("log", _a([-5e-324], "float64"))),
    ("log2", "float64", "strided", _c("log2", _a(-5e-324, "float64"))),
    ("log10", "float64", "strided", _c("log10", _a([-5e-324, 5e-324], "float64"))),
    ("matmul", "int16", "strided", _c("matmul", _a([[0]], "int16"), _a([[[[0]], [[0]]]], "int16", "reverse"))),
    ("matmul", "int64", "strided", _c("matmul", _a([0], "int64"), _a([[[[0]], [[0]]]], "int64", "reverse"))),
    ("matmul", "complex128", "strided", _c("matmul", _a([[[[1j]], [[2j]]]], "complex128", "reverse"), _a([[3 + 0j]], "complex128"))),
    ("linalg.solve", "float32", "strided", _c("linalg.solve", _a([[[1.0]]], "float32"), _e((1, 1, 0), "float32"))),
    ("linalg.solve", "complex128", "strided", _c("linalg.solve", _a([[[1 + 0j]]], "complex128"), _e((1, 1, 0), "complex128"))),
    ("linalg.solve", "float64", "strided", _c("linalg.solve", _a([[[2.0]], [[4.0]]], "float64"), _a([[1.0]], "float64"))),
    ("linalg.vector_norm", "float32", "strided", _c("linalg.vector_norm", _e((0,), "float32"), ord=inf)),
    ("linalg.vector_norm", "complex64", "strided", _c("linalg.vector_norm", _e((0, 3), "complex64"), axis=0, ord=inf)),
    ("linalg.svdvals", "float32", "strided", _c("linalg.svdvals", _a([[1.0, 1.0], [1.0, 1.0]], "float32"))),
    ("linalg.svdvals", "float64", "strided", _c("linalg.svdvals", _a([[1.335753082880424e-120, 0.0], [1.0, 1.0]], "float64"))),
    ("linalg.svdvals", "complex64", "strided", _c("linalg.svdvals", _a([[1j, 1j], [1j, 1j]], "complex64"))),
    ("linalg.matrix_norm", "float32", "strided", _c("linalg.matrix_norm", _a([[1.0, 1.0], [1.0, 1.0]], "float32"), ord=-2)),
    ("linalg.matrix_norm", "float64", "strided", _c("linalg.matrix_norm", _a([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], "float64"), ord=-2)),
    ("linalg.pinv", "float32", "strided", _c("linalg.pinv", _a([[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]], "float32"))),
    ("linalg.pinv", "float64", "strided", _c("linalg.pinv", _a([[1.0, 0.0], [1.0, 1.0]], "float64"))),
    ("linalg.pinv", "float64", "strided", _c("linalg.pinv", _a([[0.0, 0.046875], [0.046875, 0.046875]], "float64"))),
    ("linalg.pinv", "complex64", "strided", _c("linalg.pinv", _a([[0j, 1j, 1j], [1j, 1j, 1j]], "complex64"))),
    ("linalg.pinv", "complex128", "strided", _c("linalg.pinv", _a([[0j, -1 + 0j], [-1 + 0j, -1 + 0j]], "complex128"))),
    ("argmax", "float32", "strided", _c("argmax", _a([[0.0], [nan], [nan]], "float32"), axis=0)),
    ("argmin", "float32", "strided", _c("argmin", _a([[0.0, nan, nan], [0.0] * 3, [0.0] * 3, [0.0] * 3], "float32", "step"))),
    ("argmax", "float64", "strided", _c("argmax", _a([[nan, 1.0, nan], [2.0, nan, nan]], "float64"), axis=1, keepdims=True)),
    ("divide", "float32", "csr", _c("divide", _a([[1.401298464324817e-45, 0.0]], "float32"), 1.401298464324817e-45)),
]


@pytest.mark.parametrize("op, dtype, layout, case", H200_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{i}" for i, c in enumerate(H200_CASES)])
def test_h200_minimal_examples_pass_the_kit_on_the_mirror(mirror, op, dtype, layout, case):
    runner = Runner(D, "cpu")
    cell = Cell(op, as_dtype(dtype), as_layout(layout), "native")
    ctx = _quiet()
    try:
        with np.errstate(all="ignore"):
            runner.check(case, cell)
    except _Invalid:
        pytest.fail(f"{case!r} does not plan to the cell {cell.id}: the example is not what the H200 ran")
    finally:
        ctx.__exit__(None, None, None)


def test_zero_size_and_empty_csr_matrices_never_reach_cusparse(mirror):
    """Every csr kernel of nda-cuda on the kit's degenerate matrices (the model's cuSPARSE raises
    IllegalAddress for a zero dimension or no stored element, where the H200 corrupted memory)."""
    from nda.testing.conformance._cases import degenerate_sweep

    runner = Runner(D, "cpu")
    checked = 0
    for op in sorted(mirror.csr_sources):
        for dtype in ("float32", "complex128", "bool"):
            cell = Cell(op, as_dtype(dtype), as_layout("csr"), "native")
            for case in degenerate_sweep(op, as_dtype(dtype)):
                ctx = _quiet()
                try:
                    with np.errstate(all="ignore"):
                        runner.check(case, cell)
                    checked += 1
                except _Invalid:
                    pass  # not a case of this cell (a dtype the op does not take, a shape it refuses)
                finally:
                    ctx.__exit__(None, None, None)
    assert checked > 200, checked


def test_complex_products_near_overflow_are_not_compared_and_why():
    """The H200's ``multiply`` complex128 failure is a rounding choice NumPy makes both ways itself.

    ``a c - b d`` with one rounding (a fused multiply-add: the GPU, NumPy's AVX2 loop) or two
    (NumPy's scalar loop): at ``(2**512 + 2**485 j)**2`` the real part is the largest finite value
    or ``inf``. The kit keeps complex products clear of the overflow threshold and compares them
    with ``rtol * |x1| * |x2|`` absolutely (``_cases.COMPLEX_PRODUCTS``).
    """
    from nda.testing.conformance._cases import binary_repairs, unary_repair

    big = complex(1.3407807929942597e154, 9.989595361011177e145)
    ctx = _quiet()
    try:
        with np.errstate(all="ignore"):
            assert np.complex128(big) * np.complex128(big) == complex(inf, 2.678771517965669e300)  # two roundings
            assert cupy_model.multiply(dev([big]), dev([big])).get()[0].real == np.finfo(np.float64).max  # one (the GPU)
    finally:
        ctx.__exit__(None, None, None)
    for dtype, bound in (("complex128", 2.0**510), ("complex64", 2.0**62)):
        repair, _ = binary_repairs("multiply", as_dtype(dtype))
        top = float(np.finfo(np.float32 if dtype == "complex64" else np.float64).max)
        parts = repair(np.array([complex(0.9 * top, 0.5 * top), complex(inf, -0.9 * top), complex(nan, 1)], dtype=dtype))
        assert np.abs(parts.real[0]) <= bound and np.abs(parts.imag[:2]).max() <= bound
        assert np.isinf(parts.real[1]) and np.isnan(parts.real[2])  # non-finite values are compared as they are
        assert unary_repair("square", as_dtype(dtype)) is not None and unary_repair("square", as_dtype("float64")) is None


# ----------------------------------------------------------------------------- gradients


def test_h200_gradient_failures_pass_on_the_mirror(mirror):
    """``cholesky(x, upper=True)`` reads the upper triangle (NumPy's, and nda's gradient, do); ``solve``
    broadcasts the batch (CuPy's does not)."""
    x = np.array([[1.44, -0.249], [-0.162, 0.653]])  # not symmetric: the gradient run's seed
    for device in (D, "cpu"):
        upper = nda.linalg.cholesky(nda.asarray(x, device=device), upper=True).asnumpy()
        np.testing.assert_allclose(upper, np.linalg.cholesky(x, upper=True), rtol=1e-12)
    a, b = np.array([[[-1.863]], [[-2.23]]]), np.array([[-1.934]])
    np.testing.assert_allclose(
        nda.linalg.solve(nda.asarray(a, device=D), nda.asarray(b, device=D)).asnumpy(), np.linalg.solve(a, b[None]), rtol=1e-12
    )
    report = conformance.run(D, reference="cpu", ops=["linalg.cholesky", "linalg.solve"], gradients=True)
    assert report.ok, report.table()
