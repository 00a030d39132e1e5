"""NumPy's array methods and attributes that were missing (issue 37, item 2), against NumPy, on cpu and sim.

``cumsum cumprod swapaxes dot sort argsort nonzero fill nbytes itemsize strides real imag
conj trace diagonal repeat take ptp view flat tobytes`` (``nda._arraymethods``): each was an
AttributeError before issue 37. ``x.sort()`` sorts in place as NumPy's does; ``strides``
are a C-contiguous layout's; ``x.view(dtype)`` reinterprets the bytes into a new array.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda

from test_numpy_names import same

DEVICES = ["cpu", "sim"]


def _arrays():
    return st.sampled_from([np.float64, np.float32, np.int64, np.int16, np.complex128]).flatmap(
        lambda dt: hnp.arrays(
            dt,
            hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
            elements=st.integers(-50, 50).map(dt)
            if np.dtype(dt).kind in "iu"
            else st.floats(-100, 100, width=32 if dt is np.float32 else 64).map(dt),
        )
    )


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=15, deadline=None)
@given(data=st.data(), h=_arrays())
def test_methods_are_numpys(device, data, h):
    x = nda.asarray(h, device=device)
    real = h.dtype.kind != "c"
    axis = data.draw(st.sampled_from([None, 0, -1]))
    tol = {"exact": False, "rtol": 2e-5 if h.dtype == np.float32 else 1e-12, "atol": 1e-9}
    same(x.cumsum(axis), h.cumsum(axis), **tol)
    same(x.cumprod(axis=axis), h.cumprod(axis=axis), **tol)
    same(x.swapaxes(0, -1), h.swapaxes(0, -1))
    same(x.dot(x.T if x.ndim <= 2 else x.swapaxes(-1, -2)), h.dot(h.T if h.ndim <= 2 else h.swapaxes(-1, -2)), **tol)
    if real:
        same(x.argsort(axis, kind="stable"), h.argsort(axis, kind="stable"))
        same(x.ptp(axis), np.ptp(h, axis))
        y, g = x.copy(), h.copy()
        assert y.sort(-1) is None
        g.sort(-1)
        same(y, g)
    same(x.nonzero(), h.nonzero())
    assert (x.nbytes, x.itemsize, x.strides) == (h.nbytes, h.itemsize, np.ascontiguousarray(h).strides)
    same(x.real, h.real)
    same(x.imag, h.imag)
    same(x.conj(), h.conj())
    same(x.conjugate(), h.conjugate())
    if h.ndim >= 2:
        offset = data.draw(st.integers(-2, 2))
        same(x.trace(offset), h.trace(offset))
        same(x.diagonal(offset, 0, -1), h.diagonal(offset, 0, -1))
    repeats = data.draw(st.integers(0, 3))
    same(x.repeat(repeats, axis=axis), h.repeat(repeats, axis=axis))
    n = h.size if axis is None else h.shape[axis]
    index = data.draw(hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), elements=st.integers(-n, n - 1)))
    same(x.take(index, axis=axis), h.take(index, axis=axis))
    same(x.take(index + 2 * n, axis=axis, mode="wrap"), h.take(index + 2 * n, axis=axis, mode="wrap"))
    same(x.take(index * 3, axis=axis, mode="clip"), h.take(index * 3, axis=axis, mode="clip"))
    assert x.tobytes() == h.tobytes() and x.tobytes("F") == h.tobytes("F")
    same(x.view(), h.view())
    if real:
        target = {8: np.int64, 4: np.int32, 2: np.int16}[h.itemsize]
        same(x.view(target), h.view(target))
        same(x.view(np.uint8), h.view(np.uint8))
    assert len(x.flat) == h.size
    same(list(x.flat), list(h.flat))
    same(x.flat[1:3], h.flat[1:3])
    same(x.flat.copy(), h.flat.copy())


@pytest.mark.parametrize("device", DEVICES)
def test_in_place_methods_write_through_the_engine(device):
    h = np.array([[3.0, 1.0, 2.0], [9.0, 7.0, 8.0]])
    x = nda.asarray(h, device=device, copy=True)
    view = x[1]
    x.sort()  # in place: a view of x sees the sorted values
    same(view, np.array([7.0, 8.0, 9.0]))
    x.sort(axis=0, kind="stable")
    x.fill(2.7)
    same(x, np.full((2, 3), 2.7))
    i = nda.zeros(3, dtype=nda.int32, device=device)
    i.fill(2.7)  # cast as NumPy casts it
    same(i, np.full(3, 2, dtype=np.int32))
    x.flat[[0, 4]] = -1.0
    g = np.full((2, 3), 2.7)
    g.flat[[0, 4]] = -1.0
    same(x, g)
    t = nda.asarray(h, device=device, copy=True).T  # a strided view: flat assignment still reaches it
    t.flat[1] = 100.0
    same(t, np.array([[3.0, 100.0], [1.0, 7.0], [2.0, 8.0]]))
    with pytest.raises(ValueError, match="scalar"):
        x.fill([1, 2])
    with pytest.raises(ValueError, match="structured"):
        x.sort(order="a")
