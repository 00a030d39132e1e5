"""How closely the conformance kit compares a device's results with the reference's.

:func:`tolerance` starts from the dtype's default (:func:`nda.testing.default_tolerance`) and
widens it only where a result is not determined to that precision by its inputs: the order of
an accumulation, the rounding of a complex product, the small singular values of a matrix.
Each widening is documented where it is decided (:mod:`._cases` for the sets of ops) and in the
README's "Conformance kit" section.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import numpy as np

from .._compare import default_tolerance
from . import _cases
from ._cases import Arr, Case

__all__ = ["tolerance", "spectral_atol", "SPECTRAL", "undetermined_signs"]


def tolerance(case: Case, dtype: np.dtype, expected: np.ndarray | None = None) -> tuple[float, float]:
    """``(rtol, atol)`` the kit compares a result of ``case`` of ``dtype`` with (``expected``: the reference's value).

    The dtype's default (:func:`nda.testing.default_tolerance`), widened where the result is not
    determined to that precision by the inputs alone:

    * :data:`._cases.ACCUMULATING` ops: the order of summation; an absolute tolerance of ``rtol``
      times the size of what is summed;
    * complex products (:data:`._cases.COMPLEX_PRODUCTS`): one rounding or two in ``a c - b d``;
      ``rtol * |x1| * |x2|``;
    * singular values (``linalg.svdvals``, the spectral ``linalg.matrix_norm`` ``ord=±2``/``'nuc'``)
      and ``linalg.pinv``: see :func:`spectral_atol`;
    * Fourier transforms (``fft.*``): each output is a sum over the transformed input, computed
      in an order that is the library's (pocketfft's butterflies, cuFFT's, normalised in the
      transform or after it); an output that cancels to ~0 is noise of ``eps * sum |x|`` in any
      of them (``fftn([1e-6j, 0, 1j, 1j], norm="ortho")`` in complex64: ``4.77e-07j`` from
      NumPy, ``5.0e-07j`` normalised after the transform): an absolute tolerance of ``rtol``
      times the number of input elements times the largest finite one;
    * complex ``log1p``: NumPy computes its real part as ``log(hypot(1 + re, im))``, whose
      rounding of ``hypot`` near 1 leaves an absolute error of about ``eps`` (``log1p(1e-6j)``
      has real part ``5.00044e-13`` in NumPy against the true ``4.99999999999750e-13``, and
      ``0`` in complex64). A kernel at least that accurate (thrust's on CUDA, which takes
      ``log1p`` of ``|z|^2 - 1``) differs from it by that much: ``4 eps`` absolutely.

    Complex ``pow``'s infinite parts whose sign the inputs do not determine are handled apart
    (:func:`undetermined_signs`).
    """
    rtol, atol = default_tolerance(dtype)
    if dtype.kind not in "fc":
        return rtol, atol
    if case.op in _cases.ACCUMULATING:
        # Rounding depends on the order of accumulation: allow rtol times the size of what is summed.
        sizes, largest = [], 1
        for arr in case.arrays():
            v = arr.base
            finite = np.abs(v[np.isfinite(v)]) if v.size else v
            sizes.append(float(finite.max()) if finite.size else 0.0)
            largest = max(largest, v.size)
        scale = largest * float(np.prod([max(s, 1.0) for s in sizes]))
        if case.op == "prod":
            rtol *= largest
        atol = max(atol, rtol * scale)
    elif case.op in _cases.COMPLEX_PRODUCTS and dtype.kind == "c":
        factors = [_finite_max(np.asarray(a.base if isinstance(a, Arr) else a)) for a in case.args]
        scale = factors[0] * (factors[1] if len(factors) > 1 else factors[0])
        atol = max(atol, rtol * scale)
    elif case.op.startswith("fft.") and case.args and isinstance(case.args[0], Arr):
        x = case.args[0].base
        atol = max(atol, rtol * max(x.size, 1) * _finite_max(np.asarray(x)))
    elif case.op == "log1p" and dtype.kind == "c":
        atol = max(atol, 4 * float(np.finfo(dtype).eps))
    elif case.op in SPECTRAL and case.args and isinstance(case.args[0], Arr):
        if case.op != "linalg.matrix_norm" or case.kwargs.get("ord") in (2, -2, "nuc"):
            atol = max(atol, spectral_atol(case.op, case.args[0].host(), dtype, expected))
    return rtol, atol


#: linalg ops whose results depend on the small singular values of their input.
SPECTRAL = {"linalg.svdvals", "linalg.matrix_norm", "linalg.pinv"}


def spectral_atol(op: str, x: np.ndarray, dtype: np.dtype, expected: np.ndarray | None) -> float:
    """The kit's absolute tolerance for singular values and pseudo-inverses of ``x`` (a stack of matrices).

    A backward-stable SVD (LAPACK's, cuSOLVER's) gives the singular values of a matrix within
    about ``eps * sigma_max`` of the true ones: of a rank-deficient matrix, the zero singular
    values come out anywhere in ``[0, c eps sigma_max]`` (NumPy on x86 ~1e-17, cuSOLVER on an
    H200 1.3e-08 in float32 for ``[[1, 1], [1, 1]]``). No relative tolerance can compare those,
    so the kit allows ``8 max(m, n) eps sigma_max`` absolutely: the usual rule (it is the
    default cutoff of ``matrix_rank`` and ``pinv`` up to the factor 8). The pseudo-inverse's
    error is that perturbation propagated, ``|dA| |A+|^2``: ``8 max(m, n) eps sigma_max |A+|^2``,
    ``|A+|`` the spectral norm of the reference's result. Signs of zero results are not compared
    for linalg results (the kit's cases say so).
    """
    if x.size == 0 or x.ndim < 2:
        return 0.0
    m, n = x.shape[-2:]
    host = np.asarray(x, dtype=np.complex128 if x.dtype.kind == "c" else np.float64)
    sigma = float(np.linalg.svd(host, compute_uv=False).max()) if np.isfinite(host).all() else 0.0
    scale = sigma
    if op == "linalg.pinv" and expected is not None and expected.size and np.isfinite(expected).all():
        size = float(np.linalg.norm(np.asarray(expected, dtype=host.dtype), 2, axis=(-2, -1)).max())
        scale = sigma * size * size
    return 8 * max(m, n) * float(np.finfo(dtype).eps) * scale


def _finite_max(v: np.ndarray) -> float:
    finite = np.abs(v[np.isfinite(v)]) if v.size else v
    return float(finite.max()) if finite.size else 0.0


def _nan_inverse(case: Case, got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """``unique_inverse``'s inverse indices with those of NaN elements set to the reference's when they name
    the same NaN values.

    Every NaN is a distinct value (the standard), so which of the NaN values a NaN element's index
    names is the library's choice: NumPy sorts without ``return_index`` by an unstable sort
    (``unique_inverse`` of 18 NaNs gives ``[9, 17, 16, ..., 10, 0, 8, 7, ..., 1]``), CuPy by a stable
    one (``[0, 1, ..., 17]``). Any one-to-one assignment is right: the NaN elements' indices are
    accepted when they are the same set as the reference's.
    """
    if not case.args or not isinstance(case.args[0], Arr):
        return got
    x = case.args[0].host()
    if got.shape != x.shape or got.shape != expected.shape or got.dtype.kind not in "iu" or x.dtype.kind not in "fc":
        return got
    nan = np.isnan(x)
    if not nan.any() or sorted(got[nan].tolist()) != sorted(expected[nan].tolist()):
        return got
    out = got.copy()
    out[nan] = expected[nan]
    return out


def undetermined_signs(case: Case, got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """``got`` with the infinite parts whose sign its inputs do not determine set to the reference's
    (and ``unique_inverse``'s indices of NaN elements that name NaN values in another order:
    :func:`_nan_inverse`).

    Complex ``pow`` of a large base: ``z ** w`` is ``exp(w log z)``; when it overflows, the signs of
    its infinite parts are those of ``cos`` and ``sin`` of the phase ``w.real arg(z) + w.imag
    log|z|``, known only to a few ulps of the dtype times ``|w|`` (``arg`` and ``log`` round;
    ``atan2f`` of one library differs from another's in the last bit). Where that phase is within
    its rounding error of a multiple of pi/2, either sign is right: ``(0.5 + 16777216j) ** 100`` in
    complex64 is ``inf + inf j`` in NumPy (glibc's ``atan2f`` rounds the argument up to
    float32's pi/2) and ``inf - inf j`` from a correctly rounded one. Elsewhere ``got`` is returned
    as it is.
    """
    if case.op == "unique_inverse":
        return _nan_inverse(case, got, expected)
    if case.op != "pow" or expected.dtype.kind != "c" or got.shape != expected.shape or not expected.size:
        return got
    flipped_re = np.isinf(got.real) & np.isinf(expected.real) & (np.signbit(got.real) != np.signbit(expected.real))
    flipped_im = np.isinf(got.imag) & np.isinf(expected.imag) & (np.signbit(got.imag) != np.signbit(expected.imag))
    if not (flipped_re.any() or flipped_im.any()):
        return got
    operands = [np.asarray(a.host() if isinstance(a, Arr) else a, dtype=np.complex128) for a in case.args[:2]]
    if len(operands) != 2:
        return got
    with np.errstate(all="ignore"):
        z, w = np.broadcast_arrays(*operands)
        z, w = np.broadcast_to(z, expected.shape), np.broadcast_to(w, expected.shape)
        arg, log_abs = np.angle(z), np.log(np.abs(z))
        phase = w.real * arg + w.imag * log_abs
        eps = float(np.finfo(expected.dtype).eps)
        slack = 4 * eps * (np.abs(w.real) * (np.abs(arg) + 1) + np.abs(w.imag) * (np.abs(log_abs) + 1) + np.abs(phase))
        free_re = flipped_re & (np.abs(np.cos(phase)) <= slack)
        free_im = flipped_im & (np.abs(np.sin(phase)) <= slack)
    if not (free_re.any() or free_im.any()):
        return got
    out = np.array(got, copy=True)
    out.real[free_re] = expected.real[free_re]
    out.imag[free_im] = expected.imag[free_im]
    return out
