"""The profiler: what ran, where, on which thread, for how long, through which kernel.

``nda.profiler.start()`` begins recording and ``stop()`` ends it. While it records, the
front end sends every op through the engine (no silent inline calls), and the engine
records one event per op: name, device, thread, start and end (``time.perf_counter``
seconds), and the dispatch route (the kernel's qualified name). ``chrome_trace(path)``
writes the events as Chrome trace JSON (opens in Perfetto or chrome://tracing), and
``summary()`` gives a table of counts and total/mean time per op.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any, Callable, Iterator

__all__ = ["Profiler", "profiler", "Event"]


class Event:
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
        route = self.route
        if route is None:
            return ""
        if isinstance(route, str):
            return route
        return f"{getattr(route, '__module__', None) or '?'}.{getattr(route, '__qualname__', None) or type(route).__name__}"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "device": self.device, "thread": self.thread, "start": self.start, "end": self.end, "route": self.route_name}


class Profiler:
    """Records engine events between :meth:`start` and :meth:`stop`."""

    def __init__(self) -> None:
        self.active = False
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._on_change: Callable[[], None] = lambda: None
        self._origin = time.perf_counter()

    def start(self) -> None:
        """Clear earlier events and start recording."""
        with self._lock:
            self.events = []
            self._origin = time.perf_counter()
            self.active = True
        self._on_change()

    def stop(self) -> list[Event]:
        """Stop recording (after waiting for pending work); return the events."""
        from . import state

        state.wait_all()
        self.active = False
        self._on_change()
        return list(self.events)

    def record(self, name: str, device: Any, route: Any, start: float, end: float) -> None:
        event = Event(name, device, threading.current_thread().name, start, end, route)
        with self._lock:
            self.events.append(event)

    @contextlib.contextmanager
    def span(self, name: str, device: Any, route: Any) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record(name, device, route, start, time.perf_counter())

    def chrome_trace(self, path: str | None = None) -> dict[str, Any]:
        """The events as a Chrome trace (``traceEvents`` with complete events); written to ``path`` if given."""
        threads = {name: i for i, name in enumerate(sorted({e.thread for e in self.events}))}
        trace = {
            "traceEvents": [
                {
                    "name": e.name, "cat": e.device, "ph": "X", "pid": 1, "tid": threads[e.thread],
                    "ts": (e.start - self._origin) * 1e6, "dur": max(0.0, (e.end - e.start) * 1e6),
                    "args": {"device": e.device, "route": e.route_name, "thread": e.thread},
                }
                for e in self.events
            ]
            + [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}} for name, tid in threads.items()],
            "displayTimeUnit": "ms",
        }
        if path is not None:
            with open(path, "w") as fh:
                json.dump(trace, fh)
        return trace

    def summary(self) -> str:
        """Counts and total/mean wall time per op, slowest total first."""
        totals: dict[str, list[float]] = {}
        for e in self.events:
            totals.setdefault(e.name, []).append(e.end - e.start)
        rows = sorted(totals.items(), key=lambda kv: -sum(kv[1]))
        lines = [f"{'op':<24} {'count':>7} {'total ms':>10} {'mean us':>10}"]
        for name, times in rows:
            lines.append(f"{name:<24} {len(times):>7} {sum(times) * 1e3:>10.3f} {sum(times) / len(times) * 1e6:>10.1f}")
        return "\n".join(lines)


profiler = Profiler()
