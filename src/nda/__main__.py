"""``python -m nda info`` (what is installed and why) and ``python -m nda demo`` (the main job).

``info`` prints the versions, the engine, and for every backend of the ``nda.backends``
entry-point group its state, its devices with their memory (and the allocator's
statistics where the backend reports them), a dispatch-coverage summary (how many
op × dtype pairs run natively, through the host fallback, or not at all) and, for a
backend that failed or found no device, the reason; then the op libraries (extension ops)
with their ops, or why one did not load. It loads every installed backend to
find out, which is what a person asking "what do I have?" wants; ``import nda`` never does.

``demo`` runs a short, real computation on every available device: power iteration on a
generated symmetric matrix whose largest eigenvalue is known, checked against NumPy. The
iteration issues its ops without syncing (one ``float()`` at the end), so the engine is
free to run ahead; then the same work is issued on all devices at once, and the demo
prints how long that took next to the runs one after another: the devices' chains
overlap. Every op the iteration uses has a native kernel on cpu and sim (a host fallback
would make the issuing thread wait for its device, and the devices would take turns).
nda's devices here share the host's cores, so the demo runs them with single-threaded BLAS
(through threadpoolctl, when it is installed): a matrix-vector product fanning out over
every core would leave no core to the other devices and oversubscribe them when they run
together. Everything runs under the profiler, and the demo writes what it recorded:

* ``nda-demo-trace.json``: a Chrome trace (Perfetto, chrome://tracing);
* ``nda-demo-timeline.png``: :meth:`nda.profiler.timeline`, one lane per device and
  thread and one per device queue (when the device really ran each op), when matplotlib is
  installed (the ``notebooks`` extra); without it the PNG is skipped with a message and
  everything else still runs.

Both go to the current directory or ``--out DIR``.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from typing import Any

import numpy as np

import nda
from nda._config import env_flag

TRACE_NAME = "nda-demo-trace.json"
TIMELINE_NAME = "nda-demo-timeline.png"


# ---------------------------------------------------------------------- info
def _bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _matplotlib_version() -> str | None:
    """matplotlib's version without importing it (importing it costs about a second)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("matplotlib")
    except PackageNotFoundError:
        return None


def _load_installed() -> None:
    for rec in nda.backends.status():
        if rec["state"] == "installed":
            try:
                nda.backends.load(rec["name"])
            except nda.BackendError:
                pass  # recorded in status() with the reason


def _device_lines(rec: dict[str, Any]) -> list[str]:
    lines = []
    for dev in rec["devices"]:
        line = f"    {dev['device']:<7} {dev['name']}, memory {_bytes(dev.get('memory'))}"
        try:
            stats = nda.backends.memory_stats(dev["device"])
        except (NotImplementedError, nda.BackendError, ValueError):
            stats = None
        if stats:
            line += " (" + ", ".join(f"{k.replace('_', ' ')} {_bytes(v)}" for k, v in stats.items() if k != "capacity") + ")"
        lines.append(line)
    return lines


def _coverage_line(device_type: str) -> str:
    try:
        counts = nda.dispatch.coverage(device_type).counts()
    except Exception as err:  # noqa: BLE001 - info must report, never crash
        return f"    coverage: unavailable ({type(err).__name__}: {err})"
    total = sum(counts.values())
    return (
        f"    coverage: {counts['native']} native, {counts['fallback']} host fallback, {counts['missing']} missing"
        f" of {total} op x dtype pairs (nda.dispatch.coverage({device_type!r}))"
    )


def info() -> int:
    """Print versions, engine and every backend with devices, memory, coverage and reasons."""
    print(
        f"nda {nda.__version__} (Array API {nda.__array_api_version__}), numpy {np.__version__}, "
        f"Python {platform.python_version()} ({platform.python_implementation()}, {platform.system()} {platform.machine()})"
    )
    engine = nda.engine.current()
    inline = getattr(engine, "idle_limit", 0)
    detail = f"ops under {inline} elements run inline" if engine.name == "threaded" else "set by NDA_ENGINE"
    print(f"engine: {engine.name} ({detail})")
    from nda import _execute

    native = (
        "C (nda._native)"
        if _execute.native is not None
        else ("Python (NDA_NATIVE=0)" if not env_flag("NDA_NATIVE", True) else "Python (nda._native is not compiled: no C compiler at install)")
    )
    print(f"operator fast paths: {native}")
    mpl = _matplotlib_version()
    print(f"matplotlib: {mpl} (profiler timelines)" if mpl else "matplotlib: not installed (pip install 'nda[notebooks]' for profiler timelines)")
    selection = os.environ.get("NDA_BACKENDS")
    print(f"\nbackends (entry-point group 'nda.backends'{', NDA_BACKENDS=' + repr(selection) if selection else ''}):")
    _load_installed()
    from nda.backends import _libraries

    _libraries.load_all()  # their ops count in the coverage lines
    records = nda.backends.status()
    width = max([6] + [len(rec["name"]) for rec in records])
    for rec in records:
        api = f"api {rec['api_version']}" if rec["api_version"] else "api -"
        print(f"  {rec['name']:<{width}} {rec['state']:<11} {api:<8} from {rec['source']}")
        if rec["state"] == "loaded":
            print("\n".join(_device_lines(rec)))
            for device_type in rec["device_types"]:
                print(_coverage_line(device_type))
            if rec.get("flushes_subnormals"):
                print(f"    subnormals: {', '.join(rec['flushes_subnormals'])} flushed to zero by its kernels (declared: flushes_subnormals)")
        elif rec["reason"]:
            reason = rec["reason"].strip().splitlines()[0]
            print(f"    reason: {reason}")
            if "\n" in rec["reason"].strip():
                print("    (the full traceback: nda.backends.status())")
    _library_lines()
    return 0


def _library_lines() -> None:
    """The op libraries (extension ops, entry-point group 'nda.extensions'): state, ops, reason."""
    found = nda.backends.libraries()
    print("\nop libraries (entry-point group 'nda.extensions', nda.ext.<library>.<op>):")
    if not found:
        print("  none installed")
    for rec in found:
        print(f"  {rec['name']:<8} {rec['state']:<11} {rec['version'] or '-':<8} from {rec['source']}")
        if rec["ops"]:
            print(f"    ops: {', '.join('nda.ext.' + op for op in rec['ops'])}")
        elif rec["reason"]:
            print(f"    reason: {rec['reason'].strip().splitlines()[0]}")


# ---------------------------------------------------------------------- demo
def _problem(n: int) -> tuple[np.ndarray, float]:
    """A symmetric ``n x n`` matrix with a known spectrum and a clear gap, and its top eigenvalue."""
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    spectrum = np.linspace(0.0, 5.0, n)
    spectrum[-1] = 10.0  # a clear gap, so 50 steps converge to machine precision
    return (q * spectrum) @ q.T, 10.0


def _issue_step(a: nda.NDArray, v: nda.NDArray) -> nda.NDArray:
    """One power-iteration step; issues ops and returns at once (no sync)."""
    w = a @ v
    return w / nda.sqrt(nda.vecdot(w, w))


def _start_vector(a: nda.NDArray) -> nda.NDArray:
    n = a.shape[0]
    return nda.full(n, 1.0 / np.sqrt(n), dtype=a.dtype, device=a.device)


def _rayleigh(a: nda.NDArray, v: nda.NDArray) -> float:
    return float(nda.vecdot(v, a @ v))  # the one sync point of a run


def _routes(a: nda.NDArray, v: nda.NDArray) -> list[str]:
    lines = []
    for op, args in (("matmul", (a, v)), ("vecdot", (v, v)), ("divide", (v, 2.0)), ("sqrt", (v,))):
        ex = nda.dispatch.explain(op, *args)
        kind = ex.route.kind  # native, queued, host fallback, host view, layout conversion
        fallback = " (host fallback: copies to cpu and back)" if kind in ("host fallback", "host view") else f" ({kind})" if kind != "native" else ""
        lines.append(f"    {op:<7} {ex.key} -> {ex.kernel.qualname}{fallback}")
    return lines


def _select_devices(spec: str | None) -> list[nda.Device]:
    """Every device of every available backend, or those ``spec`` names (``cpu,sim`` or ``sim:1``)."""
    _load_installed()
    available = [info.device for info in nda.backends.devices()]
    if not spec:
        return available
    chosen: list[nda.Device] = []
    reasons = {
        rec["name"]: f" (backend {rec['name']!r} is {rec['state']}: {rec['reason'].strip().splitlines()[0]})"
        for rec in nda.backends.status()
        if rec["reason"]
    }
    for part in filter(None, (p.strip() for p in spec.split(","))):
        matches = [d for d in available if str(d) == part or d.type == part]
        if not matches:
            kind = part.split(":")[0]
            known = {rec["name"] for rec in nda.backends.status()}
            why = reasons.get(kind, "" if kind in known else f" (no backend for device type {kind!r} is installed)")
            raise SystemExit(f"python -m nda demo: no device {part!r}{why}; available: {', '.join(str(d) for d in available)}")
        chosen += [d for d in matches if d not in chosen]
    return chosen


_SKIP = (nda.DispatchError, nda.DeviceUnavailableError, nda.BackendError)


def _drain() -> None:
    """After a failed run: let the engine finish and forget that run's errors."""
    try:
        nda.waitall()
    except Exception:  # noqa: BLE001 - already reported
        pass


def _run_alone(device: nda.Device, host: np.ndarray, steps: int, expected: float, tolerance: float) -> tuple[str, nda.NDArray | None, float]:
    """One device's run: ``("ok" | "wrong" | "skipped" | "failed", its matrix, seconds)``; prints what happened."""
    nda.profiler.mark(f"{device} alone")
    try:
        a = nda.asarray(host, device=device)
        start = time.perf_counter()
        v = _start_vector(a)
        for _ in range(steps):
            v = _issue_step(a, v)
        eig = _rayleigh(a, v)
        elapsed = time.perf_counter() - start
        routes = _routes(a, v)
    except _SKIP as err:  # the backend lacks an op the demo needs: not a wrong result
        print(f"{device}: skipped, its backend cannot run this computation ({type(err).__name__}: {str(err).splitlines()[0][:160]})")
        _drain()
        return "skipped", None, 0.0
    except Exception as err:  # noqa: BLE001 - report every device, then fail the exit status
        print(f"{device}: FAILED with {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}")
        _drain()
        return "failed", None, 0.0
    ok = abs(eig - expected) <= tolerance
    print(f"{device}: eigenvalue {eig:.9f} ({'matches' if ok else 'DIFFERS FROM'} NumPy) in {elapsed * 1e3:.1f} ms")
    print("\n".join(routes))
    return ("ok" if ok else "wrong"), a, elapsed


def _run_together(inputs: dict[nda.Device, nda.NDArray], steps: int, expected: float, tolerance: float, one_by_one: float) -> int:
    """The same iteration on all devices, steps issued interleaved; returns the number of wrong results.

    ``one_by_one`` is the time the runs took one after another, printed next to this one's."""
    nda.profiler.mark("all at once")
    start = time.perf_counter()
    vs = {d: _start_vector(a) for d, a in inputs.items()}
    for _ in range(steps):
        for d, a in inputs.items():  # each device's chain is ordered by the engine; chains are independent
            vs[d] = _issue_step(a, vs[d])
    eigs = {d: _rayleigh(inputs[d], vs[d]) for d in inputs}
    elapsed = time.perf_counter() - start
    bad = [str(d) for d, e in eigs.items() if abs(e - expected) > tolerance]
    print(
        f"\nall {len(inputs)} devices at once (steps issued interleaved, the engine orders each device's chain): {elapsed * 1e3:.1f} ms, "
        + ("every eigenvalue matches NumPy" if not bad else f"WRONG on {', '.join(bad)}")
    )
    print(
        f"  one after another they took {one_by_one * 1e3:.1f} ms: together {one_by_one / max(elapsed, 1e-9):.2f}x as fast "
        "(the devices' chains overlap; each device's own chain runs in order)"
    )
    return len(bad)


def _one_blas_thread() -> Any:
    """Single-threaded BLAS while the demo runs (see the module docstring); a no-op without threadpoolctl."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _write_outputs(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    trace_path = os.path.join(out, TRACE_NAME)
    nda.profiler.chrome_trace(trace_path)
    print(f"\ntrace:    {os.path.abspath(trace_path)} (open in Perfetto or chrome://tracing)")
    png_path = os.path.join(out, TIMELINE_NAME)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("timeline: skipped, matplotlib is not installed (pip install 'nda[notebooks]' or matplotlib to get the PNG)")
    else:
        nda.profiler.timeline(path=png_path)
        print(f"timeline: {os.path.abspath(png_path)} (one lane per device and thread, one per device queue, ops coloured by name)")


def demo(n: int = 512, steps: int = 50, out: str = ".", devices: str | None = None) -> int:
    """Power iteration on every available device under the profiler; writes the trace and the PNG.

    Exit status 1 when a result differs from NumPy or a device's run crashed; a device whose
    backend lacks an op the demo needs (and has no fallback) is reported and skipped.
    """
    host, expected = _problem(n)
    chosen = _select_devices(devices)
    print(
        f"power iteration: {n}x{n} symmetric matrix, known largest eigenvalue {expected}, {steps} steps, "
        f"on {len(chosen)} device(s): {', '.join(str(d) for d in chosen)}"
    )
    print("every run issues its steps without syncing and reads one float at the end; the profiler records every op\n")
    tolerance = 1e-6 * max(1.0, abs(expected))
    failures = 0
    nda.profiler.start()
    try:
        with warnings.catch_warnings(), _one_blas_thread():
            warnings.simplefilter("ignore", nda.FallbackWarning)  # the routes printed say it
            inputs: dict[nda.Device, nda.NDArray] = {}
            one_by_one = 0.0
            for device in chosen:
                outcome, a, elapsed = _run_alone(device, host, steps, expected, tolerance)
                failures += outcome in ("wrong", "failed")
                if a is not None:
                    inputs[device] = a
                    one_by_one += elapsed
            if len(inputs) > 1:
                failures += _run_together(inputs, steps, expected, tolerance, one_by_one)
    finally:
        events = nda.profiler.stop()
    queued = f", {len(events.queue_events)} of them ran on device queues" if events.queue_events else ""
    print(f"\nprofile: {len(events)} ops recorded{queued}; the busiest (device ms: time on the device's queue):")
    print("\n".join("  " + line for line in nda.profiler.summary().splitlines()[:8]))
    _write_outputs(out)
    if failures:
        print(f"\n{failures} run(s) failed or differ from NumPy by more than {tolerance:g} (with few --steps the iteration has not converged yet)")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nda", description="nda command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, engine, backends with devices, memory, coverage and why one is missing")
    d = sub.add_parser("demo", help="power iteration on every available device, checked against NumPy, profiled")
    d.add_argument("--n", type=int, default=512, help="matrix size (default 512)")
    d.add_argument("--steps", type=int, default=50, help="power-iteration steps (default 50)")
    d.add_argument("--out", default=".", help=f"where to write {TRACE_NAME} and {TIMELINE_NAME} (default: the current directory)")
    d.add_argument("--devices", default=None, help="comma-separated device types or devices, e.g. cpu,sim:1 (default: every available device)")
    args = parser.parse_args(argv)
    if args.command == "info":
        return info()
    return demo(args.n, args.steps, args.out, args.devices)


if __name__ == "__main__":
    sys.exit(main())
