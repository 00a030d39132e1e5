"""Loading op libraries (extension ops, backend API 1.4): discovery, versions, clashes, kernels.

An op library (:class:`nda.ops.extension.OpLibrary`) adds new ops; it arrives like a
backend, through an entry point (group ``nda.extensions``, the entry point's name is the
library's name: ``mylib = "mypkg.ops:library"``) or ``nda.backends.load("mypkg.ops")``.
Nothing is imported at ``import nda``: a library loads on first use of ``nda.ext.<name>``,
on ``load``, or when ``python -m nda info`` or the conformance kit asks for everything.

Loading, in order, each failure refusing the whole library with one sentence that names it
(and what it clashes with) and leaving nda as it was:

1. versions: ``api_version`` must be a backend API of this nda's major version, 1.4 or
   newer (libraries arrived with 1.4) and not newer than nda's; ``nda_version``, when given,
   must be this nda's ``major.minor``;
2. clashes (:func:`nda.ops.extension.clash`): the library's name, its ops' names;
3. declarations: :func:`nda.ops.extension.install` (dispatch tables are created);
4. kernels: ``library.register(register_kernel)``, each call validated like a backend's
   (its own ops only, declared dtypes, layout, the kernel's signature). A kernel for a
   device type whose backend is loaded is registered at once (wrapped for the device's
   queue when the backend has in-order queues, as the backend's own kernels are); one for
   a device type not loaded yet waits until its backend loads (:func:`apply_pending`).

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable

from .. import dispatch
from .._handles import BackendHandle
from ..engine import queues as _queues
from ..ops import extension as _ext
from .contract import API_VERSION

__all__ = ["GROUP", "load_library", "libraries", "installed_names", "apply_pending", "is_library", "load_all"]

GROUP = "nda.extensions"
#: Backend API minor version that introduced op libraries.
_FIRST_MINOR = 4


class _Record:
    __slots__ = ("name", "source", "state", "reason", "library")

    def __init__(self, name: str, source: str) -> None:
        self.name, self.source, self.state, self.reason, self.library = name, source, "installed", "", None

    def as_dict(self) -> dict[str, Any]:
        ops = [d.name for d in _ext.ops_of(self.name)] if self.state == "loaded" else []
        version = getattr(self.library, "version", "") if self.library is not None else ""
        return {"name": self.name, "source": self.source, "state": self.state, "reason": self.reason, "version": version, "ops": ops}


_records: dict[str, _Record] | None = None
#: device type -> kernels waiting for that device type's backend: (library, registration kwargs)
_pending: dict[str, list[tuple[str, dict[str, Any]]]] = {}


def _discover() -> dict[str, _Record]:
    global _records
    if _records is None:
        from ._activation import LOCK

        with LOCK:  # an os.fork() waits for the discovery (nda._forksafe)
            if _records is None:
                from importlib.metadata import entry_points

                found: dict[str, _Record] = {}
                for ep in entry_points(group=GROUP):
                    found.setdefault(ep.name, _Record(ep.name, ep.value))
                _records = found
    return _records


def installed_names() -> list[str]:
    """Libraries installed or loaded (entry points and ones loaded at run time)."""
    return sorted(_discover())


def libraries() -> list[dict[str, Any]]:
    """Every op library nda knows of: name, source, state (installed/loaded/failed), reason, version, ops."""
    return [rec.as_dict() for rec in _discover().values()]


def is_library(obj: Any) -> bool:
    return isinstance(obj, _ext.OpLibrary)


def load_library(name: str) -> Any:
    """Load the installed library ``name`` (entry point), or the one a ``"package.module[:attr]"`` names.

    Under the activation lock, its import too: an ``os.fork()`` waits for it (nda._forksafe)."""
    from ._activation import LOCK

    with LOCK:
        return _load_library(name)


def _load_library(name: str) -> Any:
    records = _discover()
    rec = records.get(name)
    if rec is not None:
        if rec.state == "loaded":
            return rec.library
        if rec.state == "failed":
            from . import BackendError

            raise BackendError(f"op library {name!r} failed to load: {rec.reason.splitlines()[0]}")
        return _activate(rec, _import(rec))
    from . import BackendError, _import_object

    try:
        obj = _import_object(name)
    except Exception as err:  # noqa: BLE001
        raise BackendError(
            f"no op library named {name!r} is installed (installed: {', '.join(sorted(records)) or 'none'}), and importing it failed: {type(err).__name__}: {err}"
        ) from err
    return load_object(obj, name)


def load_object(obj: Any, source: str) -> Any:
    """Load an :class:`~nda.ops.extension.OpLibrary` object (or a module whose ``library`` is one)."""
    from . import BackendValidationError

    library = obj if is_library(obj) else getattr(obj, "library", None)
    if not is_library(library):
        raise BackendValidationError(
            f"{source!r} is neither a backend nor an op library (nda.ops.extension.OpLibrary); see the backend guide (python -m nda.testing.conformance --guide)"
        )
    records = _discover()
    rec = records.get(library.name)
    if rec is not None and rec.state == "loaded":
        if rec.library is library:
            return library  # loading the same library again returns it
    if rec is None or rec.state != "loaded":
        rec = records[library.name] = _Record(library.name, source) if rec is None else rec
        rec.source = source
    else:  # another object claims a loaded name: refused as a clash (keeps the loaded one)
        sentence = _ext.clash(library, source, _sources())
        raise BackendValidationError(sentence or f"op library {library.name!r} is already loaded")
    return _activate(rec, library)


def load_all() -> None:
    """Load every installed library (``python -m nda info``, the conformance kit); failures are recorded."""
    from . import BackendError

    for name, rec in list(_discover().items()):
        if rec.state == "installed":
            try:
                load_library(name)
            except BackendError:
                pass


def _import(rec: _Record) -> Any:
    from . import BackendError, _import_object, _traceback

    try:
        obj = _import_object(rec.source)
    except Exception as err:  # noqa: BLE001
        rec.state, rec.reason = "failed", f"import of {rec.source!r} failed: {type(err).__name__}: {err}\n{_traceback()}"
        raise BackendError(f"op library {rec.name!r} could not be imported ({type(err).__name__}: {err}); see nda.backends.libraries()") from err
    library = obj if is_library(obj) else getattr(obj, "library", None)
    if not is_library(library):
        from . import BackendValidationError

        rec.state, rec.reason = "failed", f"entry point {rec.source!r} is not an nda.ops.extension.OpLibrary"
        raise BackendValidationError(f"op library {rec.name!r}: {rec.reason}")
    if library.name != rec.name:
        from . import BackendValidationError

        rec.state, rec.reason = (
            "failed",
            f"entry point {rec.name!r} in group {GROUP!r} names a library called {library.name!r}; the two names must match",
        )
        raise BackendValidationError(f"op library {rec.name!r}: {rec.reason}")
    return library


def _sources() -> dict[str, str]:
    return {name: rec.source for name, rec in _discover().items() if rec.state == "loaded"}


def nda_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nda")
    except PackageNotFoundError:  # running from a source tree
        return "0.1.0"


def _check_versions(library: Any, source: str) -> None:
    from . import BackendValidationError

    name = library.name
    version = library.api_version
    ours = API_VERSION.split(".")
    if not isinstance(version, str) or version.count(".") != 1 or not all(p.isdigit() for p in version.split(".")):
        raise BackendValidationError(
            f"op library {name!r} from {source}: api_version must be a 'major.minor' string such as {API_VERSION!r}, got {version!r}"
        )
    major, minor = (int(p) for p in version.split("."))
    if major != int(ours[0]):
        raise BackendValidationError(
            f"op library {name!r} from {source} was built for backend API {version}, but this nda speaks {API_VERSION}; "
            f"install a build of {name!r} for backend API {ours[0]}.x"
        )
    if minor > int(ours[1]):
        raise BackendValidationError(
            f"op library {name!r} from {source} was built for backend API {version}, newer than this nda's {API_VERSION}; "
            f"upgrade nda, or install a build of {name!r} for API {API_VERSION}"
        )
    if minor < _FIRST_MINOR:
        raise BackendValidationError(
            f"op library {name!r} from {source} declares backend API {version}, but op libraries exist since API {ours[0]}.{_FIRST_MINOR}; "
            f"declare api_version = '{ours[0]}.{_FIRST_MINOR}' or newer"
        )
    wanted = library.nda_version
    if wanted is not None:
        have = ".".join(nda_version().split(".")[:2])
        if str(wanted) != have:
            raise BackendValidationError(
                f"op library {name!r} from {source} was built for nda {wanted}, but this is nda {nda_version()}; "
                f"install a build of {name!r} for nda {have}"
            )


def _activate(rec: _Record, library: Any) -> Any:
    from . import BackendError, BackendValidationError, _traceback

    source = rec.source
    rec.library = library
    installed: list[Any] = []
    try:
        _check_versions(library, source)
        sentence = _ext.clash(library, source, _sources())
        if sentence is not None:
            raise BackendValidationError(sentence)
        try:
            installed = _ext.install(library)
        except _ext.ExtensionError as err:
            raise BackendValidationError(str(err)) from None
        if library.register is not None:
            library.register(_registrar(library))
    except BackendError as err:
        _rollback(library.name, installed)
        rec.state, rec.reason = "failed", f"{err}\n{_traceback()}"
        raise
    except Exception as err:  # noqa: BLE001
        _rollback(library.name, installed)
        rec.state, rec.reason = "failed", f"{type(err).__name__}: {err}\n{_traceback()}"
        raise BackendValidationError(
            f"op library {library.name!r} from {source} failed to register its kernels: {type(err).__name__}: {err}"
        ) from err
    rec.state, rec.reason = "loaded", ""
    for hook in list(_on_load):
        hook(library.name)
    return library


#: Called with a library's name once it loaded (the front end builds nda.ext.<name> lazily; autograd listens there).
_on_load: list[Callable[[str], None]] = []


def _rollback(name: str, installed: list[Any]) -> None:
    label = _label(name)
    dispatch.unregister_backend(label)
    for device_type in list(_pending):
        _pending[device_type] = [item for item in _pending[device_type] if item[0] != name]
    for op in _ext.uninstall(name):
        dispatch._TABLES.pop(op, None)


def _label(library: str) -> str:
    """The ``backend`` string of a library's kernels in dispatch tables (``explain`` shows it)."""
    return f"{library} (op library)"


def _registrar(library: Any) -> Callable[..., None]:
    from . import BackendValidationError, checked_registration

    name = library.name
    own = {f"{name}.{s}": s for s in library.op_names}

    def register_kernel(
        op: str,
        dtypes: Any,
        fn: Callable[..., Any],
        *,
        device_type: str,
        layout: str = "strided",
        priority: int = 0,
        supports: Callable[..., bool] | None = None,
        signatures: Any = None,
        out_layout: str | None = None,
    ) -> None:
        qualified = op if op in own else f"{name}.{op}"
        if qualified not in own:
            raise BackendValidationError(
                f"op library {name!r} registers a kernel for {op!r}, which it does not declare; a library registers kernels "
                f"for its own ops ({', '.join(library.op_names) or 'none'}), backends register kernels for catalog ops"
            )
        decl = _ext.EXTENSIONS[qualified]
        dtype_list = checked_registration(f"op library {name!r}", op, decl, dtypes, layout, fn)
        if not isinstance(device_type, str) or not device_type:
            raise BackendValidationError(f"op library {name!r}, op {op!r}: device_type must name a device type such as 'cpu', got {device_type!r}")
        item = dict(
            op=qualified,
            dtypes=dtype_list,
            fn=fn,
            device_type=device_type,
            layout=layout,
            priority=priority,
            supports=supports,
            signatures=signatures,
            out_layout=out_layout,
            mutating=bool(decl.mutates),
        )
        from . import _by_device_type, _handles

        if device_type not in _by_device_type:
            _pending.setdefault(device_type, []).append((name, item))
        else:
            _apply(name, item, _handles[device_type])

    return register_kernel


def _apply(library: str, item: dict[str, Any], handle: BackendHandle) -> None:
    from . import BackendValidationError

    fn = item["fn"]
    queued = handle.queued
    if queued:  # the device's queue records what the kernel enqueued, as for the backend's own kernels
        fn = _queues.issuing(fn, item["op"], handle, mutating=item["mutating"])
    try:
        dispatch.publish(
            dispatch.prepare(
                item["op"],
                item["device_type"],
                item["dtypes"],
                fn,
                layout=item["layout"],
                priority=item["priority"],
                supports=item["supports"],
                backend=_label(library),
                signatures=item["signatures"],
                out_layout=item["out_layout"],
                queued=queued,
            )
        )
    except (TypeError, ValueError) as err:
        raise BackendValidationError(f"op library {library!r}, op {item['op']!r}: {err}") from None


def apply_pending(device_type: str, handle: BackendHandle) -> None:
    """Register the library kernels that waited for ``device_type``'s backend (it just loaded; ``handle``: its handle)."""
    for library, item in _pending.pop(device_type, []):
        _apply(library, item, handle)
