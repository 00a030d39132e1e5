"""Device queues on any machine: what an op costs nda on a queue, and how many markers it records.

(a) Issue cost of a tiny ``x + y`` (4,) float32 on a *null queue* backend (in-order queues,
    kernels that return a new handle and do nothing, markers that cost nothing) against the
    null backend without queues (``benchmarks._null_backend``): the difference is what the
    queue bookkeeping costs per op (a number on the queue and a version; no marker).
(b) On nda-sim and on the cuda mirror (nda-cuda's kernel table over a model of CuPy on NumPy,
    ``tests/_cuda_numpy_mirror.py``, when the tests folder is there): the issue cost of a tiny
    ``x + y``, ``float(nda.sum(x + y))`` (two ops and a read), and 200 dependent tiny ops
    then ``float(nda.sum(z))``. Both backends do real work per op (sim a thread hand-off, the
    mirror NumPy with CuPy's quirks), so these are not GPU figures (``benchmarks/gpu.py``).
(c) Markers recorded per op in the cases of (b): a marker is recorded only where something
    waits, so about one per read (0.5 per op for two ops and a read) and one per 256 ops in
    a loop that never reads.

    python -m benchmarks.queues [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable

import numpy as np

import nda

from ._timing import alternate

DEVICE = nda.Device("nullqueue", 0)


class _Handle:
    """A null buffer: weakly referenceable, holds nothing."""

    __slots__ = ("__weakref__",)


def _null_add(x1: Any, x2: Any) -> _Handle:
    return _Handle()


def _null_asarray(host: Any, device: Any, copy: Any = None) -> _Handle:
    return _Handle()


class NullQueueBackend:
    """In-order queues whose kernels do nothing: isolates nda's per-op queue bookkeeping."""

    name = "nullqueue"
    api_version = "1.3"
    device_types = ("nullqueue",)
    in_order_queues = True
    buffer_type = _Handle

    def devices(self) -> list[Any]:
        return [nda.backends.DeviceInfo(DEVICE, "null kernels on an in-order queue")]

    def register(self, register_kernel: Callable[..., None]) -> None:
        register_kernel("add", ["float32"], _null_add)
        register_kernel("asarray", ["float32"], _null_asarray)

    def to_host(self, buf: Any) -> np.ndarray:
        return np.ones(4, dtype=np.float32)

    def from_host(self, host: Any, device: Any, out: Any = None) -> Any:
        return _Handle()

    def device_of(self, buf: Any) -> Any:
        return DEVICE

    def record_marker(self, device: Any) -> None:
        return None

    def wait_marker(self, device: Any, marker: Any) -> None:
        return None

    def synchronize_marker(self, marker: Any) -> None:
        return None

    def marker_reached(self, marker: Any) -> bool:
        return True


null_queue_backend = NullQueueBackend()


def overhead(rounds: int, number: int) -> dict[str, float]:
    nda.backends.load("benchmarks.queues:null_queue_backend")
    nda.backends.load("benchmarks._null_backend:backend")
    pairs = {}
    for device in ("nullqueue", "nullbench"):
        x = nda.asarray(np.ones(4, dtype=np.float32), device=device)
        y = nda.asarray(np.ones(4, dtype=np.float32), device=device)
        pairs[device] = (x, y)
    nda.waitall()
    (qx, qy), (px, py) = pairs["nullqueue"], pairs["nullbench"]
    result = alternate({"queue": lambda: qx + qy, "no queue": lambda: px + py}, rounds, number)
    nda.waitall()
    return result


def _mirror() -> str | None:
    tests = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
    if not os.path.isdir(tests):
        return None
    if tests not in sys.path:
        sys.path.insert(0, tests)
    try:
        if not nda.backends.serves("cudamirror"):
            nda.backends.load("_cuda_numpy_mirror:backend")
    except Exception:  # noqa: BLE001 - nda-cuda not installed: the section skips the mirror
        return None
    return "cudamirror"


def devices(rounds: int, number: int) -> dict[str, dict[str, float]]:
    from nda.engine import queues as _queues

    report: dict[str, dict[str, float]] = {}
    names = ["sim"] + ([m] if (m := _mirror()) is not None else [])
    for device in names:
        x = nda.ones(4, dtype=nda.float32, device=device)
        y = nda.ones(4, dtype=nda.float32, device=device)
        nda.waitall()
        queue = _queues.queue_of_device(nda.Device(device))

        def chain() -> float:
            z = x
            for _ in range(100):
                z = z * 1.0001 + y
            return float(nda.sum(z))

        def markers(fn: Callable[[], Any], ops: int, times: int) -> float:
            nda.waitall()
            before = queue.markers
            for _ in range(times):
                fn()
            after = queue.markers
            nda.waitall()
            return (after - before) / (ops * times)

        issue = alternate({"x + y": lambda: x + y}, rounds, number)["x + y"]
        nda.waitall()
        read = alternate({"read": lambda: float(nda.sum(x + y))}, rounds, max(1, number // 10))["read"]
        whole = alternate({"chain": chain}, rounds, 1)["chain"]
        report[device] = {
            "issue x + y": issue,
            "float(sum(x + y))": read,
            "200 ops + float(sum(z))": whole,
            "markers per op, x + y issued": markers(lambda: x + y, 1, 1000),
            "markers per op, float(sum(x + y))": markers(lambda: float(nda.sum(x + y)), 2, 100),
            "markers per op, 200 ops + read": markers(chain, 201, 3),
        }
    return report


def run(quick: bool) -> dict[str, Any]:
    rounds = 5 if quick else 15
    try:
        nda.backends.load("sim")
    except Exception as err:  # noqa: BLE001
        return {"skipped": f"nda-sim is not available: {err}"}
    return {"overhead": overhead(rounds, 2_000 if quick else 20_000), "devices": devices(rounds, 200 if quick else 2_000)}


def table(report: dict[str, Any]) -> str:
    if "skipped" in report:
        return f"skipped: {report['skipped']}"
    o = report["overhead"]
    out = [
        f"(a) x + y, null kernels: queue {o['queue'] * 1e6:.2f} µs, no queue {o['no queue'] * 1e6:.2f} µs, "
        f"queue bookkeeping {(o['queue'] - o['no queue']) * 1e6:+.2f} µs per op"
    ]
    for device, r in report["devices"].items():
        out.append(
            f"(b) {device}: issue x + y {r['issue x + y'] * 1e6:.1f} µs, float(sum(x + y)) {r['float(sum(x + y))'] * 1e6:.1f} µs, "
            f"200 ops + float(sum(z)) {r['200 ops + float(sum(z))'] * 1e3:.2f} ms"
        )
        out.append(
            f"(c) {device}: markers per op: x + y issued {r['markers per op, x + y issued']:.3f}, "
            f"float(sum(x + y)) {r['markers per op, float(sum(x + y))']:.3f}, 200 ops + read {r['markers per op, 200 ops + read']:.3f}"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.queues", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    report = run(args.quick)
    print(table(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
