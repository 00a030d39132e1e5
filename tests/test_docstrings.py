"""The NumPy-style docstrings of the most used functions (issue 37): their examples run.

``help(nda.sum)`` shows Parameters, Returns and Examples (``nda._docstrings``); every example
is a doctest run here on cpu, so what the documentation shows is what nda gives.
"""

from __future__ import annotations

import doctest
import inspect

import numpy as np
import pytest

import nda
from nda._docstrings import DOCUMENTED


def _function(op: str):
    target = nda
    for part in op.split("."):
        target = getattr(target, part)
    return target


def test_thirty_functions_are_documented():
    assert len(DOCUMENTED) >= 30


@pytest.mark.parametrize("op", DOCUMENTED)
def test_docstring_sections_and_examples_run(op):
    fn = _function(op)
    doc = fn.__doc__
    for section in ("Parameters\n----------", "Returns\n-------", "Examples\n--------"):
        assert section in doc, (op, section)
    for name in inspect.signature(fn).parameters:
        assert f"\n{name} : " in doc, (op, name)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(doc, {"nda": nda, "np": np}, f"nda.{op}", None, 0)
    assert test.examples, op
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    found = []
    runner.run(test, out=found.append)
    assert runner.failures == 0, "".join(found)


def test_help_shows_the_sections_and_methods_share_them():
    assert "Examples" in nda.NDArray.sum.__doc__
    assert nda.linalg.eigh.__doc__.count(">>>") >= 2
