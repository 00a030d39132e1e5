"""DLPack export of an array (``x.__dlpack__``, ``x.__dlpack_device__``) on any backend.

A backend that implements the optional ``dlpack``/``dlpack_device`` members exports its
memory its own way (cpu shares NumPy's; nda-cuda CuPy's with the stream handshake; nda-sim
exports host copies only). A backend without them still answers the protocol the way the
standard asks of memory no consumer can read: ``__dlpack_device__`` and ``__dlpack__``
raise ``BufferError`` saying how to get the data, except that a host copy is exported on
request (``dl_device=(kDLCPU, 0)`` with ``copy`` not False, which is what
``numpy.from_dlpack(x, device="cpu", copy=True)`` asks), made after the work that writes
the array, as every host read is.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

from ._activation import handle

__all__ = ["export", "export_device"]

_KDL_CPU = (1, 0)


def export_device(array: Any) -> tuple[int, int]:
    """``array.__dlpack_device__()``: the backend's answer, or BufferError when it has none."""
    backend = handle(array._meta.device)  # members resolved when the backend activated
    member = backend.dlpack_device
    if member is None:
        raise BufferError(_no_member(backend, array, "dlpack_device"))
    return member(array._meta.device)  # type: ignore[no-any-return]


def export(array: Any, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
    """``array.__dlpack__(...)``: the backend's capsule, or a host copy's for a backend without one."""
    from . import to_host

    if array._meta.layout.name != "strided":
        raise BufferError(f"DLPack exports strided arrays only; this array is {array._meta.layout.name} (use x.to_layout('strided'))")
    if copy not in (None, True, False):
        raise ValueError(f"__dlpack__(copy=...) must be True, False or None, got {copy!r}")
    backend = handle(array._meta.device)
    member = backend.dlpack
    if member is not None:
        array.wait_to_read()
        return member(array._buf, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
    if dl_device is None or tuple(dl_device) != _KDL_CPU:
        raise BufferError(_no_member(backend, array, "dlpack"))
    if copy is False:
        raise BufferError(f"{array._meta.device} memory cannot be exported to host memory without a copy (copy=False)")
    host = to_host(array)  # a sync point: after the work that writes the array; a copy (backend contract)
    if max_version is not None and tuple(max_version) >= (1, 0):
        return host.__dlpack__(max_version=max_version, dl_device=_KDL_CPU, copy=True)  # flagged as a copy
    return host.__dlpack__()


def _no_member(backend: Any, array: Any, member: str) -> str:
    return (f"backend {backend.name!r} does not export {array._meta.device} memory through DLPack "
            f"(it has no {member}() member); ask for a host copy (numpy.from_dlpack(x, device='cpu', copy=True), "
            "i.e. dl_device=(1, 0)), or use x.to_device('cpu')")
