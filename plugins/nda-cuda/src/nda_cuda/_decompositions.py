"""nda's decompositions on cuSOLVER through ``cupy.linalg``: the reference's conventions, CuPy's routines.

``linalg.eig``, ``eigh``, ``qr``, ``svd``, ``slogdet`` and ``matrix_rank`` ran through the host
fallback until issue 35: found by name, they are array-api-compat's wrappers, whose named tuples
(``EighResult``, ...) are not the plain tuples nda's kernels return, and whose ``matrix_rank`` takes
the maximum of no singular values for an empty matrix. The kernels here call CuPy's own functions
(CuPy 14.2, ``cupy/linalg``), which return plain tuples, and map what still differs from the
reference (NumPy 2):

* ``eig`` (``geev``): CuPy returns arrays of the input's dtype for an empty matrix (real ones for
  real input): cast to the complex dtype, as the reference's are always complex; single-precision
  input is flushed first (``geev`` raises ``CUSOLVER_STATUS_INTERNAL_ERROR`` for complex64 holding
  a subnormal part, the H200; the backend declares flushing), as ``eigvals`` does;
* ``eigh`` (``syevd``; ``syevj`` for stacks) and ``svd`` (``gesvd``; ``gesvdj`` for stacks of
  small matrices) of double precision: cuSOLVER's Householder norms are unscaled (NaN eigenvalues
  for off-diagonal entries of ``2e-179``, ``inf`` singular values for subnormals, the H200), so
  each matrix is :func:`nda_cuda._workarounds_linalg.conditioned` first (scaled by a power of two,
  entries below ``1.5e-154`` of its largest zeroed) and the eigen/singular values scaled back
  (exact); the vectors are those of the scaled matrix. Single-precision ``svd`` input is flushed
  (cuSOLVER's scaling by a subnormal largest magnitude gives ``inf``/NaN);
* ``qr``, ``slogdet``: CuPy's results are the reference's (``complete`` gives an identity ``Q`` for
  empty matrices, as NumPy; a singular matrix's ``slogdet`` is ``(0, -inf)``), so only the call
  convention (``mode`` by keyword) is CuPy's;
* ``matrix_rank``: CuPy's takes NumPy 1's *absolute* ``tol``; nda's (the standard's) ``rtol`` is
  relative to the largest singular value, ``max(M, N) * eps`` by default, a float or an array
  broadcast against the stack. Computed here from the singular values of the flushed or conditioned
  matrix scaled by a power of two (:func:`scaled`: no singular value that matters is subnormal), with
  an empty matrix's rank 0 without calling cuSOLVER; int64.

Eigen- and singular vectors, ``Q`` and the order of ``eig``'s eigenvalues are the library's choice
(signs, phases): the conformance kit compares those results on dtype and shape only, and the model
tests (``tests/test_cuda_decompositions.py``) check that they reconstruct their input.

Everything takes the array module as a parameter (the tests run it over the model of CuPy).

Layer: nda-cuda (a plugin; nda's public modules only).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ._workarounds_linalg import _ldexp, conditioned, flush

__all__ = ["OPS", "factories"]

Kernel = Callable[..., Any]
OPS = tuple(f"linalg.{n}" for n in ("eig", "eigh", "qr", "svd", "slogdet", "matrix_rank"))
_COMPLEX = {"f": np.complex64, "d": np.complex128, "F": np.complex64, "D": np.complex128}


def eig(xp: Any) -> Kernel:
    def eig(x: Any) -> tuple[Any, Any]:
        w, v = xp.linalg.eig(flush(xp, x))
        dtype = _COMPLEX[np.dtype(x.dtype).char]
        return w.astype(dtype, copy=False), v.astype(dtype, copy=False)

    return eig


def eigh(xp: Any) -> Kernel:
    def eigh(x: Any) -> tuple[Any, Any]:
        y, k = conditioned(xp, x)
        if k is None:
            return tuple(xp.linalg.eigh(x))  # type: ignore[return-value]
        w, v = xp.linalg.eigh(y)
        return _ldexp(xp, w, -k[..., 0]), v

    return eigh


def svd(xp: Any) -> Kernel:
    def svd(x: Any, full_matrices: bool = True) -> tuple[Any, Any, Any]:
        y, k = conditioned(xp, x)
        if k is None:
            return tuple(xp.linalg.svd(flush(xp, x), full_matrices=full_matrices))  # type: ignore[return-value]
        u, s, vh = xp.linalg.svd(y, full_matrices=full_matrices)
        return u, _ldexp(xp, s, -k[..., 0]), vh

    return svd


def qr(xp: Any) -> Kernel:
    def qr(x: Any, mode: str = "reduced") -> tuple[Any, Any]:
        return tuple(xp.linalg.qr(x, mode=mode))  # type: ignore[return-value]

    return qr


def slogdet(xp: Any) -> Kernel:
    def slogdet(x: Any) -> tuple[Any, Any]:
        return tuple(xp.linalg.slogdet(x))  # type: ignore[return-value]

    return slogdet


def scaled(xp: Any, x: Any) -> Any:
    """``x`` flushed (single precision) or conditioned (double), then each matrix scaled by a power of two
    that puts its largest magnitude in ``[1, 2)`` (exact): its singular values are ``x``'s times that power.

    For ``matrix_rank``, which only compares singular values with the largest one: a float32 matrix of
    small normal entries has singular values in the subnormal range, which cuSOLVER (and the model)
    flush to zero (``[[0, t], [t, t]]`` with ``t`` float32's smallest normal has rank 2, and singular
    values ``1.62 t`` and ``0.62 t``, a subnormal)."""
    y, k = conditioned(xp, x)
    if k is not None or x.size == 0 or x.ndim < 2:
        return y
    y = flush(xp, x)
    largest = xp.abs(y).max(axis=(-2, -1), keepdims=True)
    _, exponent = xp.frexp(largest)  # largest = m * 2**exponent, m in [0.5, 1)
    return _ldexp(xp, y, xp.where(xp.isfinite(largest) & (largest > 0), 1 - exponent, 0).astype(np.int32))


def matrix_rank(xp: Any) -> Kernel:
    def matrix_rank(x: Any, rtol: Any = None) -> Any:
        m, n = x.shape[-2:]
        if m == 0 or n == 0:
            return xp.zeros(x.shape[:-2], dtype=np.int64)
        s = xp.linalg.svd(scaled(xp, x), compute_uv=False)
        if rtol is None:
            rtol = max(m, n) * float(np.finfo(x.dtype).eps)
        if hasattr(rtol, "shape"):
            rtol = rtol[..., None]  # one per matrix of the stack (broadcast), against its singular values
        tol = s.max(axis=-1, keepdims=True) * rtol
        return (s > tol).sum(axis=-1, dtype=np.int64)

    return matrix_rank


def factories() -> dict[str, Callable[[Any], Kernel]]:
    """op -> factory(xp) of its kernel, for :data:`nda_cuda._kernels.OVERRIDES`."""
    return {"linalg.eig": eig, "linalg.eigh": eigh, "linalg.qr": qr, "linalg.svd": svd, "linalg.slogdet": slogdet, "linalg.matrix_rank": matrix_rank}
