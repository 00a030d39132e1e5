"""nda-cuda's partitioner (backend API 1.4) without a GPU: the generated CUDA source, and the same
program run over the model of CuPy (the ``cudamirror`` device of ``tests/_cuda_numpy_mirror.py``).

Owed on a GPU: compiling the generated kernels with NVRTC, bit-for-bit equality with CuPy's
eager ufuncs on the device (``--fmad=false``), and the timings of ``python -m benchmarks.gpu``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nda
from nda.backends import fusion
from nda_cuda import _fusion

F32, F64 = nda.float32, nda.float64


def _mirror():
    if not nda.backends.serves("cudamirror"):
        nda.backends.load("_cuda_numpy_mirror:backend")


def test_cuda_source_of_a_multiply_add_chain():
    program = fusion.Program(
        [fusion.Instr("multiply", (("in", 0), ("in", 1)), F32, F32), fusion.Instr("add", (("tmp", 0), ("in", 2)), F32, F32)],
        [(F32, (8,)), (F32, (8,)), (F32, (8,))],
        [1],
        (8,),
        None,
    )
    in_params, out_params, operation, scalars = _fusion.cuda_source(program)
    assert in_params == "float32 in0, float32 in1, float32 in2"
    assert out_params == "float32 out0"
    assert operation == "float t0 = (in0 * in1);\nfloat t1 = (t0 + in2);\nout0 = t1;"
    assert scalars == [] and _fusion.OPTIONS == ("--fmad=false",)  # no contraction into an fma: eager rounding


def test_cuda_source_casts_at_the_border_and_passes_scalars_typed():
    program = fusion.Program(
        [
            fusion.Instr("multiply", (("in", 0), ("const", 0.5)), F64, F64),
            fusion.Instr("tanh", (("tmp", 0),), F64, F64),
            fusion.Instr("add", (("tmp", 1), ("in", 1)), F64, F64),
        ],
        [(nda.int32, (4,)), (F64, (4,))],
        [0, 2],
        (4,),
        None,
    )
    in_params, out_params, operation, scalars = _fusion.cuda_source(program)
    assert in_params == "int32 in0, float64 in1, float64 c0"
    assert out_params == "float64 out0, float64 out1"
    assert operation.splitlines() == [
        "double t0 = (((double)in0) * c0);",
        "double t1 = tanh(t0);",
        "double t2 = (t1 + in1);",
        "out0 = t0;",
        "out1 = t2;",
    ]
    assert scalars == [np.float64(0.5)] and type(scalars[0]) is np.float64
    assert "t0 = xp.multiply(in0.astype(xp.float64), c0)" in _fusion.python_source(program)


def test_generated_source_parses_as_a_cupy_elementwise_kernel():
    cupy = pytest.importorskip("cupy")
    program = fusion.Program(
        [fusion.Instr("multiply", (("in", 0), ("const", 2.0)), F32, F32), fusion.Instr("exp", (("tmp", 0),), F32, F32)],
        [(F32, (8,))],
        [1],
        (8,),
        None,
    )
    in_params, out_params, operation, _ = _fusion.cuda_source(program)
    kernel = cupy.ElementwiseKernel(in_params, out_params, operation, "nda_fused_test", options=_fusion.OPTIONS)
    assert kernel.nin == 2 and kernel.nout == 1
    assert [(p.name, p.ctype) for p in kernel.params[:3]] == [("in0", "float"), ("c0", "float"), ("out0", "float")]


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_hybridize_on_the_cuda_mirror_fuses_and_gives_eager_results(data):
    _mirror()
    unary = ["exp", "sin", "tanh", "negative", "sqrt", "log1p", "abs", "square"]
    binary = ["add", "multiply", "subtract", "divide"]
    steps = [(data.draw(st.sampled_from(unary + binary)), data.draw(st.sampled_from([None, 0.5, 3]))) for _ in range(data.draw(st.integers(2, 5)))]
    dtype = data.draw(st.sampled_from(["float32", "float64"]))

    def fn(a, b):
        v = a
        for op, scalar in steps:
            v = getattr(nda, op)(v) if op in unary else getattr(nda, op)(v, b if scalar is None else scalar)
        return v

    rng = np.random.default_rng(data.draw(st.integers(0, 100)))
    host_a, host_b = (rng.uniform(0.1, 2, 300).astype(dtype) for _ in range(2))
    a, b = nda.asarray(host_a, device="cudamirror"), nda.asarray(host_b, device="cudamirror")
    h = nda.hybridize(fn)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        h(a, b)
        a2 = nda.asarray(host_b, device="cudamirror")
        got, expected = h(a2, b).asnumpy(), fn(a2, b).asnumpy()
    np.testing.assert_array_equal(got, expected)
    explanation = nda.dispatch.explain(h, a, b)
    if len(steps) >= 2:
        assert explanation.groups and explanation.groups[0].partitioner == "CudaPartitioner", str(explanation)


def test_the_cuda_partitioner_leaves_ops_with_workarounds_and_complex_alone():
    _mirror()

    @nda.hybridize
    def f(a, b):
        return nda.floor_divide(a * b, 2.0) + nda.hypot(a, b)  # floor_divide, hypot: nda-cuda workarounds, not templates

    a = nda.asarray([1.0, 2.0, 3.0], device="cudamirror")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(a, a)
        ex = nda.dispatch.explain(f, a, a)
    assert all(set(g) <= set(_fusion.TEMPLATES) for g in ex.fused)
    c = nda.asarray([1 + 1j, 2.0], device="cudamirror")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = nda.hybridize(lambda x: nda.exp(x) * x)
        g(c)
        assert nda.dispatch.explain(g, c).fused == []
