"""CUDA streams and events in the CuPy model: writes that land later, in stream order, unless ordered.

Part of the CuPy model (``tests/_cupy_quirks.py``). A GPU runs the work enqueued on one stream in
order, and the work of different streams in any order unless an event orders it
(``cudaStreamWaitEvent``) or the legacy default stream's implicit synchronization does: work on a
*blocking* stream waits for what the legacy default stream (CuPy's ``Stream.null``, PyTorch's
default stream) was given before, and work on the legacy default stream for what every blocking
stream was given before. A non-blocking stream (``cupy.cuda.Stream(non_blocking=True)``: nda-cuda's)
takes part in neither.

The model's memory is host memory and its kernels compute when they are called, after the work
their stream (and the streams the rule above orders it after) was given before (:func:`before_kernel`).
A write into existing memory is *enqueued* instead (:func:`enqueue`: ``x[key] = v``, ``fill``, a
ufunc's ``out=``, a non-blocking copy into host memory) and lands only when

* a later kernel runs on its stream, or on a stream ordered after it by the rule above;
* a stream that waits on an event recorded after it runs something (the wait is an item of that
  stream's queue, taken in order);
* its stream, an event after it or the device is synchronized (``x.get()`` synchronizes the stream
  it copies on; ``float(x)``, ``repr(x)`` the current stream).

Nothing else lands it. A read on another stream with no event in between does not see it, as on a
GPU where the write is still queued: the race of two libraries that share memory through DLPack and
do not order their streams (the H200, 2026-11-28: ``x = nda.from_dlpack(c); c[0] = 7`` and
``x.asnumpy()[0]`` was 0). Events are captured when a stream is told to wait on them, as in CUDA
(recording the event again later does not move the wait).

Streams have ``ptr`` values as CUDA's handles do: 0 is the legacy default stream (1, DLPack's and
``cudaStreamLegacy``'s number for it, and 2, the per-thread default stream, name the same queue here);
others are made up. :data:`cuda` is the ``cupy.cuda`` of the model (streams, events, devices, the
runtime's ``eventRecord``/``streamWaitEvent``); the model's array module itself has no ``cuda``
attribute (nda-cuda takes that for the real CuPy), so nda-cuda's stream code gets :data:`cupy_like`.
"""

from __future__ import annotations

import itertools
import threading
import types
import weakref
from collections import deque
from typing import Any, Callable

__all__ = ["Stream", "Event", "cuda", "cupy_like", "before_kernel", "enqueue", "drain", "synchronize_all", "pending"]

#: One lock for every queue: items run under it (an item may run another queue up to an event).
_LOCK = threading.RLock()
#: Items enqueued and not run yet, on every queue (0: every model call goes straight on).
_pending = [0]
_local = threading.local()
_ptrs = itertools.count(0x7F00)  # made-up handles of the streams the model creates


def pending() -> int:
    """Writes (and waits) enqueued and not landed yet, on every stream."""
    return _pending[0]


class _Queue:
    """The work of one stream: ``items`` (number, callable) in order; numbers below ``done`` have run."""

    __slots__ = ("items", "issued", "done", "blocking", "legacy")

    def __init__(self, blocking: bool, legacy: bool = False) -> None:
        self.items: deque[tuple[int, Callable[[], None]]] = deque()
        self.issued = 0
        self.done = 0
        self.blocking = blocking
        self.legacy = legacy

    def put(self, fn: Callable[[], None]) -> None:
        with _LOCK:
            self.items.append((self.issued, fn))
            self.issued += 1
            _pending[0] += 1

    def run_to(self, position: int) -> None:
        """Run the items numbered below ``position`` (in order)."""
        with _LOCK:
            items = self.items
            while items and items[0][0] < position:
                number, fn = items.popleft()
                _pending[0] -= 1
                self.done = number + 1
                fn()
            if self.done < position:
                self.done = min(position, self.issued)

    def run_all(self) -> None:
        self.run_to(self.issued)


_LEGACY = _Queue(blocking=True, legacy=True)
_queues: dict[int, _Queue] = {0: _LEGACY, 1: _LEGACY, 2: _LEGACY}
_blocking: list[_Queue] = []  # blocking streams other than the legacy one (its implicit synchronization)


def _ordered_before(queue: _Queue) -> list[_Queue]:
    """The queues the legacy default stream's rule orders ``queue``'s next work after (and ``queue``)."""
    if not queue.blocking:
        return [queue]
    if queue.legacy:
        return [*_blocking, queue]
    return [_LEGACY, queue]


def _queue_of(ptr: int) -> _Queue:
    queue = _queues.get(int(ptr))
    if queue is None:
        raise ValueError(f"stream handle {ptr:#x} is not a stream of the CuPy model (the model never touches real CUDA streams)")
    return queue


class Stream:
    """``cupy.cuda.Stream`` of the model (``null=True``: the legacy default stream)."""

    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False, priority: Any = None) -> None:
        if null or ptds:
            self.ptr = 0 if null else 2
            self.non_blocking = False
        else:
            self.ptr = next(_ptrs)
            self.non_blocking = bool(non_blocking)
            queue = _Queue(blocking=not non_blocking)
            _queues[self.ptr] = queue
            if not non_blocking:
                _blocking.append(queue)
        self.device_id = 0
        self._queue = _queue_of(self.ptr)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Stream) and other._queue is self._queue

    def __hash__(self) -> int:
        return self.ptr

    def __enter__(self) -> Stream:
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.stack.pop()

    def record(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        _wait(self._queue, event)

    def synchronize(self) -> None:
        for queue in _ordered_before(self._queue):
            queue.run_all()

    @property
    def done(self) -> bool:
        self.synchronize()
        return True

    def __repr__(self) -> str:
        return f"<Stream {self.ptr} (CuPy model)>"


Stream.null = Stream(null=True)


def _wait(queue: _Queue, event: Event) -> None:
    """``queue`` waits for ``event`` as it is recorded now: an item that runs the event's queue up to it."""
    target = event._at
    if target is None or target[0] is queue:
        return
    source, position = target
    if position <= source.done:
        return  # reached already
    queue.put(lambda: source.run_to(position))


class Event:
    """``cupy.cuda.Event`` of the model: a position in a stream's queue."""

    _events: weakref.WeakValueDictionary[int, Event] = weakref.WeakValueDictionary()  # ptr -> event, for the runtime's calls
    _next = itertools.count(0xE000)

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self.ptr = next(Event._next)
        self._at: tuple[_Queue, int] | None = None
        Event._events[self.ptr] = self

    def record(self, stream: Stream | None = None) -> None:
        stream = get_current_stream() if stream is None else stream
        queue = stream._queue
        with _LOCK:
            for before in _ordered_before(queue):
                if before is not queue and before.done < before.issued:
                    _wait(queue, _Marker(before))  # the legacy rule: what it was given before comes first
            self._at = (queue, queue.issued)

    def synchronize(self) -> None:
        if self._at is not None:
            self._at[0].run_to(self._at[1])

    @property
    def done(self) -> bool:
        self.synchronize()  # a GPU gets there by itself; the model when someone looks
        return True


class _Marker(Event):
    """An event at the end of ``queue`` now (for the implicit waits of the legacy rule)."""

    def __init__(self, queue: _Queue) -> None:  # noqa: D107 - not registered by ptr
        self._at = (queue, queue.issued)


def get_current_stream(device_id: int = -1) -> Stream:
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else Stream.null


def before_kernel(stream: Stream | None = None) -> None:
    """Run what a kernel enqueued now on ``stream`` (the current one) comes after: its stream's queue and,
    by the legacy rule, the legacy stream's or every blocking stream's."""
    if not _pending[0]:
        return
    stream = get_current_stream() if stream is None else stream
    for queue in _ordered_before(stream._queue):
        if queue.done < queue.issued:
            queue.run_all()


def enqueue(fn: Callable[[], None], stream: Stream | None = None) -> None:
    """``fn`` (a write into existing memory, computed already) as work of ``stream`` (the current one)."""
    stream = get_current_stream() if stream is None else stream
    queue = stream._queue
    with _LOCK:
        for before in _ordered_before(queue):
            if before is not queue and before.done < before.issued:
                _wait(queue, _Marker(before))
        queue.put(fn)


def drain(stream: Stream | None = None) -> None:
    """Synchronize ``stream`` (the current one): what ``x.get()`` and host reads of values do."""
    (get_current_stream() if stream is None else stream).synchronize()


def synchronize_all() -> None:
    """``cudaDeviceSynchronize``: every queue runs to its end."""
    while _pending[0]:
        for queue in list(dict.fromkeys(_queues.values())):
            queue.run_all()


class _Device:
    """``cupy.cuda.Device`` of the model (one device, id 0)."""

    def __init__(self, device: int = 0) -> None:
        self.id = int(device)

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def synchronize(self) -> None:
        synchronize_all()


def _event_record(event_ptr: int, stream_ptr: int) -> None:
    stream = _ExternalStream(stream_ptr)
    Event._events[event_ptr].record(stream)


def _stream_wait_event(stream_ptr: int, event_ptr: int) -> None:
    _wait(_queue_of(stream_ptr), Event._events[event_ptr])


class _ExternalStream(Stream):
    """A stream object for an existing handle (``cupy.cuda.ExternalStream``): the same queue."""

    def __init__(self, ptr: int, device_id: int = -1) -> None:  # noqa: D107
        self.ptr = int(ptr)
        self.non_blocking = not _queue_of(ptr).blocking
        self.device_id = 0
        self._queue = _queue_of(ptr)


runtime = types.SimpleNamespace(
    streamLegacy=1,
    streamPerThread=2,
    eventRecord=_event_record,
    streamWaitEvent=_stream_wait_event,
    deviceSynchronize=synchronize_all,
    getDevice=lambda: 0,
    getDeviceCount=lambda: 1,
)

#: ``cupy.cuda`` of the model.
cuda = types.SimpleNamespace(
    Stream=Stream,
    ExternalStream=_ExternalStream,
    Event=Event,
    Device=_Device,
    get_current_stream=get_current_stream,
    runtime=runtime,
    get_elapsed_time=lambda start, end: 0.0,
)

#: What nda-cuda's stream code (``nda_cuda._streams``, ``nda_cuda._shared``) takes for CuPy: the model's ``cuda``.
cupy_like = types.SimpleNamespace(cuda=cuda, __name__="cupy_model")
