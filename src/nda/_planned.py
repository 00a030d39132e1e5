"""Public functions of the ops that plan (everything but element-wise ops).

Planning (validation, promotion, output shape) is pure Python and costs microseconds, but a
plan depends only on the metadata of the array arguments and the values of the others. So
each op memoises its plan per such key and, on a hit, calls the kernel directly:

* an arrays-only fast path for ``op(x)`` / ``op(x1, x2)`` without keywords (``sum(x)``,
  ``x @ y``): one dict lookup keyed by the arrays' metadata, shapes and aliasing;
* a general memo keyed by :func:`_memo_key`, with a *recipe* that rebuilds the kernel
  arguments from a later call's arguments (array, cast array or constant per position).

Calls whose arguments are not hashable (index arrays, lists, slices before Python 3.12)
plan every time. Registering a kernel clears the op's table cache and, with it, both memos.

Layer: arrays and front end (README, "Architecture").
"""

from __future__ import annotations

from math import prod
from typing import Any, Callable

from ._array import NDArray, new_array
from ._devices import ArrayMeta
from ._devices import strided as _STRIDED
from ._frontend import base_of, execute, execute_mutation, _HOST_VIEWS, _META, _new, unwrap, work_size, zero_d_buffer
from .dispatch import resolve, resolve_plan
from .dispatch import table as _dispatch_table
from . import backends
from .engine import Completion
from .engine import state as _state
from .ops._spec import Cast, OpDecl, Plan

__all__ = ["make_generic"]


_MEMO_LIMIT = 512  # memoised plans per op; past it the op's cache starts over


def _memo_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """What a plan of these arguments depends on: metadata of the arrays, values of the rest.

    None when an argument is not hashable (an NDArray inside an index, a list, a slice
    before Python 3.12): such calls plan every time.
    """
    parts = []
    for i, a in enumerate(args):
        if a.__class__ is NDArray:
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
    key = (tuple(parts), tuple((k, _typed(v)) for k, v in kwargs.items()) if kwargs else ())
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _typed(value: Any) -> Any:
    """``value`` tagged with its type, so that ``1``, ``True`` and ``1.0`` key different plans."""
    cls = value.__class__
    if cls is tuple:
        return (tuple, tuple(_typed(v) for v in value))
    if cls is float:
        return (float, value.hex())  # 0.0 == -0.0 (and hash alike), but they fill differently
    if cls is complex:
        return (complex, value.real.hex(), value.imag.hex())
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
            steps.append((0, j) if a is arr else (1, j, resolve("astype", arr._meta.key), a.dtype))
        elif a.__class__ in (list, tuple) and any(v.__class__ in (NDArray, Cast) for v in a):
            return None
        else:
            steps.append((2, a))
    if any(v.__class__ in (NDArray, Cast) for v in plan.kwargs.values()):
        return None
    return tuple(steps)


class _FastCache(dict):  # type: ignore[type-arg]
    """Entries of the arrays-only fast path; valid only while the op's table cache is.

    Registering a kernel clears the table's cache (``OpTable.cache``); this dict notices
    through a sentinel entry it keeps in that cache, so resolution changes reach it too.
    """

    __slots__ = ("_table_cache", "_sentinel")

    def __init__(self, table_cache: dict[Any, Any]) -> None:
        super().__init__()
        self._table_cache = table_cache
        self._sentinel = ("fast-path-valid", id(self))
        table_cache[self._sentinel] = True

    def get(self, key: Any, default: Any = None) -> Any:  # type: ignore[override]
        if self._sentinel not in self._table_cache:
            self.clear()
            self._table_cache[self._sentinel] = True
            return default
        return dict.get(self, key, default)


def make_generic(decl: OpDecl) -> Callable[..., Any]:
    """Ops that plan: the plan is memoised per argument metadata, so a repeated call skips it."""
    plan_fn = decl.plan
    name = decl.name
    cache = _dispatch_table(decl.name).cache
    view = decl.view

    if decl.mutates:
        def mutating(*args: Any, **kwargs: Any) -> Any:
            plan = plan_fn(*args, **kwargs)
            execute_mutation(name, plan, args[0])
            return None

        return mutating

    def fn(*args: Any, **kwargs: Any) -> Any:
        # Fastest path: ``op(x)`` or ``op(x1, x2)`` with arrays only and no keywords (``sum(x)``,
        # ``x @ y``), whose kernel takes exactly those buffers. Keyed by the arrays' metadata
        # and shapes (and whether the two are the same array).
        n = len(args)
        if view and _HOST_VIEWS and n and id(args[0]) in _HOST_VIEWS:
            return execute(name, plan_fn(*args, **kwargs))  # a view of a host view is one too (nda._hostviews)
        if not kwargs and (n == 1 or n == 2):
            x1 = args[0]
            if n == 1:
                fast_key = (x1._meta, x1._shape) if x1.__class__ is NDArray else None
            else:
                x2 = args[1]
                fast_key = (x1._meta, x1._shape, x2._meta, x2._shape, x1 is x2) if x1.__class__ is NDArray and x2.__class__ is NDArray else None
            if fast_key is not None:
                entry = fast.get(fast_key)
                if entry is not None and entry[4] < _state.limit:
                    kernel, meta, shape, kernel_kwargs, work, size = entry
                    result = kernel(x1._buf, **kernel_kwargs) if n == 1 else kernel(x1._buf, x2._buf, **kernel_kwargs)
                    out = _new(NDArray)
                    out._buf = result if shape else zero_d_buffer(result, meta)
                    out._meta = meta
                    out._shape = shape
                    out._size = size
                    out._base = base_of(x1) if view else None
                    return out
        else:
            fast_key = None
        key = _memo_key(args, kwargs) if args and args[0].__class__ is NDArray else None
        if key is not None:
            entry = cache.get(key)
            if entry is not None and entry[5] < _state.limit:
                kernel, meta, shape, steps, kernel_kwargs, work, size = entry
                kernel_args = [
                    args[s[1]]._buf if s[0] == 0 else s[1] if s[0] == 2 else s[2](args[s[1]]._buf, s[3], copy=False)
                    for s in steps
                ]
                out = _new(NDArray)
                result = kernel(*kernel_args, **kernel_kwargs)
                out._buf = result if shape else zero_d_buffer(result, meta)
                out._meta = meta
                out._shape = shape
                out._size = size
                out._base = base_of(args[0]) if view else None
                return out
        plan = plan_fn(*args, **kwargs)
        if key is not None and not getattr(plan, "values_decide_shape", False):
            memoise(plan, args, key, fast_key)
        return execute(name, plan)

    def memoise(plan: Plan, args: tuple[Any, ...], key: Any, fast_key: Any) -> None:
        if plan.key.layout is _STRIDED:
            if not (plan.view_of is None or plan.view_of is args[0]):
                return
            steps = _recipe(plan, args)
            if steps is None:
                return
            kernel, layout = resolve(name, plan.key), _STRIDED
            if view and getattr(kernel, "_nda_host_view", False):
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
            kernel, layout = resolve_plan(name, plan)
        if len(cache) > _MEMO_LIMIT:
            cache.clear()
            fast.clear()
        meta = _META.get((plan.device, plan.out_dtype, layout)) or ArrayMeta(plan.device, plan.out_dtype, layout)
        cache[key] = (kernel, meta, plan.out_shape, steps, plan.kwargs, work_size(plan, name), prod(plan.out_shape))
        n = len(args)
        if fast_key is not None and len(steps) == n and all(st[0] == 0 and args[st[1]] is args[i] for i, st in enumerate(steps)):
            fast[fast_key] = (kernel, meta, plan.out_shape, plan.kwargs, work_size(plan, name), prod(plan.out_shape))

    # A second dict beside the table's cache, cleared together with it (see _FastCache).
    fast = _FastCache(cache)
    return fn


def make_multi(decl: OpDecl) -> Callable[..., Any]:
    """Ops with several outputs or data-dependent output shapes (``linalg.qr``, ``unique_all``).

    They plan on every call (they are not the hot path). An op with several outputs makes
    one array per output, all written by one kernel call that the engine orders like any
    other. A data-dependent op is a sync point for its inputs: it waits for them, runs the
    kernel on the caller's thread and reads the output shapes from the buffers.
    """
    from collections import namedtuple

    plan_fn = decl.plan
    name = decl.name
    outputs = decl.outputs
    named = outputs is not None and outputs != ("*",)
    result_type = namedtuple(_result_name(name), outputs) if named else None  # type: ignore[misc]

    def fn(*args: Any, **kwargs: Any) -> Any:
        plan = plan_fn(*args, **kwargs)
        arrays = execute_multi(name, plan, outputs is not None, decl.data_dependent)
        if outputs is None:
            return arrays[0]
        return result_type(*arrays) if result_type is not None else tuple(arrays)

    if result_type is not None:
        result_type.__module__ = "nda"
        fn.result_type = result_type  # type: ignore[attr-defined]
    return fn


def _result_name(op_name: str) -> str:
    short = op_name.rsplit(".", 1)[-1]
    special = {"qr": "QR", "svd": "SVD"}
    return special.get(short, "".join(part.capitalize() for part in short.split("_"))) + "Result"


def execute_multi(name: str, plan: Plan, multi: bool, data_dependent: bool) -> list[NDArray]:
    """Run a planned call with one or several outputs; returns the (possibly pending) outputs."""
    kernel, layout = resolve_plan(name, plan)  # a sparse operand: native route or layout fallback
    dtypes = plan.out_dtype if multi else (plan.out_dtype,)
    metas = [_META.get((plan.device, d, layout)) or ArrayMeta(plan.device, d, layout) for d in dtypes]
    if data_dependent:
        for a in plan.reads:
            a.wait_to_read()  # the output shapes come from the data: a sync point, as for masks
        result = kernel(*unwrap(plan.args), **plan.kwargs)
        buffers = tuple(result) if multi else (result,)
        if len(buffers) != len(metas):
            metas = [metas[0]] * len(buffers)  # ("*",) outputs: one dtype for all
        outs = []
        for buf, meta in zip(buffers, metas):
            shape = _shape_of(buf, meta)
            outs.append(new_array(buf if shape else zero_d_buffer(buf, meta), meta, shape))
        return outs
    shapes = plan.out_shape if multi else (plan.out_shape,)
    outs = [new_array(None, meta, shape) for meta, shape in zip(metas, shapes)]
    size = max([prod(s) for s in shapes] + [a._size for a in plan.reads])
    args, kwargs = plan.args, plan.kwargs

    def fill(result: Any) -> None:
        for out, buf in zip(outs, tuple(result) if multi else (result,)):
            out._buf = buf if out._shape else zero_d_buffer(buf, out._meta)

    def run() -> Any:
        result = kernel(*unwrap(args), **kwargs)
        if result.__class__ is Completion:  # asynchronous work: the engine waits for the signal
            fill(result.value)
            return result
        fill(result)
        return None

    if size < _state.limit:
        run()
    else:
        _state.push(run, plan.reads, tuple(outs), plan.device, name, cost=size, route=kernel)
    return outs


def _shape_of(buf: Any, meta: ArrayMeta) -> tuple[int, ...]:
    shape = getattr(buf, "shape", None)
    if shape is None:  # a backend whose buffers do not say: ask the host copy
        shape = backends.read_buffer(meta.device, buf).shape
    return tuple(shape)
