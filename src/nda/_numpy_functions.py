"""NumPy functions that nda runs on the device (``__array_function__``; policy in ``nda._interop``).

Each handler takes the call (``_Call``: its name and device) and NumPy's arguments, and
calls nda's functions: reductions with NumPy's ``out=``/``dtype=``/``ddof=``/``keepdims=``,
manipulation (``axis=None`` meaning "flattened", as in NumPy), sorting and searching,
creation with ``like=`` (``np.linalg``, ``np.fft`` and the products are in
:mod:`nda._numpy_linalg`). A keyword or a case nda cannot honour
raises ``_Fallback`` (NumPy then computes the call on host copies); so does a TypeError
from nda (a dtype nda refuses), caught in ``nda._interop``.

Layer: arrays and front end, NumPy protocols (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import _api, _composite, _dtypes
from ._array import NDArray
from .ops.spec import check_shape, parse_shape
from ._interop_args import (
    FUNCTIONS,
    _Call,
    _NoValue,
    _axis,
    _check_defaults,
    _flat,
    _leftover,
    _reduction,
    _refuse,
    _register,
    _store,
    _unsupported,
)

__all__ = ["FUNCTIONS"]


# reductions -----------------------------------------------------------------------------


def _reduce_handler(op: str, with_dtype: bool) -> Callable[..., Any]:
    def handler(c: _Call, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, **kw: Any) -> Any:
        if not with_dtype and dtype is not None:
            raise _unsupported(c.name, "dtype", dtype)
        _check_defaults(c.name, kw, initial=_NoValue, where=True)
        _leftover(c.name, kw)
        keepdims = False if keepdims is _NoValue else keepdims
        return _store(c.name, out, _reduction(op, c.array(a), _axis(axis), dtype, keepdims))

    return handler


for _np_fn, _op in ((np.sum, "sum"), (np.prod, "prod")):
    _register(_np_fn)(_reduce_handler(_op, True))
for _np_fns, _op in (((np.any,), "any"), ((np.all,), "all")):  # np.max/np.min: nda._numpy_names

    def _extremum(c: _Call, a: Any, axis: Any = None, out: Any = None, keepdims: Any = False, _op: str = _op, **kw: Any) -> Any:
        return _reduce_handler(_op, False)(c, a, axis=axis, out=out, keepdims=keepdims, **kw)

    _register(*_np_fns)(_extremum)


@_register(np.mean)
def _mean(c: _Call, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, **kw: Any) -> Any:
    _check_defaults(c.name, kw, where=True)
    _leftover(c.name, kw)
    x = c.array(a)
    if dtype is not None and _dtypes.as_dtype(dtype).category in ("real floating", "complex floating"):
        x = _api.astype(x, _dtypes.as_dtype(dtype))
    keepdims = False if keepdims is _NoValue else keepdims
    return _store(c.name, out, _reduction("mean", x, _axis(axis), dtype, keepdims))


def _spread(op: str) -> Callable[..., Any]:
    def handler(c: _Call, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = False, **kw: Any) -> Any:
        correction = kw.pop("correction", _NoValue)
        _check_defaults(c.name, kw, where=True, mean=_NoValue)
        _leftover(c.name, kw)
        x = c.array(a)
        if dtype is not None and _dtypes.as_dtype(dtype).category in ("real floating", "complex floating"):
            x = _api.astype(x, _dtypes.as_dtype(dtype))
        keepdims = False if keepdims is _NoValue else keepdims
        corr = ddof if correction is _NoValue else correction
        result = getattr(_api, op)(x, axis=_axis(axis), correction=corr, keepdims=bool(keepdims))
        return _store(c.name, out, result)

    return handler


_register(np.std)(_spread("std"))
_register(np.var)(_spread("var"))


def _arg_handler(op: str) -> Callable[..., Any]:
    def handler(c: _Call, a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = False) -> Any:
        keepdims = False if keepdims is _NoValue else keepdims
        x = c.array(a)
        if axis is None and keepdims:
            result = _api.reshape(getattr(_api, op)(x), (1,) * x.ndim)
        else:
            result = getattr(_api, op)(x, axis=axis, keepdims=bool(keepdims))
        return _store(c.name, out, result)

    return handler


_register(np.argmax)(_arg_handler("argmax"))
_register(np.argmin)(_arg_handler("argmin"))


def _scan_handler(op: str) -> Callable[..., Any]:
    def handler(c: _Call, x: Any, /, *, axis: Any = None, dtype: Any = None, out: Any = None, include_initial: bool = False) -> Any:
        # np.cumulative_sum/prod: the Array API's (axis=None only for 1-d arrays, as NumPy checks); np.cumsum: nda._numpy_names
        result = getattr(_api, op)(c.array(x), axis=axis, dtype=dtype, include_initial=bool(include_initial))
        return _store(c.name, out, result)

    return handler


_register(getattr(np, "cumulative_sum", None))(_scan_handler("cumulative_sum"))
_register(getattr(np, "cumulative_prod", None))(_scan_handler("cumulative_prod"))


@_register(np.count_nonzero)
def _count_nonzero(c: _Call, a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    return _api.count_nonzero(c.array(a), axis=_axis(axis), keepdims=keepdims)


# element-wise functions that are not ufuncs ----------------------------------------------


@_register(np.clip)
def _clip(
    c: _Call, a: Any, a_min: Any = _NoValue, a_max: Any = _NoValue, out: Any = None, *, min: Any = _NoValue, max: Any = _NoValue, **kw: Any
) -> Any:  # noqa: A002
    _leftover(c.name, {k: v for k, v in kw.items() if k not in ("casting",)})
    lo = a_min if a_min is not _NoValue else (None if min is _NoValue else min)
    hi = a_max if a_max is not _NoValue else (None if max is _NoValue else max)
    return _store(c.name, out, _api.clip(c.array(a), None if lo is None else c.operand(lo), None if hi is None else c.operand(hi)))


@_register(np.where)
def _where(c: _Call, condition: Any, x: Any = _NoValue, y: Any = _NoValue) -> Any:
    if x is _NoValue and y is _NoValue:
        return _api.nonzero(c.array(condition))
    if x is _NoValue or y is _NoValue:
        raise _refuse(c.name, "give both x and y, or neither")
    return _api.where(c.array(condition), c.operand(x), c.operand(y))


@_register(np.nonzero)
def _nonzero(c: _Call, a: Any) -> Any:
    return _api.nonzero(c.array(a))


@_register(np.isclose)
def _isclose(c: _Call, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
    return _composite.isclose(c.operand(a), c.operand(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


@_register(np.allclose)
def _allclose(c: _Call, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
    return _composite.allclose(c.operand(a), c.operand(b), rtol=rtol, atol=atol, equal_nan=equal_nan)  # a Python bool, as NumPy's


def _dims(c: _Call, shape: Any) -> tuple[int, ...]:
    """NumPy's ``shape``/``dims`` argument of unravel_index and ravel_multi_index, checked as NumPy does."""
    if isinstance(shape, NDArray):
        shape = shape.tolist()
    seq = shape.tolist() if isinstance(shape, np.ndarray) else shape
    dims = parse_shape(seq, c.name, "dims")  # the constructors' parser: no float, bool, dict or set
    total = 1
    for d in dims:
        if d < 0:
            raise ValueError(f"{c.name}: dimensions must be non-negative, got {dims}")
        total *= d
    if total > np.iinfo(np.int64).max:
        raise ValueError(f"{c.name}: invalid dims: array size defined by dims is larger than the maximum possible size")
    return dims


@_register(np.unravel_index)
def _unravel_index(c: _Call, indices: Any, shape: Any, order: str = "C") -> Any:
    """Coordinates of flat indices, computed on the device with ``//`` and ``%`` (Dask's
    argmin/argmax over all axes call it on nda chunks); out-of-range indices are NumPy's ValueError."""
    if order not in ("C", "F"):
        raise ValueError(f"{c.name}: order must be 'C' or 'F', got {order!r}")
    idx = c.array(indices)
    if idx.dtype.numpy.kind not in "iu":
        raise TypeError(f"{c.name}: only integer indices are permitted, got {idx.dtype.name}")
    dims = _dims(c, shape)
    size = 1
    for d in dims:
        size *= d
    if not dims and idx.ndim:
        raise ValueError(f"{c.name}: multiple indices are not supported for 0d arrays")
    if idx.size and not (0 <= int(_api.min(idx)) and int(_api.max(idx)) < size):  # host reads, as NumPy's check
        raise ValueError(f"{c.name}: an index is out of bounds for an array of size {size}")
    rest = _api.astype(idx, _dtypes.int64)
    coords: list[Any] = []
    for d in reversed(dims) if order == "C" else dims:
        coords.append(rest % d if d else rest * 0)
        rest = rest // d if d else rest
    return tuple(reversed(coords)) if order == "C" else tuple(coords)


@_register(np.ravel_multi_index)
def _ravel_multi_index(c: _Call, multi_index: Any, dims: Any, mode: Any = "raise", order: str = "C") -> Any:
    """Flat indices of coordinates (the inverse of ``unravel_index``), on the device, with
    NumPy's ``mode`` ('raise', 'wrap', 'clip', or one per dimension)."""
    if order not in ("C", "F"):
        raise ValueError(f"{c.name}: order must be 'C' or 'F', got {order!r}")
    dims = _dims(c, dims)
    if 0 in dims:
        raise ValueError(f"{c.name}: cannot unravel if shape has zero entries (is empty)")
    coords = [c.array(m) for m in multi_index]
    if len(coords) != len(dims):
        raise ValueError(f"{c.name}: parameter multi_index must be a sequence of length {len(dims)}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if len(modes) != len(dims) or any(m not in ("raise", "wrap", "clip") for m in modes):
        raise ValueError(f"{c.name}: mode must be 'raise', 'wrap' or 'clip', or one of them per dimension, got {mode!r}")
    flat: Any = None
    stride = 1
    for k in range(len(dims) - 1, -1, -1) if order == "C" else range(len(dims)):
        x, d, m = coords[k], dims[k], modes[k]
        if x.dtype.numpy.kind not in "iu":
            raise TypeError(f"{c.name}: only integer indices are permitted, got {x.dtype.name}")
        x = _api.astype(x, _dtypes.int64)
        if m == "wrap" and d:
            x = x % d
        elif m == "clip":
            x = _api.clip(x, 0, max(d - 1, 0))
        elif x.size and not (0 <= int(_api.min(x)) and int(_api.max(x)) < d):  # host reads, as NumPy's check
            raise ValueError(f"{c.name}: invalid entry in coordinates array")
        flat = x * stride if flat is None else flat + x * stride
        stride *= d
    return flat


@_register(np.copyto)
def _copyto(c: _Call, dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> Any:
    if not isinstance(dst, NDArray):
        raise _refuse(c.name, "the destination is not an nda array")
    return _api.copyto(dst, src, casting=casting, where=where)


@_register(np.real)
def _real(c: _Call, val: Any) -> Any:
    return _api.real(c.array(val))


@_register(np.imag)
def _imag(c: _Call, val: Any) -> Any:
    x = c.array(val)
    return _api.imag(x) if x.dtype.category == "complex floating" else _api.zeros_like(x)


@_register(np.isin)
def _isin(c: _Call, element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *, kind: Any = None) -> Any:
    return _api.isin(c.array(element), c.array(test_elements), invert=invert)


# shapes and manipulation ------------------------------------------------------------------


@_register(np.shape)
def _shape(c: _Call, a: Any) -> Any:
    return c.array(a).shape


@_register(np.ndim)
def _ndim(c: _Call, a: Any) -> Any:
    return c.array(a).ndim


@_register(np.size)
def _size(c: _Call, a: Any, axis: Any = None) -> Any:
    x = c.array(a)
    return x.size if axis is None else x.shape[axis]


def _cast_all(c: _Call, xs: list[Any], dtype: Any, casting: Any) -> list[Any]:
    """``xs`` cast to NumPy's ``dtype=`` of a joining function, under its ``casting=`` rule."""
    if dtype is None:
        return xs
    target = _dtypes.as_dtype(dtype)
    for x in xs:
        if not np.can_cast(x.dtype.numpy, target.numpy, casting=casting):
            raise TypeError(f"{c.name}: cannot cast {x.dtype.name} to dtype={target.name} under casting={casting!r}")
    return [_api.astype(x, target) for x in xs]


@_register(np.stack)
def _stack(c: _Call, arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None, casting: Any = "same_kind") -> Any:
    return _store(c.name, out, _api.stack(_cast_all(c, c.arrays(arrays), dtype, casting), axis=axis))


@_register(np.reshape)
def _reshape(c: _Call, a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None, copy: Any = None) -> Any:
    if order != "C":
        raise _unsupported(c.name, "order", order)
    target = newshape if shape is None else shape
    return _api.reshape(c.array(a), target, copy=copy)  # reshape parses the shape (no bool, dict or set)


@_register(np.transpose, getattr(np, "permute_dims", None))
def _transpose(c: _Call, a: Any, axes: Any = None) -> Any:
    x = c.array(a)
    return _api.permute_dims(x, tuple(range(x.ndim - 1, -1, -1)) if axes is None else tuple(axes))


@_register(np.moveaxis)
def _moveaxis(c: _Call, a: Any, source: Any, destination: Any) -> Any:
    return _composite.moveaxis(c.array(a), source, destination)


@_register(np.expand_dims)
def _expand_dims(c: _Call, a: Any, axis: Any) -> Any:
    return _api.expand_dims(c.array(a), axis=_axis(axis))


@_register(np.squeeze)
def _squeeze(c: _Call, a: Any, axis: Any = None) -> Any:
    x = c.array(a)
    if axis is None:
        axis = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return _api.squeeze(x, axis=_axis(axis))


@_register(np.broadcast_to)
def _broadcast_to(c: _Call, array: Any, shape: Any, subok: bool = False) -> Any:
    return _api.broadcast_to(c.array(array), (shape,) if isinstance(shape, int) else tuple(shape))


@_register(np.broadcast_arrays)
def _broadcast_arrays(c: _Call, *args: Any, subok: bool = False) -> Any:
    return _composite.broadcast_arrays(*c.arrays(args))


@_register(np.flip)
def _flip(c: _Call, m: Any, axis: Any = None) -> Any:
    return _api.flip(c.array(m), axis=_axis(axis))


@_register(np.roll)
def _roll(c: _Call, a: Any, shift: Any, axis: Any = None) -> Any:
    return _api.roll(c.array(a), tuple(shift) if isinstance(shift, list) else shift, axis=_axis(axis))


@_register(np.repeat)
def _repeat(c: _Call, a: Any, repeats: Any, axis: Any = None) -> Any:
    reps = repeats if isinstance(repeats, int) or repeats.__class__ is NDArray else c.array(repeats)
    return _api.repeat(c.array(a), reps, axis=axis)


@_register(np.tile)
def _tile(c: _Call, A: Any, reps: Any) -> Any:  # noqa: N803 - NumPy's name
    if isinstance(reps, (int, np.integer)) or getattr(reps, "ndim", None) == 0:
        return _api.tile(c.array(A), (int(reps),))
    return _api.tile(c.array(A), tuple(int(r) for r in reps))


@_register(np.tril)
def _tril(c: _Call, m: Any, k: int = 0) -> Any:
    return _api.tril(c.array(m), k=k)


@_register(np.triu)
def _triu(c: _Call, m: Any, k: int = 0) -> Any:
    return _api.triu(c.array(m), k=k)


@_register(np.take_along_axis)
def _take_along_axis(c: _Call, arr: Any, indices: Any, axis: Any = -1) -> Any:
    x = c.array(arr)
    if axis is None:
        x, axis = _flat(x), 0
    return _api.take_along_axis(x, c.array(indices), axis=axis)


def _sort_handler(op: str) -> Callable[..., Any]:
    def handler(c: _Call, a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
        if order is not None:
            raise _unsupported(c.name, "order", order)
        x = c.array(a)
        if axis is None:
            x, axis = _flat(x), 0
        return getattr(_api, op)(x, axis=axis, stable=bool(stable) or kind in ("stable", "mergesort"))

    return handler


_register(np.sort)(_sort_handler("sort"))
_register(np.argsort)(_sort_handler("argsort"))


@_register(np.searchsorted)
def _searchsorted(c: _Call, a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    return _api.searchsorted(c.array(a), c.operand(v), side=side, sorter=None if sorter is None else c.array(sorter))


@_register(np.diff)
def _diff(c: _Call, a: Any, n: int = 1, axis: int = -1, prepend: Any = _NoValue, append: Any = _NoValue) -> Any:
    x = c.array(a)
    extra = {}
    for key, value in (("prepend", prepend), ("append", append)):
        if value is not _NoValue:
            arr = c.array(value)
            if arr.ndim == 0:  # NumPy broadcasts a scalar to x's shape without the axis
                shape = list(x.shape)
                shape[axis] = 1
                arr = _api.broadcast_to(arr, tuple(shape))
            extra[key] = arr
    return _composite.diff(x, n=n, axis=axis, **extra)


@_register(np.meshgrid)
def _meshgrid(c: _Call, *xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> Any:
    if sparse:
        raise _unsupported(c.name, "sparse", sparse)
    return _composite.meshgrid(*c.arrays(xi), indexing=indexing)


@_register(np.copy)
def _copy(c: _Call, a: Any, order: str = "K", subok: bool = False) -> Any:
    return _api.copy(c.array(a))


@_register(getattr(np, "astype", None))
def _astype(c: _Call, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    return _api.astype(c.array(x), dtype, copy=copy)


def _like_handler(op: str, creation: str, fill: bool) -> Callable[..., Any]:
    names = (("fill_value",) if fill else ()) + ("dtype", "order", "subok", "shape")

    def handler(c: _Call, prototype: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) > len(names):
            raise TypeError(f"{c.name}() takes at most {len(names) + 1} positional arguments")
        params = dict(zip(names, args))
        for key, value in kwargs.items():
            if key in params or key not in names + ("device",):
                raise TypeError(f"{c.name}() got an unexpected or repeated keyword argument {key!r}")
            params[key] = value
        _check_defaults(c.name, params, order="K", subok=True)
        x = c.array(prototype)
        dtype, shape, device = params.get("dtype"), params.get("shape"), params.get("device")
        dt = x.dtype if dtype is None else _dtypes.as_dtype(dtype)
        dev = x.device if device is None else device
        extra = (c.operand(params["fill_value"]),) if fill else ()
        if shape is None:
            return getattr(_api, op)(x, *extra, dtype=dt, device=dev)
        return getattr(_api, creation)(check_shape(shape, c.name), *extra, dtype=dt, device=dev)

    return handler


_register(np.zeros_like)(_like_handler("zeros_like", "zeros", False))
_register(np.ones_like)(_like_handler("ones_like", "ones", False))
_register(np.empty_like)(_like_handler("empty_like", "empty", False))
_register(np.full_like)(_like_handler("full_like", "full", True))


# creation with like= (``np.asarray(data, like=x)``: an array of x's kind, on x's device) -----------


@_register(np.asarray, np.array, np.asanyarray, np.ascontiguousarray)
def _asarray_like(c: _Call, a: Any, dtype: Any = None, *args: Any, copy: Any = None, **kwargs: Any) -> Any:
    if kwargs.get("order", "K") is None:  # NumPy's own default for asarray (Dask passes it): "K"
        del kwargs["order"]
    _check_defaults(c.name, kwargs, order="K", subok=False, ndmin=0)
    _leftover(c.name, kwargs)
    if args:
        raise _refuse(c.name, "pass order=/copy= by keyword")
    if isinstance(a, np.generic):
        a = np.asarray(a)
    return _api.asarray(a, dtype=dtype, device=c.device, copy=copy)


def _filled(op: str) -> Callable[..., Any]:
    def handler(c: _Call, shape: Any, *args: Any, dtype: Any = None, order: str = "C", **kwargs: Any) -> Any:
        _leftover(c.name, {k: v for k, v in kwargs.items() if k != "device"})
        fill = args[:1] if op == "full" else ()
        if len(args) > len(fill):
            dtype = args[len(fill)]
        if order not in ("C", "K", "A"):
            raise _unsupported(c.name, "order", order)
        fill = tuple(c.operand(v) for v in fill)
        return getattr(_api, op)(shape, *fill, dtype=None if dtype is None else _dtypes.as_dtype(dtype), device=c.device)

    return handler


for _name in ("empty", "zeros", "ones", "full"):
    _register(getattr(np, _name))(_filled(_name))


@_register(np.arange)
def _arange_like(c: _Call, *args: Any, dtype: Any = None, **kwargs: Any) -> Any:
    start, stop, step = (list(args) + [None, None, None])[:3]
    start = kwargs.pop("start", start)
    stop = kwargs.pop("stop", stop)
    step = kwargs.pop("step", step)
    _leftover(c.name, {k: v for k, v in kwargs.items() if k != "device"})
    return _api.arange(start, stop, 1 if step is None else step, dtype=dtype, device=c.device)


@_register(np.eye)
def _eye_like(c: _Call, N: int, M: Any = None, k: int = 0, dtype: Any = float, order: str = "C", **kwargs: Any) -> Any:  # noqa: N803
    _leftover(c.name, {kk: v for kk, v in kwargs.items() if kk != "device"})
    return _api.eye(N, M, k=k, dtype=_dtypes.as_dtype(dtype), device=c.device)


@_register(np.may_share_memory, np.shares_memory)
def _shares_memory(c: _Call, a: Any, b: Any, max_work: Any = None) -> bool:
    """Whether ``a`` and ``b`` (nda or NumPy arrays) may share memory, without copying anything.

    Two nda arrays on one device may when they have one base (a view of the other, or
    both views of a third); an nda array on cpu is compared with NumPy's rule on its
    buffer; device memory never holds a NumPy array's data.
    """

    def host_view(v: Any) -> Any:
        if v.__class__ is NDArray:
            return np.asarray(v) if v.device.type == "cpu" and v.layout.name == "strided" else None
        return v

    if a.__class__ is NDArray and b.__class__ is NDArray:
        if a.device is not b.device:
            return False
        if a.device.type != "cpu" or a.layout.name != "strided" or b.layout.name != "strided":
            return (a if a._base is None else a._base) is (b if b._base is None else b._base)
    ha, hb = host_view(a), host_view(b)
    if ha is None or hb is None:
        return False
    return bool(np.may_share_memory(ha, hb) if max_work is None else np.shares_memory(ha, hb, max_work=max_work))


# dtypes --------------------------------------------------------------------------------------


def _numpy_dtypes(values: Any) -> list[Any]:
    return [v.dtype.numpy if v.__class__ is NDArray else (v.numpy if type(v) is _dtypes.DType else v) for v in values]


@_register(np.result_type)
def _result_type(c: _Call, *arrays_and_dtypes: Any) -> Any:
    return np.result_type(*_numpy_dtypes(arrays_and_dtypes))


@_register(np.can_cast)
def _can_cast(c: _Call, from_: Any, to: Any, casting: str = "safe") -> Any:
    (src,) = _numpy_dtypes((from_,))
    return np.can_cast(src, to, casting=casting)


@_register(np.iscomplexobj)
def _iscomplexobj(c: _Call, x: Any) -> bool:
    return bool(c.array(x).dtype.category == "complex floating")


@_register(np.isrealobj)
def _isrealobj(c: _Call, x: Any) -> bool:
    return bool(c.array(x).dtype.category != "complex floating")
