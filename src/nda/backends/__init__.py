"""Backend discovery and loading through the ``nda.backends`` entry-point group.

Every backend, the built-in numpy one included, arrives the same way: a distribution
declares an entry point in the group ``nda.backends`` whose name is the device type it
serves (``cpu = "nda.backends.cpu:backend"``) and whose object is the backend. Nothing is
imported at ``import nda``: the first time an op needs a kernel for a device type that
has none, dispatch calls :func:`ensure_device_type`, which loads that entry point,
checks it and lets it register its kernels. ``nda.backends.load(name)`` does the same on
request, and also accepts ``"package.module"`` or ``"package.module:attr"`` for a
backend that is not installed as an entry point.

``NDA_BACKENDS`` selects backends: ``cpu,sim`` loads only those, ``-cuda`` excludes one.
A backend that fails to import or to register is isolated: it is recorded with its full
cause in :func:`status`, and nda and the other backends keep working.

A backend object provides: ``name``; ``api_version`` (``"1.0"``); ``device_types``;
``register(register_kernel)``, which calls ``register_kernel(op, dtypes, fn, layout=,
priority=, supports=)`` for its kernels; ``to_host(buf)`` and ``from_host(ndarray,
device)``; and ``dlpack(buf, **kw)``/``dlpack_device(device)`` for DLPack export.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import traceback
from typing import Any, Callable

from .. import dispatch
from .._dtypes import CATEGORIES, DType, as_dtype

__all__ = ["BackendError", "BackendValidationError", "API_VERSION", "load", "status", "status_table", "for_device", "to_host"]

GROUP = "nda.backends"
API_VERSION = "1.0"


class BackendError(RuntimeError):
    """A backend could not be loaded or is not available."""


class BackendValidationError(BackendError):
    """A backend registered something that does not fit the op catalog or the contract."""


class _Record:
    __slots__ = ("name", "source", "state", "reason", "backend", "device_types")

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self.state = "installed"  # installed | loaded | failed | excluded
        self.reason = ""
        self.backend: Any = None
        self.device_types: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "state": self.state, "reason": self.reason, "device_types": list(self.device_types)}


_records: dict[str, _Record] | None = None
_by_device_type: dict[str, Any] = {}


def _selection() -> tuple[set[str] | None, set[str]]:
    """(only these, or None for all; excluded) from ``NDA_BACKENDS``."""
    raw = os.environ.get("NDA_BACKENDS", "").strip()
    if not raw:
        return None, set()
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
                rec.state = "excluded"
                rec.reason = f"excluded by NDA_BACKENDS={os.environ.get('NDA_BACKENDS', '')!r}"
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


def _validate_version(name: str, backend: Any) -> None:
    version = getattr(backend, "api_version", None)
    if not isinstance(version, str) or not version.count(".") == 1:
        raise BackendValidationError(f"backend {name!r}: api_version must be a 'major.minor' string such as {API_VERSION!r}, got {version!r}")
    if version.split(".")[0] != API_VERSION.split(".")[0]:
        raise BackendValidationError(
            f"backend {name!r} implements backend API {version}, but this nda speaks {API_VERSION}; "
            f"install a version of the backend built for nda's backend API {API_VERSION.split('.')[0]}.x"
        )


def _registrar(name: str, device_types: tuple[str, ...]) -> Callable[..., None]:
    def register_kernel(op: str, dtypes: Any, fn: Callable[..., Any], *, device_type: str | None = None, layout: str = "strided", priority: int = 0, supports: Callable[..., bool] | None = None) -> None:
        from ..ops import CATALOG

        decl = CATALOG.get(op)
        if decl is None:
            raise BackendValidationError(f"backend {name!r} registers a kernel for unknown op {op!r}; the catalog's ops are listed in nda.ops.CATALOG")
        dtype_list = [dtypes] if isinstance(dtypes, (DType, str)) else list(dtypes)
        for dt in dtype_list:
            try:
                resolved = as_dtype(dt)
            except TypeError as err:
                raise BackendValidationError(f"backend {name!r}, op {op!r}: {err}") from None
            if resolved not in CATEGORIES[decl.dtypes]:
                raise BackendValidationError(
                    f"backend {name!r} registers {op!r} for {resolved.name}, but {op!r} is declared for {decl.dtypes} dtypes only"
                )
        dev = device_type or device_types[0]
        if dev not in device_types:
            raise BackendValidationError(f"backend {name!r} registers a kernel for device type {dev!r}, which it does not declare in device_types {device_types}")
        try:
            dispatch.register(op, dev, dtype_list, fn, layout=layout, priority=priority, supports=supports, backend=name)
        except (TypeError, ValueError) as err:
            raise BackendValidationError(f"backend {name!r}, op {op!r}: {err}") from None

    return register_kernel


def _activate(rec: _Record, spec: str) -> Any:
    try:
        backend = _import_object(spec)
    except Exception as err:  # noqa: BLE001 - any import failure isolates the backend
        rec.state, rec.reason = "failed", f"import of {spec!r} failed: {type(err).__name__}: {err}\n{traceback.format_exc()}"
        raise BackendError(f"backend {rec.name!r} could not be imported ({type(err).__name__}: {err}); see nda.backends.status()") from err
    try:
        _validate_version(rec.name, backend)
        device_types = tuple(getattr(backend, "device_types", ()) or (rec.name,))
        backend.register(_registrar(rec.name, device_types))
    except Exception as err:  # noqa: BLE001
        dispatch.unregister_backend(rec.name)
        rec.state, rec.reason = "failed", f"{type(err).__name__}: {err}\n{traceback.format_exc()}"
        if isinstance(err, BackendError):
            raise
        raise BackendValidationError(f"backend {rec.name!r} failed to register its kernels: {type(err).__name__}: {err}") from err
    rec.state, rec.reason, rec.backend, rec.device_types = "loaded", "", backend, device_types
    for dev in device_types:
        _by_device_type[dev] = backend
    return backend


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
    _activate(rec, rec.source)
    return True


def load(name: str) -> Any:
    """Load a backend by entry-point name, or from ``"package.module[:attr]"`` at run time."""
    records = _discover()
    rec = records.get(name)
    if rec is not None:
        if rec.state == "loaded":
            return rec.backend
        if rec.state == "excluded":
            raise BackendError(f"backend {name!r} is {rec.reason}")
        return _activate(rec, rec.source)
    if not _module_exists(name.partition(":")[0]):
        raise BackendError(f"no backend named {name!r} is installed (installed: {', '.join(sorted(records)) or 'none'}); pass an importable 'package.module[:attr]' to load one that is not installed")
    backend_name = getattr(_safe_peek(name), "name", None) or name
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


def status() -> list[dict[str, Any]]:
    """What is installed, what loaded, what failed and why (one dict per backend)."""
    return [rec.as_dict() for rec in _discover().values()]


def status_table() -> str:
    """:func:`status` as a table for people."""
    rows = [("backend", "state", "devices", "entry point", "reason")]
    for rec in _discover().values():
        reason = rec.reason.strip().splitlines()[0] if rec.reason else ""
        rows.append((rec.name, rec.state, ",".join(rec.device_types) or "-", rec.source, reason))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows)


def explain_missing(device_type: str) -> str:
    """A sentence on why a device type has no kernels (used in DispatchError messages)."""
    if device_type in _by_device_type:
        return ""
    rec = _discover().get(device_type)
    if rec is None:
        known = ", ".join(sorted(_discover())) or "none"
        return f" No backend serves device type {device_type!r} (installed backends: {known}); install one that registers it in the {GROUP!r} entry-point group."
    if rec.state == "excluded":
        return f" Backend {device_type!r} is {rec.reason}."
    if rec.state == "failed":
        return f" Backend {device_type!r} failed to load: {rec.reason.splitlines()[0]}"
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


def to_host(array: Any) -> Any:
    """The array's data as a NumPy array (no copy for cpu)."""
    return for_device(array._meta.device).to_host(array._buf)
