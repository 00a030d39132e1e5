"""Resolving a backend's handle: the only place nda reads members off a backend object.

A backend object (:mod:`nda.backends.contract`) has required members and many optional
ones. When it activates (:mod:`._activation`, under the backends' lock), :func:`resolve`
reads every member nda uses once, checks that what it declared fits together, and answers a
:class:`nda._handles.BackendHandle` (the value type lives in the bottom layer, so that the
engine and dispatch read published handles by import): each optional member filled in, or
``None`` when the backend has none (or has a non-callable attribute of that name). From then
on every call site (this layer's data movement, the engine's queues, completion and
synchronize hooks, dispatch's flush declaration and coverage) reads the handle; nothing asks
the object again. ``nda.backends.handle(device)`` returns it.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable

from .._handles import BackendHandle

__all__ = ["BackendHandle", "resolve"]


def _member(backend: Any, name: str) -> Callable[..., Any] | None:
    found = getattr(backend, name, None)
    return found if callable(found) else None


def resolve(
    name: str,
    backend: Any,
    device_types: tuple[str, ...],
    dlpack_device_types: dict[int, str] | None = None,
    flushes_subnormals: tuple[str, ...] = (),
) -> BackendHandle:
    """The handle of ``backend`` (already validated: its required members exist; a queued
    backend has its four marker members), read once."""
    queued = bool(getattr(backend, "in_order_queues", False))
    # Ops without a kernel here run on cpu with copies in and out (never on cpu itself); views
    # may then be host views (nda._hostviews): view ops without a kernel take the host fallback.
    fallback = bool(getattr(backend, "fallback_to_host", False)) and "cpu" not in device_types
    declared_type = getattr(backend, "buffer_type", None)
    dlpack, dlpack_device = _member(backend, "dlpack"), _member(backend, "dlpack_device")
    timed, marker_time = _member(backend, "record_timed_marker"), _member(backend, "marker_time")
    members: dict[str, Any] = {
        "queued": queued,
        "fallback_to_host": fallback,
        "host_views": fallback,
        "buffer_type": object if declared_type is None else declared_type,
        "declared_buffer_type": declared_type,
        "device_of": _member(backend, "device_of"),
        "ensure_buffer": _member(backend, "ensure_buffer"),
        "copy_to_device": _member(backend, "copy_to_device"),
        "dlpack": dlpack if dlpack_device is not None else None,
        "dlpack_device": dlpack_device if dlpack is not None else None,
        "import_dlpack": _member(backend, "import_dlpack"),
        "dlpack_device_types": dict(dlpack_device_types or {}),
        "buffer_owner": _member(backend, "buffer_owner"),
        "synchronize": _member(backend, "synchronize"),
        "record_completion": _member(backend, "record_completion"),
        "memory_stats": _member(backend, "memory_stats"),
        "release_all": _member(backend, "release_all"),
        "partitioner": _member(backend, "partitioner"),
        "flushes_subnormals": tuple(flushes_subnormals),
    }
    if queued:  # backend API 1.3: the device queues' members (the four markers are validated before)
        members.update(
            record_marker=_member(backend, "record_marker"),
            wait_marker=_member(backend, "wait_marker"),
            synchronize_marker=_member(backend, "synchronize_marker"),
            marker_reached=_member(backend, "marker_reached"),
            # Timed markers for the profiler: both or neither.
            record_timed_marker=timed if marker_time is not None else None,
            marker_time=marker_time if timed is not None else None,
            to_host_in_order=_member(backend, "to_host_in_order"),
            continues_after_fork=bool(getattr(backend, "continues_after_fork", False)),
        )
    return BackendHandle(name, backend, device_types, backend.to_host, backend.from_host, **members)
