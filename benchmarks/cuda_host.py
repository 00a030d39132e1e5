"""nda-cuda's host cost per op without a GPU: nda's real cuda backend over a null CuPy.

``python -m benchmarks.cuda_host [--quick] [--json PATH] [--no-profile]``

On a GPU, ``python -m benchmarks.gpu`` compares nda on ``cuda`` with CuPy; a tiny op there is
all host work (issue 27: ``x + y`` on (4,) float32 should cost at most CuPy + 2 µs). This
measures that host work on any machine: a process of its own puts ``benchmarks/_null_cupy`` (a
fake ``cupy`` whose calls cost next to nothing, see its docstring) first on ``sys.path``,
loads nda-cuda's backend class over it and times the GPU benchmark's tiny cases:

* ``x + y`` and ``x * y + z`` on (4,) float32, as issued;
* ``float(nda.sum(x + y))``: two ops and a host read;
* a chain: ``z = z * 1.0001 + y`` 100 times (200 dependent ops), then ``float(nda.sum(z))``;

the same cases on nda's ``cpu`` device in the same run, for scale, and the floor of the null
CuPy itself (``cupy.empty`` plus a launch: what ``x + y`` costs a CuPy user here).
``--ops`` adds issue 35's ops (``fft.*``, the decompositions, ``unique_*``, the rejection-sampled
random distributions) on tiny inputs, each issued and waited for, with the route it took on cuda
(native or the host fallback): the null CuPy computes those with NumPy on the host buffers, so
their figures are nda's work per op *plus* NumPy's on a few elements, the same on both routes
but for the fallback's copies and waits. Every timed
case runs with ``nda.config.fallback = "error"`` and is checked to go through nda-cuda's own
paths: the generated element-wise kernels (``Generator.launches``), the small reductions, and
no marker (CUDA event) except where the host waits. Then a cProfile of ``x + y`` and of
``float(nda.sum(x + y))`` lists nda's and nda-cuda's functions by self time.

Timings are printed (and written with ``--json``), never asserted; ``tests/test_cuda_host_bench.py``
runs it in quick mode and checks the paths.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
NULL_CUPY = os.path.join(HERE, "_null_cupy")


def run(quick: bool = False, profile: bool = True, timeout: float = 600, engine: str | None = None, ops: bool = False) -> dict[str, Any]:
    """Run the measurement in a fresh process over the null CuPy; its report as a dict.
    ``engine``: ``NDA_ENGINE`` for that process (default: the caller's, else nda's default)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        env = dict(os.environ, CUPY_CACHE_DIR=os.path.join(tmp, "cupy_cache"))
        if engine is not None:
            env["NDA_ENGINE"] = engine
        cmd = [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {NULL_CUPY!r}); sys.path.insert(1, {os.path.dirname(HERE)!r}); "
            f"from benchmarks.cuda_host import _inner; _inner({quick!r}, {profile!r}, {out!r}, {ops!r})",
        ]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise RuntimeError(f"the null-CuPy run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        with open(out) as fh:
            report: dict[str, Any] = json.load(fh)
        report["stdout"] = done.stdout
        return report


# --------------------------------------------------------------------------- inside the null-CuPy process


def _cases(nda: Any, np: Any, device: str) -> dict[str, Any]:
    x = nda.asarray(np.arange(4, dtype=np.float32), device=device)
    y = nda.asarray(np.ones(4, dtype=np.float32), device=device)
    z0 = nda.asarray(np.full(4, 2.0, dtype=np.float32), device=device)

    def add() -> Any:
        return x + y

    def fma() -> Any:
        return x * y + z0

    def read() -> float:
        return float(nda.sum(x + y))

    def chain() -> float:
        z = x
        for _ in range(100):
            z = z * 1.0001 + y
        return float(nda.sum(z))

    return {"x + y": add, "x * y + z": fma, "float(sum(x + y))": read, "chain 200 ops + read": chain}


def _op_cases(nda: Any, np: Any, device: str) -> dict[str, tuple[str, Any]]:
    """Issue 35's ops on tiny inputs: ``name -> (catalog op, issue-and-wait)``."""
    rng = np.random.default_rng(0)
    c8 = nda.asarray((rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np.complex64), device=device)
    r8 = nda.asarray(rng.standard_normal(8).astype(np.float32), device=device)
    c43 = nda.asarray((rng.standard_normal((4, 3)) + 1j).astype(np.complex64), device=device)
    a = rng.standard_normal((4, 4))
    m = nda.asarray((a + 4 * np.eye(4)).astype(np.float32), device=device)
    s = nda.asarray((a @ a.T + np.eye(4)).astype(np.float32), device=device)
    ints = nda.asarray(rng.integers(0, 5, 16), device=device)
    gen = nda.random.default_rng(0, device=device)
    wait = nda.waitall
    cases = {
        "fft.fft (8,) c64": ("fft.fft", lambda: nda.fft.fft(c8)),
        "fft.rfft (8,) f32": ("fft.rfft", lambda: nda.fft.rfft(r8)),
        "fft.irfft (8,) c64": ("fft.irfft", lambda: nda.fft.irfft(c8)),
        "fft.fftn (4, 3) c64": ("fft.fftn", lambda: nda.fft.fftn(c43)),
        "fft.irfftn (4, 3) c64": ("fft.irfftn", lambda: nda.fft.irfftn(c43)),
        "linalg.eigh (4, 4) f32": ("linalg.eigh", lambda: nda.linalg.eigh(s)),
        "linalg.eig (4, 4) f32": ("linalg.eig", lambda: nda.linalg.eig(m)),
        "linalg.qr (4, 4) f32": ("linalg.qr", lambda: nda.linalg.qr(m)),
        "linalg.svd (4, 4) f32": ("linalg.svd", lambda: nda.linalg.svd(m)),
        "linalg.slogdet (4, 4) f32": ("linalg.slogdet", lambda: nda.linalg.slogdet(m)),
        "linalg.matrix_rank (4, 4)": ("linalg.matrix_rank", lambda: nda.linalg.matrix_rank(m)),
        "unique_values (16,) i64": ("unique_values", lambda: nda.unique_values(ints)),
        "unique_all (16,) i64": ("unique_all", lambda: nda.unique_all(ints)),
        "random gamma (16,)": ("random.philox_gamma", lambda: gen.gamma(2.0, size=16)),
        "random poisson (16,)": ("random.philox_poisson", lambda: gen.poisson(3.0, size=16)),
        "random binomial (16,)": ("random.philox_binomial", lambda: gen.binomial(20, 0.5, size=16)),
    }

    def waited(fn: Any) -> Any:
        def call() -> None:
            fn()
            wait()

        return call

    return {name: (op, waited(fn)) for name, (op, fn) in cases.items()}


def _floor(cupy: Any) -> dict[str, Any]:
    """What the null CuPy itself costs for the same work (a CuPy user's calls, here)."""
    from cupy.cuda.function import _launch

    x = cupy.empty((4,), cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    dt = x.dtype

    def add() -> Any:
        out = cupy.empty((4,), dt)
        _launch((1,), (256,), (x, x, out))
        return out

    def read() -> float:
        with stream:
            s = cupy.sum(add())
            return float(s.get(stream=stream))

    return {"x + y": add, "float(sum(x + y))": read}


def _time(fns: dict[str, Any], rounds: int, number: dict[str, int]) -> dict[str, float]:
    import timeit

    samples: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()
        fn()
    for _ in range(rounds):
        for name, fn in fns.items():
            n = number.get(name, number["default"])
            samples[name].append(timeit.timeit(fn, number=n) / n)
    return {k: min(v) * 1e6 for k, v in samples.items()}  # best of rounds: the machine may be shared


def _paths(nda: Any, cases: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per case, once: generated-kernel launches, markers recorded, queue numbers taken."""
    import nda_cuda
    from nda.engine import queues as _queues

    queue = _queues.queue_of_device(nda.Device("cuda", 0))
    gen = nda_cuda.backend.elementwise
    found = {}
    for name, fn in cases.items():
        nda.waitall()
        launches, markers, numbers = sum(gen.launches.values()), queue.markers, queue.peek()
        result = fn()
        del result
        found[name] = {"launches": sum(gen.launches.values()) - launches, "markers": queue.markers - markers, "ops": queue.peek() - numbers}
    return found


def _profile(nda: Any, fn: Any, calls: int, top: int = 15) -> list[dict[str, Any]]:
    """nda's and nda-cuda's functions (and the null CuPy's) by self time over ``calls`` calls of ``fn``."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    rows = []
    for (path, line, func), (_cc, nc, tt, ct, _) in stats.items():
        where = path.replace("\\", "/")
        for marker, label in (("/src/nda/", "nda/"), ("/nda_cuda/", "nda_cuda/"), ("/_null_cupy/", "null_cupy/")):
            if marker in where:
                where = label + where.split(marker, 1)[1]
                break
        else:
            if not path.startswith("~") or "built-in" not in func and "method" not in func:
                continue
            where = "builtin"
        rows.append(
            {"function": f"{where}:{line}({func})", "calls_per_op": nc / calls, "self_us_per_op": tt / calls * 1e6, "cum_us_per_op": ct / calls * 1e6}
        )
    rows.sort(key=lambda r: -r["self_us_per_op"])
    return rows[:top]


def _inner(quick: bool, profile: bool, out: str, ops: bool = False) -> None:
    import cupy

    if not cupy.__file__.startswith(NULL_CUPY):
        raise RuntimeError(f"expected the null CuPy, imported {cupy.__file__}")
    import numpy as np

    import nda
    import nda_cuda

    nda.backends.load("cuda")
    nda.config.fallback = "error"  # a benchmarked op through the host fallback fails the run
    cuda = _cases(nda, np, "cuda")
    cpu = _cases(nda, np, "cpu")
    paths = _paths(nda, cuda)
    rounds = 3 if quick else 11
    number = {"default": 300 if quick else 3000, "chain 200 ops + read": 3 if quick else 10}
    timed = _time(
        {
            **{f"cuda {k}": v for k, v in cuda.items()},
            **{f"cpu {k}": v for k, v in cpu.items()},
            **{f"null cupy {k}": v for k, v in _floor(cupy).items()},
        },
        rounds,
        number,
    )
    report: dict[str, Any] = {
        "us": timed,
        "paths": paths,
        "quick": quick,
        "launches": dict(nda_cuda.backend.elementwise.launches),
        "sources": {op: nda_cuda.backend.sources.get(op) for op in ("add", "multiply", "sum")},
    }
    if ops:
        nda.config.fallback = "silent"  # the host fallback is one of the routes measured here
        try:
            on_cuda, on_cpu = _op_cases(nda, np, "cuda"), _op_cases(nda, np, "cpu")
            backend = nda_cuda.backend
            routes = {name: ("native" if op in backend.sources else "host fallback") for name, (op, _) in on_cuda.items()}
            n = {"default": 30 if quick else 200}
            op_us = _time({**{f"cuda {k}": fn for k, (_, fn) in on_cuda.items()}, **{f"cpu {k}": fn for k, (_, fn) in on_cpu.items()}}, rounds, n)
        finally:
            nda.config.fallback = "error"
        report["ops"] = {name: {"route": routes[name], "cuda": op_us[f"cuda {name}"], "cpu": op_us[f"cpu {name}"]} for name in on_cuda}
    if profile:
        calls = 2000 if quick else 20000
        report["profile"] = {"x + y": _profile(nda, cuda["x + y"], calls), "float(sum(x + y))": _profile(nda, cuda["float(sum(x + y))"], calls // 2)}
    with open(out, "w") as fh:
        json.dump(report, fh)


# --------------------------------------------------------------------------- report


def render(report: dict[str, Any]) -> str:
    us = report["us"]
    lines = ["nda-cuda host cost per call over the null CuPy (µs, best of rounds)", ""]
    lines.append(f"{'case':<24}{'cuda':>10}{'cpu':>10}{'null cupy':>12}   paths on cuda")
    for case, path in report["paths"].items():
        floor = us.get(f"null cupy {case}")
        lines.append(
            f"{case:<24}{us[f'cuda {case}']:>10.2f}{us[f'cpu {case}']:>10.2f}{'' if floor is None else f'{floor:.2f}':>12}   "
            f"{path['ops']} ops, {path['launches']} generated launches, {path['markers']} markers"
        )
    lines.append("")
    lines.append("sources: " + ", ".join(f"{op} <- {src}" for op, src in report["sources"].items()))
    if report.get("ops"):
        lines += [
            "",
            "issue 35's ops, issued and waited for (µs, best of rounds; NumPy computes them on the null CuPy's buffers)",
            f"{'op':<28}{'cuda':>10}{'cpu':>10}   route on cuda",
        ]
        lines += [f"{name:<28}{row['cuda']:>10.1f}{row['cpu']:>10.1f}   {row['route']}" for name, row in report["ops"].items()]
    for case, rows in report.get("profile", {}).items():
        lines += [
            "",
            f"cProfile, {case}: self time per op (µs; cProfile's own overhead inflates these)",
            f"{'self':>8}{'cum':>8}{'calls':>7}  function",
        ]
        lines += [f"{r['self_us_per_op']:>8.2f}{r['cum_us_per_op']:>8.2f}{r['calls_per_op']:>7.2f}  {r['function']}" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke test)")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile tables")
    parser.add_argument("--json", metavar="PATH", help="write the report as JSON")
    parser.add_argument("--ops", action="store_true", help="also time issue 35's ops (fft, decompositions, unique_*, random distributions)")
    args = parser.parse_args(argv)
    report = run(quick=args.quick, profile=not args.no_profile, ops=args.ops)
    print(render(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({k: v for k, v in report.items() if k != "stdout"}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
