"""Recording the ops a function issues: tracing versions swapped in only while a thread traces.

Like autograd's recording (:mod:`nda.autograd._swap`), tracing costs nothing outside
``nda.hybridize``: while some thread traces, the public functions of every op (namespaces
``nda``, ``nda._api``, ``nda.linalg``, ``nda.fft``, the built ``nda.ext.<library>``
namespaces), ``to_device``, and the NDArray operators, methods and indexing are replaced
by versions that call the function that was there (the fast one, or autograd's recording
one) and, on the tracing thread only, add a node to that thread's graph. Calls made by
nda itself inside a traced call (a composite's inner ops) are not recorded: only the
outermost call is. ``NDArray._host`` (every host read: ``asnumpy``, ``float(x)``,
``repr``, ``tolist``, ``np.asarray``) and ``__dlpack__`` are swapped too: a host read ends
the graph, as does an op whose output shape depends on data. An op that runs on the
tracing thread outside a traced call (a function bound before tracing, ``from nda import
exp``) ends the graph too: while a thread traces, the engine routes every op through
``push`` and tells the tracer of it (``engine.state.watch``), so no op's result can become
a frozen constant unseen. An ``nda.ext.<library>`` namespace first built while tracing is
traced from then on. Before a traced call writes in place, the written array's storage is
copied once (:meth:`~._graph.Graph.before_write`): the first-call check replays the graph
from that state. The swap holds autograd's
lock, so no thread enters or leaves ``record()`` (which swaps the same attributes) while
the replacements are in place.

Layer: arrays and front end (README, "Architecture").
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable

from .. import _api, _frontend, fft, linalg
from .. import ext as _ext
from .._array import NDArray
from ..autograd._swap import SWAP as _AUTOGRAD_SWAP
from ..engine import state as _engine_state
from ..ops import DECLARED

__all__ = ["STATE", "tracing", "user_site"]

_PACKAGE_DIR = __file__.rsplit("/", 2)[0] if "/" in __file__ else ""


class _State(threading.local):
    graph: Any = None  # the graph this thread records into
    depth = 0  # > 0 inside a traced call (its inner calls are not recorded)


STATE = _State()


def user_site() -> tuple[str, int]:
    """(file, line) of the first frame outside nda: where the user's function issued the op."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return ("<unknown>", 0)
    return (frame.f_code.co_filename, frame.f_lineno)


def _traced_call(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    state = STATE

    decl = DECLARED.get(name)
    mutates = bool(getattr(decl, "mutates", False))

    def traced(*args: Any, **kwargs: Any) -> Any:
        graph = state.graph
        if graph is None or state.depth:
            return fn(*args, **kwargs)
        state.depth += 1
        try:
            if mutates:
                graph.before_write(args)
            out = fn(*args, **kwargs)
        finally:
            state.depth -= 1
        graph.record(name, "call", None, args, kwargs, out, user_site())
        return out

    _copy(traced, fn)
    return traced


def _traced_attribute(name: str, attr: str, role: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    state = STATE

    decl = DECLARED.get(name)
    mutates = role == "inplace" or bool(getattr(decl, "mutates", False))

    def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
        graph = state.graph
        if graph is None or state.depth:
            return fn(self, *args, **kwargs)
        state.depth += 1
        try:
            if mutates:
                graph.before_write((self,))
            out = fn(self, *args, **kwargs)
        finally:
            state.depth -= 1
        if out is NotImplemented:
            return out
        site = user_site()
        if role == "reflected":
            graph.record(name, "call", None, (args[0], self), {}, out, site)
        elif role == "inplace":
            graph.record(name, "attr", attr, (self, *args), {}, out, site)
        elif role == "to_layout":
            graph.record(name, "attr", attr, (self, *args), kwargs, out, site)
        else:  # unary, forward, method, getitem: the op's public function with self first
            graph.record(name, "call", None, (self, *args), kwargs, out, site)
        return out

    _copy(traced, fn)
    return traced


def _traced_read(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    state = STATE

    def read(self: Any, *args: Any, **kwargs: Any) -> Any:
        graph = state.graph
        if graph is not None and not state.depth:
            graph.end(f"a host read of an array ({what}) at {'{}:{}'.format(*user_site())}: the function's result may depend on the data")
        return fn(self, *args, **kwargs)

    _copy(read, fn)
    return read


def _untraced(name: str, reads: Any) -> None:
    """Engine watcher while tracing: an op issued on the tracing thread outside a traced call."""
    state = STATE
    graph = state.graph
    if graph is None or state.depth or graph.ended is not None:
        return
    graph.end(f"{name}() at {'{}:{}'.format(*user_site())} ran without being recorded (a function bound before tracing, "
              "such as `from nda import exp`, or a call the tracer does not see): its result would be frozen into the graph; "
              "call it through its namespace (nda.exp, nda.ext.<library>.<op>), as a method or as an operator")


def _copy(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> None:
    for attr in ("__name__", "__qualname__", "__doc__", "__module__", "__signature__", "__wrapped_decl__", "result_type", "__nda_fast__"):
        if hasattr(fn, attr):
            try:
                setattr(wrapper, attr, getattr(fn, attr))
            except (AttributeError, TypeError):
                pass
    wrapper.__nda_traced__ = fn  # type: ignore[attr-defined]


def _fast(value: Any) -> Any:
    return getattr(value, "__nda_fast__", value)


class _Swap:
    """Installs and removes the tracing versions (reference counted over tracing threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.tracers = 0
        self._installed: list[tuple[Any, str, Any]] = []  # (dict or NDArray, name, what was there)

    def _targets(self) -> list[tuple[Any, str, Any, Any]]:
        by_id: dict[int, str] = {}
        for name, fn in _api._all_generated.items():
            by_id[id(fn)] = name
        by_id[id(_api.to_device)] = "to_device"
        namespaces = [vars(sys.modules["nda"]), vars(_api), vars(linalg), vars(fft)]
        for module in list(_ext._namespaces.values()):
            namespaces.append(vars(module))
            for short, fn in vars(module).items():
                decl = getattr(fn, "__wrapped_decl__", None)
                if decl is not None:
                    by_id[id(_fast(fn))] = decl.name
        targets = []
        for namespace in namespaces:
            for attr, value in list(namespace.items()):
                name = by_id.get(id(_fast(value)))
                if name is not None:
                    targets.append((namespace, attr, value, _traced_call(name, value)))
        for attr, (decl, role) in _frontend.operator_roles().items():
            value = NDArray.__dict__[attr]
            targets.append((NDArray, attr, value, _traced_attribute(decl.name, attr, role, value)))
        value = NDArray.__dict__["to_layout"]
        targets.append((NDArray, "to_layout", value, _traced_attribute("to_layout", "to_layout", "to_layout", value)))
        for attr, what in (("_host", "asnumpy, float(x), repr, tolist, np.asarray"), ("__dlpack__", "__dlpack__")):
            value = NDArray.__dict__[attr]
            targets.append((NDArray, attr, value, _traced_read(value, what)))
        return targets

    def enter(self) -> None:
        _AUTOGRAD_SWAP._lock.acquire()  # nobody swaps autograd's versions in or out meanwhile
        _AUTOGRAD_SWAP.holds += 1  # nor releases its in-place checks (the tracing versions wrap them)
        try:
            with self._lock:
                self.tracers += 1
                if self.tracers == 1:
                    self._installed = []
                    for where, attr, value, replacement in self._targets():
                        self._installed.append((where, attr, value))
                        if where is NDArray:
                            setattr(NDArray, attr, replacement)
                        else:
                            where[attr] = replacement
        except BaseException:
            _AUTOGRAD_SWAP.holds -= 1
            _AUTOGRAD_SWAP._lock.release()
            raise

    def add_namespace(self, module: Any, functions: dict[str, Callable[..., Any]]) -> None:
        """``nda.ext.<library>`` was built (first touched) while a thread traces: trace its ops too."""
        with self._lock:
            if not self.tracers:
                return
            namespace = vars(module)
            for attr, value in list(namespace.items()):
                decl = getattr(value, "__wrapped_decl__", None)
                if decl is not None and getattr(value, "__nda_traced__", None) is None:
                    self._installed.append((namespace, attr, value))
                    namespace[attr] = _traced_call(decl.name, value)

    def intact(self) -> bool:
        """Whether every tracing version is still in place (``record()`` entered inside the
        traced function swaps autograd's versions over them)."""
        for where, attr, _ in self._installed:
            current = NDArray.__dict__.get(attr) if where is NDArray else where.get(attr)
            if getattr(current, "__nda_traced__", None) is None:
                return False
        return True

    def exit(self) -> None:
        try:
            with self._lock:
                self.tracers -= 1
                if self.tracers == 0:
                    for where, attr, value in self._installed:
                        if where is NDArray:
                            setattr(NDArray, attr, value)
                        else:
                            where[attr] = value
                    self._installed = []
        finally:
            _AUTOGRAD_SWAP.holds -= 1
            _AUTOGRAD_SWAP._lock.release()
        _AUTOGRAD_SWAP.maybe_release_checks()


SWAP = _Swap()
_ext.on_namespace.append(SWAP.add_namespace)  # after autograd's hook: wraps its recording version inside record()


class tracing:
    """``with tracing(graph):`` records the ops this thread issues into ``graph``."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.intact = True

    def __enter__(self) -> Any:
        SWAP.enter()
        STATE.graph = self.graph
        STATE.depth = 0
        _engine_state.watch(_untraced)  # every op goes through the engine meanwhile: none runs unseen
        return self

    def __exit__(self, *exc: Any) -> None:
        _engine_state.unwatch(_untraced)
        STATE.graph = None
        self.intact = SWAP.intact()
        SWAP.exit()


def public_function(name: str) -> Callable[..., Any]:
    """The op's public function *as installed now* (autograd's recording version inside ``record()``)."""
    decl = DECLARED.get(name)
    library = getattr(decl, "library", None)
    if library is not None:
        return vars(_ext.namespace(library))[decl.short]  # type: ignore[union-attr,no-any-return]
    namespace, _, short = name.rpartition(".")
    if namespace == "linalg":
        return vars(linalg)[short]  # type: ignore[no-any-return]
    if namespace == "fft":
        return vars(fft)[short]  # type: ignore[no-any-return]
    return vars(_api)[short]  # type: ignore[no-any-return]
