"""Reductions and scans: sum, prod, mean, std, var, min, max, argmin, argmax, all, any, cumulative_sum, cumulative_prod.

Kernel convention: ``kernel(x, axis=<tuple of non-negative ints, or None for all>,
keepdims=<bool>, **extra)`` returning a buffer (a 0-d buffer for full reductions, never a
NumPy scalar). ``sum``/``prod``/``cumulative_*`` get ``dtype=`` (the accumulation and
output dtype, already decided by the planner); ``std``/``var`` get ``correction=``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import _dtypes
from .._dtypes import DType
from ._spec import Cast, Plan, check_array, check_dtype_category, declare, dtype_arg, host_scalar, normalize_axes, normalize_axis
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
        if x.kind == "complex floating" and dtype.kind != "complex floating":
            raise TypeError(f"{op}(): accumulating complex {x.name} input in {dtype.name} would drop the imaginary part; pass a complex dtype")
        return dtype
    if x is _dtypes.bool or x.kind == "signed integer":
        return _dtypes.int64
    if x.kind == "unsigned integer":
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


@declare("sum", dtypes="any", reference=_ref_sum, method="sum")
def sum(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, dtype: DType | None = None, keepdims: bool = False) -> Plan:  # noqa: A001
    """Sum of elements over ``axis`` (all axes by default).

    Integer and bool input accumulates in the default integer of its signedness (int64 or
    uint64) unless ``dtype`` says otherwise; floating input keeps its dtype.
    """
    return _plan_accumulating("sum", x, axis, dtype, keepdims)


@declare("prod", dtypes="any", reference=_ref_prod, method="prod")
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
        x.device, key, key, _reduced_shape(x.shape, axes, keepdims), (arg,),
        {"axis": _kernel_axis(axes, x.ndim), "keepdims": keepdims, **extra}, reads=(x,),
    )


def _ref_mean(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.mean(x, axis=axis, keepdims=keepdims))


def _ref_std(x: np.ndarray, axis: Any = None, keepdims: bool = False, correction: float = 0.0) -> np.ndarray:
    return np.asarray(np.std(x, axis=axis, keepdims=keepdims, ddof=correction))


def _ref_var(x: np.ndarray, axis: Any = None, keepdims: bool = False, correction: float = 0.0) -> np.ndarray:
    return np.asarray(np.var(x, axis=axis, keepdims=keepdims, ddof=correction))


@declare("mean", dtypes="floating", reference=_ref_mean, method="mean")
def mean(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Plan:
    """Arithmetic mean over ``axis``; integer input computes in float64. Empty input gives NaN."""
    return _plan_float_reduction("mean", x, axis, keepdims, "floating", {})


def _check_correction(correction: Any, op: str) -> float:
    correction = host_scalar(correction, op, "correction")  # a NumPy scalar or 0-d array: read now
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{op}(): correction must be an int or a float, got {correction!r}")
    if correction < 0:
        raise ValueError(f"{op}(): correction must be non-negative, got {correction}")
    return correction


@declare("std", dtypes="real floating", reference=_ref_std, method="std")
def std(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0, keepdims: bool = False) -> Plan:
    """Standard deviation over ``axis`` with ``correction`` degrees of freedom removed (1 for the sample std)."""
    return _plan_float_reduction("std", x, axis, keepdims, "real floating", {"correction": _check_correction(correction, "std")})


@declare("var", dtypes="real floating", reference=_ref_var, method="var")
def var(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0, keepdims: bool = False) -> Plan:
    """Variance over ``axis`` with ``correction`` degrees of freedom removed (1 for the sample variance)."""
    return _plan_float_reduction("var", x, axis, keepdims, "real floating", {"correction": _check_correction(correction, "var")})


def _plan_extremum(op: str, x: Any, axis: Any, keepdims: Any, out_dtype: DType | None) -> Plan:
    x = check_array(x, op)
    check_dtype_category(x, "real numeric", op)
    axes = normalize_axes(axis, x.ndim, op)
    keepdims = _check_keepdims(keepdims, op)
    if builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}() of an empty array (shape {x.shape}) along axis {axis} has no identity; pass a non-empty array")
    return Plan.of(x, out_shape=_reduced_shape(x.shape, axes, keepdims), out_dtype=out_dtype, args=(x,),
                   kwargs={"axis": _kernel_axis(axes, x.ndim), "keepdims": keepdims})


def _ref_min(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.min(x, axis=axis, keepdims=keepdims))


def _ref_max(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.max(x, axis=axis, keepdims=keepdims))


@declare("min", dtypes="real numeric", reference=_ref_min, method="min")
def min(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Plan:  # noqa: A001
    """Minimum over ``axis`` (NaN propagates). Empty input raises ValueError."""
    return _plan_extremum("min", x, axis, keepdims, None)


@declare("max", dtypes="real numeric", reference=_ref_max, method="max")
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


@declare("argmin", dtypes="real numeric", reference=_ref_argmin, method="argmin")
def argmin(x: _ARRAY, /, *, axis: int | None = None, keepdims: bool = False) -> Plan:
    """Index (int64) of the first minimum along ``axis``, or in the flattened array when ``axis`` is None."""
    return _plan_arg("argmin", x, axis, keepdims)


@declare("argmax", dtypes="real numeric", reference=_ref_argmax, method="argmax")
def argmax(x: _ARRAY, /, *, axis: int | None = None, keepdims: bool = False) -> Plan:
    """Index (int64) of the first maximum along ``axis``, or in the flattened array when ``axis`` is None."""
    return _plan_arg("argmax", x, axis, keepdims)


def _plan_logical(op: str, x: Any, axis: Any, keepdims: Any) -> Plan:
    x = check_array(x, op)
    axes = normalize_axes(axis, x.ndim, op)
    keepdims = _check_keepdims(keepdims, op)
    return Plan.of(x, out_shape=_reduced_shape(x.shape, axes, keepdims), out_dtype=_dtypes.bool, args=(x,),
                   kwargs={"axis": _kernel_axis(axes, x.ndim), "keepdims": keepdims})


def _ref_all(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.all(x, axis=axis, keepdims=keepdims))


def _ref_any(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.any(x, axis=axis, keepdims=keepdims))


@declare("all", dtypes="any", reference=_ref_all, method="all")
def all(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Plan:  # noqa: A001
    """Whether every element along ``axis`` is true (non-zero); True for empty input."""
    return _plan_logical("all", x, axis, keepdims)


@declare("any", dtypes="any", reference=_ref_any, method="any")
def any(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Plan:  # noqa: A001
    """Whether some element along ``axis`` is true (non-zero); False for empty input."""
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
    return Plan.of(x, out_shape=tuple(shape), out_dtype=out_dtype, args=(x,),
                   kwargs={"axis": axis, "dtype": out_dtype, "include_initial": include_initial})


@declare("cumulative_sum", dtypes="any", reference=_cumulative(np.cumsum, 0))
def cumulative_sum(x: _ARRAY, /, *, axis: int | None = None, dtype: DType | None = None, include_initial: bool = False) -> Plan:
    """Running sum along ``axis`` (required when ``x`` has more than one dimension).

    With ``include_initial=True`` the result starts with the zero of the sum, so it is one
    longer along ``axis``. Accumulation dtype as for :func:`sum`.
    """
    return _plan_cumulative("cumulative_sum", x, axis, dtype, include_initial)


@declare("cumulative_prod", dtypes="any", reference=_cumulative(np.cumprod, 1))
def cumulative_prod(x: _ARRAY, /, *, axis: int | None = None, dtype: DType | None = None, include_initial: bool = False) -> Plan:
    """Running product along ``axis`` (required when ``x`` has more than one dimension).

    With ``include_initial=True`` the result starts with one (the empty product), so it is
    one longer along ``axis``. Accumulation dtype as for :func:`prod`.
    """
    return _plan_cumulative("cumulative_prod", x, axis, dtype, include_initial)
