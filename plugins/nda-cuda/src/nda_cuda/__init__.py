"""nda-cuda: NVIDIA GPUs for nda through CuPy, as its own distribution.

The entry point ``cuda = "nda_cuda:backend"`` names :data:`backend`. Importing this module
imports neither CuPy nor a CUDA library: nda imports it on first use of ``device="cuda"``,
and CuPy is imported by :meth:`CudaBackend.devices`, the probe nda runs before anything
else. A machine without CuPy, without a driver or without a GPU makes the probe raise (or
return no device); nda then lists the backend as *unavailable* with that reason and
everything else keeps working.

The contract (``nda.backends.contract``, API 1.2), member by member:

* devices: one ``cuda:i`` per visible GPU with its name, memory and compute capability;
* buffers: ``cupy.ndarray`` itself (no wrapper), so DLPack exchange with CuPy and PyTorch
  is zero-copy and a kernel call costs CuPy's call plus a stream context;
* kernels: derived from the op catalog by name (:mod:`nda_cuda._kernels`, over
  array-api-compat's cupy namespace), each run on the device's stream with the device
  current; ``fallback_to_host = True`` covers every op CuPy has no fitting function for;
  ``nda.random``'s Philox ops run as a CUDA kernel of their own (:mod:`nda_cuda._philox`),
  bit-identical to the cpu kernels;
* layouts: csr on ``cupyx.scipy.sparse`` (:mod:`nda_cuda._sparse`): storage, converters and
  cuSPARSE kernels; other ops on csr arrays take nda's layout fallback on the GPU;
* memory: CuPy's memory pool (``memory_stats``, ``release_all`` -> ``free_all_blocks``);
  an allocation failure is a ``MemoryError`` naming the device, the request and what is free;
* data movement: host <-> device copies on the device's stream; direct device-to-device
  copies ordered by events on both streams; DLPack export (``cupy.from_dlpack(x)``,
  ``torch.from_dlpack(x)``) and import: ``dlpack_device_types``/``import_dlpack``, so that
  ``nda.from_dlpack`` takes CUDA arrays of CuPy, PyTorch and JAX without a copy; memory shared
  so is ordered with the other library's current streams at each op, both ways, with events
  (:mod:`nda_cuda._shared`): writes on either side are seen by the other's next op;
* numerics: ``flushes_subnormals = ("float32", "complex64")`` (CuPy compiles with ``-ftz=true``),
  and :mod:`nda_cuda._workarounds` where CuPy 14.2 differs from NumPy;
* element-wise kernels of its own (:mod:`nda_cuda._elementwise`, :mod:`nda_cuda._codegen`):
  the element-wise ops, ``where`` and ``astype`` on bool, int32, int64, float32, float64 and
  complex64 arrays that are contiguous or broadcast from contiguous ones run generated
  kernels with 16-byte vector accesses (they keep float32 subnormals; the declaration stays
  while the ops they do not serve flush); everything else runs CuPy's kernels;
* execution (backend API 1.3, in-order queues): one non-blocking stream per device is its
  queue, CUDA events are the markers (:mod:`nda_cuda._streams`): ``record_marker``,
  ``wait_marker`` (``cudaStreamWaitEvent``), ``synchronize_marker``, ``marker_reached``,
  and timing events for nda's profiler (``record_timed_marker``, ``marker_time``); nda issues
  every op at once, records an event only where something waits, and the host waits only
  when it reads data, for exactly the version it reads; ``to_host`` then copies on a reader
  stream of its own (the newest version of a queue: ``to_host_in_order``, a copy on the
  compute stream itself, no event). An
  integer-array index is bounds-checked on the device: the flag is copied to pinned host
  memory without a sync and read when the op's marker is reached (``nda.engine.Deferred``).
* subgraphs (backend API 1.4): ``partitioner`` claims chains of element-wise ops of a
  hybridized function and runs each as one generated ``cupy.ElementwiseKernel``
  (:mod:`nda_cuda._fusion`);
* buffer reuse: CuPy's memory pool hands a freed block out again only in the order of the
  stream that freed it; nda-cuda allocates, computes and frees on the device's one stream,
  so a block freed while a kernel still reads it is reused only after that kernel, and a
  copy to another GPU makes the source stream wait for the copy (``copy_to_device``).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from nda import Device
from nda.backends import DeviceInfo

__all__ = ["CudaBackend", "CudaUnavailableError", "backend", "from_dlpack"]

_KDLCUDA = 2  # DLPack device type of CUDA memory
_KDLCUDA_MANAGED = 13  # ... and of CUDA managed memory


class CudaUnavailableError(RuntimeError):
    """No usable GPU: CuPy is missing, the driver is missing or too old, or there is no device."""


class CudaBackend:
    """NVIDIA GPUs through CuPy (see the module docstring)."""

    name = "cuda"
    api_version = "1.4"
    device_types = ("cuda",)
    fallback_to_host = True
    in_order_queues = True
    #: CuPy (14.2) compiles every kernel with -ftz=true: float32 (and complex64) subnormal inputs
    #: and results are zeros. Declared rather than worked around (see nda_cuda._workarounds).
    flushes_subnormals = ("float32", "complex64")

    def __init__(self) -> None:
        self._cupy: Any = None
        self._streams: list[Any] = []
        self._devices: dict[int, Device] = {}  # CUDA device id -> nda Device
        self._lock = threading.Lock()
        #: op -> why it has no CuPy kernel (those run through the host fallback); set by register().
        self.unmapped: dict[str, str] = {}
        #: op -> the CuPy function (or nda_cuda override) its kernel calls; set by register().
        self.sources: dict[str, str] = {}
        #: op -> the csr kernel registered for it (:mod:`nda_cuda._sparse`); set by register().
        self.csr_sources: dict[str, str] = {}
        #: why csr is not registered, when it is not.
        self.csr_unavailable = ""
        #: nda-cuda's generated element-wise kernels (:mod:`nda_cuda._elementwise`), None when off.
        self.elementwise: Any = None
        #: buffers shared with other libraries through DLPack (:mod:`nda_cuda._shared`); made with the streams.
        self._shared: Any = None

    # ------------------------------------------------------------------ processor info
    def _import_cupy(self) -> Any:
        if self._cupy is None:
            try:
                import cupy
            except Exception as err:  # noqa: BLE001 - ImportError, or a broken CUDA library underneath
                raise CudaUnavailableError(
                    f"CuPy cannot be imported ({type(err).__name__}: {err}); install the CuPy wheel for your CUDA, e.g. pip install cupy-cuda12x"
                ) from err
            self._cupy = cupy
        return self._cupy

    def devices(self) -> list[DeviceInfo]:
        cupy = self._import_cupy()
        runtime = cupy.cuda.runtime
        try:
            count = runtime.getDeviceCount()
        except runtime.CUDARuntimeError as err:
            raise CudaUnavailableError(_probe_reason(cupy, err)) from err
        infos = []
        for i in range(count):
            props = runtime.getDeviceProperties(i)
            name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            infos.append(
                DeviceInfo(
                    Device("cuda", i),
                    name,
                    int(props["totalGlobalMem"]),
                    compute_capability=f"{props['major']}.{props['minor']}",
                    multiprocessors=int(props["multiProcessorCount"]),
                    stream="cuda",
                )
            )
        return infos  # [] when CUDA sees no GPU: nda reports "no device found"

    def _ensure_streams(self) -> list[Any]:
        if not self._streams:
            with self._lock:
                if not self._streams:
                    from ._shared import SharedMemory
                    from ._streams import DeviceStream

                    cupy = self._import_cupy()
                    count = cupy.cuda.runtime.getDeviceCount()
                    self._devices = {i: Device("cuda", i) for i in range(count)}
                    self._shared = SharedMemory(cupy, cupy.ndarray)
                    self._streams = [DeviceStream(cupy, i) for i in range(count)]
        return self._streams

    def _stream(self, device: Device) -> Any:
        streams = self._ensure_streams()
        if not 0 <= device.index < len(streams):
            raise ValueError(f"{device} does not exist; cuda devices: {', '.join(f'cuda:{i}' for i in range(len(streams)))}")
        return streams[device.index]

    @property
    def buffer_type(self) -> type:
        return self._import_cupy().ndarray  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ kernels
    def register(self, register_kernel: Callable[..., None]) -> None:
        from nda.ops import CATALOG

        from . import _kernels

        cupy = self._import_cupy()
        self._ensure_streams()
        try:
            import array_api_compat.cupy as namespace
        except ImportError:
            namespace = None  # CuPy's own names only; ops named differently fall back to the host
        from . import _einsum, _philox  # kernels of their own (_philox: nda.random's CUDA kernel, NVRTC)
        from ._elementwise import Generator, NvrtcCompiler, from_environment

        settings = from_environment()
        self.elementwise = Generator(cupy, NvrtcCompiler(cupy, settings.ftz), settings) if settings.enabled else None
        own = {*_philox.OPS, *_einsum.OPS}  # ops with kernels of their own, not derived from CuPy by name
        kernels, self.unmapped = _kernels.build(cupy, namespace, {n: d for n, d in CATALOG.items() if n not in own}, generator=self.elementwise)
        for spec in kernels:
            register_kernel(spec.op, CATALOG[spec.op].supported_dtypes, self._on_device(spec.fn, spec.source))
            self.sources[spec.op] = spec.source
        self._register_csr(register_kernel, {spec.op: spec.fn for spec in kernels})
        _philox.register(register_kernel, _philox.PhiloxKernels(cupy, _philox.cupy_module(cupy)), self._on_device)
        self.sources.update({op: "nda_cuda._philox (CUDA)" for op in _philox.OPS})
        _einsum.register(register_kernel, cupy, self._on_device)
        self.sources["einsum"] = "cupy.einsum (nda_cuda._einsum)"

    def _register_csr(self, register_kernel: Callable[..., None], strided: dict[str, Callable[..., Any]]) -> None:
        """The csr layout on cupyx.scipy.sparse (:mod:`nda_cuda._sparse`)."""
        from nda.backends import cpu_sparse

        from . import _sparse

        try:
            import cupyx.scipy.sparse as sparse
        except ImportError as err:  # a CuPy build without cupyx.scipy: csr arrays then stay on other devices
            self.csr_sources = {}
            self.csr_unavailable = f"cupyx.scipy.sparse cannot be imported ({err})"
            return
        layer = _sparse.CsrLayer(self._cupy, sparse, strided)

        def to_host(buf: Any) -> Any:
            return cpu_sparse.csr(self.to_host(buf.data), self.to_host(buf.indices), self.to_host(buf.indptr), tuple(buf.shape))

        def from_host(host: Any, device: Device) -> Any:
            parts = [self.from_host(a, device) for a in (host.data, host.indices, host.indptr)]
            ds = self._stream(device)
            with ds.device, ds.stream:
                return layer.csr(*parts, tuple(host.shape))

        self.csr_sources = _sparse.register(register_kernel, layer, to_host=to_host, from_host=from_host, wrap=self._on_device)

    def _on_device(self, fn: Callable[..., Any], source: str) -> Callable[..., Any]:
        """Run ``fn`` with the buffers' device current and that device's stream as CuPy's stream; an op on
        memory shared with another library is ordered with its streams (:mod:`nda_cuda._shared`)."""
        from ._shared import wrap_kernel

        ndarray = self._cupy.ndarray
        kernel = wrap_kernel(
            fn,
            source,
            self._streams,
            self._shared,
            lambda args, kwargs: _device_index(args, kwargs, ndarray),
            self._cupy.cuda.memory.OutOfMemoryError,
            self._out_of_memory,
        )
        kernel.__module__ = __name__
        return kernel

    def _out_of_memory(self, index: int, err: BaseException) -> MemoryError:
        pool = self._cupy.get_default_memory_pool()
        with self._cupy.cuda.Device(index):
            free, total = self._cupy.cuda.runtime.memGetInfo()
            used, held = pool.used_bytes(), pool.total_bytes()
        return MemoryError(
            f"cuda:{index}: {err}; the device has {free:,} of {total:,} bytes free, nda/CuPy's pool holds {held:,} bytes "
            f"({used:,} in use by arrays). Free arrays on cuda:{index}, or call nda.backends.release_all('cuda:{index}')."
        )

    def ensure_buffer(self, result: Any) -> Any:
        """A 0-d result as a device array (CuPy returns arrays already; scalars from elsewhere are moved).

        nda calls it for every 0-d result (``sum(x)``): a CuPy array returns at once."""
        cupy = self._cupy
        if result.__class__ is cupy.ndarray or isinstance(result, cupy.ndarray):
            return result
        from ._workarounds import to_device

        return to_device(cupy, result)

    # ------------------------------------------------------------------ data movement
    def to_host(self, buf: Any) -> Any:
        # nda has waited for the event of the work that wrote ``buf`` (backend API 1.3); the copy
        # runs on the reader stream, so it does not wait for what came after that work (a buffer
        # shared with another library: after that library's work too, nda_cuda._shared).
        from ._shared import to_host

        return to_host(self._stream(self.device_of(buf)), self._shared, buf, False)

    def to_host_in_order(self, buf: Any) -> Any:
        """A host copy on the device's compute stream, after everything enqueued on it: nda reads
        the newest version of a queue this way, with no event (one stream synchronize, as
        ``float(cupy_array)``). CuPy makes a non-contiguous buffer contiguous on that stream too."""
        from ._shared import to_host

        return to_host(self._stream(self.device_of(buf)), self._shared, buf, True)

    def from_host(self, host: Any, device: Device, out: Any = None) -> Any:
        import numpy as np

        from ._shared import write
        from ._workarounds import to_device

        ds = self._stream(device)
        host = np.asarray(host)
        try:
            with ds.device, ds.stream:
                # Pageable memory: staged, so ``host`` may change afterwards. Not cupy.array(host):
                # CuPy 14.2 fills a 0-d array with a memset when it equals zero, losing -0.0.
                data = to_device(self._cupy, host)
            if out is None:
                return data
            return write(ds, self._shared, out, data)  # a shared ``out``: ordered with the other library
        except self._cupy.cuda.memory.OutOfMemoryError as err:
            raise self._out_of_memory(device.index, err) from None

    def device_of(self, buf: Any) -> Device:
        try:  # a CuPy array: its memory pointer knows the device (every op asks: no Device() parsing)
            return self._devices[buf.data.device_id]
        except (AttributeError, KeyError):
            pass
        if hasattr(buf, "indptr"):  # a csr buffer: where its values live
            buf = buf.data
        return Device("cuda", buf.device.id)

    def copy_to_device(self, buf: Any, device: Device) -> Any:
        """Direct GPU-to-GPU copy (peer-to-peer where the GPUs allow), ordered on both streams.

        The target stream waits for an event after the source's pending work; the source
        stream then waits for the copy, so a later write to the source (or reuse of its
        memory by the pool) cannot overtake it: the copy is a snapshot taken at the call.
        """
        src = self._stream(self.device_of(buf))
        dst = self._stream(device)
        cupy = self._cupy
        foreign = self._shared.foreign(src) if self._shared.holds(buf) else []  # memory another library shares
        src.wait_for(foreign)
        try:
            with src.device, src.stream:
                source = cupy.ascontiguousarray(buf)
                ready = src.event()
            with dst.device, dst.stream:
                dst.stream.wait_event(ready)
                out = cupy.empty(source.shape, dtype=source.dtype)
                if source.nbytes:
                    out.data.copy_from_device_async(source.data, source.nbytes, dst.stream)
                copied = dst.event()
            src.stream.wait_event(copied)
            dst.make_wait(foreign)
        except cupy.cuda.memory.OutOfMemoryError as err:
            raise self._out_of_memory(device.index, err) from None
        return out

    def dlpack(self, buf: Any, **kwargs: Any) -> Any:
        """``buf`` for a DLPack consumer (``cupy.from_dlpack(x)``, ``torch.from_dlpack(x)``): CuPy orders the
        consumer's stream after the current (nda's) stream's work; from then on ``buf`` is shared, and
        each op on it is ordered with the other library's streams (:mod:`nda_cuda._shared`)."""
        from ._shared import export

        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        return export(self._stream(self.device_of(buf)), self._shared, buf, kwargs)

    def dlpack_device(self, device: Device) -> tuple[int, int]:
        return (_KDLCUDA, device.index)

    #: DLPack device types nda.from_dlpack routes here: CUDA device memory and CUDA managed memory.
    dlpack_device_types = {_KDLCUDA: "cuda", _KDLCUDA_MANAGED: "cuda"}

    def import_dlpack(self, obj: Any, device: Device) -> Any:
        """``obj``'s memory as a CuPy array (zero-copy; CuPy, PyTorch, JAX, ... CUDA arrays).

        Inside the device's stream context CuPy hands the producer that stream in the DLPack
        handshake (PyTorch and JAX make it wait for their pending work); nda's stream first waits
        for the calling thread's CuPy and PyTorch streams (a CuPy producer sees nda's stream as its
        current one and orders nothing), and the buffer is shared from then on: each op on it is
        ordered with those streams both ways (:mod:`nda_cuda._shared`).
        """
        from ._shared import import_buffer
        from ._workarounds import import_dlpack

        return import_buffer(self._stream(device), self._shared, lambda: import_dlpack(self._cupy, obj))

    # ------------------------------------------------------------------ memory
    def memory_stats(self, device: Device) -> dict[str, int]:
        """CuPy's pool on ``device``: ``in_use`` (by arrays), ``cached`` (held for reuse), the
        device's ``capacity`` and ``device_free``. CuPy's pool keeps no high-water mark, so
        there is no ``peak``."""
        self._stream(device)
        cupy = self._cupy
        pool = cupy.get_default_memory_pool()
        with cupy.cuda.Device(device.index):
            used, held = pool.used_bytes(), pool.total_bytes()
            free, total = cupy.cuda.runtime.memGetInfo()
        return {"in_use": int(used), "cached": int(held - used), "capacity": int(total), "device_free": int(free)}

    def release_all(self, device: Device) -> int:
        ds = self._stream(device)
        ds.synchronize()  # blocks freed by finished work only
        pool = self._cupy.get_default_memory_pool()
        with ds.device:
            before = pool.total_bytes()
            pool.free_all_blocks()
            return int(before - pool.total_bytes())

    # ------------------------------------------------------------------ execution (API 1.3: in-order queues)
    def record_marker(self, device: Device) -> Any:
        return self._stream(device).marker()

    def wait_marker(self, device: Device, marker: Any) -> None:
        ds = self._stream(device)
        if marker.owner is not ds:
            ds.stream.wait_event(marker.event)

    def synchronize_marker(self, marker: Any) -> None:
        with marker.owner.device:
            marker.event.synchronize()

    def marker_reached(self, marker: Any) -> bool:
        return bool(marker.event.done)

    def record_timed_marker(self, device: Device) -> Any:
        """A marker on a timing event (nda's profiler: when each op really ran on the GPU)."""
        return self._stream(device).timed_marker()

    def marker_time(self, marker: Any) -> float | None:
        """When a timed marker was reached, in ``time.perf_counter()`` seconds; None if not (yet)."""
        return marker.time()  # type: ignore[no-any-return]

    def partitioner(self, device: Device) -> Any:
        """Element-wise chains of a hybridized function as one generated kernel each (or one
        ``cupy.ElementwiseKernel`` where the generator does not take the inputs), run on the
        device's stream (backend API 1.4, :mod:`nda_cuda._fusion`)."""
        from ._fusion import CudaPartitioner

        return CudaPartitioner(self._cupy, lambda fn: self._on_device(fn, "fused"), generator=self.elementwise)

    def buffer_owner(self, buf: Any) -> Any:
        base = getattr(buf, "base", None)  # csr buffers have none: they are never views
        while base is not None and getattr(base, "base", None) is not None:
            base = base.base
        return buf if base is None else base

    def synchronize(self, device: Device) -> None:
        self._stream(device).synchronize()

    def __repr__(self) -> str:
        state = f"{len(self._streams)} device(s)" if self._streams else "not probed"
        return f"<nda-cuda backend (CuPy): {state}>"


def _device_index(args: tuple[Any, ...], kwargs: dict[str, Any], ndarray: type) -> int:
    device = kwargs.get("device")
    if device is not None:
        return int(device.index)
    for value in args:
        for item in value if value.__class__ in (tuple, list) else (value,):
            if hasattr(item, "indptr"):  # a csr buffer
                item = item.data
            if isinstance(item, ndarray):
                return int(item.device.id)
    raise TypeError("a cuda kernel was called without a cuda buffer or device")


def _probe_reason(cupy: Any, err: BaseException) -> str:
    """A sentence for nda.backends.status(): what CUDA said, and which CuPy/CUDA was asked."""
    try:
        runtime = cupy.cuda.runtime.runtimeGetVersion()
        built = f"CUDA runtime {runtime // 1000}.{runtime % 1000 // 10}"
    except Exception:  # noqa: BLE001
        built = "its CUDA runtime"
    code, _, text = str(err).partition(": ")
    text = text or code
    return f"no usable NVIDIA GPU: {text} ({code}; CuPy {cupy.__version__} with {built})"


def from_dlpack(obj: Any, /) -> Any:
    """A cuda nda array sharing memory with ``obj`` (a CuPy array, a CUDA PyTorch tensor, ...).

    The same as ``nda.from_dlpack(obj)`` (which routes CUDA producers here through
    :attr:`CudaBackend.dlpack_device_types`), kept for code written before that; it refuses
    data that is not in CUDA memory.
    """
    import nda

    if not hasattr(obj, "__dlpack_device__"):
        raise TypeError(f"from_dlpack() expects an object with __dlpack__ and __dlpack_device__, got {type(obj).__name__}")
    kind, _ = obj.__dlpack_device__()
    if int(kind) not in CudaBackend.dlpack_device_types:
        raise ValueError(f"from_dlpack(): the data is on DLPack device type {int(kind)}, not CUDA ({_KDLCUDA}); use nda.from_dlpack for other data")
    return nda.from_dlpack(obj)


backend = CudaBackend()
