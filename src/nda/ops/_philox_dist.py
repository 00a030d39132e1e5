"""The Philox stream's rejection-sampled distributions in vectorised NumPy: the reference kernels.

``gamma``, ``beta``, ``standard_t``, ``lognormal``, ``poisson`` and ``binomial`` of
``nda.random`` need a data-dependent number of random words per value (rejection loops).
So that every device gives the same bits, each value owns its random words: **element**
``i`` of a request at ``counter`` reads its **draw** ``k`` (``k = 0, 1, 2, ...``) from the
Philox block at counter ``(counter + i + k * 2**64) mod 2**128``. Draw 0 of every element
lies in the ``n`` blocks the generator reserves (its counter advances by ``n``); later
draws lie ``2**64``-block strides away from them, where no other request of the same
generator reaches unless its counter moved ``2**64`` blocks in between. An element's loop
(try, reject, try the next draw) is then a deterministic function of ``(key, counter, i)``
and its parameters, whatever the device, the chunking or the order in which elements run.

Words to numbers, per draw ``(w0, w1, w2, w3)``: ``u = (w0 | w1 << 32) >> 11`` and
``v = (w2 | w3 << 32) >> 11`` (53 bits each); a uniform in [0, 1) is ``u * 2**-53``, one in
(0, 1] is ``1 - u * 2**-53``. A standard normal takes one draw: Box-Muller's cosine branch,
``sqrt(-2 log(1 - u 2**-53)) * cos(2 pi v 2**-53)``. The samplers (all arithmetic in
float64, rounded to the result's dtype once at the end):

* **gamma(alpha)** (alpha >= 1): Marsaglia and Tsang's method; attempt ``j`` takes its normal
  from draw ``2j`` and its uniform (``(0, 1]``, from ``u``) from draw ``2j + 1``. For
  alpha < 1, ``gamma(alpha + 1) * U**(1/alpha)`` (computed as ``exp(log G + log(U) / alpha)``)
  with ``U`` from ``v`` of draw 1. alpha = 0 gives 0.
* **beta(a, b)**: ``1 / (1 + exp(log Gb - log Ga))`` from two gamma variates in log space
  (no underflow for small parameters), Ga on the even draws and Gb on the odd ones.
* **standard_t(df)**: ``z * sqrt(df / 2) / sqrt(G)``, ``z`` from draw 0 and ``G ~ gamma(df / 2)``
  on draws 1, 2, ....
* **lognormal(mean, sigma)**: ``exp(mean + sigma * z)``, ``z`` from draw 0.
* **poisson(lam)**: lam < 10 by inversion (one uniform from draw 0, the CDF walked with
  ``p *= lam / k``); lam >= 10 by Hormann's PTRS transformed rejection (attempt ``j`` on
  draw ``j``: ``U = u 2**-53 - 1/2``, ``V = 1 - v 2**-53``).
* **binomial(n, p)**: for ``p > 1/2`` ``n - binomial(n, 1 - p)``; ``n p < 10`` by inversion
  (attempt ``j`` takes draw ``j``'s uniform and restarts past NumPy's bound
  ``n p + 10 sqrt(n p q + 1)``); otherwise Hormann's BTRS rejection (attempt ``j`` on draw ``j``).

``log``, ``exp`` and ``cos`` are nda's portable ones (:func:`nda.ops._philox.log01`, valid
for every positive float64, :func:`exp` below, :func:`~nda.ops._philox.cossin_2pi`) and
``log(k!)`` is :func:`log_factorial`: IEEE operations only (``+ - * /``, ``sqrt``, ``floor``,
``rint``, ``frexp``, ``ldexp``), each rounded alone, so a device that repeats them operation
for operation gives the same bits.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ._philox import LN2_HI, LN2_LO, M0, M1, ROUNDS, W0, W1, cossin_2pi, log01

__all__ = [
    "words",
    "exp",
    "log_factorial",
    "gamma",
    "beta",
    "standard_t",
    "lognormal",
    "poisson",
    "binomial",
    "ELEMENT_CHUNK",
    "MAX_ATTEMPTS",
]

_U64 = np.uint64
_MASK = 0xFFFFFFFF
_TWO64 = 1 << 64
_TWO128 = 1 << 128
#: Elements per chunk of a request (their draws are made and sampled together).
ELEMENT_CHUNK = 1 << 16
#: Attempts after which a rejection loop gives up (RuntimeError): each accepts with
#: probability above 0.3, so a value needing more is beyond any real run.
MAX_ATTEMPTS = 4096
_INV_LN2 = 1.0 / math.log(2.0)
#: ``exp(r)`` on [-ln2/2, ln2/2]: Taylor coefficients 1/k!, k = 0..13 (error below 2**-60).
_EXP_COEFFS = tuple(1.0 / math.factorial(k) for k in range(14))
_HALF_LOG_2PI = 0.5 * float.fromhex("0x1.d67f1c864beb5p+0")  # log(2 pi), the float64 nearest


def words(key: tuple[int, int], counter: int, index: np.ndarray, draw: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``draw`` of the elements ``index`` (uint64): Philox4x32-10 of the block at
    ``(counter + index + draw * 2**64) mod 2**128``, as four uint64 arrays of 32-bit words."""
    base = counter % _TWO128
    lo0, hi0 = base & (_TWO64 - 1), base >> 64
    lo = index + _U64(lo0)  # wraps modulo 2**64
    carry = (lo < index).astype(np.uint64)
    hi = carry + _U64((hi0 + draw) % _TWO64)
    x0, x1 = lo & _U64(_MASK), lo >> _U64(32)
    x2, x3 = hi & _U64(_MASK), hi >> _U64(32)
    k0, k1 = key
    m0, m1, mask, s32 = _U64(M0), _U64(M1), _U64(_MASK), _U64(32)
    for r in range(ROUNDS):
        p0, p1 = x0 * m0, x2 * m1
        x0, x1, x2, x3 = ((p1 >> s32) ^ x1 ^ _U64((k0 + r * W0) & _MASK), p1 & mask, (p0 >> s32) ^ x3 ^ _U64((k1 + r * W1) & _MASK), p0 & mask)
    return x0, x1, x2, x3


def _u53(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return ((hi << _U64(21)) | (lo >> _U64(11))).astype(np.float64)


def _uniforms(w: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The two 53-bit integers of a draw, as float64 (``u``, ``v``)."""
    return _u53(w[0], w[1]), _u53(w[2], w[3])


def _normal(w: tuple[np.ndarray, ...]) -> np.ndarray:
    u, v = _uniforms(w)
    radius = np.sqrt(-2.0 * log01(1.0 - u * 2.0**-53))
    c, _ = cossin_2pi(v * 2.0**-53)
    return radius * c


def exp(x: np.ndarray) -> np.ndarray:
    """``e**x`` for float64 ``x`` from IEEE operations: ``2**k * exp(r)``, ``k = rint(x / ln 2)``,
    ``r = (x - k LN2_HI) - k LN2_LO``, ``exp(r)`` by its Taylor polynomial (about one ulp)."""
    x = np.asarray(x, dtype=np.float64)
    clipped = np.where(np.isnan(x), 0.0, np.clip(x, -760.0, 710.0))
    k = np.rint(clipped * _INV_LN2)
    r = (clipped - k * LN2_HI) - k * LN2_LO
    p = np.full_like(r, _EXP_COEFFS[-1])
    for c in _EXP_COEFFS[-2::-1]:
        p = p * r + c
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(p, k.astype(np.int64))
    out = np.where(x > 709.782712893384, np.inf, out)
    out = np.where(x < -745.1332191019412, 0.0, out)
    return np.where(np.isnan(x), x, out)  # type: ignore[no-any-return]


def log(x: np.ndarray) -> np.ndarray:
    """``log(x)`` for positive finite float64 ``x`` (:func:`nda.ops._philox.log01` is valid for all of them)."""
    return log01(np.asarray(x, dtype=np.float64))  # type: ignore[no-any-return]


_SMALL_FACTORIALS: list[np.ndarray] = []  # log(k!) for k < 16, made at first use (math.factorial is exact; log01 portable)
#: Stirling's series for log Gamma(x), x >= 16: (x - 1/2) log x - x + log(2 pi)/2 + sum of B_2m / (2m (2m-1) x**(2m-1)).
_STIRLING = (1.0 / 12.0, -1.0 / 360.0, 1.0 / 1260.0, -1.0 / 1680.0)


def log_factorial(k: np.ndarray) -> np.ndarray:
    """``log(k!)`` for non-negative integral float64 ``k``: a table below 16, Stirling's series above."""
    if not _SMALL_FACTORIALS:
        _SMALL_FACTORIALS.append(log(np.array([float(math.factorial(i)) for i in range(16)])))
    k = np.asarray(k, dtype=np.float64)
    small = k < 16
    table = _SMALL_FACTORIALS[0][np.where(small, k, 0).astype(np.int64)]
    x = np.where(small, 16.0, k + 1.0)
    z = 1.0 / (x * x)
    series = _STIRLING[-1]
    for c in _STIRLING[-2::-1]:
        series = series * z + c
    large = (x - 0.5) * log(x) - x + _HALF_LOG_2PI + series / x
    return np.where(small, table, large)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- the per-element loop

Draw = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def _run(
    shape: tuple[int, ...], key: tuple[int, int], counter: int, params: tuple[Any, ...], dtype: Any, sample: Callable[..., np.ndarray]
) -> np.ndarray:
    """``sample(draw, index, *params)`` over chunks of elements; parameters broadcast to ``shape``."""
    n = math.prod(shape)
    flat = [np.broadcast_to(np.asarray(p, dtype=np.float64), shape).reshape(-1) for p in params]
    out = np.empty(n, dtype=dtype)
    for start in range(0, n, ELEMENT_CHUNK):
        stop = min(n, start + ELEMENT_CHUNK)
        index = np.arange(start, stop, dtype=np.uint64)

        def draw(idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            return words(key, counter, idx, k)

        values = sample(draw, index, *(p[start:stop] for p in flat))
        out[start:stop] = values  # rounded to the dtype once
    return out.reshape(shape)


def _attempts(name: str) -> range:
    """The attempts of a rejection loop (``MAX_ATTEMPTS``; the loop's ``else`` raises :func:`_exhausted`)."""
    return range(MAX_ATTEMPTS)


def _exhausted(name: str) -> RuntimeError:
    return RuntimeError(f"random {name}: {MAX_ATTEMPTS} rejected attempts for one value (the parameters are outside what the sampler handles)")


def _gamma_log(draw: Draw, index: np.ndarray, alpha: np.ndarray, first: int = 0, step: int = 1) -> np.ndarray:
    """``log`` of gamma(alpha) variates (alpha > 0), the sampler's draws at ``first + step * d`` for its d-th draw."""
    boosted = alpha < 1.0
    shape = np.where(boosted, alpha + 1.0, alpha)
    d = shape - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    result = np.zeros(index.shape, dtype=np.float64)
    pending = np.arange(index.size)
    for attempt in _attempts("gamma"):
        if pending.size == 0:
            break
        idx = index[pending]
        z = _normal(draw(idx, first + step * (2 * attempt)))
        u_raw, _ = _uniforms(draw(idx, first + step * (2 * attempt + 1)))
        u = 1.0 - u_raw * 2.0**-53
        dp, cp = d[pending], c[pending]
        t = 1.0 + cp * z
        v = t * t * t
        positive = v > 0.0
        safe_v = np.where(positive, v, 1.0)
        z2 = z * z
        squeeze = u < 1.0 - 0.0331 * (z2 * z2)
        full = log(u) < 0.5 * z2 + dp * ((1.0 - safe_v) + log(safe_v))
        accept = positive & (squeeze | full)
        result[pending[accept]] = log(dp[accept]) + log(safe_v[accept])
        pending = pending[~accept]
    else:
        if pending.size:
            raise _exhausted("gamma")
    if boosted.any():
        _, v_raw = _uniforms(draw(index[boosted], first + step * 1))
        boost = log(1.0 - v_raw * 2.0**-53) / alpha[boosted]
        result[boosted] = result[boosted] + boost
    return result


def _gamma_sample(draw: Draw, index: np.ndarray, alpha: np.ndarray, scale: np.ndarray) -> np.ndarray:
    value = exp(_gamma_log(draw, index, np.where(alpha > 0.0, alpha, 1.0))) * scale
    return np.where(alpha > 0.0, value, 0.0)  # type: ignore[no-any-return]


def gamma(shape: tuple[int, ...], key: tuple[int, int], counter: int, alpha: Any, scale: Any, dtype: Any, device: Any = None) -> np.ndarray:
    """``scale * G``, ``G ~ gamma(alpha)`` (Marsaglia-Tsang; see the module docstring)."""
    return _run(shape, key, counter, (alpha, scale), dtype.numpy, _gamma_sample)


def _beta_sample(draw: Draw, index: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    la = _gamma_log(draw, index, a, 0, 2)
    lb = _gamma_log(draw, index, b, 1, 2)
    return 1.0 / (1.0 + exp(lb - la))  # type: ignore[no-any-return]


def beta(shape: tuple[int, ...], key: tuple[int, int], counter: int, a: Any, b: Any, dtype: Any, device: Any = None) -> np.ndarray:
    """``Ga / (Ga + Gb)`` from two gamma variates in log space."""
    return _run(shape, key, counter, (a, b), dtype.numpy, _beta_sample)


def _t_sample(draw: Draw, index: np.ndarray, df: np.ndarray) -> np.ndarray:
    z = _normal(draw(index, 0))
    g = exp(_gamma_log(draw, index, df / 2.0, 1, 1))
    with np.errstate(divide="ignore"):
        return z * np.sqrt(df / 2.0) / np.sqrt(g)  # type: ignore[no-any-return]


def standard_t(shape: tuple[int, ...], key: tuple[int, int], counter: int, df: Any, dtype: Any, device: Any = None) -> np.ndarray:
    """Student's t with ``df`` degrees of freedom: ``z * sqrt(df / 2) / sqrt(gamma(df / 2))``."""
    return _run(shape, key, counter, (df,), dtype.numpy, _t_sample)


def _lognormal_sample(draw: Draw, index: np.ndarray, mean: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    return exp(mean + sigma * _normal(draw(index, 0)))


def lognormal(shape: tuple[int, ...], key: tuple[int, int], counter: int, mean: Any, sigma: Any, dtype: Any, device: Any = None) -> np.ndarray:
    """``exp(mean + sigma * z)``."""
    return _run(shape, key, counter, (mean, sigma), dtype.numpy, _lognormal_sample)


def _poisson_sample(draw: Draw, index: np.ndarray, lam: np.ndarray) -> np.ndarray:
    result = np.zeros(index.shape, dtype=np.float64)
    small = np.flatnonzero((lam > 0.0) & (lam < 10.0))
    if small.size:
        lam_s = lam[small]
        u, _ = _uniforms(draw(index[small], 0))
        u = u * 2.0**-53
        p = exp(-lam_s)
        cdf = p.copy()
        k = np.zeros(small.size)
        active = u > cdf
        steps = 0
        while active.any() and steps < 1000:
            steps += 1
            k = np.where(active, k + 1.0, k)
            p = np.where(active, p * (lam_s / np.where(active, k, 1.0)), p)
            cdf = np.where(active, cdf + p, cdf)
            active = active & (u > cdf) & (p > 0.0)
        result[small] = k
    large = np.flatnonzero(lam >= 10.0)
    if large.size:
        result[large] = _ptrs(draw, index[large], lam[large])
    return result


def _ptrs(draw: Draw, index: np.ndarray, lam: np.ndarray) -> np.ndarray:
    slam = np.sqrt(lam)
    loglam = log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    result = np.zeros(index.shape, dtype=np.float64)
    pending = np.arange(index.size)
    for attempt in _attempts("poisson"):
        if pending.size == 0:
            break
        u_raw, v_raw = _uniforms(draw(index[pending], attempt))
        U = u_raw * 2.0**-53 - 0.5
        V = 1.0 - v_raw * 2.0**-53
        us = 0.5 - np.abs(U)
        ok_us = us > 0.0
        safe_us = np.where(ok_us, us, 0.5)
        ap, bp, lp = a[pending], b[pending], lam[pending]
        k = np.floor((2.0 * ap / safe_us + bp) * U + lp + 0.43)
        quick = ok_us & (safe_us >= 0.07) & (V <= vr[pending])
        refuse = ~ok_us | (k < 0.0) | ((safe_us < 0.013) & (V > safe_us))
        safe_k = np.where(k < 0.0, 0.0, k)
        slow = log(V) + log(invalpha[pending]) - log(ap / (safe_us * safe_us) + bp) <= -lp + safe_k * loglam[pending] - log_factorial(safe_k)
        accept = quick | (~refuse & slow)
        result[pending[accept]] = k[accept]
        pending = pending[~accept]
    else:
        if pending.size:
            raise _exhausted("poisson")
    return result


def _counts(values: np.ndarray, dtype: Any) -> np.ndarray:
    """Counts (integral float64) in the integer ``dtype``: OverflowError for one it cannot hold, never a wrapped value."""
    info = np.iinfo(dtype.numpy)
    if values.size and (values.max() > info.max or values.min() < info.min):
        raise OverflowError(f"a random count of {int(values.max())} does not fit in {dtype.name}; ask for a wider dtype (int64, NumPy's)")
    return values.astype(dtype.numpy)


def poisson(shape: tuple[int, ...], key: tuple[int, int], counter: int, lam: Any, dtype: Any, device: Any = None) -> np.ndarray:
    """Poisson counts with mean ``lam`` (inversion below 10, PTRS from 10)."""
    return _counts(_run(shape, key, counter, (lam,), np.float64, _poisson_sample), dtype)


def _binomial_sample(draw: Draw, index: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    flipped = p > 0.5
    q_small = np.where(flipped, 1.0 - p, p)
    result = np.zeros(index.shape, dtype=np.float64)
    live = (n > 0.0) & (q_small > 0.0)
    mean = n * q_small
    small = np.flatnonzero(live & (mean < 10.0))
    if small.size:
        result[small] = _binomial_inversion(draw, index[small], n[small], q_small[small])
    large = np.flatnonzero(live & (mean >= 10.0))
    if large.size:
        result[large] = _btrs(draw, index[large], n[large], q_small[large])
    return np.where(flipped, n - result, result)  # type: ignore[no-any-return]


def _binomial_inversion(draw: Draw, index: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    q = 1.0 - p
    s = p / q
    a = (n + 1.0) * s
    r0 = exp(n * log(q))
    bound = np.minimum(n, np.floor(n * p + 10.0 * np.sqrt(n * p * q + 1.0)))
    result = np.zeros(index.shape, dtype=np.float64)
    pending = np.arange(index.size)
    for attempt in _attempts("binomial"):
        if pending.size == 0:
            break
        u_raw, _ = _uniforms(draw(index[pending], attempt))
        u = u_raw * 2.0**-53
        r = r0[pending].copy()
        x = np.zeros(pending.size)
        ap, sp, bp = a[pending], s[pending], bound[pending]
        walking = u > r
        over = np.zeros(pending.size, dtype=bool)
        while walking.any():
            u = np.where(walking, u - r, u)
            x = np.where(walking, x + 1.0, x)
            over |= walking & (x > bp)
            walking &= ~over
            r = np.where(walking, (ap / np.where(walking, x, 1.0) - sp) * r, r)
            walking &= u > r
        accept = ~over
        result[pending[accept]] = x[accept]
        pending = pending[~accept]
    else:
        if pending.size:
            raise _exhausted("binomial")
    return result


def _btrs(draw: Draw, index: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    q = 1.0 - p
    spq = np.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = log(p / q)
    m = np.floor((n + 1.0) * p)
    h = log_factorial(m) + log_factorial(n - m)
    result = np.zeros(index.shape, dtype=np.float64)
    pending = np.arange(index.size)
    for attempt in _attempts("binomial"):
        if pending.size == 0:
            break
        u_raw, v_raw = _uniforms(draw(index[pending], attempt))
        U = u_raw * 2.0**-53 - 0.5
        V = 1.0 - v_raw * 2.0**-53
        us = 0.5 - np.abs(U)
        ok_us = us > 0.0
        safe_us = np.where(ok_us, us, 0.5)
        ap, bp, np_ = a[pending], b[pending], n[pending]
        k = np.floor((2.0 * ap / safe_us + bp) * U + c[pending])
        inside = ok_us & (k >= 0.0) & (k <= np_)
        quick = inside & (safe_us >= 0.07) & (V <= vr[pending])
        safe_k = np.clip(k, 0.0, np_)
        lhs = log(V * alpha[pending] / (ap / (safe_us * safe_us) + bp))
        rhs = h[pending] - log_factorial(safe_k) - log_factorial(np_ - safe_k) + (safe_k - m[pending]) * lpq[pending]
        accept = quick | (inside & (lhs <= rhs))
        result[pending[accept]] = k[accept]
        pending = pending[~accept]
    else:
        if pending.size:
            raise _exhausted("binomial")
    return result


def binomial(shape: tuple[int, ...], key: tuple[int, int], counter: int, n: Any, p: Any, dtype: Any, device: Any = None) -> np.ndarray:
    """Binomial counts of ``n`` trials with success probability ``p`` (inversion, or BTRS from ``n p >= 10``)."""
    return _counts(_run(shape, key, counter, (n, p), np.float64, _binomial_sample), dtype)
