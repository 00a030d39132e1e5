"""The engine entry point: every op must give the same result when the engine defers work.

The deferred engine queues every op and runs the queue at the next sync point, so these
tests fail if any op (or operator, or indexing path) computes outside the engine or reads
a buffer that the engine has not produced yet.
"""

from __future__ import annotations

import numpy as np
import pytest

import nda


def _program():
    x = nda.reshape(nda.arange(12, dtype=nda.float64), (3, 4))
    y = nda.ones((3, 4), dtype=nda.float32)
    z = x * y + 1
    z += 2
    z[0, 1:3] = -5.0
    v = z[1]
    v *= 10  # writes through a view into z
    w = nda.sin(z) + nda.sum(z, axis=0)
    m = z @ nda.permute_dims(z, (1, 0))
    s = nda.sort(nda.flip(nda.concat([z, x], axis=0), axis=0), axis=1)
    c = nda.where(z > 3, z, 0.0)
    k = nda.astype(z, nda.int32) // 3
    idx = z[nda.asarray([0, 2])]
    masked = z[z > 10]
    return [z, v, w, m, s, c, k, idx, masked, nda.argmax(z), nda.mean(z), nda.cumulative_sum(nda.arange(5))]


@pytest.fixture
def deferred():
    previous = nda.engine.current().name
    engine = nda.engine.use("deferred")
    yield engine
    nda.engine.use(previous)


def test_program_matches_under_deferred_engine(deferred):
    results = _program()
    deferred_values = [r.asnumpy() for r in results]
    nda.engine.use("naive")
    expected = [r.asnumpy() for r in _program()]
    for got, want in zip(deferred_values, expected):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_deferred_engine_really_defers(deferred):
    x = nda.ones(4)
    y = x + 1
    assert y._buf is None, "the op must be queued, not run inline"
    assert y.shape == (4,) and y.dtype == nda.float64, "metadata is known before the work runs"
    assert y.tolist() == [2.0] * 4
    assert y._buf is not None


def test_deferred_error_surfaces_at_sync_point(deferred):
    x = nda.arange(3)
    y = x[nda.asarray([5])]  # out of bounds: only the kernel can know
    with pytest.raises(IndexError):
        y.asnumpy()


def test_unknown_engine_name():
    with pytest.raises(ValueError, match="available engines"):
        nda.engine.use("turbo")
