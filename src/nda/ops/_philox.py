"""The Philox4x32-10 stream of ``nda.random`` in vectorised NumPy: the reference (and the cpu fallback).

Everything here is the executable form of the stream that :mod:`nda.ops.random` states
(its docstring is the specification); every backend must reproduce these functions bit
for bit. The compiled form is one C/CUDA source (:mod:`nda.ops._philox_source`) that
nda-cuda runs on GPUs and the cpu backend runs where nda's optional extension
``nda._philox_native`` is built; these NumPy kernels serve the cpu without it (or with
``NDA_NATIVE=0``), nda-sim, and the tests, which compare the two bit for bit. The work is done chunk by chunk (:data:`CHUNK` Philox blocks at a time), so that
the ten rounds, the conversion to the output dtype and the transforms run while their
temporaries are in cache.

Layout of a chunk. The four 32-bit words ``(x0, x1, x2, x3)`` of a block are held in two
``(2, m)`` uint64 arrays: ``X = [x0; x2]`` and ``Y = [x1; x3]``. A Philox round then is
five NumPy calls on ``2m`` elements::

    P = X * [M0; M1]              # the two 32x32 -> 64-bit products (exact in uint64)
    X = (P[::-1] >> 32) ^ Y ^ K   # hi(x2*M1) ^ x1 ^ k0, hi(x0*M0) ^ x3 ^ k1
    Y = P[::-1] & 0xffffffff      # lo(x2*M1), lo(x0*M0)

The transcendental functions of the normal and exponential transforms (``log``, ``cos`` and
``sin`` of ``2*pi*t``) are not NumPy's: NumPy, CUDA and every other math library round them
differently in the last place. They are evaluated here from IEEE-754 operations that every
device rounds alike (``+ - * /``, ``sqrt``, ``frexp``, ``rint``, each rounded on its own,
never fused into an FMA), in an order that the C/CUDA source repeats operation for
operation (where it computes a step otherwise, the step is exact: ``2m`` as ``m * 2``, the
top 53 bits of a word pair as ``hi * 2**21 + (lo >> 11)``). Their accuracy is about one ulp.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

#: ``run(work, chunk_starts)``: calls ``work`` on ranges of chunk starts (see :func:`_generate`).
Runner = Callable[[Callable[[range], None], range], None]

__all__ = [
    "M0",
    "M1",
    "W0",
    "W1",
    "ROUNDS",
    "CHUNK",
    "philox",
    "blocks",
    "Runner",
    "IMPLEMENTATIONS",
    "bits",
    "uniform",
    "normal",
    "exponential",
    "integers",
    "log01",
    "cossin_2pi",
    "LOG_COEFFS",
    "SIN_COEFFS",
    "COS_COEFFS",
    "LN2_HI",
    "LN2_LO",
    "SQRT_HALF",
    "TWO_PI",
]

# Philox4x32 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3", SC 2011).
M0, M1 = 0xD2511F53, 0xCD9E8D57  # round multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # key schedule ("Weyl") increments
ROUNDS = 10
#: Philox blocks per chunk of the vectorised evaluation (the temporaries of a chunk fit in L2).
CHUNK = 8192

_U64 = np.uint64
_MASK = _U64(0xFFFFFFFF)
_S32 = _U64(32)
_MULT = np.array([[M0], [M1]], dtype=np.uint64)
_IOTA = np.arange(CHUNK, dtype=np.uint64)
_TWO64 = 1 << 64
_TWO128 = 1 << 128

# -- the portable transcendental functions' constants (see the module docstring) ------------
#: ``log(1+f) = 2s + s*z*P(z)`` with ``s = f/(2+f)``, ``z = s*s``: P's coefficients 2/3, 2/5, ..., 2/19.
LOG_COEFFS = tuple(2.0 / (2 * k + 1) for k in range(1, 10))
#: ``sin(t) = t + t*(z*S(z))``, ``z = t*t``: S's coefficients -1/3!, 1/5!, ..., -1/17!.
SIN_COEFFS = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 9))
#: ``cos(t) = 1 + z*C(z)``: C's coefficients -1/2!, 1/4!, ..., 1/16!.
COS_COEFFS = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(1, 9))
#: ln 2 split so that ``e * LN2_HI`` is exact for every exponent ``e`` a float64 has:
#: LN2_HI is ln 2 with its significand cut to 32 bits, LN2_LO the rest (rounded).
LN2_HI = float.fromhex("0x1.62e42feep-1")
LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
SQRT_HALF = float.fromhex("0x1.6a09e667f3bcdp-1")  # the float64 nearest sqrt(1/2)
TWO_PI = float.fromhex("0x1.921fb54442d18p+2")  # the float64 nearest 2*pi


# --------------------------------------------------------------------------- the generator


def philox(key: tuple[int, int], counter: int, start: int, count: int, X: np.ndarray, Y: np.ndarray, P: np.ndarray) -> None:
    """Blocks ``start .. start+count-1`` of a request at ``counter``, into ``X = [x0; x2]``, ``Y = [x1; x3]``.

    Block ``b``'s counter is ``(counter + b) mod 2**128``, split into 32-bit words from the
    least significant: ``c0 | c1 << 32 | c2 << 64 | c3 << 96``. ``X``, ``Y`` and the scratch
    ``P`` are ``(2, >= count)`` uint64 arrays; their first ``count`` columns are written.
    """
    x, y, p = X[:, :count], Y[:, :count], P[:, :count]
    base = (counter + start) % _TWO128
    lo, hi = base & (_TWO64 - 1), base >> 64
    first = min(count, _TWO64 - lo)  # blocks before the low 64 bits wrap (at most one wrap per chunk)
    np.add(_IOTA[:first], _U64(lo), out=x[0, :first])
    x[1, :first] = hi & 0xFFFFFFFF
    y[1, :first] = hi >> 32
    if first < count:
        hi2 = (hi + 1) % _TWO64
        np.copyto(x[0, first:], _IOTA[: count - first])
        x[1, first:] = hi2 & 0xFFFFFFFF
        y[1, first:] = hi2 >> 32
    np.right_shift(x[0], _S32, out=y[0])
    np.bitwise_and(x[0], _MASK, out=x[0])
    k0, k1 = key
    for r in range(ROUNDS):
        keys = np.array([[(k0 + r * W0) & 0xFFFFFFFF], [(k1 + r * W1) & 0xFFFFFFFF]], dtype=np.uint64)
        np.multiply(x, _MULT, out=p)
        swapped = p[::-1]
        np.right_shift(swapped, _S32, out=x)
        np.bitwise_xor(x, y, out=x)
        np.bitwise_xor(x, keys, out=x)
        np.bitwise_and(swapped, _MASK, out=y)


def blocks(n: int, per_block: int) -> int:
    """Philox blocks consumed by a request of ``n`` values of which a block yields ``per_block``."""
    return -(-n // per_block)


def _generate(
    shape: tuple[int, ...],
    dtype: Any,
    key: tuple[int, int],
    counter: int,
    per_block: int,
    fill: Callable[[np.ndarray, np.ndarray, np.ndarray], None],
    run: Runner | None = None,
) -> np.ndarray:
    """An array of ``shape``: each chunk of blocks is made by :func:`philox`, then ``fill(out_chunk, X, Y)``
    writes its ``per_block * m`` values (as an ``(m, per_block)`` array).

    ``run(work, parts)`` (optional) calls ``work(part)`` for each contiguous range of chunks,
    on threads if it likes (the cpu backend's kernels do): each chunk is a function of its
    block numbers alone, so the values do not depend on how the chunks are split.
    """
    n = math.prod(shape)
    total = blocks(n, per_block)
    out = np.empty(total * per_block, dtype=dtype)
    starts = range(0, total, CHUNK)

    def work(part: range) -> None:
        scratch = np.empty((3, 2, min(total, CHUNK)), dtype=np.uint64)
        X, Y, P = scratch
        for start in part:
            m = min(CHUNK, total - start)
            philox(key, counter, start, m, X, Y, P)
            fill(out[start * per_block : (start + m) * per_block].reshape(m, per_block), X[:, :m], Y[:, :m])

    if run is None or len(starts) < 2:
        work(starts)
    else:
        run(work, starts)
    return out[:n].reshape(shape)


def _u53(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The top 53 bits of the 64-bit values ``lo | hi << 32``, as uint64."""
    return (hi << _U64(21)) | (lo >> _U64(11))


# --------------------------------------------------------------------------- the ops' kernels


def _bits(shape: tuple[int, ...], key: tuple[int, int], counter: int, dtype: Any, run: Runner | None = None) -> np.ndarray:
    """Raw words: uint32 values are the words in order; uint64 values ``w[2j] | w[2j+1] << 32``."""
    if dtype.numpy == np.uint32:

        def fill(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
            o[:, 0::2] = X.T
            o[:, 1::2] = Y.T

        return _generate(shape, np.uint32, key, counter, 4, fill, run)

    def fill64(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
        np.bitwise_or(X, Y << _S32, out=o.T)

    return _generate(shape, np.uint64, key, counter, 2, fill64, run)


def _uniform(
    shape: tuple[int, ...], key: tuple[int, int], counter: int, low: float, span: float, dtype: Any, run: Runner | None = None
) -> np.ndarray:
    """``low + span * u``, ``u`` in [0, 1) from 53 bits (float64: 2 words a value) or 24 bits (float32: 1 word)."""
    dt = dtype.numpy
    low_, span_ = dt.type(low), dt.type(span)
    plain = low == 0.0 and span == 1.0 and math.copysign(1.0, low) > 0
    if dt == np.float64:

        def fill(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
            t = o.T
            np.multiply(_u53(X, Y), 2.0**-53, out=t)
            if not plain:
                np.multiply(t, span_, out=t)
                np.add(t, low_, out=t)

        return _generate(shape, dt, key, counter, 2, fill, run)

    def fill32(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
        for half, words in ((o[:, 0::2], X), (o[:, 1::2], Y)):
            t = half.T
            np.multiply((words >> _U64(8)).astype(np.float32), np.float32(2.0**-24), out=t)
            if not plain:
                np.multiply(t, span_, out=t)
                np.add(t, low_, out=t)

    return _generate(shape, dt, key, counter, 4, fill32, run)


def _normal(
    shape: tuple[int, ...], key: tuple[int, int], counter: int, loc: float, scale: float, dtype: Any, run: Runner | None = None
) -> np.ndarray:
    """``loc + scale * z``: Box-Muller on pairs of uniforms, in float64 (rounded once to float32 for float32)."""
    dt = dtype.numpy
    loc_, scale_ = dt.type(loc), dt.type(scale)
    if dt == np.float64:

        def fill(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
            # one pair a block: u1 from (x0, x1), t from (x2, x3)
            u1 = 1.0 - _u53(X[0], Y[0]) * 2.0**-53
            t = _u53(X[1], Y[1]) * 2.0**-53
            _box_muller(u1, t, o[:, 0], o[:, 1], loc_, scale_)

        return _generate(shape, dt, key, counter, 2, fill, run)

    def fill32(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
        # two pairs a block: (x0, x1) and (x2, x3); u1 = (w + 1/2) / 2**32, t = w / 2**32
        u1 = (X + 0.5) * 2.0**-32
        t = Y * 2.0**-32
        o3 = o.reshape(o.shape[0], 2, 2)
        _box_muller(u1.T, t.T, o3[:, :, 0], o3[:, :, 1], loc_, scale_)

    return _generate(shape, dt, key, counter, 4, fill32, run)


def _box_muller(u1: np.ndarray, t: np.ndarray, out_cos: np.ndarray, out_sin: np.ndarray, loc: Any, scale: Any) -> None:
    radius = np.sqrt(-2.0 * log01(u1))
    c, s = cossin_2pi(t)
    for out, trig in ((out_cos, c), (out_sin, s)):
        out[...] = radius * trig  # rounded to the output dtype here
        np.multiply(out, scale, out=out)
        np.add(out, loc, out=out)


def _exponential(shape: tuple[int, ...], key: tuple[int, int], counter: int, scale: float, dtype: Any, run: Runner | None = None) -> np.ndarray:
    """``scale * (0 - log(u))``, ``u`` in (0, 1]: ``1 - a/2**53`` (float64) or ``(w + 1/2)/2**32`` (float32)."""
    dt = dtype.numpy
    scale_ = dt.type(scale)
    if dt == np.float64:

        def fill(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
            t = o.T
            t[...] = 0.0 - log01(1.0 - _u53(X, Y) * 2.0**-53)
            np.multiply(t, scale_, out=t)

        return _generate(shape, dt, key, counter, 2, fill, run)

    def fill32(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
        for half, words in ((o[:, 0::2], X), (o[:, 1::2], Y)):
            t = half.T
            t[...] = 0.0 - log01((words + 0.5) * 2.0**-32)
            np.multiply(t, scale_, out=t)

    return _generate(shape, dt, key, counter, 4, fill32, run)


def _integers(shape: tuple[int, ...], key: tuple[int, int], counter: int, low: int, span: int, dtype: Any, run: Runner | None = None) -> np.ndarray:
    """``low + floor(U * span / 2**k)``: ``U`` a 64-bit value (``k = 64``, for ``span <= 2**32``) or a
    128-bit one (``k = 128``, one block a value, for larger spans of the 64-bit dtypes)."""
    dt = dtype.numpy
    offset = _U64(low % _TWO64)
    signed = dt.kind == "i"

    def store(o: np.ndarray, draws: np.ndarray) -> None:
        draws += offset  # modulo 2**64: two's complement for a negative low
        o[...] = (draws.view(np.int64) if signed else draws).astype(dt, copy=False)

    if span <= 1 << 32:
        r = _U64(span)

        def fill(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
            # floor((hi * 2**32 + lo) * r / 2**64) = (hi*r + (lo*r >> 32)) >> 32, no term overflows
            store(o.T, ((Y * r) + ((X * r) >> _S32)) >> _S32)

        return _generate(shape, dt, key, counter, 2, fill, run)

    def fill128(o: np.ndarray, X: np.ndarray, Y: np.ndarray) -> None:
        u_lo = X[0] | (Y[0] << _S32)
        u_hi = X[1] | (Y[1] << _S32)
        if span == _TWO64:
            store(o[:, 0], u_hi)
            return
        high_of_lo, _ = _mul64(u_lo, span)
        hi, lo = _mul64(u_hi, span)
        carry = ((lo + high_of_lo) < lo).astype(np.uint64)
        store(o[:, 0], hi + carry)

    return _generate(shape, dt, key, counter, 1, fill128, run)


def _mul64(a: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 64-bit halves of ``a * b`` for uint64 ``a`` and ``0 <= b < 2**64``, in 32-bit limbs."""
    a0, a1 = a & _MASK, a >> _S32
    b0, b1 = _U64(b & 0xFFFFFFFF), _U64(b >> 32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> _S32) + (p01 & _MASK) + (p10 & _MASK)
    high = p11 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)
    low = (mid << _S32) | (p00 & _MASK)
    return high, low


# --------------------------------------------------------------------------- the kernels (reference signatures)
# The catalog's references (and the cpu and sim kernels): the ops' kernel convention. The cpu
# backend calls the implementations above with a ``run`` of its own (chunks on threads).


def bits(shape: tuple[int, ...], key: tuple[int, int], counter: int, dtype: Any, device: Any = None) -> np.ndarray:
    """Raw words: uint32 values are the words in order; uint64 values ``w[2j] | w[2j+1] << 32``."""
    return _bits(shape, key, counter, dtype)


def uniform(shape: tuple[int, ...], key: tuple[int, int], counter: int, low: float, span: float, dtype: Any, device: Any = None) -> np.ndarray:
    """``low + span * u``, ``u`` in [0, 1) from 53 bits (float64: 2 words a value) or 24 bits (float32: 1 word)."""
    return _uniform(shape, key, counter, low, span, dtype)


def normal(shape: tuple[int, ...], key: tuple[int, int], counter: int, loc: float, scale: float, dtype: Any, device: Any = None) -> np.ndarray:
    """``loc + scale * z``: Box-Muller on pairs of uniforms, in float64 (rounded once to float32 for float32)."""
    return _normal(shape, key, counter, loc, scale, dtype)


def exponential(shape: tuple[int, ...], key: tuple[int, int], counter: int, scale: float, dtype: Any, device: Any = None) -> np.ndarray:
    """``scale * (0 - log(u))``, ``u`` in (0, 1]."""
    return _exponential(shape, key, counter, scale, dtype)


def integers(shape: tuple[int, ...], key: tuple[int, int], counter: int, low: int, span: int, dtype: Any, device: Any = None) -> np.ndarray:
    """``low + floor(U * span / 2**k)`` (see :mod:`nda.ops.random`)."""
    return _integers(shape, key, counter, low, span, dtype)


#: The implementations behind each reference, taking ``run`` last (for the cpu backend's kernels).
IMPLEMENTATIONS: dict[str, Callable[..., np.ndarray]] = {
    "uniform": _uniform,
    "normal": _normal,
    "exponential": _exponential,
    "integers": _integers,
}


# --------------------------------------------------------------------------- portable log, cos, sin


def log01(x: np.ndarray) -> np.ndarray:
    """``log(x)`` for float64 ``x`` in (0, 1], from IEEE operations only (see the module docstring).

    ``x = m * 2**e`` with ``m`` in [sqrt(1/2), sqrt(2)); ``f = m - 1``, ``s = f / (2 + f)``,
    ``log(m) = 2s + s*(z*P(z))`` with ``z = s*s``; ``log(x) = e*LN2_HI + (e*LN2_LO + log(m))``.
    """
    m, e = np.frexp(x)
    small = m < SQRT_HALF
    m = np.where(small, m + m, m)
    ef = (e - small).astype(np.float64)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    p = np.full_like(z, LOG_COEFFS[-1])
    for c in LOG_COEFFS[-2::-1]:
        np.multiply(p, z, out=p)
        np.add(p, c, out=p)
    np.multiply(z, p, out=p)
    np.multiply(s, p, out=p)
    np.add(s + s, p, out=p)  # log(m)
    return ef * LN2_HI + (ef * LN2_LO + p)


def cossin_2pi(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cos(2*pi*t), sin(2*pi*t))`` for float64 ``t`` in [0, 1) that are multiples of 2**-53.

    ``q = rint(4t)``, ``r = t - q/4`` (exact, in [-1/8, 1/8]), ``a = r * TWO_PI``; the
    Taylor polynomials of sin and cos at ``a`` (|a| <= pi/4), then the quadrant ``q mod 4``.
    """
    q = np.rint(t * 4.0)
    a = t - q * 0.25
    np.multiply(a, TWO_PI, out=a)
    z = a * a
    ps = np.full_like(z, SIN_COEFFS[-1])
    for c in SIN_COEFFS[-2::-1]:
        np.multiply(ps, z, out=ps)
        np.add(ps, c, out=ps)
    pc = np.full_like(z, COS_COEFFS[-1])
    for c in COS_COEFFS[-2::-1]:
        np.multiply(pc, z, out=pc)
        np.add(pc, c, out=pc)
    np.multiply(z, ps, out=ps)
    np.multiply(a, ps, out=ps)
    sin = np.add(a, ps, out=ps)
    np.multiply(z, pc, out=pc)
    cos = np.add(1.0, pc, out=pc)
    k = q.astype(np.int64) & 3
    odd = (k & 1).astype(bool)
    c_out = np.where(odd, sin, cos)
    s_out = np.where(odd, cos, sin)
    np.negative(c_out, out=c_out, where=(k == 1) | (k == 2))
    np.negative(s_out, out=s_out, where=k >= 2)
    return c_out, s_out
