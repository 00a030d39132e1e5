"""NumPy's array methods and attributes that are not single catalog ops: a base class of NDArray.

``x.cumsum()``, ``x.sort()``, ``x.take(i)``, ``x.nbytes``, ``x.flat``... take NumPy's
signatures and call nda's NumPy-named functions (:mod:`nda._numpyapi`), which the ``nda``
namespace registers as the array's namespace; this module, below the array handle in the
layers, reaches them through ``x.__array_namespace__()`` and imports nothing of the front
end. Each method is the function it names (``x.cumsum(axis)`` is ``nda.cumsum(x, axis)``), so
it runs on the array's device like the function. What nda decides where NumPy's meaning
depends on memory:

* ``x.sort()`` sorts in place: the sorted values are written back with ``x[...] = ...``,
  ordered by the engine after the work pending on ``x`` (NumPy's in-place sort);
* ``x.strides`` are the strides, in bytes, of a C-contiguous NumPy array of ``x``'s shape and
  dtype, on every device: nda's arrays are row-major to their users, and a device's own
  storage of a view is not exposed (``np.asarray(x).strides`` shows a cpu buffer's);
* ``x.view()`` (or ``x.view(x.dtype)``) is a view, sharing ``x``'s memory (``x[...]``);
  ``x.view(other_dtype)`` reinterprets the bytes as NumPy's ``view`` does (the last axis
  rescaled for another item size) into a *new* array: nda's views keep their dtype, so
  writes to one do not reach the other. It reads the data on the host (a sync point);
* ``x.flat`` is a :class:`FlatIter`: iteration, indexing and assignment over the elements
  in row-major order (an assignment writes back into ``x``, ordered by the engine);
* ``x.real``/``x.imag`` are ``nda.real``/``nda.imag`` for complex arrays; for real ones
  ``x.real`` is ``x`` itself and ``x.imag`` zeros, as in NumPy (read-only attributes here);
* ``x.tobytes()`` reads the data on the host (a sync point).

Layer: arrays and front end, array handle (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from . import _dtypes

__all__ = ["NumPyMethods", "FlatIter"]

#: The array type these methods return (``nda.NDArray``, defined above this module): named for
#: the signatures the typed stubs are generated from (``nda._stubgen``).
NDArray = Any


class NumPyMethods:
    """NumPy's methods of NDArray that are not catalog ops (see the module docstring)."""

    __slots__ = ()

    def _ns(self) -> Any:
        return self.__array_namespace__()  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ attributes
    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return int(self.dtype.numpy.itemsize)  # type: ignore[attr-defined]

    @property
    def nbytes(self) -> int:
        """Bytes the elements take: ``size * itemsize`` (a sparse array's logical, dense size)."""
        return int(self.size) * self.itemsize  # type: ignore[attr-defined]

    @property
    def strides(self) -> tuple[int, ...]:
        """Bytes to step along each axis in a C-contiguous layout of this shape and dtype (module docstring)."""
        shape = self.shape  # type: ignore[attr-defined]
        step = self.itemsize
        out = []
        for n in reversed(shape):
            out.append(step)
            step *= max(int(n), 1)
        return tuple(reversed(out))

    @property
    def real(self) -> NDArray:
        """The real part (the array itself for real dtypes)."""
        if self.dtype.category != "complex floating":  # type: ignore[attr-defined]
            return self
        return self._ns().real(self)

    @property
    def imag(self) -> NDArray:
        """The imaginary part (zeros for real dtypes)."""
        ns = self._ns()
        if self.dtype.category != "complex floating":  # type: ignore[attr-defined]
            return ns.zeros_like(self)
        return ns.imag(self)

    @property
    def flat(self) -> FlatIter:
        """An iterator over the elements in row-major order, indexable and assignable (NumPy's ``flatiter``)."""
        return FlatIter(self)

    # ------------------------------------------------------------------ scans, reductions
    def cumsum(self, axis: int | None = None, dtype: Any = None, out: Any = None) -> NDArray:
        """Cumulative sum along ``axis`` (the flattened array for None): ``nda.cumsum``."""
        return self._ns().cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis: int | None = None, dtype: Any = None, out: Any = None) -> NDArray:
        """Cumulative product along ``axis`` (the flattened array for None): ``nda.cumprod``."""
        return self._ns().cumprod(self, axis=axis, dtype=dtype, out=out)

    def ptp(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> NDArray:
        """Maximum minus minimum along ``axis``: ``nda.ptp``."""
        return self._ns().ptp(self, axis=axis, out=out, keepdims=keepdims)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> NDArray:
        """Sum along a diagonal: ``nda.trace``."""
        return self._ns().trace(self, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype, out=out)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> NDArray:
        """A diagonal (the last axis of the result): ``nda.diagonal``."""
        return self._ns().diagonal(self, offset=offset, axis1=axis1, axis2=axis2)

    # ------------------------------------------------------------------ shapes, products, selection
    def swapaxes(self, axis1: int, axis2: int) -> NDArray:
        """The array with two axes interchanged (a view): ``nda.swapaxes``."""
        return self._ns().swapaxes(self, axis1, axis2)

    def dot(self, b: Any, out: Any = None) -> NDArray:
        """The dot product with ``b``: ``nda.dot``."""
        return self._ns().dot(self, b, out=out)

    def conj(self) -> NDArray:
        """The complex conjugate, element-wise: ``nda.conj``."""
        return self._ns().conj(self)

    def conjugate(self) -> NDArray:
        """The complex conjugate, element-wise: ``nda.conj``."""
        return self._ns().conj(self)

    def repeat(self, repeats: Any, axis: int | None = None) -> NDArray:
        """Each element repeated ``repeats`` times (along ``axis``; flattened for None): ``nda.repeat``."""
        return self._ns().repeat(self, repeats, axis=axis)

    def take(self, indices: Any, axis: int | None = None, out: Any = None, mode: str = "raise") -> NDArray:
        """Elements at ``indices`` (any shape) along ``axis`` (flattened for None), NumPy's ``take``."""
        return self._ns()._numpyapi._shapes.take_numpy(self, indices, axis=axis, out=out, mode=mode)

    def nonzero(self) -> tuple[NDArray, ...]:
        """The indices of the non-zero elements, one array per axis (a sync point): ``nda.nonzero``."""
        return self._ns().nonzero(self)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ sorting, filling (in place)
    def sort(self, axis: int = -1, kind: str | None = None, order: Any = None, *, stable: bool | None = None) -> None:
        """Sort in place along ``axis``, as NumPy's ``ndarray.sort`` (the values written back, ordered by the engine).

        ``kind`` "stable"/"mergesort" or ``stable=True`` ask for a stable sort; ``order`` (fields
        of structured arrays) is not supported.
        """
        if order is not None:
            raise ValueError("sort(): order= sorts the fields of structured arrays, which nda does not have")
        ns = self._ns()
        if axis is None:
            raise TypeError("sort(): axis must be an int for an in-place sort (nda.sort(x.ravel()) sorts all elements)")
        self[...] = ns.sort(self, axis=axis, stable=bool(stable) or kind in ("stable", "mergesort"))  # type: ignore[index]

    def argsort(self, axis: int | None = -1, kind: str | None = None, order: Any = None, *, stable: bool | None = None) -> NDArray:
        """The indices that sort the array along ``axis`` (the flattened array for None)."""
        if order is not None:
            raise ValueError("argsort(): order= sorts the fields of structured arrays, which nda does not have")
        ns = self._ns()
        x = self
        if axis is None:
            x, axis = ns.reshape(self, (-1,)), -1
        return ns.argsort(x, axis=axis, stable=bool(stable) or kind in ("stable", "mergesort"))

    def fill(self, value: Any) -> None:
        """Set every element to the scalar ``value`` (cast to the array's dtype, as NumPy casts it), in place."""
        if isinstance(value, NumPyMethods):
            value = value.item()  # type: ignore[attr-defined]
        if np.ndim(value) != 0:
            raise ValueError("fill(): value must be a scalar")
        with np.errstate(all="ignore"):
            cast = np.asarray(value).astype(self.dtype.numpy)  # type: ignore[attr-defined]
        self[...] = cast.item()  # type: ignore[index]

    # ------------------------------------------------------------------ memory
    def view(self, dtype: Any = None, type: Any = None) -> NDArray:  # noqa: A002 - NumPy's name
        """A view for the same dtype; the bytes reinterpreted as ``dtype`` in a new array otherwise (module docstring)."""
        if type is not None:
            raise TypeError("view(): type= is not supported: nda's arrays are NDArray")
        ns = self._ns()
        if dtype is None or _dtypes.as_dtype(dtype) is self.dtype:  # type: ignore[attr-defined]
            return self[...]  # type: ignore[index]
        target = _dtypes.as_dtype(dtype)
        host = np.ascontiguousarray(self._host())  # type: ignore[attr-defined]
        if self.ndim == 0 and target.numpy.itemsize != host.dtype.itemsize:  # type: ignore[attr-defined]
            raise ValueError("view(): changing the item size of a 0-d array is not possible")
        return ns.asarray(host.view(target.numpy), device=self.device, copy=True)  # type: ignore[attr-defined]

    def tobytes(self, order: str = "C") -> bytes:
        """The elements' bytes in ``order`` ("C" or "F"; reads the data: a sync point)."""
        return self._host().tobytes(order=order)  # type: ignore[attr-defined,no-any-return]


class FlatIter:
    """``x.flat``: the elements of ``x`` in row-major order.

    Iterating yields 0-d arrays (as iterating a 1-D nda array does); ``x.flat[i]`` and
    ``x.flat[i:j]`` index the flattened array; ``x.flat[key] = value`` writes into ``x``
    (through a flattened copy written back with ``x[...] = ...``, so it works for every
    layout of views and is ordered by the engine). ``base`` is ``x``.
    """

    __slots__ = ("base",)

    def __init__(self, base: Any) -> None:
        self.base = base

    def _flat(self, copy: bool | None = None) -> Any:
        ns = self.base.__array_namespace__()
        return ns.reshape(self.base, (-1,), copy=copy)

    def __len__(self) -> int:
        return int(self.base.size)

    def __iter__(self) -> Iterator[NDArray]:
        return iter(self._flat())

    def __getitem__(self, key: Any) -> NDArray:
        return self._flat()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        ns = self.base.__array_namespace__()
        flat = self._flat(copy=True)
        flat[key] = value
        self.base[...] = ns.reshape(flat, self.base.shape)

    def copy(self) -> NDArray:
        """A flattened copy of the array."""
        return self._flat(copy=True)

    def __repr__(self) -> str:
        return f"<nda flat iterator over an array of shape {self.base.shape}>"
