"""How the ordering profile makes timing bugs show: it keeps device queues busy.

A backend with in-order queues (backend API 1.3) enqueues each op and returns; on a fast or
idle device the work is done before the host issues the next op, so a missing wait hides.
The kit therefore slows the queue down where the contract allows it, **without the
backend's cooperation**: it enqueues *ballast*, work of its own on arrays of its own, on the
same queue. The contract says a queue runs its work in order, so every op issued after the
ballast runs after it, late, and is still pending when the host issues what follows; what
the backend orders correctly (same-queue dependencies, markers between queues, in-place
writes enqueued after the work on their target) is unaffected, what it does not order shows.

* **A stall** (a program's ``kit.stall(A)`` step): one ballast op issued on ``A`` through
  nda's public API. Before a ``to_device`` it makes the copy slow (the copy waits behind it on
  the target's queue); before a producer it makes the producer late.
* **A delay before each work item** (a program's ``slow`` slots): while the program runs,
  every kernel the backend registered for the device type is wrapped (at a higher priority,
  under the dispatch backend name ``nda-kit-pressure``, removed afterwards) so that on a slow
  device it first enqueues ballast by calling the backend's own ballast kernel directly.

The ballast is the backend's native ``matmul`` and a native element-wise op (``multiply`` or
``add``), each on a scratch array of the device, sized so that it takes about
:data:`STALL_SECONDS` on the device (measured once per device: eight issued back to back, then
one wait). A stall issues both, or only one of them: a backend may run its matmul on a queue
of its own (cuBLAS on a stream of its own), and only a stall of the other queue shows a missing
wait between the two; the programs pick the ballast of the kind of op they want late. A backend with no native floating-point kernel
cannot be slowed this way; a vendor who has a better means (a device-side sleep) passes
``stall=fn`` to :func:`nda.testing.conformance.run`: ``fn(device, seconds)`` must *enqueue*
a delay on the device's queue and return at once, without calling nda (it also runs inside
kernel calls).

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import numpy as np

import nda
from nda._devices import Device, KernelKey, strided

__all__ = ["Pressure", "STALL_SECONDS", "DISPATCH_NAME"]

#: How long one stall keeps a device's queue busy (seconds): far longer than nda takes to issue
#: the next op (tens of microseconds), short enough for hundreds of programs in a minute.
STALL_SECONDS = 0.008
#: The dispatch backend name of the wrappers that delay every op of a slow device.
DISPATCH_NAME = "nda-kit-pressure"
_BALLAST = (("matmul", "float32"), ("matmul", "float64"), ("multiply", "float32"), ("add", "float32"), ("multiply", "float64"), ("add", "float64"))
_MATMUL_SIDES = (64, 128, 256, 512, 1024, 2048, 4096)
_VECTOR_SIZES = tuple(1 << k for k in range(14, 25))


class _Ballast:
    """One device's ballast: ``(op, scratch, repeats, seconds, kernel)`` parts, issued one after the other."""

    __slots__ = ("device", "parts")

    def __init__(self, device: Device, parts: list[tuple[str, Any, int, float, Callable[..., Any]]]) -> None:
        self.device, self.parts = device, parts

    @property
    def seconds(self) -> float:
        return sum(p[3] for p in self.parts)

    def describe(self) -> str:
        return (
            ", then ".join(f"{op} of a {'x'.join(map(str, s.shape))} {s.dtype.name} array x{r}" for op, s, r, _, _ in self.parts)
            + f": about {self.seconds * 1e3:.1f} ms"
        )

    def kinds(self) -> tuple[str, ...]:
        """``"matmul"`` and/or ``"elementwise"``: the parts a stall may use alone."""
        return tuple("matmul" if p[0] == "matmul" else "elementwise" for p in self.parts)

    def issue(self, kind: str = "") -> None:
        """Through nda's public API (a program's stall step); ``kind``: one part only."""
        for op, scratch, repeats, _, _ in self.parts:
            if kind and kind != ("matmul" if op == "matmul" else "elementwise"):
                continue
            fn = getattr(nda, op)
            for _ in range(repeats):
                fn(scratch, scratch)

    def enqueue_raw(self, kind: str = "") -> None:
        """The backend's kernels called directly (inside another kernel call: no nda API)."""
        for op, scratch, repeats, _, kernel in self.parts:
            if kind and kind != ("matmul" if op == "matmul" else "elementwise"):
                continue
            buf = scratch._buf
            for _ in range(repeats):
                kernel(buf, buf)


class Pressure:
    """Ballast for the devices of one run (see the module docstring); calibrated on first use."""

    def __init__(self, seconds: float = STALL_SECONDS, stall: Callable[[Device, float], None] | None = None) -> None:
        self.seconds = seconds
        self.hook = stall
        self._ballast: dict[Device, _Ballast | None] = {}

    def describe(self, device: Device) -> str:
        if self.hook is not None:
            return f"the stall hook {getattr(self.hook, '__qualname__', self.hook)!r}, {self.seconds * 1e3:g} ms"
        found = self.ballast(device)
        if found is None:
            return "none (no native floating-point kernel to keep the queue busy with)"
        return found.describe()

    def stall(self, device: Device, kind: str = "") -> None:
        """Keep ``device``'s queue busy for about :attr:`seconds` (a program's stall step). ``kind``
        ``"matmul"`` or ``"elementwise"`` issues that part of the ballast only: a backend may run
        its matmul on a queue of its own, and only a stall of the other queue shows that."""
        if self.hook is not None:
            self.hook(device, self.seconds)
            return
        found = self.ballast(device)
        if found is not None:
            found.issue(kind)

    def ballast(self, device: Device) -> _Ballast | None:
        if device not in self._ballast:
            self._ballast[device] = _calibrate(device, self.seconds)
        return self._ballast[device]

    @contextmanager
    def delaying(self, devices: tuple[Device, ...], kind: str = "") -> Iterator[None]:
        """While the block runs, every kernel call on ``devices`` first enqueues a stall there (of ``kind``,
        as :meth:`stall`)."""
        if not devices:
            yield
            return
        raw: dict[Device, Callable[[], None]] = {}
        for device in devices:
            if self.hook is not None:
                hook, seconds = self.hook, self.seconds
                raw[device] = lambda d=device: hook(d, seconds)
            else:
                found = self.ballast(device)
                if found is not None:
                    raw[device] = lambda b=found: b.enqueue_raw(kind)
        if not raw:
            yield
            return
        _wrap_kernels({d.type for d in raw}, raw)
        try:
            yield
        finally:
            nda.dispatch.unregister_backend(DISPATCH_NAME)


def _dt(name: str) -> Any:
    from nda._dtypes import as_dtype

    return as_dtype(name)


def _timed(issue: Callable[[], Any], count: int = 8) -> float:
    """Seconds per call when ``count`` calls are queued back to back (one wait: a wake-up's latency is shared)."""
    start = time.perf_counter()
    last = None
    for _ in range(count):
        last = issue()
    assert last is not None
    last.wait_to_read()
    return (time.perf_counter() - start) / count


def _calibrate(device: Device, seconds: float) -> _Ballast | None:
    """The ballast of ``device``: its native ``matmul`` and a native element-wise op (a backend may
    run them on different queues: cuBLAS on a stream of its own), each sized to about ``seconds``."""
    parts = []
    for group in (_BALLAST[:2], _BALLAST[2:]):
        for op, dtype in group:
            found = _size(device, op, dtype, seconds)
            if found is not None:
                parts.append(found)
                break
    if not parts:
        return None
    return _Ballast(device, parts)


def _size(device: Device, op: str, dtype: str, seconds: float) -> tuple[str, Any, int, float, Callable[..., Any]] | None:
    """``(op, scratch, repeats, seconds, kernel)``: ``op`` on a scratch array taking about ``seconds``, or None."""
    key = KernelKey(device.type, _dt(dtype), strided)
    if not nda.dispatch.kernels(op, key):
        return None
    sizes = [(n, n) for n in _MATMUL_SIDES] if op == "matmul" else [(n,) for n in _VECTOR_SIZES]
    fn = getattr(nda, op)
    chosen: tuple[Any, float] | None = None  # the largest scratch array below ``seconds``, and its time
    try:
        for shape in sizes:
            scratch = nda.asarray(np.full(shape, 0.5, dtype=dtype), device=device)
            s = scratch
            fn(s, s).wait_to_read()  # first use: compilation, allocation
            took = min(_timed(lambda: fn(s, s)) for _ in range(3))  # the least: other work on a shared machine only adds
            if took >= seconds:
                if chosen is None:
                    chosen = (scratch, took)
                break
            chosen = (scratch, took)
    except Exception:  # noqa: BLE001 - out of memory, a kernel that fails: not this op (or the sizes so far)
        pass
    if chosen is None:
        return None
    scratch, took = chosen
    repeats = max(1, min(16, math.ceil(seconds / max(took, 1e-7))))  # the size below the target, repeated up to it
    return op, scratch, repeats, took * repeats, nda.dispatch.resolve(op, key).run


def _wrap_kernels(device_types: set[str], raw: dict[Device, Callable[[], None]]) -> None:
    """Register, for every native kernel of ``device_types``, a wrapper that calls ``raw[device]``
    first when the call is on one of ``raw``'s devices (see the module docstring)."""
    from nda import dispatch

    entries = []
    for op in dispatch.op_names():
        for key, listed in list(dispatch.table(op).kernels.items()):
            if key.device_type not in device_types:
                continue
            handle = nda.backends.handle(Device(key.device_type, 0))
            for entry in reversed(listed):  # registered in this order, they keep the originals' order
                if entry.route != "native" or entry.backend == DISPATCH_NAME:
                    continue
                entries += dispatch.prepare(
                    op,
                    key.device_type,
                    [key.dtype],
                    _delayed(entry.fn, raw, handle),
                    layout=key.layout,
                    priority=entry.priority + 1_000_000,
                    supports=entry.supports,
                    backend=DISPATCH_NAME,
                    signatures=entry.signatures,
                    out_layout=entry.out_layout,
                    queued=entry.kind is dispatch.QUEUED,
                )
    dispatch.publish(entries)


def _delayed(fn: Callable[..., Any], raw: dict[Device, Callable[[], None]], handle: Any) -> Callable[..., Any]:
    buffer_type, device_of = handle.buffer_type, handle.device_of

    def delayed(*args: Any, **kwargs: Any) -> Any:
        device = kwargs.get("device")
        if device is None:
            for a in args:
                for item in a if a.__class__ in (tuple, list) else (a,):
                    if isinstance(item, buffer_type):
                        device = device_of(item)
                        break
                if device is not None:
                    break
        stall = raw.get(device) if device is not None else None
        if stall is not None:
            stall()
        return fn(*args, **kwargs)

    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        try:
            setattr(delayed, attr, getattr(fn, attr))
        except (AttributeError, TypeError):
            pass
    return delayed
