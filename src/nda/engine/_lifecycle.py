"""Exit and ``os.fork`` while kernels run: stop starting work, wait (bounded) for what runs.

A thread that is inside a BLAS call when the process exits or forks hangs the process:
OpenBLAS's shutdown (at exit) and its fork handler wait for the call, which in turn waits
for them. Plain NumPy does the same with a daemon thread; nda must not create that
situation for a program that has only one thread of its own. So:

* **At exit** (an ``atexit`` handler, which runs after the interpreter has joined every
  non-daemon thread and before it finalizes), the engine is *closed*: its workers start no
  queued task any more, and the handler waits for the kernels already running on them.
  Queued work nobody reads is dropped; a sync point reached later (another exit handler
  that reads an array) still gets its value, because it runs what it needs on its own
  thread.
* **At** ``os.fork``, the engine is *paused* for the instant of the fork: no worker and no
  waiting thread starts a task, the fork waits for the kernels already running, and then
  proceeds with the engine's lock held (the child copies a consistent graph). The parent
  resumes at once; the child gets a fresh engine (``Engine.for_child``) that inherits the
  parent's unfinished work: what was issued and not started (a held op, tasks queued or
  waiting for others, work queued on a device that keeps running in a child) is computed in
  the child too, when needed, so the child sees every array the parent had issued, as
  NumPy's and the naive engine's children do. Only a kernel that was *running* at the fork
  (which the fork waited for past the bound below) has no value in the child: its arrays,
  and what was computed from them, raise a ``RuntimeError`` saying so (:data:`FORKED`).
  The fork itself waits for nothing queued: a parent that forks a helper while another
  thread keeps the engine busy is not held up; a child that reads an array the parent had
  not computed yet computes it itself (``nda.waitall()`` before forking computes it once).

Every lock nda holds is safe across the fork (:mod:`nda._forksafe`): before pausing the
engine, the forking thread takes the locks whose holders may run long or issue work (a
backend being activated on another thread is finished first, so the child never finds it
half imported); once the engine and the backends' streams are paused, it takes the locks
of short bookkeeping (the device queues' state, host views, interceptor counts); the child
releases them (the forking thread is its only thread) and re-initialises every other lock
nda made, which no thread of the child holds.

Both waits are bounded by :data:`QUIESCE_TIMEOUT` seconds (``NDA_QUIESCE_TIMEOUT``, default
60): a kernel that never returns cannot keep the process from exiting or forking, and past
the bound nda says on stderr what it is still waiting for and proceeds. Ctrl-C ends the
wait too. Ops a user thread runs inline (small ops, on that thread) are that thread's own
NumPy calls, as in NumPy: nda cannot pause them.

A backend with threads of its own (nda-sim's stream threads) registers its fork hooks
with :func:`register_at_fork` rather than ``os.register_at_fork``: they then run *after*
nda has paused its workers (a host kernel that waits for the device's queue still finds it
running) and, in the parent, resume *before* nda's workers do; in the child they run after
nda has made its fresh engine.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Callable

from .. import _forksafe
from .._config import env_float

__all__ = ["QUIESCE_TIMEOUT", "register_at_fork"]

#: Seconds exit and ``os.fork`` wait for kernels already running (``NDA_QUIESCE_TIMEOUT``).
QUIESCE_TIMEOUT = env_float("NDA_QUIESCE_TIMEOUT", 60.0)
#: After this many seconds of waiting, say on stderr what the process waits for.
NOTICE_AFTER = 2.0

_Hook = Callable[[], None]
_before: list[_Hook] = []
_after_in_parent: list[_Hook] = []
_after_in_child: list[_Hook] = []
_paused: list[object] = []  # the engine paused by the fork in progress (at most one)


def register_at_fork(*, before: _Hook | None = None, after_in_parent: _Hook | None = None, after_in_child: _Hook | None = None) -> None:
    """``os.register_at_fork`` for backends with threads of their own, ordered with nda's engine.

    ``before`` hooks run in registration order once nda has stopped starting host work
    and waited for the kernels already running; ``after_in_parent`` hooks in reverse order,
    before nda resumes; ``after_in_child`` hooks in registration order, after nda has
    replaced its engine. A hook should wait only boundedly (see :data:`QUIESCE_TIMEOUT`).
    """
    for hook in (before, after_in_parent, after_in_child):
        if hook is not None and not callable(hook):
            raise TypeError(f"register_at_fork: hooks must be callable or None, got {hook!r}")
    if before is not None:
        _before.append(before)
    if after_in_parent is not None:
        _after_in_parent.append(after_in_parent)
    if after_in_child is not None:
        _after_in_child.append(after_in_child)


def notice(what: str, waited: float, still: int) -> None:
    """One line on stderr while exit or fork waits for running kernels (never raises)."""
    try:
        print(
            f"nda: {what} waits for {still} running kernel(s) ({waited:.0f} s so far, at most {QUIESCE_TIMEOUT:.0f} s; "
            "NDA_QUIESCE_TIMEOUT sets the bound)",
            file=sys.stderr,
            flush=True,
        )
    except Exception:  # noqa: BLE001 - stderr closed at exit
        pass


def _run(hooks: list[_Hook], what: str) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception as err:  # noqa: BLE001 - a backend's hook must not break os.fork
            print(f"nda: a backend's {what} fork hook {hook!r} failed: {err!r}", file=sys.stderr)


def _fork_notice(what: str, waited: float) -> None:
    try:
        print(
            f"nda: os.fork() {what} ({waited:.0f} s so far, at most {QUIESCE_TIMEOUT:.0f} s; NDA_QUIESCE_TIMEOUT sets the bound)",
            file=sys.stderr,
            flush=True,
        )
    except Exception:  # noqa: BLE001 - stderr closed
        pass


def _before_fork() -> None:
    from ._state import state

    _forksafe.acquire(_forksafe.OUTER, QUIESCE_TIMEOUT, _fork_notice)  # backend activation and the like: finished first
    engine = state.engine
    try:
        engine.pause(QUIESCE_TIMEOUT)  # returns with the engine's lock held (threaded engine)
    except BaseException:
        _forksafe.release(_forksafe.OUTER)
        raise
    _paused.append(engine)
    _run(_before, "before")
    _forksafe.acquire(_forksafe.INNER, QUIESCE_TIMEOUT, _fork_notice)  # short bookkeeping: nothing runs any more


def _after_fork_in_parent() -> None:
    _forksafe.release(_forksafe.INNER)
    _run(list(reversed(_after_in_parent)), "after_in_parent")
    while _paused:
        _paused.pop().resume()
    _forksafe.release(_forksafe.OUTER)


def _after_fork_in_child() -> None:
    from . import queues as _queues
    from ._state import state

    _forksafe.after_in_child()
    _queues.reset_after_fork(FORKED)
    engine = _paused.pop() if _paused else state.engine
    _paused.clear()
    child = engine.for_child()
    if child is not engine:
        if hasattr(child, "attach"):
            child.attach(state)
        state.set(child)
    _run(_after_in_child, "after_in_child")


#: The error of an array whose kernel was running when the process forked (and still was when
#: the fork stopped waiting for it): its value exists only in the parent.
FORKED = (
    "this array was still being computed when the process forked: its kernel was running then, and os.fork() "
    "stopped waiting for it after NDA_QUIESCE_TIMEOUT seconds; its value exists only in the parent process"
)


def _at_exit() -> None:
    from ._state import state

    state.engine.close(QUIESCE_TIMEOUT)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
atexit.register(_at_exit)
