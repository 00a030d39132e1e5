"""The synchronous engines: ``naive`` runs each op at its call, ``deferred`` at the next sync point.

Neither has threads of its own; both run a task with :func:`._completion.run_now` (waiting for
a backend's asynchronous completion right there) and wait for every device-queue op at issue
(``waits_at_issue``), so errors raise at the call (naive) or at the sync point (deferred).

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ._base import UNBOUNDED, Engine
from ._completion import run_now
from ._profile import profiler
from ._syncpoints import deliver, drain_queues, wait_queued

__all__ = ["DeferredEngine", "SyncEngine"]


class SyncEngine(Engine):
    """Runs every op immediately on the caller's thread, in program order.

    The debugging engine (``NDA_ENGINE=naive``) and the reference the threaded engine is
    compared against. Errors surface at the call that caused them.
    """

    name = "naive"
    idle_limit = UNBOUNDED

    def push(
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
        if profiler.active:
            with profiler.span(name, device, route):
                run_now(run, device)
        else:
            run_now(run, device)

    def wait_for(self, array: Any, for_write: bool = False) -> None:
        wait_queued(array, for_write)

    def wait_all(self) -> None:
        error = drain_queues()
        if error is not None:
            deliver(error)


class DeferredEngine(Engine):
    """Queues every op and runs the queue, in order, at the next sync point.

    It exists to prove the front end's contract: no op may rely on running inline, and
    every result must be the same when work happens later. The test suite runs the op
    tests under it. It is single-threaded and not meant for real use.
    """

    name = "deferred"
    idle_limit = 0

    def __init__(self) -> None:
        self._queue: list[tuple[Callable[[], Any], str, Any, Any]] = []

    def push(
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
        self._queue.append((run, name, device, route))

    def wait_for(self, array: Any, for_write: bool = False) -> None:
        self._run_queue()
        wait_queued(array, for_write)

    def wait_all(self) -> None:
        self._run_queue()
        error = drain_queues()
        if error is not None:
            deliver(error)

    def wait_tasks(self, array: Any, for_write: bool = False) -> None:
        self._run_queue()

    def _run_queue(self) -> None:
        queue, self._queue = self._queue, []
        for run, name, device, route in queue:
            if profiler.active:
                with profiler.span(name, device, route):
                    run_now(run, device)
            else:
                run_now(run, device)
