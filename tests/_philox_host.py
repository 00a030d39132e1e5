"""nda-cuda's Philox kernels (``nda_cuda._philox``) compiled by the host C compiler and run on the host.

The CUDA source (nda's one Philox source, ``nda.ops._philox_source``) is plain C outside
NVRTC/nvcc (its macros map the intrinsics to C operators), so it can be compiled with
``cc -ffp-contract=off`` into a shared library and called through ctypes. It is compiled
here with ``-DNDA_NO_SIMD``: the portable loops only, without the AVX2 rounds that
``nda._philox_native`` (the cpu kernels) uses where the CPU has them, so the tests that
compare the two compare both code paths. :class:`HostModule` stands in for ``cupy.RawModule``: its
``get_function(name)`` returns a callable ``(grid, block, args)`` that runs the kernel over
every block (the C loop replaces the grid-stride loop). With it,
``nda_cuda._philox.PhiloxKernels(numpy, HostModule())`` is the GPU's launch code and
arithmetic running on NumPy buffers: the tests compare it with the cpu kernels bit for bit,
and ``_cuda_numpy_mirror`` registers it as the ``cudamirror`` device's random kernels.
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

from nda_cuda import _philox

__all__ = ["compiler", "HostModule", "build_error"]

_CTYPES = {
    np.dtype(np.uint64): ctypes.c_uint64,
    np.dtype(np.uint32): ctypes.c_uint32,
    np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.float64): ctypes.c_double,
    np.dtype(np.float32): ctypes.c_float,
}


def compiler() -> str | None:
    """The host C compiler (``$CC``, ``cc`` or ``gcc``), or None."""
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


_LIBRARY: list[Any] = []
build_error: list[str] = []


def _library() -> Any:
    if _LIBRARY:
        return _LIBRARY[0]
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc or $CC) to build the host copy of nda_cuda._philox")
    code = _philox.source()
    flags = ["-O2", "-std=gnu11", "-ffp-contract=off", "-fno-fast-math", "-DNDA_NO_SIMD", "-fPIC", "-shared"]
    digest = hashlib.sha256((code + " ".join(flags)).encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), f"nda-philox-host-{os.getuid() if hasattr(os, 'getuid') else 0}")
    os.makedirs(folder, exist_ok=True)
    lib = os.path.join(folder, f"philox-{digest}.so")
    if not os.path.exists(lib):
        src = os.path.join(folder, f"philox-{digest}.c")
        with open(src, "w") as f:
            f.write(code)
        tmp = f"{lib}.{os.getpid()}"
        cmd = [cc, *flags, "-o", tmp, src, "-lm"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr}")
        os.replace(tmp, lib)
    _LIBRARY.append(ctypes.CDLL(lib))
    return _LIBRARY[0]


class HostModule:
    """A ``cupy.RawModule`` look-alike over the host-compiled source (see the module docstring)."""

    def __init__(self) -> None:
        self.lib = _library()

    def get_function(self, name: str) -> Any:
        fn = getattr(self.lib, name)

        def launch(grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]) -> None:
            _cupy_streams.before_kernel()  # the model's stream order
            converted, types = [], []
            for a in args:
                if isinstance(a, np.ndarray) or hasattr(getattr(a, "data", None), "ptr"):  # a NumPy array or a CuPy model array
                    if not a.flags.c_contiguous:
                        raise ValueError(f"{name}: kernel arrays must be C-contiguous")
                    converted.append(ctypes.c_void_p(a.ctypes.data))
                    types.append(ctypes.c_void_p)
                else:
                    ctype = _CTYPES[np.dtype(type(a))]
                    converted.append(ctype(a))
                    types.append(ctype)
            fn.argtypes = types
            fn.restype = None
            fn(*converted)

        return launch
