"""The profiler: what ran, where, on which thread and on which device queue, for how long.

``nda.profiler.start()`` begins recording and ``stop()`` ends it; ``with
nda.profiler.profile() as prof:`` does both around a block. While it records, the front end
sends every op through the engine (no silent inline calls), and two kinds of spans are kept:

*host spans* (:attr:`Profiler.events`)
    one :class:`Event` per op as the engine ran it on a thread: name, device, thread, start
    and end (``time.perf_counter`` seconds), and the dispatch route (the kernel's qualified
    name). For an op on a device queue (sim, cuda) this is the time to *issue* it: the
    kernel returns once the work is enqueued.
*device spans* (:attr:`Profiler.queue_events`)
    for every op enqueued on a device queue, when it really ran there. Each such op gets a
    marker right after it (a *timed* one where the backend has them: nda-sim stamps the time
    its stream reaches a marker, nda-cuda records CUDA timing events), so its span ends when
    the device reached the marker and starts when the previous op of that queue ended (or
    when it was issued, if later): a queue runs one op at a time, in order. A backend
    without timed markers (a synchronous one) gets the issue span. The thread of a device
    span is ``"queue"``.

Views (:mod:`._profile_views`): ``stop()`` and ``profile()`` give a :class:`Profile` (a list
of the host events, with ``summary()``, ``lanes()``, ``chrome_trace(path)`` and
``timeline()``, shown in a notebook as a one-line header and the summary table rather than
hundreds of events); the same views on the profiler show what it has recorded so far.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .. import _forksafe
from . import queues as _queues

if TYPE_CHECKING:
    from ._profile_views import Lane, Profile, Span, SummaryTable

__all__ = ["Profiler", "profiler", "Event", "Lane", "Span", "Profile", "SummaryTable"]

#: The thread name of the device spans: one lane per device queue.
QUEUE_THREAD = "queue"


class Event:
    """One op as the engine ran it (times are ``time.perf_counter()`` seconds)."""

    __slots__ = ("name", "device", "thread", "start", "end", "route")

    def __init__(self, name: str, device: Any, thread: str, start: float, end: float, route: Any) -> None:
        self.name = name
        self.device = str(device)
        self.thread = thread
        self.start = start
        self.end = end
        self.route = route

    @property
    def route_name(self) -> str:
        """The kernel (or fallback/copy route) that ran, as a readable qualified name."""
        route = self.route
        if route is None:
            return ""
        if isinstance(route, str):
            return route
        return f"{getattr(route, '__module__', None) or '?'}.{getattr(route, '__qualname__', None) or type(route).__name__}"

    @property
    def duration(self) -> float:
        """Seconds between start and end."""
        return max(0.0, self.end - self.start)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "device": self.device, "thread": self.thread, "start": self.start, "end": self.end, "route": self.route_name}

    def __repr__(self) -> str:
        return f"<Event {self.name} on {self.device} ({self.thread}), {self.duration * 1e6:.1f} us, {self.route_name}>"


class _Enqueued:
    """An op enqueued on a device queue while recording; becomes a device span once reached."""

    __slots__ = ("name", "queue", "issued", "returned", "number", "marker")

    def __init__(self, name: str, queue: Any, issued: float, returned: float, number: int, marker: Any) -> None:
        self.name = name
        self.queue = queue
        self.issued = issued
        self.returned = returned
        self.number = number
        self.marker = marker


class Profiler:
    """Records engine events between :meth:`start` and :meth:`stop` (see the module docstring)."""

    #: Whether this profiler is the one the engine and the device queues report to (``nda.profiler``).
    _owns_engine = False

    def __init__(self) -> None:
        self.active = False
        self.events: list[Event] = []
        #: ``(perf_counter time, label)`` of :meth:`mark` calls since :meth:`start`.
        self.marks: list[tuple[float, str]] = []
        self._enqueued: list[_Enqueued] = []  # device-queue ops whose marker was not seen reached yet
        self._queue_events: list[Event] = []
        self._queue_end: dict[Any, float] = {}  # queue -> end of its latest device span
        self._lock = _forksafe.lock()
        self._on_change: Callable[[], None] = lambda: None
        self._origin = time.perf_counter()

    # ------------------------------------------------------------------ recording
    def start(self) -> None:
        """Clear earlier events and start recording."""
        with self._lock:
            self.events = []
            self.marks = []
            self._enqueued = []
            self._queue_events = []
            self._queue_end = {}
            self._origin = time.perf_counter()
            self.active = True
        if self._owns_engine:
            _queues.set_profiled(self._on_enqueued)
        self._on_change()

    def stop(self) -> Profile:
        """Stop recording (after waiting for pending work); return what was recorded as a
        :class:`Profile` (a list of the host events, with the views)."""
        from ._state import state

        try:
            state.wait_all()
        finally:
            self.active = False
            if self._owns_engine:
                _queues.set_profiled(None)
            self._on_change()
        return self.snapshot()

    @contextlib.contextmanager
    def profile(self) -> Iterator[Profile]:
        """Record the block: ``with nda.profiler.profile() as prof: ...``; ``prof`` is filled
        when the block ends (a :class:`Profile`: ``prof.summary()``, ``prof.timeline()``...).

        Raises RuntimeError if the profiler is already recording. An error of work issued in
        the block is raised at its end, as ``stop()`` (a sync point) raises it.
        """
        if self.active:
            raise RuntimeError("nda.profiler.profile(): the profiler is already recording; call nda.profiler.stop() first")
        from ._profile_views import Profile

        result = Profile()
        self.start()
        try:
            yield result
        except BaseException:
            try:
                self.stop()
            except Exception:  # noqa: BLE001 - the block's own error is the one to see
                pass
            result._fill(self.snapshot())
            raise
        try:
            self.stop()
        finally:
            result._fill(self.snapshot())

    def record(self, name: str, device: Any, route: Any, start: float, end: float) -> None:
        event = Event(name, device, threading.current_thread().name, start, end, route)
        with self._lock:
            self.events.append(event)

    def mark(self, label: str) -> None:
        """Note a moment (a phase of your program) while recording: an instant event in the
        Chrome trace and a labelled vertical line in :meth:`timeline`. Ignored when not recording."""
        if self.active:
            with self._lock:
                self.marks.append((time.perf_counter(), str(label)))

    @contextlib.contextmanager
    def span(self, name: str, device: Any, route: Any) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record(name, device, route, start, time.perf_counter())

    # ------------------------------------------------------------------ device queues
    def _on_enqueued(self, name: str, queue: Any, issued: float, returned: float, number: int, marker: Any) -> None:
        """Called by the device queues for every op enqueued while recording (with its timed marker)."""
        if not self.active:  # recording was switched off by hand: stop being called
            _queues.set_profiled(None)
            return
        with self._lock:
            self._enqueued.append(_Enqueued(name, queue, issued, returned, number, marker))
            many = len(self._enqueued) > 4096
        if many:
            self._resolve()  # markers already reached: their spans, and the markers dropped

    def _resolve(self) -> None:
        """Turn the enqueued ops whose markers are reached into device spans (non-blocking)."""
        with self._lock:
            pending, self._enqueued = self._enqueued, []
            by_queue: dict[Any, list[_Enqueued]] = {}
            for item in pending:
                by_queue.setdefault(item.queue, []).append(item)
            for queue, items in by_queue.items():
                items.sort(key=lambda it: it.number)
                previous = self._queue_end.get(queue, float("-inf"))
                for i, item in enumerate(items):
                    if not queue.marker_reached(item.marker):  # in order: the later ones are not either
                        self._enqueued.extend(items[i:])
                        break
                    reached = queue.marker_time(item.marker) if queue.marker_time is not None else None
                    end = item.returned if reached is None else max(reached, item.issued)
                    start = min(max(item.issued, previous), end)
                    previous = end
                    self._queue_events.append(Event(item.name, queue.device, QUEUE_THREAD, start, end, None))
                self._queue_end[queue] = previous

    @property
    def queue_events(self) -> list[Event]:
        """The device spans recorded so far (ops whose work is not done yet are not among them)."""
        self._resolve()
        with self._lock:
            return list(self._queue_events)

    # ------------------------------------------------------------------ views
    def snapshot(self) -> Profile:
        """What has been recorded so far, as a :class:`Profile`."""
        from ._profile_views import Profile

        queue_events = self.queue_events
        with self._lock:
            return Profile(list(self.events), queue_events, list(self.marks), self._origin)

    def summary(self) -> SummaryTable:
        """Counts and total/mean time per op, host and device (see :meth:`Profile.summary`)."""
        return self.snapshot().summary()

    def lanes(self) -> list[Lane]:
        """The spans grouped into lanes, one per (device, thread) and one per device queue (see :meth:`Profile.lanes`)."""
        return self.snapshot().lanes()

    def chrome_trace(self, path: str | None = None) -> dict[str, Any]:
        """The spans as a Chrome trace, one process per device (see :meth:`Profile.chrome_trace`)."""
        return self.snapshot().chrome_trace(path)

    def timeline(self, ax: Any = None, path: str | None = None, *, max_legend: int = 12) -> Any:
        """Draw the recorded spans with matplotlib (see :meth:`Profile.timeline`)."""
        return self.snapshot().timeline(ax, path, max_legend=max_legend)

    def __repr__(self) -> str:
        state = "recording" if self.active else "stopped"
        return f"<nda profiler, {state}: {len(self.events)} ops recorded; summary(), timeline(), chrome_trace(path)>"


_VIEWS = ("Lane", "Profile", "Span", "SummaryTable")


def __getattr__(name: str) -> Any:
    """The view classes (:mod:`._profile_views`), imported on first use: importing nda does not
    need them (nor their ``html``/``re`` formatting) until something is profiled."""
    if name in _VIEWS:
        from . import _profile_views

        value = getattr(_profile_views, name)
        globals()[name] = value  # idempotent: every thread binds the same class
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_VIEWS))


profiler = Profiler()
profiler._owns_engine = True
