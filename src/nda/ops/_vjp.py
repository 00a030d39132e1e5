"""Building blocks of the catalog's vector-Jacobian products (see ``spec`` for the convention).

Everything here computes with the namespace ``nd`` a VJP receives (``nda`` itself, passed
in by ``nda.autograd``), never with an import of the front end: the catalog is a lower
layer. Arrays are only ever asked for their attributes (``shape``, ``dtype``, ``device``,
``layout``).

* :func:`conj` conjugates complex values and passes real ones through, so that one VJP
  serves real and complex dtypes (``g * conj(f'(x))``);
* :func:`holomorphic` makes the VJP of an element-wise ``f`` from its derivative;
* :func:`expand_reduced` broadcasts the cotangent of a reduction back to the input shape;
* linear algebra: :func:`lower_read` is the gradient of a function that reads only the
  lower triangle of a matrix (``eigh``, ``eigvalsh``, ``cholesky``): entries of the other
  triangle do not change the result, so their gradient is zero; for an input that is
  symmetric by construction (``b + b.mT``, ``b @ b.mT``) this gives the same gradients as
  the symmetric convention (PyTorch's);
* :func:`scatter_rows` is the adjoint of every gather (``getitem`` with integer arrays,
  ``take``, ``take_along_axis``, ``repeat``): it adds rows of values into rows of zeros at
  given positions, duplicates accumulating (``take`` along an axis and ``x[indices]``
  scatter whole rows, so an embedding's gradient costs O(rows + k log k) rows, not the
  size of the table; other gathers scatter single elements, :func:`scatter_flat`). It is built from sort, searchsorted,
  cumulative sums and take, so it has static shapes, runs on every backend and is itself
  differentiable. With ``unique=True`` (positions known to be distinct) it gathers and is
  exact; otherwise each run of equal positions is a difference of running sums taken in
  double precision (float64/complex128), whose error is ``eps64`` times the running sum.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

__all__ = [
    "is_complex",
    "conj",
    "holomorphic",
    "expand_reduced",
    "scatter_rows",
    "scatter_flat",
    "gather_positions",
    "matrix_t",
    "csr_rows",
    "project_to_pattern",
    "real_only",
    "eye_like",
    "diag_matrix",
    "lower_read",
    "off_diagonal_inverse",
    "solve_right",
]


def is_complex(value: Any) -> bool:
    """Whether ``value`` (an array or a scalar) holds complex numbers."""
    if isinstance(value, complex):
        return True
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return False
    return dtype.kind == "c"


def conj(nd: Any, value: Any) -> Any:
    """``conj(value)`` for complex arrays and scalars; real values come back unchanged."""
    if not is_complex(value):
        return value
    if isinstance(value, (complex, np.generic)):
        return value.conjugate()
    return nd.conj(value)


def holomorphic(derivative: Callable[[Any, Any, Any], Any]) -> Callable[..., tuple[Any, ...]]:
    """The VJP of an element-wise ``y = f(x)`` from ``derivative(nd, x, y) = f'(x)``."""

    def vjp(nd: Any, need: Sequence[bool], g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
        return (g * conj(nd, derivative(nd, x, y)),)

    return vjp


def expand_reduced(nd: Any, g: Any, shape: tuple[int, ...], axes: Sequence[int], keepdims: bool) -> Any:
    """The cotangent ``g`` of a reduction over ``axes`` broadcast back to the input ``shape``."""
    if not keepdims:
        g = nd.reshape(g, tuple(1 if i in axes else n for i, n in enumerate(shape)))
    return nd.broadcast_to(g, shape)


def matrix_t(nd: Any, x: Any) -> Any:
    """The conjugate transpose of the last two axes (the plain transpose for real input)."""
    return conj(nd, nd.matrix_transpose(x))


def gather_positions(nd: Any, x: Any) -> Any:
    """``arange(x.size)`` shaped like ``x``: gathering it with an op gives the flat source positions."""
    return nd.reshape(nd.arange(x.size, device=x.device), x.shape)


def scatter_rows(nd: Any, values: Any, positions: Any, rows: int, *, unique: bool) -> Any:
    """``rows`` rows of zeros plus ``values[i]`` added to row ``positions[i]`` (see the module docstring).

    ``values`` has shape ``(k, ...)``, ``positions`` shape ``(k,)`` with values in
    ``[0, rows)``; the result has shape ``(rows, ...)``. The work is O(rows + k log k) rows.
    """
    device = values.device
    order = nd.argsort(positions)
    spos = nd.take(positions, order)
    svals = nd.take(values, order, axis=0)
    ticks = nd.arange(rows, device=device)
    count = spos.shape[0]
    if unique:
        if count == 0:
            return nd.zeros((rows,) + values.shape[1:], dtype=values.dtype, device=device)
        at = nd.clip(nd.searchsorted(spos, ticks), 0, count - 1)
        hit = nd.reshape(nd.take(spos, at) == ticks, (rows,) + (1,) * (values.ndim - 1))
        return nd.where(hit, nd.take(svals, at, axis=0), 0)
    wide = nd.complex128 if is_complex(values) else nd.float64
    running = nd.cumulative_sum(nd.astype(svals, wide), axis=0, include_initial=True)
    lo = nd.searchsorted(spos, ticks, side="left")
    hi = nd.searchsorted(spos, ticks, side="right")
    return nd.astype(nd.take(running, hi, axis=0) - nd.take(running, lo, axis=0), values.dtype)


def scatter_flat(nd: Any, values: Any, positions: Any, size: int, *, unique: bool) -> Any:
    """:func:`scatter_rows` of scalars: a 1-D array of ``size`` (``values`` and ``positions`` 1-D)."""
    return scatter_rows(nd, values, positions, size, unique=unique)


def csr_rows(nd: Any, parts: dict[str, Any]) -> Any:
    """The row of each stored element of a csr array, from its ``components``."""
    indptr = parts["indptr"]
    count = parts["indices"].shape[0]
    return nd.searchsorted(indptr[1:], nd.arange(count, device=indptr.device), side="right")


def project_to_pattern(nd: Any, dense: Any, like: Any) -> Any:
    """The dense gradient ``dense`` at the stored elements of the csr array ``like``, as csr.

    Gradients of a sparse array are taken with respect to its stored values: its sparsity
    pattern is part of its definition (PyTorch's and MXNet's convention).
    """
    if like.layout.name != "csr":
        raise TypeError(f"gradients of {like.layout.name} arrays are not supported (only strided and csr)")
    parts = nd.sparse.components(like)
    flat = csr_rows(nd, parts) * like.shape[1] + nd.astype(parts["indices"], nd.int64)
    data = nd.take(nd.reshape(dense, (-1,)), flat)
    return nd.sparse.csr_array((data, parts["indices"], parts["indptr"]), shape=like.shape, device=like.device)


# ----------------------------------------------------------------------------- linear algebra


def real_only(x: Any, op: str) -> None:
    if is_complex(x):
        raise TypeError(f"the gradient of linalg.{op}() is implemented for real input only; got {x.dtype.name}")


def eye_like(nd: Any, x: Any) -> Any:
    return nd.eye(x.shape[-2], x.shape[-1], dtype=x.dtype, device=x.device)


def diag_matrix(nd: Any, v: Any) -> Any:
    """A stack of vectors as a stack of diagonal matrices."""
    return v[..., None] * nd.eye(v.shape[-1], dtype=v.dtype, device=v.device)


def lower_read(nd: Any, s: Any) -> Any:
    """The gradient with respect to a matrix of which only the lower triangle is read, given
    ``s`` with ``dL = <s, dM>`` for the symmetric matrix ``M`` built from that triangle."""
    return nd.tril(s + nd.matrix_transpose(s)) - s * eye_like(nd, s)


def off_diagonal_inverse(nd: Any, w: Any) -> Any:
    """``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal, 0 on it."""
    diag = nd.eye(w.shape[-1], dtype=nd.bool, device=w.device)
    diff = w[..., None, :] - w[..., :, None]
    return nd.where(diag, 0, 1 / nd.where(diag, 1, diff))


def solve_right(nd: Any, b: Any, a: Any) -> Any:
    """``b @ inv(a)`` without forming the inverse."""
    return nd.matrix_transpose(nd.linalg.solve(nd.matrix_transpose(a), nd.matrix_transpose(b)))
