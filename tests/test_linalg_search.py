"""matmul, tensordot, vecdot, where, sort and argsort against NumPy, for every declared dtype."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda
from _helpers import ALL_DTYPES, BY_NAME, arrays, assert_same, np_dtype, to_nda

CATALOG = nda.ops.CATALOG


def _cases(name, marks=None):
    marks = marks or {}
    return [pytest.param(d, id=d.name, marks=marks.get(d.name, ())) for d in CATALOG[name].supported_dtypes]


# ----------------------------------------------------------------------------- matmul


@st.composite
def matmul_shapes(draw):
    n, k, m = draw(st.integers(0, 4)), draw(st.integers(0, 4)), draw(st.integers(0, 4))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    b1, b2 = batch.input_shapes
    s1 = (k,) if draw(st.booleans()) else b1 + (n, k)
    s2 = (k,) if draw(st.booleans()) else b2 + (k, m)
    return s1, s2


@pytest.mark.parametrize("dtype", _cases("matmul"))
@given(data=st.data())
def test_matmul_matches_numpy(dtype, data):
    s1, s2 = data.draw(matmul_shapes(), label="shapes")
    a = data.draw(arrays(dtype, s1, allow_nan=False, allow_infinity=False), label="x1")
    b = data.draw(arrays(dtype, s2, allow_nan=False, allow_infinity=False), label="x2")
    x1, x2 = to_nda(a), to_nda(b)
    expected = np.matmul(a, b)
    assert_same(nda.matmul(x1, x2), expected, atol=_atol(a, b))
    assert_same(x1 @ x2, expected, atol=_atol(a, b))


def _atol(a, b):
    """Products of large floats may be summed in another order; scale the absolute tolerance."""
    if a.dtype.kind not in "fc" or not a.size or not b.size:
        return 0.0
    eps = float(np.finfo(a.dtype).eps)
    scale = float(np.max(np.abs(a.astype(np.complex128)))) * float(np.max(np.abs(b.astype(np.complex128))))
    return 8 * eps * scale * max(a.size, 1) if math.isfinite(scale) else 0.0


@given(data=st.data())
def test_matmul_promotes_mixed_dtypes(data):
    numeric = [d for d in ALL_DTYPES if d is not nda.bool]
    d1, d2 = data.draw(st.sampled_from(numeric), label="dtype1"), data.draw(st.sampled_from(numeric), label="dtype2")
    a = data.draw(arrays(d1, (2, 3), allow_nan=False, allow_infinity=False), label="x1")
    b = data.draw(arrays(d2, (3, 2), allow_nan=False, allow_infinity=False), label="x2")
    key = np.promote_types(a.dtype, b.dtype)
    result = nda.matmul(to_nda(a), to_nda(b))
    assert result.dtype is BY_NAME[key.name]
    assert_same(result, np.matmul(a.astype(key), b.astype(key)), atol=_atol(a.astype(key), b.astype(key)))


def test_matmul_errors():
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(2, 3\) are not aligned: 3 \(last axis of x1\) != 2"):
        nda.matmul(x, x)
    with pytest.raises(ValueError, match="does not accept 0-d arrays"):
        nda.matmul(x, nda.asarray(1.0))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        nda.matmul(nda.ones((2, 2, 3)), nda.ones((3, 3, 2)))
    with pytest.raises(TypeError, match=r"matmul\(\) does not support dtypes bool and bool"):
        nda.matmul(nda.ones((2, 2), dtype=nda.bool), nda.ones((2, 2), dtype=nda.bool))
    with pytest.raises(TypeError, match="expects an nda array for 'x2'"):
        nda.matmul(x, np.ones((3, 2)))


# ----------------------------------------------------------------------------- tensordot


@st.composite
def tensordot_case(draw):
    contracted = draw(st.lists(st.integers(0, 3), max_size=2))
    free1 = draw(st.lists(st.integers(0, 3), max_size=2))
    free2 = draw(st.lists(st.integers(0, 3), max_size=2))
    if draw(st.booleans()):
        return tuple(free1 + contracted), tuple(contracted + free2), len(contracted)
    # explicit axis lists: put the contracted axes at random places
    perm1 = draw(st.permutations(range(len(free1) + len(contracted))))
    perm2 = draw(st.permutations(range(len(free2) + len(contracted))))
    shape1 = [0] * len(perm1)
    shape2 = [0] * len(perm2)
    dims1 = free1 + contracted
    dims2 = contracted + free2
    for i, p in enumerate(perm1):
        shape1[p] = dims1[i]
    for i, p in enumerate(perm2):
        shape2[p] = dims2[i]
    axes1 = [perm1[len(free1) + j] for j in range(len(contracted))]
    axes2 = [perm2[j] for j in range(len(contracted))]
    return tuple(shape1), tuple(shape2), (axes1, axes2)


@pytest.mark.parametrize("dtype", _cases("tensordot"))
@given(data=st.data())
def test_tensordot_matches_numpy(dtype, data):
    s1, s2, axes = data.draw(tensordot_case(), label="case")
    a = data.draw(arrays(dtype, s1, allow_nan=False, allow_infinity=False), label="x1")
    b = data.draw(arrays(dtype, s2, allow_nan=False, allow_infinity=False), label="x2")
    expected = np.tensordot(a, b, axes=axes)
    result = nda.tensordot(to_nda(a), to_nda(b), axes=axes)
    assert_same(result, expected, atol=_atol(a, b))


def test_tensordot_errors():
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"axes=3 must be between 0 and 2"):
        nda.tensordot(x, x, axes=3)
    with pytest.raises(ValueError, match="axis 1 of x1 has size 3 but axis 0 of x2 has size 2"):
        nda.tensordot(x, x, axes=([1], [0]))
    with pytest.raises(ValueError, match="pair sequences of different lengths"):
        nda.tensordot(x, x, axes=([0, 1], [0]))


# ----------------------------------------------------------------------------- vecdot


@pytest.mark.parametrize("dtype", _cases("vecdot"))
@given(data=st.data())
def test_vecdot_matches_numpy(dtype, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=4), label="shapes")
    s1, s2 = shapes.input_shapes
    axis = data.draw(st.integers(-min(len(s1), len(s2)), -1), label="axis")
    size = data.draw(st.integers(0, 4), label="axis size")
    s1 = s1[: len(s1) + axis] + (size,) + s1[len(s1) + axis + 1 :]
    s2 = s2[: len(s2) + axis] + (size,) + s2[len(s2) + axis + 1 :]
    a = data.draw(arrays(dtype, s1, allow_nan=False, allow_infinity=False), label="x1")
    b = data.draw(arrays(dtype, s2, allow_nan=False, allow_infinity=False), label="x2")
    expected = np.vecdot(a, b, axis=axis)
    result = nda.vecdot(to_nda(a), to_nda(b), axis=axis)
    assert_same(result, expected, atol=_atol(a, b))


def test_vecdot_conjugates_the_first_argument():
    a = np.array([1 + 2j, 3 - 1j])
    b = np.array([2 - 1j, 1j])
    assert_same(nda.vecdot(to_nda(a), to_nda(b)), np.vecdot(a, b))
    assert nda.vecdot(to_nda(a), to_nda(b)).item() == np.sum(np.conj(a) * b)


def test_vecdot_errors():
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"axis -1 has size 3 in x1 \(shape \(2, 3\)\) but 2 in x2 \(shape \(3, 2\)\)"):
        nda.vecdot(x, nda.ones((3, 2)))
    with pytest.raises(ValueError, match="at least one dimension"):
        nda.vecdot(x, nda.asarray(1.0))


def test_vecdot_keeps_small_integer_dtypes():
    """Regression: the result's data must have the dtype the array reports (np.sum would widen int8)."""
    for dtype in (np.int8, np.uint16, np.int32):
        x = nda.asarray(np.array([1, 2, 3], dtype=dtype))
        result = nda.vecdot(x, x)
        assert_same(result, np.vecdot(np.array([1, 2, 3], dtype=dtype), np.array([1, 2, 3], dtype=dtype)))


# ----------------------------------------------------------------------------- where


@pytest.mark.parametrize("dtype", _cases("where"))
@given(data=st.data())
def test_where_matches_numpy(dtype, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, min_side=0, max_side=3), label="shapes")
    sc, s1, s2 = shapes.input_shapes
    cond = data.draw(arrays(nda.bool, sc), label="condition")
    a = data.draw(arrays(dtype, s1), label="x1")
    b = data.draw(arrays(dtype, s2), label="x2")
    result = nda.where(to_nda(cond), to_nda(a), to_nda(b))
    assert_same(result, np.where(cond, a, b))


@pytest.mark.parametrize("dtype", _cases("where"))
@given(data=st.data())
def test_where_with_python_scalars(dtype, data):
    cond = data.draw(arrays(nda.bool), label="condition")
    a = data.draw(arrays(dtype, cond.shape), label="x")
    kind = np_dtype(dtype).kind
    scalar = data.draw(
        {"b": st.booleans(), "i": st.integers(0, 100), "u": st.integers(0, 100), "f": st.floats(), "c": st.floats()}[kind],
        label="scalar",
    )
    expected = np.where(cond, a, scalar)
    assert_same(nda.where(to_nda(cond), to_nda(a), scalar), expected)
    assert_same(nda.where(to_nda(cond), scalar, to_nda(a)), np.where(cond, scalar, a))


def test_where_keeps_the_sign_of_a_zero_scalar():
    """Regression: memoised plans keyed 0.0 and -0.0 alike, so one call reused the other's constant."""
    cond = nda.asarray([True, False, False])
    x = nda.asarray([1.0, 2.0, 3.0])
    plus, minus = nda.where(cond, x, 0.0), nda.where(cond, x, -0.0)  # one of them reuses the other's plan
    assert_same(plus, np.where([True, False, False], [1.0, 2.0, 3.0], 0.0))
    assert_same(minus, np.where([True, False, False], [1.0, 2.0, 3.0], -0.0))


@given(data=st.data())
def test_where_promotes_mixed_dtypes(data):
    d1, d2 = data.draw(st.sampled_from(ALL_DTYPES), label="dtype1"), data.draw(st.sampled_from(ALL_DTYPES), label="dtype2")
    cond = data.draw(arrays(nda.bool, (3,)), label="condition")
    a, b = data.draw(arrays(d1, (3,)), label="x1"), data.draw(arrays(d2, (2, 1)), label="x2")
    key = np.promote_types(a.dtype, b.dtype)
    assert_same(nda.where(to_nda(cond), to_nda(a), to_nda(b)), np.where(cond, a.astype(key), b.astype(key)))


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_where_of_two_python_scalars_is_numpys(device):
    # SciPy's nsum calls where(x == 0, log(0.5), 0); nda used to raise TypeError.
    cond = np.asarray([True, False, True])
    c = nda.asarray(cond, device=device)
    for x1, x2 in [(0.5, 0), (1, 2), (True, False), (1j, 0), (True, 2.5), (2, 1.5), (-3, True)]:
        result = nda.where(c, x1, x2)
        assert result.device == c.device
        assert_same(result, np.where(cond, x1, x2))
    assert_same(nda.where(nda.asarray(np.ones((2, 1), bool), device=device), 1.0, 2), np.ones((2, 1)))


def test_where_errors():
    x = nda.asarray(np.ones(3))
    with pytest.raises(TypeError, match="condition must be a bool array, got float64"):
        nda.where(x, x, x)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        nda.where(nda.asarray([True, False]), x, x)
    with pytest.raises(TypeError, match="x2 must be an nda array or a Python scalar, got list"):
        nda.where(nda.asarray([True]), x, [1])
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        nda.where(nda.asarray([True]), nda.asarray(np.ones(1, np.int8)), 1000)


# ----------------------------------------------------------------------------- sort / argsort


def _sort_key(value):
    """A total order matching NumPy's: NaN after every number."""
    if isinstance(value, float) and math.isnan(value):
        return (1, 0.0)
    return (0, value)


def _expected_argsort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort along ``axis`` (ties keep their order, also when descending), in pure Python."""
    moved = np.moveaxis(a, axis, -1)
    out = np.empty(moved.shape, dtype=np.int64)
    for index in np.ndindex(moved.shape[:-1]):
        row = moved[index].tolist()
        out[index] = sorted(range(len(row)), key=lambda i: _sort_key(row[i]), reverse=descending)
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("dtype", _cases("sort"))
@given(data=st.data())
def test_sort_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)), label="x")
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1), label="axis")
    descending = data.draw(st.booleans(), label="descending")
    stable = data.draw(st.booleans(), label="stable")
    expected = np.sort(a, axis=axis, stable=True)
    if descending:
        expected = np.flip(expected, axis=axis)  # NaNs, sorted last ascending, come first
    result = nda.sort(to_nda(a), axis=axis, descending=descending, stable=stable)
    assert_same(result, expected)


@pytest.mark.parametrize("dtype", _cases("argsort"))
@given(data=st.data())
def test_argsort_matches_a_stable_sort(dtype, data):
    small = dict(min_value=-3, max_value=3) if np_dtype(dtype).kind in "iu" else {}
    a = data.draw(
        arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5), **small)
        | arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=5)),
        label="x",
    )
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1), label="axis")
    descending = data.draw(st.booleans(), label="descending")
    expected = _expected_argsort(a, axis, descending)
    result = nda.argsort(to_nda(a), axis=axis, descending=descending, stable=True)
    assert_same(result, expected)
    if not descending:
        assert_same(result, np.argsort(a, axis=axis, stable=True))


def test_sort_errors():
    with pytest.raises(ValueError, match=r"sort\(\) needs an array of at least one dimension"):
        nda.sort(nda.asarray(1.0))
    with pytest.raises(TypeError, match=r"argsort\(\) does not support dtype complex128"):
        nda.argsort(nda.asarray([1j]))
    with pytest.raises(TypeError, match="descending must be a bool"):
        nda.sort(nda.asarray([1.0]), descending=1)
    with pytest.raises(IndexError, match="axis 1 is out of bounds"):
        nda.sort(nda.asarray([1.0]), axis=1)
    with pytest.raises(TypeError, match=r"sort\(\) does not support dtype bool"):
        nda.sort(nda.asarray([True]))
