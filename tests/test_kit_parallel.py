"""The conformance kit in worker processes (``jobs``, ``--jobs``, ``--nda-jobs``) and for sparse cells.

Splitting the cells by op among processes must give the report one process gives (same
cells, statuses, examples), load the backends the parent loaded at run time, and report a
worker that dies. Sparse cells get their inputs drawn as matrices (``for_layout``), so that
few drawn cases are refused.
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
from nda.testing.conformance import _generators, _parallel
from nda.testing.conformance._cases import Arr, Case

import _mutant_backends  # noqa: F401  (loaded by spec in the workers)

HERE = os.path.dirname(os.path.abspath(__file__))


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")]))}


def test_groups_balance_native_cells_and_keep_an_ops_cells_together():
    cells = conformance.cells("sim", ops=["add", "sum", "sort", "exp", "matmul", "where"])
    parts = _parallel.groups(cells, 3)
    assert sorted(op for part in parts for op in part) == ["add", "exp", "matmul", "sort", "sum", "where"]
    weight = {p: sum(1 for c in cells if c.op in p and c.route == "native") for p in map(tuple, parts)}
    assert max(weight.values()) - min(weight.values()) <= max(sum(1 for c in cells if c.op == op and c.route == "native") for op in ("add", "sum"))
    assert len(_parallel.groups(cells, 50)) == 6  # never more workers than ops


def test_workers_give_the_report_one_process_gives():
    ops, dtypes = ["add", "sum", "sort", "negative"], ["int8", "float32"]
    serial = conformance.run("sim", reference="cpu", ops=ops, dtypes=dtypes)
    parallel = conformance.run("sim", reference="cpu", ops=ops, dtypes=dtypes, jobs=2)
    assert parallel.environment["jobs"] == 2 and serial.environment["jobs"] == 1
    assert [(r.id, r.status, r.examples) for r in parallel.results] == [(r.id, r.status, r.examples) for r in serial.results]
    assert parallel.ok


def test_workers_load_runtime_backends_and_report_their_failures():
    if not nda.backends.serves("mut_int8_add"):
        nda.backends.load("_mutant_backends:int8_add")
    report = conformance.run("mut_int8_add", ops=["add", "multiply"], dtypes=["int8", "int16"], jobs=2)
    assert [r.id for r in report.failures] == ["add-int8-strided"]
    failure = report.failures[0]
    assert failure.example.startswith("add(") and "not equal" in failure.error and failure.found_by in ("hypothesis", "edge sweep")


def test_a_dying_worker_is_an_error_with_its_output(monkeypatch):
    monkeypatch.setattr(_parallel, "runtime_loads", lambda: ["no_such_module_for_nda:backend"])
    with pytest.raises(RuntimeError, match=r"a conformance worker \(ops .*\) exited with \d+:(.|\n)*no_such_module_for_nda"):
        conformance.run("sim", reference="cpu", ops=["add", "sum"], dtypes=["int8"], jobs=2)


def _loaded(name: str) -> str:
    if not nda.backends.serves(f"mut_{name}"):
        nda.backends.load(f"_mutant_backends:{name}")
    return f"mut_{name}"


def test_isolated_workers_give_the_report_one_process_gives():
    ops, dtypes = ["add", "sum", "negative"], ["int8", "float32"]
    serial = conformance.run("sim", reference="cpu", ops=ops, dtypes=dtypes)
    isolated = conformance.run("sim", reference="cpu", ops=ops, dtypes=dtypes, jobs=2, isolate=True)
    assert isolated.environment["isolate"] is True and isolated.environment["jobs"] == 2
    assert [(r.id, r.status, r.examples) for r in isolated.results] == [(r.id, r.status, r.examples) for r in serial.results]


def test_an_op_that_leaves_the_device_unusable_fails_only_its_cells_when_isolated(monkeypatch):
    """One process: every cell after the corrupting op fails too (the H200's 14-job deep run); one op per process: its own cells only."""
    device = _loaded("corrupting")
    monkeypatch.setenv("NDA_MUTANT_ARMED", "1")
    try:
        serial = conformance.run(device, ops=["add", "exp", "negative"], dtypes=["float64"])
        assert [r.op for r in serial.failures] == ["exp", "negative"]  # negative runs after exp in the same process
        isolated = conformance.run(device, ops=["add", "exp", "negative"], dtypes=["float64"], jobs=3, isolate=True)
        assert [r.op for r in isolated.failures] == ["exp"]
    finally:
        _mutant_backends.corrupting.lost = False


def test_an_isolated_worker_that_dies_or_hangs_fails_its_cells_and_the_run_goes_on(monkeypatch):
    monkeypatch.setenv("NDA_MUTANT_ARMED", "1")
    exits = conformance.run(_loaded("process_exit"), ops=["add", "exp"], dtypes=["float64", "int8"], jobs=2, isolate=True)
    assert [r.id for r in exits.failures] == ["exp-float64-strided"]
    assert "the worker process of op 'exp' exited with 86" in exits.failures[0].error
    assert [r.status for r in exits.results if r.op == "add"] == ["passed", "passed"]
    hangs = conformance.run(_loaded("hang"), ops=["exp"], dtypes=["float64"], isolate=True, worker_timeout=15)
    assert [r.id for r in hangs.failures] == ["exp-float64-strided"] and "ran past 15 s and was killed" in hangs.failures[0].error
    late = conformance.run(_loaded("hang"), ops=["add", "exp"], dtypes=["float64"], jobs=1, isolate=True, deadline=1)
    assert [r.status for r in late.results] == ["not covered", "not covered"] and "deadline (1 s) passed" in late.results[0].reason


def test_auto_jobs_stay_one_for_small_runs_and_follow_nda_kit_jobs(monkeypatch):
    few = conformance.cells("sim", ops=["add"])
    monkeypatch.delenv("NDA_KIT_JOBS", raising=False)
    assert conformance.auto_jobs(few) == 1
    monkeypatch.setenv("NDA_KIT_JOBS", "3")
    assert conformance.auto_jobs(few) == 3 and _parallel.default_jobs() == 3


def test_cli_and_plugin_take_jobs(tmp_path):
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "nda.testing.conformance",
            "sim",
            "--reference",
            "cpu",
            "--ops",
            "add,exp,sum",
            "--dtypes",
            "int8,float32",
            "--jobs",
            "2",
            "--json",
            str(tmp_path / "r.json"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["environment"]["jobs"] == 2 and data["summary"]["passed"] == 7
    plugin = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "nda.testing.conformance",
            "--nda-device=sim",
            "--nda-reference=cpu",
            "--nda-ops=add,exp,sum",
            "--nda-dtypes=int8,float32",
            "--nda-jobs=2",
            "-k",
            "not exp-float32",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--nda-report={tmp_path / 'p.json'}",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    assert "6 passed, 1 deselected" in plugin.stdout, plugin.stdout
    report = json.loads((tmp_path / "p.json").read_text())
    assert report["environment"]["jobs"] == 2 and len(report["results"]) == 6


def test_sparse_cells_get_matrices():
    case = Case("negative", (Arr(np.arange(3, dtype=np.int8), "reverse"),))
    strategy = _generators.for_layout(_generators.strategy("negative", nda.int8), nda.int8, nda.Layout("csr"))
    assert _generators.for_layout(strategy, nda.int8, nda.Layout("strided")) is strategy
    matrix = _generators._matrix(case.args[0], nda.int8)
    assert matrix.base.shape == (1, 3) and matrix.view == "reverse"
    assert _generators._matrix(Arr(np.zeros((2, 2), np.int8)), nda.int8).base.shape == (2, 2)
    assert _generators._matrix(Arr(np.zeros(2, np.int16)), nda.int8).base.shape == (2,)  # not the cell's dtype: as drawn
