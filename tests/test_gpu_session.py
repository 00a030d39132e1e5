"""``benchmarks/gpu_session.sh``, the one device call that runs everything nda owes a GPU, and its summary.

The script itself needs a GPU machine (it installs nda there); here: it is valid bash, it
runs every step the issue asks for with its own time limit (the correctness steps side by side,
the deep kit one op per process, then the benchmarks alone), and its summary (``benchmarks.gpu_session_summary``) puts the speed tables,
the failing cells and one line per step at the end of the output, which is the part the
device tool returns.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

from benchmarks import gpu_session_summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "gpu_session.sh")


def test_the_script_is_valid_bash_and_runs_each_step_under_its_own_limit():
    assert subprocess.run(["bash", "-n", SCRIPT], capture_output=True, text=True).returncode == 0
    text = open(SCRIPT, encoding="utf-8").read()
    for needed in (
        "tests/test_cuda.py",
        "tests/test_cuda_h200.py",
        "tests/test_cuda_h200_1128.py",
        'STEPS="confirm"',
        "tests/test_cuda_elementwise.py",
        "tests/test_cuda_queues.py",
        "tests/test_cuda_reductions.py",
        "tests/test_random.py",
        "benchmarks.gpu_elementwise_check",
        "--profile deep --isolate",
        '--jobs "$JOBS"',
        "--worker-timeout",
        "--deadline",
        "--gradients",
        "python3 -m benchmarks.gpu ",
        "python3 -m benchmarks.fusion",
        "python3 -m benchmarks.gpu_session_summary",
        'tar -czf "$OUT/logs.tar.gz"',
    ):
        assert needed in text, needed
    assert re.search(r"^JOBS=\$\{JOBS:-8\}$", text, re.M)
    assert len(re.findall(r"^\s*\(? ?step \S+ ", text, re.M)) == 13  # every command runs through step (timeout, budget, record)
    assert re.search(r"^STEPS=\$\{STEPS:-\"tests kit deep gradients elementwise bench\"\}$", text, re.M)
    # the benchmarks run alone: after every correctness step has been waited for
    assert text.index('for pid in $PIDS; do wait "$pid"; done') < text.index("step bench-gpu")
    assert "timeout -k 10" in text


def _kit_report(results: list[dict]) -> dict:
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {"device": "cuda:0", "results": results, "summary": counts, "seconds": 12.0}


def test_the_summary_ends_with_the_steps_after_the_speed_tables_and_the_failures(tmp_path):
    logs = tmp_path
    (logs / "steps.txt").write_text(
        "tests|1|50|tests.txt\nkit|1|40|kit-quick.txt\ndeep|124|230|kit-deep.txt\n"
        "gradients|0|60|kit-gradients.txt\nbench-gpu|0|70|bench-gpu.txt\nbench-fusion|skipped|0|bench-fusion.txt\n"
    )
    (logs / "tests.txt").write_text(
        "FAILED tests/test_cuda.py::test_markers - AssertionError: blocked\n== 1 failed, 90 passed, 3 skipped in 50.1s ==\n"
    )
    failing = {
        "op": "subtract",
        "dtype": "float64",
        "layout": "csr",
        "status": "failed",
        "found_by": "degenerate sweep",
        "example": "subtract(empty((1, 0), dtype=float64), empty((1, 0), dtype=float64))",
        "error": "cuda:0 raised RuntimeError: illegal address\n  at (0, 0): actual 1, desired 2",
    }
    (logs / "kit-quick.json").write_text(
        json.dumps(_kit_report([failing] + [{"op": "add", "dtype": "int8", "layout": "strided", "status": "passed"}] * 3))
    )
    (logs / "kit-deep.json").write_text(json.dumps(_kit_report([{"op": "exp", "dtype": "float32", "layout": "strided", "status": "not covered"}])))
    (logs / "kit-gradients.json").write_text(json.dumps(_kit_report([{"op": "exp", "dtype": "float32", "layout": "gradient", "status": "passed"}])))
    (logs / "bench-gpu.txt").write_text("NVIDIA H200\n  add  cupy 0.334 ms   nda 0.344 ms\n")
    (logs / "bench-gpu.json").write_text(json.dumps({"device": "NVIDIA H200"}))
    text = gpu_session_summary.summary(str(logs))
    speed, failures, steps = text.index("= speed"), text.index("= failures"), text.index("= steps")
    assert speed < failures < steps
    assert "nda 0.344 ms" in text[speed:failures]
    assert "subtract  " in text[failures:steps] and "degenerate sweep" in text and "actual 1, desired 2" in text
    assert "FAILED tests/test_cuda.py::test_markers" in text[failures:steps]
    lines = text[steps:].splitlines()[1:]
    assert [line.split()[1] for line in lines] == ["tests", "kit", "deep", "gradients", "bench-gpu", "bench-fusion"]
    assert "1 failed, 90 passed, 3 skipped in 50.1s" in lines[0] and "3 passed, 1 failed, 0 fallback, 0 not covered" in lines[1]
    assert lines[2].startswith("FAIL") and "1 not covered" in lines[2] and lines[3].startswith("ok")
    assert lines[4].startswith("ok") and lines[4].endswith("ok") and "time budget was spent" in lines[5]


def test_the_tune_step_sweeps_the_generators_launch_settings_and_measures_flushing():
    text = open(SCRIPT, encoding="utf-8").read()
    assert "python3 -m benchmarks.gpu --sweep" in text and "NDA_CUDA_CODEGEN_FTZ=1 python3 -m benchmarks.gpu --elementwise" in text
    assert 'STEPS=${STEPS:-"tests kit deep gradients elementwise bench"}' in text  # not in the default set: one call of its own


def test_the_launch_sweep_runs_each_setting_and_restores_the_defaults(monkeypatch):
    """On the generated kernels compiled as host C++ (``cudagen``): each knob's values are timed, the
    best of each is combined, the results stay right under every setting, the defaults come back."""
    import numpy as np

    import nda
    from benchmarks import gpu

    if not nda.backends.serves("cudagen"):
        nda.backends.load("_cuda_numpy_mirror:codegen_backend")
    generator = nda.backends.for_device(nda.Device("cudagen", 0)).generator
    before = (generator.settings.unroll, generator.settings.threads, generator.settings.blocks_per_sm)
    monkeypatch.setattr(gpu, "SWEEP", {"unroll": (1, 2, 4), "threads": (8, 16), "blocks_per_sm": (2, 3)})
    seen = []
    launch = generator.compiler.launch

    def recorded(fn, blocks, threads, args):
        seen.append((generator.settings.unroll, threads, generator.settings.blocks_per_sm))
        return launch(fn, blocks, threads, args)

    monkeypatch.setattr(generator.compiler, "launch", recorded)
    result = gpu.launch_sweep(1, n=1000, ops=("add",), device="cudagen")
    assert set(result["cases"]) == {"float32 add", "float64 add"}
    for case in result["cases"].values():
        assert len(case["times"]) >= 4 and case["best"] in case["times"]
    assert {s[0] for s in seen} >= {1, 2, 4} and {s[1] for s in seen} >= {8, 16}
    assert (generator.settings.unroll, generator.settings.threads, generator.settings.blocks_per_sm) == before
    x = nda.asarray(np.arange(1000, dtype=np.float32), device="cudagen")
    np.testing.assert_array_equal((x + x).asnumpy(), 2 * np.arange(1000, dtype=np.float32))
    assert "fastest" in gpu.sweep_table(result)
