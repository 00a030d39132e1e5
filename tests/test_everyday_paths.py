"""The fast paths of issue 37 keep their results: sort, boolean masks, iterating over rows.

Their speed is measured in ``benchmarks/everyday.py`` (``python -m benchmarks``), never here;
these tests check what each fast path must not change: the stable sort's values bit for bit
(``-0.0`` and ``0.0`` in their order, NaN signs and payloads), a mask's result and errors, and
that each row of ``for row in x`` is what ``x[i]`` gives at that moment.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda
from nda.backends import cpu_sort
from nda.ops.linalg import _ref_argsort, _ref_sort

DEVICES = ["cpu", "sim"]

_SPECIAL = np.concatenate(
    [
        np.array([0.0, -0.0, np.nan, -np.nan, 1.0, -1.0, np.inf, -np.inf, 2.5]),
        np.array([0x7FF8000000000123, 0xFFF80000000ABCDE], np.uint64).view(np.float64),  # NaNs with payloads, both signs
    ]
)


@st.composite
def _sortable(draw, max_side=300):
    dtype = draw(st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8]))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6) | st.tuples(st.integers(0, max_side)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f" and draw(st.booleans()):
        a = rng.choice(_SPECIAL, size=shape).astype(dtype)  # mostly ties: zeros of both signs, NaNs of all kinds
    else:
        a = (rng.normal(size=shape) * 4).astype(dtype)
    return a


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@given(a=_sortable(), data=st.data())
def test_cpu_sort_kernel_gives_the_stable_sorts_bits(a, data):
    # NumPy's default (SIMD) sort writes back a canonical NaN and may turn -0.0 into 0.0;
    # the kernel repairs both, so stable=False and stable=True give the stable sort's bits.
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1), label="axis")
    descending = data.draw(st.booleans(), label="descending")
    stable = data.draw(st.booleans(), label="stable")
    got = cpu_sort.sort(a, axis, descending, stable)
    want = _ref_sort(a, axis, descending, True)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert _bits(got) == _bits(want)


@given(a=_sortable(), data=st.data())
def test_cpu_argsort_kernel_stable_and_not(a, data):
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1), label="axis")
    descending = data.draw(st.booleans(), label="descending")
    assert np.array_equal(cpu_sort.argsort(a, axis, descending, True), _ref_argsort(a, axis, descending, True))
    fast = cpu_sort.argsort(a, axis, descending, False)
    assert fast.dtype == np.int64 and fast.shape == a.shape
    # a permutation along the axis that sorts (NaNs last ascending, first descending)
    assert np.array_equal(
        np.sort(fast, axis=axis),
        np.broadcast_to(np.expand_dims(np.arange(a.shape[axis]), tuple(d for d in range(a.ndim) if d != axis % a.ndim)), a.shape) if a.size else fast,
    )
    assert np.array_equal(np.take_along_axis(a, fast, axis=axis), _ref_sort(a, axis, descending, True), equal_nan=True)


def test_sort_on_cpu_runs_numpys_default_sort():
    # The route names the kernel: NumPy's fast default sort with the repair (nda.backends.cpu_sort),
    # not the reference's stable sort (9.6-30x slower on 1M float32, benchmarks/everyday.py).
    x = nda.asarray(np.array([3.0, 1.0, 2.0]))
    for op in ("sort", "argsort"):
        assert "cpu_sort" in str(nda.dispatch.explain(op, x))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("stable", [True, False])
def test_sort_keeps_negative_nans_and_zero_order(device, stable):
    # 2000 elements: long enough for NumPy's SIMD sort, which canonicalised -nan to nan
    a = np.tile(np.array([1.0, -np.nan, 0.0, -0.0, np.nan, -1.0, -0.0, 0.0], np.float32), 250)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nda.FallbackWarning)
        got = nda.sort(nda.asarray(a, device=device), stable=stable).asnumpy()
        via_numpy = np.sort(nda.asarray(a, device=device)).asnumpy()  # kind=None: stable=False
    want = np.sort(a, kind="stable")
    assert _bits(got) == _bits(want) and _bits(via_numpy) == _bits(want)
    assert np.signbit(got[np.isnan(got)]).sum() == 250  # the -nan, one in each tile


# ----------------------------------------------------------------------------- boolean masks


@pytest.mark.parametrize("device", DEVICES)
@given(data=st.data())
def test_mask_keys_match_numpy(device, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), label="shape")
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    start = data.draw(st.integers(0, len(shape) - 1), label="start")
    k = data.draw(st.integers(1, len(shape) - start), label="mask dims")
    mask_shape = shape[start : start + k]
    if data.draw(st.booleans(), label="mismatch") and mask_shape and mask_shape[0] > 0:
        mask_shape = (mask_shape[0] + 1,) + mask_shape[1:]
    mask = data.draw(hnp.arrays(np.bool_, mask_shape), label="mask")
    lead = [data.draw(st.sampled_from([slice(None), slice(1, None), slice(None, None, -1)])) for _ in range(start)]
    if lead and data.draw(st.booleans()):
        lead = [Ellipsis] if start else lead
    key = tuple(lead) + (mask,) + tuple(data.draw(st.lists(st.sampled_from([None, Ellipsis, slice(0, 2)]), max_size=1)))
    if sum(i is Ellipsis for i in key) > 1:
        key = key[:-1]
    nkey = tuple(nda.asarray(i, device=device) if isinstance(i, np.ndarray) else i for i in key)
    x = nda.asarray(a, device=device)
    try:
        want = a[key]  # NumPy lets an empty mask index an axis of another size in an empty array
    except IndexError:
        with pytest.raises(IndexError, match="boolean index did not match|too many indices"):
            x[nkey]
        return
    got = x[nkey]
    assert got.shape == want.shape
    assert np.array_equal(got.asnumpy(), want)


def test_mask_planning_does_not_index_a_stand_in():
    # The planner read a mask's result shape by indexing a stand-in of x's shape with it (an
    # int8 array of the result's size, and the time of the indexing itself, half of x[mask]'s);
    # the count of True values is enough. Traced memory of planning alone: nothing of that size.
    n = 1 << 20
    x = nda.asarray(np.ones(n, np.float64))
    mask = nda.asarray(np.arange(n) % 2 == 0)
    plan = nda.ops.CATALOG["getitem"].plan
    plan(x, mask)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        planned = plan(x, mask)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert planned.out_shape == (n // 2,)
    assert peak < n // 16, peak  # the stand-in alone was n // 2 bytes


# ----------------------------------------------------------------------------- iterating over rows


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(4,), (3, 2), (2, 3, 2), (0,), (0, 3), (3, 0)])
def test_rows_are_what_indexing_gives(device, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = nda.asarray(a, device=device)
    it = iter(x)
    assert it.__length_hint__() == shape[0]
    rows = list(it)
    assert it.__length_hint__() == 0 and list(it) == []
    assert len(rows) == shape[0]
    for i, row in enumerate(rows):
        assert isinstance(row, nda.NDArray) and row.shape == shape[1:] and row.dtype == nda.float32 and row.device == x.device
        assert np.array_equal(row.asnumpy(), a[i])


@pytest.mark.parametrize("device", DEVICES)
def test_rows_are_views_made_when_next_asks(device):
    x = nda.asarray(np.zeros((3, 2), np.float32), device=device)
    it = iter(x)
    first = next(it)
    x[1] = 5.0  # after iter(), before the row is made: the row sees it
    second = next(it)
    first[...] = 7.0  # a row is a view: the write reaches x
    assert second.asnumpy().tolist() == [5.0, 5.0]
    assert x.asnumpy().tolist() == [[7.0, 7.0], [5.0, 5.0], [0.0, 0.0]]
    assert [r.tolist() for r in it] == [[0.0, 0.0]]


def test_rows_of_an_array_still_being_computed(all_tasks):
    # every op on the workers: the engine is never idle, so each row takes x[i]'s general path
    a = np.arange(12.0).reshape(4, 3)
    x = nda.asarray(a) * 2.0
    assert [r.tolist() for r in x] == (a * 2).tolist()
    y = nda.asarray(np.arange(5.0)) + 1.0
    assert [float(e) for e in y] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_iterating_a_0d_array_raises_at_iter():
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(nda.asarray(1.0))
