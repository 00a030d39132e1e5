"""Creation ops and astype against NumPy: every declared dtype, copy semantics, devices, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda
from _helpers import (
    ALL_DTYPES,
    arrays,
    assert_same,
    elements,
    is_bool,
    is_complex,
    is_float,
    is_int,
    np_dtype,
    to_nda,
)

CATALOG = nda.ops.CATALOG
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def _cases(name):
    return [pytest.param(d, id=d.name) for d in CATALOG[name].supported_dtypes]


def _python_value(dtype):
    """A strategy of Python scalars that fit ``dtype`` exactly."""
    if is_bool(dtype):
        return st.booleans()
    if is_int(dtype):
        return elements(dtype)
    if is_float(dtype):
        return st.floats(width=32 if dtype is nda.float32 else 64)
    return st.builds(complex, st.floats(width=32 if dtype is nda.complex64 else 64), st.floats(width=32 if dtype is nda.complex64 else 64))


# ----------------------------------------------------------------------------- asarray


@pytest.mark.parametrize("dtype", _cases("asarray"))
@given(data=st.data())
def test_asarray_from_numpy_and_lists(dtype, data):
    a = data.draw(arrays(dtype), label="a")
    x = nda.asarray(a)
    assert_same(x, a)
    assert x.device == nda.Device("cpu", 0)
    # nested Python lists with an explicit dtype
    assert_same(nda.asarray(a.tolist(), dtype=dtype), np.asarray(a.tolist(), dtype=np_dtype(dtype)))
    # dtype given as a name or a NumPy dtype is accepted too
    assert_same(nda.asarray(a, dtype=dtype.name), a)
    assert_same(nda.asarray(a, dtype=np_dtype(dtype)), a)


@pytest.mark.parametrize("dtype", _cases("asarray"))
@given(data=st.data())
def test_asarray_converts_between_dtypes(dtype, data):
    source = data.draw(st.sampled_from(ALL_DTYPES), label="source dtype")
    a = data.draw(arrays(source), label="a")
    if is_complex(source) and not is_complex(dtype):
        with pytest.raises(TypeError, match=f"cannot cast complex input to {dtype.name}"):
            nda.asarray(a, dtype=dtype)
        return
    if np_dtype(dtype).kind in "iu" and np_dtype(source).kind in "fiu" and a.size:
        # Values the integer dtype cannot hold are refused (NumPy would wrap 300 to 44 in int8
        # and store NaN as INT_MIN); astype() is the explicit cast that wraps.
        info = np.iinfo(np_dtype(dtype))
        values = a.astype(object).ravel()
        if np_dtype(source).kind == "f" and not np.isfinite(a).all():
            with pytest.raises(ValueError, match=f"asarray\\(\\): cannot store .* in {dtype.name}; integer dtypes hold finite values only"):
                nda.asarray(a, dtype=dtype)
            return
        if any(not info.min <= int(v) <= info.max for v in values):  # int() truncates as the cast does
            with pytest.raises(OverflowError, match=f"asarray\\(\\): the value .* does not fit in {dtype.name}"):
                nda.asarray(a, dtype=dtype)
            return
    assert_same(nda.asarray(a, dtype=dtype), a.astype(np_dtype(dtype)))


@given(value=st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(), st.builds(complex, st.floats(), st.floats())))
def test_asarray_of_python_scalars_uses_default_dtypes(value):
    expected = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}[type(value)]
    x = nda.asarray(value)
    assert x.shape == () and x.dtype.name == expected
    assert_same(x, np.asarray(value, dtype=expected))


def test_asarray_copy_semantics():
    a = np.arange(4.0)
    shared = nda.asarray(a)  # copy=None: shares memory with a NumPy input on cpu
    a[0] = 10.0
    assert shared[0].item() == 10.0
    copied = nda.asarray(a, copy=True)
    a[1] = 20.0
    assert copied[1].item() == 1.0
    assert nda.asarray(a, copy=False)[1].item() == 20.0
    with pytest.raises(ValueError, match=r"asarray\(copy=False\): converting a Python sequence"):
        nda.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match=r"asarray\(copy=False\): converting float64 to float32 needs a copy"):
        nda.asarray(a, dtype=nda.float32, copy=False)
    # an NDArray passes through unchanged unless a conversion or copy is asked for
    assert nda.asarray(shared) is shared
    assert nda.asarray(shared, copy=False) is shared
    again = nda.asarray(shared, copy=True)
    assert again is not shared
    again[0] = -1.0
    assert shared[0].item() == 10.0
    converted = nda.asarray(shared, dtype=nda.int32)
    assert_same(converted, a.astype(np.int32))
    with pytest.raises(ValueError, match=r"asarray\(copy=False\): converting a float64 array on cpu:0 to int32"):
        nda.asarray(shared, dtype=nda.int32, copy=False)


@pytest.fixture
def deferred_engine():
    """Run a test under the deferred engine (ops run at the next sync point)."""
    previous = nda.engine.current().name
    nda.engine.use("deferred")
    try:
        yield
    finally:
        nda.engine.use(previous)


def test_asarray_copy_true_snapshots_the_source_at_the_call(deferred_engine):
    """Regression: the copy is taken at the call, not when an engine gets round to running the op."""
    a = np.zeros(4)
    c = nda.asarray(a, copy=True)
    a[:] = 1.0
    assert_same(c, np.zeros(4))


def test_asarray_copy_true_of_a_large_array_snapshots_the_source():
    a = np.zeros(1 << 21)  # above the inline threshold (2**20): the threaded engine defers the copy
    c = nda.asarray(a, copy=True)
    a[:] = 1.0
    assert nda.max(c).item() == 0.0


def test_asarray_errors():
    with pytest.raises(TypeError, match="NumPy dtype float16 has no nda equivalent"):
        nda.asarray(np.ones(2, np.float16))
    with pytest.raises(TypeError, match="'float16' is not a supported dtype"):
        nda.asarray([1.0], dtype="float16")
    with pytest.raises(TypeError, match="not a supported dtype"):
        nda.asarray([1.0], dtype="nosuchtype")
    with pytest.raises(TypeError, match="holds objects that are not numbers"):
        nda.asarray([1, "a", None])
    with pytest.raises(ValueError, match="cannot convert list to an array"):
        nda.asarray([[1, 2], [3]])
    with pytest.raises(OverflowError, match="does not fit in int8"):
        nda.asarray([1000], dtype=nda.int8)
    with pytest.raises(TypeError, match="cannot cast complex input to float64"):
        nda.asarray(np.array([1 + 2j]), dtype=nda.float64)
    with pytest.raises(TypeError, match="cannot convert list to an array"):
        nda.asarray([1 + 2j], dtype=nda.float64)
    with pytest.raises(TypeError, match="copy must be True, False or None"):
        nda.asarray([1], copy="yes")


# ----------------------------------------------------------------------------- filled arrays


@pytest.mark.parametrize("name,fill", [("zeros", 0), ("ones", 1), ("empty", None)])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@given(shape=SHAPES)
def test_zeros_ones_empty(name, fill, dtype, shape):
    assert dtype in CATALOG[name].supported_dtypes
    x = getattr(nda, name)(shape, dtype=dtype)
    assert x.shape == shape and x.dtype is dtype
    if fill is None:
        assert x.asnumpy().shape == shape and x.asnumpy().dtype == np_dtype(dtype)
    else:
        assert_same(x, np.full(shape, fill, np_dtype(dtype)))
    # an int shape, and the default dtype float64
    y = getattr(nda, name)(3)
    assert y.shape == (3,) and y.dtype is nda.float64


@pytest.mark.parametrize("dtype", _cases("full"))
@given(data=st.data())
def test_full_matches_numpy(dtype, data):
    shape = data.draw(SHAPES, label="shape")
    value = data.draw(_python_value(dtype), label="fill_value")
    x = nda.full(shape, value, dtype=dtype)
    assert_same(x, np.full(shape, value, dtype=np_dtype(dtype)))


def test_full_default_dtype_follows_the_fill_value():
    assert nda.full((2,), True).dtype is nda.bool
    assert nda.full((2,), 3).dtype is nda.int64
    assert nda.full((2,), 3.5).dtype is nda.float64
    assert nda.full((2,), 1 + 2j).dtype is nda.complex128
    assert nda.full(2, 7).tolist() == [7, 7]


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@given(data=st.data())
def test_like_functions(name, dtype, data):
    assert dtype in CATALOG[name].supported_dtypes
    a = data.draw(arrays(dtype), label="x")
    x = to_nda(a)
    target = data.draw(st.sampled_from([None] + ALL_DTYPES), label="dtype")
    out_dtype = dtype if target is None else target
    if name == "full_like":
        value = data.draw(_python_value(out_dtype), label="fill_value")
        result = nda.full_like(x, value, dtype=target)
        expected = np.full_like(a, value, dtype=np_dtype(out_dtype))
    else:
        result = getattr(nda, name)(x, dtype=target)
        expected = getattr(np, name)(a, dtype=np_dtype(out_dtype))
    assert result.shape == a.shape and result.dtype is out_dtype and result.device == x.device
    if name == "empty_like":
        assert result.asnumpy().shape == a.shape and result.asnumpy().dtype == np_dtype(out_dtype)
    else:
        assert_same(result, expected)


def test_full_like_keeps_the_sign_of_zero():
    """Regression: memoised plans keyed 0.0 and -0.0 alike, so one call reused the other's fill."""
    x = nda.zeros((2, 5))
    plus, minus = nda.full_like(x, 0.0), nda.full_like(x, -0.0)  # one of them reuses the other's plan
    assert_same(plus, np.full((2, 5), 0.0))
    assert_same(minus, np.full((2, 5), -0.0))


def test_full_errors():
    with pytest.raises(TypeError, match=r"full\(\): complex fill_value \(1\+2j\) does not fit dtype float64"):
        nda.full(2, 1 + 2j, dtype=nda.float64)
    with pytest.raises(TypeError, match=r"full\(\): float fill_value 1.5 does not fit dtype int32"):
        nda.full(2, 1.5, dtype=nda.int32)
    with pytest.raises(OverflowError, match=r"full\(\): fill_value 300 is out of bounds for uint8 \(range 0..255\)"):
        nda.full(2, 300, dtype=nda.uint8)
    with pytest.raises(OverflowError, match="fill_value -1 is out of bounds for uint64"):
        nda.full_like(nda.zeros(2, dtype=nda.uint64), -1)
    with pytest.raises(TypeError, match="fill_value must be a Python bool, int, float or complex, got str"):
        nda.full(2, "1")


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_shape_errors(name):
    fn = getattr(nda, name)
    with pytest.raises(ValueError, match=rf"{name}\(\): negative dimension -1 in shape \(2, -1\)"):
        fn((2, -1))
    with pytest.raises(TypeError, match=rf"{name}\(\): shape must be an int or a tuple of ints"):
        fn((2.0, 3))
    with pytest.raises(TypeError, match=rf"{name}\(\): 'float16' is not a supported dtype"):
        fn(2, dtype="float16")


# ----------------------------------------------------------------------------- ranges


@pytest.mark.parametrize("dtype", _cases("arange"))
@given(data=st.data())
def test_arange_matches_numpy(dtype, data):
    nd = np_dtype(dtype)
    if is_int(dtype):
        info = np.iinfo(nd)
        lo, hi = max(int(info.min), -50), min(int(info.max), 50)
        start = data.draw(st.integers(lo, hi), label="start")
        stop = data.draw(st.integers(lo, hi), label="stop")
        step = data.draw(st.integers(-7, 7).filter(bool), label="step")
        if nd.kind == "u" and step < 0:
            step = -step
    else:
        start = data.draw(st.floats(-100, 100), label="start")
        stop = data.draw(st.floats(-100, 100), label="stop")
        step = data.draw(st.floats(0.125, 10) | st.floats(-10, -0.125), label="step")
    form = data.draw(st.sampled_from(["stop", "start-stop", "start-stop-step"]), label="form")
    args = {"stop": (stop,), "start-stop": (start, stop), "start-stop-step": (start, stop, step)}[form]
    if nd.kind == "u" and min(args) < 0:
        args = tuple(abs(v) for v in args)
    expected = np.arange(*args, dtype=nd)
    result = nda.arange(*args, dtype=dtype)
    assert_same(result, expected)


def test_arange_default_dtypes_and_errors():
    assert_same(nda.arange(5), np.arange(5))
    assert_same(nda.arange(2, 11, 3), np.arange(2, 11, 3))
    assert_same(nda.arange(5.0), np.arange(5.0))
    assert_same(nda.arange(0, 1, 0.1), np.arange(0, 1, 0.1))
    assert_same(nda.arange(10, 0, -3), np.arange(10, 0, -3))
    assert_same(nda.arange(5, 2), np.arange(5, 2))
    with pytest.raises(ValueError, match="step must not be zero"):
        nda.arange(0, 5, 0)
    with pytest.raises(TypeError, match="dtype must be a numeric dtype, got bool"):
        nda.arange(3, dtype=nda.bool)


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_arange_with_a_complex_dtype_is_numpys_complex_range(device):
    # NumPy (and SciPy's signal/fft code) takes a complex dtype; nda used to raise TypeError.
    for args, dtype in (((4,), nda.complex128), ((1, 2.5, 0.5), nda.complex64), ((5, 0, -2), nda.complex128)):
        result = nda.arange(*args, dtype=dtype, device=device)
        assert result.dtype is dtype and result.device == nda.Device(device)
        assert_same(result, np.arange(*args, dtype=np_dtype(dtype)))
    with pytest.raises(TypeError, match="stop must be an int or a float, got str"):
        nda.arange("3")
    with pytest.raises(TypeError, match="start must be an int or a float, got str"):
        nda.arange("0", 3)


@pytest.mark.parametrize("dtype", _cases("linspace"))
@given(data=st.data())
def test_linspace_matches_numpy(dtype, data):
    if is_complex(dtype):
        value = st.builds(complex, st.floats(-1e3, 1e3), st.floats(-1e3, 1e3))
    else:
        value = st.floats(-1e3, 1e3)
    start = data.draw(value, label="start")
    stop = data.draw(value, label="stop")
    num = data.draw(st.integers(0, 12), label="num")
    endpoint = data.draw(st.booleans(), label="endpoint")
    result = nda.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)
    assert_same(result, np.linspace(start, stop, num, endpoint=endpoint, dtype=np_dtype(dtype)), atol=1e-9)


def test_linspace_defaults_and_errors():
    assert_same(nda.linspace(0, 1, 5), np.linspace(0, 1, 5))
    assert nda.linspace(0, 1j, 3).dtype is nda.complex128
    with pytest.raises(ValueError, match="num must be non-negative, got -1"):
        nda.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="num must be an int"):
        nda.linspace(0, 1, 2.5)
    with pytest.raises(TypeError, match="dtype must be a numeric dtype .*, got bool"):
        nda.linspace(0, 1, 3, dtype=nda.bool)
    with pytest.raises(TypeError, match="complex start/stop need a complex dtype, got float64"):
        nda.linspace(0, 1j, 3, dtype=nda.float64)


@pytest.mark.parametrize("dtype", _cases("eye"))
@given(n=st.integers(0, 5), m=st.none() | st.integers(0, 5), k=st.integers(-6, 6))
def test_eye_matches_numpy(dtype, n, m, k):
    assert_same(nda.eye(n, m, k=k, dtype=dtype), np.eye(n, m, k=k, dtype=np_dtype(dtype)))


def test_eye_defaults_and_errors():
    assert_same(nda.eye(3), np.eye(3))
    with pytest.raises(ValueError, match="n_rows must be non-negative, got -2"):
        nda.eye(-2)
    with pytest.raises(TypeError, match="k must be an int"):
        nda.eye(2, k=0.5)


# ----------------------------------------------------------------------------- astype


@pytest.mark.parametrize("source", _cases("astype"))
@given(data=st.data())
def test_astype_matches_numpy(source, data):
    a = data.draw(arrays(source), label="x")
    target = data.draw(st.sampled_from(ALL_DTYPES), label="dtype")
    x = to_nda(a)
    if is_complex(source) and not is_complex(target):
        with pytest.raises(TypeError, match=f"casting complex {source.name} to {target.name} would drop the imaginary part"):
            nda.astype(x, target)
        return
    expected = a.astype(np_dtype(target))
    result = nda.astype(x, target)
    assert_same(result, expected)
    assert_same(x.astype(target), expected)  # method form
    # copy=True (the default) never aliases the input
    if result.size:
        result[(0,) * result.ndim] = result[(0,) * result.ndim].item()
        np.testing.assert_array_equal(x.asnumpy(), a)


def test_astype_copy_false_returns_the_input():
    x = nda.asarray(np.arange(3.0))
    assert nda.astype(x, nda.float64, copy=False) is x
    assert nda.astype(x, nda.float64) is not x
    assert x.astype(nda.float32, copy=False).dtype is nda.float32
    with pytest.raises(TypeError, match="dtype is required"):
        nda.astype(x, None)
    with pytest.raises(TypeError, match="copy must be a bool"):
        nda.astype(x, nda.float32, copy=None)


# ----------------------------------------------------------------------------- devices


CREATORS = {
    "asarray": lambda device: nda.asarray([1.0, 2.0], device=device),
    "zeros": lambda device: nda.zeros(2, device=device),
    "ones": lambda device: nda.ones(2, device=device),
    "empty": lambda device: nda.empty(2, device=device),
    "full": lambda device: nda.full(2, 1.0, device=device),
    "zeros_like": lambda device: nda.zeros_like(nda.ones(2), device=device),
    "ones_like": lambda device: nda.ones_like(nda.ones(2), device=device),
    "empty_like": lambda device: nda.empty_like(nda.ones(2), device=device),
    "full_like": lambda device: nda.full_like(nda.ones(2), 3.0, device=device),
    "arange": lambda device: nda.arange(3, device=device),
    "linspace": lambda device: nda.linspace(0, 1, 3, device=device),
    "eye": lambda device: nda.eye(2, device=device),
    "random.philox_uniform": lambda device: nda.random.philox_uniform(2, key=(1, 2), device=device),
    "random.philox_normal": lambda device: nda.random.philox_normal(2, key=(1, 2), device=device),
    "random.philox_exponential": lambda device: nda.random.philox_exponential(2, key=(1, 2), device=device),
    "random.philox_integers": lambda device: nda.random.philox_integers(2, key=(1, 2), low=0, high=5, device=device),
    "random.philox_gamma": lambda device: nda.random.philox_gamma(2, key=(1, 2), alpha=2.0, device=device),
    "random.philox_beta": lambda device: nda.random.philox_beta(2, key=(1, 2), a=1.0, b=2.0, device=device),
    "random.philox_standard_t": lambda device: nda.random.philox_standard_t(2, key=(1, 2), df=3.0, device=device),
    "random.philox_lognormal": lambda device: nda.random.philox_lognormal(2, key=(1, 2), device=device),
    "random.philox_poisson": lambda device: nda.random.philox_poisson(2, key=(1, 2), lam=3.0, device=device),
    "random.philox_binomial": lambda device: nda.random.philox_binomial(2, key=(1, 2), n=10, p=0.5, device=device),
}


def test_every_creation_op_is_covered():
    assert sorted(CREATORS) == sorted(n for n, d in CATALOG.items() if d.family == "creation")


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_creation_on_cpu_devices(name):
    for device in (None, "cpu", "cpu:0", nda.Device("cpu", 0)):
        x = CREATORS[name](device)
        assert x.device is nda.Device("cpu", 0)
        assert x.device.type == "cpu" and x.device.index == 0


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_unknown_device_raises_naming_the_device_type(name):
    with pytest.raises((ValueError, TypeError), match="nosuchdev"):
        CREATORS[name]("nosuchdev")


def test_moving_to_an_unknown_device_raises_naming_the_device_type():
    x = nda.ones(2)
    with pytest.raises((ValueError, TypeError), match="device type 'nosuchdev' is not available"):
        x.to_device("nosuchdev")
    with pytest.raises((ValueError, TypeError), match="nosuchdev"):
        nda.asarray(x, device="nosuchdev")
    with pytest.raises((ValueError, TypeError), match="nosuchdev"):
        nda.astype(x, nda.float32, device="nosuchdev")
    np.testing.assert_array_equal(x.asnumpy(), np.ones(2))


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_malformed_devices_raise(name):
    with pytest.raises(ValueError, match=r"invalid device 'cuda:x'; expected 'type' or 'type:index'"):
        CREATORS[name]("cuda:x")
    with pytest.raises(TypeError, match="device must be an nda.Device, a string such as 'cpu' or 'cuda:0', or None; got 5"):
        CREATORS[name](5)


def test_default_device_context():
    with nda.Device("cpu", 0) as dev:
        assert nda.default_device() is dev
        assert nda.zeros(2).device is dev
    assert nda.default_device() is nda.Device("cpu")


@pytest.mark.parametrize("args", [(0.0, 5e-324, 2.0), (0.0, -5e-324, 2.0), (5e-324, 0.0, -2.0), (0.0, 5e-324, -2.0), (0.0, 1e-320, 1e300)])
def test_arange_length_when_the_span_over_step_underflows_is_numpys(args):
    """(stop - start) / step underflowing to 0 gives one element when it is a positive zero
    (NumPy's rule). nda declared none while its kernel returned one: x.shape and the data
    disagreed, which the host-read check (issue 29, item 5) now refuses and found here."""
    for dtype in (nda.float32, nda.float64):
        x = nda.arange(*args, dtype=dtype)
        expected = np.arange(*args, dtype=dtype.numpy)
        assert x.shape == expected.shape
        np.testing.assert_array_equal(x.asnumpy(), expected)
