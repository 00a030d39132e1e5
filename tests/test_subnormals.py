"""Backends that flush subnormals to zero: the declaration, what shows it, the kit, nda-sim's flush mode.

``flushes_subnormals`` (``nda.backends.contract``) says which dtypes' subnormal inputs and
results a backend's kernels treat as zeros (a GPU's flush-to-zero; CuPy compiles with
``-ftz=true``). The kit accepts such results for those dtypes only, and still fails a
backend that flushes without saying so, flushes more than it says, or is wrong besides
(the flushing mutants of ``_mutant_backends``). nda-sim flushes on request
(``NDA_SIM_FLUSH_SUBNORMALS=1``), so the whole path runs in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nda
from nda.testing import conformance
from nda.testing.conformance import _subnormals
from nda.testing.conformance._cases import Arr, Case

import _mutant_backends

HERE = os.path.dirname(os.path.abspath(__file__))
TINY32 = float(np.finfo(np.float32).smallest_subnormal)
OPS = ["less", "sqrt", "multiply", "sum"]


def load(name: str) -> str:
    device_type = f"mut_{name}"
    if not nda.backends.serves(device_type):
        nda.backends.load(f"_mutant_backends:{name}")
    return device_type


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")])), **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=300)


# ----------------------------------------------------------------------------- the kit


def test_a_declared_flush_passes_and_the_report_says_how():
    report = conformance.run(load("flush_declared"), ops=OPS, dtypes=["float32", "float64", "complex64"])
    assert report.ok, report.table()
    flushed = {r.id for r in report.results if r.flushed}
    assert {"less-float32-strided", "sqrt-float32-strided", "sqrt-complex64-strided"} <= flushed
    assert not any(r.dtype == "float64" for r in report.results if r.flushed)
    table = report.table()
    assert "ok*" in table and "subnormals: the backend declares that its kernels flush complex64 and float32 subnormals" in table
    data = json.loads(report.to_json())
    assert data["environment"]["flushes_subnormals"] == ["complex64", "float32"]
    assert data["results"][0]["flushed"] in (0, 1)


def test_an_undeclared_flush_fails_with_the_subnormal_example():
    report = conformance.run(load("flush_undeclared"), ops=["less", "sqrt"], dtypes=["float32", "float64"])
    assert {r.id for r in report.failures} == {"less-float32-strided", "sqrt-float32-strided"}, report.table()
    assert "1.401298464324817e-45" in report.result("less", "float32").example
    assert "subnormals:" not in report.table()


def test_flushing_more_dtypes_than_declared_fails_those():
    report = conformance.run(load("flush_float64"), ops=["less", "sqrt"], dtypes=["float32", "float64"])
    assert {r.dtype for r in report.failures} == {"float64"}, report.table()
    assert all("5e-324" in r.example for r in report.failures)


def test_a_backend_that_flushes_and_is_wrong_is_still_caught():
    report = conformance.run(load("flush_and_wrong"), ops=OPS, dtypes=["float32", "complex64"])
    assert [r.id for r in report.failures] == ["less-float32-strided"], report.table()
    failure = report.failures[0]
    assert "not equal" in failure.error and failure.example == "less(asarray(0.0, dtype=float32), asarray(0.0, dtype=float32))"
    assert report.result("sqrt", "float32").status == "passed"


def test_flush_case_flushes_inputs_and_single_precision_scalars_only():
    cell = conformance.Cell("multiply", nda.float32, nda.Layout("strided"), "native")
    base = np.array([TINY32, -TINY32, 1.0], np.float32)
    case = Case("multiply", (Arr(base, "reverse"), 1e-40))
    flushed = _subnormals.flush_case(case, cell, frozenset({"float32"}))
    assert flushed.args[0].view == "reverse" and flushed.args[1] == 0.0
    assert np.signbit(flushed.args[0].base).tolist() == [False, True, False] and (flushed.args[0].base[:2] == 0).all()
    assert base[0] == TINY32  # the case's own data is untouched
    wide = conformance.Cell("multiply", nda.float64, nda.Layout("strided"), "native")
    assert _subnormals.flush_case(case, wide, frozenset({"float32"})).args[1] == 1e-40  # computed in float64: not flushed
    assert _subnormals.involved(case, cell, frozenset({"float32"}))
    assert not _subnormals.involved(Case("multiply", (Arr(np.float32([1.0])), 2.0)), cell, frozenset({"float32"}))


# ----------------------------------------------------------------------------- the declaration


def test_the_declaration_is_validated_when_the_backend_registers():
    backend = _mutant_backends.FlushingMutant("mut_flush_bad", ("sqrt",), declares=("int8",), flushes=())
    sys.modules[__name__].bad_flush_backend = backend
    with pytest.raises(nda.backends.BackendValidationError, match=r"flushes_subnormals must be a tuple of floating dtype names.*'int8'"):
        nda.backends.load(f"{__name__}:bad_flush_backend")
    assert not nda.backends.serves("mut_flush_bad")


def test_status_and_explain_show_the_declaration():
    device = load("flush_declared")
    record = next(r for r in nda.backends.status() if r["name"] == device)
    assert record["flushes_subnormals"] == ["float32", "complex64"]
    assert next(r for r in nda.backends.status() if r["name"] == "cpu")["flushes_subnormals"] == []
    x = nda.asarray(np.float32([1.0, TINY32]), device=device)
    note = "backend 'mut_flush_declared' flushes float32 subnormal inputs and results to zero (declared: flushes_subnormals)"
    assert note in str(nda.dispatch.explain("less", x, x))
    assert "flushes" not in str(nda.dispatch.explain("less", x.astype(nda.float64), x.astype(nda.float64)))
    assert nda.dispatch.subnormal_flush(device) == {nda.float32, nda.complex64}
    assert nda.dispatch.subnormal_flush("cpu") == frozenset()


# ----------------------------------------------------------------------------- nda-sim's flush mode

_SIM_FLUSH = """
import json, numpy as np, nda
from nda.testing import conformance
tiny = float(np.finfo(np.float32).smallest_subnormal)
x = nda.asarray(np.float32([tiny, 1.0]), device="sim")
zero = nda.zeros(2, dtype=nda.float32, device="sim")
report = conformance.run("sim", reference="cpu", ops=["less", "sqrt", "log", "multiply", "sum", "astype", "reshape"],
                         dtypes=["float32", "complex64", "float64"])
print(json.dumps({
    "less": nda.less(zero, x).tolist(), "sqrt": nda.sqrt(x).tolist(), "view": nda.reshape(x, (2, 1)).asnumpy().ravel().tolist(),
    "f64": nda.less(zero.astype(nda.float64), nda.asarray([5e-324, 1.0], device="sim")).tolist(),
    "ok": report.ok, "flushed": sorted(r.id for r in report.results if r.flushed), "table": report.table(),
    "explain": str(nda.dispatch.explain("sqrt", x)),
}))
"""


def test_sim_flush_mode_flushes_declares_and_passes_the_kit():
    out = _run(_SIM_FLUSH, NDA_SIM_FLUSH_SUBNORMALS="1")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["less"] == [False, True] and result["sqrt"][0] == 0.0  # 1.4e-45 read as 0
    assert result["view"][0] == TINY32  # views and copies move data: nothing flushed
    assert result["f64"] == [True, True]  # float64 keeps its subnormals
    assert result["ok"], result["table"]
    assert {"less-float32-strided", "sqrt-float32-strided", "log-float32-strided", "log-complex64-strided"} <= set(result["flushed"])
    assert "subnormals: the backend declares" in result["table"] and "ok*" in result["table"]
    assert "backend 'sim' flushes float32 subnormal inputs and results to zero" in result["explain"]


def test_sim_keeps_subnormals_by_default_and_info_shows_the_mode():
    plain = _run(
        "import nda, numpy as np; x = nda.asarray(np.float32([1e-45]), device='sim'); print(nda.sqrt(x).tolist(), nda.backends.load('sim').flushes_subnormals)"
    )
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.split() == ["[3.743392066509216e-23]", "()"]
    info = subprocess.run(
        [sys.executable, "-m", "nda", "info"], capture_output=True, text=True, timeout=300, env={**os.environ, "NDA_SIM_FLUSH_SUBNORMALS": "1"}
    )
    assert info.returncode == 0, info.stderr
    sim_part = info.stdout.split("  sim ")[1]
    assert "subnormals: float32, complex64 flushed to zero by its kernels (declared: flushes_subnormals)" in sim_part
