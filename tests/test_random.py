"""nda.random: the Philox4x32-10 stream, bit-identical on every device, and the Generator API.

* the block function against Random123's known answers, and the vectorised cpu kernels
  against a scalar Python model of the stream as ``nda.ops.random`` states it;
* cpu, sim and the cuda mirror (nda-cuda's CUDA source compiled for the host and launched by
  nda-cuda's launch code: ``tests/_philox_host.py``) agree bit for bit, call after call;
* the generator's counter advances by the blocks a call consumes, the same on every device;
* statistics: moments, ranges, Kolmogorov-Smirnov and chi-square tests (on fixed seeds, so
  the outcome is deterministic: a failure is a bug, never bad luck);
* the Generator methods (permutation, shuffle, choice), state, pickling, bad input.
"""

from __future__ import annotations

import math
import os
import pickle
import shutil
import subprocess
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nda
from nda.ops import _philox

sim_installed = any(rec["name"] == "sim" and rec["state"] != "excluded" for rec in nda.backends.status())
needs_sim = pytest.mark.skipif(not sim_installed, reason="nda-sim is not installed")


@pytest.fixture(scope="module")
def mirror():
    import _philox_host

    if _philox_host.compiler() is None:
        pytest.skip("no C compiler: the cuda mirror's random kernels cannot be built")
    if not nda.backends.serves("cudamirror"):
        nda.backends.load("_cuda_numpy_mirror:backend")
    return "cudamirror"


@pytest.fixture(autouse=True)
def _quiet_fallbacks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nda.FallbackWarning)
        yield


def bits_of(x: nda.NDArray) -> bytes:
    return np.ascontiguousarray(x.asnumpy()).tobytes()


# ----------------------------------------------------------------------------- the block function


def philox_scalar(counter: tuple[int, ...], key: tuple[int, int]) -> list[int]:
    """Philox4x32-10 written from the paper, one block, Python ints."""
    c, (k0, k1) = list(counter), key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k1, p0 & 0xFFFFFFFF]
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return c


#: Random123's kat_vectors, "philox4x32 10": counter (4 words), key (2 words), result (4 words).
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0), (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def as_counter(words: tuple[int, ...]) -> int:
    return words[0] | words[1] << 32 | words[2] << 64 | words[3] << 96


@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_block_function_gives_random123s_known_answers(counter, key, expected):
    assert philox_scalar(counter, key) == list(expected)
    words = _philox.bits((4,), key, as_counter(counter), nda.uint32)
    assert [int(w) for w in words] == list(expected)


@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_the_known_answers_through_integers_on_every_device(counter, key, expected, mirror):
    """The public op shows the words too: a uint32 full range draws ``x1`` and ``x3``, a uint64
    full range ``x2 | x3 << 32`` (128-bit path), on cpu, sim and the cuda mirror."""
    devices = ["cpu", mirror] + (["sim"] if sim_installed else [])
    for dev in devices:
        narrow = nda.random.philox_integers(2, key=key, counter=as_counter(counter), low=0, high=2**32, dtype=nda.uint32, device=dev)
        wide = nda.random.philox_integers(1, key=key, counter=as_counter(counter), low=0, high=2**64, dtype=nda.uint64, device=dev)
        assert narrow.tolist() == [expected[1], expected[3]], dev
        assert wide.tolist() == [expected[2] | expected[3] << 32], dev


@pytest.mark.parametrize("counter", [0, 5, 2**32 - 3, 2**64 - 5, 2**96 + 7, 2**128 - 3])
def test_vectorised_blocks_match_the_scalar_model_across_carries(counter):
    """Counters carry from word to word and wrap at 2**128, also inside a chunk."""
    key = (0x01234567, 0x89ABCDEF)
    words = _philox.bits((4 * 9,), key, counter, nda.uint32).reshape(9, 4)
    for b in range(9):
        c = (counter + b) % 2**128
        assert [int(w) for w in words[b]] == philox_scalar(tuple((c >> (32 * i)) & 0xFFFFFFFF for i in range(4)), key), b


def test_chunks_join_seamlessly():
    """Requests longer than a chunk (and crossing a 2**64 carry inside one) equal block-by-block generation."""
    n = _philox.CHUNK * 2 + 37
    start = 2**64 - _philox.CHUNK - 11
    words = _philox.bits((4 * n,), (3, 4), start, nda.uint32).reshape(n, 4)
    for b in (0, _philox.CHUNK - 1, _philox.CHUNK, _philox.CHUNK + 10, _philox.CHUNK + 11, n - 1):
        c = (start + b) % 2**128
        assert [int(w) for w in words[b]] == philox_scalar(tuple((c >> (32 * i)) & 0xFFFFFFFF for i in range(4)), (3, 4))


# ----------------------------------------------------------------------------- the stream, as stated


def scalar_words(key, counter, count):
    out = []
    for b in range(-(-count // 4)):
        c = (counter + b) % 2**128
        out += philox_scalar(tuple((c >> (32 * i)) & 0xFFFFFFFF for i in range(4)), key)
    return out


@given(key=st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)), counter=st.integers(0, 2**128 - 1), n=st.integers(0, 9))
def test_values_are_made_from_the_words_as_documented(key, counter, n):
    """uniform (53/24 bits), integers (widening multiply), bits: rebuilt from the scalar words."""
    w = scalar_words(key, counter, 4 * n)
    u64 = [w[2 * j] | w[2 * j + 1] << 32 for j in range(n)]
    got = nda.random.philox_uniform(n, key=key, counter=counter).asnumpy()
    assert got.tolist() == [(v >> 11) * 2.0**-53 for v in u64]
    got32 = nda.random.philox_uniform(n, key=key, counter=counter, dtype=nda.float32).asnumpy()
    assert got32.tolist() == [float(np.float32((w[j] >> 8) * 2.0**-24)) for j in range(n)]
    ints = nda.random.philox_integers(n, key=key, counter=counter, low=-7, high=6, dtype=nda.int16).tolist()
    assert ints == [-7 + (v * 13 >> 64) for v in u64]
    span = 3 * 2**62 + 1
    wide = nda.random.philox_integers(n, key=key, counter=counter, low=-(2**63), high=-(2**63) + span, dtype=nda.int64).tolist()
    u128 = [w[4 * j] | w[4 * j + 1] << 32 | w[4 * j + 2] << 64 | w[4 * j + 3] << 96 for j in range(n)]
    assert wide == [-(2**63) + (v * span >> 128) for v in u128]


def test_portable_constants_are_what_they_say():
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    ln2 = Decimal(2).ln()
    assert _philox.LN2_HI.hex().endswith("00000p-1") and Decimal(_philox.LN2_HI) + Decimal(_philox.LN2_LO) - ln2 < Decimal(2) ** -85
    assert _philox.TWO_PI == 2 * math.pi and _philox.SQRT_HALF == math.sqrt(0.5)
    assert _philox.LOG_COEFFS[0] == 2 / 3 and _philox.SIN_COEFFS[0] == -1 / 6 and _philox.COS_COEFFS[-1] == 1 / math.factorial(16)


def test_portable_log_cos_sin_are_accurate_to_an_ulp_or_two():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(200_000), [2.0**-53, 2.0**-33, 0.5, 0.7071067811865476, 0.75, 1 - 2.0**-53, 1.0]])
    x = x[x > 0]
    log = _philox.log01(x)
    ulp = np.spacing(np.abs(np.log(x)))
    assert np.max(np.abs(log - np.log(x)) / np.maximum(ulp, 1e-300)) <= 2
    assert _philox.log01(np.array([1.0]))[0] == 0.0
    t = np.concatenate([np.floor(rng.random(200_000) * 2.0**53) * 2.0**-53, np.arange(16) / 16])
    c, s = _philox.cossin_2pi(t)
    angle = 2 * np.longdouble("3.141592653589793238462643383279502884") * t.astype(np.longdouble)  # 80-bit on x86
    bound = 3e-16 if np.finfo(np.longdouble).eps < np.finfo(np.float64).eps else 7e-16  # longdouble may be double
    assert np.max(np.abs(c - np.cos(angle))) < bound and np.max(np.abs(s - np.sin(angle))) < bound
    assert c[-16] == 1.0 and s[-16] == 0.0 and c[-12] == 0.0 and s[-12] == 1.0  # t = 0 and t = 1/4 exactly


# ----------------------------------------------------------------------------- every device, the same bits


def devices(mirror):
    return ["cpu", mirror] + (["sim"] if sim_installed else [])


CALLS = [
    ("random", lambda g, d, dt: g.random((33,), dtype=dt, device=d), [nda.float64, nda.float32]),
    ("uniform", lambda g, d, dt: g.uniform(-3.5, 1e3, (5, 7), dtype=dt, device=d), [nda.float64, nda.float32]),
    ("standard_normal", lambda g, d, dt: g.standard_normal((41,), dtype=dt, device=d), [nda.float64, nda.float32]),
    ("normal", lambda g, d, dt: g.normal(2.0, 0.25, (3, 3), dtype=dt, device=d), [nda.float64, nda.float32]),
    ("exponential", lambda g, d, dt: g.exponential(3.0, (17,), dtype=dt, device=d), [nda.float64, nda.float32]),
    (
        "integers",
        lambda g, d, dt: g.integers(-5 if dt.category == "signed integer" else 5, 100, (19,), dtype=dt, device=d),
        [nda.int8, nda.uint8, nda.int16, nda.uint16, nda.int32, nda.uint32, nda.int64, nda.uint64],
    ),
    ("integers wide", lambda g, d, dt: g.integers(0, 2**63 - 25, (9,), dtype=dt, device=d), [nda.int64, nda.uint64]),
    (
        "integers full",
        lambda g, d, dt: g.integers(np.iinfo(dt.numpy).min, np.iinfo(dt.numpy).max, (9,), endpoint=True, dtype=dt, device=d),
        [nda.int8, nda.uint32, nda.int64, nda.uint64],
    ),
    ("permutation", lambda g, d, dt: g.permutation(23, device=d), [None]),
    ("choice", lambda g, d, dt: g.choice(10, 6, replace=False, device=d), [None]),
    ("choice p", lambda g, d, dt: g.choice(4, 12, p=[0.1, 0.2, 0.3, 0.4], device=d), [None]),
]


@pytest.mark.parametrize("name, call, dtypes", CALLS, ids=[c[0] for c in CALLS])
def test_every_device_draws_the_same_bits_call_after_call(name, call, dtypes, mirror):
    for dtype in dtypes:
        draws = {}
        for dev in devices(mirror):
            g = nda.random.default_rng(2024)
            first, second = call(g, dev, dtype), call(g, dev, dtype)
            assert first.device == nda.Device(dev)
            draws[dev] = (bits_of(first), bits_of(second), g.bit_generator.counter)
        cpu = draws["cpu"]
        assert cpu[0] != cpu[1], f"{name} {dtype}: two calls drew the same values"
        for dev, got in draws.items():
            assert got == cpu, f"{name} {dtype}: {dev} differs from cpu"


@settings(max_examples=15)
@given(
    seed=st.integers(0, 2**64 - 1),
    n=st.integers(0, 70),
    start=st.integers(0, 2**128 - 1),
    dtype=st.sampled_from([nda.float32, nda.float64]),
    loc=st.floats(-1e6, 1e6),
    scale=st.floats(0, 1e6),
)
def test_devices_agree_on_any_key_counter_and_parameters(seed, n, start, dtype, loc, scale, mirror):
    g = nda.random.default_rng(seed)
    g.bit_generator.state = {**g.bit_generator.state, "counter": start}
    key = g.bit_generator.key
    for op, kwargs in (
        ("philox_normal", {"loc": loc, "scale": scale}),
        ("philox_uniform", {"low": loc, "high": loc + scale}),
        ("philox_exponential", {"scale": scale}),
    ):
        fn = getattr(nda.random, op)
        results = {dev: bits_of(fn(n, key=key, counter=start, dtype=dtype, device=dev, **kwargs)) for dev in devices(mirror)}
        assert len(set(results.values())) == 1, (op, {d: np.frombuffer(b, dtype.numpy)[:4] for d, b in results.items()})


# ----------------------------------------------------------------------------- the state


@pytest.mark.parametrize("dev", ["cpu", pytest.param("sim", marks=needs_sim)])
def test_counter_advances_by_the_blocks_consumed(dev):
    g = nda.random.default_rng(1)
    steps = [
        (lambda: g.random(5, device=dev), 3),  # float64: 2 a block
        (lambda: g.random(5, nda.float32, device=dev), 2),  # float32: 4 a block
        (lambda: g.standard_normal((2, 3), device=dev), 3),
        (lambda: g.normal(size=9, dtype=nda.float32, device=dev), 3),
        (lambda: g.integers(10, size=7, device=dev), 4),
        (lambda: g.integers(2**40, size=7, device=dev), 7),  # wide span: a block a value
        (lambda: g.exponential(size=0, device=dev), 0),
        (lambda: g.random(device=dev), 1),
    ]
    for draw, blocks in steps:
        before = g.bit_generator.counter
        draw()
        assert g.bit_generator.counter - before == blocks


def test_split_requests_continue_the_stream():
    """Calls that use whole blocks continue where the last one stopped: two draws are one draw."""
    one, two = nda.random.default_rng(9), nda.random.default_rng(9)
    whole = one.standard_normal(10).asnumpy()
    parts = np.concatenate([two.standard_normal(4).asnumpy(), two.standard_normal(6).asnumpy()])
    assert whole.tobytes() == parts.tobytes()
    assert one.bit_generator.state == two.bit_generator.state


def test_a_failed_call_leaves_the_state_alone():
    g = nda.random.default_rng(3)
    state = g.bit_generator.state
    with pytest.raises(ValueError):
        g.normal(0.0, -1.0, 10)
    with pytest.raises(ValueError):
        g.integers(5, 5)
    assert g.bit_generator.state == state


def test_state_pickle_spawn_and_advance():
    g = nda.random.default_rng(77, device="cpu")
    g.random(3)
    clone = pickle.loads(pickle.dumps(g))
    assert clone.bit_generator.state == g.bit_generator.state and clone.device == g.device
    assert clone.random(8).tolist() == g.random(8).tolist()
    assert [c.bit_generator.key for c in pickle.loads(pickle.dumps(g)).spawn(2)] == [c.bit_generator.key for c in g.spawn(2)]
    kids = nda.random.default_rng(77).spawn(3)
    assert len({k.bit_generator.key for k in kids}) == 3
    a, b = nda.random.default_rng(5), nda.random.default_rng(5)
    a.random(6)  # 3 blocks
    b.bit_generator.advance(3)
    assert a.random(4).tolist() == b.random(4).tolist()
    restored = nda.random.default_rng(0)
    restored.bit_generator.state = a.bit_generator.state
    assert restored.random(2).tolist() == a.random(2).tolist()
    assert nda.random.default_rng(12).bit_generator.key == tuple(int(w) for w in np.random.SeedSequence(12).generate_state(2, np.uint32))
    assert nda.random.default_rng(g) is g
    assert "Philox(key=(0x" in repr(g) and "device='cpu:0'" in repr(g)


def test_hybridize_draws_fresh_numbers_each_call_as_eager_does():
    def noisy(x):
        return x + rng.standard_normal(x.shape)

    rng = nda.random.default_rng(8)
    fast = nda.hybridize(noisy)
    x = nda.zeros(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nda.HybridizeWarning)
        got = [fast(x).tolist() for _ in range(3)]
    rng = nda.random.default_rng(8)
    assert got == [noisy(x).tolist() for _ in range(3)]
    assert got[0] != got[1]


def test_reparametrised_normal_has_gradients():
    loc = nda.asarray([1.0, -2.0])
    scale = nda.asarray([0.5, 3.0])
    loc.attach_grad()
    scale.attach_grad()
    with nda.autograd.record():
        y = nda.random.default_rng(4).normal(loc, scale)
    y.backward()
    z = nda.random.default_rng(4).standard_normal(2).asnumpy()
    np.testing.assert_allclose(loc.grad.asnumpy(), [1.0, 1.0])
    np.testing.assert_allclose(scale.grad.asnumpy(), z)


# ----------------------------------------------------------------------------- statistics

N = 400_000


@pytest.mark.parametrize("dtype", [nda.float64, nda.float32])
def test_uniform_normal_exponential_statistics(dtype):
    from scipy import stats

    g = nda.random.default_rng(123)
    u = g.random(N, dtype=dtype).asnumpy().astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N) and abs(u.var() - 1 / 12) < 5e-3 / 12 * 10
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    z = g.standard_normal(N, dtype=dtype).asnumpy().astype(np.float64)
    assert np.all(np.isfinite(z))
    assert abs(z.mean()) < 5 / math.sqrt(N) and abs(z.var() - 1) < 5 * math.sqrt(2 / N)
    assert abs(stats.skew(z)) < 5 * math.sqrt(6 / N) and abs(stats.kurtosis(z)) < 5 * math.sqrt(24 / N)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert stats.kstest(z[0::2], "norm").pvalue > 1e-3 and stats.kstest(z[1::2], "norm").pvalue > 1e-3  # cos and sin halves
    assert abs(np.corrcoef(z[0::2], z[1::2])[0, 1]) < 5 / math.sqrt(N / 2)
    e = g.standard_exponential(N, dtype=dtype).asnumpy().astype(np.float64)
    assert e.min() >= 0 and abs(e.mean() - 1) < 5 / math.sqrt(N)
    assert stats.kstest(e, "expon").pvalue > 1e-3
    w = g.uniform(-2.0, 6.0, N, dtype=dtype).asnumpy()
    assert w.min() >= -2.0 and w.max() <= 6.0 and abs(w.mean() - 2.0) < 5 * 8 / math.sqrt(12 * N)
    m = g.normal(10.0, 3.0, N, dtype=dtype).asnumpy().astype(np.float64)
    assert abs(m.mean() - 10) < 5 * 3 / math.sqrt(N) and abs(m.std() - 3) < 0.05


@pytest.mark.parametrize(
    "low, high, dtype",
    [
        (0, 10, nda.int64),
        (-3, 4, nda.int8),
        (0, 2**32, nda.uint32),
        (0, 3 * 2**30, nda.uint32),
        (0, 3 * 2**61, nda.int64),
        (-(2**63), 2**63, nda.int64),
    ],
)
def test_integers_are_uniform_chi_square(low, high, dtype):
    from scipy import stats

    g = nda.random.default_rng(99)
    x = g.integers(low, high, N, dtype=dtype).asnumpy()
    assert x.min() >= low and x.max() < high
    span = high - low
    # 12 equal-width bins of the range (the top bits: where a modulo method would be biased)
    edges = [low + span * i // 12 for i in range(13)]
    counts = np.array([np.count_nonzero((x >= a) & (x < b)) if b <= 2**63 or a < 2**63 else 0 for a, b in zip(edges, edges[1:])])
    if span <= 12:
        counts = np.bincount((x.astype(np.int64) - low), minlength=span)
        expected = np.full(span, N / span)
    else:
        expected = np.array([(b - a) * N / span for a, b in zip(edges, edges[1:])])
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    if span == 2**32:  # every bit fair
        assert all(abs(((x >> k) & 1).mean() - 0.5) < 5 / math.sqrt(4 * N) for k in range(32))


def test_integers_endpoint_and_small_dtypes_reach_both_ends():
    g = nda.random.default_rng(2)
    x = g.integers(-128, 127, 5000, dtype=nda.int8, endpoint=True).asnumpy()
    assert x.min() == -128 and x.max() == 127
    y = g.integers(3, size=3000).asnumpy()
    assert set(y.tolist()) == {0, 1, 2} and y.dtype == np.int64


# ----------------------------------------------------------------------------- permutations and choice


@pytest.mark.parametrize("dev", ["cpu", pytest.param("sim", marks=needs_sim)])
def test_permutation_shuffle_and_choice(dev):
    g = nda.random.default_rng(31)
    p = g.permutation(50, device=dev).asnumpy()
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    x = nda.reshape(nda.arange(24.0, device=dev), (6, 4))
    q = g.permutation(x, axis=1).asnumpy()
    assert sorted(map(tuple, q.T.tolist())) == sorted(map(tuple, x.asnumpy().T.tolist()))
    before = x.asnumpy()
    view = x[1:]
    g.shuffle(view)  # in place, through the view, into x
    after = x.asnumpy()
    assert after[0].tolist() == before[0].tolist()
    assert sorted(map(tuple, after[1:].tolist())) == sorted(map(tuple, before[1:].tolist())) and after.tolist() != before.tolist()
    c = g.choice(x, 3, replace=False).asnumpy()
    assert c.shape == (3, 4) and len({tuple(r) for r in c.tolist()}) == 3
    assert g.choice(7, device=dev).shape == () and g.choice(x, (2, 2), axis=1).shape == (6, 2, 2)
    z = g.choice(5, 2000, p=[0.5, 0.0, 0.25, 0.25, 0.0], device=dev).asnumpy()
    assert set(z.tolist()) == {0, 2, 3} and abs(np.mean(z == 0) - 0.5) < 0.05
    w = g.choice(6, 3, replace=False, p=[0.1, 0.0, 0.3, 0.0, 0.4, 0.2], device=dev).asnumpy()
    assert len(set(w.tolist())) == 3 and not {1, 3} & set(w.tolist())


def test_choice_follows_p_chi_square():
    from scipy import stats

    p = np.array([0.05, 0.1, 0.15, 0.3, 0.4])
    x = nda.random.default_rng(5).choice(5, N, p=p).asnumpy()
    assert stats.chisquare(np.bincount(x, minlength=5), p * N).pvalue > 1e-3
    # without replacement, the first draw follows p
    firsts = [int(nda.random.default_rng(s).choice(5, 2, replace=False, p=p).asnumpy()[0]) for s in range(3000)]
    assert stats.chisquare(np.bincount(firsts, minlength=5), p * 3000).pvalue > 1e-3


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda g: g.normal(0.0, -1.0), ValueError, "scale must be non-negative"),
        (lambda g: g.normal(nda.asarray([0.0]), nda.asarray([-1.0])), ValueError, "scale must be non-negative"),
        (lambda g: g.random(3, dtype=nda.int32), TypeError, "float32 or float64"),
        (lambda g: g.uniform(-1e308, 1e308), OverflowError, "overflows"),
        (lambda g: g.uniform(0.0, float("inf")), ValueError, "finite"),
        (lambda g: g.integers(5, 2), ValueError, "low must be less than high"),
        (lambda g: g.integers(0, 300, dtype=nda.uint8), ValueError, "out of bounds for uint8"),
        (lambda g: g.integers(-1, 3, dtype=nda.uint16), ValueError, "out of bounds for uint16"),
        (lambda g: g.integers(0, 3, dtype=nda.float32), TypeError, "integer dtype"),
        (lambda g: g.integers(0.5, 3), TypeError, "low must be an int"),
        (lambda g: g.random(-1), ValueError, "negative"),
        (lambda g: g.random(3, shape=3), TypeError, "size or shape"),
        (lambda g: g.choice(3, 4, replace=False), ValueError, "without replacement"),
        (lambda g: g.choice(3, p=[0.5, 0.6, 0.1]), ValueError, "do not sum to 1"),
        (lambda g: g.choice(3, p=[0.5, 0.5]), ValueError, "one probability per element"),
        (lambda g: g.choice(3, 3, replace=False, p=[0.5, 0.5, 0.0]), ValueError, "fewer than 3 non-zero"),
        (lambda g: g.choice(0, 1), ValueError, "empty"),
        (lambda g: g.shuffle([1, 2, 3]), TypeError, "in place on an nda array"),
        (lambda g: g.permutation(nda.asarray(3.0)), ValueError, "0-d"),
        (lambda g: g.permutation(nda.zeros((2, 2)), axis=2), IndexError, "out of bounds"),
    ],
)
def test_bad_input_raises_clearly(call, error, match):
    with pytest.raises(error, match=match):
        call(nda.random.default_rng(0))


def test_bad_keys_counters_and_seeds():
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        nda.random.philox_uniform(3, key=(2**32, 0))
    with pytest.raises(ValueError, match=r"\[0, 2\*\*128\)"):
        nda.random.philox_uniform(3, key=(1, 2), counter=2**128)
    with pytest.raises(TypeError, match="seed"):
        nda.random.default_rng(1.5)
    with pytest.raises(ValueError, match="bit_generator"):
        nda.random.default_rng(0).bit_generator.state = {"key": (1, 2), "counter": 0}
    with pytest.raises(TypeError, match="spawn"):
        nda.random.Philox(key=(1, 2)).spawn(2)


# ----------------------------------------------------------------------------- the CUDA source


def test_cuda_source_compiles_with_nvcc(tmp_path):
    """Compile-only (no GPU needed): the source nda-cuda hands to NVRTC is valid CUDA, without FMAs."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    from nda_cuda import _philox as cuda_philox

    src = tmp_path / "philox.cu"
    src.write_text(cuda_philox.source())
    done = subprocess.run(
        [nvcc, "--ptx", "-arch=sm_80", *cuda_philox.OPTIONS, "-o", str(tmp_path / "philox.ptx"), str(src)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    ptx = (tmp_path / "philox.ptx").read_text()
    assert "fma" not in ptx
    assert all(f".entry nda_{k}" in ptx for k in ("uniform_f64", "normal_f32", "exponential_f64", "integers_int8", "integers_wide_uint64"))


# ----------------------------------------------------------------------------- on a GPU


def _gpu_reason() -> str:
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # noqa: BLE001 - no CuPy, no driver, no device
        return f"no usable NVIDIA GPU: {err}"
    return "" if count else "no usable NVIDIA GPU: CUDA reports no device"


_NO_GPU = _gpu_reason()


@pytest.mark.skipif(bool(_NO_GPU), reason=_NO_GPU or "-")
@pytest.mark.parametrize("name, call, dtypes", CALLS, ids=[c[0] for c in CALLS])
def test_cuda_draws_the_same_bits_as_cpu(name, call, dtypes):
    """nda-cuda's CUDA kernels (NVRTC) against the cpu kernels, bit for bit, call after call."""
    for dtype in dtypes:
        draws = {}
        for dev in ("cpu", "cuda"):
            g = nda.random.default_rng(2024)
            draws[dev] = (bits_of(call(g, dev, dtype)), bits_of(call(g, dev, dtype)), g.bit_generator.counter)
        assert draws["cuda"] == draws["cpu"], f"{name} {dtype}"
    big = {dev: bits_of(nda.random.default_rng(1).standard_normal(1_000_003, device=dev)) for dev in ("cpu", "cuda")}
    assert big["cuda"] == big["cpu"]


# ----------------------------------------------------------------------------- the cpu kernel's threads


@pytest.mark.parametrize("n", [1, 2 * _philox.CHUNK + 5, 9 * _philox.CHUNK * 4 + 3, 300_001])
def test_the_threaded_cpu_kernels_equal_the_single_threaded_reference(n):
    """The cpu backend spreads chunks over threads; the values must not depend on the split."""
    from nda.backends.cpu_random import ChunkRunner

    key, counter = (11, 12), 2**64 - 3 * _philox.CHUNK
    for threads in (2, 3, 8):
        run = ChunkRunner(threads)
        for dtype in (nda.float64, nda.float32):
            for name, args in (("uniform", (-1.0, 3.0)), ("normal", (2.0, 0.5)), ("exponential", (1.5,))):
                want = getattr(_philox, name)((n,), key, counter, *args, dtype)
                got = _philox.IMPLEMENTATIONS[name]((n,), key, counter, *args, dtype, run)
                assert got.tobytes() == want.tobytes(), (name, dtype, threads)
        for low, span, dtype in ((-3, 1000, nda.int16), (0, 2**63 + 5, nda.uint64)):
            want = _philox.integers((n,), key, counter, low, span, dtype)
            assert _philox.IMPLEMENTATIONS["integers"]((n,), key, counter, low, span, dtype, run).tobytes() == want.tobytes()
    from nda.backends import cpu_random

    qualname = nda.dispatch.explain("random.philox_uniform", (3,), key=(1, 2)).kernel.qualname
    if cpu_random.load_native() is not None:
        assert "native" in qualname
    else:
        assert "threaded" in qualname or (os.cpu_count() or 1) < 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_the_cpu_kernels_threads_work_after_a_fork():
    import multiprocessing

    big = nda.random.default_rng(3).random(200_000).asnumpy()  # the pool exists now
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        child = pool.apply(_draw_in_child, ())
    assert child == big.tobytes()


def _draw_in_child() -> bytes:
    return nda.random.default_rng(3).random(200_000).asnumpy().tobytes()
