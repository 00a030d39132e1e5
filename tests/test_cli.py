"""``python -m nda info`` and ``python -m nda demo``: what they print and the files the demo writes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

import nda
from nda.__main__ import TIMELINE_NAME, TRACE_NAME, main


def _has_sim() -> bool:
    return any(rec["name"] == "sim" and rec["state"] != "excluded" for rec in nda.backends.status())


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


needs_sim = pytest.mark.skipif(not _has_sim(), reason="nda-sim is not installed (or excluded by NDA_BACKENDS)")


def _run(*args: str, cwd: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nda", *args], cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


# ---------------------------------------------------------------------- info
def test_info_lists_versions_engine_backends_devices_memory_and_coverage(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"nda {nda.__version__} (Array API {nda.__array_api_version__}), numpy ")
    assert "Python " in out and "engine: " in out and "matplotlib: " in out
    assert re.search(r"^  cpu +loaded +api 1\.\d+ +from nda\.backends\.cpu:backend$", out, re.M)
    assert "cpu:0" in out and "memory " in out
    counts = nda.dispatch.coverage("cpu").counts()
    assert f"coverage: {counts['native']} native, 0 host fallback, 0 missing" in out
    if _has_sim():
        sim = nda.dispatch.coverage("sim").counts()
        assert re.search(r"^  sim +loaded ", out, re.M)
        assert "sim:0" in out and "sim:1" in out and "in use " in out and "peak " in out
        assert f"coverage: {sim['native']} native, {sim['fallback']} host fallback, {sim['missing']} missing" in out


@needs_sim
def test_info_gives_the_reason_a_backend_is_unavailable_or_excluded():
    result = _run("info", NDA_SIM_DEVICES="0")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^  sim +unavailable ", result.stdout, re.M)
    assert "reason: device probe failed: RuntimeError: NDA_SIM_DEVICES is 0: no simulated device" in result.stdout
    assert re.search(r"^  cpu +loaded ", result.stdout, re.M)
    excluded = _run("info", NDA_BACKENDS="-sim")
    assert re.search(r"^  sim +excluded ", excluded.stdout, re.M) and "reason: excluded by NDA_BACKENDS='-sim'" in excluded.stdout


# ---------------------------------------------------------------------- demo
DEVICES = ["cpu:0"] + (["sim:0", "sim:1"] if _has_sim() else [])


def test_demo_checks_every_device_and_writes_the_trace_and_timeline(tmp_path, capsys):
    # --devices: other tests of this process may have loaded backends of their own at run time
    assert main(["demo", "--n", "64", "--steps", "30", "--out", str(tmp_path / "out"), "--devices", ",".join(DEVICES)]) == 0
    out = capsys.readouterr().out
    devices = DEVICES
    for device in devices:
        assert f"{device}: eigenvalue 10.000000000 (matches NumPy)" in out
    assert "matmul  (cpu, float64, strided) -> numpy.matmul" in out  # the cpu backend calls the ufunc directly
    if _has_sim():
        # every op of the iteration is native on sim: a host fallback would make the devices take turns
        assert "vecdot  (sim, float64, strided) -> nda_sim.sim_vecdot" in out and "host fallback" not in out
        assert "all 3 devices at once" in out and "every eigenvalue matches NumPy" in out
        assert re.search(r"one after another they took [0-9.]+ ms: together [0-9.]+x as fast", out)
    trace = json.loads((tmp_path / "out" / TRACE_NAME).read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["args"]["device"] for e in spans} == set(devices)
    assert {"matmul", "vecdot", "divide", "sqrt"} <= {e["name"] for e in spans}
    assert [e["name"] for e in trace["traceEvents"] if e["ph"] == "i"][: len(devices)] == [f"{d} alone" for d in devices]
    png = tmp_path / "out" / TIMELINE_NAME
    if _has_matplotlib():
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "timeline: " + str(png) in out
    else:
        assert not png.exists() and "timeline: skipped, matplotlib is not installed" in out


def test_readme_main_command_runs_in_a_fresh_process_and_writes_into_the_current_directory(tmp_path):
    result = _run("demo", cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(matches NumPy)" in result.stdout and "DIFFERS" not in result.stdout
    assert (tmp_path / TRACE_NAME).stat().st_size > 0
    assert (tmp_path / TIMELINE_NAME).exists() == _has_matplotlib()
    assert "FallbackWarning" not in result.stderr  # the demo prints the routes instead


def test_demo_without_matplotlib_skips_only_the_png(tmp_path):
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"  # as if it were not installed
        "from nda.__main__ import main\n"
        f"raise SystemExit(main(['demo', '--n', '32', '--steps', '20', '--out', {str(tmp_path)!r}]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "timeline: skipped, matplotlib is not installed (pip install 'nda[notebooks]'" in result.stdout
    assert (tmp_path / TRACE_NAME).exists() and not (tmp_path / TIMELINE_NAME).exists()


def test_demo_exit_status_reports_a_wrong_result(tmp_path, monkeypatch, capsys):
    import nda.__main__ as cli

    real_problem = cli._problem
    monkeypatch.setattr(cli, "_problem", lambda n: (real_problem(n)[0], 11.0))  # claim a wrong eigenvalue
    assert main(["demo", "--n", "32", "--steps", "20", "--out", str(tmp_path), "--devices", "cpu"]) == 1
    assert "DIFFERS FROM NumPy" in capsys.readouterr().out


def test_demo_skips_a_device_whose_backend_cannot_run_it(tmp_path, capsys):
    nda.backends.load("_toy_backend")  # a runtime backend without matmul and without host fallback
    assert main(["demo", "--n", "32", "--steps", "20", "--out", str(tmp_path), "--devices", "cpu,toy"]) == 0
    out = capsys.readouterr().out
    assert "toy:0: skipped, its backend cannot run this computation (DispatchError" in out
    assert "cpu:0: eigenvalue 10.000000000 (matches NumPy)" in out


def test_demo_names_a_missing_device_and_why(capsys):
    # Either nda-cuda is not installed, or it is and finds no GPU (CI installs it): both say why.
    reasons = "no backend for device type 'cuda' is installed|backend 'cuda' is unavailable: .+"
    with pytest.raises(SystemExit, match=f"no device 'cuda' \\(({reasons})\\); available: ") as info:
        main(["demo", "--devices", "cuda"])
    assert "cpu:0" in str(info.value)


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
