"""nda.save / savez / savez_compressed / load: NumPy's .npy and .npz files, both ways, on every device;
csr through SciPy's sparse .npz format; nothing is unpickled unless asked."""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest
import scipy.sparse

import nda

sim_installed = any(rec["name"] == "sim" and rec["state"] != "excluded" for rec in nda.backends.status())
DEVICES = ["cpu"] + (["sim"] if sim_installed else [])
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "complex64", "complex128"]


def sample(dtype: str, shape=(3, 4), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape) * 100
    if dtype == "bool":
        return data > 0
    if dtype.startswith("complex"):
        return (data + 1j * rng.standard_normal(shape)).astype(dtype)
    return data.astype(dtype) if dtype.startswith("float") else np.abs(data).astype(dtype) if dtype.startswith("u") else data.astype(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_reads_what_nda_saves_and_nda_reads_what_numpy_saves(tmp_path, dtype, device):
    for seed, shape in ((0, (3, 4)), (1, ()), (2, (0, 5)), (3, (2, 3, 2))):  # values differ call to call
        host = sample(dtype, shape, seed)
        x = nda.asarray(host, device=device)
        nda.save(tmp_path / "a.npy", x)
        back = np.load(tmp_path / "a.npy")
        assert back.dtype == host.dtype and back.shape == host.shape and np.array_equal(back, host, equal_nan=True)
        np.save(tmp_path / "b.npy", host)
        y = nda.load(tmp_path / "b.npy", device=device)
        assert y.device == nda.Device(device) and y.dtype.name == dtype and y.shape == shape
        assert np.array_equal(y.asnumpy(), host)


def test_paths_get_numpys_extensions_and_file_objects_work(tmp_path):
    x = nda.arange(5)
    nda.save(str(tmp_path / "plain"), x)
    assert (tmp_path / "plain.npy").exists()
    buf = io.BytesIO()
    nda.save(buf, x)
    buf.seek(0)
    assert nda.load(buf).tolist() == [0, 1, 2, 3, 4]
    nda.savez(str(tmp_path / "many"), x, y=x * 2)
    assert (tmp_path / "many.npz").exists()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("compressed", [False, True])
def test_npz_archives_both_ways(tmp_path, device, compressed):
    a, b = sample("float32"), sample("int16", (5,), 1)
    save = nda.savez_compressed if compressed else nda.savez
    save(tmp_path / "f.npz", nda.asarray(a, device=device), weights=nda.asarray(b, device=device))
    with np.load(tmp_path / "f.npz") as f:
        assert sorted(f.files) == ["arr_0", "weights"] and np.array_equal(f["arr_0"], a) and np.array_equal(f["weights"], b)
    np.savez_compressed(tmp_path / "g.npz", first=a, second=b) if compressed else np.savez(tmp_path / "g.npz", first=a, second=b)
    with nda.load(tmp_path / "g.npz", device=device) as f:
        assert f.files == ["first", "second"] and len(f) == 2 and "first" in f and list(f) == ["first", "second"]
        first = f["first"]
        assert first.device == nda.Device(device) and np.array_equal(first.asnumpy(), a) and np.array_equal(f["second"].asnumpy(), b)
        assert "first, second" in repr(f)


def test_big_endian_and_fortran_order_files_load_with_their_values(tmp_path):
    data = np.arange(12, dtype=">f8").reshape(3, 4)
    np.save(tmp_path / "be.npy", data)
    x = nda.load(tmp_path / "be.npy")
    assert x.dtype == nda.float64 and x.tolist() == data.astype("<f8").tolist()
    f = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    np.save(tmp_path / "f.npy", f)
    assert nda.load(tmp_path / "f.npy").tolist() == f.tolist()


def test_mmap_on_cpu_is_backed_by_the_file(tmp_path):
    np.save(tmp_path / "m.npy", np.arange(6.0))
    x = nda.load(tmp_path / "m.npy", mmap_mode="r+")
    x[0] = 42.0
    nda.waitall()
    del x
    assert np.load(tmp_path / "m.npy")[0] == 42.0
    ro = nda.load(tmp_path / "m.npy", mmap_mode="r")
    assert (ro + 1).tolist()[0] == 43.0
    with pytest.raises(ValueError, match="read-only"):
        ro[0] = 1.0
        ro.wait_to_read()


@pytest.mark.skipif(not sim_installed, reason="nda-sim is not installed")
def test_mmap_onto_another_device_copies(tmp_path):
    np.save(tmp_path / "m.npy", np.arange(4.0))
    x = nda.load(tmp_path / "m.npy", mmap_mode="r", device="sim")
    x[0] = 7.0  # the device copy is writable; the file is not touched
    assert x.tolist() == [7.0, 1.0, 2.0, 3.0] and np.load(tmp_path / "m.npy")[0] == 0.0


@pytest.mark.skipif(not sim_installed, reason="nda-sim is not installed")
@pytest.mark.parametrize("mode", ["r+", "readwrite"])
def test_mmap_r_plus_onto_another_device_is_refused(tmp_path, mode):
    """A write into the device copy would never reach the file, which ``r+`` promises (a probe:
    the write vanished silently)."""
    np.save(tmp_path / "m.npy", np.arange(4.0))
    with pytest.raises(ValueError, match=r"mmap_mode='r\+' makes writes reach the file, which holds only on cpu"):
        nda.load(tmp_path / "m.npy", mmap_mode=mode, device="sim")
    with nda.Device("sim"), pytest.raises(ValueError, match="only on cpu"):
        nda.load(tmp_path / "m.npy", mmap_mode=mode)  # the default device decides
    assert np.load(tmp_path / "m.npy").tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("mode, short", [("readonly", "r"), ("readwrite", "r+"), ("copyonwrite", "c")])
def test_mmap_long_mode_names_are_numpys_short_ones(tmp_path, mode, short):
    """NumPy's memmap spells the modes both ways, but np.load takes only the short names (it failed
    with "invalid mode 'readwriteb'")."""
    np.save(tmp_path / "m.npy", np.arange(4.0))
    x = nda.load(tmp_path / "m.npy", mmap_mode=mode, device="cpu")
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    if short == "r":
        with pytest.raises(ValueError, match="read-only"):
            x[0] = 1.0
    else:
        x[0] = 5.0
        nda.waitall()
        assert np.load(tmp_path / "m.npy")[0] == (5.0 if short == "r+" else 0.0)


class Payload:
    def __reduce__(self):
        return (print, ("unpickled!",))


def test_nothing_is_unpickled_unless_asked(tmp_path, capsys):
    path = tmp_path / "obj.npy"
    np.save(path, np.array([Payload()], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        nda.load(path)
    assert "unpickled!" not in capsys.readouterr().out
    with pytest.raises(TypeError, match="Python objects"):
        nda.load(path, allow_pickle=True)  # asked: NumPy unpickles it, and nda still refuses an object array
    (tmp_path / "p.npy").write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises((ValueError, OSError)):
        nda.load(tmp_path / "p.npy")
    with pytest.raises(TypeError, match="allow_pickle must be a bool"):
        nda.load(path, allow_pickle="yes")


def test_dtypes_nda_cannot_hold_are_refused(tmp_path):
    for host in (np.ones(3, np.float16), np.array(["a", "b"]), np.zeros(2, dtype=[("x", "i4"), ("y", "f8")])):
        np.save(tmp_path / "x.npy", host)
        with pytest.raises(TypeError, match="dtype|nda"):
            nda.load(tmp_path / "x.npy")
    np.savez(tmp_path / "z.npz", half=np.ones(2, np.float16), ok=np.ones(2))
    with nda.load(tmp_path / "z.npz") as f:
        assert f["ok"].tolist() == [1.0, 1.0]
        with pytest.raises(TypeError, match="'half'"):
            f["half"]


def test_save_refuses_what_npy_cannot_hold(tmp_path):
    m = nda.asarray(np.eye(3)).to_layout("csr")
    with pytest.raises(ValueError, match="nda.sparse.save_npz"):
        nda.save(tmp_path / "s.npy", m)
    with pytest.raises(ValueError, match="'arr_0'"):
        nda.savez(tmp_path / "s.npz", m)
    with pytest.raises(ValueError, match="positional argument 0"):
        nda.savez(tmp_path / "s.npz", nda.ones(2), arr_0=nda.ones(2))


@pytest.mark.parametrize("device", DEVICES)
def test_csr_through_scipys_sparse_npz(tmp_path, device):
    dense = np.array([[0, 1.5, 0, 0], [2.0, 0, 0, -3.0], [0, 0, 0, 0]])
    x = nda.asarray(dense, device=device).to_layout("csr")
    nda.sparse.save_npz(tmp_path / "m.npz", x)
    read = scipy.sparse.load_npz(tmp_path / "m.npz")
    assert read.format == "csr" and np.array_equal(read.toarray(), dense)
    scipy.sparse.save_npz(tmp_path / "s.npz", scipy.sparse.csr_array(dense * 2), compressed=False)
    y = nda.sparse.load_npz(tmp_path / "s.npz", device=device)
    assert y.layout.name == "csr" and y.device == nda.Device(device) and np.array_equal(y.to_layout("strided").asnumpy(), dense * 2)
    scipy.sparse.save_npz(tmp_path / "c.npz", scipy.sparse.coo_array(([1.0, 2.0], ([0, 0], [1, 1])), shape=(2, 3)))
    z = nda.sparse.load_npz(tmp_path / "c.npz")  # coo converted as SciPy converts it: duplicates summed
    assert z.to_layout("strided").tolist() == [[0.0, 3.0, 0.0], [0.0, 0.0, 0.0]]


def test_row_sparse_has_no_scipy_format_and_says_what_to_do(tmp_path):
    r = nda.asarray(np.array([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]])).to_layout("row_sparse")
    with pytest.raises(ValueError, match=r"to_layout\('csr'\).*components"):
        nda.sparse.save_npz(tmp_path / "r.npz", r)
    nda.savez(tmp_path / "parts.npz", **nda.sparse.components(r))  # the documented alternative
    with nda.load(tmp_path / "parts.npz") as f:
        back = nda.sparse.row_sparse_array((f["values"], f["row_indices"]), shape=r.shape)
    assert back.to_layout("strided").tolist() == r.to_layout("strided").tolist()
    with pytest.raises(ValueError, match="nda.save"):
        nda.sparse.save_npz(tmp_path / "d.npz", nda.ones((2, 2)))


@pytest.mark.skipif(not sim_installed, reason="nda-sim is not installed")
def test_save_waits_for_pending_writes_on_the_device(tmp_path, all_tasks):
    x = nda.zeros(1000, device="sim")
    for _ in range(5):
        x += 1.0  # queued on the device
    nda.save(tmp_path / "w.npy", x)
    assert np.all(np.load(tmp_path / "w.npy") == 5.0)
