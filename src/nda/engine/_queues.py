"""Device queues: dependencies met at enqueue, markers per array version, errors at completion.

An accelerator is a queue. Work enqueued on one device queue (a CUDA stream, the sim
device's stream thread) runs in the order it was enqueued, so an op that depends on another
op of the *same* queue may be enqueued the moment its producer is: the queue orders them.
A backend declares this (``in_order_queues = True``, backend API 1.3) and provides markers:

``record_marker(device)``
    a marker for everything enqueued on ``device``'s queue so far (a CUDA event);
``wait_marker(device, marker)``
    make ``device``'s queue wait for ``marker`` without blocking any host thread
    (``cudaStreamWaitEvent``);
``synchronize_marker(marker)``
    block the calling thread until ``marker`` is reached (event synchronize);
``marker_reached(marker)``
    whether it is reached, without blocking (event query).

The backends layer wraps every kernel (and converter) such a backend registers with
:func:`issuing`. A wrapped kernel enqueues its work as before and then records an
:class:`Entry`: the op's name, the user's ``file:line``, a marker taken right after the
op, weak references to the buffers the op writes (for a write through a view: the buffer
that owns the memory, ``buffer_owner(buf)``), the in-flight entries that produced its
inputs, and the op's data-dependent *check*. A kernel with a check returns
:class:`Deferred` ``(value, check)``: ``check()`` runs on the host once the marker is
reached and returns (or raises) the op's error, so that an out-of-bounds index found on
the device is reported without a hidden sync at the call.

Per device, a :class:`Queue` holds the entries in flight, in issue order, and
``versions``: for each buffer written by work in flight, the entry of its latest write, so
a host read waits for exactly that marker (not for the whole device, not through another
thread). Entries *retire* in issue order once their marker is reached: the check runs, a
failure gets the note naming the op and ``file:line`` and is recorded for the buffers the
op wrote (``failed``); an entry whose inputs came from a failed entry fails with the same
exception, as on the cpu path. Retiring happens at sync points, at ``waitall``, on each
issue for entries already reached (a non-blocking query), and when more than
:data:`MAX_IN_FLIGHT` entries are in flight on one queue: the issuing thread then waits for
the oldest (back-pressure; CUDA itself blocks a launch after about a thousand pending ones).

Nothing here holds a buffer strongly, so dropping an array frees its memory while work on
it is still in flight; the backend keeps what its enqueued work needs (CuPy's memory pool
reuses a freed block only in stream order, on the stream that freed it, so a block freed
while a kernel still reads it is not handed out before that kernel has run).

This module holds state and small transitions only: the engines decide when to wait
(:meth:`Engine.issued`); no thread lives here.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import copy
import itertools
import os
import sys
import threading
import traceback
import weakref
from collections import deque
from typing import Any, Callable, Iterable

import numpy as np

__all__ = ["Deferred", "Entry", "Queue", "MAX_IN_FLIGHT", "issuing", "issue", "register_backend", "queue_for", "queue_of_device",
           "all_queues", "reset_after_fork", "annotate", "strip_frames", "fresh", "KernelTraceback"]

#: Ops in flight per device queue before the issuing thread waits for the oldest (the bound
#: on work in flight; ``NDA_MAX_IN_FLIGHT``). About CUDA's own launch-queue depth: enough to
#: keep a device busy through thousands of tiny ops, small enough that the bookkeeping of a
#: loop that never syncs stays a few hundred kilobytes.
MAX_IN_FLIGHT = int(os.environ.get("NDA_MAX_IN_FLIGHT", "1024"))

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCALARS = (np.generic, bool, int, float, complex)


class Deferred:
    """A queue kernel's result whose error can only be known when its work has run.

    ``value`` is what the kernel would return (the output buffer, or None for a kernel
    that writes its first argument); ``check()`` is called on the host once the op's
    marker is reached and returns the op's exception, or None (it may also raise it).
    """

    __slots__ = ("value", "check")

    def __init__(self, value: Any, check: Callable[[], BaseException | None]) -> None:
        self.value = value
        self.check = check

    def __repr__(self) -> str:
        return f"<Deferred {self.value!r}>"


class Entry:
    """One op enqueued on a device queue and not retired yet."""

    __slots__ = ("seq", "queue", "marker", "name", "site", "check", "outs", "deps", "error", "retired")

    def __init__(self, queue: Queue, marker: Any, name: str, site: Any, check: Any, outs: tuple[Any, ...], deps: Any) -> None:
        self.queue = queue
        self.marker = marker
        self.name = name
        self.site = site  # (code, lineno), a "file:line" string, or None
        self.check = check
        self.outs = outs  # ((id, weak reference), ...) of the buffers it writes
        self.deps = deps  # in-flight entries (any queue) that produced its inputs, or None
        self.error: BaseException | None = None
        self.retired = False
        self.seq = 0

    def where(self) -> str:
        site = self.site
        if site is None:
            return "<unknown>"
        if isinstance(site, str):
            return site
        code, line = site
        return f"{code.co_filename}:{line}"

    def __repr__(self) -> str:
        state = "retired" if self.retired else "in flight"
        return f"<Entry #{self.seq} {self.name} on {self.queue.device} {state}>"


#: One lock for retiring, on every queue. It is never held while a kernel runs or a thread
#: waits for a device; retiring may follow dependencies across queues, and a single lock
#: cannot be taken in two orders. Adding an entry takes no lock (appends to a deque and
#: stores in a dict are atomic).
LOCK = threading.Lock()


class Queue:
    """The engine's view of one device queue: entries in flight and failed buffers.

    Transitions (under :data:`LOCK`): :meth:`add` (an op was enqueued), :meth:`retire`
    (entries up to one whose marker is reached) and :meth:`retire_reached`; queries
    :meth:`version` and :meth:`error_of`. Waiting is the caller's business
    (:meth:`wait_and_retire` blocks).
    """

    def __init__(self, device: Any, backend: Any) -> None:
        self.device = device
        self.backend = backend
        self.record_marker = backend.record_marker
        self.synchronize_marker = backend.synchronize_marker
        self.marker_reached = backend.marker_reached
        self.wait_marker = backend.wait_marker
        self.log: deque[Entry] = deque()
        self.versions: dict[int, tuple[Entry, Any]] = {}  # id(buffer) -> (entry of its latest write in flight, weakref)
        self.failed: dict[int, tuple[Any, BaseException]] = {}  # id(buffer) -> (weakref, error)
        self.checked = 0  # entries in flight that may fail (with a check)
        self._count = itertools.count(1)

    # ------------------------------------------------------------------ transitions
    def add(self, entry: Entry) -> None:
        """Record an enqueued op (LOCK held: the log is in the order of the markers)."""
        entry.seq = next(self._count)
        if entry.check is not None:
            self.checked += 1
        self.log.append(entry)
        versions = self.versions
        for pair in entry.outs:
            versions[pair[0]] = (entry, pair[1])

    def retire_reached(self) -> None:
        """Retire, in order, every entry whose marker is reached; stop at the first that is not."""
        log = self.log
        reached = self.marker_reached
        with LOCK:
            while log and reached(log[0].marker):
                self._retire_head()

    def retire(self, upto: Entry) -> None:
        """Retire every entry up to and including ``upto`` (their markers are reached)."""
        with LOCK:
            self._retire_upto(upto)

    def _retire_upto(self, upto: Entry) -> None:
        log = self.log
        while not upto.retired and log:
            self._retire_head()

    def _retire_head(self) -> None:
        """The oldest entry's work is done: run its check, settle what it wrote (LOCK held)."""
        entry = self.log.popleft()
        error = None
        deps = entry.deps
        if deps:
            for dep in deps:
                if not dep.retired:  # another queue's producer: its verdict first
                    dep.queue._retire_upto(dep)
                if error is None and dep.error is not None:
                    error = dep.error  # it read a failed op's output: it fails the same way
        check = entry.check
        if check is not None:
            self.checked -= 1
            if error is None:
                try:
                    error = check()
                except BaseException as err:  # noqa: BLE001 - a check may report the op's error by raising it
                    error = err
        if error is not None:  # before the entry leaves: a reader finds either its version or its failure
            entry.error = error
            annotate(error, entry.name, entry.where(), self.device)
            self._record_failure(entry, error)
        entry.retired = True
        entry.deps = entry.check = None
        versions = self.versions
        for key, _ in entry.outs:
            hit = versions.get(key)
            if hit is not None and hit[0] is entry:
                del versions[key]
        entry.outs = ()

    def _record_failure(self, entry: Entry, error: BaseException) -> None:
        """Remember ``error`` for the live buffers ``entry`` wrote (LOCK held)."""
        global first_error, _failures
        failed = self.failed
        for key in [k for k, (ref, _) in failed.items() if ref() is None]:  # forget dead buffers
            del failed[key]
        for key, ref in entry.outs:
            if ref() is not None:
                failed[key] = (ref, error)
        _failures = sum(1 for q in list(_queues.values()) if q.failed)
        if first_error is None:
            first_error = error

    # ------------------------------------------------------------------ queries
    def version(self, *bufs: Any) -> Entry | None:
        """The latest in-flight entry that wrote one of ``bufs`` (None: all retired)."""
        best = None
        versions = self.versions
        for buf in bufs:
            hit = versions.get(id(buf))
            if hit is not None and hit[1]() is buf and not hit[0].retired:
                if best is None or hit[0].seq > best.seq:
                    best = hit[0]
        return best

    def error_of(self, *bufs: Any) -> BaseException | None:
        """The error of the work that wrote one of ``bufs``, once retired."""
        failed = self.failed
        if not failed:
            return None
        for buf in bufs:
            hit = failed.get(id(buf))
            if hit is not None and hit[0]() is buf:
                return hit[1]
        return None

    def in_flight(self) -> int:
        return len(self.log)

    def newest(self) -> Entry | None:
        log = self.log
        return log[-1] if log else None

    # ------------------------------------------------------------------ waiting (blocks)
    def wait_and_retire(self, entry: Entry) -> None:
        """Block this thread until ``entry``'s marker is reached, then retire up to it."""
        if not entry.retired:
            self.synchronize_marker(entry.marker)
            self.retire(entry)

    def drain(self) -> None:
        """Wait for everything in flight on this queue and retire it."""
        newest = self.newest()
        if newest is not None:
            self.wait_and_retire(newest)


#: The first error of retired work not raised at a sync point yet (``waitall`` raises it once).
first_error: BaseException | None = None
#: How many queues hold failed buffers (while one does, each op issued checks its inputs).
_failures = 0


def annotate(error: BaseException, name: str, site: str, device: Any) -> None:
    """Add nda's note (op, ``file:line``, device) to the kept ``error`` once, and drop its frames.

    An error of asynchronous work is kept until a sync point raises it, possibly for as long
    as the failed array lives. Its frames would keep the op's arrays, buffers and closures
    alive (a finished frame still holds its function and cells), so the traceback of the
    kernel is kept as text instead (``error.nda_kernel_traceback``); a sync point raises a
    copy of the error with that text as its cause (:func:`fresh`), as ``multiprocessing``
    shows the traceback of a worker.
    """
    if getattr(error, "_nda_noted", False):
        return
    try:
        error._nda_noted = True  # type: ignore[attr-defined]
    except AttributeError:
        return
    if error.__traceback__ is not None:
        error.nda_kernel_traceback = "".join(traceback.format_exception(error))  # type: ignore[attr-defined]
    strip_frames(error)
    error.add_note(f"nda: op '{name}' issued at {site} failed on {device}")


def strip_frames(error: BaseException) -> None:
    """Drop the frames of ``error`` and of the exceptions chained to it."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = None
        current = current.__cause__ or current.__context__


class KernelTraceback(Exception):
    """Where a kept error of asynchronous work was raised: the kernel's traceback, as text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return "\n\n" + self.text.rstrip()

    def __reduce__(self) -> Any:
        return (KernelTraceback, (self.text,))


KernelTraceback.__module__ = "nda.engine"


def fresh(error: BaseException) -> BaseException:
    """What a sync point raises for the kept ``error``: a copy (type, message, notes alike)
    whose cause shows the kernel's traceback; ``error`` itself if its class cannot be copied.

    Raising the kept object would attach the reader's frames to it, and through them keep
    the failed array alive for as long as the error is kept.
    """
    try:
        raised = copy.copy(error)
    except Exception:  # noqa: BLE001 - an exception class whose __init__ does not match its args
        raised = error
    text = getattr(error, "nda_kernel_traceback", None)
    if text and raised.__cause__ is None:
        raised.__cause__ = KernelTraceback(text)
    raised.__suppress_context__ = True  # whatever the reader was handling is not the story
    return raised.with_traceback(None)


# ---------------------------------------------------------------------------- registry

_queues: dict[Any, Queue] = {}
_backends: dict[str, Any] = {}  # device type -> backend with in-order queues
_owner_of: dict[str, Any] = {}  # device type -> buffer_owner or None


def register_backend(device_type: str, backend: Any) -> None:
    """Called by the backends layer when a backend with in-order queues loads."""
    _backends[device_type] = backend
    _owner_of[device_type] = getattr(backend, "buffer_owner", None)


def unregister_device_type(device_type: str) -> None:
    _backends.pop(device_type, None)
    _owner_of.pop(device_type, None)
    for device in [d for d in _queues if d.type == device_type]:
        del _queues[device]


def is_queue_device_type(device_type: str) -> bool:
    return device_type in _backends


def queue_of_device(device: Any) -> Queue | None:
    """The queue of ``device`` if its backend declared in-order queues, else None."""
    queue = _queues.get(device)
    if queue is None:
        backend = _backends.get(device.type)
        if backend is None:
            return None
        queue = _queues.setdefault(device, Queue(device, backend))
    return queue


def queue_for(array: Any) -> Queue | None:
    return queue_of_device(array._meta.device)


def all_queues() -> list[Queue]:
    return list(_queues.values())


def reset_after_fork(message: str) -> None:
    """In a forked child: work in flight in the parent never finishes here; its buffers fail."""
    global LOCK, _failures
    LOCK = threading.Lock()  # the parent's may have been held by another thread at the fork
    error = RuntimeError(message)
    for queue in _queues.values():
        for entry in queue.log:
            entry.retired = True
            entry.error = error
            for key, ref in entry.outs:
                if ref() is not None:
                    queue.failed[key] = (ref, error)
        queue.log.clear()
        queue.versions.clear()
        queue.checked = 0
    _failures = sum(1 for q in _queues.values() if q.failed)


# ---------------------------------------------------------------------------- issuing

class _Local(threading.local):
    site: Any = None  # set by an engine while it runs a task: the site its ops were issued at
    base: Any = None  # set by the front end around a write: the buffer of the array owning the memory written


local = _Local()
_internal_codes: dict[Any, bool] = {}


def user_site() -> Any:
    """(code, lineno) of the first frame outside nda, or the running task's site."""
    site = local.site
    if site is not None:
        return site
    frame = sys._getframe(2)
    known = _internal_codes
    while frame is not None:
        code = frame.f_code
        internal = known.get(code)
        if internal is None:
            internal = known[code] = code.co_filename.startswith(_PACKAGE_DIR)
        if not internal:
            return (code, frame.f_lineno)
        frame = frame.f_back
    return None


def _not_waiting(queue: Queue, entry: Entry) -> None:
    """Until an engine is attached: wait for each op (the synchronous engine's behaviour)."""
    queue.wait_and_retire(entry)


#: The current engine's ``issued(queue, entry)``, set by ``nda.engine`` whenever the engine
#: changes: called after every op is enqueued; the engine decides whether to wait (the
#: naive engine does, the threaded one does not).
on_issue: Callable[[Queue, Entry], None] = _not_waiting


def issue(kernel: Callable[..., Any], name: str, device_of: Callable[[Any], Any], mutating: bool,
          args: tuple[Any, ...], kwargs: dict[str, Any], buffer: Any = None, across: bool = False, buffer_type: Any = None) -> Any:
    """Call a queue backend's ``kernel`` and record what it enqueued (see :func:`issuing`).

    ``buffer``: the backend's ``ensure_buffer``, to turn a scalar result (a 0-d result of a
    NumPy-like ufunc) into the buffer the array will hold, so that the entry knows that very
    buffer. ``across``: the inputs may be on other devices' queues (a copy between devices).
    """
    result = kernel(*args, **kwargs)
    if result.__class__ is Deferred:
        value, check = result.value, result.check
    else:
        value, check = result, None
    if mutating:
        target = args[0]
    else:
        if buffer is not None and value.__class__ is not buffer_type and isinstance(value, _SCALARS_OR_TUPLE):
            value = tuple(buffer(v) if isinstance(v, _SCALARS) else v for v in value) if value.__class__ is tuple else buffer(value)
        target = value[0] if value.__class__ is tuple else value
    device = device_of(target)
    queue = _queues.get(device) or queue_of_device(device)
    if queue is None:  # the backend serves this device without queues (never for in-order backends)
        return value
    # What it writes: its new buffers, or its target and the buffer owning the target's memory.
    if mutating:
        # The target, the buffer owning its memory, and the base array's buffer as the front
        # end knows it (a backend may learn that a buffer is a view only when its work runs).
        owner = _owner_of.get(device.type)
        written = [target]
        for buf in (owner(target) if owner is not None else None, local.base):
            if buf is not None and all(buf is not w for w in written):
                written.append(buf)
        outs = tuple((id(w), weakref.ref(w)) for w in written)
    elif value.__class__ is tuple:
        outs = tuple((id(v), weakref.ref(v)) for v in value if v is not None)
    else:
        outs = ((id(value), weakref.ref(value)),)
    # What it reads that work in flight produces, while such work may still fail (to fail
    # with it if it does; a backend's kernels need not propagate failures themselves).
    deps = None
    if across:
        deps = _inputs_in([q for q in list(_queues.values()) if q.checked], args)
    elif queue.checked:
        deps = _inputs_in((queue,), args)
    if _failures:
        inherited = _failed_input(args, kwargs)
        if inherited is not None:  # it read a failed op's output: it fails the same way
            check = _Inherited(inherited)
    site = user_site()
    with LOCK:  # the marker and the log entry together: the log stays in the order of the markers
        entry = Entry(queue, queue.record_marker(device), name, site, check, outs, deps)
        queue.add(entry)
    on_issue(queue, entry)
    return value


_SCALARS_OR_TUPLE = (*_SCALARS, tuple)


def _inputs_in(queues: Iterable[Queue], args: tuple[Any, ...]) -> list[Entry] | None:
    """In-flight entries of ``queues`` that wrote the buffers among ``args`` (nested one level)."""
    found = None
    for queue in queues:
        versions = queue.versions
        for value in args:
            hit = versions.get(id(value))
            if hit is None:
                if value.__class__ is tuple or value.__class__ is list:
                    nested = _inputs_in((queue,), value)
                    if nested:
                        found = nested if found is None else found + [e for e in nested if e not in found]
                continue
            if hit[1]() is value:
                if found is None:
                    found = [hit[0]]
                elif hit[0] not in found:
                    found.append(hit[0])
    return found


def _failed_input(args: Iterable[Any], kwargs: dict[str, Any]) -> BaseException | None:
    queues = list(_queues.values())
    for value in (*args, *kwargs.values()):
        items = value if value.__class__ in (tuple, list) else (value,)
        for item in items:
            for queue in queues:
                error = queue.error_of(item)
                if error is not None:
                    return error
    _forget_dead_failures(queues)
    return None


def _forget_dead_failures(queues: list[Queue]) -> None:
    """Drop the failure records of buffers that are gone (ops stop checking once none is left)."""
    global _failures
    with LOCK:
        for queue in queues:
            failed = queue.failed
            for key in [k for k, (ref, _) in failed.items() if ref() is None]:
                del failed[key]
        _failures = sum(1 for q in queues if q.failed)


class _Inherited:
    """The check of an op that read a failed buffer: it fails with that buffer's error."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __call__(self) -> BaseException:
        return self.error


def issuing(kernel: Callable[..., Any], name: str, backend: Any, mutating: bool = False) -> Callable[..., Any]:
    """``kernel`` of a backend with in-order queues, recording an :class:`Entry` per call."""
    device_of = backend.device_of
    buffer = getattr(backend, "ensure_buffer", None)
    buffer_type = getattr(backend, "buffer_type", None)

    def queued(*args: Any, **kwargs: Any) -> Any:
        return issue(kernel, name, device_of, mutating, args, kwargs, buffer, False, buffer_type)

    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        try:
            setattr(queued, attr, getattr(kernel, attr))
        except (AttributeError, TypeError):
            pass
    queued.__wrapped__ = kernel  # type: ignore[attr-defined]
    queued._nda_queued = name  # type: ignore[attr-defined]
    return queued
