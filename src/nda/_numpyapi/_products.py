"""NumPy's products, polynomials, norms, least squares and 2-D FFTs, written once over nda's ops.

``dot``/``inner``/``vdot``/``outer`` are ``matmul``/``tensordot`` after NumPy's dtype
promotion; ``cross`` is NumPy's component formula in element-wise ops (so its values are
NumPy's); ``kron`` a broadcast product reshaped; ``trace``/``diagonal`` the ``linalg``
ops on moved axes. ``polyval`` is Horner's rule, ``polyfit`` NumPy's column-scaled
Vandermonde least squares, and ``linalg.lstsq`` a least-squares solve through the SVD
(``linalg.svd``, on every backend that has it): the minimum-norm solution, as LAPACK's
``gelsd`` gives, to rounding. ``linalg.norm`` is NumPy's ``norm`` (vector norms written with
NumPy's formulas, matrix norms through ``linalg.matrix_norm``), and ``fft.fft2`` and friends
are the n-dimensional transforms over the last two axes.

Layer: arrays and front end, NumPy's names (README, "Architecture").
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _composite, _dtypes
from .._array import NDArray
from ..ops.spec import normalize_axis
from ._common import FFT, LINALG, api, array_arg, np_result_type, param_array, store, to_dtype

__all__ = [
    "dot",
    "vdot",
    "inner",
    "outer",
    "cross",
    "kron",
    "trace",
    "diagonal",
    "polyval",
    "polyfit",
    "norm",
    "lstsq",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
]


def _pair(a: Any, b: Any, op: str) -> tuple[NDArray, NDArray]:
    """Two operands on one device in NumPy's common dtype (one may be host data or a scalar)."""
    anchor = a if isinstance(a, NDArray) else b
    if not isinstance(anchor, NDArray):
        raise TypeError(f"{op}(): at least one operand must be an nda array (convert with nda.asarray)")
    x, y = param_array(a, anchor.device, op, "a"), param_array(b, anchor.device, op, "b")
    common = np_result_type(x, y)
    return to_dtype(x, common), to_dtype(y, common)


def dot(a: Any, b: Any, out: NDArray | None = None) -> NDArray:
    """NumPy's ``dot``: a product for 0-d operands, ``matmul`` for 1-D and 2-D ones, and for N-D a sum
    over the last axis of ``a`` and the second-to-last of ``b`` (``tensordot``)."""
    x, y = _pair(a, b, "dot")
    if x.ndim == 0 or y.ndim == 0:
        result = api.multiply(x, y)
    elif (x.ndim <= 2 and y.ndim <= 2) or y.ndim == 1:
        result = api.matmul(x, y)
    else:
        result = api.tensordot(x, y, axes=((x.ndim - 1,), (y.ndim - 2,)))
    return store("dot", out, result)


def vdot(a: Any, b: Any, /) -> NDArray:
    """The dot product of the flattened arrays, conjugating ``a`` (a 0-d array)."""
    x, y = _pair(a, b, "vdot")
    x, y = api.reshape(x, (-1,)), api.reshape(y, (-1,))
    if x.shape != y.shape:
        raise ValueError(f"vdot(): the arrays have {x.shape[0]} and {y.shape[0]} elements; they must have the same number")
    if x.dtype.category == "complex floating":
        x = api.conj(x)
    return api.matmul(x, y)  # type: ignore[no-any-return]


def inner(a: Any, b: Any, /) -> NDArray:
    """The inner product over the last axes (a product for 0-d operands), NumPy's ``inner``."""
    x, y = _pair(a, b, "inner")
    if x.ndim == 0 or y.ndim == 0:
        return api.multiply(x, y)  # type: ignore[no-any-return]
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"inner(): shapes {x.shape} and {y.shape} are not aligned (last dimensions {x.shape[-1]} != {y.shape[-1]})")
    return api.tensordot(x, y, axes=((x.ndim - 1,), (y.ndim - 1,)))  # type: ignore[no-any-return]


def outer(a: Any, b: Any, out: NDArray | None = None) -> NDArray:
    """The outer product of the flattened arrays: ``out[i, j] = a[i] * b[j]``."""
    x, y = _pair(a, b, "outer")
    return store("outer", out, LINALG["outer"](api.reshape(x, (-1,)), api.reshape(y, (-1,))))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None) -> NDArray:
    """The cross product of 3-element (or, deprecated in NumPy 2, 2-element) vectors along the given axes,
    NumPy's ``cross``; ``axis`` sets all three. Its component formula, in element-wise ops."""
    x, y = _pair(a, b, "cross")
    if axis is not None:
        axisa = axisb = axisc = axis
    x = _composite.moveaxis(x, normalize_axis(axisa, x.ndim, "cross"), -1) if x.ndim else x
    y = _composite.moveaxis(y, normalize_axis(axisb, y.ndim, "cross"), -1) if y.ndim else y
    if x.ndim == 0 or y.ndim == 0 or x.shape[-1] not in (2, 3) or y.shape[-1] not in (2, 3):
        raise ValueError("cross(): incompatible dimensions for cross product (dimension must be 2 or 3)")
    if x.shape[-1] == 2 or y.shape[-1] == 2:
        warnings.warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors instead. (deprecated in NumPy 2.0)",
            DeprecationWarning,
            stacklevel=2,
        )
    a0, a1 = x[..., 0], x[..., 1]
    b0, b1 = y[..., 0], y[..., 1]
    z = api.subtract(api.multiply(a0, b1), api.multiply(a1, b0))
    if x.shape[-1] == 2 and y.shape[-1] == 2:
        return z  # type: ignore[no-any-return]
    zero = api.zeros((), dtype=x.dtype, device=x.device)
    a2 = x[..., 2] if x.shape[-1] == 3 else zero
    b2 = y[..., 2] if y.shape[-1] == 3 else zero
    c0 = api.subtract(api.multiply(a1, b2), api.multiply(a2, b1))
    c1 = api.subtract(api.multiply(a2, b0), api.multiply(a0, b2))
    c0, c1, z = _composite.broadcast_arrays(c0, c1, z)
    result = api.stack([c0, c1, z], axis=-1)
    return _composite.moveaxis(result, -1, normalize_axis(axisc, result.ndim, "cross"))


def kron(a: Any, b: Any) -> NDArray:
    """The Kronecker product: blocks ``a[i, j] * b``, NumPy's ``kron`` (the shorter shape padded with leading ones)."""
    x, y = _pair(a, b, "kron")
    nd = max(x.ndim, y.ndim)
    xs = (1,) * (nd - x.ndim) + x.shape
    ys = (1,) * (nd - y.ndim) + y.shape
    interleaved_x = tuple(v for d in xs for v in (d, 1))
    interleaved_y = tuple(v for d in ys for v in (1, d))
    product = api.multiply(api.reshape(x, interleaved_x), api.reshape(y, interleaved_y))
    return api.reshape(product, tuple(p * q for p, q in zip(xs, ys)))  # type: ignore[no-any-return]


def trace(a: NDArray, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: NDArray | None = None) -> NDArray:
    """The sum along diagonal ``offset`` of the 2-D sub-arrays on ``axis1``/``axis2``; integers sum in int64, as NumPy."""
    a = array_arg(a, "trace")
    if a.ndim < 2:
        raise ValueError("trace(): diag requires an array of at least two dimensions")
    moved = _composite.moveaxis(a, (axis1, axis2), (-2, -1))
    dt = None if dtype is None else _dtypes.as_dtype(dtype)
    if dt is None and a.dtype is _dtypes.bool:
        dt = _dtypes.int64
    return store("trace", out, LINALG["trace"](moved, offset=offset, dtype=dt))


def diagonal(a: NDArray, offset: int = 0, axis1: int = 0, axis2: int = 1) -> NDArray:
    """Diagonal ``offset`` of the 2-D sub-arrays on ``axis1``/``axis2``, as the last axis (a new array)."""
    a = array_arg(a, "diagonal")
    if a.ndim < 2:
        raise ValueError("diagonal(): diag requires an array of at least two dimensions")
    return LINALG["diagonal"](_composite.moveaxis(a, (axis1, axis2), (-2, -1)), offset=offset)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- polynomials


def polyval(p: Any, x: Any) -> NDArray:
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by Horner's rule, NumPy's ``polyval``."""
    anchor = x if isinstance(x, NDArray) else p
    if not isinstance(anchor, NDArray):
        raise TypeError("polyval(): p or x must be an nda array (convert with nda.asarray)")
    coeffs = param_array(p, anchor.device, "polyval", "p")
    xs = param_array(x, anchor.device, "polyval", "x")
    if coeffs.ndim != 1:
        raise ValueError(f"polyval(): p must be 1-D, got shape {coeffs.shape}")
    y = api.zeros_like(xs)
    for i in range(coeffs.shape[0]):
        y = api.add(_promoted_multiply(y, xs), coeffs[i])
    return y  # type: ignore[no-any-return]


def _promoted_multiply(a: NDArray, b: NDArray) -> NDArray:
    common = np_result_type(a, b)
    return api.multiply(to_dtype(a, common), to_dtype(b, common))  # type: ignore[no-any-return]


def _vander(x: NDArray, order: int) -> NDArray:
    """Columns ``x**(order-1), ..., x, 1`` (powers by repeated multiplication, as NumPy's ``vander``)."""
    ones = api.ones((x.shape[0], 1), dtype=x.dtype, device=x.device)
    if order == 1:
        return ones  # type: ignore[no-any-return]
    powers = api.cumulative_prod(api.broadcast_to(api.reshape(x, (-1, 1)), (x.shape[0], order - 1)), axis=1)
    return api.flip(api.concat([ones, powers], axis=1), axis=1)  # type: ignore[no-any-return]


def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False, w: Any = None, cov: bool | str = False) -> Any:
    """The least-squares polynomial of degree ``deg`` through ``(x, y)`` (NumPy's ``polyfit``): its
    coefficients, highest power first (a column per column of a 2-D ``y``).

    ``w`` weights the residuals; ``full=True`` also returns the residuals, rank, singular
    values and ``rcond``; ``cov=True`` (or ``"unscaled"``) the coefficients' covariance. Warns
    ``numpy.exceptions.RankWarning`` when the fit is poorly conditioned, as NumPy does (the
    rank is read on the host).
    """
    anchor = x if isinstance(x, NDArray) else y
    if not isinstance(anchor, NDArray):
        raise TypeError("polyfit(): x or y must be an nda array (convert with nda.asarray)")
    order = int(deg) + 1
    xs = param_array(x, anchor.device, "polyfit", "x")
    ys = param_array(y, anchor.device, "polyfit", "y")
    xs = to_dtype(xs, np_result_type(xs, 0.0))
    ys = to_dtype(ys, np_result_type(ys, 0.0))
    if deg < 0:
        raise ValueError("polyfit(): expected deg >= 0")
    if xs.ndim != 1:
        raise TypeError("polyfit(): expected 1D vector for x")
    if xs.size == 0:
        raise TypeError("polyfit(): expected non-empty vector for x")
    if ys.ndim < 1 or ys.ndim > 2:
        raise TypeError("polyfit(): expected 1D or 2D array for y")
    if xs.shape[0] != ys.shape[0]:
        raise TypeError("polyfit(): expected x and y to have same length")
    if rcond is None:
        rcond = xs.shape[0] * float(np.finfo(xs.dtype.numpy).eps)
    lhs = _vander(xs, order)
    rhs = ys
    if w is not None:
        wv = param_array(w, anchor.device, "polyfit", "w")
        wv = to_dtype(wv, np_result_type(wv, 0.0))
        if wv.ndim != 1:
            raise TypeError("polyfit(): expected a 1-d array for weights")
        if wv.shape[0] != ys.shape[0]:
            raise TypeError("polyfit(): expected w and y to have the same length")
        column = api.reshape(wv, (-1, 1))
        lhs = _promoted_multiply(lhs, column)
        rhs = _promoted_multiply(rhs, column if rhs.ndim == 2 else wv)
    scale = api.sqrt(api.sum(api.multiply(lhs, lhs), axis=0))
    lhs = api.divide(lhs, scale)
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = api.divide(c, scale) if c.ndim == 1 else api.divide(c, api.reshape(scale, (-1, 1)))
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=2)
    if full:
        return c, resids, rank, s, rcond
    if cov:
        base = LINALG["inv"](api.matmul(_composite.matrix_transpose(lhs), lhs))
        base = api.divide(base, LINALG["outer"](scale, scale))
        if cov == "unscaled":
            fac: Any = 1.0
        else:
            if xs.shape[0] <= order:
                raise ValueError("polyfit(): the number of data points must exceed order to scale the covariance matrix")
            fac = api.divide(resids, float(xs.shape[0] - order))
        if ys.ndim == 1:
            return c, api.multiply(base, fac)
        return c, api.multiply(api.reshape(base, base.shape + (1,)), fac)
    return c


# ----------------------------------------------------------------------------- linalg


def lstsq(a: NDArray, b: Any, rcond: float | None = None) -> tuple[NDArray, NDArray, Any, NDArray]:
    """The least-squares solution of ``a @ x = b`` (NumPy's ``linalg.lstsq``): ``(x, residuals, rank, s)``.

    The minimum-norm solution through the SVD: singular values at or below ``rcond`` times
    the largest count as zero (default ``rcond``: the dtype's eps times ``max(M, N)``).
    ``residuals`` holds the squared residual norm of each column of ``b`` when ``a`` has
    full column rank and more rows than columns, and is empty otherwise; ``rank`` (NumPy's
    int32 scalar) is read on the host; ``s`` are the singular values. Integers solve in float64.
    """
    a = array_arg(a, "lstsq")
    bv = param_array(b, a.device, "lstsq", "b")
    if a.ndim != 2:
        raise np.linalg.LinAlgError(f"lstsq(): {a.ndim}-dimensional array given. Array must be two-dimensional")
    if bv.ndim not in (1, 2):
        raise np.linalg.LinAlgError(f"lstsq(): b must be 1-D or 2-D, got {bv.ndim}-D")
    one = bv.ndim == 1
    if one:
        bv = api.reshape(bv, (-1, 1))
    m, n = a.shape
    if bv.shape[0] != m:
        raise np.linalg.LinAlgError("lstsq(): incompatible dimensions")
    dt = np_result_type(a, bv, np.float32)
    if dt.category not in ("real floating", "complex floating"):
        dt = _dtypes.float64
    real = _dtypes.float32 if dt in (_dtypes.float32, _dtypes.complex64) else _dtypes.float64
    if rcond is None:
        rcond = float(np.finfo(dt.numpy).eps) * max(n, m)
    x_a, x_b = to_dtype(a, dt), to_dtype(bv, dt)
    k = min(m, n)
    if k == 0:
        x = api.zeros((n, bv.shape[1]), dtype=dt, device=a.device)
        s = api.zeros((0,), dtype=real, device=a.device)
        rank = 0
    else:
        u, s, vh = LINALG["svd"](x_a, full_matrices=False)
        cutoff = api.multiply(api.max(s), float(rcond))
        keep = api.greater(s, cutoff)
        rank = int(api.sum(api.astype(keep, _dtypes.int64)))
        inverse = api.where(keep, api.divide(1.0, api.where(keep, s, 1.0)), 0.0)
        uh = api.conj(_composite.matrix_transpose(u)) if dt.category == "complex floating" else _composite.matrix_transpose(u)
        v = api.conj(_composite.matrix_transpose(vh)) if dt.category == "complex floating" else _composite.matrix_transpose(vh)
        projected = api.multiply(api.matmul(uh, x_b), api.reshape(to_dtype(inverse, dt), (-1, 1)))
        x = api.matmul(v, projected)
    if rank == n and m > n:
        r = api.subtract(x_b, api.matmul(x_a, x))
        r = api.abs(r) if dt.category == "complex floating" else r
        residuals = api.sum(api.multiply(r, r), axis=0)
        residuals = to_dtype(residuals, real)
    else:
        residuals = api.zeros((0,), dtype=real, device=a.device)
    if one:
        x = api.reshape(x, (-1,))
        if residuals.shape[0]:
            residuals = api.reshape(residuals, (1,))
    return x, residuals, np.int32(rank), to_dtype(s, real)  # type: ignore[return-value]  # NumPy's rank is an int32


def _vector_norm(x: NDArray, ord: Any, axes: tuple[int, ...], keepdims: bool) -> NDArray:  # noqa: A002 - NumPy's name
    if ord is None or ord == 2:
        squares = api.real(api.multiply(api.conj(x), x)) if x.dtype.category == "complex floating" else api.multiply(x, x)
        return api.sqrt(api.sum(squares, axis=axes, keepdims=keepdims))  # type: ignore[no-any-return]
    magnitude = api.abs(x)
    if ord == math.inf:
        return api.max(magnitude, axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
    if ord == -math.inf:
        return api.min(magnitude, axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
    if ord == 0:
        return api.sum(api.astype(api.not_equal(x, 0), magnitude.dtype), axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
    if ord == 1:
        return api.sum(magnitude, axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
    if isinstance(ord, str):
        raise ValueError(f"norm(): invalid norm order {ord!r} for vectors")
    total = api.sum(api.pow(magnitude, float(ord)), axis=axes, keepdims=keepdims)
    return api.pow(total, float(magnitude.dtype.numpy.type(1) / magnitude.dtype.numpy.type(ord)))  # type: ignore[no-any-return]


def norm(x: NDArray, ord: Any = None, axis: Any = None, keepdims: bool = False) -> NDArray:  # noqa: A002 - NumPy's name
    """NumPy's ``linalg.norm``: a vector norm (``axis`` an int, or a 1-D array), a matrix norm (``axis``
    a pair, or a 2-D array with ``ord`` given), or the 2-norm of the flattened array.

    ``ord``: for vectors ``None``/2, ``inf``, ``-inf``, 0, 1 and any other number; for
    matrices ``None``/"fro", "nuc", ``inf``, ``-inf``, 1, -1, 2, -2. Integers are normed in
    float64. The matrix norms go through ``linalg.matrix_norm`` (2, -2 and "nuc" through the SVD).
    """
    x = array_arg(x, "norm", "x")
    if x.dtype.category not in ("real floating", "complex floating"):
        x = to_dtype(x, _dtypes.float64)
    kd = bool(keepdims)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1):
            flat = api.reshape(x, (-1,))
            if x.dtype.category == "complex floating":
                re, im = api.real(flat), api.imag(flat)
                squared = api.add(api.matmul(re, re), api.matmul(im, im))
            else:
                squared = api.matmul(flat, flat)
            result = api.sqrt(squared)
            return api.reshape(result, (1,) * x.ndim) if kd else result  # type: ignore[no-any-return]
        if x.ndim not in (1, 2):
            raise ValueError("norm(): improper number of dimensions to norm")
        axes: Any = tuple(range(x.ndim))
    else:
        items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(normalize_axis(a, x.ndim, "norm") for a in items)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, kd)
    if len(axes) != 2:
        raise ValueError("norm(): improper number of dimensions to norm")
    row, col = axes
    if row == col:
        raise ValueError("norm(): duplicate axes given")
    if ord is not None and ord not in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf):
        raise ValueError(f"norm(): invalid norm order {ord!r} for matrices")
    moved = _composite.moveaxis(x, (row, col), (-2, -1))
    result = LINALG["matrix_norm"](moved, ord="fro" if ord is None else ord)
    if kd:
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        result = api.reshape(result, tuple(shape))
    return result  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- 2-D FFTs


def _two(name: str, doc: str) -> Any:
    transform = FFT[name]

    def fn(a: NDArray, s: Any = None, axes: Any = (-2, -1), norm: str | None = None, out: NDArray | None = None) -> NDArray:
        a = array_arg(a, f"{name[:-1]}2")
        if a.dtype.category in ("bool", "signed integer", "unsigned integer"):
            a = to_dtype(a, _dtypes.float64)  # NumPy transforms integers as float64
        if name == "irfftn" and a.dtype.category == "real floating":  # NumPy takes real input as complex
            a = to_dtype(a, _dtypes.complex64 if a.dtype is _dtypes.float32 else _dtypes.complex128)
        result = transform(
            a, s=None if s is None else tuple(s), axes=None if axes is None else tuple(axes), norm="backward" if norm is None else norm
        )
        return store(f"{name[:-1]}2", out, result)

    fn.__name__ = fn.__qualname__ = f"{name[:-1]}2"
    fn.__doc__ = doc
    return fn


fft2 = _two("fftn", "The 2-D discrete Fourier transform over ``axes`` (the last two): ``fftn`` on two axes, NumPy's ``fft.fft2``.")
ifft2 = _two("ifftn", "The inverse of :func:`fft2`: ``ifftn`` on two axes.")
rfft2 = _two("rfftn", "The 2-D transform of real input (the last axis halved): ``rfftn`` on two axes.")
irfft2 = _two("irfftn", "The inverse of :func:`rfft2`: ``irfftn`` on two axes.")
