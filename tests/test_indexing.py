"""``x[key]`` and ``x[key] = value`` against NumPy: basic and advanced keys, views, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda
from _helpers import ALL_DTYPES, arrays, assert_same, is_bool, is_complex, is_float, np_dtype, to_nda

CATALOG = nda.ops.CATALOG
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
NONEMPTY_DIMS = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)


def _cases(name):
    return [pytest.param(d, id=d.name) for d in CATALOG[name].supported_dtypes]


def _nda_key(key):
    """The same key with NumPy index arrays replaced by nda arrays."""
    if isinstance(key, tuple):
        return tuple(_nda_key(k) for k in key)
    if isinstance(key, np.ndarray):
        return to_nda(key)
    return key


def _scalar_for(dtype):
    if is_bool(dtype):
        return st.booleans()
    if is_float(dtype):
        return st.floats(width=32 if dtype is nda.float32 else 64)
    if is_complex(dtype):
        return st.builds(complex, st.floats(width=32), st.floats(width=32))
    info = np.iinfo(np_dtype(dtype))
    return st.integers(int(info.min), int(info.max))


@st.composite
def advanced_keys(draw, shape):
    """Keys (for arrays of at least one dimension) mixing ints, slices, Ellipsis, integer arrays, lists and bool masks."""
    assert shape, "advanced keys need at least one dimension"
    kind = draw(st.sampled_from(["int arrays", "mask", "mixed", "list"]))
    if kind == "int arrays" and all(shape):
        return draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)))
    if kind == "mask":
        k = draw(st.integers(1, len(shape)))
        mask = draw(hnp.arrays(np.bool_, shape[:k]))
        return (mask,) if draw(st.booleans()) else (mask, Ellipsis)
    if kind == "list" and shape[0]:
        return (draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=4)),)
    # slices or an Ellipsis first, then an index array on the last axis
    n = shape[-1]
    length = draw(st.integers(0, 3)) if n else 0
    index = draw(hnp.arrays(np.int64, length, elements=st.integers(-n, n - 1))) if n else np.zeros(0, np.int64)
    return (Ellipsis, index) if draw(st.booleans()) else (slice(None),) * (len(shape) - 1) + (index,)


# ----------------------------------------------------------------------------- getitem


@pytest.mark.parametrize("dtype", _cases("getitem"))
@given(data=st.data())
def test_basic_indexing_matches_numpy_and_is_a_view(dtype, data):
    a = data.draw(arrays(dtype, SHAPES), label="x")
    key = data.draw(hnp.basic_indices(a.shape, allow_newaxis=True, allow_ellipsis=True), label="key")
    x = to_nda(a)
    result = x[key]
    base = a.copy()
    view_np = base[key]
    assert_same(result, np.asarray(view_np))
    # writing through the view changes the base, as in NumPy
    if isinstance(view_np, np.ndarray) and view_np.size:
        value = data.draw(_scalar_for(dtype), label="value")
        index = (0,) * view_np.ndim
        result[index] = value
        view_np[index] = value
        assert_same(x, base)


@pytest.mark.parametrize("dtype", _cases("getitem"))
@given(data=st.data())
def test_advanced_indexing_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype, NONEMPTY_DIMS), label="x")
    key = data.draw(advanced_keys(a.shape), label="key")
    x = to_nda(a)
    expected = a[key]
    result = x[_nda_key(key)]
    assert_same(result, np.asarray(expected))
    # advanced indexing copies: writing into the result leaves x alone
    if result.size:
        result[(0,) * result.ndim] = data.draw(_scalar_for(dtype), label="value")
        np.testing.assert_array_equal(x.asnumpy(), a)


def test_index_arrays_of_every_integer_dtype():
    a = np.arange(10) * 10
    x = to_nda(a)
    for dtype in ALL_DTYPES:
        if np_dtype(dtype).kind not in "iu":
            continue
        idx = np.array([3, 0, 9], dtype=np_dtype(dtype))
        assert_same(x[to_nda(idx)], a[idx])
    assert_same(x[to_nda(np.array([-1, -10]))], a[np.array([-1, -10])])
    assert_same(x[[True] * 5 + [False] * 5], a[np.array([True] * 5 + [False] * 5)])


def test_0d_array_index_works_like_an_int():
    a = np.arange(12).reshape(3, 4)
    x = to_nda(a)
    i = nda.asarray(2)
    assert_same(x[i], a[2])
    assert_same(x[1, i], a[1, 2])
    assert_same(x[nda.asarray(1) :], a[1:])  # __index__ in a slice
    assert [1, 2, 3][nda.asarray(1)] == 2


def test_getitem_of_0d_and_scalars():
    x = nda.asarray(5.0)
    assert_same(x[()], np.asarray(5.0))
    assert_same(x[...], np.asarray(5.0))
    assert_same(x[None], np.asarray([5.0]))
    y = nda.asarray(np.arange(3))
    assert y[1].shape == () and int(y[1]) == 1


def test_0d_bool_mask_on_0d_array():
    """Regression: a 0-d mask was counted as indexing one dimension ('too many indices')."""
    x = nda.asarray(5.0)
    assert_same(x[nda.asarray(True)], np.asarray(5.0)[np.asarray(True)])
    assert_same(x[nda.asarray(False)], np.asarray(5.0)[np.asarray(False)])


def test_0d_bool_mask_followed_by_an_int():
    """Regression: a 0-d mask shifted the axis later ints were bounds-checked against."""
    a = np.zeros((6, 3))
    assert_same(to_nda(a)[nda.asarray(True), 5], a[np.asarray(True), 5])


def test_empty_list_index():
    """Regression: ``x[[]]`` raised 'index arrays must have an integer or bool dtype, got float64'."""
    a = np.arange(6).reshape(2, 3)
    assert_same(to_nda(a)[[]], a[[]])


# ----------------------------------------------------------------------------- setitem


@st.composite
def value_shapes(draw, selection_shape):
    """A shape that broadcasts to ``selection_shape`` (a trailing part, some dims set to 1)."""
    k = draw(st.integers(0, len(selection_shape)))
    tail = selection_shape[len(selection_shape) - k :]
    return tuple(1 if draw(st.booleans()) else n for n in tail)


@pytest.mark.parametrize("dtype", _cases("setitem"))
@given(data=st.data())
def test_setitem_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype, SHAPES), label="x")
    key_kind = data.draw(st.sampled_from(["basic", "advanced"]), label="key kind")
    if key_kind == "basic" or not a.ndim:
        key = data.draw(hnp.basic_indices(a.shape, allow_newaxis=True, allow_ellipsis=True), label="key")
    else:
        key = data.draw(advanced_keys(a.shape), label="key")
    selection = np.asarray(a[key]).shape
    if data.draw(st.booleans(), label="scalar value"):
        value_np = value = data.draw(_scalar_for(dtype), label="value")
    else:
        vshape = data.draw(value_shapes(selection), label="value shape")
        value_np = data.draw(arrays(dtype, vshape), label="value")
        value = to_nda(value_np)
    expected = a.copy()
    expected[key] = value_np
    x = to_nda(a)
    x[_nda_key(key)] = value
    assert_same(x, expected)


@given(data=st.data())
def test_setitem_casts_values_of_the_same_kind(data):
    pairs = [
        (nda.int8, nda.int64),
        (nda.float32, nda.float64),
        (nda.complex64, nda.complex128),
        (nda.int64, nda.bool),
        (nda.float64, nda.int32),
        (nda.complex128, nda.float32),
        (nda.uint16, nda.uint8),
    ]
    target, source = data.draw(st.sampled_from(pairs), label="dtypes")
    a = data.draw(arrays(target, (3, 4)), label="x")
    v = data.draw(arrays(source, (4,), min_value=-100, max_value=100), label="value")
    expected = a.copy()
    expected[1:] = v
    x = to_nda(a)
    x[1:] = to_nda(v)
    assert_same(x, expected)


def test_setitem_with_masks_and_index_arrays():
    a = np.arange(12.0).reshape(3, 4)
    x = to_nda(a)
    x[to_nda(a > 5)] = -1.0
    a[a > 5] = -1.0
    assert_same(x, a)
    x[[0, 2], 1:3] = to_nda(np.array([[10.0, 11.0], [12.0, 13.0]]))
    a[[0, 2], 1:3] = np.array([[10.0, 11.0], [12.0, 13.0]])
    assert_same(x, a)
    x[..., to_nda(np.array([0, -1]))] = to_nda(np.array([7.0, 8.0]))
    a[..., np.array([0, -1])] = np.array([7.0, 8.0])
    assert_same(x, a)
    mask = np.array([True, False, True])
    x[to_nda(mask)] = to_nda(np.arange(4.0))  # broadcast over the selected rows
    a[mask] = np.arange(4.0)
    assert_same(x, a)


def test_views_of_views_write_through_to_the_base():
    a = np.arange(24).reshape(4, 6)
    x = to_nda(a)
    v = x[1:, ::2]
    w = v[::-1, 1]
    w[0] = 100
    a[1:, ::2][::-1, 1][0] = 100
    assert_same(x, a)
    v[...] = 0
    a[1:, ::2] = 0
    assert_same(x, a)
    assert_same(w, a[1:, ::2][::-1, 1])
    x[0] = -5  # writes to the base show through existing views
    a[0] = -5
    assert_same(x[0:2, 0], a[0:2, 0])


# ----------------------------------------------------------------------------- errors


def test_out_of_range_index_raises_index_error():
    x = nda.asarray(np.arange(6).reshape(2, 3))
    with pytest.raises(IndexError, match="index 2 is out of bounds for axis 0 with size 2"):
        x[2]
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 1 with size 3"):
        x[0, -4]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        x[..., 3]
    with pytest.raises(IndexError, match="out of bounds"):
        x[0, 3] = 1
    # index arrays are checked by the kernel: an asynchronous engine reports at the sync point
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        x[nda.asarray([0, 5])].asnumpy()
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, [0, 3]] = 1
        x.wait_to_read()


def test_too_many_indices_raise_index_error():
    x = nda.asarray(np.arange(6).reshape(2, 3))
    with pytest.raises(IndexError, match=r"too many indices for an array of 2 dimensions: \(0, 0, 0\) indexes 3"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices for an array of 2 dimensions"):
        x[0, :, None, 1, ...] = 1
    with pytest.raises(IndexError, match="too many indices for an array of 0 dimensions"):
        nda.asarray(1.0)[0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]


def test_invalid_index_types_raise():
    x = nda.asarray(np.arange(6).reshape(2, 3))
    with pytest.raises(IndexError, match="only integers, slices, '...', None, integer arrays and bool masks are valid indices, got float"):
        x[1.0]
    with pytest.raises(IndexError, match="index arrays must have an integer or bool dtype, got float64"):
        x[nda.asarray([0.0])]
    with pytest.raises(TypeError, match=r"slice bounds must be ints or None, got slice\(0.5, None, None\)"):
        x[0.5:]  # TypeError, as in Python and NumPy
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[nda.asarray([True, False, True])]


BOOL_SCALAR_KEYS = [
    True,
    False,
    (True,),
    (0, True),
    (Ellipsis, False),
    (True, 1),
    np.True_,
    np.False_,
    (True, False),
    (slice(None), True, [0, 2]),
    (None, True, slice(1, None)),
]


@pytest.mark.parametrize("device", ["cpu", "sim"])
@pytest.mark.parametrize("key", BOOL_SCALAR_KEYS, ids=repr)
def test_a_bool_scalar_index_is_a_0d_mask(device, key):
    # NumPy's rule: x[True] adds an axis of length 1, x[False] one of length 0 (SciPy and
    # Dask use both); nda used to raise IndexError.
    a = np.arange(6).reshape(2, 3)
    x = nda.asarray(a, device=device)
    result = x[key]
    assert result.device == x.device
    assert_same(result, a[key])
    y, b = nda.asarray(a, device=device), a.copy()
    y[key] = -1
    b[key] = -1
    np.testing.assert_array_equal(y.asnumpy(), b)


def test_setitem_value_errors():
    x = nda.asarray(np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match=r"\(2,\).*\(2, 3\) cannot be broadcast"):
        x[...] = nda.asarray([1, 2])
    with pytest.raises(TypeError, match="cannot store float 1.5 in a int64 array"):
        x[0, 0] = 1.5
    with pytest.raises(TypeError, match="cannot store complex"):
        x[0, 0] = 1j
    with pytest.raises(TypeError, match="cannot store float64 values in a int64 array without losing information"):
        x[0] = nda.asarray([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="value must be an nda array or a Python scalar, got list"):
        x[0] = [1, 2, 3]
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        nda.asarray(np.zeros(2, np.int8))[0] = 200
    with pytest.raises(TypeError, match="cannot store int 1 in a bool array"):
        nda.asarray([True])[0] = 1
    np.testing.assert_array_equal(x.asnumpy(), np.arange(6).reshape(2, 3))
