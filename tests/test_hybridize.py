"""nda.hybridize: graphs per signature, the backends' partitions, exact fallbacks, errors, autograd."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nda
from nda.backends import fusion
from nda.ops import CATALOG
from nda.testing import strategies as nst

_FLOAT_UNARY = sorted(n for n, d in CATALOG.items() if d.family == "unary" and d.dtypes in ("floating", "real floating", "numeric", "real numeric"))
_FLOAT_BINARY = sorted(n for n, d in CATALOG.items() if d.family == "binary" and d.dtypes in ("floating", "real floating", "numeric", "real numeric"))
_INT_OPS = sorted(
    n
    for n, d in CATALOG.items()
    if d.family in ("unary", "binary") and d.dtypes in ("integer", "integer or boolean", "numeric", "real numeric", "any")
)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a.real), np.signbit(b.real)))
    return bool(np.array_equal(a, b))


@st.composite
def _chains(draw, ops_unary, ops_binary, dtype):
    """A program: each step applies a catalog element-wise op to earlier values (or a scalar)."""
    steps = []
    for i in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            steps.append(("u", draw(st.sampled_from(ops_unary)), draw(st.integers(0, i + 1))))
        else:
            scalar = draw(st.sampled_from([None, None, 0.5, 2, -1.5]))
            steps.append(("b", draw(st.sampled_from(ops_binary)), draw(st.integers(0, i + 1)), draw(st.integers(0, i + 1)), scalar))
    return steps


def _program(steps):
    def fn(a, b):
        values = [a, b]
        for step in steps:
            if step[0] == "u":
                values.append(getattr(nda, step[1])(values[step[2]]))
            else:
                other = values[step[3]] if step[4] is None else step[4]
                values.append(getattr(nda, step[1])(values[step[2]], other))
        return values[-1], values[len(values) // 2]

    return fn


def _run_chain(steps, host_a, host_b, device, partition=True):
    fn = _program(steps)
    # copies: an array sharing NumPy's memory (nda.asarray on cpu) runs eagerly (a graph cannot order NumPy's writes)
    a, b = nda.asarray(host_a, device=device, copy=True), nda.asarray(host_b, device=device, copy=True)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            eager = [r.asnumpy() for r in fn(a, b)]
            nda.waitall()  # an intermediate the chain does not return may fail too (a negative integer power)
    except (TypeError, ValueError, OverflowError):
        return None  # the chain is not valid for these dtypes: the eager call refuses it
    h = nda.hybridize(fn, partition=partition)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        first = [r.asnumpy() for r in h(a, b)]
        # A second call with other data runs the graph (claimed subgraphs fused).
        a2 = nda.asarray(np.flip(host_a), device=device, copy=True)
        b2 = nda.asarray(np.roll(host_b, 1), device=device, copy=True)
        eager2 = _outcome(lambda: [r.asnumpy() for r in fn(a2, b2)])
        graph2 = _outcome(lambda: [r.asnumpy() for r in h(a2, b2)])
    if isinstance(eager2, BaseException) or isinstance(graph2, BaseException):
        assert type(eager2) is type(graph2), (eager2, graph2)  # a data-dependent error: the same one, at the sync point
        return eager, first, [], [], h
    ex = nda.dispatch.explain(h, a, b)
    assert ex.reason is not None or ex.stats["graph"] + ex.stats["op by op"] == 1, str(ex)  # the second call ran the graph
    return eager, first, eager2, graph2, h


def _outcome(fn):
    try:
        return fn()
    except Exception as err:  # noqa: BLE001
        return err


@pytest.mark.parametrize("device", ["cpu", "sim"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_hybridize_gives_eager_results_on_element_wise_chains(device, data):
    dtype = data.draw(st.sampled_from(["float32", "float64"]))
    steps = data.draw(_chains(_FLOAT_UNARY, _FLOAT_BINARY, dtype))
    shape = data.draw(st.sampled_from([(5,), (3, 4), (40000,)]))
    host_a = nst.draw_host_array(data.draw, getattr(nda, dtype), shape)
    host_b = nst.draw_host_array(data.draw, getattr(nda, dtype), shape)
    previous = fusion.USE_NUMEXPR
    fusion.USE_NUMEXPR = False  # as NDA_NUMEXPR=0: the chunked evaluator, exact (numexpr is checked below)
    try:
        found = _run_chain(steps, host_a, host_b, device)
    finally:
        fusion.USE_NUMEXPR = previous
    if found is None:
        return
    eager, first, eager2, graph2, h = found
    assert all(_same(x, y) for x, y in zip(eager, first))
    assert all(_same(x, y) for x, y in zip(eager2, graph2)), str(
        nda.dispatch.explain(h, nda.asarray(host_a, device=device), nda.asarray(host_b, device=device))
    )


@pytest.mark.parametrize("device", ["cpu", "sim"])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_hybridize_gives_eager_results_on_integer_and_mixed_chains(device, data):
    ops = _INT_OPS
    steps = data.draw(_chains([o for o in ops if CATALOG[o].family == "unary"], [o for o in ops if CATALOG[o].family == "binary"], "int32"))
    shape = data.draw(st.sampled_from([(4,), (2, 3)]))
    host_a = nst.draw_host_array(data.draw, nda.int32, shape)
    host_b = nst.draw_host_array(data.draw, data.draw(st.sampled_from([nda.int32, nda.int8, nda.float32])), shape)
    found = _run_chain(steps, host_a, host_b, device)
    if found is None:
        return
    eager, first, eager2, graph2, _ = found
    assert all(_same(x, y) for x, y in zip(eager, first)) and all(_same(x, y) for x, y in zip(eager2, graph2))


_BOOL_OPS = sorted(n for n, d in CATALOG.items() if d.family in ("unary", "binary") and d.dtypes in ("bool", "integer or boolean", "any"))
_COMPLEX_OPS = sorted(
    n
    for n, d in CATALOG.items()
    if d.family in ("unary", "binary") and d.dtypes in ("numeric", "floating", "complex floating", "any") and n not in ("nextafter",)
)


@pytest.mark.parametrize("device", ["cpu", "sim"])
@pytest.mark.parametrize("kind", ["bool", "complex128"])
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_hybridize_gives_eager_results_on_bool_and_complex_chains(device, kind, data):
    """Together with the two tests above, every element-wise op of the catalog appears in chains."""
    ops = _BOOL_OPS if kind == "bool" else _COMPLEX_OPS
    steps = data.draw(_chains([o for o in ops if CATALOG[o].family == "unary"], [o for o in ops if CATALOG[o].family == "binary"], kind))
    shape = data.draw(st.sampled_from([(4,), (2, 3)]))
    dtype = getattr(nda, kind)
    host_a, host_b = nst.draw_host_array(data.draw, dtype, shape), nst.draw_host_array(data.draw, dtype, shape)
    found = _run_chain(steps, host_a, host_b, device)
    if found is None:
        return
    eager, first, eager2, graph2, _ = found
    assert all(_same(x, y) for x, y in zip(eager, first)) and all(_same(x, y) for x, y in zip(eager2, graph2))


def test_every_element_wise_op_is_in_some_chain_test():
    covered = set(_FLOAT_UNARY) | set(_FLOAT_BINARY) | set(_INT_OPS) | set(_BOOL_OPS) | set(_COMPLEX_OPS) | {"nextafter"}
    assert covered == {n for n, d in CATALOG.items() if d.family in ("unary", "binary")}


@pytest.mark.skipif(not fusion.numexpr_available(), reason="numexpr is not installed")
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_numexpr_partitions_match_eager_within_rounding(data):
    steps = data.draw(_chains(["exp", "sin", "tanh", "sqrt", "negative", "abs", "log1p"], ["add", "multiply", "subtract"], "float64"))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a, b = rng.uniform(0.1, 1, 1000), rng.uniform(0.1, 1, 1000)
    found = _run_chain(steps, a, b, "cpu")
    eager, first, eager2, graph2, h = found
    for x, y in zip(eager2, graph2):
        np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-300)


def test_a_chain_is_one_op_and_explain_shows_the_partition():
    @nda.hybridize
    def f(a, b, c):
        return a * b + c

    x = nda.asarray(np.arange(6.0).reshape(2, 3), copy=True)
    y = f(x, x, x)
    text = str(nda.dispatch.explain(f, x, x, x))
    assert "fused:   fused[multiply+add] on cpu:0" in text and "1 claimed subgraph(s)" in text
    assert "test_hybridize.py:" in text
    assert nda.dispatch.explain(f, x, x, x).fused == [["multiply", "add"]]
    with nda.profiler.recording() if hasattr(nda.profiler, "recording") else _profile():
        f(x, x, x).wait_to_read()
    np.testing.assert_array_equal(y.asnumpy(), np.arange(6.0).reshape(2, 3) ** 2 + np.arange(6.0).reshape(2, 3))
    assert f.signatures == 1
    f(nda.asarray([1.0, 2.0]), nda.asarray([1.0, 2.0]), nda.asarray([1.0, 2.0]))
    assert f.signatures == 2


class _profile:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def test_unclaimed_nodes_run_op_by_op_and_partition_can_be_off():
    @nda.hybridize(partition=False)
    def f(a):
        return nda.sum(nda.exp(a) * 2.0)

    x = nda.asarray([0.0, 1.0])
    assert float(f(x)) == pytest.approx(2 * (1 + np.e))
    ex = nda.dispatch.explain(f, x)
    assert ex.fused == [] and [n.op for n in ex.nodes] == ["exp", "multiply", "sum"]


def test_signature_includes_metadata_aliasing_and_constants():
    calls = []

    @nda.hybridize
    def f(a, b, k):
        calls.append(1)
        return a * k + b

    x, y = nda.asarray([1.0, 2.0]), nda.asarray([3.0, 4.0])
    f(x, y, 2.0)
    f(y, x, 2.0)  # same signature: fn's Python runs (checked), the graph runs
    assert len(calls) == 2 and nda.dispatch.explain(f, x, y, 2.0).stats == {
        "traces": 1,
        "graph": 1,
        "op by op": 0,
        "eager": 0,
        "guard failures": 0,
        "graphs": 1,
    }
    np.testing.assert_array_equal(f(y, x, 2.0).asnumpy(), [7.0, 10.0])
    f(x, x, 2.0)  # aliasing differs
    f(x, y, 3.0)  # a constant differs
    f(x.astype(nda.float32), y, 2.0)  # dtype differs
    f(x.to_device("sim"), y.to_device("sim"), 2.0)  # device differs
    assert f.signatures == 5
    f(x, y, {"k": 2.0}["k"])
    assert f.signatures == 5 and nda.dispatch.explain(f, x, y, 2.0).stats["graph"] == 3


def test_unhashable_arguments_run_eagerly():
    calls = []

    @nda.hybridize
    def f(a, options):
        calls.append(1)
        return a * options["scale"]

    x = nda.asarray([1.0, 2.0])
    f(x, {"scale": 2.0})
    np.testing.assert_array_equal(f(x, {"scale": 3.0}).asnumpy(), [3.0, 6.0])  # dicts of hashables key the graph
    assert len(calls) == 2
    np.testing.assert_array_equal(f(x, {"scale": 4.0, "junk": {1}}).asnumpy(), [4.0, 8.0])  # a set value (unhashable): eager
    assert len(calls) == 3 and "eager" in str(nda.dispatch.explain(f, x, {"scale": 1.0, "junk": {1}}))


def test_host_reads_and_data_dependent_shapes_end_the_graph():
    calls = []

    @nda.hybridize
    def reads(a):
        calls.append(1)
        if float(nda.sum(a)) > 0:  # control flow on data: must not be frozen into a graph
            return a * 2
        return a * -1

    pos, neg = nda.asarray([1.0, 2.0]), nda.asarray([-1.0, -2.0])
    np.testing.assert_array_equal(reads(pos).asnumpy(), [2.0, 4.0])
    np.testing.assert_array_equal(reads(neg).asnumpy(), [1.0, 2.0])  # eager: the data decides
    assert len(calls) == 2
    assert "eager: the graph ended at a host read of an array" in str(nda.dispatch.explain(reads, pos))

    @nda.hybridize
    def masked(a):
        return a[a > 0] * 2

    np.testing.assert_array_equal(masked(nda.asarray([1.0, -1.0, 3.0])).asnumpy(), [2.0, 6.0])
    np.testing.assert_array_equal(masked(nda.asarray([-1.0, 5.0, -3.0])).asnumpy(), [10.0])
    assert "has an output shape that depends on the data (a boolean mask)" in str(nda.dispatch.explain(masked, pos))

    @nda.hybridize
    def uniq(a):
        return nda.unique_values(a) + 1

    np.testing.assert_array_equal(uniq(nda.asarray([3, 1, 3])).asnumpy(), [2, 4])
    np.testing.assert_array_equal(uniq(nda.asarray([5, 5, 5])).asnumpy(), [6])


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_in_place_writes_and_captured_arrays_run_in_program_order(device):
    w = nda.asarray([1.0, 1.0], device=device)

    @nda.hybridize
    def step(x):
        y = x * w  # w: captured, read at every run
        x += 1.0  # written in place at every run
        w[...] = w * 2.0
        return y + x

    x = nda.asarray([1.0, 2.0], device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nda.HybridizeWarning)  # the graph is used: no fallback
        np.testing.assert_array_equal(step(x).asnumpy(), [3.0, 5.0])
    np.testing.assert_array_equal(x.asnumpy(), [2.0, 3.0])
    np.testing.assert_array_equal(w.asnumpy(), [2.0, 2.0])  # the first-call check replayed from copies, wrote the same
    ex = nda.dispatch.explain(step, x)
    assert ex.reason is None and "same as eager" in str(ex), str(ex)  # the graph path, not eager
    np.testing.assert_array_equal(step(x).asnumpy(), [7.0, 10.0])
    np.testing.assert_array_equal(x.asnumpy(), [3.0, 4.0])
    np.testing.assert_array_equal(w.asnumpy(), [4.0, 4.0])
    assert nda.dispatch.explain(step, x).stats["graph"] == 1  # the graph ran (the function's Python only checked)


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_a_function_whose_result_depends_on_what_it_writes_runs_as_a_graph(device):
    @nda.hybridize
    def step(state, x):
        state += x
        return state * 2.0, state

    s = nda.zeros(4, device=device)
    one = nda.ones(4, device=device)
    doubled, same = step(s, one)
    assert same is s
    np.testing.assert_array_equal(doubled.asnumpy(), [2.0] * 4)
    np.testing.assert_array_equal(s.asnumpy(), [1.0] * 4)  # written once, not twice by the check
    assert nda.dispatch.explain(step, s, one).reason is None
    doubled, _ = step(s, one)
    np.testing.assert_array_equal(doubled.asnumpy(), [4.0] * 4)
    np.testing.assert_array_equal(s.asnumpy(), [2.0] * 4)

    @nda.hybridize
    def temporaries(x):
        y = x * 2.0
        y += 1.0  # writes into arrays the graph makes itself
        y[0] = 5.0
        return y

    with warnings.catch_warnings():
        warnings.simplefilter("error", nda.HybridizeWarning)
        np.testing.assert_array_equal(temporaries(nda.asarray([1.0, 2.0, 3.0], device=device)).asnumpy(), [5.0, 5.0, 7.0])
    np.testing.assert_array_equal(temporaries(nda.asarray([0.0, 0.0, 1.0], device=device)).asnumpy(), [5.0, 1.0, 3.0])


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_errors_keep_the_op_and_the_line_of_the_hybridized_function(device):
    @nda.hybridize
    def f(a, b):
        c = a + 1.0
        return nda.linalg.inv(b) @ c  # the line of the failing op

    line = inspect.getsourcelines(f.fn)[1] + 3
    good = nda.asarray(np.eye(2) * 2, device=device, copy=True)
    v = nda.asarray([1.0, 2.0], device=device)
    f(v, good)
    singular = nda.zeros((2, 2), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(np.linalg.LinAlgError) as info:
            f(v, singular).asnumpy()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"{__file__}:{line}" in notes and "linalg.inv" in notes, notes


def test_hybridized_functions_are_differentiable():
    @nda.hybridize
    def f(a, b):
        return nda.sum(nda.tanh(a * b + a))

    x = nda.asarray([0.1, -0.4, 0.7])
    y = nda.asarray([1.5, 2.0, -1.0])
    f(x, y)  # traced outside record(): a fused graph
    assert nda.dispatch.explain(f, x, y).fused == [["multiply", "add", "tanh"]]
    x.attach_grad()
    with nda.autograd.record():
        loss = f(x, y)  # the graph runs op by op through the recording functions
    loss.backward()
    hx, hy = x.asnumpy(), y.asnumpy()
    np.testing.assert_allclose(x.grad.asnumpy(), (1 - np.tanh(hx * hy + hx) ** 2) * (hy + 1), rtol=1e-12)
    z = nda.asarray([0.3, 0.2, 0.1])
    z.attach_grad()
    with nda.autograd.record():
        loss = f(z, z)  # a new signature, traced inside record(): recorded too
    loss.backward()
    hz = z.asnumpy()
    np.testing.assert_allclose(z.grad.asnumpy(), (1 - np.tanh(hz * hz + hz) ** 2) * (2 * hz + 1), rtol=1e-12)


def test_extension_ops_are_recorded_and_replayed():
    @nda.hybridize
    def f(a):
        return nda.ext.sim.gelu(a) * 2.0 + 1.0

    x = nda.asarray(np.linspace(-2, 2, 7), copy=True)
    expected = 2.0 * nda.ext.sim.gelu(x).asnumpy() + 1.0
    np.testing.assert_array_equal(f(x).asnumpy(), expected)
    np.testing.assert_array_equal(f(x).asnumpy(), expected)
    assert [n.op for n in nda.dispatch.explain(f, x).nodes] == ["sim.gelu", "multiply", "add"]


def test_cpu_fusion_works_without_numexpr(tmp_path):
    """numexpr is optional: without it (import blocked) import nda works and cpu fuses with its own kernels."""
    script = tmp_path / "no_numexpr.py"
    script.write_text(
        "import sys\nsys.modules['numexpr'] = None\n"
        "import numpy as np, nda\nfrom nda.backends import fusion\nassert not fusion.numexpr_available()\n"
        "f = nda.hybridize(lambda a: nda.exp(a) * 2.0 + a)\nx = nda.asarray(np.linspace(0, 1, 10), copy=True)\n"
        "assert np.array_equal(f(x).asnumpy(), (nda.exp(x) * 2.0 + x).asnumpy())\n"
        "assert 'chunked numpy' in str(nda.dispatch.explain(f, x))\nassert 'numexpr' not in sys.modules or sys.modules['numexpr'] is None\nprint('ok')\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_fusion_program_and_evaluators_directly():
    f32 = nda.float32
    program = fusion.Program(
        [
            fusion.Instr("multiply", (("in", 0), ("in", 1)), f32, f32),
            fusion.Instr("add", (("tmp", 0), ("const", 0.5)), f32, f32),
            fusion.Instr("tanh", (("tmp", 1),), f32, f32),
        ],
        [(f32, (70000,)), (f32, (70000,))],
        [0, 2],
        (70000,),
        nda.Device("cpu", 0),
    )
    a = np.linspace(-1, 1, 70000, dtype=np.float32)
    b = np.linspace(2, 0, 70000, dtype=np.float32)
    run = fusion.chunked(program, lambda i: {"multiply": np.multiply, "add": np.add, "tanh": np.tanh}[i.op], chunk=4096)
    t, out = run(a, b)
    np.testing.assert_array_equal(t, a * b)
    np.testing.assert_array_equal(out, np.tanh(a * b + np.float32(0.5)))
    exprs, consts = fusion.numexpr_source(program)
    assert exprs == ["(in0 * in1)", "tanh(((in0 * in1) + c0))"] and consts[0][1].dtype == np.float32
    cast = fusion.Program(
        [fusion.Instr("add", (("in", 0), ("in", 1)), nda.float64, nda.float64)], [(nda.int32, (3,)), (nda.float64, (3,))], [0], (3,), None
    )
    assert fusion.numexpr_source(cast) is None  # a cast: numexpr has no cast, the chunked evaluator runs it
    (r,) = fusion.chunked(cast, lambda i: np.add)(np.array([1, 2, 3], np.int32), np.array([0.5, 0.5, 0.5]))
    np.testing.assert_array_equal(r, [1.5, 2.5, 3.5])


# ----------------------------------------------------------------------------- never other results than eager

_CAPTURED = nda.ones(3)


def _eager_and_hybrid(f, *args):
    return f.fn(*args).asnumpy(), f(*args).asnumpy()


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_a_function_bound_before_tracing_is_traced(device):
    from nda import exp  # bound before tracing: traced all the same (the tracer sits at the invocation point)

    @nda.hybridize
    def f(x):
        return exp(x) + 1.0

    f(nda.asarray([0.0, 1.0], device=device))
    x2 = nda.asarray([2.0, 3.0], device=device)
    np.testing.assert_array_equal(f(x2).asnumpy(), np.exp([2.0, 3.0]) + 1.0)
    ex = nda.dispatch.explain(f, x2)
    assert ex.reason is None and [n.op for n in ex.nodes] == ["exp", "add"]


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_an_op_library_namespace_first_touched_while_tracing_is_traced(device, monkeypatch):
    nda.ext.sim  # noqa: B018 - loaded; now forget its namespace, as if never touched
    monkeypatch.delitem(nda.ext._namespaces, "sim")
    monkeypatch.delitem(vars(nda.ext), "sim")

    @nda.hybridize
    def f(x):
        return nda.ext.sim.gelu(x) * 2.0

    f(nda.asarray([1.0, 2.0], device=device))
    x2 = nda.asarray([-1.0, 5.0], device=device)
    np.testing.assert_array_equal(f(x2).asnumpy(), nda.ext.sim.gelu(x2).asnumpy() * 2.0)
    ex = nda.dispatch.explain(f, x2)
    assert ex.reason is None and [n.op for n in ex.nodes] == ["sim.gelu", "multiply"]


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_a_rebound_global_is_read_by_name_at_every_run(device):
    global _CAPTURED
    _CAPTURED = nda.ones(3, device=device)

    @nda.hybridize
    def f(x):
        return x * _CAPTURED

    x = nda.asarray([1.0, 2.0, 3.0], device=device)
    f(x)
    _CAPTURED = nda.full((3,), 2.0, device=device)  # w = w - lr * g
    e, h = _eager_and_hybrid(f, x)
    np.testing.assert_array_equal(h, e)
    np.testing.assert_array_equal(h, [2.0, 4.0, 6.0])
    assert f.signatures == 1 and nda.dispatch.explain(f, x).reason is None
    _CAPTURED = nda.full((1,), 3.0, device=device)  # other metadata: traced again
    np.testing.assert_array_equal(f(x).asnumpy(), [3.0, 6.0, 9.0])
    _CAPTURED = x[:]  # now shares memory with the argument: eager for that call
    np.testing.assert_array_equal(f(x).asnumpy(), [1.0, 4.0, 9.0])
    _CAPTURED = nda.ones(3)


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_captured_closure_cells_and_attributes_are_read_at_every_run(device):
    class Layer:
        def __init__(self):
            self.weight = nda.ones(2, device=device)

        @nda.hybridize
        def forward(self, x):
            return x * self.weight + bias

    bias = nda.zeros(2, device=device)
    layer = Layer()
    x = nda.asarray([1.0, 2.0], device=device)
    layer.forward(x)
    layer.weight = nda.full((2,), 3.0, device=device)
    bias = nda.ones(2, device=device)  # noqa: F841 - read by forward through its closure
    np.testing.assert_array_equal(layer.forward(x).asnumpy(), [4.0, 7.0])
    assert Layer.forward.signatures == 1


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_an_argument_that_is_also_a_captured_global_is_not_conflated(device):
    global _CAPTURED
    _CAPTURED = nda.ones(3, device=device)

    @nda.hybridize
    def f(x):
        return x + _CAPTURED

    np.testing.assert_array_equal(f(_CAPTURED).asnumpy(), [2.0] * 3)  # traced with x and w the same array
    z = nda.zeros(3, device=device)
    e, h = _eager_and_hybrid(f, z)  # that graph must not read z twice
    np.testing.assert_array_equal(h, e)
    np.testing.assert_array_equal(f(z).asnumpy(), [1.0] * 3)
    assert nda.dispatch.explain(f, z).reason is None
    np.testing.assert_array_equal(f(_CAPTURED).asnumpy(), [2.0] * 3)  # the graph for z must not take w for x
    np.testing.assert_array_equal(f(z).asnumpy(), [1.0] * 3)
    assert nda.dispatch.explain(f, z).stats["graphs"] == 2  # one graph for each pattern, both kept
    _CAPTURED = nda.ones(3)


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_arguments_aliased_by_views_are_in_the_signature(device):
    @nda.hybridize
    def g(a, b):
        t = b * 2.0
        a += 1.0
        return t + b

    g(nda.zeros(4, device=device), nda.zeros(4, device=device))
    a = nda.zeros(4, device=device)
    r = g(a, a[:]).asnumpy()
    a = nda.zeros(4, device=device)
    np.testing.assert_array_equal(r, g.fn(a, a[:]).asnumpy())
    np.testing.assert_array_equal(r, [1.0] * 4)
    assert g.signatures == 2


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_float_scalars_key_signatures_by_bit_pattern_and_the_cache_is_bounded(device):
    @nda.hybridize(max_signatures=4)
    def h(x, s):
        return x * s

    x = nda.ones(2, device=device)
    h(x, np.float64(0.0))
    r = h(x, np.float64(-0.0)).asnumpy()
    assert np.signbit(r).all()
    np.testing.assert_array_equal(np.signbit(h(x, -0.0).asnumpy()), [True, True])
    for _ in range(5):
        assert np.isnan(h(x, np.float64("nan")).asnumpy()).all()
    assert h.signatures == 4  # 0.0, -0.0 (np.float64 and float), one NaN
    with pytest.warns(nda.HybridizeWarning, match="more than 4 signatures"):
        for k in range(10):
            h(x, float(k) + 0.5)
    assert h.signatures == 4
