"""Shape manipulation: reshape, permute_dims, concat, stack, expand_dims, squeeze, flip, roll, broadcast_to, tile, repeat, tril, triu.

Ops marked ``view=True`` may return a buffer that shares memory with their input, as
NumPy does (``reshape`` when it can, ``permute_dims``, ``expand_dims``, ``squeeze``,
``flip``, ``broadcast_to``). The front end records the input as the output's ``_base``
so that an engine orders writes through a view against users of the base.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from .. import _dtypes
from .spec import (
    Array,
    broadcast_shapes,
    Cast,
    check_array,
    check_shape,
    declare,
    parse_shape,
    int_arg,
    Method,
    normalize_axes,
    normalize_axis,
    Plan,
    prod,
    same_device,
)
from ._vjp import gather_positions, scatter_flat

_ARRAY = "NDArray"


def _ref_reshape(x: np.ndarray, shape: tuple[int, ...], copy: bool | None = None) -> np.ndarray:
    if copy:
        return np.reshape(x, shape).copy()
    if copy is False:
        try:
            view = x.view()
            view.shape = shape  # raises when a view is impossible
        except AttributeError:
            raise ValueError(
                f"reshape(copy=False): cannot reshape an array of shape {x.shape} with these strides into {shape} without copying"
            ) from None
        return view
    return np.reshape(x, shape)


def _vjp_reshape(nd: Any, need: Any, g: Any, y: Any, x: Any, /, shape: Any, *, copy: Any = None) -> tuple[Any, ...]:
    return (nd.reshape(g, x.shape),)


_RESHAPE_METHODS = (
    Method("reshape", varargs="shape", doc="This array with a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))`` (see ``nda.reshape``)."),
    Method("ravel", fixed={"shape": (-1,)}, doc="The elements as a 1-D array in row-major order: a view when the memory layout allows, as NumPy's."),
    Method("flatten", fixed={"shape": (-1,), "copy": True}, doc="A 1-D copy of the elements in row-major order."),
)


@declare("reshape", dtypes="any", reference=_ref_reshape, view=True, methods=_RESHAPE_METHODS, vjp=_vjp_reshape)
def reshape(x: _ARRAY, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Plan:
    """Give ``x`` a new ``shape`` with the same number of elements; one dimension may be -1.

    ``copy=None`` returns a view when the memory layout allows and copies otherwise,
    ``copy=True`` always copies, ``copy=False`` raises ValueError when a copy would be needed.
    """
    x = check_array(x, "reshape")
    dims = list(parse_shape(shape, "reshape"))  # the constructors' parser: no bool, dict or set
    unknown = [i for i, n in enumerate(dims) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in dims):
        raise ValueError(f"reshape(): invalid shape {tuple(dims)}; dimensions must be >= 0, with at most one -1")
    known = prod(n for n in dims if n != -1)
    if unknown:
        if known == 0 or x.size % known:
            raise ValueError(f"reshape(): cannot reshape an array of size {x.size} (shape {x.shape}) into shape {tuple(dims)}")
        dims[unknown[0]] = x.size // known
    elif known != x.size:
        raise ValueError(f"reshape(): cannot reshape an array of size {x.size} (shape {x.shape}) into shape {tuple(dims)}")
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"reshape(): copy must be True, False or None, got {copy!r}")
    out_shape = tuple(dims)
    return Plan.of(x, out_shape=out_shape, args=(x, out_shape), kwargs={"copy": copy}, view=not copy)


def _ref_permute_dims(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.transpose(x, axes)


def _vjp_permute_dims(nd: Any, need: Any, g: Any, y: Any, x: Any, /, axes: Any) -> tuple[Any, ...]:
    order = [normalize_axis(a, x.ndim, "permute_dims") for a in axes]
    return (nd.permute_dims(g, tuple(sorted(range(x.ndim), key=lambda i: order[i]))),)


def _reversed_axes(x: Any) -> tuple[int, ...]:
    return tuple(range(x.ndim - 1, -1, -1))


_TRANSPOSE = Method(
    "transpose",
    varargs="axes",
    empty=_reversed_axes,
    doc="The axes permuted: reversed without arguments, else ``x.transpose(1, 0)`` or ``x.transpose((1, 0))`` (a view).",
)


@declare("permute_dims", dtypes="any", reference=_ref_permute_dims, view=True, methods=(_TRANSPOSE,), vjp=_vjp_permute_dims)
def permute_dims(x: _ARRAY, /, axes: tuple[int, ...]) -> Plan:
    """Permute the axes of ``x``: output axis ``i`` is input axis ``axes[i]`` (a view)."""
    x = check_array(x, "permute_dims")
    try:
        norm = tuple(normalize_axis(a, x.ndim, "permute_dims") for a in axes)
    except TypeError:
        raise TypeError(f"permute_dims(): axes must be a tuple of ints, got {axes!r}") from None
    if sorted(norm) != list(range(x.ndim)):
        raise ValueError(f"permute_dims(): axes {tuple(axes)} are not a permutation of the {x.ndim} axes of an array of shape {x.shape}")
    return Plan.of(x, out_shape=tuple(x.shape[a] for a in norm), args=(x, norm), view=True)


def _check_arrays(arrays: Any, op: str) -> list[Any]:
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{op}() expects a non-empty tuple or list of arrays, got {type(arrays).__name__}")
    if not arrays:
        raise ValueError(f"{op}() needs at least one array, got an empty {type(arrays).__name__}")
    return [check_array(a, op, f"arrays[{i}]") for i, a in enumerate(arrays)]


def _promoted_args(arrays: Sequence[Any], op: str) -> tuple[Any, list[Any]]:
    device = same_device(op, arrays)
    dtype = _dtypes.result_type(*(a.dtype for a in arrays))
    return device, dtype


def _ref_concat(arrays: list[np.ndarray], axis: int | None = 0) -> np.ndarray:
    return np.concatenate(arrays, axis=axis)


def _vjp_concat(nd: Any, need: Any, g: Any, y: Any, arrays: Any, /, *, axis: Any = 0) -> tuple[Any, ...]:
    pieces, start = [], 0
    if axis is None:
        for a in arrays:
            pieces.append(nd.reshape(g[start : start + a.size], a.shape))
            start += a.size
        return (pieces,)
    ax = normalize_axis(axis, arrays[0].ndim, "concat")
    for a in arrays:
        pieces.append(g[(slice(None),) * ax + (slice(start, start + a.shape[ax]),)])
        start += a.shape[ax]
    return (pieces,)


@declare("concat", dtypes="any", reference=_ref_concat, vjp=_vjp_concat)
def concat(arrays: tuple[_ARRAY, ...] | list[_ARRAY], /, *, axis: int | None = 0) -> Plan:
    """Join arrays along an existing ``axis`` (``axis=None`` flattens them first); dtypes are promoted."""
    arrays = _check_arrays(arrays, "concat")
    device, dtype = _promoted_args(arrays, "concat")
    if axis is None:
        out_shape: tuple[int, ...] = (sum(a.size for a in arrays),)
    else:
        first = arrays[0]
        if first.ndim == 0:
            raise ValueError("concat() cannot join 0-d arrays; use stack() or axis=None")
        ax = normalize_axis(axis, first.ndim, "concat")
        for i, a in enumerate(arrays[1:], 1):
            if a.ndim != first.ndim or any(a.shape[d] != first.shape[d] for d in range(first.ndim) if d != ax):
                raise ValueError(f"concat(): arrays[{i}] has shape {a.shape}, which does not match {first.shape} outside axis {ax}")
        out_shape = tuple(sum(a.shape[ax] for a in arrays) if d == ax else n for d, n in enumerate(first.shape))
        axis = ax
    args = [a if a.dtype is dtype else Cast(a, dtype) for a in arrays]
    return Plan(device, dtype, dtype, out_shape, (args,), {"axis": axis}, reads=arrays)


def _ref_stack(arrays: list[np.ndarray], axis: int = 0) -> np.ndarray:
    return np.stack(arrays, axis=axis)


def _vjp_stack(nd: Any, need: Any, g: Any, y: Any, arrays: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    ax = normalize_axis(axis, arrays[0].ndim + 1, "stack")
    return ([g[(slice(None),) * ax + (i,)] for i in range(len(arrays))],)


@declare("stack", dtypes="any", reference=_ref_stack, vjp=_vjp_stack)
def stack(arrays: tuple[_ARRAY, ...] | list[_ARRAY], /, *, axis: int = 0) -> Plan:
    """Join arrays of one shape along a new ``axis``; dtypes are promoted."""
    arrays = _check_arrays(arrays, "stack")
    device, dtype = _promoted_args(arrays, "stack")
    first = arrays[0]
    for i, a in enumerate(arrays[1:], 1):
        if a.shape != first.shape:
            raise ValueError(f"stack(): all arrays need the same shape; arrays[0] has {first.shape}, arrays[{i}] has {a.shape}")
    ax = normalize_axis(axis, first.ndim + 1, "stack")
    out_shape = first.shape[:ax] + (len(arrays),) + first.shape[ax:]
    args = [a if a.dtype is dtype else Cast(a, dtype) for a in arrays]
    return Plan(device, dtype, dtype, out_shape, (args,), {"axis": ax}, reads=arrays)


def _ref_expand_dims(x: np.ndarray, axis: int = 0) -> np.ndarray:
    return np.expand_dims(x, axis)


def _vjp_same_elements(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """expand_dims, squeeze: the same elements in the same order."""
    return (nd.reshape(g, x.shape),)


@declare("expand_dims", dtypes="any", reference=_ref_expand_dims, view=True, vjp=_vjp_same_elements, host_values=("axis",))
def expand_dims(x: _ARRAY, /, axis: int | tuple[int, ...] = 0) -> Plan:
    """Insert dimensions of size one at ``axis`` (an int or a tuple of ints; ``-1`` appends; a view).

    Axes count in the output, which has ``x.ndim + len(axis)`` dimensions.
    """
    x = check_array(x, "expand_dims")
    axes = axis if isinstance(axis, tuple) else (axis,)
    ndim = x.ndim + len(axes)
    positions = [normalize_axis(a, ndim, "expand_dims") for a in axes]
    if len(set(positions)) != len(positions):
        raise ValueError(f"expand_dims(): repeated axis in {axis}")
    rest = iter(x.shape)
    out_shape = tuple(1 if i in positions else next(rest) for i in range(ndim))
    kernel_axis = positions[0] if not isinstance(axis, tuple) else tuple(sorted(positions))
    return Plan.of(x, out_shape=out_shape, args=(x,), kwargs={"axis": kernel_axis}, view=True)


def _ref_squeeze(x: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
    return np.squeeze(x, axis=axis)


@declare("squeeze", dtypes="any", reference=_ref_squeeze, view=True, method="squeeze", vjp=_vjp_same_elements, host_values=("axis",))
def squeeze(x: _ARRAY, /, axis: int | tuple[int, ...] | None = None) -> Plan:
    """Remove the size-one dimensions named by ``axis`` (a view); ``axis=None`` (an nda extra, NumPy's
    default: ``x.squeeze()``) removes every size-one dimension."""
    x = check_array(x, "squeeze")
    if axis is None:
        axes = tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        axes = normalize_axes(axis, x.ndim, "squeeze")
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze(): axis {a} has size {x.shape[a]}, only axes of size 1 can be removed (shape {x.shape})")
    out_shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    return Plan.of(x, out_shape=out_shape, args=(x,), kwargs={"axis": axes}, view=True)


def _ref_flip(x: np.ndarray, axis: tuple[int, ...] | None = None) -> np.ndarray:
    return np.flip(x, axis=axis)


def _vjp_flip(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None) -> tuple[Any, ...]:
    return (nd.flip(g, axis=axis),)


@declare("flip", dtypes="any", reference=_ref_flip, view=True, vjp=_vjp_flip)
def flip(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None) -> Plan:
    """Reverse the order of elements along ``axis`` (all axes by default; a view)."""
    x = check_array(x, "flip")
    axes = normalize_axes(axis, x.ndim, "flip")
    return Plan.of(x, out_shape=x.shape, args=(x,), kwargs={"axis": axes}, view=True)


def _ref_roll(x: np.ndarray, shift: int | tuple[int, ...], axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    return np.roll(x, shift, axis=axis)


def _vjp_roll(nd: Any, need: Any, g: Any, y: Any, x: Any, /, shift: Any, *, axis: Any = None) -> tuple[Any, ...]:
    back = tuple(-operator.index(s) for s in shift) if isinstance(shift, tuple) else -operator.index(shift)
    return (nd.roll(g, back, axis=axis),)


@declare("roll", dtypes="any", reference=_ref_roll, vjp=_vjp_roll, host_values=("shift",))
def roll(x: _ARRAY, /, shift: int | tuple[int, ...], *, axis: int | tuple[int, ...] | None = None) -> Plan:
    """Shift elements along ``axis`` cyclically (over the flattened array when ``axis`` is None)."""
    x = check_array(x, "roll")
    shifts = shift if isinstance(shift, tuple) else (shift,)
    try:
        shifts = tuple(operator.index(s) for s in shifts)
    except TypeError:
        raise TypeError(f"roll(): shift must be an int or a tuple of ints, got {shift!r}") from None
    if axis is None:
        if len(shifts) != 1:
            raise ValueError("roll(): a tuple shift needs a tuple axis of the same length")
        kernel_axis: Any = None
    else:
        axes = axis if isinstance(axis, tuple) else (axis,)
        kernel_axis = tuple(normalize_axis(a, x.ndim, "roll") for a in axes)
        if len(shifts) == 1 and len(kernel_axis) > 1:
            shifts = shifts * len(kernel_axis)
        if len(shifts) != len(kernel_axis):
            raise ValueError(f"roll(): shift {shift} and axis {axis} must have the same length")
    return Plan.of(x, out_shape=x.shape, args=(x, shifts if len(shifts) > 1 else shifts[0]), kwargs={"axis": kernel_axis})


def _ref_broadcast_to(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(x, shape)


def _vjp_broadcast_to(nd: Any, need: Any, g: Any, y: Any, x: Any, /, shape: Any) -> tuple[Any, ...]:
    return (g,)  # autograd sums the gradient over the broadcast axes


@declare("broadcast_to", dtypes="any", reference=_ref_broadcast_to, view=True, vjp=_vjp_broadcast_to)
def broadcast_to(x: _ARRAY, /, shape: tuple[int, ...]) -> Plan:
    """Broadcast ``x`` to ``shape`` (a read-only view)."""
    x = check_array(x, "broadcast_to")
    target = check_shape(shape, "broadcast_to")
    if len(target) < x.ndim or broadcast_shapes(x.shape, target) != target:
        raise ValueError(f"broadcast_to(): an array of shape {x.shape} cannot be broadcast to {target}")
    return Plan.of(x, out_shape=target, args=(x, target), view=True)


def _ref_tile(x: np.ndarray, repetitions: tuple[int, ...]) -> np.ndarray:
    return np.tile(x, repetitions)


def _vjp_tile(nd: Any, need: Any, g: Any, y: Any, x: Any, repetitions: Any, /) -> tuple[Any, ...]:
    """Repetitions are the outer index of each output axis: split each axis in two, sum the outer."""
    n = max(len(repetitions), x.ndim)
    sides = (1,) * (n - x.ndim) + x.shape
    reps = (1,) * (n - len(repetitions)) + tuple(repetitions)
    split = nd.reshape(g, tuple(v for pair in zip(reps, sides) for v in pair))
    return (nd.reshape(nd.sum(split, axis=tuple(range(0, 2 * n, 2))), x.shape),)


@declare("tile", dtypes="any", reference=_ref_tile, vjp=_vjp_tile)
def tile(x: _ARRAY, repetitions: int | tuple[int, ...], /) -> Plan:
    """``x`` repeated ``repetitions[i]`` times along axis ``i``.

    When the two lengths differ, the shorter of ``x.shape`` and ``repetitions`` is padded
    with leading ones. An int (an nda extra, NumPy's ``np.tile(x, 2)``) is one repetition count.
    """
    x = check_array(x, "tile")
    if not isinstance(repetitions, tuple):
        if isinstance(repetitions, (bool, np.bool_)) or not hasattr(repetitions, "__index__") or isinstance(repetitions, Array):
            raise TypeError(f"tile(): repetitions must be an int or a tuple of ints, got {type(repetitions).__name__}")
        repetitions = (operator.index(repetitions),)
    reps = check_shape(repetitions, "tile")
    n = max(len(reps), x.ndim)
    padded_shape = (1,) * (n - x.ndim) + x.shape
    padded_reps = (1,) * (n - len(reps)) + reps
    out_shape = tuple(a * b for a, b in zip(padded_shape, padded_reps))
    return Plan.of(x, out_shape=out_shape, args=(x, reps))


def _ref_repeat(x: np.ndarray, repeats: Any, axis: int | None = None) -> np.ndarray:
    return np.repeat(x, repeats, axis=axis)


def _vjp_repeat(nd: Any, need: Any, g: Any, y: Any, x: Any, repeats: Any, /, *, axis: Any = None) -> tuple[Any, ...]:
    """Each element's gradient is the sum over its copies (the copies' positions, scattered back)."""
    positions = nd.repeat(gather_positions(nd, x), repeats, axis=axis)
    flat = scatter_flat(nd, nd.reshape(g, (-1,)), nd.reshape(positions, (-1,)), x.size, unique=False)
    return (nd.reshape(flat, x.shape),)


@declare("repeat", dtypes="any", reference=_ref_repeat, vjp=_vjp_repeat, host_values=("repeats",))
def repeat(x: _ARRAY, repeats: int | _ARRAY, /, *, axis: int | None = None) -> Plan:
    """Repeat each element of ``x`` along ``axis`` (of the flattened array when ``axis`` is None).

    ``repeats`` is one count for every element, or a 1-D integer array with one count per
    element along the axis (or of length 1). With an array the output size depends on its
    values, so the call waits for ``repeats`` (not for ``x``).
    """

    x = check_array(x, "repeat")
    if axis is None:
        length = x.size
        kernel_axis = None
    else:
        kernel_axis = normalize_axis(axis, x.ndim, "repeat")
        length = x.shape[kernel_axis]
    reads = [x]
    if isinstance(repeats, Array):
        if repeats.dtype.category not in ("signed integer", "unsigned integer"):
            raise TypeError(f"repeat(): repeats must have an integer dtype, got {repeats.dtype.name}")
        if repeats.ndim > 1:
            raise ValueError(f"repeat(): repeats must be an int or a 1-D array, got shape {repeats.shape}")
        same_device("repeat", [x, repeats])
        counts = repeats._host().reshape(-1)  # the output size comes from these values
        if counts.size not in (1, length):
            raise ValueError(f"repeat(): repeats has {counts.size} counts but axis {axis} has {length} elements (give 1 or {length})")
        if counts.dtype.kind == "i" and (counts < 0).any():
            raise ValueError("repeat(): repeats must be non-negative")
        total = _total(counts) if counts.size == length else int(counts[0]) * length
        reads.append(repeats)
        kernel_repeats: Any = repeats
    else:
        try:
            count = operator.index(repeats)
        except TypeError:
            raise TypeError(f"repeat(): repeats must be an int or an integer array, got {type(repeats).__name__}") from None
        if isinstance(repeats, bool):
            raise TypeError("repeat(): repeats must be an int or an integer array, got bool")
        if count < 0:
            raise ValueError(f"repeat(): repeats must be non-negative, got {count}")
        total = count * length
        kernel_repeats = count
    out_shape = (total,) if kernel_axis is None else x.shape[:kernel_axis] + (total,) + x.shape[kernel_axis + 1 :]
    plan = Plan.of(x, out_shape=out_shape, args=(x, kernel_repeats), kwargs={"axis": kernel_axis})
    plan.reads = tuple(reads)
    plan.values_decide_shape = kernel_repeats is repeats and isinstance(repeats, Array)
    return plan


def _total(counts: np.ndarray) -> int:
    """The sum of ``counts`` (non-negative integers), exact: int64 arithmetic would wrap past 2**63
    (counts of 2**62 summed to 0 and np.repeat then wrote past its output)."""
    if not counts.size:
        return 0
    most = int(counts.max())
    if most * counts.size < 2**63:
        return int(counts.sum(dtype=np.int64))
    return sum(int(c) for c in counts.tolist())


def _triangle(op: str, x: Any, k: Any) -> Plan:
    x = check_array(x, op)
    if x.ndim < 2:
        raise ValueError(f"{op}() needs an array of at least 2 dimensions (a stack of matrices), got shape {x.shape}")
    return Plan.of(x, out_shape=x.shape, args=(x,), kwargs={"k": int_arg(k, op, "k")})


def _ref_tril(x: np.ndarray, k: int = 0) -> np.ndarray:
    return np.tril(x, k=k)


def _ref_triu(x: np.ndarray, k: int = 0) -> np.ndarray:
    return np.triu(x, k=k)


def _vjp_tril(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, k: int = 0) -> tuple[Any, ...]:
    return (nd.tril(g, k=k),)


def _vjp_triu(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, k: int = 0) -> tuple[Any, ...]:
    return (nd.triu(g, k=k),)


@declare("tril", dtypes="any", reference=_ref_tril, vjp=_vjp_tril, host_values=("k",))
def tril(x: _ARRAY, /, *, k: int = 0) -> Plan:
    """The lower triangle of each matrix in ``x`` (elements above diagonal ``k`` set to zero)."""
    return _triangle("tril", x, k)


@declare("triu", dtypes="any", reference=_ref_triu, vjp=_vjp_triu, host_values=("k",))
def triu(x: _ARRAY, /, *, k: int = 0) -> Plan:
    """The upper triangle of each matrix in ``x`` (elements below diagonal ``k`` set to zero)."""
    return _triangle("triu", x, k)
