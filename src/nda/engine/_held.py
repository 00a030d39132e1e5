"""The threaded engine's held op: a large op issued while nothing is pending waits for the next nda call.

The commonest program shape is ``y = f(x)`` followed, sooner or later, by a read of ``y``.
Handing ``f`` to a worker costs more than a thread hop on a small machine: the woken worker
takes the GIL while the issuing thread is inside NumPy, which then waits for it back (on a
loaded 2-core machine, milliseconds for a 1M-element op that takes 0.4 ms), and the task's
bookkeeping (a graph node, three lock round trips, a notification) costs tens of
microseconds, as much as a 300k-element op. So a large op issued while the engine is idle
is *held*: a small record on the engine, not yet a task, and the engine is no longer idle
(every op goes through ``push``). What happens next decides where it runs:

* a sync point that needs it (a read of what it writes, a write of what it reads, or
  ``waitall``) runs it right there, on the caller's thread and core, and the engine is idle
  again: no graph node, no worker, no notification;
* any other op, from any thread, first turns it into a task. If the new op depends on
  pending work (``f(g(x))``, one dependent chain) the task stays in the queue unsent, and a
  sync point down the chain runs it, still without a worker; if the new op is independent,
  the task goes to a worker at once, so that independent chains overlap as before;
* a worker that finishes a task takes an unsent one; a sync point that waits for other work
  sends it to a worker.

A held op overlaps with nothing until the next nda call: between ``y = f(x)`` and the next
call into nda, Python code of the user's runs alone (as with NumPy). An op that reads what
it writes (``x += y``) is never held: a waiting thread never runs it (see the Ctrl-C rule in
:mod:`.threaded`). Ctrl-C while a sync point runs a held op hands it to a worker, which runs
it again from the start.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from . import queues as _queues
from ._completion import Completion, device_completion
from ._fperrors import guard, issuing, unguard
from ._graph import QUEUED, RUNNING, Task
from ._profile import profiler

__all__ = ["Held", "HoldingEngine"]

_WAIT_SLICE = 0.05


def _base(array: Any) -> Any:
    return array._base if array._base is not None else array


class Held:
    """A large op held on the engine (see the module docstring): what ``push`` was given."""

    __slots__ = ("run", "reads", "writes", "device", "name", "cost", "route", "site", "fp", "runner", "task")

    def __init__(
        self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int, route: Any, site: str
    ) -> None:
        self.run = run
        self.reads = reads
        self.writes = writes
        self.device = device
        self.name = name
        self.cost = cost
        self.route = route
        self.site = site
        self.fp = issuing()  # NumPy's error state where it was issued (see engine._fperrors)
        self.runner: int | None = None  # the thread of the sync point running it
        self.task: Task | None = None  # its graph node, once another thread needed one

    def needed_by(self, base: Any, for_write: bool) -> bool:
        """Whether a read (or a write) of ``base`` must wait for this op."""
        for array in self.writes:
            if _base(array) is base:
                return True
        if for_write:
            for array in self.reads:
                if _base(array) is base:
                    return True
        return False


class HoldingEngine:
    """The held-op half of :class:`~.threaded.ThreadedEngine` (a mixin; it owns the engine's lock,
    graph, executors and the rest, see there)."""

    _held: Held | None
    _unsent: Task | None
    _lock: threading.Lock
    _cond: threading.Condition
    _graph: Any
    _state: Any
    _paused: bool
    _closed: bool
    _queued: Any
    _pending_elements: int

    # provided by ThreadedEngine
    def _set_limit(self) -> None: ...
    def _send(self, task: Task) -> None: ...
    def _complete(self, task: Task, error: BaseException | None, start: float, route: Any) -> list[Task]: ...
    def _dispatch(self, ready: list[Task]) -> Task | None: ...
    def _execute(self, task: Task | None, on_caller: bool, restart_on_interrupt: bool = False) -> None: ...

    # ------------------------------------------------------------------ holding
    def _try_hold(
        self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int, route: Any, site: str
    ) -> bool:
        """Hold a large op issued while nothing is pending (False: it becomes a task as usual)."""
        if self._state is None:
            return False
        for w in writes:  # an op that reads what it writes is never run by a waiting thread
            wb = w._base if w._base is not None else w
            for r in reads:
                if r is wb or r._base is wb:
                    return False
        held = Held(run, reads, writes, device, name, cost, route, site)
        with self._lock:
            graph = self._graph
            if self._held is not None or graph.pending or graph.poison:
                return False
            self._held = held
            self._state.limit = 0  # every op now reaches push (which turns the held op into a task first)
        return True

    def _materialize(self, held: Held, state: str) -> Task:
        """``held`` as a graph node in ``state`` (lock held). Nothing else is pending before it:
        every op issued after it turned it into a task first."""
        from .threaded import _bases

        task = Task(held.run, _bases(held.reads), _bases(held.writes), held.device, held.name, held.cost, held.site)
        task.fp = held.fp
        task.route = held.route
        task.inputs, task.outputs = held.reads, held.writes
        self._pending_elements += held.cost
        self._graph.add(task)
        task.state = state
        if state == QUEUED:
            self._queued.append(task)
        return task

    def _before_push(self, reads: Sequence[Any], writes: Sequence[Any]) -> None:
        """Another op is issued: the held op becomes a task, sent to a worker unless the new op
        depends on pending work; an unsent task goes to a worker when the new op does not."""
        send: list[Task] = []
        with self._lock:
            held = self._held
            if held is not None:
                if held.runner is not None:
                    if held.task is None:  # make it visible: the new op may have to wait for it
                        held.task = self._materialize(held, RUNNING)
                else:
                    self._held = None
                    task = self._materialize(held, QUEUED)
                    if self._unsent is not None:
                        send.append(self._unsent)
                    self._unsent = task
            unsent = self._unsent
            if unsent is not None and not self._depends_on_pending(reads, writes):
                self._unsent = None
                send.append(unsent)
            self._set_limit()
        for task in send:
            self._send(task)

    def _depends_on_pending(self, reads: Sequence[Any], writes: Sequence[Any]) -> bool:
        """Whether an op reading ``reads`` and writing ``writes`` must wait for pending work (lock held)."""
        vars_ = self._graph.vars
        for array in reads:
            var = vars_.get(id(_base(array)))
            if var is not None and var.last_write is not None:
                return True
        for array in writes:
            if id(_base(array)) in vars_:
                return True
        return False

    # ------------------------------------------------------------------ sync points
    def _sync_held(self, array: Any, for_write: bool, always: bool = False) -> None:
        """A sync point on ``array`` (``always``: ``waitall``): run the held op here if it needs it."""
        base = None if always else (array._base if array._base is not None else array)
        with self._lock:
            while self._paused and not self._closed:  # a fork is under way: start nothing
                self._cond.wait(_WAIT_SLICE)
            held = self._held
            if held is None or not (always or held.needed_by(base, for_write)):
                return
            if held.runner is not None:  # another thread runs it: wait for its graph node
                if held.task is None:
                    held.task = self._materialize(held, RUNNING)
                return
            held.runner = me = threading.get_ident()  # counted as busy by a fork or exit (see _quiesce)
        self._run_held(held, me)

    def _run_held(self, held: Held, me: int) -> None:
        local = _queues.local
        outer = local.site
        local.site = held.site  # ops it enqueues on a device queue are the op's
        start = time.perf_counter() if profiler.active else 0.0
        error: BaseException | None = None
        token = guard(held.fp)  # NumPy's warnings name the op's site (engine._fperrors)
        try:
            try:
                result = held.run()
            finally:
                unguard(token)
            if result is None:
                result = device_completion(held.device)
            if result.__class__ is Completion:
                _await(result)
        except KeyboardInterrupt:
            local.site = outer
            self._hand_to_worker(held, me)  # it runs again from the start there
            raise
        except BaseException as err:  # noqa: BLE001 - raised at this sync point, with the op's note, as a task's
            error = err
        local.site = outer
        end = time.perf_counter() if start else 0.0
        with self._lock:
            task = held.task
            if task is None and error is not None:  # it failed: poison what it writes, as a failed task does
                task = held.task = self._materialize(held, RUNNING)  # (in the graph before the slot empties)
            if self._held is held:
                self._held = None
            held.runner = None
            if task is None:
                self._set_limit()  # idle again: small ops inline
            if self._paused or self._closed:
                self._cond.notify_all()  # a fork or exit waits for running kernels
        if task is None:
            if start:  # the profiler was recording when the op started
                profiler.record(held.name, held.device, held.route, start, end)
            return
        ready = self._complete(task, error, start, held.route)
        small = self._dispatch(ready)
        if small is not None:
            self._execute(small, on_caller=True)

    def _hand_to_worker(self, held: Held, me: int) -> None:
        with self._lock:
            held.runner = None
            if self._paused or self._closed:
                self._cond.notify_all()
            if self._held is held:
                self._held = None
            task = held.task
            if task is None:
                task = self._materialize(held, QUEUED)
            else:
                task.state = QUEUED
                self._queued.append(task)
        self._send(task)

    def _held_pending(self) -> int:
        held = self._held
        return 1 if held is not None and held.task is None else 0

    def _held_runner(self) -> int | None:
        """The thread running the held op at a sync point, if one does (lock held)."""
        held = self._held
        return None if held is None else held.runner


def _await(completion: Completion) -> None:
    """Wait for asynchronous work (a backend of API 1.1/1.2) and raise its error."""
    errors: list[BaseException | None] = []
    completion.add_done_callback(errors.append)
    while not errors:
        time.sleep(0.0002)
    if errors[0] is not None:
        raise errors[0]
