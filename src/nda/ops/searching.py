"""Searching, counting and set functions: nonzero, searchsorted, count_nonzero, unique_*, isin.

``nonzero`` and the ``unique_*`` family have output shapes that depend on the data, so
they are declared ``data_dependent``: a call waits for its input (a sync point, like a
boolean mask) and the output shapes are read from the buffers the kernel returns. The
``unique_*`` functions follow the standard: the input is flattened, NaNs are all distinct,
``inverse_indices`` has the input's shape, and every index or count is int64. All four
return their values sorted (NaNs last), which the standard leaves open and scikit-learn and
array-api-extra rely on.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtypes
from .spec import Array, Cast, check_array, check_dtype_category, constant, declare, normalize_axes, not_differentiable, Plan, same_device, scalar_arg

_ARRAY = "NDArray"


# ----------------------------------------------------------------------------- nonzero


def _ref_nonzero(x: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(i.astype(np.int64, copy=False) for i in np.nonzero(x))


@declare("nonzero", dtypes="any", reference=_ref_nonzero, outputs=("*",), data_dependent=True, vjp=constant("integer result (indices)"))
def nonzero(x: _ARRAY, /) -> Plan:
    """Indices of the non-zero (true) elements: one int64 array per axis of ``x``, in row-major order.

    The number of results depends on the data, so this waits for ``x`` (a sync point).
    """
    x = check_array(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero() does not accept 0-d arrays; use nonzero(reshape(x, (1,))) or bool(x)")
    return Plan.of(x, out_shape=None, out_dtype=(_dtypes.int64,) * x.ndim, args=(x,))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- count_nonzero


def _ref_count_nonzero(x: np.ndarray, axis: tuple[int, ...] | None = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.count_nonzero(x, axis=axis, keepdims=keepdims), dtype=np.int64)


@declare("count_nonzero", dtypes="any", reference=_ref_count_nonzero, vjp=constant("integer result"))
def count_nonzero(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Plan:
    """How many elements of ``x`` are non-zero (true) along ``axis`` (all axes by default); int64."""
    from .reductions import _check_keepdims, _reduced_shape

    x = check_array(x, "count_nonzero")
    axes = normalize_axes(axis, x.ndim, "count_nonzero")
    keepdims = _check_keepdims(keepdims, "count_nonzero")
    kernel_axis = None if len(axes) == x.ndim else axes
    return Plan.of(
        x, out_shape=_reduced_shape(x.shape, axes, keepdims), out_dtype=_dtypes.int64, args=(x,), kwargs={"axis": kernel_axis, "keepdims": keepdims}
    )


# ----------------------------------------------------------------------------- searchsorted


def _ref_searchsorted(x1: np.ndarray, x2: Any, sorter: np.ndarray | None = None, side: str = "left") -> np.ndarray:
    return np.asarray(np.searchsorted(x1, x2, side=side, sorter=sorter), dtype=np.int64)


@declare("searchsorted", dtypes="real numeric", reference=_ref_searchsorted, vjp=constant("integer result (indices)"))
def searchsorted(x1: _ARRAY, x2: _ARRAY | int | float, /, *, side: str = "left", sorter: _ARRAY | None = None) -> Plan:
    """Where to insert the values ``x2`` into the sorted 1-D ``x1`` to keep it sorted (int64 indices).

    ``side="left"`` gives the first suitable position, ``"right"`` the last. ``sorter`` is an
    optional integer array of indices that sort ``x1`` (as returned by ``argsort``).
    """
    from .elementwise import _check_scalar

    x1 = check_array(x1, "searchsorted", "x1")
    check_dtype_category(x1, "real numeric", "searchsorted", "x1")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted(): x1 must be a 1-D sorted array, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted(): side must be 'left' or 'right', got {side!r}")
    reads = [x1]
    x2 = scalar_arg(x2)
    if isinstance(x2, Array):
        check_dtype_category(x2, "real numeric", "searchsorted", "x2")
        reads.append(x2)
        dtype = _dtypes.promote(x1.dtype, x2.dtype)
        values: Any = x2 if x2.dtype is dtype else Cast(x2, dtype)
        shape = x2.shape
    elif x2.__class__ in (int, float):
        dtype = _dtypes.promote_scalar(x1.dtype, x2.__class__)
        values = _check_scalar(x2, dtype, "searchsorted")
        shape = ()
    else:
        raise TypeError(f"searchsorted(): x2 must be an nda array or a real Python scalar, got {type(x2).__name__}")
    if dtype not in _dtypes.CATEGORIES["real numeric"]:
        raise TypeError(f"searchsorted(): cannot compare {x1.dtype.name} with {getattr(x2, 'dtype', type(x2).__name__)}")
    if sorter is not None:
        sorter = check_array(sorter, "searchsorted", "sorter")
        check_dtype_category(sorter, "integer", "searchsorted", "sorter")
        if sorter.shape != x1.shape:
            raise ValueError(f"searchsorted(): sorter must have x1's shape {x1.shape}, got {sorter.shape}")
        reads.append(sorter)
    device = same_device("searchsorted", reads)
    first = x1 if x1.dtype is dtype else Cast(x1, dtype)
    return Plan(device, dtype, _dtypes.int64, shape, (first, values, sorter), {"side": side}, reads=reads)


# ----------------------------------------------------------------------------- unique_*


def _ref_unique_values(x: np.ndarray) -> np.ndarray:
    # Sorted, like the other unique_* functions: NumPy >= 2.3's unique_values may return its
    # values in any order (the standard allows it), but scikit-learn and array-api-extra
    # rely on sorted output.
    return np.unique(x.reshape(-1), equal_nan=False)


def _ref_unique_counts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = np.unique_counts(x)
    return r.values, r.counts.astype(np.int64, copy=False)


def _ref_unique_inverse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = np.unique_inverse(x)
    return r.values, r.inverse_indices.astype(np.int64, copy=False).reshape(x.shape)


def _ref_unique_all(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r = np.unique_all(x)
    i64 = np.int64
    return r.values, r.indices.astype(i64, copy=False), r.inverse_indices.astype(i64, copy=False).reshape(x.shape), r.counts.astype(i64, copy=False)


def _unique_plan(op: str, x: Any, count: int) -> Plan:
    x = check_array(x, op)
    dtypes = (x.dtype,) + (_dtypes.int64,) * (count - 1)
    return Plan.of(x, out_shape=None, out_dtype=dtypes if count > 1 else x.dtype, args=(x,))  # type: ignore[arg-type]


_UNIQUE = not_differentiable("the distinct values of x: not implemented (the set of values changes with x)")


@declare("unique_values", dtypes="any", reference=_ref_unique_values, data_dependent=True, vjp=_UNIQUE)
def unique_values(x: _ARRAY, /) -> Plan:
    """The distinct values of ``x`` (flattened), sorted; every NaN counts as distinct. A sync point."""
    return _unique_plan("unique_values", x, 1)


@declare("unique_counts", dtypes="any", reference=_ref_unique_counts, outputs=("values", "counts"), data_dependent=True, vjp=_UNIQUE)
def unique_counts(x: _ARRAY, /) -> Plan:
    """The distinct values of ``x`` and how often each occurs (int64). A sync point."""
    return _unique_plan("unique_counts", x, 2)


@declare("unique_inverse", dtypes="any", reference=_ref_unique_inverse, outputs=("values", "inverse_indices"), data_dependent=True, vjp=_UNIQUE)
def unique_inverse(x: _ARRAY, /) -> Plan:
    """The distinct values of ``x`` and, for each element of ``x``, the index of its value (shape of ``x``)."""
    return _unique_plan("unique_inverse", x, 2)


@declare(
    "unique_all",
    dtypes="any",
    reference=_ref_unique_all,
    outputs=("values", "indices", "inverse_indices", "counts"),
    data_dependent=True,
    vjp=_UNIQUE,
)
def unique_all(x: _ARRAY, /) -> Plan:
    """Distinct values, the first index of each in flattened ``x``, the inverse indices (shape of ``x``) and counts."""
    return _unique_plan("unique_all", x, 4)


# ----------------------------------------------------------------------------- isin


def _ref_isin(x1: Any, x2: Any, invert: bool = False) -> np.ndarray:
    return np.asarray(np.isin(x1, x2, invert=invert))


@declare("isin", dtypes="real numeric", reference=_ref_isin, vjp=constant("bool result"))
def isin(x1: _ARRAY | int | float, x2: _ARRAY | int | float, /, *, invert: bool = False) -> Plan:
    """For each element of ``x1``, whether it occurs anywhere in ``x2`` (bool, shape of ``x1``).

    One of the two may be a Python scalar. ``invert=True`` gives the negation. NaN is never
    found (NaN != NaN).
    """
    from .elementwise import _check_scalar

    if not isinstance(invert, bool):
        raise TypeError(f"isin(): invert must be a bool, got {invert!r}")
    x1, x2 = scalar_arg(x1), scalar_arg(x2)
    arrays = [a for a in (x1, x2) if isinstance(a, Array)]
    if not arrays:
        raise TypeError("isin(): at least one of x1 and x2 must be an nda array")
    for name, a in (("x1", x1), ("x2", x2)):
        if isinstance(a, Array):
            check_dtype_category(a, "real numeric", "isin", name)
        elif a.__class__ not in (int, float):
            raise TypeError(f"isin(): {name} must be an nda array or a real Python scalar, got {type(a).__name__}")
    device = same_device("isin", arrays)
    if len(arrays) == 2:
        dtype = _dtypes.promote(x1.dtype, x2.dtype)  # type: ignore[union-attr]
    else:
        other = x2 if arrays[0] is x1 else x1
        dtype = _dtypes.promote_scalar(arrays[0].dtype, other.__class__)
    args = tuple((a if a.dtype is dtype else Cast(a, dtype)) if isinstance(a, Array) else _check_scalar(a, dtype, "isin") for a in (x1, x2))
    shape = x1.shape if isinstance(x1, Array) else ()
    return Plan(device, dtype, _dtypes.bool, shape, args, {"invert": invert}, reads=arrays)
