"""The profiler on device queues (issue 29, item 3) and in notebooks (issue 30, item 5).

* Device time: an op on a device queue returns once its work is enqueued, so the host span
  of its call is only the time to issue it. The profiler records, per op enqueued, when it
  really ran on the device (nda-sim stamps its markers; nda-cuda uses timing events), one
  lane per device queue, and the Chrome trace has one process per device with a track per
  thread and one for the queue.
* Display: ``summary()`` is a table (text and HTML), ``stop()`` is a short summary in a
  notebook rather than hundreds of events, and ``with nda.profiler.profile() as prof:``.

Both engines: the naive engine waits for each op at issue, the threaded one never does.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import nda
from nda.engine.threaded import ThreadedEngine

nda_sim = pytest.importorskip("nda_sim")


@pytest.fixture(params=["threaded", "naive"])
def engine(request):
    previous = nda.engine.current()
    nda.engine.use(ThreadedEngine() if request.param == "threaded" else "naive")
    yield request.param
    try:
        nda.waitall()
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")


@pytest.fixture
def slow_sim():
    """Every sim work item takes at least 50 ms (a slow device)."""
    nda.waitall()
    latency, nda_sim._device.latency = nda_sim._device.latency, 0.05
    yield 0.05
    nda.waitall()
    nda_sim._device.latency = latency


def _queue_spans(prof, device="sim:0"):
    return [e for e in prof.queue_events if e.device == device]


# ----------------------------------------------------------------------------- device time


def test_a_queued_matmul_is_recorded_for_the_time_it_ran_on_the_device(engine, slow_sim):
    """Before: a matmul on sim was recorded as the fraction of a millisecond its call took,
    while the read waited for the device (~50 ms here): the timeline showed the device idle."""
    a = nda.asarray(np.random.default_rng(0).standard_normal((120, 120)), device="sim")
    a.wait_to_read()
    nda.profiler.start()
    start = time.perf_counter()
    y = a @ a
    y.wait_to_read()
    waited = time.perf_counter() - start
    nda.profiler.stop()
    spans = [(lane.label, s) for lane in nda.profiler.lanes() if lane.device == "sim:0" for s in lane.spans if s.event.name == "matmul"]
    _, longest = max(spans, key=lambda ls: ls[1].end_ms - ls[1].start_ms)
    assert longest.end_ms - longest.start_ms >= slow_sim * 0.9e3, (
        f"matmul on sim:0: {longest.end_ms - longest.start_ms:.2f} ms of a {waited * 1e3:.1f} ms wait"
    )
    queued = [s for lab, s in spans if lab == "sim:0 · queue"]
    assert len(queued) == 1, f"no device-queue lane for the matmul: {[lab for lab, _ in spans]}"
    assert queued[0].end_ms - queued[0].start_ms >= slow_sim * 0.9e3
    (host,) = [e for e in nda.profiler.events if e.name == "matmul"]
    device = queued[0].event
    assert device.thread == "queue" and device.device == "sim:0"
    assert device.duration <= waited + 0.01 and device.start >= host.start - 1e-6
    if engine == "threaded":
        assert host.duration < device.duration / 2  # the call only enqueued the work
    np.testing.assert_allclose(y.asnumpy(), a.asnumpy() @ a.asnumpy(), rtol=1e-10)


def test_device_spans_follow_each_other_on_their_queue_and_devices_overlap(threaded, slow_sim):
    x0 = nda.ones((8, 8), device="sim:0")
    x1 = nda.ones((8, 8), device="sim:1")
    nda.waitall()
    with nda.profiler.profile() as prof:
        for _ in range(3):
            x0 = x0 + 1.0
            x1 = x1 * 2.0
        nda.waitall()
    lanes = {lane.label: lane for lane in prof.lanes()}
    assert {"sim:0 · queue", "sim:1 · queue"} <= set(lanes)
    for device in ("sim:0", "sim:1"):
        spans = lanes[f"{device} · queue"].spans
        assert len(spans) == 3 and all(s.end_ms - s.start_ms >= 45 for s in spans)
        assert all(a.end_ms <= b.start_ms + 1e-6 for a, b in zip(spans, spans[1:]))  # one at a time, in order
    s0, s1 = lanes["sim:0 · queue"].spans, lanes["sim:1 · queue"].spans
    assert s0[0].start_ms < s1[-1].end_ms and s1[0].start_ms < s0[-1].end_ms  # the two devices ran at once
    assert x0.asnumpy()[0, 0] == 4.0 and x1.asnumpy()[0, 0] == 8.0


def test_a_span_ends_when_the_device_reached_it_not_when_it_was_read(threaded):
    """A gate holds the stream; the op's device span must end after the gate opened."""
    x = nda.ones(8, device="sim")
    x.wait_to_read()
    stream = nda_sim.backend._stream(nda.Device("sim", 0))
    released = threading.Event()
    with nda.profiler.profile() as prof:
        stream.enqueue(lambda: released.wait(10))
        y = nda.exp(x)
        time.sleep(0.2)
        opened = time.perf_counter()
        released.set()
        y.wait_to_read()
    (span,) = [e for e in _queue_spans(prof) if e.name == "exp"]
    assert span.end >= opened
    (host,) = [e for e in prof if e.name == "exp"]
    assert host.end < opened  # the call returned before the device ran it


def test_the_chrome_trace_has_a_process_per_device_and_a_track_per_thread_and_queue(threaded, tmp_path):
    import json

    nda.profiler.start()
    nda.profiler.mark("start")
    a = nda.exp(nda.ones(1 << 16))  # cpu
    b = nda.ones(16, device="sim:0") + 1.0
    c = nda.ones(16, device="sim:1") * 2.0
    a.wait_to_read(), b.wait_to_read(), c.wait_to_read()
    nda.profiler.stop()
    trace = nda.profiler.chrome_trace(str(tmp_path / "trace.json"))
    assert json.loads((tmp_path / "trace.json").read_text()) == trace
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    processes = {e["args"]["name"]: e["pid"] for e in meta if e["name"] == "process_name"}
    assert {"cpu:0", "sim:0", "sim:1"} <= set(processes) and len(set(processes.values())) == len(processes)
    tracks = {(e["pid"], e["args"]["name"]): e["tid"] for e in meta if e["name"] == "thread_name"}
    assert (processes["sim:0"], "sim:0 queue") in tracks and (processes["sim:1"], "sim:1 queue") in tracks
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    for e in spans:
        assert e["pid"] == processes[e["args"]["device"]]
    queue_tid = tracks[(processes["sim:1"], "sim:1 queue")]
    assert any(e["name"] == "multiply" and e["pid"] == processes["sim:1"] and e["tid"] == queue_tid for e in spans)
    assert any(e["name"] == "exp" and e["pid"] == processes["cpu:0"] for e in spans)
    assert [e["name"] for e in trace["traceEvents"] if e["ph"] == "i"] == ["start"]


# ----------------------------------------------------------------------------- display


def test_summary_is_a_table_with_text_and_html(threaded):
    with nda.profiler.profile() as prof:
        x = nda.ones(64, device="sim")
        for _ in range(3):
            x = nda.sin(x) + 1.0
        nda.exp(nda.ones(8)).wait_to_read()
        x.wait_to_read()
    table = prof.summary()
    assert isinstance(table, str) and "sin" in table and table.splitlines()[0].split()[:3] == ["op", "device", "calls"]
    assert repr(table) == str(table)  # shown as the table, not as a quoted string
    rows = {r.op: r for r in table.rows}
    assert rows["sin"].calls == 3 and rows["add"].calls == 3 and rows["exp"].calls == 1
    assert rows["sin"].device_total > 0 and rows["exp"].device_total == 0.0  # exp ran on cpu
    html = table._repr_html_()
    assert html.startswith("<table") and "<td style='text-align:left'>sin</td>" in html and "device ms" in html
    assert str(nda.profiler.summary()) == str(table)  # the profiler shows its last recording


def test_summary_splits_an_op_by_device(threaded):
    # Issue 37: sum on cpu and sum on sim were one row, their calls and times added together.
    with nda.profiler.profile() as prof:
        for device in ("cpu", "sim", "sim", "sim:1"):
            nda.sum(nda.ones(16, device=device)).wait_to_read()
    rows = {(r.op, r.device): r for r in prof.summary().rows}
    assert rows["sum", "cpu:0"].calls == 1 and rows["sum", "sim:0"].calls == 2 and rows["sum", "sim:1"].calls == 1
    assert rows["sum", "cpu:0"].device_total == 0.0 and rows["sum", "sim:0"].device_total > 0
    lines = [line.split() for line in str(prof.summary()).splitlines() if line.startswith("sum ")]
    assert sorted((fields[1], fields[2]) for fields in lines) == [("cpu:0", "1"), ("sim:0", "2"), ("sim:1", "1")]
    assert "<td style='text-align:left'>sim:1</td>" in prof.summary()._repr_html_()


def test_stop_in_a_notebook_shows_a_short_summary_not_every_event(threaded):
    from IPython.core.interactiveshell import InteractiveShell

    nda.profiler.start()
    x = nda.ones(4)
    for _ in range(300):
        x = x + 1.0
    events = nda.profiler.stop()
    assert len(events) == 301 and events[0].name == "ones" and all(e.end >= e.start for e in events)  # still the list of events
    formats, _ = InteractiveShell.instance().display_formatter.format(events)
    assert len(formats["text/plain"]) < 200 and "<Event" not in formats["text/plain"], formats["text/plain"]
    assert "301 ops on cpu:0" in formats["text/plain"]
    assert "<table" in formats["text/html"] and formats["text/html"].count("<tr>") <= 16
    formats, _ = InteractiveShell.instance().display_formatter.format(nda.profiler.summary())
    assert "<table" in formats["text/html"] and formats["text/plain"].startswith("op ")


def test_profile_as_a_context_manager(engine):
    with nda.profiler.profile() as prof:
        assert nda.profiler.active and len(prof) == 0  # filled when the block ends
        y = nda.ones(8, device="sim") * 3.0
    assert not nda.profiler.active
    assert {e.name for e in prof} >= {"ones", "multiply"}
    assert {e.name for e in prof.queue_events} >= {"ones", "multiply"}
    assert y.asnumpy().tolist() == [3.0] * 8
    nda.profiler.start()
    try:
        with pytest.raises(RuntimeError, match="already recording"):
            with nda.profiler.profile():
                pass
    finally:
        nda.profiler.stop()
    with pytest.raises(KeyError):  # the block's own error propagates; recording stops
        with nda.profiler.profile() as failed:
            nda.ones(2) + 1.0
            raise KeyError("boom")
    assert not nda.profiler.active and any(e.name == "add" for e in failed)
    assert (nda.ones(2) + 1).tolist() == [2.0, 2.0] and nda.engine.state.limit > 0 or engine == "naive"


def test_an_error_of_work_in_the_block_is_raised_at_its_end(threaded):
    s = nda.arange(4, dtype=nda.float64, device="sim")
    with pytest.raises(IndexError):
        with nda.profiler.profile() as prof:
            s[nda.asarray([0, 9], device="sim")]  # only the device knows 9 is out of bounds
    assert not nda.profiler.active and any(e.name == "getitem" for e in prof)


def test_switching_recording_off_by_hand_unhooks_the_device_queues(threaded):
    from nda.engine import queues as _queues

    nda.profiler.start()
    nda.profiler.active = False  # as a test or a user might
    (nda.ones(4, device="sim") + 1.0).wait_to_read()  # the first op after that notices and unhooks
    assert _queues.profiled is None
    nda.profiler.stop()
