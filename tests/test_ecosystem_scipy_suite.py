"""SciPy's own Array API tests of ``scipy.ndimage`` and ``scipy.signal``, run on nda in nda's suite.

``tests/_scipy_nda.py`` (a pytest plugin) adds ``nda-cpu`` and ``nda-sim`` to the backends
of SciPy's ``xp`` fixture. Each test here starts one pytest subprocess on one SciPy package
with nda only, on both devices. The subprocess sets ``SCIPY_ARRAY_API`` itself (to
``["array_api_strict"]``: SciPy's Array API support on, and no numpy/cupy/dask variants to
collect), so this module runs in the plain ``python -m pytest`` whatever the environment.
Every collected nda test must pass or be skipped by SciPy's own marks, except those
``tests/scipy_nda_assumptions.txt`` lists: SciPy's assumptions (a write into
``np.asarray(sim_array)``, nda's read-only host copy, for one), each with its reason, made
strict xfails by the plugin that must raise the exception the file names. So a new failure,
a listed test that starts to pass, or one that fails another way fails this test, which names
the SciPy test ids and their messages. That is stronger than "nothing fails on nda that
passes on array_api_strict", and needs no run on array_api_strict.

The two packages hold about 35,000 nda tests (about 25 minutes on two cores), so CI runs a
fixed share: the test files in ``CI_FILES``, one test in ``NDA_SCIPY_SAMPLE`` (default 10,
about 3,600 tests; chosen by a hash of the test id without the backend, so both devices run
the same tests and every run the same ones). That takes about 70 s on two cores (2026-11,
SciPy 1.17.1). ``NDA_SCIPY_SUITE`` picks what runs: ``ci`` (default), ``full`` (every test
of both packages, sample 1) or ``off``::

    NDA_SCIPY_SUITE=full .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_ecosystem_scipy_suite.py

The assumptions file covers what the CI sample meets; a full run may show more, to be sorted
into that file or reported as nda bugs. The comparison with array_api_strict per test id, in
the eight SciPy packages that use the ``xp`` fixture (``_scipy_nda.MODULES``)::

    .venv/bin/python tests/_scipy_nda.py            # special fft stats signal ndimage cluster integrate optimize
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

scipy = pytest.importorskip("scipy")
pytest.importorskip("array_api_strict")

sys.path.insert(0, str(Path(__file__).parent))
from _scipy_nda import ASSUMPTIONS, compare  # noqa: E402

#: The directory SciPy is installed in: pytest's rootdir for the run, so that test ids
#: read ``scipy/ndimage/tests/test_filters.py::...`` (outside the rootdir they lose the path).
_SITE = str(Path(scipy.__file__).parent.parent)

#: What CI runs of each package: its test files that use the ``xp`` fixture most.
CI_FILES = {
    "ndimage": ("test_filters", "test_morphology", "test_interpolation", "test_measurements", "test_fourier"),
    "signal": ("test_signaltools", "test_filter_design", "test_windows", "test_bsplines", "test_spectral"),
}

_MODE = os.environ.get("NDA_SCIPY_SUITE", "ci")
if _MODE == "full":
    _RUNS = [(m, (f"scipy.{m}.tests",), 1) for m in CI_FILES]
elif _MODE == "off":
    _RUNS = []
elif _MODE == "ci":
    _sample = int(os.environ.get("NDA_SCIPY_SAMPLE", "10"))
    _RUNS = [(m, tuple(f"scipy.{m}.tests.{f}" for f in files), _sample) for m, files in CI_FILES.items()]
else:
    raise ValueError(f"NDA_SCIPY_SUITE={_MODE!r}: expected 'ci', 'full' or 'off'")
#: A hung child fails the test; the full run of one module may take half an hour.
_TIMEOUT = 3600 if _MODE == "full" else 600


@pytest.mark.parametrize(
    "module, targets, sample",
    [pytest.param(*run, id=run[0]) for run in _RUNS] or [pytest.param("-", (), 1, marks=pytest.mark.skip(reason="NDA_SCIPY_SUITE=off"))],
)
def test_scipy_own_array_api_tests_pass_on_nda(module, targets, sample, tmp_path):
    report = tmp_path / "report.json"
    env = dict(os.environ, NDA_SCIPY_REPORT=str(report), NDA_SCIPY_SAMPLE=str(sample), NDA_SCIPY_BACKENDS="nda-cpu,nda-sim")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))
    # The child's own switch, whatever this process has: SciPy's Array API support on, and
    # its backend list cut to array_api_strict (no numpy/cupy/dask variants to collect).
    env["SCIPY_ARRAY_API"] = '["array_api_strict"]'
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "_scipy_nda",
        "-q",
        "-p",
        "no:cacheprovider",
        "--tb=short",
        "-rfE",
        "--disable-warnings",
        "-W",
        "ignore::nda.FallbackWarning",
        f"--rootdir={_SITE}",
        "--pyargs",
        *targets,
    ]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path, timeout=_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"scipy.{module}: SciPy's tests ran past {_TIMEOUT} s\n{(exc.stdout or b'')[-4000:]!r}")
    data = json.loads(report.read_text()) if report.exists() else {}
    results, messages = data.get("outcomes", {}), data.get("messages", {})
    # A strict xfail that passes, or raises another exception than the file says, is "failed".
    bad = sorted(k for k, v in results.items() if v in ("failed", "error"))
    if bad or proc.returncode != 0:
        lines = "\n".join(f"  {k}\n      {messages.get(k) or results[k]}" for k in bad)
        pytest.fail(
            f"scipy.{module}: {len(bad)} of SciPy's tests fail on nda (exit status {proc.returncode}); a SciPy "
            f"assumption goes in tests/{ASSUMPTIONS.name} with its reason, anything else is an nda bug:\n{lines}\n"
            f"--- SciPy's run (tail) ---\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}",
            pytrace=False,
        )
    counts, _ = compare(results)
    for device in ("nda-cpu", "nda-sim"):
        assert counts.get(device, {}).get("passed", 0) > 50, (device, counts)  # the plugin really added nda
