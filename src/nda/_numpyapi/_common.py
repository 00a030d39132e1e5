"""What the NumPy-named functions share: argument checks, NumPy's dtype rules, ``out=``.

The functions of :mod:`nda._numpyapi` take NumPy's signatures. Their array argument must be
an nda array (as for every nda function: ``nda.asarray`` makes one); the arguments NumPy
calls "array_like" parameters (quantiles, weights, bin edges, sample points, indices) may
also be Python sequences or NumPy arrays, which join the array's device. Dtypes follow
NumPy's rules (``numpy.result_type`` on the NumPy dtypes), not the Array API's where the two
differ (``concatenate`` of bool and int arrays, the float64 results of integer statistics).

Layer: arrays and front end, NumPy's names (README, "Architecture").
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from .. import _api, _dtypes
from .._array import NDArray
from ..ops.spec import check_array, normalize_axis

__all__ = [
    "api",
    "LINALG",
    "FFT",
    "array_arg",
    "param_array",
    "np_result_type",
    "to_dtype",
    "store",
    "axes_arg",
    "move_to_end",
    "keep_reduced",
    "float_dtype",
    "same_device",
    "int_value",
]

api: Any = _api
#: The generated functions of the standard's extensions (``nda.linalg`` and ``nda.fft`` sit above this layer).
LINALG: dict[str, Any] = _api.extension("linalg")
FFT: dict[str, Any] = _api.extension("fft")


def array_arg(x: Any, op: str, name: str = "a") -> NDArray:
    """An nda array argument (TypeError naming ``nda.asarray`` for anything else)."""
    return check_array(x, op, name)


def param_array(value: Any, device: Any, op: str, name: str, dtype: Any = None) -> NDArray:
    """An "array_like" parameter: an nda array (on ``device``), or host data put there."""
    if isinstance(value, NDArray):
        if value.device is not device:
            raise ValueError(f"{op}(): {name} is on {value.device} but the array is on {device}; move it with x.to_device(...)")
        return value if dtype is None or value.dtype is dtype else _api.astype(value, dtype)
    host = np.asarray(value)
    if host.dtype.kind not in "biufc":
        raise TypeError(f"{op}(): {name} must hold numbers, got {host.dtype}")
    if dtype is not None:
        host = host.astype(dtype.numpy)
    return _api.asarray(host, device=device)  # type: ignore[no-any-return]


def np_result_type(*values: Any) -> Any:
    """NumPy's result dtype of nda arrays, nda/NumPy dtypes and Python scalars (weak), as an nda dtype."""
    parts = []
    for v in values:
        if isinstance(v, NDArray):
            parts.append(v.dtype.numpy)
        elif isinstance(v, _dtypes.DType):
            parts.append(v.numpy)
        else:
            parts.append(v)
    return _dtypes.from_numpy_dtype(np.result_type(*parts))


def to_dtype(x: NDArray, dtype: Any) -> NDArray:
    """``x`` cast to ``dtype`` (``x`` itself when it has it)."""
    return x if x.dtype is dtype else _api.astype(x, dtype)  # type: ignore[no-any-return]


def float_dtype(x: NDArray) -> Any:
    """The floating dtype NumPy computes statistics of ``x`` in: float64 for bool and integers."""
    return x.dtype if x.dtype.category in ("real floating", "complex floating") else _dtypes.float64


def store(op: str, out: Any, result: NDArray, casting: str = "unsafe") -> NDArray:
    """NumPy's ``out=``: ``result`` written into the nda array ``out`` (same shape), which is returned."""
    if out is None:
        return result
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if not isinstance(out, NDArray):
        raise TypeError(f"{op}(): out= must be an nda array, got {type(out).__name__}")
    if out.shape != result.shape:
        raise ValueError(f"{op}(): out= has shape {out.shape}, the result {result.shape}")
    _api.copyto(out, result, casting=casting)
    return out


def axes_arg(axis: Any, ndim: int, op: str) -> tuple[int, ...]:
    """``None`` (every axis), an int or a sequence of ints, as sorted non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(normalize_axis(a, ndim, op) for a in items)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}(): repeated axis in {axis!r}")
    return tuple(sorted(axes))


def move_to_end(x: NDArray, axes: tuple[int, ...]) -> NDArray:
    """``x`` with ``axes`` moved to the end and merged into one (the reduced axis of a statistic)."""
    rest = [a for a in range(x.ndim) if a not in axes]
    if list(axes) != list(range(x.ndim - len(axes), x.ndim)):
        x = _api.permute_dims(x, tuple(rest + list(axes)))
    lead = x.shape[: len(rest)]
    size = 1
    for d in x.shape[len(rest) :]:
        size *= d
    return _api.reshape(x, lead + (size,))  # type: ignore[no-any-return]


def keep_reduced(result: NDArray, ndim: int, axes: tuple[int, ...], extra: int = 0) -> NDArray:
    """``keepdims=True``: ones put back at ``axes`` of a result reduced over them (after ``extra`` leading axes)."""
    shape = list(result.shape)
    for a in axes:
        shape.insert(extra + a, 1)
    return _api.reshape(result, tuple(shape))  # type: ignore[no-any-return]


def same_device(op: str, arrays: Sequence[NDArray]) -> Any:
    device = arrays[0].device
    for a in arrays[1:]:
        if a.device is not device:
            raise ValueError(f"{op}() got arrays on different devices ({device} and {a.device}); move them to one device first with x.to_device(...)")
    return device


def int_value(value: Any, op: str, name: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}(): {name} must be an int, got a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}(): {name} must be an int, got {type(value).__name__}") from None
