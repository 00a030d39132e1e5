"""nda-sim's opt-in flush-to-zero mode: float32 and complex64 subnormals treated as zero.

GPU compilers flush single-precision subnormals by default (CuPy compiles every kernel with
``-ftz=true``; XLA does the same on GPUs): a kernel reads a subnormal input as a zero of the
same sign and writes a subnormal result as one. nda lets a backend declare that
(``flushes_subnormals``, see ``nda.backends.contract``): ``python -m nda info`` and
``nda.dispatch.explain`` show it, and the conformance kit then accepts results that equal the
reference's on flushed inputs, flushed. This mode gives CI a backend that really flushes,
so that path is tested without a GPU.

``NDA_SIM_FLUSH_SUBNORMALS=1`` (read when nda-sim is imported) turns it on: the backend then
declares ``flushes_subnormals = ("float32", "complex64")`` and every native kernel that
computes (not the views, the in-place writes and the creation ops, which only move data)
flushes its float32/complex64 inputs and results. :func:`wrap` is the whole mechanism: it
wraps the NumPy reference function a sim kernel runs on the device memory.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from nda.backends.contract import env_flag

__all__ = ["DTYPES", "ENV", "declared", "flush", "wrap"]

#: The dtypes whose subnormals a flushing device treats as zero.
DTYPES = ("float32", "complex64")
#: The environment variable that turns the mode on.
ENV = "NDA_SIM_FLUSH_SUBNORMALS"

_TINY = float(np.finfo(np.float32).smallest_normal)
_FLUSHED = (np.dtype(np.float32), np.dtype(np.complex64))


def declared() -> tuple[str, ...]:
    """:data:`DTYPES` when the mode is on (``NDA_SIM_FLUSH_SUBNORMALS`` 1/true/yes/on), ``()`` when off
    (unset, empty, 0/false/no/off); another value is a ValueError naming the variable (nda's parser
    of ``NDA_*`` variables, ``nda.backends.contract.env_flag``)."""
    return DTYPES if env_flag(ENV, False) else ()


def _flush_part(a: np.ndarray) -> np.ndarray:
    tiny = (a != 0) & (np.abs(a) < _TINY)
    return np.where(tiny, np.copysign(np.zeros((), a.dtype), a), a) if tiny.any() else a


def flush(value: Any) -> Any:
    """``value`` with the subnormals of float32/complex64 arrays (also inside tuples and lists) replaced by
    zeros of the same sign; arrays without any are returned as they are (no copy)."""
    if isinstance(value, np.ndarray):
        if value.dtype == _FLUSHED[0]:
            return _flush_part(value)
        if value.dtype == _FLUSHED[1]:
            real, imag = _flush_part(value.real), _flush_part(value.imag)
            if real is value.real and imag is value.imag:
                return value
            out = np.empty_like(value)
            out.real, out.imag = real, imag
            return out
        return value
    if isinstance(value, np.generic) and value.dtype in _FLUSHED:
        return flush(np.asarray(value))[()]
    if value.__class__ in (tuple, list):
        return value.__class__(flush(v) for v in value)
    return value


def _flush_scalar(value: Any) -> Any:
    """A Python float/complex that a single-precision kernel would read as a subnormal, as a signed zero."""
    if value.__class__ is float:
        return math.copysign(0.0, value) if 0 < abs(value) < _TINY else value
    if value.__class__ is complex:
        return complex(_flush_scalar(value.real), _flush_scalar(value.imag))
    return value


def _single(values: Any) -> bool:
    """Whether a call computes in single precision: a float32/complex64 array and no wider floating array."""
    found = False
    for v in values:
        dtype = v.dtype if isinstance(v, np.ndarray) else None
        if dtype is None:
            continue
        if dtype in _FLUSHED:
            found = True
        elif dtype.kind in "fc":
            return False
    return found


def wrap(decl: Any, dtypes: tuple[str, ...]) -> Callable[..., Any]:
    """``decl.reference``, flushing float32/complex64 inputs and results when ``dtypes`` is not empty.

    Views, in-place writes and creation ops move data without arithmetic and are not wrapped
    (a view of a flushed copy would not be a view).
    """
    reference = decl.reference
    if not dtypes or decl.view or decl.mutates or decl.family == "creation" or decl.name == "asarray":
        return reference  # type: ignore[no-any-return]

    def flushing(*args: Any, **kwargs: Any) -> Any:
        args = tuple(flush(a) for a in args)
        kwargs = {k: flush(v) for k, v in kwargs.items()}
        if _single(args):
            args = tuple(_flush_scalar(a) for a in args)
        return flush(reference(*args, **kwargs))

    flushing.__name__ = getattr(reference, "__name__", decl.name)
    return flushing
