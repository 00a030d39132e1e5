"""Device queues (backend API 1.3): dependencies met at enqueue, exact waits, errors at sync points.

The rules are tested three ways:

* the queue bookkeeping (``nda.engine._queues.Queue``) as explicit state and transitions,
  on a backend whose markers are counters the test moves by hand (no thread);
* on nda-sim, whose stream thread is its queue: a *gate* enqueued on a device's stream
  holds everything behind it, so a test can see that an op was issued (enqueued) before
  its producer finished, that a read waits for exactly its own version, and that copies
  between devices are ordered without any host thread waiting;
* the engine's random programs (``test_engine_stateful``) on sim and on the synchronous
  mirror of nda-cuda's kernels, against NumPy and the naive engine.
"""

from __future__ import annotations

import gc
import threading
import time
import warnings
import weakref

import numpy as np
import pytest

import nda
from nda.engine import Deferred, _queues
from nda.engine.threaded import ThreadedEngine

pytest.importorskip("nda_sim")
import nda_sim  # noqa: E402

from test_engine_stateful import EnginePrograms  # noqa: E402

LARGE = 1 << 21  # above the inline threshold (2**20): on cpu such an op would be deferred by the engine


class Gate:
    """Holds a sim device's stream: work enqueued after it waits until :meth:`open`."""

    def __init__(self, device: str) -> None:
        self.event = threading.Event()
        self.stream = nda_sim.backend._stream(nda.Device(device))
        nda.waitall()
        self.stream.enqueue(lambda: self.event.wait(30))
        self.held_at = self.stream.issued

    def open(self) -> None:
        self.event.set()

    def __enter__(self) -> Gate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.open()


def returns_within(seconds: float, fn):
    """Run ``fn`` on a thread; its result, or AssertionError if it did not return in time."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001
            box["error"] = err

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn} did not return within {seconds} s: a host thread is waiting for the device"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


# ----------------------------------------------------------------------------- bookkeeping

class CounterBackend:
    """Markers are counts the test advances: ``done`` is how far the 'device' has got."""

    def __init__(self) -> None:
        self.issued = 0
        self.done = 0

    def record_marker(self, device):
        return self.issued

    def wait_marker(self, device, marker):
        pass

    def synchronize_marker(self, marker):
        assert marker <= self.done, "the test must advance the device before a wait"

    def marker_reached(self, marker):
        return marker <= self.done


class Buf:
    """A buffer object (weakly referenceable, like a device buffer)."""


def entry(queue, backend, name, writes, check=None, deps=None):
    backend.issued += 1
    e = _queues.Entry(queue, backend.record_marker(None), name, "here.py:1", check, tuple((id(b), weakref.ref(b)) for b in writes), deps)
    queue.add(e)
    return e


def test_queue_state_retires_in_order_and_keeps_exact_versions():
    backend = CounterBackend()
    q = _queues.Queue(nda.Device("cpu", 0), backend)
    a, b = Buf(), Buf()
    ea = entry(q, backend, "make_a", [a])
    eb = entry(q, backend, "make_b", [b])
    ea2 = entry(q, backend, "write_a", [a])
    assert q.version(a) is ea2 and q.version(b) is eb and q.version(a, b) is ea2
    backend.done = 1
    q.retire_reached()  # only what the device finished
    assert ea.retired and not eb.retired and q.in_flight() == 2
    backend.done = 3
    q.retire(eb)  # up to eb, not beyond
    assert eb.retired and not ea2.retired and q.version(b) is None and q.version(a) is ea2
    q.retire_reached()
    assert q.in_flight() == 0 and q.version(a) is None


def test_a_failed_check_poisons_what_the_op_wrote_and_what_read_it():
    backend = CounterBackend()
    q = _queues.Queue(nda.Device("cpu", 0), backend)
    x, y, z, other = Buf(), Buf(), Buf(), Buf()
    failing = entry(q, backend, "getitem", [x], check=lambda: IndexError("index 9 is out of bounds"))
    assert q.checked == 1
    reader = entry(q, backend, "add", [y], deps=[failing])
    fine = entry(q, backend, "sin", [other])
    overwrite = entry(q, backend, "setitem", [z])
    backend.done = 4
    q.retire_reached()
    assert isinstance(failing.error, IndexError) and reader.error is failing.error
    assert fine.error is None and overwrite.error is None and q.checked == 0
    assert q.error_of(x) is failing.error and q.error_of(y) is failing.error and q.error_of(other) is None
    note = failing.error.__notes__[0]
    assert "op 'getitem' issued at here.py:1 failed on cpu:0" in note
    assert len(failing.error.__notes__) == 1  # the reader did not add a note of its own
    _queues.first_error = None


def test_failure_records_hold_no_buffer():
    backend = CounterBackend()
    q = _queues.Queue(nda.Device("cpu", 0), backend)
    x = Buf()
    ref = weakref.ref(x)
    entry(q, backend, "getitem", [x], check=lambda: IndexError("bad"))
    backend.done = 1
    q.retire_reached()
    assert q.error_of(x) is not None
    del x
    gc.collect()
    assert ref() is None  # neither the entry nor the failure record kept it
    _queues.first_error = None


# ----------------------------------------------------------------------------- sim: issue at enqueue

def test_a_dependent_op_is_issued_before_its_producer_finishes(threaded):
    x = nda.asarray(np.arange(LARGE, dtype=np.float64), device="sim")
    x.wait_to_read()
    with Gate("sim:0") as gate:
        def chain():
            y = x * 2.0  # large: on cpu a worker's task; on a queue device enqueued right here
            z = y + 1.0  # depends on y: issued while y has not even started
            return y, z

        y, z = returns_within(10, chain)
        assert gate.stream.completed < gate.held_at  # nothing behind the gate has run
        assert gate.stream.issued >= gate.held_at + 2  # both ops are on the queue
        assert nda.engine.current().pending() == 0  # and neither is an engine task
    np.testing.assert_array_equal(z.asnumpy(), np.arange(LARGE) * 2.0 + 1.0)


def test_a_read_waits_for_exactly_its_own_version(threaded):
    x = nda.asarray(np.arange(8.0), device="sim")
    a = x + 1.0
    a.wait_to_read()
    with Gate("sim:0"):
        b = x * 2.0  # behind the gate
        # a's version is complete: reading it must not wait for b (nor for the whole device)
        returns_within(5, a.wait_to_read)
        np.testing.assert_array_equal(returns_within(5, a.asnumpy), np.arange(8.0) + 1.0)
    np.testing.assert_array_equal(b.asnumpy(), np.arange(8.0) * 2.0)


def test_copies_between_devices_are_ordered_without_host_waits(threaded):
    x = nda.asarray(np.arange(LARGE, dtype=np.float64), device="sim:0")
    x.wait_to_read()
    with Gate("sim:0") as gate:
        def work():
            y = x.to_device("sim:1")  # sim:1 waits for sim:0's marker, no host thread does
            w = y + 1.0  # on sim:1, after the copy
            x[...] = -1.0  # a later write to the source must not reach the copy
            return y, w

        y, w = returns_within(10, work)
        assert gate.stream.completed < gate.held_at
    np.testing.assert_array_equal(y.asnumpy(), np.arange(LARGE))
    np.testing.assert_array_equal(w.asnumpy(), np.arange(LARGE) + 1.0)
    np.testing.assert_array_equal(x.asnumpy(), np.full(LARGE, -1.0))


@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_a_write_through_a_view_issued_before_the_view_exists_reaches_its_base(engine):
    """On sim a view's buffer learns which memory it views only when the view op runs on the
    stream; a write through it issued before that must still be waited for by a read of the
    base (found by the random programs: the write was lost to the read)."""
    previous = nda.engine.current()
    nda.engine.use(engine)
    try:
        x = nda.asarray(np.arange(6.0), device="sim")
        x.wait_to_read()
        if engine == "threaded":
            with Gate("sim:0") as gate:
                v = x[4:6]  # the view op is behind the gate: its buffer does not know x yet
                v[...] = 9.0
                w = x[0:2]
                w += 100.0  # an in-place operator through another pending view
                box: dict[str, object] = {}
                reader = threading.Thread(target=lambda: box.update(value=x.asnumpy()), daemon=True)
                reader.start()
                reader.join(0.3)
                assert reader.is_alive(), f"the read did not wait for the writes through views: {box.get('value')}"
                gate.open()
                reader.join(10)
            np.testing.assert_array_equal(box["value"], [100.0, 101.0, 2.0, 3.0, 9.0, 9.0])
        else:
            v = x[4:6]
            v[...] = 9.0
            w = x[0:2]
            w += 100.0
        np.testing.assert_array_equal(x.asnumpy(), [100.0, 101.0, 2.0, 3.0, 9.0, 9.0])
        np.testing.assert_array_equal(x[3:5].asnumpy(), [3.0, 9.0])
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")


def test_two_devices_run_their_queues_independently(threaded):
    x0 = nda.asarray(np.arange(16.0), device="sim:0")
    x1 = nda.asarray(np.arange(16.0), device="sim:1")
    nda.waitall()
    with Gate("sim:0"):
        y0 = x0 * 3.0  # held
        y1 = x1 * 3.0  # sim:1 is not held: its result is readable now
        np.testing.assert_array_equal(returns_within(5, y1.asnumpy), np.arange(16.0) * 3.0)
    np.testing.assert_array_equal(y0.asnumpy(), np.arange(16.0) * 3.0)


# ----------------------------------------------------------------------------- sim: errors

def test_device_errors_are_raised_at_sync_points_with_the_op_and_line(threaded):
    s = nda.arange(4, dtype=nda.float64, device="sim")
    y = s[nda.asarray([0, 5], device="sim")]  # only the device knows 5 is out of bounds
    line = y_line = test_device_errors_are_raised_at_sync_points_with_the_op_and_line.__code__.co_firstlineno + 2
    fine = s * 2.0
    with pytest.raises(IndexError) as info:
        nda.waitall()
    assert any(f"op 'getitem' issued at {__file__}:{line} failed on sim:0" in n for n in info.value.__notes__), info.value.__notes__
    nda.waitall()  # raised once: the engine is clean again
    with pytest.raises(IndexError) as again:
        y.asnumpy()  # the failed array keeps failing, with the same note
    assert type(again.value) is type(info.value) and again.value.__notes__ == info.value.__notes__
    with pytest.raises(IndexError):
        (y + 1.0).wait_to_read()  # what is computed from it fails the same way
    np.testing.assert_array_equal(fine.asnumpy(), [0.0, 2.0, 4.0, 6.0])
    assert y_line == line


def test_an_error_read_first_through_a_fallback_still_names_the_op_that_failed(threaded):
    s = nda.arange(4, dtype=nda.float64, device="sim")
    y = s[nda.asarray([7], device="sim")]
    with warnings.catch_warnings(), pytest.raises(IndexError) as info:
        warnings.simplefilter("ignore", nda.FallbackWarning)
        nda.linalg.vector_norm(y).asnumpy()  # no sim kernel: the host fallback reads y
    assert "host_fallback" in nda.dispatch.explain("linalg.vector_norm", s).kernel.qualname
    assert any("op 'getitem'" in n for n in info.value.__notes__), info.value.__notes__


def test_failed_device_work_frees_its_arrays(threaded):
    s = nda.arange(4, dtype=nda.float64, device="sim")
    y = s[nda.asarray([9], device="sim")]
    with pytest.raises(IndexError):
        y.asnumpy()
    ref = weakref.ref(y)
    buf = weakref.ref(y._buf)
    del y
    gc.collect()
    assert ref() is None and buf() is None  # the kept error does not keep the array or its memory
    nda.waitall()


# ----------------------------------------------------------------------------- bound on work in flight

def test_the_issuing_thread_waits_at_the_bound_of_work_in_flight(threaded, monkeypatch):
    monkeypatch.setattr(_queues, "MAX_IN_FLIGHT", 32)
    x = nda.asarray(np.arange(4.0), device="sim")
    x.wait_to_read()
    queue = _queues.queue_of_device(nda.Device("sim", 0))
    done = threading.Event()

    def loop() -> None:
        y = x
        for _ in range(200):
            y = y + 1.0
        done.set()

    with Gate("sim:0"):
        t = threading.Thread(target=loop, daemon=True)
        t.start()
        time.sleep(0.5)
        assert not done.is_set(), "200 ops went in flight although the bound is 32"
        assert queue.in_flight() <= 32 + 16
    t.join(30)
    assert done.is_set()
    nda.waitall()


# ----------------------------------------------------------------------------- random programs

class SimPrograms(EnginePrograms):
    device = "sim"


SimPrograms.TestCase.settings = EnginePrograms.TestCase.settings.__class__(
    parent=EnginePrograms.TestCase.settings, max_examples=max(5, EnginePrograms.TestCase.settings.max_examples // 3)
)
TestSimPrograms = SimPrograms.TestCase


class SlowSimPrograms(SimPrograms):
    """The same programs on a slow sim device (every work item waits 0.3 ms first): any read
    or write nda does not order after the work it depends on finds that work unfinished, and
    sim's strict host reads raise instead of returning what happens to be there."""

    def teardown(self):  # the programs run here
        latency, nda_sim._device.latency = nda_sim._device.latency, 3e-4
        try:
            super().teardown()
        finally:
            nda_sim._device.latency = latency


SlowSimPrograms.TestCase.settings = SimPrograms.TestCase.settings.__class__(
    parent=SimPrograms.TestCase.settings, max_examples=max(3, SimPrograms.TestCase.settings.max_examples // 2)
)
TestSlowSimPrograms = SlowSimPrograms.TestCase


class MirrorPrograms(EnginePrograms):
    """nda-cuda's kernel table over NumPy: its device-side checks retire at sync points."""

    device = "cudamirror"

    def teardown(self):
        if not nda.backends.serves("cudamirror"):
            nda.backends.load("_cuda_numpy_mirror:backend")
        super().teardown()


MirrorPrograms.TestCase.settings = SimPrograms.TestCase.settings
TestMirrorPrograms = MirrorPrograms.TestCase


# ----------------------------------------------------------------------------- sim is strict about host reads

def test_sim_refuses_a_host_read_nda_did_not_order(threaded):
    """A real device returns stale memory to a read nobody ordered; sim raises, so a missing
    wait in nda fails the suite instead of passing by luck (sim's reads are otherwise exact)."""
    x = nda.ones(8, device="sim")
    x.wait_to_read()
    with Gate("sim:0"):
        y = nda.exp(x)  # enqueued behind the gate: not produced yet
        with pytest.raises(RuntimeError, match="before the work producing it had run"):
            nda_sim.backend.to_host(y._buf)
        x[2] = 5.0  # an in-place write queued behind the gate
        with pytest.raises(RuntimeError, match="in-place write to its memory was still queued"):
            nda_sim.backend.to_host(x._buf)
    # nda's own reads wait for exactly what they need
    np.testing.assert_allclose(y.asnumpy(), np.exp(np.ones(8)))
    assert x.asnumpy()[2] == 5.0


@pytest.mark.parametrize("write", ["base", "other view"])
def test_a_view_read_waits_for_a_write_through_its_base_or_another_view(threaded, write):
    """The version a view's read waits for is its memory's: a write queued through the base
    (or through another view of it) is waited for, on a slow device as on a fast one."""
    x = nda.zeros(8, device="sim")
    v = x[2:5]
    w = x[1:4]
    v.wait_to_read()
    gate = Gate("sim:0")
    if write == "base":
        x[...] = 7.0  # queued behind the gate
    else:
        w[...] = 7.0
    threading.Timer(0.2, gate.open).start()
    expected = [7.0, 7.0, 7.0] if write == "base" else [7.0, 7.0, 0.0]
    np.testing.assert_array_equal(v.asnumpy(), expected)  # waits for the write; never a stale read
