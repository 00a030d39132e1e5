"""CuPy 14.2's ``unique`` and ``unique_all``/``_counts``/``_inverse``/``_values`` in the model.

Part of the CuPy model (``tests/_cupy_quirks.py`` installs these in ``cupy_model``; array-api-compat's
``unique_*`` call this ``unique``). Follows ``cupy/_manipulation/add_remove.py`` at v14.2.0 (the
flattened path, ``_unique_1d``; ``axis`` is not modelled):

* the flattened input is ordered by CuPy's sort (``argsort`` when indices or the inverse are asked
  for, ``sort`` otherwise): thrust's radix sort for 1-d floats, which puts a NaN with its sign bit
  set before ``-inf`` (the model's ``_radix_order``, measured on the H200 through ``argsort``);
  NumPy puts every NaN last;
* neighbours are compared by an element-wise ``!=`` kernel compiled with ``-ftz=true``: float32 and
  complex64 subnormals compare equal to zero (the first of them in sorted order is kept);
  ``equal_nan=True`` (``cupy.unique``'s default) merges NaNs, ``False`` (the ``unique_*``
  functions) keeps each;
* indices (from ``argsort``), the inverse and the counts (from ``nonzero``) are ``intp``; the
  inverse has the input's shape (``inverse_shape=ar.shape``);
* ``cupy.unique`` returns a plain tuple when more than the values are asked for, the ``unique_*``
  functions named tuples of CuPy's own classes (``UniqueAllResult``, ...).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import _cupy_streams as streams
from _cupy_device import DeviceArray, device, flush, plain, refuse_host

__all__ = ["UNIQUE"]


def _radix_order(a: np.ndarray) -> np.ndarray:
    from _cupy_quirks import _radix_order

    return _radix_order(a)


def unique(
    ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False, axis: Any = None, *, equal_nan: bool = True
) -> Any:
    refuse_host((ar,), {})
    if axis is not None:
        raise NotImplementedError("the model of cupy.unique covers the flattened input only (axis=None)")
    streams.before_kernel()
    host = plain(ar)
    flat = np.array(host).reshape(-1)
    perm = _radix_order(flat)
    aux = flat[perm]
    mask = np.empty(aux.shape, dtype=bool)
    mask[:1] = True
    with np.errstate(invalid="ignore"):
        compared = flush(aux)
        mask[1:] = compared[1:] != compared[:-1]
        if equal_nan and aux.dtype.kind in "fc":
            mask[1:] &= ~np.isnan(aux[:-1])
    values = aux[mask]
    if not (return_index or return_inverse or return_counts):
        return device(values)
    out: list[np.ndarray] = [values]
    if return_index:
        out.append(perm[mask].astype(np.intp))
    if return_inverse:
        inverse = np.empty(mask.shape, np.intp)
        inverse[perm] = np.cumsum(mask) - 1
        out.append(inverse.reshape(host.shape))
    if return_counts:
        starts = np.flatnonzero(mask)
        out.append(np.diff(np.append(starts, mask.size)).astype(np.intp))
    return tuple(DeviceArray(o) for o in out)


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def unique_all(x: Any) -> UniqueAllResult:
    return UniqueAllResult(*unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False))


def unique_counts(x: Any) -> UniqueCountsResult:
    return UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False))


def unique_inverse(x: Any) -> UniqueInverseResult:
    return UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False))


def unique_values(x: Any) -> Any:
    return unique(x, equal_nan=False)


#: The model's ``cupy.unique`` and ``cupy.unique_*``.
UNIQUE: dict[str, Any] = {
    "unique": unique,
    "unique_all": unique_all,
    "unique_counts": unique_counts,
    "unique_inverse": unique_inverse,
    "unique_values": unique_values,
}
