"""Which engine the process uses: :func:`use` (by name or instance), :func:`current`, :func:`waitall`.

The names are ``threaded`` (the default), ``naive`` (alias ``sync``) and ``deferred``;
``NDA_ENGINE`` picks one at import (:func:`initial_engine`, called by :mod:`nda.engine`).
The threaded engine's module is imported only when it is chosen.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

from typing import Callable

from .._config import env_choice
from ._base import Engine
from ._state import state
from ._sync import DeferredEngine, SyncEngine

__all__ = ["current", "use", "waitall"]


def _threaded() -> Engine:
    from .threaded import ThreadedEngine

    return ThreadedEngine()


_ENGINES: dict[str, Callable[[], Engine]] = {"threaded": _threaded, "naive": SyncEngine, "sync": SyncEngine, "deferred": DeferredEngine}


def use(engine: str | Engine) -> Engine:
    """Switch the process to ``engine`` (a name or an Engine instance) after draining the current one."""
    if not isinstance(engine, Engine):
        factory = _ENGINES.get(engine)
        if factory is None:
            raise ValueError(f"unknown engine {engine!r}; available engines: {', '.join(sorted(_ENGINES))}")
        engine = factory()
    old = state.engine
    try:
        old.wait_all()  # raises the old engine's pending error, after the switch below
    finally:
        if hasattr(engine, "attach"):
            engine.attach(state)
        state.set(engine)
        old.shutdown()
    return engine


def current() -> Engine:
    """The engine in use."""
    return state.engine


def waitall() -> None:
    """Block until every op issued so far has finished; raises the first error of that work once."""
    state.wait_all()


def initial_engine() -> None:
    """Switch to ``NDA_ENGINE``'s engine (the threaded one by default); the holder starts with the naive one."""
    name = env_choice("NDA_ENGINE", "threaded", tuple(sorted(_ENGINES)))  # empty: the default, as for every NDA_* variable
    if name != "naive":
        use(name)
