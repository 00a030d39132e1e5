"""NDArray's methods, generated from the op catalog, against NumPy's (issue 30, item 4).

``x.reshape(2, 3)``, ``x.ravel()``, ``x.transpose()``, ``x.sum(axis=0)``... are attached by
``nda._namespace`` from the catalog's ``methods`` fields; each is compared with the NumPy
method of the same name on the same values, twice with different values, on cpu and sim.
``isclose``/``allclose`` (nda extras) are compared with NumPy's too.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda

DEVICES = ["cpu", "sim"]
_DTYPES = [np.float32, np.float64, np.int32, np.int64]


def _arrays(dtypes=_DTYPES, min_dims=1, max_dims=3, min_side=1):
    return st.sampled_from(dtypes).flatmap(
        lambda dt: hnp.arrays(
            dt,
            hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=4),
            elements=st.integers(-50, 50).map(lambda v: dt(v))
            if np.dtype(dt).kind == "i"
            else st.floats(-100, 100, width=32 if dt is np.float32 else 64, allow_subnormal=False),
        )
    )


def _same(got, expected, *, exact: bool = True) -> None:
    if isinstance(expected, np.ndarray) or np.isscalar(expected):
        value = got.asnumpy() if isinstance(got, nda.NDArray) else np.asarray(got)
        expected = np.asarray(expected)
        assert value.shape == expected.shape, (value.shape, expected.shape)
        if exact or expected.dtype.kind not in "fc":
            np.testing.assert_array_equal(value, expected)
        else:
            np.testing.assert_allclose(value, expected, rtol=2e-5 if expected.dtype == np.float32 else 1e-12, atol=1e-6)
    else:
        assert got == expected


def _twice(device, data, strategy, check) -> None:
    for _ in range(2):  # the same method, called again with other values
        host = data.draw(strategy)
        check(nda.asarray(host, device=device), host)


@pytest.mark.parametrize("device", DEVICES)
@settings(deadline=None)
@given(data=st.data())
def test_shape_methods_match_numpy(device, data):
    def check(x, h):
        n = h.size
        assert x.reshape(n).shape == h.reshape(n).shape
        _same(x.reshape(n), h.reshape(n))
        _same(x.reshape((n,)), h.reshape((n,)))
        _same(x.reshape(1, n), h.reshape(1, n))
        _same(x.reshape(-1, 1), h.reshape(-1, 1))
        _same(x.ravel(), h.ravel())
        flat = x.flatten()
        _same(flat, h.flatten())
        _same(x.transpose(), h.transpose())
        axes = data.draw(st.permutations(list(range(h.ndim))))
        _same(x.transpose(*axes), h.transpose(*axes))
        _same(x.transpose(tuple(axes)), h.transpose(tuple(axes)))
        _same(x.T, h.T)
        if h.ndim >= 2:
            _same(x.mT, np.swapaxes(h, -1, -2))
        copy = x.copy()
        _same(copy, h.copy())
        _same(x.astype(nda.float64), h.astype(np.float64))
        assert x.tolist() == h.tolist()
        if h.size == 1:
            assert x.item() == h.item()
        # flatten and copy do not share memory; ravel of a contiguous array does (as NumPy)
        flat[...] = 0
        copy[...] = 0
        _same(x, h)
        r = x.ravel()
        r[...] = 7
        _same(x, np.full_like(h, 7))

    _twice(device, data, _arrays(), check)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "mean", "std", "var"])
@settings(deadline=None)
@given(data=st.data())
def test_reduction_methods_take_axis_and_keepdims_as_numpy(device, name, data):
    floating = name in ("mean", "std", "var")
    strategy = _arrays([np.float32, np.float64] if floating else _DTYPES)

    def check(x, h):
        axis = data.draw(st.one_of(st.none(), st.integers(-h.ndim, h.ndim - 1)))
        keepdims = data.draw(st.booleans())
        if name in ("argmax", "argmin"):
            if axis is None and keepdims:
                keepdims = False  # NumPy's flattened argmax with keepdims keeps every axis; the standard does too
            got = getattr(x, name)(axis=axis, keepdims=keepdims)
            expected = getattr(h, name)(axis=axis, keepdims=keepdims)
        else:
            got = getattr(x, name)(axis=axis, keepdims=keepdims)
            expected = getattr(h, name)(axis=axis, keepdims=keepdims)
            if name in ("sum", "prod") and h.dtype.kind == "i":
                expected = expected.astype(np.int64)
        _same(got, np.asarray(expected), exact=not floating and name not in ("sum", "prod") or h.dtype.kind == "i")

    _twice(device, data, strategy, check)


@pytest.mark.parametrize("device", DEVICES)
@settings(deadline=None)
@given(data=st.data())
def test_clip_method_matches_numpy(device, data):
    def check(x, h):
        lo = data.draw(st.integers(-60, 0))
        hi = data.draw(st.integers(0, 60))
        _same(x.clip(lo, hi), h.clip(lo, hi))
        _same(x.clip(max=hi), h.clip(max=hi))

    _twice(device, data, _arrays([np.float64, np.int64]), check)


def test_method_forms_and_errors():
    x = nda.reshape(nda.arange(6), (2, 3))
    assert x.reshape(3, 2).shape == (3, 2) and x.reshape([3, 2]).shape == (3, 2) and x.reshape(6).shape == (6,)
    assert x.transpose().shape == (3, 2) and x.transpose(None).shape == (3, 2) and x.transpose(1, 0).shape == (3, 2)
    with pytest.raises(ValueError):
        x.reshape(4, 2)
    with pytest.raises(TypeError):
        x.reshape(2.5)
    assert nda.NDArray.reshape.__doc__ and nda.NDArray.ravel.__doc__ and nda.NDArray.sum.__doc__
    assert x.flatten().shape == (6,) and x.ravel().shape == (6,)


@pytest.mark.parametrize("device", DEVICES)
@settings(deadline=None)
@given(
    a=hnp.arrays(np.float64, 5, elements=st.sampled_from([0.0, 1.0, 1.0 + 1e-7, 1e-9, np.inf, -np.inf, np.nan, 2.0])),
    b=hnp.arrays(np.float64, 5, elements=st.sampled_from([0.0, 1.0, 1.0 + 1e-4, -1e-9, np.inf, -np.inf, np.nan, 2.0])),
    equal_nan=st.booleans(),
)
def test_isclose_and_allclose_match_numpy(device, a, b, equal_nan):
    x, y = nda.asarray(a, device=device), nda.asarray(b, device=device)
    np.testing.assert_array_equal(nda.isclose(x, y, equal_nan=equal_nan).asnumpy(), np.isclose(a, b, equal_nan=equal_nan))
    assert nda.allclose(x, y, equal_nan=equal_nan) == np.allclose(a, b, equal_nan=equal_nan)
    np.testing.assert_array_equal(nda.isclose(x, 1.0).asnumpy(), np.isclose(a, 1.0))
    assert nda.isclose(nda.asarray([1, 2], device=device), nda.asarray([1.0, 2.5], device=device)).tolist() == [True, False]
    with pytest.raises(ValueError, match="rtol"):
        nda.isclose(x, y, rtol=-1.0)


#: nda's names beside the Array API standard's (README: "What is there"); a new one is a decision.
DOCUMENTED_EXTRAS = {
    "ArrayMeta",
    "BackendError",
    "BackendValidationError",
    "DType",
    "DeviceUnavailableError",
    "DispatchError",
    "FallbackError",
    "FallbackWarning",
    "HybridizeWarning",
    "KernelKey",
    "Layout",
    "NDArray",
    "allclose",
    "autograd",
    "backends",
    "config",
    "copy",
    "copyto",
    "default_device",
    "dispatch",
    "engine",
    "ext",
    "getitem",
    "hybridize",
    "isclose",
    "layouts",
    "ops",
    "profiler",
    "setitem",
    "sparse",
    "to_device",
    "waitall",
    "einsum",
    "einsum_path",
    "load",
    "save",
    "savez",
    "savez_compressed",
    "random",
    "pad",
    "transpose",
} | {  # NumPy's everyday names (issue 37: nda._numpyapi, nda.savetxt/loadtxt)
    "absolute",
    "amax",
    "amin",
    "angle",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "argwhere",
    "around",
    "array",
    "array_equal",
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "average",
    "bincount",
    "bool_",
    "cbrt",
    "column_stack",
    "concatenate",
    "conjugate",
    "convolve",
    "corrcoef",
    "correlate",
    "cov",
    "cross",
    "cumprod",
    "cumsum",
    "deg2rad",
    "degrees",
    "diag",
    "diagonal",
    "digitize",
    "dot",
    "dstack",
    "errstate",
    "get_printoptions",
    "gradient",
    "histogram",
    "histogram_bin_edges",
    "hstack",
    "identity",
    "inner",
    "interp",
    "kron",
    "loadtxt",
    "logspace",
    "median",
    "nan_to_num",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanpercentile",
    "nanprod",
    "nanquantile",
    "nanstd",
    "nansum",
    "nanvar",
    "ndarray",
    "outer",
    "percentile",
    "polyfit",
    "polyval",
    "power",
    "printoptions",
    "ptp",
    "put",
    "quantile",
    "rad2deg",
    "radians",
    "ravel",
    "savetxt",
    "set_printoptions",
    "split",
    "swapaxes",
    "trace",
    "unique",
    "vdot",
    "vstack",
}


def test_the_namespace_is_the_standards_plus_the_documented_extras():
    strict = pytest.importorskip("array_api_strict")
    standard = {n for n in strict.__all__ if not n.startswith(("ArrayAPIStrict", "get_array_api", "reset_array_api", "set_array_api"))}
    standard -= {"__array_api_version__", "__version__"}
    assert standard <= set(nda.__all__), sorted(standard - set(nda.__all__))
    assert set(nda.__all__) - standard == DOCUMENTED_EXTRAS


def test_method_keywords_and_numpys_order_argument():
    """Before: x.transpose(axes=...) reversed every axis silently; ravel('C') named reshape in its error."""
    x = nda.reshape(nda.arange(24), (2, 3, 4))
    assert x.transpose(axes=(1, 0, 2)).shape == (3, 2, 4)
    assert x.reshape(shape=(4, 6)).shape == (4, 6)
    assert x.ravel("C").shape == (24,) and x.ravel(order="C").shape == (24,) and x.flatten(order="C").shape == (24,)
    assert x.reshape(6, 4, order="C").shape == (6, 4)
    with pytest.raises(ValueError, match=r"ravel\(\): order='F'"):
        x.ravel("F")
    with pytest.raises(ValueError, match=r"flatten\(\): order='K'"):
        x.flatten(order="K")
    with pytest.raises(TypeError, match=r"ravel\(\) takes"):
        x.ravel("C", 2)


@pytest.mark.parametrize("device", DEVICES)
def test_a_copy_made_by_a_view_op_is_never_a_view_on_repeat_calls(device):
    """Before: the second x.flatten() (memoised) had x as its base: writes into the copy counted as
    writes into x, and a correct backward() was refused (review finding F03)."""
    x = nda.reshape(nda.arange(6.0, device=device), (2, 3))
    for _ in range(3):
        flat = x.flatten()
        assert flat._base is None
        copied = nda.reshape(x, (6,), copy=True)
        assert copied._base is None
    w = nda.asarray([1.0, 2.0], device=device)
    w.attach_grad()
    with nda.autograd.record():
        loss = nda.sum(w * w)
    for _ in range(2):
        w.flatten()[0] = 5.0  # a copy: w is not written
    loss.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [2.0, 4.0])


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "std", "var", "max", "min", "argmax", "argmin", "any", "all"])
def test_reduction_methods_take_the_axis_positionally_as_numpys(name):
    """``x.sum(0)`` (NumPy, CuPy and PyTorch users pass the axis positionally); called with two axes in turn."""
    host = np.arange(1.0, 7.0).reshape(2, 3)
    x = nda.asarray(host)
    for axis in (0, -1):
        np.testing.assert_allclose(getattr(x, name)(axis).asnumpy(), getattr(host, name)(axis))
    with pytest.raises(TypeError, match="at most 1 positional argument"):
        getattr(x, name)(0, 1)
    with pytest.raises(TypeError, match="both as a positional argument and as a keyword"):
        getattr(x, name)(0, axis=1)


def test_std_and_var_methods_take_numpys_ddof_as_the_array_apis_correction():
    host = np.arange(1.0, 7.0).reshape(2, 3)
    x = nda.asarray(host)
    for ddof in (0, 1):
        np.testing.assert_allclose(x.std(ddof=ddof).asnumpy(), host.std(ddof=ddof))
        np.testing.assert_allclose(x.var(0, ddof=ddof).asnumpy(), host.var(0, ddof=ddof))
    with pytest.raises(TypeError, match="both ddof and correction"):
        x.std(ddof=1, correction=1)
