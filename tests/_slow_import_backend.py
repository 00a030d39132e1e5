"""A runtime-loaded test backend whose import is slow (device type ``slowimp``).

Used by ``tests/_first_use.py``: while one thread imports it, others ask for its device.
Its buffers are NumPy arrays; it implements the few ops the first-use script calls.
"""

from __future__ import annotations

import time

import numpy as np

import nda

time.sleep(0.05)  # a slow import: a wide window for a second thread to ask for the device meanwhile


class SlowImportBackend:
    name = "slowimp"
    api_version = "1.4"
    device_types = ("slowimp",)
    buffer_type = np.ndarray

    def devices(self):
        return [nda.backends.DeviceInfo(nda.Device("slowimp", 0), "slow-import test device", 1 << 20)]

    def register(self, register_kernel):
        from nda.ops import CATALOG

        for op in ("add", "asarray", "astype", "getitem", "setitem"):
            decl = CATALOG[op]
            register_kernel(op, [d for d in decl.supported_dtypes if d in (nda.float64, nda.int64)], decl.reference)

    def to_host(self, buf):
        return np.array(buf, copy=True)

    def from_host(self, host, device, out=None):
        if out is not None:
            out[...] = host
            return out
        return np.array(host, copy=True)

    def device_of(self, buf):
        return nda.Device("slowimp", 0)


backend = SlowImportBackend()
