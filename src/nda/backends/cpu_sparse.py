"""cpu kernels, converters and storage for the ``csr`` and ``row_sparse`` layouts.

Buffers: a csr array is a ``scipy.sparse.csr_array`` in canonical form (sorted column
indices, no duplicates, index dtype as SciPy picks it); a row_sparse array is a
:class:`RowSparseBuffer` (``values`` of shape ``(k,) + shape[1:]`` for the ``k`` sorted,
unique ``indices`` of the stored rows). SciPy is imported on first use, never by
``import nda`` nor by loading the cpu backend.

Every kernel here gives exactly the values the strided kernel gives on the dense data,
NaN and infinity included (signs of zeros aside: an unstored element is +0). Sparse
libraries usually let an unstored zero "skip" arithmetic (``0 * inf`` stays 0); nda
does not, so the few places where that matters (``x * inf``, ``x / 0``, a product with a
non-finite operand) do the extra work to produce the NaNs the dense result has, which
costs nothing when all values are finite. Sparse operands whose shapes differ
(broadcasting) are computed densely and stored back in the result's layout.

Kernels also serve nda-sim, which runs them on its simulated device memory.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

import cmath
from typing import Any, Callable

import numpy as np

__all__ = ["RowSparseBuffer", "ZERO_PRESERVING_UNARY", "register", "kernels", "is_scalar", "finite_scalar", "times_strided", "poison_unstored"]

#: Unary ops with f(0) == 0 (isnan/isinf: False): they run on the stored values only.
ZERO_PRESERVING_UNARY = (
    "abs",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "ceil",
    "conj",
    "expm1",
    "floor",
    "imag",
    "isinf",
    "isnan",
    "log1p",
    "negative",
    "positive",
    "real",
    "round",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "trunc",
)


def _sp() -> Any:
    try:
        import scipy.sparse as sp  # lazily: the first time a csr array is made
    except ImportError as err:
        raise ImportError(f"the csr layout on cpu is built on SciPy, which is not installed ({err}); pip install 'nda[sparse]'") from err
    return sp


class RowSparseBuffer:
    """The cpu buffer of a row_sparse array: ``values[i]`` is row ``indices[i]`` of the array."""

    __slots__ = ("values", "indices", "shape")

    def __init__(self, values: np.ndarray, indices: np.ndarray, shape: tuple[int, ...]) -> None:
        self.values = values
        self.indices = indices
        self.shape = shape

    @property
    def nnz(self) -> int:
        """Stored elements (every element of every stored row)."""
        return int(self.values.size)

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    def __repr__(self) -> str:
        return f"<RowSparseBuffer {self.shape} {self.values.dtype}: {len(self.indices)} stored rows>"


# ---------------------------------------------------------------------------- construction


def csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, ...]) -> Any:
    """A csr buffer from canonical components (not checked: callers guarantee the format)."""
    out = _sp().csr_array((data, indices, indptr), shape=shape, copy=False)
    out.has_canonical_format = True
    return out


def _with_data(x: Any, data: np.ndarray) -> Any:
    return csr(data, x.indices, x.indptr, x.shape)


def _canonical(x: Any) -> Any:
    x = x.tocsr() if x.format != "csr" else x
    if not x.has_canonical_format:
        x.sum_duplicates()
    return x


def dense_to_csr(x: np.ndarray) -> Any:
    return _canonical(_sp().csr_array(x))


def csr_to_dense(x: Any) -> np.ndarray:
    # Stored values are placed, not added to zeros as SciPy's toarray does (0 + (2-0j) loses
    # the sign of the zero imaginary part, and with it the branch of asin and friends).
    out = np.zeros(x.shape, dtype=x.dtype)
    out.reshape(-1)[_keys(x)] = x.data
    return out


def dense_to_row_sparse(x: np.ndarray) -> RowSparseBuffer:
    n = x.shape[0]
    rest = int(np.prod(x.shape[1:], dtype=np.int64))
    rows = np.flatnonzero((x.reshape(n, rest) != 0).any(axis=1)) if rest else np.zeros(0, np.int64)
    return RowSparseBuffer(np.ascontiguousarray(x[rows]), rows.astype(np.int64), tuple(x.shape))


def row_sparse_to_dense(x: RowSparseBuffer) -> np.ndarray:
    out = np.zeros(x.shape, dtype=x.values.dtype)
    out[x.indices] = x.values
    return out


def csr_to_row_sparse(x: Any) -> RowSparseBuffer:
    """Direct: the rows that store anything, densified row by row (never the whole matrix)."""
    rows = np.flatnonzero(np.diff(x.indptr)).astype(np.int64)
    return RowSparseBuffer(csr_to_dense(x[rows]) if rows.size else np.zeros((0, x.shape[1]), x.dtype), rows, tuple(x.shape))


def row_sparse_to_csr(x: RowSparseBuffer) -> Any:
    """Direct, for 2-D arrays: the stored rows' non-zeros, placed in their rows."""
    if len(x.shape) != 2:
        raise ValueError(f"a csr array is 2-D; this row_sparse array has shape {x.shape}")
    local = _sp().coo_array(x.values)
    return _canonical(_sp().csr_array((local.data, (x.indices[local.row], local.col)), shape=x.shape))


# ---------------------------------------------------------------------------- helpers


def is_scalar(v: Any) -> bool:
    return v.__class__ in (bool, int, float, complex)


def finite_scalar(v: Any) -> bool:
    return cmath.isfinite(v) if isinstance(v, complex) else (not isinstance(v, float) or v == v and abs(v) != float("inf"))


def _dense(v: Any) -> Any:
    if isinstance(v, RowSparseBuffer):
        return row_sparse_to_dense(v)
    if hasattr(v, "toarray"):
        return csr_to_dense(v)
    return v


def _dense_binary(ufunc: Callable[..., Any], a: Any, b: Any, layout: str) -> Any:
    """The exact result through dense data, stored back in ``layout`` (broadcasting, non-finite scalars)."""
    result = np.asarray(ufunc(_dense(a), _dense(b)))
    if layout == "csr":
        return dense_to_csr(result)
    if layout == "row_sparse":
        return dense_to_row_sparse(result)
    return result


def _keys(x: Any) -> np.ndarray:
    """Row-major positions of a canonical csr buffer's stored elements (sorted)."""
    rows = np.repeat(np.arange(x.shape[0], dtype=np.int64), np.diff(x.indptr))
    return rows * x.shape[1] + x.indices.astype(np.int64)


def _nan_where_unstored(a: Any, b: Any) -> Any | None:
    """Elements where ``a`` stores a non-finite value and ``b`` stores nothing: dense gives nan."""
    if a.dtype.kind not in "fc":
        return None
    bad = ~np.isfinite(a.data)
    if not bad.any():
        return None
    keys = _keys(a)[bad]
    missing = ~np.isin(keys, _keys(b), assume_unique=True)
    if not missing.any():
        return None
    keys = keys[missing]
    values = np.multiply(a.data[bad][missing], a.dtype.type(0))  # what 0 * value is, exactly
    rows, cols = np.divmod(keys, a.shape[1])
    return _sp().csr_array((values, (rows, cols)), shape=a.shape)


# ---------------------------------------------------------------------------- csr kernels


def csr_unary(ref: Callable[..., Any], name: str) -> Callable[[Any], Any]:
    def kernel(x: Any) -> Any:
        return _with_data(x, np.asarray(ref(x.data)))

    kernel.__name__ = kernel.__qualname__ = f"csr_{name}"
    return kernel


def csr_multiply(x1: Any, x2: Any) -> Any:
    if is_scalar(x1) or is_scalar(x2):
        m, s = (x2, x1) if is_scalar(x1) else (x1, x2)
        if not finite_scalar(s):
            return _dense_binary(np.multiply, x1, x2, "csr")  # 0 * inf is nan: every element is stored
        return _with_data(m, np.multiply(m.data, s) if m is x1 else np.multiply(s, m.data))
    if x1.shape != x2.shape:
        return _dense_binary(np.multiply, x1, x2, "csr")
    result = _canonical(x1.multiply(x2)).astype(x1.dtype, copy=False)
    for extra in (_nan_where_unstored(x1, x2), _nan_where_unstored(x2, x1)):
        if extra is not None:
            result = _canonical(result + extra)
    return result


def csr_divide(x1: Any, x2: Any) -> Any:
    if x2 == 0 or x2 != x2:
        return _dense_binary(np.true_divide, x1, x2, "csr")  # 0 / 0 and 0 / nan are nan
    return _with_data(x1, np.true_divide(x1.data, x2))


def _csr_addsub(ufunc: Callable[..., Any], name: str) -> Callable[[Any, Any], Any]:
    def kernel(x1: Any, x2: Any) -> Any:
        if x1.shape != x2.shape:
            return _dense_binary(ufunc, x1, x2, "csr")
        result = x1 + x2 if ufunc is np.add else x1 - x2
        return _canonical(result).astype(x1.dtype, copy=False)

    kernel.__name__ = kernel.__qualname__ = f"csr_{name}"
    return kernel


def csr_sum(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> np.ndarray:
    dt = None if dtype is None else dtype.numpy
    if axis is None:
        total = np.sum(x.data, dtype=dt)
        return np.asarray(total).reshape((1, 1) if keepdims else ())
    if not axis:  # sum over no axes: the values themselves, in the accumulation dtype
        return csr_to_dense(x).astype(dt or x.dtype, copy=False)
    (ax,) = axis
    # Added directly (SciPy sums through a product with ones, and (0+infj) * 1 is nan+infj).
    data = x.data.astype(dt or x.dtype, copy=False)
    if ax == 0:
        result = np.zeros(x.shape[1], dtype=data.dtype)
        np.add.at(result, x.indices, data)
    else:
        result = np.zeros(x.shape[0], dtype=data.dtype)
        stored = np.flatnonzero(np.diff(x.indptr))
        if stored.size:
            result[stored] = np.add.reduceat(data, x.indptr[:-1][stored])
    return result.reshape((1, -1) if ax == 0 else (-1, 1)) if keepdims else result


def csr_permute_dims(x: Any, axes: tuple[int, ...]) -> Any:
    return _canonical(x.T.tocsr()) if axes == (1, 0) else x.copy()


def csr_astype(x: Any, dtype: Any, copy: bool = True) -> Any:
    return _with_data(x, x.data.astype(dtype.numpy, copy=True))


def poison_unstored(xp: Any, s: Any, b: Any, out: Any, with_data: Callable[[Any, Any], Any]) -> None:
    """Where a product meets a non-finite element of ``b`` through an unstored zero of ``s``, dense gives nan.

    Over any array module ``xp`` (nda-cuda runs it on CuPy); ``with_data(s, values)`` is ``s``'s
    structure with new values. Counts are float64 (exact below 2**53): cuSPARSE has no
    integer products.
    """
    bad = ~xp.isfinite(b)
    cols = xp.flatnonzero(bad.any(axis=0))
    if not cols.size:
        return
    bad = bad[:, cols].astype(xp.float64)
    pattern = with_data(s, xp.ones(s.data.size, dtype=xp.float64))
    missed = xp.asarray(pattern @ bad) < bad.sum(axis=0)  # non-finite elements each row reaches through stored entries
    block = out[:, cols]
    block[missed] = complex(float("nan"), float("nan")) if out.dtype.kind == "c" else float("nan")
    out[:, cols] = block


def times_strided(xp: Any, times_block: Callable[[Any, Any], Any], s: Any, b: Any) -> Any:
    """``s @ b`` for a strided ``b`` that is 1-D, 2-D or batched, through ``times_block(s, 2-D b)``."""
    if b.ndim == 1:
        return times_block(s, b[:, None])[:, 0]
    if b.ndim == 2:
        return times_block(s, b)
    batch, (k, n) = b.shape[:-2], b.shape[-2:]
    flat = times_block(s, xp.ascontiguousarray(xp.moveaxis(b, -2, 0)).reshape(k, -1))
    return xp.ascontiguousarray(xp.moveaxis(flat.reshape((s.shape[0],) + batch + (n,)), 0, -2))


def _sparse_at_2d(s: Any, b: np.ndarray) -> np.ndarray:
    out = np.asarray(s @ b)
    if out.dtype != s.dtype:
        out = out.astype(s.dtype)
    # A cheap screen: the sum of b is finite unless b holds inf/nan (or overflows, then we look closer).
    # einsum's unpaired sum of a real array runs at memory speed, ~1.6x faster than ndarray.sum.
    if b.dtype.kind in "fc" and b.size and not np.isfinite(np.einsum(b, [0, 1], []) if b.dtype.kind == "f" else b.sum()):
        poison_unstored(np, s, b, out, _same_class_with_data)
    return out


def _same_class_with_data(m: Any, data: np.ndarray) -> Any:
    """``m``'s structure with new values, ``m`` a csr or (for strided @ csr, ``s.T``) a csc matrix."""
    return type(m)((data, m.indices, m.indptr), shape=m.shape)


def csr_matmul(x1: Any, x2: Any) -> np.ndarray:
    """csr @ strided and strided @ csr (the strided side may be 1-D or batched)."""
    if isinstance(x2, np.ndarray):
        return times_strided(np, _sparse_at_2d, x1, x2)  # type: ignore[no-any-return]
    a, s = x1, x2  # strided @ csr: (s.T @ a.T).T
    if a.ndim == 1:
        return _sparse_at_2d(s.T, a[:, None])[:, 0]
    lead = a.shape[:-1]
    flat = _sparse_at_2d(s.T, a.reshape(int(np.prod(lead, dtype=np.int64)), a.shape[-1]).T)
    return np.ascontiguousarray(flat.T).reshape(lead + (s.shape[1],))


# ---------------------------------------------------------------------------- row_sparse kernels


def rsp_unary(ref: Callable[..., Any], name: str) -> Callable[[Any], Any]:
    def kernel(x: RowSparseBuffer) -> RowSparseBuffer:
        return RowSparseBuffer(np.asarray(ref(x.values)), x.indices, x.shape)

    kernel.__name__ = kernel.__qualname__ = f"row_sparse_{name}"
    return kernel


def _aligned(x: RowSparseBuffer, rows: np.ndarray) -> np.ndarray:
    """``x``'s values for ``rows`` (a sorted superset of its stored rows), zeros elsewhere."""
    out = np.zeros((len(rows),) + x.shape[1:], dtype=x.values.dtype)
    out[np.searchsorted(rows, x.indices)] = x.values
    return out


def _rsp_binary(ufunc: Callable[..., Any], name: str) -> Callable[[Any, Any], Any]:
    """rsp op rsp on the union of stored rows (exact: unstored rows are 0 op 0 = 0)."""

    def kernel(x1: Any, x2: Any) -> RowSparseBuffer:
        if x1.shape != x2.shape:
            return _dense_binary(ufunc, x1, x2, "row_sparse")  # type: ignore[no-any-return]
        rows = np.union1d(x1.indices, x2.indices).astype(np.int64)
        return RowSparseBuffer(np.asarray(ufunc(_aligned(x1, rows), _aligned(x2, rows))), rows, x1.shape)

    kernel.__name__ = kernel.__qualname__ = f"row_sparse_{name}"
    return kernel


def rsp_multiply_scalar(x1: Any, x2: Any) -> RowSparseBuffer:
    m, s = (x2, x1) if is_scalar(x1) else (x1, x2)
    if not finite_scalar(s):
        return _dense_binary(np.multiply, x1, x2, "row_sparse")  # type: ignore[no-any-return]
    return RowSparseBuffer(np.multiply(m.values, s) if m is x1 else np.multiply(s, m.values), m.indices, m.shape)


def rsp_divide(x1: RowSparseBuffer, x2: Any) -> RowSparseBuffer:
    if x2 == 0 or x2 != x2:
        return _dense_binary(np.true_divide, x1, x2, "row_sparse")  # type: ignore[no-any-return]
    return RowSparseBuffer(np.true_divide(x1.values, x2), x1.indices, x1.shape)


class RowSparseIntoStrided:
    """``strided ± row_sparse`` (and the reverse) with a strided result: touches only stored rows.

    ``w += g`` with ``g`` row_sparse calls it with ``out=w``'s buffer (like a NumPy ufunc,
    whose ``nin`` it mirrors), so a sparse update costs O(stored rows), not O(rows).
    """

    nin = 2

    def __init__(self, ufunc: Callable[..., Any], name: str) -> None:
        self.ufunc = ufunc
        self.__name__ = self.__qualname__ = f"row_sparse_{name}_into_strided"
        self.__module__ = __name__

    def __call__(self, x1: Any, x2: Any, out: np.ndarray | None = None) -> np.ndarray:
        sparse_first = isinstance(x1, RowSparseBuffer)
        rsp, dense = (x1, x2) if sparse_first else (x2, x1)
        if rsp.shape != dense.shape:
            result = self.ufunc(_dense(x1), _dense(x2))
            if out is not None:
                out[...] = result
                return out
            return np.asarray(result)
        if sparse_first:  # rsp - dense: -dense everywhere, plus the stored rows
            result = np.negative(dense) if self.ufunc is np.subtract else np.array(dense, copy=True)
            rows = rsp.indices
            result[rows] = result[rows] + rsp.values
            if out is not None:
                out[...] = result
                return out
            return result
        result = out if out is not None else np.array(dense, copy=True)
        rows = rsp.indices
        result[rows] = self.ufunc(result[rows], rsp.values)
        return result


def rsp_sum(x: RowSparseBuffer, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> np.ndarray:
    dt = None if dtype is None else dtype.numpy
    if axis is None or 0 in axis:  # unstored rows add zeros
        return np.asarray(np.sum(x.values, axis=axis, keepdims=keepdims, dtype=dt))
    partial = np.sum(x.values, axis=axis, keepdims=keepdims, dtype=dt)
    shape = tuple(1 if (i in axis) else n for i, n in enumerate(x.shape)) if keepdims else tuple(n for i, n in enumerate(x.shape) if i not in axis)
    out = np.zeros(shape, dtype=partial.dtype)
    out[x.indices] = partial
    return out


def rsp_astype(x: RowSparseBuffer, dtype: Any, copy: bool = True) -> RowSparseBuffer:
    return RowSparseBuffer(x.values.astype(dtype.numpy, copy=True), x.indices, x.shape)


# ---------------------------------------------------------------------------- registration


def kernels() -> list[tuple[str, str, Callable[..., Any], list[tuple[str, ...]] | None, str | None]]:
    """``(op, layout, kernel, signatures, out_layout)`` of every native sparse kernel on cpu."""
    from ..ops import CATALOG

    found: list[tuple[str, str, Callable[..., Any], list[tuple[str, ...]] | None, str | None]] = []
    for name in ZERO_PRESERVING_UNARY:
        ref = CATALOG[name].reference
        found.append((name, "csr", csr_unary(ref, name), None, None))
        found.append((name, "row_sparse", rsp_unary(ref, name), None, None))
    found += [
        ("multiply", "csr", csr_multiply, [("csr", "csr"), ("csr", "scalar"), ("scalar", "csr")], None),
        ("divide", "csr", csr_divide, [("csr", "scalar")], None),
        ("add", "csr", _csr_addsub(np.add, "add"), [("csr", "csr")], None),
        ("subtract", "csr", _csr_addsub(np.subtract, "subtract"), [("csr", "csr")], None),
        ("sum", "csr", csr_sum, None, "strided"),
        ("matmul", "csr", csr_matmul, [("csr", "strided"), ("strided", "csr")], "strided"),
        ("permute_dims", "csr", csr_permute_dims, None, None),
        ("astype", "csr", csr_astype, None, None),
        ("multiply", "row_sparse", _rsp_binary(np.multiply, "multiply"), [("row_sparse", "row_sparse")], None),
        ("multiply", "row_sparse", rsp_multiply_scalar, [("row_sparse", "scalar"), ("scalar", "row_sparse")], None),
        ("divide", "row_sparse", rsp_divide, [("row_sparse", "scalar")], None),
        ("add", "row_sparse", _rsp_binary(np.add, "add"), [("row_sparse", "row_sparse")], None),
        ("subtract", "row_sparse", _rsp_binary(np.subtract, "subtract"), [("row_sparse", "row_sparse")], None),
        ("add", "row_sparse", RowSparseIntoStrided(np.add, "add"), [("strided", "row_sparse"), ("row_sparse", "strided")], "strided"),
        ("subtract", "row_sparse", RowSparseIntoStrided(np.subtract, "subtract"), [("strided", "row_sparse"), ("row_sparse", "strided")], "strided"),
        ("sum", "row_sparse", rsp_sum, None, "strided"),
        ("astype", "row_sparse", rsp_astype, None, None),
    ]
    return found


def register(register_kernel: Any) -> None:
    """Register the cpu sparse layouts: converters, storage and kernels (called by the cpu backend)."""
    from ..ops import CATALOG

    for op, layout, fn, signatures, out_layout in kernels():
        register_kernel(op, CATALOG[op].supported_dtypes, fn, layout=layout, signatures=signatures, out_layout=out_layout)
    converter = register_kernel.converter
    converter("strided", "csr", dense_to_csr)
    converter("csr", "strided", csr_to_dense)
    converter("strided", "row_sparse", dense_to_row_sparse)
    converter("row_sparse", "strided", row_sparse_to_dense)
    converter("csr", "row_sparse", csr_to_row_sparse)
    converter("row_sparse", "csr", row_sparse_to_csr)
    for layout in ("csr", "row_sparse"):
        register_kernel.storage(layout, to_host=_identity, from_host=_identity_from_host)


def _identity(buf: Any) -> Any:
    return buf


def _identity_from_host(buf: Any, device: Any) -> Any:
    return buf
