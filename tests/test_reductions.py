"""Reductions and scans against NumPy: every op, every declared dtype, axis/keepdims/dtype/correction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nda
from _helpers import (
    ALL_DTYPES,
    INT_DTYPES,
    arrays,
    assert_same,
    axes,
    np_dtype,
    to_nda,
)

CATALOG = nda.ops.CATALOG

REDUCTIONS = {
    "sum": np.sum,
    "prod": np.prod,
    "mean": np.mean,
    "std": np.std,
    "var": np.var,
    "min": np.min,
    "max": np.max,
    "all": np.all,
    "any": np.any,
}
ARG_REDUCTIONS = {"argmin": np.argmin, "argmax": np.argmax}
ALL_REDUCTION_OPS = sorted(REDUCTIONS) + sorted(ARG_REDUCTIONS) + ["cumulative_sum"]


def _cases(names):
    return [pytest.param(n, d, id=f"{n}-{d.name}") for n in names for d in CATALOG[n].supported_dtypes]


def test_catalog_reductions_are_all_covered():
    for name in ALL_REDUCTION_OPS:
        assert name in CATALOG
        assert callable(getattr(nda, name))


def _numpy_call(name, a, axis, keepdims, extra):
    fn = REDUCTIONS[name]
    kwargs = dict(axis=axis, keepdims=keepdims)
    if "dtype" in extra and extra["dtype"] is not None:
        kwargs["dtype"] = np_dtype(extra["dtype"])
    if "correction" in extra:
        kwargs["ddof"] = extra["correction"]
    return np.asarray(fn(a, **kwargs))


def _raises_like(np_call):
    try:
        return np_call(), None
    except (ValueError, TypeError, IndexError) as err:
        return None, err


@pytest.mark.parametrize("name,dtype", _cases(sorted(REDUCTIONS)))
@given(data=st.data())
def test_reduction_matches_numpy(name, dtype, data):
    a = data.draw(arrays(dtype), label="x")
    axis = data.draw(axes(a.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    extra = {}
    if name in ("sum", "prod"):
        targets = [d for d in ALL_DTYPES if np.can_cast(np_dtype(dtype), np_dtype(d), "same_kind")]
        extra["dtype"] = data.draw(st.sampled_from([None] + targets), label="dtype")
    if name in ("std", "var"):
        extra["correction"] = data.draw(st.sampled_from([0, 1, 0.5, 2.0]), label="correction")
    expected, np_error = _raises_like(lambda: _numpy_call(name, a, axis, keepdims, extra))
    x = to_nda(a)
    fn = getattr(nda, name)
    if np_error is not None:
        # min/max of an empty selection: no identity
        assert name in ("min", "max"), f"unexpected NumPy error {np_error!r}"
        with pytest.raises(ValueError, match="empty"):
            fn(x, axis=axis, keepdims=keepdims)
        return
    result = fn(x, axis=axis, keepdims=keepdims, **extra)
    assert_same(result, expected)
    np.testing.assert_array_equal(x.asnumpy(), a)
    # the method form agrees
    assert_same(getattr(x, name)(axis=axis, keepdims=keepdims, **extra), expected)


@pytest.mark.parametrize("name", ["mean", "std", "var"])
@given(data=st.data())
def test_float_reductions_of_integers_compute_in_float64(name, data):
    """Documented: integer and bool input computes in float64."""
    dtype = data.draw(st.sampled_from([nda.bool] + INT_DTYPES), label="dtype")
    a = data.draw(arrays(dtype), label="x")
    axis = data.draw(axes(a.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    result = getattr(nda, name)(to_nda(a), axis=axis, keepdims=keepdims)
    expected = np.asarray(REDUCTIONS[name](a.astype(np.float64), axis=axis, keepdims=keepdims))
    assert_same(result, expected)
    assert result.dtype is nda.float64


@pytest.mark.parametrize("name,dtype", _cases(sorted(ARG_REDUCTIONS)))
@given(data=st.data())
def test_argmin_argmax_match_numpy(name, dtype, data):
    a = data.draw(arrays(dtype), label="x")
    axis = data.draw(axes(a.ndim, allow_tuple=False), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    x = to_nda(a)
    fn = getattr(nda, name)
    selected = a.size if axis is None else a.shape[axis]
    if selected == 0:
        with pytest.raises(ValueError, match="empty"):
            fn(x, axis=axis, keepdims=keepdims)
        return
    expected = np.asarray(ARG_REDUCTIONS[name](a, axis=axis, keepdims=keepdims))
    result = fn(x, axis=axis, keepdims=keepdims)
    assert_same(result, expected)
    assert result.dtype is nda.int64
    assert_same(getattr(x, name)(axis=axis, keepdims=keepdims), expected)


@pytest.mark.parametrize("dtype", CATALOG["cumulative_sum"].supported_dtypes, ids=lambda d: d.name)
@given(data=st.data())
def test_cumulative_sum_matches_numpy(dtype, data):
    a = data.draw(arrays(dtype), label="x")
    if a.ndim == 0:
        with pytest.raises(ValueError, match="at least one dimension"):
            nda.cumulative_sum(to_nda(a))
        return
    if a.ndim == 1:
        axis = data.draw(st.sampled_from([None, 0, -1]), label="axis")
    else:
        axis = data.draw(st.integers(-a.ndim, a.ndim - 1), label="axis")
    include_initial = data.draw(st.booleans(), label="include_initial")
    targets = [d for d in ALL_DTYPES if np.can_cast(np_dtype(dtype), np_dtype(d), "same_kind")]
    out_dtype = data.draw(st.sampled_from([None] + targets), label="dtype")
    expected = np.cumulative_sum(a, axis=axis, include_initial=include_initial, dtype=None if out_dtype is None else np_dtype(out_dtype))
    result = nda.cumulative_sum(to_nda(a), axis=axis, include_initial=include_initial, dtype=out_dtype)
    assert_same(result, expected)


def test_sum_default_accumulator_dtypes():
    """Array API: small integers sum in the default integer of their signedness."""
    for dtype, expected in [
        (nda.bool, nda.int64),
        (nda.int8, nda.int64),
        (nda.int32, nda.int64),
        (nda.uint8, nda.uint64),
        (nda.uint32, nda.uint64),
        (nda.float32, nda.float32),
        (nda.complex64, nda.complex64),
    ]:
        x = nda.asarray(np.ones(3, np_dtype(dtype)))
        assert nda.sum(x).dtype is expected
        assert nda.prod(x).dtype is expected
        assert nda.cumulative_sum(x).dtype is expected


def test_empty_reductions():
    x = nda.asarray(np.zeros((0, 3)))
    assert_same(nda.sum(x, axis=0), np.zeros(3))
    assert_same(nda.prod(x, axis=0), np.ones(3))
    assert_same(nda.all(x), np.asarray(True))
    assert_same(nda.any(x), np.asarray(False))
    assert_same(nda.mean(x, axis=0), np.full(3, np.nan))
    assert_same(nda.max(x, axis=1), np.zeros(0))
    with pytest.raises(ValueError, match=r"max\(\) of an empty array \(shape \(0, 3\)\)"):
        nda.max(x, axis=0)
    with pytest.raises(ValueError, match=r"argmin\(\) of an empty array"):
        nda.argmin(x)


def test_full_reduction_is_0d_and_converts_to_python():
    x = nda.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    s = nda.sum(x)
    assert s.shape == () and s.ndim == 0 and s.size == 1
    assert float(s) == 15.0
    assert nda.max(x).item() == 5.0
    assert int(nda.argmax(x)) == 5
    assert bool(nda.any(x > 4)) is True


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("name", ALL_REDUCTION_OPS)
def test_axis_out_of_range_raises_index_error(name):
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(IndexError, match=rf"^{name}\(\): axis 2 is out of bounds for array of dimension 2$"):  # NumPy's words
        getattr(nda, name)(x, axis=2)
    with pytest.raises(IndexError, match="axis -3 is out of bounds"):
        getattr(nda, name)(x, axis=-3)


def test_axis_errors_use_numpys_words():
    # SciPy's tests match NumPy's message ("...axis 10 is out of bounds for array..."), as
    # array_api_strict gives it; nda's used to say "for an array of 1 dimensions".
    a = np.ones((2, 3))
    x = nda.asarray(a)
    for nda_call, np_call in [
        (lambda: nda.sum(x, axis=5), lambda: np.sum(a, axis=5)),
        (lambda: nda.moveaxis(x, 10, 0), lambda: np.moveaxis(a, 10, 0)),
        (lambda: nda.expand_dims(nda.asarray(1.0), axis=3), lambda: np.expand_dims(np.asarray(1.0), axis=3)),
    ]:
        with pytest.raises(np.exceptions.AxisError) as want:
            np_call()
        with pytest.raises(np.exceptions.AxisError) as got:
            nda_call()
        tail = str(want.value).split(": ")[-1]
        assert str(got.value).endswith(tail), (str(got.value), tail)
        assert (got.value.axis, got.value.ndim) == (want.value.axis, want.value.ndim)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_repeated_axis_raises_value_error(name):
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"repeated axis in \(1, -1\)"):
        getattr(nda, name)(x, axis=(1, -1))


@pytest.mark.parametrize("name", sorted(REDUCTIONS) + sorted(ARG_REDUCTIONS))
def test_keepdims_must_be_bool(name):
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(TypeError, match="keepdims must be a bool"):
        getattr(nda, name)(x, keepdims=1)


@pytest.mark.parametrize("name", ALL_REDUCTION_OPS)
def test_undeclared_dtypes_raise_type_error(name):
    decl = CATALOG[name]
    for dtype in ALL_DTYPES:
        if dtype in decl.supported_dtypes:
            continue
        if name in ("mean", "std", "var") and np_dtype(dtype).kind in "biu":
            continue  # float64 fallback
        if name in ("sum", "prod") and dtype is nda.bool:
            continue
        x = nda.asarray(np.ones(3, np_dtype(dtype)))
        with pytest.raises(TypeError, match=rf"{name}\(\) does not support dtype {dtype.name}"):
            getattr(nda, name)(x)


def test_bad_dtype_and_correction_arguments():
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(TypeError, match="'float16' is not a supported dtype"):
        nda.sum(x, dtype="float16")
    with pytest.raises(TypeError, match="is not a supported dtype"):
        nda.prod(x, dtype=object)
    with pytest.raises(ValueError, match="correction must be non-negative, got -1"):
        nda.std(x, correction=-1)
    with pytest.raises(TypeError, match="correction must be an int or a float"):
        nda.var(x, correction="1")
    with pytest.raises(TypeError, match="expects an nda array"):
        nda.sum(np.ones(3))


def test_cumulative_sum_needs_axis_for_nd():
    x = nda.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match="needs axis= for an array of 2 dimensions"):
        nda.cumulative_sum(x)
    with pytest.raises(TypeError, match="include_initial must be a bool"):
        nda.cumulative_sum(x, axis=0, include_initial=1)


def test_reductions_of_views_and_noncontiguous_input():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    x = to_nda(a)
    v = nda.permute_dims(x, (2, 0, 1))[:, ::-1]
    assert_same(nda.sum(v, axis=(0, 2)), np.sum(np.transpose(a, (2, 0, 1))[:, ::-1], axis=(0, 2)))
    assert_same(nda.argmax(v, axis=1), np.argmax(np.transpose(a, (2, 0, 1))[:, ::-1], axis=1))


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_any_and_all_take_numpys_out_none(device):
    """``np.any(obj)`` calls ``obj.any(axis=None, out=None)``; xarray passes that on as
    ``xp.any(data, out=None)`` (its ``polyfit``): a TypeError before. An array there is refused."""
    x = nda.asarray([[True, False], [True, True]], device=device)
    assert nda.any(x, out=None).item() is True and nda.all(x, axis=1, out=None).tolist() == [False, True]
    assert x.any(out=None).item() is True and x.all(0, out=None).tolist() == [True, False]
    for op in (nda.any, nda.all):
        with pytest.raises(TypeError, match=rf"{op.__name__}\(\): out= must be None"):
            op(x, out=nda.zeros((), dtype=nda.bool, device=device))
