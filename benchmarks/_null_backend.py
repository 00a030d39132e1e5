"""A backend whose kernels do nothing: it isolates what nda itself costs per op.

Device type ``nullbench``; ``add`` returns its first input untouched, so timing ``x + y``
on this device measures the front end, the dispatch lookup and the engine, and nothing of
NumPy's arithmetic.
"""

from __future__ import annotations

import numpy as np

import nda


def null_add(x1, x2):
    return x1


def null_asarray(host, device, copy=None):
    return host


class NullBackend:
    name = "nullbench"
    api_version = "1.1"
    device_types = ("nullbench",)

    def devices(self):
        return [nda.backends.DeviceInfo(nda.Device("nullbench", 0), "null kernels")]

    def register(self, register_kernel):
        register_kernel("add", ["float32"], null_add)
        register_kernel("asarray", ["float32"], null_asarray)

    def to_host(self, buf):
        return np.array(buf)

    def from_host(self, host, device, out=None):
        return host

    def device_of(self, buf):
        return nda.Device("nullbench", 0)


backend = NullBackend()
