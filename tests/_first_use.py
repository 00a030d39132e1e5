"""Concurrent first use of a backend, many times in one process (run by tests/test_invocation.py).

``python tests/_first_use.py NAME RUNS [THREADS]``: unloads backend NAME (its kernels, handle,
devices and queues), then lets THREADS threads use its device at the same instant, RUNS
times. Each run must leave the backend loaded with exactly the kernels one activation
registers (no duplicate), and every thread must compute the right answer. Prints one line
``ok NAME RUNS`` or the first problem, and exits 1 on a problem.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable

import nda
from nda import dispatch
from nda.backends import _activation as activation


def kernel_count(name: str) -> int:
    return sum(1 for tbl in dispatch._TABLES.values() for entries in tbl.kernels.values() for e in entries if e.backend == name)


def unload(name: str) -> None:
    nda.waitall()
    rec = activation._discover()[name]
    with activation.LOCK:
        activation._unregister(name, rec.backend, True)
        rec.state, rec.backend, rec.reason = "installed", None, ""
    if name == "slowimp":
        sys.modules.pop(rec.source, None)  # imported again, slowly, by the next first use


def race(threads: int, use: Callable[[], str | None]) -> list[str]:
    """Run ``use`` on ``threads`` threads released at the same instant; the problems: what ``use``
    returned (a wrong result), what it raised, and threads that did not finish within 60 s."""
    barrier = threading.Barrier(threads)
    problems: list[str] = []

    def run() -> None:
        barrier.wait()
        try:
            problem = use()
            if problem is not None:
                problems.append(problem)
        except BaseException as err:  # noqa: BLE001 - reported by the caller
            problems.append(f"{type(err).__name__}: {err}")

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    if any(w.is_alive() for w in workers):
        problems.append("a thread did not finish within 60 s")
    return problems


def main(name: str, runs: int, threads: int) -> int:
    if name == "cpu-by-fallback":
        return by_fallback(runs, threads)
    records = activation._discover()
    if name not in records:
        records[name] = activation._Record(name, f"_{name}_backend" if name != "slowimp" else "_slow_import_backend")
    device = nda.Device(name, 0)
    nda.asarray([1.0], device=device)  # the first activation: what one activation registers
    expected = kernel_count(name)
    for run in range(runs):
        unload(name)

        def use() -> str | None:
            got = (nda.asarray([1.0, 2.0], device=device) + 1.0).tolist()
            return None if got == [2.0, 3.0] else f"wrong result {got}"

        problems = race(threads, use)
        rec = activation._discover()[name]
        count = kernel_count(name)
        if rec.state != "loaded":
            problems.append(f"backend state {rec.state!r}: {rec.reason.splitlines()[0] if rec.reason else ''}")
        if count != expected:
            problems.append(f"{count} kernels registered, one activation registers {expected}")
        if problems:
            print(f"run {run} of {name}: {'; '.join(sorted(set(problems)))}")
            return 1
    print(f"ok {name} {runs}")
    return 0


def by_fallback(runs: int, threads: int) -> int:
    """cpu activated by the host fallback of sim ops at the same instant on several threads. Before:
    a thread that waited while another activated cpu took "activated meanwhile" for "not there",
    and 3 of 4 threads raised DispatchError "no kernel for op 'std' at key (cpu, ...)" (found by a
    user-style probe, for std, var, argmax, cumulative_sum and sort)."""
    import warnings

    import numpy as np

    warnings.simplefilter("ignore")
    x = nda.asarray(np.arange(6.0), device="sim")
    nda.std(nda.asarray([1.0]))  # cpu loaded once: what one activation registers
    expected = kernel_count("cpu")
    # ops sim runs through the host fallback (std, var and argmax have sim kernels since issue 37)
    ops = [
        ("isin", lambda: nda.isin(x, x).tolist(), [True] * 6),
        ("unique_values", lambda: nda.unique_values(x).tolist(), list(np.arange(6.0))),
        ("matrix_rank", lambda: int(nda.linalg.matrix_rank(nda.reshape(x, (2, 3)))), 2),
    ]
    for run in range(runs):
        unload("cpu")
        op, call, want = ops[run % len(ops)]

        def use() -> str | None:
            got = call()
            return None if got == want else f"wrong {op}: {got}"

        problems = race(threads, use)
        if kernel_count("cpu") != expected:
            problems.append(f"{kernel_count('cpu')} cpu kernels registered, one activation registers {expected}")
        if problems:
            print(f"run {run} of cpu-by-fallback: {'; '.join(sorted(set(problems)))}")
            return 1
    print(f"ok cpu-by-fallback {runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 4))
