"""The cross-backend conformance kit: every op × dtype × layout a device serves, against the reference.

For a backend vendor, through pytest (the plugin is installed with nda)::

    pytest --pyargs nda.testing.conformance --nda-device=mydev            # quick profile
    pytest --pyargs nda.testing.conformance --nda-device=mydev --nda-profile=deep --nda-report=report.json

From Python::

    from nda.testing import conformance
    report = conformance.run("sim", reference="cpu", ops=["add", "sum"])
    print(report.table())           # for people
    report.to_json()                # for tools

From a shell: ``python -m nda.testing.conformance sim --reference cpu --json report.json``
(``--jobs N``: worker processes, :mod:`nda.testing.conformance._parallel`). A backend that
declares ``flushes_subnormals`` is compared with those subnormals flushed on both sides
(:mod:`nda.testing.conformance._subnormals`).

The ordering profile (``--nda-profile=ordering``, ``--profile ordering``, ``run(...,
profile="ordering")``, and part of ``deep``) runs programs of dependent ops over the device
type's devices 0 and 1 and cpu against sequential execution on cpu, keeping the device's
queues busy so that a missing wait shows: see :mod:`nda.testing.conformance._ordering`. A
failing cell's note says whose bug it is (:mod:`nda.testing.conformance._blame`).
``python -m nda.testing.conformance --guide`` prints the backend guide that ships with nda.

The gradient mode (``--nda-gradients``, ``--gradients``, ``run(..., gradients=True)``) checks
a device's gradients (``nda.autograd``) against finite differences instead: see
:mod:`nda.testing.conformance._gradients`.

How a cell is tested is described in :mod:`nda.testing.conformance._kit`; what the inputs
are in :mod:`nda.testing.conformance._cases` and ``._generators``; the statuses in
:mod:`nda.testing.conformance._report`.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from ._cases import Case
from ._generators import GENERATED_OPS
from ._kit import Cell, ConformanceFailure, Runner, auto_jobs, cells, run
from ._report import STATUSES, CellResult, Report

__all__ = ["run", "cells", "auto_jobs", "Runner", "Cell", "Case", "CellResult", "Report", "STATUSES", "ConformanceFailure", "GENERATED_OPS"]
