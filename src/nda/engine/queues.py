"""Device queues: dependencies met at enqueue, markers on demand, errors at completion.

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
    whether it is reached, without blocking (event query);
``record_timed_marker(device)`` and ``marker_time(marker)`` (optional)
    a marker that also tells when it was reached, as a ``time.perf_counter()`` value: sim
    stamps its markers, CUDA uses timing events. Only the profiler asks for them.
``to_host_in_order(buf)`` (optional)
    a host copy of ``buf`` enqueued on the queue itself, after everything enqueued before
    (a copy on the CUDA stream): a read of the newest version on a queue needs no marker.

The engine never reads these off the backend object: the backends layer resolves them, once,
into the backend's handle (:class:`nda._handles.BackendHandle`, optional members ``None``)
when it activates, and passes that handle here (:func:`register_backend`, :func:`issuing`);
a :class:`Queue` copies what it calls from the handle when it is made.

**Positions, not markers, per op.** Every op enqueued on a queue takes the next *number* of
that queue (``next()`` of an ``itertools.count``: atomic, after its work is enqueued), and
the queue remembers, per buffer, the number of its latest write (``versions``). No marker is
recorded for an op.
A marker is recorded only where something waits: a host read (none when the version read
is the newest work of its queue and the backend copies in queue order), a wait for the
whole queue, the bound on work in flight, the profiler. A marker takes a number too, and since the
queue is in order it covers every number below its own: recording one marker covers
everything enqueued before it. To wait for number *n*, the queue uses the oldest marker
above *n*, or records one now. ``markers`` counts them (tests count markers per op).

**Retiring.** Numbers below ``done`` are finished. When a marker is reached (a wait, or a
non-blocking query every 16 ops) ``done`` moves past it. Most ops need nothing more:
their number simply falls below ``done``. An op that may fail has an :class:`Entry` in
``log``: a kernel with a data-dependent *check* returns :class:`Deferred` ``(value,
check)``; ``check()`` runs on the host once the op is finished and returns (or raises) the
op's error, so that an out-of-bounds index found on the device is reported without a
hidden sync at the call. An op that reads the output of an entry still in flight gets an
entry too, with that entry as a dependency (``deps``): it fails the same way. Entries retire
in order when ``done`` passes them: the check runs, a failure gets the note naming the op and
the user's ``file:line`` and is recorded for the buffers the op wrote (``failed``). Entries
need no marker of their own: one recorded later, at a sync point or at the bound, covers them.

**The bound on work in flight.** Every quarter of :data:`MAX_IN_FLIGHT` ops the issuing
thread records a marker; past the bound it waits for the oldest marker (back-pressure; CUDA
itself blocks a launch after about a thousand pending ones). That is the only marker a loop
that never syncs records.

**The fast path.** :func:`issuing` wraps every kernel (and converter) such a backend
registers. While nothing needs per-op attention (no failed buffer anywhere, no profiler,
an engine that does not wait at each op), an op whose kernel returns a plain buffer and
whose queue has no entry in flight costs one number and one dict store: no
marker, no entry object, no weak reference, no search for the user's line, no lock (its
output is a new buffer nobody else can read yet: taking its number and storing its version
are each atomic, and a marker recorded later covers every number taken before it). Everything else
(in-place writes, checks, tuples, scalars, copies between devices, recorded failures, the
profiler, the naive engine) takes :func:`issue`.

Nothing here holds a buffer strongly (``versions`` holds ids; entries weak references), so
dropping an array frees its memory while work on it is still in flight; the backend keeps
what its enqueued work needs (CuPy's memory pool reuses a freed block only in stream order,
on the stream that freed it). An id reused by a new buffer can at worst make a read wait for
an older number of the same queue, never skip a wait it needs.

This module holds state and small transitions only: the engines decide whether an op waits
at issue (``on_issue``); no thread lives here.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
import weakref
from collections import deque
from typing import Any, Callable, Iterable

import numpy as np

from .. import _forksafe
from .._config import env_int
from .._handles import BackendHandle
from ._entries import Deferred, Entry, annotate, local, user_site
from ._entries import _PACKAGE_DIR, _internal_codes

_getframe = sys._getframe

# What nda's other layers use: the backends layer wraps kernels (``issuing``), issues copies
# (``issue``) and registers and unregisters queue devices; the front end sets ``local.base``
# around an in-place write (the memory written, recorded as the base's version); hybridize
# wraps its fused kernels; benchmarks and tests look at a device's ``Queue``. The rest
# (``first_error``, the hooks ``set_on_issue``/``set_profiled``, ``all_queues``, the
# registries, ``LOCK``) is the engine's own: its other modules use it, no other layer may.
__all__ = ["Queue", "local", "issue", "issuing", "register_backend", "unregister_device_type", "queue_backends", "queue_of_device"]

#: Ops in flight per device queue before the issuing thread waits for the oldest marker (the
#: bound on work in flight; ``NDA_MAX_IN_FLIGHT``). About CUDA's own launch-queue depth:
#: enough to keep a device busy through thousands of tiny ops, small enough that the
#: bookkeeping of a loop that never syncs stays small.
MAX_IN_FLIGHT = env_int("NDA_MAX_IN_FLIGHT", 1024, minimum=1)

_SCALARS = (np.generic, bool, int, float, complex)


#: One lock for every queue's bookkeeping. It is never held while a kernel runs or a thread
#: waits for a device; retiring may follow dependencies across queues, and a single lock
#: cannot be taken in two orders. Recording a marker, adding an entry (with its number) and
#: writing versions of existing buffers happen under it, so markers, the log and those
#: versions are in number order; lookups of versions and their pruning too. The fast path
#: takes no lock (see the module docstring).
LOCK = _forksafe.guard(threading.Lock(), "the device queues' lock", rank=10, stage=_forksafe.INNER)


class Queue:
    """The engine's view of one device queue (see the module docstring).

    State: ``numbers`` (an ``itertools.count``), ``done`` (every number below it is finished
    and retired), ``versions`` (id of a buffer -> number of its latest write), ``marks``
    (``(number, marker)`` recorded and not passed yet, in order), ``log`` (entries in
    flight, in order), ``tracked`` (id of a buffer -> the entry in flight that wrote it),
    ``failed`` (id -> (weak reference, error)), ``checked`` (entries with a check) and
    ``markers`` (markers recorded so far). Transitions under :data:`LOCK`; :meth:`wait`
    and :meth:`drain` block.
    """

    def __init__(self, device: Any, handle: BackendHandle) -> None:
        self.device = device
        self.handle = handle  # the backend's one view (nda._handles): its members, resolved when it activated
        self.record_marker = handle.record_marker
        self.synchronize_marker = handle.synchronize_marker
        self.marker_reached = handle.marker_reached
        self.wait_marker = handle.wait_marker
        self.record_timed_marker = handle.record_timed_marker
        self.marker_time = handle.marker_time
        self.to_host = handle.to_host
        self.to_host_in_order = handle.to_host_in_order
        self.numbers = itertools.count(1)
        self.done = 1
        self.versions: dict[int, int] = {}
        self.marks: deque[tuple[int, Any]] = deque()
        self.log: deque[Entry] = deque()
        self.tracked: dict[int, tuple[Entry, Any]] = {}
        self.failed: dict[int, tuple[Any, BaseException]] = {}
        self.checked = 0
        # The buffer owning a view buffer's memory (``buffer_owner``), for buffers of the backend's type.
        owner, buffer_type = handle.buffer_owner, handle.declared_buffer_type
        self.owner: Callable[[Any], Any] | None = owner if owner is not None and buffer_type is not None else None
        self.buffer_type = buffer_type
        self.markers = 0
        self._marked = 0  # number of the newest marker
        self.overwritten: dict[int, int] = {}  # id of a buffer -> number of the latest op that wrote it whole (x[...] = v)

    # ------------------------------------------------------------------ transitions (LOCK held)
    def take(self) -> int:
        """The next number (atomic; an op takes it after its work is enqueued)."""
        return next(self.numbers)

    def peek(self) -> int:
        """The number the next op will take (without taking it)."""
        return int(repr(self.numbers)[6:-1])  # "count(17)"

    def add(self, entry: Entry) -> None:
        """Record an entry that has taken its number (LOCK held)."""
        if entry.check is not None:
            self.checked += 1
        self.log.append(entry)
        tracked = self.tracked
        for pair in entry.outs:
            tracked[pair[0]] = (entry, pair[1])

    def mark(self, timed: bool = False, n: int | None = None) -> tuple[int, Any]:
        """Record a marker now, with number ``n`` (taken now if None): it covers every number
        taken before (LOCK held)."""
        record = self.record_timed_marker if timed and self.record_timed_marker is not None else self.record_marker
        if n is None:
            n = next(self.numbers)
        pair = (n, record(self.device))
        self.marks.append(pair)
        self.markers += 1
        self._marked = n
        return pair

    def _cover(self, n: int) -> tuple[int, Any]:
        """The oldest marker above number ``n``, recorded now if there is none (LOCK held)."""
        for pair in self.marks:
            if pair[0] > n:
                return pair
        return self.mark()

    def _retire_to(self, m: int) -> None:
        """Number ``m`` and everything below it are finished: retire them (LOCK held)."""
        if m < self.done:
            return
        marks = self.marks
        while marks and marks[0][0] <= m:
            marks.popleft()
        log = self.log
        while log and log[0].seq <= m:
            self._retire_head()
        self.done = m + 1  # after the checks: a reader finds either the version in flight or its failure
        if len(self.versions) > 4 * MAX_IN_FLIGHT + 256:
            self._prune()

    def _prune(self) -> None:
        """Forget finished versions (LOCK held; amortized: only past a size). The fast path writes
        versions without the lock, so a version written meanwhile is put back before the lock is
        released (lookups hold it)."""
        versions = self.versions
        done = self.done
        for key, n in list(versions.items()):  # one atomic snapshot
            if n < done:
                current = versions.pop(key, None)
                if current is not None and current >= done:  # written again since the snapshot
                    versions.setdefault(key, current)

    def _retire_head(self) -> None:
        """The oldest entry's work is done: run its check, settle what it wrote (LOCK held)."""
        entry = self.log.popleft()
        error = None
        deps = entry.deps
        if deps:
            for dep in deps:
                if not dep.retired:  # another queue's producer: finished before its consumer; its verdict first
                    dep.queue._retire_to(dep.seq)
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
        tracked = self.tracked
        for key, _ in entry.outs:
            hit = tracked.get(key)
            if hit is not None and hit[0] is entry:
                del tracked[key]
        entry.outs = ()

    def _record_failure(self, entry: Entry, error: BaseException) -> None:
        """Remember ``error`` for the live buffers ``entry`` wrote (LOCK held), unless a later op
        wrote one of them whole since (``overwritten``), or the memory a view among them views:
        a reader gets that op's result."""
        global first_error, _failures
        failed = self.failed
        for key in [k for k, (ref, _) in failed.items() if ref() is None]:  # forget dead buffers
            del failed[key]
        overwritten = self.overwritten
        for key, ref in entry.outs:
            buf = ref()
            if buf is not None and overwritten.get(key, 0) <= entry.seq:
                owner = self.owner_of(buf)
                if owner is not None and overwritten.get(id(owner), 0) > entry.seq:
                    continue  # a view (x[10:20] of a failed x) of memory written whole since: it shows the new values
                failed[key] = (ref, error)
        _failures = sum(1 for q in list(_queues.values()) if q.failed)
        _refresh_mode()
        if first_error is None:
            first_error = error

    # ------------------------------------------------------------------ transitions (take LOCK)
    def retire_to(self, m: int) -> None:
        """Retire everything up to number ``m`` (whose marker is reached)."""
        with LOCK:
            self._retire_to(m)

    def retire_reached(self) -> None:
        """Retire up to the newest marker already reached (non-blocking queries)."""
        reached = self.marker_reached
        with LOCK:
            upto = None
            for number, marker in self.marks:
                if not reached(marker):
                    break
                upto = number
            if upto is not None:
                self._retire_to(upto)

    def settle(self, n: int) -> None:
        """After every 16th number, on the issuing thread: retire what is done, keep a marker
        every quarter of :data:`MAX_IN_FLIGHT` numbers, and past the bound wait for the oldest."""
        marks = self.marks
        if marks and self.marker_reached(marks[0][1]):
            self.retire_reached()
        if n - self._marked > (MAX_IN_FLIGHT >> 2) - 16:  # settle runs every 16 numbers
            with LOCK:
                self.mark()
        if n - self.done >= MAX_IN_FLIGHT:
            try:
                number, marker = marks[0]
            except IndexError:  # another thread retired meanwhile: there is room now
                return
            self.synchronize_marker(marker)
            self.retire_to(number)

    # ------------------------------------------------------------------ queries
    def version(self, *bufs: Any) -> int | None:
        """The number of the latest unfinished write of one of ``bufs`` (None: all finished)."""
        best = None
        versions = self.versions
        with LOCK:
            done = self.done
            for buf in bufs:
                n = versions.get(id(buf))
                if n is not None and n >= done and (best is None or n > best):
                    best = n
        return best

    def owner_of(self, buf: Any) -> Any:
        """The buffer owning the memory of ``buf`` when ``buf`` is a view of it, else None."""
        owner = self.owner
        if owner is None or not isinstance(buf, self.buffer_type):
            return None
        found = owner(buf)
        return None if found is buf else found

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

    def finished(self, n: int) -> bool:
        """Whether number ``n`` is finished (a non-blocking query; records a marker if none covers it)."""
        if n < self.done:
            return True
        with LOCK:
            number, marker = self._cover(n)
        if self.marker_reached(marker):
            self.retire_to(number)
            return True
        return False

    def in_flight(self) -> int:
        """Numbers taken and not known to be finished, markers not counted (about the ops in flight)."""
        return max(0, self.peek() - self.done - len(self.marks))

    # ------------------------------------------------------------------ waiting (blocks)
    def wait(self, n: int) -> None:
        """Block this thread until number ``n`` is finished, then retire up to the marker waited for."""
        if n < self.done:
            return
        with LOCK:
            number, marker = self._cover(n)
        self.synchronize_marker(marker)
        self.retire_to(number)

    def drain(self) -> None:
        """Wait for everything in flight on this queue and retire it."""
        with LOCK:
            n = next(self.numbers)
            if n == self.done:  # nothing taken since the last marker retired: nothing in flight
                self.done = n + 1
                return
            marks = self.marks
            number, marker = marks[-1] if marks and marks[-1][0] == n - 1 else self.mark(n=n)
        self.synchronize_marker(marker)
        with LOCK:
            self._retire_to(number)
            if self.done == n:  # ``n`` was only taken to look: nothing to wait for
                self.done = n + 1


#: The first error of retired work not raised at a sync point yet (``waitall`` raises it once).
first_error: BaseException | None = None
#: How many queues hold failed buffers (while one does, each op checks its inputs).
_failures = 0


def total_markers() -> int:
    """Markers recorded on every queue so far (for tests and benchmarks)."""
    return sum(q.markers for q in list(_queues.values()))


# ---------------------------------------------------------------------------- registry

_queues: dict[Any, Queue] = {}
_queue_get = _queues.get
_backends: dict[str, BackendHandle] = {}  # device type -> the handle of its backend with in-order queues
_owner_of: dict[str, Any] = {}  # device type -> the handle's buffer_owner or None


def register_backend(device_type: str, handle: BackendHandle) -> None:
    """Called by the backends layer (under its activation lock) when a backend with in-order
    queues activates: ``handle`` carries every member the queues use, resolved then."""
    if not handle.queued or handle.record_marker is None:
        raise ValueError(f"backend {handle.name!r} has no in-order queues (its handle says so): it registers no queue for {device_type!r}")
    _backends[device_type] = handle
    _owner_of[device_type] = handle.buffer_owner


def unregister_device_type(device_type: str) -> None:
    _backends.pop(device_type, None)
    _owner_of.pop(device_type, None)
    for device in [d for d in _queues if d.type == device_type]:
        del _queues[device]


def is_queue_device_type(device_type: str) -> bool:
    return device_type in _backends


def queue_backends() -> dict[str, BackendHandle]:
    """A copy of the registry: device type -> the handle of the backend that registered its in-order queues."""
    return dict(_backends)


def queue_of_device(device: Any) -> Queue | None:
    """The queue of ``device`` if its backend declared in-order queues, else None."""
    queue = _queues.get(device)
    if queue is None:
        handle = _backends.get(device.type)
        if handle is None:
            return None
        queue = _queues.setdefault(device, Queue(device, handle))
    return queue


def queue_for(array: Any) -> Queue | None:
    return queue_of_device(array._meta.device)


def all_queues() -> list[Queue]:
    return list(_queues.values())


def reset_after_fork(message: str) -> None:
    """In a forked child: a device whose queue does not run on in a child (a GPU: CUDA cannot be
    used in a child forked after it was initialised) never finishes the work in flight; its
    entries fail with ``message``, and the parent's markers mean nothing here. A backend that
    declares ``continues_after_fork`` (nda-sim: its stream threads restart in the child and run
    what was queued) keeps its queues as they are: its markers are reached in the child too.

    :data:`LOCK` is one of nda's fork-safe locks (:mod:`nda._forksafe`): the fork took it, so
    the state here is whole, and the child has released it before this runs.
    """
    global _failures
    error = RuntimeError(message)
    for queue in _queues.values():
        if queue.handle.continues_after_fork:
            continue
        for entry in queue.log:
            entry.retired = True
            entry.error = error
            for key, ref in entry.outs:
                if ref() is not None:
                    queue.failed[key] = (ref, error)
        queue.log.clear()
        queue.tracked.clear()
        queue.marks.clear()
        queue.versions.clear()
        queue.done = next(queue.numbers)
        queue.checked = 0
        queue.overwritten.clear()
    _failures = sum(1 for q in _queues.values() if q.failed)
    _refresh_mode()


# ---------------------------------------------------------------------------- issuing

#: The current engine's ``issued(queue, number, entry)`` when it waits for each op at issue
#: (the naive and deferred engines: errors at the call), else None (the threaded engine).
#: Set by ``nda.engine`` whenever the engine changes.
on_issue: Callable[[Queue, int, Entry | None], None] | None = None

#: Set by the profiler while it records: ``profiled(name, queue, issued, returned, number,
#: marker)`` for every op enqueued, with a timed marker (and its number) recorded right after it.
profiled: Callable[[str, Queue, float, float, int, Any], None] | None = None

#: Whether every op takes :func:`issue` (a failed buffer somewhere, the profiler, an engine
#: that waits at issue); recomputed by :func:`_refresh_mode` when one of those changes.
_general = True


def _refresh_mode() -> None:
    global _general
    _general = bool(_failures) or profiled is not None or on_issue is not None


def set_on_issue(issued: Callable[[Queue, int, Entry | None], None] | None) -> None:
    """Set :data:`on_issue` (called by ``nda.engine`` when the engine changes)."""
    global on_issue
    on_issue = issued
    _refresh_mode()


def set_profiled(hook: Callable[[str, Queue, float, float, int, Any], None] | None) -> None:
    """Set :data:`profiled` (called by the profiler when it starts and stops)."""
    global profiled
    profiled = hook
    _refresh_mode()


def issue(
    kernel: Callable[..., Any],
    name: str,
    device_of: Callable[[Any], Any],
    mutating: bool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    buffer: Any = None,
    across: bool = False,
    buffer_type: Any = None,
    view: bool = False,
) -> Any:
    """Call a queue backend's ``kernel`` and record what it enqueued (see :func:`issuing`).

    ``buffer``: the backend's ``ensure_buffer``, to turn a scalar result (a 0-d result of a
    NumPy-like ufunc) into the buffer the array will hold, so that the queue knows that very
    buffer. ``across``: the inputs may be on other devices' queues (a copy between devices).
    """
    if profiled is not None:
        start = time.perf_counter()
        result = kernel(*args, **kwargs)
        return _record(result, name, device_of, mutating, args, kwargs, buffer, across, buffer_type, start, view)
    return _record(kernel(*args, **kwargs), name, device_of, mutating, args, kwargs, buffer, across, buffer_type, 0.0, view)


def _record(
    result: Any,
    name: str,
    device_of: Callable[[Any], Any],
    mutating: bool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    buffer: Any,
    across: bool,
    buffer_type: Any,
    start: float,
    view: bool = False,
) -> Any:
    """Record the op whose kernel returned ``result`` (the general path of :func:`issue`).

    ``view``: a view op (``x[10:20]``, ``x.T``, ``reshape``). When its result is a view of its
    first argument's memory (the backend's ``buffer_owner`` says so now), it does not inherit
    that memory's recorded failure: the view reads as failed through the memory it views
    (sync points check a buffer's owner too) and shows the new values once that memory is
    written whole. Work in flight on it still makes the view fail with it (``deps``): that
    failure is not recorded for a view of memory written whole since (:meth:`Queue._record_failure`)."""
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
    queue = _queue_get(device) or queue_of_device(device)
    if queue is None:  # the backend serves this device without queues (never for in-order backends)
        return value
    # What it writes: its new buffers, or its target and the buffer owning the target's memory.
    overwrite = False
    if mutating:
        # The target, the buffer owning its memory, and the base array's buffer as the front
        # end knows it (a backend may learn that a buffer is a view only when its work runs).
        owner = _owner_of.get(device.type)
        written = [target]
        for buf in (owner(target) if owner is not None else None, local.base):
            if buf is not None and all(buf is not w for w in written):
                written.append(buf)
        # A write of all of the target's memory that does not read it (the front end says so: a
        # full ``x[...] = v``, or through a view spanning x, ``x[::-1][...] = v``) neither waits
        # for nor inherits the target's earlier failure.
        overwrite = local.overwrite is target
    elif value.__class__ is tuple:
        written = [v for v in value if v is not None]
    else:
        written = [value]
    read_args = args[1:] if overwrite else args
    # What it reads that work in flight produces, while such work may still fail (to fail
    # with it if it does; a backend's kernels need not propagate failures themselves).
    deps = None
    if across:
        deps = _inputs_in([q for q in list(_queues.values()) if q.log], read_args)
    elif queue.log:
        deps = _inputs_in((queue,), read_args)
    if _failures:
        if view and not mutating and args and _views(queue, value, args[0]):
            inherited = _failed_input(args[1:], kwargs)  # what it views fails its readers, not the view itself
        else:
            inherited = _failed_input(read_args, kwargs)
        if inherited is not None:  # it read a failed op's output: it fails the same way
            check = _Inherited(inherited)
    entry = None
    if check is not None or deps:
        entry = Entry(queue, 0, name, user_site(), check, tuple((id(w), weakref.ref(w)) for w in written), deps)
    hook = profiled
    with LOCK:
        n = next(queue.numbers)
        versions = queue.versions
        for w in written:
            versions[id(w)] = n
        if overwrite:  # written whole: an earlier failure of it is over (a failure in flight records nothing: see _record_failure)
            _forget_written(queue, written, n)
        if entry is not None:
            entry.seq = n
            queue.add(entry)
        if hook is not None:
            number, marker = queue.mark(timed=True)
    if hook is not None:
        hook(name, queue, start, time.perf_counter(), number, marker)
    if on_issue is not None:
        on_issue(queue, n, entry)
    elif not n & 15:
        queue.settle(n)
    return value


_SCALARS_OR_TUPLE = (*_SCALARS, tuple)


def _inputs_in(queues: Iterable[Queue], args: tuple[Any, ...]) -> list[Entry] | None:
    """Entries in flight on ``queues`` that wrote the buffers among ``args`` (nested one level)."""
    found = None
    for queue in queues:
        tracked = queue.tracked
        for value in args:
            hit = tracked.get(id(value))
            if hit is None:
                if type(value) is tuple or type(value) is list:  # type(): a dtype's __class__ is a property
                    nested = _inputs_in((queue,), value)
                    if nested:
                        found = nested if found is None else found + [e for e in nested if e not in found]
                continue
            if hit[1]() is value and not hit[0].retired:
                if found is None:
                    found = [hit[0]]
                elif hit[0] not in found:
                    found.append(hit[0])
    return found


def _failed_input(args: Iterable[Any], kwargs: dict[str, Any]) -> BaseException | None:
    """The error of a failed buffer among the arguments, or of the memory one of them views
    (``w = x[::-1]`` made before ``x`` failed: ``w + 1`` fails the same way on every backend,
    not only where the device's own kernels pass failures on)."""
    queues = list(_queues.values())
    for value in (*args, *kwargs.values()):
        items = value if value.__class__ in (tuple, list) else (value,)
        for item in items:
            for queue in queues:
                error = queue.error_of(item)
                if error is None and queue.failed:
                    owner = queue.owner_of(item)
                    if owner is not None:
                        error = queue.error_of(owner)
                if error is not None:
                    return error
    _forget_dead_failures(queues)
    return None


def _views(queue: Queue, value: Any, source: Any) -> bool:
    """Whether the buffer ``value`` is known to be a view of ``source``'s memory."""
    owner = queue.owner_of(value)
    return owner is not None and (owner is source or owner is queue.owner_of(source))


def _forget_written(queue: Queue, written: list[Any], n: int) -> None:
    """Buffers op number ``n`` wrote whole, without reading them: their failure and the entry in
    flight that wrote them are no longer what a reader gets (LOCK held)."""
    global _failures
    overwritten = queue.overwritten
    if len(overwritten) > 256:
        for key in [k for k, m in overwritten.items() if m < queue.done]:
            del overwritten[key]
    failed = queue.failed
    for w in written:
        overwritten[id(w)] = n
        queue.tracked.pop(id(w), None)
        failed.pop(id(w), None)
    if failed:  # views of the memory written (x[10:20], made after x failed): they show the new values
        ids = {id(w) for w in written}
        for key, (ref, _) in list(failed.items()):
            buf = ref()
            if buf is not None and id(queue.owner_of(buf)) in ids:
                del failed[key]
    _failures = sum(1 for q in list(_queues.values()) if q.failed)
    _refresh_mode()


def _forget_dead_failures(queues: list[Queue]) -> None:
    """Drop the failure records of buffers that are gone (ops stop checking once none is left)."""
    global _failures
    with LOCK:
        for queue in queues:
            failed = queue.failed
            for key in [k for k, (ref, _) in failed.items() if ref() is None]:
                del failed[key]
        _failures = sum(1 for q in queues if q.failed)
        _refresh_mode()


class _Inherited:
    """The check of an op that read a failed buffer: it fails with that buffer's error."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __call__(self) -> BaseException:
        return self.error


def issuing(kernel: Callable[..., Any], name: str, handle: BackendHandle, mutating: bool = False, view: bool = False) -> Callable[..., Any]:
    """``kernel`` of a backend with in-order queues, recording each call on the device's queue.

    ``handle``: the backend's handle (its ``device_of``, ``ensure_buffer`` and buffer type,
    resolved when it activated). The wrapper takes the fast path of the module docstring when
    it can and :func:`issue` otherwise; either way the op is enqueued at once and never waits
    for its producers. ``view``: the op may return a view of its first argument (see :func:`_record`).
    """
    device_of = handle.device_of
    if device_of is None:
        raise ValueError(
            f"backend {handle.name!r} declares in_order_queues but has no device_of(buf); the queues need it (see nda.backends.contract)"
        )
    buffer = handle.ensure_buffer
    buffer_type = handle.declared_buffer_type

    if mutating or not isinstance(buffer_type, type):

        def queued(*args: Any, **kwargs: Any) -> Any:
            return issue(kernel, name, device_of, mutating, args, kwargs, buffer, False, buffer_type)
    else:

        def queued(*args: Any, **kwargs: Any) -> Any:
            if _general:
                return issue(kernel, name, device_of, False, args, kwargs, buffer, False, buffer_type, view)
            value = kernel(*args, **kwargs)
            if isinstance(value, buffer_type):
                queue = _queue_get(device_of(value))
                if queue is not None and not queue.log:
                    n = next(queue.numbers)
                    queue.versions[id(value)] = n
                    if not n & 15:
                        queue.settle(n)
                    return value
            elif value.__class__ is Deferred and value.check is not None and value.value.__class__ is buffer_type and not kwargs:
                # One new buffer and its check (nda-sim: every op): what _record does for it, without
                # its general cases (those need _general, tuples, a scalar or keyword arguments).
                out = value.value
                queue = _queue_get(device_of(out))
                if queue is not None:
                    tracked = queue.tracked
                    deps = None
                    if tracked:
                        for arg in args:  # inputs written by entries in flight: _inputs_in, inlined for plain arguments
                            hit = tracked.get(id(arg))
                            if hit is not None:
                                if hit[1]() is arg and not hit[0].retired:
                                    if deps is None:
                                        deps = [hit[0]]
                                    elif hit[0] not in deps:
                                        deps.append(hit[0])
                            elif arg.__class__ is tuple or arg.__class__ is list:
                                deps = _inputs_in((queue,), args)
                                break
                    site = local.site
                    if site is None:
                        frame = _getframe(1)  # the caller (the user's frame, when the operator ran in C)
                        code = frame.f_code
                        internal = _internal_codes.get(code)
                        if internal is None:
                            internal = _internal_codes[code] = code.co_filename.startswith(_PACKAGE_DIR)
                        site = user_site() if internal else (code, frame.f_lineno)
                    key, ref = id(out), weakref.ref(out)
                    entry = Entry(queue, 0, name, site, value.check, ((key, ref),), deps)
                    with LOCK:  # as _record and Queue.add
                        n = entry.seq = next(queue.numbers)
                        queue.versions[key] = n
                        queue.checked += 1
                        queue.log.append(entry)
                        tracked[key] = (entry, ref)
                    if not n & 15:
                        queue.settle(n)
                    return out
            return _record(value, name, device_of, False, args, kwargs, buffer, False, buffer_type, 0.0, view)

    for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
        try:
            setattr(queued, attr, getattr(kernel, attr))
        except (AttributeError, TypeError):
            pass
    queued.__wrapped__ = kernel  # type: ignore[attr-defined]
    return queued
