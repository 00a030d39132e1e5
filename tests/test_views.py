"""Views keep NumPy's semantics on every device, whichever route made them.

A write through a view reaches its base, and a view sees its base's later writes, on cpu
(NumPy views), on sim (native view kernels on its own memory), on ``few`` (a backend with
native ``add``/``multiply`` only: every view op takes the host fallback, so every view is
a host view kept in step by ``nda._hostviews``) and on ``fewmix`` (native indexing, host
fallback for the other view ops: native views of host views and the reverse); each on
the synchronous engine, the threaded engine, and the threaded engine with every op sent
through its queue. Results that NumPy makes copies (``x[1]`` of a 1-D array, a
``reshape`` the strides do not allow) are copies on every device too.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nda
from nda import _hostviews
from nda.engine.threaded import ThreadedEngine

pytestmark = pytest.mark.filterwarnings("ignore::nda.FallbackWarning")

DEVICES = ["cpu", "sim", "few", "fewmix"]
_LOADERS = {"few": "_few_kernels_backend", "fewmix": "_few_kernels_backend:mixed"}


def _ensure(device: str) -> str:
    if device in _LOADERS and not nda.backends.serves(device):
        nda.backends.load(_LOADERS[device])
    return device


@pytest.fixture(params=DEVICES)
def device(request):
    return _ensure(request.param)


@pytest.fixture(params=["naive", "threaded", "all_tasks"])
def engine(request):
    previous = nda.engine.current()
    if request.param == "naive":
        nda.engine.use("naive")
    else:
        nda.engine.use(ThreadedEngine(inline_limit=0 if request.param == "all_tasks" else 131072))
    yield request.param
    try:
        nda.waitall()
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")


def base(device, shape=(4, 6)):
    n = int(np.prod(shape))
    return nda.reshape(nda.arange(n, dtype=nda.float64, device=device), shape), np.arange(n, dtype=np.float64).reshape(shape)


def same(x, expected):
    np.testing.assert_array_equal(x.asnumpy(), expected)


# ----------------------------------------------------------------------------- the cases


def test_write_through_a_slice_reaches_the_base(device, engine):
    x = nda.arange(5, device=device)
    v = x[1:3]
    v[...] = 9
    same(x, [0, 9, 9, 3, 4])
    same(v, [9, 9])


def test_inplace_operator_through_a_view_reaches_the_base(device, engine):
    x = nda.arange(5, device=device)
    v = x[1:3]
    v += 1
    same(x, [0, 2, 3, 3, 4])
    v *= 10
    same(x, [0, 20, 30, 3, 4])


def test_a_view_sees_later_writes_to_its_base(device, engine):
    x = nda.arange(5, device=device)
    v = x[1:3]
    x[...] = 0
    same(v, [0, 0])
    x += 7
    same(v, [7, 7])
    same(v + 1, [8, 8])  # native kernels read the view's buffer: it is current


def test_every_view_op_writes_through_and_follows(device, engine):
    makers = {  # name: (the nda view, the same view in NumPy)
        "reshape": (lambda t: nda.reshape(t, (6, 4)), lambda a: a.reshape(6, 4)),
        "T": (lambda t: t.T, lambda a: a.T),
        "permute_dims": (lambda t: nda.permute_dims(t, (1, 0)), lambda a: a.transpose(1, 0)),
        "flip": (lambda t: nda.flip(t, axis=1), lambda a: np.flip(a, axis=1)),
        "expand_dims": (lambda t: nda.expand_dims(t, axis=0), lambda a: a[None]),
        "squeeze": (lambda t: nda.squeeze(t[1:2], axis=0), lambda a: a[1]),
        "newaxis": (lambda t: t[None, ..., ::2], lambda a: a[None, ..., ::2]),
    }
    for make, make_np in makers.values():
        x, a = base(device)
        v, m = make(x), make_np(a)
        v[(0,) * (v.ndim - 1)] = -1.0
        m[(0,) * (m.ndim - 1)] = -1.0
        same(x, a)
        x[1] = 100.0
        a[1] = 100.0
        same(v, m)


def test_views_of_views_write_through(device, engine):
    x, a = base(device)
    w = x[1:, ::2].T[::-1]
    m = a[1:, ::2].T[::-1]
    w[0] = 50.0
    m[0] = 50.0
    same(x, a)
    u = nda.reshape(w, (-1,))  # w is not contiguous: NumPy (and so nda) copies
    n = m.reshape(-1)
    assert not np.shares_memory(n, a)
    u[...] = -3.0
    n[...] = -3.0
    same(x, a)
    same(u, n)
    x[...] = 1.0
    a[...] = 1.0
    same(w, m)
    same(u, n)  # a copy does not follow its base, as in NumPy


def test_integer_index_of_a_1d_array_is_a_copy_as_in_numpy(device, engine):
    x = nda.arange(5, device=device)
    s = x[1]
    s[...] = 9  # NumPy's x[1] is a scalar, not a view
    same(x, np.arange(5))
    z = x[1, ...]  # a 0-d view
    z[...] = 9
    same(x, [0, 9, 2, 3, 4])
    x[1] = 4
    same(z, 4)


def test_copyto_and_setitem_with_array_values_through_views(device, engine):
    x, a = base(device)
    v = x[::2, 1:4]
    nda.asarray(np.full((2, 3), 7.0), device=device).copyto(v)
    a[::2, 1:4] = 7.0
    same(x, a)
    v[...] = v * 2  # the value reads the view first
    a[::2, 1:4] *= 2
    same(x, a)
    x[0, 1:4] = nda.flip(x[0, 1:4])  # overlapping source and target
    a[0, 1:4] = a[0, 1:4][::-1].copy()
    same(x, a)
    same(v, a[::2, 1:4])


def test_writing_a_broadcast_view_is_refused_as_in_numpy(device, engine):
    x = nda.arange(3.0, device=device)
    v = nda.broadcast_to(x, (2, 3))
    with pytest.raises(ValueError, match="read-only"):
        v[0, 0] = 1.0
        v.asnumpy()  # at the call, or at the sync point on an asynchronous route
    try:
        nda.waitall()
    except ValueError:
        pass  # the engine reports the failed write once more


# ----------------------------------------------------------------------------- random programs


def _view_ops(m: np.ndarray, reshape: bool = True):
    """(name, function of an array or a NumPy array) view ops applicable to ``m``'s shape."""
    ops = [("ellipsis", lambda t: t[...]), ("newaxis", lambda t: t[None])]
    if m.ndim >= 1:
        n = m.shape[0]
        ops += [
            ("slice", lambda t: t[1:]),
            ("step", lambda t: t[::-2]),
            ("flip", lambda t: nda.flip(t, axis=0) if isinstance(t, nda.NDArray) else np.flip(t, axis=0)),
            *([("flat", lambda t: nda.reshape(t, (-1,)) if isinstance(t, nda.NDArray) else t.reshape(-1))] if reshape else []),
            ("broadcast", lambda t: nda.broadcast_to(t, (2,) + t.shape) if isinstance(t, nda.NDArray) else np.broadcast_to(t, (2,) + t.shape)),
        ]
        if n:
            ops.append(("int", lambda t: t[0]))
    if m.ndim >= 2:
        ops += [
            ("T", lambda t: t.T),
            ("cols", lambda t: t[:, 1::2]),
        ]
    if 1 in m.shape:
        axis = m.shape.index(1)
        ops.append(("squeeze", lambda t: nda.squeeze(t, axis=axis) if isinstance(t, nda.NDArray) else np.squeeze(t, axis=axis)))
    return ops


def _as_result(value) -> np.ndarray:
    return value if isinstance(value, np.ndarray) else np.array(value)  # NumPy gives a scalar for x[i] of 1-D


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # the fixtures hold no state
@given(data=st.data())
def test_random_programs_of_views_and_writes_match_numpy(device, engine, data):
    x, a = base(device, (3, 4))
    live = [(x, a)]
    for _ in range(data.draw(st.integers(3, 9), label="steps")):
        i = data.draw(st.integers(0, len(live) - 1), label="array")
        t, m = live[i]
        writable = [j for j, (_, mm) in enumerate(live) if mm.flags.writeable and mm.size]
        if writable and data.draw(st.booleans(), label="write"):
            t, m = live[data.draw(st.sampled_from(writable), label="target")]
            kind = data.draw(st.sampled_from(["fill", "first", "iadd", "imul"]), label="kind")
            if kind == "fill":
                t[...] = 5.0
                m[...] = 5.0
            elif kind == "first":
                key = (0,) * m.ndim
                t[key] = -1.0
                m[key] = -1.0
            elif kind == "iadd":
                t += 1.5
                m += 1.5
            else:
                t *= 2.0
                m *= 2.0
        else:
            # On fewmix a fallback reshape of a native view cannot know the view's strides: it
            # decides view-or-copy as for a contiguous array (the standard leaves it open).
            name, op = data.draw(st.sampled_from(_view_ops(m, reshape=device != "fewmix")), label="view")
            live.append((op(t), _as_result(op(m))))
        for arr, mirror in live:
            np.testing.assert_array_equal(arr.asnumpy(), mirror)


# ----------------------------------------------------------------------------- bookkeeping


def test_host_views_are_forgotten_with_their_arrays():
    _ensure("few")
    x = nda.arange(6.0, device="few")
    views = [x[i:] for i in range(4)]
    assert all(_hostviews.is_live(v) for v in views)
    assert len(_hostviews.FAMILIES[id(x)]) == 4
    del views
    gc.collect()
    assert id(x) not in _hostviews.FAMILIES
    x[...] = 1.0  # no host view left: a plain write
    same(x, np.ones(6))


def test_explain_says_the_fallback_view_is_kept_in_step():
    _ensure("few")
    x = nda.arange(6.0, device="few")
    text = str(nda.dispatch.explain("getitem", x, slice(1, 3)))
    assert "keeps in step with its base" in text


def test_asarray_on_a_fallback_device_does_not_warn_but_other_creation_ops_do():
    _ensure("few")
    nda.dispatch._warned_routes.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = nda.asarray([1.0, 2.0], device="few")
    assert not [w for w in caught if issubclass(w.category, nda.FallbackWarning)]
    assert "no FallbackWarning" in str(nda.dispatch.explain("asarray", [1.0], device="few"))
    with pytest.warns(nda.FallbackWarning, match="zeros: no few kernel"):
        nda.zeros(2, device="few")
    previous = nda.config.fallback
    nda.config.fallback = "error"
    try:
        same(nda.asarray([3.0], device="few"), [3.0])  # asarray is how host data gets there: never refused
        with pytest.raises(nda.FallbackError):
            nda.ones(2, device="few")
    finally:
        nda.config.fallback = previous
    same(x + x, [2.0, 4.0])


def test_fallback_reshape_of_a_native_view_stays_in_step():
    """fewmix: a native strided view, then a fallback reshape of it. NumPy would copy (the
    strides do not allow a view); the fallback sees the view's data as a contiguous host
    copy, so it makes a view. Either is allowed by the standard; values never go stale."""
    _ensure("fewmix")
    x = nda.reshape(nda.arange(12.0, device="fewmix"), (3, 4))
    f = nda.reshape(x[:, 1::2], (-1,))
    f[...] = -1.0
    same(x, [[0, -1, 2, -1], [4, -1, 6, -1], [8, -1, 10, -1]])
    x[...] = 3.0
    same(f, np.full(6, 3.0))
