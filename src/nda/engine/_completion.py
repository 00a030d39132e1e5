"""Completion of a task's work: the :class:`Completion` marker, the device hooks that give one,
and running a task to completion on the caller's thread.

A task's ``run`` may return before its work is done (a backend whose kernels only enqueue
work: a CUDA stream, the sim device's stream thread). It then returns a :class:`Completion`,
or returns None and the device's backend gives one (``record_completion``) through
:func:`device_completion`. The synchronous engines, and the shared-memory path of
:mod:`._state`, wait for it right at the call (:func:`run_now`); the threaded engine ends the
task when it is signalled.

The engine knows no backend object: it reads the handles the backends layer publishes when a
backend activates (:data:`nda._handles.HANDLES`, device type -> handle, in the bottom layer:
read by import, no callable registered from above). The hooks found are cached per device
(one dict lookup on the path of an op); the backends layer calls :func:`forget_device_hooks`
whenever it publishes or withdraws a handle.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import time
from typing import Any, Callable

from .._handles import HANDLES as _HANDLES
from . import _fperrors

__all__ = ["Completion", "device_completion", "device_sync", "run_now", "forget_device_hooks"]


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


_NO_HOOK = object()
_completion_hooks: dict[Any, Any] = {}


def _completion_hook(device: Any) -> Any:
    hook = _completion_hooks.get(device, _NO_HOOK)
    if hook is _NO_HOOK:
        handle = _HANDLES.get(device.type)  # no backend published (yet): no asynchronous completion
        hook = _completion_hooks[device] = None if handle is None else handle.record_completion
    return hook


def device_completion(device: Any) -> Completion | None:
    """The device backend's ``record_completion(device)``: a marker for work enqueued so far.

    Backends whose kernels return before their work is done (streams) provide it; for the
    others (cpu) this is one dict lookup returning None.
    """
    hook = _completion_hook(device)
    return hook(device) if hook is not None else None


def completes_later(device: Any) -> bool:
    """Whether work on ``device`` may finish after its kernel returns (its backend records completions)."""
    return _completion_hook(device) is not None


_sync_hooks: dict[Any, Any] = {}


def device_sync(device: Any) -> None:
    """Wait for work a backend has enqueued on ``device`` (a stream); no-op for cpu.

    Ops that ran inline on an asynchronous backend are not engine tasks, so a sync point
    (``wait_to_read``…) also asks the device to finish what it has queued.
    """
    hook = _sync_hooks.get(device, _NO_HOOK)
    if hook is _NO_HOOK:
        handle = _HANDLES.get(device.type)
        hook = _sync_hooks[device] = None if handle is None else handle.synchronize
    if hook is not None:
        hook(device)


def forget_device_hooks() -> None:
    """Forget the completion and synchronize hooks looked up so far: the backends layer calls it
    whenever a backend registers or is taken out, so that a device asked before its backend
    loaded (no hook: None) never keeps that answer, and a removed backend's hooks are never
    called again."""
    _completion_hooks.clear()
    _sync_hooks.clear()


def run_now(run: Callable[[], Any], device: Any = None) -> None:
    """Run a task on this thread and wait for its work (its :class:`Completion`, or the device's
    when ``run`` returns None); raise its error here."""
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
            time.sleep(0.0002)
        if errors[0] is not None:
            raise errors[0]
