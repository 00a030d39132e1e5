"""The csr layout on cuda: ``cupyx.scipy.sparse.csr_matrix`` buffers, converters and kernels.

A csr array on a GPU is a ``cupyx.scipy.sparse.csr_matrix`` in canonical form (sorted
column indices, no duplicates), built through nda's plugin API from the backend's
``register()``:

* ``storage("csr", ...)``: copies of the three components to and from a cpu csr buffer,
  each on the device's stream (``to_device``, ``asnumpy``, ``repr`` use them);
* converters strided <-> csr on the device (dense -> csr is cuSPARSE's ``denseToSparse``;
  csr -> dense places the stored values, so ``-0.0`` and complex signed zeros survive);
* kernels, where cuSPARSE or a data-only update makes them cheap: the zero-preserving
  element-wise ops (the cuda strided kernel applied to the stored values), ``multiply`` and
  ``divide`` by a scalar, ``add``/``subtract`` of csr arrays (``csrgeam2`` for real values;
  complex ones by merging the structures, since ``csrgeam2``'s ``alpha = 1`` product turns
  ``1+infj`` into ``nan+infj`` in CuPy 14.2), ``sum``,
  ``matmul`` csr @ strided (``spmm``/``spmv``), ``astype`` and ``permute_dims``. Every other
  op takes nda's layout fallback (converted to strided on the GPU, then the strided route).

**Zero-size and empty matrices never reach cuSPARSE.** On an H200 (CuPy 14.2), ``csr - csr`` of
two ``(1, 0)`` matrices (``csrgeam2`` with a zero dimension and no stored element) corrupted
device memory: every later CUDA call of the process failed with ``cudaErrorIllegalAddress``.
So every route to a cuSPARSE routine (``csrgeam2`` for ``+``/``-``, ``spmm``/``spmv`` for
``@``, ``denseToSparse`` for strided -> csr, ``csr2csc`` for the transpose) first checks the
shape and the number of stored elements (``nnz`` is ``data.size``: no device sync) and builds
the result itself when a dimension is zero or, except for ``denseToSparse``, nothing is stored.

Semantics are those of nda's cpu csr kernels (:mod:`nda.backends.cpu_sparse`): results equal
the dense results, NaN and infinity included, an unstored element being +0. So a product with a
non-finite value is screened (one ``sum`` of the dense operand) and the NaNs the dense product
has where a stored zero meets it are written in.

cuSPARSE stores bool, float32, float64, complex64 and complex128 values only, and the
storage is registered with those dtypes: nda then refuses to convert another dtype to csr on
cuda (a ValueError naming them), and an op whose result could not be held (``astype`` to an
integer dtype) takes the layout fallback, giving a strided result. Arithmetic kernels are
registered for the floating dtypes (bool csr arrays take the fallback for them). Integer csr
arrays stay on the host by decision (issue 35): cuSPARSE has no integer value types, so kernels
for them would need a csr storage of nda-cuda's own (three CuPy arrays) and a kernel per op; the
kit's integer csr cells on cuda are host-fallback cells (README, nda-cuda).

Everything takes the array module and its sparse module as parameters: the backend passes
CuPy and ``cupyx.scipy.sparse``; ``tests/_cuda_numpy_mirror.py`` passes NumPy and
``scipy.sparse`` (with ``csrgeam2``'s complex products modelled), which checks this module's
logic with the conformance kit on any machine.
CuPy-specific behaviour (F-ordered products, lazily computed format flags that would sync
the device) is handled here and is exercised only on a GPU.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from nda.backends.cpu_sparse import ZERO_PRESERVING_UNARY, finite_scalar, is_scalar, poison_unstored, times_strided

__all__ = ["STORED", "ARITHMETIC", "CsrLayer", "register"]

#: dtypes a csr buffer can hold on cuda (cuSPARSE value types).
STORED = ("bool", "float32", "float64", "complex64", "complex128")
#: dtypes cuSPARSE computes in (sums, products, csr + csr).
ARITHMETIC = ("float32", "float64", "complex64", "complex128")
#: dtypes whose subnormals CuPy's kernels flush (the backend's ``flushes_subnormals``).
FLUSHED = ("float32", "complex64")
_TINY32 = 2.0**-126


def _flushed_zero(value: Any) -> bool:
    """Whether a scalar is zero once float32's subnormals are flushed (what a float32 kernel divides by)."""
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    return all(abs(p) < _TINY32 for p in parts)


class CsrLayer:
    """csr storage, converters and kernels over array module ``xp`` and sparse module ``sparse``.

    ``strided`` maps op names to the backend's strided kernels (module arrays in and out):
    the element-wise csr kernels apply them to the stored values.
    """

    def __init__(self, xp: Any, sparse: Any, strided: dict[str, Callable[..., Any]]) -> None:
        self.xp = xp
        self.sparse = sparse
        self.strided = strided

    # ------------------------------------------------------------------ buffers
    def csr(self, data: Any, indices: Any, indptr: Any, shape: tuple[int, ...]) -> Any:
        """A csr buffer from canonical components (callers guarantee the format)."""
        out = self.sparse.csr_matrix((data, indices, indptr), shape=shape)
        out.has_canonical_format = True  # known; asking CuPy would run a kernel and sync
        return out

    def with_data(self, x: Any, data: Any) -> Any:
        """``x``'s structure with new values. ``_with_data`` (SciPy's and CuPy's) skips the
        constructor, whose checks read ``indptr`` back to the host: a device sync per kernel."""
        out = x._with_data(data, copy=False)
        out.has_canonical_format = True
        return out

    def canonical(self, x: Any) -> Any:
        """``x`` as a canonical csr matrix (sorted, unique indices)."""
        x = x.tocsr()
        x.sum_duplicates()
        return x

    def empty(self, shape: tuple[int, ...], dtype: Any, index: Any = None) -> Any:
        """A canonical csr matrix of ``shape`` storing nothing, built without cuSPARSE."""
        xp = self.xp
        index = xp.int32 if index is None else index
        return self.csr(xp.empty(0, dtype=dtype), xp.empty(0, dtype=index), xp.zeros(shape[0] + 1, dtype=index), tuple(shape))

    @staticmethod
    def degenerate(*matrices: Any) -> bool:
        """Whether a matrix has a zero dimension or stores nothing (what cuSPARSE must not be given)."""
        return any(0 in m.shape or m.data.size == 0 for m in matrices)

    def rows(self, x: Any) -> Any:
        """The row of each stored element."""
        xp = self.xp
        return xp.searchsorted(x.indptr, xp.arange(x.data.size), side="right") - 1

    # ------------------------------------------------------------------ converters
    def dense_to_csr(self, x: Any) -> Any:
        if 0 in x.shape:  # nothing to convert: no denseToSparse call (see the module docstring)
            return self.empty(x.shape, x.dtype)
        out = self.sparse.csr_matrix(x)
        # Canonical by construction (cuSPARSE's denseToSparse, CuPy's bool kernel and SciPy all
        # emit sorted, unique indices); saying so spares CuPy a checking kernel and a sync.
        out.has_canonical_format = True
        return out

    def csr_to_dense(self, x: Any) -> Any:
        out = self.xp.zeros(x.shape, dtype=x.dtype)
        if x.data.size:
            out[self.rows(x), x.indices] = x.data  # placed, not added to zeros (keeps -0.0 and (0-0j))
        return out

    # ------------------------------------------------------------------ kernels
    def unary(self, op: str) -> Callable[[Any], Any]:
        fn = self.strided[op]

        def kernel(x: Any) -> Any:
            return self.with_data(x, self.xp.asarray(fn(x.data)))

        kernel.__name__ = kernel.__qualname__ = f"csr_{op}"
        return kernel

    def _through_dense(self, ufunc: Callable[..., Any], a: Any, b: Any) -> Any:
        """The exact result through dense data on the device, stored back as csr."""
        dense = [self.csr_to_dense(v) if hasattr(v, "indptr") else v for v in (a, b)]
        return self.dense_to_csr(self.xp.asarray(ufunc(*dense)))

    def multiply(self, x1: Any, x2: Any) -> Any:
        """csr * scalar (either side); a non-finite scalar makes every element stored (0 * inf is nan)."""
        m, s = (x2, x1) if is_scalar(x1) else (x1, x2)
        if not finite_scalar(s):
            return self._through_dense(self.xp.multiply, x1, x2)
        return self.with_data(m, self.xp.multiply(m.data, s) if m is x1 else self.xp.multiply(s, m.data))

    def divide(self, x1: Any, x2: Any) -> Any:
        # The strided kernel: complex division by NumPy's rules (CuPy 14.2's differs, nda_cuda._workarounds).
        divide = self.strided.get("divide", self.xp.true_divide)
        if x2 == 0 or x2 != x2 or (x1.dtype.name in FLUSHED and _flushed_zero(x2)):
            return self._through_dense(divide, x1, x2)  # 0 / 0 and 0 / nan are nan
        return self.with_data(x1, self.xp.asarray(divide(x1.data, x2)))

    def addsub(self, op: str) -> Callable[[Any, Any], Any]:
        ufunc = getattr(self.xp, op)

        def kernel(x1: Any, x2: Any) -> Any:
            if x1.shape != x2.shape:
                return self._through_dense(ufunc, x1, x2)  # broadcasting
            if self.degenerate(x1, x2):  # no csrgeam2 call (see the module docstring): x1 - 0, 0 - x2, ...
                return self._addsub_degenerate(x1, x2, op == "subtract")
            if x1.dtype.kind == "c":
                return self._merge(x1, x2, negate=op == "subtract")
            result = x1 + x2 if op == "add" else x1 - x2
            return self.canonical(result.astype(x1.dtype) if result.dtype != x1.dtype else result)

        kernel.__name__ = kernel.__qualname__ = f"csr_{op}"
        return kernel

    def _addsub_degenerate(self, x1: Any, x2: Any, negate: bool) -> Any:
        """``x1 + x2`` (``x1 - x2``) when one side stores nothing: the other side (negated), as a new matrix."""
        if x2.data.size == 0 or 0 in x2.shape:
            return self.with_data(x1, x1.data.copy()) if x1.data.size else self.empty(x1.shape, x1.dtype, x1.indices.dtype)
        return self.with_data(x2, -x2.data if negate else x2.data.copy())

    def _merge(self, x1: Any, x2: Any, negate: bool) -> Any:
        """``x1 + x2`` (``x1 - x2``) of same-shape csr arrays by adding stored values, part by part.

        cuSPARSE's ``csrgeam2`` (behind CuPy 14.2's ``+``) computes ``alpha * A + beta * B``, and
        a complex product with ``1`` turns ``1+infj`` into ``nan+infj`` and ``inf+0j`` into
        ``inf+nanj``. Here the union of the two structures is formed (one sort of the
        ``row * ncols + col`` keys) and the values are scatter-added into zeros.
        """
        xp = self.xp
        rows, cols = x1.shape
        keys = xp.concatenate([self.rows(x1).astype(xp.int64) * cols + x1.indices, self.rows(x2).astype(xp.int64) * cols + x2.indices])
        values = xp.concatenate([x1.data, -x2.data if negate else x2.data])
        unique, position = xp.unique(keys, return_inverse=True)
        data = self._scatter_add(int(unique.size), position.reshape(-1), values)
        index = x1.indices.dtype
        indptr = xp.searchsorted(unique // cols, xp.arange(rows + 1), side="left").astype(index)
        return self.csr(data, (unique % cols).astype(index), indptr, (rows, cols))

    def _scatter_add(self, length: int, at: Any, values: Any) -> Any:
        """``out[at[i]] += values[i]`` in ``values``' dtype, complex parts added separately.

        CuPy's ``add.at`` takes real dtypes only; adding the parts one by one is also what
        keeps ``0 + inf j`` from becoming ``nan + inf j`` (a product with ones would).
        """
        xp = self.xp
        if values.dtype.kind == "c":
            out = xp.zeros(length, dtype=values.dtype)
            out.real[...] = self._scatter_add(length, at, xp.ascontiguousarray(values.real))
            out.imag[...] = self._scatter_add(length, at, xp.ascontiguousarray(values.imag))
            return out
        out = xp.zeros(length, dtype=values.dtype)
        xp.add.at(out, at, values)
        return out

    def sum(self, x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
        xp = self.xp
        dt = None if dtype is None else dtype.numpy
        if axis is None:
            total = xp.sum(x.data, dtype=dt)
            return xp.asarray(total).reshape((1, 1) if keepdims else ())
        if not axis:  # over no axes: the values themselves, in the accumulation dtype
            return self.csr_to_dense(x).astype(dt or x.dtype)
        (ax,) = axis
        data = x.data.astype(dt or x.dtype)
        if ax == 0:
            result = self._scatter_add(x.shape[1], x.indices, data)
        else:
            result = self._scatter_add(x.shape[0], self.rows(x), data)
        return result.reshape((1, -1) if ax == 0 else (-1, 1)) if keepdims else result

    def _times_block(self, s: Any, b: Any) -> Any:
        """``s @ b`` for a 2-D block ``b``, C-ordered, with the dense result's NaNs."""
        xp = self.xp
        if self.degenerate(s) or b.size == 0:  # no spmm call (see the module docstring)
            out = xp.zeros((s.shape[0], b.shape[1]), dtype=s.dtype)
            if b.size and b.dtype.kind in "fc" and s.shape[0]:
                # every element of a column of b meets an unstored zero of s: 0 * inf and 0 * nan are nan
                nan = complex(math.nan, math.nan) if out.dtype.kind == "c" else math.nan
                out = xp.where(xp.isfinite(b).all(axis=0), out, nan).astype(out.dtype, copy=False)
            return out
        out = xp.ascontiguousarray(xp.asarray(s @ b))  # cuSPARSE's spmm result is F-ordered
        if out.dtype != s.dtype:
            out = out.astype(s.dtype)
        if b.size and b.dtype.kind in "fc" and not bool(xp.isfinite(xp.sum(b))):
            poison_unstored(xp, s, b, out, self.with_data)
        return out

    def matmul(self, x1: Any, x2: Any) -> Any:
        """csr @ strided (the strided side 1-D, 2-D or batched)."""
        return times_strided(self.xp, self._times_block, x1, x2)

    def permute_dims(self, x: Any, axes: tuple[int, ...]) -> Any:
        if tuple(axes) == (1, 0):
            if self.degenerate(x):  # no csr2csc call (see the module docstring)
                return self.empty(x.shape[::-1], x.dtype, x.indices.dtype)
            return self.canonical(x.T.tocsr())
        return x.copy()

    def astype(self, x: Any, dtype: Any, copy: bool = True) -> Any:
        return self.with_data(x, x.data.astype(dtype.numpy))

    # ------------------------------------------------------------------ the table
    def kernels(self) -> list[tuple[str, Callable[..., Any], tuple[str, ...], list[tuple[str, ...]] | None, str | None]]:
        """``(op, kernel, dtypes, signatures, out_layout)`` of every csr kernel here."""
        found: list[tuple[str, Callable[..., Any], tuple[str, ...], list[tuple[str, ...]] | None, str | None]] = []
        for op in ZERO_PRESERVING_UNARY:
            if op in self.strided:
                # isnan/isinf give bool (storable); abs/real/imag of complex give floats.
                found.append((op, self.unary(op), STORED, None, None))
        found += [
            ("multiply", self.multiply, ARITHMETIC, [("csr", "scalar"), ("scalar", "csr")], None),
            ("divide", self.divide, ARITHMETIC, [("csr", "scalar")], None),
            ("add", self.addsub("add"), ARITHMETIC, [("csr", "csr")], None),
            ("subtract", self.addsub("subtract"), ARITHMETIC, [("csr", "csr")], None),
            ("sum", self.sum, STORED, None, "strided"),
            ("matmul", self.matmul, ARITHMETIC, [("csr", "strided")], "strided"),
            ("permute_dims", self.permute_dims, STORED, None, None),
            ("astype", self.astype, STORED, None, None),
        ]
        return found


def register(
    register_kernel: Any,
    layer: CsrLayer,
    *,
    to_host: Callable[[Any], Any],
    from_host: Callable[[Any, Any], Any],
    wrap: Callable[[Callable[..., Any], str], Callable[..., Any]],
) -> dict[str, str]:
    """Register the csr layout of ``layer`` through nda's plugin API; returns op -> kernel source.

    ``wrap(fn, source)`` puts a kernel or converter on its device and stream (the backend's
    ``_on_device``); ``to_host``/``from_host`` move whole csr buffers (the storage hooks).
    """
    from nda.ops import CATALOG

    register_kernel.storage("csr", to_host=to_host, from_host=from_host, dtypes=STORED)
    register_kernel.converter("strided", "csr", wrap(layer.dense_to_csr, "nda_cuda csr from strided"))
    register_kernel.converter("csr", "strided", wrap(layer.csr_to_dense, "nda_cuda csr to strided"))
    sources = {}
    for op, fn, dtypes, signatures, out_layout in layer.kernels():
        declared = [d for d in dtypes if d in {dt.name for dt in CATALOG[op].supported_dtypes}]
        if not declared:
            continue
        source = f"nda_cuda {fn.__name__}"
        register_kernel(op, declared, wrap(fn, source), layout="csr", signatures=signatures, out_layout=out_layout)
        sources[op] = source
    return sources
