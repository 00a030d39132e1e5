"""Backend discovery, loading, validation and status, through the ``nda.backends`` entry points.

Every backend, the built-in numpy one included, arrives the same way: a distribution
declares an entry point in the group ``nda.backends`` whose name is the device type it
serves (``cpu = "nda.backends.cpu:backend"``) and whose object is the backend (the
contract is in :mod:`nda.backends.contract`). Nothing is imported at ``import nda``: the
first time an op needs a device type that has no kernels, dispatch calls
:func:`ensure_device_type`, which imports that entry point's module, checks the backend
and lets it register its kernels. :func:`load` does the same on request, and also accepts
``"package.module[:attr]"`` for a backend that is not installed as an entry point.

``NDA_BACKENDS`` selects backends: ``cpu,sim`` allows only those, ``-cuda`` excludes one.
A backend that fails to import, fails validation or finds no device is isolated: it is
recorded with its full cause in :func:`status`, and nda and the other backends keep
working. States: ``installed`` (found, not loaded yet), ``loaded``, ``failed``,
``unavailable`` (loaded but no usable device) and ``excluded``.

Activation (:mod:`._activation`) happens under one lock and publishes a backend only once
it is complete; what the backend can do is resolved then into its handle (:func:`handle`,
:class:`nda._handles.BackendHandle`, resolved by :mod:`._handle`), the one view of the
backend: the data-movement functions here, the engine's device queues and hooks and
dispatch read it, never the backend object. The handles are published in
:data:`nda._handles.HANDLES` (the bottom layer), where the engine and dispatch read them by
import.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

from .. import dispatch
from .._devices import Device
from ..engine import queues as _queues
from ..engine import host_read as _host_read
from ..engine import state as _engine_state
from . import _checks
from ._activation import (  # noqa: F401  (re-exported: op libraries and tests use them)
    GROUP,
    LOCK,
    BackendError,
    BackendValidationError,
    _by_device_type,
    _devices,
    _discover,
    _handles,
    _import_object,
    _Record,
    _traceback,
    activate,
    checked_registration,
    ensure_device_type,
    handle,
    install_layouts,
)
from ._checks import KernelResultError
from .._handles import BackendHandle
from .contract import API_VERSION, DeviceInfo

__all__ = [
    "BackendError",
    "BackendValidationError",
    "KernelResultError",
    "BackendHandle",
    "API_VERSION",
    "DeviceInfo",
    "load",
    "status",
    "status_table",
    "for_device",
    "handle",
    "to_host",
    "devices",
    "memory_stats",
    "release_all",
    "validate_device",
    "for_dlpack_device",
    "DLPACK_DEVICE_TYPES",
    "libraries",
    "load_library",
]


def serves(device_type: str) -> bool:
    """Whether a loaded backend serves ``device_type``."""
    return device_type in _by_device_type


def load(name: str) -> Any:
    """Load a backend by entry-point name, or from ``"package.module[:attr]"`` at run time.

    Op libraries load the same way (:mod:`nda.backends._libraries`): the name of an installed
    library that is not a backend's, or a module whose object is an
    :class:`nda.ops.extension.OpLibrary` (or has one as ``library``), or such an object itself;
    the library is returned.
    """
    if _libraries.is_library(name):  # an OpLibrary object (a notebook, a test, the guide)
        return _libraries.load_object(name, f"{getattr(name, '__module__', '?')}.{name.name}")
    if not isinstance(name, str):
        raise TypeError(
            f"backends.load(): expected a backend or op library name, a 'package.module[:attr]' string or an OpLibrary, "
            f"got {type(name).__name__} {name!r}"
        )
    records = _discover()
    rec = records.get(name)
    if rec is None and name in _libraries.installed_names():
        return _libraries.load_library(name)
    if rec is not None:
        if rec.state == "loaded":
            return rec.backend
        if rec.state == "excluded":
            raise BackendError(f"backend {name!r} is {rec.reason}")
        return activate(rec, rec.source)
    if not _module_exists(name.partition(":")[0]):
        raise BackendError(
            f"no backend named {name!r} is installed (installed: {', '.join(sorted(records)) or 'none'}); pass an importable 'package.module[:attr]' to load one that is not installed"
        )
    with LOCK:  # the import too: an os.fork() waits for it, and its child never finds the module half imported
        peeked = _safe_peek(name)
        if _libraries.is_library(peeked) or (not hasattr(peeked, "api_version") and _libraries.is_library(getattr(peeked, "library", None))):
            return _libraries.load_object(peeked, name)
        backend_name = getattr(peeked, "name", None) or name
        loaded = records.get(backend_name)
        if loaded is not None and loaded.state == "loaded" and loaded.source == name:
            return loaded.backend  # loading the same module again returns the backend it loaded
        rec = records[backend_name] = _Record(backend_name, name)
        return activate(rec, name)


def _module_exists(module: str) -> bool:
    import importlib.util  # only when a backend is loaded by module name

    try:
        return importlib.util.find_spec(module.strip()) is not None
    except (ImportError, ValueError):
        return False


def _safe_peek(spec: str) -> Any:
    try:
        return _import_object(spec)
    except Exception:  # noqa: BLE001 - _activate reports it properly
        return None


def libraries() -> list[dict[str, Any]]:
    """The op libraries (extension ops) nda knows of: name, source, state, reason, version, ops."""
    return _libraries.libraries()


def load_library(name: str) -> Any:
    """Load op library ``name`` (entry point in ``nda.extensions``, or ``"package.module"``)."""
    return _libraries.load_library(name)


def status() -> list[dict[str, Any]]:
    """What is installed, what loaded, what failed and why (one dict per backend)."""
    return [rec.as_dict() for rec in _discover().values()]


def status_table() -> str:
    """:func:`status` as a table for people (the first line of each reason)."""
    rows = [("backend", "state", "api", "devices", "entry point", "reason")]
    for rec in _discover().values():
        reason = rec.reason.strip().splitlines()[0] if rec.reason else ""
        devs = ", ".join(f"{d.device} ({d.name})" for d in rec.devices) or ",".join(rec.device_types) or "-"
        rows.append((rec.name, rec.state, rec.api_version or "-", devs, rec.source, reason))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join("  ".join(r[i].ljust(widths[i]) for i in range(5)) + "  " + r[5] for r in rows)


def explain_missing(device_type: str) -> str:
    """A sentence on why a device type has no kernels (used in error messages)."""
    if device_type in _by_device_type:
        return ""
    rec = _discover().get(device_type)
    if rec is None:
        known = ", ".join(sorted(_discover())) or "none"
        return f" No backend serves device type {device_type!r} (installed backends: {known}); install one that registers it in the {GROUP!r} entry-point group."
    if rec.state == "excluded":
        return f" Backend {device_type!r} is {rec.reason}."
    if rec.state in ("failed", "unavailable"):
        state = "failed to load" if rec.state == "failed" else f"is {rec.state}"
        return f" Backend {device_type!r} {state}: {rec.reason.splitlines()[0] if rec.reason else 'see nda.backends.status()'}"
    return ""


def for_device(device: Any) -> Any:
    """The loaded backend object serving ``device``'s type (loading it if needed)."""
    backend = _by_device_type.get(device.type)
    if backend is None:
        ensure_device_type(device.type)
        backend = _by_device_type.get(device.type)
        if backend is None:
            raise BackendError(f"no backend available for device {device}.{explain_missing(device.type)}")
    return backend


def for_device_type(device_type: str) -> Any:
    """The loaded backend serving ``device_type`` (loading it if needed)."""
    return for_device(Device(device_type, 0))


def validate_device(device: Device) -> None:
    """Raise ValueError unless ``device`` exists (its backend is loaded and lists it)."""
    if device in _devices:
        return
    ensure_device_type(device.type)
    if device in _devices:
        return
    if device.type not in _by_device_type:
        raise dispatch.DeviceUnavailableError(f"device type {device.type!r} is not available.{explain_missing(device.type)}")
    have = ", ".join(str(d) for d in _devices if d.type == device.type)
    raise dispatch.DeviceUnavailableError(f"device {device} does not exist; {device.type} devices: {have}")


def devices(device_type: str | None = None) -> list[DeviceInfo]:
    """Devices of the loaded backends (loading the one for ``device_type`` if given)."""
    if device_type is not None:
        ensure_device_type(device_type)
    return [info for dev, info in _devices.items() if device_type is None or dev.type == device_type]


def memory_stats(device: Device | str) -> dict[str, int]:
    """``in_use``, ``peak``, ``cached`` (and ``capacity``) bytes of ``device``'s allocator."""
    from .._devices import as_device

    dev = as_device(device)
    found = handle(dev)
    if found.memory_stats is None:
        raise NotImplementedError(f"backend {found.name!r} does not report memory statistics for {dev}")
    return dict(found.memory_stats(dev))


def release_all(device: Device | str) -> int:
    """Give ``device``'s cached (free but held) memory back; returns the bytes released."""
    from .._devices import as_device

    dev = as_device(device)
    found = handle(dev)
    if found.release_all is None:
        return 0
    _engine_state.wait_all()
    return int(found.release_all(dev))


def synchronize_all() -> None:
    """Wait for work enqueued on every loaded backend's devices (``nda.waitall`` calls it)."""
    for found in {id(h): h for h in _handles.values()}.values():
        if found.synchronize is not None:
            for info in list(_devices.values()):
                if info.device.type in found.device_types:
                    found.synchronize(info.device)


#: DLPack device type codes (``DLDeviceType``), for messages.
DLPACK_DEVICE_TYPES = {
    1: "kDLCPU",
    2: "kDLCUDA",
    3: "kDLCUDAHost",
    4: "kDLOpenCL",
    7: "kDLVulkan",
    8: "kDLMetal",
    9: "kDLVPI",
    10: "kDLROCM",
    11: "kDLROCMHost",
    12: "kDLExtDev",
    13: "kDLCUDAManaged",
    14: "kDLOneAPI",
    15: "kDLWebGPU",
    16: "kDLHexagon",
    17: "kDLMAIA",
}


def for_dlpack_device(kind: int, prefer: str | None = None) -> tuple[Any, str]:
    """The backend that imports DLPack device type ``kind`` and its device type receiving the data.

    A backend that serves ``prefer`` (a device type) and imports ``kind`` wins; otherwise the
    first loaded backend that imports it, then the installed ones, loaded one by one until one
    does (a backend is only imported when its device is needed, as for ops). BufferError,
    naming the device type and what could serve it, when none does.
    """
    records = _discover()
    if prefer is not None:
        ensure_device_type(prefer)
        rec = next((r for r in records.values() if r.state == "loaded" and prefer in r.device_types), None)
        if rec is not None and kind in rec.dlpack_device_types:
            return rec.backend, rec.dlpack_device_types[kind]
    for rec in list(records.values()):
        if rec.state == "loaded" and kind in rec.dlpack_device_types:
            return rec.backend, rec.dlpack_device_types[kind]
    for rec in list(records.values()):
        if rec.state == "installed":
            try:
                activate(rec, rec.source)
            except BackendError:
                continue
            if kind in rec.dlpack_device_types:
                return rec.backend, rec.dlpack_device_types[kind]
    name = f"DLPack device type {kind} ({DLPACK_DEVICE_TYPES.get(kind, 'unknown')})"
    unusable = [r for r in records.values() if kind in r.dlpack_device_types and r.state != "loaded"]
    if unusable:
        why = "; ".join(
            f"backend {r.name!r} imports it but is {r.state}: {r.reason.strip().splitlines()[0] if r.reason else 'see nda.backends.status()'}"
            for r in unusable
        )
        raise BufferError(f"from_dlpack(): the data is on {name}; {why}")
    raise BufferError(
        f"from_dlpack(): the data is on {name} and no installed nda backend imports it (backends: {', '.join(sorted(records)) or 'none'}); "
        f"install one whose dlpack_device_types has {kind} (nda-cuda for kDLCUDA), or copy the data to host memory first"
    )


def to_host(array: Any) -> Any:
    """The array's data as a NumPy array (no copy for cpu), after the work that wrote it.

    The read is a sync point: it raises the error of a failed op that wrote the array. On a
    device with in-order queues it waits for exactly the marker of the array's version,
    then the backend copies the buffer (``nda.engine.host_read``).
    """
    device = array._meta.device
    found = handle(device)
    if found.queued:
        _engine_state.engine.wait_tasks(array)
        base = array._base
        return _checks.check_host(array, _host_read(device, found.to_host, array._buf, None if base is None else base._buf), found)
    array.wait_to_read()
    return _checks.check_host(array, found.to_host(array._buf), found)  # a wrong kernel's buffer is refused


def copies_directly(source: Device, target: Device) -> bool:
    """Whether one backend serves both devices and copies between them without the host."""
    src = handle(source)
    return src is handle(target) and src.copy_to_device is not None


def copy_buffer(source: Device, buf: Any, target: Device, like: Any = None) -> Any:
    """``buf`` (on ``source``) copied to ``target``: directly between devices of one backend, else through the host.

    On a backend with in-order queues a direct copy is an op of the target's queue, ordered
    after the work that wrote ``buf`` by markers (see the backend's ``copy_to_device``).
    ``like``: the array ``buf`` belongs to; a copy through the host checks the data against
    its declared shape and dtype (:mod:`._checks`).
    """
    src = handle(source)
    if src is handle(target) and src.copy_to_device is not None:
        if src.queued:
            return _queues.issue(src.copy_to_device, "to_device", src.device_of, False, (buf, target), {}, across=True)
        return src.copy_to_device(buf, target)
    host = read_buffer(source, buf)
    if like is not None:
        _checks.check_host(like, host, src)
    return upload(target, host)


def upload(device: Device, host: Any) -> Any:
    """A new buffer on ``device`` holding a copy of the NumPy array ``host``.

    On a device with in-order queues the copy may be enqueued (CUDA's host-to-device copy
    is): it is recorded like an op, so a read of the buffer waits for it. Every buffer nda
    makes from host data comes from here (or from a catalog kernel, recorded the same way).
    """
    found = handle(device)
    if found.queued:
        return _queues.issue(found.from_host, "to_device", found.device_of, False, (host, device), {})
    return found.from_host(host, device)


def import_buffer(backend: Any, obj: Any, device: Device) -> Any:
    """``obj``'s memory as a buffer of ``device`` (DLPack import), recorded like an op on a queue."""
    if handle(device).queued:
        return _queues.issue(backend.import_dlpack, "from_dlpack", backend.device_of, False, (obj, device), {})
    return backend.import_dlpack(obj, device)


def write_buffer(device: Device, host: Any, out: Any) -> Any:
    """``host`` data written into the device buffer ``out`` (a host fallback's in-place result).

    On a device with in-order queues the write is enqueued, so it is recorded like an op:
    reads of ``out`` (and of the array owning its memory) wait for it.
    """
    found = handle(device)
    if found.queued:

        def write(target: Any, data: Any) -> Any:
            return found.from_host(data, device, out=target)

        return _queues.issue(write, "setitem (host fallback)", found.device_of, True, (out, host), {})
    return found.from_host(host, device, out=out)


def read_buffer(device: Device, buf: Any) -> Any:
    """A buffer of ``device`` copied to the host (for fallbacks and copies), errors attributed."""
    found = handle(device)
    if found.queued:
        return _host_read(device, found.to_host, buf)
    return found.to_host(buf)


# Dispatch sits below this layer and asks it to load a device type's backend, to say why
# none serves one, and for the host fallback: nda.layouts installs that (nda.dispatch.Provider).
# The engine reads the handles this layer publishes (nda._handles), never this layer itself.

from . import _libraries  # noqa: E402  (op libraries: extension ops, backend API 1.4)
