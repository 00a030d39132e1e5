"""Results of a conformance run: one :class:`CellResult` per (op, dtype, layout), and the :class:`Report`.

Statuses:

``passed``
    the device's native kernel agreed with the reference on every drawn case and on the
    edge sweep;
``failed``
    it did not (or it registered a dtype the op does not declare); ``example`` is the
    minimal failing call and ``error`` says what differed;
``fallback``
    the device has no native kernel and runs the op through nda's host fallback (copies
    to cpu and back): the kit does not test cpu's kernel again;
``not covered``
    no kernel and no fallback, or the kit cannot build inputs for the cell; ``reason``
    says which.

:meth:`Report.table` is for people (a matrix op × dtype, then the failures with their
examples), :meth:`Report.as_dict`/:meth:`Report.to_json` for tools.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CellResult", "Report", "STATUSES"]

STATUSES = ("passed", "failed", "fallback", "not covered")
_SYMBOL = {"passed": "ok", "failed": "FAIL", "fallback": "host", "not covered": "--"}
_SHORT = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
}


@dataclass
class CellResult:
    """The outcome for one (op, dtype, layout) cell."""

    op: str
    dtype: str
    layout: str
    status: str
    examples: int = 0
    seconds: float = 0.0
    example: str | None = None
    error: str | None = None
    reason: str | None = None
    found_by: str | None = None
    #: cases that passed only with subnormals flushed (the device declares flushes_subnormals)
    flushed: int = 0
    case: Any = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        return f"{self.op}-{self.dtype}-{self.layout}"

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "case"}
        data["seconds"] = round(self.seconds, 4)
        return data

    def describe(self) -> str:
        """A few lines for people: what failed, the minimal example, what differed."""
        lines = [f"{self.op} on ({self.dtype}, {self.layout}): {self.status}"]
        if self.example:
            lines.append(f"minimal failing example ({self.found_by or 'hypothesis'}): {self.example}")
        if self.error:
            lines.append(self.error)
        if self.reason:
            lines.append(self.reason)
        return "\n".join(lines)


class Report:
    """All cell results of one run, with what was compared and how."""

    def __init__(
        self, device: str, reference: str, profile: str, results: list[CellResult], environment: dict[str, Any] | None = None, seconds: float = 0.0
    ) -> None:
        self.device = device
        self.reference = reference
        self.profile = profile
        self.results = results
        self.environment = environment or {}
        self.seconds = seconds

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for r in self.results:
            counts[r.status] += 1
        return counts

    @property
    def failures(self) -> list[CellResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> bool:
        return not self.failures

    def result(self, op: str, dtype: str, layout: str = "strided") -> CellResult:
        for r in self.results:
            if (r.op, r.dtype, r.layout) == (op, dtype, layout):
                return r
        raise KeyError(f"no result for ({op}, {dtype}, {layout}) in this report")

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "reference": self.reference,
            "profile": self.profile,
            "seconds": round(self.seconds, 2),
            "summary": self.counts(),
            "environment": self.environment,
            "results": [r.as_dict() for r in self.results],
        }

    def to_json(self, indent: int | None = None) -> str:
        """The report as JSON; by default compact, one cell result per line (readable in a CI log)."""
        if indent is not None:
            return json.dumps(self.as_dict(), indent=indent, default=str)
        data = self.as_dict()
        results = data.pop("results")
        rows = ",\n ".join(json.dumps(r, default=str) for r in results)
        return json.dumps(data, default=str)[:-1] + ', "results": [\n ' + rows + "\n]}"

    def table(self, *, failures: bool = True) -> str:
        """The op × dtype matrix (``ok``, ``FAIL``, ``host`` fallback, ``--`` not covered, blank: not declared)."""
        names = [n for n in _SHORT if any(r.dtype == n for r in self.results)]
        rows: dict[str, dict[str, str]] = {}
        for r in self.results:
            label = r.op if r.layout == "strided" else f"{r.op} [{r.layout}]"
            rows.setdefault(label, {})[r.dtype] = "ok*" if r.status == "passed" and r.flushed else _SYMBOL[r.status]
        width = max([len(label) for label in rows] + [2])
        counts = ", ".join(f"{v} {k}" for k, v in self.counts().items())
        lines = [
            f"nda conformance: {self.device} against {self.reference} (profile {self.profile}, {self.seconds:.1f} s): {counts}",
            "",
            " " * width + " " + "".join(f"{_SHORT[n]:>5}" for n in names),
        ]
        for label, by_dtype in rows.items():
            lines.append(f"{label:<{width}} " + "".join(f"{by_dtype.get(n, ''):>5}" for n in names))
        lines.append("")
        lines.append(
            "ok: passed  FAIL: failed  host: runs through the host fallback (not tested)  --: not covered  blank: dtype not declared by the op"
        )
        lines.extend(self._subnormal_legend())
        if failures and self.failures:
            lines.append("")
            lines.append(f"{len(self.failures)} failing cell(s):")
            for r in self.failures:
                lines.append("")
                lines.extend("  " + line for line in r.describe().splitlines())
        uncovered = [r for r in self.results if r.status == "not covered" and r.reason]
        if uncovered:
            reasons: dict[str, list[str]] = {}
            for r in uncovered:
                reasons.setdefault(r.reason or "", []).append(r.id)
            lines.append("")
            lines.append("not covered:")
            for reason, ids in reasons.items():
                shown = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
                lines.append(f"  {reason}: {shown}")
        return "\n".join(lines)

    def _subnormal_legend(self) -> list[str]:
        """The legend's lines on flushed subnormals, when the device (or the reference) declares flushing."""
        flushed = self.environment.get("flushes_subnormals") or []
        if not flushed:
            return []
        cells = sum(1 for r in self.results if r.status == "passed" and r.flushed)
        return [
            f"subnormals: the backend declares that its kernels flush {' and '.join(flushed)} subnormals to zero "
            f"(flushes_subnormals); a result that differs from the reference only that way passes, one that equals the "
            f"reference's on flushed inputs and results: ok* ({cells} cell(s) passed so)"
        ]

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"<conformance Report {self.device} vs {self.reference}: {self.counts()}>"
