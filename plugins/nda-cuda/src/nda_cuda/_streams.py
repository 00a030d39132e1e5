"""Per-device CUDA streams, and CUDA events as nda's queue markers.

Every kernel of a device is enqueued on that device's one non-blocking stream, whichever
thread calls it: stream order is then program order for all work on the device, and the
non-blocking flag keeps it from serialising against the legacy default stream that user
CuPy code runs on. The stream is the device's queue in nda's sense (backend API 1.3).

A marker (:class:`Marker`) is a CUDA event recorded on the stream after the work enqueued
so far. nda's engine records one after each op and waits on it only where the host reads
data (``cudaEventSynchronize``, on the reading thread); another device's stream waits for
it with ``cudaStreamWaitEvent``, which blocks no host thread. Events are pooled: creating
one is a driver call, and a marker hands its event back to the pool when the engine drops it.
There is no waiter thread: nothing needs to be told when GPU work finishes, except a reader.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["DeviceStream", "Marker"]


class Marker:
    """An event recorded on a device stream; its event returns to the pool when dropped."""

    __slots__ = ("event", "owner")

    def __init__(self, event: Any, owner: DeviceStream) -> None:
        self.event = event
        self.owner = owner

    def __del__(self) -> None:
        try:
            self.owner.recycle(self.event)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class DeviceStream:
    """The stream of one device and its pool of events."""

    def __init__(self, cupy: Any, index: int) -> None:
        self.cupy = cupy
        self.index = index
        self.device = cupy.cuda.Device(index)
        with self.device:
            self.stream = cupy.cuda.Stream(non_blocking=True)
            # Host reads copy on a stream of their own: nda has waited for exactly the event of
            # the version read, and a copy on ``stream`` would also wait for everything after it.
            self.reader = cupy.cuda.Stream(non_blocking=True)
        self._events: list[Any] = []  # recycled events (creating one is a driver call)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ events
    def event(self) -> Any:
        """An event recorded on the stream now (after everything enqueued so far)."""
        with self._lock:
            ev = self._events.pop() if self._events else None
        if ev is None:
            with self.device:
                ev = self.cupy.cuda.Event(disable_timing=True)
        with self.device:
            ev.record(self.stream)
        return ev

    def marker(self) -> Marker:
        return Marker(self.event(), self)

    def recycle(self, ev: Any) -> None:
        with self._lock:
            if len(self._events) < 256:
                self._events.append(ev)

    # ------------------------------------------------------------------ waiting
    def synchronize(self) -> None:
        """Wait for everything enqueued on the stream so far."""
        with self.device:
            self.stream.synchronize()
