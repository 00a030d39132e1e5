"""Reductions and scans: sum, prod, mean, std, var, min, max, argmin, argmax, all, any, cumulative_sum, cumulative_prod.

Kernel convention: ``kernel(x, axis=<tuple of non-negative ints, or None for all>,
keepdims=<bool>, **extra)`` returning a buffer (a 0-d buffer for full reductions, never a
NumPy scalar). ``sum``/``prod``/``cumulative_*`` get ``dtype=`` (the accumulation and
output dtype, already decided by the planner); ``std``/``var`` get ``correction=``.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import _dtypes
from .._dtypes import DType
from .spec import Cast, check_array, check_dtype_category, constant, declare, dtype_arg, host_scalar, normalize_axes, normalize_axis, Plan
from ._vjp import conj, expand_reduced
from .elementwise import key_dtype_for

_ARRAY = "NDArray"


def _reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _kernel_axis(axes: tuple[int, ...], ndim: int) -> tuple[int, ...] | None:
    return None if len(axes) == ndim else axes


def _check_keepdims(keepdims: Any, op: str) -> bool:
    if not isinstance(keepdims, bool):
        raise TypeError(f"{op}(): keepdims must be a bool, got {keepdims!r}")
    return keepdims


def _sum_dtype(x: DType, dtype: DType | None, op: str = "sum") -> DType:
    """Array API rule: small integers accumulate in the default integer of their signedness."""
    if dtype is not None:
        if x.category == "complex floating" and dtype.category != "complex floating":
            raise TypeError(f"{op}(): accumulating complex {x.name} input in {dtype.name} would drop the imaginary part; pass a complex dtype")
        return dtype
    if x is _dtypes.bool or x.category == "signed integer":
        return _dtypes.int64
    if x.category == "unsigned integer":
        return _dtypes.uint64
    return x


def _plan_accumulating(op: str, x: Any, axis: Any, dtype: Any, keepdims: Any) -> Plan:
    x = check_array(x, op)
    if x.dtype is not _dtypes.bool:
        check_dtype_category(x, "numeric", op)
    out_dtype = _sum_dtype(x.dtype, dtype_arg(dtype, op), op)
    axes = normalize_axes(axis, x.ndim, op)
    keepdims = _check_keepdims(keepdims, op)
    return Plan.of(
        x,
        out_shape=_reduced_shape(x.shape, axes, keepdims),
        out_dtype=out_dtype,
        args=(x,),
        kwargs={"axis": _kernel_axis(axes, x.ndim), "keepdims": keepdims, "dtype": out_dtype},
    )


def _ref_sum(x: np.ndarray, axis: Any = None, keepdims: bool = False, dtype: DType | None = None) -> np.ndarray:
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdims, dtype=None if dtype is None else dtype.numpy))


def _ref_prod(x: np.ndarray, axis: Any = None, keepdims: bool = False, dtype: DType | None = None) -> np.ndarray:
    return np.asarray(np.prod(x, axis=axis, keepdims=keepdims, dtype=None if dtype is None else dtype.numpy))


def _vjp_sum(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> tuple[Any, ...]:
    return (expand_reduced(nd, g, x.shape, normalize_axes(axis, x.ndim, "sum"), keepdims),)


def _vjp_prod(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> tuple[Any, ...]:
    """Each element's gradient is the product of the others, from running products on both
    sides (no division, so zeros are handled exactly)."""
    axes = normalize_axes(axis, x.ndim, "prod")
    rest = tuple(i for i in range(x.ndim) if i not in axes)
    order = rest + axes
    moved = nd.permute_dims(x, order)
    lead = moved.shape[: len(rest)]
    flat = nd.reshape(moved, lead + (-1,))
    left = nd.cumulative_prod(flat, axis=-1, include_initial=True)[..., :-1]
    right = nd.flip(nd.cumulative_prod(nd.flip(flat, axis=-1), axis=-1, include_initial=True)[..., :-1], axis=-1)
    grad = nd.reshape(g, lead + (1,)) * conj(nd, left * right)
    inverse = tuple(sorted(range(x.ndim), key=lambda i: order[i]))
    return (nd.permute_dims(nd.reshape(grad, moved.shape), inverse),)


@declare("sum", dtypes="any", reference=_ref_sum, method="sum", vjp=_vjp_sum)
def sum(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None, keepdims: bool = False) -> Plan:  # noqa: A001
    """Sum of elements over ``axis`` (all axes by default).

    Integer and bool input accumulates in the default integer of its signedness (int64 or
    uint64) unless ``dtype`` says otherwise; floating input keeps its dtype.
    """
    return _plan_accumulating("sum", x, axis, dtype, keepdims)


@declare("prod", dtypes="any", reference=_ref_prod, method="prod", vjp=_vjp_prod)
def prod(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None, keepdims: bool = False) -> Plan:
    """Product of elements over ``axis``; accumulation dtype as for :func:`sum`."""
    return _plan_accumulating("prod", x, axis, dtype, keepdims)


def _plan_float_reduction(op: str, x: Any, axis: Any, keepdims: Any, category: str, extra: dict[str, Any]) -> Plan:
    x = check_array(x, op)
    key = key_dtype_for(category, x.dtype, op)
    axes = normalize_axes(axis, x.ndim, op)
    keepdims = _check_keepdims(keepdims, op)
    arg = x if key is x.dtype else Cast(x, key)
    return Plan(
        x.device,
        key,
        key,
        _reduced_shape(x.shape, axes, keepdims),
        (arg,),
        {"axis": _kernel_axis(axes, x.ndim), "keepdims": keepdims, **extra},
        reads=(x,),
    )


def _ref_mean(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.mean(x, axis=axis, keepdims=keepdims))


def _ref_std(x: np.ndarray, axis: Any = None, keepdims: bool = False, correction: float = 0.0) -> np.ndarray:
    return np.asarray(np.std(x, axis=axis, keepdims=keepdims, ddof=correction))


def _ref_var(x: np.ndarray, axis: Any = None, keepdims: bool = False, correction: float = 0.0) -> np.ndarray:
    return np.asarray(np.var(x, axis=axis, keepdims=keepdims, ddof=correction))


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _vjp_mean(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False) -> tuple[Any, ...]:
    axes = normalize_axes(axis, x.ndim, "mean")
    return (expand_reduced(nd, g / builtins.max(_count(x.shape, axes), 1), x.shape, axes, keepdims),)


def _vjp_var(
    nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None, correction: Any = 0.0, keepdims: bool = False, ddof: Any = None
) -> tuple[Any, ...]:
    correction = correction if ddof is None else ddof
    axes = normalize_axes(axis, x.ndim, "var")
    centred = x - nd.mean(x, axis=axes, keepdims=True)
    return (expand_reduced(nd, g * (2.0 / (_count(x.shape, axes) - correction)), x.shape, axes, keepdims) * centred,)


def _vjp_std(
    nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None, correction: Any = 0.0, keepdims: bool = False, ddof: Any = None
) -> tuple[Any, ...]:
    correction = correction if ddof is None else ddof
    axes = normalize_axes(axis, x.ndim, "std")
    centred = x - nd.mean(x, axis=axes, keepdims=True)
    scale = g / (y * (_count(x.shape, axes) - correction))
    return (expand_reduced(nd, scale, x.shape, axes, keepdims) * centred,)


@declare("mean", dtypes="floating", reference=_ref_mean, method="mean", vjp=_vjp_mean)
def mean(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Plan:
    """Arithmetic mean over ``axis``; integer input computes in float64. Empty input gives NaN."""
    return _plan_float_reduction("mean", x, axis, keepdims, "floating", {})


def _check_correction(correction: Any, op: str, ddof: Any = None) -> float:
    if ddof is not None:  # NumPy's name of the Array API's correction
        if correction != 0.0:
            raise TypeError(f"{op}(): got both ddof and correction; pass one (correction is the Array API's name, ddof NumPy's)")
        correction = ddof
    correction = host_scalar(correction, op, "correction")  # a NumPy scalar or 0-d array: read now
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{op}(): correction must be an int or a float, got {correction!r}")
    if correction < 0:
        raise ValueError(f"{op}(): correction must be non-negative, got {correction}")
    return correction


@declare("std", dtypes="real floating", reference=_ref_std, method="std", vjp=_vjp_std, host_values=("correction", "ddof"))
def std(
    x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0, keepdims: bool = False, ddof: int | float | None = None
) -> Plan:
    """Standard deviation over ``axis`` with ``correction`` degrees of freedom removed (1 for the sample std).

    ``ddof`` is NumPy's name for ``correction`` (an nda extra; pass one of them).
    """
    return _plan_float_reduction("std", x, axis, keepdims, "real floating", {"correction": _check_correction(correction, "std", ddof)})


@declare("var", dtypes="real floating", reference=_ref_var, method="var", vjp=_vjp_var, host_values=("correction", "ddof"))
def var(
    x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0, keepdims: bool = False, ddof: int | float | None = None
) -> Plan:
    """Variance over ``axis`` with ``correction`` degrees of freedom removed (1 for the sample variance).

    ``ddof`` is NumPy's name for ``correction`` (an nda extra; pass one of them).
    """
    return _plan_float_reduction("var", x, axis, keepdims, "real floating", {"correction": _check_correction(correction, "var", ddof)})


def _plan_extremum(op: str, x: Any, axis: Any, keepdims: Any, out_dtype: DType | None) -> Plan:
    x = check_array(x, op)
    check_dtype_category(x, "real numeric", op)
    axes = normalize_axes(axis, x.ndim, op)
    keepdims = _check_keepdims(keepdims, op)
    if builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}() of an empty array (shape {x.shape}) along axis {axis} has no identity; pass a non-empty array")
    return Plan.of(
        x,
        out_shape=_reduced_shape(x.shape, axes, keepdims),
        out_dtype=out_dtype,
        args=(x,),
        kwargs={"axis": _kernel_axis(axes, x.ndim), "keepdims": keepdims},
    )


def _ref_min(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.min(x, axis=axis, keepdims=keepdims))


def _ref_max(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.max(x, axis=axis, keepdims=keepdims))


def _vjp_extremum(name: str) -> Any:
    """min/max: the gradient goes to the elements equal to the result, shared evenly between ties."""

    def vjp(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False) -> tuple[Any, ...]:
        axes = normalize_axes(axis, x.ndim, name)
        hit = nd.astype(x == expand_reduced(nd, y, x.shape, axes, keepdims), g.dtype)
        share = hit / nd.sum(hit, axis=axes, keepdims=True)
        return (expand_reduced(nd, g, x.shape, axes, keepdims) * share,)

    return vjp


_ARG_RESULT = constant("integer result (an index)")
_BOOL_RESULT = constant("bool result")


@declare("min", dtypes="real numeric", reference=_ref_min, method="min", vjp=_vjp_extremum("min"))
def min(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Plan:  # noqa: A001
    """Minimum over ``axis`` (NaN propagates). Empty input raises ValueError."""
    return _plan_extremum("min", x, axis, keepdims, None)


@declare("max", dtypes="real numeric", reference=_ref_max, method="max", vjp=_vjp_extremum("max"))
def max(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Plan:  # noqa: A001
    """Maximum over ``axis`` (NaN propagates). Empty input raises ValueError."""
    return _plan_extremum("max", x, axis, keepdims, None)


def _plan_arg(op: str, x: Any, axis: Any, keepdims: Any) -> Plan:
    x = check_array(x, op)
    if axis is not None:
        axis = normalize_axis(axis, x.ndim, op)
    plan = _plan_extremum(op, x, axis, keepdims, _dtypes.int64)
    plan.kwargs["axis"] = axis
    return plan


def _ref_argmin(x: np.ndarray, axis: int | None = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.argmin(x, axis=axis, keepdims=keepdims), dtype=np.int64)


def _ref_argmax(x: np.ndarray, axis: int | None = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.argmax(x, axis=axis, keepdims=keepdims), dtype=np.int64)


@declare("argmin", dtypes="real numeric", reference=_ref_argmin, method="argmin", vjp=_ARG_RESULT)
def argmin(x: _ARRAY, /, *, axis: int | None = None, keepdims: bool = False) -> Plan:
    """Index (int64) of the first minimum along ``axis``, or in the flattened array when ``axis`` is None."""
    return _plan_arg("argmin", x, axis, keepdims)


@declare("argmax", dtypes="real numeric", reference=_ref_argmax, method="argmax", vjp=_ARG_RESULT)
def argmax(x: _ARRAY, /, *, axis: int | None = None, keepdims: bool = False) -> Plan:
    """Index (int64) of the first maximum along ``axis``, or in the flattened array when ``axis`` is None."""
    return _plan_arg("argmax", x, axis, keepdims)


def _plan_logical(op: str, x: Any, axis: Any, keepdims: Any) -> Plan:
    x = check_array(x, op)
    axes = normalize_axes(axis, x.ndim, op)
    keepdims = _check_keepdims(keepdims, op)
    return Plan.of(
        x,
        out_shape=_reduced_shape(x.shape, axes, keepdims),
        out_dtype=_dtypes.bool,
        args=(x,),
        kwargs={"axis": _kernel_axis(axes, x.ndim), "keepdims": keepdims},
    )


def _ref_all(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.all(x, axis=axis, keepdims=keepdims))


def _ref_any(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.any(x, axis=axis, keepdims=keepdims))


def _no_out(op: str, out: Any) -> None:
    """NumPy's ``out=None``, which NumPy's ``np.any(obj)`` passes on to ``obj.any(axis=None, out=None)``
    (xarray then calls ``xp.any(data, out=None)``: its ``polyfit``); an array there is refused."""
    if out is not None:
        raise TypeError(
            f"{op}(): out= must be None (nda's {op} returns a new array; np.{op}(x, out=y) of nda arrays stores into y), got {type(out).__name__}"
        )


@declare("all", dtypes="any", reference=_ref_all, method="all", vjp=_BOOL_RESULT)
def all(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, out: None = None) -> Plan:  # noqa: A001
    """Whether every element along ``axis`` is true (non-zero); True for empty input.

    ``out`` takes only None (NumPy's calling convention, as xarray uses it)."""
    _no_out("all", out)
    return _plan_logical("all", x, axis, keepdims)


@declare("any", dtypes="any", reference=_ref_any, method="any", vjp=_BOOL_RESULT)
def any(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, out: None = None) -> Plan:  # noqa: A001
    """Whether some element along ``axis`` is true (non-zero); False for empty input.

    ``out`` takes only None (NumPy's calling convention, as xarray uses it)."""
    _no_out("any", out)
    return _plan_logical("any", x, axis, keepdims)


def _cumulative(scan: Any, identity: int) -> Any:
    def reference(x: np.ndarray, axis: int = 0, dtype: DType | None = None, include_initial: bool = False) -> np.ndarray:
        out = scan(x, axis=axis, dtype=None if dtype is None else dtype.numpy)
        if include_initial:
            shape = list(out.shape)
            shape[axis] = 1
            out = np.concatenate([np.full(shape, identity, dtype=out.dtype), out], axis=axis)
        return out

    reference.__name__ = reference.__qualname__ = f"_ref_{scan.__name__}"
    return reference


def _plan_cumulative(op: str, x: Any, axis: Any, dtype: Any, include_initial: Any) -> Plan:
    x = check_array(x, op)
    if x.dtype is not _dtypes.bool:
        check_dtype_category(x, "numeric", op)
    if x.ndim == 0:
        raise ValueError(f"{op}() needs an array of at least one dimension, got a 0-d array")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{op}() needs axis= for an array of {x.ndim} dimensions")
        axis = 0
    axis = normalize_axis(axis, x.ndim, op)
    if not isinstance(include_initial, bool):
        raise TypeError(f"{op}(): include_initial must be a bool, got {include_initial!r}")
    out_dtype = _sum_dtype(x.dtype, dtype_arg(dtype, op), op)
    shape = list(x.shape)
    shape[axis] += int(include_initial)
    return Plan.of(
        x, out_shape=tuple(shape), out_dtype=out_dtype, args=(x,), kwargs={"axis": axis, "dtype": out_dtype, "include_initial": include_initial}
    )


def _scan_axis(x: Any, axis: Any) -> int:
    return 0 if axis is None else normalize_axis(axis, x.ndim, "cumulative_sum")


def _reverse_cumsum(nd: Any, a: Any, axis: int) -> Any:
    return nd.flip(nd.cumulative_sum(nd.flip(a, axis=axis), axis=axis), axis=axis)


def _drop_initial(a: Any, axis: int) -> Any:
    return a[(slice(None),) * axis + (slice(1, None),)]


def _vjp_cumulative_sum(
    nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
) -> tuple[Any, ...]:
    ax = _scan_axis(x, axis)
    return (_reverse_cumsum(nd, _drop_initial(g, ax) if include_initial else g, ax),)


def _vjp_cumulative_prod(
    nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
) -> tuple[Any, ...]:
    """Zero-safe: before the first zero of a slice, ``sum_{i>=j} g_i y_i / x_j``; at the first
    zero, the same sum with that zero replaced by one; after it, zero."""
    ax = _scan_axis(x, axis)
    if include_initial:
        g, y = _drop_initial(g, ax), _drop_initial(y, ax)
    zero = x == 0
    zeros_so_far = nd.cumulative_sum(zero, axis=ax)
    before = zeros_so_far == 0
    first = zero & (zeros_so_far == 1)
    ahead = _reverse_cumsum(nd, g * conj(nd, y), ax) / conj(nd, nd.where(before, x, 1))
    at_zero = _reverse_cumsum(nd, g * conj(nd, nd.cumulative_prod(nd.where(first, 1, x), axis=ax)), ax)
    return (nd.where(before, ahead, nd.where(first, at_zero, 0)),)


@declare("cumulative_sum", dtypes="any", reference=_cumulative(np.cumsum, 0), vjp=_vjp_cumulative_sum)
def cumulative_sum(x: _ARRAY, /, *, axis: int | None = None, dtype: DType | None = None, include_initial: bool = False) -> Plan:
    """Running sum along ``axis`` (required when ``x`` has more than one dimension).

    With ``include_initial=True`` the result starts with the zero of the sum, so it is one
    longer along ``axis``. Accumulation dtype as for :func:`sum`.
    """
    return _plan_cumulative("cumulative_sum", x, axis, dtype, include_initial)


@declare("cumulative_prod", dtypes="any", reference=_cumulative(np.cumprod, 1), vjp=_vjp_cumulative_prod)
def cumulative_prod(x: _ARRAY, /, *, axis: int | None = None, dtype: DType | None = None, include_initial: bool = False) -> Plan:
    """Running product along ``axis`` (required when ``x`` has more than one dimension).

    With ``include_initial=True`` the result starts with one (the empty product), so it is
    one longer along ``axis``. Accumulation dtype as for :func:`prod`.
    """
    return _plan_cumulative("cumulative_prod", x, axis, dtype, include_initial)
