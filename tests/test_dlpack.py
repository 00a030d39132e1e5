"""DLPack both ways: ``nda.from_dlpack`` routes by the producer's device, sim exports host copies.

``nda.from_dlpack(x)`` asks ``x.__dlpack_device__()``: host memory goes through NumPy
(zero-copy on cpu), another device type to the backend whose ``dlpack_device_types`` has it
(nda-cuda for kDLCUDA; here the CUDA mirror, which takes a producer that says it is on a CUDA
device and hands over host memory), and BufferError names the device type when none does.
A sim array answers kDLExtDev and exports only host copies (``numpy.from_dlpack(x,
device="cpu")``), as CuPy exports GPU memory to the cpu. Real CUDA producers (PyTorch, CuPy,
JAX) are in ``tests/test_cuda.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import nda

HERE = os.path.dirname(os.path.abspath(__file__))
KDLCUDA, KDLVULKAN, KDLEXTDEV = 2, 7, 12


class Producer:
    """A DLPack producer that reports ``kind`` but hands over the memory of a NumPy array (host memory:
    for kDLCUDA a lie that CuPy, and the model of it, refuse)."""

    def __init__(self, array: np.ndarray, kind: int = KDLCUDA, index: int = 0) -> None:
        self.array, self.kind, self.index = array, kind, index
        self.calls: list[dict] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.kind, self.index)

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if kwargs.get("dl_device") not in (None, (self.kind, self.index)):
            raise BufferError("this producer exports where it is, only")
        return self.array.__dlpack__()


@pytest.fixture(scope="module")
def mirror():
    if not nda.backends.serves("cudamirror"):
        nda.backends.load("_cuda_numpy_mirror:backend")
    return nda.Device("cudamirror", 0)


@pytest.fixture(scope="module")
def cuda_arrays(mirror):
    """``(device, make, done)``: CUDA producers of this process's kDLCUDA backend and a wait for the
    producer's own work. Real CuPy arrays where nda-cuda has a GPU (kDLCUDA goes to it); elsewhere
    the mirror's (the model of CuPy's) arrays. The model's host memory is never handed to real
    CuPy: its arrays refuse a real CUDA consumer."""
    if nda.backends.serves("cuda"):
        import cupy

        # A write through the producer runs on CuPy's stream, which nda's queue knows nothing of.
        return nda.Device("cuda", 0), cupy.asarray, lambda: cupy.cuda.get_current_stream().synchronize()
    from _cupy_quirks import cupy_model

    return mirror, cupy_model.asarray, lambda: None


# ----------------------------------------------------------------------------- routing


def test_a_device_producer_goes_to_the_backend_that_imports_its_device_type_without_a_copy(cuda_arrays):
    device, make, done = cuda_arrays
    producer = make(np.arange(6.0).reshape(2, 3))
    x = nda.from_dlpack(producer)
    assert x.device == device and x.dtype == nda.float64 and x.shape == (2, 3)
    producer[0, 0] = 42.0  # shared memory: the producer's write is visible
    done()
    assert x.asnumpy()[0, 0] == 42.0
    assert (nda.sum(x) + 0).asnumpy() == 42.0 + 15.0
    copied = nda.from_dlpack(producer, copy=True)
    copied.wait_to_read()
    producer[0, 0] = -1.0
    done()
    assert copied.asnumpy()[0, 0] == 42.0 and copied.device == device


def test_device_moves_and_refuses_to_move_without_copy(cuda_arrays):
    device, make, _ = cuda_arrays
    producer = make(np.arange(4, dtype=np.int32))
    on_sim = nda.from_dlpack(producer, device="sim:1")
    assert on_sim.device == nda.Device("sim", 1) and on_sim.tolist() == [0, 1, 2, 3] and on_sim.dtype == nda.int32
    with pytest.raises(BufferError, match=rf"copy=False.*{device}; device=sim:0 needs a copy"):
        nda.from_dlpack(producer, device="sim", copy=False)
    on_cpu = nda.from_dlpack(producer, device="cpu")  # the producer is asked for host data first
    assert on_cpu.device == nda.Device("cpu", 0) and on_cpu.tolist() == [0, 1, 2, 3]


def test_host_memory_claiming_to_be_cuda_memory_is_a_buffer_error(cuda_arrays):
    """CuPy 14.2 checks the capsule's device type, not the producer's word: RuntimeError (the H200), here BufferError."""
    device, _, _ = cuda_arrays
    with pytest.raises(BufferError, match=r"says \(2, 0\) \(CUDA memory\), but the DLPack capsule .* holds memory of another device type"):
        nda.from_dlpack(Producer(np.zeros(2)), device=device)


def test_an_unknown_device_type_is_a_buffer_error_naming_it(mirror):
    with pytest.raises(BufferError, match=r"DLPack device type 7 \(kDLVulkan\) and no installed nda backend imports it.*dlpack_device_types has 7"):
        nda.from_dlpack(Producer(np.zeros(2), KDLVULKAN))
    with pytest.raises(BufferError, match=r"DLPack device type 99 \(unknown\)"):
        nda.from_dlpack(Producer(np.zeros(2), 99))


def test_cuda_producers_name_the_cuda_backend_when_it_is_unavailable():
    """Without the mirror, a CUDA producer goes to nda-cuda; without a GPU its reason is the error."""
    code = (
        "import numpy as np, nda\n"
        "from test_dlpack import Producer\n"
        "try:\n    nda.from_dlpack(Producer(np.zeros(2)))\n"
        "except BufferError as err:\n    print('BufferError', err)\n"
        "else:\n    print('imported')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    status = {r["name"]: r for r in nda.backends.status()}
    if status.get("cuda", {}).get("state") == "loaded":  # a GPU: CuPy looks into the capsule and refuses host memory
        assert out.stdout.startswith("BufferError from_dlpack(): Producer.__dlpack_device__() says (2, 0) (CUDA memory)"), out.stdout
        assert "CuPy refuses it" in out.stdout
        return
    assert out.stdout.startswith("BufferError from_dlpack(): the data is on DLPack device type 2 (kDLCUDA); backend 'cuda' imports it but is")
    if "cuda" in status:
        assert "no usable NVIDIA GPU" in out.stdout or "no device found" in out.stdout or "CuPy" in out.stdout


def test_host_producers_keep_working_zero_copy_on_cpu():
    a = np.arange(5.0)
    x = nda.from_dlpack(a)
    a[1] = 7.0
    assert x.device == nda.Device("cpu", 0) and x.tolist() == [0.0, 7.0, 2.0, 3.0, 4.0]
    independent = nda.from_dlpack(a, copy=True)
    a[1] = 8.0
    assert independent.tolist()[1] == 7.0
    with nda.Device("sim", 0):  # the standard: the data's device, not the default device
        assert nda.from_dlpack(a).device == nda.Device("cpu", 0)
    assert nda.from_dlpack(a, device="sim").device == nda.Device("sim", 0)
    with pytest.raises(BufferError, match=r"copy=False\): the data is in host memory; device=sim:0 needs a copy"):
        nda.from_dlpack(a, device="sim", copy=False)
    y = nda.arange(3)
    assert nda.from_dlpack(y) is y and nda.from_dlpack(y, copy=True) is not y


def test_dlpack_import_declarations_are_validated():
    class Bad:
        name = "dl_bad"
        api_version = "1.2"
        device_types = ("dl_bad",)
        dlpack_device_types = {1: "dl_bad"}  # kDLCPU: nda's own

        def devices(self):
            return [nda.backends.DeviceInfo(nda.Device("dl_bad", 0), "bad")]

        def register(self, register_kernel):
            pass

        def to_host(self, buf):
            return buf

        def from_host(self, host, device, out=None):
            return host

    sys.modules[__name__].bad_dlpack_backend = Bad()
    with pytest.raises(nda.backends.BackendValidationError, match=r"dlpack_device_types must map DLPack device type codes other than kDLCPU"):
        nda.backends.load(f"{__name__}:bad_dlpack_backend")
    Bad.dlpack_device_types = {KDLCUDA: "dl_bad"}  # no import_dlpack
    with pytest.raises(nda.backends.BackendValidationError, match=r"no import_dlpack\(obj, device\) method"):
        nda.backends.load(f"{__name__}:bad_dlpack_backend")


# ----------------------------------------------------------------------------- sim's export


def test_sim_reports_an_extension_device_and_exports_host_copies_only():
    x = nda.arange(6.0, device="sim:1") * 2
    assert x.__dlpack_device__() == (KDLEXTDEV, 1)
    host = np.from_dlpack(x, device="cpu", copy=True)
    assert host.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    host[0] = 99.0
    assert x.tolist()[0] == 0.0  # a copy
    assert np.from_dlpack(x, device="cpu").tolist()[1] == 2.0  # copy=None: the copy it has to make
    with pytest.raises(BufferError, match=r"sim:1 memory cannot be shared through DLPack; ask for a host copy"):
        np.from_dlpack(x)
    with pytest.raises(BufferError, match=r"without a copy \(copy=False\)"):
        np.from_dlpack(x, device="cpu", copy=False)
    with pytest.raises(BufferError, match=r"to host memory \(1, 0\) only"):
        x.__dlpack__(dl_device=(KDLCUDA, 0))


def test_sim_export_waits_for_the_work_that_writes_the_array():
    x = nda.zeros(300_000, device="sim")  # large: its work is queued, not run inline
    for _ in range(3):
        x += 1
    host = np.from_dlpack(x, device="cpu", copy=True)
    assert host.shape == (300_000,) and (host == 3).all()
    assert nda.from_dlpack(x, device="cpu").asnumpy().sum() == 900_000
