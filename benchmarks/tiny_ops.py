"""Tiny-op latency: nda against NumPy (and PyTorch when installed), measured in one run.

Each case is timed for every library in alternating rounds (this machine is noisy: two
shared cores), and the table reports the median per-call time of the rounds and the
ratio nda / peer. Run it with::

    python benchmarks/tiny_ops.py            # full: 15 rounds
    python benchmarks/tiny_ops.py --quick    # 5 rounds
    python benchmarks/tiny_ops.py --json out.json

The project's budget for a tiny op (two float32 arrays of shape (4,)) is at most 2x
NumPy's own time. Speed is only ever reported here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import timeit
from typing import Any, Callable

import numpy as np

import nda


def _cases() -> list[tuple[str, dict[str, Callable[[], Any]]]]:
    a_np = np.arange(4, dtype=np.float32)
    b_np = np.ones(4, dtype=np.float32)
    c_np = np.full(4, 2.0, dtype=np.float32)
    m_np = np.ones((4, 4), dtype=np.float32)
    a, b, c, m = (nda.asarray(v) for v in (a_np, b_np, c_np, m_np))
    libs: dict[str, tuple[Any, ...]] = {"numpy": (np, a_np, b_np, c_np, m_np), "nda": (nda, a, b, c, m)}
    try:
        import torch

        torch.set_num_threads(1)
        libs["torch"] = (torch, *(torch.from_numpy(v.copy()) for v in (a_np, b_np, c_np, m_np)))
    except ImportError:
        pass

    def per_lib(make: Callable[..., Callable[[], Any]]) -> dict[str, Callable[[], Any]]:
        return {name: make(*vals) for name, vals in libs.items()}

    def inplace(mod: Any, x: Any, y: Any, z: Any, w: Any) -> Callable[[], Any]:
        target = x * 1  # a private copy, so repeated += stays finite and untouched by other cases

        def run() -> Any:
            nonlocal target
            target += y
            return target

        return run

    return [
        ("x + y", per_lib(lambda mod, x, y, z, w: lambda: x + y)),
        ("x * y + z", per_lib(lambda mod, x, y, z, w: lambda: x * y + z)),
        ("x + 1.0", per_lib(lambda mod, x, y, z, w: lambda: x + 1.0)),
        ("sum(x)", per_lib(lambda mod, x, y, z, w: lambda: mod.sum(x))),
        ("4x4 matmul", per_lib(lambda mod, x, y, z, w: lambda: w @ w)),
        ("x[1:3]", per_lib(lambda mod, x, y, z, w: lambda: x[1:3])),
        ("x += y", per_lib(inplace)),
    ]


def _time_per_call(fn: Callable[[], Any], number: int) -> float:
    return timeit.timeit(fn, number=number) / number


def run(rounds: int, number: int) -> dict[str, Any]:
    results: dict[str, dict[str, float]] = {}
    cases = _cases()
    for i, (label, fns) in enumerate(cases, 1):
        samples: dict[str, list[float]] = {name: [] for name in fns}
        for fn in fns.values():  # warm caches (dispatch resolution, torch's first call)
            _time_per_call(fn, 100)
        for _ in range(rounds):
            for name, fn in fns.items():  # alternate libraries within each round
                samples[name].append(_time_per_call(fn, number))
        results[label] = {name: statistics.median(vals) for name, vals in samples.items()}
        print(f"  [{i}/{len(cases)}] {label}", file=sys.stderr, flush=True)
    return {
        "machine": {
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
        },
        "rounds": rounds,
        "calls_per_round": number,
        "seconds_per_call": results,
    }


def table(report: dict[str, Any]) -> str:
    rows = report["seconds_per_call"]
    peers = [p for p in ("numpy", "torch") if any(p in r for r in rows.values())]
    header = f"{'case':<12} {'nda':>9}" + "".join(f" {p:>9}" for p in peers) + "".join(f" {'nda/' + p:>11}" for p in peers)
    lines = [header, "-" * len(header)]
    for label, r in rows.items():
        line = f"{label:<12} {r['nda'] * 1e9:>7.0f}ns" + "".join(f" {r[p] * 1e9:>7.0f}ns" for p in peers)
        line += "".join(f" {r['nda'] / r[p]:>10.2f}x" for p in peers)
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds instead of 15")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    rounds, number = (5, 5_000) if args.quick else (15, 20_000)
    print(f"tiny-op latency, {rounds} rounds x {number} calls, median per call", file=sys.stderr)
    report = run(rounds, number)
    from nda import _execute

    report["fast paths"] = "C (nda._native)" if _execute.native is not None else "Python"
    print(f"operator fast paths: {report['fast paths']}")
    print(table(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
