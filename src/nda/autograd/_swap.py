"""Recording and checking versions of nda's functions, swapped in only while they are needed.

Outside ``record()`` nda runs exactly the functions and operators ``nda._frontend``
generated: nothing is recorded and nothing is checked per op. While any thread records,
the generated functions (in the namespaces ``nda``, ``nda._api``, ``nda.linalg``,
``nda.fft``) and the NDArray operators and methods that are ops are replaced by recording
versions: each calls the fast one, then, if its own thread is recording (a thread-local
flag), records the call when an argument needs a gradient. When the last thread leaves
``record()`` the fast versions come back.

The in-place operators (``x += y``) and ``setitem`` (``x[i] = v``, ``copyto``) are
swapped for checking versions for longer: while any thread records *or* a recorded
graph still holds saved arrays. They refuse, inside ``record()``, to write into an
array that is part of the graph (or to write a value that needs a gradient into one
that is not), as MXNet does, and they count writes into saved arrays so that backward
can refuse a gradient computed from overwritten data (PyTorch's rule). They go back to
the fast versions at the first in-place op after the last graph is released.

Ops declared ``constant`` (comparisons, integer results, ``floor``) are never swapped:
their results need no history. Functions bound before recording started
(``from nda import exp``) are the fast versions and record nothing; call them through
the namespace (``nda.exp``), as methods or as operators. Such a call must not drop
gradient terms silently: while a thread records, the engine reports every op issued
(``engine.state.watch``; ``limit`` is 0 meanwhile, so every op reaches ``push``), and an
op with a gradient that runs on a recording thread outside every recording function
(``FLAGS.depth``) and reads an array needing a gradient raises :class:`AutogradError`.

Layer: arrays and front end (README, "Architecture").
"""

from __future__ import annotations

import inspect
import sys
import threading
from typing import Any, Callable

from .. import _api, _frontend, fft, linalg
from .. import ext as _ext
from .._array import NDArray
from ..engine import state as _engine_state
from ..ops import CATALOG
from ..ops._spec import NoVJP
from ._graph import FLAGS, LIVE, AutogradError, Op, bump, record_call, requires_grad

__all__ = ["SWAP", "fast", "ops"]

_SYMBOL = {
    "add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//", "remainder": "%", "pow": "**",
    "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "bitwise_left_shift": "<<", "bitwise_right_shift": ">>",
}


def _vjp_to_device(nd: Any, need: Any, g: Any, y: Any, x: Any, device: Any, /, *, stream: Any = None) -> tuple[Any, ...]:
    return (g.to_device(x.device),)


def _vjp_to_layout(nd: Any, need: Any, g: Any, y: Any, x: Any, layout: Any, /) -> tuple[Any, ...]:
    return (g,)  # autograd fits the gradient to x's layout (densifies, or keeps x's sparsity pattern)


def _copy_metadata(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    for attr in ("__name__", "__qualname__", "__doc__", "__module__", "__signature__", "__wrapped_decl__", "result_type"):
        if hasattr(fn, attr):
            setattr(wrapper, attr, getattr(fn, attr))
    wrapper.__nda_fast__ = fn  # type: ignore[attr-defined]
    return wrapper


def _recording_function(op: Op, fn: Callable[..., Any]) -> Callable[..., Any]:
    flags, record = FLAGS, record_call

    def recording(*args: Any, **kwargs: Any) -> Any:
        flags.depth += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            flags.depth -= 1
        if flags.recording:
            record(op, args, kwargs, out)
        return out

    return _copy_metadata(recording, fn)


def _recording_attribute(op: Op, fn: Callable[..., Any], role: str) -> Callable[..., Any]:
    flags, record = FLAGS, record_call
    if role == "unary":
        def attribute(self: NDArray) -> Any:
            flags.depth += 1
            try:
                out = fn(self)
            finally:
                flags.depth -= 1
            if flags.recording:
                record(op, (self,), None, out)
            return out
    elif role in ("forward", "getitem"):
        def attribute(self: NDArray, other: Any) -> Any:  # type: ignore[misc]
            flags.depth += 1
            try:
                out = fn(self, other)
            finally:
                flags.depth -= 1
            if flags.recording and out is not NotImplemented:
                record(op, (self, other), None, out)
            return out
    elif role == "reflected":
        def attribute(self: NDArray, other: Any) -> Any:  # type: ignore[misc]
            flags.depth += 1
            try:
                out = fn(self, other)
            finally:
                flags.depth -= 1
            if flags.recording and out is not NotImplemented:
                record(op, (other, self), None, out)
            return out
    else:  # "method", and the non-catalog methods to_device / to_layout
        def attribute(self: NDArray, *args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            flags.depth += 1
            try:
                out = fn(self, *args, **kwargs)
            finally:
                flags.depth -= 1
            if flags.recording and out is not self:
                record(op, (self, *args), kwargs, out)
            return out
    return _copy_metadata(attribute, fn)


def _unrecorded(name: str, reads: Any) -> None:
    """Engine watcher while a thread records: an op outside every recording function that
    reads an array needing a gradient would silently drop its gradient terms."""
    flags = FLAGS
    if not flags.recording or flags.depth or name not in SWAP.ops:
        return
    for array in reads:
        if requires_grad(array):
            short = name.rpartition(".")[2]
            raise AutogradError(
                f"{name}() at {'{}:{}'.format(*_user_site())} reads an array that needs a gradient, but the call was not recorded: "
                f"the function was bound before record() started (`from nda import {short}`), so the gradient would silently miss "
                f"its terms. Call it through its namespace (nda.{name}), as a method or as an operator, inside record()"
            )


def _user_site() -> tuple[str, int]:
    package = __file__.rsplit("/", 2)[0]
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back  # type: ignore[assignment]
    return ("<unknown>", 0) if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def _check_write(target: Any, value: Any, what: str) -> None:
    if FLAGS.recording and (requires_grad(target) or requires_grad(value)):
        raise AutogradError(
            f"{what}: in-place writes to an array that is part of the recorded graph (or of a value that needs a gradient "
            f"into another array) are not supported inside autograd.record(): the gradient would be wrong. Compute a new "
            f"array instead (y = x + 1, nda.where(mask, v, x)), or write outside record()"
        )
    if target.__class__ is NDArray:
        bump(target, what)
    SWAP.maybe_release_checks()


def _checking_inplace(fn: Callable[..., Any], name: str, symbol: str) -> Callable[..., Any]:
    what = f"x {symbol}= y"

    def inplace(self: NDArray, other: Any) -> Any:
        _check_write(self, other, what)
        return fn(self, other)

    return _copy_metadata(inplace, fn)


def _checking_setitem(fn: Callable[..., Any]) -> Callable[..., Any]:
    def setitem(x: Any, key: Any, value: Any, /) -> Any:
        _check_write(x, value, "x[...] = value")
        return fn(x, key, value)

    return _copy_metadata(setitem, fn)


def _params(fn: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(inspect.signature(fn).parameters)


class _Swap:
    """The two sets of replacements and the counters that decide when they are in place."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._built = False
        self.recorders = 0
        self.holds = 0  # > 0 while nda.hybridize traces: the checks stay as they are (its versions wrap them)
        self._recording_on = False
        self._checks_on = False
        self.ops: dict[str, Op] = {}
        self.fast: dict[str, Callable[..., Any]] = {}
        self._recording: list[tuple[Any, str, Any, Any]] = []  # (dict or class, name, fast, replacement)
        self._checks: list[tuple[Any, str, Any, Any]] = []
        self._recording_plan: Any = None
        self._checks_plan: Any = None
        self._pending_namespaces: list[tuple[Any, dict[str, Callable[..., Any]]]] = []

    def build(self) -> None:
        with self._lock:
            if not self._built:
                self._build()
                self._built = True

    def _build(self) -> None:
        by_id: dict[int, tuple[Any, bool]] = {}  # id(fast function) -> (replacement, is a check)
        for name, fn in _api._all_generated.items():
            decl = CATALOG[name]
            self.fast[name] = fn
            if isinstance(decl.vjp, NoVJP) and decl.vjp.zero:
                continue
            op = self.ops[name] = Op(name, decl.vjp, tuple(decl.signature.parameters), fn)
            if decl.mutates:
                by_id[id(fn)] = (_checking_setitem(fn), True)
            else:
                by_id[id(fn)] = (_recording_function(op, fn), False)
                op.function = by_id[id(fn)][0]
        to_device = self.ops["to_device"] = Op("to_device", _vjp_to_device, _params(_api.to_device), _api.to_device)
        by_id[id(_api.to_device)] = (_recording_function(to_device, _api.to_device), False)
        to_device.function = by_id[id(_api.to_device)][0]
        namespaces = [vars(sys.modules["nda"]), vars(_api), vars(linalg), vars(fft)]
        for namespace in namespaces:
            for name, value in list(namespace.items()):
                found = by_id.get(id(value))
                if found is not None:
                    (self._checks if found[1] else self._recording).append((namespace, name, value, found[0]))
        for attr, (decl, role) in _frontend.operator_roles().items():
            fn = NDArray.__dict__[attr]
            if role == "inplace":
                self._checks.append((NDArray, attr, fn, _checking_inplace(fn, decl.name, _SYMBOL.get(decl.name, "op"))))
            elif decl.name in self.ops:
                self._recording.append((NDArray, attr, fn, _recording_attribute(self.ops[decl.name], fn, role)))
        to_layout = self.ops["to_layout"] = Op("to_layout", _vjp_to_layout, ("x", "layout"), NDArray.to_layout)
        self._recording.append((NDArray, "to_layout", NDArray.__dict__["to_layout"], _recording_attribute(to_layout, NDArray.to_layout, "method")))
        self._recording_plan = self._plan(self._recording)
        self._checks_plan = self._plan(self._checks)
        for module, functions in list(self._pending_namespaces):  # op libraries' namespaces built before
            self._add_namespace(module, functions)
        self._pending_namespaces.clear()

    def add_namespace(self, module: Any, functions: dict[str, Callable[..., Any]]) -> None:
        """An op library's namespace ``nda.ext.<library>`` was built: record its ops too."""
        with self._lock:
            if not self._built:
                self._pending_namespaces.append((module, functions))
                return
            self._add_namespace(module, functions)

    def _add_namespace(self, module: Any, functions: dict[str, Callable[..., Any]]) -> None:
        namespace = vars(module)
        added = []
        for name, fn in functions.items():
            decl = fn.__wrapped_decl__  # type: ignore[attr-defined]
            self.fast[name] = fn
            if isinstance(decl.vjp, NoVJP) and decl.vjp.zero:
                continue
            op = self.ops[name] = Op(name, decl.vjp, tuple(decl.signature.parameters), fn)
            replacement = _checking_setitem(fn) if decl.mutates else _recording_function(op, fn)
            if not decl.mutates:
                op.function = replacement
            pair = (namespace, decl.short, fn, replacement)
            (self._checks if decl.mutates else self._recording).append(pair)
            added.append((pair, decl.mutates))
        self._recording_plan = self._plan(self._recording)
        self._checks_plan = self._plan(self._checks)
        for (where, attr, _, replacement), check in added:  # swapped in now if recording is on
            if (self._checks_on if check else self._recording_on):
                where[attr] = replacement

    # ------------------------------------------------------------------ install / restore
    @staticmethod
    def _plan(pairs: list[tuple[Any, str, Any, Any]]) -> tuple[list[tuple[str, Any, Any]], list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]]:
        """Class attributes to set one by one, and per namespace the two dicts to update it with."""
        attributes = [(name, fn, replacement) for where, name, fn, replacement in pairs if where is NDArray]
        namespaces: dict[int, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {}
        for where, name, fn, replacement in pairs:
            if where is not NDArray:
                entry = namespaces.setdefault(id(where), (where, {}, {}))
                entry[1][name] = replacement
                entry[2][name] = fn
        return attributes, list(namespaces.values())

    @staticmethod
    def _apply(plan: Any, on: bool) -> None:
        attributes, namespaces = plan
        for name, fn, replacement in attributes:
            setattr(NDArray, name, replacement if on else fn)
        for namespace, replacements, originals in namespaces:
            namespace.update(replacements if on else originals)

    def enter(self) -> None:
        """A thread enters ``record()``."""
        with self._lock:
            if not self._built:
                self._build()
                self._built = True
            self.recorders += 1
            if not self._recording_on:
                self._apply(self._recording_plan, True)
                self._recording_on = True
                _engine_state.watch(_unrecorded)  # every op reaches push: none that needs a gradient runs unrecorded
            if not self._checks_on:
                self._apply(self._checks_plan, True)
                self._checks_on = True

    def exit(self) -> None:
        """A thread leaves ``record()``."""
        with self._lock:
            self.recorders -= 1
            if self.recorders == 0 and self._recording_on:
                self._apply(self._recording_plan, False)
                self._recording_on = False
                _engine_state.unwatch(_unrecorded)
        self.maybe_release_checks()

    def maybe_release_checks(self) -> None:
        """Restore the fast in-place ops once no thread records and no graph holds saved arrays."""
        if self._checks_on and not self.recorders and not LIVE and not self.holds:
            with self._lock:
                if self._checks_on and not self.recorders and not LIVE and not self.holds:
                    self._apply(self._checks_plan, False)
                    self._checks_on = False

    @property
    def state(self) -> dict[str, bool]:
        """Which replacements are in place (for tests and ``nda.autograd.status()``)."""
        return {"recording": self._recording_on, "checks": self._checks_on}


SWAP = _Swap()
_ext.on_namespace.append(SWAP.add_namespace)  # nda.ext.<library> functions record too


def fast(name: str) -> Callable[..., Any]:
    """The fast (never recording) public function of catalog op ``name``."""
    SWAP.build()
    return SWAP.fast[name]


def ops() -> dict[str, Op]:
    SWAP.build()
    return SWAP.ops
