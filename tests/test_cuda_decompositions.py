"""nda-cuda's decompositions (``nda_cuda._decompositions``) over the model of ``cupy.linalg``, without a GPU.

``linalg.eig``, ``eigh``, ``qr``, ``svd``, ``slogdet`` and ``matrix_rank`` ran through nda-cuda's host
fallback until issue 35. Here:

* the model (``tests/_cupy_linalg.py``, ``svd`` in ``tests/_cupy_solver.py``) keeps CuPy 14.2's
  conventions and refusals: plain tuples, ``eig``'s complex results (real ones for an empty matrix),
  ``matrix_rank``'s absolute ``tol``, ``qr``'s modes, cuSOLVER's refusals measured on the H200;
* nda over the mirror with ``nda.config.fallback = "error"``: each op runs nda-cuda's kernel, and
  the results that are the library's choice (eigenvectors, ``Q``, singular vectors; the kit compares
  them on dtype and shape only) reconstruct their input; values that are unique equal cpu's;
* the conformance kit on the mirror: every cell of these ops passes natively (0 fallback cells).
"""

from __future__ import annotations

import numpy as np
import pytest

import nda
from nda.testing import conformance

pytest.importorskip("scipy")
import _cupy_solver as solver  # noqa: E402
from _cupy_quirks import DeviceArray, cupy_model  # noqa: E402
from nda_cuda import _decompositions  # noqa: E402

D = "cudamirror"
TINY32 = float(np.finfo(np.float32).smallest_normal)


@pytest.fixture(scope="module")
def mirror():
    if not nda.backends.serves(D):
        nda.backends.load("_cuda_numpy_mirror:backend")
    import _cuda_numpy_mirror

    return _cuda_numpy_mirror.backend


@pytest.fixture
def native_only():
    previous = nda.config.fallback
    nda.config.fallback = "error"
    yield
    nda.config.fallback = previous


def test_the_model_of_cupy_linalg_keeps_cupys_conventions_and_refusals():
    linalg = cupy_model.linalg
    sym = DeviceArray(np.array([[2.0, 1.0], [1.0, 2.0]], np.float32))
    w, v = result = linalg.eig(sym)
    assert result.__class__ is tuple and (w.dtype, v.dtype) == (np.complex64, np.complex64)  # NumPy: float32
    assert np.linalg.eig(np.array([[2.0, 1.0], [1.0, 2.0]], np.float32)).eigenvalues.dtype == np.float32
    assert [r.dtype for r in linalg.eig(DeviceArray(np.zeros((0, 0), np.float32)))] == [np.float32, np.float32]
    with pytest.raises(solver.CUSOLVERError):
        linalg.eig(DeviceArray(np.array([[1, 1e-45j], [0, 1]], np.complex64)))
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        linalg.eigh(DeviceArray(np.zeros((2, 3))))
    with pytest.raises(TypeError, match="float16 is unsupported"):
        linalg.slogdet(DeviceArray(np.eye(2, dtype=np.float16)))
    assert linalg.eigh(sym).__class__ is tuple and linalg.eigh(sym)[0].dtype == np.float32
    assert linalg.slogdet(DeviceArray(np.eye(2))).__class__ is tuple
    assert [r.get().tolist() for r in linalg.slogdet(DeviceArray(np.zeros((0, 0))))] == [1.0, 0.0]
    assert linalg.slogdet(DeviceArray(np.zeros((2, 2))))[1].get() == -np.inf
    q, r = linalg.qr(DeviceArray(np.zeros((3, 0))), mode="complete")
    np.testing.assert_array_equal(q.get(), np.eye(3))
    with pytest.raises(ValueError, match="deprecated mode 'full'"):
        linalg.qr(DeviceArray(np.eye(2)), mode="full")
    with pytest.raises(TypeError, match="rtol"):
        linalg.matrix_rank(DeviceArray(np.eye(2)), rtol=0.1)  # NumPy 1's absolute tol only
    assert linalg.matrix_rank(DeviceArray(np.eye(3)), tol=2.0).get() == 0
    with pytest.raises(ValueError, match="zero-size array"):
        linalg.matrix_rank(DeviceArray(np.zeros((0, 3))))
    # cuSOLVER's unscaled Householder norms (the H200), as for eigvalsh
    hermitian = np.array([[1, 2e-179], [2e-179, 1]], np.complex128)
    assert np.isnan(linalg.eigh(DeviceArray(hermitian))[0].get()).all()


def test_decompositions_have_native_kernels_on_the_mirror(mirror):
    from nda_cuda._kernels import HOST_FALLBACK

    assert not set(_decompositions.OPS) & (set(HOST_FALLBACK) | set(mirror.unmapped))
    assert all(mirror.sources[op].startswith("nda_cuda override") for op in _decompositions.OPS)


_RNG = np.random.default_rng(35)


def _matrices(shape, dtype):
    a = _RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * _RNG.standard_normal(shape)
    return a.astype(dtype)


def _close(got, want, dtype, scale=1.0):
    eps = float(np.finfo(dtype).eps)
    np.testing.assert_allclose(got, want, rtol=64 * eps, atol=64 * eps * max(scale, 1e-300))


def _both(fn, host, *args, **kwargs):
    """(fn on the mirror as NumPy arrays, fn on cpu as NumPy arrays)."""
    got = fn(nda.asarray(host, device=D), *args, **kwargs)
    want = fn(nda.asarray(host), *args, **kwargs)
    as_host = lambda r: tuple(x.asnumpy() for x in r) if isinstance(r, tuple) else r.asnumpy()  # noqa: E731
    return as_host(got), as_host(want)


DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SQUARE = [(3, 3), (2, 4, 4), (0, 0), (2, 0, 0), (0, 2, 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE)
def test_eig_and_eigh_reconstruct_their_input(mirror, native_only, dtype, shape):
    x = _matrices(shape, dtype)
    (w, v), (cw, cv) = _both(nda.linalg.eig, x)
    assert (w.dtype, v.dtype, w.shape, v.shape) == (cw.dtype, cv.dtype, cw.shape, cv.shape)
    _close(x @ v, v * w[..., None, :], dtype, np.abs(x).max(initial=0) * 3)
    _close(np.sort_complex(w.reshape(-1)), np.sort_complex(cw.reshape(-1)), dtype, np.abs(x).max(initial=0) * 3)
    h = x + np.conj(np.swapaxes(x, -1, -2))
    (w, v), (cw, cv) = _both(nda.linalg.eigh, h)
    assert (w.dtype, v.dtype, w.shape, v.shape) == (cw.dtype, cv.dtype, cw.shape, cv.shape)
    _close(w, cw, dtype, np.abs(h).max(initial=0) * 3)
    _close(h @ v, v * w[..., None, :], dtype, np.abs(h).max(initial=0) * 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 2, 5), (3, 0), (0, 2, 3)])
@pytest.mark.parametrize("flag", [True, False])
def test_qr_and_svd_reconstruct_their_input(mirror, native_only, dtype, shape, flag):
    x = _matrices(shape, dtype)
    scale = np.abs(x).max(initial=0) * 4
    mode = "complete" if flag else "reduced"
    (q, r), (cq, cr) = _both(nda.linalg.qr, x, mode=mode)
    assert [(a.shape, a.dtype) for a in (q, r)] == [(a.shape, a.dtype) for a in (cq, cr)]
    _close(q @ r, x, dtype, scale)
    _close(np.conj(np.swapaxes(q, -1, -2)) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), dtype)
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    (u, s, vh), (cu, cs, cvh) = _both(nda.linalg.svd, x, full_matrices=flag)
    assert [(a.shape, a.dtype) for a in (u, s, vh)] == [(a.shape, a.dtype) for a in (cu, cs, cvh)]
    _close(s, cs, dtype, scale)
    k = s.shape[-1]
    _close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], x, dtype, scale)


def test_double_precision_subnormals_and_underflowing_norms_give_cpus_values(mirror, native_only):
    """cuSOLVER's unscaled Householder norms (the H200) do not reach eigh's and svd's results."""
    hermitian = np.array([[1, 2e-179], [2e-179, 1]], np.complex128)
    (w, v), (cw, _) = _both(nda.linalg.eigh, hermitian)
    np.testing.assert_allclose(w, cw) and np.testing.assert_allclose(hermitian @ v, v * w)
    tiny = np.array([[1, 5e-324], [5e-324, 5e-324]])
    (u, s, vh), (_, cs, _) = _both(nda.linalg.svd, tiny)
    np.testing.assert_allclose(s, cs, atol=1e-15)  # cuSOLVER's eps * sigma_max noise for the zero one (the kit's spectral tolerance)
    np.testing.assert_allclose((u * s) @ vh, tiny, atol=1e-15)
    single = np.full((2, 2), 1e-45, np.float32)  # flushed (declared): the SVD of zeros, not cuSOLVER's inf
    u, s, vh = (a.asnumpy() for a in nda.linalg.svd(nda.asarray(single, device=D)))
    assert np.isfinite(u).all() and (s == 0).all() and np.isfinite(vh).all()


@pytest.mark.parametrize(
    "host",
    [
        np.eye(3),
        np.zeros((2, 2)),
        np.array([[1.0, 2.0], [2.0, 4.0]]),
        _matrices((3, 2, 2), np.complex64),
        _matrices((2, 3, 3), np.float32),
        np.zeros((0, 0)),
        np.zeros((2, 0, 0), np.complex128),
    ],
)
def test_slogdet_gives_cpus_result(mirror, native_only, host):
    (sign, logabs), (csign, clogabs) = _both(nda.linalg.slogdet, host)
    assert (sign.dtype, logabs.dtype, sign.shape) == (csign.dtype, clogabs.dtype, csign.shape)
    _close(sign, csign, host.dtype)
    _close(logabs, clogabs, host.dtype, 8.0)


@pytest.mark.parametrize(
    "host, rtol",
    [
        (np.array([[0.0, TINY32], [TINY32, TINY32]], np.float32), None),  # singular values 1.62 t and 0.62 t (subnormal)
        (np.array([[1.0, 1.0], [1.0, 1.0 + 1e-9]]), None),
        (np.diag([1.0, 1e-3, 1e-6]), 1e-4),
        (np.stack([np.diag([1.0, 1e-3, 1e-6])] * 2).astype(np.complex64), "array"),
        (np.zeros((0, 3)), None),
        (np.zeros((2, 3, 0), np.float32), None),
        (np.full((2, 2), 1e-45, np.float32), None),
    ],
)
def test_matrix_rank_uses_the_standards_relative_tolerance(mirror, native_only, host, rtol):
    if rtol == "array":
        got = nda.linalg.matrix_rank(nda.asarray(host, device=D), rtol=nda.asarray([1e-4, 1e-2], device=D)).asnumpy()
        want = nda.linalg.matrix_rank(nda.asarray(host), rtol=nda.asarray([1e-4, 1e-2])).asnumpy()
    else:
        got, want = _both(nda.linalg.matrix_rank, host, rtol=rtol)
    assert got.dtype == want.dtype == np.int64
    if host.dtype == np.float32 and 0 < np.abs(host).max(initial=0) < TINY32:
        want = np.zeros_like(want)  # flushed input (declared), as the kit accepts it
    np.testing.assert_array_equal(got, want)


def test_the_kit_passes_every_decomposition_cell_natively_on_the_mirror(mirror):
    report = conformance.run(D, reference="cpu", ops=list(_decompositions.OPS))
    counts = report.counts()
    assert report.ok, report.table()
    assert counts.get("fallback", 0) == 0 and counts["passed"] == 4 * len(_decompositions.OPS), counts
