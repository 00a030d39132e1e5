"""Per-device CUDA streams, and CUDA events as nda's queue markers.

Every kernel of a device is enqueued on that device's one non-blocking stream, whichever
thread calls it: stream order is then program order for all work on the device, and the
non-blocking flag keeps it from serialising against the legacy default stream that user
CuPy code runs on. The stream is the device's queue in nda's sense (backend API 1.3).

A marker (:class:`Marker`) is a CUDA event recorded on the stream after the work enqueued
so far. nda's engine records one only where something waits (a host read, the bound on work
in flight) and waits on it on the reading thread (``cudaEventSynchronize``); another device's
stream waits for it with ``cudaStreamWaitEvent``, which blocks no host thread. Events are
pooled: creating one is a driver call, and a marker hands its event back to the pool when
the engine drops it. There is no waiter thread: nothing needs to be told when GPU work
finishes, except a reader.

While nda's profiler records, every op gets a *timed* marker (:meth:`DeviceStream.timed_marker`):
a CUDA event with timing enabled. Its host time is ``anchor + cudaEventElapsedTime(anchor,
event)``, where the anchor is a timing event recorded on an idle stream of its own together
with a ``time.perf_counter()`` reading (made again every minute, so that the two clocks do
not drift apart), so the profiler places GPU work on the same clock as the host's spans.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["DeviceStream", "Marker"]


class Marker:
    """An event recorded on a device stream; its event returns to the pool when dropped.

    ``anchor``: for a timed marker, the ``(timing event, perf_counter seconds)`` its time is
    measured from; None for a plain one.
    """

    __slots__ = ("event", "owner", "anchor")

    def __init__(self, event: Any, owner: DeviceStream, anchor: tuple[Any, float] | None = None) -> None:
        self.event = event
        self.owner = owner
        self.anchor = anchor

    def time(self) -> float | None:
        """When the event was reached, in ``time.perf_counter()`` seconds (None: not timed, or not yet)."""
        anchor = self.anchor
        if anchor is None or not self.event.done:
            return None
        return anchor[1] + self.owner.cupy.cuda.get_elapsed_time(anchor[0], self.event) / 1e3

    def __del__(self) -> None:
        if self.anchor is not None:
            return  # a timing event: not for the pool of plain events
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
        self._clock: Any = None  # an idle stream for the timing anchors (made on first use)
        self._anchor: tuple[Any, float] | None = None

    # ------------------------------------------------------------------ events
    def _pooled(self) -> Any:
        with self._lock:
            ev = self._events.pop() if self._events else None
        if ev is None:
            with self.device:
                ev = self.cupy.cuda.Event(disable_timing=True)
        return ev

    def event(self) -> Any:
        """An event recorded on the stream now (after everything enqueued so far)."""
        ev = self._pooled()
        with self.device:
            ev.record(self.stream)
        return ev

    # ------------------------------------------------------------------ other libraries' streams
    def wait_for(self, ptrs: list[int], target: Any = None) -> None:
        """Make ``target`` (the compute stream by default) wait for the work enqueued so far on the streams
        with the raw handles ``ptrs`` (another library's): an event recorded on each, waited for by
        ``target``. No host thread waits; CUDA takes the event's state when the wait is enqueued, so
        the event goes straight back to the pool."""
        runtime = self.cupy.cuda.runtime
        target = self.stream if target is None else target
        with self.device:
            for ptr in ptrs:
                ev = self._pooled()
                runtime.eventRecord(ev.ptr, ptr)
                runtime.streamWaitEvent(target.ptr, ev.ptr)
                self.recycle(ev)

    def make_wait(self, ptrs: list[int], source: Any = None) -> None:
        """Make the streams with the raw handles ``ptrs`` wait for the work enqueued so far on ``source``
        (the compute stream by default): one event, waited for by each."""
        if not ptrs:
            return
        runtime = self.cupy.cuda.runtime
        source = self.stream if source is None else source
        ev = self._pooled()
        with self.device:
            runtime.eventRecord(ev.ptr, source.ptr)
            for ptr in ptrs:
                runtime.streamWaitEvent(ptr, ev.ptr)
        self.recycle(ev)

    def marker(self) -> Marker:
        return Marker(self.event(), self)

    def timed_marker(self) -> Marker:
        """A marker whose event measures time (for the profiler; see the module docstring)."""
        anchor = self._anchor
        if anchor is None or time.perf_counter() - anchor[1] > 60.0:
            anchor = self._anchor = self._new_anchor()
        with self.device:
            ev = self.cupy.cuda.Event()
            ev.record(self.stream)
        return Marker(ev, self, anchor)

    def _new_anchor(self) -> tuple[Any, float]:
        """A timing event on an idle stream and the host time at which the GPU reached it."""
        with self.device:
            if self._clock is None:
                self._clock = self.cupy.cuda.Stream(non_blocking=True)
            ev = self.cupy.cuda.Event()
            before = time.perf_counter()
            ev.record(self._clock)
            ev.synchronize()
            after = time.perf_counter()
        return ev, (before + after) / 2

    def recycle(self, ev: Any) -> None:
        with self._lock:
            if len(self._events) < 256:
                self._events.append(ev)

    # ------------------------------------------------------------------ waiting
    def synchronize(self) -> None:
        """Wait for everything enqueued on the stream so far."""
        with self.device:
            self.stream.synchronize()
