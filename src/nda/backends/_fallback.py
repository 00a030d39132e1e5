"""The host fallback: an op a backend has no kernel for runs on cpu, with copies in and out.

Part of the backends layer: dispatch asks for it (``nda.dispatch.Provider.host_fallback``) when a
key has no kernel and the device's backend opted in (``fallback_to_host = True``). The
inputs are read through :func:`nda.backends.read_buffer` (after the work that wrote them,
errors attributed to the op that failed), the result goes back with ``from_host``, and the
write of a mutating op with :func:`nda.backends.write_buffer` (a recorded queue op on a
device with in-order queues). A view op's result is a copy that nda keeps in step with its
base (:mod:`nda._hostviews`); ``asarray`` of host data does not warn.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._devices import Device, KernelKey
from ..dispatch import HOST_FALLBACK, HOST_VIEW, DispatchError, DeviceUnavailableError, KernelEntry, OpTable, resolve
from ..ops import lookup as declaration

__all__ = ["host_fallback"]


def host_fallback(tbl: OpTable, key: KernelKey) -> KernelEntry | None:
    """A kernel that runs ``key``'s op on cpu with copies in and out, if the backend opts in."""
    from . import handle, read_buffer, upload, write_buffer

    backend = handle(Device(key.device_type, 0))
    if not backend.fallback_to_host:
        return None
    cpu_key = KernelKey("cpu", key.dtype, key.layout)
    try:
        cpu_kernel = resolve(tbl.op_name, cpu_key).run
    except (DispatchError, DeviceUnavailableError):
        return None
    decl = declaration(tbl.op_name)
    buffer_type = backend.buffer_type
    device_of = backend.device_of

    def to_host(buf: Any) -> Any:  # errors of device work carry the failed op's note
        return read_buffer(device_of(buf), buf)

    route = f"{tbl.op_name} on {key}: no {key.device_type} kernel; copies the inputs to cpu, runs {getattr(cpu_kernel, '__qualname__', cpu_kernel)} there and copies the result back"
    if decl.view:
        route += "; the result is a copy that nda keeps in step with its base (writes through it go to the base through the host)"
    elif tbl.op_name == "asarray":
        route = f"asarray on {key}: no {key.device_type} kernel; the data is prepared on the host and copied to the device with from_host (what asarray of host data does anyway: no FallbackWarning)"
    mutates = bool(decl.mutates)
    cpu = Device("cpu", 0)

    def convert(value: Any) -> Any:
        if isinstance(value, buffer_type):
            return to_host(value)
        if value.__class__ in (list, tuple):
            return value.__class__(convert(v) for v in value)
        return value

    def find_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if "device" in kwargs:
            return kwargs["device"]
        for value in args:
            for item in value if value.__class__ in (list, tuple) else (value,):
                if isinstance(item, buffer_type):
                    return device_of(item)
        raise DispatchError(f"{tbl.op_name}: host fallback found no {key.device_type} buffer to copy the result to")

    def fallback(*args: Any, **kwargs: Any) -> Any:
        device = find_device(args, kwargs)
        host_args = [convert(a) for a in args]
        host_kwargs = {k: (cpu if k == "device" else convert(v)) for k, v in kwargs.items()}
        result = cpu_kernel(*host_args, **host_kwargs)
        if mutates:
            return write_buffer(device, host_args[0], args[0])
        if result.__class__ is tuple:  # an op with several outputs (qr, unique_all, nonzero)
            return tuple(upload(device, np.asarray(r)) for r in result)
        return upload(device, result)

    fallback.__qualname__ = f"host_fallback[{tbl.op_name}]"
    # The FallbackWarning's one line (once per op and device type); explain() shows the route.
    # asarray of host data announces nothing: copying host data to the device is what it does anyway.
    warning = (
        None
        if tbl.op_name == "asarray"
        else (
            f"{tbl.op_name}: no {key.device_type} kernel, so it runs on cpu with copies to and from {key.device_type} "
            f"(warned once per op and device; nda.dispatch.explain shows the route)"
        )
    )
    kind = HOST_VIEW if decl.view else HOST_FALLBACK  # a view op's result is made a host view (nda._hostviews)
    return KernelEntry(
        fallback, key, -1, None, f"{backend.name} (host fallback)", 0, route="host fallback", kind=kind, description=route, warning=warning
    )
