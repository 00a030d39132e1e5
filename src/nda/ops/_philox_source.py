"""The Philox4x32-10 kernels of ``nda.random`` as one C/CUDA source: the compiled form of the stream.

:mod:`nda.ops.random` states the stream and :mod:`nda.ops._philox` computes it in vectorised
NumPy; :func:`source` writes the same computation as C, operation for operation, for every
compiler that runs it:

* **CUDA** (NVRTC): ``nda_cuda._philox`` compiles the text as it is (``cupy.RawModule``);
  thread ``b`` computes Philox block ``b`` and the values made from its four words.
* **The host**: the same text is plain C outside NVRTC/nvcc (the macros at its top map the
  CUDA rounding intrinsics to C operators and the grid-stride loop to a ``for`` loop). It is
  committed as ``src/nda/_philox_kernels.h``, which ``src/nda/_philox_native.c`` includes to
  make the optional extension ``nda._philox_native`` (the cpu backend's random kernels,
  :mod:`nda.backends.cpu_random`), and ``tests/_philox_host.py`` compiles it into a library
  that stands in for a GPU module. ``python -m nda.ops._philox_source --write`` regenerates
  the committed file; ``tests/test_random_native.py`` fails when it is stale.

Bit-identity with the NumPy kernels rests on three things: every floating-point operation
rounds once and never fuses (the CUDA intrinsics ``__dmul_rn``, ``__dadd_rn``, ... and
``--fmad=false``; on the host ``-ffp-contract=off``, no ``-ffast-math``, and an ``#error``
where the compiler evaluates in excess precision, such as x87); the polynomial constants
are printed from :mod:`nda.ops._philox`'s own values (``repr`` round-trips a float64); and
``log``, ``cos`` and ``sin`` are nda's portable ones (``log01``, ``cossin_2pi``), not a
math library's.

The kernels take ``(nblocks, counter_lo, counter_hi, k0, k1, parameters..., out, n)`` and
write values ``0 .. n-1`` of a request whose block ``b`` is Philox at counter
``counter + b``; a caller may run a sub-range of blocks ``s ..`` as its own request at
counter ``counter + s`` into ``out + s * per_block`` (the values depend on the block
number alone), which is how the cpu backend splits a request over threads.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import _philox as ref

__all__ = ["source", "INTEGER_TYPES", "HEADER_PATH", "check", "write"]

#: C types of the integer dtypes (the ``integers`` kernels are generated per dtype), and signedness.
INTEGER_TYPES = {
    "int8": ("signed char", True),
    "int16": ("short", True),
    "int32": ("int", True),
    "int64": ("long long", True),
    "uint8": ("unsigned char", False),
    "uint16": ("unsigned short", False),
    "uint32": ("unsigned int", False),
    "uint64": ("unsigned long long", False),
}

#: The committed copy of :func:`source` that the host extension includes (in a source checkout).
HEADER_PATH = Path(__file__).resolve().parent.parent / "_philox_kernels.h"

_PRELUDE = r"""
/* The kernels are written once, for a CUDA thread and for the host alike: a kernel is a loop
   over its Philox blocks (NDA_BLOCKS(b, x, T, PER) ... NDA_END_BLOCKS: block b's four words in
   x, PER values of type T a block) whose body computes the block's values and stores value j
   with NDA_OUT(j, v), which drops j >= n. What differs between compilers is these macros and
   the rounding ones (DADD, DMUL, ...: each operation rounded once to nearest, never fused). */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define NDA_DEVICE __device__ __forceinline__
#define NDA_KERNEL extern "C" __global__ void
/* a grid-stride loop: the thread of global index i computes blocks i, i + the grid's size, ... */
#define NDA_BLOCKS(b, x, T, PER)                                                                     \
    for (unsigned long long b = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; b < nblocks; \
         b += (unsigned long long)gridDim.x * blockDim.x) {                                           \
        unsigned int x[4];                                                                           \
        nda_block(b, clo, chi, k0, k1, x);
#define NDA_OUT(j, v) if ((j) < n) out[j] = (v)
#define NDA_END_BLOCKS }
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
#define NDA_FREXP(x, e) frexp((x), (e))
#define NDA_RINT(x) rint(x)
#else
/* Host C: IEEE binary64/binary32 arithmetic, each operation rounded once (compile with
   -ffp-contract=off and without -ffast-math; the NumPy kernels are the reference). */
#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ != 0 && __FLT_EVAL_METHOD__ != -1
#error "nda's Philox kernels need IEEE arithmetic without excess precision (x87: compile with -msse2 -mfpmath=sse)"
#endif
#include <math.h>
#include <string.h>
#define NDA_DEVICE static inline
#ifndef NDA_KERNEL
#define NDA_KERNEL void
#endif
/* Blocks in tiles of NDA_TILE: the tile's words first (nda_tile), then the body for each block of
   the tile, its values stored in the tile's own buffer, copied out at the end (all but the values
   j >= n). Neither loop has a branch or a conditional store, so the compiler vectorises both. */
#define NDA_TILE 64
#define NDA_BLOCKS(b, x, T, PER)                                                                     \
    for (unsigned long long nda_b0 = 0; nda_b0 < nblocks; nda_b0 += NDA_TILE) {                      \
        unsigned int nda_w[4][NDA_TILE];                                                             \
        T nda_v[(PER) * NDA_TILE];                                                                   \
        const unsigned long long nda_j0 = nda_b0 * (PER), nda_per = (PER);                           \
        const int nda_m = nblocks - nda_b0 < NDA_TILE ? (int)(nblocks - nda_b0) : NDA_TILE;          \
        nda_tile(nda_b0, nda_m, clo, chi, k0, k1, nda_w);                                            \
        for (int nda_i = 0; nda_i < nda_m; ++nda_i) {                                                \
            const unsigned long long b = nda_b0 + (unsigned long long)nda_i;                         \
            unsigned int x[4] = {nda_w[0][nda_i], nda_w[1][nda_i], nda_w[2][nda_i], nda_w[3][nda_i]};
#define NDA_OUT(j, v) nda_v[(j) - nda_j0] = (v)
#define NDA_END_BLOCKS                                                                               \
        }                                                                                            \
        unsigned long long nda_k = n - nda_j0 < nda_per * nda_m ? n - nda_j0 : nda_per * nda_m;       \
        memcpy(out + nda_j0, nda_v, nda_k * sizeof(nda_v[0]));                                       \
    }
#define MULHI32(a, b) ((unsigned int)(((unsigned long long)(a) * (unsigned long long)(b)) >> 32))
#if defined(__SIZEOF_INT128__)
#define MUL64HI(a, b) ((unsigned long long)(((unsigned __int128)(a) * (unsigned __int128)(b)) >> 64))
#else
/* the high 64 bits of a 64x64-bit product in 32-bit limbs (no 128-bit integer type) */
static inline unsigned long long nda_mul64hi(unsigned long long a, unsigned long long b) {
    unsigned long long a0 = a & 0xffffffffULL, a1 = a >> 32, b0 = b & 0xffffffffULL, b1 = b >> 32;
    unsigned long long p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    unsigned long long mid = (p00 >> 32) + (p01 & 0xffffffffULL) + (p10 & 0xffffffffULL);
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
#define MUL64HI(a, b) nda_mul64hi((a), (b))
#endif
#define DADD(a, b) ((double)(a) + (double)(b))
#define DSUB(a, b) ((double)(a) - (double)(b))
#define DMUL(a, b) ((double)(a) * (double)(b))
#define DDIV(a, b) ((double)(a) / (double)(b))
#define DSQRT(a) sqrt(a)
#define FADD(a, b) ((float)(a) + (float)(b))
#define FMUL(a, b) ((float)(a) * (float)(b))
#define D2F(a) ((float)(a))
/* frexp for the positive normal numbers that nda_log01 sees (x >= 2**-53), from the bits */
static inline double nda_frexp(double x, int* e) {
    unsigned long long u;
    memcpy(&u, &x, sizeof u);
    *e = (int)((u >> 52) & 0x7ff) - 1022;
    u = (u & 0x800fffffffffffffULL) | 0x3fe0000000000000ULL;
    memcpy(&x, &u, sizeof u);
    return x;
}
#define NDA_FREXP(x, e) nda_frexp((x), (e))
/* rint for 0 <= x < 2**52 (nda_cossin's 4t is in [0, 4)), rounding to nearest even as rint does */
#define NDA_RINT(x) (((x) + 4503599627370496.0) - 4503599627370496.0)
#endif

/* The ten rounds of Philox4x32-10 on the words (x0, x1, x2, x3) under the key (k0, k1), in place. */
#define NDA_ROUNDS(x0, x1, x2, x3, k0, k1)                                                           \
    for (int nda_r = 0; nda_r < 10; ++nda_r) {                                                       \
        unsigned int lo0 = M0 * x0, hi0 = MULHI32(M0, x0);                                           \
        unsigned int lo1 = M1 * x2, hi1 = MULHI32(M1, x2);                                           \
        unsigned int n0 = hi1 ^ x1 ^ k0, n2 = hi0 ^ x3 ^ k1;                                         \
        x0 = n0; x1 = lo1; x2 = n2; x3 = lo0;                                                        \
        k0 += W0; k1 += W1;                                                                          \
    }

/* One Philox4x32-10 block: the counter (clo + b) + (chi << 64), mod 2**128, under key (k0, k1). */
NDA_DEVICE void nda_block(unsigned long long b, unsigned long long clo, unsigned long long chi,
                          unsigned int k0, unsigned int k1, unsigned int x[4]) {
    unsigned long long lo = clo + b;
    unsigned long long hi = chi + (lo < clo ? 1ULL : 0ULL);
    x[0] = (unsigned int)lo; x[1] = (unsigned int)(lo >> 32);
    x[2] = (unsigned int)hi; x[3] = (unsigned int)(hi >> 32);
    NDA_ROUNDS(x[0], x[1], x[2], x[3], k0, k1)
}

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#if !defined(NDA_NO_SIMD) && defined(__x86_64__) && defined(__GNUC__)
/* The rounds on 8 blocks at a time with AVX2 where the CPU has it (checked at run time): the
   32x32-bit products of the even and the odd lanes (two vpmuludq), their halves blended back.
   Compilers vectorise the portable loop below too, but with twice the instructions. */
#include <immintrin.h>
#define NDA_AVX2_ROUNDS 1
__attribute__((target("avx2"))) static inline void nda_mul_avx2(__m256i x, __m256i m, __m256i* lo, __m256i* hi) {
    __m256i even = _mm256_mul_epu32(x, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}
__attribute__((target("avx2"))) static void nda_rounds_avx2(int m, unsigned int k0, unsigned int k1, unsigned int w[4][NDA_TILE]) {
    const __m256i m0 = _mm256_set1_epi32((int)M0), m1 = _mm256_set1_epi32((int)M1);
    for (int i = 0; i < m; i += 8) {
        __m256i x0 = _mm256_loadu_si256((const __m256i*)&w[0][i]), x1 = _mm256_loadu_si256((const __m256i*)&w[1][i]);
        __m256i x2 = _mm256_loadu_si256((const __m256i*)&w[2][i]), x3 = _mm256_loadu_si256((const __m256i*)&w[3][i]);
        unsigned int a = k0, c = k1;
        for (int r = 0; r < 10; ++r) {
            __m256i lo0, hi0, lo1, hi1;
            nda_mul_avx2(x0, m0, &lo0, &hi0);
            nda_mul_avx2(x2, m1, &lo1, &hi1);
            x0 = _mm256_xor_si256(_mm256_xor_si256(hi1, x1), _mm256_set1_epi32((int)a));
            x2 = _mm256_xor_si256(_mm256_xor_si256(hi0, x3), _mm256_set1_epi32((int)c));
            x1 = lo1; x3 = lo0;
            a += W0; c += W1;
        }
        _mm256_storeu_si256((__m256i*)&w[0][i], x0); _mm256_storeu_si256((__m256i*)&w[1][i], x1);
        _mm256_storeu_si256((__m256i*)&w[2][i], x2); _mm256_storeu_si256((__m256i*)&w[3][i], x3);
    }
}
#endif

/* Blocks b0 .. b0 + m - 1 (nda_block's), word k of block b0 + i in w[k][i]: the counters first
   (their 64-bit carries), then the rounds on 32-bit words only, a loop that vectorises. */
static inline void nda_tile(unsigned long long b0, int m, unsigned long long clo, unsigned long long chi,
                            unsigned int k0, unsigned int k1, unsigned int w[4][NDA_TILE]) {
    for (int i = 0; i < m; ++i) {
        unsigned long long lo = clo + b0 + (unsigned long long)i;
        unsigned long long hi = chi + (lo < clo ? 1ULL : 0ULL);
        w[0][i] = (unsigned int)lo; w[1][i] = (unsigned int)(lo >> 32);
        w[2][i] = (unsigned int)hi; w[3][i] = (unsigned int)(hi >> 32);
    }
    int i = 0;
#ifdef NDA_AVX2_ROUNDS
    if (__builtin_cpu_supports("avx2")) {
        i = m & ~7;
        nda_rounds_avx2(i, k0, k1, w);
    }
#endif
    for (; i < m; ++i) {
        unsigned int x0 = w[0][i], x1 = w[1][i], x2 = w[2][i], x3 = w[3][i], a = k0, c = k1;
        NDA_ROUNDS(x0, x1, x2, x3, a, c)
        w[0][i] = x0; w[1][i] = x1; w[2][i] = x2; w[3][i] = x3;
    }
}
#endif

/* (hi << 21 | lo >> 11) as a double: the top 53 bits of the 64-bit value lo | hi << 32, exactly
   (two 32-bit conversions and an exact sum: no 64-bit integer conversion, which SIMD lacks). */
NDA_DEVICE double nda_top53(unsigned int lo, unsigned int hi) {
    return DADD(DMUL((double)hi, 2097152.0), (double)(lo >> 11));
}

/* log(x) for x in (0, 1]: nda.ops._philox.log01, operation for operation. */
NDA_DEVICE double nda_log01(double x) {
    int e;
    double m = NDA_FREXP(x, &e);
    int small = m < SQRT_HALF;  /* then 2m (exact: m * 2 is m + m), an exponent less; no branch */
    m = DMUL(m, (double)(1 + small));
    double ef = (double)(e - small);
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
    double q = NDA_RINT(DMUL(t, 4.0));
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
    int k = ((int)q) & 3;  /* the quadrant: an odd one swaps cos and sin; cos < 0 in 1 and 2, sin in 2 and 3 */
    double co = (k & 1) ? sn : cs, so = (k & 1) ? cs : sn;
    *c = ((k + 1) & 2) ? -co : co;
    *s = (k & 2) ? -so : so;
}

NDA_DEVICE double nda_radius(double u1) { return DSQRT(DMUL(-2.0, nda_log01(u1))); }

#define NDA_ARGS unsigned long long nblocks, unsigned long long clo, unsigned long long chi, unsigned int k0, unsigned int k1

/* uniform: low + span * u, u = top53 * 2**-53 (float64, 2 values a block) or (w >> 8) * 2**-24 (float32, 4). */
NDA_KERNEL nda_uniform_f64(NDA_ARGS, double low, double span, double* out, unsigned long long n) {
    NDA_BLOCKS(b, x, double, 2)
        for (int i = 0; i < 2; ++i) {
            double u = DMUL(nda_top53(x[2 * i], x[2 * i + 1]), TWO_M53);
            NDA_OUT(2 * b + i, DADD(DMUL(u, span), low));
        }
    NDA_END_BLOCKS
}

NDA_KERNEL nda_uniform_f32(NDA_ARGS, float low, float span, float* out, unsigned long long n) {
    NDA_BLOCKS(b, x, float, 4)
        for (int i = 0; i < 4; ++i) {
            float u = FMUL((float)(x[i] >> 8), TWO_M24F);
            NDA_OUT(4 * b + i, FADD(FMUL(u, span), low));
        }
    NDA_END_BLOCKS
}

/* normal: loc + scale * z, Box-Muller in float64 on (u1, t) pairs: one a block (float64), two (float32). */
NDA_KERNEL nda_normal_f64(NDA_ARGS, double loc, double scale, double* out, unsigned long long n) {
    NDA_BLOCKS(b, x, double, 2)
        double u1 = DSUB(1.0, DMUL(nda_top53(x[0], x[1]), TWO_M53));
        double t = DMUL(nda_top53(x[2], x[3]), TWO_M53);
        double r = nda_radius(u1), c, s;
        nda_cossin(t, &c, &s);
        NDA_OUT(2 * b, DADD(DMUL(DMUL(r, c), scale), loc));
        NDA_OUT(2 * b + 1, DADD(DMUL(DMUL(r, s), scale), loc));
    NDA_END_BLOCKS
}

NDA_KERNEL nda_normal_f32(NDA_ARGS, float loc, float scale, float* out, unsigned long long n) {
    NDA_BLOCKS(b, x, float, 4)
        for (int p = 0; p < 2; ++p) {
            double u1 = DMUL(DADD((double)x[2 * p], 0.5), TWO_M32);
            double t = DMUL((double)x[2 * p + 1], TWO_M32);
            double r = nda_radius(u1), c, s;
            nda_cossin(t, &c, &s);
            NDA_OUT(4 * b + 2 * p, FADD(FMUL(D2F(DMUL(r, c)), scale), loc));
            NDA_OUT(4 * b + 2 * p + 1, FADD(FMUL(D2F(DMUL(r, s)), scale), loc));
        }
    NDA_END_BLOCKS
}

/* exponential: scale * (0 - log(u)), u in (0, 1] as u1 above (float64: 2 values a block, float32: 4). */
NDA_KERNEL nda_exponential_f64(NDA_ARGS, double scale, double* out, unsigned long long n) {
    NDA_BLOCKS(b, x, double, 2)
        for (int i = 0; i < 2; ++i) {
            double u = DSUB(1.0, DMUL(nda_top53(x[2 * i], x[2 * i + 1]), TWO_M53));
            NDA_OUT(2 * b + i, DMUL(DSUB(0.0, nda_log01(u)), scale));
        }
    NDA_END_BLOCKS
}

NDA_KERNEL nda_exponential_f32(NDA_ARGS, float scale, float* out, unsigned long long n) {
    NDA_BLOCKS(b, x, float, 4)
        for (int i = 0; i < 4; ++i) {
            double u = DMUL(DADD((double)x[i], 0.5), TWO_M32);
            NDA_OUT(4 * b + i, FMUL(D2F(DSUB(0.0, nda_log01(u))), scale));
        }
    NDA_END_BLOCKS
}

/* integers: low + floor(U * span / 2**64), U = x[2i] | x[2i+1] << 32 (two values a block). */
#define NDA_INTEGERS_NARROW(NAME, T, CAST)                                                             \
NDA_KERNEL NAME(NDA_ARGS, unsigned long long low, unsigned long long span, T* out, unsigned long long n) { \
    NDA_BLOCKS(b, x, T, 2)                                                                          \
        for (int i = 0; i < 2; ++i) {                                                               \
            unsigned long long u = (unsigned long long)x[2 * i] | ((unsigned long long)x[2 * i + 1] << 32); \
            NDA_OUT(2 * b + i, (T)(CAST)(MUL64HI(u, span) + low));                                 \
        }                                                                                           \
    NDA_END_BLOCKS                                                                                  \
}
/* integers: low + floor(U * span / 2**128), U = x0 | x1 << 32 | x2 << 64 | x3 << 96 (a block a value);
   full != 0 means span = 2**64 (the result is then U's high 64 bits). */
#define NDA_INTEGERS_WIDE(NAME, T, CAST)                                                               \
NDA_KERNEL NAME(NDA_ARGS, unsigned long long low, unsigned long long span, int full, T* out, unsigned long long n) { \
    NDA_BLOCKS(b, x, T, 1)                                                                          \
        unsigned long long ulo = (unsigned long long)x[0] | ((unsigned long long)x[1] << 32);      \
        unsigned long long uhi = (unsigned long long)x[2] | ((unsigned long long)x[3] << 32);      \
        unsigned long long m = MUL64HI(ulo, span), lo = uhi * span, hi = MUL64HI(uhi, span);        \
        unsigned long long r = full ? uhi : hi + ((lo + m) < lo ? 1ULL : 0ULL);                     \
        NDA_OUT(b, (T)(CAST)(r + low));                                                             \
    NDA_END_BLOCKS                                                                                  \
}
"""


def _c(value: float) -> str:
    """A C literal for a float64 (``repr`` round-trips exactly; a correctly rounding compiler reads it back)."""
    text = repr(float(value))
    return text if ("." in text or "e" in text) else text + ".0"


def _horner(var: str, coeffs: tuple[float, ...]) -> str:
    return " ".join(f"{var} = DADD(DMUL({var}, z), {_c(c)});" for c in coeffs[-2::-1])


def source() -> str:
    """The C/CUDA source of every kernel, with the constants of :mod:`nda.ops._philox`."""
    defines = [
        f"#define M0 {ref.M0:#x}U",
        f"#define M1 {ref.M1:#x}U",
        f"#define W0 {ref.W0:#x}U",
        f"#define W1 {ref.W1:#x}U",
        f"#define SQRT_HALF {_c(ref.SQRT_HALF)}",
        f"#define TWO_PI {_c(ref.TWO_PI)}",
        f"#define LN2_HI {_c(ref.LN2_HI)}",
        f"#define LN2_LO {_c(ref.LN2_LO)}",
        f"#define LOG_LAST {_c(ref.LOG_COEFFS[-1])}",
        f"#define LOG_HORNER {_horner('p', ref.LOG_COEFFS)}",
        f"#define SIN_LAST {_c(ref.SIN_COEFFS[-1])}",
        f"#define SIN_HORNER {_horner('ps', ref.SIN_COEFFS)}",
        f"#define COS_LAST {_c(ref.COS_COEFFS[-1])}",
        f"#define COS_HORNER {_horner('pc', ref.COS_COEFFS)}",
        f"#define TWO_M53 {_c(2.0**-53)}",
        f"#define TWO_M32 {_c(2.0**-32)}",
        f"#define TWO_M24F {_c(2.0**-24)}f",
    ]
    assert ref.ROUNDS == 10
    integer_kernels = []
    for name, (ctype, signed) in INTEGER_TYPES.items():
        cast = "long long" if signed else "unsigned long long"
        integer_kernels.append(f"NDA_INTEGERS_NARROW(nda_integers_{name}, {ctype}, {cast})")
        if name.endswith("64"):
            integer_kernels.append(f"NDA_INTEGERS_WIDE(nda_integers_wide_{name}, {ctype}, {cast})")
    head = (
        "/* Generated by `python -m nda.ops._philox_source --write` from nda.ops._philox: do not edit.\n"
        "   nda's Philox4x32-10 kernels (CUDA for nda-cuda, C for nda._philox_native). */"
    )
    return "\n".join([head, *defines, _PRELUDE, *integer_kernels, ""])


def check() -> bool:
    """Whether the committed ``_philox_kernels.h`` is :func:`source` (False where it is missing or stale)."""
    try:
        return HEADER_PATH.read_text() == source()
    except OSError:
        return False


def write() -> None:
    """Rewrite the committed ``_philox_kernels.h`` from :func:`source`."""
    HEADER_PATH.write_text(source())


def main(argv: list[str]) -> int:
    if "--write" in argv:
        write()
        print(f"wrote {HEADER_PATH}")
        return 0
    current = check()
    print(f"{HEADER_PATH} is " + ("current" if current else "stale (python -m nda.ops._philox_source --write)"))
    return 0 if current else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
