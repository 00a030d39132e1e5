"""Dispatch tables: registration, priority, supports(), caching, errors, explain, generated functions."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import nda
from nda._docstrings import public_doc
from nda._signatures import function_signature
from nda import dispatch
from nda.ops import CATALOG


@pytest.fixture(scope="module")
def toy():
    nda.backends.load("_toy_backend")
    return nda.Device("toy", 0)


#: Public functions in NumPy's calling convention over a catalog op whose own signature differs
#: (nda.einsum(subscripts, *operands) over einsum(subscripts, operands)): they name the declaration.
CALLING_CONVENTIONS = {"einsum"}


def test_every_catalog_op_is_public_with_real_metadata():
    for name, decl in CATALOG.items():
        namespace = nda
        extension, _, short = name.rpartition(".")  # "linalg.inv" is nda.linalg.inv
        if extension:
            namespace = getattr(nda, extension)
            assert namespace.__name__ == f"nda.{extension}"
        fn = getattr(namespace, short)
        assert fn.__name__ == short
        assert fn.__module__ == namespace.__name__
        if name in CALLING_CONVENTIONS:  # the generated function is nda._api's, and the wrapper calls it
            from nda import _api

            assert _api.__dict__[name].__wrapped_decl__ is decl and fn.__doc__ and fn is not _api.__dict__[name]
            continue
        # the declaration's text (with NumPy-style sections for the most used, nda._docstrings) and its
        # parameters, annotated as the user passes them (nda._signatures: NDArray, DTypeLike, the result)
        assert fn.__doc__ and fn.__doc__.startswith(decl.doc.rstrip()) and fn.__doc__ == public_doc(decl)
        assert inspect.signature(fn) == function_signature(decl)
        assert [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()] == [
            (p.name, p.kind, p.default) for p in decl.signature.parameters.values()
        ]


def test_signatures_are_the_declared_ones():
    assert str(inspect.signature(nda.add)).startswith("(x1")
    params = inspect.signature(nda.sum).parameters
    assert list(params) == ["x", "axis", "dtype", "keepdims"]
    assert params["x"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert params["keepdims"].default is False


def test_operators_come_from_the_catalog():
    assert nda.NDArray.__add__.__name__ == "__add__"
    x = nda.asarray([1, 2, 3])
    assert (x + 1).tolist() == [2, 3, 4]
    assert (1 - x).tolist() == [0, -1, -2]
    assert (x @ x).item() == 14


def test_explain_names_key_and_kernel():
    x = nda.ones(3, dtype=nda.float32)
    y = nda.ones(3, dtype=nda.float32)
    ex = nda.dispatch.explain("add", x, y)
    assert ex.key == nda.KernelKey("cpu", nda.float32, nda.Layout("strided"))
    assert ex.kernel.backend == "cpu"
    text = str(ex)
    assert "(cpu, float32, strided)" in text and "numpy.add" in text
    mixed = nda.dispatch.explain(nda.add, nda.arange(3, dtype=nda.int8), x)
    assert mixed.casts == ["int8 -> float32 (argument 0)"]


def test_explain_validates_like_the_call():
    with pytest.raises(ValueError, match="cannot be broadcast"):
        nda.dispatch.explain("add", nda.ones(2), nda.ones(3))
    with pytest.raises(ValueError, match="unknown op"):
        nda.dispatch.explain("no_such_op", nda.ones(2))


def test_missing_key_error_names_op_key_and_existing_keys(toy):
    x = nda.ones(3, dtype=nda.float32, device=toy)
    with pytest.raises(nda.DispatchError) as info:
        nda.sin(x)
    message = str(info.value)
    assert "'sin'" in message and "(toy, float32, strided)" in message and "(cpu, float32, strided)" in message


def test_unknown_device_is_a_value_error():
    with pytest.raises(ValueError, match="'nosuchdev' is not available"):
        nda.zeros(3, device="nosuchdev")


def test_runtime_backend_computes_through_its_own_buffers(toy):
    x = nda.asarray([1.0, 2.0, 3.0], device=toy)
    y = x * 2 + x
    assert y.device == toy
    assert type(y._buf).__name__ == "ToyBuffer"
    assert y.tolist() == [3.0, 6.0, 9.0]
    assert float(nda.sum(y)) == 18.0
    assert "device='toy:0'" in repr(y)
    with pytest.raises(ValueError, match="different devices"):
        nda.add(y, nda.ones(3))


def test_priority_and_supports_and_cache_invalidation(toy):
    x = nda.asarray([1.0, 2.0], device=toy)
    calls = []

    def fast_add(a, b):
        calls.append("fast")
        return type(a)(a.data + b.data + 100)

    def only_small(a, b):
        return a.data.shape[0] < 2

    assert (x + x).tolist() == [2.0, 4.0]  # fills the cache
    dispatch.register("add", "toy", [nda.float64], fast_add, priority=10, supports=only_small, backend="test")
    try:
        assert (x + x).tolist() == [2.0, 4.0], "supports() declined, so the default kernel runs"
        one = nda.asarray([1.0], device=toy)
        assert (one + one).tolist() == [102.0]
        assert calls == ["fast"]
        ex = nda.dispatch.explain("add", one, one)
        assert ex.kernel.fn is fast_add and "supports()" in str(ex)
    finally:
        dispatch.unregister_backend("test")
    assert (x + x).tolist() == [2.0, 4.0]


def test_register_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown op"):
        dispatch.register("nope", "cpu", [nda.float32], np.add)
    with pytest.raises(TypeError, match="callable"):
        dispatch.register("add", "cpu", [nda.float32], 3)
    with pytest.raises(TypeError, match="not a supported dtype"):
        dispatch.register("add", "cpu", ["float16"], np.add)


def test_value_types_are_interned_hashable_and_frozen():
    assert nda.Device("cuda", 1) is nda.Device("cuda:1")
    assert nda.KernelKey("cpu", nda.float32) is nda.KernelKey("cpu", nda.float32, nda.Layout("strided"))
    assert {nda.Device("cpu"): 1}[nda.Device("cpu", 0)] == 1
    assert repr(nda.Device("cpu")) == "Device('cpu', 0)"
    assert repr(nda.float32) == "nda.float32"
    with pytest.raises(AttributeError):
        nda.float32.name = "x"
    with pytest.raises(AttributeError):
        nda.Device("cpu").index = 2
    import pickle

    assert pickle.loads(pickle.dumps(nda.Device("cuda", 3))) is nda.Device("cuda", 3)
    assert pickle.loads(pickle.dumps(nda.int16)) is nda.int16
    with pytest.raises(ValueError, match="invalid device"):
        nda.Device("CPU!")


def test_default_device_context(toy):
    with toy:
        x = nda.zeros(2)
    assert x.device == toy
    assert nda.zeros(2).device == nda.Device("cpu")


def test_plan_memo_distinguishes_value_types():
    x = nda.ones((2, 3), dtype=nda.float32)
    assert nda.full_like(x, 1).dtype == nda.float32
    assert nda.full_like(x, True, dtype=None).dtype == nda.float32
    b = nda.ones(2, dtype=nda.bool)
    assert nda.full_like(b, True).tolist() == [True, True]
    with pytest.raises(TypeError, match="shape must be an int or a tuple of ints"):
        nda.reshape(x, (2.0, 3))  # must not hit the plan memoised for (2, 3)
    nda.reshape(x, (2, 3))
    with pytest.raises(TypeError):
        nda.reshape(x, (2.0, 3))


def test_plan_memo_keeps_arguments_apart():
    """A call with one array twice must not teach the memo a recipe that reuses it."""
    v = nda.asarray([1.0, 0.0])
    w = nda.asarray([0.0, 2.0])
    assert float(nda.vecdot(v, v)) == 1.0
    assert float(nda.vecdot(v, w)) == 0.0
    assert float(nda.vecdot(w, w)) == 4.0
    m = nda.reshape(nda.arange(4.0), (2, 2))
    assert (m @ m).tolist() == [[2.0, 3.0], [6.0, 11.0]]
    assert (m @ nda.eye(2)).tolist() == m.tolist()


def test_fast_paths_see_kernels_registered_later(toy):
    """The arrays-only fast path of planned ops is invalidated by a new registration."""
    x = nda.asarray([1.0, 2.0], device=toy)
    assert float(nda.sum(x)) == 3.0
    assert float(nda.sum(x)) == 3.0  # now served by the fast path

    def sum_plus_100(buf, axis=None, keepdims=False, dtype=None):
        return type(buf)(np.asarray(buf.data.sum() + 100.0))

    dispatch.register("sum", "toy", ["float64"], sum_plus_100, priority=50, backend="test-late")
    try:
        assert float(nda.sum(x)) == 103.0
    finally:
        dispatch.unregister_backend("test-late")
    assert float(nda.sum(x)) == 3.0


def test_a_registration_landing_while_a_call_resolves_leaves_no_stale_entry():
    """Before: the host fallback resolved during a call stayed cached after a native kernel was
    registered meanwhile (by another thread loading a backend), until clear_caches() (review F04)."""
    import warnings

    a = nda.asarray(np.arange(5.0), device="sim")
    b = nda.asarray([1.0, 3.0], device="sim")
    registered = []

    def native_isin(*args, **kwargs):  # isin: an op sim runs through the host fallback
        raise RuntimeError("the kernel registered meanwhile ran")

    shown = warnings.showwarning

    def show(message, category, *args, **kwargs):
        if not registered and "isin" in str(message):
            registered.append(True)  # a registration lands while the call resolves its route
            nda.dispatch.register("isin", "sim", ["float64"], native_isin, priority=100, backend="late-registration")
        return shown(message, category, *args, **kwargs)

    warnings.showwarning = show
    try:
        nda.dispatch.invalidate()
        nda.dispatch._warned_routes.clear()  # warned once per op and device: make this call warn
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = show
            try:  # the registration lands during this call: it may run either kernel
                nda.isin(a, b).wait_to_read()
            except RuntimeError as err:
                assert "registered meanwhile" in str(err)
        assert registered
        with pytest.raises(RuntimeError, match="registered meanwhile"):
            nda.isin(a, b).wait_to_read()
    finally:
        warnings.showwarning = shown
        nda.dispatch.unregister_backend("late-registration")
    np.testing.assert_array_equal(nda.isin(a, b).asnumpy(), np.isin(np.arange(5.0), [1.0, 3.0]))


@pytest.mark.parametrize("device", ["sim", "cudamirror"])
def test_plans_are_memoised_on_devices_with_the_host_fallback(device, monkeypatch):
    """A backend that opts into the host fallback may have host views (nda._hostviews); only its view
    ops must be planned per call. Other ops were re-planned on every call too (nda-cuda's ``nda.sum``
    of 4 elements took 2.3x ``cupy.sum`` on an H200; on the mirror nda's own part went from 20 to 4 us)."""
    if device == "cudamirror" and not nda.backends.serves(device):
        nda.backends.load("_cuda_numpy_mirror:backend")
    from nda.ops import reductions

    plans = []
    original = reductions._plan_accumulating
    monkeypatch.setattr(reductions, "_plan_accumulating", lambda *a, **k: plans.append(a[0]) or original(*a, **k))
    rng = np.random.default_rng(5)
    for _ in range(6):
        host = rng.standard_normal((3, 4)).astype(np.float32)
        x = nda.asarray(host, device=device)
        np.testing.assert_allclose(nda.sum(x).asnumpy(), host.sum(), rtol=1e-5)
        np.testing.assert_allclose(nda.prod(x, axis=1).asnumpy(), host.prod(axis=1), rtol=1e-5)
    assert plans == ["sum", "prod"], plans
    # View ops still go through the planner per call: a view of a host view must be one too.
    x = nda.asarray(np.arange(6.0), device=device)
    v = x[1:4]
    v[...] = 9.0
    assert x.tolist() == [0.0, 9.0, 9.0, 9.0, 4.0, 5.0]


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_memoised_plans_tell_a_negative_nan_and_zero_from_positive_ones(device):
    """Plans are keyed by Python float arguments' bits: ``float.hex()`` says 'nan' for both NaNs, so
    ``full_like(x, -nan)`` after ``full_like(x, nan)`` filled a positive NaN (found by a user-style
    probe; on sim since its plans are memoised, on cpu since always). Hybridize's signatures too."""
    x = nda.asarray(np.zeros(3), device=device)
    c = nda.asarray([False, True, False], device=device)
    calls = {  # each gives the element that holds the value
        "full_like": lambda v: nda.full_like(x, v)[1],
        "where": lambda v: nda.where(c, v, x)[1],
        "clip": lambda v: nda.clip(x + 1.0, max=v)[1] if v != v else nda.full_like(x, v)[1],
        "full_like complex": lambda v: nda.real(nda.full_like(x, complex(v, 1.0), dtype=nda.complex128))[1],
        "hybridized": (lambda f: lambda v: f(v)[1])(nda.hybridize(lambda v: nda.full_like(x, v))),
    }
    for name, call in calls.items():
        for first, second in ((float("nan"), -float("nan")), (-float("nan"), float("nan")), (0.0, -0.0), (-0.0, 0.0)):
            call(first)
            got = float(call(second))
            assert np.signbit(got) == np.signbit(second), (name, first, second, got)
