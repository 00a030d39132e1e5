"""nda.testing: comparisons, strategies, the conformance kit, its pytest plugin and CLI.

The kit is itself tested against "mutant" backends (``_mutant_backends.py``), each wrong
in one specific way; it must fail each of them on exactly the broken cell with a minimal
example, report fallback and uncovered cells as such, and pass the real cpu and sim
backends over the whole catalog.
"""

from __future__ import annotations

import json
import math
from typing import Any
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

import nda
from nda.ops import CATALOG
from nda.testing import assert_allclose, conformance, default_tolerance
from nda.testing import strategies as nst
from nda.testing._profiles import profile_settings
from nda.testing.conformance._cases import Arr

import _mutant_backends

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = nda.Device("sim", 0)


def load_mutant(name: str) -> str:
    device_type = f"mut_{name}"
    if not nda.backends.serves(device_type):
        nda.backends.load(f"_mutant_backends:{name}")
    return device_type


# ----------------------------------------------------------------------------- assert_allclose


def test_default_tolerances_are_dtype_aware():
    assert default_tolerance(nda.int8) == (0.0, 0.0) and default_tolerance(nda.bool) == (0.0, 0.0)
    assert default_tolerance(nda.float32) == (1e-5, float(np.finfo(np.float32).smallest_normal))
    assert default_tolerance("complex128") == (1e-12, float(np.finfo(np.float64).smallest_normal))
    assert_allclose(np.float32([1.0 + 4e-6]), np.float32([1.0]))
    with pytest.raises(AssertionError, match="outside tolerance"):
        assert_allclose(np.float64([1.0 + 1e-9]), np.float64([1.0]))
    assert_allclose(np.float64([5e-324]), np.float64([0.0]))  # flush-to-zero below the normal range is forgiven
    with pytest.raises(AssertionError, match=r"at \(1,\): actual 3, desired 4 \(not equal\)"):
        assert_allclose(np.int8([1, 3]), np.int8([1, 4]))


def test_special_values_nan_inf_and_signed_zero():
    nan, inf = math.nan, math.inf
    assert_allclose(np.array([nan, inf, -inf, -0.0]), np.array([nan, inf, -inf, -0.0]))
    with pytest.raises(AssertionError, match="NaN mismatch"):
        assert_allclose(np.array([nan]), np.array([1.0]))
    with pytest.raises(AssertionError, match="NaN mismatch"):
        assert_allclose(np.array([nan]), np.array([nan]), equal_nan=False)
    with pytest.raises(AssertionError, match="infinity mismatch"):
        assert_allclose(np.array([-inf]), np.array([inf]))
    with pytest.raises(AssertionError, match="infinity mismatch"):
        assert_allclose(np.array([1e308]), np.array([inf]))
    with pytest.raises(AssertionError, match="sign of zero"):
        assert_allclose(np.array([0.0]), np.array([-0.0]))
    assert_allclose(np.array([0.0]), np.array([-0.0]), signed_zeros=False)
    # complex: NaN in either part is NaN; infinite parts must match exactly, finite parts still compared
    assert_allclose(np.array([complex(nan, 0.0)]), np.array([complex(0.0, nan)]))
    with pytest.raises(AssertionError, match="infinity mismatch"):
        assert_allclose(np.array([complex(inf, 1.0)]), np.array([complex(-inf, 1.0)]))
    with pytest.raises(AssertionError, match="outside tolerance"):
        assert_allclose(np.array([complex(inf, 1.0)]), np.array([complex(inf, 2.0)]))


@settings(max_examples=200, deadline=None)
@given(
    st.complex_numbers(allow_nan=False, allow_infinity=False) | st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([np.float64, np.complex128, np.complex64, np.float32]),
)
def test_values_near_the_top_of_the_range_compare_without_overflow(value: complex, dtype: Any):
    """Identical values always agree, and tolerance comparisons do not overflow (issue 38, item 6:
    ``|1.27e308+1.27e308j|`` overflows, and ``0 * inf`` made identical values differ)."""
    if isinstance(value, complex) and not np.issubdtype(dtype, np.complexfloating):
        value = value.real
    with np.errstate(all="ignore"):
        a = np.array([value]).astype(dtype)
    if not np.all(np.isfinite(a)):
        return
    assert_allclose(a, a.copy(), rtol=0, atol=0)
    assert_allclose(a, a.copy())


def test_tolerances_hold_at_the_top_of_the_range():
    big = 1.27e308
    assert_allclose(np.array([big + big * 1j]), np.array([big + big * 1j]), rtol=0, atol=0)
    assert_allclose(np.array([big * (1 + 4e-16) + big * 1j]), np.array([big + big * 1j]), rtol=1e-12, atol=0)
    with pytest.raises(AssertionError, match="outside tolerance"):
        assert_allclose(np.array([1.7e308 - 1.7e308j]), np.array([-1.7e308 + 1.7e308j]), rtol=1e-3)
    with pytest.raises(AssertionError, match="outside tolerance"):
        assert_allclose(np.array([1.7e308]), np.array([-1.7e308]), rtol=1e-3)
    with pytest.raises(AssertionError, match="outside tolerance"):
        assert_allclose(np.array([big + big * 1j]), np.array([big * (1 + 1e-9) + big * 1j]), rtol=1e-12, atol=0)


def test_explicit_tolerances_apply_to_integers_as_in_numpy():
    """``atol=1`` was ignored for integer arrays (a probe): NumPy's assert_allclose passes these."""
    np.testing.assert_allclose(np.array([100]), np.array([101]), atol=1)
    assert_allclose(nda.asarray([100]), nda.asarray([101]), atol=1)
    assert_allclose(np.uint64([2**64 - 1]), np.uint64([2**64 - 2]), rtol=1e-6)
    with pytest.raises(AssertionError, match="outside tolerance"):
        assert_allclose(nda.asarray([100]), nda.asarray([103]), atol=1)
    with pytest.raises(AssertionError, match="not equal"):
        assert_allclose(nda.asarray([100]), nda.asarray([101]))  # the default stays exact
    with pytest.raises(AssertionError, match="not equal"):
        assert_allclose(np.array([True]), np.array([False]), atol=1)  # bools compare exactly


def test_shapes_and_dtypes_must_match_exactly():
    with pytest.raises(AssertionError, match=r"shapes differ: actual \(1,\), desired \(\)"):
        assert_allclose(np.zeros(1), np.zeros(()))
    with pytest.raises(AssertionError, match="dtypes differ: actual float32, desired float64"):
        assert_allclose(np.zeros(2, np.float32), np.zeros(2))
    assert_allclose(np.zeros(2, np.float32), np.zeros(2), check_dtype=False)


def test_compares_across_devices_and_checks_buffers():
    host = np.array([1.5, math.nan, -0.0], dtype=np.float32)
    on_sim, on_cpu = nda.asarray(host, device=SIM), nda.asarray(host)
    assert_allclose(on_sim, on_cpu)
    assert_allclose(on_sim * 2, host * 2)
    with pytest.raises(AssertionError, match="err_msg here"):
        assert_allclose(on_sim, on_cpu + 1, err_msg="err_msg here")
    device = load_mutant("wrong_dtype")
    x = nda.asarray(np.ones(2, np.float32), device=device)
    with pytest.raises(AssertionError, match="reports dtype float32 .* but its buffer on mut_wrong_dtype:0 holds float64"):
        assert_allclose(x * x, np.ones(2, np.float32))


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_array_equals_itself_on_every_device(data):
    device = data.draw(nst.devices())
    x = data.draw(nst.arrays(device=device))
    assert x.device is device and x.dtype in nda._dtypes.ALL_DTYPES
    assert_allclose(x, x.to_device("cpu"))


# ----------------------------------------------------------------------------- strategies


def test_edge_values_are_there_on_purpose():
    floats = nst.edge_values(nda.float32)
    assert any(math.isnan(v) for v in floats) and math.inf in floats and -math.inf in floats
    assert any(v == 0 and math.copysign(1, v) < 0 for v in floats)
    assert float(np.finfo(np.float32).smallest_subnormal) in floats and float(np.finfo(np.float32).max) in floats
    assert {-128, 127, 0, 1, -1} <= set(nst.edge_values(nda.int8)) and 2**64 - 1 in nst.edge_values(nda.uint64)
    assert nst.edge_values(nda.bool) == [False, True]
    quick = settings(max_examples=200, database=None)
    for predicate in (
        lambda a: np.isnan(a).any(),
        lambda a: np.isinf(a).any(),
        lambda a: (np.signbit(a) & (a == 0)).any(),
        lambda a: ((a != 0) & (np.abs(a) < np.finfo(np.float64).smallest_normal)).any(),
    ):
        find(nst.host_arrays(nda.float64, (4,)), predicate, settings=quick)
    find(nst.host_arrays(nda.int16, (3,)), lambda a: (a == -(2**15)).any(), settings=quick)


@given(st.data())
def test_arrays_dtypes_and_shapes_follow_their_arguments(data):
    dtype = data.draw(nst.dtypes(kind="integral"))
    assert dtype.category in ("signed integer", "unsigned integer")
    assert data.draw(nst.dtypes(device="sim", kind="real floating")) in (nda.float32, nda.float64)
    assert data.draw(nst.dtypes(kind="complex floating")) in (nda.complex64, nda.complex128)
    x = data.draw(nst.arrays(dtype, (2, 3), device="sim"))
    assert (x.dtype, x.shape, x.device) == (dtype, (2, 3), SIM)
    shapes = data.draw(nst.mutually_broadcastable_shapes(3))
    assert np.broadcast_shapes(*shapes.input_shapes) == shapes.result_shape
    target = data.draw(nst.shapes())
    assert np.broadcast_shapes(data.draw(nst.broadcastable_shapes(target)), target) == target


def test_unknown_kind_and_missing_device_are_clear_errors():
    with pytest.raises(ValueError, match="unknown dtype kind 'text'"):
        nst.dtypes(kind="text")
    with pytest.raises(ValueError, match="no 'nope' device is available"):
        nst.available_devices("nope")
    assert {d.type for d in nst.available_devices()} >= {"cpu", "sim"}


@given(st.data())
def test_index_expressions_index_like_numpy(data):
    shape = data.draw(nst.shapes())
    host = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    key = data.draw(nst.index_expressions(shape, host=True))
    expected = host[key]
    device = data.draw(st.sampled_from(["cpu", "sim"]))
    got = nda.asarray(host, device=device)[nst._key_on(key, device)]
    np.testing.assert_array_equal(got.asnumpy(), expected)
    unique_key = data.draw(nst.index_expressions(shape, host=True, unique=True))
    for part in unique_key if isinstance(unique_key, tuple) else (unique_key,):
        if isinstance(part, np.ndarray) and part.dtype != bool and part.size:
            n = shape[len(unique_key) - 1]
            assert len(set((part % n).tolist())) == part.size


# ----------------------------------------------------------------------------- cells


def test_cells_classify_native_fallback_missing_and_undeclared():
    cpu = conformance.cells("cpu")
    dense = [c for c in cpu if c.layout.name == "strided"]
    assert len(dense) == sum(len(d.supported_dtypes) for d in nda.ops.DECLARED.values())  # with the ops of loaded op libraries
    cpu = [c for c in cpu if c.op in CATALOG]  # libraries loaded by other tests may leave cells without a cpu kernel
    assert {c.route for c in cpu} == {"native"}
    sparse = {(c.op, c.layout.name) for c in cpu if c.layout.name != "strided"}  # ops with a native kernel at that layout
    assert {("matmul", "csr"), ("sum", "row_sparse"), ("sin", "csr")} <= sparse and ("cos", "csr") not in sparse
    sim = {(c.op, c.dtype.name): c.route for c in conformance.cells("sim")}
    assert sim["add", "int8"] == "native" and sim["sort", "float32"] == "native" and sim["isin", "int8"] == "fallback"
    routes = {(c.op, c.dtype.name): c.route for c in conformance.cells(load_mutant("int8_add"), ops=["add", "multiply"])}
    assert routes["add", "int8"] == "native" and routes["multiply", "int8"] == "missing"
    undeclared = {(c.op, c.dtype.name): c.route for c in conformance.cells(load_mutant("undeclared"), ops=["logical_and"])}
    assert undeclared == {("logical_and", "bool"): "native", ("logical_and", "int8"): "undeclared"}
    with pytest.raises(ValueError, match="unknown op"):
        conformance.cells("cpu", ops=["frobnicate"])
    with pytest.raises(ValueError, match="device type 'nope' is not available|cannot test device type 'nope'"):
        conformance.cells("nope")


def test_cells_of_other_layouts_are_listed_and_reported():
    device = load_mutant("undeclared")
    nda.dispatch.register(
        "logical_or", device, ["bool"], _mutant_backends.wrap(np.logical_or, "logical_or"), layout=nda.Layout("kit_blocked"), backend=device
    )
    found = [(c.op, c.dtype.name, c.layout.name, c.route) for c in conformance.cells(device, ops=["logical_or"])]
    assert found == [("logical_or", "bool", "strided", "missing"), ("logical_or", "bool", "kit_blocked", "native")]
    result = conformance.run(device, ops=["logical_or"]).result("logical_or", "bool", "kit_blocked")
    # nda cannot build arrays of a layout nobody registered: the kit says so instead of testing the cell
    assert result.status == "not covered" and "layout 'kit_blocked' is not registered" in result.reason
    assert "logical_or [kit_blocked]" in conformance.Report(device, "reference", "quick", [result]).table()


def test_every_catalog_op_has_an_input_generator():
    assert set(CATALOG) <= conformance.GENERATED_OPS, f"ops the kit cannot test yet: {sorted(set(CATALOG) - conformance.GENERATED_OPS)}"


def test_fallback_and_uncovered_cells_are_reported_not_tested():
    partial = nda.backends.load("_mutant_backends:partial") if not nda.backends.serves("mut_partial") else None  # noqa: F841
    report = conformance.run("mut_partial", ops=["add", "multiply", "sort"], dtypes=["int32", "float64"])
    statuses = {(r.op, r.dtype): (r.status, r.examples) for r in report.results}
    assert statuses["add", "int32"][0] == "passed" and statuses["add", "int32"][1] > 0
    assert statuses["multiply", "int32"] == ("fallback", 0) and statuses["sort", "float64"] == ("fallback", 0)
    missing = conformance.run(load_mutant("int8_add"), ops=["multiply"], dtypes=["int8"]).results[0]
    assert (missing.status, missing.reason) == ("not covered", "no kernel and no host fallback")
    undeclared = conformance.run(load_mutant("undeclared"), ops=["logical_and"]).result("logical_and", "int8")
    assert undeclared.status == "failed" and "declared for bool dtypes only" in undeclared.error


# ----------------------------------------------------------------------------- mutants

#: mutant -> (dtypes to run, dtypes that must fail, what the error says)
MUTANTS = {
    "int8_add": (None, {"int8"}, "not equal"),
    "nan_sum": (["int64", "float32", "float64", "complex128"], {"float32", "float64", "complex128"}, "NaN mismatch"),
    "wrong_dtype": (["float32", "float64"], {"float32"}, "the kernel returned float64 data"),
    "writes_input": (["int8", "float64"], {"int8", "float64"}, "wrote into its input"),
    "signed_zero": (["int32", "float32", "float64"], {"float32", "float64"}, "sign of zero"),
    "nan_maximum": (["int8", "float32", "float64"], {"float32", "float64"}, "NaN mismatch"),
    "wrong_shape": (["int16", "float32"], {"int16", "float32"}, "but nda declared"),
    "device_error": (["float32", "float64"], {"float64"}, "raised FloatingPointError: mutant exp"),
}


def _elements(case) -> int:
    return sum(a.base.size for a in case.arrays()) + sum(1 for a in case.args if isinstance(a, (bool, int, float, complex)))


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_kit_fails_each_mutant_on_exactly_its_bug_with_a_minimal_example(name):
    op = _mutant_backends.BUGS[name][0]
    dtypes, failing, message = MUTANTS[name]
    report = conformance.run(load_mutant(name), ops=[op], dtypes=dtypes)
    assert {r.dtype for r in report.failures} == failing, report.table()
    assert all(r.status == "passed" for r in report.results if r.dtype not in failing), report.table()
    for r in report.failures:
        assert message in r.error, r.describe()
        assert r.example and r.case is not None and r.example.startswith(f"{op}(")
        assert _elements(r.case) <= 2, f"not minimal: {r.example}"
        assert "nda bug" not in r.error, "a backend bug must not be blamed on nda"
        assert r.found_by in ("hypothesis", "edge sweep")


def test_minimal_examples_name_the_edge_value():
    report = conformance.run(load_mutant("nan_sum"), ops=["sum"], dtypes=["float64"])
    assert "nan" in report.failures[0].example
    report = conformance.run(load_mutant("int8_add"), ops=["add"], dtypes=["int8"])
    case = report.failures[0].case
    values = [int(np.asarray(a.base).item()) if isinstance(a, Arr) else a for a in case.args]
    assert not -128 <= sum(values) <= 127, f"{report.failures[0].example} does not overflow int8"


# ----------------------------------------------------------------------------- the real backends

#: The whole catalog runs twice here (cpu, sim) and CI runs the suite twice: 4 drawn cases
#: per cell plus the exhaustive edge sweep. The vendor command's nda-quick profile draws 8.
SUITE = settings(profile_settings("quick"), max_examples=4)


def test_kit_passes_cpu_against_the_reference_functions():
    report = conformance.run("cpu", settings=SUITE)
    assert report.counts()["passed"] + len(report.failures) == len(report.results)
    assert report.ok, "\n\n".join(r.describe() for r in report.failures)
    assert all(r.examples > 0 for r in report.results if r.status == "passed")


@pytest.mark.parametrize("device", ["sim", "cuda"])
def test_kit_passes_accelerators_against_cpu(device):
    nda.backends.ensure_device_type(device)
    if not nda.backends.serves(device):
        pytest.skip(f"no {device} device here")
    report = conformance.run(device, reference="cpu", settings=SUITE)
    assert report.ok, "\n\n".join(r.describe() for r in report.failures)
    if device == "sim":
        assert report.result("isin", "float32").status == "fallback" and report.result("add", "int8").status == "passed"
        assert report.result("sort", "float32").status == "passed" and report.result("linalg.eigh", "float64").status == "passed"


# ----------------------------------------------------------------------------- reports


def test_report_table_and_json():
    report = conformance.run(load_mutant("int8_add"), ops=["add", "multiply"], dtypes=["int8", "int16"])
    table = report.table()
    assert "mut_int8_add:0 against reference" in table and "1 passed, 1 failed, 0 fallback, 2 not covered" in table
    assert "FAIL" in table and "minimal failing example" in table and "no kernel and no host fallback" in table
    data = json.loads(report.to_json())
    assert data["summary"] == {"passed": 1, "failed": 1, "fallback": 0, "not covered": 2}
    assert data["environment"]["nda"] == nda.__version__ and data["profile"] == "quick"
    cell = next(r for r in data["results"] if r["status"] == "failed")
    assert set(cell) == {"op", "dtype", "layout", "status", "examples", "seconds", "example", "error", "reason", "found_by", "flushed"}
    assert (cell["op"], cell["dtype"], cell["layout"]) == ("add", "int8", "strided") and cell["example"].startswith("add(")


# ----------------------------------------------------------------------------- the pytest plugin and the CLI


def _run(*args, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_vendor_command_on_sim(tmp_path):
    out = _run(
        "-m",
        "pytest",
        "--pyargs",
        "nda.testing.conformance",
        "--nda-device=sim",
        "--nda-ops=add,isin,sum",
        "--nda-dtypes=int8,float32",
        "-p",
        "no:cacheprovider",
        "-rs",
        f"--nda-report={tmp_path / 'r.json'}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    # add and sum on strided, and sum on csr (sim stores csr natively), for both dtypes; isin falls back
    assert "6 passed, 2 skipped" in out.stdout and "fallback: no native kernel" in out.stdout
    assert "nda conformance: sim:0 against reference" in out.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["summary"] == {"passed": 6, "failed": 0, "fallback": 2, "not covered": 0}


def test_vendor_command_fails_a_mutant_with_its_example(tmp_path):
    out = _run(
        "-m",
        "pytest",
        "--pyargs",
        "nda.testing.conformance",
        "--nda-load=_mutant_backends:int8_add",
        "--nda-device=mut_int8_add",
        "--nda-ops=add",
        "--nda-dtypes=int8,int16",
        "-p",
        "no:cacheprovider",
        "--nda-reference=cpu",
        cwd=tmp_path,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FAILED" in out.stdout and "test_cell[add-int8-strided]" in out.stdout and "1 failed, 1 passed" in out.stdout
    assert "minimal failing example" in out.stdout and "mut_int8_add:0 against cpu:0" in out.stdout


def test_vendor_command_needs_a_device_and_registers_its_profiles(tmp_path):
    out = _run("-m", "pytest", "--pyargs", "nda.testing.conformance", "-p", "no:cacheprovider", cwd=tmp_path)
    assert out.returncode != 0 and "need --nda-device=TYPE" in out.stdout + out.stderr
    (tmp_path / "test_profiles.py").write_text(
        "from hypothesis import settings\n"
        "def test_profiles():\n"
        "    assert settings.get_profile('nda-quick').max_examples == 8\n"
        "    assert settings.get_profile('nda-deep').max_examples == 200\n"
        "    assert settings().max_examples == 200\n"
    )
    out = _run("-m", "pytest", "test_profiles.py", "-p", "no:cacheprovider", "--hypothesis-profile=nda-deep", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_cli_prints_json(tmp_path):
    out = _run(
        "-m",
        "nda.testing.conformance",
        "sim",
        "--reference",
        "cpu",
        "--ops",
        "negative",
        "--dtypes",
        "float32",
        "--json",
        "-",
        "--quiet",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["reference"] == "cpu:0" and data["results"][0]["status"] == "passed" and "sim:0 against cpu" in out.stderr
    out = _run(
        "-m", "nda.testing.conformance", "mut_signed_zero", "--load", "_mutant_backends:signed_zero", "--ops", "negative", "--quiet", cwd=tmp_path
    )
    assert out.returncode == 1 and "negative(asarray(0.0, dtype=float" in out.stdout


def test_sparse_cells_run_the_degenerate_sweep():
    """Zero-size matrices and matrices storing nothing are checked on every backend's sparse cells, whatever
    Hypothesis draws (cuSPARSE corrupted device memory for a (1, 0) csr subtraction on an H200)."""
    from hypothesis import settings

    from nda.testing.conformance._cases import degenerate_sweep
    from nda.testing.conformance._kit import Cell, Runner

    cases = degenerate_sweep("subtract", nda.float64)
    firsts = [c.arrays()[0].base for c in cases]
    assert {(1, 0), (0, 3), (0, 0), (2, 3)} <= {a.shape for a in firsts} and any(a.size and not a.any() for a in firsts)
    runner = Runner("cpu", "reference", settings=settings(max_examples=1, database=None, deadline=None))
    result = runner.run_cell(Cell("subtract", nda.float64, nda.Layout("csr"), "native"))
    assert result.status == "passed" and result.examples >= len(cases), result
    assert degenerate_sweep("exp", nda.float64) and degenerate_sweep("take", nda.float64) == []


def test_complex_pow_infinite_parts_whose_sign_the_phase_does_not_fix_pass_either_way():
    """``(0.5 + 16777216j) ** 100`` in complex64: NumPy's ``inf + inf j`` comes from glibc's ``atan2f``
    rounding the argument up to float32's pi/2; a correctly rounded one gives ``inf - inf j`` (the
    CuPy model did, drawn by hypothesis in one test order). The kit takes either sign there, and
    only there: a phase far from a multiple of pi/2 keeps its sign."""
    from nda.testing.conformance._cases import Arr, Case
    from nda.testing.conformance._tolerances import undetermined_signs

    expected = np.array([complex(np.inf, np.inf)], np.complex64)
    flipped = np.array([complex(np.inf, -np.inf)], np.complex64)
    near = Case("pow", (complex(0.5, 16777216), Arr(np.array([100 + 0j], np.complex64))))
    np.testing.assert_array_equal(undetermined_signs(near, flipped, expected), expected)
    far = Case("pow", (complex(0.5, 1.0), Arr(np.array([1000 + 0j], np.complex64))))
    np.testing.assert_array_equal(undetermined_signs(far, flipped, expected), flipped)
    other = Case("multiply", (Arr(np.array([1j], np.complex64)), Arr(np.array([1j], np.complex64))))
    np.testing.assert_array_equal(undetermined_signs(other, flipped, expected), flipped)
