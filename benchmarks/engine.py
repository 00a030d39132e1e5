"""Engine benchmarks: concurrency of independent work, and tiny-op latency per engine.

(a) Two independent chains of 8 ``exp``/``sin`` ops on separate 8M-element float64 arrays,
    issued back to back and then waited, against the same work in sequential NumPy (and a
    hand-made NumPy version with a 2-thread pool, the best a user gets by hand).
    Target: >= 1.9x speedup over sequential NumPy on 2 cores (issue 29).
(b) Tiny-op latency (``x + y`` on float32 (4,)) with the threaded engine against the naive
    engine. Target: within 10%.
(d) The host-read check (issue 29, item 5): what comparing a read's buffer with the array's
    declared shape and dtype costs, against the whole ``x.asnumpy()`` of a (4,) float32 array.
(c) Mid-size ops: float32 ``x + y`` followed by ``wait_to_read()`` at 10k, 100k, 1M and 4M
    elements, on each engine, against NumPy's ``a + b``. Targets (issue 29): threaded <= 1.10x
    from 100k to 4M, <= 1.5x at 10k. The engines and NumPy take turns every round.

    python benchmarks/engine.py [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import timeit
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

import nda

N = 8 * 1024 * 1024
STEPS = 8


def chain_numpy(a: np.ndarray) -> np.ndarray:
    for i in range(STEPS):
        a = np.exp(a) if i % 2 == 0 else np.sin(a)
    return a


def chain_nda(a: nda.NDArray) -> nda.NDArray:
    for i in range(STEPS):
        a = nda.exp(a) if i % 2 == 0 else nda.sin(a)
    return a


def concurrency(rounds: int) -> dict[str, float]:
    host_a = np.random.default_rng(0).random(N)
    host_b = np.random.default_rng(1).random(N)
    # copies: arrays sharing NumPy's memory run their ops to completion at the call (nda.engine.share)
    a, b = nda.asarray(host_a, copy=True), nda.asarray(host_b, copy=True)
    pool = ThreadPoolExecutor(2)
    times: dict[str, list[float]] = {"numpy sequential": [], "numpy 2-thread pool": [], "nda": []}
    for _ in range(rounds):
        start = time.perf_counter()
        chain_numpy(host_a)
        chain_numpy(host_b)
        times["numpy sequential"].append(time.perf_counter() - start)

        start = time.perf_counter()
        fa, fb = pool.submit(chain_numpy, host_a), pool.submit(chain_numpy, host_b)
        fa.result()
        fb.result()
        times["numpy 2-thread pool"].append(time.perf_counter() - start)

        start = time.perf_counter()
        ra, rb = chain_nda(a), chain_nda(b)
        ra.wait_to_read()
        rb.wait_to_read()
        times["nda"].append(time.perf_counter() - start)
    pool.shutdown()
    np.testing.assert_allclose(ra.asnumpy()[:10], chain_numpy(host_a[:10]))
    return {k: statistics.median(v) for k, v in times.items()}


def tiny_latency(rounds: int, number: int) -> dict[str, float]:
    x = nda.ones(4, dtype=nda.float32)
    y = nda.ones(4, dtype=nda.float32)
    samples: dict[str, list[float]] = {"naive": [], "threaded": []}
    engines = {"naive": nda.engine.SyncEngine(), "threaded": None}
    from nda.engine.threaded import ThreadedEngine

    engines["threaded"] = ThreadedEngine()
    for _ in range(rounds):
        for name, engine in engines.items():
            nda.engine.use(engine)
            samples[name].append(timeit.timeit(lambda: x + y, number=number) / number)
    nda.engine.use("threaded")
    return {k: statistics.median(v) for k, v in samples.items()}


MIDSIZES = (10_000, 100_000, 1_000_000, 4_000_000)


def midsize(rounds: int, sizes: tuple[int, ...] = MIDSIZES) -> dict[int, dict[str, float]]:
    """Median seconds per ``(x + y).wait_to_read()`` on each engine and per NumPy ``a + b``, by size.

    NumPy and the two engines take turns call by call (a batch of calls is long enough for
    this shared machine's load to change under it); engines are switched between calls with
    ``nda.engine.use``, outside the timed region.
    """
    from nda.engine.threaded import ThreadedEngine

    previous = nda.engine.current()
    clock = time.perf_counter
    engines = {"naive": nda.engine.SyncEngine(), "threaded": ThreadedEngine()}
    out: dict[int, dict[str, float]] = {}
    try:
        for size in sizes:
            rng = np.random.default_rng(size)
            a, b = rng.random(size, dtype=np.float32), rng.random(size, dtype=np.float32)
            x, y = nda.asarray(a), nda.asarray(b)
            nda.waitall()
            calls = rounds * max(20, min(1000, int(1e8 // size) // 10))
            samples: dict[str, list[float]] = {"numpy": [], **{k: [] for k in engines}}
            for i in range(calls + 5):  # the first five warm up
                t0 = clock()
                z = a + b
                t1 = clock()
                del z
                if i >= 5:
                    samples["numpy"].append(t1 - t0)
                for name, engine in engines.items():
                    nda.engine.use(engine)
                    t0 = clock()
                    w = x + y
                    w.wait_to_read()
                    t1 = clock()
                    del w
                    if i >= 5:
                        samples[name].append(t1 - t0)
            out[size] = {k: statistics.median(v) for k, v in samples.items()}
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")
    return out


def host_read_check(rounds: int, number: int) -> dict[str, float]:
    """Seconds per ``x.asnumpy()`` of a (4,) float32 cpu array, and per check of its buffer alone."""
    from nda.backends import _checks

    x = nda.ones(4, dtype=nda.float32)
    host = x._buf
    backend = nda.backends.for_device(x.device)
    return _alternate(
        {
            "x.asnumpy(), (4,) float32": x.asnumpy,
            "the check alone (shape and dtype compared)": lambda: _checks.check_host(x, host, backend),
            "numpy a.copy(), (4,) float32": host.copy,
        },
        rounds,
        number,
    )


def _alternate(fns: dict[str, Any], rounds: int, number: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(timeit.timeit(fn, number=number) / number)
    return {k: statistics.median(v) for k, v in samples.items()}


def midsize_table(report: dict[int, dict[str, float]]) -> str:
    lines = [f"{'float32 x + y, then wait_to_read()':<36} {'numpy':>10} {'naive':>8} {'threaded':>9}   target (threaded)"]
    for size, r in report.items():
        target = "<= 1.5x" if size < 100_000 else "<= 1.10x"
        lines.append(
            f"{size:>12,} elements{'':<15} {r['numpy'] * 1e6:8.1f} us {r['naive'] / r['numpy']:7.2f}x {r['threaded'] / r['numpy']:8.2f}x   {target}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 7
    print(f"engine benchmarks ({'quick' if args.quick else 'full'}: {rounds} rounds, median)", file=sys.stderr)
    print("  [1/3] two independent chains of 8 exp/sin on 8M float64", file=sys.stderr, flush=True)
    conc = concurrency(rounds)
    print("  [2/3] tiny-op latency per engine", file=sys.stderr, flush=True)
    tiny = tiny_latency(rounds * 2, 20_000)
    print("  [3/3] mid-size ops per engine, the host-read check", file=sys.stderr, flush=True)
    mid = midsize(rounds * 2)
    check = host_read_check(rounds * 2, 20_000)
    seq = conc["numpy sequential"]
    print(f"{'two chains of 8 ops, 8M float64':<40} {'seconds':>9} {'speedup vs sequential numpy':>28}")
    for name, t in conc.items():
        print(f"{name:<40} {t:>9.3f} {seq / t:>27.2f}x")
    print(f"\n{'tiny op x + y (float32, (4,))':<40} {'ns':>9} {'vs naive':>28}")
    for name, t in tiny.items():
        print(f"{name + ' engine':<40} {t * 1e9:>9.0f} {t / tiny['naive']:>27.2f}x")
    print()
    print(midsize_table(mid))
    print()
    for name, t in check.items():
        print(f"{name:<44} {t * 1e9:9.0f} ns")
    if args.json:
        report: dict[str, Any] = {"concurrency_seconds": conc, "tiny_op_seconds": tiny, "midsize_seconds": mid, "host_read_check_seconds": check}
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
