"""Backend activation: discovery, validation and registration, under one lock, then publication.

A backend becomes usable in one step that no other thread can observe half done, as JAX's
``xla_bridge`` initialises its backends: under :data:`LOCK`, the entry point is imported,
the backend's version, optional declarations and devices are validated, and every kernel
it registers is validated and *staged*; only when all of that succeeded are the kernels
published into dispatch's tables (one batch), its handle (:class:`nda._handles.BackendHandle`,
resolved by :func:`._handle.resolve` once the backend is validated, before its kernels
register: the queues' wrappers take it) published into :data:`nda._handles.HANDLES` with its
device queues registered (:func:`_register_queues`), and its
device types made visible (``_by_device_type``, written last: the unlocked fast path
``device_type in _by_device_type`` then sees a complete backend). The handle is the one view
of the backend: this module, the engine (queues, completion and synchronize hooks) and
dispatch (the subnormal-flush declaration) read it, never the object. A backend that fails
is isolated: nothing of it reached dispatch, so no other backend's kernels are touched.
Two threads that first use a device together wait for one activation.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Any, Callable, Iterable, Protocol

from .. import _forksafe, dispatch
from .._devices import Device, as_layout
from .._dtypes import CATEGORIES, DType, as_dtype
from ..engine import queues as _queues
from ..engine import forget_device_hooks as _forget_device_hooks
from ..engine import host_read as _host_read
from .. import _handles as _published
from .._handles import BackendHandle
from ._handle import resolve as _resolve
from .contract import API_VERSION, QUEUE_MEMBERS, DeviceInfo, check_kernel_signature
from . import _libraries

__all__ = [
    "BackendError",
    "BackendValidationError",
    "LOCK",
    "activate",
    "ensure_device_type",
    "handle",
    "checked_registration",
    "Layouts",
    "install_layouts",
]

#: Held while a backend (or an op library) activates; reentrant: a backend's registration
#: may need another device type (cpu) activated first. Fork-safe (:mod:`nda._forksafe`): an
#: ``os.fork()`` waits for an activation under way on another thread, so a child never finds a
#: backend half imported, nor this lock held by a thread it does not have.
LOCK = _forksafe.guard(threading.RLock(), "a backend's activation on another thread", rank=20)

GROUP = "nda.backends"


class BackendError(RuntimeError):
    """A backend could not be loaded or is not available."""


class BackendValidationError(BackendError):
    """A backend registered something that does not fit the op catalog or the contract."""


class _Record:
    __slots__ = (
        "name",
        "source",
        "state",
        "reason",
        "backend",
        "device_types",
        "devices",
        "api_version",
        "flushes_subnormals",
        "dlpack_device_types",
    )

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
            "name": self.name,
            "source": self.source,
            "state": self.state,
            "reason": self.reason,
            "api_version": self.api_version,
            "device_types": list(self.device_types),
            "devices": [d.as_dict() for d in self.devices],
            "flushes_subnormals": list(self.flushes_subnormals),
        }


_records: dict[str, _Record] | None = None
_by_device_type: dict[str, Any] = {}
_handles: dict[str, BackendHandle] = _published.HANDLES  # device type -> handle, published (nda._handles)
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
        with LOCK:  # an os.fork() waits for the discovery (it imports importlib.metadata, reads files)
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
        if not callable(getattr(backend, "device_of", None)):
            raise BackendValidationError(
                f"backend {name!r} declares in_order_queues but lacks device_of(buf); the engine finds the queue of each op's "
                f"result with it: provide device_of(buf) -> Device (see nda.backends.contract)"
            )
    return version


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
            raise BackendValidationError(
                f"backend {name!r} declares dlpack_device_types but has no import_dlpack(obj, device) method; see nda.backends.contract"
            )
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


class Layouts(Protocol):
    """How a backend's layouts reach ``nda.layouts``, a layer above this one: the one
    registration into this layer. The layouts layer implements it (mypy checks it) and
    installs it once, when it is imported (always before a backend loads: ``import nda``
    imports it), with :func:`install_layouts`. The members are ``nda.layouts``' functions
    of the same names.
    """

    def register_converter(self, device_type: str, src: Any, dst: Any, fn: Callable[[Any], Any], /, *, backend: str = ...) -> None: ...
    def register_storage(
        self,
        device_type: str,
        layout: Any,
        /,
        *,
        to_host: Callable[[Any], Any],
        from_host: Callable[..., Any],
        dtypes: Iterable[Any] | None = ...,
        backend: str = ...,
    ) -> None: ...
    def register_layout(
        self,
        name: str,
        /,
        *,
        min_ndim: int = ...,
        max_ndim: int | None = ...,
        components: Iterable[str] = ...,
        description: str = ...,
        host_components: Callable[[Any], dict[str, Any]] | None = ...,
    ) -> Any: ...
    def unregister_backend(self, backend: str, /) -> None: ...


class _NoLayouts:
    """The :class:`Layouts` before ``nda.layouts`` is imported: a backend cannot register layouts."""

    def register_converter(self, device_type: str, src: Any, dst: Any, fn: Callable[[Any], Any], /, *, backend: str = "<runtime>") -> None:
        _no_layouts()

    def register_storage(
        self,
        device_type: str,
        layout: Any,
        /,
        *,
        to_host: Callable[[Any], Any],
        from_host: Callable[..., Any],
        dtypes: Iterable[Any] | None = None,
        backend: str = "<runtime>",
    ) -> None:
        _no_layouts()

    def register_layout(
        self,
        name: str,
        /,
        *,
        min_ndim: int = 0,
        max_ndim: int | None = None,
        components: Iterable[str] = (),
        description: str = "",
        host_components: Callable[[Any], dict[str, Any]] | None = None,
    ) -> Any:
        _no_layouts()

    def unregister_backend(self, backend: str, /) -> None:
        return None


def _no_layouts() -> None:
    raise BackendValidationError("layouts are registered through nda.layouts, which is not imported (import nda)")


_layouts: Layouts = _NoLayouts()


def install_layouts(provider: Layouts) -> None:
    """Install how a backend's layouts reach ``nda.layouts`` (see :class:`Layouts`); once, at its import."""
    global _layouts
    if not isinstance(_layouts, _NoLayouts):
        raise RuntimeError("nda.backends.install_layouts: a provider is installed already (nda.layouts installs it once, at import)")
    _layouts = provider


def _registrar(handle: BackendHandle, staged: list[Any]) -> Callable[..., None]:
    """The ``register_kernel`` a backend's ``register()`` receives: each kernel is validated at
    once and staged in ``staged`` (published into dispatch only when the whole backend is valid)."""
    name, device_types, queued = handle.name, handle.device_types, handle.queued

    def register_kernel(
        op: str,
        dtypes: Any,
        fn: Callable[..., Any],
        *,
        device_type: str | None = None,
        layout: str = "strided",
        priority: int = 0,
        supports: Callable[..., bool] | None = None,
        signatures: Any = None,
        out_layout: str | None = None,
    ) -> None:
        from ..ops import lookup

        decl = lookup(op)  # a catalog op, or an op of a loaded op library
        if decl is None:
            raise BackendValidationError(
                f"backend {name!r} registers a kernel for unknown op {op!r}; the catalog's ops are listed in nda.ops.CATALOG"
            )
        dtype_list = checked_registration(f"backend {name!r}", op, decl, dtypes, layout, fn)
        dev = device_type or device_types[0]
        if dev not in device_types:
            raise BackendValidationError(
                f"backend {name!r} registers a kernel for device type {dev!r}, which it does not declare in device_types {device_types}"
            )
        if queued:  # its kernels only enqueue work: the engine records what each one enqueued
            fn = _queues.issuing(fn, op, handle, mutating=bool(decl.mutates), view=bool(decl.view))
        try:
            staged.extend(
                dispatch.prepare(
                    op,
                    dev,
                    dtype_list,
                    fn,
                    layout=layout,
                    priority=priority,
                    supports=supports,
                    backend=name,
                    signatures=signatures,
                    out_layout=out_layout,
                    queued=bool(queued),
                )
            )
        except (TypeError, ValueError) as err:
            raise BackendValidationError(f"backend {name!r}, op {op!r}: {err}") from None

    def device_of(device_type: str | None, what: str) -> str:
        dev = device_type or device_types[0]
        if dev not in device_types:
            raise BackendValidationError(
                f"backend {name!r} registers {what} for device type {dev!r}, which it does not declare in device_types {device_types}"
            )
        return dev

    # Layout registration (nda.layouts), reached from the same function so that a backend
    # needs nothing else in register(); everything is undone if the backend fails.
    def converter(src: str, dst: str, fn: Callable[[Any], Any], *, device_type: str | None = None) -> None:
        """Register ``fn(buf) -> buf`` converting ``src`` buffers to ``dst`` buffers on this device type."""
        if queued:
            fn = _queues.issuing(fn, f"to_layout({src} -> {dst})", handle)
        try:
            _layouts.register_converter(device_of(device_type, f"a {src} -> {dst} converter"), src, dst, fn, backend=name)
        except (TypeError, ValueError) as err:
            raise BackendValidationError(f"backend {name!r}, converter {src} -> {dst}: {err}") from None

    def storage(
        layout: str,
        *,
        to_host: Callable[[Any], Any],
        from_host: Callable[..., Any],
        dtypes: Iterable[Any] | None = None,
        device_type: str | None = None,
    ) -> None:
        """How this device type's ``layout`` buffers move to and from cpu buffers of that layout
        (``dtypes``: the ones it can hold in that layout, when not all)."""
        if queued:  # reads after the version read, errors attributed; uploads recorded like ops
            to_host = _attributed(to_host, handle.device_of)  # type: ignore[arg-type]  # validated: a queued backend has device_of
            from_host = _queues.issuing(from_host, f"to_device ({layout})", handle)
        try:
            _layouts.register_storage(
                device_of(device_type, f"{layout} storage"), layout, to_host=to_host, from_host=from_host, dtypes=dtypes, backend=name
            )
        except (TypeError, ValueError) as err:
            raise BackendValidationError(f"backend {name!r}, storage of {layout}: {err}") from None

    def layout(layout_name: str, **options: Any) -> Any:
        """Declare a layout of the backend's own (see nda.layouts.register_layout)."""
        try:
            return _layouts.register_layout(layout_name, **options)
        except (TypeError, ValueError) as err:
            raise BackendValidationError(f"backend {name!r}, layout {layout_name!r}: {err}") from None

    register_kernel.converter = converter  # type: ignore[attr-defined]
    register_kernel.storage = storage  # type: ignore[attr-defined]
    register_kernel.layout = layout  # type: ignore[attr-defined]
    return register_kernel


def activate(rec: _Record, spec: str) -> Any:
    """Import, validate and register the backend of ``rec`` (from ``spec``), then publish it.

    Under :data:`LOCK`: a second thread asking for the same backend waits, then finds it
    loaded (or failed, with the reason). Raises BackendError (BackendValidationError for a
    backend that does not fit the contract) and records why in ``rec``.
    """
    with LOCK:
        if rec.state == "loaded" and rec.source == spec:
            return rec.backend  # another thread activated it while this one waited
        return _activate(rec, spec)


def _activate(rec: _Record, spec: str) -> Any:
    try:
        backend = _import_object(spec)
    except Exception as err:  # noqa: BLE001 - any import failure isolates the backend
        rec.fail("failed", f"import of {spec!r} failed: {type(err).__name__}: {err}\n{_traceback()}")
        raise BackendError(f"backend {rec.name!r} could not be imported ({type(err).__name__}: {err}); see nda.backends.status()") from err
    published = False
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
        # What nda knows of the backend, read off the object once (the only reads: everything
        # after this, the engine's queues and dispatch included, reads the handle).
        handle = _resolve(rec.name, backend, device_types, rec.dlpack_device_types, rec.flushes_subnormals)
        staged: list[Any] = []
        backend.register(_registrar(handle, staged))
        dispatch.publish(staged)  # the whole backend is valid: its kernels become visible at once
        published = True
        _published.publish(handle)  # its flush declaration, hooks and members with it
        _register_queues(handle)
        for info in infos:
            _devices[info.device] = info
        rec.state, rec.reason, rec.backend, rec.device_types, rec.devices = "loaded", "", backend, device_types, infos
        for dev in device_types:
            _by_device_type[dev] = backend  # last: the unlocked check in ensure_device_type sees a complete backend
        _forget_device_hooks()  # the engine's cached completion/synchronize hooks (None for a device asked before)
        for dev in device_types:  # kernels of op libraries that waited for this device type
            _libraries.apply_pending(dev, handle)
    except BackendError as err:
        _unregister(rec.name, backend, published)
        if rec.state not in ("unavailable",):
            # The sentence first: status_table(), `python -m nda info`, DeviceUnavailableError
            # and the conformance kit show the reason's first line; status() keeps the traceback.
            rec.state = "failed"
            rec.reason = rec.reason or f"{err}\n{_traceback()}"
        raise
    except Exception as err:  # noqa: BLE001
        _unregister(rec.name, backend, published)
        rec.fail("failed", f"{type(err).__name__}: {err}\n{_traceback()}")
        raise BackendValidationError(f"backend {rec.name!r} failed to register its kernels: {type(err).__name__}: {err}") from err
    return backend


def _unregister(name: str, backend: Any, published: bool) -> None:
    """Undo what a backend that failed did: only its own registrations (never another backend's)."""
    for dev in [d for d, b in _by_device_type.items() if b is backend]:
        del _by_device_type[dev]
    _published.withdraw(backend)  # its handle, and with it its flush declaration and hooks
    _forget_device_hooks()
    for device in [d for d in _devices if d.type not in _by_device_type]:
        del _devices[device]
    if published:
        dispatch.unregister_backend(name)
    _layouts.unregister_backend(name)
    for dev, queued in _queues.queue_backends().items():
        if queued.backend is backend:  # registered by the backend taken out
            _queues.unregister_device_type(dev)


def _register_queues(handle: BackendHandle) -> None:
    """The engine's device queues follow the handle just published: its device types get queues
    when it declares them, and lose those of a backend that served them before (whose queues
    would otherwise order this backend's work by the other's markers)."""
    registered = _queues.queue_backends()
    for dev in handle.device_types:
        if dev in registered and registered[dev] is not handle:
            _queues.unregister_device_type(dev)
        if handle.queued:
            _queues.register_backend(dev, handle)


def _attributed(read: Callable[[Any], Any], device_of: Callable[[Any], Device]) -> Callable[[Any], Any]:
    """A host read of a queue device's buffers whose errors carry the note of the op that failed."""

    def read_attributed(buf: Any) -> Any:
        return _host_read(device_of(buf), read, buf)

    return read_attributed


def ensure_device_type(device_type: str) -> bool:
    """Load the backend for ``device_type`` if it is installed and not loaded; True if it loaded now."""
    if device_type in _by_device_type:
        return False
    with LOCK:
        if device_type in _by_device_type:
            return False  # another thread activated it meanwhile
        rec = _discover().get(device_type)
        if rec is None or rec.state != "installed":
            return False
        try:
            _activate(rec, rec.source)
        except BackendError:
            return False  # recorded in status(); the caller raises its own "not available" error
        return True


def handle(device: Any) -> BackendHandle:
    """The handle of the backend serving ``device`` (a Device; loading the backend if needed)."""
    found = _handles.get(device.type)
    if found is None:
        ensure_device_type(device.type)
        found = _handles.get(device.type)
        if found is None:
            raise BackendError(f"no backend available for device {device}")
    return found
