"""The rest of the Array API standard: namespace, inspection, set/search functions, linalg, fft.

Every function is checked against NumPy on cpu and on the sim device (whose kernels run on
its own stream, or through the host fallback), plus the semantics NumPy does not give for
free: data-dependent shapes are sync points, several-output functions return named tuples,
errors have the standard's types. The official suite (data-apis/array-api-tests) runs
separately: see tests/array_api/run.sh and the README.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nda
from nda.testing import strategies as nst

DEVICES = ["cpu", "sim:0"]


@pytest.fixture(autouse=True)
def quiet_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nda.FallbackWarning)
        yield


def on(device, host):
    return nda.asarray(np.asarray(host), device=device)


def same(result, expected, rtol=1e-12):
    host = result.asnumpy()
    expected = np.asarray(expected)
    assert host.shape == expected.shape and host.dtype == expected.dtype, (host.dtype, host.shape, expected.dtype, expected.shape)
    np.testing.assert_allclose(host, expected, rtol=rtol, equal_nan=True) if host.dtype.kind in "fc" else np.testing.assert_array_equal(
        host, expected
    )


# ----------------------------------------------------------------------------- namespace and inspection


def test_array_api_compat_recognises_nda():
    array_api_compat = pytest.importorskip("array_api_compat")
    x = nda.asarray([1.0, 2.0])
    assert array_api_compat.array_namespace(x) is nda
    assert array_api_compat.is_array_api_obj(x)
    assert x.__array_namespace__(api_version="2024.12") is nda
    with pytest.raises(ValueError, match="unsupported Array API version '2019.01'"):
        x.__array_namespace__(api_version="2019.01")


def test_namespace_info_comes_from_the_loaded_backends():
    info = nda.__array_namespace_info__()
    devices = info.devices()
    assert isinstance(devices, tuple) and nda.Device("cpu", 0) in devices and nda.Device("sim", 1) in devices
    assert info.default_device() == nda.Device("cpu", 0)
    assert info.default_dtypes() == {"real floating": nda.float64, "complex floating": nda.complex128, "integral": nda.int64, "indexing": nda.int64}
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
    assert list(info.dtypes(device="sim:0", kind=("bool", "complex floating"))) == ["bool", "complex64", "complex128"]
    assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}
    with pytest.raises(ValueError, match="unknown kind 'floats'"):
        info.dtypes(kind="floats")
    with pytest.raises(ValueError, match="does not exist"):
        info.dtypes(device="sim:9")


def test_a_backend_without_float64_gets_float32_defaults():
    from nda.dispatch import table

    info = nda.__array_namespace_info__()
    removed = {k: v for k, v in table("astype").kernels.items() if k.device_type == "sim" and k.dtype in (nda.float64, nda.complex128)}
    try:
        for k in removed:
            del table("astype").kernels[k]
        defaults = info.default_dtypes(device="sim:0")
        assert defaults["real floating"] is nda.float32 and defaults["complex floating"] is nda.complex64
    finally:
        table("astype").kernels.update(removed)


def test_finfo_and_iinfo():
    f = nda.finfo(nda.complex64)
    assert f.dtype is nda.float32 and f.bits == 32 and f.eps == float(np.finfo(np.float32).eps)
    assert nda.finfo(nda.asarray(1.0)).max == float(np.finfo(np.float64).max)
    i = nda.iinfo(nda.uint8)
    assert (i.min, i.max, i.bits, i.dtype) == (0, 255, 8, nda.uint8)
    with pytest.raises(TypeError, match="not a floating dtype"):
        nda.finfo(nda.int32)
    with pytest.raises(TypeError, match="not an integer dtype"):
        nda.iinfo(nda.float32)


def test_extension_namespaces_have_the_standard_functions():
    assert nda.linalg.matmul is nda.matmul and nda.linalg.matrix_transpose is nda.matrix_transpose
    for name in (
        "cholesky",
        "cross",
        "det",
        "diagonal",
        "eigh",
        "eigvalsh",
        "inv",
        "matrix_norm",
        "matrix_power",
        "matrix_rank",
        "outer",
        "pinv",
        "qr",
        "slogdet",
        "solve",
        "svd",
        "svdvals",
        "trace",
        "vector_norm",
        "eig",
        "eigvals",
    ):
        assert getattr(nda.linalg, name).__module__ == "nda.linalg"
    for name in ("fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"):
        assert callable(getattr(nda.fft, name))


# ----------------------------------------------------------------------------- functions against NumPy, per device


@pytest.mark.parametrize("device", DEVICES)
def test_set_functions(device):
    host = np.array([[3.0, np.nan, 1.0], [3.0, np.nan, -0.0]])
    x = on(device, host)
    r = nda.unique_all(x)
    ref = np.unique_all(host)
    assert type(r).__name__ == "UniqueAllResult" and r._fields == ("values", "indices", "inverse_indices", "counts")
    same(r.values, ref.values)  # every NaN is its own value
    same(r.indices, ref.indices.astype(np.int64))
    same(r.inverse_indices, ref.inverse_indices.reshape(host.shape).astype(np.int64))
    same(r.counts, ref.counts.astype(np.int64))
    assert r.values.device == x.device
    same(nda.unique_values(x), np.unique_values(host))
    same(nda.unique_counts(x).counts, np.unique_counts(host).counts.astype(np.int64))
    same(nda.unique_inverse(x).inverse_indices, np.unique_inverse(host).inverse_indices.reshape(host.shape).astype(np.int64))
    ints = on(device, [5, 1, 5, 7])
    same(nda.isin(ints, on(device, [5, 8])), [True, False, True, False])
    same(nda.isin(ints, 7, invert=True), [True, True, True, False])
    same(nda.isin(7, ints), np.asarray(True))


@pytest.mark.parametrize("device", DEVICES)
def test_searching_and_counting(device):
    host = np.array([[0, 2, 0], [1, 0, 3]])
    x = on(device, host)
    rows, cols = nda.nonzero(x)
    same(rows, [0, 1, 1])
    same(cols, [1, 0, 2])
    same(nda.count_nonzero(x, axis=0), [1, 1, 1])
    same(nda.count_nonzero(x, keepdims=True), np.array([[3]]))
    sorted_ = on(device, [1.0, 2.0, 2.0, 5.0])
    same(nda.searchsorted(sorted_, on(device, [2.0, 6.0, -1.0])), [1, 4, 0])
    same(nda.searchsorted(sorted_, 2.0, side="right"), np.asarray(3))
    unsorted = on(device, [5.0, 1.0, 2.0])
    same(nda.searchsorted(unsorted, on(device, [1.5]), sorter=nda.argsort(unsorted)), [1])
    with pytest.raises(ValueError, match="0-d"):
        nda.nonzero(nda.asarray(1))
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        nda.searchsorted(sorted_, sorted_, side="middle")


@pytest.mark.parametrize("device", DEVICES)
def test_clip_take_tile_repeat_triangles(device):
    host = np.arange(-3, 9, dtype=np.float32).reshape(3, 4)
    x = on(device, host)
    same(nda.clip(x, 0.0, 5.0), np.clip(host, 0, 5))
    same(nda.clip(x, max=on(device, host[0])), np.minimum(host, host[0]))
    same(nda.clip(on(device, np.array([1, 200], np.uint8)), 0, 1000), np.array([1, 200], np.uint8))  # a bound past the dtype bounds nothing
    with pytest.raises(TypeError, match="a float min cannot bound"):
        nda.clip(on(device, [1, 2]), 0.5)
    same(nda.take(x, on(device, [2, -1, 0]), axis=1), np.take(host, [2, -1, 0], axis=1))
    same(nda.take_along_axis(x, nda.argsort(x, axis=0), axis=0), np.take_along_axis(host, np.argsort(host, axis=0), axis=0))
    same(nda.tile(x, (2, 1, 2)), np.tile(host, (2, 1, 2)))
    same(nda.repeat(x, 2, axis=0), np.repeat(host, 2, axis=0))
    counts = on(device, [1, 0, 2, 1])
    same(nda.repeat(x, counts, axis=1), np.repeat(host, [1, 0, 2, 1], axis=1))
    counts[...] = nda.asarray([0, 0, 0, 3], device=device)  # the same counts array, new values: a new shape
    same(nda.repeat(x, counts, axis=1), np.repeat(host, [0, 0, 0, 3], axis=1))
    same(nda.tril(x, k=1), np.tril(host, 1))
    same(nda.triu(x, k=-1), np.triu(host, -1))
    same(nda.cumulative_prod(on(device, [1, 2, 3]), include_initial=True), np.array([1, 1, 2, 6]))
    with pytest.raises(ValueError, match="repeats has 2 counts but axis 1 has 4"):
        nda.repeat(x, on(device, [1, 2]), axis=1)


@pytest.mark.parametrize("device", DEVICES)
def test_composites(device):
    host = np.arange(6.0).reshape(2, 3)
    x = on(device, host)
    a, b = nda.meshgrid(on(device, [1, 2, 3]), on(device, [4, 5]))
    ea, eb = np.meshgrid([1, 2, 3], [4, 5])
    same(a, ea)
    same(b, eb)
    same(nda.meshgrid(on(device, [1, 2]), on(device, [3, 4, 5]), indexing="ij")[1], np.meshgrid([1, 2], [3, 4, 5], indexing="ij")[1])
    p, q = nda.broadcast_arrays(x, on(device, [1.0, 2.0, 3.0]))
    same(q, np.broadcast_to([1.0, 2.0, 3.0], (2, 3)))
    assert nda.broadcast_shapes((2, 1), (3,)) == (2, 3)
    same(nda.moveaxis(nda.reshape(x, (1, 2, 3)), 0, -1), np.moveaxis(host.reshape(1, 2, 3), 0, -1))
    same(nda.matrix_transpose(x), host.T)
    parts = nda.unstack(x, axis=1)
    assert len(parts) == 3
    same(parts[2], host[:, 2])
    same(nda.diff(x, axis=1), np.diff(host, axis=1))
    same(nda.diff(x, n=2, prepend=on(device, [[9.0], [9.0]])), np.diff(host, n=2, prepend=[[9.0], [9.0]]))
    same(nda.diff(on(device, [True, True, False])), np.diff([True, True, False]))
    same(nda.expand_dims(x, axis=(0, -1)), np.expand_dims(host, (0, -1)))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        nda.broadcast_arrays(x, on(device, [1.0, 2.0]))


@pytest.mark.parametrize("device", DEVICES)
def test_linalg(device):
    rng = np.random.default_rng(0)
    host = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    spd = host @ np.swapaxes(host, -1, -2) + np.eye(3)
    x, s = on(device, host), on(device, spd)
    same(nda.linalg.inv(x), np.linalg.inv(host), rtol=1e-10)
    same(nda.linalg.det(x), np.linalg.det(host), rtol=1e-10)
    same(nda.linalg.cholesky(s), np.linalg.cholesky(spd), rtol=1e-10)
    same(nda.linalg.cholesky(s, upper=True), np.linalg.cholesky(spd, upper=True), rtol=1e-10)
    w, v = nda.linalg.eigh(s)
    np.testing.assert_allclose((v @ (w[..., None] * nda.matrix_transpose(v))).asnumpy(), spd, rtol=1e-10)
    q, r = nda.linalg.qr(x)
    np.testing.assert_allclose((q @ r).asnumpy(), host, rtol=1e-10)
    u, sv, vh = nda.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose((u @ (sv[..., None] * vh)).asnumpy(), host, rtol=1e-10)
    same(nda.linalg.svdvals(x), np.linalg.svdvals(host), rtol=1e-10)
    sign, logabs = nda.linalg.slogdet(x)
    np.testing.assert_allclose((sign * nda.exp(logabs)).asnumpy(), np.linalg.det(host), rtol=1e-10)
    same(nda.linalg.solve(x, on(device, [1.0, 2.0, 3.0])), np.linalg.solve(host, np.array([1.0, 2.0, 3.0])[:, None])[..., 0], rtol=1e-10)
    same(nda.linalg.matrix_rank(x), np.array([3, 3]))
    same(nda.linalg.pinv(x), np.linalg.pinv(host), rtol=1e-8)
    same(nda.linalg.matrix_power(x, -2), np.linalg.matrix_power(host, -2), rtol=1e-10)
    same(nda.linalg.matrix_norm(x, ord="nuc"), np.linalg.matrix_norm(host, ord="nuc"), rtol=1e-10)
    same(nda.linalg.vector_norm(x, axis=(1, 2), ord=1), np.linalg.vector_norm(host, axis=(1, 2), ord=1))
    same(nda.linalg.trace(x, offset=1), np.linalg.trace(host, offset=1))
    same(nda.linalg.diagonal(x, offset=-1), np.linalg.diagonal(host, offset=-1))
    same(nda.linalg.cross(x, on(device, [1.0, 0.0, 0.0])), np.cross(host, [1.0, 0.0, 0.0]))
    same(nda.linalg.outer(on(device, [1, 2]), on(device, [3, 4, 5])), np.outer([1, 2], [3, 4, 5]))
    ev = nda.linalg.eigvals(nda.asarray([[0.0, -1.0], [1.0, 0.0]], device=device))
    assert ev.dtype is nda.complex128
    np.testing.assert_allclose(np.sort_complex(ev.asnumpy()), [-1j, 1j], atol=1e-12)
    with pytest.raises(np.linalg.LinAlgError):  # data-dependent: at the call when it runs inline, else where it is read
        nda.linalg.inv(nda.zeros((2, 2), device=device)).asnumpy()
    with pytest.raises(ValueError, match="square"):
        nda.linalg.inv(nda.zeros((2, 3), device=device))
    with pytest.raises(TypeError, match="floating dtypes are allowed"):
        nda.linalg.det(nda.zeros((2, 2), dtype=nda.int32, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_fft(device):
    host = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    x = on(device, host)
    got = nda.fft.fft(x)
    assert got.dtype is nda.complex64  # float32 stays single precision
    same(got, np.fft.fft(host).astype(np.complex64), rtol=1e-5)
    same(nda.fft.rfft(x, n=8, axis=0, norm="ortho"), np.fft.rfft(host, n=8, axis=0, norm="ortho").astype(np.complex64), rtol=1e-5)
    same(nda.fft.irfft(nda.fft.rfft(x)), host, rtol=1e-4)
    same(nda.fft.ifftn(nda.fft.fftn(x)), host.astype(np.complex64), rtol=1e-4)
    same(nda.fft.irfftn(nda.fft.rfftn(x), s=(4, 6)), host, rtol=1e-4)
    same(nda.fft.hfft(nda.fft.ihfft(x)), host, rtol=1e-4)
    same(nda.fft.fftshift(x, axes=1), np.fft.fftshift(host, axes=1))
    same(nda.fft.ifftshift(nda.fft.fftshift(x)), host)
    same(nda.fft.fftfreq(5, d=0.5, device=device), np.fft.fftfreq(5, d=0.5))
    same(nda.fft.rfftfreq(6, dtype=nda.float32, device=device), np.fft.rfftfreq(6).astype(np.float32))
    with pytest.raises(ValueError, match="norm must be"):
        nda.fft.fft(x, norm="none")
    with pytest.raises(TypeError, match="real floating"):
        nda.fft.rfft(on(device, [1j]))


# ----------------------------------------------------------------------------- engine semantics of the new kinds of op


def test_data_dependent_ops_are_sync_points_and_see_earlier_writes(threaded):
    x = nda.zeros(300_000)  # large enough to go to a worker
    y = x + 1.0
    y[::2] = 0.0
    r = nda.nonzero(y)  # must wait for the write above, then read
    assert r[0].shape == (150_000,)
    values = nda.unique_values(y)
    assert values.tolist() == [0.0, 1.0]


def test_several_outputs_are_ordered_by_the_engine(threaded):
    a = nda.reshape(nda.arange(9.0), (3, 3)) + nda.eye(3) * 10
    big = nda.broadcast_to(a, (20_000, 3, 3)) + 0.0
    q, r = nda.linalg.qr(big)  # pushed as one task with two outputs
    np.testing.assert_allclose((q @ r)[-1].asnumpy(), a.asnumpy(), rtol=1e-10)


@given(data=st.data())
def test_unique_counts_agrees_with_numpy(data):
    device = data.draw(st.sampled_from(DEVICES), label="device")
    dtype = data.draw(nst.dtypes(kind="real numeric"), label="dtype")
    x = data.draw(nst.arrays(dtype, nst.shapes(), device=device), label="x")
    host = x.asnumpy()
    expected = np.unique_counts(host)
    got = nda.unique_counts(x)
    np.testing.assert_array_equal(got.values.asnumpy(), expected.values)
    np.testing.assert_array_equal(got.counts.asnumpy(), expected.counts)
