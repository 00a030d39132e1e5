"""The end of ``benchmarks/gpu_session.sh``: one summary of a GPU session, read from its logs.

``python -m benchmarks.gpu_session_summary LOGS`` prints, in this order (the device tool returns
the last 12,000 characters of a session's output, so the most important part comes last):

1. the speed tables the benchmark steps printed (``bench-*.txt``, as they are);
2. the failing conformance cells of each kit step (from its JSON report), one line each:
   op, dtype, layout, how it was found, the minimal example and the first line of the error
   (at most ``--failures`` lines per step, the rest counted);
3. the failing tests of the pytest step;
4. one line per step: its exit status, its time, and its counts (pytest's summary line;
   the kit's passed / failed / fallback / not covered).

Steps are listed in ``LOGS/steps.txt`` (``name|rc|seconds|log``), written by the script.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

__all__ = ["main", "summary"]


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _steps(logs: str) -> list[tuple[str, str, str, str]]:
    found = []
    for line in _read(os.path.join(logs, "steps.txt")).splitlines():
        parts = line.split("|")
        if len(parts) == 4:
            found.append((parts[0], parts[1], parts[2], parts[3]))
    return found


def _kit(path: str) -> dict | None:
    text = _read(path)
    if not text:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) and "results" in data and "summary" in data else None  # a kit report


def _counts(report: dict) -> str:
    summary = report.get("summary") or {}
    keys = ("passed", "failed", "fallback", "not covered")
    return ", ".join(f"{summary.get(k, 0)} {k}" for k in keys)


def _cell_line(row: dict) -> str:
    error = [e.strip() for e in (row.get("error") or "").splitlines() if e.strip()]
    first = " / ".join(error[:2])[:260]  # what differs, and the first element that does
    example = (row.get("example") or "")[:200]
    return f"  {row['op']:<22} {row['dtype']:<10} {row['layout']:<7} {row.get('found_by') or '':<16} | {example} | {first}"


def _pytest_line(text: str) -> str:
    lines = [line for line in text.splitlines() if re.search(r"\b(passed|failed|error|skipped)\b", line) and " in " in line]
    return lines[-1].strip("= ") if lines else (text.strip().splitlines() or ["(no output)"])[-1][:200]


def summary(logs: str, failures: int = 40) -> str:
    out: list[str] = []
    steps = _steps(logs)
    bench = [s for s in steps if s[0].startswith(("bench", "tune"))]
    if bench:
        out.append("=" * 30 + " speed")
        for name, rc, seconds, log in bench:
            out.append(f"-- {name} (rc={rc}, {seconds} s)")
            out.append(_read(os.path.join(logs, log)).rstrip() or "(no output)")
    out.append("=" * 30 + " failures")
    lines: list[str] = []
    for name, _rc, _seconds, log in steps:
        base = os.path.splitext(log)[0]
        report = _kit(os.path.join(logs, base + ".json"))
        if report is not None:
            failed = [r for r in report.get("results", []) if r.get("status") == "failed"]
            if failed:
                lines.append(f"{name}: {len(failed)} failing cell(s)")
                lines += [_cell_line(r) for r in failed[:failures]]
                if len(failed) > failures:
                    lines.append(f"  ... and {len(failed) - failures} more (in {base}.json)")
        elif name.startswith("tests"):
            failed_tests = [line for line in _read(os.path.join(logs, log)).splitlines() if line.startswith(("FAILED ", "ERROR "))]
            if failed_tests:
                lines.append(f"{name}: {len(failed_tests)} failing test(s)")
                lines += ["  " + t[:250] for t in failed_tests[:failures]]
    out += lines or ["none"]
    out.append("=" * 30 + " steps")
    for name, rc, seconds, log in steps:
        base = os.path.splitext(log)[0]
        report = _kit(os.path.join(logs, base + ".json"))
        if report is not None:
            detail = _counts(report) + f" ({report.get('seconds', 0):.0f} s in the kit)"
        elif name.startswith("tests"):
            detail = _pytest_line(_read(os.path.join(logs, log)))
        elif rc == "skipped":
            detail = "not run: the session's time budget was spent"
        else:
            tail = _read(os.path.join(logs, log)).strip().splitlines()
            detail = "ok" if rc == "0" else (tail[-1][:200] if tail else "(no output)")
        status = "ok " if rc == "0" else ("-- " if rc == "skipped" else "FAIL")
        out.append(f"{status:<4} {name:<12} rc={rc:<7} {seconds:>4} s   {detail}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_session_summary", description=__doc__.splitlines()[0])
    parser.add_argument("logs", help="the session's log folder")
    parser.add_argument("--failures", type=int, default=40, help="failing cells listed per kit step (default 40)")
    args = parser.parse_args(argv)
    print(summary(args.logs, args.failures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
