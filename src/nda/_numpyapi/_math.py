"""NumPy's element-wise and numerical functions, written once over nda's ops.

NumPy's spellings of catalog ops are the ops themselves (``absolute`` is ``abs``, ``power``
is ``pow``, ``arctan2`` is ``atan2``, ...). ``deg2rad``/``rad2deg`` multiply by NumPy's
constant in the array's precision (bit for bit NumPy's values); ``cbrt`` is ``pow(|x|, 1/3)``
refined by one Newton step (within an ulp or so of NumPy's libm value, not bit for bit);
``angle`` is ``atan2``; ``nan_to_num`` is ``where``. ``gradient`` takes second-order central
differences of slices (its coefficients, which depend only on the spacing, computed on the
host as NumPy computes them); ``interp`` finds each point's interval with ``searchsorted``
and interpolates as NumPy's C loop does (with its NaN fallbacks); ``convolve`` and
``correlate`` gather sliding windows (``take``) and ``matmul`` them with the kernel, in
chunks of lags that bound the memory.

Layer: arrays and front end, NumPy's names (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtypes
from .._array import NDArray
from ..ops.spec import normalize_axis
from ._common import api, array_arg, axes_arg, float_dtype, np_result_type, param_array, store, to_dtype

__all__ = [
    "absolute",
    "power",
    "arctan2",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "conjugate",
    "around",
    "nan_to_num",
    "angle",
    "cbrt",
    "deg2rad",
    "rad2deg",
    "radians",
    "degrees",
    "gradient",
    "interp",
    "convolve",
    "correlate",
]

# NumPy's names of catalog ops: the same functions (and C fast paths).
absolute = api.abs
power = api.pow
arctan2 = api.atan2
arcsin = api.asin
arccos = api.acos
arctan = api.atan
arcsinh = api.asinh
arccosh = api.acosh
arctanh = api.atanh
conjugate = api.conj

#: Elements per chunk of the sliding windows ``convolve``/``correlate`` gather.
_WINDOW_CHUNK = 1 << 22


def around(a: NDArray, decimals: int = 0, out: NDArray | None = None) -> NDArray:
    """Round to ``decimals`` places, halves to even (NumPy's ``around``/``round``; ``x.round(decimals)``)."""
    return store("around", out, api.round_decimals(array_arg(a, "around"), decimals))


def _in_dtype(value: Any, dtype: Any) -> Any:
    """``value`` as NumPy casts it into ``dtype`` (out-of-range floats become infinities), a Python scalar."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(value).astype(dtype.numpy).item()


def _replace(part: NDArray, nan: Any, posinf: Any, neginf: Any) -> NDArray:
    info = np.finfo(part.dtype.numpy)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    out = api.where(api.isnan(part), _in_dtype(nan, part.dtype), part)
    infinite = api.isinf(part)
    out = api.where(api.logical_and(infinite, api.greater(part, 0)), _in_dtype(big, part.dtype), out)
    return api.where(api.logical_and(infinite, api.less(part, 0)), _in_dtype(small, part.dtype), out)  # type: ignore[no-any-return]


def nan_to_num(x: NDArray, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> NDArray:
    """NaN replaced by ``nan`` and infinities by ``posinf``/``neginf`` (default: the dtype's largest and
    smallest finite values); complex values part by part. ``copy=False`` writes into ``x`` (in
    place, ordered by the engine) and returns it. Integers and bools are returned unchanged (a copy)."""
    x = array_arg(x, "nan_to_num", "x")
    if x.dtype.category == "real floating":
        result = _replace(x, nan, posinf, neginf)
    elif x.dtype.category == "complex floating":
        re = _replace(api.real(x), nan, posinf, neginf)
        im = _replace(api.imag(x), nan, posinf, neginf)
        result = api.add(to_dtype(re, x.dtype), api.multiply(to_dtype(im, x.dtype), 1j))
    else:
        return x if not copy else api.copy(x)  # type: ignore[no-any-return]
    if not copy:
        x[...] = result
        return x
    return result


def angle(z: NDArray, deg: bool = False) -> NDArray:
    """The counterclockwise angle from the positive real axis: ``atan2(imag, real)`` (0 or pi for real input), in degrees with ``deg``."""
    z = array_arg(z, "angle", "z")
    if z.dtype.category == "complex floating":
        a = api.atan2(api.imag(z), api.real(z))
    else:
        a = api.atan2(0, z if z.dtype.category == "real floating" else to_dtype(z, _dtypes.float64))
    return api.multiply(a, 180 / np.pi) if deg else a  # type: ignore[no-any-return]


def cbrt(x: NDArray) -> NDArray:
    """The real cube root, element-wise (negative values have negative roots).

    ``sign(x) * |x| ** (1/3)`` refined by one Newton step ``(2y + x / y**2) / 3``: within about
    an ulp of NumPy's ``cbrt`` (not bit for bit); zeros, infinities and NaN pass through.
    Integers and bools compute in float64, as nda's other floating functions.
    """
    x = array_arg(x, "cbrt", "x")
    if x.dtype.category == "complex floating":
        raise TypeError("cbrt(): complex input is not supported (NumPy's cbrt is real-valued)")
    f = x if x.dtype.category == "real floating" else to_dtype(x, _dtypes.float64)
    magnitude = api.abs(f)
    special = api.logical_not(api.logical_and(api.isfinite(f), api.not_equal(f, 0)))  # 0, inf, NaN: themselves
    safe = api.where(special, 1.0, magnitude)  # no 0/0 or inf/inf (and no warning) where they are taken as they are
    y = api.pow(safe, 1.0 / 3.0)
    refined = api.divide(api.add(api.multiply(y, 2.0), api.divide(safe, api.multiply(y, y))), 3.0)
    root = api.where(special, magnitude, refined)
    return api.copysign(root, f)  # type: ignore[no-any-return]


def _scaled(op: str, x: NDArray, numerator: float, denominator: float) -> NDArray:
    x = array_arg(x, op, "x")
    if x.dtype.category == "complex floating":
        raise TypeError(f"{op}(): complex input is not supported")
    f = x if x.dtype.category == "real floating" else to_dtype(x, _dtypes.float64)
    t = f.dtype.numpy.type
    return api.multiply(f, float(t(numerator) / t(denominator)))  # type: ignore[no-any-return]  # NumPy's constant, in the array's precision


def deg2rad(x: NDArray) -> NDArray:
    """Degrees to radians: ``x * (pi / 180)``, the constant in the array's precision (NumPy's values)."""
    return _scaled("deg2rad", x, np.pi, 180.0)


def rad2deg(x: NDArray) -> NDArray:
    """Radians to degrees: ``x * (180 / pi)``, the constant in the array's precision (NumPy's values)."""
    return _scaled("rad2deg", x, 180.0, np.pi)


def radians(x: NDArray) -> NDArray:
    """Degrees to radians (:func:`deg2rad`)."""
    return _scaled("radians", x, np.pi, 180.0)


def degrees(x: NDArray) -> NDArray:
    """Radians to degrees (:func:`rad2deg`)."""
    return _scaled("degrees", x, 180.0, np.pi)


# ----------------------------------------------------------------------------- gradient


def _spacing(value: Any, n: int, op: str) -> Any:
    """One axis's spacing: a scalar, or the host differences of 1-D coordinates (a scalar when uniform)."""
    if isinstance(value, NDArray):
        value = value._host() if value.ndim else value.item()
    arr = np.asanyarray(value)
    if arr.ndim == 0:
        return value if isinstance(value, (int, float)) else arr[()]
    if arr.ndim != 1:
        raise ValueError(f"{op}(): distances must be either scalars or 1d")
    if arr.shape[0] != n:
        raise ValueError(f"{op}(): when 1d, distances must match the length of the corresponding dimension")
    if np.issubdtype(arr.dtype, np.integer):
        arr = arr.astype(np.float64)
    diffs = np.diff(arr)
    if diffs.size and (diffs == diffs[0]).all():
        return diffs[0]
    return diffs


def _take(f: NDArray, axis: int, start: int | None, stop: int | None) -> NDArray:
    return f[(slice(None),) * axis + (slice(start, stop),)]


def _combine(terms: list[tuple[Any, NDArray]], axis: int, ndim: int, otype: Any) -> NDArray:
    """``sum(c * t)`` over ``terms``: ``c`` a host scalar or a host array along ``axis``; each product in
    NumPy's dtype (a NumPy scalar or array coefficient counts, a Python float is weak), cast to ``otype``."""
    total = None
    for c, t in terms:
        if isinstance(c, np.ndarray) and c.ndim:
            shape = [1] * ndim
            shape[axis] = c.shape[0]
            factor: Any = api.asarray(c.reshape(shape), device=t.device)
            ct = np_result_type(t, factor)
        elif isinstance(c, (np.ndarray, np.generic)):
            ct = np_result_type(t, np.dtype(c.dtype))
            factor = c.item()
        else:
            ct = np_result_type(t, c)
            factor = c
        term = api.multiply(to_dtype(t, ct), factor)
        total = term if total is None else api.add(total, term)
    return to_dtype(total, otype)  # type: ignore[arg-type]


def gradient(f: NDArray, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """NumPy's ``gradient``: second-order central differences inside, one-sided ones (first or
    second order, ``edge_order``) at the boundaries; one array per axis (a tuple for several).

    ``varargs``: nothing (unit spacing), one scalar for every axis, or one scalar or 1-D
    coordinate array per axis (coordinates are read on the host: the coefficients of
    unevenly spaced samples depend on them only). Integers differentiate in float64.
    """
    f = array_arg(f, "gradient", "f")
    axes = axes_arg(axis, f.ndim, "gradient") if axis is not None else tuple(range(f.ndim))
    if axis is not None and not isinstance(axis, (tuple, list)):
        axes = (normalize_axis(axis, f.ndim, "gradient"),)
    n = len(axes)
    if not varargs:
        spacings: list[Any] = [1.0] * n
    elif len(varargs) == 1 and np.ndim(varargs[0] if not isinstance(varargs[0], NDArray) else varargs[0]._host()) == 0:
        spacings = [_spacing(varargs[0], 0, "gradient")] * n
    elif len(varargs) == n:
        spacings = [_spacing(v, f.shape[a], "gradient") for v, a in zip(varargs, axes)]
    else:
        raise TypeError("gradient(): invalid number of arguments")
    if edge_order not in (1, 2):
        raise ValueError("gradient(): 'edge_order' greater than 2 not supported")
    otype = float_dtype(f) if f.dtype.category != "complex floating" else f.dtype
    if f.dtype.category not in ("real floating", "complex floating"):
        f = to_dtype(f, _dtypes.float64)
    results = []
    for ax, dx in zip(axes, spacings):
        length = f.shape[ax]
        if length < edge_order + 1:
            raise ValueError(
                "gradient(): shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements are required."
            )
        uniform = np.ndim(dx) == 0
        nd = f.ndim
        head, tail = _take(f, ax, None, -2), _take(f, ax, 2, None)
        if uniform:
            interior = to_dtype(api.divide(to_dtype(api.subtract(tail, head), np_result_type(f, dx)), 2.0 * dx), otype)
        else:
            dx1, dx2 = dx[:-1], dx[1:]
            a = -(dx2) / (dx1 * (dx1 + dx2))
            b = (dx2 - dx1) / (dx1 * dx2)
            c = dx1 / (dx2 * (dx1 + dx2))
            interior = _combine([(a, head), (b, _take(f, ax, 1, -1)), (c, tail)], ax, nd, otype)
        first, second, third = (_take(f, ax, i, i + 1) for i in range(3)) if length > 2 else (_take(f, ax, 0, 1), _take(f, ax, 1, 2), None)
        last, before, third_last = _take(f, ax, -1, None), _take(f, ax, -2, -1), _take(f, ax, -3, -2) if length > 2 else None
        if edge_order == 1:
            d0 = dx if uniform else dx[0]
            dn = dx if uniform else dx[-1]
            start = to_dtype(api.divide(to_dtype(api.subtract(second, first), np_result_type(f, d0)), d0), otype)
            end = to_dtype(api.divide(to_dtype(api.subtract(last, before), np_result_type(f, dn)), dn), otype)
        else:
            if uniform:
                a, b, c = -1.5 / dx, 2.0 / dx, -0.5 / dx
            else:
                d1, d2 = dx[0], dx[1]
                a = -(2.0 * d1 + d2) / (d1 * (d1 + d2))
                b = (d1 + d2) / (d1 * d2)
                c = -d1 / (d2 * (d1 + d2))
            start = _combine([(a, first), (b, second), (c, third)], ax, nd, otype)  # type: ignore[list-item]
            if uniform:
                a, b, c = 0.5 / dx, -2.0 / dx, 1.5 / dx
            else:
                d1, d2 = dx[-2], dx[-1]
                a = d2 / (d1 * (d1 + d2))
                b = -(d2 + d1) / (d1 * d2)
                c = (2.0 * d2 + d1) / (d2 * (d1 + d2))
            end = _combine([(a, third_last), (b, before), (c, last)], ax, nd, otype)  # type: ignore[list-item]
        results.append(api.concat([start, interior, end], axis=ax))
    return results[0] if n == 1 else tuple(results)


# ----------------------------------------------------------------------------- interp


def _interp_real(points: NDArray, xp: NDArray, fp: NDArray, left: Any, right: Any) -> NDArray:
    x = api.reshape(points, (-1,))
    n = xp.shape[0]
    if n == 1:
        j = api.zeros(x.shape, dtype=_dtypes.int64, device=x.device)
        value = api.broadcast_to(fp[0], x.shape)
        inner = value
    else:
        raw = api.subtract(api.searchsorted(xp, x, side="right"), 1)
        j = api.clip(raw, 0, n - 2)
        xj, xj1 = api.take(xp, j), api.take(xp, api.add(j, 1))
        fj, fj1 = api.take(fp, j), api.take(fp, api.add(j, 1))
        slope = api.divide(api.subtract(fj1, fj), api.subtract(xj1, xj))
        result = api.add(api.multiply(slope, api.subtract(x, xj)), fj)
        retry = api.add(api.multiply(slope, api.subtract(x, xj1)), fj1)
        retry = api.where(api.logical_and(api.isnan(retry), api.equal(fj, fj1)), fj, retry)
        result = api.where(api.isnan(result), retry, result)
        result = api.where(api.equal(x, xj), fj, result)
        inner = api.where(api.equal(raw, n - 1), fp[n - 1], result)
    low = fp[0] if left is None else left
    high = fp[n - 1] if right is None else right
    out = api.where(api.less(x, xp[0]), low, inner)
    out = api.where(api.greater(x, xp[n - 1]), high, out)
    return api.reshape(api.where(api.isnan(x), float("nan"), out), points.shape)  # type: ignore[no-any-return]


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> NDArray:
    """One-dimensional piecewise-linear interpolation (NumPy's ``interp``): the values at ``x`` of the
    function through ``(xp, fp)`` (``xp`` increasing), ``left``/``right`` outside (``fp[0]``/``fp[-1]``
    by default), ``period`` for periodic ``xp``. float64 (complex128 for complex ``fp``).

    With ``period``, sample points that coincide after the wrap keep their given order (a
    stable sort); NumPy's unstable ``argsort`` may order them otherwise there."""
    anchor = next((v for v in (x, xp, fp) if isinstance(v, NDArray)), None)
    if anchor is None:
        raise TypeError("interp(): at least one of x, xp and fp must be an nda array (convert with nda.asarray)")
    device = anchor.device
    xv, xpv, fpv = (param_array(v, device, "interp", name) for v, name in ((x, "x"), (xp, "xp"), (fp, "fp")))
    if xv.dtype.category == "complex floating" or xpv.dtype.category == "complex floating":
        raise TypeError("interp(): x and xp must be real")
    if xpv.ndim != 1 or fpv.ndim != 1:
        raise ValueError("interp(): xp and fp must be 1-D sequences")
    if xpv.shape[0] != fpv.shape[0]:
        raise ValueError("interp(): fp and xp are not of the same length")
    if xpv.shape[0] == 0:
        raise ValueError("interp(): array of sample points is empty")
    xv, xpv = to_dtype(xv, _dtypes.float64), to_dtype(xpv, _dtypes.float64)
    complex_fp = fpv.dtype.category == "complex floating"
    fpv = to_dtype(fpv, _dtypes.complex128 if complex_fp else _dtypes.float64)
    if period is not None:
        if period == 0:
            raise ValueError("interp(): period must be a non-zero value")
        period = abs(float(period))
        left = right = None
        xv, xpv = api.remainder(xv, period), api.remainder(xpv, period)
        order = api.argsort(xpv, stable=True)
        xpv, fpv = api.take(xpv, order), api.take(fpv, order)
        xpv = api.concat([api.subtract(xpv[-1:], period), xpv, api.add(xpv[0:1], period)])
        fpv = api.concat([fpv[-1:], fpv, fpv[0:1]])
    if not complex_fp:
        return _interp_real(xv, xpv, fpv, left, right)
    parts = []
    for part, edge_l, edge_r in ((api.real, _part(left, np.real), _part(right, np.real)), (api.imag, _part(left, np.imag), _part(right, np.imag))):
        parts.append(_interp_real(xv, xpv, part(fpv), edge_l, edge_r))
    return api.add(to_dtype(parts[0], _dtypes.complex128), api.multiply(to_dtype(parts[1], _dtypes.complex128), 1j))  # type: ignore[no-any-return]


def _part(value: Any, take: Any) -> Any:
    return None if value is None else float(take(complex(value)))


# ----------------------------------------------------------------------------- convolve, correlate


def _full(a: NDArray, w: NDArray) -> NDArray:
    """``out[k] = sum_n a[k + n - (len(w) - 1)] * w[n]`` for every lag ``k`` (zeros outside ``a``)."""
    na, nw = a.shape[0], w.shape[0]
    length = na + nw - 1
    zeros = api.zeros((nw - 1,), dtype=a.dtype, device=a.device)
    padded = api.concat([zeros, a, zeros]) if nw > 1 else a
    rows = max(1, _WINDOW_CHUNK // nw)
    pieces = []
    for start in range(0, length, rows):
        stop = min(length, start + rows)
        index = np.arange(start, stop, dtype=np.int64)[:, None] + np.arange(nw, dtype=np.int64)[None, :]
        windows = api.take(padded, api.asarray(index.reshape(-1), device=a.device))
        pieces.append(api.matmul(api.reshape(windows, (stop - start, nw)), w))
    return pieces[0] if len(pieces) == 1 else api.concat(pieces)  # type: ignore[no-any-return]


def _mode_slice(full: NDArray, na: int, nv: int, mode: str, op: str) -> NDArray:
    short, long = min(na, nv), max(na, nv)
    if mode == "full":
        return full
    if mode == "valid":
        return full[short - 1 : long]
    if mode == "same":
        start = (short - 1) // 2 if na >= nv else short // 2
        return full[start : start + long]
    raise ValueError(f"{op}(): mode must be one of 'valid', 'same', 'full', got {mode!r}")


def _operands(a: Any, v: Any, op: str) -> tuple[NDArray, NDArray]:
    anchor = a if isinstance(a, NDArray) else v
    if not isinstance(anchor, NDArray):
        raise TypeError(f"{op}(): a or v must be an nda array (convert with nda.asarray)")
    x = param_array(a, anchor.device, op, "a")
    y = param_array(v, anchor.device, op, "v")
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"{op}(): object too deep for desired array (a and v must be 1-D)")
    if x.shape[0] == 0:
        raise ValueError(f"{op}(): a cannot be empty")
    if y.shape[0] == 0:
        raise ValueError(f"{op}(): v cannot be empty")
    common = np_result_type(x, y)
    return to_dtype(x, common), to_dtype(y, common)


def correlate(a: Any, v: Any, mode: str = "valid") -> NDArray:
    """Cross-correlation of two 1-D sequences, NumPy's ``correlate``: ``c[k] = sum_n a[n+k] * conj(v[n])``;
    ``mode`` "valid" (default), "same" or "full" as in NumPy. Windows gathered and ``matmul``\\ ed on the device."""
    x, y = _operands(a, v, "correlate")
    w = api.conj(y) if y.dtype.category == "complex floating" else y
    return _mode_slice(_full(x, w), x.shape[0], y.shape[0], mode, "correlate")


def convolve(a: Any, v: Any, mode: str = "full") -> NDArray:
    """Discrete linear convolution of two 1-D sequences, NumPy's ``convolve``; ``mode`` "full" (default), "same" or "valid"."""
    x, y = _operands(a, v, "convolve")
    if y.shape[0] > x.shape[0]:
        x, y = y, x
    return _mode_slice(_full(x, api.flip(y)), x.shape[0], y.shape[0], mode, "convolve")
