"""Case generators for the rest of the standard: search and set functions, linalg, fft, ….

Same building blocks as :mod:`._generators`. Linear algebra gets well-conditioned finite
inputs (a matrix plus a multiple of the identity; symmetric positive definite where the
op needs it), because near-singular input makes *any* two correct implementations differ
by more than rounding. Decompositions whose results are not unique (eigenvectors, Q of
QR, U/Vh of SVD: signs and phases are the library's choice; ``eig``'s order) are compared
on dtype and shape only; everything else is compared value by value.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from nda._dtypes import DType

from .. import strategies as nst
from ._cases import Arr, Case, _clip_parts, accumulation_repair
from ._generators import _SHAPES, _SIDE, _arr, _axes, _composite, _cumulative_sum, _kw, _reduction, _scalar

__all__ = ["STANDARD"]

_NONZERO_DIMS = nst.shapes(min_dims=1)


def _finite(a: np.ndarray) -> np.ndarray:
    return _clip_parts(a, 0.0, 8.0, finite=True)


# ----------------------------------------------------------------------------- selection, search, sets


@_composite
def _clip(draw: Any, op: str, dtype: DType) -> Case:
    shapes = draw(nst.mutually_broadcastable_shapes(3, min_side=0)).input_shapes
    bounds = []
    for shape in shapes[1:]:
        kind = draw(st.sampled_from(["none", "scalar", "array"]))
        bounds.append(None if kind == "none" else draw(_scalar(dtype)) if kind == "scalar" else draw(_arr(dtype, shape)))
    return Case(op, (draw(_arr(dtype, shapes[0])),), _kw(min=bounds[0], max=bounds[1]), signed_zeros=False)


@_composite
def _one_array(draw: Any, op: str, dtype: DType) -> Case:
    return Case(op, (draw(_arr(dtype, draw(_NONZERO_DIMS if op == "nonzero" else _SHAPES))),), signed_zeros=False)


def _sorted_nan_last(a: np.ndarray) -> np.ndarray:
    return np.sort(a)


@_composite
def _searchsorted(draw: Any, op: str, dtype: DType) -> Case:
    n = draw(st.integers(0, 6))
    kwargs = _kw(side=draw(st.sampled_from([None, "right"])))
    if draw(st.booleans()):
        x1 = draw(_arr(dtype, (n,), _sorted_nan_last, views=False))
    else:  # unsorted, with the sorter that sorts it
        base = nst.draw_host_array(draw, dtype, (n,))
        x1 = Arr(base)
        kwargs["sorter"] = Arr(np.argsort(base, kind="stable").astype(np.int64))
    x2 = draw(_scalar(dtype)) if draw(st.booleans()) else draw(_arr(dtype, draw(_SHAPES)))
    return Case(op, (x1, x2), kwargs)


@_composite
def _isin(draw: Any, op: str, dtype: DType) -> Case:
    x1 = draw(_arr(dtype, draw(_SHAPES)))
    x2 = draw(_scalar(dtype)) if draw(st.booleans()) else draw(_arr(dtype, draw(_SHAPES)))
    return Case(op, (x1, x2), _kw(invert=draw(st.booleans())))


def _indices(draw: Any, n: int, shape: tuple[int, ...]) -> Arr:
    if n == 0:
        return Arr(np.zeros(shape, np.int64))
    values = draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return Arr(np.array(values, np.int64).reshape(shape))


@_composite
def _take(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_NONZERO_DIMS)
    ndim = len(shape)
    axis = draw(st.integers(-ndim, ndim - 1))
    n = shape[axis]
    count = draw(st.integers(0, 4)) if n else 0
    kwargs = {"axis": axis} if ndim > 1 or draw(st.booleans()) else {}
    return Case(op, (draw(_arr(dtype, shape)), _indices(draw, n, (count,))), kwargs, signed_zeros=True)


@_composite
def _take_along_axis(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_NONZERO_DIMS)
    ndim = len(shape)
    axis = draw(st.integers(-ndim, ndim - 1))
    n = shape[axis]
    index_shape = list(shape)
    index_shape[axis] = draw(st.integers(0, 4)) if n else 0
    return Case(op, (draw(_arr(dtype, shape)), _indices(draw, n, tuple(index_shape))), {"axis": axis}, signed_zeros=True)


@_composite
def _tile(draw: Any, op: str, dtype: DType) -> Case:
    reps = tuple(draw(st.lists(st.integers(0, 2), max_size=3)))
    return Case(op, (draw(_arr(dtype, draw(_SHAPES))), reps), signed_zeros=True)


@_composite
def _repeat(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_SHAPES)
    ndim = len(shape)
    axis = draw(st.integers(-ndim, ndim - 1)) if ndim and draw(st.booleans()) else None
    length = int(np.prod(shape)) if axis is None else shape[axis]
    if draw(st.booleans()):
        repeats: Any = draw(st.integers(0, 3))
    else:
        count = draw(st.sampled_from([1, length])) if length else 1
        repeats = Arr(np.array(draw(st.lists(st.integers(0, 3), min_size=count, max_size=count)), np.int64))
    return Case(op, (draw(_arr(dtype, shape)), repeats), _kw(axis=axis), signed_zeros=True)


@_composite
def _triangle(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(nst.shapes(min_dims=2))
    return Case(op, (draw(_arr(dtype, shape)),), _kw(k=draw(st.integers(-3, 3)) or None), signed_zeros=True)


# ----------------------------------------------------------------------------- linalg


def _well_conditioned(a: np.ndarray) -> np.ndarray:
    """Finite values, then the identity times (n * largest + 1) added: diagonally dominant."""
    a = _finite(a)
    n = a.shape[-1]
    if a.size == 0 or a.dtype.kind not in "fc":
        return a
    scale = np.abs(a).max() * n + 1
    return a + np.eye(n, dtype=a.dtype) * a.dtype.type(scale)


def _positive_definite(a: np.ndarray) -> np.ndarray:
    """Hermitian positive definite: ``a @ a^H + (n * largest^2 + 1) I``."""
    a = _finite(a)
    if a.size == 0 or a.dtype.kind not in "fc":
        return a
    n = a.shape[-1]
    product = a @ np.conj(np.swapaxes(a, -1, -2))
    return product + np.eye(n, dtype=a.dtype) * a.dtype.type(np.abs(product).max() + 1)


def _square(draw: Any, dtype: DType, repair: Any) -> Arr:
    batch = draw(nst.shapes(max_dims=1, max_side=2))
    n = draw(_SIDE)
    return draw(_arr(dtype, batch + (n, n), repair, views=False))


_NOT_UNIQUE = {"linalg.eig", "linalg.eigh", "linalg.qr", "linalg.svd", "linalg.eigvals"}


@_composite
def _linalg_square(draw: Any, op: str, dtype: DType) -> Case:
    spd = op in ("linalg.cholesky", "linalg.eigh", "linalg.eigvalsh")
    x = _square(draw, dtype, _positive_definite if spd else _well_conditioned)
    kwargs: dict[str, Any] = {}
    if op == "linalg.cholesky":
        kwargs = _kw(upper=draw(st.booleans()))
    return Case(op, (x,), kwargs, check_values=op not in _NOT_UNIQUE)


@_composite
def _matrix_power(draw: Any, op: str, dtype: DType) -> Case:
    floating = dtype.category in ("real floating", "complex floating")
    n = draw(st.integers(-2 if floating else 0, 3))
    repair = _well_conditioned if floating else None
    return Case(op, (_square(draw, dtype, repair), n))


@_composite
def _linalg_any(draw: Any, op: str, dtype: DType) -> Case:
    batch = draw(nst.shapes(max_dims=1, max_side=2))
    m, n = draw(_SIDE), draw(_SIDE)
    x = draw(_arr(dtype, batch + (m, n), _finite, views=False))
    kwargs: dict[str, Any] = {}
    if op == "linalg.qr":
        kwargs = _kw(mode=draw(st.sampled_from([None, "complete"])))
    elif op == "linalg.svd":
        kwargs = {"full_matrices": draw(st.booleans())}
    elif op == "linalg.matrix_norm":
        kwargs = _kw(ord=draw(st.sampled_from(["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])), keepdims=draw(st.booleans()))
        if kwargs.get("ord") not in ("fro", None) and (m == 0 or n == 0):
            kwargs.pop("ord")  # extremal norms of empty matrices are undefined (NumPy raises)
    elif op == "linalg.trace" or op == "linalg.diagonal":
        kwargs = _kw(offset=draw(st.integers(-2, 2)) or None)
        x = draw(_arr(dtype, batch + (m, n), accumulation_repair("sum") if op == "linalg.trace" else None))
    return Case(op, (x,), kwargs, check_values=op not in _NOT_UNIQUE, signed_zeros=False)


@_composite
def _vector_norm(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(_SHAPES)
    kwargs = _kw(axis=draw(_axes(len(shape))), keepdims=draw(st.booleans()), ord=draw(st.sampled_from([None, 1, np.inf, -np.inf, 0, 3])))
    return Case(op, (draw(_arr(dtype, shape, _finite)),), kwargs, signed_zeros=False)


@_composite
def _solve(draw: Any, op: str, dtype: DType) -> Case:
    x1 = _square(draw, dtype, _well_conditioned)
    n = x1.base.shape[-1]
    if draw(st.booleans()):
        x2 = draw(_arr(dtype, (n,), _finite))
    else:
        x2 = draw(_arr(dtype, x1.base.shape[:-2] + (n, draw(_SIDE)), _finite))
    return Case(op, (x1, x2), signed_zeros=False)


@_composite
def _cross(draw: Any, op: str, dtype: DType) -> Case:
    shapes = draw(nst.mutually_broadcastable_shapes(2, max_dims=2, max_side=3)).input_shapes
    repair = accumulation_repair("matmul")
    return Case(op, (draw(_arr(dtype, shapes[0] + (3,), repair)), draw(_arr(dtype, shapes[1] + (3,), repair))), signed_zeros=False)


@_composite
def _outer(draw: Any, op: str, dtype: DType) -> Case:
    repair = accumulation_repair("matmul")
    return Case(op, (draw(_arr(dtype, (draw(_SIDE),), repair)), draw(_arr(dtype, (draw(_SIDE),), repair))))


# ----------------------------------------------------------------------------- fft


@_composite
def _fft_one(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(nst.shapes(min_dims=1, min_side=1, max_side=5))
    ndim = len(shape)
    axis = draw(st.integers(-ndim, ndim - 1))
    kwargs = _kw(
        axis=axis if axis != -1 else None, n=draw(st.one_of(st.none(), st.integers(2, 6))), norm=draw(st.sampled_from([None, "ortho", "forward"]))
    )
    if op in ("fft.irfft", "fft.hfft") and kwargs.get("n") is None and shape[axis] < 2:
        kwargs["n"] = 2  # the default 2 * (m - 1) points would be none
    return Case(op, (draw(_arr(dtype, shape, _finite)),), kwargs, signed_zeros=False)


@_composite
def _fft_many(draw: Any, op: str, dtype: DType) -> Case:
    shape = draw(nst.shapes(min_dims=1, min_side=1, max_side=4))
    ndim = len(shape)
    axes = tuple(draw(st.lists(st.integers(0, ndim - 1), unique=True, min_size=1, max_size=ndim)))
    kwargs: dict[str, Any] = _kw(norm=draw(st.sampled_from([None, "ortho", "forward"])))
    if draw(st.booleans()):
        kwargs["axes"] = axes
        if draw(st.booleans()):
            kwargs["s"] = tuple(draw(st.integers(2, 5)) for _ in axes)
    if op == "fft.irfftn" and "s" not in kwargs:
        last = kwargs.get("axes", tuple(range(ndim)))[-1]
        if shape[last] < 2:
            kwargs["s"] = tuple(2 for _ in kwargs.get("axes", range(ndim)))
            kwargs.setdefault("axes", tuple(range(ndim)))
    return Case(op, (draw(_arr(dtype, shape, _finite)),), kwargs, signed_zeros=False)


STANDARD: dict[str, Any] = {}
for _names, _builder in [
    (("cumulative_prod",), _cumulative_sum),
    (("count_nonzero",), _reduction),
    (("clip",), _clip),
    (("nonzero", "unique_values", "unique_counts", "unique_inverse", "unique_all"), _one_array),
    (("searchsorted",), _searchsorted),
    (("isin",), _isin),
    (("take",), _take),
    (("take_along_axis",), _take_along_axis),
    (("tile",), _tile),
    (("repeat",), _repeat),
    (("tril", "triu"), _triangle),
    (
        ("linalg.cholesky", "linalg.inv", "linalg.det", "linalg.slogdet", "linalg.eigh", "linalg.eigvalsh", "linalg.eig", "linalg.eigvals"),
        _linalg_square,
    ),
    (("linalg.matrix_power",), _matrix_power),
    (
        ("linalg.pinv", "linalg.matrix_rank", "linalg.svdvals", "linalg.svd", "linalg.qr", "linalg.matrix_norm", "linalg.trace", "linalg.diagonal"),
        _linalg_any,
    ),
    (("linalg.vector_norm",), _vector_norm),
    (("linalg.solve",), _solve),
    (("linalg.cross",), _cross),
    (("linalg.outer",), _outer),
    (("fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft"), _fft_one),
    (("fft.fftn", "fft.ifftn", "fft.rfftn", "fft.irfftn"), _fft_many),
]:
    for _name in _names:
        STANDARD[_name] = _builder
