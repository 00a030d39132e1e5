"""What array_api_strict accepts, nda accepts, with the standard's semantics (issue 19).

Each case here was refused (or answered differently) by nda while array_api_strict, which
scikit-learn, SciPy and array-api-extra are tested against, accepted it. Every case runs on
cpu and sim.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nda

DEVICES = ["cpu", "sim"]

pytestmark = pytest.mark.filterwarnings("ignore::nda.FallbackWarning")


@pytest.mark.parametrize("device", DEVICES)
@given(values=st.lists(st.integers(-3, 3) | st.sampled_from([0.5, float("nan"), -0.0]), max_size=12))
def test_unique_values_is_sorted_like_the_other_unique_functions(device, values):
    x = nda.asarray(np.asarray(values, dtype=np.float64), device=device)
    got = nda.unique_values(x).asnumpy()
    expected = np.unique(np.asarray(values, dtype=np.float64), equal_nan=False)  # sorted, every NaN distinct, NaNs last
    np.testing.assert_array_equal(got, expected)
    for other in (nda.unique_counts(x).values, nda.unique_inverse(x).values, nda.unique_all(x).values):
        np.testing.assert_array_equal(other.asnumpy(), got)


@pytest.mark.parametrize("device", DEVICES)
def test_unique_values_of_integers_is_sorted(device):
    data = np.asarray([[7, 3, 3], [100, -5, 7]])
    assert nda.unique_values(nda.asarray(data, device=device)).tolist() == [-5, 3, 7, 100]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn"])
def test_nd_fft_takes_lists_for_s_and_axes(device, name):
    data = np.arange(24.0).reshape(2, 3, 4)
    x = nda.asarray(data, device=device)
    fn = getattr(nda.fft, name)
    ref = getattr(np.fft, name)
    np.testing.assert_allclose(fn(x, s=[3, 5], axes=[0, 2]).asnumpy(), ref(data, s=[3, 5], axes=[0, 2]), atol=1e-9)
    np.testing.assert_allclose(fn(x, axes=[1]).asnumpy(), ref(data, axes=[1]), atol=1e-9)
    np.testing.assert_allclose(fn(x, s=[4, 4]).asnumpy(), ref(data, s=[4, 4], axes=[1, 2]), atol=1e-9)  # the last len(s) axes
    with pytest.raises(ValueError, match="s must be a sequence with one length per transformed axis"):
        fn(x, s=[3], axes=[0, 1])
    spectrum = nda.fft.rfftn(x)
    np.testing.assert_allclose(nda.fft.irfftn(spectrum, s=list(data.shape)).asnumpy(), data, atol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_arange_takes_0d_array_bounds(device):
    n = nda.sum(nda.arange(10, device=device) > 4)  # a pending 0-d int64 array
    assert nda.arange(1, n + 1, device=device).tolist() == [1, 2, 3, 4, 5]
    assert nda.arange(n, device=device).tolist() == [0, 1, 2, 3, 4]
    half = nda.asarray(2.5, device=device)
    assert nda.arange(half, device=device).tolist() == [0.0, 1.0, 2.0]
    assert nda.arange(0, 1, nda.asarray(0.25, device=device), device=device).dtype is nda.float64
    with pytest.raises(TypeError, match="arange\\(\\): stop must be a scalar or a 0-d array, got an array of shape \\(2,\\)"):
        nda.arange(nda.asarray([1, 2]))
    with pytest.raises(TypeError, match="stop must be an int or a float, got complex"):
        nda.arange(nda.asarray(1j))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [nda.int8, nda.int64, nda.uint8, nda.uint32], ids=lambda d: d.name)
@given(start=st.integers(0, 60), stop=st.integers(0, 60), num=st.integers(0, 9), endpoint=st.booleans(), shift=st.sampled_from([0, -0.5, 0.25]))
def test_linspace_with_an_integer_dtype_is_numpys(device, dtype, start, stop, num, endpoint, shift):
    lo, hi = start + shift, stop - shift
    if np.dtype(dtype.name).kind == "u" and min(lo, hi) < 0:
        with pytest.raises(OverflowError, match="out of bounds for"):
            nda.linspace(lo, hi, num, dtype=dtype, device=device, endpoint=endpoint)
        return
    result = nda.linspace(lo, hi, num, dtype=dtype, device=device, endpoint=endpoint)
    assert result.dtype is dtype and result.device == nda.Device(device)
    np.testing.assert_array_equal(result.asnumpy(), np.linspace(lo, hi, num, dtype=dtype.name, endpoint=endpoint))


def test_linspace_integer_dtype_errors():
    with pytest.raises(OverflowError, match="stop=300 is out of bounds for int8"):
        nda.linspace(0, 300, 4, dtype=nda.int8)
    with pytest.raises(TypeError, match="start must be a real number for an integer dtype"):
        nda.linspace(1j, 2, 3, dtype=nda.int64)
    assert nda.linspace(0, 6, 4, dtype="int32").tolist() == [0, 2, 4, 6]


@pytest.mark.parametrize("device", DEVICES)
def test_moveaxis_takes_lists_and_says_what_it_refuses(device):
    data = np.arange(24).reshape(2, 3, 4)
    x = nda.asarray(data, device=device)
    for source, destination in (([0, 1], [1, 2]), ([0], [-1]), ((2, 0), [0, 1]), (1, 0)):
        np.testing.assert_array_equal(nda.moveaxis(x, source, destination).asnumpy(), np.moveaxis(data, source, destination))
    with pytest.raises(TypeError, match=r"moveaxis\(\): source must be an int or a tuple/list of ints, got \[0, 'a'\]"):
        nda.moveaxis(x, [0, "a"], [0, 1])
    with pytest.raises(TypeError, match=r"moveaxis\(\): destination must be an int or a tuple/list of ints, got 1.5"):
        nda.moveaxis(x, 0, 1.5)
    with pytest.raises(ValueError, match="must have the same number of axes"):
        nda.moveaxis(x, [0, 1], [0])


@pytest.mark.parametrize("device", DEVICES)
def test_full_takes_a_0d_array_fill_value_with_its_dtype(device):
    fill = nda.asarray(2.5, dtype=nda.float32, device=device)
    result = nda.full((2,), fill, device=device)
    assert result.dtype is nda.float32 and result.tolist() == [2.5, 2.5]
    assert nda.full((2,), fill, dtype=nda.float64, device=device).dtype is nda.float64
    with pytest.raises(TypeError, match="fill_value must be a scalar or a 0-d array"):
        nda.full((2,), nda.asarray([1.0, 2.0]))


def test_devices_stays_the_2025_12_tuple():
    # Decided: nda follows 2025.12, where devices() is a tuple (array_api_strict 2.6 at
    # 2025.12 does the same). SciPy's ``devices`` test fixture does ``devices() + [None]``
    # because SciPy pins array_api_strict to 2024.12 (a list); ``(*devices(), None)`` works
    # for both versions.
    devices = nda.__array_namespace_info__().devices()
    assert isinstance(devices, tuple) and nda.Device("cpu") in devices
    assert (*devices, None)[-1] is None
