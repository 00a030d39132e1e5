"""Device queues (backend API 1.3): dependencies met at enqueue, exact waits, errors at sync points.

The rules are tested three ways:

* the queue bookkeeping (``nda.engine.queues.Queue``) as explicit state and transitions,
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
from nda.engine import queues as _queues
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
    """Markers are counts the test advances: ``done`` is how far the 'device' has got (in ops).
    The queues see it through its handle, resolved as activation resolves a backend's."""

    in_order_queues = True

    def __init__(self) -> None:
        self.issued = 0
        self.done = 0

    def handle(self):
        from nda.backends._handle import resolve

        return resolve("counter", self, ("cpu",))

    def to_host(self, buf):
        raise AssertionError("the bookkeeping tests copy nothing")

    def from_host(self, host, device, out=None):
        raise AssertionError("the bookkeeping tests copy nothing")

    def device_of(self, buf):
        return nda.Device("cpu", 0)

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
    """An op that may fail, enqueued: it takes a number, writes ``writes`` and gets an entry."""
    backend.issued += 1
    with _queues.LOCK:
        n = queue.take()
        for b in writes:
            queue.versions[id(b)] = n
        e = _queues.Entry(queue, n, name, "here.py:1", check, tuple((id(b), weakref.ref(b)) for b in writes), deps)
        queue.add(e)
    return e


def plain(queue, backend, writes):
    """An op that cannot fail, enqueued: a number and versions only."""
    backend.issued += 1
    with _queues.LOCK:
        n = queue.take()
        for b in writes:
            queue.versions[id(b)] = n
    return n


def marked(queue):
    with _queues.LOCK:
        return queue.mark()


def test_queue_state_retires_in_order_and_keeps_exact_versions():
    backend = CounterBackend()
    q = _queues.Queue(nda.Device("cpu", 0), backend.handle())
    a, b = Buf(), Buf()
    ea = entry(q, backend, "make_a", [a])
    m1 = marked(q)  # covers make_a
    eb = entry(q, backend, "make_b", [b])
    m2 = marked(q)  # covers make_a, make_b
    ea2 = entry(q, backend, "write_a", [a])
    m3 = marked(q)
    assert q.version(a) == ea2.seq and q.version(b) == eb.seq and q.version(a, b) == ea2.seq
    assert q.markers == 3 and q.in_flight() == 3
    backend.done = 1
    q.retire_reached()  # only what the device finished
    assert ea.retired and not eb.retired and q.in_flight() == 2 and q.done == m1[0] + 1
    backend.done = 3
    q.retire_to(m2[0])  # up to that marker, not beyond
    assert eb.retired and not ea2.retired and q.version(b) is None and q.version(a) == ea2.seq
    q.retire_reached()
    assert q.in_flight() == 0 and q.version(a) is None and not q.marks and m3[0] < q.done


def test_one_marker_covers_everything_enqueued_before_it():
    """Ops take numbers, not markers: a wait records one marker, which covers every op before it,
    and a later wait for an op it covers records none."""
    backend = CounterBackend()
    q = _queues.Queue(nda.Device("cpu", 0), backend.handle())
    bufs = [Buf() for _ in range(10)]
    numbers = [plain(q, backend, [b]) for b in bufs]
    assert q.markers == 0 and q.in_flight() == 10
    backend.done = 10
    q.wait(q.version(bufs[3]))  # records one marker, after all ten
    assert q.markers == 1 and q.in_flight() == 0 and all(q.version(b) is None for b in bufs)
    q.wait(numbers[7])  # finished already: no marker
    q.drain()  # nothing in flight: no marker
    assert q.markers == 1
    later = plain(q, backend, [bufs[0]])
    backend.done = 11
    q.drain()
    assert q.markers == 2 and q.version(bufs[0]) is None and later < q.done


def test_a_failed_check_poisons_what_the_op_wrote_and_what_read_it():
    backend = CounterBackend()
    q = _queues.Queue(nda.Device("cpu", 0), backend.handle())
    x, y, z, other = Buf(), Buf(), Buf(), Buf()
    failing = entry(q, backend, "getitem", [x], check=lambda: IndexError("index 9 is out of bounds"))
    assert q.checked == 1
    reader = entry(q, backend, "add", [y], deps=[failing])
    plain(q, backend, [other])
    overwrite = entry(q, backend, "setitem", [z])
    backend.done = 4
    q.drain()
    assert isinstance(failing.error, IndexError) and reader.error is failing.error
    assert overwrite.error is None and q.checked == 0
    assert q.error_of(x) is failing.error and q.error_of(y) is failing.error and q.error_of(other) is None
    note = failing.error.__notes__[0]
    assert "op 'getitem' issued at here.py:1 failed on cpu:0" in note
    assert len(failing.error.__notes__) == 1  # the reader did not add a note of its own
    _queues.first_error = None


def test_failure_records_hold_no_buffer():
    backend = CounterBackend()
    q = _queues.Queue(nda.Device("cpu", 0), backend.handle())
    x = Buf()
    ref = weakref.ref(x)
    entry(q, backend, "getitem", [x], check=lambda: IndexError("bad"))
    backend.done = 1
    q.drain()
    assert q.error_of(x) is not None
    del x
    gc.collect()
    assert ref() is None  # neither the entry, the versions nor the failure record kept it
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
        nda.isin(y, s).asnumpy()  # no sim kernel: the host fallback reads y
    assert "host_fallback" in nda.dispatch.explain("isin", s, s).kernel.qualname
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


# ----------------------------------------------------------------------------- markers on demand


def _mirror() -> str:
    if not nda.backends.serves("cudamirror"):
        nda.backends.load("_cuda_numpy_mirror:backend")
    return "cudamirror"


def _device(name: str) -> str:
    return _mirror() if name == "cudamirror" else name


def _markers(device: str) -> int:
    return _queues.queue_of_device(nda.Device(device)).markers


@pytest.mark.parametrize("device", ["sim", "cudamirror"])
@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_markers_are_recorded_only_where_something_waits(device, engine):
    """Issue 27, item 3: an op takes a position on its queue, not a marker. A loop of tiny ops
    then one read records at most one marker: none where the backend copies in queue order
    (sim: the read is of the newest version, so a copy after everything enqueued is exact),
    one where it does not (the mirror); an op issued while nothing waits records none (the
    threaded engine). The naive engine waits at every op, so it records one per op there."""
    device = _device(device)
    per_wait = 0 if hasattr(nda.backends.for_device(nda.Device(device)), "to_host_in_order") else 1
    previous = nda.engine.current()
    nda.engine.use(ThreadedEngine() if engine == "threaded" else "naive")
    try:
        x = nda.ones(4, dtype=nda.float32, device=device)
        y = nda.ones(4, dtype=nda.float32, device=device)
        nda.waitall()
        before = _markers(device)
        z = x
        for _ in range(100):
            z = z * 1.0001 + y  # 200 dependent tiny ops
        issued = _markers(device) - before
        total = float(nda.sum(z))  # 201 ops and one read
        chain = _markers(device) - before
        before = _markers(device)
        reads = [float(nda.sum(x + y)) for _ in range(10)]  # 2 ops and a read, 10 times
        per_read = (_markers(device) - before) / 10
        np.testing.assert_allclose(total, float(np.sum(np.full(4, sum(1.0001**k for k in range(101)), np.float32))), rtol=1e-4)
        assert reads == [8.0] * 10
        if engine == "threaded":
            assert issued == 0, f"{issued} markers for 200 ops nobody waited for"
            assert chain == per_wait, f"{chain} markers for 201 ops and one read"
            assert per_read == per_wait
            a = x + 1.0
            b = a * 2.0  # a read of a (not the newest work) waits for a marker after a
            before = _markers(device)
            assert a.asnumpy().tolist() == [2.0] * 4 and _markers(device) == before + 1
            assert b.asnumpy().tolist() == [4.0] * 4 and _markers(device) == before + 1  # covered by that marker
        else:  # the naive engine waits at every op: one marker each, none more for the read
            assert issued == 200 and chain == 201 and per_read == 2.0
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")


@pytest.mark.parametrize("device", ["sim", "cudamirror"])
def test_a_loop_that_never_reads_records_a_marker_per_quarter_of_the_bound(threaded, device, monkeypatch):
    """The bound on work in flight needs something to wait for: one marker every
    ``MAX_IN_FLIGHT / 4`` ops, and the queue never holds more than the bound."""
    device = _device(device)
    monkeypatch.setattr(_queues, "MAX_IN_FLIGHT", 64)
    x = nda.ones(4, device=device)
    nda.waitall()
    queue = _queues.queue_of_device(nda.Device(device))
    before = queue.markers
    y = x
    most = 0
    for _ in range(320):
        y = y + 1.0
        most = max(most, queue.in_flight())
    assert 16 <= queue.markers - before <= 24  # one per 16 numbers (a marker takes a number too)
    assert most <= 64 + 16
    np.testing.assert_array_equal(y.asnumpy(), np.full(4, 321.0))


@pytest.mark.parametrize("offset", range(16))
def test_an_op_reading_an_unretired_reader_of_a_failed_op_fails_too(threaded, offset):
    """``a`` fails (an index out of bounds, found on the device), ``b`` reads ``a``; reading ``a``
    raises. ``c`` issued afterwards reads ``b``: it must fail as well, whether or not ``b`` has
    retired when ``c`` is issued (with a marker per op, ``b`` could still be in flight with no
    check in flight left to make ``c`` record it as a dependency: ``c`` then read garbage
    silently). The offsets shift where the queue's periodic work falls."""
    device = _mirror()
    x = nda.arange(4, dtype=nda.float64, device=device)
    for _ in range(offset):
        x = x + 0.0
    nda.waitall()
    a = x[nda.asarray([0, 9], device=device)]
    b = a + 1.0
    with pytest.raises(IndexError):
        a.asnumpy()
    c = b * 2.0
    with pytest.raises(IndexError):
        c.asnumpy()
    with pytest.raises(IndexError):
        b.asnumpy()
    nda.waitall()
    np.testing.assert_array_equal((x * 2.0).asnumpy(), np.arange(4.0) * 2.0)  # unrelated work is fine


def test_a_read_of_the_newest_version_copies_in_queue_order(threaded):
    """sim copies in queue order (``to_host_in_order``): reading the newest work of a queue
    records no marker, waits for everything before it, and still raises exactly the errors of
    what it reads, with their notes; an earlier unrelated failure is known afterwards."""
    s = nda.arange(4, dtype=nda.float64, device="sim")
    s.wait_to_read()
    queue = _queues.queue_of_device(nda.Device("sim", 0))
    index = nda.asarray([0, 9], device="sim")
    nda.waitall()
    before = queue.markers
    with Gate("sim:0"):
        bad = s[index]  # fails on the device
        fine = s * 2.0  # the newest work
        box: dict[str, object] = {}
        reader = threading.Thread(target=lambda: box.update(value=fine.asnumpy()), daemon=True)
        reader.start()
        reader.join(0.3)
        assert reader.is_alive(), "the read returned before the work it reads had run"
    reader.join(10)
    np.testing.assert_array_equal(box["value"], [0.0, 2.0, 4.0, 6.0])
    assert queue.markers == before
    assert queue.version(bad._buf) is None and queue.error_of(bad._buf) is not None  # retired by that read
    with pytest.raises(IndexError) as info:
        bad.asnumpy()
    assert any("op 'getitem'" in n for n in info.value.__notes__)
    y = s[nda.asarray([7], device="sim")]  # the newest work, failing
    with pytest.raises(IndexError) as info:
        y.asnumpy()
    assert any("op 'getitem'" in n for n in info.value.__notes__)
    assert queue.markers == before
    nda.waitall()
