"""A complete minimal nda backend: device type ``mini``, its own buffers, four native kernels.

Everything else runs through nda's host fallback. Kernels run synchronously (they return
finished buffers), so the backend needs no completion or synchronization members. The
backend guide shows and explains this file; nda's test suite loads it and runs the
conformance kit on it. Save it as ``minimal_backend.py`` where Python finds it and try it::

    import nda
    nda.backends.load("minimal_backend")
    x = nda.asarray([1.0, 2.0], device="mini")
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from nda import Device
from nda.backends import DeviceInfo
from nda.ops import CATALOG


class MiniBuffer:
    """A handle on device memory (here a NumPy array standing in for it).

    nda never looks inside: it passes buffers to this backend's kernels and to
    ``to_host``/``from_host``, and recognises them with ``isinstance(obj, buffer_type)``.
    ``shape`` and ``dtype`` (a NumPy dtype) are optional conveniences nda uses when present.
    ``__weakref__`` lets the backend learn when nda drops the buffer (``weakref.finalize``).
    """

    __slots__ = ("array", "device", "__weakref__")

    def __init__(self, array: np.ndarray, device: Device) -> None:
        self.array = array
        self.device = device

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype


class MiniBackend:
    name = "mini"
    api_version = "1.2"  # the backend API it was written for
    device_types = ("mini",)
    buffer_type = MiniBuffer
    fallback_to_host = True  # ops without a kernel here run on cpu, with copies in and out

    def __init__(self) -> None:
        self.in_use = 0  # bytes held by live buffers
        self.peak = 0

    # -- processor info ---------------------------------------------------------------
    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(Device("mini", 0), "minimal example device", memory=1 << 30)]

    # -- memory -------------------------------------------------------------------------
    def _wrap(self, array: np.ndarray, device: Device) -> MiniBuffer:
        """A new buffer holding ``array``; its bytes are freed when nda drops the buffer."""
        buf = MiniBuffer(array, device)
        self.in_use += array.nbytes
        self.peak = max(self.peak, self.in_use)
        weakref.finalize(buf, self._free, array.nbytes)  # how a backend learns a buffer is dead
        return buf

    def _free(self, nbytes: int) -> None:
        self.in_use -= nbytes

    def memory_stats(self, device: Device) -> dict[str, int]:
        return {"in_use": self.in_use, "peak": self.peak, "cached": 0, "capacity": 1 << 30}

    def release_all(self, device: Device) -> int:
        return 0  # nothing cached

    # -- data movement -----------------------------------------------------------------
    def to_host(self, buf: MiniBuffer) -> np.ndarray:
        return np.array(buf.array, copy=True)  # a copy: nda may write into it

    def from_host(self, host: np.ndarray, device: Device, out: MiniBuffer | None = None) -> MiniBuffer:
        if out is not None:  # write into an existing buffer (same shape and dtype) and return it
            out.array[...] = host
            return out
        return self._wrap(np.array(host, copy=True), device)

    def device_of(self, buf: MiniBuffer) -> Device:
        return buf.device

    # -- kernels -----------------------------------------------------------------------
    def register(self, register_kernel: Callable[..., None]) -> None:
        for op in ("add", "multiply"):
            register_kernel(op, CATALOG[op].supported_dtypes, self._elementwise(getattr(np, op)))
        register_kernel("sum", CATALOG["sum"].supported_dtypes, self._sum)
        register_kernel("astype", CATALOG["astype"].supported_dtypes, self._astype)

    def _elementwise(self, ufunc: np.ufunc) -> Callable[..., MiniBuffer]:
        def kernel(x1: Any, x2: Any) -> MiniBuffer:
            # Operands are buffers of the key's dtype, or a Python scalar (x + 1).
            a = x1.array if isinstance(x1, MiniBuffer) else x1
            b = x2.array if isinstance(x2, MiniBuffer) else x2
            device = (x1 if isinstance(x1, MiniBuffer) else x2).device
            return self._wrap(np.asarray(ufunc(a, b)), device)

        kernel.__name__ = kernel.__qualname__ = f"mini_{ufunc.__name__}"
        return kernel

    def _sum(self, x: MiniBuffer, axis: tuple[int, ...] | None = None, keepdims: bool = False, dtype: Any = None) -> MiniBuffer:
        # The key's dtype is x's dtype; ``dtype`` (an nda.DType) is the result's: int8 sums to int64.
        result = np.sum(x.array, axis=axis, keepdims=keepdims, dtype=None if dtype is None else dtype.numpy)
        return self._wrap(np.asarray(result), x.device)

    def _astype(self, x: MiniBuffer, dtype: Any, copy: bool = True) -> MiniBuffer:
        # The key's dtype is x's (the source); ``dtype`` (an nda.DType) is the target.
        return self._wrap(x.array.astype(dtype.numpy), x.device)


backend = MiniBackend()
