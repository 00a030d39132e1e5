"""The cpu kernels of ``sort`` and ``argsort``: NumPy's fast default sort, with a stable result.

The catalog's references sort with ``kind="stable"`` (NumPy's timsort for 32- and 64-bit
keys): 1M float32 took 10-30x NumPy's default sort (``kind="quicksort"``, an introsort that
NumPy runs with SIMD sorting networks where the CPU has them). Whether a sort is stable can
only be seen where elements compare equal but differ:

* ``sort`` returns values. Integers that compare equal are the same value, so a fast sort's
  result *is* the stable sort's. Floats differ in two ways: ``-0.0 == 0.0`` (a stable sort
  keeps the zeros' signs in their original order; the SIMD sort's min/max may even turn a
  ``-0.0`` into ``0.0``), and NaNs (sorted last, a stable sort keeps
  their bit patterns, sign and payload, in their original order; NumPy's SIMD sort writes
  back a canonical NaN: ``-nan`` became ``nan``, data silently changed). So :func:`sort`
  sorts fast and then repairs exactly those two regions where they occur: a 1-D sort finds
  its NaNs by its last element and its zeros by binary search (two ``searchsorted``); where
  there are NaNs, or zeros and a ``-0.0`` in the input (a pass over its integer view), that
  region gets the input's own elements in their order. Rows of a larger array whose last
  element is NaN, or whose input holds a ``-0.0``, are sorted again stably. Both the stable
  and the unstable call give the stable sort's values: identical results, NumPy's speed.
* ``argsort`` returns positions, where stability is always visible: ``stable=True`` (the
  Array API's default) sorts stably; ``stable=False`` takes NumPy's default sort (which
  puts NaNs last, as the reference does).

``descending`` is the reference's: the ascending result flipped for ``sort``, the stable
order of the reversed array mapped back for ``argsort``. The conformance kit checks these
kernels against the references like any backend's.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["sort", "argsort"]

#: The integer whose bits are ``-0.0``, per float itemsize.
_NEG_ZERO_BITS = {2: np.int16(-0x8000), 4: np.int32(-0x80000000), 8: np.int64(-0x8000000000000000)}
_INT_VIEW = {2: np.int16, 4: np.int32, 8: np.int64}


def _repair_1d(out: np.ndarray, x: np.ndarray) -> None:
    """Make the fast ascending sort ``out`` of 1-D ``x`` equal to the stable one (see the module docstring)."""
    n = out.shape[0]
    if n == 0:
        return
    last = out[n - 1]
    if last != last:  # NaNs at the end: the originals, in their order (bits included)
        nans = x[np.isnan(x)]
        out[n - nans.shape[0] :] = nans
    zero = out.dtype.type(0)  # of out's dtype: a Python float would make searchsorted copy out to float64
    lo = int(np.searchsorted(out, zero, side="left"))
    hi = int(np.searchsorted(out, zero, side="right"))
    if hi > lo and _has_negative_zero(x):  # the stable order of the zeros is the original one
        out[lo:hi] = x[x == 0]


def _has_negative_zero(x: np.ndarray, axis: Any = None) -> Any:
    """Whether ``x`` holds a ``-0.0`` (per row with ``axis=-1``): a pass over its integer view."""
    return (x.view(_INT_VIEW[x.dtype.itemsize]) == _NEG_ZERO_BITS[x.dtype.itemsize]).any(axis=axis)


def _repair_rows(out: np.ndarray, x: np.ndarray) -> None:
    """The same for the rows (last axis) of ``out``, the fast sort of ``x``: rows that need it are sorted again stably."""
    bad = np.isnan(out[..., -1]) | _has_negative_zero(x, -1)
    if bad.any():
        out[bad] = np.sort(x[bad], axis=-1, kind="stable")


def sort(x: np.ndarray, axis: int = -1, descending: bool = False, stable: bool = True) -> np.ndarray:
    """A sorted copy of ``x`` along ``axis``: the stable sort's values at NumPy's default sort's speed."""
    out = np.sort(x, axis=axis)
    if out.dtype.kind == "f" and out.size and out.dtype.itemsize in _INT_VIEW:
        if out.ndim == 1:
            _repair_1d(out, x)
        else:
            _repair_rows(np.moveaxis(out, axis, -1), np.moveaxis(x, axis, -1))
    elif out.dtype.kind == "f" and out.size:  # a float the repair does not know: the reference's way
        out = np.sort(x, axis=axis, kind="stable")
    return np.flip(out, axis=axis).copy() if descending else out


def argsort(x: np.ndarray, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Indices (int64) that sort ``x`` along ``axis``; stable unless ``stable=False``."""
    if stable:
        if not descending:
            return np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)
        # Stable descending order: sort the reversed array ascending, then map indices back.
        n = x.shape[axis]
        idx = np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable")
        return np.flip(n - 1 - idx, axis=axis).astype(np.int64, copy=False)
    idx = np.argsort(x, axis=axis).astype(np.int64, copy=False)
    return np.flip(idx, axis=axis).copy() if descending else idx
