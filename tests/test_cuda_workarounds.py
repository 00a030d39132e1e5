"""nda-cuda's workarounds for CuPy 14.2, checked without a GPU (``nda_cuda._workarounds``).

The conformance kit on an NVIDIA H100 found nda-cuda differing from NumPy in 130 cells
(``../shared/gpu/h100-2026-11-22``). Three layers of tests here:

* ``_cupy_quirks.cupy_model`` reproduces each fact measured on the GPU (so the mirror is
  a faithful stand-in for these behaviours);
* each workaround, over plain NumPy, gives NumPy's own result on every pair of edge values
  and on random values (so a workaround cannot be wrong where CuPy was right);
* nda over the mirror (nda-cuda's kernel table over the model) gives the cpu's result on the
  H100's minimal examples, and the conformance kit passes the H100's failing cells there.

What the model cannot check is CuPy itself: the same cells on a GPU are owed
(``tests/test_cuda.py::test_conformance_kit_cuda_against_cpu``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import nda
from nda.ops import elementwise
from nda.testing import assert_allclose, conformance

pytest.importorskip("scipy")
import _cupy_quirks as quirks  # noqa: E402
from _cupy_quirks import DeviceArray, cupy_model  # noqa: E402
from nda_cuda import _workarounds as fix  # noqa: E402

MAX = float(np.finfo(np.float64).max)
SUB32 = float(np.finfo(np.float32).smallest_subnormal)
D = "cudamirror"


@pytest.fixture(scope="module")
def mirror():
    if not nda.backends.serves(D):
        nda.backends.load("_cuda_numpy_mirror:backend")
    import _cuda_numpy_mirror

    return _cuda_numpy_mirror.backend


def dev(value, dtype=None):
    """A model device array (what a CuPy array is to the workarounds)."""
    return DeviceArray(np.array(value, dtype=dtype))  # its bits as they are (cupy_model.asarray would drop a 0-d -0.0)


# ----------------------------------------------------------------------------- the model is faithful


def test_the_model_reproduces_what_the_h100_measured():
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert not np.signbit(cupy_model.array(np.array(-0.0)))  # cupy.asarray(np.array(-0.0)) holds +0.0
        assert np.signbit(cupy_model.array(np.array([-0.0])))[0]  # a 1-d array keeps the sign
        assert not (dev([SUB32], np.float32) > 0)[0]  # float32 subnormals flushed: 1.4e-45 > 0 is False
        assert (dev([SUB32], np.float32) * 1)[0] == 0.0
        assert (dev([5e-324]) > 0)[0]  # float64 keeps them
        assert cupy_model.hypot(dev(1.0), dev(MAX)) == np.inf
        assert cupy_model.abs(dev([MAX - 1j]))[0] == np.inf
        assert cupy_model.log(dev([MAX - 1j]))[0].real == np.inf
        with pytest.raises(OverflowError, match="out of bounds for uint8"):
            cupy_model.arange(1, 0, -1, dtype=np.uint8)
        assert cupy_model.floor_divide(dev([5e-324]), dev([-MAX]))[0] == 0.0  # NumPy: -1.0
        assert not np.signbit(cupy_model.remainder(dev(0.0), -1.0))  # NumPy: -0.0
        assert np.isnan(cupy_model.log2(dev(0j)).imag)
        assert cupy_model.reciprocal(dev(1 + 0j, np.complex64)) == 1 and not np.signbit(cupy_model.reciprocal(dev(1 + 0j, np.complex64)).imag)
        assert np.isnan(cupy_model.divide(dev([1 + 1j], np.complex64), dev([0j], np.complex64))[0])
        assert np.isnan(cupy_model.sign(dev([complex(1, math.inf)]))[0].imag)
        assert cupy_model.expm1(dev([89 + 0j], np.complex64))[0] == complex(math.inf, 0)
        assert cupy_model.linalg.eigvals(dev(np.empty((0, 0), np.float32))).dtype == np.float32
        assert cupy_model.linalg.pinv(dev([[[0.0, 1.0]]]))[0, 0, 0] != 0.0  # batched gesvdj: about -1.8e-16
        with pytest.raises(AttributeError, match="ravel"):
            quirks.compat_model.isin(dev(0.0), 0.0)
        with pytest.raises(TypeError, match="complex"):
            cupy_model.linspace(0j, 0j, 2)
        x = dev([1.0, 2.0])
        x[0] = -0.0  # a Python scalar is assigned by fill: a memset for zero
        assert not np.signbit(x[0])
        a = quirks.sparse_model.csr_matrix(dev([[complex(1, math.inf)]], np.complex64))
        assert np.isnan((a + a).data[0].real)  # cuSPARSE csrgeam2: 1 * (1+infj) is nan+infj


# ----------------------------------------------------------------------------- the workarounds are NumPy


def _edges(dtype):
    f = np.finfo(dtype)
    return np.array(
        [
            0.0,
            -0.0,
            1.0,
            -2.5,
            0.5,
            f.smallest_normal,
            f.smallest_subnormal,
            -f.smallest_subnormal,
            f.max,
            -f.max,
            3.0,
            1e-3,
            math.inf,
            -math.inf,
            math.nan,
            7.0,
        ],
        dtype=dtype,
    )


def _same(mine, reference, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got, want = np.asarray(mine(*args)), np.asarray(reference(*args))
    assert got.dtype == want.dtype
    assert_allclose(got, want, signed_zeros=True)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "hypot", "power", "log"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_real_workarounds_equal_numpy_on_edge_pairs_and_random_values(name, dtype):
    reference = {"floor_divide": elementwise._floor_divide, "remainder": np.remainder, "hypot": np.hypot, "power": np.power, "log": np.log}[name]
    e = _edges(dtype)
    rng = np.random.default_rng(1)
    if name in ("power", "log"):  # NumPy's sqrt fast path of x ** 0.5; NaN for every negative input
        mine = fix.power(np, np.power) if name == "power" else fix.log(np)
        if name == "log":
            _same(mine, reference, e)
            return
        _same(mine, reference, np.repeat(e, e.size), np.tile(e, e.size))
        _same(mine, reference, e, 0.5)
        _same(mine, reference, e, np.asarray(0.5, dtype))
        _same(mine, reference, e, np.asarray([0.5], dtype))
        return
    _same(getattr(fix, name)(np), reference, np.repeat(e, e.size), np.tile(e, e.size))
    _same(getattr(fix, name)(np), reference, (rng.standard_normal(500) * 10).astype(dtype), rng.standard_normal(500).astype(dtype))
    _same(getattr(fix, name)(np), reference, np.asarray(-0.0, dtype), -1.0)  # a Python scalar operand


@pytest.mark.parametrize("name", ["absolute", "log", "log10", "log2", "log1p", "reciprocal", "sign", "exp", "expm1", "divide", "power"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_workarounds_equal_numpy_on_edge_values_and_random_values(name, dtype):
    if (name, dtype) == ("power", np.complex64):
        pytest.skip(
            "cpowf rounds its phase to float32, whose last bit libraries set differently; the kit compares complex64 pow "
            "(test_the_kit_passes_the_h100s_failing_cells_on_the_mirror) with its tolerance"
        )
    parts = _edges(np.float32 if dtype == np.complex64 else np.float64)
    z = np.array([complex(a, b) for a in parts for b in parts], dtype=dtype)
    rng = np.random.default_rng(2)
    r = (rng.standard_normal(500) * 30 + 1j * rng.standard_normal(500)).astype(dtype)
    if name in ("divide", "power"):
        mine, reference = (fix.divide(np), np.divide) if name == "divide" else (fix.power(np, np.power), np.power)
        x1, x2 = np.repeat(z, z.size), np.tile(z, z.size)
        if name == "power":
            # z ** w is exp(w log z): where the phase w log z is huge (|imag| > 1e6 rad), its cos and sin
            # depend on the last bit of log z, which math libraries round differently: no information there.
            with np.errstate(all="ignore"):
                phase = np.abs((x2.astype(np.complex128) * np.log(x1.astype(np.complex128))).imag)
            keep = ~(np.isfinite(phase) & (phase > 1e6))
            x1, x2 = x1[keep], x2[keep]
        _same(mine, reference, x1, x2)
        _same(mine, reference, r, r[::-1].copy())
        _same(mine, reference, complex(1, 1), z)
        if name == "power":  # integral exponents: NumPy's repeated multiplication, negative ones divided
            _same(mine, reference, z, np.array([3, -2, 7, 99, -99, 100, 2.5], dtype=dtype).repeat(z.size)[: z.size])
        return
    mine = fix.expm1(np, elementwise.expm1_for) if name == "expm1" else getattr(fix, name)(np)
    reference = elementwise._expm1 if name == "expm1" else getattr(np, name)
    _same(mine, reference, z)
    _same(mine, reference, r)


def test_transfers_keep_signed_zeros_and_the_model_would_not():
    for value in (np.array(-0.0), np.array(complex(0.0, -0.0), np.complex64), np.float32(-0.0)):
        moved = fix.to_device(cupy_model, value)
        assert moved.shape == () and moved.dtype == np.asarray(value).dtype
        assert moved.get().tobytes() == np.asarray(value).tobytes()
        assert cupy_model.array(np.asarray(value), copy=True).get().tobytes() != np.asarray(value).tobytes()
    full = fix.full(cupy_model)((3,), -0.0, np.dtype(np.float64))
    assert np.signbit(full).all() and not np.signbit(cupy_model.full((3,), -0.0)).any()
    x = dev([1.0, 2.0])
    fix.keep_zero_sign(cupy_model, lambda target, key, value: target.__setitem__(key, value))(x, 0, -0.0)
    assert np.signbit(x[0])


# ----------------------------------------------------------------------------- nda over the mirror

_NEG0 = lambda dtype: nda.asarray(-0.0 if dtype.category != "complex floating" else complex(-0.0, -0.0), dtype=dtype, device=D)  # noqa: E731

#: The H100's minimal examples (conformance-failures.txt), one per group: (call, dtype).
EXAMPLES = {
    "0-d -0.0 (transfer)": lambda d: nda.sin(_NEG0(d)),
    "0-d -0.0 complex": lambda d: nda.exp(_NEG0(nda.complex64)),
    "full_like -0.0": lambda d: nda.full_like(nda.zeros(2, device=D), -0.0),
    "setitem -0.0": lambda d: _setitem(),
    "hypot overflow": lambda d: nda.hypot(nda.asarray(1.0, device=D), MAX),
    "complex abs overflow": lambda d: nda.abs(nda.asarray([MAX - 1j], device=D)),
    "complex log overflow": lambda d: nda.log(nda.asarray([MAX - 1j], device=D)),
    "complex log10 overflow": lambda d: nda.log10(nda.asarray([MAX - 1j], device=D)),
    "complex log1p overflow": lambda d: nda.log1p(nda.asarray(complex(0, MAX), device=D)),
    "arange uint8": lambda d: nda.arange(1, 0, -1, dtype=nda.uint8, device=D),
    "arange uint64": lambda d: nda.arange(10, 0, -3, dtype=nda.uint64, device=D),
    "pinv batch": lambda d: nda.linalg.pinv(nda.asarray([[[0.0, 1.0]]], device=D)),
    "eigvals empty": lambda d: nda.linalg.eigvals(nda.empty((0, 0), dtype=nda.float32, device=D)),
    "floor_divide tiny": lambda d: nda.floor_divide(nda.asarray([5e-324], device=D), nda.asarray([-MAX], device=D)),
    "remainder zero": lambda d: nda.remainder(nda.asarray(0.0, dtype=nda.float32, device=D), -1.0),
    "complex log2(0)": lambda d: nda.log2(nda.asarray(0j, device=D)),
    "complex reciprocal": lambda d: nda.reciprocal(nda.asarray(1 + 0j, dtype=nda.complex64, device=D)),
    "complex divide by 0 (csr)": lambda d: nda.divide(1 + 1j, nda.asarray([[0j]], dtype=nda.complex64, device=D).to_layout("csr")),
    "complex sign inf (csr)": lambda d: nda.sign(nda.asarray([[complex(1, math.inf)]], dtype=nda.complex64, device=D).to_layout("csr")),
    "complex expm1 (csr)": lambda d: nda.expm1(nda.asarray([[89 + 0j]], dtype=nda.complex64, device=D).to_layout("csr")),
    "complex csr add": lambda d: _csr(complex(1, math.inf)) + _csr(complex(1, math.inf)),
    "complex csr subtract": lambda d: _csr(complex(math.inf, 0)) - _csr(complex(2, 0)),
    "linspace complex": lambda d: nda.linspace(0j, 1 + 2j, 3, dtype=nda.complex64, device=D),
    "isin float scalar": lambda d: nda.isin(nda.asarray(0.0, device=D), 0.0),
    # The H200 (2026-11-26): a 1-d float sort is thrust's radix sort, which puts a NaN whose sign bit is set first.
    "argsort -nan": lambda d: nda.argsort(nda.asarray(np.array([0.0, -np.nan, -np.inf, np.nan, 1.0]), device=D)),
    "argsort -nan descending": lambda d: nda.argsort(nda.asarray(np.array([0.0, -np.nan, np.nan, 1.0], dtype=np.float32), device=D), descending=True),
    "sort -nan": lambda d: nda.sort(nda.asarray(np.array([2.0, -np.nan, -np.inf], dtype=np.float32), device=D)),
}


def _setitem():
    x = nda.zeros(3, dtype=nda.complex64, device=D)
    x[1] = complex(-0.0, -0.0)
    return x


def _csr(value):
    return nda.asarray([[value, 0], [0, 3]], dtype=nda.complex128, device=D).to_layout("csr")


def _on(device, call):
    """``call`` with its arrays made on ``device`` (the examples read the module's ``D``)."""
    global D
    saved, D = D, device
    try:
        return call(nda.float64)
    finally:
        D = saved


#: Examples whose results are linear algebra: compared as the conformance kit compares them (the sign of a
#: computed zero is not specified; singular-value noise of eps * sigma_max, see nda.testing.conformance).
LINALG_EXAMPLES = {"pinv batch": ("linalg.pinv", lambda d: nda.asarray([[[0.0, 1.0]]], device=d))}


def check_example(name, device):
    """The example ``name`` on ``device`` gives the cpu's result (dtype, shape, values, signed zeros)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = _on(device, EXAMPLES[name])
        want = _on("cpu", EXAMPLES[name])
    assert got.device == nda.Device(device, 0) and want.device == nda.Device("cpu", 0)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), name
    got_host = got.to_layout("strided").asnumpy() if got.layout.name != "strided" else got.asnumpy()
    want_host = want.to_layout("strided").asnumpy() if want.layout.name != "strided" else want.asnumpy()
    if name in LINALG_EXAMPLES:
        from nda.testing.conformance._tolerances import spectral_atol

        op, make = LINALG_EXAMPLES[name]
        rtol, _ = nda.testing.default_tolerance(want_host.dtype)
        atol = spectral_atol(op, make("cpu").asnumpy(), want_host.dtype, want_host)
        assert_allclose(got_host, want_host, rtol=rtol, atol=atol, signed_zeros=False, err_msg=name)
        return
    assert_allclose(got_host, want_host, signed_zeros=got.layout.name == "strided", err_msg=name)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_h100_minimal_examples_give_the_cpus_results_on_the_mirror(mirror, name):
    check_example(name, "cudamirror")


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
@pytest.mark.parametrize("op", ["svdvals", "pinv", "matrix_norm 2", "matrix_norm -2", "matrix_norm nuc", "matrix_norm fro"])
def test_svd_of_a_subnormal_single_precision_matrix_is_that_of_the_flushed_matrix(mirror, op, dtype):
    """The H200: cuSOLVER's float32 SVD scales by the largest magnitude; a subnormal one gave ``inf`` singular
    values (and a NaN pinv). The backend declares float32/complex64 flushing: the result is the flushed matrix's."""
    name, _, order = op.partition(" ")
    call = getattr(nda.linalg, name)
    kwargs = {"ord": order if order in ("nuc", "fro") else int(order)} if order else {}
    tiny = np.finfo(np.float32).smallest_subnormal
    a = (np.array([[1.0, 0.0], [0.0, -2.0]]) * tiny).astype(dtype)
    stack = np.stack([a, np.array([[1.0, 2.0], [3.0, 4.0]], dtype=dtype)])
    for x in (a, stack):
        got = call(nda.asarray(x, device=D), **kwargs).asnumpy()
        flushed = np.where(np.abs(x) < np.finfo(np.float32).smallest_normal, 0, x).astype(dtype)
        want = call(nda.asarray(flushed), **kwargs).asnumpy()
        assert np.isfinite(got).all(), (op, got)
        assert_allclose(got, want, rtol=1e-5, atol=1e-5, signed_zeros=False, err_msg=op)


#: The H100's failing cells (ops), dtypes the other mirror test does not run.
H100_OPS = [
    "abs",
    "acos",
    "add",
    "arange",
    "argmax",
    "astype",
    "ceil",
    "divide",
    "equal",
    "exp",
    "expm1",
    "flip",
    "floor",
    "floor_divide",
    "full_like",
    "hypot",
    "isin",
    "less",
    "linalg.eigvals",
    "linalg.pinv",
    "linspace",
    "log",
    "log10",
    "log1p",
    "log2",
    "multiply",
    "negative",
    "nextafter",
    "nonzero",
    "pow",
    "reciprocal",
    "remainder",
    "setitem",
    "sign",
    "signbit",
    "sqrt",
    "tensordot",
    "var",
]


def test_the_kit_passes_the_h100s_failing_cells_on_the_mirror(mirror):
    """With the model's quirks and flush-to-zero declared (as the cuda backend declares it)."""
    assert mirror.flushes_subnormals == ("float32", "complex64")
    report = conformance.run(D, reference="cpu", ops=H100_OPS, dtypes=["uint8", "uint64", "float64", "complex64"])
    assert report.ok, report.table()
    assert report.counts()["passed"] >= 90, report.counts()
    assert any(r.flushed for r in report.results if r.dtype == "complex64"), "no complex64 cell needed the flushed comparison"


def test_reshape_without_copy_is_a_view_or_numpys_value_error(mirror):
    """array-api-compat's ``reshape(copy=False)`` sets ``y.shape`` on a view (the model's arrays lacked
    CuPy's setter; found by a user-style probe); where no view exists CuPy raises AttributeError,
    nda's rule on every device is ValueError."""
    host = np.arange(6.0).reshape(2, 3)
    for device in ("cpu", D):
        x = nda.asarray(host, device=device)
        v = nda.reshape(x, (3, 2), copy=False)
        assert v.tolist() == host.reshape(3, 2).tolist()
        with pytest.raises(ValueError, match=r"reshape\(copy=False\): cannot reshape an array of shape \(3, 2\)"):
            nda.reshape(x.T, (-1,), copy=False)
