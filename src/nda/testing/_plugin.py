"""The pytest plugin of nda.testing (entry point ``pytest11``): options, profiles, report.

A backend vendor runs::

    pytest --pyargs nda.testing.conformance --nda-device=mydev

which collects ``nda/testing/conformance/test_conformance.py``: one test per (op, dtype,
layout) of the device type (with ``--nda-gradients``: one per differentiable op and
floating dtype, checking gradients; see ``conformance._gradients``), named ``test_cell[add-int8-strided]``. A failing cell fails
with the minimal example Hypothesis (or the edge sweep) found; with ``--nda-profile=ordering``
(and after the cells of ``deep``) the tests are the ordering profile's program families,
``test_cell[ordering-copies-float64]``, and a failure shows the minimised program; cells that run through
the host fallback, or that nothing serves, are skipped with their status as the reason.
At the end the plugin prints the op × dtype table and, with ``--nda-report=PATH``,
writes the JSON report (``-`` prints it). With more than one job (``--nda-jobs``, by default
one per core for runs of a few hundred cells) the selected cells run in worker processes
when the first cell's test runs, and each test reports its cell's result.

The plugin is loaded by every pytest run in an environment where nda is installed, so
it only registers options and the ``nda-quick``/``nda-deep`` Hypothesis profiles; it
imports nda only when conformance tests are collected. With plugin autoloading off
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), pass ``-p nda.testing._plugin``.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from . import _profiles

__all__ = ["session", "ConformanceSession"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nda", "nda conformance kit (pytest --pyargs nda.testing.conformance --nda-device=TYPE)")
    group.addoption(
        "--nda-device", metavar="TYPE[:INDEX]", default=None, help="the device type (or device) whose kernels the conformance tests check, e.g. sim"
    )
    group.addoption(
        "--nda-reference",
        metavar="reference|DEVICE",
        default="reference",
        help="compare with the catalog's NumPy reference functions (default) or with another device, e.g. cpu",
    )
    group.addoption(
        "--nda-profile",
        choices=("quick", "deep", "ordering"),
        default=None,
        help="nda-quick (default: 8 cases per cell, derandomized), nda-deep (200 random cases per cell, then the ordering "
        "profile) or ordering (programs of dependent ops over two devices and cpu against sequential execution on cpu)",
    )
    group.addoption("--nda-ops", metavar="OP,OP", default=None, help="test only these ops")
    group.addoption("--nda-dtypes", metavar="DTYPE,DTYPE", default=None, help="test only these dtypes")
    group.addoption(
        "--nda-load",
        metavar="MODULE[:ATTR]",
        action="append",
        default=[],
        help="load a backend that is not installed before testing (nda.backends.load); repeatable",
    )
    group.addoption("--nda-report", metavar="PATH", default=None, help="write the JSON report to PATH ('-' prints it to the terminal)")
    group.addoption(
        "--nda-gradients",
        action="store_true",
        default=False,
        help="check the device's gradients (nda.autograd) against finite differences (or --nda-reference) instead of its kernels",
    )
    group.addoption(
        "--nda-jobs",
        metavar="N|auto",
        default="auto",
        help="worker processes the selected cells are split among, by op (default auto: one per core, one per 100 native cells at most; NDA_KIT_JOBS sets it)",
    )


def pytest_configure(config: pytest.Config) -> None:
    _profiles.register()


class ConformanceSession:
    """The runner, the cells and the results of one pytest session."""

    def __init__(self, config: pytest.Config) -> None:
        import nda
        from .conformance import Runner, cells

        device = config.getoption("nda_device")
        if not device:
            installed = ", ".join(sorted(r["name"] for r in nda.backends.status())) or "none"
            raise pytest.UsageError(
                f"the nda conformance tests need --nda-device=TYPE (installed backends: {installed}); e.g. pytest --pyargs nda.testing.conformance --nda-device=cpu"
            )
        profile = config.getoption("nda_profile")
        if profile is None:
            chosen = config.getoption("hypothesis_profile", None)
            profile = chosen.removeprefix("nda-") if chosen in _profiles.PROFILES else "quick"
        try:
            for spec in config.getoption("nda_load"):
                nda.backends.load(spec)
            if config.getoption("nda_gradients"):
                from .conformance._gradients import GradientRunner as Runner  # noqa: N814
                from .conformance._gradients import gradient_cells as cells
            from .conformance import _ordering

            families, ops = _ordering.split_ops(_split(config.getoption("nda_ops")))
            dtypes = _split(config.getoption("nda_dtypes"))
            self.runner = Runner(device, config.getoption("nda_reference"), profile=profile) if profile != "ordering" else None
            self.cells = cells(self.runner.device, ops=ops, dtypes=dtypes) if self.runner is not None and (ops is None or ops) else []
            #: the ordering profile's runner and cells (``--nda-profile=ordering``, and after the cells of ``deep``)
            self.ordering = None
            if not config.getoption("nda_gradients") and (profile == "ordering" or families or (profile == "deep" and families is None)):
                self.ordering = _ordering.OrderingRunner(device, profile=profile if profile in ("deep", "ordering") else "quick")
                self.cells = self.cells + _ordering.ordering_cells(self.ordering.device, dtypes=dtypes, families=families)
            if self.runner is None:
                self.runner = self.ordering
        except (ValueError, TypeError, nda.BackendError) as err:
            raise pytest.UsageError(f"nda conformance: {err}") from None
        self.results: list[Any] = []
        self.started = time.perf_counter()
        jobs = config.getoption("nda_jobs")
        self.jobs: int | None = None if jobs in (None, "auto") else int(jobs)
        #: the cells the collected tests run (set after collection); their results, when run in workers
        self.selected: list[Any] | None = None
        self.precomputed: dict[str, Any] | None = None
        self.jobs_used = 1

    def check(self, cell: Any) -> None:
        """Run one cell; fail or skip the calling test according to its status."""
        from .conformance._ordering import OrderingCell

        if isinstance(cell, OrderingCell):
            result = self.ordering.run_cell(cell)
        else:
            result = self._parallel_result(cell)
            if result is None:
                result = self.runner.run_cell(cell)
        self.results.append(result)
        if result.status == "failed":
            pytest.fail(result.describe(), pytrace=False)
        if result.status != "passed":
            pytest.skip(f"{result.status}: {result.reason}")

    def _parallel_result(self, cell: Any) -> Any:
        """The cell's result from worker processes (all selected cells run there at the first call),
        or None when the session runs cells one by one in this process."""
        if self.precomputed is None:
            from .conformance._kit import auto_jobs, environment
            from .conformance._parallel import run_parallel

            from .conformance._ordering import OrderingCell

            selected = [c for c in (self.selected if self.selected is not None else self.cells) if not isinstance(c, OrderingCell)]
            jobs = auto_jobs(selected) if self.jobs is None else self.jobs
            self.precomputed = {}
            if jobs > 1 and len(selected) > 1:
                runner = self.runner
                report = run_parallel(
                    runner.device, selected, reference=runner.reference, profile=runner.profile, jobs=jobs, environment=environment(runner)
                )
                self.precomputed = {r.id: r for r in report.results}
                self.jobs_used = report.environment.get("jobs")
        return self.precomputed.pop(cell.id, None)

    def report(self) -> Any:
        from .conformance._kit import environment
        from .conformance._report import Report

        runner = self.runner
        env = {**environment(runner), "jobs": self.jobs_used}
        if self.ordering is not None:
            from .conformance._ordering import runner_environment

            env["ordering"] = runner_environment(self.ordering)
        reference = getattr(runner, "reference_label", runner.reference)
        return Report(str(runner.device), reference, runner.profile, self.results, env, time.perf_counter() - self.started)


_SESSION = pytest.StashKey[ConformanceSession]()


@pytest.hookimpl(trylast=True)  # after -k/-m deselection
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Record which cells the collected (selected) tests run: those are the ones workers compute."""
    found = config.stash.get(_SESSION, None)
    if found is not None:
        found.selected = [item.callspec.params["nda_cell"] for item in items if hasattr(item, "callspec") and "nda_cell" in item.callspec.params]


def _split(value: str | None) -> list[str] | None:
    return None if not value else [v.strip() for v in value.split(",") if v.strip()]


def session(config: pytest.Config) -> ConformanceSession:
    """The conformance session of this pytest run (created when the tests are collected)."""
    found = config.stash.get(_SESSION, None)
    if found is None:
        found = config.stash[_SESSION] = ConformanceSession(config)
    return found


@pytest.fixture(scope="session")
def nda_conformance(request: pytest.FixtureRequest) -> ConformanceSession:
    """The conformance session: ``nda_conformance.check(cell)`` runs one cell."""
    return session(request.config)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    found = config.stash.get(_SESSION, None)
    if found is None or not found.results:
        return
    report = found.report()
    terminalreporter.write_sep("=", "nda conformance")
    terminalreporter.write_line(report.table(failures=False))
    path = config.getoption("nda_report")
    if path == "-":
        terminalreporter.write_line(report.to_json())
    elif path:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(report.to_json() + "\n")
        terminalreporter.write_line(f"nda conformance: JSON report written to {path}")


if "hypothesis" in sys.modules:  # registered as early as possible for --hypothesis-profile=nda-deep
    _profiles.register()
