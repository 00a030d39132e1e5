"""Section (13): heavy ops on arrays that share NumPy's memory (issue 34).

``nda.asarray(numpy_array)`` on cpu shares the NumPy array's memory (``nda.engine.share``).
Two independent 1200 x 1200 float64 matmuls are issued back to back on such inputs, on
copies nda owns (``nda.asarray(a, copy=True)``), and in NumPy; for each, the time until both
calls have *returned* (issue) and until both results are *ready* (completion). A heavy op on a
shared input snapshots that input at the call and is queued like any other, so its issue time
should be that of the ``copy=True`` inputs plus the copies (about 2 x 11.5 MB per matmul here),
far below one matmul; before, each such call ran its matmul to completion before returning.

    python -m benchmarks.shared [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable

import numpy as np

import nda

N = 1200


def _one(issue: Callable[[], tuple[Any, ...]], wait: Callable[[tuple[Any, ...]], None]) -> tuple[float, float]:
    start = time.perf_counter()
    results = issue()
    issued = time.perf_counter() - start
    wait(results)
    return issued, time.perf_counter() - start


def run(rounds: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal((N, N)) for _ in range(4)]
    shared = [nda.asarray(h) for h in hosts]
    owned = [nda.asarray(h, copy=True) for h in hosts]

    def nda_issue(xs: list[nda.NDArray]) -> Callable[[], tuple[Any, ...]]:
        return lambda: (xs[0] @ xs[1], xs[2] @ xs[3])

    def nda_wait(results: tuple[Any, ...]) -> None:
        for r in results:
            r.wait_to_read()

    cases: dict[str, tuple[Callable[[], tuple[Any, ...]], Callable[[tuple[Any, ...]], None]]] = {
        "nda.asarray(np) inputs (shared)": (nda_issue(shared), nda_wait),
        "nda.asarray(np, copy=True) inputs": (nda_issue(owned), nda_wait),
        "numpy": (lambda: (hosts[0] @ hosts[1], hosts[2] @ hosts[3]), lambda results: None),
    }
    for issue, wait in cases.values():
        wait(issue())  # warm up (dispatch, BLAS threads)
    samples: dict[str, dict[str, list[float]]] = {k: {"issue": [], "completion": []} for k in cases}
    for _ in range(rounds):
        for name, (issue, wait) in cases.items():
            nda.waitall()
            issued, done = _one(issue, wait)
            samples[name]["issue"].append(issued)
            samples[name]["completion"].append(done)
    check = shared[0] @ shared[1]
    np.testing.assert_allclose(check.asnumpy(), hosts[0] @ hosts[1], rtol=1e-10, atol=1e-9)
    return {k: {m: statistics.median(v) for m, v in s.items()} for k, s in samples.items()}


def table(report: dict[str, dict[str, float]]) -> str:
    numpy = report["numpy"]["completion"]
    lines = [f"{'two 1200x1200 float64 matmuls':<36} {'issue':>10} {'completion':>12}   completion/numpy"]
    for name, r in report.items():
        lines.append(f"{name:<36} {r['issue'] * 1e3:8.2f} ms {r['completion'] * 1e3:10.2f} ms   {r['completion'] / numpy:.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.shared", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = parser.parse_args(argv)
    report = run(5 if args.quick else 15)
    print(table(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
