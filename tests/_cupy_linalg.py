"""CuPy 14.2's decompositions in the model: ``eig``, ``eigh``, ``qr``, ``slogdet``, ``matrix_rank``.

Part of the CuPy model (``tests/_cupy_quirks.py`` installs these in ``cupy_model.linalg``, wrapped as
flushing kernels; ``svd`` is ``tests/_cupy_solver.py``'s). Plain NumPy arrays in and out. Each rule
follows CuPy's source (``cupy/linalg/_eigenvalue.py``, ``_decomposition.py``, ``_norms.py``,
``_util.py`` at v14.2.0); the GPU runs of 2026-11 never called them (nda's ops ran through the host
fallback until issue 35):

* results are plain tuples (``(w, v)``, ``(q, r)``, ``(sign, logdet)``), not NumPy 2's named
  tuples; ``linalg_common_type`` computes float32/complex64 in single precision, refuses float16
  (``TypeError: float16 is unsupported in linalg``; ``eigh`` takes it as float32) and takes
  integers as float64;
* ``eig``/``eigh``/``slogdet`` need stacked square matrices (``LinAlgError``: "N-dimensional array
  given. Array must be at least two-dimensional", "Last 2 dimensions of the array must be square");
* ``eig`` (cuSOLVER's ``geev``) returns complex eigenvalues and eigenvectors for any non-empty
  input (NumPy's are real when every eigenvalue is), in no guaranteed order, and for an empty
  matrix arrays of the *input's* dtype, real ones included; complex64 input holding a subnormal
  part raises ``CUSOLVERError`` (as ``eigvals``: the same ``geev``, the H200);
* ``eigh`` (``syevd``, ``syevj`` for stacks) returns the eigenvalues in the real dtype; a
  complex128 matrix whose reflector's squared norm underflows gets NaN eigenvalues and vectors
  (``zheevd``, as the model's ``eigvalsh``: the H200); ``UPLO`` other than ``'L'``/``'U'`` raises
  ``ValueError``;
* ``qr`` takes ``mode`` ``'reduced'``, ``'complete'``, ``'r'``, ``'raw'`` (``ValueError`` for
  NumPy's deprecated ``'full'``/``'economic'`` and anything else); for ``min(M, N) == 0`` or an
  empty stack it returns empty factors, and ``'complete'`` an identity ``Q``;
* ``slogdet`` returns ``(ones, zeros)`` for empty input, sign 0 and ``-inf`` for a singular matrix
  (``getrf``'s info), the sign in the input's (compute) dtype;
* ``matrix_rank(M, tol=None)``: NumPy 1's *absolute* ``tol`` (no ``rtol``: ``TypeError``), the
  default ``S.max() * max(M, N) * eps``, whose maximum over no singular values (an empty matrix)
  raises ``ValueError``; a 1-d ``M`` is ``(M != 0).any()``; the count is ``intp``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _cupy_solver import _householder_underflow, svd

__all__ = ["eig", "eigh", "qr", "slogdet", "matrix_rank"]

LinAlgError = np.linalg.LinAlgError


def _stacked_square(a: np.ndarray) -> None:
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")


def _common_type(a: np.ndarray, reject_float16: bool = True) -> tuple[np.dtype, np.dtype]:
    """``linalg_common_type``: (compute dtype, result dtype)."""
    if reject_float16 and a.dtype == np.float16:
        raise TypeError("float16 is unsupported in linalg")
    result = a.dtype if a.dtype.kind in "fc" else np.dtype(np.float64)
    compute = np.dtype(np.float32) if result == np.float16 else result
    return compute, result


def eig(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _stacked_square(a)
    compute, result = _common_type(a)
    if a.size == 0:
        return np.empty(a.shape[:-1], result), np.empty(a.shape, result)
    complex_dtype = np.dtype(compute.char.upper())
    w, v = np.linalg.eig(a.astype(compute))
    return w.astype(complex_dtype), v.astype(complex_dtype)


def eigh(a: np.ndarray, UPLO: str = "L") -> tuple[np.ndarray, np.ndarray]:  # noqa: N803 (CuPy's and NumPy's name)
    _stacked_square(a)
    compute, result = _common_type(a, reject_float16=False)
    if a.size == 0:
        return np.empty(a.shape[:-1], result.char.lower()), np.empty(a.shape, result)
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    w, v = np.linalg.eigh(a.astype(compute), UPLO=UPLO)
    bad = _householder_underflow(a, UPLO == "L")
    if bad is not None:
        w, v = w.copy(), v.copy()
        w[bad], v[bad] = np.nan, np.nan
    return w.astype(result.char.lower()), v.astype(result)


def qr(a: np.ndarray, mode: str = "reduced") -> Any:
    if mode not in ("reduced", "complete", "r", "raw"):
        if mode in ("f", "full", "e", "economic"):
            raise ValueError(f"The deprecated mode '{mode}' is not supported")
        raise ValueError(f"Unrecognized mode '{mode}'")
    compute, result = _common_type(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    if k == 0 or 0 in batch:
        if mode == "reduced":
            return np.empty(batch + (m, k), result), np.empty(batch + (k, n), result)
        if mode == "complete":
            return np.broadcast_to(np.eye(m, dtype=result), batch + (m, m)).copy(), np.empty(batch + (m, n), result)
        if mode == "r":
            return np.empty(batch + (k, n), result)
        return np.empty(batch + (n, m), result), np.empty(batch + (k,), result)
    out = np.linalg.qr(a.astype(compute), mode=mode)
    if mode == "r":
        return np.asarray(out).astype(result)
    return tuple(np.asarray(part).astype(result) for part in out)


def slogdet(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _stacked_square(a)
    compute, result = _common_type(a)
    logdet_dtype = np.dtype(result.char.lower())
    if a.size == 0:
        return np.ones(a.shape[:-2], result), np.zeros(a.shape[:-2], logdet_dtype)
    with np.errstate(all="ignore"):
        sign, logdet = np.linalg.slogdet(a.astype(compute))
    return np.asarray(sign).astype(result), np.asarray(logdet).astype(logdet_dtype)


def matrix_rank(M: np.ndarray, tol: Any = None) -> np.ndarray:  # noqa: N803 (CuPy's name)
    if M.ndim < 2:
        return np.asarray((M != 0).any()).astype(int)
    s = svd(M, compute_uv=False)
    if tol is None:
        if s.shape[-1] == 0:
            raise ValueError("zero-size array to reduction operation cupy_max which has no identity")
        tol = s.max(axis=-1, keepdims=True) * max(M.shape[-2:]) * np.finfo(s.dtype).eps
    return np.asarray((s > tol).sum(axis=-1, dtype=np.intp))
