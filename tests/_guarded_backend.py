"""A small backend with in-order queues that records which of its members nda reads once armed
(tests/test_backend_handle.py loads it with ``nda.backends.load("_guarded_backend")``).

Device type ``guarded``, two devices. Its kernels run at once on the host (an in-order queue
whose work is done when it is enqueued: every marker is reached), so the test can count reads
without threads. It declares every optional member the engine and dispatch use: the four
markers, timed markers, ``to_host_in_order``, ``buffer_owner``, ``ensure_buffer`` (its ``sum``
returns a NumPy scalar), ``copy_to_device``, ``synchronize``, ``flushes_subnormals``, a host
fallback, ``continues_after_fork = False``. ``plain`` and ``failing`` serve the same device type
(no queues and no flush; a registration that fails). Once ``armed`` is set, ``__getattribute__`` appends
to ``reads`` the name of every contract member read off the object: the handle, resolved at
activation, is the one view of the backend, so a read after activation is a bug.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Callable

import numpy as np

from nda import Device
from nda.backends import DeviceInfo
from nda.ops import CATALOG

#: The members of the backend contract nda may read (at activation only).
CONTRACT = frozenset(
    {
        "api_version",
        "device_types",
        "devices",
        "register",
        "to_host",
        "from_host",
        "device_of",
        "buffer_type",
        "fallback_to_host",
        "in_order_queues",
        "record_marker",
        "wait_marker",
        "synchronize_marker",
        "marker_reached",
        "record_timed_marker",
        "marker_time",
        "to_host_in_order",
        "buffer_owner",
        "ensure_buffer",
        "copy_to_device",
        "continues_after_fork",
        "synchronize",
        "record_completion",
        "memory_stats",
        "release_all",
        "partitioner",
        "dlpack",
        "dlpack_device",
        "import_dlpack",
        "dlpack_device_types",
        "flushes_subnormals",
        "executor",
    }
)


class GuardedBuffer:
    __slots__ = ("array", "device", "base", "__weakref__")

    def __init__(self, array: np.ndarray, device: Device, base: GuardedBuffer | None = None) -> None:
        self.array, self.device, self.base = array, device, base

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype


class GuardedBackend:
    name = "guarded"
    api_version = "1.4"
    device_types = ("guarded",)
    buffer_type = GuardedBuffer
    fallback_to_host = True
    in_order_queues = True
    continues_after_fork = False
    flushes_subnormals = ("float32",)

    def __init__(self) -> None:
        self.armed = False
        self.reads: list[str] = []
        self.enqueued = itertools.count(1)
        self.current = Device("guarded", 0)
        self.synchronized = 0  # calls of synchronize (a sync point asks the device to finish its work)

    def __getattribute__(self, name: str) -> Any:
        if name in CONTRACT and object.__getattribute__(self, "armed"):
            object.__getattribute__(self, "reads").append(name)
        return object.__getattribute__(self, name)

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(Device("guarded", i), f"guarded device {i}", memory=1 << 30) for i in range(2)]

    # -- data movement
    def to_host(self, buf: GuardedBuffer) -> np.ndarray:
        return np.array(buf.array, copy=True)

    def to_host_in_order(self, buf: GuardedBuffer) -> np.ndarray:
        return np.array(buf.array, copy=True)

    def from_host(self, host: np.ndarray, device: Device, out: GuardedBuffer | None = None) -> GuardedBuffer:
        if out is not None:
            out.array[...] = host
            return out
        return GuardedBuffer(np.array(host, copy=True), device)

    def device_of(self, buf: GuardedBuffer) -> Device:
        return buf.device

    def copy_to_device(self, buf: GuardedBuffer, device: Device) -> GuardedBuffer:
        return GuardedBuffer(np.array(buf.array, copy=True), device)

    def buffer_owner(self, buf: GuardedBuffer) -> GuardedBuffer:
        return buf.base if buf.base is not None else buf

    def ensure_buffer(self, result: Any) -> GuardedBuffer:
        if isinstance(result, GuardedBuffer):
            return result
        return GuardedBuffer(np.asarray(result), self.current)

    # -- the queue: work is done when enqueued, so every marker is reached
    def record_marker(self, device: Device) -> int:
        return next(self.enqueued)

    def record_timed_marker(self, device: Device) -> tuple[int, float]:
        return (next(self.enqueued), time.perf_counter())

    def marker_time(self, marker: Any) -> float | None:
        return marker[1] if isinstance(marker, tuple) else None

    def wait_marker(self, device: Device, marker: Any) -> None:
        pass

    def synchronize_marker(self, marker: Any) -> None:
        pass

    def marker_reached(self, marker: Any) -> bool:
        return True

    def synchronize(self, device: Device) -> None:
        self.synchronized += 1

    def memory_stats(self, device: Device) -> dict[str, int]:
        return {"in_use": 0, "peak": 0, "cached": 0}

    # -- kernels
    def register(self, register_kernel: Callable[..., None]) -> None:
        for op in ("add", "multiply"):
            register_kernel(op, CATALOG[op].supported_dtypes, self._elementwise(getattr(np, op)))
        register_kernel("sum", CATALOG["sum"].supported_dtypes, self._sum)

    def _elementwise(self, ufunc: np.ufunc) -> Callable[..., GuardedBuffer]:
        def kernel(x1: Any, x2: Any) -> GuardedBuffer:
            a = x1.array if isinstance(x1, GuardedBuffer) else x1
            b = x2.array if isinstance(x2, GuardedBuffer) else x2
            device = (x1 if isinstance(x1, GuardedBuffer) else x2).device
            return GuardedBuffer(np.asarray(ufunc(a, b)), device)

        kernel.__name__ = f"guarded_{ufunc.__name__}"
        return kernel

    def _sum(self, x: GuardedBuffer, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
        self.current = x.device  # as CuPy's current device: where ensure_buffer puts a scalar
        result = np.sum(x.array, axis=axis, keepdims=keepdims, dtype=None if dtype is None else dtype.numpy)
        return result if isinstance(result, np.ndarray) and result.ndim else result[()]  # a full sum: a NumPy scalar


class PlainBackend(GuardedBackend):
    """Another backend for the same device type, without queues or a flush declaration."""

    name = "guarded-plain"
    in_order_queues = False
    flushes_subnormals = ()


class FailingBackend(GuardedBackend):
    """A backend for the same device type whose registration fails half way."""

    name = "guarded-failing"

    def register(self, register_kernel: Callable[..., None]) -> None:
        register_kernel("add", CATALOG["add"].supported_dtypes, self._elementwise(np.add))
        raise RuntimeError("the kernels of guarded-failing do not compile here")


backend = GuardedBackend()
plain = PlainBackend()
failing = FailingBackend()
