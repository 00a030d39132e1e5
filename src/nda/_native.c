/* nda._native: the element-wise fast paths of nda._elementwise, in C (optional).
 *
 * An operator of NDArray (``x + y``, ``x * 0.5``, ``-x``) is, in Python, a function that the
 * interpreter reaches through the type's number slot: a frame, a dozen attribute loads, a
 * dict lookup, an object created and five slots stored around the kernel call. This module
 * gives nda._elementwise two callable types, BinaryOp and UnaryOp, that do exactly what the
 * Python fast path does, and call the Python operator for everything else:
 *
 *   - both operands NDArrays (or the array and a Python float), an entry in the op's cache
 *     for their metadata, equal shapes, not 0-d, and ``size < engine.state.limit``: the
 *     kernel runs right here on the buffers, and the result is an NDArray with the entry's
 *     metadata (the slots are written at the offsets of NDArray's member descriptors);
 *   - anything else (broadcasting, Python ints, 0-d results, a cache miss, a busy engine,
 *     interceptors on the calling thread, an operand the engine keeps as failed): the Python
 *     operator, unchanged.
 *
 * The types are method descriptors (Py_TPFLAGS_METHOD_DESCRIPTOR), so the interpreter calls
 * them with the array first, without binding, like a Python function in the class dict.
 * Nothing here keeps state beyond what configure() is given once at import: NDArray, the
 * offsets of its slots, the engine state object and the offsets of its ``limit`` and ``failed``
 * slots (failed: the dict of failed arrays the engine keeps, looked in only while not empty); and
 * (configure_interception) nda._intercept's ACTIVE list and its thread-local stacks: whether the
 * calling thread intercepts calls is its own flag, read here only while ACTIVE[0] is not 0.
 * NDA_NATIVE=0 makes nda use the Python fast paths (the suite runs both).
 *
 * Layer: arrays and front end, generators (README, "Architecture").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyTypeObject *ndarray_type = NULL;
static Py_ssize_t off_buf, off_meta, off_shape, off_size, off_base, off_limit, off_failed;
static PyObject *engine_state = NULL;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static Py_ssize_t member_offset(PyObject *descr) {
    if (!PyObject_TypeCheck(descr, &PyMemberDescr_Type)) {
        PyErr_SetString(PyExc_TypeError, "nda._native.configure: expected slot member descriptors");
        return -1;
    }
    return ((PyMemberDescrObject *)descr)->d_member->offset;
}

static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *type, *d_buf, *d_meta, *d_shape, *d_size, *d_base, *state, *d_limit, *d_failed;
    if (!PyArg_ParseTuple(args, "O!OOOOOOOO", &PyType_Type, &type, &d_buf, &d_meta, &d_shape, &d_size, &d_base, &state, &d_limit, &d_failed))
        return NULL;
    Py_ssize_t offs[7];
    PyObject *descrs[7] = {d_buf, d_meta, d_shape, d_size, d_base, d_limit, d_failed};
    for (int i = 0; i < 7; i++) {
        offs[i] = member_offset(descrs[i]);
        if (offs[i] < 0) return NULL;
    }
    Py_XSETREF(ndarray_type, (PyTypeObject *)Py_NewRef(type));
    Py_XSETREF(engine_state, Py_NewRef(state));
    off_buf = offs[0]; off_meta = offs[1]; off_shape = offs[2]; off_size = offs[3]; off_base = offs[4]; off_limit = offs[5];
    off_failed = offs[6];
    Py_RETURN_NONE;
}

static PyObject *active_list = NULL, *intercept_local = NULL, *str_stack = NULL, *str_pushed = NULL;

/* Whether the calling thread has interceptors (nda._intercept): ``ACTIVE[0] and local.stack.pushed``.
 * 1 also when that cannot be told (not configured, an error): the Python path decides then. */
static int intercepting(void) {
    if (active_list == NULL) return 1;
    Py_ssize_t n = PyLong_AsSsize_t(PyList_GET_ITEM(active_list, 0));
    if (n == 0) return 0;  /* nobody intercepts: one list read */
    if (n == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
    }
    PyObject *stack = PyObject_GetAttr(intercept_local, str_stack);
    if (stack == NULL) {
        PyErr_Clear();
        return 1;
    }
    PyObject *pushed = PyObject_GetAttr(stack, str_pushed);
    Py_DECREF(stack);
    if (pushed == NULL) {
        PyErr_Clear();
        return 1;
    }
    Py_ssize_t depth = PyLong_AsSsize_t(pushed);
    Py_DECREF(pushed);
    if (depth == -1 && PyErr_Occurred()) PyErr_Clear();
    return depth != 0;
}

static PyObject *configure_interception(PyObject *module, PyObject *args) {
    PyObject *active, *local;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &active, &local)) return NULL;
    if (PyList_GET_SIZE(active) != 1) {
        PyErr_SetString(PyExc_ValueError, "nda._native.configure_interception: ACTIVE is a list of one count");
        return NULL;
    }
    if (str_stack == NULL && (str_stack = PyUnicode_InternFromString("stack")) == NULL) return NULL;
    if (str_pushed == NULL && (str_pushed = PyUnicode_InternFromString("pushed")) == NULL) return NULL;
    Py_XSETREF(active_list, Py_NewRef(active));
    Py_XSETREF(intercept_local, Py_NewRef(local));
    Py_RETURN_NONE;
}

/* Whether ``x`` (an NDArray; anything else is not) or the base it views is among the failed
 * arrays the engine keeps, ``failed`` (``id(array)`` -> entry, not empty). 1 also when that
 * cannot be told: the Python path decides then. */
static int is_failed(PyObject *failed, PyObject *x) {
    if (x == NULL || Py_TYPE(x) != ndarray_type) return 0;
    PyObject *candidates[2] = {x, SLOT(x, off_base)};
    for (int i = 0; i < 2; i++) {
        PyObject *c = candidates[i];
        if (c == NULL || c == Py_None) continue;
        PyObject *key = PyLong_FromVoidPtr(c);  /* id(c) */
        if (key == NULL) {
            PyErr_Clear();
            return 1;
        }
        int found = PyDict_Contains(failed, key);
        Py_DECREF(key);
        if (found != 0) {
            if (found < 0) PyErr_Clear();
            return 1;
        }
    }
    return 0;
}

/* Whether ``a`` or ``b`` (NULL: none) is a failed array the engine keeps: ``engine.state.failed``,
 * a dict that is empty unless a failure is kept (then one lookup per array). */
static int touches_failed(PyObject *a, PyObject *b) {
    PyObject *failed = SLOT(engine_state, off_failed);
    if (failed == NULL || !PyDict_CheckExact(failed)) return 1;
    if (PyDict_GET_SIZE(failed) == 0) return 0;
    return is_failed(failed, a) || is_failed(failed, b);
}

/* ``size < engine.state.limit``, no interceptor on this thread, and neither ``a`` nor ``b`` a
 * failed array the engine keeps: 1, 0, or -1 with an exception. */
static int runs_inline(PyObject *size, PyObject *a, PyObject *b) {
    PyObject *limit = SLOT(engine_state, off_limit);
    if (limit == NULL || size == NULL || !PyLong_CheckExact(size) || !PyLong_CheckExact(limit)) return 0;
    Py_ssize_t n = PyLong_AsSsize_t(size), most = PyLong_AsSsize_t(limit);
    if ((n == -1 || most == -1) && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;  /* does not fit: the Python operator decides */
    }
    return n < most && !intercepting() && !touches_failed(a, b);
}

/* A new NDArray around ``buf`` (a new reference, stolen), with ``meta``, ``shape`` and ``size``. */
static PyObject *new_array(PyObject *buf, PyObject *meta, PyObject *shape, PyObject *size) {
    PyObject *out = ndarray_type->tp_alloc(ndarray_type, 0);
    if (out == NULL) {
        Py_DECREF(buf);
        return NULL;
    }
    SLOT(out, off_buf) = buf;
    SLOT(out, off_meta) = Py_NewRef(meta);
    SLOT(out, off_shape) = Py_NewRef(shape);
    SLOT(out, off_size) = Py_NewRef(size);
    SLOT(out, off_base) = Py_NewRef(Py_None);
    return out;
}

/* ------------------------------------------------------------------------- BinaryOp */

#define MEMO_KEYS 5

/* The last entry an op found in its cache, with the key it was found under and the cache's
 * version then (CPython's dict version tag, PEP 509: every change of the dict gives it a new
 * one, unique across dicts). A call with the same key finds it without building the key tuple,
 * hashing it and looking it up; any change of the cache (an entry added, the cache cleared by
 * dispatch.invalidate) makes the memo miss, and the call takes the dict as before. Where the
 * version tag is not offered (CPython 3.12+ deprecates it), there is no memo. */
#if PY_VERSION_HEX < 0x030C0000
#define HAVE_MEMO 1
#define DICT_VERSION(d) (((PyDictObject *)(d))->ma_version_tag)
#else
#define HAVE_MEMO 0
#endif

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *cache;     /* the op's entry cache: (meta1, meta2) or (meta1, float) -> (kernel, meta) */
    PyObject *fallback;  /* the Python operator: everything the fast path does not take */
    PyObject *memo_key[MEMO_KEYS];  /* the key of memo_entry, item by item (NULL: unused) */
    PyObject *memo_entry;           /* the entry found under it, or NULL */
    uint64_t memo_version;          /* the cache's version when it was found */
} OpObject;

/* Whether two shapes are equal: the same tuple, or tuples of the same ints (no rich comparison
 * for the usual small dimensions, which are the same int objects). 1, 0 or -1 with an error. */
static int same_shape(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (!PyTuple_CheckExact(a) || !PyTuple_CheckExact(b)) return PyObject_RichCompareBool(a, b, Py_EQ);
    Py_ssize_t n = PyTuple_GET_SIZE(a);
    if (n != PyTuple_GET_SIZE(b)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PyTuple_GET_ITEM(a, i), *q = PyTuple_GET_ITEM(b, i);
        if (p == q) continue;
        int same = PyObject_RichCompareBool(p, q, Py_EQ);
        if (same != 1) return same;
    }
    return 1;
}

/* The op's cache entry for the key (key[0], ..., key[n - 1]), borrowed; NULL without an error
 * when there is none. Items of the key are compared by identity (metadata is interned), or as
 * shapes where both are tuples. */
static PyObject *find_entry(OpObject *op, PyObject *const *key, int n) {
#if HAVE_MEMO
    uint64_t version = DICT_VERSION(op->cache);
    if (op->memo_entry != NULL && op->memo_version == version) {
        int hit = 1;
        for (int i = 0; i < n && hit; i++) {
            PyObject *m = op->memo_key[i];
            if (m == key[i]) continue;
            hit = m != NULL && PyTuple_CheckExact(m) && PyTuple_CheckExact(key[i]) && same_shape(m, key[i]) == 1;
            if (PyErr_Occurred()) return NULL;
        }
        if (hit && (n == MEMO_KEYS || op->memo_key[n] == NULL)) return op->memo_entry;
    }
#endif
    PyObject *tuple = PyTuple_New(n);
    if (tuple == NULL) return NULL;
    for (int i = 0; i < n; i++) PyTuple_SET_ITEM(tuple, i, Py_NewRef(key[i]));
    PyObject *entry = PyDict_GetItemWithError(op->cache, tuple);  /* borrowed */
    Py_DECREF(tuple);
#if HAVE_MEMO
    if (entry != NULL && DICT_VERSION(op->cache) == version) {  /* unchanged while it was looked up: remember it */
        PyObject *old[MEMO_KEYS + 1];
        for (int i = 0; i < MEMO_KEYS; i++) {
            old[i] = op->memo_key[i];
            op->memo_key[i] = i < n ? Py_NewRef(key[i]) : NULL;
        }
        old[MEMO_KEYS] = op->memo_entry;
        op->memo_entry = Py_NewRef(entry);
        op->memo_version = version;
        for (int i = 0; i <= MEMO_KEYS; i++) Py_XDECREF(old[i]);  /* last: a deallocation may call back in */
    }
#endif
    return entry;
}

static PyObject *binary_vectorcall(OpObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || kwnames != NULL || ndarray_type == NULL) goto fallback;
    PyObject *x1 = args[0], *x2 = args[1];
    if (Py_TYPE(x1) != ndarray_type) goto fallback;
    PyObject *meta1 = SLOT(x1, off_meta), *shape = SLOT(x1, off_shape), *size = SLOT(x1, off_size);
    if (meta1 == NULL || shape == NULL || size == NULL || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) == 0) goto fallback;
    PyObject *second, *key[2];
    if (Py_TYPE(x2) == ndarray_type) {
        PyObject *meta2 = SLOT(x2, off_meta), *shape2 = SLOT(x2, off_shape);
        if (meta2 == NULL || shape2 == NULL) goto fallback;
        if (shape2 != shape) {
            int same = same_shape(shape, shape2);
            if (same < 0) return NULL;
            if (!same) goto fallback;  /* broadcasting: the Python operator */
        }
        second = SLOT(x2, off_buf);
        key[1] = meta2;
    } else if (Py_TYPE(x2) == &PyFloat_Type) {
        second = x2;
        key[1] = (PyObject *)&PyFloat_Type;
    } else {
        goto fallback;
    }
    key[0] = meta1;
    PyObject *entry = find_entry(op, key, 2);  /* borrowed */
    if (entry == NULL) {
        if (PyErr_Occurred()) return NULL;
        goto fallback;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) goto fallback;
    int inline_ok = runs_inline(size, x1, x2);
    if (inline_ok < 0) return NULL;
    if (!inline_ok) goto fallback;
    PyObject *first = SLOT(x1, off_buf);
    if (first == NULL || second == NULL) goto fallback;
    Py_INCREF(entry);
    PyObject *kargs[2] = {first, second};
    PyObject *buf = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 0), kargs, 2, NULL);
    PyObject *out = buf == NULL ? NULL : new_array(buf, PyTuple_GET_ITEM(entry, 1), shape, size);
    Py_DECREF(entry);
    return out;
fallback:
    return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

/* ``2.0 * x``: the reflected operator, called as (x, 2.0); the op is computed as op(2.0, x) with
 * the entry of (float, meta). Anything but a Python float on the left: the Python operator. */
static PyObject *reflected_vectorcall(OpObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || kwnames != NULL || ndarray_type == NULL) goto fallback;
    PyObject *x = args[0], *scalar = args[1];
    if (Py_TYPE(x) != ndarray_type || Py_TYPE(scalar) != &PyFloat_Type) goto fallback;
    PyObject *meta = SLOT(x, off_meta), *shape = SLOT(x, off_shape), *size = SLOT(x, off_size), *xbuf = SLOT(x, off_buf);
    if (meta == NULL || shape == NULL || size == NULL || xbuf == NULL || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) == 0) goto fallback;
    PyObject *key[2] = {(PyObject *)&PyFloat_Type, meta};
    PyObject *entry = find_entry(op, key, 2);
    if (entry == NULL) {
        if (PyErr_Occurred()) return NULL;
        goto fallback;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) goto fallback;
    int inline_ok = runs_inline(size, x, NULL);
    if (inline_ok < 0) return NULL;
    if (!inline_ok) goto fallback;
    Py_INCREF(entry);
    PyObject *kargs[2] = {scalar, xbuf};
    PyObject *buf = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 0), kargs, 2, NULL);
    PyObject *out = buf == NULL ? NULL : new_array(buf, PyTuple_GET_ITEM(entry, 1), shape, size);
    Py_DECREF(entry);
    return out;
fallback:
    return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

static PyObject *unary_vectorcall(OpObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 1 || kwnames != NULL || ndarray_type == NULL) goto fallback;
    PyObject *x = args[0];
    if (Py_TYPE(x) != ndarray_type) goto fallback;
    PyObject *meta = SLOT(x, off_meta), *shape = SLOT(x, off_shape), *size = SLOT(x, off_size), *xbuf = SLOT(x, off_buf);
    if (meta == NULL || shape == NULL || size == NULL || xbuf == NULL || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) == 0) goto fallback;
    PyObject *entry = PyDict_GetItemWithError(op->cache, meta);
    if (entry == NULL) {
        if (PyErr_Occurred()) return NULL;
        goto fallback;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) goto fallback;
    int inline_ok = runs_inline(size, x, NULL);
    if (inline_ok < 0) return NULL;
    if (!inline_ok) goto fallback;
    Py_INCREF(entry);
    PyObject *buf = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 0), &xbuf, 1, NULL);
    PyObject *out = buf == NULL ? NULL : new_array(buf, PyTuple_GET_ITEM(entry, 1), shape, size);
    Py_DECREF(entry);
    return out;
fallback:
    return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

/* ``x @ y`` (an op that plans): the arrays-only fast path of nda._planned.make_generic. The
 * cache holds (meta1, shape1, meta2, shape2, x1 is x2) -> (kernel, meta, shape, work, size)
 * for calls whose kernel takes exactly the two buffers; a view op's results are not taken. */
static PyObject *planned_vectorcall(OpObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || kwnames != NULL || ndarray_type == NULL) goto fallback;
    PyObject *x1 = args[0], *x2 = args[1];
    if (Py_TYPE(x1) != ndarray_type || Py_TYPE(x2) != ndarray_type) goto fallback;
    PyObject *m1 = SLOT(x1, off_meta), *s1 = SLOT(x1, off_shape), *m2 = SLOT(x2, off_meta), *s2 = SLOT(x2, off_shape);
    if (m1 == NULL || s1 == NULL || m2 == NULL || s2 == NULL) goto fallback;
    PyObject *key[5] = {m1, s1, m2, s2, x1 == x2 ? Py_True : Py_False};
    PyObject *entry = find_entry(op, key, 5);
    if (entry == NULL) {
        if (PyErr_Occurred()) return NULL;
        goto fallback;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 6 || PyTuple_GET_ITEM(entry, 5) != Py_False) goto fallback;
    PyObject *shape = PyTuple_GET_ITEM(entry, 2);
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) == 0) goto fallback;  /* 0-d: the Python path */
    int inline_ok = runs_inline(PyTuple_GET_ITEM(entry, 3), x1, x2);
    if (inline_ok < 0) return NULL;
    if (!inline_ok) goto fallback;
    PyObject *b1 = SLOT(x1, off_buf), *b2 = SLOT(x2, off_buf);
    if (b1 == NULL || b2 == NULL) goto fallback;
    Py_INCREF(entry);
    PyObject *kargs[2] = {b1, b2};
    PyObject *buf = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 0), kargs, 2, NULL);
    PyObject *out = buf == NULL ? NULL : new_array(buf, PyTuple_GET_ITEM(entry, 1), shape, PyTuple_GET_ITEM(entry, 4));
    Py_DECREF(entry);
    return out;
fallback:
    return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

/* ``x[i]`` and ``x[a:b:c]`` on the first axis (nda._planned.make_getitem): a view, O(1). The
 * cache maps an array's metadata to its device's getitem kernel (devices whose views are
 * never host views); the kernel gets the key as a 1-tuple, as every getitem kernel does. */
static PyObject *getitem_vectorcall(OpObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || kwnames != NULL || ndarray_type == NULL) goto fallback;
    PyObject *x = args[0], *key = args[1];
    if (Py_TYPE(x) != ndarray_type) goto fallback;
    int is_slice = PySlice_Check(key);
    if (!is_slice && !PyLong_CheckExact(key)) goto fallback;
    PyObject *meta = SLOT(x, off_meta), *shape = SLOT(x, off_shape), *size_obj = SLOT(x, off_size), *xbuf = SLOT(x, off_buf);
    if (meta == NULL || shape == NULL || size_obj == NULL || xbuf == NULL || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) == 0)
        goto fallback;
    PyObject *limit = SLOT(engine_state, off_limit);
    if (limit == NULL || !PyLong_CheckExact(limit) || PyLong_AsSsize_t(limit) <= 0 || intercepting() || touches_failed(x, NULL)) {
        if (PyErr_Occurred()) PyErr_Clear();
        goto fallback;  /* a busy engine, or this thread's interceptors */
    }
    PyObject *kernel = PyDict_GetItemWithError(op->cache, meta);
    if (kernel == NULL) {
        if (PyErr_Occurred()) return NULL;
        goto fallback;
    }
    Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, 0)), size = PyLong_AsSsize_t(size_obj);
    if ((n == -1 || size == -1) && PyErr_Occurred()) return NULL;
    Py_ssize_t inner = n ? size / n : 0, length;
    PyObject *rest = PyTuple_GetSlice(shape, 1, PyTuple_GET_SIZE(shape));
    if (rest == NULL) return NULL;
    PyObject *new_shape;
    if (is_slice) {
        PySliceObject *sl = (PySliceObject *)key;
        if ((sl->start != Py_None && !PyLong_CheckExact(sl->start)) || (sl->stop != Py_None && !PyLong_CheckExact(sl->stop)) ||
            (sl->step != Py_None && !PyLong_CheckExact(sl->step))) {
            Py_DECREF(rest);
            goto fallback;  /* 0-d array bounds are read by the planner; anything else gets its error there */
        }
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0) {
            Py_DECREF(rest);
            PyErr_Clear();
            goto fallback;
        }
        length = PySlice_AdjustIndices(n, &start, &stop, step);
        PyObject *first = PyLong_FromSsize_t(length);
        if (first == NULL) {
            Py_DECREF(rest);
            return NULL;
        }
        PyObject *head = PyTuple_Pack(1, first);
        Py_DECREF(first);
        new_shape = head == NULL ? NULL : PySequence_Concat(head, rest);
        Py_XDECREF(head);
        Py_DECREF(rest);
        if (new_shape == NULL) return NULL;
        size = length * inner;
    } else {
        Py_ssize_t i = PyLong_AsSsize_t(key);
        if (i == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            Py_DECREF(rest);
            goto fallback;
        }
        if (i < -n || i >= n || PyTuple_GET_SIZE(rest) == 0) {  /* out of range (the planner raises), or a 0-d result */
            Py_DECREF(rest);
            goto fallback;
        }
        new_shape = rest;
        size = inner;
    }
    PyObject *size_out = PyLong_FromSsize_t(size);
    PyObject *key_tuple = size_out == NULL ? NULL : PyTuple_Pack(1, key);
    if (key_tuple == NULL) {
        Py_XDECREF(size_out);
        Py_DECREF(new_shape);
        return NULL;
    }
    PyObject *kargs[2] = {xbuf, key_tuple};
    Py_INCREF(kernel);
    PyObject *buf = PyObject_Vectorcall(kernel, kargs, 2, NULL);
    Py_DECREF(kernel);
    Py_DECREF(key_tuple);
    PyObject *out = buf == NULL ? NULL : new_array(buf, meta, new_shape, size_out);
    Py_DECREF(new_shape);
    Py_DECREF(size_out);
    if (out != NULL) {
        PyObject *base = SLOT(x, off_base);
        Py_SETREF(SLOT(out, off_base), Py_NewRef(base == NULL || base == Py_None ? x : base));
    }
    return out;
fallback:
    return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

static PyObject *op_reduce(PyObject *self, PyObject *Py_UNUSED(ignored));

/* ------------------------------------------------------------------------- rows
 *
 * ``iter(x)`` (nda._planned.make_getitem's ``rows``): the rows ``x[0]``, ``x[1]``... made one
 * at a time, as ``next()`` asks for them, by the getitem op's own fast path: the row's shape and
 * size are worked out once, and each row is the kernel's view of the row plus a new NDArray.
 * A row whose fast path does not apply at that moment (a busy engine, an interceptor, a cache
 * miss) is ``x[i]`` through the Python operator, so every row is exactly what ``x[i]`` gives. */

typedef struct {
    PyObject_HEAD
    OpObject *op;      /* the GetitemOp: its kernel cache and its Python operator */
    PyObject *x;
    PyObject *rest;    /* x.shape[1:], every row's shape */
    PyObject *size;    /* a row's element count */
    PyObject *ensure;  /* for 0-d rows: the backend's ensure_buffer (a kernel may return a scalar); else None */
    Py_ssize_t i, n;
} RowsObject;

static PyTypeObject RowsType;

/* The cpu backend's getitem kernel (operator.getitem) and its buffer type (numpy.ndarray), found at
 * the first rows() call: for them a row is ``PySequence_GetItem(buf, i)``, NumPy's own fast path. */
static PyObject *host_getitem = NULL;
static PyTypeObject *host_array_type = NULL;

static int find_host_kernel(void) {
    if (host_getitem != NULL) return 0;
    PyObject *operator_module = PyImport_ImportModule("operator");
    if (operator_module == NULL) return -1;
    PyObject *getitem = PyObject_GetAttrString(operator_module, "getitem");
    Py_DECREF(operator_module);
    if (getitem == NULL) return -1;
    PyObject *numpy = PyImport_ImportModule("numpy");
    PyObject *array_type = numpy == NULL ? NULL : PyObject_GetAttrString(numpy, "ndarray");
    Py_XDECREF(numpy);
    if (array_type == NULL || !PyType_Check(array_type)) {
        Py_DECREF(getitem);
        Py_XDECREF(array_type);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "numpy.ndarray is not a type");
        return -1;
    }
    host_array_type = (PyTypeObject *)array_type;
    host_getitem = getitem;
    return 0;
}

static PyObject *rows_next(RowsObject *it) {
    if (it->i >= it->n) return NULL;  /* StopIteration */
    Py_ssize_t i = it->i++;
    PyObject *x = it->x;
    PyObject *limit = SLOT(engine_state, off_limit), *meta = SLOT(x, off_meta), *xbuf = SLOT(x, off_buf);
    PyObject *kernel = NULL;
    if (limit != NULL && PyLong_CheckExact(limit) && meta != NULL && xbuf != NULL) {
        Py_ssize_t most = PyLong_AsSsize_t(limit);
        if (most == -1 && PyErr_Occurred()) PyErr_Clear();
        kernel = most > 0 && !intercepting() && !touches_failed(x, NULL) ? PyDict_GetItemWithError(it->op->cache, meta) : NULL;  /* borrowed */
        if (kernel == NULL && PyErr_Occurred()) return NULL;
    }
    if (kernel == NULL) {  /* x[i] through the Python operator */
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL) return NULL;
        PyObject *args[2] = {x, index};
        PyObject *out = PyObject_Vectorcall(it->op->fallback, args, 2, NULL);
        Py_DECREF(index);
        return out;
    }
    PyObject *buf;
    Py_INCREF(meta);
    Py_INCREF(xbuf);
    if (kernel == host_getitem && Py_TYPE(xbuf) == host_array_type) {
        buf = PySequence_GetItem(xbuf, i);  /* numpy: a[i] is a[(i,)], without parsing a tuple */
    } else {
        PyObject *index = PyLong_FromSsize_t(i);
        PyObject *key = index == NULL ? NULL : PyTuple_Pack(1, index);
        Py_XDECREF(index);
        if (key == NULL) {
            buf = NULL;
        } else {
            Py_INCREF(kernel);
            PyObject *kargs[2] = {xbuf, key};
            buf = PyObject_Vectorcall(kernel, kargs, 2, NULL);
            Py_DECREF(kernel);
            Py_DECREF(key);
        }
    }
    Py_DECREF(xbuf);
    if (buf != NULL && it->ensure != Py_None) Py_SETREF(buf, PyObject_CallOneArg(it->ensure, buf));
    PyObject *out = buf == NULL ? NULL : new_array(buf, meta, it->rest, it->size);
    Py_DECREF(meta);
    if (out != NULL) {
        PyObject *base = SLOT(x, off_base);
        Py_SETREF(SLOT(out, off_base), Py_NewRef(base == NULL || base == Py_None ? x : base));
    }
    return out;
}

static PyObject *rows_length_hint(RowsObject *it, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(it->n > it->i ? it->n - it->i : 0);
}

static void rows_dealloc(RowsObject *it) {
    Py_XDECREF(it->op);
    Py_XDECREF(it->x);
    Py_XDECREF(it->rest);
    Py_XDECREF(it->size);
    Py_XDECREF(it->ensure);
    Py_TYPE(it)->tp_free((PyObject *)it);
}

static PyMethodDef rows_methods[] = {
    {"__length_hint__", (PyCFunction)rows_length_hint, METH_NOARGS, "rows left"},
    {NULL},
};

static PyTypeObject RowsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nda._native.Rows",
    .tp_basicsize = sizeof(RowsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "iter(x) of an NDArray: its rows x[0], x[1]... (see nda._native).",
    .tp_dealloc = (destructor)rows_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)rows_next,
    .tp_methods = rows_methods,
};

/* GetitemOp.rows(x, ensure): the iterator over x's rows (x has at least one dimension). */
static PyObject *getitem_rows(OpObject *op, PyObject *args) {
    PyObject *x, *ensure;
    if (!PyArg_ParseTuple(args, "OO", &x, &ensure)) return NULL;
    if (find_host_kernel() < 0) return NULL;
    if (ndarray_type == NULL || Py_TYPE(x) != ndarray_type) {
        PyErr_SetString(PyExc_TypeError, "GetitemOp.rows: expected an NDArray");
        return NULL;
    }
    PyObject *shape = SLOT(x, off_shape), *size_obj = SLOT(x, off_size);
    if (shape == NULL || size_obj == NULL || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d array");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, 0)), size = PyLong_AsSsize_t(size_obj);
    if ((n == -1 || size == -1) && PyErr_Occurred()) return NULL;
    RowsObject *it = PyObject_New(RowsObject, &RowsType);
    if (it == NULL) return NULL;
    it->op = (OpObject *)Py_NewRef(op);
    it->x = Py_NewRef(x);
    it->ensure = Py_NewRef(ensure);
    it->i = 0;
    it->n = n;
    it->rest = PyTuple_GetSlice(shape, 1, PyTuple_GET_SIZE(shape));
    it->size = PyLong_FromSsize_t(n ? size / n : 0);
    if (it->rest == NULL || it->size == NULL) {
        Py_DECREF(it);
        return NULL;
    }
    return (PyObject *)it;
}

static PyMethodDef getitem_methods[] = {
    {"__reduce__", op_reduce, METH_NOARGS, "pickled by its qualified name"},
    {"rows", (PyCFunction)getitem_rows, METH_VARARGS, "rows(x, ensure): iter(x), the rows of x (see nda._native)"},
    {NULL},
};

static int op_traverse(OpObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->cache);
    Py_VISIT(self->fallback);
    for (int i = 0; i < MEMO_KEYS; i++) Py_VISIT(self->memo_key[i]);
    Py_VISIT(self->memo_entry);
    return 0;
}

static int op_clear(OpObject *self) {
    Py_CLEAR(self->cache);
    Py_CLEAR(self->fallback);
    for (int i = 0; i < MEMO_KEYS; i++) Py_CLEAR(self->memo_key[i]);
    Py_CLEAR(self->memo_entry);
    return 0;
}

static void op_dealloc(OpObject *self) {
    PyObject_GC_UnTrack(self);
    op_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *op_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *cache, *fallback;
    if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &cache, &fallback)) return NULL;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "the fallback must be callable");
        return NULL;
    }
    OpObject *self = (OpObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->cache = Py_NewRef(cache);
    self->fallback = Py_NewRef(fallback);
    return (PyObject *)self;
}

/* Looked up on an instance (``x.__add__``), the op binds like a function. */
static PyObject *op_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *op_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    return PyVectorcall_Call(self, args, kwargs);
}

static PyObject *op_getattro(PyObject *self, PyObject *name) {
    /* __name__, __wrapped__...: those of the Python operator it stands for (__doc__: op_get_doc) */
    PyObject *found = PyObject_GenericGetAttr(self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
    PyErr_Clear();
    return PyObject_GetAttr(((OpObject *)self)->fallback, name);
}

/* Pickled by name, as the Python function it stands for (``nda.log``, ``NDArray.__add__``). */
static PyObject *op_reduce(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    return PyObject_GetAttrString(((OpObject *)self)->fallback, "__qualname__");
}

/* ``__doc__``: the Python function's, as a data descriptor of the type, so that pydoc and inspect
 * (which read it past __getattribute__) find it too. */
static PyObject *op_get_doc(PyObject *self, void *Py_UNUSED(closure)) {
    return PyObject_GetAttrString(((OpObject *)self)->fallback, "__doc__");
}

static PyGetSetDef op_getset[] = {
    {"__doc__", op_get_doc, NULL, NULL, NULL},
    {NULL},
};

static PyMethodDef op_methods[] = {
    {"__reduce__", op_reduce, METH_NOARGS, "pickled by its qualified name"},
    {NULL},
};

static PyMemberDef op_members[] = {
    {"cache", T_OBJECT, offsetof(OpObject, cache), READONLY, "the op's entry cache"},
    {"fallback", T_OBJECT, offsetof(OpObject, fallback), READONLY, "the Python operator"},
    {NULL},
};

static PyTypeObject BinaryOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nda._native.BinaryOp",
    .tp_basicsize = sizeof(OpObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A binary operator of NDArray with its fast path in C (see nda._native).",
    .tp_new = op_new,
    .tp_dealloc = (destructor)op_dealloc,
    .tp_traverse = (traverseproc)op_traverse,
    .tp_clear = (inquiry)op_clear,
    .tp_vectorcall_offset = offsetof(OpObject, vectorcall),
    .tp_call = op_call,
    .tp_descr_get = op_descr_get,
    .tp_getattro = op_getattro,
    .tp_members = op_members,
    .tp_methods = op_methods,
    .tp_getset = op_getset,
};

static PyTypeObject UnaryOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nda._native.UnaryOp",
    .tp_basicsize = sizeof(OpObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A unary operator of NDArray with its fast path in C (see nda._native).",
    .tp_new = op_new,
    .tp_dealloc = (destructor)op_dealloc,
    .tp_traverse = (traverseproc)op_traverse,
    .tp_clear = (inquiry)op_clear,
    .tp_vectorcall_offset = offsetof(OpObject, vectorcall),
    .tp_call = op_call,
    .tp_descr_get = op_descr_get,
    .tp_getattro = op_getattro,
    .tp_members = op_members,
    .tp_methods = op_methods,
    .tp_getset = op_getset,
};

static PyTypeObject PlannedOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nda._native.PlannedOp",
    .tp_basicsize = sizeof(OpObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "The operator of a planned binary op (x @ y) with its arrays-only fast path in C (see nda._native).",
    .tp_new = op_new,
    .tp_dealloc = (destructor)op_dealloc,
    .tp_traverse = (traverseproc)op_traverse,
    .tp_clear = (inquiry)op_clear,
    .tp_vectorcall_offset = offsetof(OpObject, vectorcall),
    .tp_call = op_call,
    .tp_descr_get = op_descr_get,
    .tp_getattro = op_getattro,
    .tp_members = op_members,
    .tp_methods = op_methods,
    .tp_getset = op_getset,
};

static PyTypeObject GetitemOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nda._native.GetitemOp",
    .tp_basicsize = sizeof(OpObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "NDArray.__getitem__ with the first-axis int/slice fast path in C (see nda._native).",
    .tp_new = op_new,
    .tp_dealloc = (destructor)op_dealloc,
    .tp_traverse = (traverseproc)op_traverse,
    .tp_clear = (inquiry)op_clear,
    .tp_vectorcall_offset = offsetof(OpObject, vectorcall),
    .tp_call = op_call,
    .tp_descr_get = op_descr_get,
    .tp_getattro = op_getattro,
    .tp_members = op_members,
    .tp_methods = getitem_methods,
    .tp_getset = op_getset,
};

static PyObject *getitem_type_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    OpObject *self = (OpObject *)op_new(type, args, kwds);
    if (self != NULL) self->vectorcall = (vectorcallfunc)getitem_vectorcall;
    return (PyObject *)self;
}

static PyTypeObject ReflectedOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nda._native.ReflectedOp",
    .tp_basicsize = sizeof(OpObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A reflected operator of NDArray (2.0 * x) with its fast path in C (see nda._native).",
    .tp_new = op_new,
    .tp_dealloc = (destructor)op_dealloc,
    .tp_traverse = (traverseproc)op_traverse,
    .tp_clear = (inquiry)op_clear,
    .tp_vectorcall_offset = offsetof(OpObject, vectorcall),
    .tp_call = op_call,
    .tp_descr_get = op_descr_get,
    .tp_getattro = op_getattro,
    .tp_members = op_members,
    .tp_methods = op_methods,
    .tp_getset = op_getset,
};

static PyObject *reflected_type_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    OpObject *self = (OpObject *)op_new(type, args, kwds);
    if (self != NULL) self->vectorcall = (vectorcallfunc)reflected_vectorcall;
    return (PyObject *)self;
}

static PyObject *planned_type_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    OpObject *self = (OpObject *)op_new(type, args, kwds);
    if (self != NULL) self->vectorcall = (vectorcallfunc)planned_vectorcall;
    return (PyObject *)self;
}

static PyObject *binary_type_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    OpObject *self = (OpObject *)op_new(type, args, kwds);
    if (self != NULL) self->vectorcall = (vectorcallfunc)binary_vectorcall;
    return (PyObject *)self;
}

static PyObject *unary_type_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    OpObject *self = (OpObject *)op_new(type, args, kwds);
    if (self != NULL) self->vectorcall = (vectorcallfunc)unary_vectorcall;
    return (PyObject *)self;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(NDArray, d_buf, d_meta, d_shape, d_size, d_base, engine_state, d_limit, d_failed): the array type, the "
     "member descriptors of its slots, the engine state object and the descriptors of its limit and failed slots."},
    {"configure_interception", configure_interception, METH_VARARGS,
     "configure_interception(ACTIVE, local): nda._intercept's count of interceptors and its thread-local stacks."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "nda._native", "The element-wise fast paths of nda._elementwise, in C (optional).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    BinaryOpType.tp_new = binary_type_new;
    UnaryOpType.tp_new = unary_type_new;
    PlannedOpType.tp_new = planned_type_new;
    GetitemOpType.tp_new = getitem_type_new;
    ReflectedOpType.tp_new = reflected_type_new;
    if (PyType_Ready(&BinaryOpType) < 0 || PyType_Ready(&UnaryOpType) < 0 || PyType_Ready(&PlannedOpType) < 0 ||
        PyType_Ready(&GetitemOpType) < 0 || PyType_Ready(&ReflectedOpType) < 0 || PyType_Ready(&RowsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "BinaryOp", (PyObject *)&BinaryOpType) < 0 ||
        PyModule_AddObjectRef(m, "UnaryOp", (PyObject *)&UnaryOpType) < 0 ||
        PyModule_AddObjectRef(m, "PlannedOp", (PyObject *)&PlannedOpType) < 0 ||
        PyModule_AddObjectRef(m, "GetitemOp", (PyObject *)&GetitemOpType) < 0 ||
        PyModule_AddObjectRef(m, "ReflectedOp", (PyObject *)&ReflectedOpType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
