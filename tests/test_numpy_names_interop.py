"""``np.<name>(nda_array)`` runs nda's NumPy-named functions on the array's device (issue 37, item 1).

Before issue 37, ``np.median``, ``np.histogram``, ``np.cov``, ``np.pad`` and about 30 others
computed on a host copy with a FallbackWarning and returned NumPy arrays, and
``np.percentile``/``np.quantile``/``np.outer`` raised TypeError. Now every NumPy function in
``nda._numpy_names`` returns nda arrays on the input's device, equal to NumPy's answer on the
same data, with no fallback warning on cpu (the warning is an error here).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nda
from nda import _numpy_names

from test_numpy_names import same

DEVICES = ["cpu", "sim"]
_RNG = np.random.default_rng(37)
A = _RNG.normal(size=(4, 5))
V = _RNG.normal(size=6)
I = _RNG.integers(0, 7, size=9)
S3 = _RNG.normal(size=(4, 3))

#: NumPy function -> (arguments: "A", "V", "I", "S3" name the arrays above, the rest pass as they are; keywords)
CALLS: dict[str, list[tuple[tuple, dict]]] = {
    "numpy.diag": [(("A",), {}), (("V", 1), {})],
    "numpy.swapaxes": [(("A", 0, 1), {})],
    "numpy.concatenate": [((["A", "A"],), {}), ((["A", "A"],), {"axis": None})],
    "numpy.vstack": [((["A", "A"],), {})],
    "numpy.row_stack": [],
    "numpy.hstack": [((["A", "A"],), {})],
    "numpy.dstack": [((["A", "A"],), {})],
    "numpy.column_stack": [((["V", "V"],), {})],
    "numpy.atleast_1d": [(("V",), {})],
    "numpy.atleast_2d": [(("V",), {})],
    "numpy.atleast_3d": [(("A",), {})],
    "numpy.split": [(("A", 2), {})],
    "numpy.array_split": [(("A", 3), {"axis": 1})],
    "numpy.ravel": [(("A",), {})],
    "numpy.take": [(("A", [1, 7]), {}), (("A", [[0, 2]]), {"axis": 1, "mode": "clip"})],
    "numpy.amax": [(("A",), {"axis": 0})],
    "numpy.max": [(("A",), {"keepdims": True})],
    "numpy.amin": [(("A", 1), {})],
    "numpy.min": [(("A",), {"initial": -1.0})],
    "numpy.ptp": [(("A",), {"axis": 1})],
    "numpy.cumsum": [(("A",), {}), (("I",), {})],
    "numpy.cumprod": [(("A",), {"axis": 1})],
    "numpy.median": [(("A",), {}), (("A",), {"axis": 0, "keepdims": True})],
    "numpy.quantile": [(("A", 0.3), {}), (("A", [0.1, 0.9]), {"axis": 1})],
    "numpy.percentile": [(("A", 50), {}), (("A", [25, 75]), {"method": "nearest"})],
    "numpy.nanquantile": [(("A", 0.3), {}), (("A", [0.1, 0.9]), {"axis": 1, "method": "hazen"})],
    "numpy.nanpercentile": [(("A", 50), {"axis": 0}), (("A", [25, 75]), {"method": "lower", "keepdims": True})],
    "numpy.average": [(("A",), {"axis": 1, "weights": [1, 2, 3, 4, 5]})],
    "numpy.nansum": [(("A",), {})],
    "numpy.nanprod": [(("A",), {})],
    "numpy.nanmean": [(("A",), {"axis": 0})],
    "numpy.nanmax": [(("A",), {})],
    "numpy.nanmin": [(("A",), {})],
    "numpy.nanvar": [(("A",), {"ddof": 1})],
    "numpy.nanstd": [(("A",), {})],
    "numpy.unique": [(("I",), {"return_counts": True})],
    "numpy.argwhere": [(("A",), {})],
    "numpy.array_equal": [(("A", "A"), {})],
    "numpy.bincount": [(("I",), {}), (("I",), {"weights": np.arange(9.0)})],
    "numpy.digitize": [(("V", [-1, 0, 1]), {})],
    "numpy.histogram": [(("A",), {}), (("A",), {"bins": "auto"})],
    "numpy.histogram_bin_edges": [(("V",), {"bins": 4})],
    "numpy.cov": [(("A",), {})],
    "numpy.corrcoef": [(("A",), {"rowvar": False})],
    "numpy.around": [(("A", 2), {})],
    "numpy.round": [(("A",), {})],
    "numpy.nan_to_num": [(("A",), {})],
    "numpy.angle": [(("A",), {"deg": True})],
    "numpy.gradient": [(("A",), {})],
    "numpy.interp": [(("V", [-1, 0, 1], [0, 10, 5]), {})],
    "numpy.convolve": [(("V", [1, 2]), {})],
    "numpy.correlate": [(("V", [1, 2]), {"mode": "same"})],
    "numpy.dot": [(("A", "A.T"), {})],
    "numpy.vdot": [(("A", "A"), {})],
    "numpy.inner": [(("A", "A"), {})],
    "numpy.outer": [(("V", "V"), {})],
    "numpy.cross": [(("S3", "S3"), {})],
    "numpy.kron": [(("A", "A"), {})],
    "numpy.trace": [(("A",), {})],
    "numpy.diagonal": [(("A", 1), {})],
    "numpy.polyval": [(([1.0, 2.0], "V"), {})],
    "numpy.polyfit": [(("V", "V", 1), {})],
    "numpy.linalg.norm": [(("A",), {}), (("A",), {"ord": 1, "axis": 0})],
    "numpy.linalg.lstsq": [(("A", [1, 2, 3, 4]), {})],
    "numpy.fft.fft2": [(("A",), {})],
    "numpy.fft.ifft2": [(("A",), {})],
    "numpy.fft.rfft2": [(("A",), {})],
    "numpy.fft.irfft2": [(("A",), {})],
    "numpy.pad": [(("A", 1), {}), (("A", ((0, 1), (2, 0))), {"constant_values": 7})],
    "numpy.put": [],
    "numpy.put_along_axis": [],
}
_NAMED = {"A": A, "V": V, "I": I, "S3": S3, "A.T": A.T.copy()}


def _args(args: tuple, kwargs: dict, device: str | None) -> tuple[tuple, dict]:
    def conv(v):
        if isinstance(v, str) and v in _NAMED:
            return _NAMED[v] if device is None else nda.asarray(_NAMED[v], device=device)
        if isinstance(v, list) and v and all(isinstance(i, str) for i in v):
            return [conv(i) for i in v]
        return v

    return tuple(conv(a) for a in args), {k: conv(v) for k, v in kwargs.items()}


def _resolve(name: str):
    obj = np
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def test_every_function_of_the_table_has_a_call_here():
    assert set(_numpy_names.NAMES) <= set(CALLS), sorted(set(_numpy_names.NAMES) - set(CALLS))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(n for n, calls in CALLS.items() if calls))
def test_numpy_function_runs_on_the_device_as_numpy_computes(name, device):
    fn = _resolve(name)
    for args, kwargs in CALLS[name]:
        host_args, host_kwargs = _args(args, kwargs, None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = fn(*host_args, **host_kwargs)
        nda_args, nda_kwargs = _args(args, kwargs, device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if device == "cpu":
                warnings.simplefilter("error", nda.FallbackWarning)  # no host fallback on cpu
            got = fn(*nda_args, **nda_kwargs)
        for item in got if isinstance(got, (tuple, list)) else (got,):
            if isinstance(item, nda.NDArray):
                assert item.device.type == device, f"{name} returned an array on {item.device}"
            else:
                assert not isinstance(item, np.ndarray), f"{name} returned a NumPy array"
        same(got, expected, exact=False, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_put_and_ufunc_spellings_run_on_the_device(device):
    got, want = nda.zeros(5, device=device), np.zeros(5)
    np.put(got, [0, 2], [1.5, 2.5])
    np.put(want, [0, 2], [1.5, 2.5])
    same(got, want)
    x = nda.asarray(A, device=device)
    with warnings.catch_warnings():
        if device == "cpu":
            warnings.simplefilter("error", nda.FallbackWarning)
        for ufunc in (np.deg2rad, np.rad2deg, np.radians, np.degrees):
            same(ufunc(x), ufunc(A))
        same(np.cbrt(x), np.cbrt(A), exact=False, rtol=5e-16)


def test_what_nda_does_not_take_is_numpys_answer_on_a_host_copy():
    """A keyword nda's function lacks, or a pad mode nda has not: NumPy on host copies, with the warning."""
    x = nda.asarray(A)
    previous = nda.config.fallback
    try:
        nda.config.fallback = "silent"
        out = np.pad(x, 1, mode="edge")
        assert isinstance(out, np.ndarray)
        np.testing.assert_array_equal(out, np.pad(A, 1, mode="edge"))
        nda.config.fallback = "error"  # (the warning comes once per function per process: refusing shows the route)
        with pytest.raises(nda.FallbackError, match="numpy.pad on nda arrays: nda pads in the 'constant' mode only"):
            np.pad(x, 1, mode="edge")
        with pytest.raises(nda.FallbackError, match="numpy.quantile on nda arrays"):
            np.quantile(x, 0.5, weights=np.ones_like(A), method="inverted_cdf")
    finally:
        nda.config.fallback = previous
