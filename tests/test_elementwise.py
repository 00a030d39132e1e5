"""Element-wise ops against NumPy: every unary/binary op of the catalog, every declared dtype.

The expected values come from NumPy functions named in this file (not from the op
catalog's ``reference``), so the tests check nda's catalog, promotion, casting and
operator plumbing independently of nda's own choice of kernels.

Documented exceptions to "same dtype as NumPy" (see ``nda/ops/elementwise.py``):

* ops of a floating category given integer or bool input compute in float64
  (NumPy would pick e.g. float16 for ``sqrt(int8)``);
* an op only accepts the dtypes of its category (``add`` of two bools raises TypeError
  where NumPy computes a logical or; complex comparisons raise), except for the float64
  fallback above.
"""

from __future__ import annotations

import functools
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda
from _helpers import (
    ALL_DTYPES,
    BY_NAME,
    INT_DTYPES,
    arrays,
    assert_same,
    is_int,
    np_dtype,
    to_nda,
)

CATALOG = nda.ops.CATALOG


def _standard_tanh(x):
    """NumPy's tanh; the standard fixes ``tanh(±inf + bj)`` for finite ``b`` at ``±1 + 0j`` with b's sign on the zero."""
    result = np.asarray(np.tanh(x))
    if result.dtype.kind == "c":
        z = np.asarray(x)
        edge = np.isinf(z.real) & np.isfinite(z.imag)
        result = np.where(edge, np.where(z.real > 0, 1.0, -1.0) + 1j * np.where(np.signbit(z.imag), -0.0, 0.0), result).astype(result.dtype)
    return result


def _standard_expm1(x):
    """NumPy's expm1; for complex input with a non-finite part the standard's cases are those of ``exp(x) - 1``."""
    result = np.asarray(np.expm1(x))
    if result.dtype.kind == "c":
        z = np.asarray(x)
        with np.errstate(all="ignore"):
            result = np.where(np.isfinite(z), result, np.exp(z) - 1).astype(result.dtype)
        fixed = np.empty_like(result)
        fixed.real = np.where(z == 0, 0.0, result.real)  # expm1(±0 ± 0j) is +0 ± 0j
        fixed.imag = result.imag
        result = fixed
    return result


NUMPY_UNARY = {
    "abs": np.abs,
    "acos": np.acos,
    "acosh": np.acosh,
    "asin": np.asin,
    "asinh": np.asinh,
    "atan": np.atan,
    "atanh": np.atanh,
    "bitwise_invert": np.bitwise_invert,
    "ceil": np.ceil,
    "conj": np.conj,
    "cos": np.cos,
    "cosh": np.cosh,
    "exp": np.exp,
    "expm1": _standard_expm1,
    "floor": np.floor,
    "imag": np.imag,
    "isfinite": np.isfinite,
    "isinf": np.isinf,
    "isnan": np.isnan,
    "log": np.log,
    "log1p": np.log1p,
    "log2": np.log2,
    "log10": np.log10,
    "logical_not": np.logical_not,
    "negative": np.negative,
    "positive": np.positive,
    "real": np.real,
    "reciprocal": np.reciprocal,
    "round": np.round,
    "sign": np.sign,
    "signbit": np.signbit,
    "sin": np.sin,
    "sinh": np.sinh,
    "square": np.square,
    "sqrt": np.sqrt,
    "tan": np.tan,
    "tanh": _standard_tanh,
    "trunc": np.trunc,
}


def _standard_floor_divide(a, b, out=None, **kwargs):
    """NumPy's floor_divide with the standard's special cases: ``±inf // finite`` is ``±inf``
    and ``finite // ±inf`` is a signed zero (NumPy gives NaN and -1 or 0 there)."""
    result = np.asarray(np.floor_divide(a, b, out=out, **kwargs))
    if result.dtype.kind == "f":
        a64, b64 = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
        inf_num = np.isinf(a64) & np.isfinite(b64) & (b64 != 0)
        zero_res = np.isfinite(a64) & np.isinf(b64)
        negative = np.signbit(a64) != np.signbit(b64)
        fixed = np.where(inf_num, np.where(negative, -np.inf, np.inf), result)
        fixed = np.where(zero_res, np.where(negative, -0.0, 0.0), fixed).astype(result.dtype)
        if out is None:
            return fixed
        out[...] = fixed
    return result if out is None else out


NUMPY_BINARY = {
    "add": np.add,
    "atan2": np.atan2,
    "bitwise_and": np.bitwise_and,
    "bitwise_left_shift": np.bitwise_left_shift,
    "bitwise_or": np.bitwise_or,
    "bitwise_right_shift": np.bitwise_right_shift,
    "bitwise_xor": np.bitwise_xor,
    "copysign": np.copysign,
    "divide": np.divide,
    "equal": np.equal,
    "floor_divide": _standard_floor_divide,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "hypot": np.hypot,
    "less": np.less,
    "less_equal": np.less_equal,
    "logaddexp": np.logaddexp,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "multiply": np.multiply,
    "nextafter": np.nextafter,
    "not_equal": np.not_equal,
    "pow": np.pow,
    "remainder": np.remainder,
    "subtract": np.subtract,
}

# Python operators of the ops that back one (forward form; reflected is tested with scalars).
BINARY_OPERATORS = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "pow": operator.pow,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
    "bitwise_left_shift": operator.lshift,
    "bitwise_right_shift": operator.rshift,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
}
INPLACE_OPERATORS = {
    "add": operator.iadd,
    "subtract": operator.isub,
    "multiply": operator.imul,
    "divide": operator.itruediv,
    "floor_divide": operator.ifloordiv,
    "remainder": operator.imod,
    "pow": operator.ipow,
    "bitwise_and": operator.iand,
    "bitwise_or": operator.ior,
    "bitwise_xor": operator.ixor,
    "bitwise_left_shift": operator.ilshift,
    "bitwise_right_shift": operator.irshift,
}
UNARY_OPERATORS = {
    "negative": operator.neg,
    "positive": operator.pos,
    "abs": operator.abs,
    "bitwise_invert": operator.invert,
}

UNARY_OPS = sorted(n for n, d in CATALOG.items() if d.family == "unary")
BINARY_OPS = sorted(n for n, d in CATALOG.items() if d.family == "binary")
# Categories whose ops compute integer/bool input in float64 (documented in nda/ops/elementwise.py).
# imag ("complex floating") is not one: it refuses integer input with a TypeError.
FLOATING_CATEGORIES = ("floating", "real floating")
SHIFTS = ("bitwise_left_shift", "bitwise_right_shift")

BROADCAST_SHAPES = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4)


def _cases(names):
    return [pytest.param(n, d, id=f"{n}-{d.name}") for n in names for d in CATALOG[n].supported_dtypes]


def _category_key(name: str, key: np.dtype):
    """The nda dtype an op computes in for a promoted NumPy dtype, or None if it must raise."""
    decl = CATALOG[name]
    dt = BY_NAME.get(np.dtype(key).name)
    if dt is None:
        return None
    if dt in decl.supported_dtypes:
        return dt
    if decl.dtypes in FLOATING_CATEGORIES and np.dtype(key).kind in "biu":
        return nda.float64
    return None


def _operand_elements(name: str, dtype, position: int) -> dict:
    """Element restrictions that keep NumPy from raising (negative int powers, bad shifts)."""
    if not is_int(dtype) or position != 2:
        return {}
    bits = np_dtype(dtype).itemsize * 8
    if name in SHIFTS:
        return {"min_value": 0, "max_value": bits - 1}
    if name == "pow":
        return {"min_value": 0, "max_value": 2 * bits}
    return {}


def test_every_elementwise_op_has_a_numpy_equivalent_here():
    assert sorted(NUMPY_UNARY) == UNARY_OPS
    assert sorted(NUMPY_BINARY) == BINARY_OPS
    for name in UNARY_OPS + BINARY_OPS:
        assert callable(getattr(nda, name))


# ----------------------------------------------------------------------------- unary


@pytest.mark.parametrize("name,dtype", _cases(UNARY_OPS))
@given(data=st.data())
def test_unary_matches_numpy(name, dtype, data):
    a = data.draw(arrays(dtype), label="x")
    x = to_nda(a)
    result = getattr(nda, name)(x)
    assert_same(result, NUMPY_UNARY[name](a))
    np.testing.assert_array_equal(x.asnumpy(), a)  # the input is untouched
    if name in UNARY_OPERATORS:
        assert_same(UNARY_OPERATORS[name](x), NUMPY_UNARY[name](a))


FLOATING_UNARY = [n for n in UNARY_OPS if CATALOG[n].dtypes in FLOATING_CATEGORIES]
FLOATING_BINARY = [n for n in BINARY_OPS if CATALOG[n].dtypes in FLOATING_CATEGORIES]
INT_OR_BOOL = [nda.bool] + INT_DTYPES


@pytest.mark.parametrize("name", FLOATING_UNARY)
@given(data=st.data())
def test_floating_unary_on_integers_computes_in_float64(name, data):
    """Documented: floating-category ops given integer/bool input compute in float64."""
    dtype = data.draw(st.sampled_from(INT_OR_BOOL), label="dtype")
    a = data.draw(arrays(dtype), label="x")
    result = getattr(nda, name)(to_nda(a))
    expected = NUMPY_UNARY[name](a.astype(np.float64))
    assert_same(result, expected)
    if CATALOG[name].result == "same":
        assert result.dtype is nda.float64


@pytest.mark.parametrize("name", UNARY_OPS)
def test_unary_rejects_undeclared_dtypes(name):
    decl = CATALOG[name]
    for dtype in ALL_DTYPES:
        if dtype in decl.supported_dtypes:
            continue
        if decl.dtypes in FLOATING_CATEGORIES and np_dtype(dtype).kind in "biu":
            continue  # the float64 fallback
        x = nda.asarray(np.zeros(2, np_dtype(dtype)))
        with pytest.raises(TypeError, match=rf"{name}\(\) does not support dtype {dtype.name}"):
            getattr(nda, name)(x)


def test_imag_of_integers_is_a_clear_type_error():
    """Regression: imag(int) used to plan a float64 key with no kernel (an internal DispatchError)."""
    for dtype in INT_OR_BOOL:
        with pytest.raises(TypeError, match=rf"imag\(\) does not support dtype {dtype.name}; it accepts complex floating"):
            nda.imag(nda.asarray(np.zeros(2, np_dtype(dtype))))


def test_unary_rejects_non_arrays():
    with pytest.raises(TypeError, match="expects an nda array"):
        nda.sin([1.0, 2.0])
    with pytest.raises(TypeError, match="expects an nda array"):
        nda.negative(np.ones(2))


# ----------------------------------------------------------------------------- binary


@pytest.mark.parametrize("name,dtype", _cases(BINARY_OPS))
@given(data=st.data())
def test_binary_matches_numpy(name, dtype, data):
    shapes = data.draw(BROADCAST_SHAPES, label="shapes")
    s1, s2 = shapes.input_shapes
    a = data.draw(arrays(dtype, s1, **_operand_elements(name, dtype, 1)), label="x1")
    b = data.draw(arrays(dtype, s2, **_operand_elements(name, dtype, 2)), label="x2")
    x1, x2 = to_nda(a), to_nda(b)
    expected = NUMPY_BINARY[name](a, b)
    result = getattr(nda, name)(x1, x2)
    assert_same(result, expected)
    assert result.shape == shapes.result_shape
    np.testing.assert_array_equal(x1.asnumpy(), a)
    np.testing.assert_array_equal(x2.asnumpy(), b)
    if name in BINARY_OPERATORS:
        assert_same(BINARY_OPERATORS[name](x1, x2), expected)
    # a second call hits nda's dispatch cache; it must give the same answer
    assert_same(getattr(nda, name)(x1, x2), expected)


@pytest.mark.parametrize("name", FLOATING_BINARY)
@given(data=st.data())
def test_floating_binary_on_integers_computes_in_float64(name, data):
    dtype = data.draw(st.sampled_from(INT_OR_BOOL), label="dtype")
    shapes = data.draw(BROADCAST_SHAPES, label="shapes")
    a = data.draw(arrays(dtype, shapes.input_shapes[0]), label="x1")
    b = data.draw(arrays(dtype, shapes.input_shapes[1]), label="x2")
    result = getattr(nda, name)(to_nda(a), to_nda(b))
    assert_same(result, NUMPY_BINARY[name](a.astype(np.float64), b.astype(np.float64)))
    assert result.dtype is nda.float64


@pytest.mark.parametrize("name", BINARY_OPS)
@given(data=st.data())
def test_binary_mixed_dtypes_promote(name, data):
    """Arrays of two dtypes are promoted to one key dtype (NumPy's promote_types) first."""
    d1 = data.draw(st.sampled_from(ALL_DTYPES), label="dtype1")
    d2 = data.draw(st.sampled_from(ALL_DTYPES), label="dtype2")
    key = np.promote_types(np_dtype(d1), np_dtype(d2))
    compute = _category_key(name, key)
    shapes = data.draw(BROADCAST_SHAPES, label="shapes")
    a = data.draw(arrays(d1, shapes.input_shapes[0]), label="x1")
    elems = _operand_elements(name, compute, 2) if compute is not None and is_int(compute) else {}
    b = data.draw(arrays(d2, shapes.input_shapes[1], **(elems if is_int(d2) else {})), label="x2")
    fn = getattr(nda, name)
    if compute is None:
        with pytest.raises(TypeError, match=name):
            fn(to_nda(a), to_nda(b))
        return
    cdt = np_dtype(compute)
    expected = NUMPY_BINARY[name](a.astype(cdt), b.astype(cdt))
    assert_same(fn(to_nda(a), to_nda(b)), expected)


@pytest.mark.parametrize("name", BINARY_OPS)
def test_binary_shape_mismatch_raises(name):
    dtype = CATALOG[name].supported_dtypes[0]
    x1 = nda.asarray(np.zeros((2, 3), np_dtype(dtype)))
    x2 = nda.asarray(np.zeros((4,), np_dtype(dtype)))
    with pytest.raises(ValueError, match=r"cannot be broadcast together"):
        getattr(nda, name)(x1, x2)


@pytest.mark.parametrize("name", BINARY_OPS)
def test_binary_rejects_non_arrays(name):
    dtype = CATALOG[name].supported_dtypes[0]
    x = nda.asarray(np.zeros(2, np_dtype(dtype)))
    with pytest.raises(TypeError, match="Python scalars"):
        getattr(nda, name)(x, [1, 2])
    with pytest.raises(TypeError, match="needs at least one nda array"):
        getattr(nda, name)(1, 2)


def test_numpy_array_operand_is_refused_by_functions_and_joins_through_numpys_protocol():
    # nda's functions take nda arrays and scalars only; an operator with a NumPy array goes
    # through NumPy's protocol (ndarray.__radd__ -> __array_ufunc__), where the NumPy array
    # joins the nda array's device (the policy in nda._interop and the README).
    x = nda.asarray([1.0, 2.0], device="sim")
    with pytest.raises(TypeError, match="Python scalars"):
        nda.add(x, np.ones(2))
    for result in (x + np.ones(2), np.ones(2) + x):
        assert isinstance(result, nda.NDArray) and result.device == x.device
        assert result.tolist() == [2.0, 3.0]
    with pytest.raises(TypeError):
        x + "a"
    assert (x == "a") is False


# ----------------------------------------------------------------------------- python scalars


@functools.lru_cache(maxsize=None)
def _scalar_strategy(kind: type, name: str, dtype, position: int):
    """Python scalars of ``kind`` that make sense next to an array of ``dtype``."""
    if kind is bool:
        return st.booleans()
    if kind is int:
        if is_int(dtype):
            info = np.iinfo(np_dtype(dtype))
            lo, hi = int(info.min), int(info.max)
        else:
            lo, hi = -(2**40), 2**40
        if position == 2 and (name in SHIFTS or name == "pow"):
            bits = np_dtype(dtype).itemsize * 8 if is_int(dtype) else 64
            lo, hi = 0, bits - 1 if name in SHIFTS else 2 * bits
        return st.integers(lo, hi)
    if kind is float:
        return st.floats(allow_nan=True, allow_infinity=True)
    return st.builds(complex, st.floats(), st.floats())


SCALAR_OPS = sorted(BINARY_OPERATORS)


def _error_class(err: Exception) -> type:
    """The builtin exception class nda should raise where NumPy raised ``err``."""
    for cls in (TypeError, OverflowError, ValueError):
        if isinstance(err, cls):
            return cls
    return type(err)


@pytest.mark.parametrize("kind", [bool, int, float, complex], ids=lambda k: k.__name__)
@pytest.mark.parametrize("name", SCALAR_OPS)
@given(data=st.data())
def test_python_scalar_operands_are_weak(name, kind, data):
    """``x op s`` and ``s op x`` follow NumPy 2's weak-scalar rules (NEP 50), for every declared dtype."""
    dtype = data.draw(st.sampled_from(CATALOG[name].supported_dtypes), label="dtype")
    side = data.draw(st.sampled_from(["array_first", "scalar_first"]), label="side")
    array_position = 1 if side == "array_first" else 2
    scalar = data.draw(_scalar_strategy(kind, name, dtype, 3 - array_position), label="scalar")
    a = data.draw(arrays(dtype, **_operand_elements(name, dtype, array_position)), label="x")
    pyop = BINARY_OPERATORS[name]
    x = to_nda(a)

    def call(lhs, rhs):
        return pyop(lhs, rhs) if side == "array_first" else pyop(rhs, lhs)

    # The expected value comes from the ufunc, not NumPy's operator: ``ndarray ** 2`` takes a
    # fast path (np.square) that differs from np.power for some complex values.
    ufunc = NUMPY_BINARY[name]
    try:
        expected = ufunc(a, scalar) if side == "array_first" else ufunc(scalar, a)
        np_error = None
    except (TypeError, OverflowError, ValueError) as err:
        np_error = err
    if np_error is not None:
        with pytest.raises(_error_class(np_error)):
            call(x, scalar)
        return
    key = np.result_type(a, scalar)  # NumPy 2: the Python scalar is weak
    if _category_key(name, key) is None:
        with pytest.raises(TypeError, match="does not support dtype"):
            call(x, scalar)
        return
    result = call(x, scalar)
    assert_same(result, expected)
    # the function form agrees with the operator form
    fn = getattr(nda, name)
    assert_same(fn(x, scalar) if side == "array_first" else fn(scalar, x), expected)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "bitwise_and"])
def test_out_of_range_python_int_raises_overflow(name, dtype):
    info = np.iinfo(np_dtype(dtype))
    x = nda.asarray(np.ones(3, np_dtype(dtype)))
    fn = getattr(nda, name)
    for bad in (int(info.max) + 1, int(info.min) - 1):
        with pytest.raises(OverflowError, match=rf"{bad} is out of bounds for {dtype.name}"):
            fn(x, bad)
        with pytest.raises(OverflowError, match=rf"{bad} is out of bounds for {dtype.name}"):
            fn(bad, x)
        # again, now that the dispatch cache knows (dtype, int)
        fn(x, 1)
        with pytest.raises(OverflowError, match="out of bounds"):
            BINARY_OPERATORS[name](x, bad)


@pytest.mark.parametrize(
    "dtype,scalar,expected",
    [
        ("int8", 1, "int8"),
        ("uint8", 2, "uint8"),
        ("int16", 1.5, "float64"),
        ("float32", 1, "float32"),
        ("float32", 2.5, "float32"),
        ("float32", 1j, "complex64"),
        ("float64", 1j, "complex128"),
        ("int32", 1j, "complex128"),
        ("bool", 1, "int64"),
        ("bool", 1.0, "float64"),
        ("complex64", 2.0, "complex64"),
        ("uint64", 3, "uint64"),
    ],
)
def test_weak_scalar_result_dtypes(dtype, scalar, expected):
    a = np.arange(1, 4).astype(dtype)
    x = to_nda(a)
    assert (a * scalar).dtype == np.dtype(expected)  # the NumPy 2 rule this mirrors
    assert (x * scalar).dtype.name == expected
    assert (scalar * x).dtype.name == expected
    assert_same(x * scalar, a * scalar)
    assert_same(x / 2.0, a / 2.0)
    assert_same(2 - x if dtype != "bool" else x & True, 2 - a if dtype != "bool" else a & True)


# ----------------------------------------------------------------------------- in-place


def _target_shape_and_other(data):
    target = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), label="target shape")
    k = data.draw(st.integers(0, len(target)), label="other ndim")
    other = tuple(n if data.draw(st.booleans(), label="keep") else 1 for n in target[len(target) - k :])
    return target, other


@pytest.mark.parametrize("other_kind", ["same dtype", "other dtype", "scalar"])
@pytest.mark.parametrize("name", sorted(INPLACE_OPERATORS))
@given(data=st.data())
def test_inplace_operators(name, other_kind, data):
    """``x op= y`` stores into ``x`` (same object, same dtype) as NumPy's in-place operators do."""
    dtype = data.draw(st.sampled_from(CATALOG[name].supported_dtypes), label="dtype")
    shape, other_shape = _target_shape_and_other(data)
    a = data.draw(arrays(dtype, shape), label="x")
    if other_kind == "scalar":
        kind = data.draw(st.sampled_from([bool, int, float]), label="scalar kind")
        other_np = other = data.draw(_scalar_strategy(kind, name, dtype, 2), label="scalar")
    else:
        odt = dtype if other_kind == "same dtype" else data.draw(st.sampled_from(ALL_DTYPES), label="other dtype")
        other_np = data.draw(arrays(odt, other_shape, **_operand_elements(name, odt, 2)), label="y")
        other = to_nda(other_np)
    x = to_nda(a)
    view = x[...]
    ref = a.copy()
    try:
        # what ``ref op= other`` does, minus the ``**=`` fast path (np.square) of NumPy's operator
        NUMPY_BINARY[name](ref, other_np, out=ref, casting="same_kind")
        np_error = None
    except (TypeError, OverflowError, ValueError) as err:
        np_error = err
    promoted = np.result_type(a, other_np)
    compute = _category_key(name, promoted)
    if np_error is None and compute is None:
        np_error = TypeError()  # the op's dtype category refuses the promoted dtype
    if np_error is not None:
        with pytest.raises(_error_class(np_error)):
            INPLACE_OPERATORS[name](x, other)
        return
    y = x
    y = INPLACE_OPERATORS[name](y, other)
    assert y is x, "an in-place operator must return the same array"
    assert x.dtype is dtype
    try:
        assert_same(x, ref)
    except AssertionError:
        # NumPy itself may round differently when the output aliases an input (another inner
        # loop: e.g. complex multiply near overflow, with or without FMA); x op y computed
        # out of place and stored is then just as right.
        assert_same(x, np.asarray(NUMPY_BINARY[name](a, other_np)).astype(a.dtype))
    assert_same(view, x.asnumpy())  # a view taken before sees the new values


@pytest.mark.parametrize("name", sorted(INPLACE_OPERATORS))
def test_inplace_cannot_broadcast_the_target(name):
    dtype = CATALOG[name].supported_dtypes[-1]
    x = nda.asarray(np.ones(3, np_dtype(dtype)))
    y = nda.asarray(np.ones((2, 3), np_dtype(dtype)))
    for _ in range(2):  # the second time goes through the in-place cache
        with pytest.raises(ValueError, match=r"does not fit the target's shape \(3,\)"):
            INPLACE_OPERATORS[name](x, y)
    np.testing.assert_array_equal(x.asnumpy(), np.ones(3))


def test_inplace_refuses_unsafe_kind_change():
    x = nda.asarray(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match="cannot store the float64 result in place in a int32 array"):
        x += 1.5
    with pytest.raises(TypeError, match="in place"):
        x /= 2
    np.testing.assert_array_equal(x.asnumpy(), np.arange(3))


def test_inplace_through_a_view_changes_the_base():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = to_nda(a)
    row = x[1]
    row += 100
    a[1] += 100
    assert_same(x, a)
    col = x[:, ::2]
    col *= 2
    a[:, ::2] *= 2
    assert_same(x, a)
