"""What NumPy gets from an nda array: a write into it reaches the array or raises, never vanishes.

The protocol (``nda._hostcopy``, README "Ecosystem"): on cpu ``np.asarray(x)`` and
``np.from_dlpack(x)`` share the array's memory, writable, after the array's queued readers;
on any other device they are host copies, read-only unless the caller asked for a copy
(``np.array(x)``, ``copy=True``), so a write is NumPy's read-only ``ValueError``. Checked on
sim (an asynchronous queue) and on the few-kernels test backend (a plugin with no DLPack
export of its own); the suite also runs under ``NDA_ENGINE=naive``. Also here: ``iter()`` of
a 0-d array raises at once, as NumPy's does (matplotlib decides on ``np.iterable``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import nda

DEVICES = ["sim", "few"]


@pytest.fixture(scope="module", autouse=True)
def _few_backend():
    nda.backends.load("_few_kernels_backend")


pytestmark = pytest.mark.filterwarnings("ignore::nda.FallbackWarning")


def _array(device, values=(1.0, 2.0, 3.0)):
    return nda.asarray(np.asarray(values), device=device)


# ----------------------------------------------------------------------------- np.asarray / __array__


@pytest.mark.parametrize("device", DEVICES)
def test_np_asarray_of_a_device_array_is_a_read_only_copy(device):
    x = _array(device)
    for host in (np.asarray(x), np.asarray(x, dtype=np.float32), np.asarray(x[1:]), x.__array__()):
        assert not host.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            host[0] = 7.0
    assert x.tolist() == [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("device", DEVICES)
def test_a_copy_the_caller_asks_for_is_writable_and_independent(device):
    x = _array(device)
    for host in (np.array(x), np.asarray(x, copy=True), x.asnumpy(), np.array(x, dtype=np.float32)):
        assert host.flags.writeable
        host[0] = 7.0
    assert x.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="cannot be shared without a copy"):
        np.asarray(x, copy=False)


def test_np_asarray_on_cpu_shares_the_memory_writable():
    x = _array("cpu")
    host = np.asarray(x)
    assert host.flags.writeable
    host[0] = 7.0
    assert x.tolist() == [7.0, 2.0, 3.0]
    np.asarray(x[1:])[0] = 8.0  # a view's memory too
    assert x.tolist() == [7.0, 8.0, 3.0]


def test_a_write_through_np_asarray_on_cpu_comes_after_queued_readers(all_tasks):
    # all_tasks: every op goes to the workers, so exp(x) may still be queued when NumPy writes.
    for _ in range(5):
        x = nda.ones(2_000_000)
        nda.waitall()
        y = nda.exp(x)
        np.asarray(x)[:] = 0.0
        z = nda.exp(x)
        np.testing.assert_allclose(y.asnumpy()[-5:], np.e)
        np.testing.assert_allclose(z.asnumpy()[-5:], 1.0)
        y = nda.exp(x)
        np.from_dlpack(x)[:] = 1.0  # the same through DLPack
        np.testing.assert_allclose(y.asnumpy()[-5:], 1.0)


@pytest.mark.parametrize("device", ["cpu", *DEVICES])
def test_to_numpy_is_np_asarray_and_with_copy_true_a_fresh_writable_copy(device):
    # pandas' and xarray's to_numpy(); matplotlib unpacks its input with it (test_ecosystem_matplotlib).
    x = _array(device)
    host = x.to_numpy()
    assert type(host) is np.ndarray and host.dtype == np.float64 and host.tolist() == [1.0, 2.0, 3.0]
    if device == "cpu":
        host[0] = 7.0  # the array's own memory, as np.asarray(x) gives it
        assert x.tolist() == [7.0, 2.0, 3.0]
    else:
        assert not host.flags.writeable and not x.to_numpy(None, None).flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            host[0] = 7.0
    mine = x.to_numpy(copy=True)
    mine[1] = 9.0
    assert x.tolist()[1] == 2.0
    as32 = x.to_numpy(np.float32)
    assert as32.dtype == np.float32 and as32.tolist() == x.tolist()
    assert x.to_numpy(dtype=np.int64, copy=True).dtype == np.int64
    with pytest.raises(TypeError, match=r"to_numpy\(copy=...\) takes True or False"):
        x.to_numpy(copy="yes")
    if device != "few":  # the few-kernels backend has no csr
        with pytest.raises(TypeError, match="densify"):
            nda.asarray(np.eye(3), device=device).to_layout("csr").to_numpy()


# ----------------------------------------------------------------------------- DLPack to the host


@pytest.mark.parametrize("device", DEVICES)
def test_dlpack_export_to_the_host_is_read_only_unless_a_copy_is_asked_for(device):
    x = _array(device)
    host = np.from_dlpack(x, device="cpu")
    np.testing.assert_array_equal(host, [1.0, 2.0, 3.0])
    assert not host.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        host[0] = 7.0
    mine = np.from_dlpack(x, device="cpu", copy=True)
    assert mine.flags.writeable
    mine[0] = 7.0
    assert x.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(BufferError):
        np.from_dlpack(x)  # the device's own memory is not shared
    with pytest.raises(BufferError, match="without a copy"):
        np.from_dlpack(x, device="cpu", copy=False)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(1, 0))  # unversioned: read-only cannot be signalled, so NumPy refuses


def test_dlpack_on_cpu_shares_the_memory_writable():
    x = _array("cpu")
    host = np.from_dlpack(x)
    host[1] = 5.0
    assert x.tolist() == [1.0, 5.0, 3.0]


def test_a_backend_without_dlpack_says_so():
    x = _array("few")
    with pytest.raises(BufferError, match=r"no DLPack device of their own.*numpy.from_dlpack\(x, device='cpu'\)"):
        x.__dlpack_device__()


# ----------------------------------------------------------------------------- SciPy's output=


@pytest.mark.skipif(os.environ.get("SCIPY_ARRAY_API") != "1", reason="SciPy's Array API support needs SCIPY_ARRAY_API=1")
@pytest.mark.parametrize("device", ["cpu", *DEVICES])
def test_scipy_ndimage_output_is_written_or_refused(device):
    # SciPy's ndimage writes its result into np.asarray(output) (SciPy declares it cpu-only):
    # on cpu that is the array's memory; elsewhere it used to be a detached copy, left at 0.
    from scipy import ndimage

    data = np.asarray([1.0, 2.0, 4.0, 8.0])
    expected = ndimage.correlate1d(data, np.asarray([1.0, 1.0]))
    x = nda.asarray(data, device=device)
    out = nda.zeros(4, device=device)
    if device == "cpu":
        ndimage.correlate1d(x, nda.asarray([1.0, 1.0]), output=out)
        np.testing.assert_array_equal(out.asnumpy(), expected)
    else:
        with nda.Device(device), pytest.raises(ValueError, match="read-only"):
            ndimage.correlate1d(x, nda.asarray([1.0, 1.0]), output=out)
        assert out.tolist() == [0.0] * 4


# ----------------------------------------------------------------------------- iteration


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_iter_of_a_0d_array_raises_at_once(device):
    x0 = nda.asarray(2.0, device=device)
    with pytest.raises(TypeError, match="0-d"):
        iter(x0)
    assert not np.iterable(x0)
    x = _array(device)
    assert np.iterable(x)
    items = list(x)
    assert [i.shape for i in items] == [(), (), ()] and [float(i) for i in items] == [1.0, 2.0, 3.0]
    assert [r.tolist() for r in nda.reshape(nda.arange(4, device=device), (2, 2))] == [[0, 1], [2, 3]]


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_matplotlib_hist_and_set_ylim_take_nda_arrays(device):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        counts, edges, _ = ax.hist(nda.asarray([0.0, 0.1, 0.9, 1.0, 0.8], device=device), bins=2)
        assert np.asarray(counts).tolist() == [2.0, 3.0]  # one histogram, not five
        ax.set_ylim([0, nda.asarray(3.0, device=device)])
        assert ax.get_ylim() == (0.0, 3.0)
    finally:
        plt.close(fig)
