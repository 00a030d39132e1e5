"""NumPy's protocols on NDArray: ``__array_ufunc__`` and ``__array_function__``.

The policy (the README's "Ecosystem" section states it for users):

* A NumPy ufunc or function that nda has an equivalent of runs nda's function, on the
  arrays' device, with nda's dtype rules, and returns nda arrays (CuPy's model):
  ``np.sin(x)``, ``np.add(x, 1)``, ``np.sum(x, axis=0)``, ``np.concatenate([x, y])``,
  ``np.linalg.qr(x)`` (``UFUNCS`` and ``FUNCTIONS`` list them). NumPy's own keywords are
  translated (``out=`` an nda array, ``dtype=``, ``ddof=``, ``keepdims=``, ``axis=None``
  meaning "flattened").
* Anything else (a function nda has no equivalent of, ``np.median``; a keyword nda cannot
  honour, ``where=``, ``order="F"``; a NumPy array as ``out=``) is a *host fallback*: NumPy
  computes it on host copies (``np.asarray`` of each nda argument; no copy on cpu) and
  returns NumPy's result, what NumPy does for any array-like with ``__array__``. It
  warns once per function with :class:`nda.FallbackWarning`; ``nda.config.fallback =
  "error"`` refuses instead (:class:`nda.FallbackError`, naming what happened) and
  ``"silent"`` silences it, as for nda's other fallbacks. scikit-learn relies on this:
  with ``array_api_dispatch`` off it calls NumPy functions on any array ``np.asarray``
  accepts, and array_api_strict's arrays (which have no ``__array_function__``) work there.
* NumPy scalars are weak scalars, like the Python scalars they hold (see
  ``nda._dtypes.python_scalar``); in ufunc calls so are 0-d NumPy arrays, because NumPy
  hands its scalars to ``__array_ufunc__`` as 0-d arrays. NumPy arrays passed next to nda
  arrays (``np.ones(3) + x``, Dask's element counts in ``mean``) are arrays: they join the
  call as nda arrays on the device of the nda arguments, keeping their dtype (a
  host-to-device copy, as PyTorch does). nda's own functions stay strict:
  ``nda.add(x, np.ones(3))`` is a TypeError.

``__array__`` (an explicit host copy, ``np.asarray(x)``) is defined with NDArray itself.
This module sits above the namespace's generated functions and attaches the two protocol
methods to NDArray when ``nda._api`` is imported.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from . import _api, _composite, _dtypes, _frontend
from . import dask as _dask
from . import fft as _fft
from . import linalg as _linalg
from ._array import NDArray
from ._devices import Device
from .ops._spec import CATALOG

__all__ = ["array_ufunc", "array_function", "UFUNCS", "FUNCTIONS"]

_NoValue = getattr(np, "_NoValue", object())

#: NumPy ufunc -> the nda element-wise function that computes the same thing.
UFUNCS: dict[Any, str] = {
    np.absolute: "abs", np.add: "add", np.arccos: "acos", np.arccosh: "acosh", np.arcsin: "asin",
    np.arcsinh: "asinh", np.arctan: "atan", np.arctan2: "atan2", np.arctanh: "atanh",
    np.bitwise_and: "bitwise_and", np.bitwise_or: "bitwise_or", np.bitwise_xor: "bitwise_xor",
    np.invert: "bitwise_invert", np.left_shift: "bitwise_left_shift", np.right_shift: "bitwise_right_shift",
    np.ceil: "ceil", np.conjugate: "conj", np.copysign: "copysign", np.cos: "cos", np.cosh: "cosh",
    np.divide: "divide", np.equal: "equal", np.exp: "exp", np.expm1: "expm1", np.floor: "floor",
    np.floor_divide: "floor_divide", np.greater: "greater", np.greater_equal: "greater_equal",
    np.hypot: "hypot", np.isfinite: "isfinite", np.isinf: "isinf", np.isnan: "isnan", np.less: "less",
    np.less_equal: "less_equal", np.log: "log", np.log1p: "log1p", np.log2: "log2", np.log10: "log10",
    np.logaddexp: "logaddexp", np.logical_and: "logical_and", np.logical_not: "logical_not",
    np.logical_or: "logical_or", np.logical_xor: "logical_xor", np.maximum: "maximum", np.minimum: "minimum",
    np.multiply: "multiply", np.negative: "negative", np.nextafter: "nextafter", np.not_equal: "not_equal",
    np.positive: "positive", np.power: "pow", np.reciprocal: "reciprocal", np.remainder: "remainder",
    np.rint: "round", np.sign: "sign", np.signbit: "signbit", np.sin: "sin", np.sinh: "sinh",
    np.square: "square", np.sqrt: "sqrt", np.subtract: "subtract", np.tan: "tan", np.tanh: "tanh",
    np.trunc: "trunc", np.matmul: "matmul",
}
if hasattr(np, "vecdot"):
    UFUNCS[np.vecdot] = "vecdot"

#: ``ufunc.reduce`` / ``ufunc.accumulate`` -> the nda reduction or scan.
_REDUCE = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min", np.logical_and: "all", np.logical_or: "any"}
_ACCUMULATE = {np.add: "cumulative_sum", np.multiply: "cumulative_prod"}

#: Suggestions for common NumPy names that nda spells differently or lacks.
_INSTEAD = {
    "exp2": "nda.pow(2.0, x)", "cbrt": "nda.pow(x, 1 / 3) for x >= 0", "fabs": "nda.abs",
    "float_power": "nda.pow on float64 arrays", "fmod": "nda.remainder (its sign follows x2)",
    "einsum": "nda.tensordot / nda.matmul", "allclose": "nda.all(nda.abs(x - y) <= atol + rtol * nda.abs(y))",
}


# ---------------------------------------------------------------------------- arguments

class _Call:
    """One protocol call: the device its nda arrays live on, and conversions onto it."""

    __slots__ = ("name", "device")

    def __init__(self, name: str, device: Device) -> None:
        self.name = name
        self.device = device

    def array(self, value: Any) -> Any:
        """An nda array for an array argument (NumPy arrays and sequences join on the device)."""
        if value.__class__ is NDArray:
            return value
        if isinstance(value, np.generic):
            return _api.asarray(_dtypes.python_scalar(value), device=self.device)
        if isinstance(value, (np.ndarray, list, tuple, bool, int, float, complex)):
            try:
                return _api.asarray(value, device=self.device)
            except TypeError as err:
                raise TypeError(f"{self.name}: {err}") from None
        raise TypeError(
            f"{self.name}: cannot use a {type(value).__module__}.{type(value).__name__} next to nda arrays; "
            f"convert it with nda.asarray(..., device='{self.device}')"
        )

    def operand(self, value: Any, zero_d_is_scalar: bool = False) -> Any:
        """An element-wise operand: arrays as in :meth:`array`, scalars stay (weak) scalars.

        ``zero_d_is_scalar``: in a ufunc call a 0-d NumPy array is a scalar too, because
        NumPy hands its scalars to ``__array_ufunc__`` as 0-d arrays (``np.float64(1) + x``).
        """
        if value.__class__ is NDArray or value.__class__ in (bool, int, float, complex):
            return value
        if isinstance(value, np.generic):
            return _dtypes.python_scalar(value)
        if zero_d_is_scalar and isinstance(value, np.ndarray) and value.ndim == 0:
            return _dtypes.python_scalar(value[()])
        return self.array(value)

    def arrays(self, values: Any) -> list[Any]:
        return [self.array(v) for v in values]


def _device_of(values: Any) -> Device | None:
    for v in values:
        if v.__class__ is NDArray:
            return v._meta.device  # type: ignore[no-any-return]
        if v.__class__ in (list, tuple):
            found = _device_of(v)
            if found is not None:
                return found
    return None


class _Fallback(Exception):
    """Raised while translating a call that nda cannot run: NumPy runs it on host copies instead."""


def _refuse(name: str, why: str) -> _Fallback:
    return _Fallback(why)


def _unsupported(name: str, key: str, value: Any) -> _Fallback:
    return _Fallback(f"nda does not support the keyword {key}={value!r}")


def _no_equivalent(name: str) -> _Fallback:
    hint = _INSTEAD.get(name.rsplit(".", 1)[-1])
    return _Fallback("nda has no equivalent" + (f" (on the device: {hint})" if hint else ""))


def _to_host(value: Any) -> Any:
    """``value`` with every nda array replaced by ``np.asarray`` of it (a host copy; none on cpu)."""
    if value.__class__ is NDArray:
        return np.asarray(value)
    if value.__class__ in (list, tuple):
        return value.__class__(_to_host(v) for v in value)
    return value


def _host_fallback(name: str, why: Exception, run: Callable[[], Any]) -> Any:
    """Announce the fallback (warn once, or refuse under ``nda.config.fallback = "error"``), then run it."""
    from .dispatch import _announce_fallback

    _announce_fallback(
        name,
        f"{name} on nda arrays: {why}; NumPy computes it on host copies (np.asarray of each nda array) "
        f"and returns NumPy's result",
    )
    return run()


def _store(name: str, out: Any, result: Any) -> Any:
    """Write ``result`` into the nda array ``out`` (NumPy's ``out=``) and return ``out``."""
    if out is None:
        return result
    if isinstance(out, tuple):
        if len(out) != 1:
            raise _refuse(name, f"out= must hold one array, got {len(out)}")
        out = out[0]
        if out is None:
            return result
    if out.__class__ is not NDArray:
        raise TypeError(f"{name}: out= must be an nda array here, got {type(out).__module__}.{type(out).__name__}")
    if out.shape != result.shape:
        raise ValueError(f"{name}: out= has shape {out.shape} but the result has shape {result.shape}")
    out[...] = result
    return out


def _check_defaults(name: str, kwargs: dict[str, Any], **defaults: Any) -> None:
    """Pop NumPy keywords nda has no use for; any value but the default is refused."""
    for key, default in defaults.items():
        value = kwargs.pop(key, default)
        if value is _NoValue or value is default:
            continue
        if isinstance(default, str) and value in ((default,) if key != "order" else ("K", "C", "A")):
            continue
        if isinstance(default, bool) and isinstance(value, (bool, np.bool_)) and bool(value) == default:
            continue
        raise _unsupported(name, key, value)


def _leftover(name: str, kwargs: dict[str, Any]) -> None:
    for key, value in kwargs.items():
        if value is not None and value is not _NoValue:
            raise _unsupported(name, key, value)


# ---------------------------------------------------------------------------- __array_ufunc__

def array_ufunc(self: NDArray, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """NumPy ufuncs on nda arrays run nda's element-wise ops, or NumPy on host copies (see the module docstring)."""
    name = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    dask = _dask_among(inputs)
    if dask is not None:  # Dask's __array_ufunc__ takes nda arrays (now)
        return NotImplemented if dask == "defer" else getattr(ufunc, method)(*inputs, **kwargs)
    try:
        return _ufunc_on_device(self, name, ufunc, method, inputs, dict(kwargs))
    except _Fallback as why:
        return _host_fallback(name, why, lambda: _ufunc_on_host(ufunc, method, inputs, kwargs))


def _ufunc_on_host(ufunc: Any, method: str, inputs: Any, kwargs: dict[str, Any]) -> Any:
    """The ufunc on host copies; nda arrays given as ``out=`` get the results written back."""
    out = kwargs.pop("out", None)
    outs = out if isinstance(out, tuple) else (out,) if out is not None else ()
    host_outs = tuple(np.array(o) if o.__class__ is NDArray else o for o in outs)  # writable copies
    if outs:
        kwargs["out"] = host_outs if isinstance(out, tuple) else host_outs[0]
    result = getattr(ufunc, method)(*_to_host(tuple(inputs)), **kwargs)
    if not any(o.__class__ is NDArray for o in outs):
        return result
    for o, h in zip(outs, host_outs):
        if o.__class__ is NDArray:
            o[...] = _api.asarray(h, device=o.device)
    return outs[0] if len(outs) == 1 else out


def _ufunc_on_device(self: NDArray, name: str, ufunc: Any, method: str, inputs: Any, kwargs: dict[str, Any]) -> Any:
    device = _device_of(inputs) or _device_of(kwargs.get("out") or ()) or self._meta.device
    call = _Call(name, device)
    out = kwargs.pop("out", None)
    for o in out if isinstance(out, tuple) else (out,):
        if o is not None and o.__class__ is not NDArray:
            raise _Fallback(f"out= is a {type(o).__module__}.{type(o).__name__}, not an nda array")
    if method == "__call__":
        op = UFUNCS.get(ufunc)
        if op is None:
            raise _no_equivalent(name)
        dtype = kwargs.pop("dtype", None)
        if op in ("matmul", "vecdot"):
            _check_defaults(name, kwargs, axes=None, axis=None)
        _check_defaults(name, kwargs, where=True, casting="same_kind", order="K", subok=True, signature=None)
        _leftover(name, kwargs)
        args = [call.operand(v, zero_d_is_scalar=True) for v in inputs]
        if dtype is not None:
            target = _dtypes.as_dtype(dtype)
            if CATALOG[op].result == "bool":  # a comparison or test: dtype is the output's
                if target is not _dtypes.bool:
                    raise _refuse(name, f"dtype={target.name}: this ufunc gives bool results")
            else:
                args = [_api.astype(a, target) if a.__class__ is NDArray else a for a in args]
        fn = getattr(_api, op) if hasattr(_api, op) else getattr(_linalg, op)
        if op in ("matmul", "vecdot") and any(a.__class__ is not NDArray for a in args):
            args = [call.array(a) for a in args]
        result = fn(*args)
        if dtype is not None and result.dtype is not _dtypes.as_dtype(dtype):
            result = _api.astype(result, _dtypes.as_dtype(dtype))
        return _store(name, out, result)
    if method in ("reduce", "accumulate"):
        table = _REDUCE if method == "reduce" else _ACCUMULATE
        op = table.get(ufunc)
        if op is None:
            raise _no_equivalent(name)
        (x,) = inputs
        x = call.array(x)
        axis = kwargs.pop("axis", 0)
        dtype = kwargs.pop("dtype", None)
        keepdims = kwargs.pop("keepdims", False)
        _check_defaults(name, kwargs, where=True, initial=_NoValue)
        _leftover(name, kwargs)
        if method == "accumulate":
            result = getattr(_api, op)(x, axis=axis, dtype=dtype)
        else:
            result = _reduction(op, x, axis, dtype, keepdims)
        return _store(name, out, result)
    raise _refuse(name, f"the ufunc method {method!r} is not supported by nda; call the nda function, or use np.asarray(x) (a host copy)")


def _reduction(op: str, x: Any, axis: Any, dtype: Any, keepdims: Any) -> Any:
    fn = getattr(_api, op)
    if isinstance(axis, list):
        axis = tuple(axis)
    kw: dict[str, Any] = {"axis": axis, "keepdims": bool(keepdims)}
    if op in ("sum", "prod") and dtype is not None:
        kw["dtype"] = dtype
        return fn(x, **kw)
    result = fn(x, **kw)
    if dtype is not None and result.dtype is not _dtypes.as_dtype(dtype):
        result = _api.astype(result, _dtypes.as_dtype(dtype))
    return result


# ---------------------------------------------------------------------------- __array_function__

def array_function(self: NDArray, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    """NumPy functions on nda arrays run nda's functions, or NumPy on host copies (see the module docstring)."""
    dask = _dask_among(list(args) + [a for v in args if isinstance(v, (list, tuple)) for a in v])
    if dask is not None:  # Dask's __array_function__ takes nda arrays (now)
        return NotImplemented if dask == "defer" else func(*args, **kwargs)
    for t in types:
        if t is not NDArray and not issubclass(t, np.ndarray) and getattr(t, "__array_function__", None) is not None:
            return NotImplemented  # another array library: let NumPy ask it
    name = f"{func.__module__}.{func.__name__}"
    handler = FUNCTIONS.get(func)
    try:
        if handler is None:
            raise _no_equivalent(name)
        out = kwargs.get("out")
        if out is not None and out.__class__ is not NDArray:
            raise _Fallback(f"out= is a {type(out).__module__}.{type(out).__name__}, not an nda array")
        device = _device_of(args) or _device_of(kwargs.values()) or self._meta.device
        return handler(_Call(name, device), *args, **kwargs)
    except _Fallback as why:
        return _host_fallback(name, why, lambda: func(*_to_host(tuple(args)), **{k: _to_host(v) for k, v in kwargs.items()}))


FUNCTIONS: dict[Any, Callable[..., Any]] = {}


def _register(*funcs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(handler: Callable[..., Any]) -> Callable[..., Any]:
        for f in funcs:
            if f is not None:
                FUNCTIONS[f] = handler
        return handler

    return wrap


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _flat(x: Any) -> Any:
    return _api.reshape(x, (-1,))


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
for _np_fns, _op in (((np.max, np.amax), "max"), ((np.min, np.amin), "min"), ((np.any,), "any"), ((np.all,), "all")):
    def _extremum(c: _Call, a: Any, axis: Any = None, out: Any = None, keepdims: Any = False, _op: str = _op, **kw: Any) -> Any:
        return _reduce_handler(_op, False)(c, a, axis=axis, out=out, keepdims=keepdims, **kw)

    _register(*_np_fns)(_extremum)


@_register(np.mean)
def _mean(c: _Call, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, **kw: Any) -> Any:
    _check_defaults(c.name, kw, where=True)
    _leftover(c.name, kw)
    x = c.array(a)
    if dtype is not None and _dtypes.as_dtype(dtype).kind in ("real floating", "complex floating"):
        x = _api.astype(x, _dtypes.as_dtype(dtype))
    keepdims = False if keepdims is _NoValue else keepdims
    return _store(c.name, out, _reduction("mean", x, _axis(axis), dtype, keepdims))


def _spread(op: str) -> Callable[..., Any]:
    def handler(c: _Call, a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = False, **kw: Any) -> Any:
        correction = kw.pop("correction", _NoValue)
        _check_defaults(c.name, kw, where=True, mean=_NoValue)
        _leftover(c.name, kw)
        x = c.array(a)
        if dtype is not None and _dtypes.as_dtype(dtype).kind in ("real floating", "complex floating"):
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
    def handler(c: _Call, a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        x = c.array(a)
        if axis is None:
            x, axis = _flat(x), 0
        return _store(c.name, out, getattr(_api, op)(x, axis=axis, dtype=dtype))

    return handler


_register(np.cumsum, getattr(np, "cumulative_sum", None))(_scan_handler("cumulative_sum"))
_register(np.cumprod, getattr(np, "cumulative_prod", None))(_scan_handler("cumulative_prod"))


@_register(np.count_nonzero)
def _count_nonzero(c: _Call, a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    return _api.count_nonzero(c.array(a), axis=_axis(axis), keepdims=keepdims)


# element-wise functions that are not ufuncs ----------------------------------------------

@_register(np.clip)
def _clip(c: _Call, a: Any, a_min: Any = _NoValue, a_max: Any = _NoValue, out: Any = None, *, min: Any = _NoValue, max: Any = _NoValue, **kw: Any) -> Any:  # noqa: A002
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


@_register(np.round, getattr(np, "around", None))
def _round(c: _Call, a: Any, decimals: int = 0, out: Any = None) -> Any:
    if decimals != 0:
        raise _refuse(c.name, f"decimals={decimals!r}: nda.round rounds to integers; scale first (nda.round(x * 10**d) / 10**d)")
    return _store(c.name, out, _api.round(c.array(a)))


@_register(np.real)
def _real(c: _Call, val: Any) -> Any:
    return _api.real(c.array(val))


@_register(np.imag)
def _imag(c: _Call, val: Any) -> Any:
    x = c.array(val)
    return _api.imag(x) if x.dtype.kind == "complex floating" else _api.zeros_like(x)


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


@_register(np.concatenate)
def _concatenate(c: _Call, arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None, casting: Any = "same_kind") -> Any:
    xs = c.arrays(arrays)
    if axis is None:
        xs, axis = [_flat(x) for x in xs], 0
    if dtype is not None:
        xs = [_api.astype(x, _dtypes.as_dtype(dtype)) for x in xs]
    return _store(c.name, out, _api.concat(xs, axis=axis))


@_register(np.stack)
def _stack(c: _Call, arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None, casting: Any = "same_kind") -> Any:
    xs = c.arrays(arrays)
    if dtype is not None:
        xs = [_api.astype(x, _dtypes.as_dtype(dtype)) for x in xs]
    return _store(c.name, out, _api.stack(xs, axis=axis))


@_register(np.vstack, getattr(np, "row_stack", None))
def _vstack(c: _Call, tup: Any, *, dtype: Any = None, casting: Any = "same_kind") -> Any:
    xs = [_at_least(x, 2) for x in c.arrays(tup)]
    return _api.concat([xs[0] if dtype is None else _api.astype(xs[0], dtype)] + xs[1:], axis=0)


@_register(np.hstack)
def _hstack(c: _Call, tup: Any, *, dtype: Any = None, casting: Any = "same_kind") -> Any:
    xs = [_at_least(x, 1) for x in c.arrays(tup)]
    return _api.concat([xs[0] if dtype is None else _api.astype(xs[0], dtype)] + xs[1:], axis=0 if xs[0].ndim == 1 else 1)


@_register(np.column_stack)
def _column_stack(c: _Call, tup: Any) -> Any:
    xs = [x if x.ndim >= 2 else _api.reshape(x, (-1, 1)) for x in c.arrays(tup)]
    return _api.concat(xs, axis=1)


def _at_least(x: Any, ndim: int) -> Any:
    return x if x.ndim >= ndim else _api.reshape(x, (1,) * (ndim - x.ndim) + x.shape)


@_register(np.reshape)
def _reshape(c: _Call, a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None, copy: Any = None) -> Any:
    if order != "C":
        raise _unsupported(c.name, "order", order)
    target = newshape if shape is None else shape
    return _api.reshape(c.array(a), (target,) if isinstance(target, int) else tuple(target), copy=copy)


@_register(np.ravel)
def _ravel(c: _Call, a: Any, order: str = "C") -> Any:
    if order not in ("C", "K", "A"):
        raise _unsupported(c.name, "order", order)
    return _flat(c.array(a))


@_register(np.transpose, getattr(np, "permute_dims", None))
def _transpose(c: _Call, a: Any, axes: Any = None) -> Any:
    x = c.array(a)
    return _api.permute_dims(x, tuple(range(x.ndim - 1, -1, -1)) if axes is None else tuple(axes))


@_register(np.swapaxes)
def _swapaxes(c: _Call, a: Any, axis1: int, axis2: int) -> Any:
    x = c.array(a)
    order = list(range(x.ndim))
    i, j = order[axis1], order[axis2]
    order[i], order[j] = order[j], order[i]
    return _api.permute_dims(x, tuple(order))


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


def _atleast_handler(ndim: int) -> Callable[..., Any]:
    def handler(c: _Call, *arys: Any) -> Any:
        results = []
        for a in arys:
            x = c.array(a)
            if x.ndim < ndim:
                shape = {0: (1,) * ndim, 1: (1,) + x.shape + (1,) * (ndim - 2), 2: x.shape + (1,)}[x.ndim] if ndim == 3 else (1,) * (ndim - x.ndim) + x.shape
                x = _api.reshape(x, shape)
            results.append(x)
        return results[0] if len(results) == 1 else tuple(results)

    return handler


FUNCTIONS[np.atleast_1d] = _atleast_handler(1)
FUNCTIONS[np.atleast_2d] = _atleast_handler(2)
FUNCTIONS[np.atleast_3d] = _atleast_handler(3)


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
    return _api.tile(c.array(A), (reps,) if isinstance(reps, int) else tuple(reps))


@_register(np.tril)
def _tril(c: _Call, m: Any, k: int = 0) -> Any:
    return _api.tril(c.array(m), k=k)


@_register(np.triu)
def _triu(c: _Call, m: Any, k: int = 0) -> Any:
    return _api.triu(c.array(m), k=k)


@_register(np.take)
def _take(c: _Call, a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    if mode != "raise":
        raise _unsupported(c.name, "mode", mode)
    x = c.array(a)
    if axis is None:
        x, axis = _flat(x), 0
    idx = c.array(indices)
    if idx.ndim == 1:
        result = _api.take(x, idx, axis=axis)
    else:  # NumPy takes any index shape: take the flat indices and restore it
        flat = _api.take(x, _flat(idx), axis=axis)
        ax = axis % x.ndim
        result = _api.reshape(flat, x.shape[:ax] + idx.shape + x.shape[ax + 1:])
    return _store(c.name, out, result)


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
        return getattr(_api, creation)((shape,) if isinstance(shape, int) else tuple(shape), *extra, dtype=dt, device=dev)

    return handler


_register(np.zeros_like)(_like_handler("zeros_like", "zeros", False))
_register(np.ones_like)(_like_handler("ones_like", "ones", False))
_register(np.empty_like)(_like_handler("empty_like", "empty", False))
_register(np.full_like)(_like_handler("full_like", "full", True))


# creation with like= (``np.asarray(data, like=x)``: an array of x's kind, on x's device) -----------

@_register(np.asarray, np.array, np.asanyarray, np.ascontiguousarray)
def _asarray_like(c: _Call, a: Any, dtype: Any = None, *args: Any, copy: Any = None, **kwargs: Any) -> Any:
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
    return [v.dtype.numpy if v.__class__ is NDArray else (v.numpy if v.__class__ is _dtypes.DType else v) for v in values]


@_register(np.result_type)
def _result_type(c: _Call, *arrays_and_dtypes: Any) -> Any:
    return np.result_type(*_numpy_dtypes(arrays_and_dtypes))


@_register(np.can_cast)
def _can_cast(c: _Call, from_: Any, to: Any, casting: str = "safe") -> Any:
    (src,) = _numpy_dtypes((from_,))
    return np.can_cast(src, to, casting=casting)


@_register(np.iscomplexobj)
def _iscomplexobj(c: _Call, x: Any) -> bool:
    return bool(c.array(x).dtype.kind == "complex floating")


@_register(np.isrealobj)
def _isrealobj(c: _Call, x: Any) -> bool:
    return bool(c.array(x).dtype.kind != "complex floating")


# products and linear algebra ---------------------------------------------------------------------

@_register(np.dot)
def _dot(c: _Call, a: Any, b: Any, out: Any = None) -> Any:
    x, y = c.array(a), c.array(b)
    if x.ndim == 0 or y.ndim == 0:
        result = _api.multiply(x, y)
    elif x.ndim <= 2 and y.ndim <= 2 or y.ndim == 1:
        result = _api.matmul(x, y)
    else:
        raise _refuse(c.name, f"N-d dot of shapes {x.shape} and {y.shape} is not nda.matmul; use nda.tensordot(x, y, axes=([-1], [-2]))")
    return _store(c.name, out, result)


@_register(np.tensordot)
def _tensordot(c: _Call, a: Any, b: Any, axes: Any = 2) -> Any:
    if isinstance(axes, (list, tuple)) and len(axes) == 2:
        axes = tuple(tuple(v) if isinstance(v, (list, tuple)) else (v,) for v in axes)
    return _api.tensordot(c.array(a), c.array(b), axes=axes)


@_register(np.outer)
def _outer(c: _Call, a: Any, b: Any, out: Any = None) -> Any:
    return _store(c.name, out, _linalg.outer(_flat(c.array(a)), _flat(c.array(b))))


@_register(np.trace)
def _trace(c: _Call, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    x = _composite.moveaxis(c.array(a), (axis1, axis2), (-2, -1))
    return _store(c.name, out, _linalg.trace(x, offset=offset, dtype=dtype))


@_register(np.diagonal)
def _diagonal(c: _Call, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return _linalg.diagonal(_composite.moveaxis(c.array(a), (axis1, axis2), (-2, -1)), offset=offset)


@_register(np.linalg.qr)
def _qr(c: _Call, a: Any, mode: str = "reduced") -> Any:
    if mode not in ("reduced", "complete"):
        raise _unsupported(c.name, "mode", mode)
    return _linalg.qr(c.array(a), mode=mode)


@_register(np.linalg.svd)
def _svd(c: _Call, a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    x = c.array(a)
    return _linalg.svd(x, full_matrices=full_matrices) if compute_uv else _linalg.svdvals(x)


@_register(np.linalg.eigh)
def _eigh(c: _Call, a: Any, UPLO: str = "L") -> Any:  # noqa: N803 - NumPy's name
    if UPLO != "L":
        raise _unsupported(c.name, "UPLO", UPLO)
    return _linalg.eigh(c.array(a))


@_register(np.linalg.eigvalsh)
def _eigvalsh(c: _Call, a: Any, UPLO: str = "L") -> Any:  # noqa: N803 - NumPy's name
    if UPLO != "L":
        raise _unsupported(c.name, "UPLO", UPLO)
    return _linalg.eigvalsh(c.array(a))


@_register(np.linalg.cholesky)
def _cholesky(c: _Call, a: Any, /, *, upper: bool = False) -> Any:
    return _linalg.cholesky(c.array(a), upper=upper)


def _linalg_unary(name: str) -> Callable[..., Any]:
    def handler(c: _Call, a: Any) -> Any:
        return getattr(_linalg, name)(c.array(a))

    return handler


for _name in ("inv", "det", "slogdet", "eig", "eigvals", "svdvals"):
    if hasattr(np.linalg, _name) and hasattr(_linalg, _name):
        _register(getattr(np.linalg, _name))(_linalg_unary(_name))


@_register(np.linalg.solve)
def _solve(c: _Call, a: Any, b: Any) -> Any:
    return _linalg.solve(c.array(a), c.array(b))


@_register(np.linalg.matrix_power)
def _matrix_power(c: _Call, a: Any, n: int) -> Any:
    return _linalg.matrix_power(c.array(a), n)


@_register(np.linalg.pinv)
def _pinv(c: _Call, a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    tol = rtol if rtol is not None else rcond
    return _linalg.pinv(c.array(a), rtol=None if tol is None else c.operand(tol))


@_register(np.linalg.matrix_rank)
def _matrix_rank(c: _Call, A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:  # noqa: N803
    if tol is not None:
        raise _unsupported(c.name, "tol", tol)
    return _linalg.matrix_rank(c.array(A), rtol=None if rtol is None else c.operand(rtol))


@_register(np.linalg.norm)
def _norm(c: _Call, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    a = c.array(x)
    axis = _axis(axis)
    if isinstance(axis, tuple) and len(axis) == 2 or (axis is None and ord is not None and a.ndim == 2):
        if axis is not None:
            a = _composite.moveaxis(a, axis, (-2, -1))
        result = _linalg.matrix_norm(a, ord="fro" if ord is None else ord, keepdims=False)
        if keepdims:
            shape = list(a.shape[:-2]) + [1, 1]
            result = _composite.moveaxis(_api.reshape(result, tuple(shape)), (-2, -1), axis or (0, 1))
        return result
    return _linalg.vector_norm(a, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)


# fft ---------------------------------------------------------------------------------------------

def _fft_handler(name: str, many: bool) -> Callable[..., Any]:
    fn = getattr(_fft, name)

    def one(c: _Call, a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
        return _store(c.name, out, fn(c.array(a), n=n, axis=axis, norm="backward" if norm is None else norm))

    def several(c: _Call, a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
        x = c.array(a)
        if axes is None and s is None and name in ("fft2", "ifft2", "rfft2", "irfft2"):
            axes = (-2, -1)
        return _store(c.name, out, fn(x, s=None if s is None else tuple(s), axes=None if axes is None else tuple(axes), norm="backward" if norm is None else norm))

    return several if many else one


for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    _register(getattr(np.fft, _name))(_fft_handler(_name, False))
for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    _register(getattr(np.fft, _name))(_fft_handler(_name, True))
for _name, _nda_name in (("fft2", "fftn"), ("ifft2", "ifftn"), ("rfft2", "rfftn"), ("irfft2", "irfftn")):
    _handler = _fft_handler(_nda_name, True)

    def _two(c: _Call, a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None, _h: Any = _handler) -> Any:
        return _h(c, a, s=s, axes=axes, norm=norm, out=out)

    _register(getattr(np.fft, _name))(_two)


@_register(np.fft.fftshift)
def _fftshift(c: _Call, x: Any, axes: Any = None) -> Any:
    return _fft.fftshift(c.array(x), axes=_axis(axes))


@_register(np.fft.ifftshift)
def _ifftshift(c: _Call, x: Any, axes: Any = None) -> Any:
    return _fft.ifftshift(c.array(x), axes=_axis(axes))



# ---------------------------------------------------------------------------- Dask

def _rmatmul(self: NDArray, other: Any) -> Any:
    """``other @ self`` for an ``other`` that declined (a Dask array that did not know nda yet)."""
    return _foreign_operand(other, "__matmul__", self)


def _foreign_operand(other: Any, method: str, self: NDArray) -> Any:
    """An operator met an operand it does not know: a Dask array takes over once it knows nda arrays."""
    if method and _dask.is_dask_collection(other) and not _dask_knows_nda() and _dask.adopt():
        return getattr(other, method)(self)
    return NotImplemented


def _dask_knows_nda() -> bool:
    chunk_types = sys.modules.get("dask.array.chunk_types")
    return chunk_types is not None and bool(chunk_types.is_valid_chunk_type(NDArray))


def _dask_among(values: Any) -> str | None:
    """For a call with a Dask collection among ``values``: ``"defer"`` to Dask (it knows nda
    arrays), ``"redo"`` the call (nda was registered with Dask just now), else None."""
    if not any(_dask.is_dask_collection(v) for v in values):
        return None
    if _dask_knows_nda():
        return "defer"
    return "redo" if _dask.adopt() else None


NDArray.__array_ufunc__ = array_ufunc  # type: ignore[assignment]
NDArray.__array_function__ = array_function  # type: ignore[attr-defined]
NDArray.__rmatmul__ = _rmatmul  # type: ignore[attr-defined]
_frontend.foreign_operand = _foreign_operand
_dask.adopt()  # a Dask imported before nda learns about nda arrays now
