"""Hypothesis strategies of :class:`~._cases.Case` values for every op of the catalog.

:func:`strategy` gives, for an op and the dtype of the cell (the kernel key's dtype), a
strategy whose cases all plan to that key. The per-op builders below are plain functions
of a ``draw`` callable (:func:`_composite`); the building blocks ``_arr``/``_scalar`` are
drawn directly from cached array strategies, because drawing is where the kit spends its
time. The rules for what inputs are allowed live in :mod:`._cases` (input repairs).

Shapes are small (0-3 dimensions of 0-4 elements, empty arrays half as often as
non-empty ones), arrays are sometimes strided (``x[::2]``) or reversed (``x[::-1]``)
views, binary ops also get Python scalars on either side and the same array twice.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

import nda
from nda._dtypes import DType
from nda.ops import DECLARED as CATALOG  # the catalog and the ops of loaded op libraries

from .. import strategies as nst
from ._cases import (
    DEVICE,
    Arr,
    Case,
    Raw,
    accumulation_repair,
    binary_repairs,
    cast_safe,
    cast_targets,
    compose,
    signed_zeros,
    unary_repair,
)

__all__ = ["strategy", "for_layout", "GENERATED_OPS"]

# ----------------------------------------------------------------------------- building blocks

_NONEMPTY = nst.shapes(min_side=1)
_SHAPES = st.one_of(_NONEMPTY, nst.shapes())  # empty arrays half as often as plain array_shapes gives them
_VIEW_KINDS = st.sampled_from([None, None, "step", "reverse"])
_SIDE = st.one_of(st.integers(1, 3), st.just(0))  # a matrix side; empty now and then


def _arr_of(draw: Any, dtype: DType, shape: tuple[int, ...], repair: Callable[[np.ndarray], np.ndarray] | None = None, views: bool = True) -> Arr:
    view = draw(_VIEW_KINDS) if views and shape else None
    base_shape = (2 * shape[0],) + shape[1:] if view == "step" else shape
    base = nst.draw_host_array(draw, dtype, base_shape)
    return Arr(repair(base) if repair else base, view)


def _scalar_of(draw: Any, dtype: DType, repair: Callable[[np.ndarray], np.ndarray] | None = None) -> Any:
    value = nst.draw_host_array(draw, dtype, ())
    return (repair(value) if repair else value).item()


class _Lazy:
    """``draw(_arr(...))`` reads like drawing a strategy, but the ``draw`` of :func:`_composite` calls it directly."""

    __slots__ = ("fn", "args", "kwargs")

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs


def _arr(dtype: DType, shape: tuple[int, ...], repair: Callable[[np.ndarray], np.ndarray] | None = None, views: bool = True) -> _Lazy:
    return _Lazy(_arr_of, dtype, shape, repair, views)


def _scalar(dtype: DType, repair: Callable[[np.ndarray], np.ndarray] | None = None) -> _Lazy:
    return _Lazy(_scalar_of, dtype, repair)


def _composite(fn: Callable[..., Any]) -> Any:
    """Like ``st.composite``, with ``draw`` also accepting the building blocks above."""

    def plain(draw: Any, *args: Any) -> Any:
        def d(item: Any) -> Any:
            if item.__class__ is _Lazy:
                return item.fn(draw, *item.args, **item.kwargs)
            return draw(item)

        return fn(d, *args)

    plain.__name__ = plain.__qualname__ = fn.__name__
    return st.composite(plain)


@_composite
def _axes(draw: Any, ndim: int) -> Any:
    kind = draw(st.sampled_from(["none", "int", "tuple"] if ndim else ["none", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)) if ndim else []
    return tuple(a - ndim if draw(st.booleans()) else a for a in chosen)


def _kw(**items: Any) -> dict[str, Any]:
    """Keyword arguments without the ones left at their default (None/False)."""
    return {k: v for k, v in items.items() if v is not None and v is not False}


# ----------------------------------------------------------------------------- element-wise


@_composite
def _unary(draw: Any, op: str, dtype: DType) -> Case:
    return Case(op, (draw(_arr(dtype, draw(_SHAPES), unary_repair(op, dtype))),), signed_zeros=signed_zeros(op, dtype))


@_composite
def _binary(draw: Any, op: str, dtype: DType) -> Case:
    r1, r2 = binary_repairs(op, dtype)
    zeros = signed_zeros(op, dtype)
    form = draw(st.sampled_from(["arrays", "scalar right", "scalar left", "same array"]))
    if form == "same array":
        both = compose(r1, r2)
        base = draw(_arr(dtype, draw(_SHAPES), both))
        return Case(op, (base, base), signed_zeros=zeros)
    if form == "arrays":
        shapes = draw(nst.mutually_broadcastable_shapes(2, min_side=0)).input_shapes
        return Case(op, (draw(_arr(dtype, shapes[0], r1)), draw(_arr(dtype, shapes[1], r2))), signed_zeros=zeros)
    shape = draw(_SHAPES)
    if form == "scalar right":
        return Case(op, (draw(_arr(dtype, shape, r1)), draw(_scalar(dtype, r2))), signed_zeros=zeros)
    return Case(op, (draw(_scalar(dtype, r1)), draw(_arr(dtype, shape, r2))), signed_zeros=zeros)


# ----------------------------------------------------------------------------- reductions, scans, sorting

_NEEDS_ELEMENTS = {"min", "max", "argmin", "argmax"}


@_composite
def _reduction(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_NONEMPTY if op in _NEEDS_ELEMENTS else _SHAPES)
    x = draw(_arr(dtype, shape, accumulation_repair(op)))
    ndim = len(shape)
    if op in ("argmin", "argmax"):
        axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1))) if ndim else None
    else:
        axis = draw(_axes(ndim))
    kwargs = _kw(axis=axis, keepdims=draw(st.booleans()))
    if op in ("std", "var"):
        kwargs["correction"] = draw(st.sampled_from([0.0, 1, 0.5]))
    return Case(op, (x,), kwargs)


@_composite
def _cumulative_sum(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(nst.shapes(min_dims=1))
    ndim = len(shape)
    axis = draw(st.integers(-ndim, ndim - 1)) if ndim > 1 or draw(st.booleans()) else None
    return Case(op, (draw(_arr(dtype, shape, accumulation_repair(op))),), _kw(axis=axis, include_initial=draw(st.booleans())))


@_composite
def _sorting(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(nst.shapes(min_dims=1))
    ndim = len(shape)
    kwargs = _kw(axis=draw(st.integers(-ndim, ndim - 1)), descending=draw(st.booleans()))
    return Case(op, (draw(_arr(dtype, shape)),), kwargs)


# ----------------------------------------------------------------------------- manipulation


@_composite
def _reshape(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_SHAPES)
    size = int(np.prod(shape))
    targets = [(size,), tuple(reversed(shape)), shape + (1,), (1,) + shape]
    if size:
        targets += [(-1,), (-1,) + shape[1:]] if shape and shape[0] else [(-1,)]
    target = draw(st.sampled_from(targets))
    return Case(op, (draw(_arr(dtype, shape)), target), _kw(copy=draw(st.sampled_from([None, True]))), signed_zeros=True)


@_composite
def _permute_dims(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_SHAPES)
    return Case(op, (draw(_arr(dtype, shape)), tuple(draw(st.permutations(range(len(shape)))))), signed_zeros=True)


@_composite
def _joining(draw: Any, op: str, dtype: DType) -> Case:
    count = draw(st.integers(1, 3))
    if op == "stack":
        shape = draw(_SHAPES)
        parts = [draw(_arr(dtype, shape)) for _ in range(count)]
        return Case(op, (parts,), _kw(axis=draw(st.integers(-len(shape) - 1, len(shape)))), signed_zeros=True)
    axis = draw(st.one_of(st.none(), st.integers(-3, 2)))
    shape = draw(_SHAPES if axis is None else nst.shapes(min_dims=max(1, axis + 1 if axis >= 0 else -axis)))
    parts = []
    for _ in range(count):
        s = list(shape)
        if axis is not None:
            s[axis] = draw(st.integers(0, 3))
        parts.append(draw(_arr(dtype, tuple(s))))
    return Case(op, (parts,), {"axis": axis}, signed_zeros=True)


@_composite
def _expand_dims(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_SHAPES)
    return Case(op, (draw(_arr(dtype, shape)),), {"axis": draw(st.integers(-len(shape) - 1, len(shape)))}, signed_zeros=True)


@_composite
def _squeeze(draw: Any, op: str, dtype: DType) -> Case:
    shape = list(draw(nst.shapes(max_dims=2)))
    ones = draw(st.integers(0, 2))
    for _ in range(ones):
        shape.insert(draw(st.integers(0, len(shape))), 1)
    candidates = [i for i, n in enumerate(shape) if n == 1]
    chosen = draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else []
    axis: Any = chosen[0] if len(chosen) == 1 and draw(st.booleans()) else tuple(chosen)
    return Case(op, (draw(_arr(dtype, tuple(shape))), axis), signed_zeros=True)


@_composite
def _flip(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_SHAPES)
    return Case(op, (draw(_arr(dtype, shape)),), _kw(axis=draw(_axes(len(shape)))), signed_zeros=True)


@_composite
def _roll(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_SHAPES)
    ndim = len(shape)
    axis = draw(_axes(ndim))
    if isinstance(axis, tuple) and axis:
        shift: Any = tuple(draw(st.integers(-5, 5)) for _ in axis)
    else:
        axis = None if isinstance(axis, tuple) else axis
        shift = draw(st.integers(-5, 5))
    return Case(op, (draw(_arr(dtype, shape)), shift), _kw(axis=axis), signed_zeros=True)


@_composite
def _broadcast_to(draw: Any, op: str, dtype: DType) -> Case:
    shapes = draw(nst.mutually_broadcastable_shapes(2, min_side=0))
    return Case(op, (draw(_arr(dtype, shapes.input_shapes[0])), shapes.result_shape), signed_zeros=True)


# ----------------------------------------------------------------------------- products, selection, casts


@_composite
def _matmul(draw: Any, op: str, dtype: DType) -> Case:
    batch = draw(nst.mutually_broadcastable_shapes(2, max_dims=2, max_side=3)).input_shapes
    n, k, m = (draw(_SIDE) for _ in range(3))
    s1 = (k,) if draw(st.booleans()) else batch[0] + (n, k)
    s2 = (k,) if len(s1) > 1 and draw(st.booleans()) else batch[1] + (k, m)
    repair = accumulation_repair(op)
    return Case(op, (draw(_arr(dtype, s1, repair)), draw(_arr(dtype, s2, repair))))


@_composite
def _tensordot(draw: Any, op: str, dtype: DType) -> Case:
    side = _SIDE
    contracted = tuple(draw(side) for _ in range(draw(st.integers(0, 2))))
    a = tuple(draw(side) for _ in range(draw(st.integers(0, 2))))
    b = tuple(draw(side) for _ in range(draw(st.integers(0, 2))))
    repair = accumulation_repair(op)
    if len(contracted) == 1 and draw(st.booleans()):  # explicit axes: contract x1's first axis with x2's last
        return Case(op, (draw(_arr(dtype, contracted + a, repair)), draw(_arr(dtype, b + contracted, repair))), {"axes": ((0,), (len(b),))})
    return Case(op, (draw(_arr(dtype, a + contracted, repair)), draw(_arr(dtype, contracted + b, repair))), {"axes": len(contracted)})


@_composite
def _vecdot(draw: Any, op: str, dtype: DType) -> Case:
    batch = draw(nst.mutually_broadcastable_shapes(2, max_dims=2, max_side=3)).input_shapes
    k = draw(_SIDE)
    repair = accumulation_repair(op)
    return Case(op, (draw(_arr(dtype, batch[0] + (k,), repair)), draw(_arr(dtype, batch[1] + (k,), repair))))


@_composite
def _where(draw: Any, op: str, dtype: DType) -> Case:
    shapes = draw(nst.mutually_broadcastable_shapes(3, min_side=0)).input_shapes
    cond = Arr(nst.draw_host_array(draw, nda.bool, shapes[0]))
    x1 = draw(_arr(dtype, shapes[1]))
    x2 = draw(_scalar(dtype)) if draw(st.booleans()) else draw(_arr(dtype, shapes[2]))
    return Case(op, (cond, x1, x2), signed_zeros=True)


@_composite
def _astype(draw: Any, op: str, dtype: DType) -> Case:
    target = draw(st.sampled_from(cast_targets(dtype)))
    return Case(op, (draw(_arr(dtype, draw(_SHAPES), lambda a: cast_safe(a, target))), target), signed_zeros=True)


def _wrap_key(key: Any) -> Any:
    if isinstance(key, np.ndarray):
        return Arr(key)
    if isinstance(key, tuple):
        return tuple(_wrap_key(k) for k in key)
    return key


def _host_key(key: Any) -> Any:
    if isinstance(key, Arr):
        return key.base
    if isinstance(key, tuple):
        return tuple(_host_key(k) for k in key)
    return key


@_composite
def _getitem(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_SHAPES)
    key = draw(nst.index_expressions(shape, host=True))
    return Case(op, (draw(_arr(dtype, shape)), _wrap_key(key)), signed_zeros=True)


@_composite
def _setitem(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_SHAPES)
    key = _wrap_key(draw(nst.index_expressions(shape, host=True, unique=True)))
    selected = np.empty(shape, np.int8)[_host_key(key)].shape
    if draw(st.booleans()):
        value: Any = draw(_scalar(dtype))
    else:
        value = draw(_arr(dtype, draw(nst.broadcastable_shapes(selected))))
    return Case(op, (draw(_arr(dtype, shape, views=False)), key, value), signed_zeros=True)


# ----------------------------------------------------------------------------- creation


@_composite
def _filled(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(nst.shapes())
    args: tuple[Any, ...] = (shape, draw(_scalar(dtype))) if op == "full" else (shape,)
    return Case(op, args, {"dtype": dtype, "device": DEVICE}, check_values=op != "empty", signed_zeros=True)


@_composite
def _like(draw: Any, op: str, dtype: DType) -> Case:
    x = draw(_arr(dtype, draw(_SHAPES)))
    args: tuple[Any, ...] = (x, draw(_scalar(dtype))) if op == "full_like" else (x,)
    return Case(op, args, check_values=op != "empty_like", signed_zeros=True)


@_composite
def _asarray(draw: Any, op: str, dtype: DType) -> Case:
    host = nst.draw_host_array(draw, dtype, draw(_SHAPES))
    return Case(op, (Raw(host),), {"device": DEVICE, **_kw(copy=draw(st.sampled_from([None, True])))}, signed_zeros=True)


@_composite
def _arange(draw: Any, op: str, dtype: DType) -> Case:
    if dtype.category in ("real floating", "complex floating"):  # complex: real values as complex numbers (NumPy's)
        start, stop = (draw(st.integers(-40, 40)) / 4 for _ in range(2))
        step: Any = draw(st.sampled_from([1.0, 0.5, -0.5, 0.25, 1.5, -2.0]))
    else:
        info = np.iinfo(dtype.numpy)
        bounds = st.integers(max(int(info.min), -60), min(int(info.max), 60))
        start, stop = draw(bounds), draw(bounds)
        step = draw(st.integers(-5, 5).filter(bool))
    return Case(op, (start, stop, step), {"dtype": dtype, "device": DEVICE})


@_composite
def _linspace(draw: Any, op: str, dtype: DType) -> Case:
    value = st.integers(-40, 40).map(lambda v: v / 4)
    start, stop = draw(value), draw(value)
    if dtype.category == "complex floating" and draw(st.booleans()):
        start, stop = complex(start, draw(value)), complex(stop, draw(value))
    kwargs: dict[str, Any] = {"dtype": dtype, "device": DEVICE}
    if draw(st.booleans()):
        kwargs["endpoint"] = False
    return Case(op, (start, stop, draw(st.integers(0, 6))), kwargs)


@_composite
def _eye(draw: Any, op: str, dtype: DType) -> Case:
    rows = draw(st.integers(0, 4))
    cols = draw(st.one_of(st.none(), st.integers(0, 4)))
    args = (rows,) if cols is None else (rows, cols)
    return Case(op, args, {**_kw(k=draw(st.integers(-4, 4)) or None), "dtype": dtype, "device": DEVICE}, signed_zeros=True)


# ----------------------------------------------------------------------------- registry

_GENERIC: dict[str, Callable[[str, DType], Any]] = {}
for _names, _builder in [
    (("sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax", "all", "any"), _reduction),
    (("cumulative_sum",), _cumulative_sum),
    (("sort", "argsort"), _sorting),
    (("reshape",), _reshape),
    (("permute_dims",), _permute_dims),
    (("concat", "stack"), _joining),
    (("expand_dims",), _expand_dims),
    (("squeeze",), _squeeze),
    (("flip",), _flip),
    (("roll",), _roll),
    (("broadcast_to",), _broadcast_to),
    (("matmul",), _matmul),
    (("tensordot",), _tensordot),
    (("vecdot",), _vecdot),
    (("where",), _where),
    (("astype",), _astype),
    (("getitem",), _getitem),
    (("setitem",), _setitem),
    (("zeros", "ones", "empty", "full"), _filled),
    (("zeros_like", "ones_like", "empty_like", "full_like"), _like),
    (("asarray",), _asarray),
    (("arange",), _arange),
    (("linspace",), _linspace),
    (("eye",), _eye),
]:
    for _name in _names:
        _GENERIC[_name] = _builder

from ._generators_std import STANDARD  # noqa: E402  (the rest of the standard; it builds on the blocks above)

_GENERIC.update(STANDARD)

from ._generators_more import MORE  # noqa: E402  (nda's additions: random ops, einsum)

_GENERIC.update(MORE)

#: Ops the kit can generate inputs for (every element-wise op, plus the tables above).
GENERATED_OPS = frozenset(_GENERIC) | {n for n, d in CATALOG.items() if d.family in ("unary", "binary")}


def for_layout(strategy: Any, dtype: DType, layout: Any) -> Any:
    """``strategy`` for a cell of a non-strided layout: 0-d and 1-d arrays of the cell's dtype
    (the ones the kit converts) get leading axes of 1 up to 2-d, the least a sparse layout
    holds (csr is 2-d only), so that fewer drawn cases are refused; the rest stay as drawn."""
    if layout is None or getattr(layout, "name", layout) == "strided":
        return strategy

    def matrices(case: Case) -> Case:
        args = tuple(_matrix(a, dtype) for a in case.args)
        return case if all(a is b for a, b in zip(args, case.args)) else case.replace(args)

    return strategy.map(matrices)


def _matrix(value: Any, dtype: DType) -> Any:
    if not isinstance(value, Arr) or value.base.dtype != dtype.numpy or value.base.ndim >= 2:
        return value
    return Arr(value.base.reshape((1,) * (2 - value.base.ndim) + value.base.shape), value.view)


def strategy(op: str, dtype: DType) -> Any:
    """The strategy of ``op``'s cases whose kernel key has ``dtype``; None if the kit has no generator."""
    decl = CATALOG[op]
    if decl.family == "unary":
        return _unary(op, dtype)
    if decl.family == "binary":
        return _binary(op, dtype)
    builder = _GENERIC.get(op)
    if builder is None and getattr(decl, "inputs", None):
        return _declared_inputs(op, dtype, decl.inputs, decl.options)  # an op library's op says what it takes
    return None if builder is None else builder(op, dtype)


@_composite
def _declared_inputs(draw: Any, op: str, dtype: DType, inputs: tuple[str, ...], options: dict[str, tuple[Any, ...]]) -> Case:
    """Cases of an extension op from its declared ``inputs``: arrays of mutually broadcastable
    shapes and Python scalars of the cell's dtype, keyword values from ``options``."""
    shapes = iter(draw(nst.mutually_broadcastable_shapes(max(1, inputs.count("array")), min_side=0)).input_shapes)
    args = tuple(draw(_arr(dtype, next(shapes))) if kind == "array" else draw(_scalar(dtype)) for kind in inputs)
    kwargs = {name: draw(st.sampled_from(list(values))) for name, values in options.items()}
    return Case(op, args, kwargs, signed_zeros=True)
