"""sim section: nda's engine on a device with an in-order queue (nda-sim), on any machine.

(a) A dependent chain, 100 iterations of ``a = a * 0.5 + b`` on 200k-element float64 sim
    arrays (200 ops, each above the inline threshold), to completion: the default threaded
    engine against the same chain with every op issued inline (``inline_limit`` unbounded).
    On a queue device an op is enqueued the moment it is issued, whatever its size, so the
    two should be the same. Target: threaded <= 1.10x inline.
(b) Two independent chains of 8 ``exp``/``sin`` on 1M float64, one on sim:0 and one on
    sim:1, against both on sim:0: each device's stream thread runs its queue, so the two
    devices overlap. Target: >= 1.7x. NumPy's own two-thread pool on the same work, in the
    same run, is the machine's ceiling (memory-bound work such as the chain in (a) does not
    speed up on two threads here even in plain NumPy).

    python -m benchmarks.sim [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

import nda
from nda.engine.threaded import ThreadedEngine

from ._timing import alternate

CHAIN_N = 200_000
CHAIN_ITERS = 100
PAIR_N = 1 << 20
PAIR_STEPS = 8


def unavailable() -> str | None:
    try:
        nda.backends.load("sim")
    except Exception as err:  # noqa: BLE001 - reported, the section skips
        return f"nda-sim is not available: {err}"
    return None


def chain(rounds: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a0 = nda.asarray(rng.random(CHAIN_N), device="sim")
    b = nda.asarray(rng.random(CHAIN_N), device="sim")
    engines = {"threaded": ThreadedEngine(), "inline": ThreadedEngine(inline_limit=1 << 62)}
    previous = nda.engine.current()

    def run(engine: ThreadedEngine) -> Any:
        def go() -> None:
            nda.engine.use(engine)
            a = a0
            for _ in range(CHAIN_ITERS):
                a = a * 0.5 + b
            a.wait_to_read()

        return go

    try:
        result = alternate({name: run(engine) for name, engine in engines.items()}, rounds, 1)
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")
    return result


def two_devices(rounds: int) -> dict[str, float]:
    rng = np.random.default_rng(1)
    host = [rng.random(PAIR_N), rng.random(PAIR_N)]
    same = [nda.asarray(h, device="sim:0") for h in host]
    split = [nda.asarray(host[0], device="sim:0"), nda.asarray(host[1], device="sim:1")]
    nda.waitall()

    def chain_of(x: Any, module: Any) -> Any:
        for i in range(PAIR_STEPS):
            x = module.exp(x) if i % 2 == 0 else module.sin(x)
        return x

    def on(arrays: list[Any]) -> Any:
        def go() -> None:
            results = [chain_of(x, nda) for x in arrays]
            for r in results:
                r.wait_to_read()

        return go

    pool = ThreadPoolExecutor(2)

    def numpy_pool() -> None:
        for f in [pool.submit(chain_of, h, np) for h in host]:
            f.result()

    def numpy_sequential() -> None:
        for h in host:
            chain_of(h, np)

    try:
        return alternate(
            {"one device": on(same), "two devices": on(split), "numpy sequential": numpy_sequential, "numpy 2-thread pool": numpy_pool}, rounds, 1
        )
    finally:
        pool.shutdown()


def run(rounds: int) -> dict[str, Any]:
    reason = unavailable()
    if reason is not None:
        return {"skipped": reason}
    return {"chain": chain(rounds), "two_devices": two_devices(rounds)}


def table(report: dict[str, Any]) -> str:
    if "skipped" in report:
        return f"skipped: {report['skipped']}"
    c = report["chain"]
    t = report["two_devices"]
    return "\n".join(
        [
            f"chain of {CHAIN_ITERS} x (a * 0.5 + b), {CHAIN_N:,} float64 on sim, to completion: target threaded <= 1.10x inline",
            f"  threaded {c['threaded'] * 1e3:8.1f} ms   inline {c['inline'] * 1e3:8.1f} ms   threaded/inline {c['threaded'] / c['inline']:.3f}x",
            f"two chains of {PAIR_STEPS} exp/sin, {PAIR_N:,} float64: target two devices >= 1.7x one device",
            f"  one device (sim:0)   {t['one device'] * 1e3:8.1f} ms",
            f"  two devices (sim:0, sim:1) {t['two devices'] * 1e3:8.1f} ms   speedup {t['one device'] / t['two devices']:.2f}x",
            f"  (the machine's ceiling: numpy 2-thread pool {t['numpy sequential'] / t['numpy 2-thread pool']:.2f}x over sequential numpy)",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sim", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    report = run(3 if args.quick else 9)
    print(table(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
