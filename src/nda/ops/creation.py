"""Creation ops and casts: asarray, zeros, ones, empty, full, *_like, arange, linspace, eye, astype.

Creation kernels take no input arrays; their key is ``(device type, dtype, strided)``
and they receive the target ``device`` so that a backend with several devices knows
where to allocate. ``asarray`` receives a NumPy array prepared on the host by the planner
(Python data is converted with NumPy's rules, which match the Array API's defaults on
64-bit platforms: bool, int64, float64, complex128).

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import numpy as np

from .. import _dtypes
from .._devices import Device, as_device
from .._dtypes import DType
from . import spec
from .spec import Array, check_array, check_shape, constant, declare, dtype_arg, host_scalar, int_arg, Plan

_ARRAY = "NDArray"


_NO_ARRAY_INPUT = constant("no array input")
_VALUES_IGNORED = constant("the result does not depend on the values of x")


def _device(device: Any, op: str) -> Device:
    try:
        dev = as_device(device)
        spec.upper.validate_device(dev)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{op}(): {err}") from None
    return dev


def _creation_plan(op: str, shape: tuple[int, ...], dtype: DType, device: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> Plan:
    dev = _device(device, op)
    return Plan(dev, dtype, dtype, shape, args, {**(kwargs or {}), "device": dev})


# --------------------------------------------------------------------------- asarray


def _ref_asarray(host: np.ndarray, device: Device, copy: bool | None = None) -> np.ndarray:
    return np.array(host, copy=True) if copy else host


def _scalar_dtype(value: Any) -> DType:
    if isinstance(value, bool):
        return _dtypes.bool
    if isinstance(value, int):
        return _dtypes.default_int
    if isinstance(value, float):
        return _dtypes.default_float
    if isinstance(value, complex):
        return _dtypes.default_complex
    raise TypeError(f"expected a Python bool, int, float or complex, got {type(value).__name__}")


@declare("asarray", dtypes="any", reference=_ref_asarray, family="creation", vjp=_NO_ARRAY_INPUT)
def asarray(obj: Any, /, *, dtype: DType | None = None, device: Device | str | None = None, copy: bool | None = None) -> Plan:
    """Convert ``obj`` (Python scalars, nested sequences, NumPy arrays, DLPack or buffer objects) to an array.

    ``copy=None`` shares memory with a NumPy input on cpu when dtype and device allow,
    ``copy=True`` always copies and ``copy=False`` raises ValueError if a copy is needed.
    NDArray inputs are handled before planning (see ``nda.asarray``). A ``dtype`` that
    cannot hold the data is refused, never wrapped around: an int out of its range is an
    ``OverflowError``, NaN or infinity for an integer dtype a ``ValueError``.
    """
    dt = dtype_arg(dtype, "asarray")
    dev = _device(device, "asarray")
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"asarray(): copy must be True, False or None, got {copy!r}")
    host, from_python = host_data(obj, dt, "asarray")
    if from_python and copy is False:
        raise ValueError("asarray(copy=False): converting a Python sequence or scalar always copies")
    source = nda_dtype(host, "asarray")
    target = source if dt is None else dt
    if target is not source:
        if copy is False:
            raise ValueError(f"asarray(copy=False): converting {source.name} to {target.name} needs a copy")
        host = cast_host(host, target, "asarray")
        from_python = True  # a fresh array: nobody else holds it
        copy = None
    if copy is False and dev.type != "cpu":
        raise ValueError(f"asarray(copy=False): moving data to {dev} needs a copy")
    if (copy or dev.type != "cpu") and not from_python:
        # The caller's memory is read at the call, as NumPy does: the engine may run the kernel
        # (or a device queue its upload) later, after the caller has written to its data again
        # (a NumPy array, or what __array__, a buffer or DLPack gave, which may own live data).
        host = np.array(host, copy=True)
        copy = None
    return Plan(dev, target, target, tuple(host.shape), (host,), {"device": dev, "copy": copy})


def host_data(obj: Any, dtype: DType | None, op: str) -> tuple[np.ndarray, bool]:
    """``obj`` as a NumPy array the way ``asarray`` reads it, and whether it came from Python data.

    NumPy arrays, DLPack and array-protocol objects come as they are (not cast). Python
    scalars and sequences are converted, to ``dtype`` when given; an int that fits no nda
    integer dtype is an OverflowError naming it, as is one that does not fit ``dtype``.
    Used by ``asarray`` and by the sparse constructors (``nda.sparse``), so that they
    accept and refuse the same data.
    """
    if isinstance(obj, np.ndarray):
        return obj, False
    if hasattr(obj, "__dlpack__") and not hasattr(obj, "__array__"):
        return np.from_dlpack(obj), False
    if hasattr(obj, "__array__") or hasattr(obj, "__array_interface__"):
        return np.asarray(obj), False
    dt = dtype
    if isinstance(obj, (bool, int, float, complex)) and dt is None:
        dt = _scalar_dtype(obj)
    try:
        host = np.asarray(obj, dtype=None if dt is None else dt.numpy)
    except (OverflowError, ValueError, TypeError) as err:
        if dt is not None and not isinstance(err, TypeError):
            _explain_cast(obj, dt, op)  # raises the clearer error when it finds one
        if isinstance(err, OverflowError):
            raise _int_overflow(obj, dt, op) from None
        raise type(err)(f"{op}(): cannot convert {type(obj).__name__} to an array: {err}") from None
    if dt is None and (host.dtype == object or (host.dtype == np.float64 and host.size and np.abs(host).max() >= 2.0**63)):
        # NumPy gives up on ints beyond int64/uint64 (object dtype), or turns ints that fit no
        # one integer dtype (2**64 - 1 with -1) into inexact floats.
        leaves = list(_leaves(obj))
        if not all(isinstance(v, (bool, int, float, complex)) for v in leaves):
            if host.dtype == object:
                raise TypeError(f"{op}(): {type(obj).__name__} holds objects that are not numbers; nda arrays hold bool, int, float or complex")
        elif any(isinstance(v, complex) for v in leaves):
            host = np.asarray(obj, dtype=np.complex128)  # Python's rule: ints join floats and complexes
        elif any(isinstance(v, float) for v in leaves):
            host = np.asarray(obj, dtype=np.float64)
        else:
            raise _int_overflow(obj, None, op)
    return host, True


def _explain_cast(obj: Any, dtype: DType, op: str) -> None:
    """Raise what :func:`cast_host` says of Python data NumPy refused for ``dtype`` (NaN for an
    int, an int out of range), if it says something."""
    try:
        host = np.asarray(obj)
    except (OverflowError, ValueError, TypeError):
        return
    if host.dtype != object:
        try:
            cast_host(host, dtype, op)
        except (ValueError, OverflowError) as err:
            raise type(err)(str(err)) from None


def _leaves(obj: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _leaves(item)
    else:
        yield obj


def _int_overflow(obj: Any, dtype: DType | None, op: str) -> OverflowError:
    """The OverflowError for Python ints in ``obj`` that do not fit ``dtype`` (None: any integer dtype)."""
    ints = [v for v in _leaves(obj) if isinstance(v, int) and not isinstance(v, bool)]
    if dtype is not None and dtype.category in ("signed integer", "unsigned integer"):
        info = np.iinfo(dtype.numpy)
        bad = next((v for v in ints if not info.min <= v <= info.max), None)
        return OverflowError(f"{op}(): the int {bad} does not fit in {dtype.name} (range {info.min}..{info.max})")
    if dtype is not None:
        return OverflowError(f"{op}(): {type(obj).__name__} holds an int too large for {dtype.name}")
    bad = next((v for v in ints if not -(2**63) <= v < 2**64), None)
    if bad is not None:
        return OverflowError(
            f"{op}(): the int {bad} does not fit in any nda integer dtype (int64: -2**63..2**63-1, uint64: 0..2**64-1); "
            f"pass dtype=nda.float64 to store it as a float"
        )
    return OverflowError(
        f"{op}(): the ints {min(ints)} and {max(ints)} fit no one nda integer dtype (int64: -2**63..2**63-1, uint64: 0..2**64-1); "
        f"pass dtype=nda.float64 to store them as floats"
    )


def nda_dtype(host: np.ndarray, op: str) -> DType:
    """The nda dtype of a NumPy array (TypeError naming ``op`` for dtypes nda has no equivalent of)."""
    try:
        return _dtypes.from_numpy_dtype(host.dtype)
    except TypeError as err:
        raise TypeError(f"{op}(): {err}") from None


def cast_host(host: np.ndarray, target: DType, op: str) -> np.ndarray:
    """``host`` converted to ``target``, refusing what would change values beyond rounding.

    Complex to real is a TypeError (take the real part first); NaN or infinity to an
    integer dtype a ValueError; a value outside an integer dtype's range an OverflowError
    (NumPy would wrap 300 around to 44 in int8, or store NaN as INT_MIN).
    """
    kind = host.dtype.kind
    if kind == "c" and target.category != "complex floating":
        raise TypeError(f"{op}(): cannot cast complex input to {target.name}; take the real part first")
    if target.category in ("signed integer", "unsigned integer") and kind in "fiu" and host.size:
        info = np.iinfo(target.numpy)
        low, high = host.min(), host.max()
        if kind == "f":
            if not (np.isfinite(low) and np.isfinite(high)):
                value = low if not np.isfinite(low) else high
                raise ValueError(f"{op}(): cannot store {value} in {target.name}; integer dtypes hold finite values only")
            outside = np.trunc(low) < info.min or high >= float(info.max) + 1  # casts truncate toward zero
        else:
            low, high = int(low), int(high)
            outside = low < info.min or high > info.max
        if outside:
            value = low if low < info.min else high
            raise OverflowError(f"{op}(): the value {value} does not fit in {target.name} (range {info.min}..{info.max})")
    return host.astype(target.numpy)


# --------------------------------------------------------------------------- filled arrays


def _ref_zeros(shape: tuple[int, ...], dtype: DType, device: Device) -> np.ndarray:
    return np.zeros(shape, dtype=dtype.numpy)


def _ref_ones(shape: tuple[int, ...], dtype: DType, device: Device) -> np.ndarray:
    return np.ones(shape, dtype=dtype.numpy)


def _ref_empty(shape: tuple[int, ...], dtype: DType, device: Device) -> np.ndarray:
    return np.empty(shape, dtype=dtype.numpy)


def _ref_full(shape: tuple[int, ...], fill_value: Any, dtype: DType, device: Device) -> np.ndarray:
    return np.full(shape, fill_value, dtype=dtype.numpy)


@declare("zeros", dtypes="any", reference=_ref_zeros, family="creation", vjp=_NO_ARRAY_INPUT)
def zeros(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """An array of zeros (default dtype float64)."""
    dims = check_shape(shape, "zeros")
    dt = dtype_arg(dtype, "zeros") or _dtypes.default_float
    return _creation_plan("zeros", dims, dt, device, (dims,), {"dtype": dt})


@declare("ones", dtypes="any", reference=_ref_ones, family="creation", vjp=_NO_ARRAY_INPUT)
def ones(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """An array of ones (default dtype float64)."""
    dims = check_shape(shape, "ones")
    dt = dtype_arg(dtype, "ones") or _dtypes.default_float
    return _creation_plan("ones", dims, dt, device, (dims,), {"dtype": dt})


@declare("empty", dtypes="any", reference=_ref_empty, family="creation", vjp=_NO_ARRAY_INPUT)
def empty(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """An uninitialised array (default dtype float64): contents are whatever memory held."""
    dims = check_shape(shape, "empty")
    dt = dtype_arg(dtype, "empty") or _dtypes.default_float
    return _creation_plan("empty", dims, dt, device, (dims,), {"dtype": dt})


def _fill_arg(fill_value: Any, dtype: Any, op: str) -> tuple[Any, Any]:
    """A NumPy scalar or 0-d array ``fill_value`` read as a Python scalar now (a 0-d array also gives the default dtype)."""
    if dtype is None and isinstance(fill_value, Array) and fill_value.ndim == 0:
        dtype = fill_value.dtype
    return host_scalar(fill_value, op, "fill_value"), dtype


def _fill_dtype(fill_value: Any, dtype: DType | None, op: str) -> DType:
    if isinstance(fill_value, (bool, int, float, complex)):
        dt = dtype or _scalar_dtype(fill_value)
    else:
        raise TypeError(f"{op}(): fill_value must be a Python bool, int, float or complex, got {type(fill_value).__name__}")
    if isinstance(fill_value, complex) and dt.category != "complex floating":
        raise TypeError(f"{op}(): complex fill_value {fill_value!r} does not fit dtype {dt.name}")
    if isinstance(fill_value, float) and dt.category in ("bool", "signed integer", "unsigned integer"):
        raise TypeError(f"{op}(): float fill_value {fill_value!r} does not fit dtype {dt.name}")
    if isinstance(fill_value, int) and not isinstance(fill_value, bool) and dt.category in ("signed integer", "unsigned integer"):
        info = np.iinfo(dt.numpy)
        if not info.min <= fill_value <= info.max:
            raise OverflowError(f"{op}(): fill_value {fill_value} is out of bounds for {dt.name} (range {info.min}..{info.max})")
    return dt


@declare("full", dtypes="any", reference=_ref_full, family="creation", vjp=_NO_ARRAY_INPUT, host_values=("fill_value",))
def full(
    shape: int | tuple[int, ...], fill_value: bool | int | float | complex, *, dtype: DType | None = None, device: Device | str | None = None
) -> Plan:
    """An array filled with ``fill_value``; the dtype defaults to the default dtype of the value's kind."""
    dims = check_shape(shape, "full")
    fill_value, dtype = _fill_arg(fill_value, dtype, "full")
    dt = _fill_dtype(fill_value, dtype_arg(dtype, "full"), "full")
    return _creation_plan("full", dims, dt, device, (dims, fill_value), {"dtype": dt})


def _like(op: str, x: Any, dtype: Any, device: Any) -> tuple[tuple[int, ...], DType, Any]:
    x = check_array(x, op)
    dt = dtype_arg(dtype, op) or x.dtype
    return x.shape, dt, x.device if device is None else device


@declare("zeros_like", dtypes="any", reference=_ref_zeros, family="creation", vjp=_VALUES_IGNORED)
def zeros_like(x: _ARRAY, /, *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """Zeros with the shape (and by default the dtype and device) of ``x``."""
    shape, dt, dev = _like("zeros_like", x, dtype, device)
    return _creation_plan("zeros_like", shape, dt, dev, (shape,), {"dtype": dt})


@declare("ones_like", dtypes="any", reference=_ref_ones, family="creation", vjp=_VALUES_IGNORED)
def ones_like(x: _ARRAY, /, *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """Ones with the shape (and by default the dtype and device) of ``x``."""
    shape, dt, dev = _like("ones_like", x, dtype, device)
    return _creation_plan("ones_like", shape, dt, dev, (shape,), {"dtype": dt})


@declare("empty_like", dtypes="any", reference=_ref_empty, family="creation", vjp=_VALUES_IGNORED)
def empty_like(x: _ARRAY, /, *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """An uninitialised array with the shape (and by default the dtype and device) of ``x``."""
    shape, dt, dev = _like("empty_like", x, dtype, device)
    return _creation_plan("empty_like", shape, dt, dev, (shape,), {"dtype": dt})


@declare("full_like", dtypes="any", reference=_ref_full, family="creation", vjp=_VALUES_IGNORED, host_values=("fill_value",))
def full_like(x: _ARRAY, /, fill_value: bool | int | float | complex, *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """``fill_value`` with the shape (and by default the dtype and device) of ``x``."""
    fill_value, _ = _fill_arg(fill_value, None, "full_like")
    shape, dt, dev = _like("full_like", x, dtype, device)
    dt = _fill_dtype(fill_value, dt, "full_like")
    return _creation_plan("full_like", shape, dt, dev, (shape, fill_value), {"dtype": dt})


# --------------------------------------------------------------------------- ranges


def _ref_arange(start: Any, stop: Any, step: Any, dtype: DType, device: Device) -> np.ndarray:
    return np.arange(start, stop, step, dtype=dtype.numpy)


def _real_scalar(value: Any, name: str, op: str) -> int | float:
    value = host_scalar(value, op, name)  # a NumPy scalar or a 0-d array (read now, on the caller's thread)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return operator.index(value)
        except TypeError:
            raise TypeError(f"{op}(): {name} must be an int or a float, got {type(value).__name__}") from None
    return value


@declare("arange", dtypes="numeric", reference=_ref_arange, family="creation", vjp=_NO_ARRAY_INPUT, host_values=("start", "stop", "step"))
def arange(
    start: int | float, /, stop: int | float | None = None, step: int | float = 1, *, dtype: DType | None = None, device: Device | str | None = None
) -> Plan:
    """Evenly spaced values in ``[start, stop)``; ``arange(n)`` counts from 0 to n-1.

    The dtype is int64 when every argument is an int and float64 otherwise. A complex
    ``dtype`` gives the same (real) values as complex numbers, as NumPy's does.
    """
    if stop is None:
        start, stop = 0, start
    start = _real_scalar(start, "start", "arange")
    stop = _real_scalar(stop, "stop", "arange")
    step = _real_scalar(step, "step", "arange")
    for name, value in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"arange(): {name} must be a finite number, got {value}")
    if step == 0:
        raise ValueError("arange(): step must not be zero")
    all_int = builtins.all(isinstance(v, int) for v in (start, stop, step))
    dt = dtype_arg(dtype, "arange") or (_dtypes.default_int if all_int else _dtypes.default_float)
    if dt.category not in ("signed integer", "unsigned integer", "real floating", "complex floating"):
        raise TypeError(f"arange(): dtype must be a numeric dtype, got {dt.name}")
    if all_int:  # exact, for ints of any size (len(range(...)) stops at sys.maxsize)
        length = builtins.max(0, (stop - start + step - 1) // step if step > 0 else (start - stop - step - 1) // -step)
    else:
        delta = stop - start
        span = delta / step
        if span == 0.0 and delta != 0.0:  # the quotient underflowed: one element or none, by its sign (NumPy's rule)
            length = 0 if math.copysign(1.0, span) < 0 else 1
        else:
            length = builtins.max(0, math.ceil(span)) if math.isfinite(span) else math.inf
    if length > np.iinfo(np.intp).max:
        raise ValueError(f"arange(): [{start}, {stop}) in steps of {step} has {length:.3g} elements, more than an array can hold")
    if length and dt.category in ("signed integer", "unsigned integer"):
        info = np.iinfo(dt.numpy)
        last = start + (length - 1) * step
        for value in (start, last):
            if not info.min <= value <= info.max:
                raise OverflowError(f"arange(): the value {value} does not fit in {dt.name} (range {info.min}..{info.max})")
    return _creation_plan("arange", (length,), dt, device, (start, stop, step), {"dtype": dt})


def _ref_linspace(start: Any, stop: Any, num: int, dtype: DType, device: Device, endpoint: bool = True) -> np.ndarray:
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype.numpy)


@declare("linspace", dtypes="floating", reference=_ref_linspace, family="creation", vjp=_NO_ARRAY_INPUT, host_values=("start", "stop", "num"))
def linspace(
    start: int | float | complex,
    stop: int | float | complex,
    /,
    num: int,
    *,
    dtype: DType | None = None,
    device: Device | str | None = None,
    endpoint: bool = True,
) -> Plan:
    """``num`` evenly spaced samples from ``start`` to ``stop`` (included unless ``endpoint=False``).

    ``start``/``stop`` may be NumPy scalars or 0-d arrays (read when called). With an integer
    ``dtype`` the samples are the float64 ones rounded towards -inf, NumPy's rule (``nda.linspace``
    composes that from this op, ``floor`` and ``astype``; the op itself computes floating dtypes).
    """
    n = int_arg(num, "linspace", "num", minimum=0)
    start, stop = (_number(v, name, "linspace") for v, name in ((start, "start"), (stop, "stop")))
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    dt = dtype_arg(dtype, "linspace") or (_dtypes.default_complex if is_complex else _dtypes.default_float)
    if dt.category not in ("real floating", "complex floating"):
        raise TypeError(f"linspace(): dtype must be a numeric dtype (integer, floating or complex), got {dt.name}")
    if is_complex and dt.category != "complex floating":
        raise TypeError(f"linspace(): complex start/stop need a complex dtype, got {dt.name}")
    if not isinstance(endpoint, bool):
        raise TypeError(f"linspace(): endpoint must be a bool, got {endpoint!r}")
    return _creation_plan("linspace", (n,), dt, device, (start, stop, n), {"dtype": dt, "endpoint": endpoint})


def _number(value: Any, name: str, op: str) -> int | float | complex:
    value = host_scalar(value, op, name)  # a NumPy scalar or a 0-d array (read now, on the caller's thread)
    if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
        raise TypeError(f"{op}(): {name} must be an int, a float or a complex, got {type(value).__name__}")
    return value


def _ref_eye(n_rows: int, n_cols: int, k: int, dtype: DType, device: Device) -> np.ndarray:
    return np.eye(n_rows, n_cols, k=k, dtype=dtype.numpy)


@declare("eye", dtypes="any", reference=_ref_eye, family="creation", vjp=_NO_ARRAY_INPUT, host_values=("n_rows", "n_cols", "k"))
def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """A 2-D array with ones on the ``k``-th diagonal and zeros elsewhere."""
    rows = int_arg(n_rows, "eye", "n_rows", minimum=0)
    cols = rows if n_cols is None else int_arg(n_cols, "eye", "n_cols", minimum=0)
    k = int_arg(k, "eye", "k")
    dt = dtype_arg(dtype, "eye") or _dtypes.default_float
    return _creation_plan("eye", (rows, cols), dt, device, (rows, cols, k), {"dtype": dt})


# --------------------------------------------------------------------------- astype


def _ref_astype(x: np.ndarray, dtype: DType, copy: bool = True) -> np.ndarray:
    return x.astype(dtype.numpy, copy=copy)


def _vjp_astype(nd: Any, need: Any, g: Any, y: Any, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> tuple[Any, ...]:
    return (g if g.device is x.device else g.to_device(x.device),)  # autograd casts it back to x's dtype


@declare("astype", dtypes="any", reference=_ref_astype, method=None, vjp=_vjp_astype)
def astype(x: _ARRAY, dtype: DType, /, *, copy: bool = True, device: Device | str | None = None) -> Plan:
    """``x`` converted to ``dtype``. Complex to real casts raise TypeError (take ``real`` first).

    ``copy=False`` returns ``x`` itself when no conversion is needed (see ``nda.astype``).
    """
    x = check_array(x, "astype")
    dt = dtype_arg(dtype, "astype")
    if dt is None:
        raise TypeError("astype(): dtype is required")
    if x.dtype.category == "complex floating" and dt.category != "complex floating":
        raise TypeError(f"astype(): casting complex {x.dtype.name} to {dt.name} would drop the imaginary part; use nda.real(x) or nda.abs(x) first")
    if not isinstance(copy, bool):
        raise TypeError(f"astype(): copy must be a bool, got {copy!r}")
    return Plan.of(x, out_shape=x.shape, out_dtype=dt, args=(x, dt), kwargs={"copy": True})
