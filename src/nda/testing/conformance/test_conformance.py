"""The conformance tests a backend vendor runs: one test per (op, dtype, layout) of a device type.

    pytest --pyargs nda.testing.conformance --nda-device=mydev [--nda-reference=cpu] [--nda-profile=deep]

The options, the Hypothesis profiles and the final table/JSON report come from the
pytest plugin :mod:`nda.testing._plugin`; what each test checks is described in
:mod:`nda.testing.conformance._kit`.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import pytest


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "nda_cell" in metafunc.fixturenames:
        from nda.testing._plugin import session

        cells = session(metafunc.config).cells
        metafunc.parametrize("nda_cell", cells, ids=[c.id for c in cells])


def test_cell(nda_cell: Any, nda_conformance: Any) -> None:
    nda_conformance.check(nda_cell)
