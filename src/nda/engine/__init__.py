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
    ``run`` may return a :class:`Completion` when the work finishes later (an accelerator
    stream); the task ends when the completion is signalled.

Sync points call ``state.wait_for(array, for_write)`` and ``state.wait_all()``.

Engines: ``threaded`` (the default: per-device worker threads, the inline fast path,
errors raised at sync points), ``naive`` (synchronous, for debugging: ``NDA_ENGINE=naive``
or :func:`use`), and ``deferred`` (runs the queue at sync points; a test tool proving that
no op depends on running inline).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Sequence

from ._profile import Profiler, profiler

__all__ = ["Engine", "SyncEngine", "DeferredEngine", "Completion", "state", "use", "current", "waitall", "profiler"]

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

    def push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int = 0, route: Any = None) -> None:
        raise NotImplementedError(f"engine {self.name!r} does not implement push")

    def wait_for(self, array: Any, for_write: bool = False) -> None:
        raise NotImplementedError(f"engine {self.name!r} does not implement wait_for")

    def wait_all(self) -> None:
        raise NotImplementedError(f"engine {self.name!r} does not implement wait_all")

    def shutdown(self) -> None:
        """Release threads; the engine must not be used afterwards."""


_NO_HOOK = object()
_completion_hooks: dict[Any, Any] = {}


def device_completion(device: Any) -> Completion | None:
    """The device backend's ``record_completion(device)``: a marker for work enqueued so far.

    Backends whose kernels return before their work is done (streams) provide it; for the
    others (cpu) this is one dict lookup returning None.
    """
    hook = _completion_hooks.get(device, _NO_HOOK)
    if hook is _NO_HOOK:
        from .. import backends

        try:
            hook = getattr(backends.for_device(device), "record_completion", None)
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
        from .. import backends

        try:
            hook = getattr(backends.for_device(device), "synchronize", None)
        except Exception:  # noqa: BLE001
            hook = None
        _sync_hooks[device] = hook
    if hook is not None:
        hook(device)


def _run_now(run: Callable[[], Any], device: Any = None) -> None:
    result = run()
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

    def push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int = 0, route: Any = None) -> None:
        if profiler.active:
            with profiler.span(name, device, route):
                _run_now(run, device)
        else:
            _run_now(run, device)

    def wait_for(self, array: Any, for_write: bool = False) -> None:
        device_sync(array._meta.device)

    def wait_all(self) -> None:
        return None


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

    def push(self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int = 0, route: Any = None) -> None:
        self._queue.append((run, name, device, route))

    def wait_for(self, array: Any, for_write: bool = False) -> None:
        self.wait_all()
        device_sync(array._meta.device)

    def wait_all(self) -> None:
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
        self.wait_for = engine.wait_for
        self.wait_all = engine.wait_all
        self.refresh_limit()

    def refresh_limit(self) -> None:
        """Recompute ``limit``: the profiler routes every op through ``push`` to record it."""
        engine = self.engine
        if profiler.active:
            self.limit = 0
        elif hasattr(engine, "current_limit"):
            self.limit = engine.current_limit()
        else:
            self.limit = engine.idle_limit


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
    name = os.environ.get("NDA_ENGINE", "threaded")
    if name not in _ENGINES:
        raise ValueError(f"NDA_ENGINE={name!r} is not an engine; available engines: {', '.join(sorted(_ENGINES))}")
    if name != "naive":
        use(name)


__all__ += ["Profiler"]
_initial_engine()
