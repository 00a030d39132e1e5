"""Recording: autograd's interceptor at the invocation point, and its write hook.

``record()`` pushes :data:`RECORDER` on the calling thread's interceptor stack
(:mod:`nda._intercept`) for as long as the thread is inside its outermost ``record()``.
Every op call the thread makes reaches it, however the function was bound (``nda.exp``,
``from nda import exp``, ``x.exp()`` operators, methods, ``nda.ext.<library>.<op>``):
the recorder runs the op, then, while the thread records (``pause()`` turns that off),
records the call when an argument needs a gradient. The op's inner calls do not reach it
(the interceptor is off the stack while the op runs), so an op is recorded once, as the op
its VJP describes. Nothing in NDArray or in a namespace changes while recording.

Writes into existing arrays (``x += y``, ``x[i] = v``, ``copyto``, ops that mutate) go
through :func:`check_write`, a write hook of the invocation point (``_intercept.WRITES``),
installed while any thread records or a recorded graph still holds saved arrays. Inside
``record()`` it refuses to write into an array that is part of the graph (or to write a
value that needs a gradient into one that is not), as MXNet does; always, it counts writes
into saved arrays so that backward can refuse a gradient computed from overwritten data
(PyTorch's rule). The hook is removed at the first write after the last graph is released.

Ops declared ``constant`` (comparisons, integer results, ``floor``) are never recorded:
their results need no history.

Layer: autograd (README, "Architecture").
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from .. import _api, _forksafe, _intercept
from .. import ext as _ext
from .._array import NDArray
from ..ops.spec import NoVJP
from ..engine import SHARED
from ._graph import ENTRIES, FLAGS, LIVE, SNAPSHOT, AutogradError, Op, ThreadFlags, bump, record_call, requires_grad

__all__ = ["RECORDER", "Recorder", "scope_enter", "scope_exit", "check_write", "maybe_release_checks", "fast", "op_for"]


def _vjp_to_device(nd: Any, need: Any, g: Any, y: Any, x: Any, device: Any, /, *, stream: Any = None) -> tuple[Any, ...]:
    return (g.to_device(x.device),)


def _vjp_to_layout(nd: Any, need: Any, g: Any, y: Any, x: Any, layout: Any, /) -> tuple[Any, ...]:
    return (g,)  # autograd fits the gradient to x's layout (densifies, or keeps x's sparsity pattern)


_OPS: dict[Any, Op | None] = {}


def _snapshot_shared(args: tuple[Any, ...], kwargs: dict[str, Any], saved: list[Any]) -> tuple[tuple[Any, ...], dict[str, Any], list[Any]]:
    """A recorded call's arguments with each array whose memory NumPy also holds (``nda.engine.SHARED``)
    replaced by a copy taken now: NumPy can write there between the forward call and ``backward()``
    without passing any write hook (``buf[...] = 0`` after ``nda.sum(w * nda.asarray(buf))`` changed
    ``w``'s gradient). The copy costs one pass over such an argument per recorded call; an array made
    with ``nda.asarray(buf, copy=True)`` shares nothing and is saved as it is.

    An array that needs a gradient itself (a parameter made with ``nda.asarray(numpy_array)`` and
    ``attach_grad()``, or one plotted through ``np.asarray(w)``) is saved as it is: copying every
    parameter on every recorded call would cost a pass over the model per op, and higher-order
    gradients differentiate through the array itself. NumPy writes into a parameter's memory
    between forward and backward are not seen (as with PyTorch's ``from_numpy``)."""
    if not SHARED:
        return args, kwargs, saved
    copies: dict[int, NDArray] = {}

    def fixed(a: Any) -> Any:
        if a.__class__ is NDArray:
            base = a._base if a._base is not None else a
            if id(base) in SHARED and id(a) not in ENTRIES:
                found = copies.get(id(a))
                if found is None:
                    flags = FLAGS.t
                    recording, flags.recording = flags.recording, False  # the copy is not a recorded call
                    try:
                        found = copies[id(a)] = _api.copy(a)
                    finally:
                        flags.recording = recording
                return found
            return a
        if a.__class__ is tuple or a.__class__ is list:
            return a.__class__(fixed(b) for b in a)
        return a

    args = tuple(fixed(a) for a in args)
    if kwargs:
        kwargs = {k: fixed(v) for k, v in kwargs.items()}
    if copies:
        saved = [fixed(a) for a in saved]
    return args, kwargs, saved


SNAPSHOT[0] = _snapshot_shared


def _public_function(name: str) -> Callable[..., Any]:
    found = _api._all_generated.get(name)
    return found if found is not None else _ext.function(name)


def op_for(op: Any) -> Op | None:
    """What autograd records for a call of ``op`` (None: nothing, a constant or a write)."""
    found = _OPS.get(op, False)
    if found is not False:
        return found  # type: ignore[return-value]
    kind = op.kind
    rec: Op | None
    if kind == "to_device":
        rec = Op("to_device", _vjp_to_device, ("x", "device", "stream"), _api.to_device)
    elif kind == "to_layout":
        rec = Op("to_layout", _vjp_to_layout, ("x", "layout"), _api._to_layout)
    elif kind == "inplace" or op.mutates or (isinstance(op.vjp, NoVJP) and op.vjp.zero):
        rec = None
    else:
        rec = Op(op.name, op.vjp, tuple(op.signature.parameters), _public_function(op.name))
    _OPS[op] = rec
    return rec


class Recorder(_intercept.Interceptor):
    """Records the calls of a thread inside ``record()`` (see the module docstring)."""

    __slots__ = ()

    def call(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], proceed: Callable[..., Any]) -> Any:
        out = proceed(*args, **kwargs)
        if FLAGS.recording and out is not NotImplemented:
            rec = op_for(op)
            if rec is not None:
                record_call(rec, args, kwargs, out)
        return out

    def __repr__(self) -> str:
        return "<autograd recorder>"


RECORDER = Recorder()


class _State:
    """Threads inside ``record()`` and whether the write hook is installed (under a lock)."""

    def __init__(self) -> None:
        self.lock = _forksafe.guard(threading.Lock(), "autograd's lock", rank=40, stage=_forksafe.INNER)
        self.recorders = 0
        self.checking = False


_STATE = _State()


def scope_enter() -> ThreadFlags:
    """The calling thread enters a recording scope (``record()``, ``grad(create_graph=True)``);
    returns its state, which :func:`scope_exit` is given back (whichever thread leaves)."""
    flags = FLAGS.t
    if flags.scopes == 0:
        _intercept.push(RECORDER)
        flags.stack = _intercept.stack()
        with _STATE.lock:
            _STATE.recorders += 1
            if not _STATE.checking:
                _intercept.WRITES.append(check_write)
                _STATE.checking = True
    flags.scopes += 1
    return flags


def scope_exit(flags: ThreadFlags) -> None:
    """Leave a recording scope entered by the thread whose state is ``flags``."""
    if flags.scopes <= 0:
        return
    flags.scopes -= 1
    if flags.scopes == 0:
        _intercept.pop(RECORDER, flags.stack)  # that thread's stack, even when another thread leaves
        flags.stack = None
        with _STATE.lock:
            _STATE.recorders -= 1
        maybe_release_checks()


def maybe_release_checks() -> None:
    """Remove the write hook once no thread records and no graph holds saved arrays."""
    if _STATE.checking and not _STATE.recorders and not LIVE:
        with _STATE.lock:
            if _STATE.checking and not _STATE.recorders and not LIVE:
                try:
                    _intercept.WRITES.remove(check_write)
                except ValueError:
                    pass
                _STATE.checking = False


def checks_installed() -> bool:
    return _STATE.checking


def check_write(target: Any, value: Any, what: str) -> None:
    """The write hook: refuse writes into the recorded graph inside ``record()``; count writes."""
    if FLAGS.internal:
        return
    if FLAGS.recording and (requires_grad(target) or requires_grad(value)):
        raise AutogradError(
            f"{what}: in-place writes to an array that is part of the recorded graph (or of a value that needs a gradient "
            f"into another array) are not supported inside autograd.record(): the gradient would be wrong. Compute a new "
            f"array instead (y = x + 1, nda.where(mask, v, x)), or write outside record()"
        )
    if target.__class__ is NDArray:
        bump(target, what)
    maybe_release_checks()


def fast(name: str) -> Callable[..., Any]:
    """Catalog op ``name`` called for autograd's own bookkeeping: never recorded, writes not checked."""
    function = _public_function(name)

    def unrecorded(*args: Any, **kwargs: Any) -> Any:
        FLAGS.internal += 1
        try:
            with _intercept.suspended():
                return function(*args, **kwargs)
        finally:
            FLAGS.internal -= 1

    return unrecorded


def unrecorded_status() -> dict[str, bool]:
    """Which of autograd's hooks are installed (for tests and ``nda.autograd.status()``)."""
    return {"recording": _STATE.recorders > 0, "checks": _STATE.checking}
