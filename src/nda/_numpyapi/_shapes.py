"""NumPy's creation and shape functions, written once over nda's ops.

``array`` and ``identity`` are ``asarray`` and ``eye`` with NumPy's arguments; ``diag`` is a
``where`` over an ``eye`` mask and a ``pad``; ``logspace`` a ``pow`` of ``linspace``; the
joining functions are ``concat`` after NumPy's dtype promotion; ``split`` and
``array_split`` return views (``getitem`` slices); ``put`` is a ``setitem`` on a flat copy
written back. Every one dispatches through the ops it is made of, so every backend runs it
with its own kernels of those ops, and the engine orders it like them.

Layer: arrays and front end, NumPy's names (README, "Architecture").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _composite, _dtypes
from .._array import NDArray
from ..ops.spec import normalize_axis
from ._common import LINALG, api, array_arg, int_value, np_result_type, param_array, store, to_dtype

__all__ = [
    "array",
    "identity",
    "diag",
    "logspace",
    "swapaxes",
    "concatenate",
    "vstack",
    "hstack",
    "column_stack",
    "dstack",
    "split",
    "array_split",
    "ravel",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "put",
]


def array(
    object: Any,
    dtype: Any = None,
    *,
    copy: bool | None = True,
    order: str = "K",
    ndmin: int = 0,  # noqa: A002 - NumPy's name
    device: Any = None,
) -> NDArray:
    """NumPy's ``array``: ``asarray`` that copies by default.

    ``copy=True`` always copies (an nda array too), ``None`` copies only when needed and
    ``False`` never does (ValueError when it must), as in NumPy 2; ``ndmin`` prepends ones to
    the shape. ``order`` is accepted for NumPy's signature ("K", "A", "C"; nda arrays are
    row-major, so "F" is refused).
    """
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"array(): copy must be True, False or None, got {copy!r}")
    if order not in ("K", "A", "C", None):
        raise ValueError(f"array(): order={order!r} is not supported: nda's arrays are row-major (pass 'C', 'K' or 'A')")
    ndmin = int_value(ndmin, "array", "ndmin")
    out = api.asarray(object, dtype=dtype, device=device, copy=copy)
    if out.ndim < ndmin:
        out = api.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out  # type: ignore[no-any-return]


def identity(n: int, dtype: Any = None, *, device: Any = None) -> NDArray:
    """The ``n`` x ``n`` identity matrix (float64 unless ``dtype`` says otherwise): ``eye(n)``."""
    return api.eye(int_value(n, "identity", "n"), dtype=_dtypes.float64 if dtype is None else dtype, device=device)  # type: ignore[no-any-return]


def diag(v: NDArray, k: int = 0) -> NDArray:
    """NumPy's ``diag``: the ``k``-th diagonal of a 2-D array, or a 2-D array with a 1-D ``v`` on its ``k``-th diagonal.

    ``k > 0`` is above the main diagonal, ``k < 0`` below. The 2-D case is
    ``nda.linalg.diagonal`` (a copy here, where NumPy gives a read-only view); the 1-D case
    places ``v`` with a ``where`` over an identity mask and pads it by ``|k|``.
    """
    v = array_arg(v, "diag", "v")
    k = int_value(k, "diag", "k")
    if v.ndim == 2:
        return LINALG["diagonal"](v, offset=k)  # type: ignore[no-any-return]
    if v.ndim != 1:
        raise ValueError(f"diag(): v must be 1-D or 2-D, got {v.ndim}-D (shape {v.shape})")
    n = v.shape[0]
    zero = False if v.dtype is _dtypes.bool else 0
    if n == 0:
        return api.zeros((abs(k), abs(k)), dtype=v.dtype, device=v.device)  # type: ignore[no-any-return]
    mask = api.eye(n, dtype=_dtypes.bool, device=v.device)
    square = api.where(mask, api.reshape(v, (1, n)), api.zeros((), dtype=v.dtype, device=v.device))
    if k == 0:
        return square  # type: ignore[no-any-return]
    widths = ((0, k), (k, 0)) if k > 0 else ((-k, 0), (0, -k))
    return _composite.pad(square, widths, constant_values=zero)


def logspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0, dtype: Any = None, axis: int = 0, *, device: Any = None
) -> NDArray:
    """``base ** linspace(start, stop, num)``: numbers spaced evenly on a log scale (float64, then cast to ``dtype``).

    ``start``, ``stop`` and ``base`` are scalars (NumPy's array forms are not supported);
    ``axis`` is accepted for NumPy's signature and must be 0 or -1.
    """
    for value, name in ((start, "start"), (stop, "stop"), (base, "base")):
        if isinstance(value, NDArray) and value.ndim == 0:
            continue
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"logspace(): {name} must be a real scalar, got {type(value).__name__}")
    if axis not in (0, -1):
        raise ValueError(f"logspace(): axis must be 0 for scalar start and stop, got {axis!r}")
    exponents = api.linspace(start, stop, int_value(num, "logspace", "num"), dtype=_dtypes.float64, device=device, endpoint=bool(endpoint))
    b = base.item() if isinstance(base, NDArray) else float(base)
    out = api.pow(float(b), exponents)
    return out if dtype is None else api.astype(out, _dtypes.as_dtype(dtype))  # type: ignore[no-any-return]


def swapaxes(a: NDArray, axis1: int, axis2: int) -> NDArray:
    """``a`` with axes ``axis1`` and ``axis2`` interchanged (a view)."""
    a = array_arg(a, "swapaxes")
    i, j = normalize_axis(axis1, a.ndim, "swapaxes"), normalize_axis(axis2, a.ndim, "swapaxes")
    order = list(range(a.ndim))
    order[i], order[j] = order[j], order[i]
    return api.permute_dims(a, tuple(order))  # type: ignore[no-any-return]


def _sequence(arrays: Any, op: str, name: str = "arrays") -> list[NDArray]:
    if isinstance(arrays, NDArray):
        if arrays.ndim == 0:
            raise ValueError(f"{op}(): zero-dimensional arrays cannot be concatenated")
        return list(_composite.unstack(arrays))  # NumPy iterates an array given as the sequence
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{op}(): {name} must be a sequence of nda arrays, got {type(arrays).__name__}")
    if not arrays:
        raise ValueError(f"{op}(): need at least one array to concatenate")
    for i, a in enumerate(arrays):
        array_arg(a, op, f"{name}[{i}]")
    return list(arrays)


def _join_dtype(xs: list[NDArray], dtype: Any, casting: str, op: str) -> list[NDArray]:
    """``xs`` cast to NumPy's common dtype, or to ``dtype`` under NumPy's ``casting`` rule."""
    if dtype is None:
        target = np_result_type(*xs)
    else:
        target = _dtypes.as_dtype(dtype)
        for x in xs:
            if not np.can_cast(x.dtype.numpy, target.numpy, casting=casting):  # type: ignore[arg-type]
                raise TypeError(f"{op}(): cannot cast array data from {x.dtype.name} to {target.name} according to the rule {casting!r}")
    return [to_dtype(x, target) for x in xs]


def concatenate(arrays: Any, axis: int | None = 0, out: NDArray | None = None, *, dtype: Any = None, casting: str = "same_kind") -> NDArray:
    """Join a sequence of arrays along ``axis`` (NumPy's ``concatenate``; ``axis=None`` joins them flattened).

    The result's dtype is NumPy's common dtype of the arrays (``dtype=`` casts them to
    another one under ``casting``); ``out=`` receives the result. ``nda.concat`` is the
    Array API's name.
    """
    xs = _join_dtype(_sequence(arrays, "concatenate"), dtype, casting, "concatenate")
    if axis is None:
        xs, axis = [api.reshape(x, (-1,)) for x in xs], 0
    return store("concatenate", out, api.concat(xs, axis=axis), casting)


def _at_least(x: NDArray, ndim: int) -> NDArray:
    if x.ndim >= ndim:
        return x
    if ndim == 3:
        shape = {0: (1, 1, 1), 1: (1,) + x.shape + (1,), 2: x.shape + (1,)}[x.ndim]
    else:
        shape = (1,) * (ndim - x.ndim) + x.shape
    return api.reshape(x, shape)  # type: ignore[no-any-return]


def _atleast(ndim: int) -> Any:
    def fn(*arys: NDArray) -> Any:
        results = [_at_least(array_arg(a, f"atleast_{ndim}d", f"arys[{i}]"), ndim) for i, a in enumerate(arys)]
        return results[0] if len(results) == 1 else tuple(results)

    fn.__name__ = fn.__qualname__ = f"atleast_{ndim}d"
    fn.__doc__ = (
        f"The arrays viewed with at least {ndim} dimension{'s' if ndim > 1 else ''} (one array alone, or a tuple), as NumPy's ``atleast_{ndim}d``."
    )
    return fn


atleast_1d = _atleast(1)
atleast_2d = _atleast(2)
atleast_3d = _atleast(3)


def vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> NDArray:
    """Stack arrays row-wise: ``concatenate`` along the first axis of ``atleast_2d`` of each."""
    xs = _join_dtype([_at_least(x, 2) for x in _sequence(tup, "vstack", "tup")], dtype, casting, "vstack")
    return api.concat(xs, axis=0)  # type: ignore[no-any-return]


def hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> NDArray:
    """Stack arrays column-wise: along the second axis (the first for 1-D arrays)."""
    xs = _join_dtype([_at_least(x, 1) for x in _sequence(tup, "hstack", "tup")], dtype, casting, "hstack")
    return api.concat(xs, axis=0 if xs[0].ndim == 1 else 1)  # type: ignore[no-any-return]


def dstack(tup: Any) -> NDArray:
    """Stack arrays depth-wise: along the third axis of ``atleast_3d`` of each."""
    xs = _join_dtype([_at_least(x, 3) for x in _sequence(tup, "dstack", "tup")], None, "same_kind", "dstack")
    return api.concat(xs, axis=2)  # type: ignore[no-any-return]


def column_stack(tup: Any) -> NDArray:
    """Stack 1-D arrays as the columns of a 2-D array (2-D arrays are joined as they are)."""
    xs = [x if x.ndim >= 2 else api.reshape(x, (-1, 1)) for x in _sequence(tup, "column_stack", "tup")]
    return api.concat(_join_dtype(xs, None, "same_kind", "column_stack"), axis=1)  # type: ignore[no-any-return]


def _split_points(indices_or_sections: Any, n: int, op: str, equal: bool) -> list[int]:
    if isinstance(indices_or_sections, NDArray):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, np.ndarray):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, (list, tuple)):
        return [0] + [int_value(i, op, "indices") for i in indices_or_sections] + [n]
    sections = int_value(indices_or_sections, op, "indices_or_sections")
    if sections <= 0:
        raise ValueError(f"{op}(): the number of sections must be larger than 0, got {sections}")
    if equal and n % sections:
        raise ValueError(f"{op}(): an array of length {n} does not split into {sections} equal sections")
    each, extra = divmod(n, sections)
    sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
    points = []
    total = 0
    for s in sizes:
        total += s
        points.append(total)
    return points


def _split(op: str, ary: NDArray, indices_or_sections: Any, axis: int, equal: bool) -> list[NDArray]:
    ary = array_arg(ary, op, "ary")
    if ary.ndim == 0:
        raise ValueError(f"{op}(): a 0-d array cannot be split")
    ax = normalize_axis(axis, ary.ndim, op)
    points = _split_points(indices_or_sections, ary.shape[ax], op, equal)
    lead = (slice(None),) * ax
    return [ary[lead + (slice(start, stop),)] for start, stop in zip(points[:-1], points[1:])]


def split(ary: NDArray, indices_or_sections: Any, axis: int = 0) -> list[NDArray]:
    """Split ``ary`` into views along ``axis``: ``N`` equal sections, or at the given indices (NumPy's ``split``)."""
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary: NDArray, indices_or_sections: Any, axis: int = 0) -> list[NDArray]:
    """As :func:`split`, but ``N`` sections need not be equal: the first ``len % N`` are one longer."""
    return _split("array_split", ary, indices_or_sections, axis, False)


def ravel(a: NDArray, order: str = "C") -> NDArray:
    """The elements as a 1-D array: row-major for ``order`` "C" (also "K" and "A": nda's arrays are
    row-major), column-major for "F". A view when the memory allows, as NumPy's."""
    a = array_arg(a, "ravel")
    if order == "F":
        a = _composite.transpose(a)
    elif order not in ("C", "K", "A"):
        raise ValueError(f"ravel(): order must be one of 'C', 'F', 'A', 'K', got {order!r}")
    return api.reshape(a, (-1,))  # type: ignore[no-any-return]


def put(a: NDArray, ind: Any, v: Any, mode: str = "raise") -> None:
    """NumPy's ``put``: ``a.flat[ind] = v`` in place (``v`` repeated as needed; the last of repeated indices wins).

    ``mode`` "raise" refuses indices outside ``[-a.size, a.size)`` (IndexError; the indices
    are read on the host for the check), "wrap" wraps them around, "clip" clips them.
    The write is ordered by the engine like ``a[...] = value``.
    """
    a = array_arg(a, "put")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"put(): mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    idx = api.reshape(param_array(ind, a.device, "put", "ind"), (-1,))
    if idx.dtype.category not in ("signed integer", "unsigned integer"):
        if idx.size == 0:
            idx = api.astype(idx, _dtypes.int64)
        else:
            raise TypeError(f"put(): ind must hold integers, got {idx.dtype.name}")
    idx = to_dtype(idx, _dtypes.int64)
    values = api.reshape(param_array(v, a.device, "put", "v"), (-1,))
    if idx.size == 0 or values.size == 0:
        return None
    n = a.size
    if n == 0:
        raise IndexError("put(): cannot put into an empty array")
    if mode == "wrap":
        idx = api.remainder(idx, n)
    elif mode == "clip":
        idx = api.clip(idx, 0, n - 1)
    else:
        lo, hi = int(api.min(idx)), int(api.max(idx))
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"put(): index {bad} is out of bounds for a array of size {n}")
    if values.size < idx.size:
        values = api.tile(values, (math.ceil(idx.size / values.size),))
    values = values[: idx.size]
    if values.dtype is not a.dtype:
        values = api.astype(values, a.dtype)  # NumPy casts v to a's dtype ("unsafe")
    flat = api.reshape(a, (-1,), copy=True)
    flat[idx] = values
    a[...] = api.reshape(flat, a.shape)
    return None


def take_numpy(a: NDArray, indices: Any, axis: int | None = None, out: NDArray | None = None, mode: str = "raise") -> NDArray:
    """NumPy's ``take`` (``x.take(...)``, ``np.take``): indices of any shape, ``axis=None`` for the
    flattened array, ``mode`` "raise" (out-of-range indices are an error when the result is
    read, as for ``nda.take``), "wrap" or "clip". ``nda.take`` is the Array API's form."""
    a = array_arg(a, "take")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"take(): mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if axis is None:
        a, ax = api.reshape(a, (-1,)), 0
    else:
        ax = normalize_axis(axis, a.ndim, "take")
    idx = param_array(indices, a.device, "take", "indices")
    if idx.dtype.category not in ("signed integer", "unsigned integer"):
        raise TypeError(f"take(): indices must be integers, got {idx.dtype.name}")
    n = a.shape[ax]
    if mode == "wrap" and n:
        idx = api.remainder(idx, n)
    elif mode == "clip":
        idx = api.clip(idx, 0, max(n - 1, 0))
    flat = api.take(a, api.reshape(idx, (-1,)), axis=ax)
    result = api.reshape(flat, a.shape[:ax] + idx.shape + a.shape[ax + 1 :])
    return store("take", out, result)
