"""The engine entry point: every op in nda reaches its kernel through here.

The front end never calls a kernel "by hand"; it asks the *current engine*, held in the
module-level :data:`state`, in exactly one of two ways:

``state.inline``
    True when running the op right now, on the caller's thread, gives the same result as
    running every op in program order (nothing is pending that the op could depend on).
    The hot path of every op checks this one attribute and, when it holds, calls the
    kernel directly. A synchronous engine is always inline; a threaded engine is inline
    while it is idle, so a tiny op in an interactive session never pays for a thread hop.

``state.push(run, reads, writes, device, name)``
    Otherwise the op becomes a task: ``run()`` does the work (it reads the buffers of the
    ``reads`` arrays and fills or mutates the ``writes`` arrays) and the engine orders it
    after earlier writers of what it reads and earlier readers/writers of what it writes.

Sync points (``wait_to_read``, ``asnumpy``, ``repr``…) call ``state.wait_for(array)`` and
``state.wait_all()``. The engine that issue "threaded dependency engine" adds implements
the same four members; swapping engines does not touch any op.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

__all__ = ["Engine", "SyncEngine", "state", "use", "current"]


class Engine:
    """Interface of an engine (see the module docstring for the contract)."""

    __slots__ = ("inline",)
    name = "abstract"

    def __init__(self) -> None:
        self.inline = False

    def push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str) -> None:
        raise NotImplementedError(f"engine {self.name!r} does not implement push")

    def wait_for(self, array: Any) -> None:
        raise NotImplementedError(f"engine {self.name!r} does not implement wait_for")

    def wait_all(self) -> None:
        raise NotImplementedError(f"engine {self.name!r} does not implement wait_all")


class SyncEngine(Engine):
    """Runs every op immediately on the caller's thread, in program order.

    This is the debugging engine (``NDA_ENGINE=naive``) and the reference the threaded
    engine is compared against. Errors surface at the call that caused them.
    """

    __slots__ = ()
    name = "naive"

    def __init__(self) -> None:
        self.inline = True

    def push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str) -> None:
        run()

    def wait_for(self, array: Any) -> None:
        return None

    def wait_all(self) -> None:
        return None


class DeferredEngine(Engine):
    """Queues every op and runs the queue, in order, at the next sync point.

    It exists to prove the front end's contract: no op may rely on ``inline`` being
    true, and every result must be the same when work happens later. The test suite
    runs the op tests under it. It is single-threaded and not meant for real use.
    """

    __slots__ = ("_queue",)
    name = "deferred"

    def __init__(self) -> None:
        self.inline = False
        self._queue: list[Callable[[], Any]] = []

    def push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str) -> None:
        self._queue.append(run)

    def wait_for(self, array: Any) -> None:
        self.wait_all()

    def wait_all(self) -> None:
        queue, self._queue = self._queue, []
        for run in queue:
            run()


_ENGINES: dict[str, Callable[[], Engine]] = {"naive": SyncEngine, "sync": SyncEngine, "deferred": DeferredEngine}


class _State:
    """Holder of the current engine; ops read ``state.inline`` and call ``state.push``."""

    __slots__ = ("engine", "inline", "push", "wait_for", "wait_all")

    def __init__(self) -> None:
        self.set(SyncEngine())

    def set(self, engine: Engine) -> None:
        self.engine = engine
        # Bound methods are cached here so that the hot path does one attribute load.
        self.push = engine.push
        self.wait_for = engine.wait_for
        self.wait_all = engine.wait_all
        self.inline = engine.inline


state = _State()


def use(name: str) -> Engine:
    """Switch the process to engine ``name`` (``"naive"`` or ``"deferred"``) after draining the old one."""
    factory = _ENGINES.get(name)
    if factory is None:
        raise ValueError(f"unknown engine {name!r}; available engines: {', '.join(sorted(_ENGINES))}")
    state.wait_all()
    engine = factory()
    state.set(engine)
    return engine


def current() -> Engine:
    """The engine in use."""
    return state.engine


def waitall() -> None:
    """Block until every op issued so far has finished (a sync point)."""
    state.wait_all()


_env_engine = os.environ.get("NDA_ENGINE")
if _env_engine:
    use(_env_engine)
