"""The holder of the current engine, :data:`state`: what the front end reads on every op.

The front end binds ``state`` once at import and reads ``state.limit`` and calls
``state.push`` on each op (the C fast paths read the ``limit`` slot directly), so there is
exactly one :class:`_State` object for the life of the process; :func:`nda.engine.use`
changes what it holds, never the object. ``push``, ``wait_for`` and ``wait_all`` are the
engine's bound methods, cached here so that the hot path does one attribute load.

``limit`` has one owner, the engine (see :mod:`nda.engine`): :meth:`_State.refresh_limit`
recomputes it (the profiler calls it when it starts and stops, through the hook registered
below), and :meth:`_State.push_inline` repairs a stale one on a slow path. Once an array's
memory is shared (:mod:`._sharing`), ``push`` is :meth:`_State._shared_push`.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from . import _sharing
from . import queues as _queues
from ._base import UNBOUNDED, Engine
from ._completion import Completion, run_now
from ._profile import profiler
from ._sharing import SHARED, touches_shared
from ._sync import SyncEngine

__all__ = ["state"]


class _State:
    """Holder of the current engine; ops compare with ``state.limit`` and call ``state.push``."""

    __slots__ = ("engine", "limit", "failed", "push", "wait_for", "wait_all")

    def __init__(self) -> None:
        self.engine: Engine = SyncEngine()
        self.limit = UNBOUNDED
        self.failed: dict[int, Any] = self.engine.failed
        self.set(self.engine)

    def set(self, engine: Engine) -> None:
        self.failed = engine.failed  # before the engine's limit is stored: never a limit without its failures
        self.engine = engine
        # Bound methods are cached here so that the hot path does one attribute load.
        self.push = engine.push
        if SHARED:  # stored, then checked: a share() meanwhile wins
            self.push = self._shared_push
        self.wait_for = engine.wait_for
        self.wait_all = engine.wait_all
        _queues.set_on_issue(engine.issued if engine.waits_at_issue else None)
        self.refresh_limit()

    def refresh_limit(self) -> None:
        """Recompute ``limit``: the engine's current limit, 0 while the profiler records (it
        routes every op through ``push`` to record it)."""
        engine = self.engine
        if profiler.active:
            self.limit = 0
        else:
            limit = engine.current_limit()
            self.limit = limit
            if limit and (profiler.active or not engine.current_limit()):
                # the profiler or a held op (another thread's) arrived meanwhile: stored, then
                # checked again, so that 0 wins whichever thread stores last
                self.limit = 0

    def push_inline(self, cost: int) -> bool:
        """Whether an op of ``cost`` that reached a slow path runs inline after all: the engine
        is idle although ``limit`` said otherwise when the fast path read it. A stale ``limit``
        (an idle engine whose last transition stored no limit: a poisoned array collected, a
        store lost to another thread's) is refreshed here, so the next op is fast again."""
        if profiler.active or self.failed:
            return False  # failed arrays kept: the engine sees whether the op touches one
        limit = self.engine.current_limit()
        if cost < limit:
            if self.limit != limit:
                self.refresh_limit()
            return True
        return False

    def use_shared_push(self) -> None:
        """Route every ``push`` through :meth:`_shared_push` (an array's memory is now shared)."""
        self.push = self._shared_push

    def _shared_push(
        self,
        run: Callable[[], Any],
        reads: Sequence[Any],
        writes: Sequence[Any],
        device: Any,
        name: str,
        cost: int = 0,
        route: Any = None,
        view: bool = False,
    ) -> None:
        engine = self.engine
        if self.push_inline(cost):
            result = run()  # what the front end's inline path would have done
            if isinstance(result, Completion):
                run_now(lambda: result)
            return
        engine.push(run, reads, writes, device, name, cost=cost, route=route, view=view)
        if SHARED and touches_shared(reads, writes):
            for array in writes:  # done before the call returns (see share())
                engine.wait_for(array)


#: The one holder of the current engine (never rebound: the front end and the C fast paths keep it).
state = _State()
profiler._on_change = state.refresh_limit
_sharing.on_share = state.use_shared_push
