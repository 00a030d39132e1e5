"""The kit and backends that flush subnormals to zero (``flushes_subnormals``).

A backend may declare that its kernels treat subnormal inputs and results of some floating
dtypes as zeros of the same sign (GPUs do for float32: CuPy compiles with ``-ftz=true``;
see :mod:`nda.backends.contract`). For such a device the kit accepts a case when the
device's result equals the reference's either exactly, or **flushed**: the reference run on
the case's inputs with those subnormals flushed, its results flushed, compared with the
device's results flushed. Anything else still fails: a kernel that is wrong on normal
values, that flushes a dtype it did not declare, or that gets the flushed result wrong.

The flushed comparison runs only for a case that failed the exact one and holds a subnormal
of a declared dtype (in an input array, a Python scalar the kernel reads in that precision,
or a result), so passing cases cost nothing more. Cells that passed that way are counted
(``CellResult.flushed``) and marked ``ok*`` in the report's table, whose legend says so.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import nda

from ._cases import Arr, Case

__all__ = ["declared", "flush", "flush_case", "involved"]


def declared(*devices: Any) -> frozenset[str]:
    """The dtype names the backends of ``devices`` declare they flush (their union)."""
    names: set[str] = set()
    for device in devices:
        if device is not None:
            names.update(nda.backends.handle(device).flushes_subnormals)  # declared, read when the backend activated
    return frozenset(names)


def _tiny(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).smallest_normal)


def _subnormal(a: np.ndarray) -> np.ndarray:
    """Where ``a`` (a real floating array) holds a subnormal."""
    return (a != 0) & (np.abs(a) < _tiny(a.dtype))


def _flush_part(a: np.ndarray) -> np.ndarray:
    mask = _subnormal(a)
    return np.where(mask, np.copysign(np.zeros((), a.dtype), a), a).astype(a.dtype, copy=False) if mask.any() else a


def flush(value: Any, dtypes: frozenset[str]) -> Any:
    """``value`` (an array, or a tuple of them) with the subnormals of ``dtypes`` arrays replaced by signed zeros."""
    if isinstance(value, tuple):
        return tuple(flush(v, dtypes) for v in value)
    if not isinstance(value, np.ndarray) or value.dtype.name not in dtypes:
        return value
    if value.dtype.kind == "c":
        out = np.array(value, copy=True)
        out.real, out.imag = _flush_part(value.real), _flush_part(value.imag)
        return out
    return _flush_part(value)


def _has_subnormal(value: Any, dtypes: frozenset[str]) -> bool:
    if isinstance(value, tuple):
        return any(_has_subnormal(v, dtypes) for v in value)
    if not isinstance(value, np.ndarray) or value.dtype.name not in dtypes or value.dtype.kind not in "fc":
        return False
    parts = (value.real, value.imag) if value.dtype.kind == "c" else (value,)
    return any(bool(_subnormal(p).any()) for p in parts)


def _single_scalar(value: Any, precision: np.dtype) -> Any:
    """A Python float/complex as the cell's precision reads it: subnormal there -> a signed zero."""
    tiny = _tiny(precision)
    if value.__class__ is float:
        return math.copysign(0.0, value) if 0 < abs(value) < tiny else value
    if value.__class__ is complex:
        return complex(_single_scalar(value.real, precision), _single_scalar(value.imag, precision))
    return value


def _precision(cell: Any, dtypes: frozenset[str]) -> np.dtype | None:
    """The real dtype a cell's kernel computes in, when its dtype is one of ``dtypes``."""
    if cell.dtype.name not in dtypes or cell.dtype.category not in ("real floating", "complex floating"):
        return None
    return np.finfo(cell.dtype.numpy).dtype


def involved(case: Case, cell: Any, dtypes: frozenset[str], *results: Any) -> bool:
    """Whether flushing can matter for ``case``: a subnormal of ``dtypes`` in an input or a result."""
    if any(_has_subnormal(arr.host(), dtypes) for arr in case.arrays()):
        return True
    precision = _precision(cell, dtypes)
    if precision is not None:
        scalars = [a for a in (*case.args, *case.kwargs.values()) if a.__class__ in (float, complex)]
        if any(_single_scalar(s, precision) != s for s in scalars):
            return True
    return any(_has_subnormal(r, dtypes) for r in results if r is not None)


def flush_case(case: Case, cell: Any, dtypes: frozenset[str]) -> Case:
    """``case`` with the subnormals of its ``dtypes`` input arrays (and, in a cell computing in such a
    dtype, of its Python float/complex arguments) flushed."""
    precision = _precision(cell, dtypes)

    def conv(value: Any) -> Any:
        if isinstance(value, Arr):
            return Arr(flush(value.base, dtypes), value.view)
        if isinstance(value, (tuple, list)):
            return type(value)(conv(v) for v in value)
        if precision is not None and value.__class__ in (float, complex):
            return _single_scalar(value, precision)
        return value

    return case.replace(tuple(conv(a) for a in case.args), {k: conv(v) for k, v in case.kwargs.items()})
