"""``python -m nda.testing.conformance DEVICE``: run the conformance kit, print the table and/or JSON.

Exits with status 1 when a cell failed, 2 on a usage error. ``--json -`` prints the JSON
report on stdout (the table then goes to stderr), ``--json PATH`` writes it to a file.
``--profile ordering`` runs the ordering profile (programs of dependent ops over two devices
and cpu; :mod:`._ordering`), ``--profile deep`` runs it after the deep value cells; ``--guide``
prints the backend guide that ships with nda. ``--jobs N`` splits the cells (by op) among N worker processes (``auto``, the default: one
per core, one per 100 native cells at most; see :mod:`._parallel`). ``--isolate`` runs one op
per worker process, N at a time, so that a crash or a device left unusable by one op cannot
fail another op's cells; ``--worker-timeout S`` then kills a worker after S seconds, and
``--deadline S`` ends a run with worker processes after S seconds, with a report.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import argparse
import sys

from ._kit import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nda.testing.conformance", description="Compare a device's kernels with the reference, per (op, dtype, layout)."
    )
    parser.add_argument("device", nargs="?", help="device type or device, e.g. sim or sim:1")
    parser.add_argument("--reference", default="reference", help="'reference' (the catalog's NumPy functions, default) or a device such as cpu")
    parser.add_argument(
        "--profile",
        choices=("quick", "deep", "ordering"),
        default="quick",
        help="quick (default), deep (more cases, and the ordering profile), or ordering (programs of dependent ops "
        "over two devices and cpu, against sequential execution on cpu)",
    )
    parser.add_argument(
        "--guide",
        action="store_true",
        help="print the backend guide (Markdown) that ships with nda; where it and its example backend are goes to stderr",
    )
    parser.add_argument("--ops", help="comma-separated ops to test (default: all)")
    parser.add_argument("--dtypes", help="comma-separated dtypes to test (default: all)")
    parser.add_argument("--load", action="append", default=[], metavar="MODULE[:ATTR]", help="load a backend at run time first (repeatable)")
    parser.add_argument("--json", metavar="PATH", help="write the JSON report to PATH ('-': stdout)")
    parser.add_argument("--quiet", action="store_true", help="no progress dots")
    parser.add_argument("--gradients", action="store_true", help="check the device's gradients (nda.autograd) instead of its kernels")
    parser.add_argument(
        "--jobs",
        default="auto",
        metavar="N|auto",
        help="worker processes, cells split by op (default auto: one per core, one per 100 native cells at most; NDA_KIT_JOBS sets it)",
    )
    parser.add_argument(
        "--isolate", action="store_true", help="one op per worker process, --jobs at a time: a crash or a corrupted device fails that op's cells only"
    )
    parser.add_argument("--worker-timeout", type=float, metavar="S", help="with --isolate: kill a worker after S seconds and fail its op's cells")
    parser.add_argument(
        "--deadline", type=float, metavar="S", help="with worker processes: end the run after S seconds, reporting unfinished ops as not covered"
    )
    args = parser.parse_args(argv)
    if args.guide:
        from ._guide import guide_path, example_path

        print(f"the backend guide: {guide_path()}\nits complete minimal backend: {example_path()}", file=sys.stderr)
        sys.stdout.write(guide_path().read_text(encoding="utf-8"))
        return 0
    if not args.device:
        parser.error("the device to test is required (or --guide)")

    import nda

    for spec in args.load:
        nda.backends.load(spec)
    table_out = sys.stderr if args.json == "-" else sys.stdout

    if not args.quiet:
        print("one mark per cell: . passed  F failed  h host fallback (not tested)  - not covered", file=sys.stderr)

    def progress(result: object) -> None:
        if not args.quiet:
            mark = {"passed": ".", "failed": "F", "fallback": "h", "not covered": "-"}[result.status]  # type: ignore[attr-defined]
            print(mark, end="", file=sys.stderr, flush=True)

    def split(v: str | None) -> list[str] | None:
        return [s.strip() for s in v.split(",") if s.strip()] if v else None

    try:
        jobs = None if args.jobs == "auto" else int(args.jobs)
        report = run(
            args.device,
            reference=args.reference,
            ops=split(args.ops),
            dtypes=split(args.dtypes),
            profile=args.profile,
            progress=progress,
            gradients=args.gradients,
            jobs=jobs,
            isolate=args.isolate,
            worker_timeout=args.worker_timeout,
            deadline=args.deadline,
        )
    except (ValueError, TypeError, nda.BackendError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(file=sys.stderr)
    print(report.table(), file=table_out)
    if args.json == "-":
        print(report.to_json())
    elif args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(report.to_json() + "\n")
        print(f"JSON report written to {args.json}", file=table_out)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
