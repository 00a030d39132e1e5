"""nda-cuda's kernel table built over a model of CuPy 14.2 on NumPy, as a runtime-loaded backend.

Not a GPU test. ``nda_cuda._kernels.build`` takes the array module as a parameter; with
``_cupy_quirks.cupy_model`` (NumPy with the behaviours of CuPy 14.2 that nda's conformance
kit found on an H100: signed zeros lost on 0-d transfers, float32 subnormals flushed,
``hypot`` overflowing near the largest double, CuPy's complex division, ...) and its
Array-API namespace it produces exactly the table the cuda backend builds over CuPy (same
name lookup, same argument adapter, same overrides and workarounds). Running nda's
conformance kit on this device (``cudamirror``) against cpu therefore checks the op ->
function mapping, the calling conventions and every workaround in
``nda_cuda._workarounds`` on any machine. What it cannot check is CuPy itself: that is what
the conformance run on a real GPU is for (``tests/test_cuda.py``).

It builds nda-cuda's csr layer (:mod:`nda_cuda._sparse`) the same way, over the model of
``cupyx.scipy.sparse`` (``_cupy_sparse``: cuSPARSE's complex ``csr + csr`` and its zero-size
limits modelled), with the same dtype limits, and registers nda-cuda's Philox kernels
(``nda.random``) compiled from their CUDA source by the host C compiler (``_philox_host``).
Like the cuda backend it declares ``flushes_subnormals``, and it imports DLPack producers that
say they are on a CUDA device (``dlpack_device_types``) through the model's ``from_dlpack``,
which checks the capsule's device as CuPy does (the model's arrays export capsules of device
type kDLCUDA), so ``nda.from_dlpack``'s routing is tested without a GPU.

Buffers are the model's device arrays (``_cupy_device.DeviceArray``: not NumPy arrays, no
implicit host conversion); every method here does what the cuda backend does with CuPy, with
nda-cuda's own stream code over the model's streams (``_cupy_streams``): its queue is a
non-blocking stream (``nda_cuda._streams.DeviceStream``), its markers the model's events, its
kernels wrapped by ``nda_cuda._shared.wrap_kernel`` and its host copies, host-fallback writes
and DLPack exchanges through ``nda_cuda._shared``, so memory shared with the model's "CuPy"
(the legacy default stream) is ordered as on a GPU. Load with
``nda.backends.load("_cuda_numpy_mirror:backend")``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from _cupy_quirks import FLUSHED, DeviceArray, compat_model, cupy_model, sparse_model

from nda import Device
from nda.backends import DeviceInfo, cpu_sparse
from nda.ops import CATALOG
import _philox_host
from nda_cuda import _einsum, _kernels, _philox, _shared as shared, _sparse
from nda_cuda._shared import SharedMemory, wrap_kernel
from nda_cuda._streams import DeviceStream
from nda_cuda._workarounds import import_dlpack, to_device
from _cupy_streams import cupy_like

DEVICE = Device("cudamirror", 0)
KDLCUDA = 2


class NumpyMirrorBackend:
    name = "cudamirror"
    api_version = "1.4"
    device_types = ("cudamirror",)
    fallback_to_host = True
    buffer_type = DeviceArray
    flushes_subnormals = FLUSHED
    dlpack_device_types = {KDLCUDA: "cudamirror"}
    # Like nda-cuda, a backend with in-order queues (API 1.3), so that its kernels'
    # data-dependent checks (nda.engine.Deferred: index bounds, negative integer powers)
    # run the way they do on a GPU: its queue is a non-blocking stream of the model
    # (``_cupy_streams``), whose writes land in stream order, and its markers are the model's
    # events on it, through nda-cuda's own stream code (``nda_cuda._streams``).
    in_order_queues = True

    def record_marker(self, device: Device) -> Any:
        return self.stream.marker()

    def wait_marker(self, device: Device, marker: Any) -> None:
        if marker.owner is not self.stream:
            self.stream.stream.wait_event(marker.event)

    def synchronize_marker(self, marker: Any) -> None:
        marker.event.synchronize()

    def marker_reached(self, marker: Any) -> bool:
        return bool(marker.event.done)

    def partitioner(self, device: Device) -> Any:
        """nda-cuda's partitioner over the model of CuPy: the fused program runs as the array-module
        code generated from the same instructions as the CUDA kernel (nda_cuda._fusion)."""
        from nda_cuda._fusion import CudaPartitioner

        return CudaPartitioner(cupy_model, self._wrap_fused)

    def _wrap_fused(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return self._wrap(fn, "fused")

    def buffer_owner(self, buf: Any) -> Any:
        base = getattr(buf, "base", None)  # csr buffers have none: they are never views
        while base is not None and getattr(base, "base", None) is not None:
            base = base.base
        return buf if base is None else base

    def __init__(self) -> None:
        self.unmapped: dict[str, str] = {}
        self.sources: dict[str, str] = {}
        #: nda-cuda's stream of the device and its memory shared through DLPack, over the model's streams.
        self.stream = DeviceStream(cupy_like, 0)
        self.shared = SharedMemory(cupy_like, DeviceArray)

    def _wrap(self, fn: Callable[..., Any], source: str) -> Callable[..., Any]:
        """A kernel as nda-cuda wraps it (``nda_cuda._shared.wrap_kernel``): on the device's stream, ordered
        with the model's other streams where its memory is shared."""
        return wrap_kernel(fn, source, [self.stream], self.shared, lambda args, kwargs: 0, _NeverRaised, lambda index, err: err)

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(DEVICE, "nda-cuda kernel table over NumPy")]

    def register(self, register_kernel: Callable[..., None]) -> None:
        own = {*_philox.OPS, *_einsum.OPS}  # as nda-cuda: these ops have kernels of their own
        kernels, self.unmapped = _kernels.build(cupy_model, compat_model, {n: d for n, d in CATALOG.items() if n not in own})
        for spec in kernels:
            register_kernel(spec.op, CATALOG[spec.op].supported_dtypes, self._wrap(spec.fn, spec.source))
            self.sources[spec.op] = spec.source
        # nda-cuda's csr layer over scipy.sparse, as the backend builds it over cupyx.scipy.sparse.
        layer = _sparse.CsrLayer(cupy_model, sparse_model, {spec.op: spec.fn for spec in kernels})

        def to_host(buf: Any) -> Any:
            return cpu_sparse.csr(self.to_host(buf.data), self.to_host(buf.indices), self.to_host(buf.indptr), tuple(buf.shape))

        def from_host(host: Any, device: Device) -> Any:
            parts = [self.from_host(a, device) for a in (host.data, host.indices, host.indptr)]
            with self.stream.stream:
                return layer.csr(*parts, tuple(host.shape))

        self.csr_sources = _sparse.register(register_kernel, layer, to_host=to_host, from_host=from_host, wrap=self._wrap)
        _einsum.register(register_kernel, cupy_model, self._wrap)
        self.sources["einsum"] = "cupy_model.einsum (nda_cuda._einsum)"
        # nda-cuda's Philox kernels (nda.random): its CUDA source compiled by the host C compiler
        # and launched by its own launch code (tests/_philox_host.py); without a C compiler the
        # random ops take the host fallback here.
        if _philox_host.compiler() is not None:
            kernels_ = _philox.PhiloxKernels(cupy_model, _philox_host.HostModule())  # outputs in the model's memory
            _philox.register(register_kernel, kernels_, self._wrap)

    def ensure_buffer(self, result: Any) -> DeviceArray:
        return result if isinstance(result, DeviceArray) else to_device(cupy_model, result)

    def to_host(self, buf: DeviceArray) -> np.ndarray:
        return shared.to_host(self.stream, self.shared, buf, False)  # type: ignore[no-any-return]

    def to_host_in_order(self, buf: DeviceArray) -> np.ndarray:
        return shared.to_host(self.stream, self.shared, buf, True)  # type: ignore[no-any-return]

    def from_host(self, host: Any, device: Device, out: DeviceArray | None = None) -> DeviceArray:
        with self.stream.stream:
            data = to_device(cupy_model, np.asarray(host))  # as the cuda backend copies (cupy.array(host) would drop -0.0)
        if out is None:
            return data
        return shared.write(self.stream, self.shared, out, data)  # type: ignore[no-any-return]

    def import_dlpack(self, obj: Any, device: Device) -> DeviceArray:
        """``obj``'s memory without a copy, as the cuda backend imports it (``cupy.from_dlpack``, the model's)."""
        return shared.import_buffer(self.stream, self.shared, lambda: import_dlpack(cupy_model, obj))  # type: ignore[no-any-return]

    def dlpack(self, buf: Any, **kwargs: Any) -> Any:
        return shared.export(self.stream, self.shared, buf, {k: v for k, v in kwargs.items() if v is not None})

    def dlpack_device(self, device: Device) -> tuple[int, int]:
        return (KDLCUDA, device.index)

    def device_of(self, buf: DeviceArray) -> Device:
        return DEVICE

    def synchronize(self, device: Device) -> None:
        self.stream.synchronize()


class _NeverRaised(Exception):
    """The model has no allocator that runs out of memory."""


backend = NumpyMirrorBackend()


class CodegenMirrorBackend(NumpyMirrorBackend):
    """The same table with nda-cuda's generated element-wise kernels in front (``cudagen``).

    The kernels of the element-wise ops, ``where`` and ``astype`` are wrapped by
    :class:`nda_cuda._elementwise.Generator` exactly as the cuda backend wraps them, with
    the generated CUDA source compiled as host C++ (``tests/_cuda_host_kernels.py``): the
    calls a generated kernel takes run it (thread by thread, a small grid so that the
    grid-stride loops and the tails are exercised), the others run the model of CuPy.
    The generated kernels keep float32 subnormals; the declaration of the model stays, as
    on the GPU, because the ops they do not serve flush.
    """

    name = "cudagen"
    device_types = ("cudagen",)
    dlpack_device_types = {}

    def __init__(self) -> None:
        super().__init__()
        self.generator: Any = None

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(GEN_DEVICE, "nda-cuda generated kernels as host C++, over NumPy")]

    def device_of(self, buf: Any) -> Device:
        return GEN_DEVICE

    def partitioner(self, device: Device) -> Any:
        from nda_cuda._fusion import CudaPartitioner

        return CudaPartitioner(cupy_model, self._wrap_fused, generator=self.generator)

    def register(self, register_kernel: Callable[..., None]) -> None:
        from _cuda_host_kernels import HostCompiler
        from nda_cuda._elementwise import Generator, Settings

        self.generator = Generator(cupy_model, HostCompiler(), Settings(threads=8, blocks_per_sm=2))
        own = {*_philox.OPS, *_einsum.OPS}  # as nda-cuda: these ops have kernels of their own
        kernels, self.unmapped = _kernels.build(
            cupy_model, compat_model, {n: d for n, d in CATALOG.items() if n not in own}, generator=self.generator
        )
        for spec in kernels:
            register_kernel(spec.op, CATALOG[spec.op].supported_dtypes, self._wrap(spec.fn, spec.source))
            self.sources[spec.op] = spec.source
        _einsum.register(register_kernel, cupy_model, self._wrap)  # as the cuda backend registers it


GEN_DEVICE = Device("cudagen", 0)
codegen_backend = CodegenMirrorBackend()
