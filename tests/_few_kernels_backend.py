"""A runtime-loaded backend with only a few native kernels: device type ``few``.

What the backend guide encourages a vendor to start with: its own opaque buffers
(``FewBuffer``: nda reaches the data only through ``to_host``/``from_host``), native
``add`` and ``multiply``, and ``fallback_to_host = True`` for everything else, creation
and the view ops (indexing, ``reshape``, ``permute_dims``…) included. So every view made
on it is made through the host fallback, which is what ``nda._hostviews`` keeps in step
with its base. Load it with ``nda.backends.load("_few_kernels_backend")``.

``mixed`` (device type ``fewmix``) also has native ``getitem`` and ``setitem`` whose
results share memory with their input, so views made by indexing are real views while
``reshape``, ``permute_dims``, ``flip``… still take the fallback: native views of host
views and host views of native views. Load it with
``nda.backends.load("_few_kernels_backend:mixed")``.

``to_host`` returns a copy and ``from_host(out=)`` writes into the given buffer, as the
contract says; the kernels are NumPy on the buffers' arrays.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import nda
from nda.ops import CATALOG

NATIVE_OPS = ("add", "multiply")


class FewBuffer:
    """An opaque handle on "device memory" (a NumPy array nda never sees)."""

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"FewBuffer(shape={self.data.shape}, dtype={self.data.dtype})"


def _native(op: str) -> Callable[..., Any]:
    ufunc = getattr(np, op)

    def kernel(x1: Any, x2: Any) -> FewBuffer:
        a = x1.data if isinstance(x1, FewBuffer) else x1
        b = x2.data if isinstance(x2, FewBuffer) else x2
        return FewBuffer(np.asarray(ufunc(a, b)))

    kernel.__name__ = kernel.__qualname__ = f"few_{op}"
    return kernel


def _data(value: Any) -> Any:
    if isinstance(value, FewBuffer):
        return value.data
    if value.__class__ in (tuple, list):
        return value.__class__(_data(v) for v in value)
    return value


def _getitem(x: FewBuffer, key: tuple[Any, ...]) -> FewBuffer:
    return FewBuffer(np.asarray(x.data[_data(key)]))  # a view of x's memory for basic keys


def _setitem(x: FewBuffer, key: tuple[Any, ...], value: Any) -> None:
    x.data[_data(key)] = _data(value)


class FewKernelsBackend:
    api_version = "1.2"
    fallback_to_host = True
    buffer_type = FewBuffer

    def __init__(self, name: str, views: bool = False) -> None:
        self.name = name
        self.device_types = (name,)
        self.views = views

    def devices(self) -> list[Any]:
        return [nda.backends.DeviceInfo(nda.Device(self.name, 0), "a device with few native kernels", 1 << 30)]

    def register(self, register_kernel: Callable[..., None]) -> None:
        for op in NATIVE_OPS:
            register_kernel(op, CATALOG[op].supported_dtypes, _native(op))
        if self.views:
            register_kernel("getitem", CATALOG["getitem"].supported_dtypes, _getitem)
            register_kernel("setitem", CATALOG["setitem"].supported_dtypes, _setitem)

    def to_host(self, buf: FewBuffer) -> np.ndarray:
        return np.array(buf.data, copy=True)

    def from_host(self, host: np.ndarray, device: nda.Device, out: FewBuffer | None = None) -> FewBuffer:
        if out is not None:
            out.data[...] = host
            return out
        return FewBuffer(np.array(host, copy=True))

    def device_of(self, buf: FewBuffer) -> nda.Device:
        return nda.Device(self.name, 0)


backend = FewKernelsBackend("few")
mixed = FewKernelsBackend("fewmix", views=True)
