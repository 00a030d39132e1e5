"""Locks that survive ``os.fork``: every lock nda holds is one of these.

A forked child has one thread: the one that called ``os.fork()``. A lock another thread
held at that instant stays held in the child forever, and the state it guarded may be half
updated. So each lock nda (or nda-sim) creates is registered here in one of three kinds,
and :mod:`nda.engine._lifecycle`, which owns nda's fork hooks, treats them in this order:

``guard(lock, rank, stage=OUTER)``
    A module-level lock whose holder may take a long time or issue work (backend
    activation, op-library namespaces, the dispatch tables). The forking thread acquires
    every OUTER guard, by rank, *before* it pauses the engine: a backend another thread is
    activating is finished first, so the child sees it either absent or complete (never
    half imported), and the holder may still use the engine while the fork waits.
``guard(lock, rank, stage=INNER)``
    A module-level lock held only for short bookkeeping that never waits for other threads
    (the device-queue state, host views, interceptor counts, the profiler's lists). The
    forking thread acquires these *after* the engine and the backends' streams are paused
    (a kernel finishing on a worker may take one of them, so taking them earlier could make
    the pause wait for a kernel that waits for the fork).
``lock()`` / ``reset(lock)``
    A lock of an object (a random generator, a hybridized function, a device allocator)
    whose holder may wait for the engine: the fork does not take it; the child gets it
    unlocked (``_at_fork_reinit``). The object's state is as the parent's thread left it, as
    NumPy's generators are after a fork.

A guard the forking thread acquired is released again in the parent and in the child (the
forking thread is the child's only thread and owns it there); one it could not acquire
within the bound (another thread held it for longer than ``NDA_QUIESCE_TIMEOUT``) is
re-initialised in the child, and nda says so on stderr.

Layer: values (README, "Architecture"): no nda import; the engine calls :func:`acquire`,
:func:`release` and :func:`after_in_child` from its hooks.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any, Callable

__all__ = ["OUTER", "INNER", "guard", "lock", "reset", "acquire", "release", "after_in_child"]

OUTER = "outer"
INNER = "inner"

_SLICE = 0.05


class _Guard:
    __slots__ = ("lock", "rank", "name", "held")

    def __init__(self, lock: Any, rank: int, name: str) -> None:
        self.lock = lock
        self.rank = rank
        self.name = name
        self.held = False  # acquired by the fork in progress


_guards: dict[str, list[_Guard]] = {OUTER: [], INNER: []}
_resets: weakref.WeakSet[Any] = weakref.WeakSet()


def guard(lock: Any, name: str, *, rank: int, stage: str = OUTER) -> Any:
    """Register a module-level ``lock`` (named ``name`` in messages) that a fork acquires first
    (lower ``rank`` first; see the module docstring); returns ``lock``."""
    if stage not in _guards:
        raise ValueError(f"guard(): stage must be {OUTER!r} or {INNER!r}, got {stage!r}")
    entries = _guards[stage]
    entries.append(_Guard(lock, rank, name))
    entries.sort(key=lambda g: g.rank)
    return lock


def lock(reentrant: bool = False) -> Any:
    """A new lock that a forked child gets unlocked (an object's lock; see the module docstring)."""
    return reset(threading.RLock() if reentrant else threading.Lock())


def reset(lock: Any) -> Any:
    """Register an existing lock (or ``threading.Condition``) to be re-initialised in a forked child."""
    _resets.add(lock)
    return lock


def acquire(stage: str, timeout: float, notice: Callable[[str, float], None]) -> None:
    """Before ``os.fork``: acquire the guards of ``stage`` in rank order, each within ``timeout``
    seconds; ``notice(what, waited)`` is called once a wait has lasted a while, and on giving up."""
    for entry in _guards[stage]:
        start = time.monotonic()
        noticed = False
        while True:
            waited = time.monotonic() - start
            if entry.lock.acquire(timeout=max(0.0, min(_SLICE, timeout - waited))):
                entry.held = True
                break
            waited = time.monotonic() - start
            if waited >= timeout:
                notice(f"gave up waiting for {entry.name} and proceeds; the child re-initialises it", waited)
                break
            if waited >= 2.0 and not noticed:
                notice(f"waits for {entry.name}, which another thread holds", waited)
                noticed = True


def release(stage: str) -> None:
    """After ``os.fork`` (parent or child): release what :func:`acquire` took, in reverse order."""
    for entry in reversed(_guards[stage]):
        if entry.held:
            entry.held = False
            entry.lock.release()


def after_in_child() -> None:
    """In a forked child: release the guards the fork took, re-initialise those it could not take
    and every lock registered with :func:`lock` or :func:`reset`."""
    for stage in (INNER, OUTER):
        for entry in reversed(_guards[stage]):
            if entry.held:
                entry.held = False
                entry.lock.release()  # the forking thread owns it, and is this process's thread
            else:
                _reinit(entry.lock)
    for item in list(_resets):
        _reinit(item)


def _reinit(item: Any) -> None:
    reinit = getattr(item, "_at_fork_reinit", None)
    if reinit is not None:
        reinit()
