"""The interface every engine implements (the contract is in :mod:`nda.engine`'s docstring).

An engine is asked to ``push`` a task, to say whether an op may run inline now
(:meth:`Engine.current_limit`, which :mod:`._state` caches as ``state.limit``), to wait at
sync points, and to take part in exit and ``os.fork`` (:mod:`._lifecycle`). The defaults here
are those of an engine without threads of its own.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

from . import queues as _queues
from ._syncpoints import deliver

__all__ = ["Engine", "UNBOUNDED"]

#: The limit of an engine that runs every op inline (``size < UNBOUNDED`` always holds).
UNBOUNDED = sys.maxsize


class Engine:
    """Interface of an engine (see the module docstring for the contract)."""

    name = "abstract"
    #: The ``state.limit`` this engine wants while idle.
    idle_limit = 0
    #: Whether every op on a device queue waits for its work at issue (:meth:`issued`).
    waits_at_issue = True
    #: The arrays whose work failed and that are still kept (``id(array)`` -> its entry), read
    #: by every fast path through ``state.failed`` while it is not empty: an engine that never
    #: keeps a failed array (the failure raises at the call) keeps this one, empty, forever.
    failed: dict[int, Any] = {}

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
        raise NotImplementedError(f"engine {self.name!r} does not implement push")

    def current_limit(self) -> int:
        """The ``state.limit`` this engine wants now (its idle limit unless it says otherwise)."""
        return self.idle_limit

    def wait_for(self, array: Any, for_write: bool = False) -> None:
        raise NotImplementedError(f"engine {self.name!r} does not implement wait_for")

    def wait_all(self) -> None:
        raise NotImplementedError(f"engine {self.name!r} does not implement wait_all")

    def wait_tasks(self, array: Any, for_write: bool = False) -> None:
        """The host-task half of a sync point: wait for the engine's own tasks on ``array``.

        A host read of a device-queue array calls this, then :func:`host_read`.
        """

    def settle(self, array: Any) -> None:
        """Wait for the engine's own pending writes of ``array``'s memory without raising their
        errors (they stay with the arrays, for the sync points that read them). By default there
        is nothing to wait for: an engine that runs ops at their call."""

    def issued(self, queue: _queues.Queue, number: int, entry: _queues.Entry | None) -> None:
        """An op took ``number`` on a device queue (``entry``: its entry, if it may fail); called
        when :attr:`waits_at_issue`. By default: wait for it; raise its error here."""
        queue.wait(number)
        if entry is not None and entry.error is not None:
            deliver(entry.error)

    def shutdown(self) -> None:
        """Release threads; the engine must not be used afterwards."""

    # Exit and fork (``._lifecycle``): engines without threads of their own have nothing to do.
    def pause(self, timeout: float) -> int:
        """Before ``os.fork``: start no kernel, wait up to ``timeout`` s for running ones; how many still run."""
        return 0

    def resume(self) -> None:
        """After ``os.fork``, in the parent: undo :meth:`pause`."""

    def for_child(self) -> Engine:
        """After ``os.fork``, in the child: the engine to use there, holding the work the parent had
        issued and not started (it runs in the child when needed; see ``._lifecycle``). No thread
        starts here: other fork hooks run after nda's."""
        return self

    def close(self, timeout: float) -> int:
        """At exit: start no kernel on a thread of the engine's own, wait up to ``timeout`` s
        for running ones; how many still run. Sync points keep working."""
        return 0
