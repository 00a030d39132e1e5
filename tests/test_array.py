"""NDArray itself: attributes, Python/NumPy conversions, DLPack, repr, pickling, errors."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nda
from _helpers import ALL_DTYPES, arrays, assert_same, np_dtype, to_nda

DTYPES = [pytest.param(d, id=d.name) for d in ALL_DTYPES]


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_attributes(dtype, data):
    a = data.draw(arrays(dtype), label="a")
    x = to_nda(a)
    assert x.shape == a.shape and isinstance(x.shape, tuple)
    assert x.dtype is dtype
    assert x.dtype.name == a.dtype.name and x.dtype.numpy == a.dtype
    assert x.device is nda.Device("cpu", 0)
    assert x.layout is nda.Layout("strided") and x.layout.name == "strided"
    assert x.ndim == a.ndim
    assert x.size == a.size and isinstance(x.size, int)
    assert_same(x.T, a.T)
    if a.ndim >= 2:
        assert_same(x.mT, np.swapaxes(a, -1, -2))
    else:
        with pytest.raises(ValueError, match="mT needs an array of at least 2 dimensions"):
            x.mT


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_conversions_round_trip(dtype, data):
    a = data.draw(arrays(dtype), label="a")
    x = to_nda(a)
    # asnumpy: an independent copy
    host = x.asnumpy()
    np.testing.assert_array_equal(host, a)
    assert host.dtype == a.dtype
    if host.size:
        host.flat[0] = host.flat[-1] if host.size > 1 else np.zeros((), host.dtype)
        np.testing.assert_array_equal(x.asnumpy(), a)
    # __array__
    np.testing.assert_array_equal(np.asarray(x), a)
    assert np.asarray(x).dtype == a.dtype
    assert np.array(x, dtype=np.complex128).dtype == np.complex128
    # tolist / item
    assert _same_nested(x.tolist(), a.tolist())
    if a.size == 1:
        assert _same_nested(x.item(), a.item())
    else:
        with pytest.raises(ValueError, match="item\\(\\) needs an array with exactly one element"):
            x.item()
    # DLPack
    back = np.from_dlpack(x)
    np.testing.assert_array_equal(back, a)
    assert back.dtype == a.dtype and back.shape == a.shape
    assert x.__dlpack_device__() == (1, 0)
    assert_same(nda.from_dlpack(a), a)
    # pickling and copying
    for clone in (pickle.loads(pickle.dumps(x)), copy.copy(x), copy.deepcopy(x)):
        assert clone is not x
        assert_same(clone, a)
        assert clone.device is x.device


def _same_nested(p, q) -> bool:
    """Equality of nested lists of Python scalars, where NaN equals NaN."""
    if isinstance(p, list) and isinstance(q, list):
        return len(p) == len(q) and all(_same_nested(u, v) for u, v in zip(p, q))
    if type(p) is not type(q):
        return False
    return p == q or (p != p and q != q) or (isinstance(p, complex) and np.isnan(p) and np.isnan(q))


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_repr_and_str_match_numpy(dtype, data):
    a = data.draw(arrays(dtype), label="a")
    x = to_nda(a)
    assert repr(x) == repr(a)
    assert str(x) == str(a)


def test_python_scalar_conversions():
    assert bool(nda.asarray(True)) is True
    assert bool(nda.asarray([0.0])) is False
    assert int(nda.asarray(7)) == 7 and type(int(nda.asarray(7))) is int
    assert int(nda.asarray(-2.7)) == -2
    assert float(nda.asarray(3)) == 3.0 and type(float(nda.asarray(3))) is float
    assert float(nda.asarray(np.float32(0.5))) == 0.5
    assert complex(nda.asarray(1 + 2j)) == 1 + 2j
    assert complex(nda.asarray(2.0)) == 2 + 0j
    assert nda.asarray(5).__index__() == 5
    assert list(range(10))[nda.asarray(np.int8(3))] == 3
    assert f"{nda.asarray(1.25):.1f}" == "1.2"
    assert nda.asarray(np.uint64(2**64 - 1)).item() == 2**64 - 1


def test_len_iter_and_0d_errors():
    a = np.arange(6).reshape(3, 2)
    x = to_nda(a)
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3
    for row, expected in zip(rows, a):
        assert_same(row, expected)
    assert len(nda.zeros((0, 4))) == 0 and list(nda.zeros((0, 4))) == []
    scalar = nda.asarray(1.0)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d array"):
        len(scalar)
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        list(scalar)


def test_conversion_errors():
    x = nda.asarray([1.0, 2.0])
    with pytest.raises(ValueError, match=r"the truth value of an array of shape \(2,\) is ambiguous"):
        bool(x)
    with pytest.raises(ValueError, match="is ambiguous"):
        bool(nda.zeros((0,)))
    with pytest.raises(TypeError, match=r"only arrays with exactly one element can be converted to Python int, got shape \(2,\)"):
        int(x)
    with pytest.raises(TypeError, match="converted to Python float"):
        float(x)
    with pytest.raises(TypeError, match="converted to Python complex"):
        complex(x)
    with pytest.raises(TypeError, match="cannot convert a complex array to int"):
        int(nda.asarray(1j))
    with pytest.raises(TypeError, match="cannot convert a complex array to float"):
        float(nda.asarray(1j))
    with pytest.raises(TypeError, match="only 0-d integer arrays can be used as an index, got a float64 array"):
        [1, 2][nda.asarray(1.0)]
    with pytest.raises(TypeError, match="only 0-d integer arrays can be used as an index, got a int64 array of shape \\(1,\\)"):
        [1, 2][nda.asarray([1])]
    with pytest.raises(TypeError, match="0-d integer arrays"):
        [1, 2][nda.asarray(True)]


def test_ndarray_is_not_constructed_directly_and_is_unhashable():
    with pytest.raises(TypeError, match="NDArray is not constructed directly"):
        nda.NDArray()
    with pytest.raises(TypeError, match="unhashable"):
        hash(nda.asarray([1]))


def test_asnumpy_of_views_and_noncontiguous_arrays():
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    x = to_nda(a)
    v = x[::2, ::-3]
    host = v.asnumpy()
    np.testing.assert_array_equal(host, a[::2, ::-3])
    host[0, 0] = -1
    assert x[0, 5].item() == 5  # asnumpy copied
    np.testing.assert_array_equal(np.from_dlpack(v), a[::2, ::-3])
    assert_same(pickle.loads(pickle.dumps(v)), a[::2, ::-3])
    assert repr(v) == repr(a[::2, ::-3])


def test_np_asarray_shares_memory_on_cpu():
    x = nda.asarray(np.arange(3.0))
    view = np.asarray(x)
    view[0] = 42.0
    assert x[0].item() == 42.0
    assert np.array(x) is not view
    np.array(x)[1] = -1.0
    assert x[1].item() == 1.0


def test_array_protocol_copy_false_without_conversion_shares_memory():
    x = nda.asarray(np.arange(3.0))
    shared = np.asarray(x, copy=False)
    shared[0] = 5.0
    assert x[0].item() == 5.0
    assert np.asarray(x, dtype=np.float64, copy=False)[0] == 5.0


def test_array_protocol_copy_false_refuses_a_needed_copy():
    x = nda.asarray(np.ones(2))
    with pytest.raises(ValueError):
        np.asarray(x, dtype=np.float32, copy=False)


def test_array_namespace_and_device_methods():
    x = nda.asarray([1.0])
    assert x.__array_namespace__() is nda
    assert x.__array_namespace__(api_version="2023.12") is nda
    with pytest.raises(ValueError, match="unsupported Array API version '2099.01'"):
        x.__array_namespace__(api_version="2099.01")
    assert x.to_device("cpu") is x
    assert nda.to_device(x, nda.Device("cpu", 0)) is x
    c = nda.copy(x)
    assert c is not x and c.tolist() == x.tolist()


@pytest.mark.parametrize("d", ALL_DTYPES, ids=lambda d: d.name)
def test_pickled_dtypes_and_devices_are_the_same_objects(d):
    assert pickle.loads(pickle.dumps(d)) is d
    assert pickle.loads(pickle.dumps(nda.Device("cpu", 0))) is nda.Device("cpu", 0)
    assert np_dtype(d) == d.numpy
