"""Generated functions of the ops that plan (everything but element-wise ops), and ``x[i]``.

Planning (validation, promotion, output shape) is pure Python and costs microseconds, but a
plan usually depends only on the metadata of the array arguments and the values of the
others. So each op memoises its plan per such key and, on a hit, calls the kernel directly:

* an arrays-only fast path for ``op(x)`` / ``op(x1, x2)`` without keywords (``sum(x)``,
  ``x @ y``): one dict lookup keyed by the arrays' metadata, shapes and aliasing;
* a general memo keyed by :func:`_memo_key`, with a *recipe* that rebuilds the kernel
  arguments from a later call's arguments (array, cast array or constant per position).

**A plan that read a value is never memoised.** Some planners read the *value* of an
argument that may be a 0-d array (``linspace``'s ``start``, ``roll``'s ``shift``,
``matrix_power``'s ``n``) and bake it into the kernel's arguments; a memo keyed by metadata
would give every later call the first call's answer. The catalog declares such parameters
(``host_values``): a call passing an array there is not memoised. As a net for planners
that read values undeclared, a plan during which any array was read on the host
(``nda._array.HOST_READS`` moved) is not memoised either.

Calls whose arguments are not hashable (index arrays, lists, slices before Python 3.12)
plan every time, as do calls on a device whose backend may make host views (their views
are made by :func:`nda._execute.execute`). Both caches belong to the generated function and
are cleared whenever dispatch changes (``dispatch.dependents``).

Layer: arrays and front end, generators (README, "Architecture").
"""

from __future__ import annotations

import struct
from collections import namedtuple
from functools import partial
from math import prod
from typing import Any, Callable

import numpy as np

from . import _intercept
from . import backends as _backends
from ._array import HOST_READS, NDArray
from ._devices import ArrayMeta
from ._devices import strided as _STRIDED
from ._execute import native as _native
from ._signatures import result_name
from ._execute import (
    _ACTIVE,
    _META,
    EntryCache,
    Site,
    _local,
    foreign_operand,
    base_of,
    execute,
    execute_multi,
    execute_mutation,
    invoke,
    notify_write,
    touches_failed,
    work_size,
    zero_d_buffer,
)
from .dispatch import generation as _generation
from .dispatch import HOST_VIEW, remember, resolve, resolve_plan
from .engine import state as _state
from .ops.spec import SURELY_FITS, Cast, OpDecl, Plan, check_size

__all__ = ["make_generic", "make_multi", "make_getitem"]

_new = object.__new__
_NP_INEXACT = (np.floating, np.complexfloating)
_PACK = struct.Struct("<d").pack  # a float's bit pattern, for the memo keys
_MEMO_LIMIT = 512  # memoised plans per op; past it the op's cache starts over
_WRITES = _intercept.WRITES


def _memo_key(args: tuple[Any, ...], kwargs: dict[str, Any], host_positions: frozenset[int], host_names: frozenset[str]) -> tuple[Any, ...] | None:
    """What a plan of these arguments depends on: metadata of the arrays, values of the rest.

    None when the plan may not be memoised: an array passed for a parameter the catalog
    declares as read on the host, or an argument that is not hashable (an NDArray inside an
    index, a list, a slice before Python 3.12).
    """
    parts = []
    for i, a in enumerate(args):
        if type(a) is NDArray:  # type(): an nda dtype's __class__ is a property (NumPy's dtype class)
            if i in host_positions:
                return None
            # Which earlier argument is this very array (vecdot(v, v) vs vecdot(v, w)): the
            # recipe maps kernel arguments to call arguments by position, so aliasing is
            # part of what the plan depends on.
            alias = i
            for j in range(i):
                if args[j] is a:
                    alias = j
                    break
            parts.append((a._meta, a._shape, alias))
        else:
            parts.append(_typed(a))
    if kwargs:
        for k, v in kwargs.items():
            if k in host_names and v.__class__ is NDArray:
                return None
        kw = tuple((k, _typed(v)) for k, v in kwargs.items())
    else:
        kw = ()
    key = (tuple(parts), kw)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _typed(value: Any) -> Any:
    """``value`` tagged with its type, so that ``1``, ``True`` and ``1.0`` key different plans."""
    cls = type(value)  # not value.__class__, which an nda dtype answers with NumPy's dtype class (a property)
    if cls is tuple:
        return (tuple, tuple(_typed(v) for v in value))
    if cls is float:
        return (float, _PACK(value))  # by bit pattern: 0.0 == -0.0 and nan vs -nan (hex() says 'nan' for both) fill differently
    if cls is complex:
        return (complex, _PACK(value.real), _PACK(value.imag))
    if issubclass(cls, _NP_INEXACT):
        return (cls, value.tobytes())  # NumPy's -0.0 == 0.0 too, and every NaN differs: by bit pattern
    return (cls, value)


def _recipe(plan: Plan, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """How to rebuild the kernel arguments from a later call's arguments, or None if impossible.

    Each kernel argument is either a user array (``(0, j)``), a user array cast on the way
    in (``(1, j, cast_kernel, dtype)``) or a constant (``(2, value)``) that holds no array.
    """
    steps = []
    for a in plan.args:
        if a.__class__ is NDArray or a.__class__ is Cast:
            arr = a if a.__class__ is NDArray else a.array
            j = next((j for j, u in enumerate(args) if u is arr), None)
            if j is None:
                return None  # an array the call did not pass (made by the planner): plan every time
            steps.append((0, j) if a is arr else (1, j, resolve("astype", arr._meta.key).run, a.dtype))
        elif a.__class__ in (list, tuple) and any(v.__class__ in (NDArray, Cast) for v in a):
            return None
        else:
            steps.append((2, a))
    if any(v.__class__ in (NDArray, Cast) for v in plan.kwargs.values()):
        return None
    return tuple(steps)


def _host_value_params(decl: OpDecl) -> tuple[frozenset[int], frozenset[str]]:
    names = frozenset(getattr(decl, "host_values", ()))
    positions = frozenset(i for i, p in enumerate(decl.signature.parameters.values()) if p.name in names and p.kind is not p.KEYWORD_ONLY)
    return positions, names


def make_generic(decl: OpDecl) -> Callable[..., Any]:
    """Ops that plan: the plan is memoised per argument metadata, so a repeated call skips it."""
    plan_fn = decl.plan
    name = decl.name
    view = decl.view
    host_positions, host_names = _host_value_params(decl)
    fast_allowed = not (host_positions & {0, 1})

    if decl.mutates:

        def mutating(*args: Any, **kwargs: Any) -> Any:
            return invoke(site, args, kwargs)

        def mutate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if _WRITES and args:
                notify_write(args[0], args[-1] if len(args) > 1 else None, f"{name}()" if name != "setitem" else "x[...] = value")
            plan = plan_fn(*args, **kwargs)
            execute_mutation(name, plan, args[0])

        site = Site(decl, mutating, mutate)
        return mutating

    memo = EntryCache()
    fast = EntryCache()

    def fn(*args: Any, **kwargs: Any) -> Any:
        # Fastest path: ``op(x)`` or ``op(x1, x2)`` with arrays only and no keywords (``sum(x)``,
        # ``x @ y``), whose kernel takes exactly those buffers. Keyed by the arrays' metadata
        # and shapes (and whether the two are the same array).
        if not kwargs:
            n = len(args)
            x1 = args[0] if n else None
            if n == 1:
                fast_key = (x1._meta, x1._shape) if x1.__class__ is NDArray else None
            elif n == 2:
                x2 = args[1]
                fast_key = (x1._meta, x1._shape, x2._meta, x2._shape, x1 is x2) if x1.__class__ is NDArray and x2.__class__ is NDArray else None
            else:
                fast_key = None
            if fast_key is not None:
                entry = fast.get(fast_key)
                if (
                    entry is not None
                    and entry[3] < _state.limit
                    and (not _ACTIVE[0] or not _local.stack.pushed)
                    and (not _state.failed or not touches_failed(args))
                ):
                    kernel, meta, shape, work, size, is_view = entry
                    result = kernel(x1._buf) if n == 1 else kernel(x1._buf, x2._buf)
                    out = _new(NDArray)
                    out._buf = result if shape else zero_d_buffer(result, meta)
                    out._meta = meta
                    out._shape = shape
                    out._size = size
                    out._base = base_of(x1) if is_view else None
                    return out
        else:
            fast_key = None
        key = _memo_key(args, kwargs, host_positions, host_names) if args and args[0].__class__ is NDArray else None
        entry = memo.get(key) if key is not None else None
        if entry is not None:
            if _ACTIVE[0] and _local.stack.pushed:  # the calling thread intercepts calls: the slow path
                entry = None
            elif not entry[5] < _state.limit:  # the engine is busy
                entry = None  # planned again, and ordered by the engine
            elif _state.failed and touches_failed(args):  # a failed array kept: the engine decides
                entry = None
            if entry is not None:
                kernel, meta, shape, steps, kernel_kwargs, work, size, is_view = entry
                kernel_args = [args[s[1]]._buf if s[0] == 0 else s[1] if s[0] == 2 else s[2](args[s[1]]._buf, s[3], copy=False) for s in steps]
                out = _new(NDArray)
                result = kernel(*kernel_args, **kernel_kwargs)
                out._buf = result if shape else zero_d_buffer(result, meta)
                out._meta = meta
                out._shape = shape
                out._size = size
                out._base = base_of(args[0]) if is_view else None  # a view op's plan may copy (flatten, reshape(copy=True))
                return out
        return invoke(site, args, kwargs, key, fast_key)

    def body(args: tuple[Any, ...], kwargs: dict[str, Any], key: Any, fast_key: Any) -> NDArray:
        """A miss, or a call that does not run inline (after the interceptors: ``invoke``)."""
        reads = HOST_READS[0]
        seen = _generation[0]
        plan = plan_fn(*args, **kwargs)
        if key is not None and HOST_READS[0] == reads and not getattr(plan, "values_decide_shape", False):
            memoise(plan, args, key, fast_key if fast_allowed else None, seen)
        return execute(name, plan)

    def memoise(plan: Plan, args: tuple[Any, ...], key: Any, fast_key: Any, seen: int) -> None:
        if (view or plan.view_of is not None) and _backends.handle(plan.device).host_views:
            return  # a view on a device whose views may be host views: execute() decides per call
        if plan.key.layout is _STRIDED:
            if not (plan.view_of is None or plan.view_of is args[0]):
                return
            steps = _recipe(plan, args)
            if steps is None:
                return
            route = resolve(name, plan.key)
            if route.kind is HOST_VIEW:
                return  # its results are host views, made by execute() (nda._hostviews)
        else:
            # Non-strided operands: the operands' metadata fix the route (nda.layouts.route:
            # a native kernel or the layout fallback, and the output layout), so the plan is
            # memoised like a strided one, unless a cast is needed (a cast of a sparse operand
            # has its own route) or the op is a view op (sparse results are never views).
            # Changing nda.config.fallback clears these caches, so a memoised fallback is
            # still refused once the setting says "error".
            if view:
                return
            steps = _recipe(plan, args)
            if steps is None or any(st[0] == 1 for st in steps):
                return
            route = resolve_plan(name, plan)
        kernel, layout = route.run, route.layout  # the memo keeps the route's callable (a hit calls it directly)
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
            fast.clear()
        meta = _META.get((plan.device, plan.out_dtype, layout)) or ArrayMeta(plan.device, plan.out_dtype, layout)
        work = work_size(plan, name)
        size = prod(plan.out_shape)
        if size > SURELY_FITS and layout is _STRIDED:
            check_size(name, plan.out_shape, plan.out_dtype)  # never memoised: a later call would run its kernel unchecked
        is_view = plan.view_of is not None and plan.key.layout is _STRIDED  # what execute() makes of this plan
        remember(memo, key, (kernel, meta, plan.out_shape, steps, plan.kwargs, work, size, is_view), seen)
        n = len(args)
        if fast_key is not None and len(steps) == n and all(st[0] == 0 and args[st[1]] is args[i] for i, st in enumerate(steps)):
            remember(fast, fast_key, (partial(kernel, **plan.kwargs) if plan.kwargs else kernel, meta, plan.out_shape, work, size, is_view), seen)

    site = Site(decl, fn, body)
    reflected_name = "__r" + decl.operators[0][2:] if decl.operators else ""

    def operator(self: NDArray, other: Any) -> Any:
        """``x @ y``: the arrays-only fast path of ``fn`` in the operator's own frame; another
        operand type gets NotImplemented (or a foreign operand's answer), so Python asks it."""
        if other.__class__ is not NDArray:  # a NumPy or Dask array answers through its reflected operator
            return foreign_operand(other, reflected_name, self)
        entry = fast.get((self._meta, self._shape, other._meta, other._shape, self is other))
        if (
            entry is not None
            and entry[3] < _state.limit
            and (not _ACTIVE[0] or not _local.stack.pushed)
            and (not _state.failed or not touches_failed((self, other)))
        ):
            kernel, meta, shape, work, size, is_view = entry
            result = kernel(self._buf, other._buf)
            out = _new(NDArray)
            out._buf = result if shape else zero_d_buffer(result, meta)
            out._meta = meta
            out._shape = shape
            out._size = size
            out._base = base_of(self) if is_view else None
            return out
        return fn(self, other)

    fn._nda_memo = memo  # type: ignore[attr-defined]  # for introspection and tests
    # The forward operator of a binary op (nda._namespace), behind nda._native's C fast path when
    # there is one (the same entries: (kernel, meta, shape, work, size); views are left to Python).
    fn._nda_operator = operator if _native is None or view else _native.PlannedOp(fast, operator)  # type: ignore[attr-defined]
    return fn


def make_multi(decl: OpDecl) -> Callable[..., Any]:
    """Ops with several outputs or data-dependent output shapes (``linalg.qr``, ``unique_all``).

    They plan on every call (they are not the hot path). An op with several outputs makes
    one array per output, all written by one kernel call that the engine orders like any
    other; a data-dependent op is a sync point for its inputs (:func:`nda._execute.execute_multi`).
    """
    plan_fn = decl.plan
    name = decl.name
    outputs = decl.outputs
    named = outputs is not None and outputs != ("*",)
    result_type = namedtuple(result_name(name), outputs) if named else None  # type: ignore[misc]

    def fn(*args: Any, **kwargs: Any) -> Any:
        return invoke(site, args, kwargs)

    def body(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        plan = plan_fn(*args, **kwargs)
        arrays = execute_multi(name, plan, outputs is not None, decl.data_dependent)
        if outputs is None:
            return arrays[0]
        return result_type(*arrays) if result_type is not None else tuple(arrays)

    site = Site(decl, fn, body)
    if result_type is not None:
        result_type.__module__ = "nda"
        fn.result_type = result_type  # type: ignore[attr-defined]
    return fn


def make_getitem(generic: Callable[..., NDArray]) -> Callable[..., NDArray]:
    """``x[i]`` and ``x[a:b]`` on the first axis skip planning; everything else plans.

    The kernels it calls directly are its own cache's: the strided ``getitem`` kernel per
    array metadata, for devices whose views are never host views (nda._native's C version
    reads the same cache).
    """
    kernels = EntryCache()

    def __getitem__(self: NDArray, key: Any) -> NDArray:
        kc = key.__class__
        if (
            (kc is slice or kc is int)
            and 0 < _state.limit
            and self._shape
            and (not _ACTIVE[0] or not _local.stack.pushed)
            and (not _state.failed or not touches_failed((self,)))
        ):  # a view: O(1), inline when idle
            kernel = kernels.get(self._meta)
            if kernel is None:
                return _miss(self, key)
            shape = self._shape
            n = shape[0]
            if kc is int:
                if not -n <= key < n:
                    return generic(self, key)  # raises the IndexError
                new_shape = shape[1:]
                size = self._size // n
            else:
                if key.stop.__class__ is NDArray or key.start.__class__ is NDArray or key.step.__class__ is NDArray:
                    return generic(self, key)  # the planner reads 0-d array bounds now, never the kernel
                try:
                    length = len(range(*key.indices(n)))
                except (TypeError, ValueError):
                    return generic(self, key)  # raises the right error
                new_shape = (length,) + shape[1:]
                size = length * (self._size // n) if n else 0
            out = _new(NDArray)
            buf = kernel(self._buf, (key,))
            out._buf = buf if new_shape else zero_d_buffer(buf, self._meta)
            out._meta = self._meta
            out._shape = new_shape
            out._size = size
            base = self._base
            out._base = self if base is None else base
            return out
        return generic(self, key)

    def _miss(self: NDArray, key: Any) -> NDArray:
        meta = self._meta
        if meta.layout is _STRIDED and not _backends.handle(meta.device).host_views:
            seen = _generation[0]
            route = resolve("getitem", meta.key)
            if route.kind is not HOST_VIEW:
                remember(kernels, meta, route.run, seen)
        return generic(self, key)

    if _native is None:

        def rows(x: NDArray) -> Any:
            return _Rows(x, kernels, __getitem__)

        operator = __getitem__
    else:
        operator = _native.GetitemOp(kernels, __getitem__)
        native_rows = operator.rows

        def rows(x: NDArray) -> Any:  # 0-d rows need the backend's ensure_buffer (a kernel may return a scalar)
            return native_rows(x, None if len(x._shape) > 1 else _backends.handle(x._meta.device).ensure_buffer)

    generic.__nda_rows__ = rows  # type: ignore[attr-defined]  # iter(x): nda._namespace attaches it as NDArray.__iter__
    return operator


class _Rows:
    """``iter(x)`` without nda._native: the rows ``x[0]``, ``x[1]``... made as ``next()`` asks,
    by ``x[i]``'s fast path with the row's shape and size worked out once (each row is what
    ``x[i]`` gives at that moment: the Python operator where the fast path does not apply)."""

    __slots__ = ("x", "i", "n", "shape", "size", "kernels", "getitem")

    def __init__(self, x: NDArray, kernels: EntryCache, getitem: Callable[..., NDArray]) -> None:
        self.x, self.kernels, self.getitem = x, kernels, getitem
        n = self.n = x._shape[0]
        self.i = 0
        self.shape = x._shape[1:]
        self.size = x._size // n if n else 0

    def __iter__(self) -> _Rows:
        return self

    def __length_hint__(self) -> int:
        return max(self.n - self.i, 0)

    def __next__(self) -> NDArray:
        i = self.i
        if i >= self.n:
            raise StopIteration
        self.i = i + 1
        x = self.x
        if 0 < _state.limit and (not _ACTIVE[0] or not _local.stack.pushed) and (not _state.failed or not touches_failed((x,))):
            kernel = self.kernels.get(x._meta)
            if kernel is not None:
                out = _new(NDArray)
                buf = kernel(x._buf, (i,))
                out._buf = buf if self.shape else zero_d_buffer(buf, x._meta)
                out._meta = x._meta
                out._shape = self.shape
                out._size = self.size
                base = x._base
                out._base = x if base is None else base
                return out
        return self.getitem(x, i)
