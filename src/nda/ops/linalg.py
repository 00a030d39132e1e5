"""Products, selection and sorting: matmul, tensordot, vecdot, where, clip, sort, argsort.

Binary ops here promote their array arguments to one dtype (the kernel key) and cast
the others, exactly like element-wise ops, so kernels see inputs of the key dtype.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import _dtypes
from .spec import Array, broadcast_shapes, Cast, check_array, check_dtype_category, constant, declare, normalize_axis, Plan, same_device, scalar_arg
from ._vjp import conj, csr_rows, matrix_t

_ARRAY = "NDArray"


def _promote_pair(op: str, x1: Any, x2: Any, category: str) -> tuple[Any, Any, list[Any]]:
    x1 = check_array(x1, op, "x1")
    x2 = check_array(x2, op, "x2")
    device = same_device(op, [x1, x2])
    dtype = _dtypes.promote(x1.dtype, x2.dtype)
    from .._dtypes import CATEGORIES

    if dtype not in CATEGORIES[category]:
        allowed = ", ".join(d.name for d in CATEGORIES[category])
        raise TypeError(f"{op}() does not support dtypes {x1.dtype.name} and {x2.dtype.name}; {category} dtypes are allowed: {allowed}")
    args = [a if a.dtype is dtype else Cast(a, dtype) for a in (x1, x2)]
    return device, dtype, args


def _ref_matmul(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    return np.asarray(np.matmul(x1, x2))


def _vjp_matmul(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    """``g @ x2^H`` and ``x1^H @ g`` on the operands as matrices (1-D ones get their unit axis).

    A csr ``x1`` keeps its layout: ``x1^T @ g`` is a native csr product; when only its
    stored elements' gradient is wanted (``need[0] == "stored"``: a csr leaf, whose
    sparsity pattern is fixed) that is a sampled product, never dense.
    """
    a = x1 if x1.ndim > 1 else nd.reshape(x1, (1, -1))
    b = x2 if x2.ndim > 1 else nd.reshape(x2, (-1, 1))
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    gm = nd.reshape(g, batch + (a.shape[-2], b.shape[-1]))
    g1 = g2 = None
    if need[0]:
        if need[0] == "stored" and gm.ndim == 2:  # a csr leaf: its stored elements only
            g1 = _sampled_product(nd, gm, b, x1)
        else:
            g1 = gm @ matrix_t(nd, b)
            if x1.ndim == 1:
                g1 = g1[..., 0, :]
    if need[1]:
        g2 = matrix_t(nd, a) @ gm
        if x2.ndim == 1:
            g2 = g2[..., 0]
    return g1, g2


def _sampled_product(nd: Any, g: Any, b: Any, like: Any) -> Any:
    """``g @ b^H`` at the stored elements of the csr array ``like`` only, as csr."""
    parts = nd.sparse.components(like)
    cols = nd.astype(parts["indices"], nd.int64)
    rows = nd.take(g, csr_rows(nd, parts), axis=0)
    data = nd.sum(rows * conj(nd, nd.take(b, cols, axis=0)), axis=-1)
    return nd.sparse.csr_array((data, parts["indices"], parts["indptr"]), shape=like.shape, device=like.device)


@declare("matmul", dtypes="numeric", reference=_ref_matmul, operators=("__matmul__", "__rmatmul__"), vjp=_vjp_matmul)
def matmul(x1: _ARRAY, x2: _ARRAY, /) -> Plan:
    """Matrix product ``x1 @ x2``, broadcasting over leading (batch) dimensions.

    A 1-D first argument is treated as a row vector and a 1-D second argument as a column
    vector; the added dimension is removed from the result. 0-d arguments are not allowed.
    """
    device, dtype, args = _promote_pair("matmul", x1, x2, "numeric")
    s1, s2 = x1.shape, x2.shape
    if not s1 or not s2:
        raise ValueError(f"matmul() does not accept 0-d arrays (shapes {s1} and {s2}); use multiply for scalars")
    a = (1,) + s1 if len(s1) == 1 else s1
    b = s2 + (1,) if len(s2) == 1 else s2
    if a[-1] != b[-2]:
        raise ValueError(f"matmul(): shapes {s1} and {s2} are not aligned: {a[-1]} (last axis of x1) != {b[-2]} (second-to-last axis of x2)")
    batch = broadcast_shapes(a[:-2], b[:-2])
    out = batch + (a[-2], b[-1])
    if len(s1) == 1:
        out = out[:-2] + out[-1:]
    if len(s2) == 1:
        out = out[:-1]
    return Plan(device, dtype, dtype, out, tuple(args), reads=(x1, x2))


def _ref_tensordot(x1: np.ndarray, x2: np.ndarray, axes: Any = 2) -> np.ndarray:
    return np.asarray(np.tensordot(x1, x2, axes=axes))


def _tensordot_axes(x1: Any, x2: Any, axes: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(axes, int):
        return tuple(range(x1.ndim - axes, x1.ndim)), tuple(range(axes))
    first, second = axes
    return tuple(normalize_axis(a, x1.ndim, "tensordot") for a in first), tuple(normalize_axis(a, x2.ndim, "tensordot") for a in second)


def _vjp_tensordot(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /, *, axes: Any = 2) -> tuple[Any, ...]:
    a1, a2 = _tensordot_axes(x1, x2, axes)
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [j for j in range(x2.ndim) if j not in a2]
    g1 = g2 = None
    if need[0]:  # contract g's x2 part with x2's free axes: x1's free axes, then x2's contracted axes in x2's order
        got = nd.tensordot(g, conj(nd, x2), axes=(tuple(range(len(free1), g.ndim)), tuple(free2)))
        where = free1 + [a1[a2.index(j)] for j in sorted(a2)]
        g1 = nd.permute_dims(got, tuple(where.index(i) for i in range(x1.ndim)))
    if need[1]:
        got = nd.tensordot(conj(nd, x1), g, axes=(tuple(free1), tuple(range(len(free1)))))
        where = [a2[a1.index(i)] for i in sorted(a1)] + free2
        g2 = nd.permute_dims(got, tuple(where.index(j) for j in range(x2.ndim)))
    return g1, g2


@declare("tensordot", dtypes="numeric", reference=_ref_tensordot, vjp=_vjp_tensordot)
def tensordot(x1: _ARRAY, x2: _ARRAY, /, *, axes: int | tuple[tuple[int, ...], tuple[int, ...]] = 2) -> Plan:
    """Sum of products over the last ``axes`` axes of ``x1`` and the first of ``x2`` (or over explicit axis lists)."""
    device, dtype, args = _promote_pair("tensordot", x1, x2, "numeric")
    if isinstance(axes, int) and not isinstance(axes, bool):
        if axes < 0 or axes > min(x1.ndim, x2.ndim):
            raise ValueError(f"tensordot(): axes={axes} must be between 0 and {min(x1.ndim, x2.ndim)} for shapes {x1.shape} and {x2.shape}")
        a1 = tuple(range(x1.ndim - axes, x1.ndim))
        a2 = tuple(range(axes))
    else:
        try:
            first, second = axes
            a1 = tuple(normalize_axis(a, x1.ndim, "tensordot") for a in first)
            a2 = tuple(normalize_axis(a, x2.ndim, "tensordot") for a in second)
        except np.exceptions.AxisError:
            raise
        except (TypeError, ValueError):
            raise TypeError(f"tensordot(): axes must be an int or a pair of axis sequences, got {axes!r}") from None
        if len(a1) != len(a2):
            raise ValueError(f"tensordot(): axes {axes} pair sequences of different lengths")
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(f"tensordot(): axis {i} of x1 has size {x1.shape[i]} but axis {j} of x2 has size {x2.shape[j]}")
    out = tuple(n for i, n in enumerate(x1.shape) if i not in a1) + tuple(n for j, n in enumerate(x2.shape) if j not in a2)
    return Plan(device, dtype, dtype, out, tuple(args), {"axes": (a1, a2)}, reads=(x1, x2))


def _ref_vecdot(x1: np.ndarray, x2: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.vecdot(x1, x2, axis=axis))


def _vjp_vecdot(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /, *, axis: int = -1) -> tuple[Any, ...]:
    ndim = max(x1.ndim, x2.ndim)
    ge = nd.expand_dims(g, axis=normalize_axis(axis, ndim, "vecdot") - ndim)
    return (conj(nd, ge) * x2 if need[0] else None), (ge * x1 if need[1] else None)


@declare("vecdot", dtypes="numeric", reference=_ref_vecdot, vjp=_vjp_vecdot)
def vecdot(x1: _ARRAY, x2: _ARRAY, /, *, axis: int = -1) -> Plan:
    """Dot product of vectors along ``axis`` (``x1`` is conjugated), broadcasting the other axes."""
    device, dtype, args = _promote_pair("vecdot", x1, x2, "numeric")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(f"vecdot() needs arrays of at least one dimension, got shapes {x1.shape} and {x2.shape}")
    ndim = max(x1.ndim, x2.ndim)
    neg = normalize_axis(axis, ndim, "vecdot") - ndim  # counted from the end, as the standard does
    n1 = x1.shape[neg] if x1.ndim >= -neg else None
    n2 = x2.shape[neg] if x2.ndim >= -neg else None
    if n1 != n2:
        raise ValueError(f"vecdot(): axis {axis} has size {n1} in x1 (shape {x1.shape}) but {n2} in x2 (shape {x2.shape})")
    shape = broadcast_shapes(x1.shape, x2.shape)
    out = shape[:neg] + (shape[neg + 1 :] if neg != -1 else ())
    return Plan(device, dtype, dtype, out, tuple(args), {"axis": neg}, reads=(x1, x2))


def _ref_where(condition: np.ndarray, x1: Any, x2: Any) -> np.ndarray:
    return np.asarray(np.where(condition, x1, x2))


_SCALAR_KINDS = (bool, int, float, complex)
_SCALAR_DEFAULTS = (_dtypes.bool, _dtypes.default_int, _dtypes.default_float, _dtypes.default_complex)


def _vjp_where(nd: Any, need: Any, g: Any, y: Any, condition: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    return None, (nd.where(condition, g, 0) if need[1] else None), (nd.where(condition, 0, g) if need[2] else None)


@declare("where", dtypes="any", reference=_ref_where, vjp=_vjp_where)
def where(condition: _ARRAY, x1: _ARRAY | bool | int | float | complex, x2: _ARRAY | bool | int | float | complex, /) -> Plan:
    """Elements of ``x1`` where ``condition`` is true and of ``x2`` elsewhere (all three broadcast).

    ``x1`` or ``x2`` may be a Python scalar; it takes the other array's dtype as in binary ops.
    Both may be (NumPy's behaviour): the result has the default dtype of the wider kind
    (``where(c, 0.5, 0)`` is float64). The key dtype is the promoted dtype of ``x1`` and
    ``x2``; ``condition`` must be bool.
    """
    from .elementwise import _check_scalar

    condition = check_array(condition, "where", "condition")
    x1, x2 = scalar_arg(x1), scalar_arg(x2)
    if condition.dtype is not _dtypes.bool:
        raise TypeError(f"where(): condition must be a bool array, got {condition.dtype.name}")
    arrays = [condition] + [a for a in (x1, x2) if isinstance(a, Array)]
    for name, a in (("x1", x1), ("x2", x2)):
        if not isinstance(a, Array) and a.__class__ not in (bool, int, float, complex):
            raise TypeError(f"where(): {name} must be an nda array or a Python scalar, got {type(a).__name__}")
    device = same_device("where", arrays)
    if isinstance(x1, Array) and isinstance(x2, Array):
        dtype = _dtypes.promote(x1.dtype, x2.dtype)
    elif isinstance(x1, Array):
        dtype = _dtypes.promote_scalar(x1.dtype, x2.__class__)
    elif isinstance(x2, Array):
        dtype = _dtypes.promote_scalar(x2.dtype, x1.__class__)
    else:
        # Two Python scalars (beyond the standard, as NumPy, PyTorch and CuPy take them; SciPy's
        # nsum calls where(x == 0, log(0.5), 0)): the default dtype of the wider kind.
        dtype = _SCALAR_DEFAULTS[builtins.max(_SCALAR_KINDS.index(x1.__class__), _SCALAR_KINDS.index(x2.__class__))]
    args = [condition] + [(a if a.dtype is dtype else Cast(a, dtype)) if isinstance(a, Array) else _check_scalar(a, dtype, "where") for a in (x1, x2)]
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return Plan(device, dtype, dtype, shape, tuple(args), reads=arrays)


def _sort_args(op: str, x: Any, axis: Any, descending: Any, stable: Any) -> tuple[Any, int]:
    x = check_array(x, op)
    check_dtype_category(x, "real numeric", op)
    if x.ndim == 0:
        raise ValueError(f"{op}() needs an array of at least one dimension, got a 0-d array")
    ax = normalize_axis(axis, x.ndim, op)
    for name, flag in (("descending", descending), ("stable", stable)):
        if not isinstance(flag, bool):
            raise TypeError(f"{op}(): {name} must be a bool, got {flag!r}")
    return x, ax


def _ref_argsort(x: np.ndarray, axis: int = -1, descending: bool = False, stable: bool = True) -> np.ndarray:
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)
    # Stable descending order: sort the reversed array ascending, then map indices back.
    n = x.shape[axis]
    idx = np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable")
    return np.flip(n - 1 - idx, axis=axis).astype(np.int64, copy=False)


def _ref_sort(x: np.ndarray, axis: int = -1, descending: bool = False, stable: bool = True) -> np.ndarray:
    out = np.sort(x, axis=axis, kind="stable")
    return np.flip(out, axis=axis).copy() if descending else out


def _vjp_sort(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> tuple[Any, ...]:
    """Each element gets the gradient of the place it was sorted to (argsort's permutation, inverted)."""
    order = nd.argsort(x, axis=axis, descending=descending, stable=stable)
    return (nd.take_along_axis(g, nd.argsort(order, axis=axis), axis=axis),)


@declare("sort", dtypes="real numeric", reference=_ref_sort, vjp=_vjp_sort)
def sort(x: _ARRAY, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Plan:
    """A sorted copy of ``x`` along ``axis`` (NaNs last in ascending order)."""
    x, ax = _sort_args("sort", x, axis, descending, stable)
    return Plan.of(x, out_shape=x.shape, args=(x,), kwargs={"axis": ax, "descending": descending, "stable": stable})


@declare("argsort", dtypes="real numeric", reference=_ref_argsort, vjp=constant("integer result (indices)"))
def argsort(x: _ARRAY, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Plan:
    """Indices (int64) that sort ``x`` along ``axis``; equal elements keep their order."""
    x, ax = _sort_args("argsort", x, axis, descending, stable)
    return Plan.of(x, out_shape=x.shape, out_dtype=_dtypes.int64, args=(x,), kwargs={"axis": ax, "descending": descending, "stable": stable})


def _ref_clip(x: np.ndarray, min: Any = None, max: Any = None) -> np.ndarray:  # noqa: A002
    out = x
    if min is not None:
        out = np.maximum(out, min)
    if max is not None:
        out = np.minimum(out, max)
    out = np.asarray(out, dtype=x.dtype)
    return out.copy() if out is x else out


def _vjp_clip(nd: Any, need: Any, g: Any, y: Any, x: Any, /, min: Any = None, max: Any = None) -> tuple[Any, ...]:  # noqa: A002
    """As ``minimum(maximum(x, min), max)``, where ties go to ``x`` (PyTorch's choice)."""
    raised = x if min is None else nd.maximum(x, min)
    kept = g if max is None else nd.where(raised <= max, g, 0)
    gx = kept if min is None else nd.where(x >= min, kept, 0)
    gmin = nd.where(x < min, kept, 0) if need[1] and min is not None else None
    gmax = nd.where(raised > max, g, 0) if need[2] and max is not None else None
    return gx, gmin, gmax


@declare("clip", dtypes="real numeric", reference=_ref_clip, method="clip", vjp=_vjp_clip)
def clip(x: _ARRAY, /, min: _ARRAY | int | float | None = None, max: _ARRAY | int | float | None = None) -> Plan:  # noqa: A002
    """Limit the values of ``x`` to ``[min, max]`` element-wise; the result has ``x``'s dtype.

    ``min`` and ``max`` are arrays (broadcast with ``x``), Python scalars of ``x``'s kind, or
    None (no bound). A NaN in ``x`` or in a bound gives NaN. When ``min > max`` the result is
    ``max``, as in NumPy.
    """
    from .elementwise import _check_scalar

    x = check_array(x, "clip")
    check_dtype_category(x, "real numeric", "clip")
    arrays = [x]
    bounds = []
    for name, bound in (("min", min), ("max", max)):
        bound = scalar_arg(bound)
        if bound is None:
            bounds.append(None)
        elif isinstance(bound, Array):
            check_dtype_category(bound, "real numeric", "clip", name)
            if bound.dtype is not x.dtype and not _dtypes.same_kind_castable(bound.dtype, x.dtype):
                raise TypeError(
                    f"clip(): {name} has dtype {bound.dtype.name}, which does not fit x's dtype {x.dtype.name} (the result keeps x's dtype)"
                )
            arrays.append(bound)
            bounds.append(bound if bound.dtype is x.dtype else Cast(bound, x.dtype))
        elif bound.__class__ in (int, float):
            if bound.__class__ is float and x.dtype.category != "real floating":
                raise TypeError(f"clip(): a float {name} cannot bound an array of dtype {x.dtype.name}")
            if bound.__class__ is int and x.dtype.category in ("signed integer", "unsigned integer"):
                info = np.iinfo(x.dtype.numpy)
                bound = builtins.max(int(info.min), builtins.min(int(info.max), bound))  # a bound beyond the dtype's range bounds nothing
            bounds.append(_check_scalar(bound, x.dtype, "clip"))
        else:
            raise TypeError(f"clip(): {name} must be an nda array, a real Python scalar or None, got {type(bound).__name__}")
    device = same_device("clip", arrays)
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return Plan(device, x.dtype, x.dtype, shape, (x, bounds[0], bounds[1]), reads=arrays)
