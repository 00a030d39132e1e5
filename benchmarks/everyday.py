"""Section (12): what a NumPy user does every day, against NumPy on the same arrays (issue 37).

* ``sort`` of 1M float32 against NumPy's default sort (``kind="quicksort"``: an introsort with
  SIMD sorting networks where the CPU has them). nda's cpu kernel sorts the same way and then
  repairs the two places where the stable sort's values can differ (``-0.0``/``0.0`` and NaN
  bit patterns, ``nda.backends.cpu_sort``), so ``stable=True`` (the Array API's default) and
  ``stable=False`` cost the same. An input with 1% each of ``0.0``, ``-0.0`` and NaN is timed
  too, without a target: its repair reads the input twice more and gathers the originals. ``argsort(stable=False)`` against ``np.argsort``. Target <= 1.5x.
* a boolean mask over 1M float32 (half True) against NumPy's ``a[m]``. Target <= 1.2x.
* iterating over the rows of an array (``for row in x``) against NumPy's, per row: 1000 x 8
  float32 rows (views), and the elements of a 1-D array (nda gives 0-d arrays, NumPy its
  scalars: no target there). Target <= 3x for rows.

Each case alternates the libraries inside every round and reports medians and their ratio
(the machines are shared and noisy: instruction counts under ``valgrind --tool=callgrind``
confirm the ratios where timings wander, see the README's Performance section).

    python -m benchmarks.everyday [--quick] [--json PATH]
"""

from __future__ import annotations

from typing import Any

import numpy as np

import nda

from ._timing import alternate

N = 1_000_000

#: (case, target ratio nda/numpy or None)
TARGETS = {
    "sort 1M float32": 1.5,
    "sort 1M float32, stable=False": 1.5,
    "np.sort(nda array) 1M float32": 1.5,
    "sort 1M float32 with zeros and NaNs": None,
    "argsort 1M float32, stable=False": 1.5,
    "boolean mask over 1M float32": 1.2,
    "rows of a 1000 x 8 float32 array": 3.0,
    "elements of a 1000 float32 array": None,
}


def run(rounds: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(0)
    a = rng.random(N, dtype=np.float32)
    x = nda.asarray(a)
    special = a.copy()
    special[rng.integers(0, N, N // 100)] = 0.0
    special[rng.integers(0, N, N // 100)] = -0.0
    special[rng.integers(0, N, N // 100)] = np.nan
    xs = nda.asarray(special)
    m = a > 0.5
    xm = nda.asarray(m)
    rows = rng.random((1000, 8), dtype=np.float32)
    xrows = nda.asarray(rows)
    flat = rng.random(1000, dtype=np.float32)
    xflat = nda.asarray(flat)

    def each(it: Any) -> None:
        for _ in it:
            pass

    cases: dict[str, dict[str, Any]] = {
        "sort 1M float32": {"numpy": lambda: np.sort(a), "nda": lambda: nda.sort(x).wait_to_read()},
        "sort 1M float32, stable=False": {"numpy": lambda: np.sort(a), "nda": lambda: nda.sort(x, stable=False).wait_to_read()},
        "np.sort(nda array) 1M float32": {"numpy": lambda: np.sort(a), "nda": lambda: np.sort(x).wait_to_read()},
        "sort 1M float32 with zeros and NaNs": {"numpy": lambda: np.sort(special), "nda": lambda: nda.sort(xs).wait_to_read()},
        "argsort 1M float32, stable=False": {"numpy": lambda: np.argsort(a), "nda": lambda: nda.argsort(x, stable=False).wait_to_read()},
        "boolean mask over 1M float32": {"numpy": lambda: a[m], "nda": lambda: x[xm].wait_to_read()},
        "rows of a 1000 x 8 float32 array": {"numpy": lambda: each(rows), "nda": lambda: each(xrows)},
        "elements of a 1000 float32 array": {"numpy": lambda: each(flat), "nda": lambda: each(xflat)},
    }
    per_call = {"rows of a 1000 x 8 float32 array": 1000, "elements of a 1000 float32 array": 1000}
    report = {}
    for name, fns in cases.items():
        number = 20 if name in per_call else 3
        found = alternate(fns, rounds, number)
        report[name] = {k: v / per_call.get(name, 1) for k, v in found.items()}
    return report


def table(report: dict[str, dict[str, float]]) -> str:
    out = ["median per call (per row for the iterations), cpu; ratio nda/numpy and the target"]
    for name, r in report.items():
        unit, scale = ("ns", 1e9) if r["numpy"] < 1e-5 else ("ms", 1e3)
        target = TARGETS.get(name)
        goal = f"target <= {target:.1f}x" if target else "no target"
        out.append(
            f"  {name:<38} numpy {r['numpy'] * scale:9.2f} {unit}   nda {r['nda'] * scale:9.2f} {unit}   "
            f"nda/numpy {r['nda'] / r['numpy']:5.2f}x   ({goal})"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m benchmarks.everyday", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    report = run(5 if args.quick else 15)
    print(table(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
