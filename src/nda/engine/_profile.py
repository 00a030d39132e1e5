"""The profiler: what ran, where, on which thread, for how long, through which kernel.

``nda.profiler.start()`` begins recording and ``stop()`` ends it. While it records, the
front end sends every op through the engine (no silent inline calls), and the engine
records one event per op: name, device, thread, start and end (``time.perf_counter``
seconds), and the dispatch route (the kernel's qualified name). Three views of the events:

``chrome_trace(path)``
    Chrome trace JSON (opens in Perfetto or chrome://tracing): the raw spans, one track per
    thread.
``summary()``
    A table of counts and total/mean wall time per op.
``timeline(ax=None, path=None)``
    A matplotlib Gantt chart for notebooks: one lane per (device, thread), a bar per op
    coloured by op name, time in ms since ``start()``. matplotlib is imported only here,
    so ``import nda`` never imports it; it is the optional ``notebooks`` extra.

What a lane shows. A thread runs one thing at a time, so the spans recorded on one
thread never overlap, with one exception: work that completes *asynchronously* (a device
stream such as nda-sim's, a CUDA stream) is recorded from the moment the engine issued it
to the moment its completion was signalled, and the completion is signalled on the
stream's thread. An in-order stream cannot start an item before the previous one
finished, so :meth:`Profiler.lanes` shows such a span from ``max(issue, previous end in
the lane)``: the time the item actually occupied the stream. The raw spans stay available
in :attr:`Profiler.events` and in the Chrome trace.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import time
from typing import Any, Callable, Iterator, NamedTuple

__all__ = ["Profiler", "profiler", "Event", "Lane", "Span"]


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


class Span(NamedTuple):
    """An event as a lane shows it: milliseconds since ``start()``."""

    event: Event
    start_ms: float
    end_ms: float


class Lane(NamedTuple):
    """The spans of one thread on one device, in time order."""

    device: str
    thread: str
    spans: list[Span]

    @property
    def label(self) -> str:
        return f"{self.device} · {self.thread}"


def _natural(text: str) -> list[Any]:
    """Sort key that orders ``nda-cpu0-10`` after ``nda-cpu0-9``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _device_key(device: str) -> tuple[int, list[Any]]:
    return (0 if device.startswith("cpu") else 1, _natural(device))


class Profiler:
    """Records engine events between :meth:`start` and :meth:`stop` (see the module docstring)."""

    def __init__(self) -> None:
        self.active = False
        self.events: list[Event] = []
        #: ``(perf_counter time, label)`` of :meth:`mark` calls since :meth:`start`.
        self.marks: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._on_change: Callable[[], None] = lambda: None
        self._origin = time.perf_counter()

    # ------------------------------------------------------------------ recording
    def start(self) -> None:
        """Clear earlier events and start recording."""
        with self._lock:
            self.events = []
            self.marks = []
            self._origin = time.perf_counter()
            self.active = True
        self._on_change()

    def stop(self) -> list[Event]:
        """Stop recording (after waiting for pending work); return the events."""
        from . import state

        try:
            state.wait_all()
        finally:
            self.active = False
            self._on_change()
        return list(self.events)

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

    # ------------------------------------------------------------------ views
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
            + [{"name": label, "ph": "i", "s": "g", "pid": 1, "tid": 0, "ts": (t - self._origin) * 1e6} for t, label in self.marks]
            + [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}} for name, tid in threads.items()],
            "displayTimeUnit": "ms",
        }
        if path is not None:
            with open(path, "w") as fh:
                import json  # only when a trace is written

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

    def lanes(self) -> list[Lane]:
        """The events grouped into lanes, one per (device, thread), as :meth:`timeline` draws them.

        Lanes are ordered cpu first, then other devices by name; within a device the
        caller's thread (``MainThread``) comes first. Spans are in ms since :meth:`start`;
        an asynchronously completed span is clipped to start no earlier than the previous
        span of its lane ended (module docstring). Needs no matplotlib.
        """
        with self._lock:
            events = list(self.events)
        grouped: dict[tuple[str, str], list[Event]] = {}
        for e in events:
            grouped.setdefault((e.device, e.thread), []).append(e)
        order = sorted(grouped, key=lambda k: (_device_key(k[0]), k[1] != "MainThread", _natural(k[1])))
        lanes = []
        for device, thread in order:
            spans: list[Span] = []
            previous_end = float("-inf")
            for e in sorted(grouped[(device, thread)], key=lambda ev: (ev.end, ev.start)):
                start_ms = (e.start - self._origin) * 1e3
                end_ms = (e.end - self._origin) * 1e3
                start_ms = min(max(start_ms, previous_end), end_ms)
                spans.append(Span(e, start_ms, end_ms))
                previous_end = end_ms
            lanes.append(Lane(device, thread, spans))
        return lanes

    def timeline(self, ax: Any = None, path: str | None = None, *, max_legend: int = 12) -> Any:
        """Draw the recorded ops as a timeline (a Gantt chart) with matplotlib; return the Axes.

        ``ax``: draw into this Axes. Without one a new figure is made: with pyplot when the
        caller already imported ``matplotlib.pyplot`` (so a notebook shows it inline), else a
        bare Agg ``Figure`` that touches no global state (scripts, ``python -m nda demo``).
        ``path``: also save the figure there (PNG, or any format matplotlib infers from the
        suffix). Ops are coloured by name; the ``max_legend`` ops with the most total time
        get their own colour and legend entry, the others are grey.
        """
        try:
            import matplotlib
        except ImportError as err:
            raise ImportError(
                "nda.profiler.timeline() needs matplotlib, which nda does not install by default; "
                "pip install 'nda[notebooks]' (or matplotlib). chrome_trace() and summary() work without it."
            ) from err
        if ax is None:
            if "matplotlib.pyplot" in sys.modules:
                import matplotlib.pyplot as plt

                fig, ax = plt.subplots(figsize=self._figsize())
            else:
                from matplotlib.backends.backend_agg import FigureCanvasAgg
                from matplotlib.figure import Figure

                fig = Figure(figsize=self._figsize())
                FigureCanvasAgg(fig)
                ax = fig.add_subplot()
        self._draw(ax, matplotlib, max_legend)
        if path is not None:
            ax.figure.savefig(path, dpi=120, bbox_inches="tight")
        return ax

    # ------------------------------------------------------------------ drawing
    def _figsize(self) -> tuple[float, float]:
        n = len({(e.device, e.thread) for e in self.events})
        return (11.0, min(2.0 + 0.5 * max(n, 1), 12.0))

    def _draw(self, ax: Any, matplotlib: Any, max_legend: int) -> None:
        lanes = self.lanes()
        totals: dict[str, float] = {}
        for lane in lanes:
            for span in lane.spans:
                totals[span.event.name] = totals.get(span.event.name, 0.0) + (span.end_ms - span.start_ms)
        ranked = sorted(totals, key=lambda name: -totals[name])
        palette = matplotlib.colormaps["tab20"].colors if len(ranked) > 10 else matplotlib.colormaps["tab10"].colors
        colours = {name: palette[i % len(palette)] for i, name in enumerate(ranked[:max_legend])}
        other = (0.6, 0.6, 0.6)
        if not lanes:
            ax.text(0.5, 0.5, "no events recorded (call nda.profiler.start() before the work)", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
            return
        end = max([span.end_ms for lane in lanes for span in lane.spans] + [(t - self._origin) * 1e3 for t, _ in self.marks])
        bar_height = 0.7
        devices_seen: list[str] = []
        for row, lane in enumerate(lanes):
            if lane.device not in devices_seen:
                devices_seen.append(lane.device)
            if len(devices_seen) % 2 == 0:
                ax.axhspan(row - 0.5, row + 0.5, color=(0.93, 0.93, 0.93), zorder=0, lw=0)
            # One collection per lane, in time order, at true widths and without edges: where
            # ops are shorter than a pixel, the pixel blends their colours in proportion to the
            # time they took, instead of showing whichever op happened to be drawn last.
            spans = sorted(lane.spans, key=lambda sp: sp.start_ms)
            ax.broken_barh(
                [(sp.start_ms, sp.end_ms - sp.start_ms) for sp in spans], (row - bar_height / 2, bar_height),
                facecolors=[colours.get(sp.event.name, other) for sp in spans], linewidth=0, zorder=2,
            )
        marks = sorted(((t - self._origin) * 1e3, label) for t, label in self.marks)
        span = end * 1.01 if end > 0 else 1.0
        points = max(ax.get_position().width * ax.figure.get_figwidth() * 72.0, 1.0)  # the axes' width in points
        widths = [(_label_points(label) + 6.0) * span / points for _, label in marks]  # in ms, with a margin
        for (x, label), level in zip(marks, _label_rows([x for x, _ in marks], widths)):
            ax.axvline(x, color="black", linewidth=0.8, linestyle="--", zorder=3)
            ax.annotate(label, (x, -0.5), xytext=(3, -3 - 12 * level), textcoords="offset points", va="top", ha="left", fontsize="small", zorder=4,
                        bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
        ax.set_yticks(range(len(lanes)))
        ax.set_yticklabels([f"{lane.label}  ({len(lane.spans)} ops)" for lane in lanes])
        ax.set_ylim(len(lanes) - 0.5, -0.5)
        ax.set_xlim(0, end * 1.01 if end > 0 else 1)
        ax.set_xlabel("time since nda.profiler.start() (ms)")
        n_events = sum(len(lane.spans) for lane in lanes)
        ax.set_title(f"nda engine timeline: {n_events} ops on {len(devices_seen)} device(s), {len(lanes)} thread lane(s), {end:.1f} ms")
        ax.grid(axis="x", alpha=0.3, zorder=1)
        from matplotlib.patches import Patch

        handles = [Patch(facecolor=colours[name], label=f"{name} ({totals[name]:.1f} ms)") for name in ranked[:max_legend]]
        if len(ranked) > max_legend:
            rest = sum(totals[name] for name in ranked[max_legend:])
            handles.append(Patch(facecolor=other, label=f"{len(ranked) - max_legend} other ops ({rest:.1f} ms)"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", title="op (busy time)", frameon=False)


def _label_points(label: str) -> float:
    """A generous estimate of a mark label's width in points (matplotlib's "small" font: 8.33 pt)."""
    return 0.62 * 8.33 * len(label)


def _label_rows(xs: list[float], widths: list[float]) -> list[int]:
    """The row of each mark's label (``xs`` sorted): the first row whose last label ends left of it,
    so no two labels overlap, however close their marks are."""
    ends: list[float] = []
    rows = []
    for x, width in zip(xs, widths):
        row = next((i for i, right in enumerate(ends) if right < x), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = x + width
        rows.append(row)
    return rows


profiler = Profiler()
