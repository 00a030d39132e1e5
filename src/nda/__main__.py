"""``python -m nda info`` (what is installed and loaded) and ``python -m nda demo`` (the main job).

The demo runs a few steps of power iteration on a generated symmetric matrix on every
device whose backend is available, checks the eigenvalue against NumPy's, and prints
the time and the dispatch route of the ops it used.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import nda


def info() -> int:
    print(f"nda {nda.__version__} (Array API {nda.__array_api_version__}), numpy {np.__version__}, Python {sys.version.split()[0]}")
    print(f"engine: {nda.engine.current().name}")
    for rec in nda.backends.status():
        if rec["state"] == "installed":
            try:
                nda.backends.load(rec["name"])
            except nda.BackendError:
                pass
    print(nda.backends.status_table())
    return 0


def _power_iteration(a: nda.NDArray, steps: int) -> tuple[float, nda.NDArray]:
    v = nda.ones(a.shape[0], dtype=a.dtype, device=a.device)
    v = v / nda.sqrt(nda.vecdot(v, v))
    eig = 0.0
    for _ in range(steps):
        w = a @ v
        eig = float(nda.vecdot(v, w))
        v = w / nda.sqrt(nda.vecdot(w, w))
    return eig, v


def demo(n: int = 256, steps: int = 50) -> int:
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    spectrum = np.linspace(0.0, 5.0, n)
    spectrum[-1] = 10.0  # a clear gap, so 50 steps converge to machine precision
    host = (q * spectrum) @ q.T
    expected = float(np.linalg.eigvalsh(host)[-1])
    devices = [nda.Device(rec["name"]) for rec in nda.backends.status() if rec["state"] in ("installed", "loaded")]
    print(f"power iteration: {n}x{n} symmetric matrix with a known spectrum, {steps} steps; NumPy's largest eigenvalue is {expected:.6f}\n")
    failures = 0
    for device in devices:
        try:
            a = nda.asarray(host, device=device)
        except (nda.BackendError, ValueError) as err:
            print(f"{device}: unavailable ({err})")
            continue
        start = time.perf_counter()
        eig, v = _power_iteration(a, steps)
        nda.waitall()
        elapsed = time.perf_counter() - start
        ok = abs(eig - expected) <= 1e-6 * max(1.0, abs(expected))
        failures += not ok
        print(f"{device}: eigenvalue {eig:.6f} ({'matches' if ok else 'DIFFERS FROM'} NumPy) in {elapsed * 1e3:.1f} ms")
        print("  dispatch routes:")
        for op, args in (("matmul", (a, v)), ("vecdot", (v, v)), ("divide", (v, 2.0)), ("sqrt", (v,))):
            ex = nda.dispatch.explain(op, *args)
            print(f"    {op:<7} key {ex.key} -> {ex.kernel.qualname} (backend {ex.kernel.backend!r})")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nda", description="nda command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="version, engine and backends with their status")
    d = sub.add_parser("demo", help="power iteration on every available device, checked against NumPy")
    d.add_argument("--n", type=int, default=256)
    d.add_argument("--steps", type=int, default=50)
    args = parser.parse_args(argv)
    if args.command == "info":
        return info()
    return demo(args.n, args.steps)


if __name__ == "__main__":
    raise SystemExit(main())
