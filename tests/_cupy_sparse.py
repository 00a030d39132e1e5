"""``cupyx.scipy.sparse`` over the CuPy model: csr matrices of device arrays, cuSPARSE's limits.

Part of the CuPy model (``tests/_cupy_quirks.py``). :class:`CsrMatrix` holds its ``data``,
``indices`` and ``indptr`` as the model's device arrays (``_cupy_device.DeviceArray``) and
computes with ``scipy.sparse`` on the memory behind them, with what nda-cuda's csr layer
(``nda_cuda._sparse``) meets on a GPU:

* its components must be device arrays (cupyx: ``ValueError`` for host arrays);
* cuSPARSE's ``csrgeam2`` behind ``csr + csr`` multiplies complex values by ``alpha = ±1`` as a
  complex product first (inferred from the H100's results: ``(1+infj) + (1+infj)`` gave ``nan+infj``);
* **zero-size matrices**: on the H200, ``csr - csr`` of two ``(1, 0)`` matrices corrupted device
  memory (every later CUDA call of the process failed with ``cudaErrorIllegalAddress``). Every
  cuSPARSE routine of the model (``csrgeam2`` for ``+``/``-``, ``spmm``/``spmv`` for ``@``,
  ``denseToSparse`` for a dense array given to the constructor, ``csr2csc`` for ``.T.tocsr()``)
  given a matrix with a zero dimension, or for ``csrgeam2``/``spmm``/``csr2csc`` no stored element,
  raises :class:`~_cupy_device.IllegalAddress` instead: the measured case had both, and the model
  takes the safe side, so nda-cuda must not hand cuSPARSE such a matrix at all;
* ``@`` returns an F-ordered array (cuSPARSE's ``spmm`` writes column-major).
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import scipy.sparse

import _cupy_streams
from _cupy_device import DeviceArray, IllegalAddress, plain

__all__ = ["CsrMatrix", "CscMatrix", "sparse_model"]


def _cusparse(routine: str, *matrices: Any, empty_ok: bool = False) -> None:
    """The model's guard of a cuSPARSE call (see the module docstring)."""
    for m in matrices:
        if 0 in m.shape or (not empty_ok and m.nnz == 0):
            stored = "" if empty_ok else f" storing {m.nnz} elements"
            raise IllegalAddress(
                f"cudaErrorIllegalAddress: an illegal memory access was encountered (the CuPy model's cuSPARSE {routine} "
                f"given a {m.shape} matrix{stored}: on the H200 such a call corrupted device memory)"
            )


def _components(*arrays: Any) -> None:
    for a in arrays:
        if a.__class__ is not DeviceArray or a.ndim != 1:
            raise ValueError("data, indices, and indptr should be 1-D")


class _Compressed:
    """Shared by the csr and csc models: device-array components, a SciPy matrix over their memory."""

    _scipy: Any = None
    format = ""

    def __init__(self, arg: Any, shape: Any = None, dtype: Any = None, copy: bool = False) -> None:
        if isinstance(arg, _Host):  # a result the model's device computed
            self._set(arg.host.asformat(self.format))
        elif isinstance(arg, tuple) and len(arg) == 3:
            data, indices, indptr = arg
            _components(data, indices, indptr)
            self.data, self.indices, self.indptr = (a.copy() if copy else a for a in (data, indices, indptr))
            self.shape = tuple(int(n) for n in shape)
        elif isinstance(arg, _Compressed):
            other = arg._host().asformat(self.format)
            self._set(other)
        elif arg.__class__ is DeviceArray:
            if arg.ndim != 2:
                raise ValueError("expected dimension <= 2 array or matrix")
            _cusparse("denseToSparse", _Shape(arg.shape), empty_ok=True)
            _cupy_streams.before_kernel()
            self._set(self._scipy(plain(arg)))
        else:
            raise TypeError(f"the CuPy model's {self.format}_matrix takes device arrays, not {type(arg).__name__}")
        if dtype is not None and np.dtype(dtype) != self.data.dtype:
            self.data = self.data.astype(dtype)
        self.has_canonical_format = False

    def _set(self, host: Any) -> None:
        self.data, self.indices, self.indptr = (DeviceArray(np.array(a, copy=True)) for a in (host.data, host.indices, host.indptr))
        self.shape = tuple(host.shape)

    def _host(self) -> Any:
        """A SciPy matrix over this matrix's memory (the model's view of the device data)."""
        _cupy_streams.before_kernel()
        return self._scipy((self.data._a, self.indices._a, self.indptr._a), shape=self.shape)

    dtype = property(lambda self: self.data.dtype)
    nnz = property(lambda self: self.data.size)
    ndim = 2

    def _with_data(self, data: Any, copy: bool = True) -> Any:
        parts = (self.indices.copy(), self.indptr.copy()) if copy else (self.indices, self.indptr)
        return type(self)((data, *parts), shape=self.shape)

    def copy(self) -> Any:
        out = type(self)((self.data.copy(), self.indices.copy(), self.indptr.copy()), shape=self.shape)
        out.has_canonical_format = self.has_canonical_format
        return out

    def astype(self, dtype: Any) -> Any:
        return self._with_data(self.data.astype(dtype), copy=True)

    def sum_duplicates(self) -> None:
        if self.has_canonical_format:
            return
        host = self._host().tocsr() if self.format == "csr" else self._host()
        host.sum_duplicates()
        self._set(host)
        self.has_canonical_format = True

    def toarray(self) -> DeviceArray:
        return DeviceArray(np.asarray(self._host().toarray()))


class _Shape:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape, self.nnz = shape, 1


class CscMatrix(_Compressed):
    """``cupyx.scipy.sparse.csc_matrix``: what ``csr.T`` is; ``tocsr()`` runs cuSPARSE's ``csr2csc``."""

    _scipy = scipy.sparse.csc_matrix
    format = "csc"

    def tocsr(self, copy: bool = False) -> CsrMatrix:
        _cusparse("csr2csc", self)
        return CsrMatrix(self)


class CsrMatrix(_Compressed):
    """``cupyx.scipy.sparse.csr_matrix`` (see the module docstring)."""

    _scipy = scipy.sparse.csr_matrix
    format = "csr"

    def tocsr(self, copy: bool = False) -> CsrMatrix:
        return self.copy() if copy else self

    @property
    def T(self) -> CscMatrix:  # noqa: N802
        return CscMatrix((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def _geam(self, other: Any, beta: int) -> CsrMatrix:
        if not isinstance(other, CsrMatrix):
            return NotImplemented
        _cusparse("csrgeam2", self, other)
        a, b = self._host(), other._host()
        if self.dtype.kind == "c":  # csrgeam2: alpha * A + beta * B as complex products
            a, b = a * complex(1), b * complex(beta)
            return CsrMatrix(_Host(a + b))
        return CsrMatrix(_Host(a + b if beta == 1 else a - b))

    def __add__(self, other: Any) -> CsrMatrix:
        return self._geam(other, 1)

    def __sub__(self, other: Any) -> CsrMatrix:
        return self._geam(other, -1)

    def __matmul__(self, other: Any) -> DeviceArray:
        if other.__class__ is not DeviceArray:
            raise TypeError(f"the CuPy model multiplies csr matrices by device arrays, not {type(other).__name__}")
        _cusparse("spmm" if other.ndim == 2 else "spmv", self, _Shape(other.shape))
        return DeviceArray(np.asfortranarray(self._host() @ other._a))


class _Host:
    """A SciPy result turned into a model matrix (the device computed it)."""

    def __init__(self, host: Any) -> None:
        self.host = host


def _issparse(x: Any) -> bool:
    return isinstance(x, _Compressed)


#: ``cupyx.scipy.sparse`` over the model.
sparse_model = types.SimpleNamespace(csr_matrix=CsrMatrix, csc_matrix=CscMatrix, issparse=_issparse)
