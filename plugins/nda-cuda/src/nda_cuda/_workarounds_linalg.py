"""Where CuPy 14.2's linear algebra, products and reductions differ from NumPy: wrappers over any NumPy-like module.

The element-wise half is :mod:`nda_cuda._workarounds`; the same rules hold here: each function
takes the array module ``xp`` and is written with functions NumPy and CuPy share, so the test
suite runs it over its model of CuPy (``tests/_cupy_quirks.py``), which reproduces the behaviour
worked around. Most are *wrappers*: they take the kernel nda-cuda derived by name
(:mod:`nda_cuda._kernels`, ``WRAPPERS``) and fix its arguments or its result. Found by the
conformance kit on an H100 (2026-11-22) and an H200 (2026-11-26), CuPy 14.2.0:

* ``matmul`` (and ``vecdot``, ``matrix_power``, which call it) with a broadcast batch dimension
  builds an array of matrix pointers of dtype ``uintp`` from the strides: a negative stride
  (``x[::-1]`` of a batch axis of size 1, which ``ascontiguousarray`` keeps since the axis is
  contiguous whatever its stride) raises ``OverflowError: Python integer -16 out of bounds for
  uint64``. :func:`positive_strides` copies such an operand first.
* ``linalg.solve`` does not broadcast the batch dimensions (the standard does; the gradient of
  ``solve`` needs it), and for a stack of matrices with no right-hand-side columns
  ``cublas.batched_gesv`` calls ``arange`` with step 0: ``ZeroDivisionError``. :func:`solve`
  broadcasts, and returns an empty result without calling CuPy when there is nothing to solve.
* ``linalg.cholesky(x, upper=True)`` (``array_api_compat.cupy``) factors the *lower* triangle
  and transposes; NumPy factors the upper triangle. The results agree on Hermitian input, the
  gradients (the derivative with respect to each triangle) do not: :func:`cholesky` factors
  ``x^H``'s lower triangle, which is ``x``'s upper one.
* ``linalg.vector_norm`` (``linalg.norm``) reduces with ``max``/``min``: over an empty axis
  ``ord=inf`` raises "zero-size array to reduction operation CUPY_CUB_MAX which has no
  identity"; NumPy gives 0. :func:`vector_norm` returns the zeros without calling CuPy.
* ``argmax``/``argmin`` of floats: CuPy's reduction keeps either NaN when it compares two,
  without the smaller index (``argmin([0, nan, nan])`` is 2 on the H200); NumPy returns the
  first NaN. :func:`first_nan` computes the first NaN's index and takes it where there is one.
* ``sort``/``argsort`` of a 1-d float array run thrust's radix sort (``thrust::less``), which
  orders NaNs by their bits: a NaN with its sign bit set (x86 makes those: ``0 * inf``,
  ``inf - inf`` on the host) sorts before ``-inf`` (the H200: ``argsort([0.0, nan])`` is
  ``[1, 0]``). Arrays of more dimensions use a comparison sort that puts every NaN last.
  :func:`nans_last` gives a 1-d float operand's NaNs the positive sign first (sorted values
  are NaN either way; NumPy puts every NaN last, whatever its sign).
* ``linalg.pinv`` of a stack of small matrices uses batched Jacobi SVD, whose results differ
  from LAPACK's by about ``eps * |x|`` even where LAPACK's are exact (``pinv([[[0, 1]]])``
  has ``-1.8e-16`` for ``0``): :func:`pinv` goes matrix by matrix (``gesvd``), with the
  standard's default tolerance. ``linalg.eigvals`` of an empty matrix has a real dtype.
* ``reshape(copy=False)`` (array-api-compat sets ``y.shape`` on a view) raises CuPy's
  AttributeError where no view exists; :func:`reshape_without_copy` raises nda's ValueError.
* cuSOLVER's single-precision SVD scales a matrix by its largest magnitude: a float32 or
  complex64 matrix whose largest magnitude is a subnormal gets infinite singular values and a
  NaN ``pinv`` (the H200), where the backend's declared rule (``flushes_subnormals``) gives
  those of the flushed matrix. :func:`flushed_input` flushes the operand of ``svdvals``,
  ``pinv`` and the spectral ``matrix_norm`` first.

* From the H200 run of 2026-11-28: cuSOLVER's double-precision routines compute the norms of their
  Householder vectors without LAPACK's scaling. ``eigvalsh`` (``zheevd``) of a complex128 matrix
  with off-diagonal entries of ``2e-179`` gave NaN eigenvalues (the squared norm of a non-zero
  column underflows, and the reflector divides by it); ``svdvals([[1, 5e-324], [5e-324, 5e-324]])``
  gave ``inf`` and ``pinv`` of a matrix of ``5e-324`` NaN. :func:`conditioned` scales each
  float64/complex128 matrix by a power of two and zeroes its entries below ``1.5e-154`` of the
  largest for ``eigvalsh``, ``svdvals``, the spectral ``matrix_norm`` and ``pinv``, whose result is
  then NumPy's formula from that SVD (``1 / s`` overflows where NumPy's does). complex64 ``eigvals``
  of a matrix holding a subnormal raised ``CUSOLVER_STATUS_INTERNAL_ERROR`` (``geev``):
  :func:`eigvals` flushes single-precision input first, as the backend declares.
  ``searchsorted`` of a Python scalar compared ``x1``'s flushed float32 values with an unflushed
  double (``cupy.asarray(x2)``): :func:`scalar_of_x1s_dtype`.

Still differing, by decision: singular values of rank-deficient matrices from cuSOLVER are
``eps * sigma_max`` noise where LAPACK's are ~0 (the kit compares ``svdvals``, ``pinv`` and
the spectral ``matrix_norm`` with a tolerance scaled by the largest singular value, see
``nda.testing.conformance``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

__all__ = [
    "WRAPPERS",
    "positive_strides",
    "solve",
    "cholesky",
    "vector_norm",
    "first_nan",
    "nans_last",
    "flush",
    "flushed_input",
    "flushed_spectral_norm",
    "reshape_without_copy",
    "pinv",
    "eigvals",
    "conditioned",
    "conditioned_eigvalsh",
    "scalar_of_x1s_dtype",
]

Kernel = Callable[..., Any]


def _positive(xp: Any, x: Any) -> Any:
    """``x``, or a fresh C-ordered copy when one of its strides is negative."""
    strides = getattr(x, "strides", None)
    if strides and min(strides) < 0:
        return x.copy()
    return x


def positive_strides(xp: Any, kernel: Kernel) -> Kernel:
    """``kernel`` with its array operands copied when a stride is negative (CuPy 14.2's batched GEMM pointers
    are ``uintp`` computed from the strides: ``OverflowError`` for a negative one)."""

    def products(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
        return kernel(_positive(xp, x1), _positive(xp, x2), *args, **kwargs)

    products.__name__ = getattr(kernel, "__name__", "product")
    return products


def _matrix_power(xp: Any, kernel: Kernel) -> Kernel:
    def matrix_power(x: Any, n: Any) -> Any:
        return kernel(_positive(xp, x), n)

    return matrix_power


def solve(xp: Any, kernel: Kernel) -> Kernel:
    """The standard's ``solve``: ``x2`` of shape ``(M,)`` is a vector, otherwise a stack of ``(M, K)`` matrices
    whose batch broadcasts against ``x1``'s (CuPy 14.2 does not broadcast); nothing to solve, no CuPy call."""

    def solve(x1: Any, x2: Any) -> Any:
        vector = x2.ndim == 1
        b = x2[:, None] if vector else x2
        batch = tuple(np.broadcast_shapes(x1.shape[:-2], b.shape[:-2]))
        if x1.shape[:-2] != batch:
            x1 = xp.broadcast_to(x1, batch + x1.shape[-2:])
        if b.shape[:-2] != batch:
            b = xp.broadcast_to(b, batch + b.shape[-2:])
        shape = batch + b.shape[-2:]
        if x1.size == 0 or b.size == 0:
            result = xp.empty(shape, dtype=x1.dtype)
        else:
            result = kernel(x1, b)
        return result[..., 0] if vector else result

    return solve


def cholesky(xp: Any, kernel: Kernel) -> Kernel:
    """``upper=True`` factors ``x``'s upper triangle, as NumPy does (``array_api_compat.cupy`` over CuPy 14.2
    factors the lower one and transposes; see the module docstring)."""

    def cholesky(x: Any, upper: bool = False) -> Any:
        if not upper:
            return kernel(x)
        return kernel(xp.conj(xp.swapaxes(x, -1, -2)), upper=True)

    return cholesky


def vector_norm(xp: Any, kernel: Kernel) -> Kernel:
    """``ord=inf`` over an empty axis is 0 (NumPy), without CuPy 14.2's ``max`` reduction, which raises there."""

    def vector_norm(x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
        if x.size == 0 and ord == math.inf:
            axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
            if any(x.shape[a] == 0 for a in axes):
                shape = (
                    tuple(1 if i in axes else n for i, n in enumerate(x.shape))
                    if keepdims
                    else tuple(n for i, n in enumerate(x.shape) if i not in axes)
                )
                return xp.zeros(shape, dtype=x.real.dtype if x.dtype.kind == "c" else x.dtype)
        return kernel(x, axis=axis, keepdims=keepdims, ord=ord)

    return vector_norm


def first_nan(xp: Any, kernel: Kernel) -> Kernel:
    """``argmax``/``argmin`` of floats: the first NaN's index where the reduced values hold a NaN (NumPy's rule;
    CuPy 14.2's reduction keeps either of two NaNs).

    The index is the minimum of ``where(isnan(x), index, n)`` along the axis: unique values, so
    the result does not depend on how the reduction breaks ties.
    """

    def arg(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        result = kernel(x, axis=axis, keepdims=keepdims)
        if x.dtype.kind != "f" or x.size == 0:
            return result
        if axis is None:
            flat = xp.isnan(x).reshape(-1)
            n = flat.size
            index = xp.where(flat, xp.arange(n, dtype=result.dtype), n).min()
            index = index.reshape(result.shape)
        else:
            axis = axis % x.ndim
            n = x.shape[axis]
            positions = xp.arange(n, dtype=result.dtype).reshape((n,) + (1,) * (x.ndim - axis - 1))
            index = xp.where(xp.isnan(x), positions, n).min(axis=axis, keepdims=keepdims)
        return xp.where(index < n, index, result).astype(result.dtype, copy=False)

    arg.__name__ = getattr(kernel, "__name__", "arg")
    return arg


def nans_last(xp: Any, kernel: Kernel) -> Kernel:
    """``sort``/``argsort`` with every NaN last: a 1-d float operand's NaNs made positive first (see the module docstring)."""

    def ordered(x: Any, *args: Any, **kwargs: Any) -> Any:
        if x.ndim == 1 and x.dtype.kind == "f":
            x = xp.where(xp.isnan(x), math.nan, x)
        return kernel(x, *args, **kwargs)

    ordered.__name__ = getattr(kernel, "__name__", "sort")
    return ordered


_TINY32 = float(np.finfo(np.float32).smallest_normal)


def flush(xp: Any, x: Any) -> Any:
    """``x`` with its float32/complex64 subnormals (parts) made zeros; other arrays as they are.

    Explicit comparisons, not ``_workarounds._flush_parts``'s ``* 1`` (which flushes only in a
    kernel compiled with ``-ftz=true``): the SVD ops are rare and O(n^3), so the two extra
    element-wise kernels do not matter, and the result holds whatever compiles the multiply."""
    if x.dtype == np.float32:
        return xp.where(xp.abs(x) < _TINY32, 0.0, x)
    if x.dtype == np.complex64:
        out = xp.empty(x.shape, dtype=x.dtype)
        out.real[...] = xp.where(xp.abs(x.real) < _TINY32, 0.0, x.real)
        out.imag[...] = xp.where(xp.abs(x.imag) < _TINY32, 0.0, x.imag)
        return out
    return x


#: Below this magnitude a float64 square underflows (to a subnormal or zero): ``sqrt(smallest normal)``.
_SQRT_TINY64 = math.sqrt(float(np.finfo(np.float64).smallest_normal))


def _ldexp(xp: Any, x: Any, k: Any) -> Any:
    """``x * 2**k`` (exact; ``k`` an integer array broadcast against ``x``), complex arrays part by part."""
    if x.dtype.kind != "c":
        return xp.ldexp(x, k)
    from ._workarounds import _complex

    return _complex(xp, xp.ldexp(x.real, k), xp.ldexp(x.imag, k), x.dtype)


def conditioned(xp: Any, x: Any) -> tuple[Any, Any]:
    """A float64/complex128 stack of matrices as cuSOLVER computes it right: ``(y, k)``, ``y = x * 2**k``
    per matrix, ``k`` (shape ``(..., 1, 1)``) putting the largest magnitude in ``[1, 2)``, and the
    elements of ``y`` still below ``sqrt(smallest normal)`` made zeros. ``k`` is None (and ``y`` is
    ``x``) for other dtypes and empty stacks.

    cuSOLVER's double-precision routines compute the norms of their Householder vectors without
    LAPACK's scaling: a non-zero column whose squared norm underflows makes a reflector divide by
    zero, and subnormals give infinities (the H200: ``eigvalsh`` NaN for off-diagonal entries of
    ``2e-179``, ``svdvals([[1, 5e-324], [5e-324, 5e-324]])`` inf, ``pinv`` of ``5e-324`` NaN). The
    scaling by a power of two is exact; the elements zeroed are below ``1.5e-154`` of the largest
    one, far below the rounding of any result (``eps * |x|``), so eigenvalues and singular values
    of ``y`` are those of ``x`` times ``2**k`` to rounding. Element-wise kernels and one
    reduction, no data read back.
    """
    if x.dtype not in (np.float64, np.complex128) or x.size == 0 or x.ndim < 2:
        return x, None
    largest = xp.abs(x).max(axis=(-2, -1), keepdims=True)
    _, exponent = xp.frexp(largest)  # largest = m * 2**exponent, m in [0.5, 1)
    k = xp.where(xp.isfinite(largest) & (largest > 0), 1 - exponent, 0).astype(np.int32)
    y = _ldexp(xp, x, k)
    return xp.where(xp.abs(y) < _SQRT_TINY64, xp.zeros((), dtype=x.dtype), y), k


def flushed_input(xp: Any, kernel: Kernel) -> Kernel:
    """``kernel`` (an SVD-based op: ``svdvals``) on its operand with float32/complex64 subnormals flushed,
    and double precision :func:`conditioned` (the singular values scaled back by ``2**-k``)."""

    def spectral(x: Any, *args: Any, **kwargs: Any) -> Any:
        y, k = conditioned(xp, x)
        if k is None:
            return kernel(flush(xp, x), *args, **kwargs)
        return _ldexp(xp, kernel(y, *args, **kwargs), -k[..., 0])

    spectral.__name__ = getattr(kernel, "__name__", "svd")
    return spectral


def flushed_spectral_norm(xp: Any, kernel: Kernel) -> Kernel:
    """``matrix_norm``: :func:`flushed_input` for the orders computed from singular values (2, -2, ``'nuc'``)."""

    def matrix_norm(x: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("ord", "fro") not in (2, -2, "nuc"):
            return kernel(x, *args, **kwargs)
        y, k = conditioned(xp, x)
        if k is None:
            return kernel(flush(xp, x), *args, **kwargs)
        return _ldexp(xp, kernel(y, *args, **kwargs), -(k if kwargs.get("keepdims") else k[..., 0, 0]))

    return matrix_norm


def conditioned_eigvalsh(xp: Any, kernel: Kernel) -> Kernel:
    """``eigvalsh`` of double-precision matrices :func:`conditioned` first (eigenvalues scaled back)."""

    def eigvalsh(x: Any, *args: Any, **kwargs: Any) -> Any:
        y, k = conditioned(xp, x)
        if k is None:
            return kernel(x, *args, **kwargs)
        return _ldexp(xp, kernel(y, *args, **kwargs), -k[..., 0])

    eigvalsh.__name__ = getattr(kernel, "__name__", "eigvalsh")
    return eigvalsh


def scalar_of_x1s_dtype(xp: Any, kernel: Kernel) -> Kernel:
    """``searchsorted`` with a Python-scalar ``x2``: searched as a 0-d array of ``x1``'s dtype (nda's plan
    promotes the two to that dtype). array-api-compat's wrapper makes it ``cupy.asarray(x2)``, a float64
    or int64 array, and CuPy's search kernel then converts ``x1``'s float32 values to double with
    ``-ftz=true`` (subnormals flushed) against an unflushed double: ``searchsorted([1.4e-45], 1.4e-45)``
    is 1 (the H200), where both operands flushed give NumPy's 0."""

    def searchsorted(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
        if not hasattr(x2, "dtype"):
            from ._workarounds import to_device

            x2 = to_device(xp, np.asarray(x2, dtype=x1.dtype))
        return kernel(x1, x2, *args, **kwargs)

    return searchsorted


def reshape_without_copy(xp: Any, kernel: Kernel) -> Kernel:
    """``reshape(copy=False)``: array-api-compat sets ``y.shape`` on a view, and CuPy raises
    AttributeError when the strides do not allow it; nda's rule (and NumPy's) is ValueError."""

    def reshape(x: Any, shape: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return kernel(x, shape, *args, **kwargs)
        except AttributeError:
            if kwargs.get("copy", True) is not False:
                raise
            raise ValueError(
                f"reshape(copy=False): cannot reshape an array of shape {tuple(x.shape)} with these strides into {tuple(shape)} without copying"
            ) from None

    return reshape


def pinv(xp: Any) -> Kernel:
    """Stacks of matrices one matrix at a time (see the module docstring: batched Jacobi SVD);
    float32/complex64 subnormals flushed first (cuSOLVER's scaling), double precision
    :func:`conditioned` (``pinv(x) = 2**k pinv(x 2**k)``; ``rtol`` is relative, so it holds as it is)."""

    def pinv(x: Any, rtol: Any = None) -> Any:
        y, k = conditioned(xp, x)
        if k is None:
            return by_matrix(flush(xp, x), rtol)
        m, n = x.shape[-2:]
        if rtol is None:
            rtol = max(m, n) * float(np.finfo(x.dtype).eps)
        if x.ndim == 2:
            return from_svd(y, k[0, 0], rtol)
        batch = x.shape[:-2]
        flat, scales = y.reshape((-1, m, n)), k.reshape(-1)
        tols = [rtol] * flat.shape[0] if not hasattr(rtol, "shape") else list(xp.broadcast_to(rtol, batch).reshape(-1))
        return xp.stack([from_svd(flat[i], scales[i], tols[i]) for i in range(flat.shape[0])]).reshape(batch + (n, m))

    def from_svd(y: Any, k: Any, rtol: Any) -> Any:
        """NumPy's (and CuPy's) ``pinv`` formula, ``V S^+ U^T`` of ``conj(x)``, from the SVD of the conditioned
        ``y = x 2**k``: the singular values scaled back first, so that ``1 / s`` overflows (and ``0 * inf``
        is NaN) exactly where NumPy's does (``pinv([[0, 5e-324]])`` is ``[[nan], [inf]]``)."""
        u, s, vt = xp.linalg.svd(xp.conj(y), full_matrices=False)
        s = xp.ldexp(s, -k)
        large = s > rtol * s.max()
        inverse = xp.where(large, 1 / xp.where(large, s, 1), 0)
        return xp.matmul(xp.swapaxes(vt, -1, -2), inverse[..., None] * xp.swapaxes(u, -1, -2))

    def by_matrix(x: Any, rtol: Any) -> Any:
        m, n = x.shape[-2:]
        if rtol is None:
            rtol = max(m, n) * float(np.finfo(x.dtype).eps)
        if x.ndim == 2 or x.size == 0:
            return xp.linalg.pinv(x, rcond=rtol)
        batch = x.shape[:-2]
        flat = x.reshape((-1, m, n))
        tols = [rtol] * flat.shape[0] if not hasattr(rtol, "shape") else list(xp.broadcast_to(rtol, batch).reshape(-1))
        parts = [xp.linalg.pinv(flat[i], rcond=tols[i]) for i in range(flat.shape[0])]
        return xp.stack(parts).reshape(batch + (n, m))

    return pinv


def eigvals(xp: Any) -> Kernel:
    """CuPy 14.2 returns a real dtype for an empty matrix; nda's result is complex."""
    complex_of = {"f": np.complex64, "d": np.complex128}

    def eigvals(x: Any) -> Any:
        result = xp.linalg.eigvals(flush(xp, x))  # cuSOLVER's geev: INTERNAL_ERROR for complex64 subnormals (the H200)
        if result.dtype.kind != "c":
            result = result.astype(complex_of.get(np.dtype(x.dtype).char, np.complex128))
        return result

    return eigvals


#: op -> wrapper(xp, kernel) applied to the kernel nda-cuda derived for the op by name.
WRAPPERS: dict[str, Callable[[Any, Kernel], Kernel]] = {
    "matmul": positive_strides,
    "vecdot": positive_strides,
    "linalg.matrix_power": _matrix_power,
    "linalg.solve": solve,
    "linalg.cholesky": cholesky,
    "linalg.vector_norm": vector_norm,
    "argmax": first_nan,
    "argmin": first_nan,
    "linalg.svdvals": flushed_input,
    "linalg.eigvalsh": conditioned_eigvalsh,
    "linalg.matrix_norm": flushed_spectral_norm,
    "reshape": reshape_without_copy,
    "searchsorted": scalar_of_x1s_dtype,
    "sort": nans_last,
    "argsort": nans_last,
}
