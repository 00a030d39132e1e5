"""Creation ops and casts: asarray, zeros, ones, empty, full, *_like, arange, linspace, eye, astype.

Creation kernels take no input arrays; their key is ``(device type, dtype, strided)``
and they receive the target ``device`` so that a backend with several devices knows
where to allocate. ``asarray`` receives a NumPy array prepared on the host by the planner
(Python data is converted with NumPy's rules, which match the Array API's defaults on
64-bit platforms: bool, int64, float64, complex128).
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import numpy as np

from .. import _dtypes
from .._array import NDArray
from .._devices import Device, as_device
from .._dtypes import DType
from ._spec import Plan, check_array, check_shape, declare, dtype_arg, host_scalar, int_arg

_ARRAY = "NDArray"


def _device(device: Any, op: str) -> Device:
    from .. import backends

    try:
        dev = as_device(device)
        backends.validate_device(dev)
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


@declare("asarray", dtypes="any", reference=_ref_asarray, family="creation")
def asarray(obj: Any, /, *, dtype: DType | None = None, device: Device | str | None = None, copy: bool | None = None) -> Plan:
    """Convert ``obj`` (Python scalars, nested sequences, NumPy arrays, DLPack or buffer objects) to an array.

    ``copy=None`` shares memory with a NumPy input on cpu when dtype and device allow,
    ``copy=True`` always copies and ``copy=False`` raises ValueError if a copy is needed.
    NDArray inputs are handled before planning (see ``nda.asarray``).
    """
    dt = dtype_arg(dtype, "asarray")
    dev = _device(device, "asarray")
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"asarray(): copy must be True, False or None, got {copy!r}")
    if isinstance(obj, np.ndarray):
        host = obj
    elif hasattr(obj, "__dlpack__") and not hasattr(obj, "__array__"):
        host = np.from_dlpack(obj)
    elif hasattr(obj, "__array__") or hasattr(obj, "__array_interface__"):
        host = np.asarray(obj)
    else:
        if isinstance(obj, (bool, int, float, complex)) and dt is None:
            dt = _scalar_dtype(obj)
        try:
            host = np.asarray(obj, dtype=None if dt is None else dt.numpy)
        except OverflowError:
            raise OverflowError(f"asarray(): {obj!r} does not fit in {dt.name if dt else 'int64'}") from None
        except (ValueError, TypeError) as err:
            raise type(err)(f"asarray(): cannot convert {type(obj).__name__} to an array: {err}") from None
        if host.dtype == object:
            raise TypeError(f"asarray(): {type(obj).__name__} holds objects that are not numbers; nda arrays hold bool, int, float or complex")
        if copy is False:
            raise ValueError("asarray(copy=False): converting a Python sequence or scalar always copies")
    source = _dtypes.from_numpy_dtype(host.dtype)
    target = source if dt is None else dt
    if target is not source:
        if copy is False:
            raise ValueError(f"asarray(copy=False): converting {source.name} to {target.name} needs a copy")
        if source.kind == "complex floating" and target.kind != "complex floating":
            raise TypeError(f"asarray(): cannot cast complex input to {target.name}; take the real part first")
        host = host.astype(target.numpy)
        copy = None
    if copy is False and dev.type != "cpu":
        raise ValueError(f"asarray(copy=False): moving data to {dev} needs a copy")
    if copy and host is obj:
        # The copy is a snapshot at the call: the engine may run the kernel later, after the
        # caller has written to its NumPy array again.
        host = np.array(host, copy=True)
        copy = None
    return Plan(dev, target, target, tuple(host.shape), (host,), {"device": dev, "copy": copy})


# --------------------------------------------------------------------------- filled arrays

def _ref_zeros(shape: tuple[int, ...], dtype: DType, device: Device) -> np.ndarray:
    return np.zeros(shape, dtype=dtype.numpy)


def _ref_ones(shape: tuple[int, ...], dtype: DType, device: Device) -> np.ndarray:
    return np.ones(shape, dtype=dtype.numpy)


def _ref_empty(shape: tuple[int, ...], dtype: DType, device: Device) -> np.ndarray:
    return np.empty(shape, dtype=dtype.numpy)


def _ref_full(shape: tuple[int, ...], fill_value: Any, dtype: DType, device: Device) -> np.ndarray:
    return np.full(shape, fill_value, dtype=dtype.numpy)


@declare("zeros", dtypes="any", reference=_ref_zeros, family="creation")
def zeros(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """An array of zeros (default dtype float64)."""
    dims = check_shape(shape, "zeros")
    dt = dtype_arg(dtype, "zeros") or _dtypes.default_float
    return _creation_plan("zeros", dims, dt, device, (dims,), {"dtype": dt})


@declare("ones", dtypes="any", reference=_ref_ones, family="creation")
def ones(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """An array of ones (default dtype float64)."""
    dims = check_shape(shape, "ones")
    dt = dtype_arg(dtype, "ones") or _dtypes.default_float
    return _creation_plan("ones", dims, dt, device, (dims,), {"dtype": dt})


@declare("empty", dtypes="any", reference=_ref_empty, family="creation")
def empty(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """An uninitialised array (default dtype float64): contents are whatever memory held."""
    dims = check_shape(shape, "empty")
    dt = dtype_arg(dtype, "empty") or _dtypes.default_float
    return _creation_plan("empty", dims, dt, device, (dims,), {"dtype": dt})


def _fill_arg(fill_value: Any, dtype: Any, op: str) -> tuple[Any, Any]:
    """A NumPy scalar or 0-d array ``fill_value`` read as a Python scalar now (a 0-d array also gives the default dtype)."""
    if dtype is None and fill_value.__class__ is NDArray and fill_value.ndim == 0:
        dtype = fill_value.dtype
    return host_scalar(fill_value, op, "fill_value"), dtype


def _fill_dtype(fill_value: Any, dtype: DType | None, op: str) -> DType:
    if isinstance(fill_value, (bool, int, float, complex)):
        dt = dtype or _scalar_dtype(fill_value)
    else:
        raise TypeError(f"{op}(): fill_value must be a Python bool, int, float or complex, got {type(fill_value).__name__}")
    if isinstance(fill_value, complex) and dt.kind != "complex floating":
        raise TypeError(f"{op}(): complex fill_value {fill_value!r} does not fit dtype {dt.name}")
    if isinstance(fill_value, float) and dt.kind in ("bool", "signed integer", "unsigned integer"):
        raise TypeError(f"{op}(): float fill_value {fill_value!r} does not fit dtype {dt.name}")
    if isinstance(fill_value, int) and not isinstance(fill_value, bool) and dt.kind in ("signed integer", "unsigned integer"):
        info = np.iinfo(dt.numpy)
        if not info.min <= fill_value <= info.max:
            raise OverflowError(f"{op}(): fill_value {fill_value} is out of bounds for {dt.name} (range {info.min}..{info.max})")
    return dt


@declare("full", dtypes="any", reference=_ref_full, family="creation")
def full(shape: int | tuple[int, ...], fill_value: bool | int | float | complex, *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """An array filled with ``fill_value``; the dtype defaults to the default dtype of the value's kind."""
    dims = check_shape(shape, "full")
    fill_value, dtype = _fill_arg(fill_value, dtype, "full")
    dt = _fill_dtype(fill_value, dtype_arg(dtype, "full"), "full")
    return _creation_plan("full", dims, dt, device, (dims, fill_value), {"dtype": dt})


def _like(op: str, x: Any, dtype: Any, device: Any) -> tuple[tuple[int, ...], DType, Any]:
    x = check_array(x, op)
    dt = dtype_arg(dtype, op) or x.dtype
    return x.shape, dt, x.device if device is None else device


@declare("zeros_like", dtypes="any", reference=_ref_zeros, family="creation")
def zeros_like(x: _ARRAY, /, *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """Zeros with the shape (and by default the dtype and device) of ``x``."""
    shape, dt, dev = _like("zeros_like", x, dtype, device)
    return _creation_plan("zeros_like", shape, dt, dev, (shape,), {"dtype": dt})


@declare("ones_like", dtypes="any", reference=_ref_ones, family="creation")
def ones_like(x: _ARRAY, /, *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """Ones with the shape (and by default the dtype and device) of ``x``."""
    shape, dt, dev = _like("ones_like", x, dtype, device)
    return _creation_plan("ones_like", shape, dt, dev, (shape,), {"dtype": dt})


@declare("empty_like", dtypes="any", reference=_ref_empty, family="creation")
def empty_like(x: _ARRAY, /, *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """An uninitialised array with the shape (and by default the dtype and device) of ``x``."""
    shape, dt, dev = _like("empty_like", x, dtype, device)
    return _creation_plan("empty_like", shape, dt, dev, (shape,), {"dtype": dt})


@declare("full_like", dtypes="any", reference=_ref_full, family="creation")
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


@declare("arange", dtypes="real numeric", reference=_ref_arange, family="creation")
def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """Evenly spaced values in ``[start, stop)``; ``arange(n)`` counts from 0 to n-1.

    The dtype is int64 when every argument is an int and float64 otherwise.
    """
    if stop is None:
        start, stop = 0, start
    start = _real_scalar(start, "start", "arange")
    stop = _real_scalar(stop, "stop", "arange")
    step = _real_scalar(step, "step", "arange")
    if step == 0:
        raise ValueError("arange(): step must not be zero")
    all_int = builtins.all(isinstance(v, int) for v in (start, stop, step))
    dt = dtype_arg(dtype, "arange") or (_dtypes.default_int if all_int else _dtypes.default_float)
    if dt.kind not in ("signed integer", "unsigned integer", "real floating"):
        raise TypeError(f"arange(): dtype must be a real numeric dtype, got {dt.name}")
    length = len(range(start, stop, step)) if all_int else builtins.max(0, math.ceil((stop - start) / step))
    return _creation_plan("arange", (length,), dt, device, (start, stop, step), {"dtype": dt})


def _ref_linspace(start: Any, stop: Any, num: int, dtype: DType, device: Device, endpoint: bool = True) -> np.ndarray:
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype.numpy)


@declare("linspace", dtypes="floating", reference=_ref_linspace, family="creation")
def linspace(start: int | float | complex, stop: int | float | complex, /, num: int, *, dtype: DType | None = None, device: Device | str | None = None, endpoint: bool = True) -> Plan:
    """``num`` evenly spaced samples from ``start`` to ``stop`` (included unless ``endpoint=False``).

    ``start``/``stop`` may be NumPy scalars or 0-d arrays (read when called). With an integer
    ``dtype`` the samples are the float64 ones rounded towards -inf, NumPy's rule (``nda.linspace``
    composes that from this op, ``floor`` and ``astype``; the op itself computes floating dtypes).
    """
    n = int_arg(num, "linspace", "num", minimum=0)
    start, stop = (_number(v, name, "linspace") for v, name in ((start, "start"), (stop, "stop")))
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    dt = dtype_arg(dtype, "linspace") or (_dtypes.default_complex if is_complex else _dtypes.default_float)
    if dt.kind not in ("real floating", "complex floating"):
        raise TypeError(f"linspace(): dtype must be a numeric dtype (integer, floating or complex), got {dt.name}")
    if is_complex and dt.kind != "complex floating":
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


@declare("eye", dtypes="any", reference=_ref_eye, family="creation")
def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: DType | None = None, device: Device | str | None = None) -> Plan:
    """A 2-D array with ones on the ``k``-th diagonal and zeros elsewhere."""
    rows, cols = check_shape((n_rows, n_rows if n_cols is None else n_cols), "eye")
    k = int_arg(k, "eye", "k")
    dt = dtype_arg(dtype, "eye") or _dtypes.default_float
    return _creation_plan("eye", (rows, cols), dt, device, (rows, cols, k), {"dtype": dt})


# --------------------------------------------------------------------------- astype

def _ref_astype(x: np.ndarray, dtype: DType, copy: bool = True) -> np.ndarray:
    return x.astype(dtype.numpy, copy=copy)


@declare("astype", dtypes="any", reference=_ref_astype, method=None)
def astype(x: _ARRAY, dtype: DType, /, *, copy: bool = True, device: Device | str | None = None) -> Plan:
    """``x`` converted to ``dtype``. Complex to real casts raise TypeError (take ``real`` first).

    ``copy=False`` returns ``x`` itself when no conversion is needed (see ``nda.astype``).
    """
    x = check_array(x, "astype")
    dt = dtype_arg(dtype, "astype")
    if dt is None:
        raise TypeError("astype(): dtype is required")
    if x.dtype.kind == "complex floating" and dt.kind != "complex floating":
        raise TypeError(f"astype(): casting complex {x.dtype.name} to {dt.name} would drop the imaginary part; use nda.real(x) or nda.abs(x) first")
    if not isinstance(copy, bool):
        raise TypeError(f"astype(): copy must be a bool, got {copy!r}")
    return Plan.of(x, out_shape=x.shape, out_dtype=dt, args=(x, dt), kwargs={"copy": True})
