"""Fused chains (section 10): ``nda.hybridize`` against eager nda and the peers, 16M float32.

Two chains written with nda ops: ``a * b + c`` and a GELU (tanh approximation,
``0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3)))``, 9 element-wise ops). Each result is
waited for. On cpu, in one process, alternating every round (medians):

* NumPy, the same expression op by op (the eager peer);
* nda eager (op by op through the engine);
* nda hybridized, with the cpu backend's partitioner on its own kernels chunk by chunk
  (``NDA_NUMEXPR=0`` while the graph is built: exact);
* nda hybridized with numexpr (under NumPy's default error state: numexpr's outputs are
  checked for NaN/inf, ``backends.fusion.reporting``; and under ``errstate(all="ignore")``:
  unchecked), and numexpr itself, when numexpr is installed.

The inputs are copies (``nda.asarray(h, copy=True)``): an array sharing NumPy's memory makes a
hybridized call run eagerly (a graph cannot order NumPy's writes to that memory between its ops).

``--guards`` times what a hybridized call costs on top of its kernels (issue 38): the function's
Python runs at every call in check mode, each op call compared with the recorded graph, before
the graph runs. Per chain and size (8, 100k, 4M float32 elements; cpu and sim): eager nda, the
hybridized call, the check alone (the function run with the checker, no graph), and a call whose
guard fails (a Python float that changes at every call: the call runs eagerly; every 8th change
would make the signature eager for good, so the changing value cycles among 8).

On a GPU (nda-cuda available) the same chains on 16M float32 against CuPy eager, PyTorch
eager and ``torch.compile`` when installed, with the memory-bandwidth floor: a chain reading
``k`` arrays and writing one moves ``4 (k + 1) n`` bytes; the target is one pass over
memory, within 1.2x of that floor (``--bandwidth GBPS`` gives the device's figure; an H100
SXM reads and writes about 3.35 TB/s, which is the default). Without a GPU the section says
why it skipped: those figures are owed.

    python -m benchmarks.fusion [--quick] [--guards] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable

import numpy as np

import nda

from ._timing import alternate

N = 16 * 1024 * 1024
_C, _K = 0.7978845608028654, 0.044715


def mul_add(xp: Any, a: Any, b: Any, c: Any) -> Any:
    return a * b + c


def gelu(xp: Any, x: Any, b: Any, c: Any) -> Any:
    return 0.5 * x * (1.0 + xp.tanh(_C * (x + _K * (x * x * x))))


CHAINS: dict[str, tuple[Callable[..., Any], int]] = {"a * b + c": (mul_add, 3), "gelu(x)": (gelu, 1)}


def _hybrid(chain: Callable[..., Any], numexpr: bool, args: tuple[Any, ...]) -> Any:
    from nda.backends import fusion

    fn = nda.hybridize(lambda a, b, c: chain(nda, a, b, c))
    previous = fusion.USE_NUMEXPR  # NDA_NUMEXPR, read once at import
    fusion.USE_NUMEXPR = numexpr
    try:
        fn(*args).wait_to_read()  # traced, partitioned and checked with this evaluator
    finally:
        fusion.USE_NUMEXPR = previous
    return fn


def _ignoring(fn: Any, args: tuple[Any, ...]) -> None:
    with np.errstate(all="ignore"):  # numexpr without the check of its outputs (backends.fusion.reporting)
        fn(*args).wait_to_read()


def cpu(rounds: int, n: int = N) -> dict[str, dict[str, float]]:
    """Seconds per chain on cpu for each candidate (see the module docstring)."""
    from nda.backends import fusion

    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]
    arrays = tuple(nda.asarray(h, copy=True) for h in hosts)  # not NumPy's memory (see the module docstring)
    results: dict[str, dict[str, float]] = {}
    has_numexpr = fusion.numexpr_available()
    for name, (chain, _) in CHAINS.items():
        candidates: dict[str, Callable[[], Any]] = {
            "numpy": lambda chain=chain: chain(np, *hosts),
            "nda eager": lambda chain=chain: chain(nda, *arrays).wait_to_read(),
        }
        fused = _hybrid(chain, False, arrays)
        candidates["nda hybridized (chunked)"] = lambda fused=fused: fused(*arrays).wait_to_read()
        if has_numexpr:
            import numexpr

            fused_ne = _hybrid(chain, True, arrays)
            candidates["nda hybridized (numexpr)"] = lambda fused_ne=fused_ne: fused_ne(*arrays).wait_to_read()
            candidates["same, errstate(all='ignore')"] = lambda fused_ne=fused_ne: _ignoring(fused_ne, arrays)
            text = "a * b + c" if chain is mul_add else f"0.5 * a * (1.0 + tanh({_C} * (a + {_K} * (a * a * a))))"
            a, b, c = hosts
            candidates["numexpr"] = lambda text=text, a=a, b=b, c=c: numexpr.evaluate(text)
        results[name] = alternate(candidates, rounds, 1)
    return results


def gpu(rounds: int, n: int = N, bandwidth: float = 3.35e12) -> dict[str, Any]:
    """The chains on cuda:0 against CuPy, PyTorch eager and torch.compile; ``{"skipped": why}`` without a GPU."""
    try:
        nda.backends.load("cuda")
        import cupy
    except Exception as err:  # noqa: BLE001 - no GPU here: the figures are owed
        return {"skipped": f"{type(err).__name__}: {str(err).splitlines()[0]}"}
    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]
    arrays = tuple(nda.asarray(h, device="cuda") for h in hosts)
    cps = [cupy.asarray(h) for h in hosts]
    try:
        import torch

        tts = [torch.from_numpy(h).cuda() for h in hosts]
    except Exception:  # noqa: BLE001 - PyTorch (CUDA) is optional
        torch, tts = None, []
    results: dict[str, Any] = {"bandwidth": bandwidth}
    for name, (chain, reads) in CHAINS.items():
        fused = nda.hybridize(lambda a, b, c, chain=chain: chain(nda, a, b, c))
        fused(*arrays).wait_to_read()
        candidates: dict[str, Callable[[], Any]] = {
            "cupy": lambda chain=chain: (chain(cupy, *cps), cupy.cuda.get_current_stream().synchronize()),
            "nda eager": lambda chain=chain: chain(nda, *arrays).wait_to_read(),
            "nda hybridized": lambda fused=fused: fused(*arrays).wait_to_read(),
        }
        if torch is not None:
            candidates["torch eager"] = lambda chain=chain: (chain(torch, *tts), torch.cuda.synchronize())
            try:
                compiled = torch.compile(lambda a, b, c, chain=chain: chain(torch, a, b, c))
                compiled(*tts)
                candidates["torch.compile"] = lambda compiled=compiled: (compiled(*tts), torch.cuda.synchronize())
            except Exception:  # noqa: BLE001 - no compiler toolchain: reported as missing
                pass
        timed = alternate(candidates, rounds, 5)
        timed["floor (one pass)"] = 4.0 * (reads + 1) * n / bandwidth
        results[name] = timed
    return results


def table(report: dict[str, Any]) -> str:
    lines = []
    for device, section in report.items():
        if "skipped" in section:
            lines.append(f"{device}: skipped ({section['skipped']}); these figures are owed")
            continue
        for chain, timed in section.items():
            if not isinstance(timed, dict):
                continue
            base = timed.get("numpy") or timed.get("cupy")
            floor = timed.get("floor (one pass)")
            parts = []
            for k, v in timed.items():
                extra = f" ({v / base:.2f}x)" if base and k not in ("numpy", "cupy", "floor (one pass)") else ""
                extra += f" [{v / floor:.2f}x floor]" if floor and k != "floor (one pass)" else ""
                parts.append(f"{k} {v * 1e3:7.2f} ms{extra}")
            lines.append(f"{device} {chain:<10} " + "  ".join(parts))
    return "\n".join(lines)


def guards(rounds: int, sizes: tuple[int, ...] = (8, 100_000, 4_000_000)) -> dict[str, dict[str, float]]:
    """Seconds per call: eager, hybridized, the check alone, a failed guard (see the module docstring)."""
    from nda import _intercept
    from nda.hybrid._check import Checker

    results: dict[str, dict[str, float]] = {}
    for device in ("cpu", "sim"):
        for n in sizes:
            x = nda.asarray(np.random.default_rng(0).standard_normal(n, dtype=np.float32), device=device, copy=True)
            args = (x, x, x)
            for name, (chain, _) in CHAINS.items():
                fn = lambda a, b, c, chain=chain: chain(nda, a, b, c)  # noqa: E731
                fused = nda.hybridize(fn)
                fused(*args).wait_to_read()
                entry = next(iter(fused._cache.values()))
                scale = [0.0]
                changing = nda.hybridize(lambda a, b, c, chain=chain: chain(nda, a, b, c) * scale[0])

                def check_only(fn: Any = fn, entry: Any = entry) -> None:
                    checker = Checker(list(entry.variants), [x])
                    _intercept.push(checker)
                    try:
                        fn(*args)
                    finally:
                        _intercept.pop(checker)

                def failing(changing: Any = changing, scale: list[float] = scale) -> None:
                    scale[0] = (scale[0] + 1.0) % 8.0  # cycles among 8 values: each has its graph after one pass
                    changing(*args).wait_to_read()

                scale[0] = 0.0
                for _ in range(8):
                    failing()  # one graph per value

                number = 200 if n <= 100_000 else 3
                timed = alternate(
                    {
                        "eager": lambda fn=fn: fn(*args).wait_to_read(),
                        "hybridized": lambda fused=fused: fused(*args).wait_to_read(),
                        "check alone": check_only,
                        "8 graphs, checked against all": failing,
                    },
                    rounds,
                    number,
                )
                timed["a failed guard (that call)"] = _failed_guard(chain, args, rounds)
                results[f"{device} {name} n={n:,}"] = timed
    return results


def _failed_guard(chain: Callable[..., Any], args: tuple[Any, ...], rounds: int) -> float:
    """Median seconds of a call whose Python value changed since the graph was traced (eager, and traced as it runs)."""
    times = []
    for _ in range(max(rounds, 3)):
        value = [0.5]
        fn = nda.hybridize(lambda a, b, c: chain(nda, a, b, c) * value[0])
        fn(*args).wait_to_read()
        value[0] = 0.25
        start = time.perf_counter()
        fn(*args).wait_to_read()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def guard_table(report: dict[str, dict[str, float]]) -> str:
    lines = []
    for key, timed in report.items():
        lines.append(f"{key:<28} " + "  ".join(f"{k} {v * 1e6:9.1f} us" for k, v in timed.items()))
    return "\n".join(lines)


def run(rounds: int) -> dict[str, Any]:
    return {"cpu": cpu(rounds), "cuda": gpu(rounds)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fusion", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--bandwidth", type=float, default=3.35e12, help="the GPU's memory bandwidth in bytes/s (H100 SXM: 3.35e12)")
    parser.add_argument("--guards", action="store_true", help="only the cost of hybridize's guards per call (cpu and sim)")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 9
    if args.guards:
        found = guards(rounds)
        print(guard_table(found))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(found, fh, indent=2)
        return 0
    report = {"cpu": cpu(rounds), "cuda": gpu(rounds, bandwidth=args.bandwidth)}
    print(table(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
