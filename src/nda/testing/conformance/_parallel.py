"""Run the conformance kit in several processes: cells split by op, reports merged.

A device's cells are independent, so ``run(..., jobs=N)`` (``--jobs N`` on the command line,
``--nda-jobs N`` for the pytest plugin) starts N worker processes, each running
``python -m nda.testing.conformance`` on a group of ops, and merges their JSON reports into
one :class:`Report`. On a GPU this is what makes a whole-catalog run short: a cell's time is
mostly Python, Hypothesis and first-use kernel compilation, which processes do in parallel,
not the device's work. Workers are fresh interpreters (not forks: a CUDA context does not
survive ``fork``); they see the parent's ``sys.path`` and load the backends the parent loaded
at run time (``nda.backends.load("module:attr")``).

Ops are assigned to workers largest first (by their number of native cells), each to the
least loaded worker, so the groups take about the same time; all cells of an op run in one
worker (its kernels compile once).

``isolate=True`` (``--isolate`` on the command line) runs **one op per worker process**, at most
``jobs`` at a time, largest ops first. A device error that outlives the op that caused it (an
illegal memory access leaves a CUDA context unusable: on an H200, one corrupting csr op failed
every later cell of its worker) then costs that op's cells only. A worker that crashes, or runs
past ``worker_timeout`` seconds (then killed), fails its op's cells with what it printed last,
and the run goes on. ``deadline`` (seconds from the start) bounds the whole run: at the
deadline, running workers are killed and their ops, and the ops not started, are reported
"not covered" (so that a session with a time limit always gets its report).

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Iterable

import nda
from nda._config import env_int

from ._report import CellResult, Report

__all__ = ["default_jobs", "groups", "run_parallel", "runtime_loads"]

_LOG_TAIL = 3000


def default_jobs() -> int:
    """``NDA_KIT_JOBS`` if set, else the number of CPU cores this process may use."""
    if os.environ.get("NDA_KIT_JOBS", "").strip():
        return env_int("NDA_KIT_JOBS", 1, minimum=1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def groups(cells: Iterable[Any], jobs: int) -> list[list[str]]:
    """The ops of ``cells`` in at most ``jobs`` groups of about equal work (native cells count)."""
    weight: dict[str, int] = {}
    for cell in cells:
        weight[cell.op] = weight.get(cell.op, 0) + (1 if cell.route == "native" else 0)
    loads: list[tuple[int, list[str]]] = [(0, []) for _ in range(max(1, min(jobs, len(weight))))]
    for op in sorted(weight, key=lambda o: (-weight[o], o)):
        i = min(range(len(loads)), key=lambda k: loads[k][0])
        loads[i] = (loads[i][0] + max(weight[op], 1), loads[i][1] + [op])
    return [sorted(ops) for _, ops in loads if ops]


def runtime_loads() -> list[str]:
    """The ``module:attr`` specs of loaded backends that are not installed entry points."""
    from importlib.metadata import entry_points

    installed = {ep.value for ep in entry_points(group="nda.backends")}
    return [r["source"] for r in nda.backends.status() if r["state"] == "loaded" and r["source"] not in installed]


def run_parallel(
    device: Any,
    cells: list[Any],
    *,
    reference: str,
    profile: str,
    jobs: int,
    environment: dict[str, Any],
    progress: Callable[[CellResult], None] | None = None,
    isolate: bool = False,
    worker_timeout: float | None = None,
    deadline: float | None = None,
) -> Report:
    """Run ``cells`` (of one device) in ``jobs`` worker processes and merge what they report
    (``isolate``: one op per process, ``jobs`` at a time; see the module docstring)."""
    start = time.perf_counter()
    parts = groups(cells, jobs) if not isolate else [[op] for op in _largest_first(cells)]
    wanted = {(c.op, c.dtype.name, c.layout.name) for c in cells}
    dtype_arg = ",".join(sorted({c.dtype.name for c in cells}))  # each worker classifies only these
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("NDA_KIT_JOBS", None)
    results: list[CellResult] = []

    def command(ops: list[str], path: str) -> list[str]:
        line = [
            sys.executable,
            "-m",
            "nda.testing.conformance",
            str(device),
            "--reference",
            reference,
            "--profile",
            profile,
            "--ops",
            ",".join(ops),
            "--json",
            path,
            "--quiet",
            "--jobs",
            "1",
        ]
        if dtype_arg:
            line += ["--dtypes", dtype_arg]
        for spec in runtime_loads():
            line += ["--load", spec]
        return line

    def unreached(ops: list[str], why: str) -> None:
        for c in cells:
            if c.op in ops:
                results.append(CellResult(op=c.op, dtype=c.dtype.name, layout=c.layout.name, status="not covered", reason=why))

    def collect(ops: list[str], path: str, code: int | None, output: str) -> None:
        if code in (0, 1) and os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            found = [
                CellResult(**{k: v for k, v in row.items() if k in CellResult.__dataclass_fields__})
                for row in data["results"]
                if (row["op"], row["dtype"], row["layout"]) in wanted
            ]
        elif isolate:
            why = f"ran past {worker_timeout:g} s and was killed" if code is None else f"exited with {code}"
            error = f"the worker process of op {ops[0]!r} {why} (its cells could not be reported); its last output:\n{output[-_LOG_TAIL:]}"
            found = [
                CellResult(op=c.op, dtype=c.dtype.name, layout=c.layout.name, status="failed", error=error)
                for c in cells
                if c.op in ops and c.route == "native"
            ]
            found += [
                CellResult(op=c.op, dtype=c.dtype.name, layout=c.layout.name, status=_STATUS[c.route], reason=_REASON[c.route])
                for c in cells
                if c.op in ops and c.route != "native"
            ]
        else:
            raise RuntimeError(
                f"a conformance worker (ops {', '.join(ops[:5])}{' ...' if len(ops) > 5 else ''}) exited with {code}:\n{output[-_LOG_TAIL:]}"
            )
        for result in found:
            results.append(result)
            if progress is not None:
                progress(result)

    with tempfile.TemporaryDirectory(prefix="nda-kit-") as tmp:
        pending = list(enumerate(parts))
        running: list[tuple[Any, str, Any, list[str], float]] = []
        slots = max(1, jobs) if isolate else len(parts)  # groups were made for ``jobs`` workers: all at once
        try:
            while pending or running:
                while pending and len(running) < slots:
                    i, ops = pending.pop(0)
                    path = os.path.join(tmp, f"part{i}.json")
                    log = open(os.path.join(tmp, f"part{i}.log"), "w+", encoding="utf-8")  # noqa: SIM115 - closed when collected
                    process = subprocess.Popen(command(ops, path), stdout=log, stderr=subprocess.STDOUT, env=env)
                    running.append((process, path, log, ops, time.monotonic()))
                if deadline is not None and time.perf_counter() - start > deadline:
                    why = f"the run's deadline ({deadline:g} s) passed before this op ran to its end"
                    for process, _, log, ops, _ in running:
                        process.kill()
                        process.wait()
                        log.close()
                        unreached(ops, why)
                    for _, ops in pending:
                        unreached(ops, why)
                    running, pending = [], []
                    break
                still = []
                for process, path, log, ops, began in running:
                    code = process.poll()
                    if code is None and worker_timeout is not None and time.monotonic() - began > worker_timeout:
                        process.kill()
                        process.wait()
                    elif code is None:
                        still.append((process, path, log, ops, began))
                        continue
                    log.seek(0)
                    output = log.read()
                    log.close()
                    collect(ops, path, code, output)
                if len(still) == len(running):
                    time.sleep(0.05)
                running = still
        finally:
            for process, _, log, _, _ in running:  # an error while collecting: no worker outlives the run
                process.kill()
                process.wait()
                log.close()
    order = {(c.op, c.dtype.name, c.layout.name): i for i, c in enumerate(cells)}
    results.sort(key=lambda r: order.get((r.op, r.dtype, r.layout), len(order)))
    return Report(
        str(device),
        reference,
        profile,
        results,
        {**environment, "jobs": len(parts) if not isolate else min(jobs, len(parts)), "isolate": isolate},
        time.perf_counter() - start,
    )


_STATUS = {"fallback": "fallback", "missing": "not covered", "undeclared": "failed"}
_REASON = {
    "fallback": "no native kernel; nda runs it on cpu through the host fallback",
    "missing": "no kernel and no host fallback",
    "undeclared": "a kernel is registered for a dtype the op does not declare",
}


def _largest_first(cells: Iterable[Any]) -> list[str]:
    """The ops of ``cells``, most native cells first (the longest workers start first)."""
    weight: dict[str, int] = {}
    for cell in cells:
        weight[cell.op] = weight.get(cell.op, 0) + (1 if cell.route == "native" else 0)
    return sorted(weight, key=lambda o: (-weight[o], o))
