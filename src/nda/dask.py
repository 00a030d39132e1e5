"""``nda.dask``: the two things Dask cannot find out about nda arrays by itself.

Dask arrays of nda chunks need nothing else from nda: ``da.from_array(x, chunks=...)``
keeps the chunks (nda defines ``__array_function__``, so Dask does not convert them),
``meta`` is an nda array, and Dask's element-wise ops, reductions, ``@``, ``rechunk``,
slicing and ``dask.array.linalg`` reach nda through NumPy's protocols and nda's dtypes
(``np.dtype(nda.float64)``). What Dask only learns from a registration:

* how many bytes a chunk holds (``dask.sizeof``), which the distributed scheduler's
  memory accounting and spilling use. Dask asks for it itself, through the ``dask.sizeof``
  entry point nda declares in its ``pyproject.toml`` (:func:`register_sizeof`);
* that ``NDArray`` is a chunk type (``dask.array.chunk_types.register_chunk_type``).
  Without it Dask defers every operation between a Dask array and an nda array
  (``d @ w``, ``d + w``, ``np.add(d, w)`` with ``w`` an nda array) to nda, and neither
  side computes it. nda registers it by itself when ``import nda`` finds ``dask.array``
  imported, and otherwise the first time such an operation reaches nda (``nda._interop``),
  which then hands the operation back to Dask. :func:`register` does it explicitly.

Importing this module imports nothing of Dask (Dask loads it while it is importing).

Layer: arrays and front end, extensions (README, "Architecture").
"""

from __future__ import annotations

import sys
from typing import Any

from ._array import NDArray

__all__ = ["register", "register_sizeof", "adopt", "is_dask_collection", "nbytes"]


def nbytes(x: NDArray) -> int:
    """Bytes of ``x``'s elements (dense), or of its stored components (sparse layouts)."""
    if x._meta.layout.name == "strided":
        return int(x._size * x._meta.dtype.itemsize)
    from . import sparse

    try:
        parts = sparse.components(x)
    except (TypeError, ValueError):
        return int(x._size * x._meta.dtype.itemsize)
    return int(sum(p.size * p.dtype.itemsize for p in parts.values()))


def register_sizeof(sizeof: Any) -> None:
    """Dask's ``dask.sizeof`` entry point: ``sizeof(x)`` of an nda array is its bytes (:func:`nbytes`)."""
    sizeof.register(NDArray)(nbytes)


def register() -> None:
    """Tell Dask that nda arrays are chunks, and their sizes (idempotent; imports ``dask.array``)."""
    import dask.array  # noqa: F401

    adopt()


def adopt() -> bool:
    """Register with a Dask that is already imported (never imports it); whether Dask now takes nda chunks."""
    chunk_types = sys.modules.get("dask.array.chunk_types")  # loaded in full once present: it imports only NumPy
    if chunk_types is None:
        return False
    if not chunk_types.is_valid_chunk_type(NDArray):
        chunk_types.register_chunk_type(NDArray)
        sizeof = getattr(sys.modules.get("dask.sizeof"), "sizeof", None)
        if sizeof is not None:
            register_sizeof(sizeof)
    return True


def is_dask_collection(value: Any) -> bool:
    """Whether ``value`` is a Dask collection (a ``dask.array.Array``...), without importing Dask."""
    return type(value).__module__.startswith("dask.") and hasattr(value, "__dask_graph__")
