"""Asynchronous "mutant" backends with in-order queues: each is correct but for one ordering bug.

The value mutants of ``_mutant_backends.py`` compute wrong values. These compute right values
and get the *asynchronous contract* wrong (``docs/writing-a-backend.md``, section 7), the way
a vendor's first queue backend does; nda's conformance kit must fail each of them with its
ordering profile (``--profile ordering``) and pass them with the value profile, whose
single-op cases never leave work pending where these bugs can be seen.

The model of the hardware (``QueueMutant``): two devices, each with a queue, a thread that
runs work items in the order they were enqueued (a CUDA stream). Memory is *real*: a kernel
allocates its output when it is called (zero-filled, as fresh device memory may read) and
its work item fills it later, so a read that nothing ordered after the producer sees zeros
or old values, never an error: exactly what a GPU does. Markers are positions on a queue's
timeline. A basic index (``x[1:3]``) is a view made at the call (no work item: CuPy's views
launch no kernel); everything else is a work item. Thirty ops are native, the others take
the host fallback (so ``reshape``, ``permute_dims`` and ``flip`` make host views, written
back with ``from_host(out=)``).

The bugs (``BUGS``), each one line in a real backend:

``copy_no_wait``
    ``copy_to_device`` enqueues the copy on the target's queue without making it wait for
    the source's marker: a copy of a pending ``matmul`` reads zeros;
``eager_write_back``
    ``from_host(out=buf)`` writes into ``buf`` at the call instead of enqueuing the write
    after the work already queued on it: a pending reader of ``buf`` sees the new data
    (nda writes back host views and host-fallback ``setitem`` results this way);
``no_bounds_check``
    index arrays are not checked on the device: they are clipped, so ``x[asarray([5])]``
    of a 3-element array gives ``[x[2]]`` where cpu raises ``IndexError``;
``side_stream``
    ``matmul`` runs on a second queue of the device (as cuBLAS on a stream of its own) that
    does not wait for the device's main queue first: a missing input dependency, so a
    ``matmul`` of a pending result reads zeros (its output is joined back correctly);
``zero_d_view``
    ``x[1]`` of a 1-d array is a 0-d *view* (as an earlier version of the backend guide
    said) where NumPy, cpu and sim give a 0-d copy: a later write to ``x`` changes it.

``host_read_at_call``
    for the value profile's note (not an ordering-profile mutant): uploads are enqueued (as
    ``from_host`` may do) behind a slow copy engine, and ``exp`` computes on the host at the
    call from whatever its input's memory holds (a missing input dependency the value profile
    does see, since its inputs are always fresh uploads): its kernel alone is right.

``ok`` has none of them. Load with ``nda.backends.load("_mutant_queues:<name>")``; the
device type is ``mutq_<name>``.
"""

from __future__ import annotations

import queue as _queue
import threading
import time
from typing import Any, Callable

import numpy as np

import nda
from nda.engine import Deferred
from nda.ops import CATALOG

#: The native ops (thirty); everything else takes the host fallback.
NATIVE_OPS = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "negative",
    "abs",
    "square",
    "sqrt",
    "exp",
    "sin",
    "cos",
    "tanh",
    "maximum",
    "minimum",
    "equal",
    "less",
    "greater",
    "where",
    "sum",
    "prod",
    "max",
    "min",
    "mean",
    "matmul",
    "astype",
    "getitem",
    "setitem",
    "zeros",
    "ones",
    "full",
)
_CREATION = {"zeros", "ones", "full"}
_CPU = nda.Device("cpu", 0)
BUGS = ("copy_no_wait", "eager_write_back", "no_bounds_check", "side_stream", "zero_d_view", "host_read_at_call")
#: Seconds an upload of ``host_read_at_call`` waits on its queue (a slow copy engine).
UPLOAD_SECONDS = 0.005


class QBuf:
    """Device memory: ``mem`` is allocated at the call; ``base`` is the buffer owning a view's memory."""

    __slots__ = ("mem", "device", "base", "__weakref__")

    def __init__(self, mem: np.ndarray, device: nda.Device, base: QBuf | None = None) -> None:
        self.mem = mem
        self.device = device
        self.base = base

    @property
    def shape(self) -> tuple[int, ...]:
        return self.mem.shape

    @property
    def dtype(self) -> np.dtype:
        return self.mem.dtype

    def __repr__(self) -> str:
        return f"<QBuf {self.mem.dtype}{self.mem.shape} on {self.device}>"


class DeviceQueue:
    """A thread running work items in order; ``issued``/``completed`` count them (markers are counts)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._items: _queue.SimpleQueue[Callable[[], None]] = _queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self.issued = 0
        self.completed = 0

    def enqueue(self, work: Callable[[], None]) -> int:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            self.issued += 1
            self._items.put(work)
            return self.issued

    def _loop(self) -> None:
        np.seterr(all="ignore")
        while True:
            work = self._items.get()
            try:
                work()
            except BaseException:  # noqa: BLE001 - items keep their own errors
                pass
            del work
            with self._cond:
                self.completed += 1
                self._cond.notify_all()

    def wait_reached(self, count: int) -> None:
        if self.completed >= count:
            return
        with self._cond:
            while self.completed < count:
                self._cond.wait(0.05)


class Marker:
    __slots__ = ("queue", "count")

    def __init__(self, queue: DeviceQueue, count: int) -> None:
        self.queue, self.count = queue, count


class Outcome:
    """A work item's error, handed to nda as the op's check."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def __call__(self) -> BaseException | None:
        return self.error


def _device_mem(value: Any) -> Any:
    if isinstance(value, QBuf):
        return value.mem
    if value.__class__ in (tuple, list):
        return value.__class__(_device_mem(v) for v in value)
    return value


def _basic(key: Any) -> bool:
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key)


def _clip_key(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """``key`` with its integer index arrays clipped into their axis (an unchecked gather)."""
    consumed = sum(
        1
        if not (k is None or k is Ellipsis) and not (isinstance(k, np.ndarray) and k.dtype == bool)
        else (k.ndim if isinstance(k, np.ndarray) else 0)
        for k in key
    )
    out, axis = [], 0
    for k in key:
        if k is None:
            out.append(k)
        elif k is Ellipsis:
            out.append(k)
            axis += len(shape) - consumed
        elif isinstance(k, np.ndarray) and k.dtype == bool:
            out.append(k)
            axis += k.ndim
        elif isinstance(k, np.ndarray):
            n = shape[axis]
            out.append(np.clip(k, -n, n - 1) if n else k)
            axis += 1
        else:
            out.append(k)
            axis += 1
    return tuple(out)


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(a) == 1:
        return b[:-2] + b[-1:]
    if len(b) == 1:
        return a[:-1]
    return np.broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])


class QueueMutant:
    """The backend (see the module docstring); ``bug`` is one of :data:`BUGS` or None."""

    api_version = "1.4"
    buffer_type = QBuf
    fallback_to_host = True
    in_order_queues = True

    def __init__(self, bug: str | None, name: str | None = None) -> None:
        assert bug is None or bug in BUGS, bug
        self.bug = bug
        self.name = name or f"mutq_{bug or 'ok'}"
        self.device_types = (self.name,)
        self._queues = {nda.Device(self.name, i): DeviceQueue(f"{self.name}{i}") for i in range(2)}
        self._side = {d: DeviceQueue(f"{self.name}{d.index}-side") for d in self._queues}

    # ------------------------------------------------------------------ identity, memory, movement
    def devices(self) -> list[Any]:
        return [nda.backends.DeviceInfo(d, f"queue mutant ({self.bug or 'correct'})", 1 << 30) for d in self._queues]

    def device_of(self, buf: QBuf) -> nda.Device:
        return buf.device

    def buffer_owner(self, buf: QBuf) -> QBuf:
        return buf.base if buf.base is not None else buf

    def to_host(self, buf: QBuf) -> np.ndarray:
        return np.array(buf.mem, copy=True)  # nda waited for the marker of the work that wrote it

    def from_host(self, host: np.ndarray, device: nda.Device, out: QBuf | None = None) -> QBuf:
        data = np.array(host, copy=True)
        if out is None:
            if self.bug != "host_read_at_call":
                return QBuf(data, device)
            buf = QBuf(np.zeros(data.shape, data.dtype), device)

            def upload() -> None:
                time.sleep(UPLOAD_SECONDS)
                buf.mem[...] = data

            self._queues[device].enqueue(upload)
            return buf
        if self.bug == "eager_write_back":
            out.mem[...] = data  # BUG: written now, ahead of the work queued on ``out``
            return out

        def write() -> None:
            out.mem[...] = data

        self._queues[device].enqueue(write)
        return out

    def copy_to_device(self, buf: QBuf, device: nda.Device) -> QBuf:
        src, dst = self._queues[buf.device], self._queues[device]
        ready = src.issued
        out = QBuf(np.zeros(buf.mem.shape, buf.mem.dtype), device)
        wait = self.bug != "copy_no_wait"  # BUG: the copy does not wait for the source's work

        def copy() -> None:
            if wait:
                src.wait_reached(ready)
            out.mem[...] = buf.mem

        copied = dst.enqueue(copy)
        src.enqueue(lambda: dst.wait_reached(copied))  # the source waits for the copy
        return out

    # ------------------------------------------------------------------ queues (backend API 1.3)
    def record_marker(self, device: nda.Device) -> Marker:
        q = self._queues[device]
        return Marker(q, q.issued)

    def wait_marker(self, device: nda.Device, marker: Marker) -> None:
        q = self._queues[device]
        if marker.queue is not q:
            q.enqueue(lambda: marker.queue.wait_reached(marker.count))

    def synchronize_marker(self, marker: Marker) -> None:
        marker.queue.wait_reached(marker.count)

    def marker_reached(self, marker: Marker) -> bool:
        return marker.queue.completed >= marker.count

    def synchronize(self, device: nda.Device) -> None:
        q = self._queues[device]
        q.wait_reached(q.issued)

    # ------------------------------------------------------------------ kernels
    def register(self, register_kernel: Callable[..., None]) -> None:
        for op in NATIVE_OPS:
            decl = CATALOG[op]
            register_kernel(op, decl.supported_dtypes, self._kernel(decl))

    def _kernel(self, decl: Any) -> Callable[..., Any]:
        backend = self
        op = decl.name
        reference = decl.reference

        def kernel(*args: Any, **kwargs: Any) -> Any:
            device = kwargs.get("device") if op in _CREATION else next(a for a in _flat(args) if isinstance(a, QBuf)).device
            main = backend._queues[device]
            outcome = Outcome()
            if op == "setitem":
                return Deferred(None, backend._setitem(main, outcome, *args))
            if op == "getitem" and _basic(args[1]):
                view = reference(args[0].mem, args[1])  # a view is made at the call: no work item
                scalar = not isinstance(view, np.ndarray)  # NumPy gives a scalar: x[1] of a 1-d array
                if isinstance(view, np.ndarray) and (view.size == 0 or np.shares_memory(view, args[0].mem)):
                    return QBuf(view, device, args[0].base or args[0])
                if scalar and backend.bug == "zero_d_view":  # BUG: x[1] of a 1-d array as a 0-d view
                    return QBuf(args[0].mem[args[1] + (Ellipsis,)], device, args[0].base or args[0])
            if op == "exp" and backend.bug == "host_read_at_call":
                with np.errstate(all="ignore"):  # BUG: reads the input's memory now, not after its producer
                    return QBuf(np.exp(args[0].mem), device)
            shape, dtype = backend._shape(decl, args, kwargs)
            out = QBuf(np.zeros(shape, dtype), device)
            kw = {k: (_CPU if k == "device" else v) for k, v in kwargs.items()}

            def work() -> None:
                try:
                    a = _device_mem(args)
                    if op == "getitem" and backend.bug == "no_bounds_check":
                        a = (a[0], _clip_key(a[1], a[0].shape))  # BUG: no bounds check
                    with np.errstate(all="ignore"):
                        out.mem[...] = reference(*a, **_device_mem(kw))
                except BaseException as err:  # noqa: BLE001 - the op's error, read by its check
                    outcome.error = err

            if op == "matmul" and backend.bug == "side_stream":
                side = backend._side[device]
                # BUG: the side queue should first wait for the main queue (its inputs' producers)
                done = side.enqueue(work)
                main.enqueue(lambda: side.wait_reached(done))  # joined back: later work sees the result
            else:
                main.enqueue(work)
            return Deferred(out, outcome)

        kernel.__name__ = kernel.__qualname__ = f"mutq_{op}"
        return kernel

    def _shape(self, decl: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[int, ...], np.dtype]:
        """The output's shape and dtype, known at the call (from the inputs' shapes; masks were synced by nda)."""
        if decl.name in _CREATION:
            probe = decl.reference(*args, **{k: (_CPU if k == "device" else v) for k, v in kwargs.items()})
            return np.shape(probe), np.asarray(probe).dtype
        if decl.name == "matmul":
            return _matmul_shape(args[0].shape, args[1].shape), np.result_type(args[0].mem, args[1].mem)
        if decl.family in ("unary", "binary") and not kwargs:  # element-wise: shapes broadcast; the dtype from 0-d stand-ins
            shape = np.broadcast_shapes(*(a.shape for a in args if isinstance(a, QBuf)))
            with np.errstate(all="ignore"):
                small = decl.reference(*(np.zeros((), a.mem.dtype) if isinstance(a, QBuf) else a for a in args))
            return shape, np.asarray(small).dtype

        def stand_in(value: Any) -> Any:
            if isinstance(value, QBuf):
                return np.array(value.mem) if value.mem.dtype == bool else np.zeros(value.mem.shape, value.mem.dtype)
            if value.__class__ in (tuple, list):
                return value.__class__(stand_in(v) for v in value)
            return value

        with np.errstate(all="ignore"):
            probe = np.asarray(decl.reference(*stand_in(args), **{k: (_CPU if k == "device" else stand_in(v)) for k, v in kwargs.items()}))
        return probe.shape, probe.dtype

    def _setitem(self, main: DeviceQueue, outcome: Outcome, target: QBuf, key: tuple[Any, ...], value: Any) -> Outcome:
        bug = self.bug

        def work() -> None:
            try:
                k = _device_mem(key)
                if bug == "no_bounds_check":
                    k = _clip_key(k, target.mem.shape)  # BUG: no bounds check
                target.mem[k] = _device_mem(value)
            except BaseException as err:  # noqa: BLE001
                outcome.error = err

        main.enqueue(work)
        return outcome


def _flat(args: tuple[Any, ...]) -> Any:
    for a in args:
        if a.__class__ in (tuple, list):
            yield from _flat(a)
        else:
            yield a


ok = QueueMutant(None)
copy_no_wait = QueueMutant("copy_no_wait")
eager_write_back = QueueMutant("eager_write_back")
no_bounds_check = QueueMutant("no_bounds_check")
side_stream = QueueMutant("side_stream")
zero_d_view = QueueMutant("zero_d_view")
host_read_at_call = QueueMutant("host_read_at_call")
#: A second copy_no_wait backend (another device type), to stand for a witness that fails too.
copy_no_wait_twin = QueueMutant("copy_no_wait", "mutq_copy_no_wait_twin")
