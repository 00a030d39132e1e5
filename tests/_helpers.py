"""Helpers shared by the nda tests: dtype tables, hypothesis strategies, comparisons.

Everything here is written against NumPy only (no nda internals), so the tests stay an
independent check of nda.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda

ALL_DTYPES = [
    nda.bool,
    nda.int8,
    nda.int16,
    nda.int32,
    nda.int64,
    nda.uint8,
    nda.uint16,
    nda.uint32,
    nda.uint64,
    nda.float32,
    nda.float64,
    nda.complex64,
    nda.complex128,
]
BY_NAME = {d.name: d for d in ALL_DTYPES}
INT_DTYPES = [d for d in ALL_DTYPES if d.name.startswith(("int", "uint"))]
FLOAT_DTYPES = [nda.float32, nda.float64]
COMPLEX_DTYPES = [nda.complex64, nda.complex128]
REAL_NUMERIC = INT_DTYPES + FLOAT_DTYPES
NUMERIC = REAL_NUMERIC + COMPLEX_DTYPES

SMALL_SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
NONEMPTY_SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def np_dtype(dtype) -> np.dtype:
    return np.dtype(dtype.name)


def is_int(dtype) -> bool:
    return np_dtype(dtype).kind in "iu"


def is_float(dtype) -> bool:
    return np_dtype(dtype).kind == "f"


def is_complex(dtype) -> bool:
    return np_dtype(dtype).kind == "c"


def is_bool(dtype) -> bool:
    return np_dtype(dtype).kind == "b"


def ids(dtypes) -> list[str]:
    return [d.name for d in dtypes]


@functools.lru_cache(maxsize=None)
def elements(dtype, *, min_value=None, max_value=None, allow_nan=True, allow_infinity=True):
    """Element strategy: full range for ints, NaN/inf/-0.0/subnormals for floats."""
    dt = np_dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = info.min if min_value is None else max(info.min, min_value)
        hi = info.max if max_value is None else min(info.max, max_value)
        return st.integers(lo, hi)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind == "f":
        if min_value is not None or max_value is not None:
            allow_nan = allow_infinity = False
        return hnp.from_dtype(dt, allow_nan=allow_nan, allow_infinity=allow_infinity, min_value=min_value, max_value=max_value)
    return hnp.from_dtype(dt, allow_nan=allow_nan, allow_infinity=allow_infinity)


def arrays(dtype, shape=SMALL_SHAPES, **element_kwargs):
    """Hypothesis arrays of ``dtype`` (an nda dtype) with small shapes (``shape``: a tuple or a strategy)."""
    return _arrays(dtype, shape, tuple(sorted(element_kwargs.items())))


@functools.lru_cache(maxsize=None)
def _arrays(dtype, shape, element_kwargs):
    strategy = hnp.arrays(np_dtype(dtype), shape, elements=elements(dtype, **dict(element_kwargs)))
    strategy.validate()
    return strategy


def to_nda(a: np.ndarray):
    """An nda array holding a copy of ``a`` (nda shares memory with NumPy input otherwise)."""
    return nda.asarray(np.array(a, copy=True))


def tolerance(dtype) -> float:
    kind = np.dtype(dtype).kind
    if kind in "fc":
        return 2e-6 if np.dtype(dtype).itemsize <= (4 if kind == "f" else 8) else 1e-12
    return 0.0


def check_buffer(result) -> np.ndarray:
    """The data of ``result``, after checking that it agrees with its own metadata."""
    assert isinstance(result, nda.NDArray), f"expected an nda.NDArray, got {type(result).__name__}"
    data = result.asnumpy()
    assert data.shape == result.shape, f"array reports shape {result.shape} but holds data of shape {data.shape}"
    assert data.dtype == np_dtype(result.dtype), f"array reports dtype {result.dtype.name} but holds {data.dtype} data"
    return data


def assert_same(result, expected, *, dtype=True, rtol=None, atol=0.0, signed_zeros=True) -> None:
    """``result`` (an NDArray) equals ``expected`` (NumPy) in shape, dtype and values (and signs of zeros)."""
    expected = np.asarray(expected)
    data = check_buffer(result)
    assert result.shape == expected.shape, f"shape {result.shape} != numpy's {expected.shape}"
    if dtype:
        assert result.dtype.name == expected.dtype.name, f"dtype {result.dtype.name} != numpy's {expected.dtype}"
    assert_values(data, expected, rtol=rtol, atol=atol, signed_zeros=signed_zeros)


def assert_values(data: np.ndarray, expected: np.ndarray, *, rtol=None, atol=0.0, signed_zeros=True) -> None:
    expected = np.asarray(expected)
    if data.dtype.kind in "fc" or expected.dtype.kind in "fc":
        if rtol is None:
            rtol = max(tolerance(data.dtype), tolerance(expected.dtype) if expected.dtype.kind in "fc" else 0.0)
        np.testing.assert_allclose(data, expected, rtol=rtol, atol=atol, equal_nan=True, strict=False)
        if signed_zeros and atol == 0.0:
            _assert_signed_zeros(data, expected)
    else:
        np.testing.assert_array_equal(data, expected, strict=False)


def _assert_signed_zeros(data: np.ndarray, expected: np.ndarray) -> None:
    """Where NumPy gives a zero, the sign of that zero must match too (-0.0 is not 0.0)."""
    if expected.dtype.kind not in "fc" or data.dtype.kind not in "fc":
        return
    data, expected = np.broadcast_arrays(data, expected)
    parts = [(np.real(data), np.real(expected))]
    if expected.dtype.kind == "c":
        parts.append((np.imag(data), np.imag(expected)))
    for got, want in parts:
        zeros = want == 0
        mismatch = zeros & (np.signbit(got) != np.signbit(want))
        assert not mismatch.any(), f"signed zeros differ: got {got[mismatch]!r}, numpy gives {want[mismatch]!r}"


def xfail_bug(reason: str):
    return pytest.mark.xfail(reason=f"nda bug: {reason}", strict=True)


@st.composite
def axes(draw, ndim: int, *, allow_none: bool = True, allow_tuple: bool = True, allow_int: bool = True):
    """An ``axis`` argument for an array of ``ndim`` dimensions: None, an int or a tuple (negatives too)."""
    options = []
    if allow_none:
        options.append("none")
    if allow_int and ndim:
        options.append("int")
    if allow_tuple:
        options.append("tuple")
    kind = draw(st.sampled_from(options))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)) if ndim else []
    return tuple(a - ndim if draw(st.booleans()) else a for a in chosen)


def normalized_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis % ndim,)
    return tuple(sorted(a % ndim for a in axis))
