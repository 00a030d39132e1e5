"""The nda-sim plugin (installed from plugins/nda-sim as a separate distribution) against cpu."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import nda

try:
    import nda_sim  # noqa: F401  (only to know whether the distribution is installed)
except ImportError:  # pragma: no cover - CI installs it
    pytest.skip("nda-sim is not installed: pip install ./plugins/nda-sim", allow_module_level=True)

from test_catalog_rules import CALLS, CREATION, ELEMENTWISE, SHAPE_PAIRS, _values

SIM = nda.Device("sim", 0)


def on(device, host):
    return nda.asarray(host, device=device)


def assert_same(sim_result, cpu_result, values=True):
    assert sim_result.device.type == "sim"
    assert sim_result.shape == cpu_result.shape and sim_result.dtype == cpu_result.dtype
    got = sim_result.asnumpy()
    if values:
        np.testing.assert_array_equal(got, cpu_result.asnumpy())


@pytest.fixture(autouse=True)
def quiet_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nda.dispatch.FallbackWarning)
        yield


def test_status_lists_sim_devices():
    nda.backends.load("sim")
    rec = next(r for r in nda.backends.status() if r["name"] == "sim")
    assert rec["state"] == "loaded" and rec["api_version"] == "1.4"
    assert [d["device"] for d in rec["devices"]] == ["sim:0", "sim:1"]
    with pytest.raises(ValueError, match="sim:7 does not exist; sim devices: sim:0, sim:1"):
        nda.zeros(2, device="sim:7")


@pytest.mark.parametrize(("name", "dtype"), ELEMENTWISE, ids=[f"{n}-{d.name}" for n, d in ELEMENTWISE])
def test_elementwise_sim_matches_cpu(name, dtype):
    fn = getattr(nda, name)
    for s1, s2 in SHAPE_PAIRS:
        a, b = _values(s1, dtype), _values(s2, dtype)
        if nda.ops.CATALOG[name].family == "unary":
            assert_same(fn(on(SIM, a)), fn(on("cpu", a)))
        else:
            assert_same(fn(on(SIM, a), on(SIM, b)), fn(on("cpu", a), on("cpu", b)))
            scalar = True if dtype is nda.bool else 2
            assert_same(fn(on(SIM, a), scalar), fn(on("cpu", a), scalar))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_generic_ops_sim_match_cpu(name):
    for dtype in nda.ops.CATALOG[name].supported_dtypes:
        host = (np.arange(6).reshape(2, 3) % 3).astype(dtype.numpy)
        for call in CALLS[name]:
            with SIM:  # arrays the call creates (index arrays, masks) are made on sim too
                got = call(on(SIM, host))
            expected = call(on("cpu", host))
            if isinstance(expected, tuple):  # several outputs: the same named tuple, item by item
                assert type(got) is type(expected) and len(got) == len(expected)
                for g, e in zip(got, expected):
                    assert g.device == SIM
                    assert_same(g, e)
                continue
            assert_same(got, expected, values=name != "empty_like")


@pytest.mark.parametrize("index", range(len(CREATION)))
def test_creation_on_sim(index):
    with SIM:
        got = CREATION[index]()
    expected = CREATION[index]()
    assert_same(got, expected, values="empty" not in CREATION[index].__code__.co_names)


def test_views_and_setitem_on_sim_write_through():
    x = nda.arange(12, dtype=nda.float64, device=SIM).reshape((3, 4))
    v = x[1]
    v[...] = -1.0
    x[0, nda.asarray([0, 3], device=SIM)] = 9.0
    x[x > 9] = 0.0
    ref = np.arange(12, dtype=np.float64).reshape(3, 4)
    ref[1] = -1.0
    ref[0, [0, 3]] = 9.0
    ref[ref > 9] = 0.0
    np.testing.assert_array_equal(x.asnumpy(), ref)


def test_memory_statistics_move_and_release_all_returns_cache():
    nda.waitall()
    gc.collect()
    nda.backends.release_all("sim:1")
    before = nda.backends.memory_stats("sim:1")
    a = nda.ones((256, 256), device="sim:1")  # 512 KiB
    a.wait_to_read()
    during = nda.backends.memory_stats("sim:1")
    assert during["in_use"] - before["in_use"] == 256 * 256 * 8
    assert during["peak"] >= during["in_use"]
    del a
    gc.collect()
    after = nda.backends.memory_stats("sim:1")
    assert after["in_use"] == before["in_use"] and after["cached"] >= 256 * 256 * 8
    released = nda.backends.release_all("sim:1")
    assert released >= 256 * 256 * 8 and nda.backends.memory_stats("sim:1")["cached"] == 0


def test_allocation_beyond_capacity_is_a_clear_memory_error_and_keeps_arrays():
    keep = nda.arange(5, device=SIM)
    with pytest.raises(MemoryError, match=r"sim:0: cannot allocate 8,000,000,000 bytes; .* of 1,073,741,824 bytes are free"):
        nda.zeros((1_000_000_000,), device=SIM).wait_to_read()
    assert keep.tolist() == [0, 1, 2, 3, 4]
    assert (keep + 1).tolist() == [1, 2, 3, 4, 5]


def test_copies_between_devices_go_through_the_engine():
    x = nda.arange(4, dtype=nda.float32)
    s0 = x.to_device("sim:0")
    s1 = s0.to_device("sim:1")  # direct sim-to-sim copy
    assert s1.device == nda.Device("sim", 1)
    s0 += 1  # must not affect the copy made before
    back = s1.to_device("cpu")
    assert back.tolist() == [0.0, 1.0, 2.0, 3.0]
    target = nda.zeros(4, dtype=nda.float64, device="sim:1")
    s0.copyto(target)
    assert target.tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="shapes differ"):
        s0.copyto(nda.zeros(3))
    with pytest.raises(ValueError, match="different devices"):
        s0 + s1


def test_fallback_warns_once_per_op_and_device_and_config_controls_it():
    x = nda.asarray([3.0, 1.0, 2.0], device=SIM)
    x32 = nda.asarray([3.0, 1.0, 2.0], device=SIM, dtype=nda.float32)
    nda.dispatch._warned_routes.clear()
    nda.dispatch.invalidate()  # forget earlier resolutions: routes are announced when resolved
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nda.isin(x, x)
        nda.isin(x, x)
        nda.isin(x32, x32)  # another dtype, another route: the same op on the same device, no second warning
        nda.linalg.pinv(nda.reshape(x, (3, 1)))
    messages = [str(w.message) for w in caught if w.category is nda.dispatch.FallbackWarning]
    assert len(messages) == 2 and messages[0].startswith("isin: no sim kernel, so it runs on cpu"), messages
    assert all("\n" not in m and "_ref_" not in m for m in messages), "one line, without nda's internal names"
    assert caught[0].filename == __file__, "the warning points at the user's line"
    explanation = str(nda.dispatch.explain("isin", x, x))
    assert "host fallback" in explanation and "copies the inputs to cpu" in explanation
    nda.config.fallback = "error"
    try:
        with pytest.raises(nda.dispatch.FallbackError, match="isin on \\(sim, float64, strided\\): no sim kernel; copies the inputs"):
            nda.isin(x, x)  # refused at the caller's line, although it ran before the switch
        assert (x + 1).tolist() == [4.0, 2.0, 3.0], "native ops are unaffected"
    finally:
        nda.config.fallback = "warn"
    with pytest.raises(ValueError, match="must be one of"):
        nda.config.fallback = "loud"
    cov = nda.dispatch.coverage("sim")
    assert cov.rows["add"]["float32"] == "native" and cov.rows["isin"]["float32"] == "fallback" and cov.rows["std"]["float32"] == "native"
    assert "coverage of device type 'sim'" in str(cov)


def test_errors_on_the_sim_stream_surface_at_sync_points():
    """An error only the stream finds: at the sync point that reads the result (the naive
    engine waits for every op, so there it is raised at the call, as on cpu)."""
    x = nda.arange(4, device=SIM)
    if nda.engine.current().name == "naive":
        with pytest.raises(IndexError) as info:
            x[nda.asarray([9], device=SIM)]
        assert any("op 'getitem'" in n for n in info.value.__notes__)
        return
    bad = x[nda.asarray([9], device=SIM)]  # fails on the stream
    ok = x * 2
    with pytest.raises(IndexError):
        bad.asnumpy()
    assert ok.tolist() == [0, 2, 4, 6]
    nda.waitall()  # raised once, at asnumpy(): nothing left to raise
    with pytest.raises(IndexError):
        (bad + 1).asnumpy()


def _run(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env={**os.environ, **env}, timeout=120)


def test_sim_module_is_not_imported_until_used():
    result = _run(
        """
        import sys, nda
        nda.ones(3) + 1
        print("nda_sim" in sys.modules)
        nda.ones(3, device="sim")
        print("nda_sim" in sys.modules)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]


def test_nda_backends_can_exclude_sim():
    result = _run(
        """
        import nda
        try:
            nda.ones(3, device="sim")
        except ValueError as err:
            print(err)
        print(nda.ones(2).tolist())
        """,
        NDA_BACKENDS="-sim",
    )
    assert result.returncode == 0, result.stderr
    assert "excluded by NDA_BACKENDS='-sim'" in result.stdout and "[1.0, 1.0]" in result.stdout


_FRAMES_OF_A_WARM_OP = """
import sys
import numpy as np
import nda

x = nda.asarray(np.arange(1, 5), device="sim") + 0
y = x * 2
for _ in range(3):
    x + y
nda.waitall()

def frames(call):
    seen = []
    def hook(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)
    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen[1:]  # the lambda itself left out

print(len(frames(lambda: x + y)))
z = x + y  # in flight: the next ops depend on it
counts = sorted(len(frames(lambda: z + y)) for _ in range(15))
print(counts[len(counts) // 2])  # (every 16th op of a queue also settles it)
"""


def test_a_warm_sim_op_enters_six_python_frames():
    """Issue 34: a warm ``x + y`` on sim entered 17 Python frames, engine and plugin alternating
    five times (the device, stream and allocator looked up through three methods, the enqueue,
    the outcome, the user's line and the entry in five more). Now: the engine's wrapper, the sim
    kernel, the buffer, the enqueue, the Deferred and the entry; also with inputs whose producers
    are still in flight. Counted in a fresh interpreter (a failed buffer left alive anywhere makes
    every queue op take the general path), with the C operators on the threaded engine."""
    env = {k: v for k, v in os.environ.items() if k not in ("NDA_ENGINE", "NDA_NATIVE")}
    done = subprocess.run([sys.executable, "-c", _FRAMES_OF_A_WARM_OP], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    idle, in_flight = (int(v) for v in done.stdout.split())
    assert idle <= 6 and in_flight <= 6, (idle, in_flight)


def test_a_sim_op_on_the_fast_path_still_fails_at_the_sync_point_naming_its_line():
    """The warm path keeps each op's check: a data-dependent failure on the device's stream is
    raised at the sync point with the caller's line, and so is an op that read its result."""
    x = on(SIM, np.arange(1, 5)) + 0
    neg = on(SIM, np.full(4, -1)) + 0
    for _ in range(3):
        x ** (neg * 0 + 1)
    line = sys._getframe().f_lineno + 2
    try:
        bad = x**neg  # data-dependent: fails on the device's stream (on the naive engine: here)
    except ValueError as error:
        assert nda.engine.current().name != "threaded"
        failures = [error]
    else:
        later = bad + x
        failures = []
        for failed in (later, bad):
            with pytest.raises(ValueError) as info:
                failed.asnumpy()
            failures.append(info.value)
    for error in failures:
        assert "negative integer powers" in str(error)
        assert f"nda: op 'pow' issued at {__file__}:{line} failed on sim:0" in error.__notes__
    np.testing.assert_array_equal((x + x).asnumpy(), [2, 4, 6, 8])
