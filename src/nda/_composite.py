"""Standard functions built from catalog ops: they need no kernel of their own.

``moveaxis`` is a ``permute_dims``, ``unstack`` a series of ``getitem`` views, ``diff``
slicing and ``subtract``, ``fftshift`` a ``roll``, NumPy's ``pad`` (constant mode) a ``full``
and a ``setitem``, and so on (``pad`` and ``transpose``, NumPy's spellings, are not in the
standard: xarray calls them on the namespace of the arrays it holds). Each goes through dispatch
by way of the ops it calls, so every backend runs them with its own kernels of those ops
(natively on sim, for example), and the engine orders them like the ops they are made of.
``broadcast_shapes`` works on shapes only; ``fftfreq``/``rfftfreq`` compute their few
values on the host and ``asarray`` them onto the device. ``einsum`` is NumPy's calling
convention (operands as separate arguments, or interleaved with sublists) for the catalog
op ``einsum``, and ``einsum_path`` NumPy's path finder run on shapes alone.

Layer: arrays and front end, extensions (README, "Architecture").
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import _dtypes
from ._array import NDArray
from .ops.spec import broadcast_shapes as _broadcast_shapes
from .ops.spec import check_array, check_shape, int_arg, normalize_axes, normalize_axis

__all__ = [
    "broadcast_arrays",
    "broadcast_shapes",
    "diff",
    "matrix_transpose",
    "meshgrid",
    "moveaxis",
    "unstack",
    "pad",
    "transpose",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
    "isclose",
    "allclose",
    "einsum",
    "einsum_path",
]


def _api() -> Any:
    from . import _api

    return _api


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape that arrays of ``shapes`` broadcast to (ValueError if they do not)."""
    if not shapes:
        return ()
    checked = []
    for shape in shapes:
        if not isinstance(shape, tuple):
            raise TypeError(f"broadcast_shapes(): shapes must be tuples of ints, got {shape!r}")
        checked.append(check_shape(shape, "broadcast_shapes"))  # the constructors' parser: no bool
    return _broadcast_shapes(*checked)


def broadcast_arrays(*arrays: NDArray) -> tuple[NDArray, ...]:
    """Broadcast ``arrays`` against each other; each result is a read-only view of its input."""
    for i, a in enumerate(arrays):
        check_array(a, "broadcast_arrays", f"arrays[{i}]")
    if not arrays:
        return ()
    shape = _broadcast_shapes(*(a.shape for a in arrays))
    api = _api()
    return tuple(a if a.shape == shape else api.broadcast_to(a, shape) for a in arrays)


def meshgrid(*arrays: NDArray, indexing: str = "xy") -> tuple[NDArray, ...]:
    """Coordinate matrices from 1-D coordinate vectors (``indexing="xy"``: Cartesian, ``"ij"``: matrix)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid(): indexing must be 'xy' or 'ij', got {indexing!r}")
    for i, a in enumerate(arrays):
        check_array(a, "meshgrid", f"arrays[{i}]")
        if a.ndim != 1:
            raise ValueError(f"meshgrid(): every input must be 1-D, arrays[{i}] has shape {a.shape}")
    if len({a.dtype for a in arrays}) > 1:
        raise TypeError(f"meshgrid(): inputs must share one dtype, got {', '.join(a.dtype.name for a in arrays)}")
    n = len(arrays)
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    shape = tuple(sizes)
    api = _api()
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and n >= 2 and i < 2:
            axis = 1 - i
        view_shape = tuple(a.shape[0] if j == axis else 1 for j in range(n))
        out.append(api.broadcast_to(api.reshape(a, view_shape), shape))
    return tuple(out)


def moveaxis(x: NDArray, source: int | tuple[int, ...], destination: int | tuple[int, ...], /) -> NDArray:
    """Move the axes ``source`` of ``x`` to positions ``destination``; the others keep their order (a view).

    ``source`` and ``destination`` are ints or tuples (or lists) of ints of the same length.
    """
    x = check_array(x, "moveaxis")
    src = _axes_arg(source, "source")
    dst = _axes_arg(destination, "destination")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis(): source {source} and destination {destination} must have the same number of axes")
    src_axes = [normalize_axis(a, x.ndim, "moveaxis") for a in src]
    dst_axes = [normalize_axis(a, x.ndim, "moveaxis") for a in dst]
    if len(set(src_axes)) != len(src_axes) or len(set(dst_axes)) != len(dst_axes):
        raise ValueError(f"moveaxis(): repeated axis in source {source} or destination {destination}")
    order = [a for a in range(x.ndim) if a not in src_axes]
    for d, s in sorted(zip(dst_axes, src_axes)):
        order.insert(d, s)
    return _api().permute_dims(x, tuple(order))  # type: ignore[no-any-return]


def _axes_arg(value: Any, name: str, op: str = "moveaxis") -> tuple[Any, ...]:
    """``moveaxis``'s source/destination (``transpose``'s axes): an int, or a tuple or list of ints (as NumPy and array_api_strict take)."""
    if isinstance(value, (tuple, list)):
        items = tuple(value)
    else:
        items = (value,)
    for item in items:
        if isinstance(item, bool) or not hasattr(item, "__index__"):
            raise TypeError(f"{op}(): {name} must be an int or a tuple/list of ints, got {value!r}")
    return items


def matrix_transpose(x: NDArray, /) -> NDArray:
    """Transpose each matrix of a stack ``(..., M, N)`` -> ``(..., N, M)`` (a view)."""
    x = check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose() needs at least 2 dimensions, got shape {x.shape}")
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return _api().permute_dims(x, axes)  # type: ignore[no-any-return]


def unstack(x: NDArray, /, *, axis: int = 0) -> tuple[NDArray, ...]:
    """Split ``x`` along ``axis`` into a tuple of views, one per index, each without that axis."""
    x = check_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack() needs an array of at least one dimension, got a 0-d array")
    ax = normalize_axis(axis, x.ndim, "unstack")
    lead = (slice(None),) * ax
    return tuple(x[lead + (i,)] for i in range(x.shape[ax]))


def diff(x: NDArray, /, *, axis: int = -1, n: int = 1, prepend: NDArray | None = None, append: NDArray | None = None) -> NDArray:
    """The ``n``-th discrete difference along ``axis``: ``out[i] = x[i + 1] - x[i]``, applied ``n`` times.

    ``prepend``/``append`` are joined to ``x`` along ``axis`` first. For bool input the
    difference is ``x[i + 1] != x[i]``, as in NumPy.
    """
    x = check_array(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff() needs an array of at least one dimension, got a 0-d array")
    n = int_arg(n, "diff", "n", minimum=0)
    ax = normalize_axis(axis, x.ndim, "diff")
    api = _api()
    parts = []
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is not None:
            check_array(extra, "diff", name)
            if extra.ndim != x.ndim or any(a != b for i, (a, b) in enumerate(zip(extra.shape, x.shape)) if i != ax):
                raise ValueError(f"diff(): {name} must have x's shape {x.shape} except along axis {ax}, got {extra.shape}")
    if prepend is not None:
        parts.append(prepend)
    parts.append(x)
    if append is not None:
        parts.append(append)
    a = api.concat(parts, axis=ax) if len(parts) > 1 else x
    lead = (slice(None),) * ax
    for _ in range(n):
        if a.shape[ax] == 0:
            break
        later, earlier = a[lead + (slice(1, None),)], a[lead + (slice(None, -1),)]
        a = api.not_equal(later, earlier) if a.dtype is _dtypes.bool else api.subtract(later, earlier)
    return a if a is not x else api.copy(x)


# ----------------------------------------------------------------------------- NumPy's spellings xarray calls


def transpose(x: NDArray, /, axes: Any = None) -> NDArray:
    """NumPy's ``transpose``: ``permute_dims(x, axes)``, with ``axes=None`` reversing the axes (a view).

    Not in the standard; xarray (and other code written for NumPy) calls ``xp.transpose`` on
    the namespace of the arrays it holds.
    """
    x = check_array(x, "transpose")
    order = tuple(range(x.ndim - 1, -1, -1)) if axes is None else _axes_arg(axes, "axes", "transpose")
    return _api().permute_dims(x, order)  # type: ignore[no-any-return]


def _pad_widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    """NumPy's ``pad_width`` as one ``(before, after)`` per axis: an int for every side, one pair
    for every axis, or a pair per axis (each broadcast as NumPy broadcasts them)."""
    try:
        w = np.asarray(pad_width)
    except (TypeError, ValueError):
        w = np.asarray(None)
    if w.dtype.kind not in "iu" or w.size == 0:
        raise TypeError(f"pad(): pad_width must be ints: one for all sides, (before, after), or one pair per axis; got {pad_width!r}")
    if (w < 0).any():
        raise ValueError(f"pad(): pad_width must not be negative, got {pad_width!r}")
    if w.size == 1:
        pairs = np.broadcast_to(w.reshape(1, 1), (ndim, 2))
    elif w.size == 2 and w.shape != (2, 1):
        pairs = np.broadcast_to(w.reshape(1, 2), (ndim, 2))
    else:
        try:
            pairs = np.broadcast_to(w, (ndim, 2))
        except ValueError:
            raise ValueError(f"pad(): pad_width {pad_width!r} does not give (before, after) for each of the {ndim} axes") from None
    return [(int(b), int(a)) for b, a in pairs.tolist()]


def pad(x: NDArray, pad_width: Any, /, mode: str = "constant", *, constant_values: bool | int | float | complex = 0) -> NDArray:
    """NumPy's ``pad`` in its ``"constant"`` mode: ``x`` with ``constant_values`` added before and after along each axis.

    ``pad_width`` is NumPy's: an int (every side of every axis), ``(before, after)`` (every
    axis), or one ``(before, after)`` per axis. The result has ``x``'s dtype and device; a
    ``constant_values`` the dtype cannot hold raises as ``full`` does (NumPy would cast it).
    It is a ``full`` and a ``setitem``, so every backend runs it with its own kernels. Not in
    the standard; xarray's ``shift``, ``pad`` and ``rolling`` call ``xp.pad`` on the arrays'
    namespace. NumPy's other modes are not in nda (``np.pad(x, ..., mode="edge")`` computes
    them on a host copy, with a ``FallbackWarning``).
    """
    x = check_array(x, "pad")
    if mode != "constant":
        raise ValueError(f"pad(): nda has the mode 'constant' only, got {mode!r} (np.pad(x, ...) computes NumPy's other modes on a host copy)")
    if isinstance(constant_values, np.generic):
        constant_values = _dtypes.python_scalar(constant_values)
    if not isinstance(constant_values, (bool, int, float, complex)):
        raise TypeError(f"pad(): constant_values must be a Python or NumPy scalar (one value for every side), got {type(constant_values).__name__}")
    widths = _pad_widths(pad_width, x.ndim)
    api = _api()
    out = api.full(tuple(n + b + a for n, (b, a) in zip(x.shape, widths)), constant_values, dtype=x.dtype, device=x.device)
    out[tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, widths))] = x
    return out  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- fft helpers


def _freq_dtype(dtype: Any, op: str) -> Any:
    dt = _dtypes.default_float if dtype is None else _dtypes.as_dtype(dtype)
    if dt.category != "real floating":
        raise TypeError(f"{op}(): dtype must be a real floating dtype, got {dt.name}")
    return dt


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> NDArray:
    """Sample frequencies of an ``n``-point transform with sample spacing ``d``: ``[0, 1, ..., -1] / (d * n)``."""
    n = int_arg(n, "fftfreq", "n", minimum=1)
    return _api().asarray(np.fft.fftfreq(n, d=d).astype(_freq_dtype(dtype, "fftfreq").numpy), device=device)  # type: ignore[no-any-return]


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> NDArray:
    """Sample frequencies of :func:`nda.fft.rfft`: the ``n // 2 + 1`` non-negative ones."""
    n = int_arg(n, "rfftfreq", "n", minimum=1)
    return _api().asarray(np.fft.rfftfreq(n, d=d).astype(_freq_dtype(dtype, "rfftfreq").numpy), device=device)  # type: ignore[no-any-return]


def _shift(op: str, x: NDArray, axes: Any, sign: int) -> NDArray:
    x = check_array(x, op)
    chosen = normalize_axes(tuple(axes) if isinstance(axes, list) else axes, x.ndim, op)
    if not chosen:
        return _api().copy(x)  # type: ignore[no-any-return]
    shifts = tuple(sign * (x.shape[a] // 2) for a in chosen)
    return _api().roll(x, shifts, axis=chosen)  # type: ignore[no-any-return]


def fftshift(x: NDArray, /, *, axes: int | tuple[int, ...] | None = None) -> NDArray:
    """Move the zero-frequency term to the centre of ``axes`` (all axes by default)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x: NDArray, /, *, axes: int | tuple[int, ...] | None = None) -> NDArray:
    """Inverse of :func:`fftshift` (they differ for odd lengths)."""
    return _shift("ifftshift", x, axes, -1)


def isclose(
    a: NDArray | bool | int | float | complex,
    b: NDArray | bool | int | float | complex,
    /,
    *,
    rtol: float = 1e-05,
    atol: float = 1e-08,
    equal_nan: bool = False,
) -> NDArray:
    """Element-wise ``|a - b| <= atol + rtol * |b|``, NumPy's rule (an nda extra, not in the Array API).

    Infinities are close only to themselves (same sign); NaN is close to NaN only with
    ``equal_nan=True``. Integer and bool inputs are compared as floating values, as NumPy does.
    Made of element-wise ops, so every backend runs it with its own kernels.
    """
    api = _api()
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"isclose(): {name} must be a non-negative real number, got {value!r}")
    if not isinstance(a, NDArray) and not isinstance(b, NDArray):
        raise TypeError("isclose(): at least one of a and b must be an nda array (convert with nda.asarray)")
    x, y = (v if isinstance(v, NDArray) else None for v in (a, b))
    device = (x if x is not None else y).device  # type: ignore[union-attr]
    floating = _dtypes.CATEGORIES["floating"]

    def floats(v: Any) -> Any:
        if isinstance(v, NDArray):
            return v if v.dtype in floating else api.astype(v, _dtypes.float64)
        return api.asarray(complex(v) if isinstance(v, complex) else float(v), device=device)

    fa, fb = floats(a), floats(b)
    finite = api.logical_and(api.isfinite(fa), api.isfinite(fb))
    ca, cb = api.where(finite, fa, 0.0), api.where(finite, fb, 0.0)  # no inf - inf (NumPy's warning-free rule)
    near = api.less_equal(api.abs(api.subtract(ca, cb)), api.add(float(atol), api.multiply(float(rtol), api.abs(cb))))
    result = api.where(finite, near, api.equal(fa, fb))
    if equal_nan:
        result = api.logical_or(result, api.logical_and(api.isnan(fa), api.isnan(fb)))
    return result  # type: ignore[no-any-return]


def allclose(
    a: NDArray | bool | int | float | complex,
    b: NDArray | bool | int | float | complex,
    /,
    *,
    rtol: float = 1e-05,
    atol: float = 1e-08,
    equal_nan: bool = False,
) -> bool:
    """Whether every element of ``a`` is close to ``b`` (:func:`isclose`), as a Python bool (a sync point)."""
    return bool(_api().all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


# --------------------------------------------------------------------------- einsum


def _einsum_args(op: str, args: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """``(subscripts, operands)`` from NumPy's two forms: ``("ij,jk", x, y)`` or ``(x, [0, 1], y, [1, 2], [0, 2])``."""
    if not args:
        raise TypeError(f"{op}() needs subscripts and at least one operand")
    if isinstance(args[0], str):
        if len(args) == 2 and isinstance(args[1], (list, tuple)) and args[1] and all(isinstance(a, NDArray) for a in args[1]):
            return args[0], list(args[1])  # the catalog op's form: the operands as one sequence
        return args[0], list(args[1:])
    operands, terms = list(args[0::2]), list(args[1::2])
    out = None
    if len(operands) > len(terms):  # odd count: the last item is the output's sublist
        *operands, out = operands
    from .ops.einsum import _LETTERS

    def letters(sub: Any, where: str) -> str:
        text = []
        for item in sub:
            if item is Ellipsis:
                text.append("...")
                continue
            try:
                index = operator.index(item)
            except TypeError:
                raise TypeError(f"{op}(): {where} must hold ints (and Ellipsis), got {item!r}") from None
            if not 0 <= index < len(_LETTERS):
                raise ValueError(f"{op}(): subscript {index} in {where} is out of range (0..{len(_LETTERS) - 1})")
            text.append(_LETTERS[index])
        return "".join(text)

    spec = ",".join(letters(t, f"the sublist of operand {i}") for i, t in enumerate(terms))
    if out is not None:
        spec += "->" + letters(out, "the output sublist")
    return spec, operands


def einsum(*operands: Any, optimize: bool | str | list[Any] = False) -> NDArray:
    """Einstein summation, as ``numpy.einsum``: ``einsum("ij,jk->ik", x, y)`` or ``einsum(x, [0, 1], y, [1, 2])``
    (or the catalog op's form, ``einsum("ij,jk->ik", [x, y])``).

    Subscripts, broadcasting with ``...``, the implicit output, repeated labels (diagonals)
    and ``optimize`` (False, True, ``"greedy"``, ``"optimal"``, an ``einsum_path`` list) follow
    NumPy; operands are nda arrays on one device, promoted with ``nda.result_type``. It is
    the catalog op ``einsum``: native on cpu (NumPy), sim and cuda (CuPy), differentiable.
    """
    subscripts, arrays = _einsum_args("einsum", operands)
    return _api().einsum(subscripts, arrays, optimize=optimize)  # type: ignore[no-any-return]


def _einsum_metadata() -> None:
    """``nda.einsum`` is the catalog op ``einsum`` in NumPy's calling convention. Autograd and
    hybridize see the op itself (this function calls it through ``nda._api``);
    ``nda.dispatch.explain("einsum", subscripts, [x, y])`` takes the catalog's form."""
    import inspect

    P = inspect.Parameter
    einsum.__signature__ = inspect.Signature(
        [  # type: ignore[attr-defined]
            P("subscripts", P.POSITIONAL_ONLY, annotation="str | NDArray"),  # an array first: NumPy's sublist form
            P("operands", P.VAR_POSITIONAL, annotation="NDArray | Sequence[NDArray] | Sequence[int]"),
            P("optimize", P.KEYWORD_ONLY, default=False, annotation="bool | str | list[Any]"),
        ],
        return_annotation="NDArray",
    )
    einsum.__module__ = "nda"


_einsum_metadata()


def einsum_path(*operands: Any, optimize: bool | str | list[Any] = "greedy") -> tuple[list[Any], str]:
    """``numpy.einsum_path`` for these operands: the contraction order and its report (from shapes and dtypes only)."""
    from .ops.einsum import check_optimize, parse

    subscripts, arrays = _einsum_args("einsum_path", operands)
    for i, a in enumerate(arrays):
        check_array(a, "einsum_path", f"operands[{i}]")
    parse(subscripts, [a.shape for a in arrays])  # nda's validation and messages first
    opt = check_optimize(optimize)
    dummies = [np.broadcast_to(np.zeros((), dtype=a.dtype.numpy), a.shape) for a in arrays]  # no data, no copy
    return np.einsum_path(subscripts, *dummies, optimize=list(opt) if isinstance(opt, tuple) else opt)  # type: ignore[no-any-return]
