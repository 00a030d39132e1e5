"""The simulated hardware: device memory (an allocator with a capacity) and a stream.

``Allocator`` hands out byte counts against a capacity and keeps freed blocks cached by
size, like a GPU memory pool: ``in_use``, ``peak`` and ``cached`` move as buffers come and
go, and ``release_all`` gives the cache back. ``Stream`` is one thread per device that runs
enqueued work in order, the way a CUDA stream does; kernels return as soon as their work
is enqueued. ``SimBuffer`` is a handle on device memory: nda never sees its NumPy array.
"""

from __future__ import annotations

import queue
import threading
import weakref
from typing import Any, Callable

import numpy as np
from nda.engine import Completion

_WAIT_SLICE = 0.05


class Allocator:
    """Byte accounting for one device, with a cache of freed blocks (by exact size)."""

    def __init__(self, device: Any, capacity: int) -> None:
        self.device = device
        self.capacity = capacity
        self.in_use = 0
        self.peak = 0
        self.cached = 0
        self._blocks: dict[int, int] = {}  # size -> number of cached blocks of that size
        self._lock = threading.Lock()

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


class SimBuffer:
    """A handle on simulated device memory; filled by the device's stream."""

    __slots__ = ("device", "_array", "_error", "_ready", "_base", "__weakref__")

    def __init__(self, device: Any) -> None:
        self.device = device
        self._array: np.ndarray | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._base: SimBuffer | None = None  # the buffer owning the memory, for views

    def wait(self) -> np.ndarray:
        """The device array once the stream has produced it (raises the work's error)."""
        while not self._ready.wait(_WAIT_SLICE):
            pass
        if self._error is not None:
            raise self._error
        assert self._array is not None
        return self._array

    def __repr__(self) -> str:
        state = "failed" if self._error is not None else "ready" if self._ready.is_set() else "pending"
        return f"<SimBuffer on {self.device}, {state}>"


class Stream:
    """One thread running the device's work in order; started on first use."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self._outstanding = 0
        self._errors: list[BaseException] = []
        self._start_lock = threading.Lock()

    def enqueue(self, work: Callable[[], None]) -> None:
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                    self._thread.start()
        with self._cond:
            self._outstanding += 1
        self._queue.put(work)

    def _loop(self) -> None:
        while True:
            work = self._queue.get()
            try:
                work()
            except BaseException as err:  # noqa: BLE001 - the stream must survive any work item
                self._errors.append(err)
            finally:
                del work  # do not keep the last item's buffers alive until the next one arrives
                with self._cond:
                    self._outstanding -= 1
                    self._cond.notify_all()

    def report(self, err: BaseException) -> None:
        self._errors.append(err)

    def marker(self) -> Completion:
        """A completion signalled when the work enqueued so far is done (with its first error)."""
        done = Completion()

        def signal() -> None:
            errors, self._errors = self._errors, []
            done.done(errors[0] if errors else None)

        self.enqueue(signal)
        return done

    def flush(self) -> None:
        """Wait for the work enqueued so far (not for work other threads enqueue later)."""
        if self._thread is None:
            return
        reached = threading.Event()
        self.enqueue(reached.set)
        while not reached.wait(_WAIT_SLICE):
            pass

    def drain(self) -> None:
        """Wait for all enqueued work."""
        with self._cond:
            while self._outstanding:
                self._cond.wait(_WAIT_SLICE)

    def synchronize(self) -> None:
        """Wait for all enqueued work. Errors stay with the buffers they failed (and with the
        next completion marker); raising them here would fail unrelated arrays' sync points."""
        self.drain()


def track(buffer: SimBuffer, allocator: Allocator, nbytes: int) -> None:
    """Give ``nbytes`` back to ``allocator`` when ``buffer`` is garbage collected."""
    weakref.finalize(buffer, allocator.free, nbytes)
