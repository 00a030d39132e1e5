"""Shape manipulation against NumPy: every op, every declared dtype, views and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda
from _helpers import ALL_DTYPES, BY_NAME, SMALL_SHAPES, arrays, assert_same, axes, np_dtype, to_nda

CATALOG = nda.ops.CATALOG
MANIPULATION = ["reshape", "permute_dims", "concat", "stack", "expand_dims", "squeeze", "flip", "roll", "broadcast_to"]


def _cases(name):
    return [pytest.param(d, id=d.name) for d in CATALOG[name].supported_dtypes]


def test_catalog_manipulation_ops_are_all_covered():
    for name in MANIPULATION:
        assert name in CATALOG and callable(getattr(nda, name))


def _mutate_first(view, base_np: np.ndarray, view_np: np.ndarray) -> None:
    """Write through an nda view and the matching NumPy view, so the bases can be compared."""
    if not isinstance(view_np, np.ndarray) or view_np.size == 0:
        return  # (np.flip of a 0-d array returns a NumPy scalar, not a view)
    index = (0,) * view_np.ndim
    value = np.ones((), view_np.dtype) if view_np.dtype != bool else np.asarray(not view_np[index])
    view[index] = value.item()
    view_np[index] = value


# ----------------------------------------------------------------------------- reshape


@st.composite
def reshape_targets(draw, shape):
    size = int(np.prod(shape))
    candidates = [(size,), (-1,), tuple(reversed(shape)), (1,) + tuple(shape), tuple(shape) + (1,)]
    for k in range(1, size + 1):
        if size % k == 0:
            candidates += [(k, size // k), (k, -1), (-1, k, 1)]
    if size == 0:
        candidates += [(0,), (0, 5), (3, 0, 2)]
    return draw(st.sampled_from(candidates))


@pytest.mark.parametrize("dtype", _cases("reshape"))
@given(data=st.data())
def test_reshape_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype), label="x")
    target = data.draw(reshape_targets(a.shape), label="shape")
    copy = data.draw(st.sampled_from([None, True, False]), label="copy")
    x = to_nda(a)
    result = nda.reshape(x, target, copy=copy)
    expected = np.reshape(a, target)
    assert_same(result, expected)
    assert_same(x.reshape(target), expected)  # method form
    # x is contiguous, so the result is a view of it unless copy=True
    base = a.copy()
    view_np = base.reshape(target) if copy is not True else base.reshape(target).copy()
    _mutate_first(result, base, view_np)
    assert_same(x, base)


def test_reshape_zero_size_with_unknown_dimension():
    x = nda.asarray(np.zeros((2, 0)))
    assert_same(nda.reshape(x, (-1,)), np.zeros((2, 0)).reshape(-1))
    assert_same(nda.reshape(x, (3, -1)), np.zeros((2, 0)).reshape(3, -1))
    with pytest.raises(ValueError, match=r"cannot reshape an array of size 0 \(shape \(2, 0\)\) into shape \(0, -1\)"):
        nda.reshape(x, (0, -1))


def test_reshape_copy_false_of_non_contiguous_raises():
    x = nda.permute_dims(nda.asarray(np.arange(6.0).reshape(2, 3)), (1, 0))
    with pytest.raises(ValueError, match="without copying"):
        # the kernel decides; with an asynchronous engine the error surfaces at the sync point
        nda.reshape(x, (6,), copy=False).asnumpy()
    y = nda.permute_dims(nda.asarray(np.arange(6.0).reshape(2, 3)), (1, 0))
    assert_same(nda.reshape(y, (6,)), np.arange(6.0).reshape(2, 3).T.reshape(6))  # copy=None copies


def test_failed_view_op_does_not_poison_its_input():
    """Regression: with the threaded engine a failed view op (reshape copy=False) poisoned its input."""
    x = nda.permute_dims(nda.asarray(np.ones((2, 1 << 20))), (1, 0))  # large enough to be deferred by the engine
    with pytest.raises(ValueError, match="without copying"):
        nda.reshape(x, (-1,), copy=False).asnumpy()
    assert nda.sum(x).item() == float(1 << 21)


def test_reshape_errors():
    x = nda.asarray(np.arange(6))
    with pytest.raises(ValueError, match=r"cannot reshape an array of size 6 \(shape \(6,\)\) into shape \(4,\)"):
        nda.reshape(x, (4,))
    with pytest.raises(ValueError, match="at most one -1"):
        nda.reshape(x, (-1, -1))
    with pytest.raises(ValueError, match="dimensions must be >= 0"):
        nda.reshape(x, (-2, -3))
    with pytest.raises(ValueError, match="cannot reshape"):
        nda.reshape(x, (4, -1))
    with pytest.raises(TypeError, match="shape must be an int or a tuple of ints"):
        nda.reshape(x, (2.0, 3))
    with pytest.raises(TypeError, match="copy must be True, False or None"):
        nda.reshape(x, (6,), copy=1)


# ----------------------------------------------------------------------------- permute_dims


@pytest.mark.parametrize("dtype", _cases("permute_dims"))
@given(data=st.data())
def test_permute_dims_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype), label="x")
    perm = tuple(data.draw(st.permutations(range(a.ndim)), label="axes"))
    perm = tuple(p - a.ndim if data.draw(st.booleans(), label="negative") else p for p in perm)
    x = to_nda(a)
    result = nda.permute_dims(x, perm)
    base = a.copy()
    view_np = np.permute_dims(base, perm)
    assert_same(result, view_np)
    _mutate_first(result, base, view_np)  # a view
    assert_same(x, base)


def test_permute_dims_errors():
    x = nda.asarray(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match=r"axes \(0, 0, 1\) are not a permutation of the 3 axes"):
        nda.permute_dims(x, (0, 0, 1))
    with pytest.raises(ValueError, match="not a permutation"):
        nda.permute_dims(x, (0, 1))
    with pytest.raises(IndexError, match="axis 3 is out of bounds"):
        nda.permute_dims(x, (0, 1, 3))


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_an_axis_out_of_range_is_numpys_axis_error(device):
    """NumPy's AxisError is an IndexError (what the Array API's libraries raise) and a
    ValueError (what NumPy users catch): nda's, and NumPy's functions called on nda arrays."""
    x = nda.ones((2, 3), device=device)
    calls = [
        lambda: nda.sum(x, axis=2),
        lambda: nda.linalg.vector_norm(x, axis=(0, 5)),
        lambda: nda.tensordot(x, x, axes=([0], [7])),
        lambda: np.linalg.norm(x, axis=(0, 5)),
        lambda: np.sum(x, axis=-3),
    ]
    for call in calls:
        with pytest.raises(np.exceptions.AxisError, match="out of bounds") as info:
            call()
        assert isinstance(info.value, IndexError) and isinstance(info.value, ValueError)


# ----------------------------------------------------------------------------- concat / stack


@pytest.mark.parametrize("dtype", _cases("concat"))
@given(data=st.data())
def test_concat_matches_numpy(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), label="shape")
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)), label="axis")
    n = data.draw(st.integers(1, 3), label="count")
    parts = []
    for i in range(n):
        s = list(shape)
        if axis is not None:
            s[axis] = data.draw(st.integers(0, 3), label=f"length {i}")
        else:
            s = data.draw(SMALL_SHAPES, label=f"shape {i}")
        parts.append(data.draw(arrays(dtype, tuple(s)), label=f"arrays[{i}]"))
    result = nda.concat([to_nda(p) for p in parts], axis=axis)
    assert_same(result, np.concat(parts, axis=axis))
    assert_same(nda.concat(tuple(to_nda(p) for p in parts), axis=axis), np.concat(parts, axis=axis))


@given(data=st.data())
def test_concat_and_stack_promote_dtypes(data):
    d1 = data.draw(st.sampled_from(ALL_DTYPES), label="dtype1")
    d2 = data.draw(st.sampled_from(ALL_DTYPES), label="dtype2")
    a = data.draw(arrays(d1, (2, 3)), label="a")
    b = data.draw(arrays(d2, (2, 3)), label="b")
    key = np.promote_types(a.dtype, b.dtype)
    assert_same(nda.concat([to_nda(a), to_nda(b)], axis=1), np.concat([a.astype(key), b.astype(key)], axis=1))
    assert_same(nda.stack([to_nda(a), to_nda(b)], axis=-1), np.stack([a.astype(key), b.astype(key)], axis=-1))
    assert nda.concat([to_nda(a), to_nda(b)]).dtype is BY_NAME[key.name]


@pytest.mark.parametrize("dtype", _cases("stack"))
@given(data=st.data())
def test_stack_matches_numpy(dtype, data):
    shape = data.draw(SMALL_SHAPES, label="shape")
    n = data.draw(st.integers(1, 3), label="count")
    parts = [data.draw(arrays(dtype, shape), label=f"arrays[{i}]") for i in range(n)]
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)), label="axis")
    assert_same(nda.stack([to_nda(p) for p in parts], axis=axis), np.stack(parts, axis=axis))


def test_concat_and_stack_errors():
    a = nda.asarray(np.ones((2, 3)))
    b = nda.asarray(np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"arrays\[1\] has shape \(3, 3\), which does not match \(2, 3\) outside axis 1"):
        nda.concat([a, b], axis=1)
    with pytest.raises(ValueError, match="does not match"):
        nda.concat([a, nda.asarray(np.ones(6))], axis=0)
    with pytest.raises(ValueError, match="cannot join 0-d arrays"):
        nda.concat([nda.asarray(1.0), nda.asarray(2.0)])
    with pytest.raises(ValueError, match=r"all arrays need the same shape; arrays\[0\] has \(2, 3\), arrays\[1\] has \(3, 3\)"):
        nda.stack([a, b])
    with pytest.raises(ValueError, match=r"concat\(\) needs at least one array, got an empty list"):
        nda.concat([])  # ValueError, as NumPy's "need at least one array to concatenate"
    with pytest.raises(ValueError, match=r"stack\(\) needs at least one array, got an empty tuple"):
        nda.stack(())
    with pytest.raises(TypeError, match="non-empty tuple or list"):
        nda.stack(a)
    with pytest.raises(TypeError, match=r"expects an nda array for 'arrays\[1\]'"):
        nda.concat([a, np.ones((2, 3))])
    with pytest.raises(IndexError, match="axis 2 is out of bounds"):
        nda.concat([a, a], axis=2)
    with pytest.raises(IndexError, match="axis 3 is out of bounds"):
        nda.stack([a, a], axis=3)


# ----------------------------------------------------------------------------- expand_dims / squeeze


@pytest.mark.parametrize("dtype", _cases("expand_dims"))
@given(data=st.data())
def test_expand_dims_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype), label="x")
    axis = data.draw(st.integers(-a.ndim - 1, a.ndim), label="axis")
    x = to_nda(a)
    result = nda.expand_dims(x, axis=axis)
    base = a.copy()
    view_np = np.expand_dims(base, axis)
    assert_same(result, view_np)
    _mutate_first(result, base, view_np)
    assert_same(x, base)


@pytest.mark.parametrize("dtype", _cases("squeeze"))
@given(data=st.data())
def test_squeeze_matches_numpy(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=3), label="shape")
    ones = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True), label="unit axes")
    shape = tuple(1 if i in ones else n for i, n in enumerate(shape))
    a = data.draw(arrays(dtype, shape), label="x")
    chosen = data.draw(st.lists(st.sampled_from(ones), min_size=1, unique=True), label="axis")
    chosen = [c - a.ndim if data.draw(st.booleans(), label="negative") else c for c in chosen]
    axis = chosen[0] if len(chosen) == 1 and data.draw(st.booleans(), label="as int") else tuple(chosen)
    x = to_nda(a)
    result = nda.squeeze(x, axis=axis)
    base = a.copy()
    view_np = np.squeeze(base, axis=axis)
    assert_same(result, view_np)
    _mutate_first(result, base, view_np)
    assert_same(x, base)


def test_squeeze_and_expand_dims_errors():
    x = nda.asarray(np.ones((2, 1, 3)))
    with pytest.raises(ValueError, match=r"axis 0 has size 2, only axes of size 1 can be removed"):
        nda.squeeze(x, axis=0)
    with pytest.raises(IndexError, match="axis 3 is out of bounds"):
        nda.squeeze(x, axis=3)
    with pytest.raises(IndexError, match="axis 4 is out of bounds"):
        nda.expand_dims(x, axis=4)
    with pytest.raises(IndexError, match="axis -5 is out of bounds"):
        nda.expand_dims(x, axis=-5)


# ----------------------------------------------------------------------------- flip / roll


@pytest.mark.parametrize("dtype", _cases("flip"))
@given(data=st.data())
def test_flip_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype), label="x")
    axis = data.draw(axes(a.ndim), label="axis")
    x = to_nda(a)
    result = nda.flip(x, axis=axis)
    base = a.copy()
    view_np = np.flip(base, axis=axis)
    assert_same(result, view_np)
    _mutate_first(result, base, view_np)
    assert_same(x, base)


@pytest.mark.parametrize("dtype", _cases("roll"))
@given(data=st.data())
def test_roll_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype), label="x")
    axis = data.draw(axes(a.ndim, allow_tuple=a.ndim > 0), label="axis")
    if axis == ():
        axis = None  # NumPy itself fails on an empty axis tuple
    if isinstance(axis, tuple):
        shift = tuple(data.draw(st.lists(st.integers(-7, 7), min_size=len(axis), max_size=len(axis)), label="shift"))
        if data.draw(st.booleans(), label="int shift"):
            shift = shift[0]
    else:
        shift = data.draw(st.integers(-7, 7), label="shift")
    x = to_nda(a)
    result = nda.roll(x, shift, axis=axis)
    assert_same(result, np.roll(a, shift, axis=axis))
    np.testing.assert_array_equal(x.asnumpy(), a)  # a copy, the input is untouched


def test_roll_errors():
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match="must have the same length"):
        nda.roll(x, (1, 2, 3), axis=(0, 1))
    with pytest.raises(ValueError, match="a tuple shift needs a tuple axis"):
        nda.roll(x, (1, 2))
    with pytest.raises(TypeError, match="shift must be an int or a tuple of ints"):
        nda.roll(x, 1.5)


# ----------------------------------------------------------------------------- broadcast_to


@st.composite
def broadcast_targets(draw, shape):
    prefix = draw(st.lists(st.integers(0, 3), max_size=2))
    dims = [draw(st.integers(0, 3)) if n == 1 else n for n in shape]
    return tuple(prefix) + tuple(dims)


@pytest.mark.parametrize("dtype", _cases("broadcast_to"))
@given(data=st.data())
def test_broadcast_to_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype), label="x")
    target = data.draw(broadcast_targets(a.shape), label="shape")
    x = to_nda(a)
    result = nda.broadcast_to(x, target)
    assert_same(result, np.broadcast_to(a, target))
    if result.size:
        with pytest.raises(ValueError, match="read-only"):
            result[(0,) * result.ndim] = result[(0,) * result.ndim].item()
            result.wait_to_read()  # an asynchronous engine reports kernel errors at sync points


def test_broadcast_to_errors():
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3, 3\) cannot be broadcast"):
        nda.broadcast_to(x, (3, 3))
    with pytest.raises(ValueError, match="cannot be broadcast to"):
        nda.broadcast_to(x, (3,))
    with pytest.raises(ValueError, match="negative dimension"):
        nda.broadcast_to(x, (-1, 3))


def test_views_chain_back_to_the_base():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = to_nda(a)
    v = nda.flip(nda.permute_dims(nda.expand_dims(x, axis=0), (0, 3, 2, 1)), axis=1)
    w = nda.squeeze(v, axis=0)
    w[0, 0, 0] = -1.0
    base = a.copy()
    np.squeeze(np.flip(np.permute_dims(np.expand_dims(base, 0), (0, 3, 2, 1)), axis=1), axis=0)[0, 0, 0] = -1.0
    assert_same(x, base)
    assert np_dtype(x.dtype) == np.float64


# ----------------------------------------------------------------------------- NumPy's pad and transpose

PAD_WIDTHS = [0, 2, (1, 0), ((0, 1),), [(1, 2), (0, 3)], np.asarray([[2, 0], [1, 1]]), np.int64(1), ((1,), (2,))]


@pytest.mark.parametrize("device", ["cpu", "sim"])
@pytest.mark.parametrize("pad_width", PAD_WIDTHS, ids=repr)
def test_pad_is_numpys_constant_pad(device, pad_width):
    """xarray's shift/pad call ``xp.pad`` on the data's namespace (they raised AttributeError on nda)."""
    for host, value in [(np.arange(6.0).reshape(2, 3), np.nan), (np.arange(6, dtype=np.int8).reshape(2, 3), -3), (np.ones((2, 3), bool), False)]:
        x = nda.asarray(host, device=device)
        got = nda.pad(x, pad_width, mode="constant", constant_values=value)
        want = np.pad(host, pad_width, mode="constant", constant_values=value)
        assert got.device == x.device and got.dtype is x.dtype
        np.testing.assert_array_equal(got.asnumpy(), want)
    x = nda.asarray([1.0, 2.0], device=device)
    np.testing.assert_array_equal(nda.pad(x, 1, constant_values=np.float32(0.5)).asnumpy(), [0.5, 1.0, 2.0, 0.5])
    np.testing.assert_array_equal(nda.pad(x, (0, 1)).asnumpy(), [1.0, 2.0, 0.0])


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_pad_refuses_what_it_cannot_do_with_numpys_exception_types(device):
    x = nda.ones((2, 3), device=device)
    with pytest.raises(ValueError, match="mode 'constant' only"):
        nda.pad(x, 1, mode="edge")
    with pytest.raises(ValueError, match="negative"):
        nda.pad(x, -1)
    with pytest.raises(ValueError, match="each of the 2 axes"):
        nda.pad(x, [(1, 1), (1, 1), (1, 1)])
    for bad in (1.5, "a", None, ()):
        with pytest.raises(TypeError, match="pad_width must be ints"):
            nda.pad(x, bad)
    with pytest.raises(TypeError, match="constant_values must be a Python or NumPy scalar"):
        nda.pad(x, 1, constant_values=[1, 2])
    with pytest.raises(TypeError):
        nda.pad(nda.ones(2, dtype=nda.int64, device=device), 1, constant_values=1.5)  # as nda.full: no silent cast
    with pytest.raises(TypeError, match="nda array"):
        nda.pad(np.ones(2), 1)


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_transpose_is_numpys(device):
    host = np.arange(24.0).reshape(2, 3, 4)
    x = nda.asarray(host, device=device)
    for perm in (None, (1, 0, 2), [2, 0, 1], (-1, 0, 1)):
        got = nda.transpose(x, perm)
        assert got.device == x.device
        np.testing.assert_array_equal(got.asnumpy(), np.transpose(host, perm))
    np.testing.assert_array_equal(nda.transpose(x, axes=(2, 1, 0)).asnumpy(), host.T)
    with pytest.raises(ValueError):
        nda.transpose(x, (0, 1))
    with pytest.raises(TypeError, match=r"transpose\(\): axes must be"):
        nda.transpose(x, (0.5, 1, 2))
