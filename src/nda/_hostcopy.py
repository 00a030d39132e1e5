"""Host copies: what NumPy gets from ``np.asarray(x)`` and from a DLPack export to the host.

One rule (README, "Ecosystem"): **a write into what nda hands NumPy either reaches the array
or raises; it never vanishes.**

* On cpu the host memory *is* the array's memory: ``np.asarray(x)`` (``__array__`` with
  ``copy=None``) and ``np.from_dlpack(x)`` share it, writable, as NumPy shares its own.
  Before handing it out nda waits for the pending *reads* of ``x`` as well as its writes
  (``wait_to_write``): a NumPy write must not reach an op that was issued before it and is
  still queued on a worker (``y = nda.exp(x); np.asarray(x)[:] = 0`` used to change ``y``).
* On any other device the host data is a copy. A copy the caller did not ask for
  (``np.asarray(x)``, ``np.from_dlpack(x, device="cpu")``, ``copy=None``) is **read-only**:
  a write into it is NumPy's ``ValueError: assignment destination is read-only`` (or "output
  array is read-only" from C code such as SciPy's ndimage), at the line that writes, instead
  of a write lost in a detached copy. A copy the caller asked for (``np.array(x)``,
  ``copy=True``, ``x.asnumpy()``, ``x.to_numpy(copy=True)``) is theirs and writable.
  ``x.to_numpy()`` (pandas' and xarray's spelling, which matplotlib unpacks its input
  with) is ``np.asarray(x)``: the same memory on cpu, the same read-only copy elsewhere.
  Readers (matplotlib, pandas, scikit-learn without Array API dispatch, ``np.testing``) are
  unaffected.

NumPy hands ``__array__`` no hint of whether the caller will write, so the only alternatives
were refusing the implicit conversion of device arrays (CuPy's and PyTorch's choice, which
breaks every reader) or writing the copy back at some later point (when? NumPy's
``WRITEBACKIFCOPY`` needs the writer's cooperation, a finaliser runs at an unpredictable
time and would overwrite later writes). A DLPack export to the host is built here too, for
every backend (``to_host`` is part of the backend contract, so a backend need not implement
it): a read-only array is exported with DLPack 1.0's read-only flag, which NumPy honours; a
consumer of the unversioned protocol cannot be told, so NumPy refuses to export it
(``BufferError``).

Layer: arrays and front end (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import engine
from .backends import handle

__all__ = ["array", "dlpack", "dlpack_device"]

_KDLCPU = 1


def array(x: Any, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """``x.__array__(dtype, copy)`` for a strided nda array (see the module docstring)."""
    device = x._meta.device
    if copy is False:
        if device.type != "cpu":
            raise ValueError(f"np.asarray(x, copy=False): x is on {device}; its data cannot be shared without a copy")
        if dtype is not None and np.dtype(dtype) != x._meta.dtype.numpy:
            raise ValueError(f"np.asarray(x, copy=False): converting {x._meta.dtype.name} to {np.dtype(dtype)} needs a copy")
    if device.type == "cpu":
        if not copy:
            engine.share(x)  # later writes and cheap ops on x complete at the call (nda.engine.share); first,
            x.wait_to_write()  # so that none issued meanwhile is left behind; NumPy may write: after the readers too
        host = x._host()  # a host read (counted, and announced to the thread's interceptors)
        if copy:
            host = host.copy()
        if dtype is not None:
            host = host.astype(dtype, copy=False)
        return host  # type: ignore[no-any-return]
    host = x._host()  # a fresh copy (the backend contract)
    if dtype is not None:
        host = host.astype(dtype, copy=False)
    if not copy:
        host.flags.writeable = False
    return host  # type: ignore[no-any-return]


def dlpack_device(x: Any) -> tuple[int, int]:
    """``x.__dlpack_device__()``: the backend's answer; kDLCPU for a backend that exports nothing itself."""
    backend = handle(x._meta.device)  # its members resolved when it activated
    answer = backend.dlpack_device
    if answer is None:
        raise BufferError(
            f"{x._meta.device} arrays have no DLPack device of their own (backend {backend.name!r} exports none); "
            "ask for a host copy: numpy.from_dlpack(x, device='cpu')"
        )
    return answer(x._meta.device)  # type: ignore[no-any-return]


def dlpack(x: Any, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: bool | None = None) -> Any:
    """``x.__dlpack__(...)`` for a strided nda array: the backend's export, or a host copy when the host asks."""
    if copy not in (None, True, False):
        raise ValueError(f"__dlpack__(copy=...) must be True, False or None, got {copy!r}")
    device = x._meta.device
    backend = handle(device)
    own = backend.dlpack_device  # None unless the backend has both dlpack members
    own_device = None if own is None else tuple(own(device))
    if dl_device is not None and tuple(dl_device) == (_KDLCPU, 0) and own_device != (_KDLCPU, 0):
        return _host_export(x, max_version, copy)
    if own is None:
        raise BufferError(
            f"{device} memory cannot be shared through DLPack (backend {backend.name!r} exports none); "
            "ask for a host copy: numpy.from_dlpack(x, device='cpu'), or dl_device=(1, 0)"
        )
    if device.type == "cpu" and not copy:
        engine.share(x)
        x.wait_to_write()  # the consumer may write into the shared memory
    else:
        x.wait_to_read()
    return backend.dlpack(x._buf, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


def _host_export(x: Any, max_version: Any, copy: bool | None) -> Any:
    if copy is False:
        raise BufferError(f"{x._meta.device} memory cannot be exported to host memory without a copy (copy=False)")
    host = array(x, copy=copy)  # read-only unless the consumer asked for a copy of its own
    if max_version is not None and tuple(max_version) >= (1, 0):
        # NumPy flags a read-only array DLPACK_FLAG_BITMASK_READ_ONLY.
        return host.__dlpack__(max_version=max_version, dl_device=(_KDLCPU, 0))
    return host.__dlpack__()  # unversioned: NumPy refuses a read-only array (BufferError)
