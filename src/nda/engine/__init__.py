"""The engine entry point: every op in nda reaches its kernel through here.

The front end never calls a kernel "by hand"; it asks the *current engine*, held in the
module-level :data:`state`, in exactly one of two ways:

``size < state.limit``
    The op touches ``size`` elements. When this holds, running the op right now on the
    caller's thread gives the same result as running every op in program order, and the
    op is cheap enough that a thread hop would cost more than the op. The front end then
    calls the kernel directly. The synchronous engine's limit is unbounded; the threaded
    engine's is its inline threshold while it is idle (nothing pending, nothing failed)
    and 0 otherwise.

``state.push(run, reads, writes, device, name, cost=0, route=None)``
    Otherwise the op becomes a task: ``run()`` does the work (it reads the buffers of the
    ``reads`` arrays and fills or mutates the ``writes`` arrays) and the engine orders it
    after earlier writers of what it reads and earlier readers/writers of what it writes.
    ``run`` may return a :class:`Completion` when the work finishes later (a backend of
    backend API 1.1/1.2 whose kernels only enqueue work); the task ends when the
    completion is signalled.

Sync points call ``state.wait_for(array, for_write)`` and ``state.wait_all()``.

The limit has one concern, the engine's: whether an op may run inline now (idle, or the
profiler recording, which routes every op through ``push``). Nothing else sets it: whether
the calling thread intercepts calls (``autograd.record()``, hybridize's tracing) is its own
flag (``nda._intercept``), and arrays whose memory another library holds (:func:`share`)
route their ops through :meth:`_State._shared_push` without touching it. Every transition
that changes what the engine wants (a task finished, an error raised or its poisoned array
collected, a held op run, the profiler stopped) leaves ``limit == engine.current_limit()``
by the next op: the engine stores it under its lock, and a slow path that finds the engine
idle with ``limit`` still 0 refreshes it (:meth:`_State.push_inline`).

Device queues (backend API 1.3, :mod:`._queues`): a backend whose kernels run in order on
one queue per device has every kernel wrapped so that it takes a number on the device's
queue when it enqueues its work (and, when it may fail, an entry: op, ``file:line``,
data-dependent check). Such an op never waits for its producers to *finish*: those on the
same queue are ordered by the queue itself, so the op is issued at once, on the caller's
thread, inline or through ``push`` alike. An engine whose ``waits_at_issue`` is true (the
naive and deferred engines) is told of each op (``issued(queue, number, entry)``) and waits
for it there (errors at the call); the threaded engine is not told at all: the queue itself
retires what is done and applies the bound on work in flight. Markers are recorded only
where someone waits. Sync points wait for exactly the version they read, on the caller's
thread; errors found when an entry retires are raised at the sync point that reads what the
op wrote, with the op's note.

Exit and ``os.fork`` (:mod:`._lifecycle`): an engine with threads of its own starts no
kernel on them and waits, bounded, for the running ones (``Engine.pause``/``resume``/
``for_child`` around a fork, ``Engine.close`` at exit); backends with threads of their own
register their fork hooks with :func:`register_at_fork` so that they run in order with the
engine's.

Engines: ``threaded`` (the default: per-device worker threads, the inline fast path,
errors raised at sync points), ``naive`` (synchronous, for debugging: ``NDA_ENGINE=naive``
or :func:`use`), and ``deferred`` (runs the queue at sync points; a test tool proving that
no op depends on running inline).

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import sys
import weakref
from typing import Any, Callable, Sequence

from .._config import env_choice
from . import _fperrors, _queues
from ._lifecycle import QUIESCE_TIMEOUT, register_at_fork
from ._profile import Profiler, profiler
from ._queues import Deferred, KernelTraceback

__all__ = ["share", "Engine", "SyncEngine", "DeferredEngine", "Completion", "Deferred", "KernelTraceback", "state", "use", "current", "waitall", "profiler",
           "register_at_fork", "QUIESCE_TIMEOUT"]

UNBOUNDED = sys.maxsize


class Completion:
    """Returned by a task's ``run`` when its work finishes later; call :meth:`done` then.

    A backend whose kernels only *enqueue* work (a CUDA stream, the sim device's stream
    thread) returns one and signals it from its completion callback, so the engine does
    not treat "the function returned" as "the work is done".
    """

    __slots__ = ("_callbacks", "_result", "_finished", "value")

    def __init__(self, value: Any = None) -> None:
        #: For a kernel that produces an array: the buffer it will have filled when done.
        self.value = value
        self._callbacks: list[Callable[[BaseException | None], None]] = []
        self._result: BaseException | None = None
        self._finished = False

    def done(self, error: BaseException | None = None) -> None:
        """Signal that the work finished (with ``error`` if it failed). Idempotent."""
        if self._finished:
            return
        self._result = error
        self._finished = True
        for callback in self._callbacks:
            callback(error)

    def add_done_callback(self, callback: Callable[[BaseException | None], None]) -> None:
        if self._finished:
            callback(self._result)
        else:
            self._callbacks.append(callback)


class Engine:
    """Interface of an engine (see the module docstring for the contract)."""

    name = "abstract"
    #: The ``state.limit`` this engine wants while idle.
    idle_limit = 0
    #: Whether every op on a device queue waits for its work at issue (:meth:`issued`).
    waits_at_issue = True

    def push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int = 0, route: Any = None,
             view: bool = False) -> None:
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


class _Upper:
    """What the engine asks of the backends layer above it, registered by that layer at import."""

    __slots__ = ("backend_for",)

    def __init__(self) -> None:
        self.backend_for: Callable[[Any], Any] = _no_backend


def _no_backend(device: Any) -> Any:
    raise LookupError(f"no backend serves {device}")


#: Filled in by ``nda.backends`` when it is imported.
upper = _Upper()

_NO_HOOK = object()
_completion_hooks: dict[Any, Any] = {}


def device_completion(device: Any) -> Completion | None:
    """The device backend's ``record_completion(device)``: a marker for work enqueued so far.

    Backends whose kernels return before their work is done (streams) provide it; for the
    others (cpu) this is one dict lookup returning None.
    """
    hook = _completion_hooks.get(device, _NO_HOOK)
    if hook is _NO_HOOK:
        try:
            hook = upper.backend_for(device).record_completion  # the backend's handle: None when it has none
        except Exception:  # noqa: BLE001 - no backend, no asynchronous completion
            hook = None
        _completion_hooks[device] = hook
    return hook(device) if hook is not None else None


_sync_hooks: dict[Any, Any] = {}


def device_sync(device: Any) -> None:
    """Wait for work a backend has enqueued on ``device`` (a stream); no-op for cpu.

    Ops that ran inline on an asynchronous backend are not engine tasks, so a sync point
    (``wait_to_read``…) also asks the device to finish what it has queued.
    """
    hook = _sync_hooks.get(device, _NO_HOOK)
    if hook is _NO_HOOK:
        try:
            hook = upper.backend_for(device).synchronize
        except Exception:  # noqa: BLE001
            hook = None
        _sync_hooks[device] = hook
    if hook is not None:
        hook(device)


def wait_queued(array: Any, for_write: bool) -> None:
    """The device-queue part of a sync point on ``array`` (after its engine tasks are done).

    Waits, on this thread, for exactly the marker of the latest write of ``array``'s buffer
    or of the buffer owning its memory (a write through any view), retires up to there and
    raises the error of that work. For a write (``wait_to_write``), everything enqueued on
    the queue so far. Backends without queues: their ``synchronize`` (API 1.1/1.2).
    """
    queue = _queues.queue_for(array)
    if queue is None:
        device_sync(array._meta.device)
        return
    base = array._base
    if for_write:
        queue.drain()
        bufs = (array._buf,) if base is None else (array._buf, base._buf)
    else:
        bufs = _wait_versions(queue, array._meta.device, array._buf, None if base is None else base._buf)
    error = queue.error_of(*bufs)
    if error is not None:
        deliver(error)


def _written(device: Any, buf: Any, base_buf: Any) -> tuple[Any, ...]:
    """``buf``, its base and the buffer owning its memory (the buffers whose writes a read waits for)."""
    owner = _queues._owner_of.get(device.type)
    extra = owner(buf) if owner is not None else None  # every host read asks: no generators here
    if base_buf is None or base_buf is buf:
        return (buf,) if extra is None or extra is buf else (buf, extra)
    return (buf, base_buf) if extra is None or extra is buf or extra is base_buf else (buf, base_buf, extra)


def _wait_versions(queue: _queues.Queue, device: Any, buf: Any, base_buf: Any = None) -> tuple[Any, ...]:
    """Wait for the latest in-flight writes of ``buf``, of its base and of the buffer owning its
    memory; returns those buffers. A backend may learn that a buffer is a view only once the
    op making it has run, so the owner is asked again after each wait until nothing is left."""
    while True:
        bufs = _written(device, buf, base_buf)
        number = queue.version(*bufs)
        if number is None:
            return bufs
        queue.wait(number)


def queued_pending(array: Any) -> bool:
    """Whether device-queue work writing ``array`` has not finished (a non-blocking query)."""
    queue = _queues.queue_for(array)
    if queue is None or array._buf is None:
        return False
    base = array._base
    number = queue.version(array._buf) if base is None else queue.version(array._buf, base._buf)
    return number is not None and not queue.finished(number)


def host_read(device: Any, read: Callable[[Any], Any], buf: Any, base_buf: Any = None) -> Any:
    """``read(buf)`` (a backend's ``to_host``) once the work that wrote ``buf`` is done.

    On a device with in-order queues the backend's ``to_host`` reads the buffer as it is;
    this waits first, on the calling thread, for exactly the marker of the latest write of
    ``buf`` or of the buffer owning its memory (not for the whole device), and raises the
    error of that work with the note of the op that failed. If the read itself raises the
    error of work still in flight (a failed buffer's exception), the entries already done
    are retired first, so that the error carries the note of the op that failed, not of the
    reader.

    When the version read is the newest work on its queue and the backend can copy *in queue
    order* (``to_host_in_order(buf)``: a copy enqueued on the queue itself, after everything
    enqueued before; a CUDA copy on the compute stream), the read does that instead: no marker,
    one wait, as a CuPy user's ``float(x)``. Everything enqueued before the copy is then
    finished, and retired before the data is returned (errors first).
    """
    queue = _queues.queue_of_device(device)
    if queue is None:
        return read(buf)
    in_order = queue.to_host_in_order
    if in_order is not None and read == queue.to_host:
        bufs = _written(device, buf, base_buf)
        number = queue.version(*bufs)
        if number is not None and queue.peek() == number + 1:  # nothing enqueued after it
            return _read_in_order(queue, device, in_order, buf, base_buf)
    bufs = _wait_versions(queue, device, buf, base_buf)
    error = queue.error_of(*bufs)
    if error is not None:
        deliver(error)
    try:
        return read(buf)
    except BaseException as err:
        queue.retire_reached()
        if not getattr(err, "_nda_noted", False):
            raise
        if _queues.first_error is err:
            _queues.first_error = None  # raised here, at a read: waitall() does not raise it again
        raise _queues.fresh(err)  # noqa: B904 - fresh() sets the cause (the kernel's traceback)


def _read_in_order(queue: _queues.Queue, device: Any, read: Callable[[Any], Any], buf: Any, base_buf: Any) -> Any:
    """``read(buf)`` copying in queue order; then every number taken before it is finished."""
    taken = queue.take()  # the copy is enqueued after every number below this one
    try:
        data = read(buf)
    except BaseException as err:
        queue.retire_to(taken)  # the work before is finished: its checks run, errors get their notes
        error = queue.error_of(*_written(device, buf, base_buf))
        if error is not None:
            deliver(error)
        if not getattr(err, "_nda_noted", False):
            raise
        raise _queues.fresh(err)  # noqa: B904 - fresh() sets the cause (the kernel's traceback)
    queue.retire_to(taken)
    error = queue.error_of(*_written(device, buf, base_buf))
    if error is not None:
        deliver(error)
    return data


def deliver(error: BaseException) -> None:
    """Raise ``error`` (a failed op's, kept by nda) at a sync point, with its original traceback.

    What is raised is a copy: an exception collects the frames it passes through, and the
    kept one would then keep the reader's frames, and with them the failed array, alive.
    """
    if _queues.first_error is error:
        _queues.first_error = None  # delivered here; waitall() reports only errors not yet raised
    raise _queues.fresh(error)


def drain_queues() -> BaseException | None:
    """Wait for everything in flight on every device queue; the first error not raised yet."""
    for queue in _queues.all_queues():
        queue.drain()
    error, _queues.first_error = _queues.first_error, None
    return error


def _run_now(run: Callable[[], Any], device: Any = None) -> None:
    token = _fperrors.guard()  # NumPy's warnings name the user's line (engine._fperrors)
    try:
        result = run()
    finally:
        _fperrors.unguard(token)
    if result is None and device is not None:
        result = device_completion(device)
    if isinstance(result, Completion):
        errors: list[BaseException | None] = []
        result.add_done_callback(errors.append)
        while not errors:  # synchronous engines wait for asynchronous completion right here
            import time

            time.sleep(0.0002)
        if errors[0] is not None:
            raise errors[0]


class SyncEngine(Engine):
    """Runs every op immediately on the caller's thread, in program order.

    The debugging engine (``NDA_ENGINE=naive``) and the reference the threaded engine is
    compared against. Errors surface at the call that caused them.
    """

    name = "naive"
    idle_limit = UNBOUNDED

    def push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int = 0, route: Any = None,
             view: bool = False) -> None:
        if profiler.active:
            with profiler.span(name, device, route):
                _run_now(run, device)
        else:
            _run_now(run, device)

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

    def push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int = 0, route: Any = None,
             view: bool = False) -> None:
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
                    _run_now(run, device)
            else:
                _run_now(run, device)


def _threaded() -> Engine:
    from .threaded import ThreadedEngine

    return ThreadedEngine()


_ENGINES: dict[str, Callable[[], Engine]] = {"threaded": _threaded, "naive": SyncEngine, "sync": SyncEngine, "deferred": DeferredEngine}


class _State:
    """Holder of the current engine; ops compare with ``state.limit`` and call ``state.push``."""

    __slots__ = ("engine", "limit", "push", "wait_for", "wait_all")

    def __init__(self) -> None:
        self.engine: Engine = SyncEngine()
        self.limit = UNBOUNDED
        self.set(self.engine)

    def set(self, engine: Engine) -> None:
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
        if profiler.active:
            return False
        limit = self.engine.current_limit()
        if cost < limit:
            if self.limit != limit:
                self.refresh_limit()
            return True
        return False

    def _shared_push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int = 0,
                     route: Any = None, view: bool = False) -> None:
        engine = self.engine
        if self.push_inline(cost):
            result = run()  # what the front end's inline path would have done
            if isinstance(result, Completion):
                _run_now(lambda: result)
            return
        engine.push(run, reads, writes, device, name, cost=cost, route=route, view=view)
        if SHARED and _touches_shared(reads, writes):
            for array in writes:  # done before the call returns (see share())
                engine.wait_for(array)


#: Arrays whose memory another library holds too (id of the base array -> a weak reference).
SHARED: dict[int, Any] = {}


def _touches_shared(reads: Sequence[Any], writes: Sequence[Any]) -> bool:
    for array in (*reads, *writes):
        base = array._base if array._base is not None else array
        if id(base) in SHARED:
            return True
    return False


def share(array: Any) -> None:
    """Mark ``array``'s memory as held by another library too (a NumPy array that
    ``nda.asarray`` wraps on cpu, ``np.asarray(x)`` of a cpu array, a DLPack exchange).

    Such memory can change, or be read, behind the engine's back: NumPy writes into the
    caller's buffer after ``y = x + 1`` must not reach ``y``, and ``h = np.asarray(x);
    x += 1`` must show in ``h`` at once. So every op that still reads or writes a shared array
    when it reaches ``push`` runs to completion before its call returns, as under the naive
    engine (an op's error raises at its call then). A heavy op that only reads shared arrays
    does not get here with them: the front end hands it copies taken at the call
    (``nda._snapshots``), and it keeps the overlap. Other arrays keep it too; nothing changes
    on the hot path of tiny ops, which run inline anyway. The mark lasts as long as the array
    (its base, for views).
    """
    base = array._base if array._base is not None else array
    key = id(base)
    if key in SHARED:
        return
    SHARED[key] = weakref.ref(base, lambda _ref, key=key: SHARED.pop(key, None))
    state.push = state._shared_push


state = _State()
profiler._on_change = state.refresh_limit



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


def _initial_engine() -> None:
    name = env_choice("NDA_ENGINE", "threaded", tuple(sorted(_ENGINES)))  # empty: the default, as for every NDA_* variable
    if name != "naive":
        use(name)


__all__ += ["Profiler"]
_initial_engine()
