"""NumPy's reductions and order statistics, written once over nda's ops.

``amin``/``amax``/``ptp`` are ``min``/``max`` with NumPy's ``initial``, ``where`` and
``out``; ``cumsum``/``cumprod`` the Array API's cumulative ops with NumPy's flattening
``axis=None``; the ``nan*`` functions mask NaN with ``where`` first. ``median``,
``quantile`` and ``percentile`` sort along the reduced axes (``sort``), gather the order
statistics each method needs (``take``) and interpolate between them as NumPy does: the
positions depend only on the length and on ``q`` (read on the host), so the data never
leaves the device, and the values, dtypes and NaN rules are NumPy's (a slice holding a NaN
gives NaN); ``nanquantile``/``nanpercentile`` gather, per slice, the positions for its count
of numbers (NaN sorts last). ``average`` is NumPy's weighted mean, with its result dtype.

Layer: arrays and front end, NumPy's names (README, "Architecture").
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import _dtypes
from .._array import NDArray
from ._common import api, array_arg, axes_arg, float_dtype, keep_reduced, move_to_end, np_result_type, param_array, store, to_dtype

__all__ = [
    "amax",
    "amin",
    "ptp",
    "cumsum",
    "cumprod",
    "median",
    "quantile",
    "percentile",
    "nanquantile",
    "nanpercentile",
    "average",
    "nansum",
    "nanprod",
    "nanmean",
    "nanmax",
    "nanmin",
    "nanvar",
    "nanstd",
]

_NoValue: Any = getattr(np, "_NoValue", None)


# ----------------------------------------------------------------------------- extrema


def _extremum(op: str, a: NDArray, axis: Any, out: Any, keepdims: bool, initial: Any, where: Any) -> NDArray:
    a = array_arg(a, op)
    reduce, pairwise = (api.max, api.maximum) if op == "amax" else (api.min, api.minimum)
    x = a
    boolean = a.dtype is _dtypes.bool
    if boolean:
        x = api.astype(a, _dtypes.uint8)
    if initial is not _NoValue:
        initial = initial.item() if isinstance(initial, NDArray) else initial
        if isinstance(initial, np.generic):
            initial = initial.item()
    if where is not True and where is not _NoValue:
        if initial is _NoValue:
            name = "maximum" if op == "amax" else "minimum"
            raise ValueError(f"{op}(): reduction operation '{name}' does not have an identity, so to use a where mask one has to specify 'initial'")
        mask = param_array(where, a.device, op, "where", _dtypes.bool)
        x = api.where(mask, x, api.asarray(initial, dtype=x.dtype, device=a.device))
    axes = axes_arg(axis, a.ndim, op)
    if initial is not _NoValue and any(a.shape[i] == 0 for i in axes):
        shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape)) if keepdims else tuple(n for i, n in enumerate(x.shape) if i not in axes)
        result = api.full(shape, initial, dtype=x.dtype, device=a.device)
    else:
        result = reduce(x, axis=axes, keepdims=bool(keepdims))
        if initial is not _NoValue:
            result = pairwise(result, api.asarray(initial, dtype=x.dtype, device=a.device))
    if boolean:
        result = api.astype(result, _dtypes.bool)
    return store(op, out, result)


def amax(a: NDArray, axis: Any = None, out: NDArray | None = None, keepdims: bool = False, initial: Any = _NoValue, where: Any = True) -> NDArray:
    """The maximum along ``axis`` (NumPy's ``amax``/``max``): ``initial`` is a floor, ``where`` a mask (needs ``initial``); NaN propagates."""
    return _extremum("amax", a, axis, out, keepdims, initial, where)


def amin(a: NDArray, axis: Any = None, out: NDArray | None = None, keepdims: bool = False, initial: Any = _NoValue, where: Any = True) -> NDArray:
    """The minimum along ``axis`` (NumPy's ``amin``/``min``): ``initial`` is a ceiling, ``where`` a mask (needs ``initial``); NaN propagates."""
    return _extremum("amin", a, axis, out, keepdims, initial, where)


def ptp(a: NDArray, axis: Any = None, out: NDArray | None = None, keepdims: bool = False) -> NDArray:
    """Range of values (maximum - minimum) along ``axis`` ("peak to peak"), in ``a``'s dtype."""
    a = array_arg(a, "ptp")
    if a.dtype is _dtypes.bool:
        raise TypeError("ptp(): a bool array has no difference (NumPy's boolean subtract is refused too)")
    axes = axes_arg(axis, a.ndim, "ptp")
    result = api.subtract(api.max(a, axis=axes, keepdims=bool(keepdims)), api.min(a, axis=axes, keepdims=bool(keepdims)))
    return store("ptp", out, result)


# ----------------------------------------------------------------------------- scans


def _scan(op: str, fn: Any, a: NDArray, axis: Any, dtype: Any, out: Any) -> NDArray:
    a = array_arg(a, op)
    if axis is None:
        a, axis = api.reshape(a, (-1,)), 0
    if dtype is None and a.dtype is _dtypes.bool:
        dtype = _dtypes.int64  # NumPy counts bools in its default integer
    return store(op, out, fn(a, axis=axis, dtype=None if dtype is None else _dtypes.as_dtype(dtype)))


def cumsum(a: NDArray, axis: int | None = None, dtype: Any = None, out: NDArray | None = None) -> NDArray:
    """Cumulative sum along ``axis`` (of the flattened array for ``axis=None``, NumPy's default).

    Small integers accumulate in int64/uint64 and bools in int64, as in NumPy;
    ``nda.cumulative_sum`` is the Array API's form.
    """
    return _scan("cumsum", api.cumulative_sum, a, axis, dtype, out)


def cumprod(a: NDArray, axis: int | None = None, dtype: Any = None, out: NDArray | None = None) -> NDArray:
    """Cumulative product along ``axis`` (of the flattened array for ``axis=None``); dtypes as :func:`cumsum`."""
    return _scan("cumprod", api.cumulative_prod, a, axis, dtype, out)


# ----------------------------------------------------------------------------- order statistics

_CONTINUOUS = {  # H&F's alpha, beta: virtual index n*q + alpha + q*(1 - alpha - beta) - 1
    "interpolated_inverted_cdf": (0.0, 1.0),
    "hazen": (0.5, 0.5),
    "weibull": (0.0, 0.0),
    "median_unbiased": (1 / 3.0, 1 / 3.0),
    "normal_unbiased": (3 / 8.0, 3 / 8.0),
}
_METHODS = (
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "linear",
    "median_unbiased",
    "normal_unbiased",
    "lower",
    "higher",
    "midpoint",
    "nearest",
)


def _boundary(index: np.ndarray, take_previous: Any) -> np.ndarray:
    previous = np.floor(index)
    chosen = np.where(take_previous(index - previous, index), previous, previous + 1).astype(np.int64)
    return np.maximum(chosen, 0)


def _positions(n: int, q: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Where each quantile sits in the sorted data: ``(index, None, None)`` for a method that takes
    one order statistic (int64 positions), or ``(previous, next, gamma)`` for one that interpolates."""
    if method == "inverted_cdf":
        return _boundary(n * q - 1, lambda g, i: g == 0), None, None
    if method == "closest_observation":
        return _boundary(n * q - 1 - 0.5, lambda g, i: (g == 0) & (np.floor(i) % 2 == 1)), None, None
    if method == "lower":
        return np.floor((n - 1) * q).astype(np.int64), None, None
    if method == "higher":
        return np.ceil((n - 1) * q).astype(np.int64), None, None
    if method == "nearest":
        return np.around((n - 1) * q).astype(np.int64), None, None
    if method == "linear":
        virtual = np.asarray((n - 1) * q)
        if virtual.dtype.kind in "iu":  # integer quantiles (0 or 1 given as ints): the order statistics themselves
            return virtual.astype(np.int64), None, None
    elif method == "averaged_inverted_cdf":
        virtual = np.asarray(n * q - 1)
    elif method == "midpoint":
        virtual = np.asarray(0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q)))
    else:
        alpha, beta = _CONTINUOUS[method]
        virtual = np.asarray(n * q + (alpha + q * (1 - alpha - beta)) - 1)
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n - 1
    previous[above] = -1
    following[above] = -1
    below = virtual < 0
    previous[below] = 0
    following[below] = 0
    gamma = np.asarray(virtual - previous)
    if method == "averaged_inverted_cdf":
        gamma = np.where(gamma == 0, 0.5, 1.0)
    elif method == "midpoint":
        gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
    gamma = np.asarray(gamma, dtype=virtual.dtype)
    last = n - 1
    return (np.where(previous < 0, last, previous).astype(np.int64), np.where(following < 0, last, following).astype(np.int64), gamma)


def _order_statistics(op: str, a: NDArray, q: Any, axis: Any, out: Any, method: str, keepdims: bool, weak: bool) -> NDArray:
    """The quantiles ``q`` (host values in [0, 1]) of ``a`` along ``axis``: shape ``q.shape + reduced shape``."""
    if method not in _METHODS:
        raise ValueError(f"{op}(): {method!r} is not a valid method; use one of {', '.join(_METHODS)}")
    if a.dtype.category == "complex floating":
        raise TypeError(f"{op}(): a must be an array of real numbers, got {a.dtype.name}")
    axes = axes_arg(axis, a.ndim, op)
    x = move_to_end(a, axes)
    n = x.shape[-1]
    lead = x.shape[:-1]
    if n == 0:
        raise IndexError(f"{op}(): the array has no elements along axis {axis} (index -1 is out of bounds for axis 0 with size 0)")
    first, second, gamma = _positions(n, q.reshape(-1), method)
    if second is not None and a.dtype is _dtypes.bool:
        raise TypeError(f"{op}(): interpolating between bools is not defined (NumPy's boolean subtract is refused); cast to a number first")
    s = api.sort(x, axis=-1, stable=False)
    device = a.device
    if second is None:
        result = api.take(s, api.asarray(first, device=device), axis=-1)
    else:
        lo = api.take(s, api.asarray(first, device=device), axis=-1)
        hi = api.take(s, api.asarray(second, device=device), axis=-1)
        diff = api.subtract(hi, lo)  # in a's dtype, as NumPy's lerp (integers may wrap there too)
        if weak:
            t: Any = float(gamma.reshape(()))
            ct = float_dtype(a)
        else:
            t = gamma
            ct = (
                np_result_type(a, np.dtype(gamma.dtype))
                if a.dtype.category == "real floating"
                else np_result_type(_dtypes.float64, np.dtype(gamma.dtype))
            )
        lo, hi, diff = to_dtype(lo, ct), to_dtype(hi, ct), to_dtype(diff, ct)
        if weak:
            result = api.subtract(hi, api.multiply(diff, 1.0 - t)) if t >= 0.5 else api.add(lo, api.multiply(diff, t))
        else:
            tt = api.asarray(t.astype(ct.numpy), device=device)
            below = api.add(lo, api.multiply(diff, tt))
            above = api.subtract(hi, api.multiply(diff, api.subtract(1, tt)))
            result = api.where(api.asarray(t >= 0.5, device=device), above, below)
    if a.dtype.category == "real floating":  # a slice holding a NaN sorts it last and gives NaN
        nan = api.isnan(s[..., -1:])
        result = api.where(nan, api.asarray(float("nan"), dtype=result.dtype, device=device), result)
    # (..., len(q)) -> q.shape + lead
    result = api.permute_dims(result, (result.ndim - 1,) + tuple(range(result.ndim - 1)))
    result = api.reshape(result, q.shape + lead)
    if keepdims:
        result = keep_reduced(result, a.ndim, axes, extra=q.ndim)
    return store(op, out, result)


def _nan_order_statistics(op: str, a: NDArray, q: np.ndarray, axis: Any, out: Any, method: str, keepdims: bool, weak: bool) -> NDArray:
    """:func:`_order_statistics` ignoring NaN: each slice's quantiles are those of its numbers.

    Sorting puts NaN last, so a slice holding ``m`` numbers has them first. The positions (and
    interpolation weights) each method needs for ``m`` numbers are :func:`_positions`' for a
    slice of length ``m``; they are computed on the host for every ``m`` from 0 to the slice
    length at once (a table, no data read) and gathered per slice on the device by its count
    of numbers, so the data never leaves the device and each slice gets exactly what
    ``quantile`` gives for its numbers alone (NumPy's ``nanquantile``). A slice of NaN only
    gives NaN (NumPy also warns "All-NaN slice encountered"; nda does not read the data to).
    """
    if a.dtype.category != "real floating":  # nothing to ignore: NumPy's nanquantile is quantile there
        return _order_statistics(op, a, q, axis, out, method, keepdims, weak)
    if method not in _METHODS:
        raise ValueError(f"{op}(): {method!r} is not a valid method; use one of {', '.join(_METHODS)}")
    axes = axes_arg(axis, a.ndim, op)
    x = move_to_end(a, axes)
    n = x.shape[-1]
    lead = x.shape[:-1]
    if n == 0:
        raise IndexError(f"{op}(): the array has no elements along axis {axis} (index -1 is out of bounds for axis 0 with size 0)")
    qs = q.reshape(-1)
    first, second, gamma = _positions(np.arange(n + 1).reshape(-1, 1), qs, method)  # one row per count of numbers
    device = a.device
    s = api.sort(x, axis=-1, stable=False)
    counts = api.reshape(api.sum(api.logical_not(api.isnan(x)), axis=-1), (-1,))

    def per_slice(table: np.ndarray) -> NDArray:  # the table's row for each slice's count: lead + (len(q),)
        table = np.broadcast_to(table, (n + 1, qs.size))
        rows = api.take(api.asarray(np.ascontiguousarray(table), device=device), counts, axis=0)
        return api.reshape(rows, lead + (qs.size,))

    def gather(positions: np.ndarray) -> NDArray:
        return api.take_along_axis(s, per_slice(np.clip(positions, 0, n - 1)), axis=-1)

    if second is None:
        result = gather(first)
    else:
        lo, hi = gather(first), gather(second)
        diff = api.subtract(hi, lo)
        ct = float_dtype(a) if weak else np_result_type(a, np.dtype(gamma.dtype))
        lo, hi, diff = to_dtype(lo, ct), to_dtype(hi, ct), to_dtype(diff, ct)
        gamma = np.broadcast_to(gamma, (n + 1, qs.size))
        t = per_slice(gamma.astype(ct.numpy))
        # as quantile's: a Python float q is a weak scalar (1 - t rounded once, to a's dtype)
        rest = per_slice((1.0 - gamma).astype(ct.numpy)) if weak else api.subtract(1, t)
        below = api.add(lo, api.multiply(diff, t))
        above = api.subtract(hi, api.multiply(diff, rest))
        result = api.where(per_slice(gamma >= 0.5), above, below)
    empty = api.reshape(counts == 0, lead + (1,))  # a slice of NaN only
    result = api.where(empty, api.asarray(float("nan"), dtype=result.dtype, device=device), result)
    result = api.permute_dims(result, (result.ndim - 1,) + tuple(range(result.ndim - 1)))
    result = api.reshape(result, q.shape + lead)
    if keepdims:
        result = keep_reduced(result, a.ndim, axes, extra=q.ndim)
    return store(op, out, result)


def _q_values(q: Any, op: str, scale: float) -> tuple[np.ndarray, bool]:
    weak = type(q) in (int, float)
    host = q._host() if isinstance(q, NDArray) else np.asanyarray(q)
    if host.dtype.kind not in "biuf":
        raise TypeError(f"{op}(): q must hold real numbers, got {host.dtype}")
    if scale != 1.0:
        host = np.true_divide(host, scale)
    if host.ndim > 2:
        raise ValueError(f"{op}(): q must be a scalar or 1-D (or 2-D), got {host.ndim}-D")
    if host.size and not (np.all(host >= 0) and np.all(host <= 1)):
        bound = "[0, 100]" if scale != 1.0 else "[0, 1]"
        raise ValueError(f"{op}(): {'percentiles' if scale != 1.0 else 'quantiles'} must be in the range {bound}")
    return np.asarray(host), weak


def _method_arg(op: str, method: str, interpolation: Any) -> str:
    if interpolation is not None:
        warnings.warn(f"{op}(): the interpolation= argument is deprecated; use method= (as in NumPy)", DeprecationWarning, stacklevel=3)
        return str(interpolation)
    return method


def _quantiles(
    name: str, a: Any, q: Any, axis: Any, out: Any, method: str, keepdims: bool, weights: Any, interpolation: Any, scale: float, nan: bool
) -> NDArray:
    """The body of :func:`quantile`, :func:`percentile` and their NaN-ignoring forms (``q`` in
    [0, ``scale``]): the arguments checked, ``q`` read on the host, the order statistics."""
    a = array_arg(a, name)
    if weights is not None:
        raise TypeError(f"{name}(): weights= is not supported by nda (np.{name}(x, q, weights=w) computes it on a host copy)")
    host, weak = _q_values(q, name, scale)
    order = _nan_order_statistics if nan else _order_statistics
    return order(name, a, host, axis, out, _method_arg(name, method, interpolation), keepdims, weak)


def quantile(
    a: NDArray,
    q: Any,
    axis: Any = None,
    out: NDArray | None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
    interpolation: Any = None,
) -> NDArray:
    """The ``q``-th quantiles of ``a`` along ``axis`` (NumPy's ``quantile``: its 13 methods, values and dtypes).

    ``q`` (a number or a sequence in [0, 1]) is read on the host; the result has shape
    ``q.shape + reduced shape``. A Python float ``q`` keeps ``a``'s float dtype (float32
    stays float32); an array ``q`` computes in float64, as NumPy does. Integer ``a`` gives
    float64, except for the methods that pick an order statistic (``lower``, ``higher``,
    ``nearest``, ``inverted_cdf``, ``closest_observation``), which keep its dtype. A slice
    holding a NaN gives NaN. ``overwrite_input`` is accepted and ignored (nda sorts a copy);
    ``weights`` is not supported (``np.quantile`` computes a weighted call on a host copy).
    """
    return _quantiles("quantile", a, q, axis, out, method, keepdims, weights, interpolation, 1.0, nan=False)


def percentile(
    a: NDArray,
    q: Any,
    axis: Any = None,
    out: NDArray | None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
    interpolation: Any = None,
) -> NDArray:
    """The ``q``-th percentiles (``q`` in [0, 100]) of ``a`` along ``axis``: :func:`quantile` of ``q / 100``."""
    return _quantiles("percentile", a, q, axis, out, method, keepdims, weights, interpolation, 100.0, nan=False)


def nanquantile(
    a: NDArray,
    q: Any,
    axis: Any = None,
    out: NDArray | None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
    interpolation: Any = None,
) -> NDArray:
    """:func:`quantile` ignoring NaN (NumPy's ``nanquantile``): each slice's quantiles are those of
    its numbers, NaN for a slice of NaN only. Values and dtypes are :func:`quantile`'s; it runs on
    the data's device (xarray's ``quantile`` calls it)."""
    return _quantiles("nanquantile", a, q, axis, out, method, keepdims, weights, interpolation, 1.0, nan=True)


def nanpercentile(
    a: NDArray,
    q: Any,
    axis: Any = None,
    out: NDArray | None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
    interpolation: Any = None,
) -> NDArray:
    """:func:`percentile` ignoring NaN: :func:`nanquantile` of ``q / 100``."""
    return _quantiles("nanpercentile", a, q, axis, out, method, keepdims, weights, interpolation, 100.0, nan=True)


def median(a: NDArray, axis: Any = None, out: NDArray | None = None, overwrite_input: bool = False, keepdims: bool = False) -> NDArray:
    """The median along ``axis``: the middle of the sorted values, or the mean of the two middle ones.

    float64 for integer and bool input, the input's dtype for floats; a slice holding a NaN
    gives NaN; an empty slice gives NaN (NumPy also warns). Sorting runs on the device.
    """
    a = array_arg(a, "median")
    if a.dtype.category == "complex floating":
        raise TypeError("median(): complex input is not supported by nda (np.median computes it on a host copy)")
    axes = axes_arg(axis, a.ndim, "median")
    dt = float_dtype(a)
    x = move_to_end(to_dtype(a, dt), axes)
    n = x.shape[-1]
    if n == 0:
        shape = x.shape[:-1]
        result = api.full(shape, float("nan"), dtype=dt, device=a.device)
    else:
        s = api.sort(x, axis=-1, stable=False)
        half = n // 2
        if n % 2:
            result = s[..., half]
        else:
            result = api.divide(api.add(s[..., half - 1], s[..., half]), 2.0)
        result = api.where(api.isnan(s[..., -1]), api.asarray(float("nan"), dtype=dt, device=a.device), result)
    if keepdims:
        result = keep_reduced(result, a.ndim, axes)
    return store("median", out, result)


def average(a: NDArray, axis: Any = None, weights: Any = None, returned: bool = False, *, keepdims: bool = False) -> Any:
    """The (weighted) average along ``axis``: ``sum(a * w) / sum(w)``, NumPy's ``average``.

    ``weights`` has ``a``'s shape, or is 1-D along a single ``axis``; its dtype joins the
    result's (float64 for integer data). ``returned=True`` also gives the sum of the weights.
    All-zero weights along an axis raise ZeroDivisionError (the weights' sum is read on the
    host for that check, as NumPy checks it).
    """
    a = array_arg(a, "average")
    axes = axes_arg(axis, a.ndim, "average")
    kd = bool(keepdims)
    if weights is None:
        dt = float_dtype(a)
        avg = api.mean(to_dtype(a, dt), axis=axes, keepdims=kd)
        if returned:
            count = 1
            for i in axes:
                count *= a.shape[i]
            return avg, api.full(avg.shape, float(count), dtype=avg.dtype, device=a.device)
        return avg
    w = param_array(weights, a.device, "average", "weights")
    if a.dtype.category in ("signed integer", "unsigned integer", "bool"):
        dt = np_result_type(a, w, np.float64)
    else:
        dt = np_result_type(a, w)
    if w.shape != a.shape:
        if axis is None:
            raise TypeError("average(): axis must be specified when the shapes of a and weights differ")
        if w.ndim != 1 or len(axes) != 1:
            raise TypeError("average(): 1-D weights need a single axis (and weights of a's shape otherwise)")
        if w.shape[0] != a.shape[axes[0]]:
            raise ValueError("average(): the length of weights differs from the length of a along axis")
        shape = [1] * a.ndim
        shape[axes[0]] = w.shape[0]
        w = api.broadcast_to(api.reshape(w, tuple(shape)), a.shape)
    wd = to_dtype(w, dt)
    scale = api.sum(wd, axis=axes, keepdims=kd)
    if bool(api.any(api.equal(scale, 0))):
        raise ZeroDivisionError("average(): the weights sum to zero, so the average is not defined")
    avg = api.divide(api.sum(api.multiply(to_dtype(a, dt), wd), axis=axes, keepdims=kd), scale)
    if returned:
        return avg, (scale if scale.shape == avg.shape else api.broadcast_to(scale, avg.shape))
    return avg


# ----------------------------------------------------------------------------- NaN-ignoring reductions


def _masked(a: NDArray, fill: Any) -> tuple[NDArray, NDArray | None]:
    """``a`` with NaN replaced by ``fill`` and the NaN mask (None for dtypes that hold no NaN)."""
    if a.dtype.category not in ("real floating", "complex floating"):
        return a, None
    mask = api.isnan(a)
    return api.where(mask, api.asarray(fill, dtype=a.dtype, device=a.device), a), mask


def nansum(a: NDArray, axis: Any = None, dtype: Any = None, out: NDArray | None = None, keepdims: bool = False) -> NDArray:
    """The sum along ``axis`` with NaN counted as zero (all-NaN slices sum to 0)."""
    a = array_arg(a, "nansum")
    x, _ = _masked(a, 0)
    return store(
        "nansum",
        out,
        api.sum(x, axis=axes_arg(axis, a.ndim, "nansum"), dtype=None if dtype is None else _dtypes.as_dtype(dtype), keepdims=bool(keepdims)),
    )


def nanprod(a: NDArray, axis: Any = None, dtype: Any = None, out: NDArray | None = None, keepdims: bool = False) -> NDArray:
    """The product along ``axis`` with NaN counted as one."""
    a = array_arg(a, "nanprod")
    x, _ = _masked(a, 1)
    return store(
        "nanprod",
        out,
        api.prod(x, axis=axes_arg(axis, a.ndim, "nanprod"), dtype=None if dtype is None else _dtypes.as_dtype(dtype), keepdims=bool(keepdims)),
    )


def _count(mask: NDArray, axes: tuple[int, ...], keepdims: bool) -> NDArray:
    return api.sum(api.astype(api.logical_not(mask), _dtypes.int64), axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]


def _divide(total: NDArray, count: NDArray) -> NDArray:
    """``total / count`` as NumPy divides a sum by a count (in double precision, cast back to the sum's dtype)."""
    wide = _dtypes.complex128 if total.dtype.category == "complex floating" else _dtypes.float64
    return to_dtype(api.divide(to_dtype(total, wide), to_dtype(count, _dtypes.float64)), total.dtype)


def nanmean(a: NDArray, axis: Any = None, dtype: Any = None, out: NDArray | None = None, keepdims: bool = False) -> NDArray:
    """The mean along ``axis`` ignoring NaN (NaN where a slice is all NaN); integers average in float64."""
    a = array_arg(a, "nanmean")
    axes = axes_arg(axis, a.ndim, "nanmean")
    kd = bool(keepdims)
    x, mask = _masked(a, 0)
    if mask is None:
        return store("nanmean", out, api.mean(to_dtype(a, _dtypes.as_dtype(dtype) if dtype is not None else float_dtype(a)), axis=axes, keepdims=kd))
    if dtype is not None:
        x = to_dtype(x, _dtypes.as_dtype(dtype))
    return store("nanmean", out, _divide(api.sum(x, axis=axes, keepdims=kd), _count(mask, axes, kd)))


def _nanextremum(op: str, a: NDArray, axis: Any, out: Any, keepdims: bool) -> NDArray:
    a = array_arg(a, op)
    if a.dtype.category != "real floating":
        return _extremum("amax" if op == "nanmax" else "amin", a, axis, out, keepdims, _NoValue, True)
    axes = axes_arg(axis, a.ndim, op)
    kd = bool(keepdims)
    x, mask = _masked(a, float("-inf") if op == "nanmax" else float("inf"))
    reduced = (api.max if op == "nanmax" else api.min)(x, axis=axes, keepdims=kd)
    all_nan = api.all(mask, axis=axes, keepdims=kd)  # type: ignore[arg-type]
    return store(op, out, api.where(all_nan, api.asarray(float("nan"), dtype=a.dtype, device=a.device), reduced))


def nanmax(a: NDArray, axis: Any = None, out: NDArray | None = None, keepdims: bool = False) -> NDArray:
    """The maximum along ``axis`` ignoring NaN (NaN where a slice is all NaN; NumPy also warns there)."""
    return _nanextremum("nanmax", a, axis, out, keepdims)


def nanmin(a: NDArray, axis: Any = None, out: NDArray | None = None, keepdims: bool = False) -> NDArray:
    """The minimum along ``axis`` ignoring NaN (NaN where a slice is all NaN; NumPy also warns there)."""
    return _nanextremum("nanmin", a, axis, out, keepdims)


def _nanspread(op: str, a: NDArray, axis: Any, dtype: Any, out: Any, ddof: Any, keepdims: bool) -> NDArray:
    a = array_arg(a, op)
    axes = axes_arg(axis, a.ndim, op)
    kd = bool(keepdims)
    dt = _dtypes.as_dtype(dtype) if dtype is not None else float_dtype(a)
    x, mask = _masked(to_dtype(a, dt), 0)
    if mask is None:
        mask = api.zeros(a.shape, dtype=_dtypes.bool, device=a.device)
    count = _count(mask, axes, True)
    mean = _divide(api.sum(x, axis=axes, keepdims=True), count)
    centred = api.where(mask, api.asarray(0, dtype=x.dtype, device=a.device), api.subtract(x, mean))
    squares = api.real(api.multiply(centred, api.conj(centred))) if x.dtype.category == "complex floating" else api.multiply(centred, centred)
    dof = api.subtract(count, float(ddof))
    dof = api.where(api.greater(dof, 0), dof, api.asarray(0.0, dtype=dof.dtype, device=a.device))
    var = _divide(api.sum(squares, axis=axes, keepdims=True), dof)
    if not kd:
        var = api.reshape(var, tuple(n for i, n in enumerate(var.shape) if i not in axes))
    return store(op, out, api.sqrt(var) if op == "nanstd" else var)


def nanvar(a: NDArray, axis: Any = None, dtype: Any = None, out: NDArray | None = None, ddof: int | float = 0, keepdims: bool = False) -> NDArray:
    """The variance along ``axis`` ignoring NaN, with ``ddof`` degrees of freedom removed (NaN where none are left)."""
    return _nanspread("nanvar", a, axis, dtype, out, ddof, keepdims)


def nanstd(a: NDArray, axis: Any = None, dtype: Any = None, out: NDArray | None = None, ddof: int | float = 0, keepdims: bool = False) -> NDArray:
    """The standard deviation along ``axis`` ignoring NaN: ``sqrt(nanvar(...))``."""
    return _nanspread("nanstd", a, axis, dtype, out, ddof, keepdims)
