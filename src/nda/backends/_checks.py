"""A host read checks the buffer against what nda declared for the array.

nda decides every result's shape and dtype before a kernel runs (the catalog's rule), and
an array answers ``x.shape`` and ``x.dtype`` from that declaration without looking at its
buffer. A kernel that returns something else (a backend's bug) would make ``x.shape`` and
``x.asnumpy().shape`` silently disagree, and every op computed from ``x`` wrong in ways
that are hard to trace. So each read of data to the host (``asnumpy``, ``np.asarray``,
``tolist``, ``float(x)``, ``repr``, a copy to cpu) compares the host array's shape and
dtype with the declaration and raises :class:`KernelResultError` when they differ, naming
the backend, the device, both shapes and dtypes, and how to find the kernel. The cost is
two comparisons per read (``benchmarks/engine.py``, "host-read check"); nothing is added
per op. (Which op made an array is not recorded per array: that would cost every op,
also on the hot path of tiny ops, for the sake of a backend's bug.)

Errors, not repairs: nda never reshapes or casts a wrong buffer. The conformance kit
(``python -m nda.testing.conformance <device>``) finds the kernel.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

__all__ = ["KernelResultError", "check_host"]


class KernelResultError(RuntimeError):
    """A kernel returned a buffer whose shape or dtype is not the one nda declared for its result."""


def check_host(array: Any, host: Any, backend: Any) -> Any:
    """``host`` (the array's data read to the host) if it has the declared shape and dtype."""
    if host.shape == array._shape:
        dtype, declared = host.dtype, array._meta.dtype.numpy
        if dtype is declared or dtype == declared:  # NumPy's built-in dtypes are singletons: mostly the first test
            return host
    raise _mismatch(array, host, backend)


def _mismatch(array: Any, host: Any, backend: Any) -> KernelResultError:
    name = getattr(backend, "name", type(backend).__name__)
    declared = f"shape {array._shape} and dtype {array._meta.dtype.name}"
    actual = f"shape {tuple(host.shape)} and dtype {host.dtype}"
    return KernelResultError(
        f"a kernel of backend {name!r} returned a buffer with {actual} for an array on {array._meta.device} for which nda "
        f"declared {declared}: the kernel does not follow the backend contract (nda decides the result's shape and dtype "
        f"before the kernel runs). `python -m nda.testing.conformance {array._meta.device.type}` finds the kernel; "
        f"nda.dispatch.explain(op, *args) names the kernel an op runs."
    )
