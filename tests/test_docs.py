"""The backend guide (docs/writing-a-backend.md) and its example backend stay true.

* the guide's ```python blocks run as written (the README runner's rules, ``tests/_doc_runner.py``);
* the complete minimal backend the guide shows is, character for character,
  ``docs/examples/minimal_backend.py``, and that file passes the conformance kit on every
  cell it serves natively, frees its memory when nda drops buffers, and keeps views right;
* the guide's advice to run the deep profile before a release holds: a matmul that is right
  for square matrices only fails it.
"""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import _mutant_backends
import nda
from _doc_runner import ROOT, Document, blocks, check_block

GUIDE = ROOT / "docs" / "writing-a-backend.md"
EXAMPLE = ROOT / "docs" / "examples" / "minimal_backend.py"
_DOCUMENT = Document(GUIDE, blocks(GUIDE))


_RUN = [b for b in _DOCUMENT.blocks if not b.excerpt]  # indented blocks are excerpts of a class body


@pytest.mark.parametrize("block", _RUN, ids=[b.id for b in _RUN])
def test_guide_block(block, tmp_path, monkeypatch):
    check_block(_DOCUMENT, block, tmp_path, monkeypatch)


def test_the_guide_shows_the_tested_minimal_backend_verbatim():
    example = EXAMPLE.read_text(encoding="utf-8")
    assert any(b.code + "\n" == example for b in _DOCUMENT.blocks), "the guide's minimal backend differs from docs/examples/minimal_backend.py"


def test_the_guide_does_not_send_vendors_to_copy_another_backend():
    text = GUIDE.read_text(encoding="utf-8")
    assert "starting point to copy" not in text
    for topic in ("What `buffer_type` must provide", "`from_host(host, device, out=None)`", "Which dtype the key names",
                  "The `dtype` argument", "### Views", "How a backend learns a buffer is dead", "Before a release, run the deep profile"):
        assert topic in text, topic


def _mini():
    if str(ROOT / "docs" / "examples") not in sys.path:
        sys.path.insert(0, str(ROOT / "docs" / "examples"))
    if not nda.backends.serves("mini"):
        nda.backends.load("minimal_backend")
    return nda.backends.for_device_type("mini")


def test_the_minimal_backend_passes_the_conformance_kit():
    _mini()
    from nda.testing import conformance

    report = conformance.run("mini")
    counts = report.counts()
    assert counts["failed"] == 0, report.table()
    assert counts["passed"] >= 40  # add, multiply (numeric dtypes), sum, astype (all dtypes)
    assert counts["not covered"] == 0  # the host fallback serves every other cell


def test_loading_the_minimal_backend_twice_returns_the_loaded_one():
    backend = _mini()
    assert nda.backends.load("minimal_backend") is backend
    assert len(nda.dispatch.kernels("add", nda.KernelKey("mini", nda.float32))) == 1


@pytest.mark.filterwarnings("ignore::nda.FallbackWarning")
def test_the_minimal_backend_learns_when_buffers_die():
    backend = _mini()
    nda.waitall()
    gc.collect()
    before = backend.memory_stats(nda.Device("mini", 0))["in_use"]
    x = nda.asarray(np.ones(1000), device="mini")
    y = x + x
    v = y[10:20]
    assert backend.memory_stats(nda.Device("mini", 0))["in_use"] >= before + 16_000
    del x, y, v
    nda.waitall()
    gc.collect()
    assert backend.memory_stats(nda.Device("mini", 0))["in_use"] == before


@pytest.mark.filterwarnings("ignore::nda.FallbackWarning")
def test_views_on_the_minimal_backend_write_through():
    _mini()
    x = nda.reshape(nda.arange(6.0, device="mini"), (2, 3))
    x.T[0] = -1.0
    x[1] += 10.0
    np.testing.assert_array_equal(x.asnumpy(), [[-1.0, 1.0, 2.0], [9.0, 14.0, 15.0]])


def _square_only_matmul(a, b):
    result = np.matmul(a, b)
    if np.ndim(a) >= 2 and np.ndim(b) >= 2 and np.shape(a)[-2] != np.shape(b)[-1] and result.size:
        result = np.array(result, copy=True)
        result.reshape(-1)[-1] += 1  # a kernel written for square results: wrong on the others
    return result


#: A backend whose float64 matmul is right only when the result is square ("test_docs:square_matmul").
square_matmul = _mutant_backends.MutantBackend("mut_square_matmul", ("matmul",), ("matmul", ["float64"], _square_only_matmul))


def test_the_quick_profile_misses_a_square_only_matmul_and_the_deep_one_catches_it():
    """The guide's advice: run the deep profile before a release. The quick profile (8
    derandomized cases) passes this bug; a deep run (200 random cases) catches it about 24
    times in 25, so five runs all missing it would happen about once in 10 million."""
    from nda.testing import conformance

    if not nda.backends.serves("mut_square_matmul"):
        nda.backends.load("test_docs:square_matmul")
    quick = conformance.run("mut_square_matmul", ops=["matmul"], dtypes=["float64"], profile="quick")
    assert quick.counts()["passed"] == 1  # if the quick profile learns to catch it, update section 8 of the guide
    caught = 0
    for _ in range(5):
        caught += conformance.run("mut_square_matmul", ops=["matmul"], dtypes=["float64"], profile="deep").counts()["failed"]
        if caught:
            break
    assert caught


def test_the_kit_legend_does_not_read_fallback_as_failed(capsys):
    """Progress marks: '.', 'F' failed, 'h' host fallback, '-'; the table says 'host', not 'fb'."""
    from nda.testing.conformance.__main__ import main

    _mini()
    assert main(["mini", "--ops", "add,cos", "--dtypes", "float32"]) == 0
    captured = capsys.readouterr()
    assert "one mark per cell: . passed  F failed  h host fallback (not tested)  - not covered" in captured.err
    assert captured.err.splitlines()[1] in (".h", "h.")  # add is native, cos runs through the host fallback
    assert "host: runs through the host fallback (not tested)" in captured.out
    assert " fb " not in captured.out
