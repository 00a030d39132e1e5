"""Execution: the invocation point, where a call becomes work.

Every generated function, operator and method is a hit of its own fast cache (those stay
in :mod:`nda._elementwise` and :mod:`nda._planned`: one lookup and the kernel) or goes
through here, once:

* :func:`invoke` (a call's one slow path): the calling thread's interceptors (recording,
  tracing, checking: :mod:`nda._intercept`, their own per-thread flag), else the op's own
  ``body`` (a :class:`Site`, made once per generated function: plan, memoise, outputs).
* :func:`submit` (a call's one hand-over): a :class:`Task` runs here when it is small and the
  engine idle (``cost < engine.state.limit``; NumPy's warnings then name the user's line), or
  becomes one engine task ordered after what it reads and writes. It alone fills the outputs
  (a 0-d scalar made a buffer, a :class:`~nda.engine.Completion` of asynchronous device work
  awaited by the engine), says which memory a mutation writes, and takes snapshots of the
  inputs a queued heavy op shares with NumPy (:func:`nda._snapshots.queued_inputs`).
* :func:`execute` (one output), :func:`execute_multi` (several, or data-dependent shapes),
  :func:`execute_mutation` (a kernel that writes its first argument) and
  :func:`run_elementwise`: resolve the plan's :class:`~nda.dispatch.Route` (:mod:`nda.dispatch`,
  with :mod:`nda.layouts` for non-strided operands; its fallback was announced when it was
  resolved), make the output arrays in the route's layout, and :func:`submit`.
* Host views (:mod:`nda._hostviews`): a view op whose route is a ``host view`` one, or whose
  input is a host view, makes a host view here; a write into a family with host views keeps
  them in step. Only these slow paths look: the fast paths never cache an entry for a
  device whose backend may make host views (its handle says so, resolved at activation).

No other module hands work to the engine (``engine.state.push``) or asks for interceptors
(``tests/test_invocation_point.py`` checks it).

Layer: arrays and front end, execution (README, "Architecture").
"""

from __future__ import annotations

import copy
import importlib
from math import prod
from typing import Any, Callable, NamedTuple, Protocol


from . import _hostviews, _intercept
from ._config import env_flag
from . import backends as _backends
from . import dispatch as _dispatch
from ._array import NDArray, new_array
from ._snapshots import queued_inputs
from ._devices import ArrayMeta
from ._devices import strided as _STRIDED
from .dispatch import HOST_VIEW, resolve, resolve_plan
from .engine import Completion
from .engine import state as _state
from .engine._fperrors import guard as _fp_guard
from .engine._fperrors import unguard as _fp_unguard
from .engine.queues import local as _writing
from .ops.spec import SURELY_FITS, Cast, Plan, check_size

__all__ = [
    "EntryCache",
    "Provider",
    "install",
    "foreign_operand",
    "Site",
    "Task",
    "invoke",
    "submit",
    "native",
    "native_operator",
    "unwrap",
    "cast_buffer",
    "base_of",
    "execute",
    "execute_multi",
    "execute_mutation",
    "run_elementwise",
    "work_size",
    "zero_d_buffer",
    "notify_write",
    "touches_failed",
    "TO_DEVICE",
    "TO_LAYOUT",
    "inplace_entry",
]

_new = object.__new__
_META = ArrayMeta._registry
_ACTIVE = _intercept.ACTIVE
_WRITES = _intercept.WRITES
_local = _intercept._local
_HOST_VIEWS = _hostviews.VIEWS  # host views alive (views made through the host fallback)
_HOST_FAMILIES = _hostviews.FAMILIES  # their bases


class EntryCache(dict):  # type: ignore[type-arg]
    """A generated function's cache of entries built from resolutions: it belongs to that
    function, and is cleared whenever what dispatch resolves may change (``dispatch.dependents``)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__()
        _dispatch.dependents.append(self.clear)


class Provider(Protocol):
    """What the invocation point asks of the layers above: the one registration into this layer.

    ``foreign_operand(other, method, array)``: an operator met an operand it does not know
    (``method``: ``other``'s operator method name, to hand the operation back); the result,
    or NotImplemented (a Dask array that did not know nda arrays yet takes the operation
    back). NumPy's protocols (``nda._interop``) implement it (mypy checks it) and install it
    once, at import, with :func:`install`; until then every such operand is NotImplemented.
    """

    def foreign_operand(self, other: Any, method: str, array: NDArray, /) -> Any: ...


class _Alone:
    """The :class:`Provider` before ``nda._interop`` is imported: nothing adopts a foreign operand."""

    def foreign_operand(self, other: Any, method: str, array: NDArray, /) -> Any:
        return NotImplemented


_upper: Provider = _Alone()


def install(provider: Provider) -> None:
    """Install what the invocation point asks of the layers above (see :class:`Provider`); once, at import of ``nda._interop``."""
    global _upper
    if not isinstance(_upper, _Alone):
        raise RuntimeError("nda._execute.install: a provider is installed already (nda._interop installs it once, at import)")
    _upper = provider


def foreign_operand(other: Any, method: str, array: NDArray) -> Any:
    """An operator's operand it does not know: the installed :class:`Provider`'s answer (NotImplemented by default)."""
    return _upper.foreign_operand(other, method, array)


#: The entry points that are intercepted like ops without being catalog ops.
TO_DEVICE = _intercept.EntryPoint("to_device", "to_device")
TO_LAYOUT = _intercept.EntryPoint("to_layout", "to_layout")
_INPLACE: dict[str, _intercept.EntryPoint] = {}


def inplace_entry(decl: Any, attr: str) -> _intercept.EntryPoint:
    """The entry point of the in-place operator ``attr`` (``"__iadd__"``) of binary op ``decl``."""
    found = _INPLACE.get(attr)
    if found is None:
        found = _INPLACE[attr] = _intercept.EntryPoint(decl.name, "inplace", attr, decl, ("x1",))
    return found


def touches_failed(arrays: tuple[Any, ...] | list[Any]) -> bool:
    """Whether one of ``arrays`` (other values are skipped), or the base it views, is among the
    failed arrays the engine keeps (``engine.state.failed``, ``id`` -> entry). The fast paths
    ask only while that is not empty; a stale id (a collected failed array whose id was reused)
    only sends a call to the slow path, where the engine decides exactly."""
    failed = _state.failed
    for a in arrays:
        if a.__class__ is NDArray and (id(a) in failed or (a._base is not None and id(a._base) in failed)):
            return True
    return False


def notify_write(target: Any, value: Any, what: str) -> None:
    """Tell the write hooks (autograd's checks) of a write into ``target``."""
    for hook in tuple(_WRITES):
        hook(target, value, what)


def _load_native() -> Any:
    """nda._native (the C fast paths of the operators), configured; None without it or with NDA_NATIVE=0."""
    if not env_flag("NDA_NATIVE", True):
        return None
    try:  # a C module that imports nothing (by name: the import-linter sees no Python module there)
        _native = importlib.import_module(f"{__package__}._native")
    except ImportError:  # not compiled (no C compiler at install): the Python fast paths
        return None
    slots = vars(NDArray)
    state_slots = vars(type(_state))
    _native.configure(
        NDArray, slots["_buf"], slots["_meta"], slots["_shape"], slots["_size"], slots["_base"], _state, state_slots["limit"], state_slots["failed"]
    )
    _native.configure_interception(_ACTIVE, _local)  # the calling thread's interceptors: their own flag
    return _native


#: The C fast paths of NDArray's element-wise operators, or None (see nda/_native.c).
native = _load_native()


def native_operator(python: Callable[..., Any], cache: dict[Any, Any], kind: str) -> Any:
    """The operator NDArray gets, or an element-wise public function (``nda.log``): ``python``
    behind the C fast path when nda._native is there.

    ``kind`` is ``"unary"``, ``"binary"`` or ``"reflected"``. The C path does exactly what the
    Python fast path does (same cache, same entries, the same ``size < engine.state.limit``
    check) and calls ``python`` for everything else. It answers with ``python``'s names,
    docstring and signature, and pickles by its qualified name. Run from C, a kernel's NumPy
    warning names the caller's line (NumPy names the innermost Python frame).
    """
    if native is None:
        return python
    return {"unary": native.UnaryOp, "binary": native.BinaryOp, "reflected": native.ReflectedOp}[kind](cache, python)


# ---------------------------------------------------------------------------- buffers


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


def cast_buffer(x: NDArray, dtype: Any) -> Any:
    """Cast ``x``'s buffer to ``dtype`` with its device's ``astype`` kernel."""
    return resolve("astype", x._meta.key).run(x._buf, dtype, copy=False)


def base_of(x: NDArray) -> NDArray:
    """The array that owns ``x``'s storage (``x`` itself unless it is a view)."""
    base = x._base
    return x if base is None else base


def zero_d_buffer(result: Any, meta: ArrayMeta) -> Any:
    """A kernel may return a scalar for a 0-d result (NumPy does); the backend makes it a buffer."""
    return _backends.handle(meta.device).ensure_buffer(result)


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


# ---------------------------------------------------------------------------- the invocation point


class Site(NamedTuple):
    """A generated function's (or an entry point's) place at the invocation point.

    ``entry``: what the calling thread's interceptors see (the op's declaration, or an
    :class:`~nda._intercept.EntryPoint`); ``public``: the callable they proceed with; ``body``:
    the op's own slow path, ``body(args, kwargs, *state)`` (plan, memoise, make the outputs,
    :func:`submit`). Made once per generated function, when it is generated."""

    entry: Any
    public: Callable[..., Any]
    body: Callable[..., Any]


def invoke(site: Site, args: tuple[Any, ...], kwargs: dict[str, Any], *state: Any) -> Any:
    """The one slow path of every generated function, operator and method (anything that is
    not a hit of its own fast cache): the calling thread's interceptors (recording, tracing,
    checking: each on its own flag, :mod:`nda._intercept`), else the op's ``body``.

    ``state`` is what the fast path already computed for the body (a memo key), passed on."""
    if _ACTIVE[0] and _local.stack:
        return _intercept.call(site.entry, args, kwargs, site.public)
    return site.body(args, kwargs, *state)


class Task(NamedTuple):
    """One call's work, as the invocation point hands it to :func:`submit`.

    ``kernel(*unwrap(args), **kwargs)`` computes it (``unwrap`` replaces arrays by their
    buffers when the work runs, after what it reads is written); its result fills ``outs``
    (one buffer per output when ``multi``; a scalar for a 0-d output becomes a buffer). A
    mutation has no outputs: ``target`` is the base whose memory the kernel writes, and
    ``whole`` the array written whole when the write covers it (its old failure no longer
    matters). ``writes`` defaults to ``outs`` (or ``(target,)``); ``route`` is what the
    profiler and the engine's explanations name (the kernel by default); ``plan``, when given,
    lets a queued heavy op take snapshots of inputs NumPy shares (:mod:`nda._snapshots`);
    ``view``: the op only makes a view (it runs on a poisoned base, see ``engine``);
    ``inline=False``: always an engine task (what it reads may be pending or failed).
    """

    name: str
    kernel: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    outs: tuple[NDArray, ...]
    reads: tuple[Any, ...]
    device: Any
    cost: int
    writes: tuple[Any, ...] | None = None
    route: Any = None
    multi: bool = False
    view: bool = False
    target: NDArray | None = None
    whole: NDArray | None = None
    plan: Plan | None = None
    inline: bool = True


def _call(task: Task, args: tuple[Any, ...]) -> Any:
    """Call the task's kernel; a mutation says which memory it writes (device queues record it)."""
    target = task.target
    if target is None:
        return task.kernel(*unwrap(args), **task.kwargs)
    whole = task.whole
    if target._buf is None:
        raise _never_made(target)  # its own op failed: nothing to write into, it stays failed
    outer = _writing.base
    _writing.base = target._buf
    if whole is not None:
        _writing.overwrite = whole._buf
    try:
        return task.kernel(*unwrap(args), **task.kwargs)  # a Completion when the work finishes later
    finally:
        _writing.base = outer
        if whole is not None:
            _writing.overwrite = None


def _never_made(x: NDArray) -> BaseException:
    """The error a write into ``x`` fails with when ``x``'s own op failed (it never got memory):
    a copy of that op's error (the engine keeps it in ``state.failed``), so that ``x``, and
    every view made of it meanwhile, keep failing the same way on every device (sim's streams
    do the same), instead of a kernel's complaint about missing memory."""
    entry = _state.failed.get(id(x))
    if entry is not None and entry[0]() is x:
        try:
            error = copy.copy(entry[1])  # type, message and the failed op's note alike
        except Exception:  # noqa: BLE001 - an exception class whose __init__ does not match its args
            return RuntimeError(f"this array's own op failed ({type(entry[1]).__name__}: {entry[1]}); a write into it cannot make it valid")
        vars(error).pop("_nda_noted", None)  # the engine notes this write too, and drops the frames it is raised through
        return error
    return RuntimeError(f"this {x._meta.dtype.name} array of shape {x._shape} was never computed (the op that makes it did not run)")


def _fill(task: Task, result: Any) -> None:
    outs = task.outs
    if task.multi:
        for out, buf in zip(outs, tuple(result)):
            out._buf = buf if out._shape or out._meta.layout is not _STRIDED else zero_d_buffer(buf, out._meta)
    elif outs:
        out = outs[0]
        # A kernel may return a scalar for a 0-d strided result (NumPy does); a layout's own
        # buffers (a registered 0-d layout's) are the converter's to make, never wrapped.
        out._buf = result if out._shape or out._meta.layout is not _STRIDED else zero_d_buffer(result, out._meta)


def _writes(task: Task) -> tuple[Any, ...]:
    writes = task.writes
    if writes is None:
        return (task.target,) if task.target is not None else task.outs
    return writes


def submit(task: Task) -> None:
    """Run ``task`` here, or hand it to the engine: the one place where a call becomes work.

    Inline when ``task.cost < engine.state.limit`` (the engine is idle and the work is small:
    its NumPy warnings name the user's line, ``engine._fperrors``) and it touches no failed
    array the engine keeps (a write into one must clear or keep its failure there); else one engine task,
    ordered after what it reads and writes, which waits for a :class:`Completion` its kernel
    returns (asynchronous device work) and fills the outputs then."""
    if task.cost < _state.limit and task.inline and (not _state.failed or not (touches_failed(task.reads) or touches_failed(_writes(task)))):
        token = _fp_guard()
        try:
            result = _call(task, task.args)
        finally:
            _fp_unguard(token)
        _fill(task, result)
        return
    args, reads = task.args, task.reads
    if task.plan is not None:
        args, reads = queued_inputs(task.name, task.plan, task.cost)  # heavy ops: snapshots of inputs NumPy shares

    def run() -> Any:
        result = _call(task, args)
        if result.__class__ is Completion:  # asynchronous work: the engine waits for the signal
            if task.outs:
                _fill(task, result.value)
            return result
        _fill(task, result)
        return None

    _state.push(
        run, reads, _writes(task), task.device, task.name, cost=task.cost, route=task.kernel if task.route is None else task.route, view=task.view
    )


# ---------------------------------------------------------------------------- planned calls


def execute(name: str, plan: Plan) -> NDArray:
    """A planned call with one output: its route, its (possibly pending) output, :func:`submit`."""
    route = resolve_plan(name, plan)
    kernel, layout = route.run, route.layout
    meta = _META.get((plan.device, plan.out_dtype, layout)) or ArrayMeta(plan.device, plan.out_dtype, layout)
    out = new_array(None, meta, plan.out_shape)
    if out._size > SURELY_FITS and layout is _STRIDED:
        check_size(name, plan.out_shape, plan.out_dtype)  # before any kernel: no backend gets a size it cannot index
    if plan.view_of is not None and plan.key.layout is _STRIDED:  # non-strided routes never return views
        out._base = base_of(plan.view_of)
        if route.kind is HOST_VIEW or (_HOST_VIEWS and id(plan.view_of) in _HOST_VIEWS):
            kernel = _hostviews.attach(name, plan, out)  # a copy kept in step with its base (nda._hostviews)
    # Only a view: it runs on a base a failed write left poisoned and reads as failed through
    # it (engine._graph), so that it shows the base's values once the base is written whole.
    view = out._base is not None and (name in _O1_VIEWS or (name == "reshape" and not plan.kwargs.get("copy") and _c_contiguous(plan.view_of)))
    size = work_size(plan, name)
    submit(Task(name, kernel, plan.args, plan.kwargs, (out,), plan.reads, plan.device, size, view=view, plan=plan))
    return out


def execute_mutation(name: str, plan: Plan, target: NDArray) -> None:
    """Run a planned call whose kernel mutates ``target``'s buffer in place.

    The write reads ``target`` (its old contents are part of the result: a partial write, an
    in-place update) unless the plan says it ``overwrites`` all of it. Only then does the
    engine leave the target out of the op's reads, so that a target poisoned by a failed
    earlier write is written again (and valid once the write succeeds), as in NumPy.
    """
    kernel = resolve_plan(name, plan).run
    base = base_of(target)
    if _HOST_FAMILIES and id(base) in _HOST_FAMILIES:
        kernel = _hostviews.writing(name, kernel, target, base)  # keeps host views in step
    reads = plan.reads
    for r in reads:
        if r is target:
            overwrites = False
            break
    else:  # the plan leaves the target out of its reads: a whole write, if it says so
        overwrites = getattr(plan, "overwrites", False) and (base is target or spans_base(target, base))
        if not overwrites:
            reads = (*reads, target)
    submit(Task(name, kernel, plan.args, plan.kwargs, (), reads, plan.device, work_size(plan), target=base, whole=target if overwrites else None))


def _c_contiguous(x: NDArray) -> bool:
    """Whether ``x``'s buffer is C-contiguous now (a ``reshape`` of it is a view, never a copy);
    False when that is not known (a buffer not made yet, one without NumPy's ``flags``)."""
    flags = getattr(x._buf, "flags", None)
    return bool(getattr(flags, "c_contiguous", False))


def spans_base(view: NDArray, base: NDArray) -> bool:
    """Whether the view ``view`` spans all of ``base``'s memory (``x[::-1]``, ``x.T``, ``x[...]``
    of a whole ``x``): a write of all of it writes every element of ``base``.

    Asked of the buffers as they are now: the same number of elements of the same dtype, the
    same buffer owning the memory (the backend's ``buffer_owner``, NumPy's ``base`` chain),
    no stride 0 (a broadcast). A view still being computed is waited for first (its errors
    stay kept), so that the answer does not depend on timing. A view whose buffer never got
    made, or a "view" that copied (``reshape`` of a transposed array), does not count: the
    write then reads ``base`` and stays failed if ``base`` was, as any partial write.
    """
    if view._size != base._size or view._meta.dtype != base._meta.dtype or view._meta.layout is not _STRIDED:
        return False
    if view._buf is None:
        # The view is still being computed (``x += bad; x[::-1][...] = 7``): its memory decides,
        # so wait for it (not for its errors, which stay kept) rather than let timing decide.
        _state.engine.settle(view)
    vbuf, bbuf = view._buf, base._buf
    if vbuf is None or bbuf is None:
        return False
    strides, shape = getattr(vbuf, "strides", None), getattr(vbuf, "shape", None)
    if strides is not None and shape is not None and any(s == 0 and n > 1 for s, n in zip(strides, shape)):
        return False
    owner = _backends.handle(base._meta.device).buffer_owner or _owner_of_array
    return owner(vbuf) is owner(bbuf)


def _owner_of_array(buf: Any) -> Any:
    """The object owning a NumPy-like array's memory (the end of its ``base`` chain)."""
    while True:
        parent = getattr(buf, "base", None)
        if parent is None:
            return buf
        buf = parent


def run_elementwise(name: str, kernel: Callable[..., Any], args: tuple[Any, ...], meta: ArrayMeta, shape: tuple[int, ...]) -> NDArray:
    """An element-wise op whose kernel is known (a generated function's slow path): its output, :func:`submit`.

    A broadcast result too large for any array is refused here, at the call."""
    out = new_array(None, meta, shape)
    if out._size > SURELY_FITS and meta.layout is _STRIDED:  # a sparse result stores what it stores, whatever its shape
        check_size(name, shape, meta.dtype)
    reads = tuple(a for a in args if a.__class__ is NDArray)
    submit(Task(name, kernel, args, {}, (out,), reads, meta.device, out._size))  # no input is larger than a broadcast output
    return out


def execute_multi(name: str, plan: Plan, multi: bool, data_dependent: bool) -> list[NDArray]:
    """Run a planned call with one or several outputs; returns the (possibly pending) outputs.

    A data-dependent op is a sync point for its inputs: it waits for them, runs the kernel
    on the caller's thread and reads the output shapes from the buffers.
    """
    route = resolve_plan(name, plan)  # a sparse operand: native route or layout conversion
    kernel, layout = route.run, route.layout
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
    for out in outs:
        if out._size > SURELY_FITS and layout is _STRIDED:
            check_size(name, out._shape, out._meta.dtype)
    size = max([prod(s) for s in shapes] + [a._size for a in plan.reads])
    submit(Task(name, kernel, plan.args, plan.kwargs, tuple(outs), plan.reads, plan.device, size, multi=multi, plan=plan))
    return outs


def _shape_of(buf: Any, meta: ArrayMeta) -> tuple[int, ...]:
    shape = getattr(buf, "shape", None)
    if shape is None:  # a backend whose buffers do not say: ask the host copy
        shape = _backends.read_buffer(meta.device, buf).shape
    return tuple(shape)
