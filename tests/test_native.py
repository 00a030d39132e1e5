"""nda._native: the C fast paths of NDArray's operators give what the Python ones give (issue 26).

``x + y``, ``x * 0.5``, ``-x`` and ``x @ y`` run in C when both operands are arrays with a
cache entry, equal shapes and a ready engine; every other call goes to the Python operator.
The property test calls each operator twice with different values and compares the C
result with the Python operator's (``op.fallback``) bit for bit, on cpu and sim; the suite
as a whole also runs with NDA_NATIVE=0 in CI (the naive-engine run), so both paths are kept.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda
from nda import _execute

native = _execute.native
pytestmark = pytest.mark.skipif(native is None, reason="nda._native is not compiled here (or NDA_NATIVE=0): the Python fast paths run")

DEVICES = ["cpu", "sim"]
_BINARY = ["__add__", "__sub__", "__mul__", "__truediv__", "__lt__", "__eq__", "__and__"]


def _values(dtype):
    if np.dtype(dtype).kind == "b":
        return st.booleans()
    if np.dtype(dtype).kind == "i":
        return st.integers(-100, 100)
    return st.floats(-1e3, 1e3, width=32 if dtype == np.float32 else 64)


def _same(a, b):
    assert a.dtype is b.dtype and a.shape == b.shape and a.device is b.device and a.layout is b.layout
    ha, hb = a.asnumpy(), b.asnumpy()
    assert ha.tobytes() == hb.tobytes(), (ha, hb)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", _BINARY)
@settings(deadline=None, max_examples=25)
@given(data=st.data())
def test_binary_operators_in_c_give_the_python_operators_result(device, op, data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int64, np.bool_] if op == "__and__" else [np.float32, np.float64, np.int64]))
    if op == "__and__" and np.dtype(dtype).kind == "f":
        dtype = np.int64
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
    method = getattr(nda.NDArray, op)
    assert isinstance(method, native.BinaryOp)
    for _ in range(2):  # the same metadata again, other values: the cached entry is reused
        a = nda.asarray(data.draw(hnp.arrays(dtype, shape, elements=_values(dtype))), device=device)
        b = nda.asarray(data.draw(hnp.arrays(dtype, shape, elements=_values(dtype))), device=device)
        if op == "__truediv__" and np.dtype(dtype).kind == "i":
            b = nda.where(b == 0, nda.ones_like(b), b)
        with np.errstate(all="ignore"):
            _same(method(a, b), method.fallback(a, b))
            if np.dtype(dtype).kind == "f":
                scalar = data.draw(st.floats(-10, 10))
                _same(method(a, scalar), method.fallback(a, scalar))
                reflected = nda.NDArray.__dict__.get("__r" + op[2:])
                if reflected is not None:  # 2.0 * x: computed as op(2.0, x)
                    assert isinstance(reflected, native.ReflectedOp)
                    _same(reflected(a, scalar), reflected.fallback(a, scalar))


@pytest.mark.parametrize("device", DEVICES)
@settings(deadline=None, max_examples=25)
@given(data=st.data())
def test_unary_operators_and_matmul_in_c_give_the_python_results(device, data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int64]))
    n = data.draw(st.integers(1, 4))
    for _ in range(2):
        host = data.draw(hnp.arrays(dtype, (n, n), elements=_values(dtype)))
        x = nda.asarray(host, device=device)
        for op in ("__neg__", "__abs__", "__pos__"):
            method = getattr(nda.NDArray, op)
            assert isinstance(method, native.UnaryOp)
            _same(method(x), method.fallback(x))
        matmul = nda.NDArray.__matmul__
        assert isinstance(matmul, native.PlannedOp)
        _same(matmul(x, x), matmul.fallback(x, x))
        np.testing.assert_allclose((x @ x).asnumpy(), host @ host, rtol=1e-5)


def test_what_the_c_path_does_not_take_goes_to_python():
    x = nda.asarray(np.arange(6.0).reshape(2, 3))
    row = nda.asarray(np.ones(3))
    np.testing.assert_array_equal((x + row).asnumpy(), x.asnumpy() + 1)  # broadcasting
    np.testing.assert_array_equal((x + 1).asnumpy(), x.asnumpy() + 1)  # a Python int
    np.testing.assert_array_equal((x + np.float64(2.0)).asnumpy(), x.asnumpy() + 2)  # a NumPy scalar
    assert (nda.asarray(2.0) + nda.asarray(3.0)).shape == ()  # 0-d results
    assert nda.NDArray.__add__(x, "a") is NotImplemented
    with pytest.raises(TypeError):
        x + "a"
    assert nda.NDArray.__add__.__name__ == "__add__" and nda.NDArray.__add__.__qualname__ == "NDArray.__add__"
    bound = x.__add__
    np.testing.assert_array_equal(bound(x).asnumpy(), 2 * x.asnumpy())


def test_operators_while_recording_and_on_a_busy_engine_take_the_python_path():
    w = nda.asarray(np.ones(3))
    w.attach_grad()
    with nda.autograd.record():
        loss = nda.sum(w * w + w)  # recorded: the C path steps aside while an interceptor is installed
    loss.backward()
    np.testing.assert_array_equal(w.grad.asnumpy(), np.full(3, 3.0))


def test_a_registration_reaches_calls_the_c_path_has_seen():
    """The C path remembers each op's last cache entry (its memo); a registration (which clears
    the caches) must reach the very next call with the same operands, and so must its removal."""
    from nda import dispatch

    x = nda.asarray(np.arange(4, dtype=np.float32))
    y = nda.asarray(np.ones(4, dtype=np.float32))
    m = nda.asarray(np.eye(2, dtype=np.float32))
    for _ in range(3):  # the caches, then the memos, know these calls
        x + y, x * 0.5, 2.0 * x, m @ m
    plus_100 = lambda name: lambda a, b: getattr(np, name)(a, b) + np.float32(100)  # noqa: E731
    dispatch.register("add", "cpu", ["float32"], plus_100("add"), priority=100, backend="test-memo")
    dispatch.register("multiply", "cpu", ["float32"], plus_100("multiply"), priority=100, backend="test-memo")
    dispatch.register("matmul", "cpu", ["float32"], plus_100("matmul"), priority=100, backend="test-memo")
    try:
        for _ in range(2):
            assert (x + y).tolist() == [101.0, 102.0, 103.0, 104.0]
            assert (x * 0.5).tolist() == [100.0, 100.5, 101.0, 101.5]
            assert (2.0 * x).tolist() == [100.0, 102.0, 104.0, 106.0]
            assert (m @ m).tolist() == [[101.0, 100.0], [100.0, 101.0]]
    finally:
        dispatch.unregister_backend("test-memo")
    for _ in range(2):
        assert (x + y).tolist() == [1.0, 2.0, 3.0, 4.0]
        assert (2.0 * x).tolist() == [0.0, 2.0, 4.0, 6.0]
        assert (m @ m).tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_no_reference_leaks_in_the_c_path():
    x = nda.asarray(np.arange(4, dtype=np.float32))
    y = nda.asarray(np.ones(4, dtype=np.float32))
    for _ in range(2):  # warm: each op's cache, then its C memo (its last key), hold the metadata
        x + y, x * 0.5, -x
    meta, shape, size = x._meta, x._shape, x._size
    gc.collect()
    before = (sys.getrefcount(meta), sys.getrefcount(shape), sys.getrefcount(size), sys.getrefcount(x._buf))
    for _ in range(5000):
        x + y
        x * 0.5
        -x
    gc.collect()
    after = (sys.getrefcount(meta), sys.getrefcount(shape), sys.getrefcount(size), sys.getrefcount(x._buf))
    assert after == before


def test_the_python_fast_paths_run_without_the_c_module():
    """NDA_NATIVE=0: the same operators, in Python (CI runs the whole suite so on the naive engine)."""
    code = (
        "import nda, numpy as np\n"
        "from nda import _execute\n"
        "assert _execute.native is None and not hasattr(nda.NDArray.__add__, 'fallback')\n"
        "x = nda.asarray(np.arange(4.0))\n"
        "assert (x + x * 0.5 - (-x)).tolist() == [0.0, 2.5, 5.0, 7.5]\n"
    )
    env = dict(os.environ, NDA_NATIVE="0")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("device", DEVICES)
@settings(deadline=None, max_examples=40)
@given(data=st.data())
def test_first_axis_indexing_in_c_gives_the_python_result(device, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    getitem = nda.NDArray.__getitem__
    assert isinstance(getitem, native.GetitemOp)
    n = shape[0]
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    for _ in range(2):
        host = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-10, 10)))
        x = nda.asarray(host, device=device)
        keys = [slice(data.draw(bound), data.draw(bound), data.draw(st.one_of(st.none(), st.sampled_from([1, 2, -1, -3]))))]
        if n:
            keys.append(data.draw(st.integers(-n, n - 1)))
        for key in keys:
            got, expected = getitem(x, key), getitem.fallback(x, key)
            _same(got, expected)
            np.testing.assert_array_equal(got.asnumpy(), host[key])
            assert got._base is (x if x._base is None else x._base)
        view = x[0:1]
        if view.size:
            view[...] = 42.0  # a view: writes reach the base
            assert x.asnumpy().reshape(-1)[0] == 42.0
