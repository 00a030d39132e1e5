"""Views on a device whose backend runs view ops through the host fallback ("host views").

On cpu, and on a backend with native kernels for the view ops (basic indexing,
``reshape``, ``permute_dims``, ``expand_dims``, ``squeeze``, ``flip``, ``broadcast_to``),
a view's buffer shares memory with its base: writes through the view reach the base and
the view sees the base's writes, as in NumPy. A backend that opts into the host fallback
and has no kernel for a view op cannot share memory that way: the fallback runs the op on
a host copy and copies the result into new device memory. Left alone, ``v = x[1:3];
v[...] = 9`` would write into that copy and never reach ``x``, and ``x[...] = 0`` would
leave ``v`` stale.

nda keeps NumPy's semantics on such a device by making the result a *host view*: it
remembers how it was made, as its *source* (the array whose storage it reflects: the
base, or a native view of it) and the view ops from the source to it (``steps``: each a
cpu kernel and its arguments, so a view of a host view composes), and nda keeps it in
step through the host:

* **writes through it go to the source**: the source is copied to the host, the view is
  rebuilt there by replaying the steps (a real NumPy view), the write (``setitem``, the
  store of an in-place operator) is applied through it, and the source is written back
  with the backend's ``from_host(host, device, out=source_buffer)``;
* **it follows its family's writes**: after any write to an array of its family (the
  base, a native view of it, another host view), every live host view of the family is
  rebuilt from its source and written into its own buffer with ``from_host(..., out=)``.

Reads need nothing: a host view's buffer always holds its current values, so native
kernels and the host fallback read it like any buffer. Ordering comes from the engine: a
view shares its base's engine variable, so the creation of a view, every write to the
family (with the refresh it runs) and every read are ordered as the program issued them.

Which results are views is what cpu gives for the same ops on a C-contiguous host copy of
the source: ``x[1]`` of a 1-D array is a scalar and ``reshape`` copies when the strides
do not allow a view, so such results are plain copies (``live`` is False), as on cpu.

Cost: nothing on devices with native view kernels (the front end's fast paths check
:data:`VIEWS` only for arrays that are views, and the write paths check
:data:`FAMILIES` only while some host view exists). On a device with host views, a write
to a family that has any costs a host round trip of the source plus one ``from_host``
per live host view of the family.

This module is part of the front end: the execution layer (:mod:`nda._execute`) calls
:func:`attach` when a view op's route is a ``host view`` one (the host fallback of a view op)
or its input is a host view, and
the write paths wrap the write kernels of families that have host views with
:func:`writing`. Only the slow paths look: a device whose backend may make host views (its
handle says so, ``fallback_to_host``) never gets a fast-path cache entry.

Layer: arrays and front end, array handle (README, "Architecture").
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

import numpy as np

from . import _forksafe, backends
from ._devices import KernelKey
from .dispatch import resolve

__all__ = ["VIEWS", "FAMILIES", "attach", "writing", "is_live"]

#: id(view) -> its record, for every host view alive (checked by the front end's fast paths).
VIEWS: dict[int, _Record] = {}
#: id(base) -> {id(view): record}: the host views of each base (checked by the write paths).
FAMILIES: dict[int, dict[int, _Record]] = {}
# Reentrant: a garbage collection inside a locked section may finalize a view (_forget).
_lock = _forksafe.guard(threading.RLock(), "the host views' lock", rank=20, stage=_forksafe.INNER)


class _Record:
    """How one host view was made, and (once its creation ran) from which source."""

    __slots__ = ("view", "input", "step", "source", "steps", "live", "__weakref__")

    def __init__(self, view: Any, input_: Any, step: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]) -> None:
        self.view = weakref.ref(view)
        self.input = input_  # the array the op was applied to (until the creation resolves it)
        self.step = step  # (cpu kernel, arguments after the array, keyword arguments)
        self.source: Any = None
        self.steps: tuple[Any, ...] = ()
        self.live: bool | None = None  # None: not created yet; False: a plain copy (as on cpu)


def is_live(array: Any) -> bool:
    """Whether ``array`` is a host view kept in step with its base."""
    rec = VIEWS.get(id(array))
    return rec is not None and bool(rec.live)


def _forget(view_id: int, base_id: int) -> None:
    # Dropping a record may free its source and so finalize other views of the family
    # right here (reentrantly): look the family up again before removing it.
    with _lock:
        rec = VIEWS.pop(view_id, None)
        family = FAMILIES.get(base_id)
        if family is not None:
            family.pop(view_id, None)
            if not family and FAMILIES.get(base_id) is family:
                del FAMILIES[base_id]
        del rec


def attach(name: str, plan: Any, out: Any) -> Callable[..., Any]:
    """Make ``out`` (the result of view op ``name``) a host view; returns the kernel that creates it.

    Called on the caller's thread when the call is issued, so that later calls see the
    record at once; the returned kernel runs when the engine runs the op.
    """
    x = plan.view_of
    if plan.args[0] is not x:
        raise RuntimeError(f"{name}: a view op's plan must pass the viewed array first")  # an op catalog bug
    cpu_kernel = resolve(name, KernelKey("cpu", plan.key.dtype)).run
    rec = _Record(out, x, (cpu_kernel, tuple(plan.args[1:]), dict(plan.kwargs)))
    base = out._base
    with _lock:
        VIEWS[id(out)] = rec
        family = FAMILIES.get(id(base))
        if family is None:
            family = FAMILIES[id(base)] = {}
        family[id(out)] = rec
    weakref.finalize(out, _forget, id(out), id(base))
    device = plan.device
    backend = backends.handle(device)  # its handle: device_of and buffer_type, resolved when it activated

    def create(*args: Any, **kwargs: Any) -> Any:
        parent = VIEWS.get(id(rec.input))
        if parent is not None and parent.live:  # a view of a host view: replay from its source
            rec.source, rec.steps = parent.source, parent.steps + (rec.step,)
        else:
            rec.source, rec.steps = rec.input, (rec.step,)
        rec.input = None
        host = _host_copy(backend, rec.source._buf)
        result = _replay(host, rec.steps)
        rec.live = isinstance(result, np.ndarray) and np.may_share_memory(result, host)
        return backends.upload(device, np.asarray(result))

    create.__qualname__ = f"host_view[{name}]"
    return create


def writing(name: str, kernel: Callable[..., Any], target: Any, base: Any) -> Callable[..., Any]:
    """``kernel`` (a write into ``target``, whose family has host views) kept in step with them.

    If ``target`` is a live host view, the write runs on the host through its source
    instead; either way the family's host views are refreshed afterwards.
    """
    rec = VIEWS.get(id(target))
    device = target._meta.device
    backend = backends.handle(device)  # its handle: device_of and buffer_type, resolved when it activated
    dtype = target._meta.dtype

    def write(*args: Any, **kwargs: Any) -> Any:
        if rec is not None and rec.live:
            cpu = resolve(name, KernelKey("cpu", dtype)).run
            convert = _converter(backend)
            rest = [convert(a) for a in args[1:]]
            kw = {k: convert(v) for k, v in kwargs.items()}
            source = rec.source
            host = _host_copy(backend, source._buf)
            cpu(_replay(host, rec.steps), *rest, **kw)
            backends.write_buffer(device, host, source._buf)
            _refresh(base, backend, {id(source): host})
            return None
        result = kernel(*args, **kwargs)
        _refresh(base, backend, {})
        return result

    write.__qualname__ = f"host_view_write[{name}]"
    return write


def _refresh(base: Any, backend: Any, hosts: dict[int, np.ndarray]) -> None:
    """Rebuild every live host view of ``base``'s family from its source (one host copy per source)."""
    family = FAMILIES.get(id(base))
    if not family:
        return
    for rec in list(family.values()):
        view = rec.view()
        if not rec.live or view is None or view._buf is None:
            continue  # not created yet (it will read the new values), a copy, or gone
        source = rec.source
        host = hosts.get(id(source))
        if host is None:
            host = hosts[id(source)] = _host_copy(backend, source._buf)
        backends.write_buffer(view._meta.device, np.asarray(_replay(host, rec.steps)), view._buf)


def _replay(host: np.ndarray, steps: tuple[Any, ...]) -> Any:
    for kernel, args, kwargs in steps:
        host = kernel(host, *args, **kwargs)
    return host


def _host_copy(backend: Any, buf: Any) -> np.ndarray:
    """A writable C-contiguous host copy of ``buf`` (views are decided on that, as for a fresh cpu array)."""
    host = np.asarray(backends.read_buffer(backend.device_of(buf), buf))  # after the work that wrote it
    if not (host.flags.c_contiguous and host.flags.writeable):
        host = np.array(host, order="C", copy=True)
    return host


def _converter(backend: Any) -> Callable[[Any], Any]:
    buffer_type = backend.buffer_type
    device_of = backend.device_of

    def convert(value: Any) -> Any:
        if isinstance(value, buffer_type):
            return backends.read_buffer(device_of(value), value)
        if value.__class__ in (list, tuple):
            return value.__class__(convert(v) for v in value)
        return value

    return convert
