"""Views of a profiler recording: the summary table, lanes, the Chrome trace, the timeline.

A :class:`Profile` is what ``nda.profiler.stop()`` returns and what ``with
nda.profiler.profile() as prof:`` fills: a list of the host events (one per op, as before),
plus the device spans (``queue_events``), the marks and the recording's origin. Its views:

``summary()``
    a :class:`SummaryTable`: per op and device (an op called on cpu and on sim is two
    rows) the calls, the host time (issuing, or running on a thread) and the device time
    (on device queues), slowest first. It is a ``str`` (the
    text table: print it, search it) with ``_repr_html_`` for notebooks and ``rows``.
``lanes()``
    the spans grouped into lanes: one per (device, thread) and one per device queue
    (thread ``"queue"``), cpu first, then the other devices by name; within a device the
    caller's thread (``MainThread``) first and the queue last. Needs no matplotlib.
``chrome_trace(path)``
    Chrome trace JSON (Perfetto, chrome://tracing): one *process* per device, named after
    it, and in it one *thread* track per thread and one for the device's queue.
``timeline(ax=None, path=None)``
    a matplotlib Gantt chart of the lanes, a bar per op coloured by op name, time in ms
    since the recording started. matplotlib is imported only here, so ``import nda`` never
    imports it; it is the optional ``notebooks`` extra.

A host lane shows each span from ``max(start, previous end in the lane)``: a thread runs one
thing at a time, except work completed asynchronously (backend API 1.1/1.2 completions,
signalled on a stream's thread), whose raw span reaches back to when it was issued. Device
spans are already laid out one after the other on their queue. The raw spans stay in
:class:`Profile` and in the Chrome trace.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import html
import re
import sys
from typing import Any, Iterable, NamedTuple

__all__ = ["Profile", "SummaryTable", "SummaryRow", "Lane", "Span"]


class Span(NamedTuple):
    """An event as a lane shows it: milliseconds since the recording started."""

    event: Any
    start_ms: float
    end_ms: float


class Lane(NamedTuple):
    """The spans of one thread (or of the queue) on one device, in time order."""

    device: str
    thread: str
    spans: list[Span]

    @property
    def label(self) -> str:
        return f"{self.device} · {self.thread}"


class SummaryRow(NamedTuple):
    """One op on one device in :class:`SummaryTable` (times in seconds; device ones 0.0 when it
    ran on no queue). ``device`` is where it ran (``"cpu:0"``, ``"sim:1"``): the calls of an op
    on two devices are two rows."""

    op: str
    calls: int
    host_total: float
    host_mean: float
    device_total: float
    device_mean: float
    device: str = ""


class SummaryTable(str):
    """Counts and host/device time per op, slowest first: a ``str`` (the text table) with
    ``rows`` and an HTML rendering for notebooks."""

    rows: list[SummaryRow]

    def __new__(cls, rows: list[SummaryRow]) -> SummaryTable:
        device = any(r.device_total for r in rows)
        where = max([len("device")] + [len(r.device) for r in rows])
        head = f"{'op':<24} {'device':<{where}} {'calls':>7} {'total ms':>10} {'mean us':>10}" + (
            f" {'device ms':>10} {'dev mean us':>11}" if device else ""
        )
        lines = [head]
        for r in rows:
            line = f"{r.op:<24} {r.device:<{where}} {r.calls:>7} {r.host_total * 1e3:>10.3f} {r.host_mean * 1e6:>10.1f}"
            if device:
                line += f" {r.device_total * 1e3:>10.3f} {r.device_mean * 1e6:>11.1f}" if r.device_total else f" {'':>10} {'':>11}"
            lines.append(line)
        self = super().__new__(cls, "\n".join(lines))
        self.rows = rows
        return self

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        device = any(r.device_total for r in self.rows)
        heads = ["op", "device", "calls", "total ms", "mean µs"] + (["device ms", "device mean µs"] if device else [])
        out = ["<table class='nda-profile'><thead><tr>"]
        out += [f"<th style='text-align:{'left' if i < 2 else 'right'}'>{h}</th>" for i, h in enumerate(heads)]
        out.append("</tr></thead><tbody>")
        for r in self.rows:
            cells = [html.escape(r.op), html.escape(r.device), str(r.calls), f"{r.host_total * 1e3:.3f}", f"{r.host_mean * 1e6:.1f}"]
            if device:
                cells += [f"{r.device_total * 1e3:.3f}", f"{r.device_mean * 1e6:.1f}"] if r.device_total else ["", ""]
            out.append("<tr>" + "".join(f"<td style='text-align:{'left' if i < 2 else 'right'}'>{c}</td>" for i, c in enumerate(cells)) + "</tr>")
        out.append("</tbody></table>")
        return "".join(out)


def _natural(text: str) -> list[Any]:
    """Sort key that orders ``nda-cpu0-10`` after ``nda-cpu0-9``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _device_key(device: str) -> tuple[int, list[Any]]:
    return (0 if device.startswith("cpu") else 1, _natural(device))


def _thread_key(thread: str) -> tuple[int, list[Any]]:
    return (0 if thread == "MainThread" else 2 if thread == "queue" else 1, _natural(thread))


class Profile(list):  # type: ignore[type-arg]
    """One recording: a list of the host events (see the module docstring), with its views."""

    def __init__(
        self, events: Iterable[Any] = (), queue_events: Iterable[Any] = (), marks: Iterable[tuple[float, str]] = (), origin: float = 0.0
    ) -> None:
        super().__init__(events)
        #: The device spans (thread ``"queue"``): when each op enqueued on a device queue ran there.
        self.queue_events: list[Any] = list(queue_events)
        #: ``(perf_counter time, label)`` of ``nda.profiler.mark`` calls.
        self.marks: list[tuple[float, str]] = list(marks)
        self.origin = origin

    def _fill(self, other: Profile) -> None:
        self[:] = other
        self.queue_events = other.queue_events
        self.marks = other.marks
        self.origin = other.origin

    # ------------------------------------------------------------------ views
    def summary(self) -> SummaryTable:
        """Per op and device: calls, total and mean host time, total and mean device time; slowest first."""
        host: dict[tuple[str, str], list[float]] = {}
        for e in self:
            host.setdefault((e.name, e.device), []).append(e.end - e.start)
        device: dict[tuple[str, str], list[float]] = {}
        for e in self.queue_events:
            device.setdefault((e.name, e.device), []).append(e.end - e.start)
        rows = []
        for name, where in {**host, **device}:
            h, d = host.get((name, where), []), device.get((name, where), [])
            calls = len(h) or len(d)
            rows.append(SummaryRow(name, calls, sum(h), sum(h) / len(h) if h else 0.0, sum(d), sum(d) / len(d) if d else 0.0, where))
        rows.sort(key=lambda r: (-max(r.host_total, r.device_total), r.op, _device_key(r.device)))
        return SummaryTable(rows)

    def lanes(self) -> list[Lane]:
        """The spans in lanes, one per (device, thread) and one per device queue (module docstring)."""
        grouped: dict[tuple[str, str], list[Any]] = {}
        for e in list(self) + self.queue_events:
            grouped.setdefault((e.device, e.thread), []).append(e)
        order = sorted(grouped, key=lambda k: (_device_key(k[0]), _thread_key(k[1])))
        origin = self.origin
        lanes = []
        for device, thread in order:
            spans: list[Span] = []
            previous_end = float("-inf")
            for e in sorted(grouped[(device, thread)], key=lambda ev: (ev.end, ev.start)):
                start_ms = (e.start - origin) * 1e3
                end_ms = (e.end - origin) * 1e3
                start_ms = min(max(start_ms, previous_end), end_ms)
                spans.append(Span(e, start_ms, end_ms))
                previous_end = end_ms
            lanes.append(Lane(device, thread, spans))
        return lanes

    def chrome_trace(self, path: str | None = None) -> dict[str, Any]:
        """The spans as a Chrome trace: a process per device, a thread track per thread and one
        per device queue (complete events), the marks as global instant events; written to
        ``path`` if given."""
        everything = list(self) + self.queue_events
        devices = sorted({e.device for e in everything}, key=_device_key)
        pids = {d: i + 1 for i, d in enumerate(devices)}
        threads: dict[str, dict[str, int]] = {}
        for d in devices:
            names = sorted({e.thread for e in everything if e.device == d}, key=_thread_key)
            threads[d] = {name: i for i, name in enumerate(names)}
        origin = self.origin
        events: list[dict[str, Any]] = [
            {
                "name": e.name,
                "cat": "queue" if e.thread == "queue" else "host",
                "ph": "X",
                "pid": pids[e.device],
                "tid": threads[e.device][e.thread],
                "ts": (e.start - origin) * 1e6,
                "dur": max(0.0, (e.end - e.start) * 1e6),
                "args": {"device": e.device, "route": e.route_name, "thread": e.thread},
            }
            for e in everything
        ]
        events += [{"name": label, "ph": "i", "s": "g", "pid": 1, "tid": 0, "ts": (t - origin) * 1e6} for t, label in self.marks]
        for d, pid in pids.items():
            events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": d}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})
            for name, tid in threads[d].items():
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": f"{d} queue" if name == "queue" else name}})
                events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        trace = {"traceEvents": events, "displayTimeUnit": "ms"}
        if path is not None:
            with open(path, "w") as fh:
                import json  # only when a trace is written

                json.dump(trace, fh)
        return trace

    def timeline(self, ax: Any = None, path: str | None = None, *, max_legend: int = 12) -> Any:
        """Draw the lanes as a timeline (a Gantt chart) with matplotlib; return the Axes.

        ``ax``: draw into this Axes. Without one a new figure is made: with pyplot when the
        caller already imported ``matplotlib.pyplot`` (so a notebook shows it inline), else a
        bare Agg ``Figure`` that touches no global state (scripts, ``python -m nda demo``).
        ``path``: also save the figure there (PNG, or any format matplotlib infers from the
        suffix). Ops are coloured by name; the ``max_legend`` ops with the most busy time
        (summed over lanes) get their own colour and legend entry, the others are grey.
        """
        try:
            import matplotlib
        except ImportError as err:
            raise ImportError(
                "nda.profiler.timeline() needs matplotlib, which nda does not install by default; "
                "pip install 'nda[notebooks]' (or matplotlib). chrome_trace() and summary() work without it."
            ) from err
        lanes = self.lanes()
        if ax is None:
            size = (11.0, min(2.0 + 0.5 * max(len(lanes), 1), 12.0))
            if "matplotlib.pyplot" in sys.modules:
                import matplotlib.pyplot as plt

                fig, ax = plt.subplots(figsize=size)
            else:
                from matplotlib.backends.backend_agg import FigureCanvasAgg
                from matplotlib.figure import Figure

                fig = Figure(figsize=size)
                FigureCanvasAgg(fig)
                ax = fig.add_subplot()
        _draw(ax, matplotlib, lanes, self.marks, self.origin, max_legend)
        if path is not None:
            ax.figure.savefig(path, dpi=120, bbox_inches="tight")
        return ax

    # ------------------------------------------------------------------ display
    def _header(self) -> str:
        everything = list(self) + self.queue_events
        if not everything:
            return "nda profile: nothing recorded"
        devices = sorted({e.device for e in everything}, key=_device_key)
        span = (max(e.end for e in everything) - min(min(e.start for e in everything), self.origin)) * 1e3
        queued = f", {len(self.queue_events)} ran on device queues" if self.queue_events else ""
        return f"nda profile: {len(self)} ops on {', '.join(devices)}{queued}, {span:.1f} ms"

    def __repr__(self) -> str:
        return f"<{self._header()}; .summary(), .timeline(), .chrome_trace(path), .lanes()>"

    def _repr_html_(self) -> str:
        table = self.summary()
        rows = table.rows
        shown = SummaryTable(rows[:15])._repr_html_()
        more = f"<p>… and {len(rows) - 15} more ops: <code>.summary()</code></p>" if len(rows) > 15 else ""
        return f"<p><b>{html.escape(self._header())}</b> (<code>.timeline()</code>, <code>.chrome_trace(path)</code>)</p>{shown}{more}"


def _draw(ax: Any, matplotlib: Any, lanes: list[Lane], marks: list[tuple[float, str]], origin: float, max_legend: int) -> None:
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
    end = max([span.end_ms for lane in lanes for span in lane.spans] + [(t - origin) * 1e3 for t, _ in marks])
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
            [(sp.start_ms, sp.end_ms - sp.start_ms) for sp in spans],
            (row - bar_height / 2, bar_height),
            facecolors=[colours.get(sp.event.name, other) for sp in spans],
            linewidth=0,
            zorder=2,
        )
    placed = sorted(((t - origin) * 1e3, label) for t, label in marks)
    span = end * 1.01 if end > 0 else 1.0
    points = max(ax.get_position().width * ax.figure.get_figwidth() * 72.0, 1.0)  # the axes' width in points
    widths = [(_label_points(label) + 6.0) * span / points for _, label in placed]  # in ms, with a margin
    for (x, label), level in zip(placed, _label_rows([x for x, _ in placed], widths)):
        ax.axvline(x, color="black", linewidth=0.8, linestyle="--", zorder=3)
        ax.annotate(
            label,
            (x, -0.5),
            xytext=(3, -3 - 12 * level),
            textcoords="offset points",
            va="top",
            ha="left",
            fontsize="small",
            zorder=4,
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
        )
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([f"{lane.label}  ({len(lane.spans)} ops)" for lane in lanes])
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlim(0, end * 1.01 if end > 0 else 1)
    ax.set_xlabel("time since nda.profiler.start() (ms)")
    n_host = sum(len(lane.spans) for lane in lanes if lane.thread != "queue")
    n_queues = sum(1 for lane in lanes if lane.thread == "queue")
    queues = f", {n_queues} device queue(s)" if n_queues else ""
    ax.set_title(f"nda engine timeline: {n_host} ops on {len(devices_seen)} device(s), {len(lanes) - n_queues} thread lane(s){queues}, {end:.1f} ms")
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
