"""nda.random on the GPU: the Philox4x32-10 stream of ``nda.ops.random`` as one CUDA source.

Each ``random.philox_*`` op gets a kernel in which thread ``b`` computes Philox block ``b``
of the request and the values made from its four words (grid-stride loop). The stream is
the one :mod:`nda.ops.random` states and :mod:`nda.ops._philox` computes on cpu; the source
repeats the cpu code operation for operation, so the bits are the same:

* every floating-point operation is an intrinsic that rounds once and never fuses
  (``__dmul_rn``, ``__dadd_rn``, ``__ddiv_rn``, ``__dsqrt_rn``, ``__fmul_rn``, ...; the
  module is also compiled with ``--fmad=false``), and the polynomial constants are printed
  from the cpu module's own values (``repr`` round-trips a float64 exactly);
* ``log``, ``cos`` and ``sin`` are nda's portable ones (``nda.ops._philox.log01`` and
  ``cossin_2pi``), not CUDA's.

The source is plain C where it is not compiled by NVRTC/nvcc (the macros at its top map
the intrinsics to C operators), so ``tests/test_random.py`` compiles it with the host C
compiler and runs every kernel on the host against the cpu kernels, bit for bit, on a
machine without a GPU. :class:`PhiloxKernels` takes the array module and a compiled module
(``cupy.RawModule`` here, the host-compiled library in the tests), so the launch code is
the same in both.

Layer: nda-cuda (a plugin; nda's public modules only).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from nda.ops import CATALOG
from nda.ops import random as ref  # the stream's constants (nda.ops._philox's, re-exported)

__all__ = ["source", "PhiloxKernels", "register", "cupy_module", "OPS", "OPTIONS", "INTEGER_TYPES"]

#: The catalog ops this module gives kernels.
OPS = ("random.philox_uniform", "random.philox_normal", "random.philox_exponential", "random.philox_integers")

#: NVRTC options: no contraction into FMAs (the intrinsics already guarantee it; this covers
#: integer-to-float conversions and anything added later).
OPTIONS = ("--fmad=false",)
#: C types of the integer dtypes (the ``integers`` kernels are generated per dtype).
INTEGER_TYPES = {
    "int8": ("signed char", True), "int16": ("short", True), "int32": ("int", True), "int64": ("long long", True),
    "uint8": ("unsigned char", False), "uint16": ("unsigned short", False), "uint32": ("unsigned int", False),
    "uint64": ("unsigned long long", False),
}
_THREADS = 256
_MAX_GRID = 65535

_PRELUDE = r"""
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define NDA_DEVICE __device__ __forceinline__
#define NDA_KERNEL extern "C" __global__ void
#define NDA_LOOP(b, nblocks) for (unsigned long long b = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; b < (nblocks); b += (unsigned long long)gridDim.x * blockDim.x)
#define MULHI32(a, b) __umulhi((a), (b))
#define MUL64HI(a, b) __umul64hi((a), (b))
#define DADD(a, b) __dadd_rn((a), (b))
#define DSUB(a, b) __dsub_rn((a), (b))
#define DMUL(a, b) __dmul_rn((a), (b))
#define DDIV(a, b) __ddiv_rn((a), (b))
#define DSQRT(a) __dsqrt_rn(a)
#define FADD(a, b) __fadd_rn((a), (b))
#define FMUL(a, b) __fmul_rn((a), (b))
#define D2F(a) __double2float_rn(a)
#else
/* Host C (the tests): IEEE binary64/binary32 arithmetic, compiled with -ffp-contract=off. */
#include <math.h>
#define NDA_DEVICE static inline
#define NDA_KERNEL void
#define NDA_LOOP(b, nblocks) for (unsigned long long b = 0; b < (nblocks); ++b)
#define MULHI32(a, b) ((unsigned int)(((unsigned long long)(a) * (unsigned long long)(b)) >> 32))
#define MUL64HI(a, b) ((unsigned long long)(((unsigned __int128)(a) * (unsigned __int128)(b)) >> 64))
#define DADD(a, b) ((double)(a) + (double)(b))
#define DSUB(a, b) ((double)(a) - (double)(b))
#define DMUL(a, b) ((double)(a) * (double)(b))
#define DDIV(a, b) ((double)(a) / (double)(b))
#define DSQRT(a) sqrt(a)
#define FADD(a, b) ((float)(a) + (float)(b))
#define FMUL(a, b) ((float)(a) * (float)(b))
#define D2F(a) ((float)(a))
#endif

/* One Philox4x32-10 block: the counter (clo + b) + (chi << 64), mod 2**128, under key (k0, k1). */
NDA_DEVICE void nda_block(unsigned long long b, unsigned long long clo, unsigned long long chi,
                          unsigned int k0, unsigned int k1, unsigned int x[4]) {
    unsigned long long lo = clo + b;
    unsigned long long hi = chi + (lo < clo ? 1ULL : 0ULL);
    x[0] = (unsigned int)lo; x[1] = (unsigned int)(lo >> 32);
    x[2] = (unsigned int)hi; x[3] = (unsigned int)(hi >> 32);
    for (int r = 0; r < 10; ++r) {
        unsigned int lo0 = M0 * x[0], hi0 = MULHI32(M0, x[0]);
        unsigned int lo1 = M1 * x[2], hi1 = MULHI32(M1, x[2]);
        unsigned int n0 = hi1 ^ x[1] ^ k0, n2 = hi0 ^ x[3] ^ k1;
        x[0] = n0; x[1] = lo1; x[2] = n2; x[3] = lo0;
        k0 += W0; k1 += W1;
    }
}

NDA_DEVICE unsigned long long nda_top53(unsigned int lo, unsigned int hi) {
    return (((unsigned long long)hi) << 21) | (unsigned long long)(lo >> 11);
}

/* log(x) for x in (0, 1]: nda.ops._philox.log01, operation for operation. */
NDA_DEVICE double nda_log01(double x) {
    int e;
    double m = frexp(x, &e);
    if (m < SQRT_HALF) { m = DADD(m, m); e -= 1; }
    double ef = (double)e;
    double f = DSUB(m, 1.0);
    double s = DDIV(f, DADD(2.0, f));
    double z = DMUL(s, s);
    double p = LOG_LAST;
    LOG_HORNER
    p = DMUL(z, p);
    p = DMUL(s, p);
    p = DADD(DADD(s, s), p);
    return DADD(DMUL(ef, LN2_HI), DADD(DMUL(ef, LN2_LO), p));
}

/* (cos 2 pi t, sin 2 pi t) for t in [0, 1): nda.ops._philox.cossin_2pi, operation for operation. */
NDA_DEVICE void nda_cossin(double t, double* c, double* s) {
    double q = rint(DMUL(t, 4.0));
    double a = DSUB(t, DMUL(q, 0.25));
    a = DMUL(a, TWO_PI);
    double z = DMUL(a, a);
    double ps = SIN_LAST;
    SIN_HORNER
    double pc = COS_LAST;
    COS_HORNER
    ps = DMUL(z, ps);
    ps = DMUL(a, ps);
    double sn = DADD(a, ps);
    pc = DMUL(z, pc);
    double cs = DADD(1.0, pc);
    switch (((int)q) & 3) {
        case 0: *c = cs; *s = sn; break;
        case 1: *c = -sn; *s = cs; break;
        case 2: *c = -cs; *s = -sn; break;
        default: *c = sn; *s = -cs; break;
    }
}

NDA_DEVICE double nda_radius(double u1) { return DSQRT(DMUL(-2.0, nda_log01(u1))); }

#define NDA_ARGS unsigned long long nblocks, unsigned long long clo, unsigned long long chi, unsigned int k0, unsigned int k1

NDA_KERNEL nda_uniform_f64(NDA_ARGS, double low, double span, double* out, unsigned long long n) {
    NDA_LOOP(b, nblocks) {
        unsigned int x[4];
        nda_block(b, clo, chi, k0, k1, x);
        for (int i = 0; i < 2; ++i) {
            unsigned long long j = 2 * b + i;
            if (j < n) {
                double u = DMUL((double)nda_top53(x[2 * i], x[2 * i + 1]), TWO_M53);
                out[j] = DADD(DMUL(u, span), low);
            }
        }
    }
}

NDA_KERNEL nda_uniform_f32(NDA_ARGS, float low, float span, float* out, unsigned long long n) {
    NDA_LOOP(b, nblocks) {
        unsigned int x[4];
        nda_block(b, clo, chi, k0, k1, x);
        for (int i = 0; i < 4; ++i) {
            unsigned long long j = 4 * b + i;
            if (j < n) {
                float u = FMUL((float)(x[i] >> 8), TWO_M24F);
                out[j] = FADD(FMUL(u, span), low);
            }
        }
    }
}

NDA_KERNEL nda_normal_f64(NDA_ARGS, double loc, double scale, double* out, unsigned long long n) {
    NDA_LOOP(b, nblocks) {
        unsigned int x[4];
        nda_block(b, clo, chi, k0, k1, x);
        double u1 = DSUB(1.0, DMUL((double)nda_top53(x[0], x[1]), TWO_M53));
        double t = DMUL((double)nda_top53(x[2], x[3]), TWO_M53);
        double r = nda_radius(u1), c, s;
        nda_cossin(t, &c, &s);
        unsigned long long j = 2 * b;
        if (j < n) out[j] = DADD(DMUL(DMUL(r, c), scale), loc);
        if (j + 1 < n) out[j + 1] = DADD(DMUL(DMUL(r, s), scale), loc);
    }
}

NDA_KERNEL nda_normal_f32(NDA_ARGS, float loc, float scale, float* out, unsigned long long n) {
    NDA_LOOP(b, nblocks) {
        unsigned int x[4];
        nda_block(b, clo, chi, k0, k1, x);
        for (int p = 0; p < 2; ++p) {
            double u1 = DMUL(DADD((double)x[2 * p], 0.5), TWO_M32);
            double t = DMUL((double)x[2 * p + 1], TWO_M32);
            double r = nda_radius(u1), c, s;
            nda_cossin(t, &c, &s);
            unsigned long long j = 4 * b + 2 * p;
            if (j < n) out[j] = FADD(FMUL(D2F(DMUL(r, c)), scale), loc);
            if (j + 1 < n) out[j + 1] = FADD(FMUL(D2F(DMUL(r, s)), scale), loc);
        }
    }
}

NDA_KERNEL nda_exponential_f64(NDA_ARGS, double scale, double* out, unsigned long long n) {
    NDA_LOOP(b, nblocks) {
        unsigned int x[4];
        nda_block(b, clo, chi, k0, k1, x);
        for (int i = 0; i < 2; ++i) {
            unsigned long long j = 2 * b + i;
            if (j < n) {
                double u = DSUB(1.0, DMUL((double)nda_top53(x[2 * i], x[2 * i + 1]), TWO_M53));
                out[j] = DMUL(DSUB(0.0, nda_log01(u)), scale);
            }
        }
    }
}

NDA_KERNEL nda_exponential_f32(NDA_ARGS, float scale, float* out, unsigned long long n) {
    NDA_LOOP(b, nblocks) {
        unsigned int x[4];
        nda_block(b, clo, chi, k0, k1, x);
        for (int i = 0; i < 4; ++i) {
            unsigned long long j = 4 * b + i;
            if (j < n) {
                double u = DMUL(DADD((double)x[i], 0.5), TWO_M32);
                out[j] = FMUL(D2F(DSUB(0.0, nda_log01(u))), scale);
            }
        }
    }
}

/* integers: low + floor(U * span / 2**64), U = x[2i] | x[2i+1] << 32 (two values a block). */
#define NDA_INTEGERS_NARROW(NAME, T, CAST)                                                             \
NDA_KERNEL NAME(NDA_ARGS, unsigned long long low, unsigned long long span, T* out, unsigned long long n) { \
    NDA_LOOP(b, nblocks) {                                                                          \
        unsigned int x[4];                                                                          \
        nda_block(b, clo, chi, k0, k1, x);                                                          \
        for (int i = 0; i < 2; ++i) {                                                               \
            unsigned long long j = 2 * b + i;                                                       \
            if (j < n) {                                                                            \
                unsigned long long u = (unsigned long long)x[2 * i] | ((unsigned long long)x[2 * i + 1] << 32); \
                out[j] = (T)(CAST)(MUL64HI(u, span) + low);                                        \
            }                                                                                       \
        }                                                                                           \
    }                                                                                               \
}
/* integers: low + floor(U * span / 2**128), U = x0 | x1 << 32 | x2 << 64 | x3 << 96 (a block a value);
   full != 0 means span = 2**64 (the result is then U's high 64 bits). */
#define NDA_INTEGERS_WIDE(NAME, T, CAST)                                                               \
NDA_KERNEL NAME(NDA_ARGS, unsigned long long low, unsigned long long span, int full, T* out, unsigned long long n) { \
    NDA_LOOP(b, nblocks) {                                                                          \
        unsigned int x[4];                                                                          \
        nda_block(b, clo, chi, k0, k1, x);                                                          \
        unsigned long long ulo = (unsigned long long)x[0] | ((unsigned long long)x[1] << 32);      \
        unsigned long long uhi = (unsigned long long)x[2] | ((unsigned long long)x[3] << 32);      \
        unsigned long long r;                                                                       \
        if (full) {                                                                                 \
            r = uhi;                                                                                \
        } else {                                                                                    \
            unsigned long long m = MUL64HI(ulo, span), lo = uhi * span, hi = MUL64HI(uhi, span);    \
            r = hi + ((lo + m) < lo ? 1ULL : 0ULL);                                                 \
        }                                                                                           \
        if (b < n) out[b] = (T)(CAST)(r + low);                                                     \
    }                                                                                               \
}
"""


def _c(value: float) -> str:
    """A C literal for a float64 (``repr`` round-trips exactly; a correctly rounding compiler reads it back)."""
    text = repr(float(value))
    return text if ("." in text or "e" in text) else text + ".0"


def _horner(var: str, coeffs: tuple[float, ...]) -> str:
    return " ".join(f"{var} = DADD(DMUL({var}, z), {_c(c)});" for c in coeffs[-2::-1])


def source() -> str:
    """The CUDA (and host C) source of every kernel, with the constants of :mod:`nda.ops._philox`."""
    defines = [
        f"#define M0 {ref.M0:#x}U", f"#define M1 {ref.M1:#x}U", f"#define W0 {ref.W0:#x}U", f"#define W1 {ref.W1:#x}U",
        f"#define SQRT_HALF {_c(ref.SQRT_HALF)}", f"#define TWO_PI {_c(ref.TWO_PI)}",
        f"#define LN2_HI {_c(ref.LN2_HI)}", f"#define LN2_LO {_c(ref.LN2_LO)}",
        f"#define LOG_LAST {_c(ref.LOG_COEFFS[-1])}", f"#define LOG_HORNER {_horner('p', ref.LOG_COEFFS)}",
        f"#define SIN_LAST {_c(ref.SIN_COEFFS[-1])}", f"#define SIN_HORNER {_horner('ps', ref.SIN_COEFFS)}",
        f"#define COS_LAST {_c(ref.COS_COEFFS[-1])}", f"#define COS_HORNER {_horner('pc', ref.COS_COEFFS)}",
        f"#define TWO_M53 {_c(2.0 ** -53)}", f"#define TWO_M32 {_c(2.0 ** -32)}", f"#define TWO_M24F {_c(2.0 ** -24)}f",
    ]
    assert ref.ROUNDS == 10
    integer_kernels = []
    for name, (ctype, signed) in INTEGER_TYPES.items():
        cast = "long long" if signed else "unsigned long long"
        integer_kernels.append(f"NDA_INTEGERS_NARROW(nda_integers_{name}, {ctype}, {cast})")
        if name.endswith("64"):
            integer_kernels.append(f"NDA_INTEGERS_WIDE(nda_integers_wide_{name}, {ctype}, {cast})")
    return "\n".join(["/* generated by nda_cuda._philox from nda.ops._philox */", *defines, _PRELUDE, *integer_kernels, ""])


class PhiloxKernels:
    """The ``random.philox_*`` kernels over an array module ``xp`` and a compiled :func:`source`.

    ``module.get_function(name)`` returns a callable ``(grid, block, args)``: a
    ``cupy.RawModule``'s functions on a GPU; the tests pass the host-compiled library.
    """

    def __init__(self, xp: Any, module: Any) -> None:
        self.xp = xp
        self.module = module
        self._functions: dict[str, Any] = {}

    def _launch(self, name: str, nblocks: int, key: tuple[int, int], counter: int, *args: Any) -> None:
        fn = self._functions.get(name)
        if fn is None:
            fn = self._functions[name] = self.module.get_function(name)
        grid = max(1, min(_MAX_GRID, -(-nblocks // _THREADS)))
        head = (np.uint64(nblocks), np.uint64(counter & (2**64 - 1)), np.uint64(counter >> 64), np.uint32(key[0]), np.uint32(key[1]))
        fn((grid,), (_THREADS,), head + args)

    def _empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.xp.empty(shape, dtype=dtype.numpy)

    def _float(self, kind: str, shape: tuple[int, ...], key: tuple[int, int], counter: int, params: tuple[float, ...], dtype: Any) -> Any:
        out = self._empty(shape, dtype)
        n = math.prod(shape)
        if n:
            wide = dtype.name == "float64"
            per_block = 2 if wide else 4
            scalar = np.float64 if wide else np.float32
            name = f"nda_{kind}_{'f64' if wide else 'f32'}"
            self._launch(name, -(-n // per_block), key, counter, *(scalar(p) for p in params), out, np.uint64(n))
        return out

    def uniform(self, shape: tuple[int, ...], key: tuple[int, int], counter: int, low: float, span: float, dtype: Any, device: Any = None) -> Any:
        return self._float("uniform", shape, key, counter, (low, span), dtype)

    def normal(self, shape: tuple[int, ...], key: tuple[int, int], counter: int, loc: float, scale: float, dtype: Any, device: Any = None) -> Any:
        return self._float("normal", shape, key, counter, (loc, scale), dtype)

    def exponential(self, shape: tuple[int, ...], key: tuple[int, int], counter: int, scale: float, dtype: Any, device: Any = None) -> Any:
        return self._float("exponential", shape, key, counter, (scale,), dtype)

    def integers(self, shape: tuple[int, ...], key: tuple[int, int], counter: int, low: int, span: int, dtype: Any, device: Any = None) -> Any:
        out = self._empty(shape, dtype)
        n = math.prod(shape)
        if not n:
            return out
        low_bits = np.uint64(low % 2**64)
        if span <= 1 << 32:
            self._launch(f"nda_integers_{dtype.name}", -(-n // 2), key, counter, low_bits, np.uint64(span), out, np.uint64(n))
        else:
            full = span == 1 << 64
            self._launch(f"nda_integers_wide_{dtype.name}", n, key, counter, low_bits, np.uint64(0 if full else span), np.int32(full), out, np.uint64(n))
        return out


def register(register_kernel: Callable[..., None], kernels: PhiloxKernels, wrap: Callable[[Callable[..., Any], str], Callable[..., Any]]) -> None:
    """Register the four ``random.philox_*`` kernels (``wrap`` puts each on the device's stream)."""
    for name in OPS:
        op = name.rpartition("_")[2]
        register_kernel(name, CATALOG[name].supported_dtypes, wrap(getattr(kernels, op), f"nda_cuda._philox ({op}, CUDA)"))


def cupy_module(cupy: Any) -> Any:
    """The compiled module on a GPU (NVRTC compiles it on first use on each device)."""
    return cupy.RawModule(code=source(), options=OPTIONS)
