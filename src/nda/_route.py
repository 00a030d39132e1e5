"""The route of a call: the value :func:`nda.dispatch.resolve` answers with.

A :class:`Route` says, once per resolution, everything the layers above need to know about
how a call runs, so that nothing rides on the kernel function any more:

* ``kind`` (:class:`RouteKind`): ``native`` (a kernel registered for the key), ``queued`` (a
  native kernel of a backend with in-order queues: the engine records what it enqueues on
  the device's queue), ``host fallback`` (no kernel on the device; the backend opted in:
  copies to cpu, runs there, copies back), ``host view`` (the host fallback of a view op: the
  front end makes the result a copy kept in step with its base, :mod:`nda._hostviews`) or
  ``layout conversion`` (non-strided operands converted to strided on the device, then the
  strided route, ``inner``);
* ``run``: the callable that runs it (buffers in, buffer out). The fast paths cache this
  callable itself, never the route, so a hit costs what it always did;
* what it announces: ``warning`` (the :class:`FallbackWarning`'s one line, given once per op
  and ``where``; None for a route that announces nothing, such as ``asarray`` of host data
  through the host fallback), ``description`` (the whole route in words, which
  ``nda.dispatch.explain`` prints and a ``FallbackError`` names) and ``queue`` (the device
  type whose in-order queue records a queued route);
* ``layout`` (the result's layout) and, for a layout conversion, its ``conversions`` in words.

Routes are frozen: the caches that store them (``OpTable.resolved``, the layouts' routes) hand
the same value to every caller. :meth:`Route.announce` is called by whoever resolves a route
(once per resolution, on the caller's thread), never by whoever runs it.

Layer: dispatch (README, "Architecture"): it knows keys and layouts, nothing above.
"""

from __future__ import annotations

import enum
import sys
import warnings
from typing import Any, Callable

from ._config import config as _config
from ._devices import KernelKey, Layout, strided

__all__ = [
    "Route",
    "RouteKind",
    "NATIVE",
    "QUEUED",
    "HOST_FALLBACK",
    "HOST_VIEW",
    "LAYOUT_CONVERSION",
    "FALLBACKS",
    "DispatchError",
    "FallbackWarning",
    "FallbackError",
    "announce_fallback",
    "warned",
]


class DispatchError(TypeError):
    """No kernel is registered for an op at the requested (device type, dtype, layout)."""


class FallbackWarning(UserWarning):
    """An op ran through a fallback route (for example on cpu, with copies in and out)."""


class FallbackError(DispatchError):
    """An op would need a fallback route and ``nda.config.fallback`` is ``"error"``."""


for _cls in (DispatchError, FallbackWarning, FallbackError):
    _cls.__module__ = "nda.dispatch"  # their public home


class RouteKind(str, enum.Enum):
    """How a call runs (a ``str``: ``route.kind == "host fallback"`` reads as it prints)."""

    NATIVE = "native"
    QUEUED = "queued"
    HOST_FALLBACK = "host fallback"
    HOST_VIEW = "host view"
    LAYOUT_CONVERSION = "layout conversion"

    def __str__(self) -> str:
        return self.value


NATIVE = RouteKind.NATIVE
QUEUED = RouteKind.QUEUED
HOST_FALLBACK = RouteKind.HOST_FALLBACK
HOST_VIEW = RouteKind.HOST_VIEW
LAYOUT_CONVERSION = RouteKind.LAYOUT_CONVERSION
#: The kinds that are fallbacks (announced, counted as ``fallback`` by coverage).
FALLBACKS = frozenset({HOST_FALLBACK, HOST_VIEW, LAYOUT_CONVERSION})


class Route:
    """How one call of ``op`` at ``key`` runs (see the module docstring). Frozen: assigning
    or deleting an attribute raises AttributeError."""

    __slots__ = ("kind", "run", "op", "key", "layout", "description", "warning", "where", "queue", "conversions", "inner")

    kind: RouteKind
    run: Callable[..., Any]
    op: str
    key: KernelKey
    layout: Layout
    description: str
    warning: str | None
    where: Any
    queue: str | None
    conversions: tuple[str, ...]
    inner: Route | None

    def __init__(
        self,
        kind: RouteKind,
        run: Callable[..., Any],
        op: str,
        key: KernelKey,
        layout: Layout = strided,
        *,
        description: str = "",
        warning: str | None = None,
        where: Any = None,
        queue: str | None = None,
        conversions: tuple[str, ...] = (),
        inner: Route | None = None,
    ) -> None:
        init = object.__setattr__  # a plain class, not a dataclass: imported with nda, it must cost next to nothing
        init(self, "kind", kind)
        init(self, "run", run)
        init(self, "op", op)
        init(self, "key", key)
        init(self, "layout", layout)
        init(self, "description", description)
        init(self, "warning", warning)
        init(self, "where", where)
        init(self, "queue", queue)
        init(self, "conversions", conversions)
        init(self, "inner", inner)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Route is frozen (cached and shared by every caller): cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Route is frozen (cached and shared by every caller): cannot delete {name!r}")

    @property
    def fallback(self) -> bool:
        """Whether the route is a fallback (host fallback, host view or layout conversion)."""
        return self.kind in FALLBACKS

    def announce(self) -> None:
        """Warn once per (op, ``where``), or refuse under ``nda.config.fallback = "error"``;
        nothing for a route that announces nothing (native, queued, a quiet fallback)."""
        if self.warning is not None:
            announce_fallback(self.op, self.description, where=self.where, summary=self.warning)

    def __repr__(self) -> str:
        run = getattr(self.run, "__qualname__", None) or repr(self.run)
        extra = f", queue {self.queue!r}" if self.queue else ""
        return f"<Route {self.kind.value} {self.op} at {self.key} -> {run}{extra}>"


def announce_fallback(op_name: str, route: str, *, where: Any = None, summary: str | None = None) -> None:
    """On the caller's thread, when a fallback route is chosen: warn once, or refuse.

    Once per op and ``where`` (the device type and layout it happens on; without it, per
    route): ``std`` on sim warns once, whatever the dtypes and shapes it is called with, so a
    notebook session is not a wall of warnings. The warning says it in one line (``summary``
    when given, the route otherwise); ``nda.dispatch.explain`` shows the whole route, and the
    error under ``nda.config.fallback = "error"`` names it.
    """
    mode = _config.fallback
    if mode == "error":
        raise FallbackError(f"{route}; nda.config.fallback is 'error' (set it to 'warn' or 'silent' to allow fallbacks)")
    seen = (op_name, route if where is None else where)
    if mode == "warn" and seen not in warned:
        warned.add(seen)
        warnings.warn(summary or route, FallbackWarning, stacklevel=_user_stacklevel())


#: What has warned: (op, where) pairs (see :func:`announce_fallback`).
warned: set[tuple[str, Any]] = set()
_PACKAGE_DIR = __file__.rsplit("/", 1)[0] if "/" in __file__ else ""


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the user's line, outside nda."""
    frame: Any = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level
