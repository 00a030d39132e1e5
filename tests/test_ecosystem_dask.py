"""Dask arrays of nda chunks: chunks stay nda arrays on their device, with ``meta`` an nda array.

Dask finds what it needs through NumPy's protocols (``np.dtype(nda.float64)``,
``__array_function__``/``__array_ufunc__``, ``np.asarray(..., like=meta)``), so nda adds no
Dask-specific code. Everything runs on the threaded scheduler, on cpu and sim;
``notebooks/07-dask-scale-out.ipynb`` runs the scale-out pipeline below on a
``dask.distributed`` LocalCluster with two workers.
"""

from __future__ import annotations

import numpy as np
import pytest

import nda

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

DEVICES = ["cpu", "sim"]

# sim's own fallbacks are fine; a NumPy function nda cannot run (NumPy computing on a host
# copy) would take a chunk off its device, so it fails these tests.
pytestmark = [
    pytest.mark.filterwarnings("ignore::nda.FallbackWarning"),
    pytest.mark.filterwarnings("error:numpy.* on nda arrays:nda.FallbackWarning"),
]


@pytest.fixture(autouse=True)
def _threaded_scheduler():
    with dask.config.set(scheduler="threads"):
        yield


def _on(device, result, expected, rtol=1e-10):
    """``result`` is a computed nda array on ``device`` equal to NumPy's ``expected``."""
    assert isinstance(result, nda.NDArray), type(result)
    assert result.device == nda.Device(device)
    np.testing.assert_allclose(result.asnumpy(), expected, rtol=rtol, atol=1e-12)


@pytest.fixture(params=DEVICES)
def arrays(request):
    data = np.arange(48.0).reshape(8, 6) / 7
    x = nda.asarray(data, device=request.param)
    return request.param, data, da.from_array(x, chunks=(4, 3), asarray=False)


def test_from_array_keeps_nda_chunks_on_their_device(arrays):
    device, data, d = arrays
    assert isinstance(d._meta, nda.NDArray) and d._meta.device == nda.Device(device)
    assert d.dtype is nda.float64 and np.dtype(d.dtype) == np.float64
    for block in d.to_delayed().ravel():
        chunk = block.compute()
        assert isinstance(chunk, nda.NDArray) and chunk.device == nda.Device(device) and chunk.shape == (4, 3)
    _on(device, d.compute(), data)
    assert isinstance(da.from_array(nda.asarray(data, device=device), chunks=4)._meta, nda.NDArray)  # asarray=None: kept too


def test_map_blocks_with_and_without_meta(arrays):
    device, data, d = arrays
    _on(device, d.map_blocks(lambda b: b * 2 + 1).compute(), data * 2 + 1)
    meta = nda.empty((0, 0), device=device)
    result = d.map_blocks(lambda b: nda.sin(b), meta=meta)
    assert result._meta.device == nda.Device(device)
    _on(device, result.compute(), np.sin(data))
    _on(device, d.map_blocks(lambda b: nda.astype(b, nda.float32), dtype=nda.float32, meta=meta).compute(), data.astype(np.float32), rtol=1e-6)


def test_element_wise(arrays):
    device, data, d = arrays
    _on(device, (d * d + 2 * d - 1).compute(), data * data + 2 * data - 1)
    _on(device, da.exp(d).compute(), np.exp(data))
    _on(device, np.sin(d).compute(), np.sin(data))
    _on(device, da.where(d > 3, d, 0).compute(), np.where(data > 3, data, 0))
    _on(device, (d > 2).compute(), data > 2)
    _on(device, d.astype(np.float32).compute(), data.astype(np.float32), rtol=1e-6)


def test_reductions(arrays):
    device, data, d = arrays
    for got, expected in [
        (d.sum(), data.sum()),
        (d.sum(axis=0), data.sum(axis=0)),
        (d.mean(), data.mean()),
        (d.mean(axis=1), data.mean(axis=1)),
        (d.max(axis=0), data.max(axis=0)),
        (d.min(), data.min()),
        (d.prod(axis=1), data.prod(axis=1)),
        (d.std(axis=0), data.std(axis=0)),
        (d.var(), data.var()),
        (d.argmax(axis=0), data.argmax(axis=0)),
        (d.cumsum(axis=0), data.cumsum(axis=0)),
        (da.any(d > 6), np.any(data > 6)),
        (da.linalg.norm(d), np.linalg.norm(data)),
    ]:
        _on(device, got.compute(), expected)


def test_matmul_rechunk_and_slicing(arrays):
    device, data, d = arrays
    _on(device, (d @ d.T).compute(), data @ data.T)
    _on(device, da.dot(d.T, d).compute(), data.T @ data)
    _on(device, (d @ d[0]).compute(), data @ data[0])
    _on(device, d.rechunk((2, 6)).compute(), data)
    _on(device, d.rechunk((8, 1)).sum(axis=0).compute(), data.sum(axis=0))
    for got, expected in [(d[1:7, ::2], data[1:7, ::2]), (d[3], data[3]), (d[:, -1], data[:, -1]), (d[::-1, 2:4], data[::-1, 2:4])]:
        _on(device, got.compute(), expected)
    _on(device, d.T.reshape(48).compute(), data.T.reshape(48))
    _on(device, da.concatenate([d, d], axis=1).compute(), np.concatenate([data, data], axis=1))


def test_boolean_mask_indexing_with_a_dask_array_of_nda_chunks(arrays):
    # Dask takes its mask path when ``index.dtype == bool``: nda's dtype equals NumPy's
    # bool as NumPy's own dtype does (it used to go down Dask's list path and fail).
    device, data, d = arrays
    for got, expected in [
        (d[d > 3], data[data > 3]),
        (d[d[:, 0] > 2], data[data[:, 0] > 2]),
        (d[:, d[0] > 0.3], data[:, data[0] > 0.3]),
        (d.ravel()[d.ravel() < 1], data.ravel()[data.ravel() < 1]),
    ]:
        _on(device, got.compute(), expected)
    masked, expected = d.copy(), data.copy()
    masked[masked > 5] = 0.0
    expected[expected > 5] = 0.0
    _on(device, masked.compute(), expected)


def test_indexing_with_a_dask_array_of_nda_integer_chunks(arrays):
    # Dask takes its integer-index path on ``index.dtype.kind in "iu"``: nda's kind is NumPy's
    # letter (it was "signed integer", and Dask went down its list path and failed).
    device, data, d = arrays
    idx = da.from_array(nda.asarray(np.asarray([5, 0, 2, 2]), device=device), chunks=2, asarray=False)
    for got, expected in [(d[idx], data[[5, 0, 2, 2]]), (d[:, idx[:3]], data[:, [5, 0, 2]]), (d[idx, 1], data[[5, 0, 2, 2], 1])]:
        _on(device, got.compute(), expected)


def test_argmin_and_argmax_over_all_axes(arrays):
    """Dask calls chunk.ravel() and np.unravel_index on the chunks' results (nda runs both on the device)."""
    device, data, d = arrays
    for got, expected in [(d.argmin(), data.argmin()), (d.argmax(), data.argmax()), (da.argmax(d), data.argmax())]:
        _on(device, got.compute(), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_linalg_qr_and_svd(device):
    data = np.random.default_rng(0).standard_normal((24, 4))
    d = da.from_array(nda.asarray(data, device=device), chunks=(6, 4), asarray=False)
    q, r = da.linalg.qr(d)
    q, r = dask.compute(q, r)
    assert q.device == r.device == nda.Device(device)
    qn, rn = q.asnumpy(), r.asnumpy()
    np.testing.assert_allclose(qn @ rn, data, atol=1e-10)
    np.testing.assert_allclose(qn.T @ qn, np.eye(4), atol=1e-10)
    np.testing.assert_allclose(np.abs(rn), np.abs(np.linalg.qr(data)[1]), atol=1e-10)
    u, s, vt = dask.compute(*da.linalg.svd(d))
    assert u.device == s.device == vt.device == nda.Device(device)
    np.testing.assert_allclose((u.asnumpy() * s.asnumpy()) @ vt.asnumpy(), data, atol=1e-10)
    np.testing.assert_allclose(s.asnumpy(), np.linalg.svd(data, compute_uv=False), atol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_the_scale_out_pipeline_of_notebook_06_on_the_threaded_scheduler(device):
    # The notebook runs this on a LocalCluster of two worker processes, each with its own
    # simulated device holding half of the blocks; here the threaded scheduler runs it in
    # this process.
    rows, cols, block = 4_608, 8, 288

    def make_block(i):
        return nda.asarray(np.random.default_rng(i).standard_normal((block, cols)), device=device)

    meta = nda.empty((0, 0), device=device)
    x = da.concatenate(
        [da.from_delayed(dask.delayed(make_block)(i), shape=(block, cols), dtype=nda.float64, meta=meta) for i in range(rows // block)]
    )
    x = x.persist()
    w_true = nda.arange(1.0, cols + 1, device=device)
    y = x @ w_true + 0.1 * da.sin(x[:, 0])  # a Dask array and an nda array in one expression
    mean, std = dask.compute(x.mean(axis=0), x.std(axis=0))
    gram, xty = dask.compute(x.T @ x, x.T @ y)
    r = da.linalg.qr(x)[1].compute()
    beta = nda.linalg.solve(gram, xty)  # least squares through the normal equations, on the device
    full = np.concatenate([np.random.default_rng(i).standard_normal((block, cols)) for i in range(rows // block)])
    y_np = full @ np.arange(1.0, cols + 1) + 0.1 * np.sin(full[:, 0])
    _on(device, mean, full.mean(axis=0))
    _on(device, std, full.std(axis=0))
    _on(device, gram, full.T @ full)
    _on(device, beta, np.linalg.lstsq(full, y_np, rcond=None)[0], rtol=1e-8)
    assert r.device == nda.Device(device)
    np.testing.assert_allclose(np.abs(r.asnumpy()), np.abs(np.linalg.qr(full)[1]), atol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_dask_arrays_and_nda_arrays_combine_in_one_expression(device):
    data = np.arange(16.0).reshape(4, 4)
    d = da.from_array(nda.asarray(data, device=device), chunks=2)
    w = nda.asarray([1.0, 2.0, 3.0, 4.0], device=device)
    for got, expected in [
        (d @ w, data @ [1, 2, 3, 4]),
        (w @ d, np.asarray([1, 2, 3, 4.0]) @ data),
        (d + w, data + [1, 2, 3, 4]),
        (w - d, [1, 2, 3, 4] - data),
        (np.add(w, d), data + [1, 2, 3, 4]),
        (np.concatenate([w, d[0]]), np.r_[1:5, data[0]]),
    ]:
        assert isinstance(got, da.Array)
        _on(device, got.compute(), expected)


def test_dask_sizes_nda_chunks():
    from dask.sizeof import sizeof

    assert sizeof(nda.ones((100, 10))) == 8000
    assert sizeof(nda.ones(5, dtype=nda.float32, device="sim")) == 20


_IMPORT_ORDER = """
import sys
import dask.array as da
assert "nda" not in sys.modules  # nda's dask.sizeof entry point registers lazily (src/_nda_dask.py)
import nda
from dask.sizeof import sizeof
assert sizeof(nda.ones(10)) == 80
d = da.from_array(nda.ones((4, 4)), chunks=2)
assert (nda.ones(4) + d).compute().tolist()[0] == [2.0] * 4  # the first mixed operation registers nda with Dask
assert (d @ nda.ones(4)).compute().tolist() == [4.0] * 4
print("ok")
"""


def test_dask_imported_before_nda_finds_nda_through_its_entry_point():
    """Importing Dask does not import nda; Dask sizes nda chunks once nda is there (issue 38, item 2)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _IMPORT_ORDER], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
