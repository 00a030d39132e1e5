"""Sparse arrays: construction from components, and access to them.

``csr_array((data, indices, indptr), shape=(m, n))`` and ``row_sparse_array((values,
row_indices), shape=(N, ...))`` build arrays in the ``csr`` and ``row_sparse`` layouts
(see :mod:`nda.layouts`); ``x.to_layout("csr")`` builds them from dense arrays.
Components may be nda arrays (any device), NumPy arrays or nested lists.

Construction validates everything and raises at the call: malformed ``indptr``
(ValueError), column or row indices out of range (IndexError), duplicate entries
(ValueError: SciPy would sum them silently, nda refuses the ambiguity), non-integer
indices (TypeError). Column indices that are unsorted within a row, and row indices of a
row_sparse array given in any order, are sorted (with their values): nda keeps sparse
arrays in canonical form. The check reads the components, so nda arrays given as
components are waited for (like ``nonzero``, whose result depends on data).

``save_npz``/``load_npz`` write and read SciPy's sparse ``.npz`` format for csr arrays
(``scipy.sparse.load_npz`` and ``scipy.sparse.save_npz`` read and write the same files);
row_sparse has no SciPy format, so ``save_npz`` refuses it and says how to store it.

Layer: arrays and front end, extensions (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _dtypes
from ._array import NDArray, new_array
from ._devices import ArrayMeta, Device, as_device
from .layouts import csr, info, row_sparse
from .ops.spec import check_shape, dtype_arg
from .ops.creation import cast_host, host_data, nda_dtype

__all__ = ["csr_array", "row_sparse_array", "components", "nnz", "save_npz", "load_npz"]


def _host(value: Any, what: str, op: str) -> np.ndarray:
    if isinstance(value, NDArray):
        return value.asnumpy()
    try:
        return np.asarray(value)
    except Exception as err:  # noqa: BLE001 - any conversion failure is the caller's input
        raise TypeError(f"{op}(): {what} must be an array or a sequence of numbers, got {type(value).__name__}: {err}") from None


def _index_array(value: Any, what: str, op: str) -> np.ndarray:
    arr = _host(value, what, op)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # an empty list comes in as float64
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{op}(): {what} must hold integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{op}(): {what} must be 1-D, got shape {arr.shape}")
    return arr.astype(np.int64, copy=False)


def _shape(shape: Any, op: str) -> tuple[int, ...]:
    """A shape as ``zeros`` takes it: ints (``operator.index``), never 2.5 or "2"."""
    if shape is None:
        raise TypeError(f"{op}(): shape= is required (the components do not determine it)")
    return check_shape(shape, op)


def _values(data: Any, dtype: Any, op: str) -> np.ndarray:
    """The stored values, read and cast as ``asarray`` does: what it refuses is refused here."""
    dt = dtype_arg(dtype, op)
    if isinstance(data, NDArray):
        arr = data.asnumpy()
    else:
        arr, _ = host_data(data, dt, op)
    target = dt or nda_dtype(arr, op)
    return np.array(cast_host(arr, target, op) if arr.dtype != target.numpy else arr, copy=True)


def _place(buf: Any, layout: Any, shape: tuple[int, ...], dtype: np.dtype, device: Device) -> NDArray:
    from . import backends, layouts

    backends.validate_device(device)
    meta = ArrayMeta(device, _dtypes.from_numpy_dtype(dtype), layout)
    if device.type != "cpu":
        what = f"building a {layout.name} array on {device}"
        entry = layouts.storage(device.type, layout, what)
        layouts.check_holds(device.type, layout, meta.dtype, what)
        buf = entry.from_host(buf, device)
    else:
        backends.ensure_device_type("cpu")
    return new_array(buf, meta, shape)


def csr_array(arg: Sequence[Any], /, *, shape: Sequence[int], dtype: Any = None, device: Device | str | None = None) -> NDArray:
    """A 2-D ``csr`` array from ``(data, indices, indptr)``: the non-zeros of row ``i`` are
    ``data[indptr[i]:indptr[i+1]]`` at columns ``indices[indptr[i]:indptr[i+1]]``."""
    op = "csr_array"
    try:
        data, indices, indptr = arg
    except (TypeError, ValueError):
        raise TypeError(f"{op}() expects (data, indices, indptr) as its first argument") from None
    dims = _shape(shape, op)
    info(csr).check_shape(dims, op)
    m, n = dims
    values = _values(data, dtype, op)
    cols = _index_array(indices, "indices", op)
    ptr = _index_array(indptr, "indptr", op)
    if values.ndim != 1:
        raise ValueError(f"{op}(): data must be 1-D, got shape {values.shape}")
    if len(ptr) != m + 1:
        raise ValueError(f"{op}(): indptr must have shape[0] + 1 = {m + 1} entries, got {len(ptr)}")
    if ptr[0] != 0:
        raise ValueError(f"{op}(): indptr must start at 0, got {ptr[0]}")
    if (np.diff(ptr) < 0).any():
        at = int(np.flatnonzero(np.diff(ptr) < 0)[0])
        raise ValueError(f"{op}(): indptr must be non-decreasing; indptr[{at}] = {ptr[at]} > indptr[{at + 1}] = {ptr[at + 1]}")
    if ptr[-1] != len(cols) or len(cols) != len(values):
        raise ValueError(
            f"{op}(): indptr[-1] = {ptr[-1]}, len(indices) = {len(cols)} and len(data) = {len(values)} must all be the number of stored elements"
        )
    if cols.size and (cols.min() < 0 or cols.max() >= n):
        bad = int(cols[(cols < 0) | (cols >= n)][0])
        raise IndexError(f"{op}(): column index {bad} is out of range for {n} columns (valid: 0..{n - 1})")
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(ptr))
    order = np.lexsort((cols, rows))
    cols, values = cols[order], values[order]
    dup = (np.diff(cols) == 0) & (np.diff(rows) == 0)
    if dup.any():
        at = int(np.flatnonzero(dup)[0])
        raise ValueError(f"{op}(): duplicate entry at row {rows[at]}, column {cols[at]}; each element may be stored once")
    from .backends import cpu_sparse

    index_dtype = np.int32 if max(n, len(cols)) < 2**31 else np.int64
    buf = cpu_sparse.csr(values, cols.astype(index_dtype), ptr.astype(index_dtype), dims)
    return _place(buf, csr, dims, values.dtype, as_device(device))


def row_sparse_array(arg: Sequence[Any], /, *, shape: Sequence[int], dtype: Any = None, device: Device | str | None = None) -> NDArray:
    """A ``row_sparse`` array from ``(values, row_indices)``: row ``row_indices[i]`` of the
    array is ``values[i]``; the other rows are zero. ``values`` has shape ``(k,) + shape[1:]``."""
    op = "row_sparse_array"
    try:
        data, row_indices = arg
    except (TypeError, ValueError):
        raise TypeError(f"{op}() expects (values, row_indices) as its first argument") from None
    dims = _shape(shape, op)
    info(row_sparse).check_shape(dims, op)
    values = _values(data, dtype, op)
    rows = _index_array(row_indices, "row_indices", op)
    if values.shape != (len(rows),) + dims[1:]:
        raise ValueError(f"{op}(): values must have shape (len(row_indices),) + shape[1:] = {(len(rows),) + dims[1:]}, got {values.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= dims[0]):
        bad = int(rows[(rows < 0) | (rows >= dims[0])][0])
        raise IndexError(f"{op}(): row index {bad} is out of range for {dims[0]} rows (valid: 0..{dims[0] - 1})")
    order = np.argsort(rows, kind="stable")
    rows, values = rows[order], values[order]
    if rows.size > 1 and (np.diff(rows) == 0).any():
        raise ValueError(f"{op}(): row {int(rows[np.flatnonzero(np.diff(rows) == 0)[0]])} appears twice in row_indices; each row may be stored once")
    from .backends.cpu_sparse import RowSparseBuffer

    return _place(RowSparseBuffer(values, rows, dims), row_sparse, dims, values.dtype, as_device(device))


def components(x: NDArray, /) -> dict[str, NDArray]:
    """The stored parts of a sparse array as strided nda arrays on its device (copies).

    csr: ``data``, ``indices``, ``indptr``; row_sparse: ``values``, ``row_indices``.
    """
    from . import _api, layouts

    if not isinstance(x, NDArray):
        raise TypeError(f"components() expects an nda array, got {type(x).__name__}")
    if x.layout.name == "strided":
        raise TypeError("components(): a strided array has no sparse components; convert it with x.to_layout('csr') or 'row_sparse'")
    return {k: _api.asarray(np.array(v, copy=True), device=x.device) for k, v in layouts.host_components(x).items()}


def nnz(x: NDArray, /) -> int:
    """Number of stored elements of a sparse array (its size for a strided one)."""
    from . import layouts

    if x.layout.name == "strided":
        return x.size
    return int(layouts.host_buffer(x).nnz)


def _reduce(x: NDArray) -> Any:
    """Pickle a sparse array by its components (never densified)."""
    from . import layouts

    parts = {k: np.array(v, copy=True) for k, v in layouts.host_components(x).items()}
    return (_from_pickle, (x.layout.name, parts, x.shape, x.dtype.name, str(x.device)))


def _from_pickle(layout: str, parts: dict[str, np.ndarray], shape: tuple[int, ...], dtype: str, device: str) -> NDArray:
    if layout == "csr":
        return csr_array((parts["data"], parts["indices"], parts["indptr"]), shape=shape, dtype=dtype, device=device)
    if layout == "row_sparse":
        return row_sparse_array((parts["values"], parts["row_indices"]), shape=shape, dtype=dtype, device=device)
    raise ValueError(f"cannot unpickle an array of layout {layout!r}")


def save_npz(file: Any, x: NDArray, /, *, compressed: bool = True) -> None:
    """Write a csr array in SciPy's sparse ``.npz`` format (``scipy.sparse.load_npz`` reads it).

    ``.npz`` is appended to a path without it, as SciPy does. A row_sparse array is refused
    (SciPy has no such format): convert it with ``x.to_layout("csr")``, or keep its parts
    with ``nda.savez(file, **nda.sparse.components(x))``. Reading the array is a sync point.
    """
    import scipy.sparse

    from . import layouts

    if not isinstance(x, NDArray):
        raise TypeError(f"save_npz() expects an nda array, got {type(x).__name__}")
    if x.layout.name != "csr":
        how = (
            "convert it with x.to_layout('csr'), or keep its parts with nda.savez(file, **nda.sparse.components(x))"
            if x.layout.name == "row_sparse"
            else "save a dense array with nda.save(file, x), or convert it with x.to_layout('csr')"
        )
        raise ValueError(f"save_npz(): SciPy's sparse format holds csr arrays; x is {x.layout.name}: {how}")
    parts = layouts.host_components(x)
    matrix = scipy.sparse.csr_array((parts["data"], parts["indices"], parts["indptr"]), shape=x.shape)
    scipy.sparse.save_npz(file, matrix, compressed=compressed)


def load_npz(file: Any, /, *, device: Device | str | None = None) -> NDArray:
    """Read SciPy's sparse ``.npz`` format (``scipy.sparse.save_npz``) as a csr array on ``device``.

    Other SciPy formats (csc, coo, bsr, dia) are converted to csr as SciPy converts them
    (coo duplicates are summed). SciPy reads the file without unpickling.
    """
    import scipy.sparse

    matrix = scipy.sparse.load_npz(file)
    if matrix.ndim != 2:
        raise ValueError(f"load_npz(): csr arrays are 2-D; the file holds a {matrix.ndim}-D {matrix.format} array")
    csr_m = matrix.tocsr()
    csr_m.sum_duplicates()
    return csr_array((csr_m.data, csr_m.indices, csr_m.indptr), shape=csr_m.shape, device=device)
