"""Shared pytest/hypothesis configuration for the nda test suite.

Hypothesis profiles (select one with the ``HYPOTHESIS_PROFILE`` environment variable):

* ``ci`` (default): 25 examples per test, no deadline; keeps the whole suite fast.
* ``dev``: 60 examples per test, for local work.
* ``deep``: 500 examples per test, for occasional thorough runs.

No profile uses the example database, and Hypothesis keeps what it stores anyway (its
constants cache) in ``tests/.hypothesis`` unless ``HYPOTHESIS_STORAGE_DIRECTORY`` says
otherwise, so running the suite writes nothing outside ``tests/``. A failing example is
printed with a ``@reproduce_failure`` blob; ``--hypothesis-seed`` replays a whole run.
"""

from __future__ import annotations

import os
from pathlib import Path

# SciPy reads this when it is first imported: its Array API support (and scikit-learn's,
# which requires it) is what tests/test_ecosystem_*.py exercise with nda arrays. NumPy
# input behaves the same with it set.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(__file__).resolve().parent / ".hypothesis")

settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    print_blob=True,
)
settings.register_profile("deep", max_examples=500, deadline=None, database=None, print_blob=True)
settings.register_profile("dev", max_examples=60, deadline=None, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config):
    # Edge values (inf, nan, int extremes, division by zero) make NumPy -- and therefore
    # nda's cpu backend and the expected values computed in the tests -- warn; that is
    # expected and not what these tests check.
    for message in (
        "overflow encountered",
        "invalid value encountered",
        "divide by zero encountered",
        "Mean of empty slice",
        "Degrees of freedom <= 0",
    ):
        config.addinivalue_line("filterwarnings", f"ignore:{message}:RuntimeWarning")
    # Raised while hypothesis explains a failure (libcst imports); not about nda.
    config.addinivalue_line("filterwarnings", "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")


# Engine fixtures shared by the engine, display and sim tests.
import nda  # noqa: E402
import pytest  # noqa: E402
from nda.engine.threaded import ThreadedEngine  # noqa: E402


@pytest.fixture
def all_tasks():
    """A threaded engine that sends every op to the workers (no inline fast path)."""
    previous = nda.engine.current()
    engine = nda.engine.use(ThreadedEngine(inline_limit=0))
    yield engine
    try:
        nda.waitall()
    except Exception:  # noqa: BLE001 - a test may leave an error behind on purpose
        pass
    nda.engine.use(previous if previous.name != "threaded" else "threaded")


@pytest.fixture
def threaded():
    """The default threaded engine, whatever NDA_ENGINE the suite runs under."""
    previous = nda.engine.current()
    engine = nda.engine.use(ThreadedEngine())
    yield engine
    try:
        nda.waitall()
    except Exception:  # noqa: BLE001
        pass
    nda.engine.use(previous)


@pytest.fixture
def failing_sin():
    """``sin`` of a float64 (3, 5) array fails inside the kernel; other shapes work."""

    def exploding_sin(x):
        raise ZeroDivisionError("kernel exploded")

    nda.dispatch.register("sin", "cpu", ["float64"], exploding_sin, priority=100, supports=lambda x: x.shape == (3, 5), backend="test-failing")
    yield
    nda.dispatch.unregister_backend("test-failing")
