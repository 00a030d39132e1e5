"""NumPy's everyday names at ``nda.*`` (issue 37, item 1) against NumPy, on cpu and sim.

Each function of ``nda._numpyapi`` is compared with NumPy's function of the same name on the
same data: values (bit for bit where nda computes as NumPy does, else to a stated tolerance),
dtypes and shapes, with hypothesis drawing the data, axes and parameters. Before issue 37
every one of these names was missing (AttributeError at ``nda.<name>``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda

DEVICES = ["cpu", "sim"]
_FLOATS = [np.float64, np.float32]
_REALS = [np.float64, np.float32, np.int64, np.int32, np.int8]
_METHODS = [
    "linear",
    "lower",
    "higher",
    "nearest",
    "midpoint",
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "median_unbiased",
    "normal_unbiased",
]


def _values(dt, nan: bool = True):
    if np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        return st.integers(max(info.min, -1000), min(info.max, 1000)).map(lambda v: dt(v))
    width = 32 if dt is np.float32 else 64
    finite = st.floats(-1e3, 1e3, width=width, allow_subnormal=False)
    return st.one_of(finite, st.just(dt(np.nan))) if nan else finite


def _data(dtypes=_REALS, min_dims=1, max_dims=3, min_side=1, nan: bool = True):
    return st.sampled_from(dtypes).flatmap(
        lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=5), elements=_values(dt, nan))
    )


def _axis(ndim: int):
    choices = [None] + list(range(ndim)) + [-1] + ([(0, ndim - 1)] if ndim > 1 else [])
    return st.sampled_from(choices)


def same(got, expected, *, exact: bool = True, rtol: float = 1e-12, atol: float = 0.0) -> None:
    """``got`` (nda arrays, tuples, Python values) is NumPy's ``expected``: dtype, shape, values."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), (type(got), len(got))
        for g, e in zip(got, expected):
            same(g, e, exact=exact, rtol=rtol, atol=atol)
        return
    if isinstance(expected, (bool, int, float)) and not isinstance(expected, np.generic):
        assert got == expected or (got != got and expected != expected), (got, expected)
        return
    assert isinstance(got, nda.NDArray) or np.isscalar(got), f"expected an nda array, got {type(got).__name__}"
    value = got.asnumpy() if isinstance(got, nda.NDArray) else np.asarray(got)
    want = np.asarray(expected)
    assert value.dtype == want.dtype, f"dtype {value.dtype} != NumPy's {want.dtype}"
    assert value.shape == want.shape, f"shape {value.shape} != NumPy's {want.shape}"
    if exact or want.dtype.kind not in "fc":
        np.testing.assert_array_equal(value, want)
    else:
        np.testing.assert_allclose(value, want, rtol=rtol, atol=atol, equal_nan=True)


def both(nda_call, numpy_call, **kw) -> None:
    """NumPy's answer, or NumPy's exception type (nda's may be a subclass)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            expected = numpy_call()
        except Exception as err:  # noqa: BLE001 - the same refusal is the answer
            with pytest.raises(type(err)):
                nda_call()
            return
        got = nda_call()
    same(got, expected, **kw)


# ----------------------------------------------------------------------------- order statistics


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=15, deadline=None)
@given(data=st.data(), h=_data())
def test_median_quantile_percentile_are_numpys(device, data, h):
    x = nda.asarray(h, device=device)
    axis = data.draw(_axis(h.ndim))
    keepdims = data.draw(st.booleans())
    both(lambda: nda.median(x, axis=axis, keepdims=keepdims), lambda: np.median(h, axis=axis, keepdims=keepdims))
    method = data.draw(st.sampled_from(_METHODS))
    q = data.draw(st.one_of(st.floats(0, 1), st.sampled_from([0, 1]), st.lists(st.floats(0, 1), min_size=1, max_size=3)))
    both(
        lambda: nda.quantile(x, q, axis=axis, method=method, keepdims=keepdims),
        lambda: np.quantile(h, q, axis=axis, method=method, keepdims=keepdims),
    )
    p = data.draw(st.one_of(st.floats(0, 100), st.lists(st.integers(0, 100), min_size=1, max_size=3)))
    both(lambda: nda.percentile(x, p, axis=axis, method=method), lambda: np.percentile(h, p, axis=axis, method=method))


def _first_slice_all_nan(h, axis) -> bool:
    """NumPy's nanquantile along an axis (``apply_along_axis``) takes its result dtype from the
    first slice: float32 data with an array ``q`` gives float32 when that slice is all NaN,
    float64 otherwise (quantile's rule, which nda keeps whatever the data)."""
    if h.dtype != np.float32:
        return False
    if axis is None:  # the whole array is the slice: all NaN gives NaN of the data's dtype
        return bool(h.size) and bool(np.isnan(h).all())
    moved = np.moveaxis(h, axis if isinstance(axis, tuple) else (axis,), tuple(range(-(len(axis) if isinstance(axis, tuple) else 1), 0)))
    first = moved.reshape(moved.shape[: moved.ndim - (len(axis) if isinstance(axis, tuple) else 1)] + (-1,))
    return bool(first.size) and bool(np.isnan(first.reshape(-1, first.shape[-1])[0]).all())


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), h=_data(dtypes=_FLOATS + [np.int64]))
def test_nanquantile_nanpercentile_are_numpys(device, data, h):
    """``nanquantile``/``nanpercentile`` (xarray's ``quantile`` calls them) give NumPy's values
    and dtypes, bit for bit: each slice's quantiles are those of its numbers; all NaN gives NaN.
    They were missing (``np.nanquantile`` of nda data computed on a host copy and returned a
    NumPy array, which xarray's next call, ``xp.moveaxis``, refused)."""
    x = nda.asarray(h, device=device)
    axis = data.draw(_axis(h.ndim))
    keepdims = data.draw(st.booleans())
    method = data.draw(st.sampled_from(_METHODS))
    q = data.draw(st.one_of(st.floats(0, 1), st.sampled_from([0, 1, 0.5]), st.lists(st.floats(0, 1), min_size=1, max_size=3)))
    assume(not (isinstance(q, list) and _first_slice_all_nan(h, axis)))
    both(
        lambda: nda.nanquantile(x, q, axis=axis, method=method, keepdims=keepdims),
        lambda: np.nanquantile(h, q, axis=axis, method=method, keepdims=keepdims),
    )
    p = data.draw(st.one_of(st.floats(0, 100), st.lists(st.integers(0, 100), min_size=1, max_size=3)))
    assume(not (isinstance(p, list) and _first_slice_all_nan(h, axis)))
    both(lambda: nda.nanpercentile(x, p, axis=axis, method=method), lambda: np.nanpercentile(h, p, axis=axis, method=method))


@pytest.mark.parametrize("device", DEVICES)
def test_nanquantile_of_a_slice_of_nan_only_is_nan(device):
    h = np.array([[np.nan, 1.0, 2.0], [np.nan, np.nan, np.nan], [4.0, np.nan, 3.0]])
    for method in _METHODS:
        both(
            lambda: nda.nanquantile(nda.asarray(h, device=device), [0.2, 0.7], axis=1, method=method),
            lambda: np.nanquantile(h, [0.2, 0.7], axis=1, method=method),
        )  # NumPy also warns "All-NaN slice encountered"
    with pytest.raises(ValueError, match="not a valid method"):
        nda.nanquantile(nda.asarray(h, device=device), 0.5, method="magic")
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        nda.nanpercentile(nda.asarray(h, device=device), 101)


@pytest.mark.parametrize("device", DEVICES)
def test_order_statistics_refuse_as_numpy(device):
    x = nda.asarray([1.0, 2.0, 3.0], device=device)
    with pytest.raises(ValueError, match="range"):
        nda.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        nda.percentile(x, -1)
    with pytest.raises(ValueError, match="not a valid method"):
        nda.quantile(x, 0.5, method="magic")
    with pytest.raises(TypeError, match="nda.asarray"):
        nda.median([1, 2, 3])
    same(nda.median(nda.zeros((0,), device=device)), np.float64("nan"))


# ----------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=15, deadline=None)
@given(data=st.data(), h=_data())
def test_nan_reductions_extrema_and_scans_are_numpys(device, data, h):
    x = nda.asarray(h, device=device)
    axis = data.draw(_axis(h.ndim))
    keepdims = data.draw(st.booleans())
    tol = {"exact": False, "rtol": 2e-5 if h.dtype == np.float32 else 1e-10, "atol": 1e-6 if h.dtype == np.float32 else 1e-9}
    for name in ("nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "amax", "amin"):
        both(lambda: getattr(nda, name)(x, axis=axis, keepdims=keepdims), lambda: getattr(np, name)(h, axis=axis, keepdims=keepdims), **tol)
    if h.dtype != np.int8:  # NumPy's ptp of int8 wraps around; so does nda's
        both(lambda: nda.ptp(x, axis=axis), lambda: np.ptp(h, axis=axis))
    initial = data.draw(st.integers(-5, 5))
    mask = data.draw(hnp.arrays(np.bool_, h.shape))
    both(lambda: nda.amax(x, axis=axis, initial=initial, where=mask), lambda: np.amax(h, axis=axis, initial=initial, where=mask))
    both(lambda: nda.amin(x, axis=axis, initial=initial), lambda: np.amin(h, axis=axis, initial=initial))
    scan_axis = data.draw(st.sampled_from([None, 0, -1]))
    both(lambda: nda.cumsum(x, axis=scan_axis), lambda: np.cumsum(h, axis=scan_axis), **tol)
    both(lambda: nda.cumprod(x, axis=scan_axis), lambda: np.cumprod(h, axis=scan_axis), **tol)
    weights = data.draw(hnp.arrays(np.float64, h.shape, elements=st.floats(0.5, 2)))
    both(lambda: nda.average(x, axis=axis), lambda: np.average(h, axis=axis), **tol)
    both(lambda: nda.average(x, axis=axis, weights=weights, returned=True), lambda: np.average(h, axis=axis, weights=weights, returned=True), **tol)


@pytest.mark.parametrize("device", DEVICES)
def test_bools_count_in_int64_and_amax_needs_initial_with_where(device):
    b = nda.asarray([True, False, True], device=device)
    same(nda.cumsum(b), np.cumsum(np.array([True, False, True])))
    same(nda.amax(b), np.amax(np.array([True, False, True])))
    with pytest.raises(ValueError, match="initial"):
        nda.amax(nda.ones(3, device=device), where=[True, False, True])


# ----------------------------------------------------------------------------- counting


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=15, deadline=None)
@given(data=st.data(), h=_data(nan=False, max_dims=2))
def test_histogram_bincount_digitize_unique_are_numpys(device, data, h):
    x = nda.asarray(h, device=device)
    bins = data.draw(
        st.one_of(
            st.integers(1, 12),
            st.sampled_from(["auto", "fd", "doane", "scott", "rice", "sturges", "sqrt"]),
            st.lists(st.integers(-1000, 1000), min_size=2, max_size=6, unique=True).map(sorted),
        )
    )
    both(lambda: nda.histogram(x, bins=bins), lambda: np.histogram(h, bins=bins))
    lo = data.draw(st.integers(-500, 0))
    both(
        lambda: nda.histogram(x, bins=4, range=(lo, lo + 600), density=True),
        lambda: np.histogram(h, bins=4, range=(lo, lo + 600), density=True),
        exact=False,
    )
    weights = data.draw(hnp.arrays(np.float64, h.shape, elements=st.floats(0, 3)))
    both(lambda: nda.histogram(x, bins=5, weights=weights), lambda: np.histogram(h, bins=5, weights=weights), exact=False)
    edges = sorted(data.draw(st.lists(st.integers(-1000, 1000), min_size=1, max_size=5, unique=True)))
    right = data.draw(st.booleans())
    both(lambda: nda.digitize(x, edges, right=right), lambda: np.digitize(h, edges, right=right))
    both(lambda: nda.digitize(x, edges[::-1], right=right), lambda: np.digitize(h, edges[::-1], right=right))
    flat = np.abs(h.reshape(-1)).astype(np.int64) % 20
    minlength = data.draw(st.integers(0, 25))
    both(lambda: nda.bincount(nda.asarray(flat, device=device), minlength=minlength), lambda: np.bincount(flat, minlength=minlength))
    w = weights.reshape(-1)
    both(lambda: nda.bincount(nda.asarray(flat, device=device), weights=w), lambda: np.bincount(flat, weights=w), exact=False)
    both(
        lambda: nda.unique(x, return_index=True, return_inverse=True, return_counts=True),
        lambda: np.unique(h, return_index=True, return_inverse=True, return_counts=True),
    )
    both(lambda: nda.argwhere(x), lambda: np.argwhere(h))


@pytest.mark.parametrize("device", DEVICES)
def test_unique_folds_nans_array_equal_and_errors(device):
    h = np.array([2.0, np.nan, 1.0, np.nan, 2.0])
    x = nda.asarray(h, device=device)
    same(nda.unique(x, return_counts=True, return_inverse=True), np.unique(h, return_counts=True, return_inverse=True))
    same(nda.unique(x, equal_nan=False), np.unique(h, equal_nan=False))
    assert nda.array_equal(x, x) is False and nda.array_equal(x, x, equal_nan=True) is True
    assert nda.array_equal(x, h, equal_nan=True) is True and nda.array_equal(x, x[:2]) is False
    same(nda.argwhere(nda.asarray(3, device=device)), np.argwhere(np.array(3)))
    with pytest.raises(ValueError, match="negative"):
        nda.bincount(nda.asarray([1, -1], device=device))
    with pytest.raises(TypeError, match="safe"):
        nda.bincount(nda.asarray([1.0], device=device))
    with pytest.raises(ValueError, match="monotonic"):
        nda.digitize(x, [1, 3, 2])
    with pytest.raises(ValueError, match="not finite"):
        nda.histogram(x)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=10, deadline=None)
@given(
    h=_data(dtypes=[np.float64, np.float32, np.int64], max_dims=2, min_side=2, nan=False), rowvar=st.booleans(), ddof=st.sampled_from([None, 0, 2])
)
def test_cov_and_corrcoef_are_numpys(device, h, rowvar, ddof):
    x = nda.asarray(h, device=device)
    assume(h.ndim == 1 or min(h.shape) >= 2)
    tol = {"exact": False, "rtol": 1e-9, "atol": 1e-9}
    both(lambda: nda.cov(x, rowvar=rowvar, ddof=ddof), lambda: np.cov(h, rowvar=rowvar, ddof=ddof), **tol)
    n = h.shape[-1] if rowvar or h.ndim == 1 else h.shape[0]
    fw, aw = np.arange(1, n + 1), np.linspace(0.5, 1.5, n)
    both(lambda: nda.cov(x, rowvar=rowvar, fweights=fw, aweights=aw), lambda: np.cov(h, rowvar=rowvar, fweights=fw, aweights=aw), **tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        both(lambda: nda.corrcoef(x, rowvar=rowvar), lambda: np.corrcoef(h, rowvar=rowvar), **tol)


# ----------------------------------------------------------------------------- shapes and creation


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=12, deadline=None)
@given(data=st.data(), h=_data(dtypes=[np.float64, np.int32, np.int8], max_dims=3, nan=False))
def test_joining_splitting_and_shapes_are_numpys(device, data, h):
    x = nda.asarray(h, device=device)
    other = h.astype(data.draw(st.sampled_from([np.float32, np.int64, np.bool_])))
    y = nda.asarray(other, device=device)
    both(lambda: nda.concatenate([x, y], axis=-1), lambda: np.concatenate([h, other], axis=-1))
    both(lambda: nda.concatenate([x, y], axis=None), lambda: np.concatenate([h, other], axis=None))
    for name in ("vstack", "hstack", "dstack", "column_stack"):
        both(lambda: getattr(nda, name)([x, y]), lambda: getattr(np, name)([h, other]))
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        both(lambda: getattr(nda, name)(x), lambda: getattr(np, name)(h))
        both(lambda: getattr(nda, name)(x, y), lambda: getattr(np, name)(h, other))
    axis = data.draw(st.integers(0, h.ndim - 1))
    sections = data.draw(st.one_of(st.integers(1, 4), st.lists(st.integers(-3, 6), max_size=3)))
    both(lambda: nda.array_split(x, sections, axis=axis), lambda: np.array_split(h, sections, axis=axis))
    both(lambda: nda.split(x, sections, axis=axis), lambda: np.split(h, sections, axis=axis))
    i, j = data.draw(st.integers(-h.ndim, h.ndim - 1)), data.draw(st.integers(-h.ndim, h.ndim - 1))
    both(lambda: nda.swapaxes(x, i, j), lambda: np.swapaxes(h, i, j))
    order = data.draw(st.sampled_from(["C", "F", "K"]))
    both(lambda: nda.ravel(x, order), lambda: np.ravel(h, order) if order != "K" else np.ravel(h))
    if h.ndim <= 2:
        k = data.draw(st.integers(-3, 3))
        both(lambda: nda.diag(x, k), lambda: np.diag(h, k))


@pytest.mark.parametrize("device", DEVICES)
def test_creation_names_and_put(device):
    same(nda.array([[1, 2]], ndmin=3, device=device), np.array([[1, 2]], ndmin=3))
    same(nda.array(nda.ones(2, device=device), dtype=nda.int32), np.array(np.ones(2), dtype=np.int32))
    src = nda.ones(2, device=device)
    assert nda.array(src) is not src and nda.array(src, copy=None) is src
    with pytest.raises(ValueError):
        nda.array(src, dtype=nda.int32, copy=False)
    same(nda.identity(3, device=device), np.identity(3))
    same(nda.identity(2, dtype=nda.int8, device=device), np.identity(2, dtype=np.int8))
    same(nda.logspace(0, 3, 7, device=device), np.logspace(0, 3, 7))
    same(
        nda.logspace(-1, 2, 5, base=2, endpoint=False, dtype=nda.float32, device=device),
        np.logspace(-1, 2, 5, base=2, endpoint=False, dtype=np.float32),
    )
    for mode, ind, v in (("raise", [0, -1, 2], [5, 6]), ("wrap", [0, -7, 9], [5, 6, 7, 8]), ("clip", [-9, 99], 3)):
        got, want = nda.zeros((2, 3), device=device), np.zeros((2, 3))
        assert nda.put(got, ind, v, mode=mode) is None
        np.put(want, ind, v, mode=mode)
        same(got, want)
    with pytest.raises(IndexError, match="out of bounds"):
        nda.put(nda.zeros(3, device=device), [3], 1.0)


# ----------------------------------------------------------------------------- numerical functions


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=12, deadline=None)
@given(data=st.data(), h=_data(dtypes=[np.float64, np.float32, np.int64], max_dims=2, min_side=3, nan=False))
def test_elementwise_and_numerical_functions_are_numpys(device, data, h):
    x = nda.asarray(h, device=device)
    for name in ("deg2rad", "rad2deg", "radians", "degrees"):
        both(lambda: getattr(nda, name)(x), lambda: getattr(np, name)(h))
    deg = data.draw(st.booleans())
    both(lambda: nda.angle(x, deg=deg), lambda: np.angle(h, deg=deg))
    both(lambda: nda.cbrt(x), lambda: np.cbrt(h), exact=False, rtol=5e-16 if h.dtype != np.float32 else 2.5e-7)
    decimals = data.draw(st.integers(-2, 3))
    both(lambda: nda.around(x, decimals), lambda: np.around(h, decimals))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        special = h / np.where(h > 0, 0, 1)  # infinities where h > 0
        special = np.where(h < -500, np.nan, special) if h.dtype.kind == "f" else special
    both(lambda: nda.nan_to_num(nda.asarray(special, device=device), nan=-1.0), lambda: np.nan_to_num(special, nan=-1.0))
    edge = data.draw(st.sampled_from([1, 2]))
    tol = {"exact": False, "rtol": 1e-5 if h.dtype == np.float32 else 1e-12, "atol": 1e-9}
    both(lambda: nda.gradient(x, edge_order=edge), lambda: np.gradient(h, edge_order=edge), **tol)
    coords = [np.cumsum(data.draw(hnp.arrays(np.float64, n, elements=st.floats(0.1, 2)))) for n in h.shape]
    both(lambda: nda.gradient(x, *coords, edge_order=edge), lambda: np.gradient(h, *coords, edge_order=edge), **tol)
    both(lambda: nda.gradient(x, 0.5, axis=-1), lambda: np.gradient(h, 0.5, axis=-1), **tol)
    xp = np.unique(data.draw(hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(-1000, 1000))))
    fp = data.draw(hnp.arrays(np.float64, xp.shape, elements=st.floats(-10, 10)))
    both(lambda: nda.interp(x, xp, fp), lambda: np.interp(h, xp, fp), exact=False, rtol=1e-14, atol=1e-12)
    both(
        lambda: nda.interp(x, xp, fp + 1j, left=-9, right=9j),
        lambda: np.interp(h, xp, fp + 1j, left=-9, right=9j),
        exact=False,
        rtol=1e-14,
        atol=1e-12,
    )
    wrapped = np.unique(xp % 360.0)  # period: sample points distinct after the wrap (ties sort in NumPy's unstable order)
    keep = wrapped < 360.0
    xw, fw = wrapped[keep], np.resize(fp, wrapped.shape)[keep]
    if xw.size:
        both(lambda: nda.interp(x, xw, fw, period=360.0), lambda: np.interp(h, xw, fw, period=360.0), exact=False, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=12, deadline=None)
@given(
    data=st.data(),
    a=hnp.arrays(np.float64, st.integers(1, 9), elements=st.floats(-10, 10)),
    v=hnp.arrays(np.float64, st.integers(1, 5), elements=st.floats(-10, 10)),
)
def test_convolve_correlate_polynomials_are_numpys(device, data, a, v):
    x = nda.asarray(a, device=device)
    tol = {"exact": False, "rtol": 1e-12, "atol": 1e-11}
    for mode in ("full", "same", "valid"):
        both(lambda: nda.convolve(x, v, mode), lambda: np.convolve(a, v, mode), **tol)
        both(lambda: nda.correlate(x, v, mode), lambda: np.correlate(a, v, mode), **tol)
        both(lambda: nda.correlate(v, x + 1j, mode), lambda: np.correlate(v, a + 1j, mode), **tol)
    both(lambda: nda.polyval(v, x), lambda: np.polyval(v, a), exact=False, rtol=1e-12, atol=1e-9)
    if a.size > 3 and np.unique(np.round(a, 2)).size > 3:  # points spread out: a well-conditioned fit (not 1e-195 and 4e-75)
        y = 2 * a * a - a + 3
        deg = data.draw(st.integers(0, 2))
        both(lambda: nda.polyfit(x, y, deg), lambda: np.polyfit(a, y, deg), exact=False, rtol=1e-6, atol=1e-7)
        fitted = nda.polyfit(x, y, deg, full=True)
        expected = np.polyfit(a, y, deg, full=True)
        assert int(fitted[2]) == expected[2]
        same(fitted[3], expected[3], exact=False, rtol=1e-9, atol=1e-12 * float(np.max(expected[3])))


# ----------------------------------------------------------------------------- products and linear algebra


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=12, deadline=None)
@given(data=st.data(), h=_data(dtypes=[np.float64, np.int64], min_dims=1, max_dims=3, min_side=1, nan=False))
def test_products_are_numpys(device, data, h):
    x = nda.asarray(h, device=device)
    g = data.draw(hnp.arrays(np.float64, data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)), elements=st.floats(-10, 10)))
    y = nda.asarray(g, device=device)
    tol = {"exact": False, "rtol": 1e-12, "atol": 1e-9}
    both(lambda: nda.dot(x, y), lambda: np.dot(h, g), **tol)
    both(lambda: nda.inner(x, y), lambda: np.inner(h, g), **tol)
    both(lambda: nda.outer(x, y), lambda: np.outer(h, g))
    both(lambda: nda.kron(x, y), lambda: np.kron(h, g))
    if h.size == g.size:
        both(lambda: nda.vdot(x, y), lambda: np.vdot(h, g), **tol)
    if h.ndim >= 2:
        offset = data.draw(st.integers(-2, 2))
        both(lambda: nda.trace(x, offset), lambda: np.trace(h, offset))
        both(lambda: nda.diagonal(x, offset, 0, -1), lambda: np.diagonal(h, offset, 0, -1))
    if h.shape[-1] == 3 and g.ndim and g.shape[-1] == 3:
        both(lambda: nda.cross(x, y), lambda: np.cross(h, g))


@pytest.mark.parametrize("device", DEVICES)
def test_cross_norm_lstsq_fft2_are_numpys(device):
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    x, y = nda.asarray(a, device=device), nda.asarray(b, device=device)
    same(nda.cross(x, y), np.cross(a, b))
    same(nda.cross(x.T, y.T, axisa=0, axisb=0, axisc=0), np.cross(a.T, b.T, axisa=0, axisb=0, axisc=0))
    with pytest.warns(DeprecationWarning):
        same(nda.cross(x[:, :2], y[:, :2]), np.cross(a[:, :2], b[:, :2]))
    with pytest.raises(ValueError, match="dimension must be 2 or 3"):
        nda.cross(nda.ones(4, device=device), nda.ones(4, device=device))
    m = rng.normal(size=(5, 3, 4))
    z = nda.asarray(m, device=device)
    tol = {"exact": False, "rtol": 1e-12, "atol": 1e-12}
    for ord_ in (None, 1, 2, np.inf, -np.inf, 0, 3):
        same(nda.linalg.norm(z, ord_, axis=-1), np.linalg.norm(m, ord_, axis=-1), **tol)
    for ord_ in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        same(nda.linalg.norm(z, ord_, axis=(0, 2), keepdims=True), np.linalg.norm(m, ord_, axis=(0, 2), keepdims=True), **tol)
    same(nda.linalg.norm(z), np.linalg.norm(m), **tol)
    same(nda.linalg.norm(nda.asarray(a + 1j * b, device=device)), np.linalg.norm(a + 1j * b), **tol)
    rhs = rng.normal(size=(4, 2))
    for matrix in (a, a[:2], np.c_[a, a[:, :1]]):
        b_ = rhs[: matrix.shape[0]]
        got, want = nda.linalg.lstsq(nda.asarray(matrix, device=device), b_), np.linalg.lstsq(matrix, b_)
        same(got[0], want[0], exact=False, rtol=1e-9, atol=1e-12)
        same(got[1], want[1], exact=False, rtol=1e-9, atol=1e-12)
        assert got[2] == want[2] and type(got[2]) is type(want[2])
        same(got[3], want[3], exact=False, rtol=1e-12)
    for name in ("fft2", "ifft2", "rfft2"):
        same(getattr(nda.fft, name)(z), getattr(np.fft, name)(m), **tol)
        same(getattr(nda.fft, name)(z, s=(2, 6), axes=(0, 2)), getattr(np.fft, name)(m, s=(2, 6), axes=(0, 2)), **tol)
    same(nda.fft.irfft2(nda.fft.rfft2(z)), np.fft.irfft2(np.fft.rfft2(m)), **tol)
    same(nda.fft.fft2(nda.asarray(m.astype(np.int64), device=device)), np.fft.fft2(m.astype(np.int64)), **tol)


@pytest.mark.parametrize("device", DEVICES)
def test_aliases_are_the_catalog_ops_and_the_type_names(device):
    assert nda.absolute is nda.abs and nda.power is nda.pow and nda.arctan2 is nda.atan2 and nda.conjugate is nda.conj
    assert nda.arcsin is nda.asin and nda.arccos is nda.acos and nda.arctan is nda.atan
    assert nda.ndarray is nda.NDArray and nda.bool_ is nda.bool
    x = nda.asarray([1.0, -2.0], device=device)
    assert isinstance(x, nda.ndarray) and nda.asarray([True], dtype=nda.bool_).dtype is nda.bool
    same(nda.power(x, 2), np.power(np.array([1.0, -2.0]), 2))
    same(nda.arctan2(x, 1.0), np.arctan2(np.array([1.0, -2.0]), 1.0))


@pytest.mark.parametrize("device", DEVICES)
def test_savetxt_and_loadtxt_are_numpys_files(device, tmp_path):
    h = np.arange(6.0).reshape(2, 3) / 3
    nda.savetxt(tmp_path / "a.txt", nda.asarray(h, device=device), fmt="%.6f", delimiter=",", header="x")
    np.savetxt(tmp_path / "b.txt", h, fmt="%.6f", delimiter=",", header="x")
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text()
    back = nda.loadtxt(tmp_path / "a.txt", delimiter=",", device=device)
    assert back.device.type == device
    same(back, np.loadtxt(tmp_path / "b.txt", delimiter=","))
    cols = nda.loadtxt(tmp_path / "a.txt", delimiter=",", unpack=True, dtype=nda.float32, device=device)
    same(cols, tuple(np.loadtxt(tmp_path / "b.txt", delimiter=",", unpack=True, dtype=np.float32)))


def test_squeeze_without_an_axis_and_std_var_take_ddof():
    """Before: nda.squeeze(x)/x.squeeze() needed an axis, nda.std(x, ddof=1) was a TypeError."""
    h = np.arange(6.0).reshape(1, 6, 1)
    for device in DEVICES:
        x = nda.asarray(h, device=device)
        same(x.squeeze(), h.squeeze())
        same(nda.squeeze(x), np.squeeze(h))
        same(nda.std(x, ddof=1), np.std(h, ddof=1))
        same(nda.var(x, axis=1, ddof=2, keepdims=True), np.var(h, axis=1, ddof=2, keepdims=True))
        same(x.std(1, ddof=1), h.std(1, ddof=1))
        with pytest.raises(TypeError, match="both ddof and correction"):
            nda.std(x, ddof=1, correction=1)
