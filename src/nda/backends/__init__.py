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

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any, Callable, Iterable

from .. import dispatch
from .._devices import Device, as_layout
from .._dtypes import CATEGORIES, DType, as_dtype
from .. import engine as _engine
from ..engine import _queues
from ..engine import host_read as _host_read
from ..engine import state as _engine_state
from ..ops import _spec
from . import _checks, _fallback
from ._checks import KernelResultError
from .contract import API_VERSION, QUEUE_MEMBERS, DeviceInfo, check_kernel_signature

__all__ = [
    "BackendError", "BackendValidationError", "KernelResultError", "API_VERSION", "DeviceInfo", "load", "status", "status_table",
    "for_device", "to_host", "devices", "memory_stats", "release_all", "validate_device", "for_dlpack_device", "DLPACK_DEVICE_TYPES",
    "libraries", "load_library",
]

GROUP = "nda.backends"


class BackendError(RuntimeError):
    """A backend could not be loaded or is not available."""


class BackendValidationError(BackendError):
    """A backend registered something that does not fit the op catalog or the contract."""


class _Record:
    __slots__ = ("name", "source", "state", "reason", "backend", "device_types", "devices", "api_version", "flushes_subnormals", "dlpack_device_types")

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self.state = "installed"
        self.reason = ""
        self.backend: Any = None
        self.device_types: tuple[str, ...] = ()
        self.devices: list[DeviceInfo] = []
        self.api_version = ""
        self.flushes_subnormals: tuple[str, ...] = ()
        self.dlpack_device_types: dict[int, str] = {}

    def fail(self, state: str, reason: str) -> None:
        self.state, self.reason = state, reason

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "source": self.source, "state": self.state, "reason": self.reason,
            "api_version": self.api_version, "device_types": list(self.device_types),
            "devices": [d.as_dict() for d in self.devices], "flushes_subnormals": list(self.flushes_subnormals),
        }


_records: dict[str, _Record] | None = None
_by_device_type: dict[str, Any] = {}
_devices: dict[Device, DeviceInfo] = {}


def _selection() -> tuple[set[str] | None, set[str]]:
    """(only these, or None for all; excluded) from ``NDA_BACKENDS``."""
    raw = os.environ.get("NDA_BACKENDS", "").strip()
    only: set[str] = set()
    excluded: set[str] = set()
    for part in (p.strip() for p in raw.split(",")):
        if part.startswith("-"):
            excluded.add(part[1:])
        elif part:
            only.add(part)
    return (only or None), excluded


def _discover() -> dict[str, _Record]:
    global _records
    if _records is None:
        from importlib.metadata import entry_points

        records: dict[str, _Record] = {}
        only, excluded = _selection()
        for ep in entry_points(group=GROUP):
            rec = records.setdefault(ep.name, _Record(ep.name, ep.value))
            if ep.name in excluded or (only is not None and ep.name not in only):
                rec.fail("excluded", f"excluded by NDA_BACKENDS={os.environ.get('NDA_BACKENDS', '')!r}")
        _records = records
    return _records


def _import_object(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    obj = importlib.import_module(module_name.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    if attr == "" and hasattr(obj, "backend"):
        obj = obj.backend
    return obj


def _traceback() -> str:
    import traceback  # only when something failed

    return traceback.format_exc()


def _validate_version(name: str, backend: Any) -> str:
    version = getattr(backend, "api_version", None)
    if not isinstance(version, str) or version.count(".") != 1:
        raise BackendValidationError(f"backend {name!r}: api_version must be a 'major.minor' string such as {API_VERSION!r}, got {version!r}")
    if version.split(".")[0] != API_VERSION.split(".")[0]:
        raise BackendValidationError(
            f"backend {name!r} implements backend API {version}, but this nda speaks {API_VERSION}; "
            f"install a version of the backend built for nda's backend API {API_VERSION.split('.')[0]}.x"
        )
    minor = version.split(".")[1]
    if not minor.isdigit() or int(minor) > int(API_VERSION.split(".")[1]):
        raise BackendValidationError(
            f"backend {name!r} implements backend API {version}, newer than this nda's {API_VERSION}; "
            f"upgrade nda (pip install -U nda), or install a version of the backend built for API {API_VERSION}"
        )
    for member in ("register", "to_host", "from_host", "devices"):
        if not callable(getattr(backend, member, None)):
            raise BackendValidationError(f"backend {name!r} lacks the required method {member}(); see nda.backends.contract")
    if getattr(backend, "in_order_queues", False):
        if int(minor) < 3:
            raise BackendValidationError(
                f"backend {name!r} declares in_order_queues, which backend API 1.3 introduced, but implements API {version}; declare api_version = '1.3'"
            )
        missing = [m for m in QUEUE_MEMBERS if not callable(getattr(backend, m, None))]
        if missing:
            raise BackendValidationError(
                f"backend {name!r} declares in_order_queues but lacks {', '.join(m + '()' for m in missing)}; "
                f"a backend with in-order queues provides {', '.join(m + '()' for m in QUEUE_MEMBERS)} (see nda.backends.contract)"
            )
    return version


def _queued(backend: Any) -> bool:
    """Whether ``backend`` declared in-order device queues (backend API 1.3)."""
    return bool(getattr(backend, "in_order_queues", False))


def _validate_optional(rec: _Record, backend: Any, device_types: tuple[str, ...]) -> None:
    """Check the optional declarations (``flushes_subnormals``, DLPack import) and record them on ``rec``."""
    name = rec.name
    flushed = getattr(backend, "flushes_subnormals", ())
    floating = {d.name for d in CATEGORIES["floating"]}
    if isinstance(flushed, str) or not all(isinstance(d, str) and d in floating for d in flushed):
        raise BackendValidationError(
            f"backend {name!r}: flushes_subnormals must be a tuple of floating dtype names such as ('float32', 'complex64'), got {flushed!r}"
        )
    imports = getattr(backend, "dlpack_device_types", None) or {}
    if imports:
        bad = {k: v for k, v in dict(imports).items() if not isinstance(k, int) or k <= 1 or v not in device_types}
        if bad:
            raise BackendValidationError(
                f"backend {name!r}: dlpack_device_types must map DLPack device type codes other than kDLCPU (1) to device types "
                f"it declares {device_types}, got {bad!r}"
            )
        if not callable(getattr(backend, "import_dlpack", None)):
            raise BackendValidationError(f"backend {name!r} declares dlpack_device_types but has no import_dlpack(obj, device) method; see nda.backends.contract")
    rec.flushes_subnormals = tuple(flushed)
    rec.dlpack_device_types = {int(k): str(v) for k, v in dict(imports).items()}


def checked_registration(who: str, op: str, decl: Any, dtypes: Any, layout: str, fn: Callable[..., Any]) -> list[Any]:
    """The dtypes of a kernel registration by ``who`` (a backend, an op library), checked against
    the op's declaration: each a dtype of the op's category, a known layout, a signature that
    takes the op's kernel arguments. BackendValidationError naming ``who`` and the fix otherwise."""
    dtype_list = [dtypes] if isinstance(dtypes, (DType, str)) else list(dtypes)
    for dt in dtype_list:
        try:
            resolved = as_dtype(dt)
        except TypeError as err:
            raise BackendValidationError(f"{who}, op {op!r}: {err}") from None
        if resolved not in CATEGORIES[decl.dtypes]:
            raise BackendValidationError(f"{who} registers {op!r} for {resolved.name}, but {op!r} is declared for {decl.dtypes} dtypes only")
    try:
        as_layout(layout)
    except ValueError as err:
        raise BackendValidationError(f"{who}, op {op!r}: {err}") from None
    problem = check_kernel_signature(fn, decl)
    if problem is not None:
        raise BackendValidationError(f"{who}, op {op!r}: {problem}")
    return dtype_list


class _LayoutHooks:
    """How a backend's layouts reach ``nda.layouts``, a layer above this one: the layouts layer
    registers these when it is imported (always before a backend loads: ``import nda`` imports it)."""

    __slots__ = ("register_converter", "register_storage", "register_layout", "unregister_backend")

    def __init__(self) -> None:
        self.register_converter: Callable[..., None] = _no_layouts
        self.register_storage: Callable[..., None] = _no_layouts
        self.register_layout: Callable[..., Any] = _no_layouts
        self.unregister_backend: Callable[[str], None] = lambda name: None


def _no_layouts(*args: Any, **kwargs: Any) -> Any:
    raise BackendValidationError("layouts are registered through nda.layouts, which is not imported (import nda)")


layout_hooks = _LayoutHooks()


def _registrar(name: str, device_types: tuple[str, ...], backend: Any = None) -> Callable[..., None]:
    queued = _queued(backend)

    def register_kernel(
        op: str, dtypes: Any, fn: Callable[..., Any], *, device_type: str | None = None,
        layout: str = "strided", priority: int = 0, supports: Callable[..., bool] | None = None,
        signatures: Any = None, out_layout: str | None = None,
    ) -> None:
        from ..ops import lookup

        decl = lookup(op)  # a catalog op, or an op of a loaded op library
        if decl is None:
            raise BackendValidationError(f"backend {name!r} registers a kernel for unknown op {op!r}; the catalog's ops are listed in nda.ops.CATALOG")
        dtype_list = checked_registration(f"backend {name!r}", op, decl, dtypes, layout, fn)
        dev = device_type or device_types[0]
        if dev not in device_types:
            raise BackendValidationError(f"backend {name!r} registers a kernel for device type {dev!r}, which it does not declare in device_types {device_types}")
        if queued:  # its kernels only enqueue work: the engine records what each one enqueued
            fn = _queues.issuing(fn, op, backend, mutating=bool(decl.mutates))
        try:
            dispatch.register(op, dev, dtype_list, fn, layout=layout, priority=priority, supports=supports, backend=name,
                              signatures=signatures, out_layout=out_layout)
        except (TypeError, ValueError) as err:
            raise BackendValidationError(f"backend {name!r}, op {op!r}: {err}") from None

    def device_of(device_type: str | None, what: str) -> str:
        dev = device_type or device_types[0]
        if dev not in device_types:
            raise BackendValidationError(f"backend {name!r} registers {what} for device type {dev!r}, which it does not declare in device_types {device_types}")
        return dev

    # Layout registration (nda.layouts), reached from the same function so that a backend
    # needs nothing else in register(); everything is undone if the backend fails.
    def converter(src: str, dst: str, fn: Callable[[Any], Any], *, device_type: str | None = None) -> None:
        """Register ``fn(buf) -> buf`` converting ``src`` buffers to ``dst`` buffers on this device type."""
        if queued:
            fn = _queues.issuing(fn, f"to_layout({src} -> {dst})", backend)
        try:
            layout_hooks.register_converter(device_of(device_type, f"a {src} -> {dst} converter"), src, dst, fn, backend=name)
        except (TypeError, ValueError) as err:
            raise BackendValidationError(f"backend {name!r}, converter {src} -> {dst}: {err}") from None

    def storage(layout: str, *, to_host: Callable[[Any], Any], from_host: Callable[..., Any], dtypes: Iterable[Any] | None = None,
                device_type: str | None = None) -> None:
        """How this device type's ``layout`` buffers move to and from cpu buffers of that layout
        (``dtypes``: the ones it can hold in that layout, when not all)."""
        if queued:  # reads after the version read, errors attributed; uploads recorded like ops
            to_host = _attributed(to_host, backend.device_of)
            from_host = _queues.issuing(from_host, f"to_device ({layout})", backend)
        try:
            layout_hooks.register_storage(device_of(device_type, f"{layout} storage"), layout, to_host=to_host, from_host=from_host,
                                     dtypes=dtypes, backend=name)
        except (TypeError, ValueError) as err:
            raise BackendValidationError(f"backend {name!r}, storage of {layout}: {err}") from None

    def layout(layout_name: str, **options: Any) -> Any:
        """Declare a layout of the backend's own (see nda.layouts.register_layout)."""
        try:
            return layout_hooks.register_layout(layout_name, **options)
        except (TypeError, ValueError) as err:
            raise BackendValidationError(f"backend {name!r}, layout {layout_name!r}: {err}") from None

    register_kernel.converter = converter  # type: ignore[attr-defined]
    register_kernel.storage = storage  # type: ignore[attr-defined]
    register_kernel.layout = layout  # type: ignore[attr-defined]
    return register_kernel


def _activate(rec: _Record, spec: str) -> Any:
    try:
        backend = _import_object(spec)
    except Exception as err:  # noqa: BLE001 - any import failure isolates the backend
        rec.fail("failed", f"import of {spec!r} failed: {type(err).__name__}: {err}\n{_traceback()}")
        raise BackendError(f"backend {rec.name!r} could not be imported ({type(err).__name__}: {err}); see nda.backends.status()") from err
    try:
        rec.api_version = _validate_version(rec.name, backend)
        device_types = tuple(getattr(backend, "device_types", ()) or (rec.name,))
        _validate_optional(rec, backend, device_types)
        try:
            infos = list(backend.devices())
        except Exception as err:  # noqa: BLE001 - a failing probe means "no device here"
            rec.device_types = device_types
            rec.fail("unavailable", f"device probe failed: {type(err).__name__}: {err}")
            raise BackendError(f"backend {rec.name!r} is unavailable: {type(err).__name__}: {err}") from err
        bad = [i for i in infos if not isinstance(i, DeviceInfo)]
        if bad:
            raise BackendValidationError(f"backend {rec.name!r}: devices() must return nda.backends.DeviceInfo objects, got {type(bad[0]).__name__}")
        if not infos:
            rec.device_types = device_types
            rec.fail("unavailable", "no device found")
            raise BackendError(f"backend {rec.name!r} is unavailable: no device found")
        if _queued(backend):
            for dev in device_types:
                _queues.register_backend(dev, backend)
        backend.register(_registrar(rec.name, device_types, backend))
        for dev in device_types:  # kernels of op libraries that waited for this device type
            _libraries.apply_pending(dev, backend)
    except BackendError as err:
        _unregister(rec.name)
        if rec.state not in ("unavailable",):
            # The sentence first: status_table(), `python -m nda info`, DeviceUnavailableError
            # and the conformance kit show the reason's first line; status() keeps the traceback.
            rec.state = "failed"
            rec.reason = rec.reason or f"{err}\n{_traceback()}"
        raise
    except Exception as err:  # noqa: BLE001
        _unregister(rec.name)
        rec.fail("failed", f"{type(err).__name__}: {err}\n{_traceback()}")
        raise BackendValidationError(f"backend {rec.name!r} failed to register its kernels: {type(err).__name__}: {err}") from err
    rec.state, rec.reason, rec.backend, rec.device_types, rec.devices = "loaded", "", backend, device_types, infos
    for dev in device_types:
        _by_device_type[dev] = backend
        if rec.flushes_subnormals:
            dispatch.declare_subnormal_flush(dev, rec.flushes_subnormals, backend=rec.name)
    for info in infos:
        _devices[info.device] = info
    return backend


def _unregister(name: str) -> None:
    dispatch.unregister_backend(name)
    layout_hooks.unregister_backend(name)
    for dev, queued in list(_queues._backends.items()):
        if _by_device_type.get(dev) is not queued:  # registered by the backend that just failed
            _queues.unregister_device_type(dev)


def _attributed(read: Callable[[Any], Any], device_of: Callable[[Any], Device]) -> Callable[[Any], Any]:
    """A host read of a queue device's buffers whose errors carry the note of the op that failed."""

    def read_attributed(buf: Any) -> Any:
        return _host_read(device_of(buf), read, buf)

    return read_attributed


def serves(device_type: str) -> bool:
    """Whether a loaded backend serves ``device_type``."""
    return device_type in _by_device_type


def ensure_device_type(device_type: str) -> bool:
    """Load the backend for ``device_type`` if it is installed and not loaded; True if it loaded now."""
    if device_type in _by_device_type:
        return False
    rec = _discover().get(device_type)
    if rec is None or rec.state != "installed":
        return False
    try:
        _activate(rec, rec.source)
    except BackendError:
        return False  # recorded in status(); the caller raises its own "not available" error
    return True


def load(name: str) -> Any:
    """Load a backend by entry-point name, or from ``"package.module[:attr]"`` at run time.

    Op libraries load the same way (:mod:`nda.backends._libraries`): the name of an installed
    library that is not a backend's, or a module whose object is an
    :class:`nda.ops.extension.OpLibrary` (or has one as ``library``), or such an object itself;
    the library is returned.
    """
    if _libraries.is_library(name):  # an OpLibrary object (a notebook, a test, the guide)
        return _libraries.load_object(name, f"{getattr(name, '__module__', '?')}.{name.name}")
    records = _discover()
    rec = records.get(name)
    if rec is None and name in _libraries.installed_names():
        return _libraries.load_library(name)
    if rec is not None:
        if rec.state == "loaded":
            return rec.backend
        if rec.state == "excluded":
            raise BackendError(f"backend {name!r} is {rec.reason}")
        return _activate(rec, rec.source)
    if not _module_exists(name.partition(":")[0]):
        raise BackendError(f"no backend named {name!r} is installed (installed: {', '.join(sorted(records)) or 'none'}); pass an importable 'package.module[:attr]' to load one that is not installed")
    peeked = _safe_peek(name)
    if _libraries.is_library(peeked) or (not hasattr(peeked, "api_version") and _libraries.is_library(getattr(peeked, "library", None))):
        return _libraries.load_object(peeked, name)
    backend_name = getattr(peeked, "name", None) or name
    loaded = records.get(backend_name)
    if loaded is not None and loaded.state == "loaded" and loaded.source == name:
        return loaded.backend  # loading the same module again returns the backend it loaded
    rec = records[backend_name] = _Record(backend_name, name)
    return _activate(rec, name)


def _module_exists(module: str) -> bool:
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
    backend = for_device(dev)
    if not hasattr(backend, "memory_stats"):
        raise NotImplementedError(f"backend {backend.name!r} does not report memory statistics for {dev}")
    return dict(backend.memory_stats(dev))


def release_all(device: Device | str) -> int:
    """Give ``device``'s cached (free but held) memory back; returns the bytes released."""
    from .._devices import as_device

    dev = as_device(device)
    backend = for_device(dev)
    if not hasattr(backend, "release_all"):
        return 0
    from ..engine import state

    state.wait_all()
    return int(backend.release_all(dev))


def synchronize_all() -> None:
    """Wait for work enqueued on every loaded backend's devices (``nda.waitall`` calls it)."""
    for backend in {id(b): b for b in _by_device_type.values()}.values():
        sync = getattr(backend, "synchronize", None)
        if sync is not None:
            for info in _devices.values():
                if info.device.type in getattr(backend, "device_types", ()):
                    sync(info.device)


#: DLPack device type codes (``DLDeviceType``), for messages.
DLPACK_DEVICE_TYPES = {
    1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal", 9: "kDLVPI", 10: "kDLROCM",
    11: "kDLROCMHost", 12: "kDLExtDev", 13: "kDLCUDAManaged", 14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon", 17: "kDLMAIA",
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
                _activate(rec, rec.source)
            except BackendError:
                continue
            if kind in rec.dlpack_device_types:
                return rec.backend, rec.dlpack_device_types[kind]
    name = f"DLPack device type {kind} ({DLPACK_DEVICE_TYPES.get(kind, 'unknown')})"
    unusable = [r for r in records.values() if kind in r.dlpack_device_types and r.state != "loaded"]
    if unusable:
        why = "; ".join(f"backend {r.name!r} imports it but is {r.state}: {r.reason.strip().splitlines()[0] if r.reason else 'see nda.backends.status()'}" for r in unusable)
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
    backend = for_device(device)
    if device.type in _queues._backends:
        _engine_state.engine.wait_tasks(array)
        base = array._base
        return _checks.check_host(array, _host_read(device, backend.to_host, array._buf, None if base is None else base._buf), backend)
    array.wait_to_read()
    return _checks.check_host(array, backend.to_host(array._buf), backend)  # a wrong kernel's buffer is refused


def copies_directly(source: Device, target: Device) -> bool:
    """Whether one backend serves both devices and copies between them without the host."""
    src = for_device(source)
    return src is for_device(target) and hasattr(src, "copy_to_device")


def copy_buffer(source: Device, buf: Any, target: Device, like: Any = None) -> Any:
    """``buf`` (on ``source``) copied to ``target``: directly between devices of one backend, else through the host.

    On a backend with in-order queues a direct copy is an op of the target's queue, ordered
    after the work that wrote ``buf`` by markers (see the backend's ``copy_to_device``).
    ``like``: the array ``buf`` belongs to; a copy through the host checks the data against
    its declared shape and dtype (:mod:`._checks`).
    """
    src = for_device(source)
    if src is for_device(target) and hasattr(src, "copy_to_device"):
        if target.type in _queues._backends:
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
    backend = for_device(device)
    if device.type in _queues._backends:
        return _queues.issue(backend.from_host, "to_device", backend.device_of, False, (host, device), {})
    return backend.from_host(host, device)


def import_buffer(backend: Any, obj: Any, device: Device) -> Any:
    """``obj``'s memory as a buffer of ``device`` (DLPack import), recorded like an op on a queue."""
    if device.type in _queues._backends:
        return _queues.issue(backend.import_dlpack, "from_dlpack", backend.device_of, False, (obj, device), {})
    return backend.import_dlpack(obj, device)


def write_buffer(device: Device, host: Any, out: Any) -> Any:
    """``host`` data written into the device buffer ``out`` (a host fallback's in-place result).

    On a device with in-order queues the write is enqueued, so it is recorded like an op:
    reads of ``out`` (and of the array owning its memory) wait for it.
    """
    backend = for_device(device)
    if device.type in _queues._backends:
        def write(target: Any, data: Any) -> Any:
            return backend.from_host(data, device, out=target)

        return _queues.issue(write, "setitem (host fallback)", backend.device_of, True, (out, host), {})
    return backend.from_host(host, device, out=out)


def read_buffer(device: Device, buf: Any) -> Any:
    """A buffer of ``device`` copied to the host (for fallbacks and copies), errors attributed."""
    backend = for_device(device)
    if device.type in _queues._backends:
        return _host_read(device, backend.to_host, buf)
    return backend.to_host(buf)


_spec.upcalls.validate_device = validate_device  # creation ops check the device they are asked for


# Dispatch sits below this layer and asks it, through hooks registered here, to load a
# device type's backend, to say why none serves one, and for the host fallback.
dispatch.upper.ensure_device_type = ensure_device_type
dispatch.upper.serves = serves
dispatch.upper.explain_missing = explain_missing
dispatch.upper.backend_for = for_device_type
dispatch.upper.host_fallback = _fallback.host_fallback
# The engine sits below this layer too: it asks which backend serves a device for the
# completion and synchronize hooks of backends without queues (API 1.1/1.2).
_engine.upper.backend_for = for_device

from . import _libraries  # noqa: E402  (op libraries: extension ops, backend API 1.4)
