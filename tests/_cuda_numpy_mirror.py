"""nda-cuda's kernel table built over NumPy instead of CuPy, as a runtime-loaded backend.

Not a GPU test. ``nda_cuda._kernels.build`` takes the array module as a parameter; with
``numpy`` and ``array_api_compat.numpy`` it produces exactly the table the cuda backend
builds over CuPy (same name lookup, same argument adapter, same overrides), so running
nda's conformance kit on this device (``cudamirror``) against cpu checks the op -> function
mapping and the calling conventions on any machine. What it cannot check is CuPy itself:
that is what the conformance run on a real GPU is for (``tests/test_cuda.py``).

It builds nda-cuda's csr layer (:mod:`nda_cuda._sparse`) the same way, over
``scipy.sparse`` instead of ``cupyx.scipy.sparse``, with the same dtype limits.

Buffers are plain ``numpy.ndarray`` copies owned by the device; load with
``nda.backends.load("_cuda_numpy_mirror:backend")``.
"""

from __future__ import annotations

from typing import Any, Callable

import array_api_compat.numpy as compat_numpy
import numpy as np

from nda import Device
from nda.backends import DeviceInfo, cpu_sparse
from nda.ops import CATALOG
from nda_cuda import _kernels, _sparse

DEVICE = Device("cudamirror", 0)


class NumpyMirrorBackend:
    name = "cudamirror"
    api_version = "1.3"
    device_types = ("cudamirror",)
    fallback_to_host = True
    buffer_type = np.ndarray
    # Like nda-cuda, a backend with in-order queues (API 1.3), so that its kernels'
    # data-dependent checks (nda.engine.Deferred: index bounds, negative integer powers)
    # run the way they do on a GPU. NumPy is synchronous: every marker is reached at once.
    in_order_queues = True

    def record_marker(self, device: Device) -> None:
        return None

    def wait_marker(self, device: Device, marker: None) -> None:
        return None

    def synchronize_marker(self, marker: None) -> None:
        return None

    def marker_reached(self, marker: None) -> bool:
        return True

    def buffer_owner(self, buf: Any) -> Any:
        base = getattr(buf, "base", None)  # csr buffers have none: they are never views
        return base if isinstance(base, np.ndarray) else buf

    def __init__(self) -> None:
        self.unmapped: dict[str, str] = {}
        self.sources: dict[str, str] = {}

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(DEVICE, "nda-cuda kernel table over NumPy")]

    def register(self, register_kernel: Callable[..., None]) -> None:
        kernels, self.unmapped = _kernels.build(np, compat_numpy)
        for spec in kernels:
            register_kernel(spec.op, CATALOG[spec.op].supported_dtypes, spec.fn)
            self.sources[spec.op] = spec.source
        # nda-cuda's csr layer over scipy.sparse, as the backend builds it over cupyx.scipy.sparse.
        import scipy.sparse

        layer = _sparse.CsrLayer(np, scipy.sparse, {spec.op: spec.fn for spec in kernels})

        def to_host(buf: Any) -> Any:
            return cpu_sparse.csr(buf.data.copy(), buf.indices.copy(), buf.indptr.copy(), tuple(buf.shape))

        def from_host(host: Any, device: Device) -> Any:
            return layer.csr(host.data.copy(), host.indices.copy(), host.indptr.copy(), tuple(host.shape))

        self.csr_sources = _sparse.register(register_kernel, layer, to_host=to_host, from_host=from_host, wrap=lambda fn, source: fn)

    def ensure_buffer(self, result: Any) -> np.ndarray:
        return result if isinstance(result, np.ndarray) else np.asarray(result)

    def to_host(self, buf: np.ndarray) -> np.ndarray:
        return np.array(buf, copy=True)

    def from_host(self, host: Any, device: Device, out: np.ndarray | None = None) -> np.ndarray:
        if out is not None:
            out[...] = host
            return out
        return np.array(host, copy=True)

    def device_of(self, buf: np.ndarray) -> Device:
        return DEVICE


backend = NumpyMirrorBackend()
