"""The backend handle: what nda knows of a loaded backend, resolved once when it activates.

A backend object (:mod:`nda.backends.contract`) has required members and many optional
ones (queues, a host fallback, direct copies, DLPack, memory statistics...). Call sites
never ask the object whether it has one: activation builds a :class:`BackendHandle` that
says, once, what the backend can do, with every optional member either filled in or
``None``, and the call sites read the handle. ``nda.backends.handle(device)`` returns it.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["BackendHandle"]


def _identity(result: Any) -> Any:
    return result


def _member(backend: Any, name: str) -> Callable[..., Any] | None:
    found = getattr(backend, name, None)
    return found if callable(found) else None


class BackendHandle:
    """A loaded backend's capabilities, normalised (see the module docstring). Read-only."""

    __slots__ = (
        "name",
        "backend",
        "device_types",
        "queued",
        "fallback_to_host",
        "host_views",
        "buffer_type",
        "to_host",
        "from_host",
        "device_of",
        "ensure_buffer",
        "copy_to_device",
        "dlpack",
        "dlpack_device",
        "import_dlpack",
        "dlpack_device_types",
        "buffer_owner",
        "synchronize",
        "record_completion",
        "memory_stats",
        "release_all",
        "partitioner",
        "flushes_subnormals",
    )

    def __init__(
        self, name: str, backend: Any, device_types: tuple[str, ...], dlpack_device_types: dict[int, str], flushes_subnormals: tuple[str, ...]
    ) -> None:
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "backend", backend)
        set_(self, "device_types", device_types)
        #: Kernels run in order on one queue per device (backend API 1.3): the engine records markers.
        set_(self, "queued", bool(getattr(backend, "in_order_queues", False)))
        #: Ops without a kernel here run on cpu with copies in and out (never on cpu itself).
        fallback = bool(getattr(backend, "fallback_to_host", False)) and "cpu" not in device_types
        set_(self, "fallback_to_host", fallback)
        #: Views may be host views (nda._hostviews): view ops without a kernel take the host fallback.
        set_(self, "host_views", fallback)
        set_(self, "buffer_type", getattr(backend, "buffer_type", object))
        set_(self, "to_host", backend.to_host)
        set_(self, "from_host", backend.from_host)
        set_(self, "device_of", _member(backend, "device_of"))
        set_(self, "ensure_buffer", _member(backend, "ensure_buffer") or _identity)
        set_(self, "copy_to_device", _member(backend, "copy_to_device"))
        dlpack, dlpack_device = _member(backend, "dlpack"), _member(backend, "dlpack_device")
        set_(self, "dlpack", dlpack if dlpack_device is not None else None)
        set_(self, "dlpack_device", dlpack_device if dlpack is not None else None)
        set_(self, "import_dlpack", _member(backend, "import_dlpack"))
        set_(self, "dlpack_device_types", dict(dlpack_device_types))
        set_(self, "buffer_owner", _member(backend, "buffer_owner"))
        set_(self, "synchronize", _member(backend, "synchronize"))
        set_(self, "record_completion", _member(backend, "record_completion"))
        set_(self, "memory_stats", _member(backend, "memory_stats"))
        set_(self, "release_all", _member(backend, "release_all"))
        set_(self, "partitioner", _member(backend, "partitioner"))
        set_(self, "flushes_subnormals", tuple(flushes_subnormals))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a backend handle is read-only (resolved when backend {self.name!r} activated)")

    def __repr__(self) -> str:
        caps = [c for c in ("queued", "fallback_to_host") if getattr(self, c)]
        caps += [c for c in ("copy_to_device", "dlpack", "import_dlpack", "memory_stats", "partitioner") if getattr(self, c) is not None]
        return f"<backend handle {self.name!r} for {', '.join(self.device_types)}: {', '.join(caps) or 'required members only'}>"
