"""Instructions per call of nda's tiny ops and NumPy's, counted by callgrind (load does not move them).

    python -m benchmarks.instructions [--calls N] [CASE ...]

Each case runs in a fresh interpreter under ``valgrind --tool=callgrind`` twice, with 0 and
``N`` timed calls after 300 warm ones; the difference over ``N`` is the count per call
(``OPENBLAS_NUM_THREADS=1``, ``PYTHONHASHSEED=0``). The wall-clock form of the same cases is
``python -m benchmarks.tiny_ops``; this one is what the README's instruction figures come from
when the shared machines are too loaded for timings. ``... (failed kept)`` cases run while a
failed array is still referenced (an out-of-bounds ``take`` behind pending work, as a notebook
keeps one): the fast paths look their inputs up among the engine's failed arrays then.
Without valgrind it says so and exits 0. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

#: case -> (setup, the call). ``x``, ``y``, ``z`` are float32 (4,), ``m`` float32 (4, 4); NumPy's twins ``a``, ``b``, ``c``, ``am``.
CASES = {
    "x + y": "x + y",
    "numpy a + b": "a + b",
    "x * y + z": "x * y + z",
    "numpy a * b + c": "a * b + c",
    "sum(x)": "nda.sum(x)",
    "numpy sum(a)": "np.sum(a)",
    "4x4 matmul": "m @ m",
    "numpy 4x4 matmul": "am @ am",
    "x + y (failed kept)": "x + y",
    "sum(x) (failed kept)": "nda.sum(x)",
}

_CHILD = """
import sys
import numpy as np
import nda
x = nda.asarray(np.ones(4, np.float32)) + 0
y = nda.asarray(np.ones(4, np.float32)) + 0
z = x * 2.0
m = nda.asarray(np.ones((4, 4), np.float32)) + 0
a, b, c, am = np.ones(4, np.float32), np.ones(4, np.float32), np.ones(4, np.float32), np.ones((4, 4), np.float32)
if {failed}:
    big = nda.ones((2000, 1000))
    kept = nda.take((big * 2 + 1).reshape(-1), nda.asarray([10**8]))
    try:
        kept.wait_to_read()
    except IndexError:
        pass
fn = lambda: {call}
for _ in range(300):
    fn()
for _ in range({n}):
    fn()
"""


def count(case: str, n: int) -> int:
    """Instructions callgrind counts for the case's child with ``n`` timed calls."""
    code = _CHILD.format(failed="failed kept" in case, call=CASES[case], n=n)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    found = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    match = re.search(r"Collected : (\d+)", found.stderr)
    if found.returncode != 0 or match is None:
        raise RuntimeError(f"{case}: the child failed under callgrind:\n{found.stderr[-2000:]}")
    return int(match.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help=f"cases to count (default: all): {', '.join(CASES)}")
    parser.add_argument("--calls", type=int, default=3000, help="timed calls per count (default 3000)")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: no instruction counts (python -m benchmarks.tiny_ops times the same cases)")
        return 0
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; the cases are: {', '.join(CASES)}")
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    print(f"instructions per call, callgrind, {args.calls} calls after 300 warm ones")
    for case in args.cases or list(CASES):
        per_call = (count(case, args.calls) - count(case, 0)) / args.calls
        print(f"  {case:<24} {per_call:>10,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
