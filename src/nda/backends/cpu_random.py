"""The cpu backend's ``nda.random`` kernels: the Philox stream compiled for the host, or in NumPy.

Two implementations of one stream (stated in :mod:`nda.ops.random`), bit for bit the same:

* **compiled** (:func:`native_kernels`): the optional extension ``nda._philox_native``,
  nda's one C/CUDA Philox source (:mod:`nda.ops._philox_source`, the same text nda-cuda
  runs on a GPU) compiled for the host. A kernel allocates the result and the extension
  writes it in place through the buffer protocol, with the GIL released; the Philox rounds
  and the Box-Muller arithmetic run in SIMD (AVX2 where the CPU has it, picked when the
  module loads). It is used where it was built (``setup.py``: any C compiler) unless
  ``NDA_NATIVE=0``, which the suite also runs.
* **vectorised NumPy** (:mod:`nda.ops._philox`, the catalog's reference): the fallback
  without a compiler or with ``NDA_NATIVE=0``, chunks of blocks spread over threads
  (NumPy releases the GIL in its loops).

Both split a large request over a few threads (:class:`ChunkRunner`): a run of whole blocks
is its own request at counter ``counter + first block`` into its slice of the output, so
the values do not depend on the split or on the number of threads
(``tests/test_random.py`` and ``tests/test_random_native.py`` compare with the
single-threaded reference). The choice is made once, when the cpu backend registers its
kernels; ``nda.dispatch.explain("random.philox_uniform", ...)`` names the kernel that runs
(``philox_uniform_native`` or ``philox_uniform_threaded``).

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Any, Callable

import numpy as np

from .._config import env_flag

__all__ = ["register", "load_native", "native_kernels", "ChunkRunner", "PART_BLOCKS", "OPS"]

#: The catalog ops these kernels serve, by their short names.
OPS = ("uniform", "normal", "exponential", "integers")
#: Philox blocks per part of a request that the compiled kernels split over threads; requests
#: of fewer than two parts (below 2**20 blocks: 4M float32 or 2M float64 values, a few ms on
#: one core) run on the calling thread. Smaller parts gain on an idle machine but lose badly
#: on a busy one: a 1 ms request split over two threads of a loaded 2-core VM took 7x longer
#: (the second part waits for a core), so only requests long enough to amortise that are split.
PART_BLOCKS = 1 << 19
_TWO128 = 1 << 128


def load_native() -> Any:
    """``nda._philox_native``, or None where it was not compiled or ``NDA_NATIVE=0``."""
    if not env_flag("NDA_NATIVE", True):
        return None
    try:  # a C module that imports nothing (by name: the import-linter sees no Python module there)
        return importlib.import_module(f"{__package__.rpartition('.')[0]}._philox_native")
    except ImportError:
        return None


class ChunkRunner:
    """Runs ranges of chunk starts on a small thread pool (created on first use, forgotten in a forked child).

    ``runner(work, starts)`` splits ``starts`` into up to ``threads`` contiguous ranges, calls
    ``work(part)`` for each (the calling thread takes the first) and returns when all are done.
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._pool: Any = None
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._pool = None  # the parent's threads do not exist in the child
        self._lock = threading.Lock()

    def __call__(self, work: Callable[[range], None], starts: range) -> None:
        k = min(self.threads, len(starts))
        parts = [starts[i * len(starts) // k : (i + 1) * len(starts) // k] for i in range(k)]
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="nda-cpu-random")
            pool = self._pool
        futures = [pool.submit(work, part) for part in parts[1:]]
        work(parts[0])  # the calling thread takes a share
        for future in futures:
            future.result()


def native_kernels(module: Any, run: ChunkRunner | None, part: int = PART_BLOCKS) -> dict[str, Callable[..., np.ndarray]]:
    """The four ``random.philox_*`` kernels over ``nda._philox_native`` ``module``, by short name, in
    the kernel convention of :mod:`nda.ops._philox`'s references; a request of ``2 * part``
    blocks or more is split into parts of ``part`` blocks over ``run``'s threads (None: never)."""

    def fill(
        fn: Callable[..., None], shape: tuple[int, ...], dtype: Any, per_block: int, key: tuple[int, int], counter: int, *params: Any
    ) -> np.ndarray:
        out = np.empty(shape, dtype=dtype.numpy)
        flat = out.reshape(-1)
        total = -(-flat.size // per_block)  # blocks
        if run is None or total < 2 * part:
            fn(flat, key, counter, *params)
            return out

        def work(starts: range) -> None:  # whole blocks starts[0] .. starts[-1] + part - 1: a request of their own
            first, stop = starts[0], min(starts[-1] + part, total)
            fn(flat[first * per_block : stop * per_block], key, (counter + first) % _TWO128, *params)

        run(work, range(0, total, part))
        return out

    def per_block(dtype: Any) -> int:
        return 2 if dtype.numpy.itemsize == 8 else 4

    def philox_uniform_native(
        shape: tuple[int, ...], key: tuple[int, int], counter: int, low: float, span: float, dtype: Any, device: Any = None
    ) -> np.ndarray:
        return fill(module.uniform, shape, dtype, per_block(dtype), key, counter, low, span)

    def philox_normal_native(
        shape: tuple[int, ...], key: tuple[int, int], counter: int, loc: float, scale: float, dtype: Any, device: Any = None
    ) -> np.ndarray:
        return fill(module.normal, shape, dtype, per_block(dtype), key, counter, loc, scale)

    def philox_exponential_native(
        shape: tuple[int, ...], key: tuple[int, int], counter: int, scale: float, dtype: Any, device: Any = None
    ) -> np.ndarray:
        return fill(module.exponential, shape, dtype, per_block(dtype), key, counter, scale)

    def philox_integers_native(
        shape: tuple[int, ...], key: tuple[int, int], counter: int, low: int, span: int, dtype: Any, device: Any = None
    ) -> np.ndarray:
        return fill(module.integers, shape, dtype, 2 if span <= 1 << 32 else 1, key, counter, low, span)

    return {
        "uniform": philox_uniform_native,
        "normal": philox_normal_native,
        "exponential": philox_exponential_native,
        "integers": philox_integers_native,
    }


def _threaded_numpy(short: str, impl: Callable[..., np.ndarray], runner: ChunkRunner) -> Callable[..., np.ndarray]:
    def kernel(*args: Any, **kwargs: Any) -> np.ndarray:
        return impl(*args, dtype=kwargs["dtype"], run=runner)

    kernel.__name__ = kernel.__qualname__ = f"philox_{short}_threaded"
    return kernel


def register(register_kernel: Callable[..., None]) -> None:
    """Register the cpu's ``random.philox_*`` kernels over the catalog's references (priority 1):
    the compiled ones where :func:`load_native` finds the extension, else the NumPy ones on
    threads; on one core without the extension, the references the backend registered serve."""
    from ..ops import CATALOG, _philox

    native = load_native()
    threads = min(8, os.cpu_count() or 1)
    runner = ChunkRunner(threads) if threads >= 2 else None
    if native is not None:
        kernels = native_kernels(native, runner)
    elif runner is not None:
        kernels = {short: _threaded_numpy(short, _philox.IMPLEMENTATIONS[short], runner) for short in OPS}
    else:
        return
    for short, kernel in kernels.items():
        name = f"random.philox_{short}"
        register_kernel(name, CATALOG[name].supported_dtypes, kernel, priority=1)
