"""NumPy's ``pow`` over any NumPy-like module: where CuPy 14.2's ``power`` gives other results.

Part of nda-cuda's workarounds (:mod:`nda_cuda._workarounds`; the same rules: written with
functions NumPy and CuPy share, tested over the model of CuPy in ``tests/_cupy_quirks.py``).

* **Real floats.** NumPy's float ``power`` loop computes an exponent broadcast from one value
  (a Python scalar, a 0-d array, a one-element array against a larger base) that equals ``0.5``
  as ``sqrt``: ``(-0.0) ** 0.5`` is ``-0.0`` and ``(-inf) ** 0.5`` NaN there, ``+0.0`` and
  ``+inf`` with C's ``pow``, which CuPy calls (the H200: ``pow(-0.0, 0.5)``).
* **Complex.** CuPy computes ``1`` for a zero exponent and ``exp(log(z) * w)`` otherwise, with
  thrust's plain complex product. NumPy (``nc_pow``) gives ``1`` for a zero exponent; for a zero
  base ``0`` if the exponent's real part is positive and NaN otherwise (CuPy: NaN for
  ``0j ** (inf+nanj)``, the H200); for an integral real exponent below 100 in magnitude, repeated
  complex multiplication (``z * z``, ``(z * z) * z``, binary powers, ``1 / z**n`` for ``n < 0``),
  whose special values differ from ``exp(n log z)`` (``(inf+1j)**2`` is ``inf+infj``, not
  ``inf+0j``); otherwise C's ``cpow``, ``exp(w * log(z))`` with C99's multiplication, which
  recovers the infinities of a NaN + NaN j product (``1j ** (nan+infj)``: NumPy ``0``, CuPy NaN).
  :func:`power` computes all of these, each with element-wise selections (no data read back),
  on the rarely hot complex ``pow``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

__all__ = ["power"]

Kernel = Callable[..., Any]


def power(
    xp: Any,
    integer_pow: Kernel,
    complex_parts: Callable[..., Any],
    pair: Callable[..., Any],
    exp: Kernel,
    log: Kernel,
    divide: Kernel,
    rounding: Callable[..., Any],
) -> Kernel:
    """``pow`` with NumPy's results (see the module docstring); integer operands go to ``integer_pow``.

    ``complex_parts(xp, real, imag, dtype)`` builds a complex array from its parts; ``pair`` makes
    both operands arrays; ``exp``, ``log`` and ``divide`` are the fixed complex kernels of
    :mod:`nda_cuda._workarounds` (NumPy's special values of ``exp``/``log``, Smith's division);
    ``rounding(xp, dtype)`` rounds float64 values as float32 arithmetic would, without flushing.

    complex64 is computed in float64 with every intermediate rounded to float32's precision and
    range (``rounding``): a flushing float32 kernel would zero subnormal intermediates (the
    imaginary part of ``log(3.4e38 - 1j)`` is ``-2.9e-39``) that NumPy's ``cpowf`` keeps and that
    decide ``inf - inf`` or ``inf * 0`` in the product ``w * log(z)``, and plain float64 would not
    overflow where float32 does (``1j ** (3.4e38 - 1j)`` is NaN in NumPy).
    """
    native = xp.power
    sqrt = xp.sqrt
    inf, nan = math.inf, math.nan

    def cmul(x: Any, y: Any, r: Callable[[Any], Any]) -> Any:
        """NumPy's ``cmul``: ``(a c - b d, a d + b c)``, each product rounded (separate kernels: no fusing)."""
        re = r(r(x.real * y.real) - r(x.imag * y.imag))
        im = r(r(x.real * y.imag) + r(x.imag * y.real))
        return complex_parts(xp, re, im, x.dtype)

    def c99_mul(x: Any, y: Any, r: Callable[[Any], Any]) -> Any:
        """C99's complex product (Annex G, GCC's ``__muldc3``): a NaN + NaN j result of infinite factors recomputed."""
        a, b, c, d = x.real, x.imag, y.real, y.imag
        ac, bd, ad, bc = r(a * c), r(b * d), r(a * d), r(b * c)
        re, im = r(ac - bd), r(ad + bc)
        both_nan = xp.isnan(re) & xp.isnan(im)

        def box(v: Any, where: Any) -> Any:  # an infinity as +-1, a finite part as +-0
            return xp.where(where, xp.copysign(xp.where(xp.isinf(v), 1.0, 0.0), v), v)

        def zero_nan(v: Any, where: Any) -> Any:
            return xp.where(where & xp.isnan(v), xp.copysign(0.0, v), v)

        inf_x = xp.isinf(a) | xp.isinf(b)
        a, b, c, d = box(a, inf_x), box(b, inf_x), zero_nan(c, inf_x), zero_nan(d, inf_x)
        inf_y = xp.isinf(c) | xp.isinf(d)
        c, d, a, b = box(c, inf_y), box(d, inf_y), zero_nan(a, inf_y), zero_nan(b, inf_y)
        overflow = ~inf_x & ~inf_y & (xp.isinf(ac) | xp.isinf(bd) | xp.isinf(ad) | xp.isinf(bc))
        a, b, c, d = (zero_nan(v, overflow) for v in (a, b, c, d))
        redo = both_nan & (inf_x | inf_y | overflow)
        re = xp.where(redo, inf * (a * c - b * d), re)
        im = xp.where(redo, inf * (a * d + b * c), im)
        return complex_parts(xp, re, im, x.dtype)

    def integral(z: Any, n: Any, r: Callable[[Any], Any]) -> Any:
        """``z ** n`` for integral ``n``, ``|n| < 100``, by NumPy's repeated multiplication (element-wise ``n``)."""
        one = xp.ones(z.shape, dtype=z.dtype)
        square = cmul(z, z, r)
        by_bits = one
        p = z
        m = xp.abs(n).astype(xp.int64)
        for bit in range(7):  # |n| < 100 < 2**7
            use = ((m >> bit) & 1) == 1
            by_bits = xp.where(use, cmul(by_bits, p, r), by_bits)
            p = xp.where(m >= (2 << bit), cmul(p, p, r), p)  # NumPy stops squaring once the mask passes |n|
        by_bits = xp.where(n < 0, divide(one, by_bits), by_bits)
        result = xp.where(n == 3, cmul(square, z, r), by_bits)
        result = xp.where(n == 2, square, result)
        return xp.where(n == 1, z, result)

    def complex_power(x1: Any, x2: Any) -> Any:
        z, w = pair(xp, x1, x2)
        dtype = xp.result_type(z, w)
        single = dtype == xp.complex64
        work = xp.complex128 if single else dtype
        r = rounding(xp, xp.complex64) if single else (lambda v: v)
        z, w = xp.broadcast_arrays(z.astype(work), w.astype(work))
        lz = log(z)
        lz = complex_parts(xp, r(lz.real), r(lz.imag), work)
        product = c99_mul(w, lz, r)
        general = exp(product.astype(dtype))
        n = w.real
        small = (w.imag == 0) & (n == xp.floor(n)) & (xp.abs(n) < 100)
        powers = integral(z, xp.where(small, n, 0), r).astype(dtype, copy=False)
        result = xp.where(small, powers, general)
        zero_base = xp.where(w.real > 0, 0, complex(nan, nan)).astype(dtype)
        result = xp.where(z == 0, zero_base, result)
        return xp.where(w == 0, xp.ones((), dtype=dtype), result).astype(dtype, copy=False)

    def power(x1: Any, x2: Any) -> Any:
        kind = (x1 if hasattr(x1, "dtype") else x2).dtype.kind
        if kind == "f":
            if x2.__class__ in (float, int):
                return sqrt(x1) if x2 == 0.5 and hasattr(x1, "dtype") else native(x1, x2)
            if hasattr(x1, "dtype") and x2.size == 1 and (x2.ndim == 0 or x1.size > 1):
                return xp.where(x2 == 0.5, sqrt(x1), native(x1, x2))
            return native(x1, x2)
        if kind == "c":
            return complex_power(x1, x2)
        return integer_pow(x1, x2)

    return power
