/* nda._philox_native: nda.random's Philox4x32-10 kernels compiled for the host (optional).
 *
 * The kernels are not written here: "_philox_kernels.h" is the one C/CUDA source that
 * nda.ops._philox_source generates (nda-cuda hands the same text to NVRTC), committed and
 * kept current by tests/test_random_native.py. This file is the CPython glue around it:
 *
 *   uniform(out, key, counter, low, span)      out: float64 or float32
 *   normal(out, key, counter, loc, scale)      out: float64 or float32
 *   exponential(out, key, counter, scale)      out: float64 or float32
 *   integers(out, key, counter, low, span)     out: an 8-, 16-, 32- or 64-bit integer type
 *
 * ``out`` is any writable C-contiguous buffer (a NumPy array); its format picks the kernel
 * and its length the number of values n, written in place: no copy, no allocation. ``key``
 * is a pair of ints in [0, 2**32), ``counter`` an int in [0, 2**128): value j of the call is
 * made from block j / per_block at counter ``counter + j / per_block`` (mod 2**128), so a
 * caller may split a request into runs of whole blocks, each with its own counter and slice
 * of the output (the cpu backend does, over threads). The float parameters are doubles,
 * rounded to float32 for a float32 buffer (nda.ops.random passes values already in the
 * dtype; one that overflows float32 is an error); integers' ``low`` and ``span`` are ints,
 * span in [1, 2**64] (above 2**32, one block a value and a 64-bit buffer only), and
 * [low, low + span) must fit in the buffer's integer type. Bad arguments raise TypeError, ValueError or
 * OverflowError naming the argument; n = 0 writes nothing. The GIL is released while a
 * request of NDA_PHILOX_NOGIL values or more runs.
 *
 * Compile with -ffp-contract=off and without -ffast-math (setup.py): the kernels' floating-
 * point operations must each round once, as NumPy's do, for the bits to be the NumPy
 * kernels' (nda.ops._philox), which stay the reference and the fallback. NDA_NATIVE=0 makes
 * nda use those instead.
 *
 * Layer: backends (the cpu backend's kernels, nda.backends.cpu_random) (README, "Architecture").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* Each kernel twice on x86-64 Linux (GCC, Clang): for AVX2 and for the baseline, picked when the
   module loads (an ifunc); the bits are the same (no FMA: AVX2 does not imply it, and
   -ffp-contract=off forbids contraction anyway). */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define NDA_KERNEL static __attribute__((target_clones("avx2", "default"))) void
#endif
#endif
#ifndef NDA_KERNEL
#define NDA_KERNEL static void
#endif
#include "_philox_kernels.h"

/* Values from which a call releases the GIL (below it, the release costs more than it frees). */
#define NDA_PHILOX_NOGIL 8192

typedef struct {
    unsigned long long clo, chi;
    unsigned int k0, k1;
} Stream;

/* key: a pair of ints in [0, 2**32); counter: an int in [0, 2**128). 0, or -1 with an exception. */
static int parse_stream(const char *fn, PyObject *key, PyObject *counter, Stream *st) {
    PyObject *seq = PySequence_Fast(key, "");
    if (seq == NULL || PySequence_Fast_GET_SIZE(seq) != 2) {
        Py_XDECREF(seq);
        PyErr_Format(PyExc_TypeError, "%s(): key must be a pair of ints in [0, 2**32), got %R", fn, key);
        return -1;
    }
    unsigned long long words[2];
    for (int i = 0; i < 2; i++) {
        PyObject *w = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyLong_Check(w)) {
            PyErr_Format(PyExc_TypeError, "%s(): key must be a pair of ints in [0, 2**32), got %R", fn, key);
            Py_DECREF(seq);
            return -1;
        }
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(w, &overflow);
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
        if (overflow || v < 0 || v > 0xFFFFFFFFLL) {
            PyErr_Format(PyExc_ValueError, "%s(): key words must be in [0, 2**32), got %R", fn, w);
            Py_DECREF(seq);
            return -1;
        }
        words[i] = (unsigned long long)v;
    }
    Py_DECREF(seq);
    st->k0 = (unsigned int)words[0];
    st->k1 = (unsigned int)words[1];
    if (!PyLong_Check(counter)) {
        PyErr_Format(PyExc_TypeError, "%s(): counter must be an int in [0, 2**128), got %s", fn, Py_TYPE(counter)->tp_name);
        return -1;
    }
    PyObject *zero = PyLong_FromLong(0), *shift = PyLong_FromLong(64);
    PyObject *high = (zero && shift) ? PyNumber_Rshift(counter, shift) : NULL;
    int negative = zero ? PyObject_RichCompareBool(counter, zero, Py_LT) : -1;
    Py_XDECREF(zero);
    Py_XDECREF(shift);
    if (high == NULL || negative < 0) { Py_XDECREF(high); return -1; }
    unsigned long long chi = negative ? 0 : PyLong_AsUnsignedLongLong(high);  /* OverflowError at 2**128 and above */
    Py_DECREF(high);
    if (negative || (chi == (unsigned long long)-1 && PyErr_Occurred())) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s(): counter must be in [0, 2**128), got %R", fn, counter);
        return -1;
    }
    st->clo = PyLong_AsUnsignedLongLongMask(counter);
    if (st->clo == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    st->chi = chi;
    return 0;
}

/* The output buffer: writable, C-contiguous, in native byte order. Its type code ('d', 'f',
   'b', 'B', 'h', ...) is returned (0 with an exception on failure). */
static char get_output(const char *fn, PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_Format(PyExc_TypeError, "%s(): out must be a writable C-contiguous buffer (a NumPy array), got %s (%S)",
                     fn, Py_TYPE(obj)->tp_name, value ? value : Py_None);
        Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
        return 0;
    }
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=') f++;
#if PY_LITTLE_ENDIAN
    else if (*f == '<') f++;
#else
    else if (*f == '>' || *f == '!') f++;
#endif
    if (f[0] == 0 || f[1] != 0 || strchr("dfbBhHiIlLqQnN", f[0]) == NULL) {
        PyErr_Format(PyExc_TypeError, "%s(): out must hold float32, float64 or integers in native byte order, got format %s",
                     fn, view->format ? view->format : "B");
        PyBuffer_Release(view);
        return 0;
    }
    return f[0];
}

static int is_float(char code, Py_ssize_t itemsize) {
    return (code == 'd' && itemsize == 8) || (code == 'f' && itemsize == 4);
}

#define WITHOUT_GIL_IF(big, stmt) do { \
        if (big) { Py_BEGIN_ALLOW_THREADS stmt; Py_END_ALLOW_THREADS } else { stmt; } \
    } while (0)

/* uniform, normal, exponential: a float buffer and one or two double parameters. */
enum { UNIFORM, NORMAL, EXPONENTIAL };
static const char *FLOAT_NAMES[] = {"uniform", "normal", "exponential"};

static PyObject *float_kernel(int which, PyObject *args) {
    const char *fn = FLOAT_NAMES[which];
    PyObject *out, *key, *counter;
    double a = 0.0, b = 0.0;
    int ok = which == EXPONENTIAL ? PyArg_ParseTuple(args, "OOOd:exponential", &out, &key, &counter, &b)
                                  : PyArg_ParseTuple(args, which == UNIFORM ? "OOOdd:uniform" : "OOOdd:normal", &out, &key, &counter, &a, &b);
    if (!ok) return NULL;
    if (!isfinite(a) || !isfinite(b)) {
        PyErr_Format(PyExc_ValueError, "%s(): the parameters must be finite", fn);
        return NULL;
    }
    Stream st;
    if (parse_stream(fn, key, counter, &st) < 0) return NULL;
    Py_buffer view;
    char code = get_output(fn, out, &view);
    if (code == 0) return NULL;
    if (!is_float(code, view.itemsize)) {
        PyErr_Format(PyExc_TypeError, "%s(): out must be float32 or float64, got format %s", fn, view.format);
        PyBuffer_Release(&view);
        return NULL;
    }
    unsigned long long n = (unsigned long long)(view.len / view.itemsize);
    int wide = code == 'd', big = n >= NDA_PHILOX_NOGIL;
    unsigned long long nblocks = wide ? (n + 1) / 2 : (n + 3) / 4;
    float fa = (float)a, fb = (float)b;
    if (!wide && (!isfinite(fa) || !isfinite(fb))) {
        PyErr_Format(PyExc_OverflowError, "%s(): the parameters must fit in float32, got %R and %R", fn,
                     PyTuple_GET_ITEM(args, 3), PyTuple_GET_ITEM(args, PyTuple_GET_SIZE(args) - 1));
        PyBuffer_Release(&view);
        return NULL;
    }
    if (n) {
        double *d = (double *)view.buf;
        float *s = (float *)view.buf;
        switch (which * 2 + !wide) {
            case 0: WITHOUT_GIL_IF(big, nda_uniform_f64(nblocks, st.clo, st.chi, st.k0, st.k1, a, b, d, n)); break;
            case 1: WITHOUT_GIL_IF(big, nda_uniform_f32(nblocks, st.clo, st.chi, st.k0, st.k1, fa, fb, s, n)); break;
            case 2: WITHOUT_GIL_IF(big, nda_normal_f64(nblocks, st.clo, st.chi, st.k0, st.k1, a, b, d, n)); break;
            case 3: WITHOUT_GIL_IF(big, nda_normal_f32(nblocks, st.clo, st.chi, st.k0, st.k1, fa, fb, s, n)); break;
            case 4: WITHOUT_GIL_IF(big, nda_exponential_f64(nblocks, st.clo, st.chi, st.k0, st.k1, b, d, n)); break;
            default: WITHOUT_GIL_IF(big, nda_exponential_f32(nblocks, st.clo, st.chi, st.k0, st.k1, fb, s, n)); break;
        }
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject *uniform(PyObject *module, PyObject *args) { (void)module; return float_kernel(UNIFORM, args); }
static PyObject *normal(PyObject *module, PyObject *args) { (void)module; return float_kernel(NORMAL, args); }
static PyObject *exponential(PyObject *module, PyObject *args) { (void)module; return float_kernel(EXPONENTIAL, args); }

/* The integers kernels of an element type: 2 values a block (narrow), or 1 (wide, 64-bit types only). */
#define RUN_NARROW(SUFFIX, T) \
    WITHOUT_GIL_IF(big, nda_integers_##SUFFIX((n + 1) / 2, st.clo, st.chi, st.k0, st.k1, low, span, (T *)view.buf, n))
#define RUN_WIDE(SUFFIX, T) \
    WITHOUT_GIL_IF(big, nda_integers_wide_##SUFFIX(n, st.clo, st.chi, st.k0, st.k1, low, span, full, (T *)view.buf, n))

/* low .. low + span - 1 must be values of the output's integer type (0, or -1 with an exception):
   the kernels add low modulo 2**64 and cast, which would wrap silently otherwise. */
static int check_integer_range(const char *fn, PyObject *low, PyObject *span, Py_ssize_t size, int is_signed) {
    int bits = (int)(8 * size);
    PyObject *one = PyLong_FromLong(1), *width = PyLong_FromLong(is_signed ? bits - 1 : bits);
    PyObject *limit = (one && width) ? PyNumber_Lshift(one, width) : NULL;  /* 2**(bits-1) or 2**bits */
    PyObject *min = limit ? (is_signed ? PyNumber_Negative(limit) : PyLong_FromLong(0)) : NULL;
    PyObject *end = PyNumber_Add(low, span);  /* one past the largest value */
    PyObject *max_end = limit;  /* one past the type's largest value */
    int ok = -1;
    if (min && end) {
        int above = PyObject_RichCompareBool(low, min, Py_GE), below = PyObject_RichCompareBool(end, max_end, Py_LE);
        if (above < 0 || below < 0) ok = -1;
        else if (above && below) ok = 0;
        else {
            PyErr_Format(PyExc_ValueError, "%s(): [low, low + span) = [%R, %R) does not fit in the output's %zd-byte %s integers",
                         fn, low, end, size, is_signed ? "signed" : "unsigned");
            ok = -1;
        }
    }
    Py_XDECREF(one); Py_XDECREF(width); Py_XDECREF(limit); Py_XDECREF(min); Py_XDECREF(end);
    return ok;
}

static PyObject *integers(PyObject *module, PyObject *args) {
    const char *fn = "integers";
    (void)module;
    PyObject *out, *key, *counter, *low_obj, *span_obj;
    if (!PyArg_ParseTuple(args, "OOOOO:integers", &out, &key, &counter, &low_obj, &span_obj)) return NULL;
    if (!PyLong_Check(low_obj) || !PyLong_Check(span_obj)) {
        PyErr_Format(PyExc_TypeError, "%s(): low and span must be ints, got %s and %s", fn,
                     Py_TYPE(low_obj)->tp_name, Py_TYPE(span_obj)->tp_name);
        return NULL;
    }
    /* low in [-2**63, 2**64): its value modulo 2**64 (two's complement for a negative low) */
    int overflow = 0;
    long long signed_low = PyLong_AsLongLongAndOverflow(low_obj, &overflow);
    if (signed_low == -1 && PyErr_Occurred()) return NULL;
    unsigned long long low = (unsigned long long)signed_low;
    if (overflow > 0) {
        low = PyLong_AsUnsignedLongLong(low_obj);
        if (low == (unsigned long long)-1 && PyErr_Occurred()) overflow = 2;
    }
    if (overflow < 0 || overflow == 2) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s(): low must be in [-2**63, 2**64), got %R", fn, low_obj);
        return NULL;
    }
    /* span in [1, 2**64]; 2**64 is `full` (the wide kernel then takes U's high 64 bits) */
    unsigned long long span = PyLong_AsUnsignedLongLong(span_obj);
    int full = 0;
    if (span == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyObject *two64 = PyLong_FromUnsignedLongLong(1ULL << 63);
        PyObject *limit = two64 ? PyNumber_Add(two64, two64) : NULL;
        Py_XDECREF(two64);
        if (limit == NULL) return NULL;
        full = PyObject_RichCompareBool(span_obj, limit, Py_EQ);
        Py_DECREF(limit);
        if (full < 0) return NULL;
        span = 0;
    }
    if (!full && span == 0) {
        PyErr_Format(PyExc_ValueError, "%s(): span must be in [1, 2**64], got %R", fn, span_obj);
        return NULL;
    }
    int wide = full || span > (1ULL << 32);
    Stream st;
    if (parse_stream(fn, key, counter, &st) < 0) return NULL;
    Py_buffer view;
    char code = get_output(fn, out, &view);
    if (code == 0) return NULL;
    int is_signed = strchr("bhilqn", code) != NULL;
    Py_ssize_t size = view.itemsize;
    if (code == 'd' || code == 'f' || !(size == 1 || size == 2 || size == 4 || size == 8)) {
        PyErr_Format(PyExc_TypeError, "%s(): out must hold 8-, 16-, 32- or 64-bit integers, got format %s", fn, view.format);
        PyBuffer_Release(&view);
        return NULL;
    }
    if (wide && size != 8) {
        PyErr_Format(PyExc_ValueError, "%s(): a span above 2**32 needs a 64-bit output, got %zd-byte integers", fn, size);
        PyBuffer_Release(&view);
        return NULL;
    }
    if (check_integer_range(fn, low_obj, span_obj, size, is_signed) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    unsigned long long n = (unsigned long long)(view.len / size);
    int big = n >= NDA_PHILOX_NOGIL;
    if (n) {
        switch (size * 2 + is_signed) {
            case 2: RUN_NARROW(uint8, unsigned char); break;
            case 3: RUN_NARROW(int8, signed char); break;
            case 4: RUN_NARROW(uint16, unsigned short); break;
            case 5: RUN_NARROW(int16, short); break;
            case 8: RUN_NARROW(uint32, unsigned int); break;
            case 9: RUN_NARROW(int32, int); break;
            case 16: if (wide) RUN_WIDE(uint64, unsigned long long); else RUN_NARROW(uint64, unsigned long long); break;
            default: if (wide) RUN_WIDE(int64, long long); else RUN_NARROW(int64, long long); break;
        }
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"uniform", uniform, METH_VARARGS, "uniform(out, key, counter, low, span): low + span * u into a float32/float64 buffer."},
    {"normal", normal, METH_VARARGS, "normal(out, key, counter, loc, scale): loc + scale * z (Box-Muller) into a float32/float64 buffer."},
    {"exponential", exponential, METH_VARARGS, "exponential(out, key, counter, scale): scale * -log(u) into a float32/float64 buffer."},
    {"integers", integers, METH_VARARGS, "integers(out, key, counter, low, span): low + floor(U * span / 2**k) into an integer buffer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "nda._philox_native",
    "nda.random's Philox4x32-10 kernels compiled for the host (nda.ops._philox_source); see src/nda/_philox_native.c.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__philox_native(void) { return PyModule_Create(&module_def); }
