"""``Generator.gamma/beta/standard_t/lognormal/poisson/binomial/multivariate_normal/bytes`` (issue 37, item 3).

Each is missing before issue 37 (AttributeError). The tests check: the same seed gives the
same bits on cpu and sim (and the generators end in the same state); each element's value
depends only on ``(key, counter, element)`` (a longer request or another chunking gives the
same first values); the stream's words are Philox's; the portable ``exp`` and ``log(k!)``
are accurate; and the samples follow their distributions (scipy.stats goodness-of-fit
tests on fixed seeds, so the tests cannot flake: they are deterministic).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import nda
from nda.ops import _philox, _philox_dist

DEVICES = ["cpu", "sim"]
N = 20000

#: method -> (positional parameters, scipy frozen distribution or None, discrete)
CASES = {
    "gamma small": ("gamma", (0.4, 2.0), stats.gamma(0.4, scale=2.0), False),
    "gamma": ("gamma", (3.5,), stats.gamma(3.5), False),
    "standard_gamma": ("standard_gamma", (1.0,), stats.gamma(1.0), False),
    "beta small": ("beta", (0.3, 0.6), stats.beta(0.3, 0.6), False),
    "beta": ("beta", (2.0, 5.0), stats.beta(2.0, 5.0), False),
    "standard_t": ("standard_t", (3.0,), stats.t(3.0), False),
    "standard_t small": ("standard_t", (0.7,), stats.t(0.7), False),
    "lognormal": ("lognormal", (0.5, 0.8), stats.lognorm(0.8, scale=math.exp(0.5)), False),
    "poisson small": ("poisson", (2.5,), stats.poisson(2.5), True),
    "poisson large": ("poisson", (80.0,), stats.poisson(80.0), True),
    "binomial small": ("binomial", (12, 0.3), stats.binom(12, 0.3), True),
    "binomial large": ("binomial", (400, 0.35), stats.binom(400, 0.35), True),
    "binomial flipped": ("binomial", (50, 0.9), stats.binom(50, 0.9), True),
}


def _draw(device: str, method: str, params: tuple, size=N, seed: int = 37, **kw):
    rng = nda.random.default_rng(seed, device=device)
    out = getattr(rng, method)(*params, size=size, **kw)
    return out, rng.bit_generator.state


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_bits_on_cpu_and_sim_and_the_same_state_after(case):
    method, params, _, _ = CASES[case]
    cpu, cpu_state = _draw("cpu", method, params, size=(3, 500))
    sim, sim_state = _draw("sim", method, params, size=(3, 500))
    assert sim.device.type == "sim" and cpu.dtype == sim.dtype
    a, b = cpu.asnumpy(), sim.asnumpy()
    assert a.tobytes() == b.tobytes(), f"{case}: cpu and sim differ"
    assert cpu_state == sim_state and cpu_state["counter"] == 1500  # one block a value


@pytest.mark.parametrize("dtype", [nda.float32, nda.float64])
def test_float32_is_the_float64_value_rounded_once(dtype):
    ref = nda.random.philox_gamma((50,), key=(5, 6), counter=9, alpha=2.0, dtype=nda.float64).asnumpy()
    got = nda.random.philox_gamma((50,), key=(5, 6), counter=9, alpha=2.0, dtype=dtype).asnumpy()
    np.testing.assert_array_equal(got, ref.astype(dtype.numpy))


@pytest.mark.parametrize("device", DEVICES)
def test_an_elements_value_depends_on_its_own_blocks_only(device, monkeypatch):
    """A longer request, or another chunking of the elements, gives the same values for the same elements."""
    kw = {"key": (11, 12), "counter": 2**64 - 3, "device": device}  # the low 64 bits carry inside the request
    for op, params in (
        (nda.random.philox_gamma, {"alpha": 0.7}),
        (nda.random.philox_poisson, {"lam": 30.0}),
        (nda.random.philox_binomial, {"n": 70, "p": 0.4}),
        (nda.random.philox_beta, {"a": 0.5, "b": 0.5}),
    ):
        short = op((40,), **kw, **params).asnumpy()
        long = op((100,), **kw, **params).asnumpy()
        np.testing.assert_array_equal(short, long[:40])
        monkeypatch.setattr(_philox_dist, "ELEMENT_CHUNK", 7)
        np.testing.assert_array_equal(op((100,), **kw, **params).asnumpy(), long)
        monkeypatch.undo()


def test_draw_zero_is_the_generators_block_and_later_draws_lie_two_to_the_64_away():
    key, counter = (0x243F6A88, 0x85A308D3), 2**64 - 2
    X = np.empty((2, 4), np.uint64)
    Y = np.empty((2, 4), np.uint64)
    P = np.empty((2, 4), np.uint64)
    for draw in (0, 3):
        _philox.philox(key, counter + draw * 2**64, 0, 4, X, Y, P)
        w = _philox_dist.words(key, counter, np.arange(4, dtype=np.uint64), draw)
        np.testing.assert_array_equal(np.stack([w[0], w[2]]), X)
        np.testing.assert_array_equal(np.stack([w[1], w[3]]), Y)


def test_portable_exp_and_log_factorial_are_within_two_ulp():
    x = np.concatenate([np.linspace(-745, 709, 20001), np.array([0.0, -0.0, 1e-300, -1e-20, 700.5])])
    got, want = _philox_dist.exp(x), np.array([math.exp(v) for v in x])
    finite = want > 1e-300
    assert np.all(np.abs(got[finite] - want[finite]) <= 2 * np.spacing(want[finite]))
    assert _philox_dist.exp(np.array([710.0, -746.0, np.nan])).tolist()[:2] == [np.inf, 0.0]
    k = np.arange(0, 3000, dtype=np.float64)
    want = np.array([math.lgamma(v + 1) for v in k])
    np.testing.assert_allclose(_philox_dist.log_factorial(k), want, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("case", sorted(CASES))
def test_samples_follow_their_distribution(case):
    """Kolmogorov-Smirnov for continuous distributions, chi-square over the likely counts for discrete ones."""
    method, params, dist, discrete = CASES[case]
    sample = _draw("cpu", method, params)[0].asnumpy()
    assert np.all(np.isfinite(sample))
    if not discrete:
        assert stats.kstest(sample, dist.cdf).pvalue > 1e-3, case
        return
    assert sample.dtype == np.int64
    lo, hi = int(dist.ppf(1e-4)), int(dist.ppf(1 - 1e-4))
    values = np.clip(sample, lo, hi)
    observed = np.bincount(values - lo, minlength=hi - lo + 1)
    expected = np.array([dist.pmf(k) for k in range(lo, hi + 1)])
    expected[0] += dist.cdf(lo - 1)
    expected[-1] += dist.sf(hi)
    keep = expected * N >= 5
    obs, exp = observed[keep], expected[keep] * N
    obs = np.append(obs, observed[~keep].sum())
    exp = np.append(exp, expected[~keep].sum() * N)
    if exp[-1] < 5:
        obs[-2] += obs[-1]
        exp[-2] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-3, case


@pytest.mark.parametrize("device", DEVICES)
def test_array_parameters_broadcast_and_are_checked_as_numpy_checks_them(device):
    rng = nda.random.default_rng(3, device=device)
    shape = nda.asarray([[0.5], [2.0], [9.0]], device=device)
    out = rng.gamma(shape, nda.asarray([1.0, 3.0], device=device))
    assert out.shape == (3, 2) and out.device.type == device
    assert rng.poisson([1.0, 40.0], size=(4, 2)).shape == (4, 2)
    counts = rng.binomial(nda.asarray([3.0, 7.9], device=device), 0.5, size=(200, 2)).asnumpy()
    assert counts[:, 0].max() <= 3 and counts[:, 1].max() <= 7  # NumPy truncates a float n
    # scalar and array parameters give the same bits for the same values
    a = nda.random.default_rng(9, device=device).gamma(2.0, size=5).asnumpy()
    b = nda.random.default_rng(9, device=device).gamma(nda.full((5,), 2.0, device=device)).asnumpy()
    np.testing.assert_array_equal(a, b)
    for call, match in (
        (lambda: rng.gamma(-1.0), "non-negative"),
        (lambda: rng.gamma(nda.asarray([1.0, -1.0], device=device)), "non-negative"),
        (lambda: rng.beta(0.0, 1.0), "positive"),
        (lambda: rng.poisson([-1.0]), "non-negative"),
        (lambda: rng.binomial(5, 1.5), r"\[0, 1\]"),
        (lambda: rng.binomial(-2, 0.5), "non-negative"),
        (lambda: rng.standard_t(0.0), "positive"),
        (lambda: rng.lognormal(0.0, -1.0), "non-negative"),
    ):
        with pytest.raises(ValueError, match=match):
            call()
    with pytest.raises(ValueError, match="broadcast"):
        rng.gamma(nda.ones(3, device=device), size=(2,))
    with pytest.raises(ValueError, match="cannot hold"):
        rng.binomial(1000, 0.5, dtype=nda.int8)
    with pytest.raises(OverflowError, match="does not fit"):
        rng.poisson(1000.0, size=3, dtype=nda.int8).tolist()
    assert rng.poisson(3.0, size=4, dtype=nda.uint8).dtype is nda.uint8


@pytest.mark.parametrize("method", ["svd", "eigh", "cholesky"])
def test_multivariate_normal_same_bits_and_moments(method):
    mean, cov = [1.0, -2.0, 0.5], [[2.0, 0.6, 0.2], [0.6, 1.0, -0.3], [0.2, -0.3, 0.5]]
    cpu = nda.random.default_rng(4).multivariate_normal(mean, cov, size=(N,), method=method).asnumpy()
    sim = nda.random.default_rng(4, device="sim").multivariate_normal(mean, cov, size=(N,), method=method).asnumpy()
    assert cpu.tobytes() == sim.tobytes() and cpu.shape == (N, 3)
    np.testing.assert_allclose(cpu.mean(axis=0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(cpu.T), cov, atol=0.06)
    assert nda.random.default_rng(4).multivariate_normal(mean, cov).shape == (3,)
    with pytest.raises(ValueError, match="positive-semidefinite"):
        nda.random.default_rng(4).multivariate_normal([0, 0], [[1, 2], [2, 1]], check_valid="raise")
    with pytest.warns(RuntimeWarning, match="positive-semidefinite"):
        nda.random.default_rng(4).multivariate_normal([0, 0], [[1, 2], [2, 1]])
    with pytest.raises(ValueError, match="same length"):
        nda.random.default_rng(4).multivariate_normal([0, 0, 0], [[1, 0], [0, 1]])


def test_bytes_are_the_words_of_random_integers_and_the_same_everywhere():
    rng = nda.random.default_rng(8)
    data = rng.bytes(11)
    assert isinstance(data, bytes) and len(data) == 11
    words = nda.random.default_rng(8).integers(0, 2**32, size=3, dtype=nda.uint32).asnumpy()
    assert data == words.astype("<u4").tobytes()[:11]
    assert nda.random.default_rng(8, device="sim").bytes(11) == data
    assert rng.bytes(0) == b""
    with pytest.raises(ValueError):
        rng.bytes(-1)


def test_no_warnings_from_the_samplers():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rng = nda.random.default_rng(1)
        for method, params, _, _ in CASES.values():
            getattr(rng, method)(*params, size=300).asnumpy()
        rng.gamma(0.0, size=3).asnumpy()
        rng.standard_t(0.01, size=50).asnumpy()
        rng.beta(0.01, 0.02, size=50).asnumpy()
