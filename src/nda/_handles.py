"""The backend handle, the one view of a loaded backend, and the registry its layer publishes into.

A backend object (:mod:`nda.backends.contract`) has required members and many optional ones
(queues and their markers, a host fallback, direct copies, DLPack, memory statistics...).
Nothing in nda asks the object whether it has one: when the backend activates, the backends
layer resolves every member nda uses, once and under its lock (:mod:`nda.backends._handle`),
into a :class:`BackendHandle` whose optional members are either filled in or ``None``, and
publishes it here, per device type (:data:`HANDLES`), when the backend is complete. Every
layer reads the handle: the backends layer's data movement, the engine's device queues
(``engine.queues.register_backend`` and ``issuing`` take the handle) and its completion and
synchronize hooks, dispatch's subnormal-flush declaration and coverage.

The handle and the registry live in the bottom layer so that the layers below the backends
(dispatch, the engine) read published handles by import, without a callable registered from
above: a lookup is one dict read, ``HANDLES.get(device_type)``. Only the backends layer
writes the registry (:func:`publish`, :func:`withdraw`), under its activation lock; a backend
withdrawn takes everything it declared with it.

Layer: values (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from ._dtypes import DType, as_dtype

__all__ = ["BackendHandle", "HANDLES", "publish", "withdraw"]

_Member = Optional[Callable[..., Any]]

#: The members of a handle and their value when a backend does not provide them.
_OPTIONAL: dict[str, Any] = {
    "queued": False,
    "fallback_to_host": False,
    "host_views": False,
    "buffer_type": object,
    "declared_buffer_type": None,
    "device_of": None,
    "ensure_buffer": None,
    "copy_to_device": None,
    "dlpack": None,
    "dlpack_device": None,
    "import_dlpack": None,
    "dlpack_device_types": {},
    "buffer_owner": None,
    "synchronize": None,
    "record_completion": None,
    "memory_stats": None,
    "release_all": None,
    "partitioner": None,
    "flushes_subnormals": (),
    "flushed_dtypes": frozenset(),
    "record_marker": None,
    "wait_marker": None,
    "synchronize_marker": None,
    "marker_reached": None,
    "record_timed_marker": None,
    "marker_time": None,
    "to_host_in_order": None,
    "continues_after_fork": False,
}


def _identity(result: Any) -> Any:
    return result


class BackendHandle:
    """A loaded backend's capabilities, normalised (see the module docstring). Read-only.

    Identity: ``name``, ``backend`` (the object, for the backends layer's bookkeeping only:
    nothing reads members off it), ``device_types``. Data movement: ``to_host``,
    ``from_host``, ``device_of``, ``ensure_buffer`` (the identity when the backend has none),
    ``copy_to_device``, ``buffer_type`` (``object`` when undeclared: an ``isinstance`` test
    accepts anything) and ``declared_buffer_type`` (as declared, or None), DLPack
    (``dlpack``/``dlpack_device`` together or neither, ``import_dlpack``,
    ``dlpack_device_types``). Execution: ``synchronize``, ``record_completion``; in-order
    queues (``queued``, backend API 1.3): ``record_marker``, ``wait_marker``,
    ``synchronize_marker``, ``marker_reached`` (all four on a queued handle), and optional
    ``record_timed_marker``/``marker_time`` (both or neither), ``to_host_in_order``,
    ``buffer_owner``, ``continues_after_fork``. Routes: ``fallback_to_host``, ``host_views``.
    Numerics: ``flushes_subnormals`` (dtype names, as declared) and ``flushed_dtypes`` (the
    same as a frozenset of nda dtypes). Memory: ``memory_stats``, ``release_all``. Hybridize:
    ``partitioner``.
    """

    __slots__ = ("name", "backend", "device_types", "to_host", "from_host", *_OPTIONAL)

    name: str
    backend: Any
    device_types: tuple[str, ...]
    to_host: Callable[[Any], Any]
    from_host: Callable[..., Any]
    queued: bool
    fallback_to_host: bool
    host_views: bool
    buffer_type: Any
    declared_buffer_type: Any
    device_of: _Member
    ensure_buffer: Callable[[Any], Any]
    copy_to_device: _Member
    dlpack: _Member
    dlpack_device: _Member
    import_dlpack: _Member
    dlpack_device_types: dict[int, str]
    buffer_owner: _Member
    synchronize: _Member
    record_completion: _Member
    memory_stats: _Member
    release_all: _Member
    partitioner: _Member
    flushes_subnormals: tuple[str, ...]
    flushed_dtypes: frozenset[DType]
    record_marker: _Member
    wait_marker: _Member
    synchronize_marker: _Member
    marker_reached: _Member
    record_timed_marker: _Member
    marker_time: _Member
    to_host_in_order: _Member
    continues_after_fork: bool

    def __init__(
        self, name: str, backend: Any, device_types: Iterable[str], to_host: Callable[[Any], Any], from_host: Callable[..., Any], **members: Any
    ) -> None:
        unknown = sorted(set(members) - set(_OPTIONAL))
        if unknown:
            raise TypeError(f"BackendHandle(): unknown members {unknown}; a handle has {sorted(self.__slots__)}")
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "backend", backend)
        set_(self, "device_types", tuple(device_types))
        set_(self, "to_host", to_host)
        set_(self, "from_host", from_host)
        for member, default in _OPTIONAL.items():
            set_(self, member, members.get(member, default))
        if self.ensure_buffer is None:
            set_(self, "ensure_buffer", _identity)
        set_(self, "flushes_subnormals", tuple(self.flushes_subnormals))
        set_(self, "flushed_dtypes", frozenset(as_dtype(d) for d in self.flushes_subnormals))
        set_(self, "dlpack_device_types", dict(self.dlpack_device_types))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a backend handle is read-only (resolved when backend {self.name!r} activated)")

    def __repr__(self) -> str:
        caps = [c for c in ("queued", "fallback_to_host") if getattr(self, c)]
        caps += [c for c in ("copy_to_device", "dlpack", "import_dlpack", "memory_stats", "partitioner") if getattr(self, c) is not None]
        return f"<backend handle {self.name!r} for {', '.join(self.device_types)}: {', '.join(caps) or 'required members only'}>"


#: device type -> the handle of the loaded backend serving it. Written only by the backends
#: layer, under its activation lock, once the backend is complete (:func:`publish`), and
#: emptied of a backend when it is taken out (:func:`withdraw`); read anywhere without a lock
#: (a dict read is atomic).
HANDLES: dict[str, BackendHandle] = {}


def publish(handle: BackendHandle) -> None:
    """Make ``handle`` the view of each of its device types (the backends layer, under its lock)."""
    for device_type in handle.device_types:
        HANDLES[device_type] = handle


def withdraw(backend: Any) -> list[str]:
    """Take out the handles of ``backend`` (the object); the device types it served."""
    gone = [d for d, h in HANDLES.items() if h.backend is backend]
    for device_type in gone:
        del HANDLES[device_type]
    return gone
