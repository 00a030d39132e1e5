"""What recording costs: ``record()`` itself, tiny ops inside it, other threads meanwhile.

    python -m benchmarks.autograd            # 7 rounds
    python -m benchmarks.autograd --quick    # 3 rounds

Since the recorder is an interceptor at the invocation point (nothing is swapped), entering
``record()`` pushes it on the thread's stack and makes every op take its slow path, where
the thread's interceptors are looked up; a recorded call adds the graph's bookkeeping.
Medians of alternating rounds; nothing is asserted (README, "Autograd": costs and limits).
"""

from __future__ import annotations

import argparse
import threading
from typing import Any, Callable

import numpy as np

import nda
from nda import autograd

from ._timing import alternate


def _cases() -> dict[str, Callable[[], Any]]:
    x = nda.asarray(np.arange(4, dtype=np.float32))
    w = nda.asarray(np.ones(4, dtype=np.float32))
    w.attach_grad()
    c = nda.asarray(np.ones(4, dtype=np.float32))

    def enter_exit() -> None:
        with autograd.record():
            pass

    def inside(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with autograd.record():
                for _ in range(20):
                    fn()

        return run

    return {
        "enter + leave record()": enter_exit,
        "x * c outside record() (x20)": lambda: [x * c for _ in range(20)],
        "x * c inside record(), no gradient (x20)": inside(lambda: x * c),
        "x * w inside record(), recorded (x20)": inside(lambda: x * w),
        "sum(x) outside (x20)": lambda: [nda.sum(x) for _ in range(20)],
        "sum(w) inside record(), recorded (x20)": inside(lambda: nda.sum(w)),
        "x[1:3] outside (x20)": lambda: [x[1:3] for _ in range(20)],
        "w[1:3] inside record(), recorded (x20)": inside(lambda: w[1:3]),
    }


def other_thread(rounds: int, number: int) -> dict[str, float]:
    """x * c on a thread that does not record, while another thread is inside record()."""
    x = nda.asarray(np.arange(4, dtype=np.float32))
    c = nda.asarray(np.ones(4, dtype=np.float32))
    inside, leave = threading.Event(), threading.Event()

    def recorder() -> None:
        with autograd.record():
            inside.set()
            leave.wait()

    quiet = alternate({"x * c, no thread records": lambda: x * c}, rounds, number)
    t = threading.Thread(target=recorder)
    t.start()
    inside.wait()
    try:
        busy = alternate({"x * c while another thread records": lambda: x * c}, rounds, number)
    finally:
        leave.set()
        t.join()
    return {**quiet, **busy}


def run(rounds: int, number: int) -> dict[str, float]:
    results = alternate(_cases(), rounds, number)
    results.update(other_thread(rounds, number * 20))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    results = run(3 if args.quick else 7, 100 if args.quick else 300)
    width = max(len(k) for k in results)
    for name, seconds in results.items():
        print(f"{name:<{width}}  {seconds * 1e6:9.2f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
