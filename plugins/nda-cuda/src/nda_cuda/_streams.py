"""Per-device CUDA streams and completion signalled from CUDA events.

Every kernel of a device is enqueued on that device's one non-blocking stream, whichever
thread calls it (the caller's for inline ops, an engine worker for large ones): stream
order is then program order for all work on the device, and the non-blocking flag keeps
it from serialising against the legacy default stream that user CuPy code runs on.

``record_completion`` records an event on the stream and hands it to the device's
*event waiter*: one daemon thread that waits for its events in the order they were
recorded (they complete in that order, being on one stream) and signals the matching
:class:`nda.engine.Completion`. The caller never blocks. Events are created with
``cudaEventBlockingSync`` so the waiter sleeps in the driver instead of spinning on a
core the engine's workers need (CuPy releases the GIL while it waits).

Why not ``cudaLaunchHostFunc`` (``Stream.launch_host_func``): the host function runs on
a driver thread that must take the GIL to signal the completion, and the stream stalls
until it returns; a thread holding the GIL in a synchronous CUDA call that waits for
that stream (a device-to-host copy) would deadlock, and CUDA forbids CUDA calls inside
the function, which the engine's callbacks may make. A thread of our own has neither
problem and costs one wake-up per completion.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from nda.engine import Completion

__all__ = ["DeviceStream"]


class DeviceStream:
    """The stream of one device, its event pool and its event waiter."""

    def __init__(self, cupy: Any, index: int) -> None:
        self.cupy = cupy
        self.index = index
        self.device = cupy.cuda.Device(index)
        with self.device:
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self._events: list[Any] = []  # recycled events (creating one is a driver call)
        self._pending: queue.SimpleQueue[tuple[Any, Completion] | None] = queue.SimpleQueue()
        self._waiter: threading.Thread | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ events
    def event(self) -> Any:
        """An event recorded on the stream now (after everything enqueued so far)."""
        with self._lock:
            ev = self._events.pop() if self._events else None
        if ev is None:
            with self.device:
                ev = self.cupy.cuda.Event(block=True, disable_timing=True)
        with self.device:
            ev.record(self.stream)
        return ev

    def recycle(self, ev: Any) -> None:
        with self._lock:
            if len(self._events) < 64:
                self._events.append(ev)

    def completion(self) -> Completion:
        """A completion signalled when the work enqueued so far has finished."""
        done = Completion()
        ev = self.event()
        if self._waiter is None:
            self._start()
        self._pending.put((ev, done))
        return done

    def _start(self) -> None:
        with self._lock:
            if self._waiter is None:
                self._waiter = threading.Thread(target=self._wait_loop, name=f"nda-cuda{self.index}-events", daemon=True)
                self._waiter.start()

    def _wait_loop(self) -> None:
        while True:
            item = self._pending.get()
            if item is None:
                return
            ev, done = item
            error: BaseException | None = None
            try:
                with self.device:
                    ev.synchronize()
            except BaseException as err:  # noqa: BLE001 - a failed stream (sticky CUDA error) fails this work
                error = err
            self.recycle(ev)
            del item, ev
            try:
                done.done(error)
            except BaseException:  # noqa: BLE001 - the engine's callbacks must not kill the waiter
                pass
            del done

    # ------------------------------------------------------------------ waiting
    def wait_event(self, ev: Any) -> None:
        """Block the calling thread until ``ev`` has completed (only the work before it)."""
        with self.device:
            ev.synchronize()
        self.recycle(ev)

    def synchronize(self) -> None:
        """Wait for everything enqueued on the stream so far."""
        with self.device:
            self.stream.synchronize()

    def close(self) -> None:
        if self._waiter is not None:
            self._pending.put(None)
