"""nda._philox_native: nda.random's Philox kernels compiled for the host equal the NumPy kernels bit for bit.

* the committed ``src/nda/_philox_kernels.h`` is what ``nda.ops._philox_source`` generates, and
  nda-cuda hands the same text to NVRTC (one source for every compiled kernel);
* every op, every dtype, any key, counter (across the 2**64 carry and the 2**128 wrap), size
  (empty, odd, across the kernels' tiles and the threads' parts) and parameters: the compiled
  kernel writes exactly the bytes of the vectorised NumPy reference (``nda.ops._philox``),
  called twice with different values; split over threads too;
* the cpu backend runs them when the extension is there, and the NumPy kernels with
  ``NDA_NATIVE=0`` (``tests/test_random.py`` runs again in a subprocess that way);
* the extension's own checks: bad buffers, keys, counters and parameters raise clear errors,
  n = 0 writes nothing, and a large request releases the GIL.

The portable C loops (without AVX2) are compared too: ``tests/_philox_host.py`` compiles the
same source with ``-DNDA_NO_SIMD`` for the cuda mirror (``tests/test_random.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nda
from nda.backends import cpu_random
from nda.ops import _philox, _philox_source

native = cpu_random.load_native()
needs_native = pytest.mark.skipif(native is None, reason="nda._philox_native is not compiled here (or NDA_NATIVE=0): the NumPy kernels run")

REPO = Path(__file__).resolve().parent.parent
FLOATS = [nda.float64, nda.float32]
INTEGERS = [nda.int8, nda.uint8, nda.int16, nda.uint16, nda.int32, nda.uint32, nda.int64, nda.uint64]
TWO128 = 1 << 128


# ----------------------------------------------------------------------------- one source


def test_the_committed_kernel_source_is_current():
    """``src/nda/_philox_kernels.h`` (what setup.py compiles) is ``nda.ops._philox_source.source()``."""
    committed = REPO / "src" / "nda" / "_philox_kernels.h"
    assert committed.read_text() == _philox_source.source(), "stale: run `python -m nda.ops._philox_source --write`"


def test_nda_cuda_compiles_the_same_source():
    nda_cuda_philox = pytest.importorskip("nda_cuda._philox")
    assert nda_cuda_philox.source() == _philox_source.source() == nda.ops.random.kernel_source()


def test_the_source_generator_reports_and_rewrites(tmp_path, monkeypatch, capsys):
    target = tmp_path / "_philox_kernels.h"
    monkeypatch.setattr(_philox_source, "HEADER_PATH", target)
    assert not _philox_source.check() and _philox_source.main([]) == 1  # missing
    target.write_text(_philox_source.source().replace("0xd2511f53U", "0xd2511f52U"))  # another multiplier
    assert not _philox_source.check() and _philox_source.main([]) == 1
    assert "stale" in capsys.readouterr().out
    assert _philox_source.main(["--write"]) == 0 and _philox_source.check() and _philox_source.main([]) == 0
    assert target.read_text() == _philox_source.source()


# ----------------------------------------------------------------------------- bit for bit


def _counters() -> st.SearchStrategy[int]:
    near = st.sampled_from([0, 2**32, 2**64, 2**96, TWO128]).flatmap(lambda edge: st.integers(max(0, edge - 300), min(TWO128 - 1, edge + 300)))
    return st.one_of(st.integers(0, TWO128 - 1), near)


_SIZES = st.one_of(st.integers(0, 70), st.integers(0, 4 * 64 * 3 + 9), st.sampled_from([255, 256, 257, 511, 513, 4097]))
_KEYS = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))


def _float_params(op: str, dtype) -> st.SearchStrategy[tuple[float, ...]]:
    width = 64 if dtype == nda.float64 else 32
    real = st.floats(-1e6, 1e6, width=width)
    positive = st.floats(0, 1e6, width=width)
    if op == "uniform":  # (low, span), as nda.ops.random passes them (span = high - low in the dtype)
        return st.tuples(real, positive).map(lambda p: (p[0], float(dtype.numpy.type(p[0] + p[1]) - dtype.numpy.type(p[0]))))
    if op == "normal":
        return st.tuples(real, positive)
    return st.tuples(positive)


def _native_call(op: str, shape, key, counter, params, dtype) -> np.ndarray:
    return cpu_random.native_kernels(native, None)[op](shape, key, counter, *params, dtype)


@needs_native
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(), op=st.sampled_from(["uniform", "normal", "exponential"]), dtype=st.sampled_from(FLOATS), n=_SIZES, key=_KEYS, counter=_counters()
)
def test_float_kernels_equal_the_numpy_kernels_bit_for_bit(data, op, dtype, n, key, counter):
    reference = getattr(_philox, op)
    for _ in range(2):  # twice: other parameters, another key and counter
        params = data.draw(_float_params(op, dtype))
        got = _native_call(op, (n,), key, counter, params, dtype)
        want = reference((n,), key, counter, *params, dtype)
        assert got.dtype == want.dtype and got.shape == want.shape == (n,)
        assert got.tobytes() == want.tobytes(), (op, dtype, n, key, counter, params, got[:4], want[:4])
        key, counter = data.draw(_KEYS.filter(lambda k, first=key: k != first)), data.draw(_counters())


@needs_native
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), dtype=st.sampled_from(INTEGERS), n=_SIZES, key=_KEYS, counter=_counters())
def test_integer_kernels_equal_the_numpy_kernels_bit_for_bit(data, dtype, n, key, counter):
    info = np.iinfo(dtype.numpy)
    full = int(info.max) - int(info.min) + 1
    spans = st.integers(1, min(full, 2**32))
    if full == 2**64:  # the 128-bit path: spans above 2**32, up to the whole range
        spans = st.one_of(spans, st.integers(2**32 + 1, 2**64), st.just(2**64))
    for _ in range(2):  # twice: another span and low, another key and counter
        span = data.draw(spans)
        low = data.draw(st.integers(int(info.min), int(info.max) + 1 - span))
        got = _native_call("integers", (n,), key, counter, (low, span), dtype)
        want = _philox.integers((n,), key, counter, low, span, dtype)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (dtype, n, key, counter, low, span)
        assert n == 0 or low <= int(got.min()) and int(got.max()) < low + span
        key, counter = data.draw(_KEYS.filter(lambda k, first=key: k != first)), data.draw(_counters())


@needs_native
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (5, 7), (2, 3, 4)])
def test_shapes_and_zero_d(shape):
    key, counter = (7, 9), 2**64 - 3
    for dtype in FLOATS:
        got = _native_call("normal", shape, key, counter, (1.0, 2.0), dtype)
        assert got.shape == shape and got.tobytes() == _philox.normal(shape, key, counter, 1.0, 2.0, dtype).tobytes()
    got = _native_call("integers", shape, key, counter, (-4, 9), nda.int8)
    assert got.shape == shape and got.tobytes() == _philox.integers(shape, key, counter, -4, 9, nda.int8).tobytes()


class _Counted:
    """The extension's functions, each call's output size recorded (to see how a request was split)."""

    def __init__(self, module) -> None:
        self.module, self.sizes = module, []

    def __getattr__(self, name: str):
        fn = getattr(self.module, name)

        def call(out, *args):
            self.sizes.append(out.size)
            return fn(out, *args)

        return call


@needs_native
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_requests_split_over_threads_equal_the_whole(threads):
    """Large requests run in parts of whole blocks on threads; the values do not depend on the split."""
    part = 1 << 13  # the cpu's kernels split at cpu_random.PART_BLOCKS; smaller parts here, for the NumPy comparison
    run = cpu_random.ChunkRunner(threads)
    counted = _Counted(native)
    split, whole = cpu_random.native_kernels(counted, run, part), cpu_random.native_kernels(native, None)
    blocks = 5 * part + 3  # parts of uneven size, the last one partial
    key, counter = (0xDEADBEEF, 17), TWO128 - 2 * part - 5  # crosses 2**128 mid-request
    cases = [
        ("uniform", nda.float64, 2, (-2.0, 5.0)),
        ("normal", nda.float32, 4, (0.5, 3.0)),
        ("exponential", nda.float64, 2, (2.0,)),
        ("integers", nda.uint64, 1, (3, 2**63 + 11)),
        ("integers", nda.int16, 2, (-9, 1000)),
    ]
    for op, dtype, per_block, params in cases:
        n = blocks * per_block - 1
        counted.sizes.clear()
        got = split[op]((n,), key, counter, *params, dtype)
        assert len(counted.sizes) == min(threads, 6) and sum(counted.sizes) == n  # a call per thread (6 parts at most), the whole together
        assert got.tobytes() == whole[op]((n,), key, counter, *params, dtype).tobytes(), (op, dtype)
        if op in ("normal", "integers"):  # and the NumPy reference, for two of them (it is slower)
            assert got.tobytes() == getattr(_philox, op)((n,), key, counter, *params, dtype).tobytes()


# ----------------------------------------------------------------------------- the cpu backend's choice


@needs_native
def test_the_cpu_backend_runs_the_compiled_kernels():
    for op in ("uniform", "normal", "exponential", "integers"):
        kwargs = {"low": 0, "high": 5} if op == "integers" else {}
        assert nda.dispatch.explain(f"random.philox_{op}", (3,), key=(1, 2), **kwargs).kernel.qualname.endswith(f"philox_{op}_native")
    g, h = nda.random.default_rng(11), nda.random.default_rng(11)
    got = g.standard_normal(100_001, dtype=nda.float32).asnumpy()
    want = _philox.normal((100_001,), h.bit_generator.key, 0, 0.0, 1.0, nda.float32)
    assert got.tobytes() == want.tobytes() and g.bit_generator.counter == 25_001


def _run_with_numpy_kernels(args: list[str], timeout: int = 900) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NDA_NATIVE="0")
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_nda_native_0_selects_the_numpy_kernels():
    code = (
        "import nda, os\n"
        "from nda.backends import cpu_random\n"
        "assert cpu_random.load_native() is None\n"
        "name = nda.dispatch.explain('random.philox_uniform', (3,), key=(1, 2)).kernel.qualname\n"
        "assert ('threaded' in name) if (os.cpu_count() or 1) > 1 else ('uniform' in name), name\n"
        "print(nda.random.default_rng(5).integers(0, 10, 6, dtype=nda.int8).tolist())\n"
    )
    done = _run_with_numpy_kernels(["-c", code], timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(nda.random.default_rng(5).integers(0, 10, 6, dtype=nda.int8).tolist())


@needs_native
def test_test_random_passes_with_the_numpy_kernels():
    """tests/test_random.py again with NDA_NATIVE=0 (here the compiled kernels ran it); its
    statistics tests are left out, the same stream as here, bit for bit (above)."""
    done = _run_with_numpy_kernels(
        ["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests/test_random.py", "-k", "not statistics and not chi_square"]
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


# ----------------------------------------------------------------------------- the extension's own checks


def _read_only(n: int) -> np.ndarray:
    out = np.zeros(n)
    out.flags.writeable = False
    return out


@needs_native
@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda m: m.uniform(np.empty(3), (1, 2), 0, 0.0), TypeError, "uniform"),  # too few arguments
        (lambda m: m.uniform(np.empty(3, np.int32), (1, 2), 0, 0.0, 1.0), TypeError, "float32 or float64"),
        (lambda m: m.normal(np.empty(3, np.float16), (1, 2), 0, 0.0, 1.0), TypeError, "format e"),
        (lambda m: m.normal(np.empty(4)[::2], (1, 2), 0, 0.0, 1.0), TypeError, "C-contiguous"),
        (lambda m: m.exponential(_read_only(3), (1, 2), 0, 1.0), TypeError, "writable"),
        (lambda m: m.uniform([0.0, 1.0], (1, 2), 0, 0.0, 1.0), TypeError, "buffer"),
        (lambda m: m.uniform(np.empty(3, ">f8"), (1, 2), 0, 0.0, 1.0), TypeError, "native byte order"),
        (lambda m: m.uniform(np.empty(3), (1, 2, 3), 0, 0.0, 1.0), TypeError, "key must be a pair"),
        (lambda m: m.uniform(np.empty(3), (1, 2**32), 0, 0.0, 1.0), ValueError, r"key words must be in \[0, 2\*\*32\)"),
        (lambda m: m.uniform(np.empty(3), (-1, 2), 0, 0.0, 1.0), ValueError, "key words"),
        (lambda m: m.uniform(np.empty(3), (1.0, 2), 0, 0.0, 1.0), TypeError, "key must be a pair of ints"),
        (lambda m: m.uniform(np.empty(3), (1, 2), -1, 0.0, 1.0), ValueError, r"counter must be in \[0, 2\*\*128\)"),
        (lambda m: m.uniform(np.empty(3), (1, 2), 2**128, 0.0, 1.0), ValueError, "counter must be in"),
        (lambda m: m.uniform(np.empty(3), (1, 2), 1.5, 0.0, 1.0), TypeError, "counter must be an int"),
        (lambda m: m.normal(np.empty(3), (1, 2), 0, float("nan"), 1.0), ValueError, "finite"),
        (lambda m: m.exponential(np.empty(3), (1, 2), 0, float("inf")), ValueError, "finite"),
        (lambda m: m.uniform(np.empty(3, np.float32), (1, 2), 0, 1e39, 1.0), OverflowError, "fit in float32"),
        (lambda m: m.normal(np.empty(3, np.float32), (1, 2), 0, 0.0, 1e300), OverflowError, "fit in float32"),
        (lambda m: m.integers(np.empty(3, np.int8), (1, 2), 0, -200, 5), ValueError, "does not fit in the output's 1-byte signed"),
        (lambda m: m.integers(np.empty(3, np.int8), (1, 2), 0, 100, 29), ValueError, "does not fit"),
        (lambda m: m.integers(np.empty(3, np.uint16), (1, 2), 0, 0, 70000), ValueError, "2-byte unsigned"),
        (lambda m: m.integers(np.empty(3, np.uint8), (1, 2), 0, -1, 3), ValueError, "does not fit"),
        (lambda m: m.integers(np.empty(3, np.int64), (1, 2), 0, 1, 2**64), ValueError, "8-byte signed"),
        (lambda m: m.integers(np.empty(3, np.int64), (1, 2), 0, 0, 0), ValueError, r"span must be in \[1, 2\*\*64\]"),
        (lambda m: m.integers(np.empty(3, np.int64), (1, 2), 0, 0, 2**64 + 1), ValueError, "span must be in"),
        (lambda m: m.integers(np.empty(3, np.int64), (1, 2), 0, 0, -5), ValueError, "span must be in"),
        (lambda m: m.integers(np.empty(3, np.int64), (1, 2), 0, -(2**63) - 1, 5), ValueError, r"low must be in \[-2\*\*63, 2\*\*64\)"),
        (lambda m: m.integers(np.empty(3, np.int64), (1, 2), 0, 2**64, 5), ValueError, "low must be in"),
        (lambda m: m.integers(np.empty(3, np.int64), (1, 2), 0, 0.0, 5), TypeError, "low and span must be ints"),
        (lambda m: m.integers(np.empty(3, np.int32), (1, 2), 0, 0, 2**33), ValueError, "needs a 64-bit output"),
        (lambda m: m.integers(np.empty(3, np.float64), (1, 2), 0, 0, 5), TypeError, "integers"),
        (lambda m: m.integers(np.empty(3, np.bool_), (1, 2), 0, 0, 2), TypeError, "format"),
    ],
)
def test_bad_arguments_raise_clearly(call, error, match):
    with pytest.raises(error, match=match):
        call(native)


@needs_native
def test_nothing_is_written_past_the_buffer_or_for_n_0():
    """A request writes exactly its n values: the last block's leftover values are dropped."""
    for n in (0, 1, 2, 3, 5, 63, 64, 65, 129, 4 * 64 + 1):
        for dtype, fill in ((np.float64, native.uniform), (np.float32, native.normal)):
            guard = np.full(n + 8, -7.0, dtype)
            fill(guard[:n], (3, 4), 2**64 - 1, 0.0, 1.0)
            assert np.all(guard[n:] == -7.0), (n, dtype)
            assert n == 0 or np.all(guard[:n] != -7.0)
        wide = np.full(n + 3, 99, np.uint64)
        native.integers(wide[:n], (3, 4), TWO128 - 1, 0, 2**40)
        assert np.all(wide[n:] == 99)


@needs_native
def test_a_large_request_releases_the_gil():
    """Another Python thread runs while the kernel computes a large request.

    With a long switch interval the interpreter never takes the GIL from the drawing thread
    between its two clock readings, so the main thread can run in that window only if the
    kernel released the GIL.
    """
    import time

    out = np.empty(2_000_000)
    window: list[float] = []
    ticks: list[float] = []

    def draw() -> None:
        window.append(time.perf_counter())
        native.normal(out, (1, 2), 0, 0.0, 1.0)
        window.append(time.perf_counter())

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.25)
    try:
        worker = threading.Thread(target=draw)
        worker.start()
        while worker.is_alive():
            ticks.append(time.perf_counter())
        worker.join()
    finally:
        sys.setswitchinterval(interval)
    during = [t for t in ticks if window[0] < t < window[1]]
    assert len(during) > 10, (len(during), window[1] - window[0])  # the GIL held through the call: none
