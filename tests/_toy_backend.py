"""A small runtime-loaded backend used by the tests: device type ``toy`` with its own buffers.

Buffers are ``ToyBuffer`` objects (not NumPy arrays), so the core can only read them
through ``to_host``; it implements a handful of ops and proves that dispatch, explain and
runtime loading work for a backend other than cpu.
"""

from __future__ import annotations

import numpy as np

import nda


class ToyBuffer:
    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = data


def _wrap(fn):
    def kernel(*args, **kwargs):
        unwrapped = [a.data if isinstance(a, ToyBuffer) else a for a in args]
        return ToyBuffer(np.asarray(fn(*unwrapped, **kwargs)))

    kernel.__name__ = kernel.__qualname__ = f"toy_{fn.__name__}"
    return kernel


class ToyBackend:
    name = "toy"
    api_version = "1.1"
    device_types = ("toy",)

    def devices(self):
        return [nda.backends.DeviceInfo(nda.Device("toy", 0), "toy device", 1 << 20)]

    def register(self, register_kernel):
        from nda.ops import CATALOG

        for op in ("add", "multiply", "zeros", "ones", "asarray", "sum", "astype", "getitem", "setitem", "arange"):
            decl = CATALOG[op]
            dtypes = [d for d in decl.supported_dtypes if d in (nda.float32, nda.float64, nda.int64)]
            if op == "setitem":

                def setitem(x, key, value):
                    x.data[key] = value.data if isinstance(value, ToyBuffer) else value

                register_kernel(op, dtypes, setitem)
            else:
                register_kernel(op, dtypes, _wrap(decl.reference))

    def to_host(self, buf):
        return buf.data

    def from_host(self, host, device, out=None):
        if out is not None:
            out.data[...] = host
            return out
        return ToyBuffer(np.array(host))

    def dlpack(self, buf, **kwargs):
        return buf.data.__dlpack__()

    def dlpack_device(self, device):
        return (1, 0)


backend = ToyBackend()


class BlockedBuffer:
    """A toy layout's buffer: the matrix stored transposed (as a column-major "blocked" format)."""

    __slots__ = ("columns",)

    def __init__(self, columns: np.ndarray) -> None:
        self.columns = columns


class BlockedBackend:
    """Device type ``toy2`` with a layout of its own, ``blocked``, registered through the plugin API."""

    name = "toy2"
    api_version = "1.2"  # layouts; ToyBackend above stays at 1.1: an older minor version is accepted
    device_types = ("toy2",)

    def __init__(self):
        self.converted = 0

    def devices(self):
        return [nda.backends.DeviceInfo(nda.Device("toy2", 0), "toy device with a blocked layout", 1 << 20)]

    def register(self, register_kernel):
        from nda.ops import CATALOG

        for op in ("add", "multiply", "asarray", "astype", "zeros"):
            register_kernel(op, CATALOG[op].supported_dtypes, _wrap(CATALOG[op].reference))
        register_kernel.layout("blocked", min_ndim=2, max_ndim=2, components=("columns",), host_components=lambda b: {"columns": b.columns})

        def to_blocked(buf):
            self.converted += 1
            return BlockedBuffer(np.ascontiguousarray(buf.data.T))

        def to_strided(buf):
            self.converted += 1
            return ToyBuffer(np.ascontiguousarray(buf.columns.T))

        def scale(x1, x2):
            return BlockedBuffer(x1.columns * x2) if isinstance(x1, BlockedBuffer) else BlockedBuffer(x1 * x2.columns)

        register_kernel.converter("strided", "blocked", to_blocked)
        register_kernel.converter("blocked", "strided", to_strided)
        register_kernel.storage(
            "blocked", to_host=lambda b: BlockedBuffer(b.columns.copy()), from_host=lambda b, device: BlockedBuffer(b.columns.copy())
        )
        register_kernel("multiply", ["float64"], scale, layout="blocked", signatures=[("blocked", "scalar"), ("scalar", "blocked")])

    def to_host(self, buf):
        return buf.data

    def from_host(self, host, device, out=None):
        if out is not None:
            out.data[...] = host
            return out
        return ToyBuffer(np.array(host))


blocked_backend = BlockedBackend()
