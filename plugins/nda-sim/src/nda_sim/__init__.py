"""nda-sim: a simulated accelerator backend for nda, and the template for writing one.

The backend object ``backend`` is what the entry point ``sim = "nda_sim:backend"`` names.
It follows nda's backend contract (``nda.backends.contract``):

* identity: ``name``, ``api_version``, ``device_types``;
* processor info: ``devices()`` (``NDA_SIM_DEVICES`` devices, ``NDA_SIM_CAPACITY`` bytes each);
* memory: a capacity-limited allocator per device with a cache of freed blocks
  (``memory_stats``, ``release_all``); exceeding the capacity raises ``MemoryError``;
* data movement: ``to_host`` / ``from_host`` (its buffers are opaque ``SimBuffer``
  handles), ``copy_to_device`` between sim devices;
* kernels: native kernels for a subset of the catalog, each enqueued on the device's
  stream thread (they return at once, with the op's outcome as its check), and
  ``fallback_to_host = True`` for the rest;
* layouts: csr buffers in sim memory with converters and a few native csr kernels
  (``_sparse``); other ops on csr arrays take nda's layout fallback;
* execution (backend API 1.3): ``in_order_queues = True``; the stream thread is the
  device's queue and a marker is a position on its timeline: ``record_marker``,
  ``wait_marker`` (another stream's thread waits, never the host), ``synchronize_marker``,
  ``marker_reached``; timed markers for nda's profiler (``record_timed_marker``,
  ``marker_time``: the stream stamps when it reaches them); ``buffer_owner`` for views;
  ``synchronize``. Copies between sim devices are ordered by markers on both streams,
  without waiting on the host; ``to_host_in_order`` (a read after everything enqueued, for a
  read of the newest version without a marker).
* fork and exit: the streams pause at ``os.fork`` (through ``nda.engine.register_at_fork``)
  and restart in the child with what was queued (``continues_after_fork``); at exit they
  finish what was queued, bounded, and say so when that lasts.

Kernels reuse the catalog's NumPy reference implementations on the simulated device
memory, so the simulation is exact and any difference from cpu is a bug in the plumbing.
"""

from __future__ import annotations

import atexit
import math
import sys
import time
from operator import attrgetter
from typing import Any, Callable

import numpy as np
from numpy.lib.array_utils import byte_bounds
from nda import Device
from nda.backends import DeviceInfo
from nda.backends.contract import env_int  # nda's one parser of NDA_* variables
from nda.engine import QUIESCE_TIMEOUT, Deferred, register_at_fork
from nda.ops import CATALOG

from . import _flush
from ._device import Allocator, InputFailed, Marker, SimBuffer, Stream, check_host_read, read, read_target, submit, track

__all__ = ["SimBackend", "SimBuffer", "backend", "NATIVE_OPS"]

#: View ops whose result is always a view of their first argument (``getitem`` with a basic key:
#: no buffer in it); ``reshape`` copies when the strides require it.
_ALWAYS_VIEWS = frozenset({"getitem", "permute_dims", "expand_dims", "squeeze", "flip", "broadcast_to"})

#: The most simulated devices ``NDA_SIM_DEVICES`` may ask for (a node has a handful of GPUs; a
#: count like 10**20 would build a device list forever).
MAX_DEVICES = 64

_PREALLOCATED = {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"}
_OTHER_NATIVE = {
    "sum",
    "prod",
    "mean",
    "max",
    "min",
    "arange",
    "asarray",
    "astype",
    "reshape",
    "permute_dims",
    "expand_dims",
    "squeeze",
    "flip",
    "broadcast_to",
    "getitem",
    "setitem",
    "matmul",
    "vecdot",
    "einsum",
    "where",
    # nda.random: the Philox stream, computed on the device (its values do not depend on the device)
    "random.philox_uniform",
    "random.philox_normal",
    "random.philox_exponential",
    "random.philox_integers",
    # what a notebook session does every day (issue 37: standardise, PCA, k-means warned ~10 times)
    "eye",
    "linspace",
    "std",
    "var",
    "argmin",
    "argmax",
    "all",
    "any",
    "count_nonzero",
    "cumulative_sum",
    "cumulative_prod",
    "concat",
    "stack",
    "tile",
    "repeat",
    "roll",
    "tril",
    "triu",
    "clip",
    "take",
    "take_along_axis",
    "sort",
    "argsort",
    "searchsorted",
    "tensordot",
    "linalg.cholesky",
    "linalg.cross",
    "linalg.det",
    "linalg.diagonal",
    "linalg.eigh",
    "linalg.eigvalsh",
    "linalg.inv",
    "linalg.matrix_norm",
    "linalg.matrix_power",
    "linalg.outer",
    "linalg.qr",
    "linalg.slogdet",
    "linalg.solve",
    "linalg.svd",
    "linalg.svdvals",
    "linalg.trace",
    "linalg.vector_norm",
    "fft.fft",
    "fft.ifft",
    "fft.rfft",
    "fft.irfft",
    "fft.fftn",
    "fft.ifftn",
    "fft.rfftn",
    "fft.irfftn",
    "random.philox_gamma",
    "random.philox_beta",
    "random.philox_standard_t",
    "random.philox_lognormal",
    "random.philox_poisson",
    "random.philox_binomial",
}
#: The ops with a native sim kernel; everything else runs through nda's host fallback: the ops whose
#: result's shape depends on the data (nonzero, unique_*: they read their input on the host anyway),
#: and a few others (isin, linalg.eig, eigvals, pinv, matrix_rank, fft.hfft, ihfft) that keep the
#: fallback route, which a plugin's missing ops take, exercised on a device with a queue.
NATIVE_OPS = sorted(_PREALLOCATED | _OTHER_NATIVE | {n for n, d in CATALOG.items() if d.family in ("unary", "binary")})
_CPU = Device("cpu", 0)
_KDL_EXT_DEV = 12  # DLPack's kDLExtDev ("reserved extension device"): what a simulated device reports


class SimBackend:
    """The simulated accelerator (see the module docstring)."""

    name = "sim"
    api_version = "1.4"
    device_types = ("sim",)
    fallback_to_host = True
    buffer_type = SimBuffer
    in_order_queues = True

    def __init__(self) -> None:
        self.device_count = env_int("NDA_SIM_DEVICES", 2, maximum=MAX_DEVICES)
        self.capacity = env_int("NDA_SIM_CAPACITY", 1 << 30, maximum=sys.maxsize)  # bytes: what NumPy can index
        self.flushes_subnormals = _flush.declared()  # NDA_SIM_FLUSH_SUBNORMALS=1: a GPU's flush-to-zero (_flush)
        self._allocators: dict[Device, Allocator] = {}
        self._streams: dict[Device, Stream] = {}
        self._reset_streams()
        # The stream threads run NumPy (BLAS) calls: at os.fork and at exit none may be inside
        # one (OpenBLAS's fork handler and shutdown wait for it, and the process hangs). Fork
        # hooks go through nda, so that they run after nda has paused its own workers.
        register_at_fork(before=self._pause_streams, after_in_parent=self._resume_streams, after_in_child=self._after_fork_in_child)
        atexit.register(self._flush_at_exit)

    # ------------------------------------------------------------------ processor info
    def devices(self) -> list[DeviceInfo]:
        if self.device_count < 1:
            raise RuntimeError("NDA_SIM_DEVICES is 0: no simulated device")
        return [DeviceInfo(Device("sim", i), "nda simulated accelerator", self.capacity, stream="thread") for i in range(self.device_count)]

    def _allocator(self, device: Device) -> Allocator:
        alloc = self._allocators.get(device)
        if alloc is None:
            alloc = self._allocators[device] = Allocator(device, self.capacity)
        return alloc

    def _stream(self, device: Device) -> Stream:
        return self._streams[device]

    def _reset_streams(self) -> None:
        self._streams = {Device("sim", i): Stream(f"nda-sim{i}-stream") for i in range(self.device_count)}

    def _pause_streams(self) -> None:
        """Before os.fork: no stream starts an item; wait (bounded) for the items running."""
        deadline = time.monotonic() + QUIESCE_TIMEOUT
        for stream in self._streams.values():
            stream.pause(deadline)

    def _resume_streams(self) -> None:
        for stream in self._streams.values():
            stream.resume()

    def _flush_at_exit(self) -> None:
        """At exit: let the streams finish what was enqueued (bounded), so that none is inside
        NumPy when the interpreter shuts down. A read in a later exit handler still works.

        A wait that lasts says so on stderr after :data:`NOTICE_AFTER` seconds (how many work
        items are left, and the bound), as nda does for the kernels its workers run."""
        start = time.monotonic()
        deadline = start + QUIESCE_TIMEOUT
        noticed = False
        for stream in self._streams.values():
            if not stream.started():
                continue
            while not stream.wait_reached(stream.issued, min(deadline, time.monotonic() + 0.25)):
                waited = time.monotonic() - start
                if time.monotonic() >= deadline:
                    _say(f"nda-sim: {stream.name} still running work after {QUIESCE_TIMEOUT:.0f} s at exit; exiting anyway")
                    return
                if waited >= NOTICE_AFTER and not noticed:
                    left = sum(max(0, s.issued - s.completed) for s in self._streams.values())
                    _say(
                        f"nda-sim: exit waits for {left} work item(s) queued on the simulated devices ({waited:.0f} s so far, at most "
                        f"{QUIESCE_TIMEOUT:.0f} s; NDA_QUIESCE_TIMEOUT sets the bound)"
                    )
                    noticed = True

    #: After os.fork, the child's streams run on what the parent had queued (backend contract).
    continues_after_fork = True

    def _after_fork_in_child(self) -> None:
        """The parent's stream threads do not exist here: each stream restarts with a thread of the
        child's own and runs what the parent had queued and not started; an item that was running
        (the fork stopped waiting for it) fails."""
        error = RuntimeError(
            "this array was still being computed on the simulated device when the process forked: its work was running "
            "then, and os.fork() stopped waiting for it after NDA_QUIESCE_TIMEOUT seconds; its value exists only in the parent process"
        )
        for alloc in self._allocators.values():
            alloc.after_fork()
        for stream in self._streams.values():
            stream.restart_after_fork(error)

    # ------------------------------------------------------------------ kernels
    def register(self, register_kernel: Callable[..., None]) -> None:
        for name in NATIVE_OPS:
            decl = CATALOG[name]
            register_kernel(name, decl.supported_dtypes, self._native(decl))
        from . import _sparse

        _sparse.register(self, register_kernel)  # the csr layout (nda.layouts plugin API)

    def _native(self, decl: Any) -> Callable[..., Any]:
        if decl.outputs is not None:
            return self._native_multi(decl)
        reference = _flush.wrap(decl, self.flushes_subnormals)
        mutating = bool(decl.mutates)
        viewing = bool(decl.view)  # x[10:20], x.T, reshape: the result may be a view of args[0]
        preallocated = decl.name in _PREALLOCATED
        is_asarray = decl.name == "asarray"
        backend = self

        def kernel(*args: Any, **kwargs: Any) -> Any:
            # The hot path of every sim op (x + y): lookups inlined, one frame for the buffer, one to enqueue.
            device = kwargs.get("device") if kwargs else None
            if device is None:
                first = args[0] if args else None
                device = first.device if first.__class__ is SimBuffer else _device_of_args(args)
            stream = backend._streams[device]
            alloc = backend._allocators.get(device) or backend._allocator(device)
            out = None if mutating else SimBuffer(device)
            reserved = 0
            if out is not None and (preallocated or is_asarray):
                shape, dtype = (args[0].shape, args[0].dtype) if is_asarray else (args[0], kwargs["dtype"].numpy)
                reserved = alloc.allocate(math.prod(shape) * np.dtype(dtype).itemsize)  # MemoryError here, at the call
                track(out, alloc, reserved)
            elif viewing and isinstance(args[0], SimBuffer) and _surely_views(decl.name, args, kwargs):
                out._base = args[0]._base or args[0]  # a view for sure: its owner is known now, as a CuPy view's .base is

            def work() -> None:
                inputs: list[SimBuffer] = []
                if target is not None:  # an in-place write: the target's earlier failure is nda's to judge
                    host_args = [read_target(target), *(_on_device(a, inputs) for a in args[1:])]
                elif viewing and isinstance(args[0], SimBuffer):  # a view shows what a failed write left; a copy may not
                    inputs.append(args[0])
                    host_args = [read_target(args[0]), *(_on_device(a, inputs) for a in args[1:])]
                else:
                    host_args = [_on_device(a, inputs) for a in args]
                host_kwargs = {k: (_CPU if k == "device" else _on_device(v, inputs)) for k, v in kwargs.items()}
                result = reference(*host_args, **host_kwargs)
                if out is None:
                    if target is not None:
                        target._error = None  # written: the failure an earlier write left here is over
                        if target._base is not None and _spans(target._array, target._base._array):
                            target._base._error = None  # ... and all of the memory it views (x[::-1][...] = 7)
                    return
                result = np.asarray(result)
                if viewing and out is not None and target is None and isinstance(args[0], SimBuffer):
                    failed = args[0]._error or (args[0]._base._error if args[0]._base is not None else None)
                    if failed is not None and not np.may_share_memory(result, host_args[0]):
                        raise InputFailed(failed)  # a copy (reshape, x[[0, 2]]) of a failed buffer fails the same way
                if is_asarray:
                    result = np.array(result, copy=True)  # into the device's own memory
                elif not reserved:
                    owner = next((b for b in inputs if np.may_share_memory(result, b._array)), None)
                    if owner is not None:  # a view: no new memory, keep the owner alive
                        out._base = owner._base or owner
                    else:
                        track(out, alloc, alloc.allocate(result.nbytes))
                out._array = result

            target = args[0] if mutating and isinstance(args[0], SimBuffer) else None
            return Deferred(out, stream.submit(work, out, target))

        kernel.__name__ = kernel.__qualname__ = f"sim_{decl.name}"
        kernel.__module__ = __name__
        return kernel

    def _native_multi(self, decl: Any) -> Callable[..., Any]:
        """The kernel of an op with a fixed number of results (``linalg.eigh``, ``qr``, ``svd``,
        ``slogdet``): one work item fills them all; a failure fails each of them."""
        reference = _flush.wrap(decl, self.flushes_subnormals)
        count = len(decl.outputs)
        backend = self

        def kernel(*args: Any, **kwargs: Any) -> Any:
            device = kwargs.get("device") or _device_of_args(args)
            stream = backend._stream(device)
            alloc = backend._allocator(device)
            outs = tuple(SimBuffer(device) for _ in range(count))

            def work() -> None:
                try:
                    inputs: list[SimBuffer] = []
                    host_args = [_on_device(a, inputs) for a in args]
                    host_kwargs = {k: (_CPU if k == "device" else _on_device(v, inputs)) for k, v in kwargs.items()}
                    results = tuple(np.asarray(r) for r in reference(*host_args, **host_kwargs))
                    for out, result in zip(outs, results):
                        track(out, alloc, alloc.allocate(result.nbytes))
                        out._array = result
                except BaseException as err:
                    for out in outs[1:]:  # the first output gets the error from submit()
                        out._error = err.error if isinstance(err, InputFailed) else err
                    raise

            return Deferred(outs, submit(stream, work, outs[0], more=outs[1:]))

        kernel.__name__ = kernel.__qualname__ = f"sim_{decl.name}"
        kernel.__module__ = __name__
        return kernel

    # ------------------------------------------------------------------ data movement
    def to_host(self, buf: SimBuffer) -> np.ndarray:
        # Backend API 1.3: nda has waited for exactly the work that wrote ``buf`` (its marker);
        # the copy does not wait for what was enqueued after it (as a copy on a second stream).
        # A read nda did not order raises (a real device would return stale memory).
        check_host_read(buf)
        return np.array(buf.wait(), copy=True)

    def to_host_in_order(self, buf: SimBuffer) -> np.ndarray:
        """A host copy after everything enqueued on ``buf``'s stream so far (nda reads the newest
        version of a queue this way, without a marker)."""
        self._stream(buf.device).flush()
        return self.to_host(buf)

    def from_host(self, host: np.ndarray, device: Device, out: SimBuffer | None = None) -> SimBuffer:
        host = np.asarray(host)
        if out is not None:
            data = np.array(host, copy=True)

            def write() -> None:
                read(out)[...] = data

            submit(self._stream(device), write, target=out)
            return out
        buf = SimBuffer(device)
        alloc = self._allocator(device)
        track(buf, alloc, alloc.allocate(host.nbytes))
        buf._array = np.array(host, copy=True)
        buf._at = None  # filled here, on the host
        return buf

    def copy_to_device(self, buf: SimBuffer, device: Device) -> Deferred:
        """Direct sim-to-sim copy, ordered by markers on both streams; the host never waits.

        The target stream waits for the work enqueued on the source so far (what produced
        ``buf``), then copies; the source stream then waits for the copy, so a write the
        caller issues to the source afterwards cannot overtake it (the copy is a snapshot
        taken at the call, as with CUDA events on two streams).
        """
        src = self._stream(buf.device)
        dst = self._stream(device)
        ready = src.marker()
        out = SimBuffer(device)
        alloc = self._allocator(device)

        def copy() -> None:
            src.wait_reached(ready.count)  # this runs on the target's stream thread
            data = np.array(read(buf), copy=True)
            track(out, alloc, alloc.allocate(data.nbytes))
            out._array = data

        outcome = submit(dst, copy, out)
        copied = dst.marker()
        src.enqueue(lambda: dst.wait_reached(copied.count))
        return Deferred(out, outcome)

    #: ``device_of(buf)``: the buffer's device (an attribute getter: no Python frame per op).
    device_of = staticmethod(attrgetter("device"))

    def dlpack(self, buf: SimBuffer, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: bool | None = None) -> Any:
        """DLPack export, as an accelerator does it (CuPy's rules): sim memory is never shared with a
        consumer (it could not order its reads after the sim stream). A host copy
        (``numpy.from_dlpack(x, device="cpu")``, ``dl_device=(kDLCPU, 0)``) is made by nda itself for
        every backend, read-only unless the consumer asks for a copy, and never reaches this method."""
        if dl_device is not None and tuple(dl_device) != self.dlpack_device(buf.device):
            raise BufferError(f"sim arrays are exported to host memory (1, 0) only, not to DLPack device {tuple(dl_device)}")
        raise BufferError(
            f"{buf.device} memory cannot be shared through DLPack; ask for a host copy "
            "(numpy.from_dlpack(x, device='cpu'), or dl_device=(1, 0)), or use x.to_device('cpu')"
        )

    def dlpack_device(self, device: Device) -> tuple[int, int]:
        return (_KDL_EXT_DEV, device.index)  # a simulated device: DLPack's extension device type

    # ------------------------------------------------------------------ memory
    def memory_stats(self, device: Device) -> dict[str, int]:
        return self._allocator(device).stats()

    def release_all(self, device: Device) -> int:
        self._stream(device).drain()
        return self._allocator(device).release_all()

    # ------------------------------------------------------------------ execution (API 1.3: in-order queues)
    def record_marker(self, device: Device) -> Marker:
        return self._stream(device).marker()

    def wait_marker(self, device: Device, marker: Marker) -> None:
        stream = marker.stream
        if stream is not self._stream(device):
            self._stream(device).enqueue(lambda: stream.wait_reached(marker.count))

    def synchronize_marker(self, marker: Marker) -> None:
        marker.stream.wait_reached(marker.count)

    def marker_reached(self, marker: Marker) -> bool:
        return marker.stream.completed >= marker.count

    def record_timed_marker(self, device: Device) -> Marker:
        """A marker that is stamped with the time its stream reaches it (for nda's profiler)."""
        return self._stream(device).timed_marker()

    def marker_time(self, marker: Marker) -> float | None:
        """When a timed marker was reached (``time.perf_counter()``), None if not (yet)."""
        return marker.time

    def partitioner(self, device: Device) -> Any:
        """Element-wise chains of a hybridized function as one op on the stream (API 1.4, ``_fusion``)."""
        from ._fusion import SimPartitioner

        return SimPartitioner(self, device)

    def buffer_owner(self, buf: SimBuffer) -> SimBuffer:
        return buf._base if buf._base is not None else buf

    def synchronize(self, device: Device) -> None:
        self._stream(device).synchronize()

    def __repr__(self) -> str:
        return f"<nda-sim backend: {self.device_count} devices of {self.capacity:,} bytes>"


#: Seconds an exit waits for the streams before it says so on stderr (as nda's engine does).
NOTICE_AFTER = 2.0


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:  # noqa: BLE001 - stderr closed at exit
        pass


def _surely_views(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the view op ``name`` returns a view of ``args[0]`` (known at enqueue): always, for a
    basic key; ``reshape`` of a device array already made and C-contiguous, unless it copies."""
    if name in _ALWAYS_VIEWS:
        return not any(isinstance(k, SimBuffer) for k in _flat(args[1:]))
    if name == "reshape" and not kwargs.get("copy"):
        source = args[0]
        array = source._array if source.ready() else None
        return array is not None and array.flags.c_contiguous
    return False


def _flat(values: Any) -> Any:
    for value in values:
        if value.__class__ in (tuple, list):
            yield from _flat(value)
        else:
            yield value


def _spans(view: Any, base: Any) -> bool:
    """Whether the device array ``view`` covers every element of ``base`` (a write of all of it
    writes all of ``base``): the same size and bytes, no stride 0."""
    if view is None or base is None or view.size != base.size or view.itemsize != base.itemsize:
        return False
    if any(s == 0 and n > 1 for s, n in zip(view.strides, view.shape)):
        return False
    return bool(byte_bounds(view) == byte_bounds(base))


def _on_device(value: Any, inputs: list[SimBuffer]) -> Any:
    """Replace SimBuffers (also inside tuples/lists, e.g. index keys) by their device arrays."""
    if isinstance(value, SimBuffer):
        inputs.append(value)
        return read(value)
    if value.__class__ in (tuple, list):
        return value.__class__(_on_device(v, inputs) for v in value)
    return value


def _device_of_args(args: tuple[Any, ...]) -> Device:
    for value in args:
        for item in value if value.__class__ in (tuple, list) else (value,):
            if isinstance(item, SimBuffer):
                return item.device
    raise TypeError("a sim kernel was called without a sim buffer or device")


backend = SimBackend()
