"""``x @= y`` (found by a user probe: NDArray had no ``__imatmul__``, so Python rebound ``x`` to
``x @ y`` and views and other holders of ``x`` never saw the product). NumPy 2 and the Array API
store the product into ``x`` when it has ``x``'s shape."""

from __future__ import annotations

import numpy as np
import pytest

import nda


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_imatmul_writes_into_x_and_its_views_see_it(device):
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    x = nda.eye(2, device=device)
    v = x[:]
    same = x
    x @= nda.asarray(m, device=device)
    assert x is same
    a = np.eye(2)
    a @= m
    np.testing.assert_array_equal(x.to_numpy(), a)
    np.testing.assert_array_equal(v.to_numpy(), a)


def test_imatmul_with_itself_reads_before_it_writes():
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    x = nda.asarray(m.copy())
    x @= x
    np.testing.assert_array_equal(x.to_numpy(), m @ m)


def test_imatmul_refuses_what_numpy_refuses():
    x = nda.ones((2, 3))
    x @= nda.ones((3, 3))  # the product keeps x's shape
    np.testing.assert_array_equal(x.to_numpy(), np.full((2, 3), 3.0))
    with pytest.raises(ValueError, match=r"shape \(2, 2\).*\(2, 3\)"):
        x @= nda.ones((3, 2))
    i = nda.ones((2, 2), dtype=nda.int64)
    with pytest.raises(TypeError, match="float64 product in place in a int64"):
        i @= nda.ones((2, 2))
    np.testing.assert_array_equal(i.to_numpy(), np.ones((2, 2)))  # untouched
    with pytest.raises(TypeError):
        x @= [[1.0, 0.0], [0.0, 1.0]]  # as for x @ list
