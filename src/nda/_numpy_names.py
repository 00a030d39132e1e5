"""NumPy's functions that run as nda's NumPy-named functions (``__array_function__``; policy in ``nda._interop``).

Each handler here is one line of a table: the NumPy function, the nda function with the same
signature (:mod:`nda._numpyapi`, ``nda.pad``), and which of its parameters are arrays. The
handler binds NumPy's arguments to that signature, brings NumPy arrays, sequences and
scalars given for the array parameters onto the call's device (``_Call.array``), and calls
the nda function, which computes on the device with nda's ops. An argument nda's function
does not take (a keyword of a newer NumPy, ``weights=`` of ``np.quantile``) is a TypeError
there, which ``nda._interop`` turns into the host fallback, as for every handler.

Layer: arrays and front end, NumPy protocols (README, "Architecture").
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from . import _composite, _numpyapi
from . import fft as _fft
from . import linalg as _linalg
from ._interop_args import FUNCTIONS, _Call, _NoValue, _refuse, _register, _store

__all__ = ["FUNCTIONS", "NAMES"]

#: nda function -> the parameters that are arrays ("a"), sequences of arrays ("*tup"), or operands
#: that may stay scalars ("~b": a Python scalar is passed as it is).
_TABLE: list[tuple[Any, Callable[..., Any], tuple[str, ...]]] = []


def _forward(fn: Callable[..., Any], params: tuple[str, ...]) -> Callable[..., Any]:
    signature = inspect.signature(fn)
    arrays = {p for p in params if p[0] not in "*~"}
    sequences = {p[1:] for p in params if p[0] == "*"}
    operands = {p[1:] for p in params if p[0] == "~"}

    def handler(c: _Call, *args: Any, **kwargs: Any) -> Any:
        kwargs = {k: v for k, v in kwargs.items() if v is not _NoValue}  # NumPy's "not given"
        bound = signature.bind(*args, **kwargs)  # NumPy's arguments nda does not take: a TypeError (the host fallback)
        values = bound.arguments
        out = values.pop("out", None)  # NumPy's out= rules (exact dtype for np.dot, casting...) on the result: _store
        for name, value in list(values.items()):
            if value is None:
                continue
            if name in arrays:
                values[name] = c.array(value)
            elif name in operands and not isinstance(value, (bool, int, float, complex, np.generic)):
                values[name] = c.array(value)
            elif name in sequences:
                kind = signature.parameters[name].kind
                if kind is inspect.Parameter.VAR_POSITIONAL:
                    values[name] = tuple(c.array(v) for v in value)
                elif isinstance(value, (list, tuple)):
                    values[name] = [c.array(v) for v in value]
                else:
                    values[name] = c.array(value)
        return _store(c.name, out, fn(*bound.args, **bound.kwargs))

    handler.__name__ = f"_{fn.__name__}"
    return handler


def _table(*rows: tuple[Any, Callable[..., Any], tuple[str, ...]]) -> None:
    for numpy_fns, fn, params in rows:
        handler = _forward(fn, params)
        for numpy_fn in numpy_fns if isinstance(numpy_fns, tuple) else (numpy_fns,):
            if numpy_fn is not None:
                _register(numpy_fn)(handler)
                _TABLE.append((numpy_fn, fn, params))


n = _numpyapi
_table(
    # shapes and creation
    (np.diag, n.diag, ("v",)),
    (np.swapaxes, n.swapaxes, ("a",)),
    (np.concatenate, n.concatenate, ("*arrays",)),
    ((np.vstack, getattr(np, "row_stack", None)), n.vstack, ("*tup",)),
    (np.hstack, n.hstack, ("*tup",)),
    (np.dstack, n.dstack, ("*tup",)),
    (np.column_stack, n.column_stack, ("*tup",)),
    (np.atleast_1d, n.atleast_1d, ("*arys",)),
    (np.atleast_2d, n.atleast_2d, ("*arys",)),
    (np.atleast_3d, n.atleast_3d, ("*arys",)),
    (np.split, n.split, ("ary",)),
    (np.array_split, n.array_split, ("ary",)),
    (np.put, n.put, ("a",)),
    (np.take, n._shapes.take_numpy, ("a",)),
    # statistics
    ((np.amax, np.max), n.amax, ("a",)),
    ((np.amin, np.min), n.amin, ("a",)),
    (np.ptp, n.ptp, ("a",)),
    (np.cumsum, n.cumsum, ("a",)),
    (np.cumprod, n.cumprod, ("a",)),
    (np.median, n.median, ("a",)),
    (np.quantile, n.quantile, ("a",)),
    (np.percentile, n.percentile, ("a",)),
    (np.nanquantile, n.nanquantile, ("a",)),
    (np.nanpercentile, n.nanpercentile, ("a",)),
    (np.average, n.average, ("a",)),
    (np.nansum, n.nansum, ("a",)),
    (np.nanprod, n.nanprod, ("a",)),
    (np.nanmean, n.nanmean, ("a",)),
    (np.nanmax, n.nanmax, ("a",)),
    (np.nanmin, n.nanmin, ("a",)),
    (np.nanvar, n.nanvar, ("a",)),
    (np.nanstd, n.nanstd, ("a",)),
    # counting, covariance
    (np.unique, n.unique, ("ar",)),
    (np.argwhere, n.argwhere, ("a",)),
    (np.array_equal, n.array_equal, ()),
    (np.bincount, n.bincount, ("x",)),
    (np.digitize, n.digitize, ("x",)),
    (np.histogram, n.histogram, ("a",)),
    (np.histogram_bin_edges, n.histogram_bin_edges, ("a",)),
    (np.cov, n.cov, ("m",)),
    (np.corrcoef, n.corrcoef, ("x",)),
    # numerical functions
    ((np.around, np.round), n.around, ("a",)),
    (np.nan_to_num, n.nan_to_num, ("x",)),
    (np.angle, n.angle, ("z",)),
    (np.gradient, n.gradient, ("f",)),
    (np.interp, n.interp, ()),
    (np.convolve, n.convolve, ()),
    (np.correlate, n.correlate, ()),
    # products, polynomials
    (np.dot, n.dot, ()),
    (np.vdot, n.vdot, ()),
    (np.inner, n.inner, ()),
    (np.outer, n.outer, ()),
    (np.cross, n.cross, ()),
    (np.kron, n.kron, ()),
    (np.trace, n.trace, ("a",)),
    (np.diagonal, n.diagonal, ("a",)),
    (np.polyval, n.polyval, ()),
    (np.polyfit, n.polyfit, ()),
    (np.linalg.norm, _linalg.norm, ("x",)),
    (np.linalg.lstsq, _linalg.lstsq, ("a",)),
    (np.fft.fft2, _fft.fft2, ("a",)),
    (np.fft.ifft2, _fft.ifft2, ("a",)),
    (np.fft.rfft2, _fft.rfft2, ("a",)),
    (np.fft.irfft2, _fft.irfft2, ("a",)),
)
del n


@_register(np.ravel)
def _ravel(c: _Call, a: Any, order: str = "C") -> Any:
    """``np.ravel``: orders "K" and "A" follow a NumPy array's memory layout, which only a host copy shows (for 2-D and up)."""
    x = c.array(a)
    if order in ("K", "A") and x.ndim > 1:
        raise _refuse(c.name, f"order={order!r} follows the memory layout")
    return _numpyapi.ravel(x, "C" if order in ("K", "A") else order)


@_register(np.pad)
def _pad(c: _Call, array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    """``np.pad`` in its "constant" mode (``nda.pad``); NumPy's other modes on a host copy."""
    if mode != "constant":
        raise _refuse(c.name, f"nda pads in the 'constant' mode only, not {mode!r}")
    values = kwargs.pop("constant_values", 0)
    if kwargs:
        raise TypeError(f"unexpected keyword arguments {sorted(kwargs)}")
    if isinstance(values, (tuple, list)) or getattr(values, "ndim", 0):
        raise _refuse(c.name, "constant_values differ by side or axis")
    return _composite.pad(c.array(array), pad_width, constant_values=values)


#: The NumPy functions this module answers (for tests and the README).
NAMES = sorted({f"{f.__module__}.{f.__name__}" for f, _, _ in _TABLE} | {"numpy.pad", "numpy.ravel"})
