"""Section (11): ``nda.random`` on cpu against NumPy's ``Generator``, 1M values, timed to completion.

nda's generator is Philox4x32-10 (Box-Muller for normals, with log, cos and sin made of
IEEE operations so that every device gets the same bits). Its cpu kernels are the
optional C extension ``nda._philox_native`` (nda's one C/CUDA Philox source compiled for
the host, SIMD: AVX2 where the CPU has it) where nda was built with a C compiler, else the
vectorised NumPy reference (ten rounds of five uint64 ufunc calls per 128-bit block); the
cpu kernel splits a large request over up to 8 threads. Columns: "nda" (the cpu kernel
as ``rng.random(N)`` runs it: compiled, or NumPy with ``NDA_NATIVE=0``), "nda C 1 thread"
(the compiled kernel without threads, when built), "nda numpy 1 thread" (the NumPy
reference). NumPy's default generator is PCG64 in C, with the ziggurat for normals;
``Generator(Philox())`` (NumPy's Philox4x64-10 in C) is shown too. Target (issue 30): nda
within 2x of NumPy's ``Generator`` for ``random`` and ``standard_normal`` at 1M on cpu.
The GPU comparison with ``cupy.random`` is in ``benchmarks/gpu.py`` (``random_section``).

    python -m benchmarks.rng [--quick] [--json PATH]      (NDA_NATIVE=0: the NumPy kernels)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import nda

from ._timing import alternate

N = 1_000_000


def run(rounds: int) -> dict[str, dict[str, float]]:
    from nda.backends import cpu_random
    from nda.ops import _philox

    pcg = np.random.default_rng(0)
    philox = np.random.Generator(np.random.Philox(0))
    rng = nda.random.default_rng(0)
    key = rng.bit_generator.key
    native = cpu_random.load_native()
    compiled = cpu_random.native_kernels(native, None) if native is not None else None
    f64, f32, i64 = nda.float64, nda.float32, nda.int64
    cases: dict[str, dict[str, Any]] = {
        "random float64": {
            "numpy pcg64": lambda: pcg.random(N),
            "numpy philox4x64": lambda: philox.random(N),
            "nda": lambda: rng.random(N).wait_to_read(),
            "nda numpy 1 thread": lambda: _philox.uniform((N,), key, 0, 0.0, 1.0, f64),
        },
        "standard_normal float64": {
            "numpy pcg64": lambda: pcg.standard_normal(N),
            "numpy philox4x64": lambda: philox.standard_normal(N),
            "nda": lambda: rng.standard_normal(N).wait_to_read(),
            "nda numpy 1 thread": lambda: _philox.normal((N,), key, 0, 0.0, 1.0, f64),
        },
        "random float32": {
            "numpy pcg64": lambda: pcg.random(N, dtype=np.float32),
            "numpy philox4x64": lambda: philox.random(N, dtype=np.float32),
            "nda": lambda: rng.random(N, dtype=f32).wait_to_read(),
            "nda numpy 1 thread": lambda: _philox.uniform((N,), key, 0, 0.0, 1.0, f32),
        },
        "standard_normal float32": {
            "numpy pcg64": lambda: pcg.standard_normal(N, dtype=np.float32),
            "numpy philox4x64": lambda: philox.standard_normal(N, dtype=np.float32),
            "nda": lambda: rng.standard_normal(N, dtype=f32).wait_to_read(),
            "nda numpy 1 thread": lambda: _philox.normal((N,), key, 0, 0.0, 1.0, f32),
        },
        "integers [0, 1000) int64": {
            "numpy pcg64": lambda: pcg.integers(0, 1000, N),
            "numpy philox4x64": lambda: philox.integers(0, 1000, N),
            "nda": lambda: rng.integers(0, 1000, N).wait_to_read(),
            "nda numpy 1 thread": lambda: _philox.integers((N,), key, 0, 0, 1000, i64),
        },
    }
    if compiled is not None:
        single = {
            "random float64": lambda: compiled["uniform"]((N,), key, 0, 0.0, 1.0, f64),
            "standard_normal float64": lambda: compiled["normal"]((N,), key, 0, 0.0, 1.0, f64),
            "random float32": lambda: compiled["uniform"]((N,), key, 0, 0.0, 1.0, f32),
            "standard_normal float32": lambda: compiled["normal"]((N,), key, 0, 0.0, 1.0, f32),
            "integers [0, 1000) int64": lambda: compiled["integers"]((N,), key, 0, 0, 1000, i64),
        }
        for name, fn in single.items():
            cases[name]["nda C 1 thread"] = fn
    return {name: alternate(fns, rounds, 1) for name, fns in cases.items()}


def table(report: dict[str, dict[str, float]]) -> str:
    compiled = any("nda C 1 thread" in r for r in report.values())
    out = [
        f"{N:,} values, median per call (cpu); target nda/numpy pcg64 <= 2x for random and standard_normal",
        "(nda: the cpu kernel, "
        + ("compiled (nda._philox_native)" if compiled else "vectorised NumPy (no nda._philox_native, or NDA_NATIVE=0)")
        + ", a request's blocks on up to 8 threads; 1 thread: the compiled kernel and the NumPy reference alone)",
    ]
    for name, r in report.items():
        c_column = f"nda C 1 thread {r['nda C 1 thread'] * 1e3:7.2f} ms   " if "nda C 1 thread" in r else ""
        out.append(
            f"  {name:<26} numpy pcg64 {r['numpy pcg64'] * 1e3:7.2f} ms   numpy philox4x64 {r['numpy philox4x64'] * 1e3:7.2f} ms   "
            f"nda {r['nda'] * 1e3:7.2f} ms   {c_column}nda numpy 1 thread {r['nda numpy 1 thread'] * 1e3:7.2f} ms   "
            f"nda/pcg64 {r['nda'] / r['numpy pcg64']:.2f}x   nda/philox4x64 {r['nda'] / r['numpy philox4x64']:.2f}x"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m benchmarks.rng", description=__doc__.splitlines()[0])
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
