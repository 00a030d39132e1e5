"""The argument handling shared by nda's answers to NumPy's protocols (``nda._interop``).

A protocol call (a NumPy ufunc or function given nda arrays) is translated here: ``_Call``
knows the device of the call's nda arrays and brings NumPy arrays, sequences and NumPy
scalars onto it; ``_check_defaults``/``_leftover`` accept NumPy's keywords nda has no use
for when they hold their defaults; ``_store`` writes into an nda ``out=``. Anything nda
cannot run raises ``_Fallback``, which ``nda._interop`` turns into the host fallback:
``_on_host`` runs NumPy on read-only host copies and writes back, through nda's setitem,
the arrays NumPy writes by contract (``_written_by`` finds them).

Layer: arrays and front end, NumPy protocols (README, "Architecture").
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from . import _api, _dtypes
from ._array import NDArray
from ._devices import Device

_NoValue = getattr(np, "_NoValue", object())

#: Suggestions for common NumPy names that nda spells differently or lacks.
_INSTEAD = {
    "exp2": "nda.pow(2.0, x)",
    "fabs": "nda.abs",
    "float_power": "nda.pow on float64 arrays",
    "fmod": "nda.remainder (its sign follows x2)",
    "einsum": "nda.tensordot / nda.matmul",
    "allclose": "nda.all(nda.abs(x - y) <= atol + rtol * nda.abs(y))",
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


#: NumPy functions that write into an argument by contract -> the name of that parameter.
_WRITES: dict[Any, str] = {
    np.copyto: "dst",
    np.put: "a",
    np.place: "arr",
    np.putmask: "a",
    np.put_along_axis: "arr",
    np.fill_diagonal: "a",
}


_SIGNATURES: dict[Any, inspect.Signature] = {}


def _written_by(func: Any, args: Any, kwargs: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The arguments a NumPy function writes: (written back to nda, scratch NumPy may overwrite).

    Written back: ``out=`` (by keyword or position), the destination of the functions in
    ``_WRITES``, ``x`` of ``np.nan_to_num(x, copy=False)``. Scratch: ``a`` under
    ``overwrite_input=True`` (``np.median``, ``np.percentile``…: NumPy may clobber it; its
    contents are undefined afterwards, so nothing is written back).
    """
    try:
        signature = _SIGNATURES.get(func)
        if signature is None:
            signature = _SIGNATURES[func] = inspect.signature(func)
        bound = dict(signature.bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):  # no signature, or arguments NumPy will refuse itself
        bound = dict(kwargs)
    out = bound.get("out")
    targets = list(out) if isinstance(out, tuple) else [out]
    if func in _WRITES:
        targets.append(bound.get(_WRITES[func]))
    if func is np.nan_to_num and not bound.get("copy", True):
        targets.append(bound.get("x"))
    scratch = [bound.get("a")] if bound.get("overwrite_input") else []
    return targets, scratch


def _on_host(name: str, run: Callable[..., Any], args: Any, kwargs: dict[str, Any], targets: Any = (), scratch: Any = ()) -> Any:
    """``run(*args, **kwargs)`` with every nda array replaced by a host copy; ``targets`` written back.

    Every nda argument becomes a fresh NumPy copy (on cpu too: ``np.asarray`` would share
    memory that queued ops still read, behind the engine's and autograd's back), read-only
    unless NumPy writes it by contract (``targets``, ``scratch``): a write into any other
    argument, or into a view of it NumPy returns, is NumPy's "read-only" ValueError, not a
    write lost in a copy. After the call each nda array in ``targets`` gets its copy's
    contents through nda's own setitem (ordered by the engine after the work queued on it,
    counted by autograd), and NumPy's result is the nda array where NumPy returned the copy
    (``out=``).
    """
    written = {id(t) for t in targets if t.__class__ is NDArray}
    writable = written | {id(s) for s in scratch if s.__class__ is NDArray}
    copies: dict[int, tuple[NDArray, np.ndarray]] = {}

    def host(value: Any) -> Any:
        if value.__class__ is NDArray:
            pair = copies.get(id(value))
            if pair is None:
                if value._meta.layout.name != "strided":
                    np.asarray(value)  # NDArray.__array__'s TypeError: no implicit densifying
                copy = value.asnumpy()  # waits for the pending writes to value
                if id(value) not in writable:
                    copy.flags.writeable = False
                pair = copies[id(value)] = (value, copy)
            return pair[1]
        if value.__class__ in (list, tuple):
            return value.__class__(host(v) for v in value)
        return value

    result = run(*host(tuple(args)), **{k: host(v) for k, v in kwargs.items()})
    back: dict[int, NDArray] = {}
    for value, copy in copies.values():
        if id(value) in written:
            value[...] = _api.asarray(copy, device=value.device)
            back[id(copy)] = value
    if not back:
        return result
    if isinstance(result, tuple):
        return tuple(back.get(id(r), r) for r in result)
    return back.get(id(result), result)


def _same_device(name: str, args: Any, kwargs: dict[str, Any], targets: Any = ()) -> None:
    """Refuse nda arrays on different devices (nda never moves data between devices implicitly,
    not even through NumPy's host copies): as ``np.matmul`` refuses them, naming ``out=`` when
    that is the array elsewhere. ``targets``: the arguments NumPy writes (``out=``)."""
    written = {id(t) for t in targets if t.__class__ is NDArray}
    inputs: dict[Any, None] = {}
    outputs: dict[Any, None] = {}

    def walk(value: Any) -> None:
        if value.__class__ is NDArray:
            (outputs if id(value) in written else inputs)[value._meta.device] = None
        elif value.__class__ in (list, tuple):
            for v in value:
                walk(v)

    walk(tuple(args))
    walk(tuple(kwargs.values()))
    devices = list(inputs)
    if len(devices) > 1:
        raise ValueError(
            f"{name}() got arrays on different devices ({devices[0]} and {devices[1]}); move them to one device first with x.to_device(...)"
        )
    for device in outputs:
        if devices and device is not devices[0]:
            raise ValueError(
                f"{name}(): out= is on {device} but the inputs are on {devices[0]}; nda does not move data between devices "
                f"implicitly: pass an out= on {devices[0]}, or move the inputs with x.to_device({str(device)!r})"
            )


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
    if out._meta.device is not result._meta.device:
        raise ValueError(
            f"{name}(): out= is on {out._meta.device} but the inputs are on {result._meta.device}; nda does not move data "
            f"between devices implicitly: pass an out= on {result._meta.device}, or move the inputs with x.to_device({str(out._meta.device)!r})"
        )
    if out.shape != result.shape or out.dtype is not result.dtype:
        # NumPy's rules decide (casting: same_kind for ufuncs, unsafe for reductions, exact for
        # np.dot; inputs broadcast to out='s shape): NumPy computes it, or raises its error
        raise _Fallback(f"out= is {out.dtype.name} {out.shape}, the result {result.dtype.name} {result.shape}")
    out[...] = result
    return out


def _check_defaults(name: str, kwargs: dict[str, Any], **defaults: Any) -> None:
    """Pop NumPy keywords nda has no use for; any value but the default is a ``_Fallback``."""
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


#: NumPy function -> handler(call, *args, **kwargs), filled by ``nda._numpy_functions``.
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
