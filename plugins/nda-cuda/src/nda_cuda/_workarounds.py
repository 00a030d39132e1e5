"""Where CuPy 14.2 differs from NumPy: kernels that give NumPy's results over any NumPy-like module.

Found by nda's conformance kit on an NVIDIA H100 (CuPy 14.2.0, CUDA 13; see the README's
GPU section). Each function below takes the array module ``xp`` and is written only with
functions NumPy and CuPy share, so ``tests/_cuda_numpy_mirror.py`` runs every one of them
over NumPy, against a model of the CuPy behaviour it works around. None of them reads data
back to the host (no hidden sync): the fix-ups are ``where`` selections, computed for every
element, which costs a few extra kernel launches on the (rarely hot) ops concerned.

* **Signed zeros on the way to the device.** CuPy builds a 0-d array (``cupy.array(-0.0)``,
  ``cupy.asarray(numpy.array(-0.0))``) with ``ndarray.fill``, and ``fill`` writes a value that
  compares equal to zero with a memset: ``-0.0`` and complex signed zeros become ``+0``.
  ``cupy.full`` and ``x[key] = -0.0`` go through ``fill`` too. :func:`to_device` copies the
  bytes of a 1-element array instead; :func:`full` and :func:`keep_zero_sign` use it.
* **Overflow near the largest finite value.** CUDA's ``hypot`` rounds results within an ulp
  or two of the largest double up to ``inf`` (``hypot(1.0, 1.797e308)``), and CuPy's complex
  ``abs``, ``log``, ``log10`` and ``log1p`` compute ``hypot`` of the parts. Where a finite
  input gave ``inf``, the result is recomputed from ``t * sqrt(1 + (s/t)**2)`` (``t`` the
  larger magnitude), resp. ``log(t) + log1p((s/t)**2) / 2``, which cannot overflow early.
* **Complex arithmetic.** CuPy's complex division scales by ``|re| + |im|`` of the divisor,
  which gives NaN for a zero or infinite divisor (NumPy: ``inf``/``0``) and other signs of
  zero; ``reciprocal`` and ``log2`` divide that way (``log2(0j)`` is ``-inf+nanj``). ``sign``
  is ``z / abs(z)``, NaN for an infinite part (NumPy: the direction of the infinity).
  ``expm1`` is ``exp(z) - 1`` (NumPy's formula gives ``inf+nanj`` for ``89+0j`` in complex64).
  The functions here use NumPy's own formulas; complex64 division runs in float64 with
  float32's range at each step, since Smith's algorithm has intermediates (``1 / 2**126``)
  that a flushing float32 kernel would zero where NumPy keeps them.
* **Special values of complex functions (the H200, 2026-11-26).** CuPy's ``exp`` (thrust's
  ``cexp``) gives ``0 + 0j`` for ``-inf`` real and an infinite or NaN imaginary part (NumPy:
  ``0 + copysign(0, imag) j``), and ``expm1`` inherits it; ``log1p`` is ``log(z + complex(1, 0))``,
  whose sum turns an imaginary ``-0`` into ``+0`` (``log1p(-2-0j)`` is ``+pi j``, NumPy
  ``-pi j``): :func:`exp` and :func:`log1p` restore NumPy's signs. Complex ``pow`` is
  ``exp(w log z)``: ``0j ** (inf+nanj)`` is NaN where NumPy gives ``0`` for a zero base and a
  positive real exponent (:func:`power`). thrust's complex64 functions choose their branch on
  the *bits* of the parts, then compute with flushed arithmetic, so a subnormal part is neither
  zero nor itself (``sin(1.4e-45+193j)`` is ``nan+infj``): :func:`flushed_complex64` flushes the
  input first, which gives the function of the flushed input, as ``flushes_subnormals`` declares.
  thrust's ``clog`` sends a NaN part to ``log(x*x + y*y)``: ``log(nan+infj)`` is ``nan+nanj``
  where C99 (NumPy) gives ``inf+nanj``, and ``pow`` then turned ``(nan+infj) ** (-1+1j)`` (NumPy:
  ``0j``) into NaN (the H200, 2026-11-28): :func:`log` and :func:`log1p` give ``+inf`` real parts
  wherever a part is infinite.
* **float64 logarithms of negative subnormals** are ``-inf`` (CUDA's ``log`` takes them for
  zeros; NumPy: NaN); float64 is not declared as flushing, and must not flush: :func:`log`,
  :func:`log2`, :func:`log10` give NaN for every negative input.
* **NumPy's scalar fast path of ``pow``.** NumPy computes ``x ** 0.5`` with an exponent broadcast
  from one value as ``sqrt(x)``: ``(-0.0) ** 0.5`` is ``-0.0`` and ``(-inf) ** 0.5`` NaN there,
  ``+0.0`` and ``+inf`` with C's ``pow`` (CuPy); :func:`power` does as NumPy does.
* **Floor division and remainder of floats.** CuPy computes ``floor(a / b)`` and
  ``a - floor(a / b) * b``: ``5e-324 // -1.797e308`` is ``-0.0`` (NumPy: ``-1.0``) and
  ``remainder(0.0, -1.0)`` is ``+0.0`` (NumPy: ``-0.0``). :func:`floor_divide` and
  :func:`remainder` follow NumPy's ``divmod`` (``fmod``, then the Python-convention fix-up).
* **Argument conventions.** ``arange`` with an unsigned dtype and a negative step raises
  ``OverflowError`` (CuPy converts the step to the dtype); ``linspace`` takes ``float()`` of
  complex bounds (``TypeError``); ``isin`` needs arrays on both sides, and sorts its second one by
  thrust's radix order (a NaN with its sign bit set first, hiding what follows: :func:`isin`); ``linalg.eigvals`` of an
  empty matrix has a real dtype; ``linalg.pinv`` of a stack of small matrices uses batched
  Jacobi SVD, whose results differ from LAPACK's by about ``eps * |x|`` even where LAPACK's are
  exact (``pinv([[[0, 1]]])`` has ``-1.8e-16`` for ``0``); matrix by matrix it uses ``gesvd``
  (linear algebra, products and reductions: :mod:`nda_cuda._workarounds_linalg`).

float32 subnormals are not worked around: CuPy compiles every kernel with ``-ftz=true``. The
backend declares that instead (``flushes_subnormals``; see ``nda.backends.contract``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

__all__ = [
    "import_dlpack",
    "to_device",
    "full",
    "keep_zero_sign",
    "hypot",
    "absolute",
    "log",
    "log10",
    "log2",
    "log1p",
    "divide",
    "reciprocal",
    "sign",
    "exp",
    "expm1",
    "power",
    "flushed_complex64",
    "floor_divide",
    "remainder",
    "arange",
    "linspace",
    "isin",
]

Kernel = Callable[..., Any]
_LOG2E = 1.0 / math.log(2.0)
_LOG10E = 1.0 / math.log(10.0)
_LN2 = math.log(2.0)


# --------------------------------------------------------------------------- transfers


def to_device(xp: Any, host: Any) -> Any:
    """``host`` (a NumPy array or scalar) as a new array of ``xp``, bits unchanged.

    CuPy 14.2 fills a new 0-d array with ``ndarray.fill``, whose memset path turns a value
    equal to zero into ``+0`` (``cupy.array(-0.0)`` holds ``0.0``); the bytes of a 1-element
    array are copied as they are, so a 0-d array goes through one.
    """
    host = np.asarray(host)
    if host.ndim == 0:
        return xp.array(host.reshape(1), copy=True).reshape(())
    return xp.array(host, copy=True)


def import_dlpack(xp: Any, obj: Any) -> Any:
    """``xp.from_dlpack(obj)``, zero-copy; a capsule whose memory is not CUDA memory is a ``BufferError``.

    CuPy 14.2 checks the device type inside the DLPack capsule, not the producer's
    ``__dlpack_device__``: a producer that says kDLCUDA but hands over host memory gets
    ``RuntimeError: CuPy is built against CUDA, different from the backend that backs the
    incoming DLPack tensor``. The standard's ``from_dlpack`` raises ``BufferError`` when the data
    cannot be imported; the producer's word and CuPy's are both in the message.
    """
    try:
        return xp.from_dlpack(obj)
    except RuntimeError as err:
        if "different from the backend" not in str(err):
            raise
        kind, index = obj.__dlpack_device__()
        raise BufferError(
            f"from_dlpack(): {type(obj).__name__}.__dlpack_device__() says ({int(kind)}, {int(index)}) (CUDA memory), but the "
            f"DLPack capsule it hands over holds memory of another device type; CuPy refuses it ({err})"
        ) from None


def _signed_zero(value: Any) -> bool:
    """Whether a scalar is a zero with a sign bit set somewhere (``-0.0``, ``complex(0, -0.0)``)."""
    if value.__class__ is float:
        return value == 0 and math.copysign(1.0, value) < 0
    if value.__class__ is complex:
        return value == 0 and (math.copysign(1.0, value.real) < 0 or math.copysign(1.0, value.imag) < 0)
    v = np.asarray(value)
    return v.dtype.kind in "fc" and v.size == 1 and bool(v == 0) and bool(np.signbit(np.real(v)) or np.signbit(np.imag(v)))


def full(xp: Any) -> Kernel:
    """``full``/``full_like``: CuPy 14.2 fills with a memset when the value equals zero (loses ``-0.0``)."""

    def full(shape: Any, fill_value: Any, dtype: Any, device: Any = None) -> Any:
        if not _signed_zero(fill_value):
            return xp.full(shape, fill_value, dtype=dtype)
        out = xp.empty(shape, dtype=dtype)
        out[...] = to_device(xp, np.asarray(fill_value, dtype=dtype))  # a copy kernel: bits kept
        return out

    return full


def keep_zero_sign(xp: Any, setitem: Kernel) -> Kernel:
    """``setitem`` whose Python-scalar zero values keep their sign: CuPy 14.2 assigns a scalar with
    ``fill`` (a memset for zero) or through a 0-d array built the same way."""

    def kernel(x: Any, key: Any, value: Any) -> Any:
        if value.__class__ in (float, complex) and _signed_zero(value):
            value = to_device(xp, np.asarray(value, dtype=x.dtype))
        return setitem(x, key, value)

    kernel.__name__ = getattr(setitem, "__name__", "setitem")
    return kernel


def _pair(xp: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """Both operands as arrays (a Python scalar takes the other operand's dtype, as in NumPy's rules)."""
    if not hasattr(x1, "dtype"):
        x1 = to_device(xp, np.asarray(x1, dtype=x2.dtype))
    elif not hasattr(x2, "dtype"):
        x2 = to_device(xp, np.asarray(x2, dtype=x1.dtype))
    return x1, x2


def _complex(xp: Any, real: Any, imag: Any, dtype: Any) -> Any:
    """A complex array from its parts (assigned part by part: no arithmetic that could touch a sign)."""
    out = xp.empty(np.broadcast_shapes(real.shape, imag.shape), dtype=dtype)
    out.real[...] = real
    out.imag[...] = imag
    return out


# --------------------------------------------------------------------------- overflow of |z|


def _magnitude(xp: Any, a: Any, b: Any) -> Any:
    """``hypot(a, b)`` as ``t * sqrt(1 + (s/t)**2)``: no overflow unless the result overflows."""
    a, b = xp.abs(a), xp.abs(b)
    t, s = xp.maximum(a, b), xp.minimum(a, b)
    q = s / xp.where(t == 0, 1, t)
    return t * xp.sqrt(1 + q * q)


def _log_magnitude(xp: Any, a: Any, b: Any) -> Any:
    """``log(hypot(a, b))`` as ``log(t) + log1p((s/t)**2) / 2``: finite for every finite non-zero pair."""
    a, b = xp.abs(a), xp.abs(b)
    t, s = xp.maximum(a, b), xp.minimum(a, b)
    q = s / xp.where(t == 0, 1, t)
    return xp.log(t) + xp.log1p(q * q) * 0.5


def hypot(xp: Any) -> Kernel:
    """CuPy 14.2 (CUDA's ``hypot``): ``hypot(1.0, 1.797e308)`` is ``inf``; NumPy gives the finite value."""
    native = xp.hypot

    def hypot(x1: Any, x2: Any) -> Any:
        a, b = _pair(xp, x1, x2)
        result = native(a, b)
        if result.dtype.kind != "f":
            return result
        early = xp.isinf(result) & xp.isfinite(a) & xp.isfinite(b)
        return xp.where(early, _magnitude(xp, a, b), result).astype(result.dtype, copy=False)

    return hypot


def absolute(xp: Any) -> Kernel:
    """CuPy 14.2: complex ``abs`` is ``hypot`` of the parts, ``inf`` for ``1.797e308 - 1j``."""
    native = xp.absolute

    def absolute(x: Any) -> Any:
        if x.dtype.kind != "c":
            return native(x)
        result = native(x)
        early = xp.isinf(result) & xp.isfinite(x)
        return xp.where(early, _magnitude(xp, x.real, x.imag), result).astype(result.dtype, copy=False)

    return absolute


def _fix_log(xp: Any, result: Any, z: Any, scale: float) -> Any:
    """``result`` (a complex logarithm of ``z`` times ``scale``) with the real parts that overflowed early
    recomputed, and ``+inf`` wherever a part of ``z`` is infinite (C99: ``log(nan+infj)`` is ``inf+nanj``;
    thrust's ``clog`` takes ``log(x*x + y*y)`` once a part is NaN: ``nan+nanj``)."""
    early = xp.isinf(result.real) & xp.isfinite(z) & (z != 0)
    real = xp.where(early, _log_magnitude(xp, z.real, z.imag) * scale, result.real)
    real = xp.where(xp.isinf(z.real) | xp.isinf(z.imag), math.inf, real)
    return _complex(xp, real, result.imag, result.dtype)


def _real_log(xp: Any, native: Kernel, x: Any) -> Any:
    """``native(x)`` for real ``x``; float64 negative input gives NaN (CuPy 14.2: ``-inf`` for a negative subnormal)."""
    result = native(x)
    if x.dtype == np.float64:
        return xp.where(x < 0, xp.nan, result)
    return result


def log(xp: Any) -> Kernel:
    """CuPy 14.2: complex ``log`` of ``1.797e308 - 1j`` has an infinite real part (``log(hypot(...))``);
    float64 ``log(-5e-324)`` is ``-inf``."""
    native = xp.log

    def log(x: Any) -> Any:
        if x.dtype.kind != "c":
            return _real_log(xp, native, x)
        return _fix_log(xp, native(x), x, 1.0)

    return log


def _scaled_log(xp: Any, native: Kernel, factor: float) -> Kernel:
    """Complex ``log_b(z)`` as NumPy computes it: ``log(z)`` (fixed as for ``log``) times ``factor``
    part by part; real input keeps CuPy's own kernel."""

    def scaled(x: Any) -> Any:
        if x.dtype.kind != "c":
            return _real_log(xp, native, x)
        natural = _fix_log(xp, xp.log(x), x, 1.0)
        return _complex(xp, natural.real * factor, natural.imag * factor, natural.dtype)

    scaled.__name__ = scaled.__qualname__ = native.__name__
    return scaled


def log10(xp: Any) -> Kernel:
    """CuPy 14.2: complex ``log10`` is ``log(z) / ln(10)``, overflowing like ``log``; NumPy scales ``log(z)`` part by part."""
    return _scaled_log(xp, xp.log10, _LOG10E)


def log2(xp: Any) -> Kernel:
    """CuPy 14.2: complex ``log2`` divides ``log(z)`` by ``ln 2`` as a complex number: ``log2(0j)`` is
    ``-inf+nanj`` (NumPy: ``-inf+0j``, each part times ``log2(e)``)."""
    return _scaled_log(xp, xp.log2, _LOG2E)


def log1p(xp: Any) -> Kernel:
    """CuPy 14.2: complex ``log1p`` is ``log(z + complex(1, 0))``, overflowing like ``log`` (``log1p(1.797e308j)``)
    and losing the sign of a zero imaginary part (``log1p(-2-0j)`` is ``+pi j``; NumPy's is
    ``atan2(imag, 1 + real)``: the sign of ``imag``)."""
    native = xp.log1p

    def log1p(x: Any) -> Any:
        result = native(x)
        if x.dtype.kind != "c":
            return result
        # NumPy: log(hypot(1 + re, im)), inf only where that hypot overflows; so log of the
        # overflow-free magnitude (not _log_magnitude, finite for every finite input).
        w_real = x.real + 1
        early = xp.isinf(result.real) & xp.isfinite(w_real) & xp.isfinite(x.imag)
        real = xp.where(early, xp.log(_magnitude(xp, w_real, x.imag)), result.real)
        real = xp.where(xp.isinf(w_real) | xp.isinf(x.imag), math.inf, real)  # thrust's clog: NaN for nan+infj
        imag = xp.where(x.imag == 0, xp.copysign(result.imag, x.imag), result.imag)
        return _complex(xp, real, imag, result.dtype)

    return log1p


# --------------------------------------------------------------------------- complex arithmetic

#: float32's range, in float64: magnitudes from here round to inf; the subnormals' spacing.
_OVER = float(2.0**128 - 2.0**103)
_SUB = float(2.0**-149)


def _rounding(xp: Any, dtype: Any) -> Callable[[Any], Any]:
    """For complex64 work done in float64: each intermediate rounded as float32 arithmetic (NumPy's)
    rounds it (to 24 bits, to the subnormals' spacing ``2**-149``, to inf beyond the largest
    float32), but never flushed as a float32 kernel on a GPU flushes it (``1 / 2**126`` is
    subnormal in float32). The signs of zeros of cancellations then come out as NumPy's.
    For complex128: nothing to do."""
    if np.dtype(dtype) != np.complex64:
        return lambda v: v

    def single(v: Any) -> Any:
        c = v * 536870913.0  # 2**29 + 1: Veltkamp's split keeps the top 24 bits of v, rounded
        v = xp.where(xp.isfinite(c), c - (c - v), v)
        q = xp.rint(v * (1 / _SUB)) * _SUB  # exact scalings; a no-op above 2**-97
        return xp.where(xp.abs(q) >= _OVER, q * xp.inf, q)

    return single


def divide(xp: Any) -> Kernel:
    """Complex division by NumPy's algorithm (Smith's, with NumPy's rule for a zero divisor).

    CuPy 14.2 scales by ``|c| + |d|`` of the divisor: ``(1+1j) / 0j`` and ``(1+1j) / (inf+0j)``
    are NaN there, ``inf+infj`` and ``0`` in NumPy. complex64 is computed in float64 with
    float32's range (see :func:`_rounding`). Real division is CuPy's own.
    """
    native = xp.divide

    def divide(x1: Any, x2: Any) -> Any:
        a, b = _pair(xp, x1, x2)
        if a.dtype.kind != "c":
            return native(x1, x2)
        r = _rounding(xp, a.dtype)
        ar, ai, br, bi = (p.astype(np.float64) for p in (a.real, a.imag, b.real, b.imag))
        abs_r, abs_i = xp.abs(br), xp.abs(bi)
        by_real = abs_r >= abs_i
        zero = (abs_r == 0) & (abs_i == 0)
        rat = r(xp.where(by_real, bi / xp.where(zero, 1, br), br / xp.where(by_real, 1, bi)))
        scl = r(1.0 / r(xp.where(by_real, br + r(bi * rat), bi + r(br * rat))))
        real = xp.where(by_real, r(r(ar + r(ai * rat)) * scl), r(r(r(ar * rat) + ai) * scl))
        imag = xp.where(by_real, r(r(ai - r(ar * rat)) * scl), r(r(r(ai * rat) - ar) * scl))
        real = xp.where(zero, ar / abs_r, real)
        imag = xp.where(zero, ai / abs_r, imag)
        return _complex(xp, real, imag, a.dtype)

    return divide


def reciprocal(xp: Any) -> Kernel:
    """Complex ``1/z`` by NumPy's algorithm: CuPy 14.2 gives ``1+0j`` for ``1+0j`` (NumPy: ``1-0j``);
    complex64 as in :func:`divide`."""
    native = xp.reciprocal

    def reciprocal(x: Any) -> Any:
        if x.dtype.kind != "c":
            return native(x)
        round_ = _rounding(xp, x.dtype)
        re, im = x.real.astype(np.float64), x.imag.astype(np.float64)
        by_real = xp.abs(im) <= xp.abs(re)
        rat = round_(xp.where(by_real, im / re, re / im))
        d = round_(xp.where(by_real, re + round_(im * rat), round_(re * rat) + im))
        real = xp.where(by_real, round_(1 / d), round_(rat / d))
        imag = xp.where(by_real, round_(-rat / d), round_(-1 / d))
        return _complex(xp, real, imag, x.dtype)

    return reciprocal


def sign(xp: Any) -> Kernel:
    """Complex ``sign`` by NumPy's rules: CuPy 14.2 computes ``z / abs(z)``, NaN for ``1+infj`` (NumPy: ``1j``)."""
    native = xp.sign
    magnitude = absolute(xp)

    def sign(x: Any) -> Any:
        if x.dtype.kind != "c":
            return native(x)
        r, i = x.real, x.imag
        m = magnitude(x)  # NumPy: hypot(r, i), inf when it overflows
        nan, big = xp.isnan(m), xp.isinf(m)
        inf_r, inf_i = xp.isinf(r), xp.isinf(i)
        unit = xp.where(m == 0, 1, m)
        # |z| infinite: an infinite real part gives (+-1, 0) (NaN if both are), otherwise (0, +-1).
        real = xp.where(big, xp.where(inf_r, xp.where(inf_i, xp.nan, xp.where(r > 0, 1.0, -1.0)), 0.0), xp.where(m == 0, 0.0, r / unit))
        imag = xp.where(big, xp.where(inf_r, xp.where(inf_i, xp.nan, 0.0), xp.where(i > 0, 1.0, -1.0)), xp.where(m == 0, 0.0, i / unit))
        return _complex(xp, xp.where(nan, xp.nan, real), xp.where(nan, xp.nan, imag), x.dtype)

    return sign


def exp(xp: Any) -> Kernel:
    """Complex ``exp`` with NumPy's ``exp(-inf + i y) = 0 + copysign(0, y) j`` for an infinite or NaN ``y``
    (CuPy 14.2, thrust's ``cexp``: ``0 + 0j``); complex64 input flushed first (:func:`flushed_complex64`)."""
    native = xp.exp

    def exp(x: Any) -> Any:
        if x.dtype.kind != "c":
            return native(x)
        x = _flush_parts(xp, x)
        result = native(x)
        special = xp.isneginf(x.real) & ~xp.isfinite(x.imag)
        return _complex(xp, xp.where(special, 0, result.real), xp.where(special, xp.copysign(0, x.imag), result.imag), result.dtype)

    return exp


def expm1(xp: Any, standard: Kernel) -> Kernel:
    """Complex ``expm1`` by NumPy's formula (``expm1(a) cos(b) - 2 sin(b/2)^2 + i exp(a) sin(b)``) where
    ``z`` is finite, then ``standard`` (nda's special cases for non-finite and zero input).

    CuPy 14.2 computes ``exp(z) - 1``: ``expm1(89+0j)`` in complex64 is ``inf+0j`` there,
    ``inf+nanj`` in NumPy (``inf * sin(0)``), which nda's reference is.
    """
    native = xp.expm1
    fixed_exp = exp(xp)

    class _Module:  # ``standard`` reads ``expm1`` and ``exp`` from its module: NumPy's formula, the fixed exp
        def __getattr__(self, name: str) -> Any:
            return numpy_formula if name == "expm1" else fixed_exp if name == "exp" else getattr(xp, name)

    def numpy_formula(x: Any, out: Any = None) -> Any:
        if x.dtype.kind != "c":
            return native(x) if out is None else native(x, out=out)
        r, i = x.real, x.imag
        half = xp.sin(i * 0.5)
        result = _complex(xp, native(r) * xp.cos(i) - 2 * half * half, xp.exp(r) * xp.sin(i), x.dtype)
        if out is not None:
            out[...] = result
            return out
        return result

    return standard(_Module())


def power(xp: Any, integer_pow: Kernel) -> Kernel:
    """``pow`` with NumPy's results (:mod:`nda_cuda._power`): the ``sqrt`` fast path of real floats,
    NumPy's ``nc_pow`` for complex numbers; integer operands go to ``integer_pow``."""
    from ._power import power as numpy_power

    return numpy_power(xp, integer_pow, _complex, _pair, exp(xp), log(xp), divide(xp), _rounding)


def _flush_parts(xp: Any, x: Any) -> Any:
    """A complex64 array with its subnormal parts flushed to signed zeros: ``* 1`` in a flushing
    float32 kernel (exact for every other value, ``-0.0`` and NaN included; over NumPy, which
    does not flush, the identity); other dtypes as they are."""
    if x.dtype.char != "F":  # not complex64 (a character compare: this runs on every call of the op)
        return x
    return _complex(xp, x.real * 1, x.imag * 1, x.dtype)


def flushed_complex64(xp: Any, kernel: Kernel) -> Kernel:
    """``kernel`` of complex64 input applied to the input with its subnormal parts flushed.

    CuPy 14.2's complex64 functions (thrust's ``csinhf``, ``ccoshf``, ``ctanhf``, ``cexpf``, from
    FreeBSD's msun) test the bits of the parts to choose a branch, then compute with flushing
    arithmetic: ``sin(1.4e-45+193j)`` takes the branch of a non-zero real part and computes
    ``inf * sin(0)``, NaN (NumPy on the flushed input: ``0+infj``). Flushing first gives the
    function of the flushed input, which is what the backend declares (``flushes_subnormals``).
    """

    def flushed(x: Any) -> Any:
        return kernel(_flush_parts(xp, x))

    flushed.__name__ = getattr(kernel, "__name__", "flushed")
    return flushed


# --------------------------------------------------------------------------- floor division


def _divmod(xp: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """NumPy's float ``divmod`` (``npy_divmod``) element by element: (floor quotient, remainder)."""
    mod = xp.fmod(a, b)
    div = (a - mod) / b
    adjust = (mod != 0) & ((b < 0) != (mod < 0))
    mod = xp.where(adjust, mod + b, xp.where(mod != 0, mod, xp.copysign(0, b)))
    div = xp.where(adjust, div - 1, div)
    floor = xp.floor(div)
    floor = xp.where(div - floor > 0.5, floor + 1, floor)
    floor = xp.where(div != 0, floor, xp.copysign(0, a / b))
    zero = b == 0
    return xp.where(zero, a / b, floor), xp.where(zero, xp.fmod(a, b), mod)


def floor_divide(xp: Any) -> Kernel:
    """Float floor division as NumPy computes it, with the standard's results for one infinite operand.

    CuPy 14.2 computes ``floor(a / b)``: ``5e-324 // -1.797e308`` is ``-0.0`` (the quotient
    underflows), NumPy gives ``-1.0``. Integers use CuPy's own kernel.
    """
    native = xp.floor_divide

    def floor_divide(x1: Any, x2: Any) -> Any:
        a, b = _pair(xp, x1, x2)
        if a.dtype.kind != "f":
            return native(x1, x2)
        quotient, _ = _divmod(xp, a, b)
        special = (xp.isinf(a) != xp.isinf(b)) & ~xp.isnan(a) & ~xp.isnan(b) & (b != 0)
        return xp.where(special, a / b, quotient).astype(a.dtype, copy=False)

    return floor_divide


def remainder(xp: Any) -> Kernel:
    """Float remainder as NumPy computes it: CuPy 14.2's ``a - floor(a / b) * b`` gives ``+0.0`` for
    ``remainder(0.0, -1.0)`` (NumPy: ``-0.0``, the divisor's sign)."""
    native = xp.remainder

    def remainder(x1: Any, x2: Any) -> Any:
        a, b = _pair(xp, x1, x2)
        if a.dtype.kind != "f":
            return native(x1, x2)
        return _divmod(xp, a, b)[1].astype(a.dtype, copy=False)

    return remainder


# --------------------------------------------------------------------------- creation, sets, linalg


def arange(xp: Any) -> Kernel:
    """CuPy 14.2 converts ``step`` to the dtype first: ``arange(1, 0, -1, dtype=uint8)`` raises OverflowError."""

    def arange(start: Any, stop: Any, step: Any, dtype: Any, device: Any = None) -> Any:
        dt = np.dtype(dtype)
        if dt.kind != "u" or step >= 0:
            return xp.arange(start, stop, step, dtype=dt)
        count = len(range(start, stop, step))
        first, stride = dt.type(start), dt.type(-step)  # OverflowError for a start out of range, as NumPy
        return first - xp.arange(count, dtype=dt) * stride

    return arange


def linspace(xp: Any) -> Kernel:
    """CuPy 14.2 takes ``float()`` of the bounds: complex bounds raise TypeError. Complex results are
    built from the real and imaginary parts' ``linspace`` in float64."""

    def linspace(start: Any, stop: Any, num: Any, dtype: Any, device: Any = None, endpoint: bool = True) -> Any:
        dt = np.dtype(dtype)
        if dt.kind != "c":
            return xp.linspace(start, stop, num, endpoint=endpoint, dtype=dt)
        s, e = complex(start), complex(stop)
        real = xp.linspace(s.real, e.real, num, endpoint=endpoint, dtype=np.float64)
        imag = xp.linspace(s.imag, e.imag, num, endpoint=endpoint, dtype=np.float64)
        return _complex(xp, real, imag, dt)

    return linspace


def isin(xp: Any) -> Kernel:
    """CuPy 14.2's ``isin`` needs arrays (``x2.ravel()``): Python scalars become 0-d arrays first.

    It sorts ``x2`` and binary-searches each element of ``x1`` in it assuming NaNs last; the sort of
    1-d floats is thrust's radix sort, which puts a NaN with its sign bit set first, and such a NaN
    then hides the values after it (the H200: ``isin(0.0, [-nan, 0.0])`` is False). A float ``x2``'s
    NaNs are made positive first (they never match anything either way)."""

    def isin(x1: Any, x2: Any, invert: bool = False) -> Any:
        a, b = _pair(xp, x1, x2)
        if b.dtype.kind == "f":
            b = xp.where(xp.isnan(b), math.nan, b)
        return xp.isin(a, b, invert=invert)

    return isin
