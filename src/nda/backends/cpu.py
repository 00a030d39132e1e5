"""The built-in cpu backend: NumPy arrays as buffers, the catalog's reference kernels.

It is an ordinary backend: declared in ``pyproject.toml`` under the ``nda.backends``
entry-point group and loaded through it on first use of a cpu array, like any plugin.
NumPy already implements the catalog's semantics, so each op's reference implementation
(written in the kernel convention) is registered as the cpu kernel for every dtype the
op declares; a few hot ops get a kernel that calls the NumPy ufunc directly instead
(``np.add.reduce`` for ``sum``: the same result without ``np.sum``'s Python wrapper; ``sort``
and ``argsort`` through NumPy's fast default sort, :mod:`.cpu_sort`), and
``nda.random``'s ops get the compiled Philox kernels where nda was built with its optional
C extension (:mod:`.cpu_random`).

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable

import os

import numpy as np

from .._devices import Device
from .contract import DeviceInfo


def _reducing(ufunc: np.ufunc, with_dtype: bool) -> Callable[..., Any]:
    """``ufunc.reduce`` in the kernel convention of a reduction: what ``np.sum``/``np.max``...
    compute, without their Python wrappers (a tiny reduction's time was mostly theirs)."""
    reduce = ufunc.reduce

    if with_dtype:

        def kernel(x: np.ndarray, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
            return reduce(x, axis=axis, dtype=None if dtype is None else dtype.numpy, keepdims=keepdims)
    else:

        def kernel(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> Any:  # type: ignore[misc]
            return reduce(x, axis=axis, keepdims=keepdims)

    kernel.__qualname__ = kernel.__name__ = f"{ufunc.__name__}.reduce"
    return kernel


def _direct_kernels() -> dict[str, Callable[..., Any]]:
    """cpu kernels that call a NumPy ufunc directly (the conformance kit checks them against
    the catalog's references like any backend's)."""
    from . import cpu_sort  # NumPy's default sort with the stable result (see there)

    return {
        "sum": _reducing(np.add, True),
        "prod": _reducing(np.multiply, True),
        "max": _reducing(np.maximum, False),
        "min": _reducing(np.minimum, False),
        "matmul": np.matmul,
        "sort": cpu_sort.sort,
        "argsort": cpu_sort.argsort,
    }


class CpuBackend:
    """NumPy on the host. Buffers are ``numpy.ndarray``; there is one device, ``cpu:0``."""

    name = "cpu"
    api_version = "1.4"
    device_types = ("cpu",)

    def devices(self) -> list[DeviceInfo]:
        import platform

        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            memory = None
        return [DeviceInfo(Device("cpu", 0), platform.processor() or platform.machine() or "cpu", memory, cores=os.cpu_count())]

    def register(self, register_kernel: Callable[..., None]) -> None:
        from ..ops import CATALOG

        for decl in CATALOG.values():
            register_kernel(decl.name, decl.supported_dtypes, decl.reference)
        for name, kernel in _direct_kernels().items():  # the same results, without NumPy's Python wrappers
            register_kernel(name, CATALOG[name].supported_dtypes, kernel, priority=1)
        from . import cpu_sparse  # csr and row_sparse (SciPy is imported when first used)

        cpu_sparse.register(register_kernel)
        from . import cpu_random  # nda.random: the compiled Philox kernels (nda._philox_native), or NumPy's on threads

        cpu_random.register(register_kernel)

    def partitioner(self, device: Device) -> Any:
        """Claims chains of element-wise ops for ``nda.hybridize`` (backend API 1.4, :mod:`.fusion`):
        an arithmetic chain runs as one numexpr expression when numexpr is installed
        (``NDA_NUMEXPR=0`` turns that off), any other as the cpu kernels over cache-sized chunks."""
        return _CpuPartitioner()

    def ensure_buffer(self, result: Any) -> np.ndarray:
        """NumPy ufuncs return scalars for 0-d input; buffers are always arrays."""
        return result if isinstance(result, np.ndarray) else np.asarray(result)

    def to_host(self, buf: np.ndarray) -> np.ndarray:
        return buf

    def from_host(self, host: np.ndarray, device: Device, out: np.ndarray | None = None) -> np.ndarray:
        if out is not None:
            out[...] = host
            return out
        return host

    def device_of(self, buf: np.ndarray) -> Device:
        return Device("cpu", 0)

    def dlpack(self, buf: np.ndarray, **kwargs: Any) -> Any:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        return buf.__dlpack__(**kwargs)

    def dlpack_device(self, device: Device) -> tuple[int, int]:
        return (1, 0)  # kDLCPU

    def __repr__(self) -> str:
        return "<nda cpu backend (numpy)>"


_ARITHMETIC = frozenset({"add", "subtract", "multiply", "divide", "negative", "positive", "square"})


class _CpuPartitioner:
    """Element-wise chains on cpu (see :meth:`CpuBackend.partitioner`)."""

    def __new__(cls) -> Any:
        from .. import dispatch
        from .._devices import KernelKey
        from ..ops import DECLARED
        from . import fusion

        class Partitioner(fusion.ElementwisePartitioner):
            def compile(self, program: fusion.Program) -> fusion.Compiled | None:
                # numexpr for arithmetic chains (its multithreaded VM wins there and its float
                # arithmetic is NumPy's, op by op); its transcendental functions are other
                # implementations than NumPy's and slower here (a GELU: 2-3x), so those chains
                # run on the cpu's own kernels chunk by chunk.
                # numexpr reports no floating-point error: fusion.reporting runs it where that
                # changes nothing (every category ignored, or finite outputs) and the chunked
                # kernels, which warn or raise as the ops would, where it does.
                def kernel_for(instr: fusion.Instr) -> Any:
                    return dispatch.resolve(instr.op, KernelKey("cpu", instr.key)).run

                run = fusion.chunked(program, kernel_for)
                if fusion.numexpr_available() and set(program.ops) <= _ARITHMETIC:
                    found = fusion.numexpr_evaluator(program)
                    finite = fusion.numexpr_finite(program)
                    if found is not None and finite is not None:
                        return fusion.Compiled(fusion.reporting(program, found[0], finite, run), "numexpr", found[1], exact=True)
                return fusion.Compiled(run, "chunked numpy", " -> ".join(program.ops) + " (the cpu kernels, chunk by chunk)", exact=True)

        return Partitioner([name for name, d in DECLARED.items() if d.family in ("unary", "binary")])


backend = CpuBackend()
