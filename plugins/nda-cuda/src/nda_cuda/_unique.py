"""nda's ``unique_*`` ops on ``cupy.unique``: the reference's conventions, CuPy's sort.

They ran through the host fallback until issue 35: found by name, they are array-api-compat's
wrappers, whose named tuples (``UniqueAllResult``, ...) the kernel adapter does not take. The
kernels here call ``cupy.unique`` (CuPy 14.2, ``cupy/_manipulation/add_remove.py``) on the flattened
operand with ``equal_nan=False`` and the outputs the op needs, which returns a plain tuple, and map
what differs from the reference (NumPy 2's ``unique_*``, sorted):

* **NaN order**: CuPy sorts a 1-d float array with thrust's radix sort, which orders NaNs by their
  bits: a NaN with its sign bit set (x86 makes those: ``0 * inf``) comes first, before ``-inf``
  (the H200, through ``argsort``); NumPy puts every NaN last. The operand's NaNs are made positive
  first (as ``sort``'s workaround, ``nda_cuda._workarounds_linalg.nans_last``), so each NaN is a
  value of its own at the end, in the order of the input, with its first index, as in NumPy;
* **index dtypes**: indices, inverse and counts are ``intp`` in CuPy (``argsort``, ``cumsum``,
  ``nonzero``), int64 in nda: cast (a no-op on 64-bit platforms);
* **inverse shape**: the operand's (CuPy reshapes the inverse to the shape it was given, here the
  flattened one).

* **subnormals**: float32/complex64 subnormals compare equal to zero in CuPy's ``!=`` kernel
  (``-ftz=true``), but the sort orders them by their bits: ``unique_all([1e-45, 0.0])`` kept one
  value, ``0.0``, with index 1, where NumPy on the flushed input (the backend declares flushing)
  gives index 0. The operand's subnormals are flushed first (to zeros of their sign), so the
  results are NumPy's on the flushed input, which the conformance kit accepts.

Zeros are not made positive: CuPy's radix sort keeps ``-0.0`` and ``0.0`` in input order (the H200's
``argsort`` cells passed on the edge values), so the first zero's index is NumPy's.

Everything takes the array module as a parameter (the tests run it over the model of CuPy).

Layer: nda-cuda (a plugin; nda's public modules only).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

__all__ = ["OPS", "factories"]

#: op -> (return_index, return_inverse, return_counts)
_OUTPUTS = {
    "unique_values": (False, False, False),
    "unique_counts": (False, False, True),
    "unique_inverse": (False, True, False),
    "unique_all": (True, True, True),
}
OPS = tuple(_OUTPUTS)


_TINY32 = float(np.finfo(np.float32).smallest_normal)


def _flushed_part(xp: Any, part: Any) -> Any:
    return xp.where(xp.abs(part) < _TINY32, part * 0, part)  # x * 0: a zero of x's sign (finite x)


def _flushed(xp: Any, x: Any) -> Any:
    """``x`` with its float32/complex64 subnormals (parts) made zeros of their sign; other dtypes as they are."""
    if x.dtype == np.float32:
        return _flushed_part(xp, x)
    if x.dtype == np.complex64:
        from ._workarounds import _complex

        return _complex(xp, _flushed_part(xp, x.real), _flushed_part(xp, x.imag), x.dtype)
    return x


def _kernel(op: str) -> Callable[[Any], Callable[..., Any]]:
    index, inverse, counts = _OUTPUTS[op]

    def factory(xp: Any) -> Callable[..., Any]:
        def unique(x: Any) -> Any:
            flat = _flushed(xp, x.reshape(-1))
            if flat.dtype.kind == "f":
                flat = xp.where(xp.isnan(flat), math.nan, flat)  # every NaN positive: last, as NumPy's
            found = xp.unique(flat, return_index=index, return_inverse=inverse, return_counts=counts, equal_nan=False)
            if op == "unique_values":
                return found
            values, *rest = found
            rest = [r.astype(np.int64, copy=False) for r in rest]
            if inverse:
                position = 1 if index else 0
                rest[position] = rest[position].reshape(x.shape)
            return (values, *rest)

        unique.__name__ = unique.__qualname__ = op
        return unique

    return factory


def factories() -> dict[str, Callable[[Any], Callable[..., Any]]]:
    """op -> factory(xp) of its kernel, for :data:`nda_cuda._kernels.OVERRIDES`."""
    return {op: _kernel(op) for op in OPS}
