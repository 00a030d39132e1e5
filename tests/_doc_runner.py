"""Run the ```python blocks of a Markdown document as tests (README.md, docs/*.md).

THE RULES (for everyone who writes a snippet in README.md or docs/writing-a-backend.md):

1. Every fenced block whose info string is exactly ``python`` runs. Blocks of a document
   run in the order they appear, in ONE namespace per document (a later block may use
   names an earlier one defined), with a fresh temporary directory as the working
   directory and ``docs/examples`` on ``sys.path``. Other blocks (```bash, ```toml,
   ```text …) are not run.
2. A snippet must run as written: define the data it uses (``data = ...``) and import
   what it needs. Keep it small and fast (well under a second): it runs in every test run.
3. Expected output: a line that starts with ``print(`` (one line, at the top level),
   directly followed by comment lines, states that print's exact output: each following
   ``# text`` line is one output line (``#`` and one space removed; trailing spaces are
   ignored). A comment at the end of a code line is prose and is not checked.
4. A first line ``# requires: cuda`` (device types, comma-separated) runs the block only
   where each type has a device; elsewhere it is skipped with that reason. Use it for GPU
   snippets.
5. A block whose first line is indented is an excerpt of a class body (methods shown out
   of context) and is not run. Everything else must run.
6. Warnings (a ``FallbackWarning``, say) are allowed; an exception fails the block, named
   by its document and line (``README.md:123``).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

_FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the first code line
    code: str
    requires: tuple[str, ...] = ()
    excerpt: bool = False  # indented first line: methods shown out of their class, not run

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.line}"


@dataclass
class Document:
    """The blocks of one document and the namespace they share."""

    path: Path
    blocks: list[Block]
    namespace: dict[str, Any] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)


def blocks(path: Path) -> list[Block]:
    """The ```python blocks of ``path`` with their markers."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        info, start = m.group(1), i + 1
        j = start
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if info == "python":
            code = "\n".join(lines[start:j])
            raw = lines[start] if start < j else ""
            first = raw.strip()
            block = Block(path, start + 1, code)
            if first.startswith("# requires:"):
                block.requires = tuple(t.strip() for t in first.split(":", 1)[1].split(",") if t.strip())
            elif raw[:1] in (" ", "\t"):
                block.excerpt = True
            found.append(block)
        i = j + 1
    return found


def missing_devices(block: Block) -> list[str]:
    """The device types a block requires that have no device here."""
    import nda

    missing = []
    for device_type in block.requires:
        try:
            available = bool(nda.backends.devices(device_type))
        except Exception:  # noqa: BLE001 - an unavailable backend means "no device"
            available = False
        if not available:
            missing.append(device_type)
    return missing


def _chunks(block: Block) -> list[tuple[int, str, list[str] | None]]:
    """(first line, code, expected output or None): code up to each checked print, the print alone."""
    lines = block.code.splitlines()
    chunks: list[tuple[int, str, list[str] | None]] = []
    pending_start, pending = 0, []
    i = 0
    while i < len(lines):
        line = lines[i]
        expected: list[str] = []
        j = i + 1
        if line.startswith("print("):
            while j < len(lines) and lines[j].startswith("#"):
                expected.append(lines[j][2:].rstrip() if lines[j].startswith("# ") else lines[j][1:].rstrip())
                j += 1
        if expected:
            if pending:
                chunks.append((pending_start, "\n".join(pending), None))
            chunks.append((i, line, expected))
            pending_start, pending = j, []
            i = j
            continue
        if not pending:
            pending_start = i
        pending.append(line)
        i += 1
    if pending:
        chunks.append((pending_start, "\n".join(pending), None))
    return chunks


def run_block(document: Document, block: Block) -> None:
    """Run ``block`` in the document's namespace (after the earlier blocks, if they have not run)."""
    for earlier in document.blocks:
        if earlier is block:
            break
        if id(earlier) not in document.done and not earlier.excerpt and not missing_devices(earlier):
            _run(document, earlier)
    _run(document, block)


def _run(document: Document, block: Block) -> None:
    document.done.add(id(block))
    examples = str(ROOT / "docs" / "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    for offset, code, expected in _chunks(block):
        first = block.line + offset
        compiled = compile("\n" * (first - 1) + code, str(block.path), "exec")
        if expected is None:
            exec(compiled, document.namespace)
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compiled, document.namespace)
        actual = [line.rstrip() for line in out.getvalue().rstrip("\n").splitlines()]
        if actual != expected:
            raise AssertionError(
                f"{block.path.name}:{first}: {code.strip()} printed\n" + "\n".join(actual) + "\nbut the document says\n" + "\n".join(expected)
            )


def check_block(document: Document, block: Block, tmp_path: Path, monkeypatch: Any) -> None:
    """The body of a per-block test: skip excerpts and blocks whose devices are missing, else run."""
    import pytest

    if block.excerpt:
        pytest.skip(f"{block.id}: an excerpt of a class body, not run on its own")
    missing = missing_devices(block)
    if missing:
        pytest.skip(f"{block.id} needs a {', '.join(missing)} device, and none is available here")
    monkeypatch.chdir(tmp_path)
    run_block(document, block)
