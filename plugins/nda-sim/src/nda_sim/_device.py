"""The simulated hardware: device memory (an allocator with a capacity) and a stream.

``Allocator`` hands out byte counts against a capacity and keeps freed blocks cached by
size, like a GPU memory pool: ``in_use``, ``peak`` and ``cached`` move as buffers come and
go, and ``release_all`` gives the cache back. ``Stream`` is one thread per device that runs
enqueued work in order, the way a CUDA stream does; kernels return as soon as their work
is enqueued, and a :class:`Marker` (a count on the stream's timeline) plays the part of a
CUDA event. ``SimBuffer`` is a handle on device memory: nda never sees its NumPy array.
"""

from __future__ import annotations

import queue
import threading
import time
import weakref
from typing import Any, Callable

import numpy as np
from nda.backends.contract import env_float  # nda's one parser of NDA_* variables

_WAIT_SLICE = 0.05


#: Seconds each work item waits on the stream before it runs: a slow device, so that a read or
#: an op nda did not order after its producer finds the producer unfinished (and, with the
#: strict host reads below, fails loudly). ``NDA_SIM_LATENCY_US``; tests set it directly.
#: At most :data:`MAX_LATENCY_US` (10 s): a longer sleep overflows, and is no simulation of a device.
MAX_LATENCY_US = 10_000_000
latency = env_float("NDA_SIM_LATENCY_US", 0.0, maximum=MAX_LATENCY_US) * 1e-6


class Allocator:
    """Byte accounting for one device, with a cache of freed blocks (by exact size)."""

    def __init__(self, device: Any, capacity: int) -> None:
        self.device = device
        self.capacity = capacity
        self.in_use = 0
        self.peak = 0
        self.cached = 0
        self._blocks: dict[int, int] = {}  # size -> number of cached blocks of that size
        # Reentrant: a buffer freed by the garbage collector while this thread allocates gives its
        # bytes back from inside allocate() (see track()).
        self._lock = threading.RLock()

    def allocate(self, nbytes: int) -> int:
        with self._lock:
            if self._blocks.get(nbytes):
                self._blocks[nbytes] -= 1
                self.cached -= nbytes
            else:
                if self.in_use + self.cached + nbytes > self.capacity:
                    self._release_locked()
                if self.in_use + nbytes > self.capacity:
                    free = self.capacity - self.in_use
                    raise MemoryError(
                        f"{self.device}: cannot allocate {nbytes:,} bytes; {free:,} of {self.capacity:,} bytes are free "
                        f"({self.in_use:,} in use). Free arrays on {self.device} or raise NDA_SIM_CAPACITY."
                    )
            self.in_use += nbytes
            self.peak = max(self.peak, self.in_use)
            return nbytes

    def free(self, nbytes: int) -> None:
        with self._lock:
            self.in_use -= nbytes
            self.cached += nbytes
            self._blocks[nbytes] = self._blocks.get(nbytes, 0) + 1

    def after_fork(self) -> None:
        """In a forked child: a parent thread may have held the lock at the fork."""
        self._lock = threading.RLock()

    def release_all(self) -> int:
        with self._lock:
            return self._release_locked()

    def _release_locked(self) -> int:
        released = self.cached
        self._blocks.clear()
        self.cached = 0
        return released

    def stats(self) -> dict[str, int]:
        return {"in_use": self.in_use, "peak": self.peak, "cached": self.cached, "capacity": self.capacity}


_UNSET: tuple[Any, int] = (None, 1)


class SimBuffer:
    """A handle on simulated device memory; filled by the device's stream.

    ``_at`` says when it is filled: ``(stream, position)`` of the work item that fills it
    (filled once the stream has completed that many items: a buffer costs no event of its
    own), ``None`` for a buffer filled on the host, and ``(None, 1)`` until its work is enqueued.
    """

    __slots__ = ("device", "_array", "_error", "_at", "_base", "_written_at", "__weakref__")

    def __init__(self, device: Any) -> None:
        self.device = device
        self._array: np.ndarray | None = None
        self._error: BaseException | None = None
        self._at: tuple[Any, int] | None = _UNSET
        self._base: SimBuffer | None = None  # the buffer owning the memory, for views
        self._written_at: tuple[Stream, int] | None = None  # the last in-place write enqueued on its memory

    def ready(self) -> bool:
        """Whether the work filling it has run (however it ended)."""
        at = self._at
        return at is None or (at[0] is not None and at[0].completed >= at[1])

    def _wait_filled(self) -> None:
        at = self._at
        if at is not None:
            if at[0] is None:
                raise RuntimeError(f"{self!r}: the work that fills it was never enqueued")
            at[0].wait_reached(at[1])

    def wait(self) -> np.ndarray:
        """The device array once the stream has produced it (raises the work's error)."""
        self._wait_filled()
        if self._error is not None:
            raise self._error
        assert self._array is not None
        return self._array

    def __repr__(self) -> str:
        state = "failed" if self._error is not None else "ready" if self.ready() else "pending"
        return f"<SimBuffer on {self.device}, {state}>"


class Marker:
    """A point on a stream's timeline: reached once the stream has run ``count`` work items.

    A *timed* marker (:meth:`Stream.timed_marker`, for nda's profiler) also gets ``time``: the
    ``time.perf_counter()`` at which the stream completed item ``count``.
    """

    __slots__ = ("stream", "count", "time")

    def __init__(self, stream: Stream, count: int) -> None:
        self.stream = stream
        self.count = count
        self.time: float | None = None

    def reached(self) -> bool:
        return self.stream.completed >= self.count

    def __repr__(self) -> str:
        return f"<Marker {self.stream.name}@{self.count}>"


class Stream:
    """One thread running the device's work in order (the device's queue); started on first use.

    Work items are counted as they are enqueued (``issued``) and as they finish
    (``completed``), so a :class:`Marker` is two integers and costs nothing to record: the
    marker of "everything enqueued so far" is ``issued``. Waiting for one blocks on the
    stream's condition until ``completed`` reaches it; making another stream wait for one
    enqueues a work item there that blocks *that stream's thread*, never the host.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self._count_lock = threading.Lock()
        self.issued = 0  # work items enqueued
        self.completed = 0  # work items finished
        self._waiters = 0
        self._start_lock = threading.Lock()
        self._pending: dict[int, Callable[[], None]] = {}  # work not started yet (cancelled in a forked child)
        self._timed: dict[int, Marker] = {}  # timed markers not reached yet, by count
        self.completed_at = 0.0  # perf_counter() when the last item completed
        # os.fork (pause/resume): the thread starts no item while paused; ``_running`` says
        # whether it is inside one, so that the fork waits for that item only.
        self._gate = threading.Condition()
        self._paused = False
        self._running = False

    def enqueue(self, work: Callable[[], None]) -> int:
        """Run ``work`` after everything enqueued before; returns its position on the timeline."""
        if self._thread is None:
            self._start()
        with self._count_lock:
            self.issued += 1
            position = self.issued
            self._pending[position] = work
            self._queue.put(work)
        return position

    def submit(
        self, body: Callable[[], None], out: SimBuffer | None = None, target: SimBuffer | None = None, more: tuple[SimBuffer, ...] = ()
    ) -> Outcome:
        """Module-level :func:`submit` (which see), in one frame with :meth:`enqueue`: every sim op takes it."""
        outcome = Outcome()
        outcome.error = None

        def fail(error: BaseException) -> None:
            outcome.error = error
            if out is not None:
                out._error = error
            elif target is not None:
                target._error = error  # a failed in-place write leaves its target (and the memory it views) undefined
                if target._base is not None:
                    target._base._error = error

        def work() -> None:
            try:
                body()
            except InputFailed as failed:
                fail(failed.error)
            except BaseException as err:  # noqa: BLE001 - recorded on the buffer it failed
                fail(err)  # nda clears the frames' locals when it retires the op (they hold its buffers)

        work.cancel = fail  # type: ignore[attr-defined]
        if self._thread is None:
            self._start()
        with self._count_lock:  # as enqueue
            self.issued += 1
            position = self.issued
            self._pending[position] = work
            self._queue.put(work)
        at = (self, position)
        if out is not None:
            out._at = at
        for extra in more:
            extra._at = at
        if target is not None:
            (target._base or target)._written_at = at
        return outcome

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        np.seterr(all="ignore")  # this thread only: a device does not warn of floating-point errors (CuPy does not)
        gate = self._gate
        while True:
            work = self._queue.get()
            with gate:
                while self._paused:  # a fork is under way: start nothing
                    gate.wait(_WAIT_SLICE)
                self._running = True
            try:
                if latency:
                    time.sleep(latency)
                work()
            except BaseException:  # noqa: BLE001 - the stream must survive any work item (items keep their own errors)
                pass
            finally:
                del work  # do not keep the last item's buffers alive until the next one arrives
                now = time.perf_counter()
                with gate:
                    self._running = False
                    if self._paused:
                        gate.notify_all()
                with self._count_lock:
                    self.completed += 1
                    self.completed_at = now
                    self._pending.pop(self.completed, None)
                    if self._timed:
                        reached = self._timed.pop(self.completed, None)
                        if reached is not None:
                            reached.time = now
                if self._waiters:
                    with self._cond:
                        self._cond.notify_all()

    def pause(self, deadline: float) -> bool:
        """Before ``os.fork``: start no item; wait until the running one ends (until ``deadline``,
        a ``time.monotonic()`` value). A thread inside NumPy's BLAS at the fork hangs the
        fork (OpenBLAS's fork handler waits for it). True when nothing runs."""
        with self._gate:
            self._paused = True
            while self._running and time.monotonic() < deadline:
                self._gate.wait(min(_WAIT_SLICE, max(deadline - time.monotonic(), 0.0)))
            return not self._running

    def resume(self) -> None:
        """After ``os.fork``, in the parent: undo :meth:`pause`."""
        with self._gate:
            self._paused = False
            self._gate.notify_all()

    def marker(self) -> Marker:
        """A marker for everything enqueued on this stream so far."""
        return Marker(self, self.issued)

    def timed_marker(self) -> Marker:
        """A marker for everything enqueued so far that records when it is reached (``time``)."""
        with self._count_lock:
            marker = Marker(self, self.issued)
            if self.completed >= marker.count:  # reached already: the last completion is its
                marker.time = self.completed_at if marker.count else time.perf_counter()
            else:
                self._timed[marker.count] = marker
        return marker

    def wait_reached(self, count: int, deadline: float | None = None) -> bool:
        """Block until ``count`` work items have finished (polling, so Ctrl-C gets through),
        or until ``deadline`` (a ``time.monotonic()`` value); True when they have."""
        if self.completed >= count:
            return True
        if self._thread is None:  # a forked child's stream with work queued by the parent (restart_after_fork)
            self._start()
        with self._cond:
            self._waiters += 1
            try:
                while self.completed < count:
                    if deadline is not None and time.monotonic() >= deadline:
                        return False
                    self._cond.wait(_WAIT_SLICE)
            finally:
                self._waiters -= 1
        return True

    def started(self) -> bool:
        """Whether the stream's thread exists (work was ever enqueued)."""
        return self._thread is not None

    def flush(self) -> None:
        """Wait for the work enqueued so far (not for work other threads enqueue later)."""
        self.wait_reached(self.issued)

    def drain(self) -> None:
        """Wait for all enqueued work."""
        self.flush()

    def synchronize(self) -> None:
        """Wait for all enqueued work. Errors stay with the buffers they failed (and with the
        op's check); raising them here would fail unrelated arrays' sync points."""
        self.flush()

    def restart_after_fork(self, error: BaseException) -> None:
        """In a forked child: run on, with a thread of the child's own, what the parent had queued.

        The parent's thread does not exist here, and may have held this stream's locks at the
        fork; they are made afresh. The work it had not started is queued again, in order, on
        this same stream (markers and positions stay valid: nda's queue for this device goes
        on as in the parent); the child's thread starts when something is enqueued or waited
        for, not in the fork hook (other fork hooks run after this one). An item that was
        *running* (the fork stopped waiting for it past ``NDA_QUIESCE_TIMEOUT``) never
        finishes here: it fails with ``error``.
        """
        self._cond = threading.Condition()
        self._count_lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._gate = threading.Condition()
        self._paused = False
        self._waiters = 0
        running, self._running = self._running, False
        pending = sorted(self._pending.items())  # positions completed + 1 ... issued, oldest first
        if running and pending:
            position, work = pending.pop(0)
            del self._pending[position]
            cancel = getattr(work, "cancel", None)
            if cancel is not None:
                cancel(error)
            self.completed = position
        self._queue = queue.SimpleQueue()
        for _, work in pending:
            self._queue.put(work)
        self._thread = None


class Outcome:
    """The error of one work item; nda calls it (the op's check) once the item has run.

    Made by :meth:`Stream.submit`, which sets ``error`` to None (no ``__init__``: a Python frame
    per op on the hot path)."""

    __slots__ = ("error",)
    error: BaseException | None

    def __call__(self) -> BaseException | None:
        return self.error


class InputFailed(Exception):
    """Raised on the stream when an input buffer's producer failed: the op fails the same way."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


def read(buf: SimBuffer) -> Any:
    """On the stream: the device array of an input (``InputFailed`` if its producer failed).

    It does not re-raise the producer's exception, so that one exception object (the one
    nda attributes to the op that failed) travels unchanged to everything computed from it.
    """
    if not buf.ready():
        buf._wait_filled()
    error = buf._error if buf._error is not None else (buf._base._error if buf._base is not None else None)
    if error is not None:
        raise InputFailed(error)
    return buf._array


def read_target(buf: SimBuffer) -> Any:
    """On the stream: the device array an in-place write writes into, whatever an earlier failed
    write left there (nda decides whether this write inherits that failure: a write of the whole
    array does not, a partial one does, through the op's check). A buffer that was never filled
    (its producer failed) has nothing to write into: the write fails with that error."""
    if not buf.ready():
        buf._wait_filled()
    array = buf._array
    if array is None:
        error = buf._error if buf._error is not None else (buf._base._error if buf._base is not None else None)
        raise InputFailed(error if error is not None else RuntimeError(f"{buf!r} was never filled"))
    return array


def check_host_read(buf: SimBuffer) -> None:
    """Refuse a host read that nda did not order after the work writing ``buf``.

    On a real accelerator such a read returns whatever the memory holds at that moment
    (garbage, or the value before a pending write); the simulated device says so loudly
    instead, so that a missing wait in nda (or in a backend-API client) fails the tests.
    """
    if not buf.ready():
        raise RuntimeError(
            f"nda-sim: the host read {buf!r} before the work producing it had run on {buf.device}; "
            "a host read must first wait for the marker of the op that wrote the buffer (backend API 1.3)"
        )
    for owner in (buf, buf._base):
        written = owner._written_at if owner is not None else None
        if written is not None and written[0].completed < written[1]:
            raise RuntimeError(
                f"nda-sim: the host read {buf!r} while an in-place write to its memory was still queued on {buf.device}; "
                "a host read must first wait for the marker of the last op that wrote the buffer (backend API 1.3)"
            )


def submit(
    stream: Stream, body: Callable[[], None], out: SimBuffer | None = None, target: SimBuffer | None = None, more: tuple[SimBuffer, ...] = ()
) -> Outcome:
    """Enqueue ``body`` on ``stream``; its error goes to ``out`` (or poisons ``target``) and the outcome.

    The error is kept on the buffer (reading it, or anything computed from it, fails the
    same way) and in the returned :class:`Outcome`, which the kernel hands to nda as the
    op's check. ``out`` (and the further outputs ``more``) are filled once the stream has
    completed this item, however it ended; in a forked child, work the parent never ran is
    cancelled the same way. (:meth:`Stream.submit`, which the kernels call.)
    """
    return stream.submit(body, out, target, more)


#: The weak references of :func:`track` (by their id): kept alive until their buffer goes.
_tracked: dict[int, weakref.ref[SimBuffer]] = {}


def track(buffer: SimBuffer, allocator: Allocator, nbytes: int) -> None:
    """Give ``nbytes`` back to ``allocator`` when ``buffer`` is garbage collected.

    A weak reference with a callback, not ``weakref.finalize``: finalizers stop running once
    the interpreter's exit began (``weakref.finalize``'s own exit handler), and work still
    queued at exit (or read by an exit handler registered before nda) would then never get
    its temporaries' memory back and fail with MemoryError on a long chain.
    """

    def free(ref: weakref.ref[SimBuffer]) -> None:
        _tracked.pop(id(ref), None)
        allocator.free(nbytes)

    ref = weakref.ref(buffer, free)
    _tracked[id(ref)] = ref
