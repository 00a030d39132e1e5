"""Indexing: ``x[key]`` (getitem), ``x[key] = value`` (setitem), take and take_along_axis.

Keys may combine ints, slices, ``...``, ``None``, integer arrays (nda arrays or lists of
ints) and bool masks, with NumPy's semantics. The planner checks what it can without data
(number of indices, int bounds, devices, dtypes) and raises ``IndexError``/``TypeError``
at the caller's line. The output shape of basic indexing is computed directly; with
integer arrays or masks it is computed by NumPy on a zero-strided stand-in of ``x``,
which allocates nothing of ``x``'s size. A bool mask decides the output size from its
data, so it is a sync point for the mask (not for ``x``).

Kernel convention: ``getitem(x, key)`` returns a buffer (a view for basic keys) and
``setitem(x, key, value)`` writes into ``x`` in place; arrays inside ``key`` arrive as
buffers and ``value`` is a buffer of ``x``'s dtype or a Python scalar.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import _dtypes
from .._devices import strided
from . import spec
from .spec import Array, broadcast_shapes, Cast, check_array, declare, normalize_axis, not_differentiable, Plan, same_device, scalar_arg
from ._vjp import gather_positions, scatter_flat, scatter_rows

_ARRAY = "NDArray"


def _normalize_key(x: Any, key: Any, op: str) -> tuple[tuple[Any, ...], tuple[int, ...], list[Any], bool]:
    """(kernel key with NDArrays in place, output shape, arrays read, is_basic)."""
    items = key if isinstance(key, tuple) else (key,)
    out: list[Any] = []
    reads: list[Any] = []
    basic = True
    consumed = 0
    ellipsis = 0
    for item in items:
        if item is None:
            out.append(None)
        elif item is Ellipsis:
            ellipsis += 1
            if ellipsis > 1:
                raise IndexError(f"{op}: an index can only have a single ellipsis ('...'), got {key!r}")
            out.append(Ellipsis)
        elif isinstance(item, slice):
            for part in (item.start, item.stop, item.step):
                if part is not None and not isinstance(part, int):
                    try:
                        operator.index(part)
                    except TypeError:
                        # TypeError, as in Python and NumPy (an index of the wrong kind is an IndexError)
                        raise TypeError(f"{op}: slice bounds must be ints or None, got {item!r}") from None
            item = _host_slice(item)
            if item.step == 0:
                raise ValueError(f"{op}: slice step cannot be zero")
            out.append(item)
            consumed += 1
        elif isinstance(item, (list, Array, np.ndarray, bool, np.bool_)):
            if isinstance(item, (bool, np.bool_)):
                # NumPy's rule: a bool scalar is a 0-d mask (a new axis of length 1 or 0).
                item = spec.upper.asarray(bool(item), device=x.device)
            elif not isinstance(item, Array):
                # An empty list is an empty integer index, as in NumPy (not a float64 array);
                # a NumPy index array joins x's device.
                item = spec.upper.asarray(item, device=x.device, dtype=_dtypes.int64 if isinstance(item, list) and not item else None)
            arr = item
            if arr.device is not x.device:
                raise ValueError(f"{op}: index array is on {arr.device} but the array is on {x.device}; move one with to_device()")
            if arr.dtype is _dtypes.bool:
                consumed += arr.ndim  # a 0-d mask indexes no dimension (it adds one of length 0 or 1)
            elif arr.dtype.category in ("signed integer", "unsigned integer"):
                consumed += 1
            else:
                raise IndexError(f"{op}: index arrays must have an integer or bool dtype, got {arr.dtype.name}")
            basic = False
            out.append(arr)
            reads.append(arr)
        else:
            try:
                out.append(operator.index(item))
            except TypeError:
                raise IndexError(
                    f"{op}: only integers, slices, '...', None, integer arrays and bool masks are valid indices, got {type(item).__name__}"
                ) from None
            consumed += 1
    if consumed > x.ndim:
        raise IndexError(f"{op}: too many indices for an array of {x.ndim} dimensions: {key!r} indexes {consumed}")
    # Bounds of plain ints are known now; array indices are checked by the kernel.
    dim = 0
    for item in out:
        if item is Ellipsis:
            dim += x.ndim - consumed
        elif item is None:
            continue
        elif isinstance(item, int):
            n = x.shape[dim]
            if not -n <= item < n:
                raise IndexError(f"{op}: index {item} is out of bounds for axis {dim} with size {n}")
            dim += 1
        elif isinstance(item, slice):
            dim += 1
        else:
            dim += item.ndim if item.dtype is _dtypes.bool else 1
    shape = _basic_shape(x.shape, out, consumed) if basic else _advanced_shape(x, out)
    return tuple(out), shape, reads, basic


def _host_slice(item: slice) -> slice:
    """``item`` with Python int bounds: a 0-d array (or NumPy integer) bound is read now.

    The kernel must never see an nda array inside a slice: on an asynchronous device it
    would call ``__index__`` from the device's own thread, which then waits for itself.
    """
    parts = (item.start, item.stop, item.step)
    if all(p is None or p.__class__ is int for p in parts):
        return item
    return slice(*(p if p is None or p.__class__ is int else operator.index(p) for p in parts))


def _basic_shape(shape: tuple[int, ...], items: list[Any], consumed: int) -> tuple[int, ...]:
    result: list[int] = []
    dim = 0
    for item in items:
        if item is None:
            result.append(1)
        elif item is Ellipsis:
            span = len(shape) - consumed
            result.extend(shape[dim : dim + span])
            dim += span
        elif isinstance(item, slice):
            result.append(len(range(*item.indices(shape[dim]))))
            dim += 1
        else:
            dim += 1
    result.extend(shape[dim:])
    return tuple(result)


def _mask_shape(x: Any, items: list[Any]) -> tuple[int, ...] | None:
    """The shape of ``x[..., mask, ...]`` (one boolean mask of at least one dimension among
    slices, ``...`` and ``None``) from the mask's count of True values: NumPy's count_nonzero
    instead of indexing a stand-in of ``x``'s shape (which cost as much as the indexing itself).
    None for any other key, and for a mask whose shape differs from the dimensions it indexes
    (:func:`_advanced_shape` works those out, with NumPy's errors and exceptions)."""
    mask = None
    for item in items:
        if isinstance(item, Array):
            if mask is not None or item.dtype is not _dtypes.bool or item.ndim == 0:
                return None
            mask = item
        elif item.__class__ is int:
            return None  # an int beside an array is an advanced index too (NumPy's placement rules)
    if mask is None:
        return None
    slices = sum(1 for i in items if i.__class__ is slice)
    spans = [len(x.shape) - slices - mask.ndim if i is Ellipsis else 0 if i is None else mask.ndim if i is mask else 1 for i in items]
    dim = 0
    result: list[int] = []
    for item, span in zip(items, spans):
        if item is mask:
            if mask.shape != x.shape[dim : dim + span]:
                return None  # NumPy's rules for a mask that does not match (an error, or an empty mask on an empty array)
            result.append(int(np.count_nonzero(mask._host())))  # the mask's data decides the shape
        elif item is None:
            result.append(1)
        elif item is Ellipsis:
            result.extend(x.shape[dim : dim + span])
        else:
            result.append(len(range(*item.indices(x.shape[dim]))))
        dim += span
    result.extend(x.shape[dim:])
    return tuple(result)


def _advanced_shape(x: Any, items: list[Any]) -> tuple[int, ...]:
    found = _mask_shape(x, items)
    if found is not None:
        return found
    standin = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=x.shape, strides=(0,) * x.ndim)
    probe: list[Any] = []
    for item in items:
        if isinstance(item, Array):
            if item.dtype is _dtypes.bool:
                probe.append(item._host())  # the mask's data decides the shape
            else:
                probe.append(np.zeros(item.shape, np.intp))
        else:
            probe.append(item)
    try:
        return tuple(standin[tuple(probe)].shape)
    except IndexError as err:
        raise IndexError(f"indexing an array of shape {x.shape}: {err}") from None


#: ``x[key]``; a 0-d result may come back as a NumPy scalar, which the front end makes a buffer.
_ref_getitem = operator.getitem


def _ref_setitem(x: np.ndarray, key: tuple[Any, ...], value: Any) -> None:
    x[key] = value


def _is_index_array(item: Any) -> bool:
    return isinstance(item, list) or (hasattr(item, "shape") and hasattr(item, "dtype") and not isinstance(item, np.generic))


def _is_mask(item: Any) -> bool:
    return not isinstance(item, list) and item.dtype.kind == "b"


def _vjp_getitem(nd: Any, need: Any, g: Any, y: Any, x: Any, key: Any, /) -> tuple[Any, ...]:
    """Zeros with ``g`` at the selected elements; elements selected several times (integer
    arrays) get the sum. Basic keys write ``g`` into zeros (unless the gradient is being
    recorded: writes cannot be differentiated), other keys scatter-add."""
    items = key if isinstance(key, tuple) else (key,)
    arrays = [item for item in items if _is_index_array(item)]
    if len(items) == 1 and arrays and not _is_mask(arrays[0]) and not isinstance(arrays[0], list) and x.ndim:
        # x[indices] (an embedding lookup): scatter whole rows
        index = nd.reshape(nd.asarray(arrays[0], device=x.device), (-1,))
        rows = scatter_rows(nd, nd.reshape(g, (index.shape[0],) + x.shape[1:]), nd.remainder(index, x.shape[0]), x.shape[0], unique=False)
        return (rows,)
    if not arrays and not nd.autograd.is_recording():
        out = nd.zeros(x.shape, dtype=g.dtype, device=g.device)
        out[key] = g
        return (out,)
    positions = gather_positions(nd, x)[key]
    unique = all(_is_mask(a) for a in arrays)
    flat = scatter_flat(nd, nd.reshape(g, (-1,)), nd.reshape(positions, (-1,)), x.size, unique=unique)
    return (nd.reshape(flat, x.shape),)


@declare("getitem", dtypes="any", reference=_ref_getitem, view=True, operators=("__getitem__",), vjp=_vjp_getitem, host_values=("key",))
def getitem(x: _ARRAY, key: Any, /) -> Plan:
    """``x[key]``: basic indexing returns a view; integer arrays and masks return a copy."""
    x = check_array(x, "getitem")
    kernel_key, shape, reads, basic = _normalize_key(x, key, "x[...]")
    plan = Plan.of(x, out_shape=shape, args=(x, kernel_key), view=basic)
    plan.reads = (x, *reads)
    return plan


def _check_value(x: Any, value: Any, shape: tuple[int, ...]) -> Any:
    from .elementwise import _check_scalar

    target = x.dtype
    value = scalar_arg(value)
    if isinstance(value, Array):
        if value.device is not x.device:
            raise ValueError(f"x[...] = value: value is on {value.device} but x is on {x.device}; move one with to_device()")
        if value.dtype is not target:
            if not _dtypes.same_kind_castable(value.dtype, target):
                raise TypeError(
                    f"x[...] = value: cannot store {value.dtype.name} values in a {target.name} array without losing information; cast with astype() first"
                )
            value = Cast(value, target)
        vshape = value.shape if isinstance(value, Array) else value.array.shape
        if broadcast_shapes(vshape, shape) != shape:
            raise ValueError(f"x[...] = value: value of shape {vshape} cannot be broadcast to the selection's shape {shape}")
        return value
    if value.__class__ not in (bool, int, float, complex):
        raise TypeError(f"x[...] = value: value must be an nda array or a Python scalar, got {type(value).__name__}")
    if value.__class__ is float and target.category in ("bool", "signed integer", "unsigned integer"):
        raise TypeError(f"x[...] = value: cannot store float {value!r} in a {target.name} array")
    if value.__class__ is complex and target.category != "complex floating":
        raise TypeError(f"x[...] = value: cannot store complex {value!r} in a {target.name} array")
    if value.__class__ is int and target is _dtypes.bool:
        raise TypeError(f"x[...] = value: cannot store int {value!r} in a bool array; use True or False")
    return _check_scalar(value, target, "x[...] = value")


@declare(
    "setitem",
    dtypes="any",
    reference=_ref_setitem,
    mutates=("x",),
    operators=("__setitem__",),
    host_values=("key", "value"),
    vjp=not_differentiable("an in-place write, not recorded (refused inside record() on arrays of the graph)"),
)
def setitem(x: _ARRAY, key: Any, value: Any, /) -> Plan:
    """``x[key] = value``: write ``value`` (broadcast to the selection, cast to ``x``'s dtype) into ``x``."""
    x = check_array(x, "setitem")
    kernel_key, shape, reads, basic = _normalize_key(x, key, "x[...] = value")
    checked = _check_value(x, value, shape)
    more = [checked.array if isinstance(checked, Cast) else checked] if not isinstance(checked, (bool, int, float, complex)) else []
    plan = Plan.of(x, out_shape=x.shape, args=(x, kernel_key, checked))
    if basic and _overwrites(x, shape, [*reads, *more]):
        # Every element of x is written, from values that are not x's: x's old contents (and a
        # failed earlier write's poison) do not matter, so the write does not read x. For a view
        # x, the front end decides at the call whether x spans all of its base's memory
        # (nda._execute.spans_base: x[::-1][...] = 7); if not, the write reads x after all.
        plan.reads = (*reads, *more)
        plan.overwrites = True
    else:
        plan.reads = (x, *reads, *more)
    return plan


def _overwrites(x: Any, shape: tuple[int, ...], reads: list[Any]) -> bool:
    """Whether ``x[key] = value`` writes all of ``x`` without reading it (the caller has checked
    that the index is basic): a strided ``x``, a selection of as many elements as ``x`` has (a
    basic selection never repeats one), and a value that is not (a view of) ``x``'s memory."""
    if x._meta.layout is not strided:
        return False
    n = 1
    for s in shape:
        n *= s
    if n != x._size:
        return False
    base = x if x._base is None else x._base
    for r in reads:
        if r is x or r is base or r._base is base:
            return False
    return True


def _ref_take(x: np.ndarray, indices: np.ndarray, axis: int | None = None) -> np.ndarray:
    return np.take(x, indices, axis=axis)


def _vjp_take(nd: Any, need: Any, g: Any, y: Any, x: Any, indices: Any, /, *, axis: Any = None) -> tuple[Any, ...]:
    """The taken slices scattered back along ``axis`` (whole slices: O(axis length + k log k))."""
    ax = 0 if axis is None else normalize_axis(axis, x.ndim, "take")
    moved = nd.moveaxis(g, ax, 0) if ax else g
    rows = scatter_rows(nd, moved, nd.remainder(indices, x.shape[ax]), x.shape[ax], unique=False)
    return (nd.moveaxis(rows, 0, ax) if ax else rows,)


@declare("take", dtypes="any", reference=_ref_take, vjp=_vjp_take)
def take(x: _ARRAY, indices: _ARRAY, /, *, axis: int | None = None) -> Plan:
    """Elements of ``x`` at the integer ``indices`` (1-D) along ``axis``; negative indices count from the end.

    ``axis`` may be omitted only for a 1-D ``x``. An index out of bounds raises IndexError
    when the data is read (it depends on the values).
    """
    x = check_array(x, "take")
    indices = check_array(indices, "take", "indices")
    if indices.dtype.category not in ("signed integer", "unsigned integer"):
        raise TypeError(f"take(): indices must have an integer dtype, got {indices.dtype.name}")
    if indices.ndim != 1:
        raise ValueError(f"take(): indices must be 1-D, got shape {indices.shape}")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"take(): axis is required for an array of {x.ndim} dimensions")
        axis = 0
    if x.ndim == 0:
        raise ValueError("take(): x must have at least one dimension, got a 0-d array")
    ax = normalize_axis(axis, x.ndim, "take")
    if x.shape[ax] == 0 and indices.size:
        raise IndexError(f"take(): cannot take {indices.size} elements from an empty axis {ax}")
    same_device("take", [x, indices])
    out_shape = x.shape[:ax] + indices.shape + x.shape[ax + 1 :]
    plan = Plan.of(x, out_shape=out_shape, args=(x, indices), kwargs={"axis": ax})
    plan.reads = (x, indices)
    return plan


def _ref_take_along_axis(x: np.ndarray, indices: np.ndarray, axis: int = -1) -> np.ndarray:
    shape = np.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1 :], indices.shape[:axis] + indices.shape[axis + 1 :])
    xs = np.broadcast_to(x, shape[:axis] + x.shape[axis : axis + 1] + shape[axis:])
    ids = np.broadcast_to(indices, shape[:axis] + indices.shape[axis : axis + 1] + shape[axis:])
    return np.take_along_axis(xs, ids, axis=axis)


def _vjp_take_along_axis(nd: Any, need: Any, g: Any, y: Any, x: Any, indices: Any, /, *, axis: int = -1) -> tuple[Any, ...]:
    positions = nd.take_along_axis(gather_positions(nd, x), indices, axis=axis)
    flat = scatter_flat(nd, nd.reshape(g, (-1,)), nd.reshape(positions, (-1,)), x.size, unique=False)
    return (nd.reshape(flat, x.shape),)


@declare("take_along_axis", dtypes="any", reference=_ref_take_along_axis, vjp=_vjp_take_along_axis)
def take_along_axis(x: _ARRAY, indices: _ARRAY, /, *, axis: int = -1) -> Plan:
    """Pick elements of ``x`` along ``axis`` by the integer ``indices`` (as returned by ``argsort``).

    ``x`` and ``indices`` have the same number of dimensions; the other axes broadcast.
    """
    from .spec import broadcast_shapes

    x = check_array(x, "take_along_axis")
    indices = check_array(indices, "take_along_axis", "indices")
    if indices.dtype.category not in ("signed integer", "unsigned integer"):
        raise TypeError(f"take_along_axis(): indices must have an integer dtype, got {indices.dtype.name}")
    if x.ndim != indices.ndim or x.ndim == 0:
        raise ValueError(f"take_along_axis(): x and indices must have the same number (>= 1) of dimensions, got shapes {x.shape} and {indices.shape}")
    ax = normalize_axis(axis, x.ndim, "take_along_axis")
    other = broadcast_shapes(x.shape[:ax] + x.shape[ax + 1 :], indices.shape[:ax] + indices.shape[ax + 1 :])
    if x.shape[ax] == 0 and indices.shape[ax]:
        raise IndexError(f"take_along_axis(): cannot take elements from an empty axis {ax}")
    same_device("take_along_axis", [x, indices])
    out_shape = other[:ax] + (indices.shape[ax],) + other[ax:]
    plan = Plan.of(x, out_shape=out_shape, args=(x, indices), kwargs={"axis": ax})
    plan.reads = (x, indices)
    return plan
