"""CuPy 14.2's complex arithmetic and functions (its vendored thrust/FreeBSD headers), over NumPy.

Part of the CuPy model (``tests/_cupy_quirks.py``). Each function reproduces, element by element,
what ``cupy/_core/include/cupy/complex/*.h`` and ``complex.cuh`` compute where it differs from
NumPy (glibc) on the values the conformance kit draws; elsewhere NumPy's own result stands in
(the two agree up to rounding there). Plain NumPy arrays in and out: the model's wrappers flush
float32/complex64 subnormals around them.

* ``exp`` (``cexp.h``/``cexpf.h``): ``exp(-inf + i y)`` for an infinite or NaN ``y`` is ``0 + 0j``
  (glibc: ``0 + copysign(0, y) j``), measured on the H200 (``exp(-inf-infj)`` gave ``0j``);
* ``expm1``/``log1p`` (``complex.cuh``): ``exp(z) - 1`` and ``log(z + 1)``, the ``1`` a
  ``complex<T>(1, 0)``, so ``log1p(0-0j)`` has imaginary part ``+0`` (``-0 + 0``) and
  ``log1p(-2-0j)`` ``+pi`` (measured: ``0j`` and ``3.14159j``; NumPy ``-0j`` and ``-3.14159j``);
* complex multiplication (``arithmetic.h``): ``(a c - b d, a d + b c)`` compiled with fused
  multiply-adds (NVRTC contracts by default): ``a c - b d`` is ``fma(a, c, -(b d))``, so
  ``(2**512 + ...j)**2`` has a finite real part where NumPy's rounded ``a c`` is ``inf``
  (measured: ``multiply`` of ``1.34e154+9.99e145j`` by itself gave ``1.797e308``); the fused
  multiply-add is modelled exactly (rational arithmetic, one rounding);
* ``pow`` (``cpow.h`` and CuPy's ``complex_power``): ``1`` for a zero exponent, else
  ``exp(log(z) * w)`` with the multiplication and ``exp`` above, so ``0j ** (inf+nanj)`` is NaN
  (NumPy: ``0j``) and ``infj ** (-inf+0j)`` is ``0j`` (NumPy: ``-0j``);
* complex64 ``sinh``/``cosh``/``sin``/``cos`` (``csinhf.h``/``ccoshf.h``): branches chosen on the
  *bits* of the parts, arithmetic flushed: for ``|x| >= 192.7`` and a subnormal ``y`` the result's
  ``sin(y)`` factor is a flushed zero times infinity, NaN (measured: ``sin(1.4e-45+193j)`` gave
  ``nan+infj``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["exp", "expm1", "log1p", "multiply", "power", "trig32"]


def _parts(real: np.ndarray, imag: np.ndarray, dtype: np.dtype) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(np.shape(real), np.shape(imag)), dtype=dtype)
    out.real, out.imag = real, imag
    return out


def exp(z: np.ndarray, log_of: np.ndarray | None = None) -> np.ndarray:
    """thrust's cexp: NumPy's value, except ``(0, 0)`` for ``-inf`` real and a non-finite imaginary part."""
    with np.errstate(all="ignore"):
        out = np.asarray(np.exp(z))
    special = np.isneginf(z.real) & ~np.isfinite(z.imag)
    if special.any():
        out = np.array(out, copy=True)
        out[special] = 0
    return out


def expm1(z: np.ndarray) -> np.ndarray:
    """``exp(z) - complex(1, 0)``: the imaginary part is ``im - 0`` (keeps ``-0``), the real part ``re - 1``."""
    e = exp(z)
    return _parts(e.real - 1, e.imag - 0.0, z.dtype)


def log1p(z: np.ndarray, log: object) -> np.ndarray:
    """``log(z + complex(1, 0))``: the imaginary part of the sum is ``im + 0`` (``-0`` becomes ``+0``)."""
    return log(_parts(z.real + 1, z.imag + 0.0, z.dtype))  # type: ignore[operator]


def _fused(a: np.ndarray, c: np.ndarray, minus: np.ndarray) -> np.ndarray:
    """``fma(a, c, minus)``: the product unrounded, one rounding at the end (exact rational arithmetic).

    Where the product is zero or an operand is not finite, no rounding of the product can differ,
    and NumPy's ``a * c + minus`` is the fused result (signs of zeros included). float32 is
    rounded through float64 (the model rounds twice there; only exact float32 midpoints differ).
    """
    with np.errstate(all="ignore"):
        naive = np.asarray(a * c + minus)
        exact = (np.isfinite(a) & np.isfinite(c) & np.isfinite(minus) & (a != 0) & (c != 0)).reshape(-1)
        if not exact.any():
            return naive
        a, c, minus = (np.broadcast_to(v, naive.shape).reshape(-1) for v in (a, c, minus))
        out = np.array(naive, copy=True).reshape(-1)
        for i in np.flatnonzero(exact):
            value = Fraction(float(a[i])) * Fraction(float(c[i])) + Fraction(float(minus[i]))
            try:
                out[i] = float(value)
            except OverflowError:
                out[i] = math.inf if value > 0 else -math.inf  # (copysign would convert the Fraction: overflow again)
        return out.reshape(naive.shape)


def multiply(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """thrust's ``operator*`` as NVRTC compiles it: ``(fma(a, c, -(b d)), fma(a, d, b c))``."""
    dtype = np.result_type(x, y)  # before asarray: Python scalars are weak
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    a, b = x.real.astype(dtype.type(0).real.dtype), x.imag.astype(dtype.type(0).real.dtype)
    c, d = y.real.astype(a.dtype), y.imag.astype(a.dtype)
    with np.errstate(all="ignore"):
        return _parts(_fused(a, c, -(b * d)), _fused(a, d, b * c), dtype)


def power(z: np.ndarray, w: np.ndarray, log: object) -> np.ndarray:
    """CuPy's ``complex_power``: ``w == 0 ? 1 : exp(log(z) * w)``."""
    dtype = np.result_type(z, w)
    z, w = np.broadcast_arrays(np.asarray(z), np.asarray(w))
    with np.errstate(all="ignore"):
        result = exp(multiply(np.asarray(log(z.astype(dtype))), w.astype(dtype)))  # type: ignore[operator]
    return np.where(w == 0, np.ones((), dtype), result).astype(dtype)


_OVERFLOWING = np.float32(192.7)  # csinhf/ccoshf: 0x4340b1e7, from where exp(|x|) / 2 overflows whatever the scale


def trig32(name: str, z: np.ndarray) -> np.ndarray:
    """complex64 ``sinh``/``cosh``/``sin``/``cos``: csinhf/ccoshf branch on the raw bits, compute flushed.

    ``sin(z)`` is ``-i sinh(i z)`` and ``cos(z)`` is ``cosh(i z)`` in thrust. A subnormal part has
    non-zero bits, so it takes the branch of a non-zero part, whose arithmetic then sees a zero:
    ``|x| >= 192.7`` with a subnormal ``y`` gives ``(h cos y, h h sin y)`` (sinh) or
    ``(h h cos y, h sin y)`` (cosh), ``h`` infinite, so ``inf * sin(0)`` is NaN; a subnormal ``x``
    with an infinite or NaN ``y`` gives ``(y - y, x (y - y))``, NaN twice; an infinite ``x`` with a
    subnormal ``y`` gives ``(x cos y, inf sin y)`` (sinh) or ``(x x cos y, x sin y)`` (cosh).
    Other elements: NumPy's value of the flushed input.
    """
    from _cupy_device import flush

    rotated = name in ("sin", "cos")
    x, y = (-z.imag, z.real) if rotated else (z.real, z.imag)
    tiny = np.float32(np.finfo(np.float32).smallest_normal)

    def subnormal(v: np.ndarray) -> np.ndarray:
        return (v != 0) & (np.abs(v) < tiny)

    big = (np.abs(x) >= _OVERFLOWING) & np.isfinite(x) & subnormal(y)
    tiny_x = subnormal(x) & ~np.isfinite(y)
    inf_x = np.isinf(x) & subnormal(y)
    with np.errstate(all="ignore"):
        out = np.array(getattr(np, name)(flush(z)), copy=True)
        if not (big.any() or tiny_x.any() or inf_x.any()):
            return out
        nan = np.float32(np.nan)
        inf = np.float32(np.inf)
        if name in ("sinh", "sin"):
            real = np.where(big, np.copysign(inf, x), np.where(inf_x, x, nan))
        else:
            real = np.where(tiny_x, nan, inf)
        value = _parts(real, np.full(np.shape(x), nan, np.float32), np.complex64)
        if name == "sin":  # -i sinh(iz): (re, im) -> (im, -re)
            value = _parts(value.imag, -value.real, np.complex64)
        hit = big | tiny_x | inf_x
        out[hit] = value[hit]
    return out
