"""NumPy as a neighbour: NumPy scalars, NumPy's protocols, NumPy index arrays, nda dtypes in NumPy.

The rules (README "Ecosystem", ``nda._interop``): NumPy scalars are weak scalars, exactly
like the Python scalar they hold; a NumPy ufunc or function on nda arrays runs nda's own
function on the arrays' device, or raises nda's TypeError naming what to call instead;
``np.dtype(nda.float64)`` is ``float64``. Every rule is checked on cpu and on sim.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp
from hypothesis import strategies as st

import nda
from _helpers import ALL_DTYPES, np_dtype

DEVICES = ["cpu", "sim"]

pytestmark = pytest.mark.filterwarnings("ignore::nda.FallbackWarning")


def _host(x):
    assert isinstance(x, nda.NDArray), f"expected an nda array, got {type(x).__name__}"
    return x.asnumpy()


# ----------------------------------------------------------------------------- NumPy scalars

#: (numpy scalar, the Python scalar it holds) of every kind nda accepts.
NP_SCALARS = [
    (np.float64(1.5), 1.5),
    (np.float32(0.5), 0.5),
    (np.float16(2.0), 2.0),
    (np.int64(3), 3),
    (np.int8(-2), -2),
    (np.uint64(7), 7),
    (np.uint8(1), 1),
    (np.bool_(True), True),
    (np.complex128(1 + 2j), 1 + 2j),
    (np.complex64(1j), 1j),
]
OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.eq, operator.ne, operator.lt, operator.ge]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [nda.int8, nda.uint16, nda.int64, nda.float32, nda.float64, nda.complex64], ids=lambda d: d.name)
@pytest.mark.parametrize("scalar, value", NP_SCALARS, ids=[type(s).__name__ for s, _ in NP_SCALARS])
def test_numpy_scalar_is_the_weak_python_scalar_it_holds(device, dtype, scalar, value):
    x = nda.asarray(np.asarray([1, 2, 3]).astype(np_dtype(dtype)), device=device)
    for op in OPERATORS:
        for args, py_args in (((x, scalar), (x, value)), ((scalar, x), (value, x))):
            try:
                expected = op(*py_args)
            except (TypeError, OverflowError) as err:
                with pytest.raises(type(err)):
                    op(*args)
                continue
            result = op(*args)
            assert isinstance(result, nda.NDArray), (op, args)
            assert result.dtype is expected.dtype and result.device == x.device
            np.testing.assert_array_equal(_host(result), _host(expected))


def test_numpy_scalar_promotion_is_weak_not_numpys():
    f32 = nda.asarray([1.0, 2.0], dtype=nda.float32)
    assert (f32 + np.float64(1.0)).dtype is nda.float32  # NumPy 2 gives float64
    assert (f32 * np.int64(2)).dtype is nda.float32
    assert (nda.asarray([1, 2], dtype=nda.int32) + np.float64(0.5)).dtype is nda.float64
    assert (nda.asarray([1, 2], dtype=nda.int8) + np.int64(3)).dtype is nda.int8  # NumPy 2 gives int64
    with pytest.raises(OverflowError, match="1000 is out of bounds for int8"):
        nda.asarray([1, 2], dtype=nda.int8) + np.int64(1000)
    assert nda.result_type(nda.float32, np.float64(1.0)) is nda.float32
    assert nda.result_type(nda.int16, np.int64(1)) is nda.int16


@pytest.mark.parametrize("device", DEVICES)
def test_comparisons_with_numpy_scalars_return_arrays(device):
    y = nda.asarray([1, 0, 1, 2], device=device)
    for result in (y == np.int64(1), np.int64(1) == y, y != np.int64(1), y < np.float64(1.5)):
        assert isinstance(result, nda.NDArray) and result.dtype is nda.bool and result.device == y.device
    assert (y == np.int64(1)).tolist() == [True, False, True, False]
    assert (np.int64(1) == y).tolist() == [True, False, True, False]


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_scalars_in_place_and_as_stored_values(device):
    z = nda.asarray([0.5, 2.0, 3.0], device=device)
    z[z > 1] = np.float64(1.0)
    assert z.tolist() == [0.5, 1.0, 1.0]
    z[np.int64(0)] = np.float32(4.0)
    z += np.float64(1.0)
    z *= np.int64(2)
    assert z.tolist() == [10.0, 4.0, 4.0]
    b = nda.zeros(2, dtype=nda.bool, device=device)
    b[1] = np.bool_(True)
    assert b.tolist() == [False, True]
    i = nda.zeros(2, dtype=nda.int32, device=device)
    with pytest.raises(TypeError, match="cannot store float"):
        i[0] = np.float64(1.5)


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_scalars_wherever_python_scalars_are_accepted(device):
    x = nda.asarray([1.0, 5.0, 3.0], device=device)
    assert nda.where(x > 2, x, np.float64(0.0)).tolist() == [0.0, 5.0, 3.0]
    assert nda.clip(x, np.float64(2.0), np.int64(4)).tolist() == [2.0, 4.0, 3.0]
    assert nda.full(2, np.int64(7), device=device).dtype is nda.int64
    assert nda.full_like(x, np.float32(2.5)).tolist() == [2.5, 2.5, 2.5]
    assert nda.arange(np.int64(1), np.int64(4), device=device).tolist() == [1, 2, 3]
    assert nda.linspace(np.float64(0.0), np.int64(1), 3, device=device).tolist() == [0.0, 0.5, 1.0]
    assert nda.searchsorted(nda.asarray([1.0, 2.0, 3.0], device=device), np.float64(2.5)).tolist() == 2
    assert nda.isin(x, np.float64(5.0)).tolist() == [False, True, False]
    assert float(nda.std(x, correction=np.int64(1))) == pytest.approx(np.std([1.0, 5.0, 3.0], ddof=1))
    assert float(nda.linalg.vector_norm(x, ord=np.int64(1))) == 9.0
    assert nda.add(x, np.float64(1.0)).tolist() == [2.0, 6.0, 4.0]
    assert "add" in str(nda.dispatch.explain("add", x, np.float64(1.0)))


def test_numpy_scalars_without_an_nda_equivalent_are_refused():
    x = nda.asarray([1.0, 2.0])
    for scalar in (np.longdouble(1.5), np.datetime64("2020-01-01"), np.str_("a")):
        with pytest.raises(TypeError, match="NumPy scalar of type numpy.* has no nda equivalent"):
            x + scalar
        with pytest.raises(TypeError, match="has no nda equivalent"):
            x[0] = scalar


# ----------------------------------------------------------------------------- indexing


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_integer_arrays_and_scalars_index(device):
    data = np.arange(12.0).reshape(3, 4)
    x = nda.asarray(data, device=device)
    for key in (
        np.asarray([0, 2]),
        np.asarray([2, 0, 2], dtype=np.uint8),
        np.int64(1),
        (np.int32(1), np.asarray([3, 0])),
        np.asarray([True, False, True]),
        np.asarray([], dtype=np.int64),
    ):
        np.testing.assert_array_equal(_host(x[key]), data[key])
    y = nda.asarray(data, device=device)
    y[np.asarray([0, 2]), np.int64(1)] = np.float64(-1.0)
    expected = data.copy()
    expected[[0, 2], 1] = -1.0
    np.testing.assert_array_equal(_host(y), expected)
    with pytest.raises(IndexError, match="integer or bool dtype"):
        x[np.asarray([0.0, 1.0])]


# ----------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_nda_dtypes_convert_to_numpy_dtypes(dtype):
    assert np.dtype(dtype) == np.dtype(dtype.name)
    assert dtype.type is np.dtype(dtype.name).type
    assert np.zeros(2, dtype=dtype).dtype == np.dtype(dtype.name)
    assert nda.can_cast(dtype, dtype)
    assert nda.asarray(np.zeros(1, dtype=dtype)).dtype is dtype


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_nda_dtypes_equal_numpys_equivalents_as_numpys_dtypes_do(dtype):
    # Dask takes its boolean-mask path on ``index.dtype == bool``; NumPy's dtypes compare
    # equal to their scalar types and to the Python types NumPy reads as them.
    np_dt = np.dtype(dtype.name)
    for other in (np_dt, np_dt.type, bool, int, float, complex, *(np.dtype(d.name) for d in ALL_DTYPES)):
        assert (dtype == other) is bool(np_dt == other), other
        assert (dtype != other) is bool(np_dt != other), other
        assert (other == dtype) is bool(np_dt == other), other
    for other in ALL_DTYPES:
        assert (dtype == other) is (dtype is other)
    for other in (None, 1, object(), np.floating, np.generic):
        assert dtype != other  # None is not float64 in nda (tests/test_dtype_protocol.py)
    assert {dtype: 1}[dtype] == 1 and len({*ALL_DTYPES}) == len(ALL_DTYPES)


@pytest.mark.parametrize("device", DEVICES)
def test_np_asarray_like_takes_numpys_default_order(device):
    x = nda.zeros(2, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nda.FallbackWarning)  # no host fallback: the result stays on x's device
        for kwargs in ({"order": None}, {"order": "K"}, {"order": None, "dtype": np.float32}):
            result = np.asanyarray([1, 2], like=x, **kwargs)
            assert isinstance(result, nda.NDArray) and result.device == x.device, kwargs
            assert result.tolist() == [1, 2]


# ----------------------------------------------------------------------------- __array_ufunc__


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_ufuncs_run_nda_ops_on_the_arrays_device(device):
    from nda._interop import UFUNCS

    data = np.asarray([0.25, 0.5, 2.0])
    x = nda.asarray(data, device=device)
    ints = nda.asarray([1, 2, 3], device=device)
    for ufunc, name in UFUNCS.items():
        fn = getattr(nda, name, None) or getattr(nda.linalg, name)
        if name in ("matmul", "vecdot"):
            args = (x, x)
        elif name.startswith(("bitwise", "logical")) or name in ("gcd",):
            args = (ints,) * ufunc.nin if name.startswith("bitwise") else ((ints > 1),) * ufunc.nin
        else:
            args = (x,) * ufunc.nin
        result = ufunc(*args)
        expected = fn(*args)
        assert isinstance(result, nda.NDArray) and result.device == x.device, name
        assert result.dtype is expected.dtype, name
        np.testing.assert_array_equal(_host(result), _host(expected), err_msg=name)
    np.testing.assert_allclose(_host(np.sin(x)), np.sin(data))
    assert np.add(x, 1).tolist() == [1.25, 1.5, 3.0]
    assert np.add(x, np.float64(1.0), dtype=np.float32).dtype is nda.float32
    assert np.maximum.reduce(x).tolist() == 2.0 and np.add.reduce(x, axis=None).tolist() == 2.75
    assert np.add.accumulate(x).tolist() == [0.25, 0.75, 2.75]
    out = nda.empty(3, device=device)
    assert np.multiply(x, 2, out=out) is out and out.tolist() == [0.5, 1.0, 4.0]
    assert np.less(x, 1, out=(None,)).tolist() == [True, True, False]


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_arrays_join_the_nda_arrays_device_in_numpy_calls(device):
    x = nda.asarray([1.0, 2.0, 3.0], device=device)
    for result in (np.ones(3) + x, x + np.ones(3), np.add(np.ones(3), x), np.ones(3, dtype=np.float32) * x):
        assert isinstance(result, nda.NDArray) and result.device == x.device
        assert result.dtype is nda.float64
    assert (np.ones(3) + x).tolist() == [2.0, 3.0, 4.0]
    for product in (x @ np.ones(3), np.ones(3) @ x):  # x.__matmul__ declines, NumPy's matmul comes back to nda
        assert isinstance(product, nda.NDArray) and product.device == x.device and float(product) == 6.0
    with pytest.raises(TypeError, match="unsupported operand"):
        x @ [1.0, 1.0, 1.0]
    assert (np.asarray(2, dtype=np.int8) * nda.asarray([1, 2], dtype=nda.int8, device=device)).dtype is nda.int8


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_calls_nda_cannot_run_are_numpys_on_host_copies(device):
    # The host fallback: what NumPy does for any array-like with __array__ (scikit-learn with
    # array_api_dispatch off relies on it), announced like nda's other fallbacks.
    data = np.asarray([1.0, 2.0, 8.0])
    x = nda.asarray(data, device=device)
    # (np.median, np.cbrt, np.convolve, np.average, np.unique run on the device since issue 37: tests/test_numpy_names_interop.py)
    cases = [
        (lambda: np.exp2(x), np.exp2(data)),
        (lambda: np.add.outer(x, x), np.add.outer(data, data)),
        (lambda: np.subtract.reduce(x), np.subtract.reduce(data)),
        (lambda: np.add(x, 1, casting="unsafe"), data + 1),
        (lambda: np.nancumsum(x), np.nancumsum(data)),  # (np.nanpercentile runs on the device since nda.nanpercentile)
        (lambda: np.trapezoid(x), np.trapezoid(data)),  # (np.einsum runs on the device: tests/test_einsum.py)
        (lambda: np.allclose(x, x), True),
        (lambda: np.reshape(x, (3, 1), order="F"), data.reshape(3, 1)),
        (lambda: np.round(x / 3, 2, out=np.zeros(3)), np.round(data / 3, 2)),  # np.round(x, 2) runs on the device now
        (lambda: np.quantile(x, 0.5, weights=x, method="inverted_cdf"), np.quantile(data, 0.5, weights=data, method="inverted_cdf")),
        (lambda: np.unique(nda.asarray([[3, 1], [3, 1]], device=device), axis=0), np.asarray([[3, 1]])),
        (lambda: np.may_share_memory(x, x), True),
    ]
    for call, expected in cases:
        result = call()
        assert not isinstance(result, nda.NDArray)
        np.testing.assert_array_equal(result, expected)
    host_out = np.zeros(3)
    assert np.add(x, 1, out=host_out) is host_out and host_out.tolist() == [2.0, 3.0, 9.0]
    out = nda.full(3, -1.0, device=device)  # where= keeps what out held where the mask is False
    assert np.add(x, 1, where=np.asarray([True, False, True]), out=out) is out
    assert out.tolist() == [2.0, -1.0, 9.0] and out.device == x.device


def test_the_host_fallback_warns_once_and_follows_nda_config_fallback():
    x = nda.asarray([1.0, 4.0])
    with pytest.warns(nda.FallbackWarning, match=r"numpy.nanmedian on nda arrays: nda has no equivalent; NumPy computes it on host copies"):
        assert np.nanmedian(x) == 2.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.nanmedian(x) == 2.5  # once per function
    previous = nda.config.fallback
    try:
        nda.config.fallback = "error"
        with pytest.raises(nda.FallbackError, match=r"numpy.nanargmax on nda arrays: nda has no equivalent.*nda.config.fallback is 'error'"):
            np.nanargmax(x)
        with pytest.raises(nda.FallbackError, match=r"numpy.exp2 on nda arrays: nda has no equivalent \(on the device: nda.pow"):
            np.exp2(x)
        with pytest.raises(nda.FallbackError, match="nda does not support the keyword where="):
            np.add(x, 1, where=np.asarray([True, False]), out=nda.zeros(2))
        assert np.sum(x).tolist() == 5.0  # what runs on the device is unaffected
        nda.config.fallback = "silent"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert np.nanargmax(x) == 1
    finally:
        nda.config.fallback = previous


# ----------------------------------------------------------------------------- __array_function__


def _function_cases(xp, x, m, i):
    """(label, call) pairs that NumPy and nda must agree on (``xp`` is numpy, arrays are numpy or nda)."""
    return [
        ("sum", lambda: np.sum(x)),
        ("sum axis keepdims dtype", lambda: np.sum(m, axis=0, keepdims=True, dtype=np.float32)),
        ("prod", lambda: np.prod(m, axis=1)),
        ("mean", lambda: np.mean(x)),
        ("mean dtype", lambda: np.mean(m, axis=(0, 1), dtype=np.float32)),
        ("std ddof", lambda: np.std(m, axis=0, ddof=1)),
        ("var", lambda: np.var(x)),
        ("max", lambda: np.max(m, axis=1)),
        ("amin", lambda: np.amin(m)),
        ("any", lambda: np.any(m > 3)),
        ("all", lambda: np.all(m > -1, axis=0)),
        ("argmax", lambda: np.argmax(m)),
        ("argmin axis", lambda: np.argmin(m, axis=0)),
        ("cumsum", lambda: np.cumsum(m)),
        ("cumprod axis", lambda: np.cumprod(m, axis=1)),
        ("count_nonzero", lambda: np.count_nonzero(m > 2)),
        ("clip", lambda: np.clip(x, 0.5, 2)),
        ("where", lambda: np.where(x > 1, x, 0.0)),
        ("round", lambda: np.round(x * 3)),
        ("real", lambda: np.real(x)),
        ("isin", lambda: np.isin(i, np.asarray([1, 3]))),
        ("concatenate", lambda: np.concatenate([m, m], axis=1)),
        ("concatenate None", lambda: np.concatenate([m, m], axis=None)),
        ("stack", lambda: np.stack([x, x])),
        ("reshape", lambda: np.reshape(m, (4, 3))),
        ("ravel", lambda: np.ravel(m)),
        ("transpose", lambda: np.transpose(m)),
        ("swapaxes", lambda: np.swapaxes(m, 0, 1)),
        ("moveaxis", lambda: np.moveaxis(m, 0, -1)),
        ("expand_dims", lambda: np.expand_dims(x, 0)),
        ("squeeze", lambda: np.squeeze(np.expand_dims(x, 0))),
        ("atleast_2d", lambda: np.atleast_2d(x)),
        ("broadcast_to", lambda: np.broadcast_to(x, (2, 3))),
        ("flip", lambda: np.flip(m, axis=0)),
        ("roll", lambda: np.roll(x, 1)),
        ("repeat", lambda: np.repeat(x, 2)),
        ("tile", lambda: np.tile(x, 2)),
        ("tril", lambda: np.tril(m)),
        ("take", lambda: np.take(m, [0, 2], axis=1)),
        ("take flat", lambda: np.take(m, [[0, 5]])),
        ("sort", lambda: np.sort(m, axis=0)),
        ("argsort", lambda: np.argsort(x)),
        ("searchsorted", lambda: np.searchsorted(x, 1.5)),
        ("diff", lambda: np.diff(x)),
        ("copy", lambda: np.copy(x)),
        ("zeros_like", lambda: np.zeros_like(m)),
        ("full_like", lambda: np.full_like(x, 7)),
        ("ones_like shape", lambda: np.ones_like(x, shape=(2, 2))),
        ("dot", lambda: np.dot(x, m)),
        ("tensordot", lambda: np.tensordot(m, m, axes=([0], [0]))),
        ("outer", lambda: np.outer(x, x)),
        ("trace", lambda: np.trace(m)),
        ("matmul", lambda: np.matmul(m.T, m)),
        ("linalg.norm", lambda: np.linalg.norm(m)),
        ("linalg.norm axis", lambda: np.linalg.norm(m, axis=1)),
        ("linalg.inv", lambda: np.linalg.inv(m[:, :3] + 3 * np.eye(3) if xp is np else m[:, :3] + 3 * nda.eye(3, device=m.device))),
        ("linalg.svd values", lambda: np.linalg.svd(m, compute_uv=False)),
        ("fft.fft", lambda: np.fft.fft(x)),
        ("fft.rfft2", lambda: np.fft.rfft2(m)),
        ("fft.fftshift", lambda: np.fft.fftshift(x)),
        ("shape", lambda: np.shape(m)),
        ("ndim", lambda: np.ndim(m)),
        ("size", lambda: np.size(m, 1)),
        ("iscomplexobj", lambda: np.iscomplexobj(x)),
        ("result_type", lambda: np.result_type(x, np.float32)),
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_functions_run_nda_functions_and_agree_with_numpy(device):
    x_np = np.asarray([0.5, 1.5, 2.0])
    m_np = np.arange(12.0).reshape(3, 4) / 2
    i_np = np.asarray([1, 2, 3])
    ref = _function_cases(np, x_np, m_np, i_np)
    x, m, i = (nda.asarray(v, device=device) for v in (x_np, m_np, i_np))
    got = _function_cases(nda, x, m, i)
    for (label, expected_call), (_, call) in zip(ref, got):
        expected, result = expected_call(), call()
        if isinstance(expected, np.ndarray) and not isinstance(result, (tuple, int)):
            assert isinstance(result, nda.NDArray) and result.device == x.device, label
            assert result.shape == expected.shape, label
            assert np.dtype(result.dtype) == expected.dtype or label in ("round",), (label, result.dtype, expected.dtype)
            np.testing.assert_allclose(_host(result), expected, rtol=1e-6, atol=1e-12, err_msg=label)
        else:
            assert result == expected, label


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_reductions_take_numpys_out_and_dtype(device):
    x = nda.asarray([1.0, 2.0, 3.0], device=device)
    out = nda.empty((), device=device)
    assert np.sum(x, out=out) is out and float(out) == 6.0
    assert np.mean(x, dtype=np.float32).dtype is nda.float32
    assert float(np.mean(x, out=out)) == 2.0
    assert np.sum(nda.asarray([1, 2], dtype=nda.int8, device=device), dtype=np.int64).dtype is nda.int64
    assert np.max(x, keepdims=True).shape == (1,)
    assert np.sum(x, initial=1.0) == 7.0  # a keyword nda does not take: NumPy's, on a host copy


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_creation_with_like_creates_nda_arrays_on_its_device(device):
    like = nda.empty(0, device=device)
    for result, expected in (
        (np.asarray([1, 2], like=like), [1, 2]),
        (np.array([1.5], like=like), [1.5]),
        (np.zeros(2, like=like), [0.0, 0.0]),
        (np.full(2, 3, like=like), [3, 3]),
        (np.arange(3, like=like), [0, 1, 2]),
        (np.eye(2, like=like), [[1.0, 0.0], [0.0, 1.0]]),
    ):
        assert isinstance(result, nda.NDArray) and result.device == like.device
        assert result.tolist() == expected


def test_explicit_conversions_are_unchanged():
    x = nda.asarray([1.0, 2.0, 3.0], device="sim")
    host = np.asarray(x)  # never dispatched: a host copy, as before
    assert isinstance(host, np.ndarray) and host.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="Python scalars"):
        nda.add(x, np.ones(3))  # nda's own functions stay strict


def test_unsupported_ufunc_call_with_another_array_library_defers_to_it():
    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return "other"

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return "other"

    x = nda.asarray([1.0])
    assert np.concatenate([x, Other()]) == "other"


# ----------------------------------------------------------------------------- hypothesis


@given(
    values=st.lists(st.integers(-50, 50), min_size=1, max_size=6),
    scalar=st.sampled_from([np.int8, np.int16, np.int64, np.uint8, np.float32, np.float64]).flatmap(lambda t: st.integers(0, 100).map(t)),
    op=st.sampled_from(OPERATORS),
)
def test_numpy_scalar_matches_python_scalar_property(values, scalar, op):
    x = nda.asarray(values, dtype=nda.int64, device="sim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = op(x, scalar.item())
        np.testing.assert_array_equal(_host(op(x, scalar)), _host(expected))
        np.testing.assert_array_equal(_host(op(scalar, x)), _host(op(scalar.item(), x)))


@pytest.mark.parametrize("device", DEVICES)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
    data=st.data(),
    order=st.sampled_from("CF"),
)
def test_unravel_index_and_ravel_multi_index_run_on_the_device_as_numpy(device, shape, data, order):
    """Dask's argmin/argmax over all axes call both on nda chunks; called twice with other values."""
    size = int(np.prod(shape))
    for _ in range(2):
        flat = np.array(data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=6)))
        got = np.unravel_index(nda.asarray(flat, device=device), shape, order=order)
        expected = np.unravel_index(flat, shape, order=order)
        assert all(isinstance(g, nda.NDArray) and g.device == nda.Device(device) for g in got)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g.asnumpy(), e)
        back = np.ravel_multi_index(tuple(got), shape, order=order)
        np.testing.assert_array_equal(back.asnumpy(), flat)
        mode = data.draw(st.sampled_from(["wrap", "clip"]))
        shifted = [e + size for e in expected]
        np.testing.assert_array_equal(
            np.ravel_multi_index([nda.asarray(s, device=device) for s in shifted], shape, mode=mode, order=order).asnumpy(),
            np.ravel_multi_index(shifted, shape, mode=mode, order=order),
        )
    with pytest.raises(ValueError, match="out of bounds"):
        np.unravel_index(nda.asarray([size], device=device), shape)
    with pytest.raises(ValueError, match="invalid entry"):
        np.ravel_multi_index([nda.asarray([d], device=device) for d in shape], shape)


@pytest.mark.parametrize("device", DEVICES)
def test_a_numpy_array_assigned_into_a_selection_joins_the_device(device):
    """``x[i] = numpy_array`` as ``x + numpy_array`` (a user probe: it was a TypeError); the buffer
    is read at the assignment, so refilling it changes nothing written before."""
    x = nda.zeros((3, 4), device=device)
    expected = np.zeros((3, 4))
    row = np.empty(4)
    for i in range(3):
        row[:] = np.arange(4) + 10 * i
        x[i] = row
        expected[i] = row
    row[:] = -1
    x[0, 1:3] = np.array([7.0, 8.0])
    expected[0, 1:3] = [7.0, 8.0]
    np.testing.assert_array_equal(x.asnumpy(), expected)
    with pytest.raises(TypeError, match=r"x\[\.\.\.\] = value: .*no nda equivalent"):
        x[0] = np.array(["a"] * 4)


def test_unravel_and_ravel_refuse_what_numpy_refuses():
    with pytest.raises(ValueError, match="0d arrays"):
        np.unravel_index(nda.asarray([0]), ())
    with pytest.raises(ValueError, match="zero entries"):
        np.ravel_multi_index((nda.asarray([1]), nda.asarray([1])), (0, 3), mode="clip")
    with pytest.raises(ValueError, match="invalid dims"):
        np.ravel_multi_index((nda.asarray([1]), nda.asarray([1])), (2**40, 2**40))
    with pytest.raises(ValueError, match="non-negative"):
        np.ravel_multi_index((nda.asarray([1]), nda.asarray([1])), (-2, 3))
    got = np.unravel_index(nda.asarray([5, 7]), np.array([3, 4]))  # a shape given as a NumPy array
    assert [g.tolist() for g in got] == [[1, 1], [1, 3]]


_COPYTO_SOURCES = [
    1,
    1.5,
    True,
    2 + 1j,
    300,
    np.float64(2.5),
    np.arange(3, dtype=np.int64),
    np.array([0.5, 1.5, 2.5]),
    np.array([1, 2, 3], dtype=np.int8),
    np.array(7.0, dtype=np.float32),
    [1.0, 2.0, 3.0],
]


@pytest.mark.parametrize("device", ["cpu", "sim"])
@pytest.mark.parametrize("casting", ["no", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "float32", "float64", "bool"])
def test_copyto_is_numpys_destination_first_with_its_casting_rules(device, casting, dtype):
    """nda.copyto(dst, src) and np.copyto(dst, src) on nda arrays: NumPy's order, broadcasting, casting
    (weak Python scalars) and where=; the same exception type where NumPy refuses. Before: nda.copyto
    was (src, dst), so a NumPy user's nda.copyto(dst, src) overwrote src."""
    import warnings

    for src in _COPYTO_SOURCES:
        for where in (True, np.array([True, False, True])):
            want = np.array([4, 5, 6]).astype(dtype)
            nda_src = nda.asarray(src, device=device) if isinstance(src, np.ndarray) and src.ndim else src
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    np.copyto(want, src, casting=casting, where=where)
                    expected: Any = want
                except Exception as err:  # noqa: BLE001 - the type is what we compare
                    expected = type(err)
                for call in (nda.copyto, np.copyto):
                    got = nda.asarray(np.array([4, 5, 6]).astype(dtype), device=device)
                    mask = where if where is True else nda.asarray(where, device=device)
                    try:
                        assert call(got, nda_src, casting=casting, where=mask) is None
                    except Exception as err:  # noqa: BLE001
                        assert isinstance(expected, type) and isinstance(err, expected), (call, src, casting, where, err, expected)
                        continue
                    assert not isinstance(expected, type), (call, src, casting, where, "nda accepted what NumPy refuses")
                    np.testing.assert_array_equal(got.asnumpy(), expected, err_msg=f"{call.__module__} {src!r} {casting} {where}")
    x = nda.asarray([1.0, 2.0], device=device)
    y = nda.asarray([7.0, 8.0], device="cpu")
    nda.copyto(x, y)
    assert x.tolist() == [7.0, 8.0] and y.tolist() == [7.0, 8.0]
    x.copyto(y)  # the method stays MXNet's: this array into the other
    with pytest.raises(TypeError, match="destination must be an nda array"):
        nda.copyto(np.zeros(2), x)
    with pytest.raises(ValueError, match="casting must be one of"):
        nda.copyto(x, y, casting="sideways")


@pytest.mark.parametrize("device", ["cpu", "sim"])
@given(data=st.data())
@settings(max_examples=40, deadline=None)
def test_round_with_decimals_and_divmod_are_numpys(device, data):
    """``x.round(d)``, ``round(x, d)``, ``np.round(x, d)`` and ``divmod`` on nda arrays give NumPy's
    values and dtypes (they raised AttributeError/TypeError, and np.round(x, d) went to the host)."""
    import warnings

    dtype = data.draw(st.sampled_from(["float64", "float32", "int64", "int16", "uint8", "complex128"]))
    decimals = data.draw(st.integers(-3, 4))
    values = data.draw(
        hnp.arrays(
            np.dtype(dtype),
            st.integers(0, 6),
            elements=hnp.from_dtype(np.dtype(dtype), allow_nan=True, allow_infinity=True, min_value=None, max_value=None)
            if dtype[0] != "c"
            else st.complex_numbers(allow_nan=True, allow_infinity=True),
        )
    )
    x = nda.asarray(values, device=device)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = values.round(decimals)
        for got in (x.round(decimals), round(x, decimals), np.round(x, decimals)):
            assert isinstance(got, nda.NDArray) and got.device == x.device
            np.testing.assert_array_equal(got.asnumpy(), want)
            assert got.dtype.numpy == want.dtype
        if dtype[0] != "c" and values.size:
            divisor = data.draw(hnp.arrays(np.dtype(dtype), values.shape, elements=hnp.from_dtype(np.dtype(dtype), min_value=1, max_value=9)))
            d = nda.asarray(divisor, device=device)
            q, r = divmod(x, d)
            np.testing.assert_array_equal(q.asnumpy(), (x // d).asnumpy())  # nda's floor_divide: the Array API's
            np.testing.assert_array_equal(r.asnumpy(), (x % d).asnumpy())  # special cases (inf // 2 is inf, NumPy nan)
            finite = np.isfinite(values)
            wq, wr = np.divmod(values, divisor)
            np.testing.assert_array_equal(q.asnumpy()[finite], wq[finite])
            np.testing.assert_array_equal(r.asnumpy()[finite], wr[finite])
            q2, r2 = divmod(7, nda.asarray(divisor, device=device))
            np.testing.assert_array_equal(q2.asnumpy(), np.divmod(np.asarray(7, dtype=dtype), divisor)[0])


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_copyto_and_round_edges_a_probe_found(device):
    """Found by a user-style probe of this change: NumPy casts what nda itself has no dtype for
    (float16, big-endian), drops leading ones of a source, takes any where= that casts to bool
    (None is False), and 'unsafe' keeps the real part of complex data; round's scale factor is
    NumPy's own (1e9 then times 10 per step: an ulp from 10**d past 1e22; NaN past 1e308)."""
    import warnings

    def both(make_src, **kw):
        want = np.zeros(3)
        np.copyto(want, make_src(np), **kw)
        got = nda.zeros(3, device=device)
        nda.copyto(got, make_src(nda), **kw)
        np.testing.assert_array_equal(got.asnumpy(), want)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(lambda m: np.float16(0.5))
        both(lambda m: np.array([1, 2, 3], dtype=">i4"), casting="unsafe")
        both(lambda m: m.asarray([1 + 2j, 3 + 0j, 5 - 1j]) if m is nda else np.array([1 + 2j, 3 + 0j, 5 - 1j]), casting="unsafe")
        for where in (None, 1, [1, 0, 1], 2.5):
            both(lambda m: 5.0, where=where)
    m = nda.zeros((4, 5), device=device)
    nda.copyto(m, np.ones((1, 1, 5)))
    assert m.asnumpy().tolist() == np.ones((4, 5)).tolist()
    a = np.array([1.4893318699233268e300, 123.456, -7.5, 0.125])
    x = nda.asarray(a, device=device)
    with np.errstate(all="ignore"):
        for d in (-300, -23, 22, 23, 30, 308, 309, 400, -400):
            np.testing.assert_array_equal(x.round(d).asnumpy(), np.round(a, d))
