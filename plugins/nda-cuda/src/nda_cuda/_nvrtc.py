"""NVRTC for nda-cuda's generated kernels: compile, cache on disk, load, launch (issue 28).

Through ``cupy.cuda.compiler.compile_using_nvrtc`` and ``cupy.cuda.function.Module``, not
``cupy.RawModule``: CuPy appends ``-ftz=true`` to every ``RawModule``'s options (and NVRTC 13
refuses the flag twice), while these kernels keep float32 subnormals unless told otherwise.
Binaries are cached on disk as CuPy caches its own (``$CUPY_CACHE_DIR/nda_cuda``, keyed by
a hash of the source, the options, the architecture, the NVRTC and CuPy versions; written
atomically, so processes may fill it at once).

Layer: backend plugin (nda-cuda).
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any

from . import _codegen as cg

__all__ = ["NvrtcCompiler"]


class NvrtcCompiler:
    """Compile with NVRTC through CuPy, load with ``cupy.cuda.function.Module``, launch on the current stream."""

    def __init__(self, cupy: Any, ftz: bool) -> None:
        self.cupy = cupy
        self.options = ("--fmad=false", f"-ftz={'true' if ftz else 'false'}")
        self._sms: dict[int, int] = {}
        #: the device when CUDA sees exactly one (the generator then asks for no current device per launch)
        self.only_device: int | None = None
        try:
            if cupy.cuda.runtime.getDeviceCount() == 1:
                self.only_device = 0
        except Exception:  # noqa: BLE001 - asked per launch instead
            pass
        root = os.environ.get("CUPY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cupy", "kernel_cache")
        self.cache_dir = os.path.join(root, "nda_cuda")

    def device(self) -> int:
        return int(self.cupy.cuda.runtime.getDevice())

    def multiprocessors(self, device: int) -> int:
        sms = self._sms.get(device)
        if sms is None:
            sms = self._sms[device] = int(self.cupy.cuda.runtime.getDeviceProperties(device)["multiProcessorCount"])
        return sms

    def _binary(self, source: str, device: int) -> bytes:
        from cupy.cuda import compiler

        arch = str(self.cupy.cuda.Device(device).compute_capability)  # "90" for sm_90
        try:
            nvrtc = ".".join(str(v) for v in self.cupy.cuda.nvrtc.getVersion())
        except Exception:  # noqa: BLE001 - the version only keys the cache
            nvrtc = "?"
        key = hashlib.sha256(repr((source, self.options, arch, nvrtc, self.cupy.__version__)).encode()).hexdigest()
        path = os.path.join(self.cache_dir, key + ".bin")
        try:
            with open(path, "rb") as fh:
                return fh.read()
        except OSError:
            pass
        with self.cupy.cuda.Device(device):
            binary = compiler.compile_using_nvrtc(source, options=self.options, arch=arch)
        if isinstance(binary, tuple):  # CuPy 9 and later: (the image, the name-expression mapping)
            binary = binary[0]
        if isinstance(binary, str):
            binary = binary.encode()
        try:
            os.makedirs(self.cache_dir, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}"
            with open(tmp, "wb") as fh:
                fh.write(binary)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache: compiled again next time
        return binary

    def load(self, kernels: list[tuple[cg.Program, cg.Pattern, str]], device: int) -> dict[str, Any]:
        binary = self._binary(cg.module_source(kernels), device)
        with self.cupy.cuda.Device(device):
            module = self.cupy.cuda.function.Module()
            module.load(binary)
            return {name: module.get_function(name) for _, _, name in kernels}

    def launch(self, fn: Any, blocks: int, threads: int, args: list[Any]) -> None:
        fn((blocks,), (threads,), tuple(args))


def _compile_into_cache(source: str, options: tuple[str, ...], device: int) -> None:
    """In a worker process: compile ``source`` with NVRTC into the disk cache (errors are left for
    the loading process to meet and report)."""
    import cupy

    compiler = NvrtcCompiler(cupy, "-ftz=true" in options)
    try:
        compiler._binary(source, device)
    except Exception:  # noqa: BLE001 - reported when the module is loaded
        pass
