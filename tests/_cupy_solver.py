"""CuPy 14.2's cuBLAS and cuSOLVER calls in the model: products, einsum, solvers, decompositions.

Part of the CuPy model (``tests/_cupy_quirks.py`` builds the modules from these functions). Plain
NumPy arrays in and out unless said otherwise; the model's wrappers flush float32/complex64
subnormals around them. Each rule follows a measurement on a GPU (``../shared/gpu/``) and CuPy's
source where that says how it comes about:

* ``matmul`` with a broadcast batch dimension builds pointer arrays of dtype ``uintp`` from the
  strides: a negative stride raises ``OverflowError: Python integer -16 out of bounds for uint64``;
* complex ``matmul`` is cuBLAS's ``gemm`` with ``alpha = 1 + 0j``: the accumulated sum is multiplied
  by alpha as a complex number, ``(1 s_r - 0 s_i, 1 s_i + 0 s_r)``, so an infinite part turns the
  other part into NaN (``[1.797e308-1j] * 3 @ [1j] * 3`` is ``nan+infj``; NumPy's own loop:
  ``3+infj``); the H200 measured it through ``einsum`` (2026-11-28);
* ``einsum`` is CuPy's own (``cupy/linalg/_einsum.py``, pure Python) run over the model: unary sums
  first, then pairwise contractions through ``matmul`` (so the alpha rule above), with neither
  cuTENSOR nor cuTENSORnet; NumPy's ``einsum(optimize=False)`` sums products in its own loops;
* ``linalg.solve`` does not broadcast (``ValueError``), and with a batch of matrices and no
  right-hand-side columns ``cublas.batched_gesv`` calls ``arange`` with step 0:
  ``ZeroDivisionError``; ``linalg.norm`` reduces with ``max``/``min`` (CUB): an empty reduction
  raises ``ValueError`` (NumPy returns 0 for ``ord=inf``);
* singular values: ``linalg.svd`` gives rank-deficient matrices singular values of
  ``eps * sigma_max`` size where LAPACK gives about ``1e-17`` or 0 (the H200: ``svdvals`` of
  ``[[1, 1], [1, 1]]`` in float32 is ``[2, 1.35e-08]``); ``linalg.pinv`` is off by about
  ``eps * sigma_max * |pinv|^2``, a stack of matrices (batched Jacobi SVD) by ``eps * |x|``;
  a float32/complex64 matrix whose largest magnitude is a subnormal gets infinite singular
  values and a NaN ``pinv`` (the H200; cuSOLVER scales by that magnitude, flushed);
* double precision and subnormals (the H200, 2026-11-28): cuSOLVER computes the norms of its
  Householder vectors without LAPACK's scaling. A float64 matrix holding a subnormal element comes
  out of ``gesvd`` wrong; modelled as the two measurements: its largest singular value is ``inf``
  (``svdvals([[1, 5e-324], [5e-324, 5e-324]])``, NumPy ``[1, 5e-324]``), and ``pinv`` is NaN
  outside its first column (``pinv([[5e-324] * 2] * 2)``: ``[[inf, nan], [inf, nan]]``, NumPy
  ``inf`` everywhere). ``eigvalsh`` of a complex128 Hermitian matrix with a non-zero column below
  the diagonal whose squared norm underflows to zero gives NaN eigenvalues (``zheevd``'s reflector
  divides by that norm: the H200, off-diagonal entries of ``2.1e-179``);
* ``linalg.eigvals`` of a complex64 matrix holding a subnormal part raises ``CUSOLVERError:
  CUSOLVER_STATUS_INTERNAL_ERROR`` (``geev``, the H200: ``[[25, 0, 1.4e-45], [0, 25, 0], [8j, 0,
  25]]``); of an empty matrix it has the input's real dtype.
"""

from __future__ import annotations

import functools
import math
import types
from typing import Any, Callable

import numpy as np

import _cupy_streams as streams
from _cupy_device import DeviceArray, plain

__all__ = [
    "CUSOLVERError",
    "LinAlgError",
    "matmul",
    "solve",
    "svd",
    "pinv",
    "scaled_by_norm",
    "norm",
    "eigvals",
    "eigvalsh",
    "refusing_subnormal_parts",
    "einsum_over",
]

_TINY64 = float(np.finfo(np.float64).smallest_normal)


class CUSOLVERError(RuntimeError):
    """``cupy_backends.cuda.libs.cusolver.CUSOLVERError`` of the model."""


def matmul(a: np.ndarray, b: np.ndarray, **kwargs: Any) -> np.ndarray:
    """CuPy's ``matmul``: with a broadcast batch dimension, pointer arrays from the strides (``uintp``)."""
    a, b = np.asarray(a), np.asarray(b)
    ndim = max(a.ndim, b.ndim)
    if ndim > 2 and a.ndim and b.ndim:
        x = a[None] if a.ndim == 1 else a
        y = b[..., None] if b.ndim == 1 else b
        x = np.ascontiguousarray(x.reshape((1,) * (ndim - x.ndim) + x.shape))
        y = np.ascontiguousarray(y.reshape((1,) * (ndim - y.ndim) + y.shape))
        broadcast = any(p != q and 1 in (p, q) and max(p, q) > 1 for p, q in zip(x.shape[:-2], y.shape[:-2]))
        if broadcast and x.size and y.size:
            for m in (x, y):
                for i in range(ndim - 2):
                    if m.strides[i] < 0:
                        raise OverflowError(f"Python integer {m.strides[i]} out of bounds for uint64")
    with np.errstate(all="ignore"):
        out = np.asarray(np.matmul(a, b, **kwargs))
        if out.dtype.kind != "c" or not out.size or a.shape[-1] == 0 or kwargs:
            return out
        # The accumulated sums without BLAS (NumPy's matmul calls zgemm, whose alpha may act already) ...
        x, y = (a[None, :] if a.ndim == 1 else a), (b[:, None] if b.ndim == 1 else b)
        out = np.einsum("...ij,...jk->...ik", x.astype(out.dtype), y.astype(out.dtype), optimize=False)
        out = out[..., 0, :] if a.ndim == 1 else out
        out = out[..., 0] if b.ndim == 1 else out
        alpha = np.ones((), out.dtype)  # ... then gemm's alpha = 1 + 0j times each sum, as a complex product
        result = np.empty_like(out)
        result.real = alpha.real * out.real - alpha.imag * out.imag
        result.imag = alpha.real * out.imag + alpha.imag * out.real
    return result


class LinAlgError(np.linalg.LinAlgError):
    pass


def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``cupy.linalg.solve``: no broadcasting; ``batched_gesv`` for stacks, whose ``arange`` step is 0 for K = 0."""
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    if b.ndim == 0:
        raise ValueError("b must have at least one dimension")
    if b.ndim == 1:
        if a.shape[-1] != b.size:
            raise ValueError("a must have (..., M, M) shape and b must have (M,) for one-dimensional b")
        b = np.broadcast_to(b, a.shape[:-1])
    elif a.shape[:-1] != b.shape[:-1]:
        raise ValueError("a must have (..., M, M) shape and b must have (..., M, K) for multidimensional b")
    if a.ndim > 2:
        nrhs = b.shape[-1] if a.ndim == b.ndim else 1
        if a.size and nrhs == 0:
            raise ZeroDivisionError("division by zero")  # cupy.arange(ptr, ptr + 0, 0) in cublas.batched_gesv
    dtype = np.result_type(a.dtype, b.dtype)
    if dtype.kind not in "fc":
        dtype = np.dtype(np.float64)
    if a.size == 0:
        return np.empty(b.shape, dtype)
    if b.ndim == a.ndim - 1:
        return np.linalg.solve(a, b[..., None])[..., 0].astype(dtype)
    return np.linalg.solve(a, b).astype(dtype)


def _noisy_singular_values(s: np.ndarray) -> np.ndarray:
    """Singular values of rank-deficient matrices as cuSOLVER gives them: about ``eps * sigma_max`` where LAPACK has ~0."""
    if not s.size:
        return s
    eps = np.finfo(s.dtype).eps
    floor = 0.25 * eps * s.max(axis=-1, keepdims=True)
    return np.where(s < floor, floor, s).astype(s.dtype)


def _subnormal_doubles(a: np.ndarray) -> np.ndarray | None:
    """Per matrix of a float64 stack: whether it holds a subnormal element (None: none does)."""
    if a.dtype != np.float64 or a.ndim < 2 or not a.size:
        return None
    magnitude = np.abs(a).reshape(a.shape[:-2] + (-1,))
    found = ((magnitude > 0) & (magnitude < _TINY64)).any(axis=-1)
    return found if found.any() else None


def svd(a: np.ndarray, full_matrices: bool = True, compute_uv: bool = True, **kwargs: Any) -> Any:
    result = np.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, **kwargs)
    bad = _subnormal_doubles(a)
    if compute_uv:
        u, s, vh = result
        s = _noisy_singular_values(s)
        if bad is not None:
            s = s.copy()
            s[bad, ..., 0] = np.inf  # the H200: the largest singular value of such a matrix
        return u, s, vh
    s = _noisy_singular_values(result)
    if bad is not None:
        s = s.copy()
        s[bad, ..., 0] = np.inf
    return s


def pinv(a: np.ndarray, rcond: Any = None, **kwargs: Any) -> np.ndarray:
    with np.errstate(all="ignore"):
        result = np.linalg.pinv(a, rcond=rcond, **kwargs) if rcond is not None else np.linalg.pinv(a, **kwargs)
        if result.size:
            eps = np.finfo(result.dtype).eps
            finite = np.isfinite(result)  # the noise below is rounding: it leaves infinities as they are
            if a.ndim > 2:
                scale = np.abs(np.where(finite, result, 0)).max(axis=(-2, -1), keepdims=True)
                return np.where(finite, result - 0.8 * eps * scale, result).astype(result.dtype)  # batched gesvdj: off by ~eps * |x|
            sigma = np.linalg.norm(a, 2) if a.size else 0.0
            size = np.linalg.norm(np.where(finite, result, 0), 2)
            # gesvd: off by ~eps * sigma_max * |pinv|^2
            result = np.where(finite, result - 0.4 * eps * sigma * size * size, result).astype(result.dtype)
    bad = _subnormal_doubles(a)
    if bad is not None:
        result = result.copy()
        result[bad, ..., 1:] = np.nan  # the H200: NaN outside the first column of such a matrix's pinv
    return result


def _subnormal_matrices(a: np.ndarray) -> np.ndarray | None:
    """Per matrix of a float32/complex64 stack: whether its largest magnitude is a subnormal (None: none is)."""
    if a.dtype not in (np.float32, np.complex64) or a.ndim < 2 or not a.size:
        return None
    parts = np.abs(a.view(np.float32))  # real and imaginary parts side by side
    largest = parts.reshape(a.shape[:-2] + (-1,)).max(axis=-1)
    found = (largest > 0) & (largest < np.finfo(np.float32).smallest_normal)
    return found if found.any() else None


def scaled_by_norm(fn: Callable[..., Any], op: str) -> Callable[..., Any]:
    """cuSOLVER's single-precision ``gesvd`` scales a matrix by its largest magnitude; one whose largest
    magnitude is a subnormal (flushed: zero) comes out with infinite singular values and NaN vectors (the
    H200: ``svdvals`` of float32 subnormals is ``inf``, ``pinv`` of them not the flushed result)."""

    @functools.wraps(fn)
    def kernel(a: Any, *args: Any, **kwargs: Any) -> Any:
        streams.before_kernel()  # (reads the operand's memory)
        bad = _subnormal_matrices(plain(a)) if a.__class__ is DeviceArray else None
        result = fn(a, *args, **kwargs)
        if bad is None:
            return result
        if op == "svd":
            if result.__class__ is tuple:
                u, s, vh = (plain(r).copy() for r in result)
                u[bad], s[bad], vh[bad] = np.nan, np.inf, np.nan
                return DeviceArray(u), DeviceArray(s), DeviceArray(vh)
            s = plain(result).copy()
            s[bad] = np.inf
            return DeviceArray(s)
        out = plain(result).copy()  # pinv: V S^-1 U^H of those
        out[bad] = np.nan
        return DeviceArray(out)

    return kernel


def norm(x: np.ndarray, ord: Any = None, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    """``cupy.linalg.norm``'s reductions: ``max``/``min`` (CUB) of an empty axis raise; 2-norms from the model's svd."""
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    axes = tuple(range(x.ndim)) if axis is None else (axis if isinstance(axis, tuple) else (int(axis),))
    extreme = ord in (np.inf, -np.inf) or (len(axes) == 2 and ord in (1, -1))
    if extreme and any(x.shape[i] == 0 for i in axes):
        name = "CUPY_CUB_MAX" if ord in (np.inf, 1) else "CUPY_CUB_MIN"
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    if len(axes) == 2 and ord in (2, -2, "nuc"):
        moved = np.moveaxis(x, axes, (-2, -1))
        s = svd(moved, compute_uv=False)
        ret = s[..., 0] if ord == 2 else s[..., -1] if ord == -2 else s.sum(axis=-1)
        if keepdims:
            shape = list(x.shape)
            for i in axes:
                shape[i] = 1
            ret = ret.reshape(shape)
        return ret
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def eigvals(a: np.ndarray) -> np.ndarray:
    if a.size == 0:
        return np.empty(a.shape[:-1], dtype=a.dtype)
    complex_dtype = np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128
    return np.linalg.eigvals(a).astype(complex_dtype)


def refusing_subnormal_parts(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``kernel`` (the flushing ``eigvals``) behind cuSOLVER's ``geev`` refusal of complex64 input holding a
    subnormal part: ``CUSOLVERError: CUSOLVER_STATUS_INTERNAL_ERROR``, raised by the call (the H200)."""

    @functools.wraps(kernel)
    def refusing(a: Any, *args: Any, **kwargs: Any) -> Any:
        streams.before_kernel()
        host = plain(a) if a.__class__ is DeviceArray else None
        if host is not None and host.dtype == np.complex64 and host.size:
            parts = np.abs(host.view(np.float32))
            if ((parts > 0) & (parts < np.finfo(np.float32).smallest_normal)).any():
                raise CUSOLVERError("CUSOLVER_STATUS_INTERNAL_ERROR")
        return kernel(a, *args, **kwargs)

    return refusing


def _householder_underflow(a: np.ndarray, lower: bool) -> np.ndarray | None:
    """Per complex128 matrix: whether a column of the triangle the reduction reads (below the diagonal for
    ``UPLO="L"``, above it for ``"U"``) is non-zero with a squared norm (unscaled) that underflows to zero."""
    if a.dtype != np.complex128 or a.ndim < 2 or a.shape[-1] < 2:
        return None
    tri = a if lower else np.conj(np.swapaxes(a, -1, -2))
    bad = np.zeros(a.shape[:-2], dtype=bool)
    with np.errstate(all="ignore"):
        for j in range(a.shape[-1] - 1):
            column = tri[..., j + 1 :, j]
            squares = (column.real * column.real + column.imag * column.imag).sum(axis=-1)
            bad |= (column != 0).any(axis=-1) & (squares == 0)
    return bad if bad.any() else None


def eigvalsh(a: np.ndarray, UPLO: str = "L") -> np.ndarray:  # noqa: N803 (CuPy's and NumPy's name)
    """``cupy.linalg.eigvalsh`` (``syevd``/``heevd``): NaN eigenvalues for the complex128 matrices of
    :func:`_householder_underflow` (the H200)."""
    result = np.linalg.eigvalsh(a, UPLO=UPLO)
    bad = _householder_underflow(np.asarray(a), UPLO == "L")
    if bad is not None:
        result = result.copy()
        result[bad] = np.nan
    return result


def einsum_over(model: Any) -> Callable[..., Any] | None:
    """CuPy's own ``einsum`` (``cupy.linalg._einsum``, pure Python) with ``cupy`` bound to the model, so its
    pairwise contractions call the model's ``matmul``; None without CuPy installed (the model then takes
    NumPy's ``einsum``)."""
    try:
        import cupy.linalg._einsum as source
    except Exception:  # noqa: BLE001 - no CuPy wheel (or a broken one): NumPy's einsum stands in
        return None
    core = types.SimpleNamespace(internal=types.SimpleNamespace(prod=math.prod))

    class _Cupy:  # the model, plus the one private helper the module reads (cupy._core.internal.prod)
        _core = core

        def __getattr__(self, name: str) -> Any:
            return getattr(model, name)

    namespace = dict(source.__dict__)
    namespace["cupy"] = _Cupy()
    namespace["_try_use_cutensornet"] = lambda *args, **kwargs: None  # no cuTENSORnet in the model
    namespace["_accelerator"] = types.SimpleNamespace(get_routine_accelerators=lambda: [], ACCELERATOR_CUTENSOR=object())
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == source.__name__:
            clone = types.FunctionType(value.__code__, namespace, value.__name__, value.__defaults__, value.__closure__)
            clone.__kwdefaults__ = value.__kwdefaults__
            clone.__qualname__, clone.__module__ = value.__qualname__, "cupy_model.linalg._einsum"
            namespace[name] = clone
    return namespace["einsum"]  # type: ignore[no-any-return]
