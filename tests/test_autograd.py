"""nda.autograd: recording, backward, grad, higher order, in-place rules, devices, threads, memory.

Per-op gradients are checked against finite differences in ``test_autograd_ops.py``;
this file checks the machinery and its rules, on cpu and sim.
"""

from __future__ import annotations

import gc
import threading
import warnings

import numpy as np
import pytest

import nda
from nda import autograd
from nda._api import _all_generated
from nda.autograd._graph import ENTRIES, LIVE
from nda.autograd._record import unrecorded_status

DEVICES = ["cpu", "sim"]


def leaf(values, device="cpu", dtype=None, grad_req="write"):
    x = nda.asarray(np.asarray(values, dtype=dtype), device=device)
    x.attach_grad(grad_req)
    return x


# ----------------------------------------------------------------------------- recording


def test_recording_changes_no_attribute_and_adds_nothing_outside_record():
    """record() installs an interceptor: NDArray and the namespaces are the same objects throughout."""
    before = dict(vars(nda.NDArray)), dict(vars(nda)), dict(vars(nda.linalg)), dict(vars(nda.fft))
    with autograd.record():
        during = dict(vars(nda.NDArray)), dict(vars(nda)), dict(vars(nda.linalg)), dict(vars(nda.fft))
    assert all(b == d for b, d in zip(before, during))
    assert nda.add is _all_generated["add"] and nda.linalg.inv is _all_generated["linalg.inv"]
    x = leaf([1.0, 2.0])
    entries = len(ENTRIES)
    y = x * x + 1.0  # outside record: no node
    assert len(ENTRIES) == entries and not autograd._graph.requires_grad(y)


def test_every_operator_and_method_of_an_op_is_known_to_autograd():
    """The roles nda._namespace reports are the attributes build_namespace attached."""
    from nda._namespace import operator_roles
    from nda.ops import CATALOG

    roles = operator_roles()
    for decl in CATALOG.values():
        for name in decl.operators + tuple(m.name for m in decl.methods):
            if decl.outputs is None and not decl.data_dependent:
                assert name in roles and roles[name][0] is decl, name
    for name in roles:
        assert callable(nda.NDArray.__dict__[name]), name
    assert roles["__radd__"][1] == "reflected" and roles["__iadd__"][1] == "inplace" and roles["__matmul__"][1] == "operator"


def test_lists_given_to_a_recorded_call_are_copied():
    a, b = leaf([1.0]), leaf([2.0, 3.0])
    arrays = [a, b]
    with autograd.record():
        loss = nda.sum(nda.concat(arrays) * nda.asarray([1.0, 2.0, 3.0]))
    arrays.insert(0, leaf([4.0, 5.0]))  # the caller reuses its list
    loss.backward()
    assert a.grad.tolist() == [1.0] and b.grad.tolist() == [2.0, 3.0]


def test_record_and_pause_are_per_thread_and_nest():
    seen = {}
    x = leaf([1.0, 2.0])

    def other():
        seen["recording"] = autograd.is_recording()
        seen["recorded"] = autograd._graph.requires_grad(nda.sin(x))

    assert not autograd.is_recording()
    with autograd.record():
        assert autograd.is_recording()
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        with autograd.pause():
            assert not autograd.is_recording()
            assert not autograd._graph.requires_grad(x * 2)
            with autograd.record():
                assert autograd._graph.requires_grad(x * 2)
        assert autograd.is_recording()
    assert not autograd.is_recording()
    assert seen == {"recording": False, "recorded": False}


def test_two_threads_record_their_own_graphs():
    results = {}

    def train(name, scale):
        w = leaf(np.full(3, scale))
        for _ in range(20):
            with autograd.record():
                loss = nda.sum(w * w * scale)
            loss.backward()
        results[name] = w.grad.asnumpy()

    threads = [threading.Thread(target=train, args=(f"t{i}", float(i + 1))) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(3):
        np.testing.assert_allclose(results[f"t{i}"], np.full(3, 2 * (i + 1) ** 2))
    assert unrecorded_status()["recording"] is False


@pytest.mark.parametrize("device", DEVICES)
def test_backward_fills_grad_on_the_arrays_device(device):
    x = leaf([0.5, 1.0, 2.0], device)
    w = leaf([[1.0], [2.0], [3.0]], device)
    with autograd.record():
        y = nda.exp(x) @ w
        loss = nda.sum(y * y)
    loss.backward()
    ex, wn = np.exp([0.5, 1.0, 2.0]), np.array([[1.0], [2.0], [3.0]])
    yn = ex @ wn
    assert x.grad.device == nda.as_device(device) if hasattr(nda, "as_device") else str(x.grad.device).startswith(device)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * yn * wn[:, 0] * ex)
    np.testing.assert_allclose(w.grad.asnumpy(), (2 * yn * ex)[:, None])


def test_attach_grad_rules():
    x = leaf([1.0, 2.0])
    assert x.grad.tolist() == [0.0, 0.0] and x.grad.dtype == nda.float64
    with pytest.raises(ValueError, match="grad_req must be 'write', 'add' or 'null'"):
        x.attach_grad("sum")
    with pytest.raises(TypeError, match="only floating arrays have gradients"):
        nda.asarray([1, 2]).attach_grad()
    sparse = nda.asarray(np.eye(3)).to_layout("row_sparse")
    with pytest.raises(TypeError, match="row_sparse arrays are not supported"):
        sparse.attach_grad()
    x.attach_grad("null")
    assert x.grad is None and nda.asarray([1.0]).grad is None
    c = leaf([1.0 + 1j])
    assert c.grad.dtype == nda.complex128


def test_write_and_add():
    w = leaf([1.0, 2.0])
    a = leaf([1.0, 2.0], grad_req="add")
    buffer = w.grad
    for _ in range(3):
        with autograd.record():
            loss = nda.sum(w * 3) + nda.sum(a * 3)
        loss.backward()
    assert w.grad is buffer and w.grad.tolist() == [3.0, 3.0]  # written in place, MXNet's way
    assert a.grad.tolist() == [9.0, 9.0]


def test_head_gradients_and_errors():
    x = leaf([1.0, 2.0])
    with autograd.record():
        y = x * x
    y.backward(nda.asarray([1.0, 10.0]), retain_graph=True)
    assert x.grad.tolist() == [2.0, 40.0]
    with pytest.raises(ValueError, match=r"head gradient of shape \(3,\) does not match the head's shape \(2,\)"):
        y.backward(nda.asarray([1.0, 1.0, 1.0]))
    with pytest.raises(TypeError, match="head gradient must be an nda array"):
        y.backward([1.0, 1.0])
    with pytest.raises(autograd.AutogradError, match="not computed inside autograd.record"):
        (x * 2).backward()  # outside record: nothing was recorded
    with pytest.raises(autograd.AutogradError, match="not computed inside autograd.record"):
        nda.asarray([1.0]).backward()


def test_backward_twice_needs_retain_graph():
    x = leaf([3.0])
    with autograd.record():
        y = nda.sum(x * x)
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [6.0]
    with pytest.raises(autograd.AutogradError, match="already used by a backward pass and released; pass retain_graph=True"):
        y.backward()


def test_grad_of_several_heads_and_intermediate_variables():
    x = leaf([1.0, 2.0])
    with autograd.record():
        h = x * x
        a = nda.sum(h)
        b = nda.sum(nda.sin(h))
    gx, gh = autograd.grad([a, b], [x, h], retain_graph=True)
    np.testing.assert_allclose(gh.asnumpy(), 1 + np.cos([1.0, 4.0]))
    np.testing.assert_allclose(gx.asnumpy(), (1 + np.cos([1.0, 4.0])) * 2 * np.array([1.0, 2.0]))
    assert x.grad.tolist() == [0.0, 0.0]  # grad() returns gradients, it does not store them
    unused = leaf([5.0])
    assert autograd.grad(a, [unused], retain_graph=True)[0].tolist() == [0.0]
    with pytest.raises(autograd.AutogradError, match="variable 0 does not need a gradient"):
        autograd.grad(a, [nda.asarray([1.0])])


@pytest.mark.parametrize("device", DEVICES)
def test_higher_order_gradients(device):
    x = leaf([0.3, 1.2], device)
    with autograd.record():
        y = nda.sum(nda.sin(x) * x)
        (g1,) = autograd.grad(y, [x], create_graph=True)  # sin x + x cos x
        (g2,) = autograd.grad(nda.sum(g1), [x], create_graph=True)  # 2 cos x - x sin x
        total = nda.sum(g2)
    (g3,) = autograd.grad(total, [x])  # -3 sin x - x cos x
    xn = np.array([0.3, 1.2])
    np.testing.assert_allclose(g1.asnumpy(), np.sin(xn) + xn * np.cos(xn))
    np.testing.assert_allclose(g2.asnumpy(), 2 * np.cos(xn) - xn * np.sin(xn))
    np.testing.assert_allclose(g3.asnumpy(), -3 * np.sin(xn) - xn * np.cos(xn))
    assert g3.device == x.device


def test_hessian_vector_product_through_matmul_and_indexing():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    x = leaf(rng.standard_normal(3))
    v = nda.asarray(rng.standard_normal(3))
    with autograd.record():
        f = nda.sum((nda.asarray(a) @ x) ** 3) + nda.sum(x[[0, 0, 2]] ** 2)
        (g,) = autograd.grad(f, [x], create_graph=True)
        gv = nda.sum(g * v)
    gv.backward()
    xn = x.asnumpy()
    hess = 6 * a.T @ np.diag(a @ xn) @ a + np.diag([4.0, 0.0, 2.0])
    np.testing.assert_allclose(x.grad.asnumpy(), hess @ v.asnumpy(), rtol=1e-10)


# ----------------------------------------------------------------------------- in-place writes


def test_in_place_writes_to_the_graph_are_refused_inside_record():
    x = leaf([1.0, 2.0])
    constant = nda.asarray([1.0, 1.0])
    with autograd.record():
        y = x * 2
        for write in (
            lambda: x.__iadd__(1.0),
            lambda: y.__imul__(2.0),
            lambda: y.__setitem__(0, 5.0),
            lambda: constant.__setitem__(0, x[0]),
            lambda: nda.copyto(constant, x * 3),
        ):
            with pytest.raises(autograd.AutogradError, match="in-place writes to an array that is part of the recorded graph"):
                write()
        constant += 1.0  # a constant, with a constant value: fine
        constant[1] = 7.0
    assert constant.tolist() == [2.0, 7.0]


def test_overwriting_a_saved_array_makes_backward_refuse():
    w = leaf([1.0, 2.0])
    c = nda.asarray([3.0, 4.0])
    with autograd.record():
        loss = nda.sum(w * c)
    c[0] = 0.0  # outside record: allowed, but multiply saved c
    with pytest.raises(autograd.AutogradError, match=r"multiply\(\) saved .* modified in place \(x\[\.\.\.\] = value at .*test_autograd.py"):
        loss.backward()
    with autograd.record():
        loss = nda.sum(w * w)
    unrelated = nda.asarray([0.0])
    unrelated += 1.0
    loss.backward()  # writes to arrays the graph did not save do not matter
    assert w.grad.tolist() == [2.0, 4.0]
    gc.collect()  # the graph whose backward failed
    w -= 0.1 * w.grad  # the SGD step: the graph is released, so the fast operators are back
    assert unrecorded_status() == {"recording": False, "checks": False}
    np.testing.assert_allclose(w.asnumpy(), [0.8, 1.6])


def test_views_share_the_version_of_their_base():
    x = leaf(np.arange(4.0))
    base = nda.ones(4)  # not nda.asarray(np.ones(4)): memory NumPy holds is saved as a snapshot (test_shared_memory)
    view = base[1:3]
    with autograd.record():
        loss = nda.sum(x[1:3] * view)
    base[2] = 5.0  # through the base: the view that multiply saved changed
    with pytest.raises(autograd.AutogradError, match="modified in place"):
        loss.backward()


# ----------------------------------------------------------------------------- what is and is not differentiable


def test_constant_ops_give_zero_gradient_and_undefined_ones_raise():
    x = leaf([0.5, 1.5, 2.5])
    with autograd.record():
        y = nda.sum(nda.floor(x) * x + x * nda.astype(nda.argmax(x), nda.float64))
    y.backward()
    assert x.grad.tolist() == [2.0, 3.0, 4.0]  # floor(x) + argmax(x); floor and argmax are constants
    with autograd.record():
        u = nda.sum(nda.unique_values(x * 2))
    with pytest.raises(autograd.AutogradError, match=r"unique_values\(\): it is not differentiable \(the distinct values"):
        u.backward()
    table = autograd.differentiable_ops()
    assert table["sin"] == "vjp" and table["argmax"].startswith("constant") and table["linalg.eig"].startswith("not differentiable")


def test_integer_results_cut_the_graph():
    x = leaf([1.7, 2.2])
    with autograd.record():
        y = nda.astype(x, nda.int64)
    assert not autograd._graph.requires_grad(y)


def test_promotion_broadcasting_and_scalars_fit_each_input():
    a = leaf(np.ones((2, 3)), dtype=np.float32)
    b = leaf(np.full((3,), 2.0))
    with autograd.record():
        loss = nda.sum((a * b + 1.5) / 2.0)
    loss.backward()
    assert a.grad.dtype == nda.float32 and a.grad.shape == (2, 3) and a.grad.tolist() == [[1.0] * 3] * 2
    assert b.grad.dtype == nda.float64 and b.grad.tolist() == [1.0] * 3
    r = leaf([2.0])
    c = leaf([1.0 + 2.0j])
    with autograd.record():
        loss = nda.sum(nda.real(c * r))  # complex result, real input: the real part of the gradient
    loss.backward()
    assert r.grad.tolist() == [1.0] and c.grad.tolist() == [2.0 + 0j]


def test_composite_functions_and_properties_record_through_their_ops():
    x = leaf(np.arange(6.0).reshape(2, 3))
    with autograd.record():
        parts = nda.unstack(nda.moveaxis(x, 0, 1))
        loss = nda.sum(parts[2] * 10) + nda.sum(x.T[0]) + nda.sum(nda.diff(x, axis=1) ** 2) + nda.sum(x.mT @ x)
    loss.backward()
    xn = x.asnumpy()
    expected = np.zeros((2, 3))
    expected[:, 2] += 10
    expected[:, 0] += 1
    d = np.diff(xn, axis=1)
    expected[:, 1:] += 2 * d
    expected[:, :-1] -= 2 * d
    expected += 2 * xn @ np.ones((3, 3))
    np.testing.assert_allclose(x.grad.asnumpy(), expected)


def test_detach_shares_data_without_history():
    x = leaf([1.0, 2.0])
    with autograd.record():
        d = (x * 3).detach()
        assert not autograd._graph.requires_grad(d)
        loss = nda.sum(d * x)
    loss.backward()
    assert x.grad.tolist() == [3.0, 6.0]
    view = x.detach()
    x[0] = 9.0
    assert view.tolist() == [9.0, 2.0]  # a view of the same data


def test_to_device_and_to_layout_are_recorded():
    s = leaf([1.0, 2.0], "sim")
    with autograd.record():
        loss = nda.sum(s.to_device("cpu") ** 2) + nda.sum(nda.to_device(s, "cpu"))
    loss.backward()
    assert s.grad.device == nda.Device("sim", 0) and s.grad.tolist() == [3.0, 5.0]
    d = leaf(np.array([[1.0, 0.0], [0.0, 2.0]]))
    with autograd.record():
        loss = nda.sum(d.to_layout("csr") @ nda.ones((2, 1)))
    loss.backward()  # the csr array came from d: d's unstored zeros get their gradient too
    assert d.grad.layout.name == "strided" and d.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("device", DEVICES)
def test_csr_matmul_gradients_keep_the_pattern(device):
    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nda.FallbackWarning)  # sim runs searchsorted and take on cpu
        a = nda.asarray(dense, device=device).to_layout("csr")
        a.attach_grad()
        b = leaf(np.arange(6.0).reshape(3, 2), device)
        with autograd.record():
            loss = nda.sum((a @ b) ** 2) + nda.sum(a @ b[:, 0])
        loss.backward()
    g = 2 * dense @ b.asnumpy() + np.array([[1.0, 0.0]] * 3)
    assert a.grad.layout.name == "csr" and a.grad.device == a.device
    np.testing.assert_allclose(b.grad.asnumpy(), dense.T @ g)
    np.testing.assert_allclose(a.grad.asnumpy(), (g @ b.asnumpy().T) * (dense != 0))
    assert nda.sparse.nnz(a.grad) == 4


def test_errors_inside_a_vjp_name_the_op():
    x = leaf(np.array([[1.0, 2.0], [2.0, 4.0]]))  # singular
    with autograd.record():
        loss = nda.sum(nda.linalg.det(x))
    with pytest.raises(np.linalg.LinAlgError) as info:
        loss.backward()
        x.grad.asnumpy()
    assert any("linalg.det" in note for note in getattr(info.value, "__notes__", [])) or "Singular" in str(info.value)


# ----------------------------------------------------------------------------- memory


def test_graphs_are_released_with_their_arrays():
    gc.collect()
    entries, live = len(ENTRIES), len(LIVE)
    assert live == 0, f"graphs of earlier tests are still alive: {[(n.op.name, n.freed) for n in LIVE]}"
    x = leaf(np.ones(3))
    with autograd.record():
        y = nda.sum(nda.exp(x) * 2)
    assert len(LIVE) > live and unrecorded_status()["checks"]
    del y
    gc.collect()
    assert len(LIVE) == live and len(ENTRIES) == entries + 1  # only x's leaf entry is left
    x[0] = 1.0  # the first in-place op after the last graph died restores the fast operators
    assert unrecorded_status() == {"recording": False, "checks": False}
    del x
    gc.collect()
    assert len(ENTRIES) == entries


def test_a_training_loop_frees_each_step():
    w = leaf(np.zeros(2))
    x = nda.asarray([[2.0, 1.0], [1.0, 3.0]])
    y = nda.asarray([4.0, 7.0])
    for _ in range(150):
        with autograd.record():
            loss = nda.mean((x @ w - y) ** 2)
        loss.backward()
        w -= 0.1 * w.grad
    np.testing.assert_allclose(w.asnumpy(), [1.0, 2.0], atol=1e-8)
    assert not LIVE or all(n.freed for n in LIVE)


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_a_function_bound_before_recording_records_correct_gradients(device):
    from nda import exp, greater, sum as nda_sum  # bound before record(): they record all the same

    a = leaf([0.5, -1.0], device)
    with autograd.record():
        e = exp(a)
        mask = greater(a, 0.0)  # a constant op: no gradient
        with autograd.pause():
            exp(a)  # not recorded on purpose
        loss = nda_sum(a * 2.0 + e * mask)
        d = nda.exp(a).detach()  # leaves the graph on purpose
    loss.backward()
    ha = np.array([0.5, -1.0])
    np.testing.assert_allclose(a.grad.asnumpy(), 2.0 + np.exp(ha) * (ha > 0))
    np.testing.assert_allclose(d.asnumpy(), np.exp(ha))
    b = leaf([1.0, 2.0], device)
    with autograd.record():
        loss = nda_sum(exp(b) * 3.0)
    loss.backward()
    np.testing.assert_allclose(b.grad.asnumpy(), 3.0 * np.exp([1.0, 2.0]))
    np.testing.assert_allclose(exp(b).asnumpy(), np.exp([1.0, 2.0]))  # outside record(): nothing recorded
