"""Layouts csr and row_sparse: construction, conversion, native kernels against the strided
result, the layout fallback (warnings, config, explain, coverage), engine ordering, sim.

The conformance kit (tests/test_testing_kit.py) already runs every op with a native
sparse kernel, per dtype, against the reference on the dense values. These tests add the
mixed-layout signatures the kit does not draw (csr @ strided, strided += row_sparse, …),
every op of the catalog through the fallback, and the semantics decided for sparse arrays.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda
from nda.testing import assert_allclose

F32 = nda.float32


def _sparse_host(draw, shape, dtype=np.float64, finite=True, density=0.4):
    """A host array of ``shape`` with about ``density`` of its elements non-zero."""
    values = draw(hnp.arrays(dtype, shape, elements=st.floats(-4, 4, width=32) if finite else None))
    mask = draw(hnp.arrays(np.bool_, shape, elements=st.booleans().map(lambda b: b) if density >= 0.5 else st.sampled_from([True, False, False])))
    return np.where(mask, values, 0).astype(dtype)


@st.composite
def matrices(draw, max_side=5, finite=True, dtype=np.float64):
    shape = draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=max_side))
    return _sparse_host(draw, shape, dtype, finite)


@st.composite
def row_sparse_hosts(draw, finite=True):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    host = _sparse_host(draw, shape, np.float64, finite)
    rows = draw(hnp.arrays(np.bool_, (shape[0],)))
    host[~rows] = 0
    return host


# The fallback's warnings are tested on purpose below; elsewhere they are expected noise.
pytestmark = pytest.mark.filterwarnings("ignore::nda.FallbackWarning")


# ---------------------------------------------------------------------- construction and semantics


def test_import_nda_imports_neither_scipy_nor_cupy_and_cpu_ops_do_not_either():
    code = "import sys, nda; x = nda.ones(3) + 1; x.wait_to_read(); print('scipy' in sys.modules, 'cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_to_layout_roundtrip_metadata_and_components():
    host = np.array([[0, 1.5, 0], [2, 0, 0], [0, 0, 0]], dtype=np.float32)
    x = nda.asarray(host).to_layout("csr")
    assert (x.layout.name, x.shape, x.dtype, x.size, x.ndim) == ("csr", (3, 3), F32, 9, 2)
    assert x.to_layout("csr") is x
    parts = nda.sparse.components(x)
    assert parts["data"].tolist() == [1.5, 2.0] and parts["indices"].tolist() == [1, 0] and parts["indptr"].tolist() == [0, 1, 2, 2]
    assert nda.sparse.nnz(x) == 2
    np.testing.assert_array_equal(x.asnumpy(), host)
    np.testing.assert_array_equal(x.to_layout("strided").asnumpy(), host)
    r = x.to_layout("row_sparse")  # a direct converter, not through strided
    assert r.layout.name == "row_sparse" and nda.sparse.components(r)["row_indices"].tolist() == [0, 1]
    np.testing.assert_array_equal(r.to_layout("csr").asnumpy(), host)


def test_construction_from_components_sorts_and_validates():
    x = nda.sparse.csr_array(([3.0, 1.0, 2.0], [2, 0, 1], [0, 2, 3]), shape=(2, 3))
    np.testing.assert_array_equal(x.asnumpy(), [[1, 0, 3], [0, 2, 0]])  # unsorted columns are sorted
    assert x.dtype == nda.float64
    with pytest.raises(ValueError, match="indptr must have shape\\[0\\] \\+ 1 = 3 entries"):
        nda.sparse.csr_array(([1.0], [0], [0, 1]), shape=(2, 3))
    with pytest.raises(ValueError, match="non-decreasing"):
        nda.sparse.csr_array(([1.0, 2.0], [0, 1], [0, 2, 1]), shape=(2, 3))
    with pytest.raises(ValueError, match="start at 0"):
        nda.sparse.csr_array(([1.0], [0], [1, 1, 1]), shape=(2, 3))
    with pytest.raises(IndexError, match="column index 3 is out of range for 3 columns"):
        nda.sparse.csr_array(([1.0], [3], [0, 1, 1]), shape=(2, 3))
    with pytest.raises(ValueError, match="duplicate entry at row 0, column 1"):
        nda.sparse.csr_array(([1.0, 2.0], [1, 1], [0, 2, 2]), shape=(2, 3))
    with pytest.raises(TypeError, match="indices must hold integers"):
        nda.sparse.csr_array(([1.0], [0.5], [0, 1, 1]), shape=(2, 3))
    with pytest.raises(ValueError, match="a csr array has exactly 2 dimensions, got shape \\(2, 3, 4\\); row_sparse"):
        nda.zeros((2, 3, 4)).to_layout("csr")
    with pytest.raises(ValueError, match="unknown layout 'coo'"):
        nda.zeros((2, 3)).to_layout("coo")
    r = nda.sparse.row_sparse_array(([[5.0, 6.0], [1.0, 2.0]], [3, 0]), shape=(4, 2), dtype="float32")
    np.testing.assert_array_equal(r.asnumpy(), [[1, 2], [0, 0], [0, 0], [5, 6]])
    with pytest.raises(IndexError, match="row index 4 is out of range for 4 rows"):
        nda.sparse.row_sparse_array(([[1.0, 2.0]], [4]), shape=(4, 2))
    with pytest.raises(ValueError, match="row 1 appears twice"):
        nda.sparse.row_sparse_array(([[1.0, 2.0], [3.0, 4.0]], [1, 1]), shape=(4, 2))
    with pytest.raises(ValueError, match="values must have shape"):
        nda.sparse.row_sparse_array(([[1.0, 2.0, 3.0]], [1]), shape=(4, 2))


def test_densification_is_explicit_repr_and_pickle_keep_the_layout():
    x = nda.asarray(np.eye(3)).to_layout("csr")
    with pytest.raises(TypeError, match="np.asarray\\(\\) of a csr array would densify its 9 elements implicitly"):
        np.asarray(x)
    with pytest.raises(BufferError):
        x.__dlpack__()
    text = repr(x)
    assert text.startswith("NDArray(layout='csr', shape=(3, 3), dtype=float64, nnz=3") and "indptr=[0, 1, 2, 3]" in text
    assert "nnz</span> 3" in x._repr_html_()
    y = pickle.loads(pickle.dumps(x))
    assert y.layout.name == "csr" and np.array_equal(y.asnumpy(), np.eye(3))
    assert x.tolist() == np.eye(3).tolist()  # tolist() and asnumpy() are explicit conversions


# ---------------------------------------------------------------------- native kernels vs strided

UNARY = ["negative", "abs", "sqrt", "sin", "square", "sign", "expm1", "isnan"]


@given(host=matrices(finite=False), op=st.sampled_from(UNARY), layout=st.sampled_from(["csr", "row_sparse"]))
def test_zero_preserving_unary_keeps_the_layout_and_equals_strided(host, op, layout):
    dense = nda.asarray(host)
    x = dense.to_layout(layout)
    with np.errstate(all="ignore"):
        got = getattr(nda, op)(x)
        want = getattr(nda, op)(x.to_layout("strided"))
    assert got.layout.name == layout and got.dtype == want.dtype
    assert_allclose(got, want, signed_zeros=False)


@given(a=matrices(finite=False), data=st.data(), layout=st.sampled_from(["csr", "row_sparse"]))
def test_binary_same_layout_and_scalars_equal_strided(a, data, layout):
    b = data.draw(hnp.arrays(np.float64, a.shape, elements=st.sampled_from([0.0, 0.0, 1.5, -2.0, np.inf, np.nan])))
    s = data.draw(st.sampled_from([2.5, -1.0, 0.0, np.inf, np.nan]))
    x, y = nda.asarray(a).to_layout(layout), nda.asarray(b).to_layout(layout)
    dx, dy = nda.asarray(x.asnumpy()), nda.asarray(y.asnumpy())
    with np.errstate(all="ignore"):
        for got, want in [(x * y, dx * dy), (x + y, dx + dy), (x - y, dx - dy), (x * s, dx * s), (s * x, s * dx), (x / s, dx / s)]:
            assert got.layout.name == layout
            assert_allclose(got, want, signed_zeros=False)


@given(a=matrices(), data=st.data(), finite=st.booleans())
def test_matmul_csr_with_strided_both_ways_equals_strided(a, data, finite):
    n = data.draw(st.integers(1, 4))
    values = st.floats(-3, 3) if finite else st.sampled_from([0.0, 1.0, -2.0, np.inf, np.nan])
    b = data.draw(hnp.arrays(np.float64, (a.shape[1], n), elements=values))
    c = data.draw(hnp.arrays(np.float64, (n, a.shape[0]), elements=values))
    v = data.draw(hnp.arrays(np.float64, (a.shape[1],), elements=values))
    x = nda.asarray(a).to_layout("csr")
    with np.errstate(all="ignore"):
        for got, want in [(x @ nda.asarray(b), a @ b), (nda.asarray(c) @ x, c @ a), (x @ nda.asarray(v), a @ v), (x.T @ nda.asarray(c.T), a.T @ c.T)]:
            assert got.layout.name == "strided"
            assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_batched_matmul_with_a_csr_operand():
    a = np.array([[0, 1.0, 0], [2, 0, 3]])
    b = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    c = np.arange(2 * 5 * 2, dtype=np.float64).reshape(2, 5, 2)
    x = nda.asarray(a).to_layout("csr")
    assert_allclose(x @ nda.asarray(b), a @ b)
    assert_allclose(nda.asarray(c) @ x, c @ a)


@given(host=row_sparse_hosts(), layout=st.sampled_from(["csr", "row_sparse"]), data=st.data())
def test_sum_permute_dims_astype_equal_strided(host, layout, data):
    if layout == "csr" and host.ndim != 2:
        host = host.reshape(host.shape[0], int(np.prod(host.shape[1:])))
    x = nda.asarray(host).to_layout(layout)
    d = nda.asarray(x.asnumpy())
    axis = data.draw(st.sampled_from([None] + list(range(host.ndim))))
    keepdims = data.draw(st.booleans())
    got = nda.sum(x, axis=axis, keepdims=keepdims)
    assert got.layout.name == "strided"
    assert_allclose(got, nda.sum(d, axis=axis, keepdims=keepdims), rtol=1e-12, atol=1e-12)
    cast = x.astype(nda.float32)
    assert cast.layout.name == layout and cast.dtype == F32
    assert_allclose(cast, d.astype(nda.float32))
    if layout == "csr":
        assert x.T.layout.name == "csr"
        assert_allclose(x.T, d.T)


@given(host=row_sparse_hosts(), data=st.data())
def test_row_sparse_update_into_strided(host, data):
    w_host = data.draw(hnp.arrays(np.float64, host.shape, elements=st.floats(-5, 5)))
    g = nda.asarray(host).to_layout("row_sparse")
    w = nda.asarray(w_host.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("error", nda.FallbackWarning)  # native: no fallback
        for got, want in [(w + g, w_host + host), (g + w, host + w_host), (w - g, w_host - host), (g - w, host - w_host)]:
            assert got.layout.name == "strided"
            assert_allclose(got, want, signed_zeros=False)
        buf = w._buf
        w += g  # in place, touching only the stored rows
        w -= g * 2.0
    assert w._buf is buf
    assert_allclose(w, w_host - host, signed_zeros=False)


def test_in_place_ops_on_sparse_arrays_rebind_or_refuse():
    x = nda.asarray(np.array([[0, 1.0], [2, 0]], dtype=np.float32)).to_layout("csr")
    x *= 3.0
    x += x
    assert x.layout.name == "csr" and x.asnumpy().tolist() == [[0, 6], [12, 0]]
    x *= x.astype(nda.float64)  # float64 result stored back as float32, same-kind
    assert x.dtype == F32 and x.asnumpy().tolist() == [[0, 36], [144, 0]]
    with pytest.raises(TypeError, match="in-place op on a csr array would be strided"):
        x += 1.0
    with pytest.raises(TypeError, match="cannot write into a csr array in place"):
        x[0, 0] = 5.0


# ---------------------------------------------------------------------- the layout fallback


def _example_args(name, x, xs):
    """Arguments for catalog op ``name`` with the sparse ``x`` as first operand (None: skip)."""
    decl = nda.ops.CATALOG[name]
    if decl.family == "unary":
        return (x,)
    if decl.family == "binary":
        return (x, xs)
    return {
        "sum": (x,),
        "prod": (x,),
        "mean": (x,),
        "max": (x,),
        "min": (x,),
        "std": (x,),
        "var": (x,),
        "argmax": (x,),
        "argmin": (x,),
        "cumulative_sum": (x,),
        "reshape": (x, (3, 2)),
        "flip": (x,),
        "permute_dims": (x, (1, 0)),
        "matmul": (x, xs.T),
        "concat": ([x, xs],),
        "stack": ([x, xs],),
        "where": (x > 0, x, xs),
        "sort": (x,),
        "argsort": (x,),
        "roll": (x, 1),
        "expand_dims": (x,),
        "broadcast_to": (x, (2, 2, 3)),
        "getitem": (x, (0, slice(1, 3))),
        "tensordot": (x, xs.T),
        "vecdot": (x, xs),
        "astype": (x, nda.float32),
        "zeros_like": (x,),
        "ones_like": (x,),
        "empty_like": None,
        "full_like": (x, 2.0),
        "squeeze": None,
        "all": (x,),
        "any": (x,),
        "nonzero": (x,),
        "unique_values": (x,),
        "clip": (x,),
    }.get(name)


@pytest.mark.parametrize("layout", ["csr", "row_sparse"])
def test_every_op_on_a_sparse_operand_equals_strided(layout):
    host = np.array([[0, 1.5, -2.0], [0, 0, 3.0]])
    x = nda.asarray(host).to_layout(layout)
    xs = nda.asarray(np.array([[1.0, -1.0, 0.5], [2.0, 0.0, 4.0]]))
    d = nda.asarray(host)
    ran = 0
    for name, decl in sorted(nda.ops.CATALOG.items()):
        if decl.mutates or decl.family == "creation" and not name.endswith("_like"):
            continue
        if decl.dtypes in ("bool", "integer", "integer or boolean"):
            continue  # float operands here; the kit covers those ops
        args = _example_args(name, x, xs)
        if args is None:
            continue
        dense_args = tuple(d if a is x else [d if v is x else v for v in a] if isinstance(a, list) else a for a in args)
        if name == "where":
            dense_args = (d > 0, d, xs)
        fn = getattr(nda, name)
        try:
            want = fn(*dense_args)
        except (TypeError, ValueError):
            with pytest.raises((TypeError, ValueError)):
                fn(*args)
            continue
        with np.errstate(all="ignore"):
            got = fn(*args)
        outs = got if isinstance(got, tuple) else (got,)
        wants = want if isinstance(want, tuple) else (want,)
        for g, w in zip(outs, wants):
            assert_allclose(g, w, signed_zeros=False)
        ran += 1
    assert ran > 60


def test_fallback_warns_once_per_route_and_explain_names_the_conversions():
    x = nda.asarray(np.array([[0, 1.0], [2, 0]])).to_layout("csr")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y1, y2 = nda.cos(x), nda.cos(x)
        nda.exp(x)
    routes = [str(w.message) for w in caught if issubclass(w.category, nda.FallbackWarning)]
    cos_routes = [r for r in routes if r.startswith("cos ")]
    assert len(cos_routes) <= 1 and y1.layout.name == y2.layout.name == "strided"  # already warned by another test, or once here
    ex = nda.dispatch.explain("cos", x)
    assert ex.out_layout.name == "strided" and ex.conversions == ["converts argument 0 csr -> strided (nda.backends.cpu_sparse.csr_to_dense)"]
    assert "convert: converts argument 0 csr -> strided" in str(ex) and "numpy.cos" in str(ex)
    mixed = nda.dispatch.explain("add", x, x.to_layout("row_sparse"))
    assert mixed.conversions == [
        "converts argument 0 csr -> strided (nda.backends.cpu_sparse.csr_to_dense)",
        "converts argument 1 row_sparse -> strided (nda.backends.cpu_sparse.row_sparse_to_dense)",
    ]
    native = nda.dispatch.explain("matmul", x, nda.ones((2, 3)))
    assert native.conversions == [] and native.kernel.qualname.endswith("csr_matmul") and native.out_layout.name == "strided"


def test_fallback_warning_exactly_once_per_route_in_a_fresh_process():
    code = (
        "import warnings, nda, numpy as np\n"
        "warnings.simplefilter('always')\n"
        "x = nda.asarray(np.eye(2)).to_layout('csr')\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    for _ in range(3):\n"
        "        nda.cos(x); x + 1.0; nda.cos(x); x * 2.0; nda.exp(x)\n"
        "print(sorted(str(m.message).split(' ')[0] for m in w if m.category is nda.FallbackWarning))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['add', 'cos', 'exp']"


def test_config_makes_the_fallback_an_error_or_silent():
    x = nda.asarray(np.eye(2)).to_layout("csr")
    try:
        nda.config.fallback = "error"
        with pytest.raises(nda.FallbackError, match="log on \\(cpu, float64, csr\\).*nda.config.fallback is 'error'"):
            nda.log(x)
        assert (x * 2.0).layout.name == "csr"  # native kernels are not fallbacks
        nda.config.fallback = "silent"
        with warnings.catch_warnings():
            warnings.simplefilter("error", nda.FallbackWarning)
            assert nda.log1p(x + 0.0).layout.name == "strided" and nda.log(x).layout.name == "strided"
    finally:
        nda.config.fallback = "warn"


def test_sparse_calls_are_memoised_and_a_fallback_setting_still_applies():
    rng = np.random.default_rng(3)
    hosts = [np.where(rng.random((6, 5)) < 0.4, rng.standard_normal((6, 5)), 0.0) for _ in range(3)]
    block = nda.asarray(rng.standard_normal((5, 2)))
    for host in hosts:  # same metadata every call: a memoised plan must still read each call's buffers
        x = nda.asarray(host).to_layout("csr")
        np.testing.assert_allclose((x @ block).asnumpy(), host @ block.asnumpy())
        np.testing.assert_allclose(nda.sum(x, axis=0).asnumpy(), host.sum(axis=0))
    memo = [
        k
        for k in nda.matmul._nda_memo
        if isinstance(k, tuple)
        and k
        and isinstance(k[0], tuple)
        and any(isinstance(p, tuple) and p and getattr(p[0], "layout", None) is nda.layouts.csr for p in k[0])
    ]
    assert memo, "the native csr @ strided plan is memoised"
    try:
        nda.config.fallback = "silent"
        for _ in range(2):
            assert float(nda.max(x)) == host.max()  # max has no csr kernel: the layout fallback, memoised too
        nda.config.fallback = "error"
        with pytest.raises(nda.FallbackError):
            nda.max(x)  # changing the setting clears the memoised routes: it is refused now
    finally:
        nda.config.fallback = "warn"


def test_coverage_per_layout():
    cov = nda.dispatch.coverage("cpu", layout="csr")
    assert cov.rows["matmul"]["float32"] == "native" and cov.rows["cos"]["float32"] == "fallback"
    assert cov.rows["sum"]["bool"] == "native" and "layout csr" in str(cov)
    assert nda.dispatch.coverage("cpu").rows["cos"]["float32"] == "native"


# ---------------------------------------------------------------------- engine, devices, plugins


def test_conversions_and_sparse_ops_are_ordered_by_the_engine(all_tasks):
    x = nda.zeros((3, 3))
    x[1, 2] = 5.0
    c = x.to_layout("csr")  # after the write
    x[0, 0] = 7.0  # after the conversion read x
    y = (c * 2.0) @ nda.ones((3, 1))
    assert y.asnumpy().ravel().tolist() == [0.0, 10.0, 0.0]
    assert c.asnumpy()[0, 0] == 0.0


def test_sim_keeps_csr_on_the_device_through_ops_and_copies():
    pytest.importorskip("nda_sim")
    host = np.array([[0, 1.0, 0], [2, 0, -3]], dtype=np.float32)
    s = nda.asarray(host, device="sim").to_layout("csr")
    assert (s.device.type, s.layout.name) == ("sim", "csr")
    neg = -s
    assert (neg.device.type, neg.layout.name) == ("sim", "csr")
    ex = nda.dispatch.explain("negative", s)
    assert ex.kernel.backend == "sim" and ex.conversions == []
    prod = s @ nda.ones((3, 2), dtype=F32, device="sim")
    assert (prod.device.type, prod.layout.name) == ("sim", "strided")
    np.testing.assert_array_equal(prod.asnumpy(), host @ np.ones((3, 2), np.float32))
    moved = s.to_device("sim:1").to_device("cpu")
    assert moved.layout.name == "csr" and np.array_equal(moved.asnumpy(), host)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nda.FallbackWarning)
        fb = s + 1.0
    assert (fb.device.type, fb.layout.name) == ("sim", "strided") and np.array_equal(fb.asnumpy(), host + 1)
    assert "sim_csr_to_strided" in str(nda.dispatch.explain("add", s, 1.0))
    with pytest.raises(ValueError, match="no way to convert csr to row_sparse on device type 'sim'"):
        s.to_layout("row_sparse")
    with pytest.raises(ValueError, match="layout 'row_sparse' is not available on device type 'sim'"):
        nda.asarray(host).to_layout("row_sparse").to_device("sim")


def test_a_backend_registers_its_own_layout_and_converters():
    # A runtime backend (nda.backends.load) using the plugin API from its register().
    backend = nda.backends.load("_toy_backend:blocked_backend")
    x = nda.asarray(np.array([[0, 1.0], [2, 3]]), device="toy2").to_layout("blocked")
    assert x.layout.name == "blocked" and np.array_equal(x.asnumpy(), [[0, 1], [2, 3]])
    assert (x * 2.0).layout.name == "blocked"  # native at the new layout
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = x + 1.0
    assert y.layout.name == "strided" and any("blocked -> strided" in str(w.message) for w in caught)
    assert backend.converted >= 2


def test_sparse_operands_beside_a_strided_target_take_the_fallback():
    c = nda.asarray(np.eye(2)).to_layout("csr")
    y = nda.zeros((2, 2))
    y[...] = c  # the value is converted; y stays strided
    assert y.asnumpy().tolist() == [[1, 0], [0, 1]]
    z = nda.zeros((2, 2))
    nda.copyto(z, c)
    assert z.asnumpy().tolist() == [[1, 0], [0, 1]]
    mask = nda.asarray(np.array([True, False])).to_layout("row_sparse")
    assert nda.arange(2.0)[mask].tolist() == [0.0]
