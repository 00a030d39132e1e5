"""csr on the simulated device: buffers in sim memory, converters and a few native kernels.

A csr buffer on sim is a :class:`SimCsrBuffer` whose device array is a SciPy csr matrix
(data, indices and indptr in simulated memory, accounted by the allocator). The layout
is registered through nda's plugin API, from the backend's ``register()``:

* ``register_kernel.storage("csr", to_host=..., from_host=...)``: copies to and from
  cpu csr buffers (``to_device``, ``asnumpy``, ``repr`` use them);
* ``register_kernel.converter("strided", "csr", ...)`` and back, enqueued on the
  device's stream like kernels;
* kernels at ``layout="csr"``: the zero-preserving element-wise ops, ``multiply``,
  ``matmul`` (csr @ strided), ``sum``, ``astype`` and ``permute_dims``. They run nda's
  own cpu csr kernels on the device memory (the simulation is exact). Every other op on
  a sim csr array takes nda's layout fallback: converted to strided on sim, then sim's
  strided route.

``row_sparse`` is not stored on sim: converting to it raises a ValueError naming the
layouts sim has.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from nda.engine import Deferred

from ._device import SimBuffer, read, submit, track

__all__ = ["SimCsrBuffer", "register"]

#: Ops with a native sim csr kernel (besides the zero-preserving element-wise ones).
_OTHER_NATIVE = ("multiply", "matmul", "sum", "astype", "permute_dims")


class SimCsrBuffer(SimBuffer):
    """A csr matrix in simulated device memory (its device array is a SciPy csr matrix)."""

    __slots__ = ()


def _nbytes(matrix: Any) -> int:
    return int(matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes)


def _copy(matrix: Any) -> Any:
    out = matrix.copy()
    out.has_canonical_format = True
    return out


def register(backend: Any, register_kernel: Callable[..., Any]) -> None:
    """Register sim's csr storage, converters and kernels with nda."""
    from nda.backends import cpu_sparse
    from nda.ops import CATALOG

    def to_host(buf: SimCsrBuffer) -> Any:
        return _copy(buf.wait())  # nda waited for the work that wrote it

    def from_host(matrix: Any, device: Any) -> SimCsrBuffer:
        out = SimCsrBuffer(device)
        alloc = backend._allocator(device)
        track(out, alloc, alloc.allocate(_nbytes(matrix)))
        out._array = _copy(matrix)
        out._at = None  # filled here, on the host
        return out

    register_kernel.storage("csr", to_host=to_host, from_host=from_host)
    register_kernel.converter("strided", "csr", _on_stream(backend, cpu_sparse.dense_to_csr, SimCsrBuffer, "sim_strided_to_csr"))
    register_kernel.converter("csr", "strided", _on_stream(backend, cpu_sparse.csr_to_dense, SimBuffer, "sim_csr_to_strided"))
    for op, layout, fn, signatures, out_layout in cpu_sparse.kernels():
        if layout != "csr" or not (op in cpu_sparse.ZERO_PRESERVING_UNARY or op in _OTHER_NATIVE):
            continue
        if op == "matmul":
            signatures = [("csr", "strided")]  # strided @ csr takes the layout fallback on sim
        result_type = SimBuffer if out_layout == "strided" else SimCsrBuffer
        kernel = _on_stream(backend, fn, result_type, f"sim_csr_{op}")
        register_kernel(op, CATALOG[op].supported_dtypes, kernel, layout="csr", signatures=signatures, out_layout=out_layout)


def _on_stream(backend: Any, fn: Callable[..., Any], result_type: type, name: str) -> Callable[..., Any]:
    """``fn`` (a cpu kernel) enqueued on the stream of its sim operands' device."""

    def kernel(*args: Any, **kwargs: Any) -> Any:
        device = next(a.device for a in args if isinstance(a, SimBuffer))
        out = result_type(device)
        alloc = backend._allocator(device)

        def work() -> None:
            inputs = [read(a) if isinstance(a, SimBuffer) else a for a in args]
            result = fn(*inputs, **kwargs)
            if result_type is SimBuffer:
                result = np.asarray(result)
                nbytes = result.nbytes
            else:
                nbytes = _nbytes(result)
            track(out, alloc, alloc.allocate(nbytes))
            out._array = result

        return Deferred(out, submit(backend._stream(device), work, out))

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__module__ = __name__
    return kernel
