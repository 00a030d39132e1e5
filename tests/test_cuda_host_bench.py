"""The null-CuPy benchmark of nda-cuda's host cost (``benchmarks/cuda_host.py``) runs, and its
timed ops go through nda-cuda's own paths.

Not a speed test (timings are never asserted): the benchmark runs in quick mode in a process
of its own over ``benchmarks/_null_cupy`` (a fake ``cupy`` used by that process only), with
``nda.config.fallback = "error"``; this checks that each case took nda-cuda's generated
element-wise kernels and recorded no marker (CUDA event) where the host does not wait.
"""

from __future__ import annotations

import importlib.util
import sys

from benchmarks import cuda_host


def test_the_null_cupy_benchmark_runs_nda_cuda_paths():
    # The threaded engine's paths, whatever engine the suite runs on (the naive engine waits for
    # every op: a marker each, by design).
    report = cuda_host.run(quick=True, profile=True, timeout=300, engine="threaded")
    paths = report["paths"]
    assert paths["x + y"] == {"launches": 1, "markers": 0, "ops": 1}
    assert paths["x * y + z"] == {"launches": 2, "markers": 0, "ops": 2}
    # two ops and the read's copy in queue order (a number, no marker)
    assert paths["float(sum(x + y))"] == {"launches": 1, "markers": 0, "ops": 3}
    assert paths["chain 200 ops + read"] == {"launches": 200, "markers": 0, "ops": 202}
    assert report["launches"]["add"] > 0 and report["launches"]["multiply"] > 0
    assert report["sources"]["sum"].endswith("sum_small")  # nda-cuda's small reductions
    for case in paths:
        assert report["us"][f"cuda {case}"] > 0 and report["us"][f"cpu {case}"] > 0
    assert any(row["function"].startswith("nda_cuda/") for row in report["profile"]["x + y"])
    assert "nda-cuda host cost" in cuda_host.render(report)


def test_the_null_cupy_is_not_importable_by_default():
    """The fake lives under benchmarks/_null_cupy and is never on the path by itself."""
    spec = importlib.util.find_spec("cupy")
    assert spec is None or "_null_cupy" not in (spec.origin or "")
    assert all("_null_cupy" not in p for p in sys.path)
