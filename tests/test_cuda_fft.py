"""nda-cuda's ``fft.*`` kernels (``nda_cuda._fft``) over the model of ``cupy.fft``, without a GPU (issue 35).

Until issue 35 every ``fft.*`` op of nda-cuda ran through the host fallback. Three layers here:

* the model (``tests/_cupy_fft.py``) keeps CuPy 14.2's conventions and refusals (its dtypes, the
  n-dimensional plan's refusal of zero-size batches, ``_cook_shape`` skipping ``s`` when it equals
  the whole shape, ``axes=()``, host operands refused), so the kernels meet what a GPU meets;
* nda over the mirror (nda-cuda's kernel table over the model), with ``nda.config.fallback =
  "error"``: each transform runs nda-cuda's kernel and gives cpu's result on the cases where a
  by-name call of ``cupy.fft`` would not;
* the conformance kit on the mirror: every ``fft.*`` cell passes natively (0 fallback cells).

On a GPU the same cells run in ``tests/test_cuda.py``'s kit runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import nda
from nda.testing import conformance

pytest.importorskip("scipy")
from _cupy_quirks import DeviceArray, cupy_model  # noqa: E402
from nda_cuda import _fft  # noqa: E402

D = "cudamirror"


@pytest.fixture(scope="module")
def mirror():
    if not nda.backends.serves(D):
        nda.backends.load("_cuda_numpy_mirror:backend")
    import _cuda_numpy_mirror

    return _cuda_numpy_mirror.backend


@pytest.fixture
def native_only():
    """A host fallback raises nda.FallbackError: the op must run nda-cuda's kernel."""
    previous = nda.config.fallback
    nda.config.fallback = "error"
    yield
    nda.config.fallback = previous


def test_the_model_of_cupy_fft_keeps_cupys_conventions_and_refusals():
    fft = cupy_model.fft
    with pytest.raises(TypeError, match="must be a cupy.ndarray"):
        fft.fft(np.zeros(3, np.complex64))
    # dtypes (_output_dtype): single precision stays single, R2C takes the real part, C2R of one axis
    assert fft.fft(DeviceArray(np.zeros(3, np.float32))).dtype == np.complex64
    assert fft.rfft(DeviceArray(np.ones(4, np.complex128))).dtype == np.complex128
    assert fft.irfft(DeviceArray(np.ones(3, np.complex64))).dtype == np.float32
    # PlanNd (two or three contiguous axes with the first or the last) refuses a zero-size batch ...
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\) specified"):
        fft.fftn(DeviceArray(np.zeros((0, 3, 4), np.complex64)), axes=(1, 2))
    assert fft.fft(DeviceArray(np.zeros((0, 4), np.complex64))).shape == (0, 4)  # ... Plan1d runs no plan
    assert np.fft.fftn(np.zeros((0, 3, 4), np.complex64), axes=(1, 2)).shape == (0, 3, 4)  # NumPy: an empty result
    # _cook_shape skips s when it equals the whole shape, whatever the axes (NumPy: (3, 2))
    x = DeviceArray(np.arange(6.0).reshape(2, 3) + 1j)
    assert fft.ifftn(x, s=(2, 3), axes=(1, 0)).shape == (2, 3)
    assert np.fft.ifftn(np.arange(6.0).reshape(2, 3), s=(2, 3), axes=(1, 0)).shape == (3, 2)
    # axes=(): complex transforms return the operand itself, real ones raise; norm checked after that
    assert fft.fftn(x, axes=(), norm="nonsense") is x
    with pytest.raises(IndexError):
        fft.rfftn(DeviceArray(np.zeros((2, 2))), axes=())
    with pytest.raises(ValueError, match="Invalid norm value"):
        fft.fft(x, norm="nonsense")
    # normalised after cuFFT's unnormalised transform
    np.testing.assert_allclose(fft.ifft(DeviceArray(np.ones(4, np.complex128))).get(), [1, 0, 0, 0])


def test_fft_ops_have_native_kernels_on_the_mirror(mirror):
    from nda_cuda._kernels import HOST_FALLBACK

    assert not set(_fft.OPS) & set(HOST_FALLBACK)
    assert not set(_fft.OPS) & set(mirror.unmapped), {op: mirror.unmapped[op] for op in set(_fft.OPS) & set(mirror.unmapped)}
    assert {mirror.sources[op] for op in _fft.OPS} == {f"nda_cuda override {op[4:]}" for op in _fft.OPS}


_RNG = np.random.default_rng(35)


def _values(shape, dtype):
    values = _RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * _RNG.standard_normal(shape)
    return values.astype(dtype)


#: (op, input, keywords): where calling cupy.fft by name would differ from NumPy (see nda_cuda._fft)
CASES = [
    ("fft.fftn", np.zeros((0, 3, 4), np.complex64), {"axes": (1, 2)}),  # PlanNd refuses the empty batch
    ("fft.ifftn", _values((0, 2, 3), np.complex128), {"axes": (1, 2), "s": (4, 2)}),
    ("fft.rfftn", np.zeros((0, 4, 3), np.float32), {"axes": (1, 2)}),
    ("fft.irfftn", np.zeros((2, 3, 0), np.complex64), {"axes": (0, 1)}),
    ("fft.ifftn", _values((2, 3), np.complex128), {"s": (2, 3), "axes": (1, 0)}),  # _cook_shape's skip
    ("fft.fftn", _values((2, 3), np.complex64), {"s": (2, 3), "axes": (1, 0)}),
    ("fft.irfftn", _values((3, 4), np.complex128), {"axes": (0, 1)}),  # not Hermitian: NumPy's definition
    ("fft.irfftn", _values((2, 3, 4), np.complex64), {"s": (3, 6), "axes": (1, 2), "norm": "ortho"}),
    ("fft.irfftn", _values((3, 4, 2), np.complex128), {"axes": (0, 1, 2), "norm": "forward"}),
    ("fft.rfftn", _values((3, 4), np.float64), {"s": (4, 3), "axes": (1, 0)}),
    ("fft.fftn", _values((2, 3), np.complex64), {"axes": ()}),
    ("fft.irfft", _values((4,), np.complex64), {"n": 6}),
    ("fft.hfft", _values((3,), np.complex128), {"norm": "ortho"}),
    ("fft.ihfft", _values((5,), np.float32), {"norm": "forward"}),
    ("fft.rfft", _values((3, 5), np.float64), {"n": 4, "axis": 0}),
    ("fft.fft", _values((2, 0, 3), np.complex128), {"axis": 1, "n": 3}),
]


@pytest.mark.parametrize("op, host, kwargs", CASES, ids=[f"{c[0]}-{c[1].dtype}-{c[1].shape}-{sorted(c[2])}" for c in CASES])
def test_transforms_give_cpus_results_on_nda_cudas_kernels(mirror, native_only, op, host, kwargs):
    fn = getattr(nda.fft, op[4:])
    want = fn(nda.asarray(host), **kwargs).asnumpy()
    x = nda.asarray(host, device=D)
    got = fn(x, **kwargs)
    assert got.device == nda.Device(D, 0)
    result = got.asnumpy()
    assert (result.shape, result.dtype) == (want.shape, want.dtype)
    eps = np.finfo(result.dtype).eps
    np.testing.assert_allclose(result, want, rtol=8 * eps, atol=8 * eps * max(host.size, 1) * (np.abs(host).max() if host.size else 0))
    if kwargs.get("axes") == ():  # the operand itself from CuPy: nda's result must not alias it
        x[...] = 0
        np.testing.assert_array_equal(got.asnumpy(), want)


def test_the_kit_passes_every_fft_cell_natively_on_the_mirror(mirror):
    report = conformance.run(D, reference="cpu", ops=list(_fft.OPS))
    counts = report.counts()
    assert report.ok, report.table()
    assert counts.get("fallback", 0) == 0 and counts["passed"] == 2 * len(_fft.OPS), counts
