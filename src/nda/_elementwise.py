"""Generated element-wise functions and operators: the hottest path in nda.

For each element-wise declaration (``family`` ``"unary"`` or ``"binary"``) this module
makes the public function and, for binary ops, the forward, reflected and in-place
operator methods. Each function owns one cache (:class:`EntryCache`): the argument
metadata (``meta``, ``(meta1, meta2)``, or ``(meta1, int)`` for a Python scalar) maps to
``(kernel, out_meta)``, the kernel with its casts folded in. A hit costs one dict lookup,
a shape comparison, the comparison ``size < engine.state.limit`` and the kernel call; the
caches are cleared whenever dispatch's tables or settings change (``dispatch.dependents``),
so an entry never outlives the resolution it was made from. A miss, or a call that does not
run inline, goes to the slow path, which first asks the invocation point for the calling
thread's interceptors (:func:`nda._execute.invoke`), then plans (validation,
promotion, casts, errors) and fills the cache.

Element-wise plans read no argument's value, so metadata is all an entry depends on.

Layer: arrays and front end, generators (README, "Architecture").
"""

from __future__ import annotations

from math import prod
from typing import Any, Callable

import numpy as np
from numpy import generic as _NP_SCALAR

from . import _dtypes, _execute, _hostviews, _intercept
from . import backends as _backends
from . import layouts as _layouts
from ._array import NDArray
from ._devices import ArrayMeta
from ._devices import strided as _STRIDED
from ._dtypes import python_scalar
from ._execute import EntryCache, Site, Task, foreign_operand, invoke, native, native_operator, run_elementwise, submit, touches_failed, zero_d_buffer
from .dispatch import generation as _generation
from .dispatch import remember, resolve, resolve_plan
from .engine import state as _state
from .ops.spec import Cast, OpDecl, Plan, broadcast_shapes

__all__ = ["make_unary", "make_binary", "make_inplace", "native", "native_operator"]

_new = object.__new__
_SCALARS = (bool, int, float, complex)
_ACTIVE = _intercept.ACTIVE
_WRITES = _intercept.WRITES
_local = _intercept._local  # the calling thread's interceptors: stack (its own flag, never the engine's limit)
_HOST_FAMILIES = _hostviews.FAMILIES
_NO_KWARGS: dict[str, Any] = {}  # never written: the slow paths pass it to invoke() as the call's keywords


# ---------------------------------------------------------------------------- entries


def _entry_from_plan(decl: OpDecl, plan: Plan) -> tuple[Callable[..., Any], ArrayMeta]:
    """A cache entry: the route's kernel with its casts folded in, and the output metadata
    (the fast paths cache the callable, never the route: a hit costs one call)."""
    route = resolve_plan(decl.name, plan)
    kernel, layout = route.run, route.layout
    casts = [a.dtype if a.__class__ is Cast else None for a in plan.args]
    if any(casts):
        kernel = _with_casts(kernel, casts, plan)
    return kernel, ArrayMeta(plan.device, plan.out_dtype, layout)


def _with_casts(kernel: Callable[..., Any], casts: list[Any], plan: Plan) -> Callable[..., Any]:
    cast_kernels = []
    for arg, dtype in zip(plan.args, casts):
        cast_kernels.append(None if dtype is None else (resolve("astype", arg.array._meta.key).run, dtype))
    if len(cast_kernels) == 1:
        ((ck, dt),) = cast_kernels

        def cast1(x: Any) -> Any:
            return kernel(ck(x, dt, copy=False))

        return cast1

    def cast2(x1: Any, x2: Any) -> Any:
        c1, c2 = cast_kernels
        if c1 is not None:
            x1 = c1[0](x1, c1[1], copy=False)
        if c2 is not None:
            x2 = c2[0](x2, c2[1], copy=False)
        return kernel(x1, x2)

    return cast2


def _int_fits(value: int, array_meta: ArrayMeta) -> bool:
    bounds = _INT_BOUNDS.get(array_meta.dtype)
    return bounds is None or bounds[0] <= value <= bounds[1]


_INT_BOUNDS = {d: (int(np.iinfo(d.numpy).min), int(np.iinfo(d.numpy).max)) for d in _dtypes.CATEGORIES["integer"]}


# ---------------------------------------------------------------------------- unary


def make_unary(decl: OpDecl) -> Callable[..., NDArray]:
    cache = EntryCache()
    name = decl.name
    plan_fn = decl.plan

    def body(args: tuple[Any, ...], kwargs: dict[str, Any]) -> NDArray:
        """A miss, or a call that does not run inline (after the interceptors: ``invoke``)."""
        x = args[0]
        entry = cache.get(x._meta) if x.__class__ is NDArray else None
        if entry is None:
            seen = _generation[0]
            plan = plan_fn(x)  # validates: raises the TypeError of a wrong argument
            entry = remember(cache, x._meta, _entry_from_plan(decl, plan), seen)
        kernel, meta = entry
        return run_elementwise(name, kernel, (x,), meta, x._shape)

    def slow(x: Any) -> NDArray:
        return invoke(site, (x,), _NO_KWARGS)  # type: ignore[no-any-return]

    def fn(x: Any, /) -> NDArray:
        try:
            kernel, meta = cache[x._meta]
        except (KeyError, AttributeError):
            return slow(x)
        if x._size < _state.limit and (not _ACTIVE[0] or not _local.stack.pushed) and (not _state.failed or not touches_failed((x,))):
            out = _new(NDArray)
            out._buf = kernel(x._buf) if x._shape else zero_d_buffer(kernel(x._buf), meta)
            out._meta = meta
            out._shape = x._shape
            out._size = x._size
            out._base = None
            return out
        return slow(x)

    site = Site(decl, fn, body)
    fn._nda_cache = cache  # type: ignore[attr-defined]  # the operator's C fast path reads it too (native_operator)
    return fn


# ---------------------------------------------------------------------------- binary


def make_binary(decl: OpDecl) -> tuple[Callable[..., NDArray], Callable[..., Any], Callable[..., Any]]:
    """The public function plus the forward and reflected operator methods."""
    cache = EntryCache()
    cache_get = cache.get
    name = decl.name
    plan_fn = decl.plan
    forward_name = decl.operators[0] if decl.operators else ""
    reflected_name = decl.operators[1] if len(decl.operators) > 1 and not decl.operators[1].startswith("__i") else ""

    def body(args: tuple[Any, ...], kwargs: dict[str, Any]) -> NDArray:
        """Cache misses, and calls that do not run inline (after the interceptors: ``invoke``)."""
        x1, x2 = args
        k1 = x1._meta if x1.__class__ is NDArray else x1.__class__
        k2 = x2._meta if x2.__class__ is NDArray else x2.__class__
        entry = cache_get((k1, k2))
        if (
            entry is None
            or (x1.__class__ is int and k2.__class__ is ArrayMeta and not _int_fits(x1, k2))
            or (x2.__class__ is int and k1.__class__ is ArrayMeta and not _int_fits(x2, k1))
        ):
            seen = _generation[0]
            plan = plan_fn(x1, x2)  # validates; raises the errors (an int out of range: OverflowError)
            entry = remember(cache, (k1, k2), _entry_from_plan(decl, plan), seen)
            shape = plan.out_shape
        elif k1.__class__ is not ArrayMeta:
            shape = x2._shape
        elif k2.__class__ is not ArrayMeta:
            shape = x1._shape
        else:
            shape = x1._shape if x1._shape == x2._shape else broadcast_shapes(x1._shape, x2._shape)
        kernel, meta = entry
        return run_elementwise(name, kernel, (x1, x2), meta, shape)

    def slow(x1: Any, x2: Any) -> NDArray:
        return invoke(site, (x1, x2), _NO_KWARGS)  # type: ignore[no-any-return]

    compares = name in ("equal", "not_equal")
    symbol = "==" if name == "equal" else "!="

    def build(as_operator: bool) -> Callable[..., Any]:
        # The public function and the forward operator share this body (one closure each) so
        # that ``x + y`` runs in a single Python frame. They differ only in what an unsupported
        # operand does: the operator returns NotImplemented (or lets a foreign operand take
        # over) so that Python can try the other operand, the function goes to the planner,
        # which raises the TypeError.
        def binary(x1: Any, x2: Any, /) -> Any:
            c2 = x2.__class__
            if c2 is NDArray and x1.__class__ is NDArray:
                entry = cache_get((x1._meta, x2._meta))
                if entry is not None:
                    shape = x1._shape
                    if shape is x2._shape or shape == x2._shape:
                        size = x1._size
                    else:
                        shape = broadcast_shapes(shape, x2._shape)
                        size = prod(shape)
                    if size < _state.limit and (not _ACTIVE[0] or not _local.stack.pushed) and (not _state.failed or not touches_failed((x1, x2))):
                        kernel, meta = entry
                        out = _new(NDArray)
                        buf = kernel(x1._buf, x2._buf)
                        out._buf = buf if shape else zero_d_buffer(buf, meta)
                        out._meta = meta
                        out._shape = shape
                        out._size = size
                        out._base = None
                        return out
                return slow(x1, x2)
            if c2 is float or (c2 is int and x1.__class__ is NDArray and _int_fits(x2, x1._meta)):
                # ``x * 0.5``, ``x + 1``: inlined
                if x1.__class__ is NDArray:
                    entry = cache_get((x1._meta, c2))
                    size = x1._size
                    if (
                        entry is not None
                        and size < _state.limit
                        and (not _ACTIVE[0] or not _local.stack.pushed)
                        and (not _state.failed or not touches_failed((x1,)))
                    ):
                        kernel, meta = entry
                        shape = x1._shape
                        out = _new(NDArray)
                        buf = kernel(x1._buf, x2)
                        out._buf = buf if shape else zero_d_buffer(buf, meta)
                        out._meta = meta
                        out._shape = shape
                        out._size = size
                        out._base = None
                        return out
                    return slow(x1, x2)
            elif c2 in _SCALARS and x1.__class__ is NDArray:
                return slow(x1, x2)
            elif c2 is NDArray and x1.__class__ is float:  # ``2.0 * x`` (reflected): inlined too
                entry = cache_get((float, x2._meta))
                size = x2._size
                if (
                    entry is not None
                    and size < _state.limit
                    and (not _ACTIVE[0] or not _local.stack.pushed)
                    and (not _state.failed or not touches_failed((x2,)))
                ):
                    kernel, meta = entry
                    shape = x2._shape
                    out = _new(NDArray)
                    buf = kernel(x1, x2._buf)
                    out._buf = buf if shape else zero_d_buffer(buf, meta)
                    out._meta = meta
                    out._shape = shape
                    out._size = size
                    out._base = None
                    return out
                return slow(x1, x2)
            elif c2 is NDArray and x1.__class__ in _SCALARS:
                return slow(x1, x2)
            # Off the fast paths: a NumPy scalar is the (weak) Python scalar it holds.
            if isinstance(x2, _NP_SCALAR) and x1.__class__ is NDArray:
                return binary(x1, python_scalar(x2))
            if isinstance(x1, _NP_SCALAR) and c2 is NDArray:
                return binary(python_scalar(x1), x2)
            if as_operator:
                if compares and isinstance(x2, (list, tuple)):
                    # Python would fall back to identity (``x == [0, 1]`` is False): refused as ``x + [0, 1]`` is.
                    raise TypeError(
                        f"{symbol} compares nda arrays with nda arrays and Python scalars, got a {type(x2).__name__}; convert it with nda.asarray()"
                    )
                return foreign_operand(x2, reflected_name, x1)
            return slow(x1, x2)

        return binary

    fn = build(False)
    forward = build(True)
    site = Site(decl, fn, body)
    fn._nda_cache = forward._nda_cache = cache  # type: ignore[attr-defined]

    def reflected(self: NDArray, other: Any) -> Any:
        if other.__class__ in _SCALARS:
            return fn(other, self)
        if isinstance(other, _NP_SCALAR):
            return fn(python_scalar(other), self)
        return foreign_operand(other, forward_name, self)

    return fn, forward, reflected


# ---------------------------------------------------------------------------- in place


def make_inplace(decl: OpDecl, attr: str) -> Callable[..., Any]:
    """``x op= y``: compute in the promoted dtype, store into ``x`` (same-kind cast, no broadcasting of x)."""
    cache = EntryCache()
    name = decl.name
    entry_point = _execute.inplace_entry(decl, attr)
    what = f"x {_OPERATOR_SYMBOL.get(name, name)}= y"
    label = name + " (in-place)"

    def inplace(self: NDArray, other: Any) -> Any:
        if other.__class__ is not NDArray and other.__class__ not in _SCALARS:
            if not isinstance(other, _NP_SCALAR):
                return NotImplemented
            other = python_scalar(other)
        key = (self._meta, other._meta if other.__class__ is NDArray else other.__class__)
        entry = cache.get(key)
        if (
            entry is not None
            and entry[1]
            and self._size < _state.limit
            and not _WRITES
            and (not _ACTIVE[0] or not _local.stack.pushed)
            and (not _state.failed or not touches_failed((self, other)))
        ):
            if other.__class__ is NDArray:
                if other._shape == self._shape or broadcast_shapes(self._shape, other._shape) == self._shape:
                    buf = self._buf
                    entry[0](buf, other._buf, buf)
                    return self
            elif other.__class__ is not int or _int_fits(other, self._meta):
                buf = self._buf
                entry[0](buf, other, buf)
                return self
        return slow(self, other, key, entry)

    def slow(self: NDArray, other: Any, key: Any, entry: Any) -> Any:
        return invoke(site, (self, other), _NO_KWARGS, key, entry)

    def body(args: tuple[Any, ...], kwargs: dict[str, Any], key: Any, entry: Any) -> Any:
        """A miss, a write with hooks, or a call that does not run inline (after the interceptors: ``invoke``)."""
        self, other = args
        if _WRITES:
            _execute.notify_write(self, other, what)
        if entry is None:
            seen = _generation[0]
            entry = remember(cache, key, _plan_inplace(decl, self, other), seen)
        elif other.__class__ is NDArray and other._shape != self._shape and broadcast_shapes(self._shape, other._shape) != self._shape:
            raise ValueError(
                f"{name}: in-place result of shape {broadcast_shapes(self._shape, other._shape)} does not fit the target's shape {self._shape}"
            )
        elif other.__class__ is int and not _int_fits(other, self._meta):
            decl.plan(self, other)  # raises the OverflowError with its message
        kernel, direct = entry
        if direct:  # into the target's memory: no temporary (a large one costs its page faults)

            def apply(buf: Any, operand: Any) -> None:
                kernel(buf, operand, buf)
        else:
            store = _store_kernel(self)

            def apply(buf: Any, operand: Any) -> None:
                store(buf, kernel(buf, operand))

        reads = (self, other) if other.__class__ is NDArray else (self,)
        submit(Task(label, apply, (self, other), _NO_KWARGS, (), reads, self._meta.device, self._size, route=kernel, target=_execute.base_of(self)))
        return self

    site = Site(entry_point, inplace, body)
    return inplace


def _plan_inplace(decl: OpDecl, target: NDArray, other: Any) -> tuple[Callable[..., Any], bool]:
    """The entry of ``target op= other``: (kernel, direct), after the checks NumPy makes."""
    name = decl.name
    plan = decl.plan(target, other)
    if plan.out_shape != target._shape:
        raise ValueError(f"{name}: in-place result of shape {plan.out_shape} does not fit the target's shape {target._shape}")
    if not _dtypes.same_kind_castable(plan.out_dtype, target._meta.dtype):
        raise TypeError(
            f"{name}: cannot store the {plan.out_dtype.name} result in place in a {target._meta.dtype.name} array; "
            f"use x = x {_OPERATOR_SYMBOL.get(name, name)} y to get a new array"
        )
    if target._meta.layout is not _STRIDED and _layouts.out_layout(name, plan) is not target._meta.layout:
        raise TypeError(
            f"{name}: the result of this in-place op on a {target._meta.layout.name} array would be {_layouts.out_layout(name, plan).name} "
            f"(the op does not keep unstored elements zero); use x = x {_OPERATOR_SYMBOL.get(name, name)} y to get a new array"
        )
    kernel, meta = _entry_from_plan(decl, plan)
    if target._meta.layout is not _STRIDED and meta.dtype is not target._meta.dtype:
        kernel = _cast_result(kernel, meta, target._meta.dtype)
    # "direct": a NumPy ufunc computing in x's own dtype can write straight into x (not on a
    # device whose backend may make host views: a write there may have host views to update).
    direct = meta is target._meta and getattr(kernel, "nin", None) is not None and not _backends.handle(target._meta.device).host_views
    return kernel, direct


def _store_kernel(target: NDArray) -> Callable[[Any, Any], None]:
    if target._meta.layout is not _STRIDED:
        return _rebind_kernel(target)
    setitem = resolve("setitem", target._meta.key).run
    base = _execute.base_of(target)
    if _HOST_FAMILIES and id(base) in _HOST_FAMILIES:
        setitem = _hostviews.writing("setitem", setitem, target, base)  # keeps host views in step
    dtype = target._meta.dtype
    astype = resolve("astype", target._meta.key).run

    def store(buf: Any, value: Any) -> None:
        setitem(buf, (), astype(value, dtype, copy=False) if getattr(value, "dtype", None) != dtype.numpy else value)

    return store


def _cast_result(kernel: Callable[..., Any], meta: ArrayMeta, dtype: _dtypes.DType) -> Callable[..., Any]:
    """``kernel`` followed by a cast of its (non-strided) result to ``dtype`` on its device."""
    astype = resolve("astype", meta.key).run

    def cast_after(x1: Any, x2: Any) -> Any:
        return astype(kernel(x1, x2), dtype, copy=False)

    return cast_after


def _rebind_kernel(target: NDArray) -> Callable[[Any, Any], None]:
    """In place on a non-strided array: the new buffer (same layout) replaces the old one.

    Such arrays have no views, so rebinding is invisible except through ``target``; the
    engine orders it as a write of ``target``.
    """

    def store(buf: Any, value: Any) -> None:
        target._buf = value

    return store


_OPERATOR_SYMBOL = {
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "divide": "/",
    "floor_divide": "//",
    "remainder": "%",
    "pow": "**",
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
    "bitwise_left_shift": "<<",
    "bitwise_right_shift": ">>",
    "matmul": "@",
}
