"""The threaded dependency engine (the default engine).

Work is ordered by :mod:`._graph` (read/write dependencies on base arrays) and executed by
one executor per device (the executor is injected; by default a pool of worker threads,
as many as there are cores for cpu and one per accelerator device). NumPy and CuPy
release the GIL inside their kernels, so independent large ops overlap.

The shape of the hot path:

* While the engine is idle (nothing pending) it sets ``state.limit`` to its inline
  threshold (:data:`INLINE_MAX`, 2**20 elements), so a smaller op never reaches the engine
  at all: the front end calls the kernel on the caller's thread. Failed arrays still kept
  (a notebook's variable) do not make it busy: they are ``state.failed`` (the graph's
  poison, emptied as each is collected), which the fast paths look their inputs up in
  while it is not empty; an op that reads one comes here and fails with its error. The engine's own Python around an op costs tens of microseconds once
  a large op has emptied the caches, as much as a whole 300k-element ``x + y``.
* A large op issued while the engine is idle is *held* (:mod:`._held`): not a task yet,
  and ``state.limit`` drops to 0. A sync point that needs it runs it on the caller's
  thread, so ``y = f(x); y.wait_to_read()`` involves no worker and no graph node; the next
  op turns it into a task (sent to a worker at once if that op is independent, so that
  independent chains overlap; kept for a sync point if it depends on pending work).
* Otherwise a large op becomes a task for the device's executor, and ``state.limit``
  stays 0 until the engine is idle again. Meanwhile every op is pushed: a small one whose
  dependencies are done runs right away on the caller's thread (through the task
  machinery, so it is ordered correctly); anything else waits for its dependencies and
  then runs on the thread that finished the last of them (small) or on the executor
  (large).
* A sync point does not sit blocked on work nobody has started: if what it waits for
  (directly or through dependencies) is a large task still in an executor's queue, the
  waiting thread claims it and runs it itself (as work-stealing pools do on a join), and a
  worker that dequeues it later finds it taken; work nobody waits for still runs on the
  workers, concurrently. A read of an array nothing is computing takes no lock.

* An op on a device with in-order queues (backend API 1.3, :mod:`.queues`) is never a
  task of its own unless it must wait for host work (a pending cpu op, a host fallback):
  whatever its size, ``push`` calls its kernel right away on the caller's thread, which
  only *enqueues* the work, and the queue orders it after its producers. No worker hop, no
  waiting for a completion before a dependent op is issued; the host waits only when it
  reads data (see :func:`nda.engine.wait_queued`).

Errors: an exception in a kernel is caught (nothing can kill a worker), gets a note
naming the op and the user's ``file:line`` that issued it, poisons the arrays the op
writes, and is raised at the sync point that reads one of them (``asnumpy()``,
``wait_to_read()``, ``repr`` …). ``waitall()`` raises the first error not raised yet, once.
The locals of the failed kernel's frames are cleared, so the failed array and its inputs
are freed when the user drops them, and the engine is idle (ops inline) again. Ctrl-C during a
wait interrupts the wait (waits poll with a short timeout) and leaves the engine as it
was. When the waiting thread is running the op itself, the interrupt arrives when the
kernel's current C call returns (as in NumPy); an op that does not read what it writes is
then handed back to a worker and still completes (running it again from the start gives
the same result), and one that does (``x += y``) is never run by a waiting thread.

Back-pressure: while more than :data:`MAX_PENDING` host tasks, or tasks touching more than
:data:`MAX_PENDING_ELEMENTS` elements, are unfinished, the issuing thread waits (running
queued work itself) until one finishes before it adds another (a loop that never syncs
cannot queue unbounded work and memory; a couple of hundred tasks keep every worker busy;
each waiting thread is let in after a task finishes, so none starves). Device queues have their own bound
(:data:`nda.engine.queues.MAX_IN_FLIGHT`).

Exit and fork (:mod:`._lifecycle`): a worker inside a BLAS call hangs the process at exit
and at ``os.fork`` (OpenBLAS waits for it there). At exit the engine is *closed*: workers
start no queued task (a sync point reached later runs what it needs itself) and exit waits,
bounded, for the kernels running. ``os.fork`` does not wait for the engine to go quiet
(another thread may issue work forever): it *pauses* the engine (no worker or waiting
thread starts a task), waits, bounded, for the kernels already running on workers or
lent threads, and forks holding the engine's lock, so the child copies a consistent graph;
the parent resumes at once, and the child gets a fresh engine that inherits the parent's
unfinished work (:mod:`._child`): the held op stays held, tasks
not started are added again in issue order and run on the child's own workers, and only
the arrays of a task that was *running* (the fork stopped waiting for it) are poisoned with
a ``RuntimeError`` saying so; everything finished before the fork is there.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import collections
import os
import threading
import time
from typing import Any, Callable, Sequence

try:  # queue.SimpleQueue is _queue's, where CPython has it: without importing queue (heapq, ...)
    from _queue import SimpleQueue
except ImportError:  # pragma: no cover - another Python
    from queue import SimpleQueue

from .._config import env_int
from . import _child
from . import queues as _queues
from ._base import Engine
from ._completion import Completion, completes_later, device_completion, run_now
from ._entries import user_site
from ._fperrors import guard, issuing, unguard
from ._graph import QUEUED, RUNNING, Graph, Task
from ._held import Held, HoldingEngine
from ._lifecycle import NOTICE_AFTER, notice
from ._profile import profiler
from ._syncpoints import deliver, drain_queues, wait_queued

__all__ = ["ThreadedEngine", "WorkerPool", "MAX_PENDING", "MAX_PENDING_ELEMENTS"]

_WAIT_SLICE = 0.05  # seconds; waits wake this often so that Ctrl-C gets through
#: Host tasks pending before the issuing thread waits (``NDA_MAX_PENDING``).
MAX_PENDING = env_int("NDA_MAX_PENDING", 256, minimum=1)
#: Elements touched by pending host tasks before the issuing thread waits (1 GiB of float64).
MAX_PENDING_ELEMENTS = env_int("NDA_MAX_PENDING_ELEMENTS", 1 << 27, minimum=1)
#: Elements below which an op runs inline on the caller's thread while the engine is idle
#: (``NDA_INLINE_MAX``). A float32 ``x + y`` on 2**20 elements takes 0.3-0.6 ms here; the
#: engine's Python around a task, run after such an op has emptied the caches, costs 0.05-0.1 ms,
#: so below this size no overlap it could buy pays for it (issue 29: mid-size ops near NumPy).
INLINE_MAX = 1 << 20


def _where(site: Any) -> str:
    """A site as ``file:line``."""
    if isinstance(site, tuple):
        code, line = site
        return f"{code.co_filename}:{line}"
    return str(site)


class WorkerPool:
    """A fixed set of daemon threads taking callables from one queue."""

    def __init__(self, name: str, threads: int) -> None:
        self.name = name
        self._queue: SimpleQueue[Callable[[], None] | None] = SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"nda-{name}-{i}", daemon=True) for i in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[[], None]) -> None:
        self._queue.put(fn)

    def _work(self) -> None:
        while True:
            fn = self._queue.get()
            if fn is None:
                return
            fn()  # the engine's task runner catches everything itself
            del fn  # do not keep the last task's arrays alive until the next task arrives

    def shutdown(self) -> None:
        for _ in self._threads:
            self._queue.put(None)


def default_executor(device: Any) -> WorkerPool:
    threads = (os.cpu_count() or 2) if device.type == "cpu" else 1
    return WorkerPool(str(device).replace(":", ""), threads)


class ThreadedEngine(HoldingEngine, Engine):
    """Dependency-tracking engine with per-device executors and an inline fast path."""

    name = "threaded"

    def __init__(self, executor_factory: Callable[[Any], Any] | None = None, inline_limit: int | None = None) -> None:
        if inline_limit is None:
            inline_limit = env_int("NDA_INLINE_MAX", INLINE_MAX)
        self.idle_limit = inline_limit
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._graph = Graph()
        self.failed = self._graph.poison  # the same dict, for the life of the engine (state.failed)
        self._executor_factory = executor_factory or default_executor
        self._executors: dict[Any, Any] = {}
        self._state: Any = None
        self._pending_elements = 0
        self._finished = 0  # tasks finished (back-pressure lets a waiting thread in after each)
        self._queued: collections.deque[Task] = collections.deque()  # submitted tasks, oldest first
        # A large op issued while nothing was pending, not yet a task (``._held``), and a task
        # queued but not yet handed to a worker (``_unsent``): see :mod:`._held`.
        self._held: Held | None = None
        self._unsent: Task | None = None
        self.max_pending = MAX_PENDING
        self.max_pending_elements = MAX_PENDING_ELEMENTS
        # Exit and fork (see the module docstring): while ``_paused`` (a fork) or ``_closed``
        # (exit), no worker starts a task; while paused no waiting thread does either.
        # ``_busy`` counts, per thread, the queued tasks being run (by workers or lent threads).
        self._paused = False
        self._closed = False
        self._busy: dict[int, int] = {}
        self._inherited: list[Task] = []  # in a forked child: the parent's tasks that are ready (_start_inherited)

    #: Ops on a device queue never wait at issue: the queue retires what is done and applies
    #: the bound on work in flight itself (``nda.engine.queues.Queue.settle``).
    waits_at_issue = False

    def attach(self, state: Any) -> None:
        self._state = state

    def current_limit(self) -> int:
        # Failed arrays kept (a notebook's variable) do not make the engine busy: the fast paths
        # look their inputs up in ``state.failed`` while it is not empty (one size test when it is).
        return self.idle_limit if self._held is None and self._graph.quiet() else 0

    def _set_limit(self) -> None:
        """Called with the lock held after the graph changed."""
        state = self._state
        if state is not None and state.engine is self:
            busy = profiler.active or self._held is not None or not self._graph.quiet()
            limit = 0 if busy else self.idle_limit
            state.limit = limit
            if limit and profiler.active:
                # The profiler started after it was read: its own refresh may have run before the
                # store above. Stored, then checked again, so that 0 wins whichever thread stores last.
                state.limit = 0

    # ------------------------------------------------------------------ issuing
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
        if self._inherited:
            self._start_inherited()  # a forked child's first op (see ._child)
        if self._held is not None or self._unsent is not None:
            self._before_push(reads, writes)  # the held op becomes a task first (see ._held)
        if device.type in _queues._backends and self._issue_now(run, reads, writes, device, name, cost, route):
            return
        graph = self._graph
        if (
            graph.poison
            and cost < self.idle_limit
            and not graph.pending
            and self._held is None
            and not profiler.active
            and not completes_later(device)
        ):
            # Nothing pending, only failed arrays kept (a notebook's variable, its output history):
            # an op that touches none of them runs here as on an idle engine, without a task (an
            # error raises at the call, as there). The fast paths cannot see failed arrays, so they
            # still come here: a few µs instead of a task's 20-30. (Not on a stream backend: the
            # caller would wait for the device, where a task does not.)
            with self._lock:
                clean = (
                    not graph.pending
                    and self._held is None
                    and self._unsent is None
                    and graph.poisoned_input(_Probe(reads)) is None
                    and all(graph.error_of(w, None) is None for w in writes)
                )
            if clean:
                run_now(run, device)
                return
        site = user_site() or "<unknown>"  # the user's (code, line), or the running task's
        if cost >= self.idle_limit and not self._graph.pending and self._try_hold(run, reads, writes, device, name, cost, route, site):
            return
        task = Task(run, _bases(reads), _bases(writes), device, name, cost, site)
        task.view = view
        task.fp = issuing()  # NumPy's error state here: the task runs under it, wherever it runs
        task.route = route
        task.inputs, task.outputs = reads, writes
        if self._graph.pending >= self.max_pending or self._pending_elements >= self.max_pending_elements:
            self._wait_for_room()
        with self._lock:
            self._pending_elements += cost
            ready = self._graph.add(task)
            self._set_limit()
            inherited = self._graph.poisoned_input(task) if ready else None
            if inherited is not None:
                more = self._graph.finish(task, inherited)
                self._set_limit()
                self._cond.notify_all()
        if inherited is not None:
            self._dispatch(more)
        elif ready:
            if cost < self.idle_limit:
                self._execute(task, on_caller=True)
            else:
                self._submit(task)

    def _issue_now(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int, route: Any) -> bool:
        """An op on a device queue with no pending host work to wait for: enqueue it right here.

        Its producers on the queue need not have finished: the queue orders it after them.
        False when it must wait in the graph (a pending host task reads or writes one of its
        arrays, or an input is poisoned); then it becomes a task like any other.
        """
        graph = self._graph
        if graph.pending or graph.poison:
            with self._lock:
                vars_ = graph.vars
                for array in reads:  # a read waits only for a pending host write
                    var = vars_.get(id(array._base if array._base is not None else array))
                    if var is not None and var.last_write is not None:
                        return False
                for array in writes:  # a write waits for pending host reads and writes
                    if id(array._base if array._base is not None else array) in vars_:
                        return False
                if graph.poisoned_input(_Probe(reads)) is not None:
                    return False
        start = time.perf_counter()
        try:
            result = run()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:  # noqa: BLE001 - an error at enqueue (no memory): poison, raise at the sync point
            task = Task(run, _bases(reads), _bases(writes), device, name, cost, user_site() or "<unknown>")
            task.inputs, task.outputs = reads, writes
            with self._lock:
                self._graph.add(task)
            self._complete(task, err, start, route)
            return True
        if isinstance(result, Completion):  # pragma: no cover - a queue backend's kernels never return one
            errors: list[BaseException | None] = []
            result.add_done_callback(errors.append)
        if graph.poison:  # a whole-array write (not among the reads) makes a poisoned array valid again
            with self._lock:
                graph.overwritten(_bases(reads), _bases(writes))
        if profiler.active:
            profiler.record(name, device, route, start, time.perf_counter())
        return True

    def _wait_for_room(self) -> None:
        """Back-pressure: wait until the pending host tasks are under the bound, or one finished.

        Like a sync point, the waiting thread runs queued work itself (the oldest queued
        task that can be restarted) instead of sitting idle, so the bound never depends on
        an executor making progress on its own. A waiting thread proceeds as soon as any
        task has finished since it began to wait: each issuing thread adds at most one task
        per finished one, so no thread starves while another keeps the engine at the bound,
        and the bound is exceeded by at most one task per issuing thread.
        """
        with self._lock:
            finished = self._finished
            while (
                self._graph.pending >= self.max_pending or (self._pending_elements >= self.max_pending_elements and self._graph.pending)
            ) and self._finished == finished:
                self._help_or_wait(self._oldest_queued())

    def _help_or_wait(self, task: Task | None) -> None:
        """Run ``task`` (a queued one, claimed here) on this thread, or wait a slice (lock held).

        Not while a fork is pending; after exit began, whatever the task (no worker will).
        An unsent task (see :mod:`._held`) that this thread does not run goes to a worker.
        """
        runs = task is not None and not self._paused and (self._closed or _restartable(task))
        unsent = self._unsent
        if unsent is not None:
            self._unsent = None
            if not (runs and unsent is task):
                self._send(unsent)
        if not runs:
            self._cond.wait(_WAIT_SLICE)
            return
        assert task is not None
        task.state = RUNNING  # claimed: the worker that dequeues it will skip it
        me = threading.get_ident()
        self._busy[me] = self._busy.get(me, 0) + 1
        self._lock.release()
        try:
            self._execute(task, on_caller=True, restart_on_interrupt=not self._closed)
        finally:
            self._lock.acquire()
            self._unbusy(me)

    def _unbusy(self, me: int) -> None:
        """This thread finished running a queued task (lock held)."""
        count = self._busy[me] - 1
        if count:
            self._busy[me] = count
        else:
            del self._busy[me]
            if self._paused or self._closed:
                self._cond.notify_all()  # pause() or close() waits for the busy threads

    def _oldest_queued(self) -> Task | None:
        """The oldest task still in an executor's queue that may be run here (lock held)."""
        queued = self._queued
        while queued:
            task = queued[0]
            if task.state != QUEUED:
                queued.popleft()
                continue
            if not (self._closed or _restartable(task)):
                return None
            queued.popleft()
            return task
        return None

    def _executor(self, device: Any) -> Any:
        executor = self._executors.get(device)
        if executor is None:
            with self._lock:
                executor = self._executors.get(device)
                if executor is None:
                    executor = self._executors[device] = self._executor_factory(device)
        return executor

    def _submit(self, task: Task) -> None:
        executor = self._executor(task.device)
        task.state = QUEUED
        queued = self._queued
        while queued and queued[0].state != QUEUED:  # forget those that ran (the deque only serves back-pressure)
            queued.popleft()
        queued.append(task)
        executor.submit(lambda: self._run_queued(task))

    def _send(self, task: Task) -> None:
        """Hand a queued task that was not sent (see :mod:`._held`) to its executor, unless taken."""
        if task.state == QUEUED:
            self._executor(task.device).submit(lambda: self._run_queued(task))

    def _run_queued(self, task: Task) -> None:
        """A worker's turn at a queued task: run it unless a sync point took it first.

        While a fork is pending the worker waits; after exit began it leaves the task queued
        (a sync point that needs it runs it).
        """
        me = threading.get_ident()
        with self._lock:
            while self._paused and not self._closed:
                self._cond.wait(_WAIT_SLICE)
            if task.state != QUEUED or self._closed:
                return
            task.state = RUNNING
            self._busy[me] = self._busy.get(me, 0) + 1
        while True:
            done = False
            try:
                self._execute(task, on_caller=False)
                done = True
            finally:
                with self._lock:
                    self._unbusy(me)
                    next_task = self._claim_unsent(me) if done else None
            if next_task is None:
                return
            task = next_task

    def _claim_unsent(self, me: int) -> Task | None:
        """A worker about to wait for work takes the unsent task (see :mod:`._held`), if any (lock held)."""
        held = self._unsent
        if held is None or self._paused or self._closed:
            return None
        self._unsent = None
        if held.state != QUEUED:
            return None
        held.state = RUNNING
        self._busy[me] = self._busy.get(me, 0) + 1
        return held

    def _dispatch(self, ready: list[Task], keep: bool = False) -> Task | None:
        """Submit large ready tasks; return one small one for the current thread to run.

        ``keep`` (a thread that issues or waits, not a worker): one large task is queued
        without waking a worker, as an unsent task (see :mod:`._held`): a sync point down
        the chain runs it, anything else sends it.
        """
        mine = None
        for t in ready:
            if mine is None and t.cost < self.idle_limit:
                mine = t
            elif keep and self._unsent is None and self._keep_unsent(t):
                keep = False
            else:
                self._submit(t)
        return mine

    def _keep_unsent(self, task: Task) -> bool:
        self._executor(task.device)
        with self._lock:
            if self._unsent is not None:
                return False
            task.state = QUEUED
            self._queued.append(task)
            self._unsent = task
        return True

    def _execute(self, task: Task | None, on_caller: bool, restart_on_interrupt: bool = False) -> None:
        while task is not None:
            route = task.route
            task.state = RUNNING
            task.thread = threading.current_thread().name
            start = time.perf_counter()
            error: BaseException | None = None
            result = None
            local = _queues.local
            outer_site = local.site
            local.site = task.site  # ops a task enqueues on a device queue are the task's
            token = guard(task.fp)  # NumPy's warnings name the task's site (engine._fperrors)
            try:
                result = task.run()
                if result is None:
                    result = device_completion(task.device)  # work enqueued on an API-1.2 device stream
            except BaseException as err:  # noqa: BLE001 - a kernel must never kill a worker
                if restart_on_interrupt and isinstance(err, KeyboardInterrupt):
                    self._submit(task)  # a worker runs it again from the start
                    raise
                error = err
            finally:
                unguard(token)
                local.site = outer_site
            restart_on_interrupt = False  # the tasks that follow are small ones made ready here
            if isinstance(result, Completion) and error is None:
                result.add_done_callback(lambda err, t=task, s=start, r=route: self._dispatch_after(t, err, s, r))
                return
            ready = self._complete(task, error, start, route)
            if on_caller and isinstance(error, (KeyboardInterrupt, SystemExit)):
                small = self._dispatch(ready)
                if small is not None:
                    self._submit(small)
                raise error
            task = self._dispatch(ready, keep=on_caller)
            if task is not None and not on_caller and (self._paused or self._closed):
                self._submit(task)  # a fork or exit is waiting for this worker: start nothing more
                task = None

    def _dispatch_after(self, task: Task, error: BaseException | None, start: float, route: Any) -> None:
        """Completion of asynchronous work (called from the backend's signalling thread)."""
        ready = self._complete(task, error, start, route)
        small = self._dispatch(ready)
        if small is not None:
            self._submit(small)  # never run user work on a backend's callback thread

    def _complete(self, task: Task, error: BaseException | None, start: float, route: Any) -> list[Task]:
        if profiler.active:
            profiler.record(task.name, task.device, route, start, time.perf_counter())
        if error is not None:
            for queue in _queues.all_queues():
                queue.retire_reached()  # an error of device work read by this task gets its own op's note first
            _queues.annotate(error, task.name, _where(task.site), task.device)
        with self._lock:
            self._pending_elements -= task.cost
            self._finished += 1
            ready = self._graph.finish(task, error)
            self._set_limit()
            self._cond.notify_all()
        return ready

    # ------------------------------------------------------------------ sync points
    def wait_for(self, array: Any, for_write: bool = False) -> None:
        self.wait_tasks(array, for_write)
        wait_queued(array, for_write)

    def wait_tasks(self, array: Any, for_write: bool = False) -> None:
        if self._inherited:
            self._start_inherited()
        if self._held is not None:
            self._sync_held(array, for_write)  # runs it here if this read or write needs it
        graph = self._graph
        if not graph.pending and not graph.poison:
            return  # nothing pending, nothing failed: no lock to take (an inline op's read)
        base = array._base if array._base is not None else array
        with self._lock:
            while self._graph.blockers(base, for_write):
                self._help_or_wait(self._graph.queued_behind(base, for_write))
            error = self._graph.error_of(array)
            if error is not None and self._graph.first_error is error:
                self._graph.first_error = None  # delivered here; waitall() reports only errors not yet raised
        if error is not None:
            deliver(error)

    def settle(self, array: Any) -> None:
        if self._held is not None:
            self._sync_held(array, False)
        base = array._base if array._base is not None else array
        with self._lock:
            while self._graph.blockers(base, False):
                self._help_or_wait(self._graph.queued_behind(base, False))

    def wait_all(self) -> None:
        if self._inherited:
            self._start_inherited()
        if self._held is not None:
            self._sync_held(None, False, always=True)
        with self._lock:
            while self._graph.pending:
                self._help_or_wait(self._oldest_queued())  # like a sync point: run queued work rather than sit idle
            error, self._graph.first_error = self._graph.first_error, None
            self._queued.clear()  # nothing is pending: every entry ran
            self._set_limit()
        queue_error = drain_queues()
        if error is not None and queue_error is not None and queue_error is not error:
            _queues.first_error = queue_error  # raised by the next waitall (each raises one error)
        error = error or queue_error
        if error is not None:
            deliver(error)

    def pending(self) -> int:
        """Ops issued and not finished (for tests and introspection)."""
        return self._graph.pending + self._held_pending()

    def writes_pending(self, array: Any) -> bool:
        """Whether ``array`` has writes not finished (a display's "pending"; never blocks)."""
        base = array._base if array._base is not None else array
        with self._lock:
            held = self._held
            if held is not None and held.task is None and held.needed_by(base, False):
                return True
            return bool(self._graph.blockers(base, False))

    def shutdown(self) -> None:
        for executor in self._executors.values():
            if hasattr(executor, "shutdown"):
                executor.shutdown()
        self._executors.clear()

    # ------------------------------------------------------------------ exit and fork
    def _quiesce(self, timeout: float, what: str) -> int:
        """Wait (lock held) until no other thread runs a queued task, at most ``timeout`` s."""
        me = threading.get_ident()
        start = time.monotonic()
        noticed = False
        while True:
            runner = self._held_runner()
            busy = sum(n for ident, n in self._busy.items() if ident != me) + (runner is not None and runner != me)
            waited = time.monotonic() - start
            if not busy or waited >= timeout:
                if busy:
                    notice(what + " gave up waiting and proceeds;", waited, busy)
                return busy
            if waited >= NOTICE_AFTER and not noticed:
                notice(what, waited, busy)
                noticed = True
            self._cond.wait(min(_WAIT_SLICE, timeout - waited))

    def pause(self, timeout: float) -> int:
        """Before ``os.fork``: no task starts; wait for running ones; return holding the lock."""
        self._lock.acquire()  # held for the instant of the fork: the child copies a consistent graph
        self._paused = True
        try:
            return self._quiesce(timeout, "os.fork()")
        except BaseException:
            self._paused = False
            self._lock.release()
            raise

    def resume(self) -> None:
        self._paused = False
        self._cond.notify_all()
        self._lock.release()

    def close(self, timeout: float) -> int:
        """At exit: workers start no task any more; wait for the ones running (bounded)."""
        with self._lock:
            self._closed = True
            return self._quiesce(timeout, "exit")

    def for_child(self) -> ThreadedEngine:
        """The child's engine, inheriting the parent's poison and unfinished work (``._child``)."""
        return _child.inherit(self, ThreadedEngine(self._executor_factory, self.idle_limit))

    def _start_inherited(self) -> None:
        """The child's first op or sync point: send the inherited tasks that are ready to the
        child's workers (or fail those whose inputs are poisoned); the rest follow as their
        dependencies finish. Not in the fork hook itself: other libraries' fork hooks, which
        run after nda's (a thread pool forgetting the parent's threads), must have run before
        a worker of the child starts a kernel."""
        runnable: list[Task] = []
        with self._lock:
            ready, self._inherited = self._inherited, []
            for task in ready:
                inherited = self._graph.poisoned_input(task)
                if inherited is None:
                    runnable.append(task)
                else:
                    self._pending_elements -= task.cost
                    runnable.extend(self._graph.finish(task, inherited))
            self._set_limit()
        for task in runnable:
            self._submit(task)


def _restartable(task: Task) -> bool:
    """True when running ``task`` again from the start gives the result of running it once.

    That holds unless it reads an array it writes (``x += y``): its inputs are then
    unchanged by a partial run, and every write it makes is made again.
    """
    return not any(read is write for read in task.reads for write in task.writes)


def _bases(arrays: Sequence[Any]) -> tuple[Any, ...]:
    seen: dict[int, Any] = {}
    for a in arrays:
        base = a._base if a._base is not None else a
        seen.setdefault(id(base), base)
    return tuple(seen.values())


class _Probe:
    """Just enough of a Task for :meth:`Graph.poisoned_input`."""

    __slots__ = ("inputs",)
    view = False

    def __init__(self, inputs: Sequence[Any]) -> None:
        self.inputs = inputs
