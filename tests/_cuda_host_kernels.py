"""nda-cuda's generated element-wise kernels compiled as host C++ and run thread by thread.

:mod:`nda_cuda._codegen` writes each kernel as a body ``nda_body_<name>(tid, nthreads, ...)``
with a grid-stride loop; compiled without a CUDA compiler (``NDA_HOST_EMULATION``: plain C++
with ``<math.h>``), the entry point runs that body for every thread id of the grid in turn.
Element-wise kernels have no thread that reads what another writes, so this is exactly what
the GPU computes, up to the math library: the host's ``expf`` instead of CUDA's (both within
the kit's tolerances of NumPy), and float-to-integer conversions out of range (undefined in
C++; the GPU saturates, x86 gives the minimum). Vector loads and stores, the tail, alignment,
the broadcast index arithmetic and every special-value rule of the generated code run as
written.

:class:`HostCompiler` is the ``compiler`` of :class:`nda_cuda._elementwise.Generator`: it
compiles a module with ``g++`` (``-O0 -ffp-contract=off``: IEEE arithmetic, no contraction,
as ``--fmad=false`` on the GPU), caches the shared library by the source's hash, and launches
a kernel by calling its entry with ``blocks * threads`` threads.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from typing import Any

import numpy as np

import _cupy_streams

from nda_cuda import _codegen as cg

__all__ = ["HostCompiler", "available"]


def available() -> str | None:
    """Why host kernels cannot be built here, or None."""
    return None if shutil.which(os.environ.get("CXX", "g++")) else "no C++ compiler (g++) on PATH"


class _C64(ctypes.Structure):
    _fields_ = [("re", ctypes.c_float), ("im", ctypes.c_float)]


_CTYPES = {
    np.int64: ctypes.c_longlong,
    np.int32: ctypes.c_int,
    np.uint8: ctypes.c_ubyte,
    np.float32: ctypes.c_float,
    np.float64: ctypes.c_double,
}


def _arg(value: Any) -> Any:
    if isinstance(value, np.ndarray) or hasattr(getattr(value, "data", None), "ptr"):  # a NumPy array or a CuPy model array
        return ctypes.c_void_p(value.ctypes.data)
    if value.__class__ is np.complex64:
        return _C64(float(value.real), float(value.imag))
    return _CTYPES[value.__class__](value.item())


class HostCompiler:
    """Compile generated modules as host C++ (see the module docstring); ``sms`` plays the
    device's multiprocessor count, so small grids exercise the grid-stride loops."""

    def __init__(self, sms: int = 3, cache_dir: str | None = None) -> None:
        self.sms = sms
        self.cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), "nda_cuda_host_kernels")
        self.modules: list[Any] = []  # keeps the libraries loaded
        self.compiled = 0

    def device(self) -> int:
        return 0

    def multiprocessors(self, device: int) -> int:
        return self.sms

    def load(self, kernels: list[tuple[cg.Program, cg.Pattern, str]], device: int) -> dict[str, Any]:
        source = cg.module_source(kernels)
        digest = hashlib.sha256(source.encode()).hexdigest()[:24]
        os.makedirs(self.cache_dir, exist_ok=True)
        lib = os.path.join(self.cache_dir, f"k{digest}.so")
        if not os.path.exists(lib):
            cpp = os.path.join(self.cache_dir, f"k{digest}.{os.getpid()}.cpp")
            with open(cpp, "w") as fh:
                fh.write(source)
            tmp = f"{lib}.{os.getpid()}"
            cmd = [os.environ.get("CXX", "g++"), "-std=c++17", "-O0", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC", "-w", "-o", tmp, cpp]
            result = subprocess.run(cmd, capture_output=True, text=True)
            os.unlink(cpp)
            if result.returncode != 0:
                raise RuntimeError(f"g++ failed on the generated module:\n{result.stderr[:4000]}")
            os.replace(tmp, lib)
            self.compiled += 1
        module = ctypes.CDLL(lib)
        self.modules.append(module)
        functions = {}
        for _, _, name in kernels:
            fn = getattr(module, name)
            fn.restype = None
            functions[name] = fn
        return functions

    def launch(self, fn: Any, blocks: int, threads: int, args: list[Any]) -> None:
        _cupy_streams.before_kernel()  # the model's stream order: what the current stream was given first
        fn(ctypes.c_longlong(blocks * threads), *[_arg(a) for a in args])
