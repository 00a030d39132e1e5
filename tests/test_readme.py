"""The README's ```python blocks run as written and print what they say they print.

The rules a snippet follows (run order, one namespace, expected output, GPU markers) are
in ``tests/_doc_runner.py``; in short:

* every ```python block runs, in order, in one namespace, in a temporary directory;
* a one-line ``print(...)`` directly followed by ``# ...`` comment lines must print
  exactly those lines (a comment at the end of a code line is prose);
* a first line ``# requires: cuda`` runs the block only where a cuda device exists
  (skipped with the reason elsewhere); a block whose first line is indented (methods
  shown out of their class) is not run.

The README must also not point at files outside the repository.
"""

from __future__ import annotations

import re

import pytest

from _doc_runner import ROOT, Document, blocks, check_block

README = ROOT / "README.md"
_DOCUMENT = Document(README, blocks(README))


_RUN = [b for b in _DOCUMENT.blocks if not b.excerpt]  # indented blocks are excerpts of a class body


@pytest.mark.parametrize("block", _RUN, ids=[b.id for b in _RUN])
def test_readme_block(block, tmp_path, monkeypatch):
    check_block(_DOCUMENT, block, tmp_path, monkeypatch)


def test_the_readme_has_python_blocks_to_run():
    assert len(_DOCUMENT.blocks) >= 3


def test_the_readme_points_only_at_files_inside_the_repository():
    text = README.read_text(encoding="utf-8")
    assert "../" not in text, "the README points outside the repository"
    for target in re.findall(r"\]\(([^)#]+)\)", text):  # Markdown links to files
        if "://" not in target:
            assert (ROOT / target).exists(), f"the README links to {target}, which is not in the repository"
    for path in re.findall(r"`((?:docs|src|tests|plugins|benchmarks|notebooks)/[\w./-]+)`", text):
        assert (ROOT / path).exists(), f"the README names {path}, which is not in the repository"
