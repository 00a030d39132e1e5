"""CUDA C source of nda-cuda's own element-wise kernels (the generator's text; no CuPy here).

Issue 28: CuPy's ufuncs reach about 55-60% of an H200's copy bandwidth; a plain kernel with
16-byte loads and a grid-stride loop reaches PyTorch's speed. This module writes such kernels
for nda's element-wise ops, as text, from three parts:

* :data:`PREAMBLE`: types and helpers shared by every kernel (``nda_c64``, the aligned vector
  ``nda_vec<T, N>``, bit casts, ``nda_isnan``/``nda_isinf``/``nda_isfinite``/``nda_signbit``,
  a ``hypot`` that does not overflow early);
* one C function per ``(op, dtype)`` (:data:`UNARY`, :data:`BINARY`, :func:`cast_function`),
  written to give **NumPy's** result bit for bit where NumPy's is exact, special values,
  signed zeros, integer wrap-around and NaN handling included (NumPy's algorithms are
  ported where NumPy computes in several steps: ``divmod``, complex division and
  reciprocal, ``logaddexp``; ``maximum``/``minimum`` return the second operand on ties, as
  NumPy's loops do, and propagate NaN); the transcendental functions are CUDA's, the
  ones CuPy calls, with a guard where CUDA's differ from NumPy's (``log`` of a negative
  subnormal);
* the kernel (:func:`kernel_source`) for a :class:`Program` (per-element C code over operands
  ``v0, v1, ...`` assigning results ``r0, ...``) and a :class:`Pattern`: the operands'
  modes (``c`` contiguous with the output's shape, ``s`` one element broadcast, ``b``
  broadcast from a C-contiguous array by strides, ``k`` a scalar kernel argument), the
  vector width (elements per 16-byte access; the kernel's ``aligned`` argument chooses, per
  call, between the vector loop and the scalar loop), the unroll (vectors in flight per
  thread) and the index width (32-bit below 2**30 elements).

The same text compiles for the GPU (NVRTC, through CuPy) and, with ``NDA_HOST_EMULATION``,
as host C++: every kernel is a body ``nda_body_<name>(tid, nthreads, ...)`` with a
grid-stride loop, and the host entry runs it for every thread id in turn, which is exact for
element-wise kernels (no thread reads what another writes). ``tests/test_cuda_elementwise.py``
compiles the generated kernels that way and compares them with NumPy on any machine.

Layer: backend plugin (nda-cuda).
"""

from __future__ import annotations

import hashlib
from typing import Iterable

import numpy as np

__all__ = [
    "DTYPES",
    "CTYPE",
    "STORAGE",
    "PREAMBLE",
    "UNARY",
    "BINARY",
    "IEEE32",
    "Program",
    "Pattern",
    "op_program",
    "where_program",
    "cast_program",
    "cast_function",
    "op_function",
    "kernel_source",
    "module_source",
    "serves",
]

#: dtypes the generator serves (NumPy names).
DTYPES = ("bool", "int32", "int64", "float32", "float64", "complex64")
#: the C type a value is computed in.
CTYPE = {"bool": "bool", "int32": "int", "int64": "long long", "float32": "float", "float64": "double", "complex64": "nda_c64"}
#: the C type of the memory it is stored in (bool as one byte 0 or 1, NumPy's and CuPy's layout).
STORAGE = {**CTYPE, "bool": "unsigned char"}
_UNSIGNED = {"int32": "unsigned int", "int64": "unsigned long long"}
_CLASS = {"bool": "b", "int32": "i", "int64": "i", "float32": "f", "float64": "f", "complex64": "c"}
_SUFFIX = {"float32": "f", "float64": ""}
_ITEMSIZE = {"bool": 1, "int32": 4, "int64": 8, "float32": 4, "float64": 8, "complex64": 8}

PREAMBLE = r"""
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define NDA_DEVICE 1
#define NDA_HD static __device__ __forceinline__
#else
#define NDA_DEVICE 0
#include <math.h>
#include <string.h>
#define NDA_HD static inline
#endif

struct alignas(8) nda_c64 { float re; float im; };
template <typename T, int N> struct alignas(sizeof(T) * N) nda_vec { T v[N]; };

NDA_HD float nda_f32(unsigned int u) {
#if NDA_DEVICE
  return __uint_as_float(u);
#else
  float f; memcpy(&f, &u, 4); return f;
#endif
}
NDA_HD unsigned int nda_bits(float f) {
#if NDA_DEVICE
  return __float_as_uint(f);
#else
  unsigned int u; memcpy(&u, &f, 4); return u;
#endif
}
NDA_HD double nda_f64(unsigned long long u) {
#if NDA_DEVICE
  return __longlong_as_double((long long)u);
#else
  double d; memcpy(&d, &u, 8); return d;
#endif
}
NDA_HD unsigned long long nda_bits(double d) {
#if NDA_DEVICE
  return (unsigned long long)__double_as_longlong(d);
#else
  unsigned long long u; memcpy(&u, &d, 8); return u;
#endif
}
NDA_HD float nda_nan(float) { return nda_f32(0x7fc00000u); }
NDA_HD double nda_nan(double) { return nda_f64(0x7ff8000000000000ull); }
NDA_HD float nda_inf(float) { return nda_f32(0x7f800000u); }
NDA_HD double nda_inf(double) { return nda_f64(0x7ff0000000000000ull); }
NDA_HD bool nda_isnan(float x) { return (nda_bits(x) & 0x7fffffffu) > 0x7f800000u; }
NDA_HD bool nda_isnan(double x) { return (nda_bits(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
NDA_HD bool nda_isinf(float x) { return (nda_bits(x) & 0x7fffffffu) == 0x7f800000u; }
NDA_HD bool nda_isinf(double x) { return (nda_bits(x) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull; }
NDA_HD bool nda_isfinite(float x) { return (nda_bits(x) & 0x7f800000u) != 0x7f800000u; }
NDA_HD bool nda_isfinite(double x) { return (nda_bits(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }
NDA_HD bool nda_signbit(float x) { return (nda_bits(x) >> 31) != 0u; }
NDA_HD bool nda_signbit(double x) { return (nda_bits(x) >> 63) != 0ull; }
NDA_HD nda_c64 nda_c64_of(float re, float im) { nda_c64 z; z.re = re; z.im = im; return z; }
/* hypot in float32 through float64 (products exact, one rounding each step): no early overflow. */
NDA_HD float nda_hypot32(float a, float b) {
  if (nda_isinf(a) || nda_isinf(b)) return nda_inf(a);
  double x = (double)a, y = (double)b;
  return (float)sqrt(x * x + y * y);
}
/* CUDA's hypot rounds results within an ulp or two of DBL_MAX up to inf: recomputed there. */
NDA_HD double nda_hypot64(double a, double b) {
  if (nda_isinf(a) || nda_isinf(b)) return nda_inf(a);  /* C99: even with a NaN */
  double r = hypot(a, b);
  if (nda_isinf(r) && nda_isfinite(a) && nda_isfinite(b)) {
    double x = fabs(a), y = fabs(b);
    double t = x > y ? x : y, s = x > y ? y : x;
    double q = s / t;
    r = t * sqrt(1.0 + q * q);
  }
  return r;
}
"""

# --------------------------------------------------------------------------- the ops
# Bodies of ``$O nda_<op>_<dtype>($T a[, $T b])`` by dtype class (b bool, i integer,
# f real floating, c complex64); ``$T`` is the computing type, ``$U`` its unsigned twin,
# ``$F`` the float suffix of the math functions ("f" or ""), ``$O`` the result type.
# Integer arithmetic goes through the unsigned type: wrap-around, as NumPy, never C's UB.

_MATH1 = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "expm1", "sin", "sinh", "sqrt", "tan", "tanh")
# NumPy's complex multiply on x86 with FMA (Highway's MulComplex): one product rounded, the other
# fused: (ar*br - ai*bi) as fma(ar, br, -(ai*bi)), (ar*bi + ai*br) as fma(ar, bi, ai*br). The signs of
# zeros of underflowing products and the infinities of overflowing ones come out as NumPy's.
_C_MUL = "return nda_c64_of(fmaf(a.re, b.re, -(a.im * b.im)), fmaf(a.re, b.im, a.im * b.re));"

UNARY: dict[str, dict[str, str]] = {
    **{name: {"f": f"return {name}$F(a);"} for name in _MATH1},
    "abs": {"i": "return a < 0 ? ($T)(($U)0 - ($U)a) : a;", "f": "return fabs$F(a);", "c": "return nda_hypot32(a.re, a.im);"},
    # CUDA's log of a negative subnormal double is -inf (NumPy: NaN): the domain is checked first.
    "log": {"f": "return a < 0 ? nda_nan(a) : log$F(a);"},
    "log2": {"f": "return a < 0 ? nda_nan(a) : log2$F(a);"},
    "log10": {"f": "return a < 0 ? nda_nan(a) : log10$F(a);"},
    "log1p": {"f": "return a < -1 ? nda_nan(a) : log1p$F(a);"},
    "bitwise_invert": {"b": "return !a;", "i": "return ~a;"},
    "ceil": {"i": "return a;", "f": "return ceil$F(a);"},
    "floor": {"i": "return a;", "f": "return floor$F(a);"},
    "trunc": {"i": "return a;", "f": "return trunc$F(a);"},
    "round": {"i": "return a;", "f": "return rint$F(a);", "c": "return nda_c64_of(rintf(a.re), rintf(a.im));"},
    "conj": {"i": "return a;", "f": "return a;", "c": "return nda_c64_of(a.re, -a.im);"},
    "real": {"i": "return a;", "f": "return a;", "c": "return a.re;"},
    "imag": {"c": "return a.im;"},
    "isfinite": {"i": "return true;", "f": "return nda_isfinite(a);", "c": "return nda_isfinite(a.re) && nda_isfinite(a.im);"},
    "isinf": {"i": "return false;", "f": "return nda_isinf(a);", "c": "return nda_isinf(a.re) || nda_isinf(a.im);"},
    "isnan": {"i": "return false;", "f": "return nda_isnan(a);", "c": "return nda_isnan(a.re) || nda_isnan(a.im);"},
    "logical_not": {"b": "return !a;"},
    "negative": {"i": "return ($T)(($U)0 - ($U)a);", "f": "return -a;", "c": "return nda_c64_of(-a.re, -a.im);"},
    "positive": {"i": "return a;", "f": "return a;", "c": "return a;"},
    "reciprocal": {
        "f": "return ($T)1 / a;",
        # NumPy's complex reciprocal (Smith's algorithm), step by step in float32.
        "c": "if (fabsf(a.im) <= fabsf(a.re)) { float t = a.im / a.re; float d = a.re + a.im * t; return nda_c64_of(1.0f / d, -t / d); }\n"
        "  float t = a.re / a.im; float d = a.re * t + a.im; return nda_c64_of(t / d, -1.0f / d);",
    },
    "sign": {"i": "return ($T)((a > 0) - (a < 0));", "f": "return a > 0 ? ($T)1 : (a < 0 ? ($T)-1 : (a == 0 ? ($T)0 : a));"},
    "signbit": {"f": "return nda_signbit(a);"},
    "square": {"i": "return ($T)(($U)a * ($U)a);", "f": "return a * a;", "c": _C_MUL.replace("b.", "a.")},
}

_DIVMOD = (
    # NumPy's npy_divmod: (floor quotient, remainder), exact where floor(a / b) is not.
    "$T mod = fmod$F(a, b);\n"
    "  $T div = (a - mod) / b;\n"
    "  if (mod != 0) { if ((b < 0) != (mod < 0)) { mod += b; div -= 1; } }\n"
    "  else { mod = copysign$F(($T)0, b); }\n"
    "  $T fl;\n"
    "  if (div != 0) { fl = floor$F(div); if (div - fl > ($T)0.5) fl += 1; }\n"
    "  else { fl = copysign$F(($T)0, a / b); }\n"
)

BINARY: dict[str, dict[str, str]] = {
    "add": {"i": "return ($T)(($U)a + ($U)b);", "f": "return a + b;", "c": "return nda_c64_of(a.re + b.re, a.im + b.im);"},
    "subtract": {"i": "return ($T)(($U)a - ($U)b);", "f": "return a - b;", "c": "return nda_c64_of(a.re - b.re, a.im - b.im);"},
    "multiply": {"i": "return ($T)(($U)a * ($U)b);", "f": "return a * b;", "c": _C_MUL},
    "divide": {
        "f": "return a / b;",
        # NumPy's complex division (Smith's algorithm, NumPy's rule for a zero divisor), in float32.
        "c": "float ar = fabsf(b.re), ai = fabsf(b.im);\n"
        "  if (ar >= ai) {\n"
        "    if (ar == 0 && ai == 0) return nda_c64_of(a.re / ar, a.im / ar);\n"
        "    float rat = b.im / b.re; float scl = 1.0f / (b.re + b.im * rat);\n"
        "    return nda_c64_of((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);\n"
        "  }\n"
        "  float rat = b.re / b.im; float scl = 1.0f / (b.im + b.re * rat);\n"
        "  return nda_c64_of((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);",
    },
    "atan2": {"f": "return atan2$F(a, b);"},
    "copysign": {"f": "return copysign$F(a, b);"},
    "hypot": {"f": "return nda_hypot$H(a, b);"},
    "nextafter": {"f": "return nextafter$F(a, b);"},
    "pow": {
        "f": "return pow$F(a, b);",
        # NumPy's integer power (b >= 0; a negative b raises, through the kernel's flag): squaring, wrapping.
        "i": "$U r = 1, x = ($U)a, e = ($U)b;\n  if (b < 0) return 0;\n  while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }\n  return ($T)r;",
    },
    # NumPy's power loop takes sqrt for an exponent of 0.5 that is the same for every element
    # (a scalar, a 0-d or a broadcast one-element array): pow(-0.0, 0.5) is -0.0 and
    # pow(-inf, 0.5) NaN there, +0.0 and inf with an exponent array. This is that variant.
    "pow_uniform": {"f": "return b == ($T)0.5 ? sqrt$F(a) : pow$F(a, b);"},
    "bitwise_and": {"b": "return a && b;", "i": "return a & b;"},
    "bitwise_or": {"b": "return a || b;", "i": "return a | b;"},
    "bitwise_xor": {"b": "return a != b;", "i": "return a ^ b;"},
    # NumPy: a count outside [0, bits) shifts everything out (0, or -1 for a negative value shifted right).
    "bitwise_left_shift": {"i": "return (($U)b < ($U)(sizeof($T) * 8)) ? ($T)(($U)a << b) : ($T)0;"},
    "bitwise_right_shift": {"i": "return (($U)b < ($U)(sizeof($T) * 8)) ? ($T)(a >> b) : (a < 0 ? ($T)-1 : ($T)0);"},
    "logical_and": {"b": "return a && b;"},
    "logical_or": {"b": "return a || b;"},
    "logical_xor": {"b": "return a != b;"},
    "equal": {"b": "return a == b;", "i": "return a == b;", "f": "return a == b;", "c": "return a.re == b.re && a.im == b.im;"},
    "not_equal": {"b": "return a != b;", "i": "return a != b;", "f": "return a != b;", "c": "return a.re != b.re || a.im != b.im;"},
    "less": {"i": "return a < b;", "f": "return a < b;"},
    "less_equal": {"i": "return a <= b;", "f": "return a <= b;"},
    "greater": {"i": "return a > b;", "f": "return a > b;"},
    "greater_equal": {"i": "return a >= b;", "f": "return a >= b;"},
    # NumPy's loops: the second operand on ties (so maximum(-0.0, 0.0) is 0.0), NaN propagates.
    "maximum": {"i": "return a > b ? a : b;", "f": "return (a > b || nda_isnan(a)) ? a : b;"},
    "minimum": {"i": "return a < b ? a : b;", "f": "return (a < b || nda_isnan(a)) ? a : b;"},
    # NumPy: x // 0 and x % 0 are 0 for integers; MIN // -1 wraps to MIN.
    "floor_divide": {
        "i": "if (b == 0) return 0;\n  if (b == -1) return ($T)(($U)0 - ($U)a);\n"
        "  $T q = a / b;\n  if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;\n  return q;",
        # NumPy's npy_floor_divide, and nda's rule for exactly one infinite operand (x1 / x2).
        "f": "if (b == 0) return a / b;\n"
        "  if (nda_isinf(a) != nda_isinf(b) && !nda_isnan(a) && !nda_isnan(b)) return a / b;\n  " + _DIVMOD + "  return fl;",
    },
    "remainder": {
        "i": "if (b == 0 || b == -1) return 0;\n  $T r = a % b;\n  if (r != 0 && ((r < 0) != (b < 0))) r += b;\n  return r;",
        "f": "if (b == 0) return fmod$F(a, b);\n  " + _DIVMOD + "  (void)fl;\n  return mod;",
    },
    "logaddexp": {
        # NumPy's npy_logaddexp.
        "f": "if (a == b) return a + ($T)0.693147180559945309417232121458176568;\n"
        "  $T t = a - b;\n"
        "  if (t > 0) return a + log1p$F(exp$F(-t));\n"
        "  if (t <= 0) return b + log1p$F(exp$F(t));\n"
        "  return t;",
    },
}

#: (op, dtype) computed with float32 intermediates that must not be flushed: not served by a
#: kernel compiled with -ftz=true (nda-cuda's workarounds then compute them in float64).
IEEE32 = {("divide", "complex64"), ("reciprocal", "complex64")}

_BOOL_RESULT = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isfinite", "isinf", "isnan", "signbit"}
_REAL_RESULT = {"abs", "real", "imag"}


def result_dtype(op: str, dtype: str) -> str:
    """The result dtype of ``op`` computing in ``dtype`` (nda's rules: same, bool, or the real part's)."""
    if op in _BOOL_RESULT:
        return "bool"
    if op in _REAL_RESULT and dtype == "complex64":
        return "float32"
    return dtype


def serves(op: str, dtype: str) -> bool:
    """Whether the generator has a function for ``op`` computing in ``dtype``."""
    table = UNARY.get(op) or BINARY.get(op)
    return table is not None and dtype in _CLASS and _CLASS[dtype] in table


def _fill(body: str, dtype: str, out: str) -> str:
    return (
        body.replace("$T", CTYPE[dtype])
        .replace("$U", _UNSIGNED.get(dtype, CTYPE[dtype]))
        .replace("$F", _SUFFIX.get(dtype, ""))
        .replace("$H", "32" if dtype == "float32" else "64")
        .replace("$O", CTYPE[out])
    )


def op_function(op: str, dtype: str) -> tuple[str, str]:
    """``(name, C definition)`` of the function computing ``op`` on ``dtype`` values."""
    unary = op in UNARY
    body = (UNARY if unary else BINARY)[op][_CLASS[dtype]]
    out = result_dtype(op, dtype)
    name = f"nda_{op}_{dtype}"
    params = f"{CTYPE[dtype]} a" if unary else f"{CTYPE[dtype]} a, {CTYPE[dtype]} b"
    return name, f"NDA_HD {CTYPE[out]} {name}({params}) {{\n  {_fill(body, dtype, out)}\n}}\n"


def cast_function(src: str, dst: str) -> tuple[str, str]:
    """``(name, C definition)`` of the conversion ``astype`` does from ``src`` to ``dst``.

    The C conversions CuPy's own cast kernel compiles to: a float out of an integer's range
    saturates on the GPU (``cvt.rzi``), NaN becomes 0 (NumPy leaves those undefined);
    float to bool is ``x != 0`` (NaN is true); int64 to int32 keeps the low bits.
    """
    name = f"nda_cast_{src}_{dst}"
    s, d = _CLASS[src], _CLASS[dst]
    if src == dst:
        body = "return a;"
    elif d == "b":
        body = "return a.re != 0 || a.im != 0;" if s == "c" else "return a != 0;"
    elif s == "b":
        body = "return nda_c64_of(a ? 1.0f : 0.0f, 0.0f);" if d == "c" else f"return a ? ({CTYPE[dst]})1 : ({CTYPE[dst]})0;"
    elif d == "c":
        if s == "c":
            raise ValueError("complex64 to complex64 is the identity")
        body = "return nda_c64_of((float)a, 0.0f);"
    elif s == "c":
        raise ValueError(f"astype refuses complex to {dst} (take real() first)")
    elif src == "int64" and dst == "int32":
        body = "return (int)(unsigned int)(unsigned long long)a;"
    else:
        body = f"return ({CTYPE[dst]})a;"
    return name, f"NDA_HD {CTYPE[dst]} {name}({CTYPE[src]} a) {{\n  {body}\n}}\n"


# --------------------------------------------------------------------------- programs


class Program:
    """A per-element computation: operands ``v0..`` (arrays or scalars, with dtypes), C code
    assigning the results ``r0..``, and the helper functions the code calls.

    ``operands``: ``(dtype, is_scalar)`` per operand, in call order; ``outputs``: dtypes.
    """

    __slots__ = ("name", "operands", "outputs", "code", "helpers", "flag", "_digest", "scalars", "has_scalars", "contiguous", "out_numpy", "vec")

    def __init__(
        self,
        name: str,
        operands: tuple[tuple[str, bool], ...],
        outputs: tuple[str, ...],
        code: str,
        helpers: tuple[tuple[str, str], ...] = (),
        flag: bool = False,
    ) -> None:
        for dtype, _ in operands:
            if dtype not in CTYPE:
                raise ValueError(f"the generator does not serve dtype {dtype}")
        self.name = name
        self.operands = operands
        self.outputs = outputs
        self.code = code
        self.helpers = helpers
        #: the kernel takes ``int* f_``, a device flag the code may set to 1 (a data-dependent error)
        self.flag = flag
        self._digest = ""
        # For the dispatcher's hot path: which operands are scalars, the modes when every array is
        # contiguous with the output's shape, the outputs' NumPy dtypes, the vector width then.
        self.scalars = tuple(scalar for _, scalar in operands)
        self.has_scalars = any(self.scalars)
        self.contiguous = tuple("k" if scalar else "c" for scalar in self.scalars)
        self.out_numpy = tuple(np.dtype(d) for d in outputs)
        widths = [_ITEMSIZE[d] for d in outputs] + [_ITEMSIZE[d] for d, scalar in operands if not scalar]
        self.vec = max(1, 16 // max(widths))

    @property
    def digest(self) -> str:
        if not self._digest:
            text = repr((self.operands, self.outputs, self.code, self.helpers, self.flag))
            self._digest = hashlib.sha1(text.encode()).hexdigest()[:16]
        return self._digest

    def __repr__(self) -> str:
        return f"<Program {self.name} {self.operands} -> {self.outputs}>"


def op_program(op: str, dtype: str, scalars: tuple[bool, ...]) -> Program:
    """``op`` on operands of ``dtype`` (``scalars[i]``: operand ``i`` is a scalar argument)."""
    name, definition = op_function(op, dtype)
    args = ", ".join(f"v{i}" for i in range(len(scalars)))
    operands = tuple((dtype, s) for s in scalars)
    if op == "pow" and _CLASS[dtype] == "i":  # NumPy raises for a negative exponent: the kernel sets the flag
        return Program(op, operands, (dtype,), f"if (v1 < 0) *f_ = 1;\nr0 = {name}({args});", ((name, definition),), flag=True)
    return Program(op, operands, (result_dtype(op, dtype),), f"r0 = {name}({args});", ((name, definition),))


def where_program(dtype: str, scalars: tuple[bool, bool, bool]) -> Program:
    """``where(condition, x1, x2)``: a bool condition, both values of ``dtype``."""
    operands = (("bool", scalars[0]), (dtype, scalars[1]), (dtype, scalars[2]))
    return Program("where", operands, (dtype,), "r0 = v0 ? v1 : v2;")


def cast_program(src: str, dst: str) -> Program:
    name, definition = cast_function(src, dst) if not (src == dst == "complex64") else ("", "")
    code = "r0 = v0;" if src == dst else f"r0 = {name}(v0);"
    return Program("astype", ((src, False),), (dst,), code, ((name, definition),) if src != dst else ())


# --------------------------------------------------------------------------- kernels


class Pattern:
    """How a kernel reaches its operands: ``modes[i]`` in ``c``/``s``/``b``/``k`` per operand
    (``k`` for scalars), ``vec`` elements per vector access of the ``c`` operands and the
    outputs (a kernel with ``vec > 1`` also has the scalar loop, taken when its ``aligned``
    argument is 0), ``unroll`` vectors per thread in flight, ``index64``, and ``ndim`` of the
    (merged) broadcast index space when an operand is ``b``."""

    __slots__ = ("modes", "vec", "unroll", "index64", "ndim")

    def __init__(self, modes: tuple[str, ...], vec: int = 1, unroll: int = 1, index64: bool = False, ndim: int = 0) -> None:
        if "b" in modes and (vec != 1 or ndim < 1):
            raise ValueError("broadcast operands take the scalar path over at least one dimension")
        self.modes = modes
        self.vec = vec
        self.unroll = unroll
        self.index64 = index64
        self.ndim = ndim

    def key(self) -> tuple[object, ...]:
        return (self.modes, self.vec, self.unroll, self.index64, self.ndim)

    def __repr__(self) -> str:
        return f"Pattern({''.join(self.modes)}, vec={self.vec}, unroll={self.unroll}, index64={self.index64}, ndim={self.ndim})"


def kernel_name(program: Program, pattern: Pattern) -> str:
    tag = hashlib.sha1(repr((program.digest, pattern.key())).encode()).hexdigest()[:12]
    return f"nda_{program.name}_{tag}"


def kernel_params(program: Program, pattern: Pattern) -> list[tuple[str, str]]:
    """The kernel's parameters after the host emulation's ``nthreads``: ``(kind, C declaration)``,
    kind in ``in``/``out``/``n``/``scalar``/``dim``/``stride``, in launch order."""
    params: list[tuple[str, str]] = []
    for i, ((dtype, _), mode) in enumerate(zip(program.operands, pattern.modes)):
        if mode != "k":
            params.append(("in", f"const {STORAGE[dtype]}* __restrict__ p{i}"))
    for j, dtype in enumerate(program.outputs):
        params.append(("out", f"{STORAGE[dtype]}* __restrict__ q{j}"))
    if program.flag:
        params.append(("flag", "int* __restrict__ f_"))
    params.append(("n", "long long n_"))
    if pattern.vec > 1:
        params.append(("aligned", "int aligned"))
    for i, ((dtype, _), mode) in enumerate(zip(program.operands, pattern.modes)):
        if mode == "k":
            params.append(("scalar", f"{STORAGE[dtype]} k{i}"))
    if "b" in pattern.modes:
        for d in range(1, pattern.ndim):
            params.append(("dim", f"long long d{d}"))
        for i, mode in enumerate(pattern.modes):
            if mode == "b":
                for d in range(pattern.ndim):
                    params.append(("stride", f"long long st{i}_{d}"))
    return params


def _load(dtype: str, expr: str) -> str:
    return f"({expr} != 0)" if dtype == "bool" else expr


def _store(dtype: str, expr: str) -> str:
    return f"(unsigned char)({expr} ? 1 : 0)" if dtype == "bool" else expr


def _compute(program: Program, values: list[str], stores: list[str], indent: str) -> list[str]:
    """Lines computing one element: operand values -> the program's code -> stores."""
    lines = [f"{indent}{{"]
    for i, ((dtype, _), value) in enumerate(zip(program.operands, values)):
        lines.append(f"{indent}  const {CTYPE[dtype]} v{i} = {value};")
    for j, dtype in enumerate(program.outputs):
        lines.append(f"{indent}  {CTYPE[dtype]} r{j};")
    lines += [f"{indent}  {line}" for line in program.code.splitlines()]
    for j, (dtype, target) in enumerate(zip(program.outputs, stores)):
        lines.append(f"{indent}  {target} = {_store(dtype, f'r{j}')};")
    lines.append(f"{indent}}}")
    return lines


def _uniforms(program: Program, pattern: Pattern) -> tuple[list[str], dict[int, str]]:
    """Declarations of values read once per thread (``s`` operands, ``k`` scalars) and their names."""
    lines, names = [], {}
    for i, ((dtype, _), mode) in enumerate(zip(program.operands, pattern.modes)):
        if mode == "s":
            lines.append(f"  const {STORAGE[dtype]} u{i} = p{i}[0];")
            names[i] = _load(dtype, f"u{i}")
        elif mode == "k":
            names[i] = _load(dtype, f"k{i}")
    return lines, names


def kernel_source(program: Program, pattern: Pattern, name: str | None = None) -> tuple[str, str]:
    """``(name, C source without the preamble and helpers)`` of the kernel for ``program`` in ``pattern``."""
    if len(pattern.modes) != len(program.operands):
        raise ValueError(f"{program}: {len(pattern.modes)} modes for {len(program.operands)} operands")
    for (_dtype, scalar), mode in zip(program.operands, pattern.modes):
        if (mode == "k") != scalar:
            raise ValueError(f"{program}: mode {mode!r} for a {'scalar' if scalar else 'array'} operand")
    name = name or kernel_name(program, pattern)
    idx = "unsigned long long" if pattern.index64 else "unsigned int"
    params = kernel_params(program, pattern)
    decl = ", ".join(p for _, p in params)
    args = ", ".join(p.rpartition(" ")[2] for _, p in params)
    uniform_lines, uniform = _uniforms(program, pattern)
    body = [f"NDA_HD void nda_body_{name}({idx} tid, {idx} nthreads, {decl}) {{", f"  const {idx} n = ({idx})n_;"]
    body += uniform_lines
    if "b" in pattern.modes:
        body += _broadcast_loop(program, pattern, uniform, idx)
    else:
        body += _contiguous_loop(program, pattern, uniform, idx)
    body.append("}")
    launch = (
        "#if NDA_DEVICE\n"
        f'extern "C" __global__ void __launch_bounds__(1024) {name}({decl}) {{\n'
        f"  nda_body_{name}(({idx})blockIdx.x * ({idx})blockDim.x + ({idx})threadIdx.x, ({idx})gridDim.x * ({idx})blockDim.x, {args});\n"
        "}\n"
        "#else\n"
        f'extern "C" void {name}(long long nthreads, {decl}) {{\n'
        f"  for (long long t = 0; t < nthreads; ++t) nda_body_{name}(({idx})t, ({idx})nthreads, {args});\n"
        "}\n"
        "#endif\n"
    )
    return name, "\n".join(body) + "\n" + launch


def _contiguous_loop(program: Program, pattern: Pattern, uniform: dict[int, str], idx: str) -> list[str]:
    """Every array operand has the output's shape (``c``) or one element (``s``). With ``vec > 1``
    and the ``aligned`` argument set: vectors of ``vec`` elements, ``unroll`` of them loaded
    before any is computed, grid-stride, then the tail element by element; otherwise (some
    pointer not aligned to a vector) every element by the scalar loop."""
    lines: list[str] = []
    vec, unroll = pattern.vec, pattern.unroll
    contiguous = [i for i, m in enumerate(pattern.modes) if m == "c"]
    if vec > 1:
        lines.append(f"  const {idx} nv = aligned ? n / {vec} : 0;")
        lines.append(f"  for ({idx} base = tid; base < nv; base += nthreads * {unroll}) {{")
        for i in contiguous:
            dtype = program.operands[i][0]
            lines.append(f"    nda_vec<{STORAGE[dtype]}, {vec}> x{i}[{unroll}];")
        lines.append("#pragma unroll")
        lines.append(f"    for (int u = 0; u < {unroll}; ++u) {{")
        lines.append(f"      const {idx} j = base + ({idx})u * nthreads;")
        if contiguous:
            loads = " ".join(f"x{i}[u] = reinterpret_cast<const nda_vec<{STORAGE[program.operands[i][0]]}, {vec}>*>(p{i})[j];" for i in contiguous)
            lines.append(f"      if (j < nv) {{ {loads} }}")
        lines.append("    }")
        lines.append("#pragma unroll")
        lines.append(f"    for (int u = 0; u < {unroll}; ++u) {{")
        lines.append(f"      const {idx} j = base + ({idx})u * nthreads;")
        lines.append("      if (j < nv) {")
        for o, dtype in enumerate(program.outputs):
            lines.append(f"        nda_vec<{STORAGE[dtype]}, {vec}> y{o};")
        lines.append("#pragma unroll")
        lines.append(f"        for (int e = 0; e < {vec}; ++e)")
        values = [uniform[i] if i in uniform else _load(d, f"x{i}[u].v[e]") for i, (d, _) in enumerate(program.operands)]
        lines += _compute(program, values, [f"y{o}.v[e]" for o in range(len(program.outputs))], "        ")
        for o, dtype in enumerate(program.outputs):
            lines.append(f"        reinterpret_cast<nda_vec<{STORAGE[dtype]}, {vec}>*>(q{o})[j] = y{o};")
        lines.append("      }")
        lines.append("    }")
        lines.append("  }")
        start = f"nv * {vec} + tid"
    else:
        start = "tid"
    lines.append(f"  for ({idx} i = {start}; i < n; i += nthreads) {{")
    values = [uniform[i] if i in uniform else _load(d, f"p{i}[i]") for i, (d, _) in enumerate(program.operands)]
    lines += _compute(program, values, [f"q{o}[i]" for o in range(len(program.outputs))], "    ")
    lines.append("  }")
    return lines


def _broadcast_loop(program: Program, pattern: Pattern, uniform: dict[int, str], idx: str) -> list[str]:
    """Some operand is broadcast from a C-contiguous array: each element's offset in it is the
    output index split over the (coalesced) dimensions, dotted with its element strides."""
    lines = [f"  for ({idx} i = tid; i < n; i += nthreads) {{"]
    broadcast = [i for i, m in enumerate(pattern.modes) if m == "b"]
    lines.append(f"    {idx} rest = i;")
    for i in broadcast:
        lines.append(f"    long long o{i} = 0;")
    for d in range(pattern.ndim - 1, 0, -1):
        lines.append(f"    {{ const {idx} c = rest % ({idx})d{d}; rest /= ({idx})d{d};")
        lines.append("      " + " ".join(f"o{i} += (long long)c * st{i}_{d};" for i in broadcast) + " }")
    lines.append("    " + " ".join(f"o{i} += (long long)rest * st{i}_0;" for i in broadcast))
    values = []
    for i, (dtype, _) in enumerate(program.operands):
        mode = pattern.modes[i]
        values.append(uniform[i] if i in uniform else _load(dtype, f"p{i}[o{i}]" if mode == "b" else f"p{i}[i]"))
    lines += _compute(program, values, [f"q{o}[i]" for o in range(len(program.outputs))], "    ")
    lines.append("  }")
    return lines


def module_source(kernels: Iterable[tuple[Program, Pattern, str]]) -> str:
    """One translation unit: the preamble, every helper once, then each ``(program, pattern, name)`` kernel."""
    helpers: dict[str, str] = {}
    parts: list[str] = []
    for program, pattern, name in kernels:
        for hname, definition in program.helpers:
            helpers.setdefault(hname, definition)
        parts.append(kernel_source(program, pattern, name)[1])
    return PREAMBLE + "\n" + "\n".join(helpers.values()) + "\n" + "\n".join(parts)
