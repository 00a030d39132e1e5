"""NumPy's protocols on NDArray: ``__array_ufunc__`` and ``__array_function__``.

The policy (the README's "Ecosystem" section states it for users):

* A NumPy ufunc or function that nda has an equivalent of runs nda's function, on the
  arrays' device, and returns nda arrays (CuPy's model): ``np.sin(x)``, ``np.add(x, 1)``,
  ``np.sum(x, axis=0)``, ``np.concatenate([x, y])``, ``np.linalg.qr(x)`` (``UFUNCS`` and
  ``FUNCTIONS`` list them). NumPy's own keywords are translated (``out=`` an nda array of
  the result's dtype and shape, ``dtype=``, ``ddof=``, ``keepdims=``, ``axis=None`` meaning
  "flattened"); an ``out=`` of another dtype or shape is left to NumPy's casting and
  broadcasting rules (the host fallback below).
* The answer is NumPy's: same values and dtype, or NumPy's exception type. A ufunc call
  asks NumPy for its loop (``ufunc.resolve_dtypes``, scalars weak: see below): no loop is
  NumPy's own error (``np.divide(ints, 2, dtype=np.int64)``); otherwise the arrays are cast
  to the loop's dtypes, as NumPy does (``np.rint`` of ints is float64), and nda's op runs.
  ``ufunc.reduce``/``accumulate`` learn NumPy's dtype (or error) from the same call on a
  one-element array of the input's dtype. Where nda refuses a dtype NumPy takes with a
  TypeError (``np.logical_and`` of ints, ``np.square`` of bools, ``np.linalg.inv`` of ints,
  ``np.std`` of complex) or arguments it does not take, or its dtype rule gives another
  dtype (``np.reciprocal`` of ints), NumPy computes the call (the host fallback below) or
  raises its own error.
* Two deviations. ``numpy_scalar < x`` reaches nda as the ufunc call ``np.less(scalar,
  x)``; there nda's operator rules hold, refusals included (``np.float64(1) < complex_x``
  is nda's TypeError, as for ``1.0 < complex_x``). An explicit ``dtype=`` nda has no
  equivalent of (``np.float16``, a structured dtype) is a TypeError, as in CuPy: the result
  could not be an nda array, and Dask catches that TypeError to keep its chunks on the device.
* Anything else (a function nda has no equivalent of, ``np.median``; a keyword nda cannot
  honour, ``where=``, ``order="F"``; a NumPy array as ``out=``) is a *host fallback*: NumPy
  computes it on host copies of the nda arguments and returns NumPy's result, what NumPy
  does for any array-like with ``__array__``. The copies are fresh on every device (on cpu
  too: ``np.asarray`` would share memory that queued ops still read) and read-only, except
  the arrays NumPy writes by contract: ``out=`` (by keyword or position), ``ufunc.at``'s
  operand, the destination of ``np.copyto``/``put``/``place``/``putmask``/
  ``put_along_axis``/``fill_diagonal``, ``np.nan_to_num(x, copy=False)``. Those are
  written back through nda's setitem after the call (so the engine orders the write after
  the work queued on the array and autograd counts it, on every device), and NumPy's result
  is the nda ``out=`` where NumPy returned its copy. Any other write (a view NumPy returns,
  a function not listed) is NumPy's "read-only" ``ValueError``, never a write lost in a
  copy; ``overwrite_input=True`` gives NumPy a writable scratch copy and leaves the nda
  array as it was (``_interop_args._on_host``). It
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
This module holds the ufunc side, the entry point of the function side (its handlers are in
``nda._numpy_functions``, the shared argument handling in ``nda._interop_args``) and the Dask
hand-over (``nda.dask``); it sits above the namespace's generated functions and attaches the
protocol methods to NDArray when ``nda._api`` is imported.

Layer: arrays and front end, NumPy protocols (README, "Architecture").
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from . import _api, _dtypes, _execute, _interop_args, _numpyapi
from . import dask as _dask
from . import linalg as _linalg
from ._array import NDArray
from ._interop_args import (
    _Call,
    _Fallback,
    _check_defaults,
    _device_of,
    _leftover,
    _no_equivalent,
    _NoValue,
    _reduction,
    _refuse,
    _on_host,
    _same_device,
    _store,
    _written_by,
)
from .engine._fperrors import guard as _fp_guard
from .engine._fperrors import unguard as _fp_unguard

__all__ = ["array_ufunc", "array_function", "UFUNCS", "FUNCTIONS"]  # noqa: F822 - FUNCTIONS: the module __getattr__

#: NumPy ufunc -> the nda element-wise function that computes the same thing.
UFUNCS: dict[Any, str] = {
    np.absolute: "abs",
    np.add: "add",
    np.arccos: "acos",
    np.arccosh: "acosh",
    np.arcsin: "asin",
    np.arcsinh: "asinh",
    np.arctan: "atan",
    np.arctan2: "atan2",
    np.arctanh: "atanh",
    np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor",
    np.invert: "bitwise_invert",
    np.left_shift: "bitwise_left_shift",
    np.right_shift: "bitwise_right_shift",
    np.ceil: "ceil",
    np.conjugate: "conj",
    np.copysign: "copysign",
    np.cos: "cos",
    np.cosh: "cosh",
    np.divide: "divide",
    np.equal: "equal",
    np.exp: "exp",
    np.expm1: "expm1",
    np.floor: "floor",
    np.floor_divide: "floor_divide",
    np.greater: "greater",
    np.greater_equal: "greater_equal",
    np.hypot: "hypot",
    np.isfinite: "isfinite",
    np.isinf: "isinf",
    np.isnan: "isnan",
    np.less: "less",
    np.less_equal: "less_equal",
    np.log: "log",
    np.log1p: "log1p",
    np.log2: "log2",
    np.log10: "log10",
    np.logaddexp: "logaddexp",
    np.logical_and: "logical_and",
    np.logical_not: "logical_not",
    np.logical_or: "logical_or",
    np.logical_xor: "logical_xor",
    np.maximum: "maximum",
    np.minimum: "minimum",
    np.multiply: "multiply",
    np.negative: "negative",
    np.nextafter: "nextafter",
    np.not_equal: "not_equal",
    np.positive: "positive",
    np.power: "pow",
    np.reciprocal: "reciprocal",
    np.remainder: "remainder",
    np.rint: "round",
    np.sign: "sign",
    np.signbit: "signbit",
    np.sin: "sin",
    np.sinh: "sinh",
    np.square: "square",
    np.sqrt: "sqrt",
    np.subtract: "subtract",
    np.tan: "tan",
    np.tanh: "tanh",
    np.trunc: "trunc",
    np.matmul: "matmul",
    # NumPy-named functions made of nda's ops (nda._numpyapi)
    np.cbrt: "cbrt",
    np.deg2rad: "deg2rad",
    np.radians: "radians",
    np.rad2deg: "rad2deg",
    np.degrees: "degrees",
}
if hasattr(np, "vecdot"):
    UFUNCS[np.vecdot] = "vecdot"

_functions_ready = False


def _functions() -> dict[Any, Callable[..., Any]]:
    """``FUNCTIONS`` (``nda._interop_args``'s table), filled by ``nda._numpy_functions``,
    ``nda._numpy_linalg`` and ``nda._numpy_names`` at the first NumPy function call on an nda array: importing nda
    loads neither the handlers nor ``numpy.fft``. Safe under concurrent first calls: the
    import system's module lock makes a second thread wait until the table is filled."""
    global _functions_ready
    if not _functions_ready:
        from . import _numpy_functions, _numpy_linalg, _numpy_names  # noqa: F401  (fill FUNCTIONS)

        _functions_ready = True
    return _interop_args.FUNCTIONS


def __getattr__(name: str) -> Any:
    if name == "FUNCTIONS":  # the filled table, as when the handlers were imported with this module
        return _functions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"FUNCTIONS"})


#: ``ufunc.reduce`` / ``ufunc.accumulate`` -> the nda reduction or scan.
_REDUCE = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min", np.logical_and: "all", np.logical_or: "any"}
_ACCUMULATE = {np.add: "cumulative_sum", np.multiply: "cumulative_prod"}


def _host_fallback(name: str, why: Exception, run: Callable[[], Any]) -> Any:
    """Announce the fallback (warn once, or refuse under ``nda.config.fallback = "error"``), then run it."""
    from .dispatch import _announce_fallback

    _announce_fallback(
        name,
        f"{name} on nda arrays: {why}; NumPy computes it on host copies of the nda arrays and returns NumPy's result",
    )
    return run()


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
        targets = _ufunc_targets(method, inputs, kwargs)
        _same_device(name, inputs, kwargs, targets)  # refused before the fallback is announced
        return _host_fallback(name, why, lambda: _on_host(name, getattr(ufunc, method), inputs, kwargs, targets))


def _ufunc_targets(method: str, inputs: Any, kwargs: dict[str, Any]) -> list[Any]:
    """The arguments a ufunc writes: ``out=``, and ``ufunc.at``'s operand."""
    out = kwargs.get("out")
    targets = list(out) if isinstance(out, tuple) else [out]
    if method == "at" and inputs:
        targets.append(inputs[0])
    return targets


#: The ufuncs behind Python's binary operators.
_OPERATORS = frozenset(
    (
        np.add,
        np.subtract,
        np.multiply,
        np.divide,
        np.floor_divide,
        np.remainder,
        np.power,
        np.matmul,
        np.equal,
        np.not_equal,
        np.less,
        np.less_equal,
        np.greater,
        np.greater_equal,
        np.bitwise_and,
        np.bitwise_or,
        np.bitwise_xor,
        np.left_shift,
        np.right_shift,
    )
)


def _reflected_operator(ufunc: Any, inputs: Any) -> bool:
    """Whether the call may be ``numpy_scalar <op> nda_array``: NumPy's scalar hands it over as
    this ufunc call (the scalar as a 0-d array), and nda's operator rules hold there, refusals
    included, as for a Python scalar (README, "NumPy scalars")."""
    if ufunc not in _OPERATORS or len(inputs) != 2 or inputs[1].__class__ is not NDArray:
        return False
    first = inputs[0]
    return isinstance(first, np.generic) or isinstance(first, np.ndarray) and first.ndim == 0


#: NumPy's answers about dtypes, by the question's (hashable) key: loops, reduction dtypes.
_NUMPY_DTYPES: dict[Any, Any] = {}


def _remember(key: Any, ask: Callable[[], Any]) -> Any:
    """``ask()``, cached under ``key`` (a few thousand entries at most; NumPy's errors are not cached)."""
    try:
        found = _NUMPY_DTYPES.get(key)
    except TypeError:  # an unhashable argument (an axis given as an array): ask every time
        return ask()
    if found is None:
        if len(_NUMPY_DTYPES) > 4096:
            _NUMPY_DTYPES.clear()
        found = _NUMPY_DTYPES[key] = ask()
    return found


_BOOL = np.dtype(bool)


def _numpy_loop(ufunc: Any, args: list[Any], dtype: Any) -> tuple[Any, ...]:
    """The NumPy dtypes of ``ufunc``'s loop for ``args`` (inputs then output), scalars weak."""
    types = tuple([a.dtype.numpy if a.__class__ is NDArray else _BOOL if a.__class__ is bool else a.__class__ for a in args])
    if dtype is None:
        return _remember((ufunc, types), lambda: tuple(ufunc.resolve_dtypes(types + (None,) * ufunc.nout)))
    out = np.dtype(dtype)
    signature = (None,) * ufunc.nin + (out,) * ufunc.nout
    return _remember((ufunc, types, out), lambda: tuple(ufunc.resolve_dtypes(types + (None,) * ufunc.nout, signature=signature)))


def _numpy_scan_dtype(ufunc: Any, method: str, x: NDArray, axis: Any, dtype: Any, keepdims: Any) -> Any:
    """NumPy's result dtype (or error) of ``ufunc.reduce``/``accumulate`` on ``x``: the same
    call on a one-element array of x's dtype and rank."""
    axis = tuple(axis) if isinstance(axis, list) else axis
    dtype = None if dtype is None else np.dtype(dtype)
    extra = {"keepdims": bool(keepdims)} if method == "reduce" else {}

    def ask() -> Any:
        probe = np.ones((1,) * x.ndim, dtype=x.dtype.numpy)
        return np.asarray(getattr(ufunc, method)(probe, axis=axis, dtype=dtype, **extra)).dtype

    return _remember((ufunc, method, x.dtype.numpy, x.ndim, axis, dtype, bool(keepdims)), ask)


def _ufunc_on_device(self: NDArray, name: str, ufunc: Any, method: str, inputs: Any, kwargs: dict[str, Any]) -> Any:
    device = _device_of(inputs) or _device_of(kwargs.get("out") or ()) or self._meta.device
    call = _Call(name, device)
    plain = not kwargs  # no keywords: maybe ``numpy_scalar <op> x`` (see _reflected_operator)
    out = kwargs.pop("out", None)
    for o in out if isinstance(out, tuple) else (out,):
        if o is not None and o.__class__ is not NDArray:
            raise _Fallback(f"out= is a {type(o).__module__}.{type(o).__name__}, not an nda array")
    if method == "__call__":
        op = UFUNCS.get(ufunc)
        if op is None:
            raise _no_equivalent(name)
        dtype = kwargs.pop("dtype", None)
        _check_dtype(name, dtype)
        if op in ("matmul", "vecdot"):
            _check_defaults(name, kwargs, axes=None, axis=None)
        _check_defaults(name, kwargs, where=True, casting="same_kind", order="K", subok=True, signature=None)
        _leftover(name, kwargs)
        args = [call.operand(v, zero_d_is_scalar=True) for v in inputs]
        loop = _numpy_loop(ufunc, args, dtype)  # NumPy's error (no loop, a cast refused) is the answer
        fn = getattr(_api, op, None) or getattr(_numpyapi, op, None) or getattr(_linalg, op)
        try:
            # the arrays cast to the dtypes of NumPy's loop, as NumPy does (rint of ints is float64)
            args = [_api.astype(a, _dtypes.from_numpy_dtype(t)) if a.__class__ is NDArray and a.dtype.numpy != t else a for a, t in zip(args, loop)]
            if op in ("matmul", "vecdot") and any(a.__class__ is not NDArray for a in args):
                args = [call.array(a) for a in args]
            token = _fp_guard()  # NumPy's warnings name the user's np.<ufunc>(...) line (engine._fperrors)
            try:
                result = fn(*args)
            finally:
                _fp_unguard(token)
            if result.dtype.numpy != loop[-1]:  # nda's dtype rule is not NumPy's here (reciprocal of ints)
                raise _Fallback(f"nda's {op} gives {result.dtype.name} where NumPy's gives {loop[-1]}")
            return _store(name, out, result)  # an out= of another dtype or shape: NumPy's rules decide
        except TypeError as err:  # a dtype nda refuses that NumPy takes (logical_and of ints): NumPy's answer
            if plain and _reflected_operator(ufunc, inputs):
                raise
            raise _Fallback(f"nda refuses it ({err})") from None
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
        _check_dtype(name, dtype)
        expected = _numpy_scan_dtype(ufunc, method, x, axis, dtype, keepdims)  # NumPy's error is the answer
        try:
            if method == "accumulate":
                result = getattr(_api, op)(x, axis=axis, dtype=dtype)
            else:
                result = _reduction(op, x, axis, dtype, keepdims)
            if result.dtype.numpy != expected:
                raise _Fallback(f"nda's {op} gives {result.dtype.name} where NumPy's gives {expected}")
            return _store(name, out, result)  # an out= of another dtype or shape: NumPy's rules decide
        except TypeError as err:  # a dtype nda refuses that NumPy takes (maximum.reduce of bools)
            raise _Fallback(f"nda refuses it ({err})") from None
    raise _refuse(name, f"the ufunc method {method!r} is not supported by nda; call the nda function, or use np.asarray(x) (a host copy)")


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
    handler = _functions().get(func)
    try:
        if handler is None:
            raise _no_equivalent(name)
        out = kwargs.get("out")
        if out is not None and out.__class__ is not NDArray:
            raise _Fallback(f"out= is a {type(out).__module__}.{type(out).__name__}, not an nda array")
        device = _device_of(args) or _device_of(kwargs.values()) or self._meta.device
        call = _Call(name, device)
        _check_dtype(name, kwargs.get("dtype"))
        try:
            return handler(call, *args, **kwargs)
        except TypeError as err:
            if err.__traceback__ is not None and err.__traceback__.tb_next is None:
                # raised by the call itself: arguments nda's version does not take (include_initial=…)
                raise _Fallback("nda does not take these arguments") from None
            raise _Fallback(f"nda refuses it ({err})") from None  # a dtype nda refuses (np.linalg.inv of ints)
    except _Fallback as why:
        targets, scratch = _written_by(func, args, kwargs)
        _same_device(name, args, kwargs, targets)  # refused before the fallback is announced
        return _host_fallback(name, why, lambda: _on_host(name, func, args, kwargs, targets, scratch))


def _check_dtype(name: str, dtype: Any) -> None:
    """A ``dtype=`` nda has no equivalent of (float16, structured) is a TypeError, not a host
    fallback: the result could not be an nda array (Dask and others catch the TypeError, as for CuPy)."""
    if dtype is not None:
        try:
            _dtypes.as_dtype(dtype)
        except TypeError as err:
            raise TypeError(f"{name}: {err}") from None


# ---------------------------------------------------------------------------- Dask


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


class _ForExecute:
    """What the invocation point asks of this layer (``nda._execute.Provider``): an operator's foreign operand."""

    foreign_operand = staticmethod(_foreign_operand)


_execute.install(_ForExecute())
_dask.adopt()  # a Dask imported before nda learns about nda arrays now
