"""The built-in cpu backend: NumPy arrays as buffers, the catalog's reference kernels.

It is an ordinary backend: declared in ``pyproject.toml`` under the ``nda.backends``
entry-point group and loaded through it on first use of a cpu array, like any plugin.
NumPy already implements the catalog's semantics, so each op's reference implementation
(written in the kernel convention) is registered as the cpu kernel for every dtype the
op declares.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import os

from .._devices import Device
from .contract import DeviceInfo


class CpuBackend:
    """NumPy on the host. Buffers are ``numpy.ndarray``; there is one device, ``cpu:0``."""

    name = "cpu"
    api_version = "1.3"
    device_types = ("cpu",)

    def devices(self) -> list[DeviceInfo]:
        import platform

        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            memory = None
        return [DeviceInfo(Device("cpu", 0), platform.processor() or platform.machine() or "cpu", memory, cores=os.cpu_count())]

    def register(self, register_kernel: Callable[..., None]) -> None:
        from ..ops import CATALOG

        for decl in CATALOG.values():
            register_kernel(decl.name, decl.supported_dtypes, decl.reference)
        from . import cpu_sparse  # csr and row_sparse (SciPy is imported when first used)

        cpu_sparse.register(register_kernel)

    def ensure_buffer(self, result: Any) -> np.ndarray:
        """NumPy ufuncs return scalars for 0-d input; buffers are always arrays."""
        return result if isinstance(result, np.ndarray) else np.asarray(result)

    def to_host(self, buf: np.ndarray) -> np.ndarray:
        return buf

    def from_host(self, host: np.ndarray, device: Device, out: np.ndarray | None = None) -> np.ndarray:
        if out is not None:
            out[...] = host
            return out
        return host

    def device_of(self, buf: np.ndarray) -> Device:
        return Device("cpu", 0)

    def dlpack(self, buf: np.ndarray, **kwargs: Any) -> Any:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        return buf.__dlpack__(**kwargs)

    def dlpack_device(self, device: Device) -> tuple[int, int]:
        return (1, 0)  # kDLCPU

    def __repr__(self) -> str:
        return "<nda cpu backend (numpy)>"


backend = CpuBackend()
