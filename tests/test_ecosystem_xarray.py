"""xarray over nda data: every operation gives NumPy-backed xarray's values and dtypes.

xarray wraps any array with ``__array_namespace__`` and calls that namespace (or NumPy, through
``__array_function__``) for its operations. What it reads from the dtype is NumPy's: it checks
``isinstance(dtype, np.dtype)`` and ``np.isdtype(dtype, ...)`` before filling missing values
(``where``, ``shift``, ``reindex``, ``pad``), ``dtype.kind in "uifc"`` before interpolating,
and compares dtypes with NumPy's abstract scalar types (``dtype == np.floating``) in
reductions over Dask chunks. Each case below runs the same xarray expression on NumPy data
and on nda data (cpu and sim; eagerly and over Dask chunks of nda arrays) and compares the
results' values, dtypes, dimensions and coordinates. Nothing here is specific to xarray in
nda: the dtype is a NumPy dtype to NumPy-minded code (``tests/test_numpy_interop.py``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nda

xr = pytest.importorskip("xarray")
pytest.importorskip("scipy")  # interp

DEVICES = ["cpu", "sim"]

# A NumPy function nda has no equivalent for (xarray's nan-reductions, nanargmax) computes
# on a host copy with a FallbackWarning: the values are what is compared here.
pytestmark = [pytest.mark.filterwarnings("ignore::nda.FallbackWarning"), pytest.mark.filterwarnings("ignore::RuntimeWarning")]


@pytest.fixture(autouse=True)
def _fallbacks_warned_here_stay_here():
    """nda warns once per fallback route and process; the routes these tests take (xarray's
    nanmedian, nanargmax) are left unwarned, so a later test still sees its first warning."""
    before = set(nda.dispatch._warned_routes)
    yield
    nda.dispatch._warned_routes.intersection_update(before)


_T = np.arange(6) * 1.5  # a float coordinate: interp works on it
_FLOATS = np.arange(24.0).reshape(6, 4) / 7
_FLOATS[2, 1] = np.nan
_FLOATS[:, 3] = np.nan  # an all-NaN column: idxmax/idxmin give NaN there
_INTS = np.arange(24, dtype=np.int64).reshape(6, 4) % 5 - 2


def _frame(values, *, ints_t=False):
    t = np.arange(6) if ints_t else _T
    return xr.DataArray(values, dims=("t", "c"), coords={"t": t, "c": list("abcd")}, name="v")


def _host(data):
    data = data.compute() if hasattr(data, "dask") else data
    return data.asnumpy() if isinstance(data, nda.NDArray) else np.asarray(data)


def _same(got, want):
    """``got`` (over nda data) equals ``want`` (over NumPy data): values, dtype, dims, coords."""
    assert isinstance(got, type(want)), type(got)
    assert np.dtype(got.dtype) == want.dtype, (got.dtype, want.dtype)
    host = _host(got.data)
    assert host.dtype == want.dtype, (host.dtype, want.dtype)
    assert got.dims == want.dims and host.shape == want.shape, (got.dims, host.shape, want.dims, want.shape)
    if want.dtype.kind in "fc":  # Dask's chunked sums round differently
        xr.testing.assert_allclose(got.copy(data=host), want, rtol=1e-12, atol=1e-12)
        assert got.copy(data=np.zeros(host.shape)).identical(want.copy(data=np.zeros(want.shape)))  # names, coords, attrs
    else:
        xr.testing.assert_identical(got.copy(data=host), want)


# name -> (input values, expression); every expression runs on NumPy data and on nda data.
CASES = {
    # missing values: xarray asks the dtype for its fill value (float stays, int -> float64)
    "where": (_FLOATS, lambda a: a.where(a > 1)),
    "where_other": (_FLOATS, lambda a: a.where(a > 1, -1.0)),
    "where_int": (_INTS, lambda a: a.where(a > 0)),
    "shift": (_FLOATS, lambda a: a.shift(t=2)),
    "shift_int": (_INTS, lambda a: a.shift(t=-1)),
    "shift_int_fill": (_INTS, lambda a: a.shift(t=1, fill_value=0)),
    "reindex": (_FLOATS, lambda a: a.reindex(t=[0.0, 1.5, 100.0])),
    "reindex_int": (_INTS, lambda a: a.reindex(c=["a", "z"])),
    "fillna": (_FLOATS, lambda a: a.fillna(-5.0)),
    "isnull": (_FLOATS, lambda a: a.isnull()),
    "dropna": (_FLOATS, lambda a: a.dropna("c", how="all")),
    # interpolation: xarray checks dtype.kind in "uifc"
    "interp": (_FLOATS, lambda a: a.interp(t=[0.5, 2.0, 6.0])),
    "interp_int": (_INTS, lambda a: a.interp(t=[0.75, 3.0])),
    "interp_nearest": (_FLOATS, lambda a: a.interp(t=[1.0, 4.0], method="nearest")),
    "interpolate_na": (_FLOATS, lambda a: a.interpolate_na("t")),
    # arg-reductions: an all-NaN column gives NaN (float64) in NumPy-backed xarray
    "idxmax": (_FLOATS, lambda a: a.idxmax("t")),
    "idxmin": (_FLOATS, lambda a: a.idxmin("t")),
    "idxmax_int_coords": (_FLOATS, lambda a: a.assign_coords(t=np.arange(6)).idxmax("t")),
    "idxmin_no_nan": (_INTS, lambda a: a.idxmin("t")),
    "idxmax_labels": (_INTS, lambda a: a.idxmax("c")),
    "argmax_int": (_INTS, lambda a: a.argmax("t")),
    # reductions
    "sum": (_FLOATS, lambda a: a.sum("t")),
    "sum_noskip": (_FLOATS, lambda a: a.sum("t", skipna=False)),
    "mean": (_FLOATS, lambda a: a.mean()),
    "mean_int": (_INTS, lambda a: a.mean("c")),
    "std": (_FLOATS, lambda a: a.std("t", ddof=1)),
    "var_int": (_INTS, lambda a: a.var("t")),
    "min_max": (_FLOATS, lambda a: a.max("c") - a.min("c")),
    "prod_int": (_INTS, lambda a: a.prod("t")),
    "sum_int": (_INTS, lambda a: a.sum()),
    "median": (_FLOATS, lambda a: a.median("t")),
    "count": (_FLOATS, lambda a: a.count("t")),
    "any_all": (_INTS, lambda a: (a > 0).any("t") & (a > -3).all("t")),
    "cumsum": (_FLOATS, lambda a: a.cumsum("t")),
    # windows and groups
    "rolling_mean": (_FLOATS, lambda a: a.rolling(t=3).mean()),
    "rolling_sum": (_INTS, lambda a: a.rolling(t=2, min_periods=1).sum()),
    "rolling_construct": (_FLOATS, lambda a: a.rolling(t=2).construct("w").sum("w")),
    "coarsen": (_FLOATS, lambda a: a.coarsen(t=2).mean()),
    "groupby": (_FLOATS, lambda a: a.groupby(a.t > 3).mean()),
    "groupby_int": (_INTS, lambda a: a.groupby("t").sum()),
    # arithmetic and combination
    "arithmetic": (_FLOATS, lambda a: a * 2 + a.mean("t") - 1),
    "arithmetic_int": (_INTS, lambda a: a * 3 // 2 + a / 4),
    "compare": (_INTS, lambda a: a >= 1),
    "astype": (_FLOATS, lambda a: a.fillna(0).astype(np.int32)),
    "round_clip": (_FLOATS, lambda a: a.round(2).clip(0.5, 2.5)),
    "diff": (_FLOATS, lambda a: a.diff("t")),
    "concat": (_FLOATS, lambda a: xr.concat([a, a * 2], "t")),
    "dot": (_INTS, lambda a: a.dot(a, dim="c")),
    "pad": (_INTS, lambda a: a.pad(t=(1, 0))),
    "transpose": (_FLOATS, lambda a: a.T * 1),
    # quantiles: xarray calls xp.nanquantile (skipna) or xp.quantile, then xp.moveaxis on the result
    "quantile": (_FLOATS, lambda a: a.quantile(0.3, dim="t")),
    "quantile_list": (_FLOATS, lambda a: a.quantile([0.1, 0.5, 0.9], dim="t")),
    "quantile_all": (_FLOATS, lambda a: a.quantile(0.5)),
    "quantile_method": (_FLOATS, lambda a: a.quantile([0.25, 0.75], dim="c", method="nearest")),
    "quantile_noskip": (_FLOATS, lambda a: a.quantile(0.5, dim="t", skipna=False)),
    "quantile_int": (_INTS, lambda a: a.quantile(0.4, dim="t")),
    # fits, derivatives, integrals, covariance (polyfit calls np.any(var), which passes out=None on)
    "polyfit": (_FLOATS, lambda a: a.fillna(0).polyfit("t", 1).polyfit_coefficients),
    "polyfit_nan": (_FLOATS, lambda a: a.polyfit("t", 2).polyfit_coefficients),
    "differentiate": (_FLOATS, lambda a: a.differentiate("t")),
    "differentiate_2nd": (_FLOATS, lambda a: a.differentiate("t", edge_order=2)),
    "integrate": (_FLOATS, lambda a: a.integrate("t")),
    "cumulative_integrate": (_FLOATS, lambda a: a.cumulative_integrate("t")),
    "cov": (_FLOATS, lambda a: xr.cov(a, a * 2 + 1, dim="t")),
    "cov_1d": (_FLOATS, lambda a: xr.cov(a.isel(c=0), a.isel(c=2))),
    "corr": (_FLOATS, lambda a: xr.corr(a, a**2, dim="t")),
    "weighted": (_FLOATS, lambda a: a.weighted(a.isel(t=0).fillna(0.5) + 1).mean("c")),  # weights of the data's namespace
    # "when was the maximum": a datetime coordinate
    "idxmax_time": (_FLOATS, lambda a: a.assign_coords(t=np.arange(6).astype("datetime64[D]")).idxmax("t")),
}


#: What xarray asks of the arrays' namespace that nda does not have: a NumPy module layout
#: (``xp.lib.stride_tricks``), and arrays of strings or datetimes (a coordinate of labels or
#: times made an array of the data's namespace by ``xarray.compat.array_api_compat.to_like_array``,
#: which calls ``xp.asarray`` with no NumPy fallback; CuPy, without those dtypes either, fails the same way). (``xp.var(x, ddof=)`` works since issue 37.) Over Dask chunks, Dask
#: does this work and these cases pass.
NOT_IN_NDA = {
    "rolling_mean": (AttributeError, "xarray's eager rolling calls xp.lib.stride_tricks.sliding_window_view"),
    "rolling_sum": (AttributeError, "xarray's eager rolling calls xp.lib.stride_tricks.sliding_window_view"),
    "rolling_construct": (AttributeError, "xarray's eager rolling calls xp.lib.stride_tricks.sliding_window_view"),
    "idxmax_labels": (TypeError, "xarray makes the coordinate's labels (strings) an array of the data's namespace"),
    "idxmax_time": (
        TypeError,
        "xarray makes the coordinate's datetimes an array of the data's namespace (xp.asarray, no fallback): nda, as CuPy, has no datetime64 dtype",
    ),
}


def _nda_frame(values, device, chunks):
    x = nda.asarray(values, device=device)
    if chunks:
        da = pytest.importorskip("dask.array")
        x = da.from_array(x, chunks=(3, 2), asarray=False)
    return _frame(x)


def _run(case, device, chunks):
    values, expr = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own "All-NaN slice" / "Mean of empty slice"
        want = expr(_frame(values))
    with nda.Device(device):  # the scalars xarray turns into arrays (fill values, `other`) land on the data's device
        got = expr(_nda_frame(values, device, chunks))
    return got, want


def _eager(case):
    if case in NOT_IN_NDA:
        raises, reason = NOT_IN_NDA[case]
        return pytest.param(case, marks=pytest.mark.xfail(raises=raises, reason=reason, strict=True))
    return case


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", [_eager(c) for c in sorted(CASES)])
def test_xarray_on_nda_gives_numpys_values_and_dtypes(case, device):
    got, want = _run(case, device, chunks=False)
    _same(got, want)
    if isinstance(got.data, nda.NDArray):
        assert got.data.device == nda.Device(device)


# Over Dask chunks of nda arrays: xarray's reductions take Dask's nan-aware paths, which
# compare the chunks' dtype with NumPy's abstract types and call np.isdtype on it.
DASK_CASES = [
    "where",
    "where_int",
    "shift",
    "shift_int",
    "sum",
    "sum_noskip",
    "mean",
    "mean_int",
    "std",
    "min_max",
    "sum_int",
    "count",
    "cumsum",
    "idxmax",
    "idxmin",
    "idxmax_int_coords",
    "arithmetic",
    "concat",
    "fillna",
    "rolling_mean",
    "rolling_sum",
    "groupby",
    "interp",
    "var_int",
    "pad",
    "reindex",
    "differentiate",
    "cumulative_integrate",
    "cov",
    "corr",
    "weighted",
    "polyfit",
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", DASK_CASES)
def test_xarray_over_dask_chunks_of_nda(case, device):
    dask = pytest.importorskip("dask")
    with dask.config.set(scheduler="threads"):
        got, want = _run(case, device, chunks=True)
        assert hasattr(got.data, "dask"), type(got.data)
        got = got.compute()
    _same(got, want)


@pytest.mark.parametrize("device", DEVICES)
def test_resample_over_a_time_coordinate(device):
    pd = pytest.importorskip("pandas")
    time = pd.date_range("2000-01-01", periods=6, freq="12h")
    want = xr.DataArray(_FLOATS, dims=("time", "c"), coords={"time": time})
    got = xr.DataArray(nda.asarray(_FLOATS, device=device), dims=("time", "c"), coords={"time": time})
    for expr in (lambda a: a.resample(time="1D").mean(), lambda a: a.resample(time="1D").max(), lambda a: a.resample(time="6h").asfreq()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = expr(want)
        with nda.Device(device):  # asfreq's reindex makes its mask with xp.asarray: on the data's device (as in _run)
            _same(expr(got), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_dataset_of_nda_variables(device):
    ds_np = xr.Dataset({"f": (("t", "c"), _FLOATS), "i": (("t", "c"), _INTS)}, coords={"t": _T})
    ds = xr.Dataset({"f": (("t", "c"), nda.asarray(_FLOATS, device=device)), "i": (("t", "c"), nda.asarray(_INTS, device=device))}, coords={"t": _T})
    for expr in (lambda d: d.where(d.f > 1), lambda d: d.shift(t=1), lambda d: d.mean("t"), lambda d: d.interp(t=[1.0, 2.0])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = expr(ds_np)
        got = expr(ds)
        for name in want.data_vars:
            _same(got[name], want[name])


@pytest.mark.parametrize("device", DEVICES)
def test_when_was_the_maximum_over_a_datetime_coordinate(device):
    """``idxmax`` over datetimes cannot run on nda data (README: xarray makes the times an array of
    the data's namespace); the error says why, and the ways around it give NumPy-backed xarray's answer."""
    pd = pytest.importorskip("pandas")
    time = pd.date_range("2020-01-01", periods=6)
    values = np.nan_to_num(_FLOATS, nan=-1.0)
    want = xr.DataArray(values, dims=("time", "c"), coords={"time": time}).idxmax("time")
    got = xr.DataArray(nda.asarray(values, device=device), dims=("time", "c"), coords={"time": time})
    with nda.Device(device):
        with pytest.raises(TypeError, match=r"datetime64\[.*\] has no nda equivalent.*datetimes and timedeltas stay in NumPy"):
            got.idxmax("time")
        xr.testing.assert_identical(
            got["time"][got.argmax("time")].drop_vars("time").rename("time").reset_coords(drop=True), want.reset_coords(drop=True)
        )
        xr.testing.assert_identical(got.as_numpy().idxmax("time"), want)
