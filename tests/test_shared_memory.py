"""Memory that NumPy holds too: a write or a read through it happens where the program says.

A NumPy buffer handed to nda (``nda.asarray(buf)``, ``x + buf``, ``np.add(x, buf)``) is read
at the call, as NumPy reads it, even when the engine runs the op later: the usual
"refill one batch buffer" loop gives each batch's values. On cpu ``nda.asarray(buf)`` and
``np.asarray(x)`` share memory, so writes and cheap ops on such arrays complete before their
call returns, and heavy ops copy them at the call (``nda.engine.share``, and
tests/test_shared_overlap.py): ``h = np.asarray(x); x += 1`` shows in ``h`` at once, and a
later NumPy write never reaches an op issued before it. Sizes cover inline ops, ops the threaded
engine holds (2**20 elements and more) and ops queued behind pending work; devices cpu and
sim; the suite runs on both engines (``.ci/run``). Found by a user-style probe: before, the
results were the last batch's values, silently.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nda

DEVICES = ["cpu", "sim"]
SIZES = [10, (1 << 20) + 3]


def _host(x: nda.NDArray) -> np.ndarray:
    return x.asnumpy()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("form", ["asarray", "operator", "ufunc", "reflected"])
def test_a_refilled_numpy_buffer_gives_each_call_its_own_values(device, size, form):
    if device == "sim":
        pytest.importorskip("nda_sim")
    base = nda.zeros(size, device=device)
    buf = np.empty(size)
    outs = []
    for i in range(4):
        buf[:] = i
        if form == "asarray":
            outs.append(nda.asarray(buf, device=device))
        elif form == "operator":
            outs.append(base + buf)
        elif form == "ufunc":
            outs.append(np.add(base, buf))
        else:
            outs.append(buf * (base + 1.0))
    buf[:] = -1.0
    # On cpu nda.asarray(buf) is buf's memory, as np.asarray(buf) is: every one shows the last write.
    expected = [-1.0] * 4 if (form, device) == ("asarray", "cpu") else [0.0, 1.0, 2.0, 3.0]
    assert [float(o[0]) for o in outs] == expected
    assert [float(o[-1]) for o in outs] == expected


@pytest.mark.parametrize("size", SIZES)
def test_a_numpy_view_of_a_cpu_array_sees_later_in_place_ops_at_once(size):
    x = nda.zeros(size)
    h = np.asarray(x)
    x += 1.0
    assert h[0] == 1.0 and h[-1] == 1.0
    x[: size // 2] = 5.0
    assert h[0] == 5.0 and h[-1] == 1.0
    nda.full(size, 7.0).copyto(x)
    assert h[0] == 7.0 and h[-1] == 7.0


@pytest.mark.parametrize("size", SIZES)
def test_an_op_on_a_wrapped_buffer_reads_it_before_a_later_numpy_write(size):
    buf = np.full(size, 2.0)
    x = nda.asarray(buf)  # shares buf's memory (cpu)
    y = nda.exp(x)
    z = x * 3.0
    buf[:] = 0.0
    np.testing.assert_allclose(_host(y), np.exp(2.0))
    np.testing.assert_allclose(_host(z), 6.0)
    assert float(x[0]) == 0.0  # the write is the array's (shared memory)


@pytest.mark.parametrize("device", DEVICES)
def test_a_small_op_behind_pending_work_reads_the_buffer_at_the_call(device):
    if device == "sim":
        pytest.importorskip("nda_sim")
    pending = nda.zeros((1 << 21) + 1, device=device) + 100.0  # large: a task or a held op
    b = np.full(10, 4.0)
    r = nda.asarray(b, device=device) + pending[:10] * 0.0
    b[:] = 7.0
    assert float(r[0]) == 4.0


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=4), device=st.sampled_from(DEVICES), big=st.booleans())
def test_each_call_sees_the_values_the_buffer_had_at_it(values, device, big):
    """Property: call the same op several times with other values in one buffer; compare with NumPy."""
    size = (1 << 20) + 1 if big else 7
    buf = np.empty(size)
    x = nda.ones(size, device=device)
    got = []
    for v in values:
        buf[:] = v
        got.append(np.multiply(x, buf) - buf * 0.5)
    buf[:] = np.nan
    for v, g in zip(values, got):
        expected = np.float64(v) - np.float64(v) * 0.5
        assert float(g[0]) == expected and float(g[-1]) == expected


class _Holder:
    """An ``__array__`` object whose array owns its data and stays the caller's (pandas, xarray do this)."""

    def __init__(self, n: int) -> None:
        self.a = np.zeros(n)

    def __array__(self, dtype=None, copy=None):
        return self.a


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", SIZES)
def test_an_array_protocol_object_is_read_at_the_call_when_copied(device, size):
    """Review finding: the snapshot missed objects whose ``__array__`` returns an array owning live data."""
    if device == "sim":
        pytest.importorskip("nda_sim")
    holder = _Holder(size)
    x = nda.asarray(holder, copy=True, device=device)
    holder.a[:] = 7.0
    assert float(x[0]) == 0.0 and float(x[-1]) == 0.0


def test_objects_exposing_memory_are_accepted_and_shared_on_cpu():
    """Review finding: ``asarray`` of a pandas Series or a bytearray crashed (a shadowed ``any``)."""
    import array

    pd = pytest.importorskip("pandas")
    series = pd.Series(np.arange(4.0))
    np.testing.assert_array_equal(nda.asarray(series).asnumpy(), np.arange(4.0))
    buf = bytearray(b"\x01\x02\x03")
    x = nda.asarray(buf)
    y = x + 1  # completes at the call: x shares buf's memory
    buf[0] = 9
    assert y.tolist() == [2, 3, 4]
    values = array.array("d", [1.0, 2.0])
    assert (nda.asarray(values) * 2.0).tolist() == [2.0, 4.0]


@pytest.mark.parametrize("form", ["operand", "view", "list"])
def test_numpy_writes_between_forward_and_backward_leave_the_gradients_alone(form):
    """Autograd saves a call's operands for backward; NumPy's writes into memory an operand shares
    with it pass no write hook. Before: ``buf[...] = 100`` after ``nda.sum(w * nda.asarray(buf))``
    made ``w``'s gradient 100 everywhere, silently. Now such an operand is saved as a snapshot."""
    from nda import autograd

    rng = np.random.default_rng(3)
    for _ in range(3):  # twice and more, with other values each time
        values = rng.standard_normal(4)
        buf = values.copy()
        x = nda.asarray(buf)
        assert np.shares_memory(np.asarray(x), buf)
        w = nda.asarray(rng.standard_normal(4))
        w.attach_grad()
        with autograd.record():
            if form == "view":
                y = nda.sum(w[1:] * x[1:])
            elif form == "list":
                y = nda.sum(nda.concat([w, w]) * nda.concat([x, x]))
            else:
                y = nda.sum(w * x)
        buf[...] = 100.0
        y.backward()
        want = values.copy()
        if form == "view":
            want[0] = 0.0
        elif form == "list":
            want = 2 * values
        np.testing.assert_allclose(w.grad.asnumpy(), want, rtol=1e-12)


def test_a_shared_array_that_needs_a_gradient_is_saved_as_itself():
    """A parameter made from a NumPy array needs no snapshot (no copy per recorded call): higher-order
    gradients differentiate through it, and the data it meets is snapshotted as above."""
    from nda import autograd

    xn = np.array([0.3, 1.2])
    x = nda.asarray(xn.copy())
    x.attach_grad()
    buf = np.array([2.0, 3.0])
    data = nda.asarray(buf)
    with autograd.record():
        y = nda.sum(nda.sin(x) * x * data)
        (g1,) = autograd.grad(y, [x], create_graph=True)
        (g2,) = autograd.grad(nda.sum(g1), [x], create_graph=True)
        total = nda.sum(g2)
    buf[...] = 50.0
    (g3,) = autograd.grad(total, [x])
    d = np.array([2.0, 3.0])
    np.testing.assert_allclose(g1.asnumpy(), d * (np.sin(xn) + xn * np.cos(xn)))
    np.testing.assert_allclose(g2.asnumpy(), d * (2 * np.cos(xn) - xn * np.sin(xn)))
    np.testing.assert_allclose(g3.asnumpy(), d * (-3 * np.sin(xn) - xn * np.cos(xn)))
