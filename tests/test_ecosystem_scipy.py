"""SciPy's Array API functions and array-api-extra on nda arrays: a smoke test of each family.

With ``SCIPY_ARRAY_API=1`` (set in ``tests/conftest.py`` before SciPy is imported),
``scipy.special``, ``scipy.stats`` and ``scipy.fft`` take nda arrays and answer with nda
arrays on the same device; array-api-extra's functions work through nda's namespace. Each
call is compared with the same call on NumPy input, on cpu and on sim.

On sim the calls run under ``with nda.Device("sim")``: a few SciPy functions create
arrays without ``device=`` (``xp.asarray(n1 == 1)`` in ``ttest_ind``, ``n == 2`` in
``pearsonr``), which would land on the default device and be refused next to sim
arrays. That is SciPy's device handling, not nda's; PyTorch hides it by letting 0-d cpu
tensors join CUDA ones.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest

import nda

if os.environ.get("SCIPY_ARRAY_API") != "1":
    pytest.skip("SciPy's Array API support needs SCIPY_ARRAY_API=1 when SciPy is imported", allow_module_level=True)

import scipy.fft as sfft  # noqa: E402
import scipy.special as special  # noqa: E402
import scipy.stats as stats  # noqa: E402

xpx = pytest.importorskip("array_api_extra")

pytestmark = pytest.mark.filterwarnings("ignore::nda.FallbackWarning", "ignore::RuntimeWarning")

DEVICES = ["cpu", "sim"]

_RNG = np.random.default_rng(0)
A = _RNG.standard_normal((5, 4))
B = _RNG.standard_normal((5, 4)) + 0.3
P = _RNG.uniform(0.1, 0.9, (5, 4))

CASES = {
    # scipy.special
    "special.erf": lambda xp, a, b, p: special.erf(a),
    "special.gammaln": lambda xp, a, b, p: special.gammaln(p),
    "special.xlogy": lambda xp, a, b, p: special.xlogy(p, p),
    "special.expit": lambda xp, a, b, p: special.expit(a),
    "special.logsumexp": lambda xp, a, b, p: special.logsumexp(a, axis=0),
    "special.softmax": lambda xp, a, b, p: special.softmax(a, axis=1),
    "special.ndtr": lambda xp, a, b, p: special.ndtr(a),
    "special.betainc": lambda xp, a, b, p: special.betainc(p + 1, p + 2, p),
    # scipy.stats
    "stats.zscore": lambda xp, a, b, p: stats.zscore(a, axis=0),
    "stats.moment": lambda xp, a, b, p: stats.moment(a, order=3, axis=0),
    "stats.skew": lambda xp, a, b, p: stats.skew(a, axis=0),
    "stats.kurtosis": lambda xp, a, b, p: stats.kurtosis(a, axis=0),
    "stats.ttest_ind": lambda xp, a, b, p: stats.ttest_ind(a, b, axis=0).pvalue,
    "stats.pearsonr": lambda xp, a, b, p: stats.pearsonr(a[:, 0], b[:, 0]).statistic,
    "stats.gmean": lambda xp, a, b, p: stats.gmean(p, axis=0),
    "stats.sem": lambda xp, a, b, p: stats.sem(a, axis=0),
    "stats.entropy": lambda xp, a, b, p: stats.entropy(p, axis=0),
    "stats.trim_mean": lambda xp, a, b, p: stats.trim_mean(a, 0.1, axis=0),
    # scipy.fft
    "fft.fft": lambda xp, a, b, p: sfft.fft(a, axis=0),
    "fft.rfft": lambda xp, a, b, p: sfft.rfft(a),
    "fft.fftn lists": lambda xp, a, b, p: sfft.fftn(a, s=[5, 4], axes=[0, 1]),
    "fft.irfftn": lambda xp, a, b, p: sfft.irfftn(sfft.rfftn(a), s=a.shape),
    "fft.dct": lambda xp, a, b, p: sfft.dct(a),
    "fft.fftshift": lambda xp, a, b, p: sfft.fftshift(a),
    # array-api-extra
    "xpx.atleast_nd": lambda xp, a, b, p: xpx.atleast_nd(a[0, :], ndim=3),
    "xpx.cov": lambda xp, a, b, p: xpx.cov(a),
    "xpx.kron": lambda xp, a, b, p: xpx.kron(a[:2, :2], b[:2, :2]),
    "xpx.nunique": lambda xp, a, b, p: xpx.nunique(xp.round(a)),
    "xpx.pad": lambda xp, a, b, p: xpx.pad(a, 1),
    "xpx.setdiff1d": lambda xp, a, b, p: xpx.setdiff1d(xp.round(a[:, 0] * 3), xp.round(b[:, 0] * 3)),
    "xpx.union1d": lambda xp, a, b, p: xpx.union1d(xp.round(a[:, 0] * 3), xp.round(b[:, 0] * 3)),
    "xpx.sinc": lambda xp, a, b, p: xpx.sinc(a),
    "xpx.isclose": lambda xp, a, b, p: xpx.isclose(a, a + 1e-12),
    "xpx.create_diagonal": lambda xp, a, b, p: xpx.create_diagonal(a[0, :]),
    "xpx.expand_dims": lambda xp, a, b, p: xpx.expand_dims(a, axis=(0, 2)),
    "xpx.at": lambda xp, a, b, p: xpx.at(a)[1:3, :].set(0.0),
    "xpx.one_hot": lambda xp, a, b, p: xpx.one_hot(xp.astype(xp.abs(xp.round(a[:, 0])), xp.int64), 4),
    "xpx.apply_where": lambda xp, a, b, p: xpx.apply_where(a > 0, (a,), xp.sqrt, fill_value=0.0),
    "xpx.nan_to_num": lambda xp, a, b, p: xpx.nan_to_num(a / 0.0),
    "xpx.partition": lambda xp, a, b, p: xpx.partition(a[0, :], 1)[1],
}


def _host(r):
    return r.asnumpy() if isinstance(r, nda.NDArray) else np.asarray(r)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(CASES))
def test_scipy_and_array_api_extra_on_nda(case, device):
    fn = CASES[case]
    expected = _host(fn(np, A, B, P))
    with nda.Device(device) if device != "cpu" else contextlib.nullcontext():
        a, b, p = (nda.asarray(v, device=device) for v in (A, B, P))
        result = fn(nda, a, b, p)
    assert isinstance(result, nda.NDArray), type(result)
    assert result.device == nda.Device(device)
    np.testing.assert_allclose(_host(result), expected, rtol=1e-10, atol=1e-12, equal_nan=True)


def test_scipy_creates_on_nda_when_given_the_namespace():
    freqs = sfft.fftfreq(8, xp=nda)
    assert isinstance(freqs, nda.NDArray)
    np.testing.assert_allclose(freqs.asnumpy(), np.fft.fftfreq(8))


# ----------------------------------------------------------------------------- SciPy's own assumptions


def test_scipy_refuses_read_only_numpy_arrays_where_it_refuses_nda_host_copies():
    # The proof behind tests/scipy_nda_assumptions.txt: off the cpu, np.asarray(x) is a
    # read-only host copy (README, "Ecosystem"), and these SciPy functions refuse a read-only
    # NumPy array just the same -- ndimage writes its result into np.asarray(output),
    # detrend(overwrite_data=True) into np.asarray(data), and sosfilt's Cython kernel takes
    # non-const memoryviews even for the coefficients it only reads. When one of these
    # starts to pass, drop its ids from the list.
    from scipy import ndimage, signal

    data = np.arange(8.0)
    output = np.zeros(8)
    output.flags.writeable = False
    with pytest.raises(ValueError, match="output array is read-only"):
        ndimage.correlate1d(data, np.ones(2), output=output)
    frozen = data.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        signal.detrend(frozen, overwrite_data=True)
    sos = signal.butter(4, 0.2, output="sos")
    sos.flags.writeable = False
    for fn in (signal.sosfilt, signal.sosfiltfilt):
        with pytest.raises(ValueError, match="buffer source array is read-only"):
            fn(sos, np.random.default_rng(0).random(40))


def test_sim_arrays_take_scipy_cpu_only_functions_through_read_only_copies():
    # Reading through np.asarray works on sim (SciPy's cpu-only functions convert, compute with
    # NumPy and hand back xp.asarray(result)); only a write into the copy is refused.
    from scipy import ndimage, signal

    data = np.random.default_rng(1).random((6, 5))
    with nda.Device("sim"):
        x = nda.asarray(data)
        smoothed = ndimage.gaussian_filter(x, 1.0)
        filtered = signal.medfilt2d(x, 3)
    for got, want in ((smoothed, ndimage.gaussian_filter(data, 1.0)), (filtered, signal.medfilt2d(data, 3))):
        assert isinstance(got, nda.NDArray) and got.device == nda.Device("sim")
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
