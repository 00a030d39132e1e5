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

from ._report import CellResult, Report

__all__ = ["default_jobs", "groups", "run_parallel", "runtime_loads"]


def default_jobs() -> int:
    """``NDA_KIT_JOBS`` if set, else the number of CPU cores this process may use."""
    value = os.environ.get("NDA_KIT_JOBS", "").strip()
    if value:
        return max(1, int(value))
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
) -> Report:
    """Run ``cells`` (of one device) in ``jobs`` worker processes and merge what they report."""
    start = time.perf_counter()
    parts = groups(cells, jobs)
    wanted = {(c.op, c.dtype.name, c.layout.name) for c in cells}
    dtype_arg = ",".join(sorted({c.dtype.name for c in cells}))  # each worker classifies only these
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("NDA_KIT_JOBS", None)
    with tempfile.TemporaryDirectory(prefix="nda-kit-") as tmp:
        workers = []
        for i, ops in enumerate(parts):
            path = os.path.join(tmp, f"part{i}.json")
            command = [sys.executable, "-m", "nda.testing.conformance", str(device), "--reference", reference, "--profile", profile,
                       "--ops", ",".join(ops), "--json", path, "--quiet", "--jobs", "1"]
            if dtype_arg:
                command += ["--dtypes", dtype_arg]
            for spec in runtime_loads():
                command += ["--load", spec]
            log = open(os.path.join(tmp, f"part{i}.log"), "w+", encoding="utf-8")  # noqa: SIM115 - closed below
            workers.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env), path, log, ops))
        results: list[CellResult] = []
        for process, path, log, ops in workers:
            code = process.wait()
            log.seek(0)
            output = log.read()
            log.close()
            if code not in (0, 1) or not os.path.exists(path):
                raise RuntimeError(f"a conformance worker (ops {', '.join(ops[:5])}{' ...' if len(ops) > 5 else ''}) exited with {code}:\n{output[-3000:]}")
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            for row in data["results"]:
                if (row["op"], row["dtype"], row["layout"]) not in wanted:
                    continue
                result = CellResult(**{k: v for k, v in row.items() if k in CellResult.__dataclass_fields__})
                results.append(result)
                if progress is not None:
                    progress(result)
    order = {(c.op, c.dtype.name, c.layout.name): i for i, c in enumerate(cells)}
    results.sort(key=lambda r: order.get((r.op, r.dtype, r.layout), len(order)))
    return Report(str(device), reference, profile, results, {**environment, "jobs": len(parts)}, time.perf_counter() - start)
