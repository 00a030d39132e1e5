"""nda against NumPy, PyTorch and CuPy, measured side by side in one process.

    python -m benchmarks                 # full run
    python -m benchmarks --quick         # a few minutes at most (CI runs this as a smoke test)
    python -m benchmarks --json out.json # also write every figure as JSON

Sections: (1) tiny-op latency, (2) where the time of a tiny op goes (null kernel on a
test device), (3) large arrays, (4) engine concurrency and mid-size ops, (5) import time, (6) GPU against
CuPy when present, (7) memory per array and RSS over many tiny ops, (8) a csr matrix
(100000 x 100000, 1M non-zeros) times a strided block against SciPy, with peak RSS, (9) the
engine on a device with an in-order queue (nda-sim: a dependent chain threaded vs inline, two
devices vs one), (10) fused chains (``nda.hybridize``: ``a * b + c`` and a GELU on 16M float32
against eager nda, NumPy and numexpr on cpu; CuPy, PyTorch eager and torch.compile on a GPU),
(11) ``nda.random`` on cpu against NumPy's ``Generator`` (1M values; ``cupy.random`` is in (6)),
(12) everyday NumPy work against NumPy: sort and argsort of 1M float32, a boolean mask over 1M,
iterating over the rows of an array (``benchmarks/everyday.py``), (13) two 1200 x 1200 matmuls
on inputs that share NumPy's memory against ``copy=True`` inputs and NumPy: time to issue and to
complete (``benchmarks/shared.py``).
Every comparison
alternates the libraries inside each round and reports the median of the rounds, because
these machines are noisy. Nothing here asserts a time: targets are printed next to the
figures, and misses are explained in the README's Performance section.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

import nda

from . import engine as engine_bench
from . import everyday as everyday_bench
from . import fusion as fusion_bench
from ._timing import alternate
from . import gpu as gpu_bench
from . import rng as rng_bench
from . import shared as shared_bench
from . import sim as sim_bench
from . import sparse as sparse_bench
from . import tiny_ops


def _progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- (2) overhead


def overhead(rounds: int, number: int) -> dict[str, float]:
    """Per-op cost of nda's layers, from a null kernel on the ``nullbench`` device."""
    from nda.engine.threaded import ThreadedEngine

    from ._null_backend import null_add

    nda.backends.load("benchmarks._null_backend:backend")
    host = np.ones(4, dtype=np.float32)
    x = nda.asarray(host, device="nullbench")
    y = nda.asarray(host, device="nullbench")
    table = nda.dispatch.table("add")
    x + y  # resolve once
    cx, cy = nda.asarray(host), nda.asarray(host)
    previous = nda.engine.current()

    def uncached() -> Any:
        nda.dispatch.invalidate()
        return x + y

    results = alternate(
        {
            "null kernel called directly": lambda: null_add(host, host),
            "dispatch lookup (cached)": lambda: table.resolved.get(x._meta.key),
            "x + y, null kernel (front end + dispatch + inline engine)": lambda: x + y,
            "x + y, numpy kernel on cpu": lambda: cx + cy,
        },
        rounds,
        number,
    )
    results["x + y, cache cleared each call (planning + resolution)"] = alternate({"u": uncached}, rounds, max(1, number // 20))["u"]
    nda.engine.use(ThreadedEngine(inline_limit=0))
    try:
        results["x + y, null kernel as an engine task (dependency tracking)"] = alternate({"t": lambda: x + y}, rounds, max(1, number // 10))["t"]
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")
    results["numpy a + b"] = alternate({"n": lambda: host + host}, rounds, number)["n"]
    return results


# --------------------------------------------------------------------------- (3) large arrays


def large(rounds: int) -> dict[str, dict[str, float]]:
    n = 16 * 1024 * 1024
    a_np = np.random.default_rng(0).random(n, dtype=np.float32)
    b_np = np.random.default_rng(1).random(n, dtype=np.float32)
    a, b = nda.asarray(a_np), nda.asarray(b_np)
    cases = {
        "add": ({"numpy": lambda: a_np + b_np, "nda": lambda: (a + b).wait_to_read()}),
        "exp": ({"numpy": lambda: np.exp(a_np), "nda": lambda: nda.exp(a).wait_to_read()}),
        "sum": ({"numpy": lambda: np.sum(a_np), "nda": lambda: nda.sum(a).wait_to_read()}),
    }
    try:
        import torch

        ta, tb = torch.from_numpy(a_np), torch.from_numpy(b_np)
        cases["add"]["torch"] = lambda: ta + tb
        cases["exp"]["torch"] = lambda: torch.exp(ta)
        cases["sum"]["torch"] = lambda: torch.sum(ta)
    except ImportError:
        pass
    return {name: alternate(fns, rounds, 3) for name, fns in cases.items()}


# --------------------------------------------------------------------------- (5) import time


def import_time(rounds: int) -> dict[str, float]:
    """``import numpy`` and ``import nda`` in fresh interpreters, with bytecode caches as users have them.

    ``PYTHONDONTWRITEBYTECODE`` (set in some sandboxes) would make every run compile nda from
    source, so it is dropped, and one warm-up run per module writes the caches.
    """
    code = "import time; t = time.perf_counter(); import {m}; print(time.perf_counter() - t)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    samples: dict[str, list[float]] = {"numpy": [], "nda": []}
    for warm in (True, *[False] * rounds):
        for module in samples:
            out = subprocess.run([sys.executable, "-c", code.format(m=module)], capture_output=True, text=True, check=True, env=env)
            if not warm:
                samples[module].append(float(out.stdout.strip()))
    return {k: statistics.median(v) for k, v in samples.items()}


# --------------------------------------------------------------------------- (6) GPU


def gpu(rounds: int, quick: bool = False) -> dict[str, Any]:
    """nda on cuda against raw CuPy (``benchmarks/gpu.py``); skipped with the reason without a GPU."""
    return gpu_bench.run(rounds, quick)


# --------------------------------------------------------------------------- (7) memory


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory(ops: int) -> dict[str, float]:
    import tracemalloc

    x = nda.ones(4, dtype=nda.float32)
    y = nda.ones(4, dtype=nda.float32)
    a = np.ones(4, dtype=np.float32)
    n = 20_000
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    keep_nda = [x + y for _ in range(n)]
    per_nda = (tracemalloc.get_traced_memory()[0] - before) / n
    del keep_nda
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    keep_np = [a + a for _ in range(n)]
    per_np = (tracemalloc.get_traced_memory()[0] - before) / n
    del keep_np
    tracemalloc.stop()
    gc.collect()
    for _ in range(ops // 10):
        x + y
    start = _rss()
    for _ in range(ops):
        x + y
    gc.collect()
    end = _rss()
    return {
        "bytes per (4,) float32 array, nda": per_nda,
        "bytes per (4,) float32 array, numpy": per_np,
        f"RSS growth over {ops:,} tiny ops (bytes)": float(end - start),
    }


# --------------------------------------------------------------------------- report


def _ns(t: float) -> str:
    return f"{t * 1e9:8.0f} ns"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds: a few minutes at most")
    parser.add_argument("--json", metavar="PATH", help="write all figures as JSON")
    args = parser.parse_args(argv)
    quick = args.quick
    rounds = 5 if quick else 15
    started = time.perf_counter()
    report: dict[str, Any] = {
        "machine": {
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
        },
        "quick": quick,
    }
    print(f"nda benchmarks ({'quick' if quick else 'full'}) on {report['machine']['platform']}, {os.cpu_count()} cores", file=sys.stderr)

    _progress("[1/13] tiny-op latency")
    report["tiny"] = tiny_ops.run(rounds, 5_000 if quick else 20_000)
    _progress("[2/13] where the time of a tiny op goes")
    report["overhead"] = overhead(rounds, 5_000 if quick else 20_000)
    _progress("[3/13] large arrays (16M float32)")
    report["large"] = large(3 if quick else 7)
    _progress("[4/13] engine: two chains of 8 ops on 8M float64, tiny and mid-size ops per engine")
    report["concurrency"] = engine_bench.concurrency(2 if quick else 5)
    report["engine_tiny"] = engine_bench.tiny_latency(rounds, 5_000 if quick else 20_000)
    report["engine_midsize"] = engine_bench.midsize(3 if quick else 9)
    report["host_read_check"] = engine_bench.host_read_check(rounds, 5_000 if quick else 20_000)
    _progress("[5/13] import time")
    report["import"] = import_time(5 if quick else 15)
    _progress("[6/13] GPU")
    report["gpu"] = gpu(rounds, quick)
    _progress("[7/13] memory")
    report["memory"] = memory(200_000 if quick else 1_000_000)
    _progress("[8/13] sparse: csr @ strided against scipy (child processes)")
    report["sparse"] = sparse_bench.run(7 if quick else 21)
    _progress("[9/13] a device with an in-order queue (nda-sim)")
    report["sim"] = sim_bench.run(3 if quick else 9)
    _progress("[10/13] fused chains: nda.hybridize on 16M float32 (a * b + c, GELU)")
    report["fusion"] = fusion_bench.run(3 if quick else 9)
    _progress("[11/13] random numbers: nda.random against NumPy's Generator (1M values)")
    report["random"] = rng_bench.run(5 if quick else 15)
    _progress("[12/13] everyday work against NumPy: sort, a boolean mask, iterating over rows")
    report["everyday"] = everyday_bench.run(5 if quick else 15)
    _progress("[13/13] heavy ops on memory NumPy shares: two 1200x1200 matmuls, issue and completion")
    report["shared"] = shared_bench.run(3 if quick else 9)
    report["seconds"] = time.perf_counter() - started

    print(_format(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
        print(f"\nwrote {args.json}")
    return 0


def _format(report: dict[str, Any]) -> str:
    out = ["\n== (1) tiny ops, float32 (4,): median per call; target nda/numpy <= 2x"]
    out.append(tiny_ops.table(report["tiny"]))
    out.append("\n== (2) where the time of a tiny op goes (x + y, float32 (4,))")
    for name, t in report["overhead"].items():
        out.append(f"{name:<64} {_ns(t)}")
    o = report["overhead"]
    layers = o["x + y, null kernel (front end + dispatch + inline engine)"] - o["null kernel called directly"]
    out.append(f"{'=> nda layers per op (null-kernel op minus the kernel call)':<64} {_ns(layers)}")
    out.append("\n== (3) large arrays, 16M float32: median per op; target nda/numpy <= 1.02x")
    for name, r in report["large"].items():
        peers = "  ".join(f"{k} {v * 1e3:7.2f} ms" for k, v in r.items())
        out.append(f"{name:<5} {peers}   nda/numpy {r['nda'] / r['numpy']:.3f}x")
    c = report["concurrency"]
    out.append("\n== (4) engine: two independent chains of 8 exp/sin on 8M float64; target >= 1.9x")
    for name, t in c.items():
        out.append(f"{name:<24} {t:7.3f} s   speedup {c['numpy sequential'] / t:.2f}x")
    e = report["engine_tiny"]
    out.append(
        f"tiny op, threaded vs naive engine: {e['threaded'] * 1e9:.0f} ns vs {e['naive'] * 1e9:.0f} ns ({e['threaded'] / e['naive']:.2f}x; target <= 1.10x)"
    )
    out.append(engine_bench.midsize_table(report["engine_midsize"]))
    for name, t in report["host_read_check"].items():
        out.append(f"{name:<64} {_ns(t)}")
    i = report["import"]
    out.append(
        f"\n== (5) import: numpy {i['numpy'] * 1e3:.1f} ms, nda {i['nda'] * 1e3:.1f} ms (+{(i['nda'] - i['numpy']) * 1e3:.1f} ms; target <= +50 ms)"
    )
    out.append("\n== (6) GPU: nda on cuda against raw CuPy")
    out.append(gpu_bench.table(report["gpu"]))
    out.append("\n== (7) memory")
    for name, v in report["memory"].items():
        out.append(f"{name:<48} {v:12,.0f}")
    out.append("\n== (8) sparse matmul (csr layout), best of the rounds")
    out.append(sparse_bench.table(report["sparse"]))
    out.append("\n== (9) the engine on a device with an in-order queue (nda-sim)")
    out.append(sim_bench.table(report["sim"]))
    out.append("\n== (10) fused chains, 16M float32, waited for: nda.hybridize against eager nda and the peers (ratios to numpy/cupy)")
    out.append(fusion_bench.table(report["fusion"]))
    out.append("\n== (11) random numbers: nda.random (Philox4x32-10, bit-identical on every device) against NumPy's Generator")
    out.append(rng_bench.table(report["random"]))
    out.append("\n== (12) everyday work against NumPy: sort (target <= 1.5x), a boolean mask (<= 1.2x), rows (<= 3x)")
    out.append(everyday_bench.table(report["everyday"]))
    out.append("\n== (13) heavy ops on inputs sharing NumPy's memory: the call snapshots them and queues (issue 34)")
    out.append(shared_bench.table(report["shared"]))
    out.append(f"\n(total {report['seconds']:.0f} s)")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
