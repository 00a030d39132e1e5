"""Recording the ops a function issues: hybridize's tracer, an interceptor at the invocation point.

While a hybridized function runs for the first time with a signature (or, after a failed
guard, for the rest of that call: :mod:`._check`), a :class:`Tracer` is on the calling
thread's interceptor stack (:mod:`nda._intercept`). Every op call the thread
makes reaches it, however the function was bound (``nda.exp``, ``from nda import exp``,
operators, methods, indexing, ``to_device``, ``to_layout``, ``nda.ext.<library>.<op>``), and
the tracer adds a node to its graph, with the call's Python arguments frozen for later
comparison (:mod:`._guards`; a value that cannot be compared ends the graph). Calls nda makes inside a traced call (a composite's
inner ops) do not reach it: the tracer is off the stack while the op runs, so only the
outermost call is recorded. Nothing in NDArray or in a namespace changes while tracing,
and nothing is locked while the traced function runs.

The graph *ends* (the signature runs eagerly) at a host read of an array (``asnumpy``,
``float(x)``, ``repr``, ``tolist``, ``np.asarray``, ``__dlpack__``: announced to the
interceptors by NDArray), at an op whose output shape depends on data, and when the traced
function enters ``autograd.record()`` itself (an interceptor pushed above the tracer).
Before a traced call writes in place, the written array's storage is copied once
(:meth:`~._graph.Graph.before_write`): the first-call check replays the graph from that state.

A hybridized function called while its thread traces or checks another one (a
:class:`Scope` is installed) runs inline: its ops belong to the outer graph.

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from .. import _api, _intercept
from .. import ext as _ext
from .. import fft, linalg
from ..ops import DECLARED

__all__ = ["Scope", "Tracer", "tracing", "tracing_now", "user_site", "public_function"]

_PACKAGE_DIR = __file__.rsplit("/", 2)[0] if "/" in __file__ else ""


def user_site() -> tuple[str, int]:
    """(file, line) of the first frame outside nda: where the user's function issued the op."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return ("<unknown>", 0)
    return (frame.f_code.co_filename, frame.f_lineno)


class Scope(_intercept.Interceptor):
    """An interceptor of hybridize's (the tracer, the checker of :mod:`._check`)."""

    __slots__ = ()


class Tracer(Scope):
    """Adds every op call of its thread to ``graph`` (see the module docstring)."""

    __slots__ = ("graph",)

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    def call(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], proceed: Callable[..., Any]) -> Any:
        graph = self.graph
        kind = op.kind
        if kind == "inplace":
            graph.before_write(args[:1])
        elif op.mutates:
            graph.before_write(args)
        out = proceed(*args, **kwargs)
        if out is NotImplemented:
            return out
        site = user_site()
        if kind == "inplace":
            graph.record(op.name, "attr", op.attr, args, {}, out, site, op)
        elif kind == "to_layout":
            graph.record("to_layout", "attr", "to_layout", args, kwargs, out, site, op)
        else:  # a catalog or extension op, to_device: the public function, called again with these arguments
            graph.record(op.name, "call", None, args, kwargs, out, site, op)
        return out

    def read(self, array: Any, what: str) -> None:
        graph = self.graph
        if graph.ended is None:
            graph.end(f"a host read of an array ({what}) at {'{}:{}'.format(*user_site())}: the function's result may depend on the data")

    def pushed_above(self, other: _intercept.Interceptor) -> None:
        if self.graph.ended is None:
            self.graph.end(f"the function entered another recording scope ({other!r}) while it was being traced")

    def __repr__(self) -> str:
        return "<hybridize tracer>"


class tracing:
    """``with tracing(graph):`` records the ops this thread issues into ``graph``."""

    def __init__(self, graph: Any) -> None:
        self.tracer = Tracer(graph)

    def __enter__(self) -> Any:
        _intercept.push(self.tracer)
        return self

    def __exit__(self, *exc: Any) -> None:
        _intercept.pop(self.tracer)


def tracing_now() -> bool:
    """Whether the calling thread traces or checks a hybridized function (another one called inside runs inline)."""
    return _intercept.ACTIVE[0] > 0 and _intercept.installed(Scope)


def public_function(name: str) -> Callable[..., Any]:
    """The public function of op ``name`` (what a graph node runs, op by op)."""
    decl = DECLARED.get(name)
    library = getattr(decl, "library", None)
    if library is not None:
        return vars(_ext.namespace(library))[decl.short]  # type: ignore[union-attr,no-any-return]
    if name == "to_device":
        return _api.to_device
    namespace, _, short = name.rpartition(".")
    if namespace == "linalg":
        return vars(linalg)[short]  # type: ignore[no-any-return]
    if namespace == "fft":
        return vars(fft)[short]  # type: ignore[no-any-return]
    if namespace == "random":
        from .. import random as _random  # loaded at first use, as nda.random is

        return vars(_random)[short]  # type: ignore[no-any-return]
    return vars(_api)[short]  # type: ignore[no-any-return]
