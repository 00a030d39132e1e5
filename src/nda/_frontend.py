"""Generate public functions and NDArray operators from the op catalog.

Nothing here is written per op. For each :class:`~nda.ops._spec.OpDecl` this module makes
one Python function with the op's real ``__name__``, ``__doc__`` and ``__signature__``
(closures, no ``exec``), and attaches the NDArray operators and methods the declaration
names.

Element-wise ops get a specialised hot path. The op's dispatch-table cache maps the
argument metadata (``(meta1, meta2)``, or ``(meta1, int)`` for a Python scalar) to a
``(kernel, out_meta)`` pair; a hit costs one dict lookup, a shape comparison, one
comparison of the op's size with ``engine.state.limit`` and the kernel call. A miss goes
to the slow path, which plans the call (validation, promotion, casts, errors) and fills
the cache. Other ops memoise their plan per argument metadata (``nda._planned``).

Whether an op runs right here, on the caller's thread, is decided by one comparison:
``size < engine.state.limit``, where ``size`` is the number of elements the op touches.
The synchronous engine's limit is unbounded; a threaded engine sets it to its inline
threshold while it is idle and to 0 while work is pending, so that every op then goes
through ``engine.state.push`` and is ordered after the work it depends on.

A view op that runs through the host fallback, or takes a host view as input, makes a host
view (``nda._hostviews``): such calls always go through :func:`execute`, never through the
fast paths, and writes to a family with host views are wrapped to keep them in step.

Layer: arrays and front end (README, "Architecture").
"""

from __future__ import annotations

import functools
from math import prod
from typing import Any, Callable

from numpy import generic as _NP_SCALAR

from . import _dtypes, _hostviews
from . import backends as _backends
from . import layouts as _layouts
from ._array import NDArray, new_array
from ._devices import ArrayMeta
from ._devices import strided as _STRIDED
from ._dtypes import python_scalar
from .dispatch import resolve, resolve_plan
from .dispatch import table as _dispatch_table
from .engine import Completion
from .engine import state as _state
from .engine._queues import local as _writing
from .ops._spec import CATALOG, Cast, OpDecl, Plan, broadcast_shapes

__all__ = ["build_namespace", "execute", "unwrap"]

_new = object.__new__
_META = ArrayMeta._registry
_HOST_VIEWS = _hostviews.VIEWS  # host views alive (views made through the host fallback)
_HOST_FAMILIES = _hostviews.FAMILIES  # their bases

#: ``(other, other's operator method name, array) -> result or NotImplemented``: what an
#: operator does with an operand it does not know, off the fast paths. Set by ``nda._interop``
#: (a Dask array that did not know nda arrays yet takes the operation back once nda is
#: registered with Dask).
foreign_operand: Callable[[Any, str, NDArray], Any] | None = None
_SCALARS = (bool, int, float, complex)


# ---------------------------------------------------------------------------- running

def unwrap(value: Any) -> Any:
    """Replace NDArrays (also inside tuples/lists) by their buffers, applying casts."""
    cls = value.__class__
    if cls is NDArray:
        return value._buf
    if cls is tuple or cls is list:
        return cls([v._buf if v.__class__ is NDArray else unwrap(v) for v in value])
    if cls is Cast:
        return cast_buffer(value.array, value.dtype)
    return value


def cast_buffer(x: NDArray, dtype: _dtypes.DType) -> Any:
    """Cast ``x``'s buffer to ``dtype`` with its device's ``astype`` kernel."""
    kernel = resolve("astype", x._meta.key)
    return kernel(x._buf, dtype, copy=False)


def base_of(x: NDArray) -> NDArray:
    """The array that owns ``x``'s storage (``x`` itself unless it is a view)."""
    base = x._base
    return x if base is None else base


def execute(name: str, plan: Plan) -> NDArray:
    """Run a planned call through the engine and return its (possibly pending) output."""
    kernel, layout = resolve_plan(name, plan)
    meta = _META.get((plan.device, plan.out_dtype, layout)) or ArrayMeta(plan.device, plan.out_dtype, layout)
    out = new_array(None, meta, plan.out_shape)
    if plan.view_of is not None and plan.key.layout is _STRIDED:  # non-strided routes never return views
        out._base = base_of(plan.view_of)
        if getattr(kernel, "_nda_host_view", False) or (_HOST_VIEWS and id(plan.view_of) in _HOST_VIEWS):
            kernel = _hostviews.attach(name, plan, out)  # a copy kept in step with its base (nda._hostviews)
    args, kwargs = plan.args, plan.kwargs
    size = work_size(plan, name)
    zero_d = not plan.out_shape
    if size < _state.limit:
        result = kernel(*unwrap(args), **kwargs)
        out._buf = zero_d_buffer(result, meta) if zero_d else result
        return out

    def run() -> Any:
        result = kernel(*unwrap(args), **kwargs)
        if result.__class__ is Completion:  # asynchronous work: the engine waits for the signal
            out._buf = result.value
            return result
        out._buf = zero_d_buffer(result, meta) if zero_d else result
        return None

    _state.push(run, plan.reads, (out,), plan.device, name, cost=size, route=kernel)
    return out


#: View ops whose strided kernels never touch the data (O(1) whatever the size): they count
#: as one element, so they run inline whenever the engine is idle. Without this, ``x[i]`` on
#: a large idle array was an engine task and a thread hop (iterating over 2**19 elements
#: took minutes). ``reshape`` is not one: with ``copy=None`` it copies when it must.
_O1_VIEWS = frozenset({"getitem", "permute_dims", "expand_dims", "squeeze", "flip", "broadcast_to"})


def work_size(plan: Plan, name: str = "") -> int:
    """Elements an op touches: the largest of its output and its inputs (1 for an O(1) view)."""
    if name in _O1_VIEWS and plan.view_of is not None and plan.key.layout is _STRIDED:
        return 1
    size = prod(plan.out_shape)
    for a in plan.reads:
        if a._size > size:
            size = a._size
    return size


def execute_mutation(name: str, plan: Plan, target: NDArray) -> None:
    """Run a planned call whose kernel mutates ``target``'s buffer in place."""
    kernel = resolve_plan(name, plan)[0]
    base = base_of(target)
    if _HOST_FAMILIES and id(base) in _HOST_FAMILIES:
        kernel = _hostviews.writing(name, kernel, target, base)  # keeps host views in step
    args, kwargs = plan.args, plan.kwargs
    size = work_size(plan)

    def run() -> Any:
        outer = _writing.base
        _writing.base = base._buf  # the memory written: a device queue records the write as the base's
        try:
            return kernel(*unwrap(args), **kwargs)  # a Completion when the work finishes later
        finally:
            _writing.base = outer

    if size < _state.limit:
        run()
        return
    _state.push(run, plan.reads, (base,), plan.device, name, cost=size, route=kernel)


def zero_d_buffer(result: Any, meta: ArrayMeta) -> Any:
    """A kernel may return a scalar for a 0-d result (NumPy does); the backend makes it a buffer."""
    ensure = getattr(_backends.for_device(meta.device), "ensure_buffer", None)
    return result if ensure is None else ensure(result)


def _run_elementwise(name: str, kernel: Callable[..., Any], args: tuple[Any, ...], meta: ArrayMeta, shape: tuple[int, ...]) -> NDArray:
    """The engine path of an element-wise op (taken when it does not run inline)."""
    out = new_array(None, meta, shape)
    reads = tuple(a for a in args if a.__class__ is NDArray)

    def run() -> None:
        buf = kernel(*[a._buf if a.__class__ is NDArray else a for a in args])
        out._buf = buf if shape else zero_d_buffer(buf, meta)

    _state.push(run, reads, (out,), meta.device, name, cost=out._size, route=kernel)
    return out


# ---------------------------------------------------------------------------- element-wise

def _entry_from_plan(decl: OpDecl, plan: Plan) -> tuple[Callable[..., Any], ArrayMeta]:
    """A cache entry: the kernel with its casts folded in, and the output metadata."""
    kernel, layout = resolve_plan(decl.name, plan)
    casts = [a.dtype if a.__class__ is Cast else None for a in plan.args]
    if any(casts):
        kernel = _with_casts(kernel, casts, plan)
    return kernel, ArrayMeta(plan.device, plan.out_dtype, layout)


def _with_casts(kernel: Callable[..., Any], casts: list[Any], plan: Plan) -> Callable[..., Any]:
    cast_kernels = []
    for arg, dtype in zip(plan.args, casts):
        cast_kernels.append(None if dtype is None else (resolve("astype", arg.array._meta.key), dtype))
    if len(cast_kernels) == 1:
        (ck, dt), = cast_kernels

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


def make_unary(decl: OpDecl) -> Callable[..., NDArray]:
    cache = _dispatch_table(decl.name).cache
    name = decl.name
    plan_fn = decl.plan

    def slow(x: Any) -> NDArray:
        plan = plan_fn(x)
        cache[x._meta] = _entry_from_plan(decl, plan)
        return fn(x)  # now a cache hit

    def fn(x: Any, /) -> NDArray:
        try:
            kernel, meta = cache[x._meta]
        except (KeyError, AttributeError):
            return slow(x)
        if x._size < _state.limit:
            out = _new(NDArray)
            out._buf = kernel(x._buf) if x._shape else zero_d_buffer(kernel(x._buf), meta)
            out._meta = meta
            out._shape = x._shape
            out._size = x._size
            out._base = None
            return out
        return _run_elementwise(name, kernel, (x,), meta, x._shape)

    return fn


def make_binary(decl: OpDecl) -> tuple[Callable[..., NDArray], Callable[..., Any], Callable[..., Any]]:
    """The public function plus the forward and reflected operator methods."""
    cache = _dispatch_table(decl.name).cache
    name = decl.name
    plan_fn = decl.plan

    def slow(x1: Any, x2: Any) -> NDArray:
        plan = plan_fn(x1, x2)
        k1 = x1._meta if x1.__class__ is NDArray else x1.__class__
        k2 = x2._meta if x2.__class__ is NDArray else x2.__class__
        kernel, meta = cache[k1, k2] = _entry_from_plan(decl, plan)
        return _finish(kernel, (x1, x2), meta, plan.out_shape, prod(plan.out_shape))

    def _finish(kernel: Callable[..., Any], args: tuple[Any, ...], meta: ArrayMeta, shape: tuple[int, ...], size: int) -> NDArray:
        if size < _state.limit:
            a, b = args
            out = _new(NDArray)
            buf = kernel(a._buf if a.__class__ is NDArray else a, b._buf if b.__class__ is NDArray else b)
            out._buf = buf if shape else zero_d_buffer(buf, meta)
            out._meta = meta
            out._shape = shape
            out._size = size
            out._base = None
            return out
        return _run_elementwise(name, kernel, args, meta, shape)

    def scalar_path(x1: Any, x2: Any, k1: Any, k2: Any) -> NDArray:
        entry = cache.get((k1, k2))
        if entry is None:
            return slow(x1, x2)
        scalar = x2 if k1.__class__ is ArrayMeta else x1
        if scalar.__class__ is int and not _int_fits(scalar, k1 if k1.__class__ is ArrayMeta else k2):
            return slow(x1, x2)  # the planner raises the OverflowError
        arr = x1 if k1.__class__ is ArrayMeta else x2
        return _finish(entry[0], (x1, x2), entry[1], arr._shape, arr._size)

    def build(as_operator: bool) -> Callable[..., Any]:
        # The public function and the forward operator share this body (one closure
        # each) so that ``x + y`` runs in a single Python frame. They differ only in
        # what an unsupported operand does: the operator returns NotImplemented so that
        # Python can try the other operand, the function raises TypeError.
        def binary(x1: Any, x2: Any, /) -> Any:
            c2 = x2.__class__
            if c2 is NDArray and x1.__class__ is NDArray:
                entry = cache_get((x1._meta, x2._meta))
                if entry is not None:
                    shape = x1._shape
                    size = x1._size
                    if shape != x2._shape:
                        shape = broadcast_shapes(shape, x2._shape)
                        size = prod(shape)
                    if size < _state.limit:
                        out = _new(NDArray)
                        buf = entry[0](x1._buf, x2._buf)
                        out._buf = buf if shape else zero_d_buffer(buf, entry[1])
                        out._meta = entry[1]
                        out._shape = shape
                        out._size = size
                        out._base = None
                        return out
                    return _run_elementwise(name, entry[0], (x1, x2), entry[1], shape)
                return slow(x1, x2)
            c1 = x1.__class__
            if c1 is NDArray and (c2 is float or c2 is int):  # ``x * 0.5``, ``x + 1``: inlined
                meta1 = x1._meta
                entry = cache_get((meta1, c2))
                size = x1._size
                if entry is not None and size < _state.limit and (c2 is float or _int_fits(x2, meta1)):
                    shape = x1._shape
                    out = _new(NDArray)
                    buf = entry[0](x1._buf, x2)
                    out._buf = buf if shape else zero_d_buffer(buf, entry[1])
                    out._meta = entry[1]
                    out._shape = shape
                    out._size = size
                    out._base = None
                    return out
            if c1 is NDArray and c2 in _SCALARS:
                return scalar_path(x1, x2, x1._meta, c2)
            if c2 is NDArray and c1 in _SCALARS:
                return scalar_path(x1, x2, c1, x2._meta)
            # Off the fast paths: a NumPy scalar is the (weak) Python scalar it holds.
            if isinstance(x2, _NP_SCALAR) and c1 is NDArray:
                return binary(x1, python_scalar(x2))
            if isinstance(x1, _NP_SCALAR) and c2 is NDArray:
                return binary(python_scalar(x1), x2)
            if as_operator:
                hook = foreign_operand
                return NotImplemented if hook is None else hook(x2, reflected_name, x1)
            return slow(x1, x2)

        return binary

    cache_get = cache.get
    fn = build(False)
    forward = build(True)

    def reflected(self: NDArray, other: Any) -> Any:
        if other.__class__ in _SCALARS:
            return fn(other, self)
        if isinstance(other, _NP_SCALAR):
            return fn(python_scalar(other), self)
        hook = foreign_operand
        return NotImplemented if hook is None else hook(other, forward_name, self)

    forward_name = decl.operators[0] if decl.operators else ""
    reflected_name = decl.operators[1] if len(decl.operators) > 1 and not decl.operators[1].startswith("__i") else ""

    return fn, forward, reflected


def _int_fits(value: int, array_meta: ArrayMeta) -> bool:
    dtype = array_meta.dtype
    bounds = _INT_BOUNDS.get(dtype)
    return bounds is None or bounds[0] <= value <= bounds[1]


def _int_bounds() -> dict[_dtypes.DType, tuple[int, int]]:
    import numpy as np

    return {d: (int(np.iinfo(d.numpy).min), int(np.iinfo(d.numpy).max)) for d in _dtypes.CATEGORIES["integer"]}


_INT_BOUNDS = _int_bounds()


def make_inplace(decl: OpDecl) -> Callable[..., Any]:
    """``x op= y``: compute in the promoted dtype, store into ``x`` (same-kind cast, no broadcasting of x)."""
    cache = _dispatch_table(decl.name).cache
    name = decl.name

    def inplace(self: NDArray, other: Any) -> Any:
        if other.__class__ is not NDArray and other.__class__ not in _SCALARS:
            if not isinstance(other, _NP_SCALAR):
                return NotImplemented
            other = python_scalar(other)
        key = ("inplace", self._meta, other._meta if other.__class__ is NDArray else other.__class__)
        entry = cache.get(key)
        if entry is None:
            plan = decl.plan(self, other)
            if plan.out_shape != self._shape:
                raise ValueError(f"{name}: in-place result of shape {plan.out_shape} does not fit the target's shape {self._shape}")
            if not _dtypes.same_kind_castable(plan.out_dtype, self._meta.dtype):
                raise TypeError(
                    f"{name}: cannot store the {plan.out_dtype.name} result in place in a {self._meta.dtype.name} array; "
                    f"use x = x {_OPERATOR_SYMBOL.get(name, name)} y to get a new array"
                )
            if self._meta.layout is not _STRIDED and _out_layout(name, plan) is not self._meta.layout:
                raise TypeError(
                    f"{name}: the result of this in-place op on a {self._meta.layout.name} array would be {_out_layout(name, plan).name} "
                    f"(the op does not keep unstored elements zero); use x = x {_OPERATOR_SYMBOL.get(name, name)} y to get a new array"
                )
            kernel, meta = _entry_from_plan(decl, plan)
            if self._meta.layout is not _STRIDED and meta.dtype is not self._meta.dtype:
                kernel = _cast_result(kernel, meta, self._meta.dtype)
            # "direct": a NumPy ufunc computing in x's own dtype can write straight into x
            # (not on a device that takes the host fallback: its writes may have host views to update).
            entry = cache[key] = (kernel, meta is self._meta and _accepts_out(kernel) and not _host_views_possible(self))
        elif other.__class__ is NDArray and other._shape != self._shape and broadcast_shapes(self._shape, other._shape) != self._shape:
            raise ValueError(f"{name}: in-place result of shape {broadcast_shapes(self._shape, other._shape)} does not fit the target's shape {self._shape}")
        elif other.__class__ is int and not _int_fits(other, self._meta):
            decl.plan(self, other)  # raises the OverflowError with its message
        kernel, direct = entry
        size = self._size
        if direct and size < _state.limit:
            buf = self._buf
            kernel(buf, other._buf if other.__class__ is NDArray else other, buf)
            return self
        store = _store_kernel(self)
        target = self

        def run() -> None:
            value = kernel(target._buf, other._buf if other.__class__ is NDArray else other)
            outer = _writing.base
            _writing.base = base_of(target)._buf  # see execute_mutation
            try:
                store(target._buf, value)
            finally:
                _writing.base = outer

        if size < _state.limit:
            run()
        else:
            reads = (self, other) if other.__class__ is NDArray else (self,)
            _state.push(run, reads, (base_of(self),), self._meta.device, name + " (in-place)", cost=size, route=kernel)
        return self

    return inplace


def _host_views_possible(target: NDArray) -> bool:
    return bool(getattr(_backends.for_device(target._meta.device), "fallback_to_host", False))


def _accepts_out(kernel: Callable[..., Any]) -> bool:
    """NumPy ufuncs write straight into the target; other kernels go through setitem."""
    return getattr(kernel, "nin", None) is not None  # numpy.ufunc


def _store_kernel(target: NDArray) -> Callable[[Any, Any], None]:
    if target._meta.layout is not _STRIDED:
        return _rebind_kernel(target)
    setitem = resolve("setitem", target._meta.key)
    base = base_of(target)
    if _HOST_FAMILIES and id(base) in _HOST_FAMILIES:
        setitem = _hostviews.writing("setitem", setitem, target, base)  # keeps host views in step
    dtype = target._meta.dtype
    astype = resolve("astype", target._meta.key)

    def store(buf: Any, value: Any) -> None:
        setitem(buf, (), astype(value, dtype, copy=False) if getattr(value, "dtype", None) != dtype.numpy else value)

    return store


def _out_layout(name: str, plan: Plan) -> Any:
    return _layouts.out_layout(name, plan)


def _cast_result(kernel: Callable[..., Any], meta: ArrayMeta, dtype: _dtypes.DType) -> Callable[..., Any]:
    """``kernel`` followed by a cast of its (non-strided) result to ``dtype`` on its device."""
    astype = resolve("astype", meta.key)

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
    "add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//", "remainder": "%",
    "pow": "**", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "bitwise_left_shift": "<<",
    "bitwise_right_shift": ">>", "matmul": "@",
}


# ---------------------------------------------------------------------------- indexing

def make_getitem(generic: Callable[..., NDArray]) -> Callable[..., NDArray]:
    """``x[i]`` and ``x[a:b]`` on the first axis skip planning; everything else plans."""
    table_cache = _dispatch_table("getitem").cache

    def __getitem__(self: NDArray, key: Any) -> NDArray:
        kc = key.__class__
        if (kc is slice or kc is int) and 0 < _state.limit and self._shape:  # a view: O(1), inline when idle
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
            base = self._base
            if base is not None and _HOST_VIEWS and id(self) in _HOST_VIEWS:
                return generic(self, key)  # a view of a host view is one too (nda._hostviews)
            kernel = table_cache.get(self._meta.key)
            if kernel is None:
                if self._meta.layout is not _STRIDED:
                    return generic(self, key)  # routed by nda.layouts; the result is strided
                kernel = resolve("getitem", self._meta.key)
                if getattr(kernel, "_nda_host_view", False):
                    return generic(self, key)  # through the host fallback: a host view
            out = _new(NDArray)
            buf = kernel(self._buf, (key,))
            out._buf = buf if new_shape else zero_d_buffer(buf, self._meta)
            out._meta = self._meta
            out._shape = new_shape
            out._size = size
            out._base = self if base is None else base
            return out
        return generic(self, key)

    return __getitem__


def _finalize(fn: Callable[..., Any], decl: OpDecl, module: str) -> Callable[..., Any]:
    extension, _, short = decl.name.rpartition(".")  # "linalg.inv" -> nda.linalg.inv
    fn.__name__ = short
    fn.__qualname__ = short
    fn.__doc__ = decl.doc
    fn.__module__ = f"{module}.{extension}" if extension else module
    fn.__signature__ = decl.signature  # type: ignore[attr-defined]
    fn.__wrapped_decl__ = decl  # type: ignore[attr-defined]
    return fn


def _binary_operator(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``x @ y`` for a planned op: another operand type gets NotImplemented, so Python asks it."""

    @functools.wraps(fn)
    def operator(self: NDArray, other: Any) -> Any:
        if other.__class__ is not NDArray:  # a NumPy or Dask array answers through its reflected operator
            hook = foreign_operand
            return NotImplemented if hook is None else hook(other, reflected, self)
        return fn(self, other)

    reflected = "__r" + name[2:] if name.startswith("__") else ""

    return operator


def _method(fn: Callable[..., Any], decl: OpDecl, method_name: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def method(self: NDArray, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = method_name
    return method


def make_function(decl: OpDecl, module: str) -> Callable[..., Any]:
    """The public function of one declaration, without NDArray operators or methods (an
    op library's op: ``nda.ext.<library>.<op>``); the same generators as the catalog's."""
    if decl.family == "unary":
        fn = make_unary(decl)
    elif decl.family == "binary":
        fn = make_binary(decl)[0]
    elif decl.outputs is not None or decl.data_dependent:
        from ._planned import make_multi

        fn = make_multi(decl)
    else:
        from ._planned import make_generic

        fn = make_generic(decl)
    fn = _finalize(fn, decl, module)
    fn.__name__ = fn.__qualname__ = getattr(decl, "short", fn.__name__)
    fn.__module__ = module
    return fn


def build_namespace(module: str) -> dict[str, Callable[..., Any]]:
    """Make every catalog op's public function and attach NDArray operators/methods."""
    namespace: dict[str, Callable[..., Any]] = {}
    for decl in CATALOG.values():
        if decl.family == "unary":
            fn = make_unary(decl)
            for op_name in decl.operators:
                setattr(NDArray, op_name, _rename(fn, op_name))
        elif decl.family == "binary":
            fn, forward, reflected = make_binary(decl)
            for i, op_name in enumerate(decl.operators):
                if i == 0:
                    setattr(NDArray, op_name, _rename(forward, op_name))
                elif op_name.startswith("__i"):
                    setattr(NDArray, op_name, _rename(make_inplace(decl), op_name))
                else:
                    setattr(NDArray, op_name, _rename(reflected, op_name))
        elif decl.outputs is not None or decl.data_dependent:
            from ._planned import make_multi

            fn = make_multi(decl)
        else:
            from ._planned import make_generic

            fn = make_generic(decl)
            for op_name in decl.operators:
                setattr(NDArray, op_name, _rename(_binary_operator(fn, op_name), op_name))
        namespace[decl.name] = _finalize(fn, decl, module)
        if decl.method:
            setattr(NDArray, decl.method, _method(fn, decl, decl.method))
    NDArray.__getitem__ = make_getitem(namespace["getitem"])  # type: ignore[method-assign]
    return namespace


def _rename(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    fn.__name__ = name
    fn.__qualname__ = f"NDArray.{name}"
    return fn


# ---------------------------------------------------------------------------- autograd hook

def operator_roles() -> dict[str, tuple[OpDecl, str]]:
    """The NDArray attributes :func:`build_namespace` attaches for ops: name -> (op, role).

    Roles say how the attribute calls its op: ``"unary"`` (``-x``: ``op(self)``),
    ``"forward"`` (``x + y``: ``op(self, other)``, or NotImplemented), ``"reflected"``
    (``1 + x``: ``op(other, self)``), ``"inplace"`` (``x += y``), ``"method"`` (``x.sum()``,
    ``x @ y``: ``op(self, *args, **kwargs)``) and ``"getitem"``. ``nda.autograd`` swaps
    these attributes for recording versions while a thread records (the rules here are
    build_namespace's, read from the same declarations).
    """
    roles: dict[str, tuple[OpDecl, str]] = {}
    for decl in CATALOG.values():
        if decl.family == "unary":
            for op_name in decl.operators:
                roles[op_name] = (decl, "unary")
        elif decl.family == "binary":
            for i, op_name in enumerate(decl.operators):
                roles[op_name] = (decl, "forward" if i == 0 else "inplace" if op_name.startswith("__i") else "reflected")
        elif decl.outputs is None and not decl.data_dependent:
            for op_name in decl.operators:
                roles[op_name] = (decl, "method")
        if decl.method:
            roles[decl.method] = (decl, "method")
    roles["__getitem__"] = (CATALOG["getitem"], "getitem")
    return roles
