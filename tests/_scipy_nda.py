"""A pytest plugin that runs SciPy's own Array API tests with nda as one more backend.

SciPy parametrises its Array API tests with the ``xp`` fixture of ``scipy/conftest.py``
(numpy, array_api_strict, torch, cupy, jax.numpy, dask.array: whichever are installed,
with ``SCIPY_ARRAY_API=1``). This plugin, loaded with ``-p _scipy_nda`` before SciPy's
conftest is collected, replaces that fixture in SciPy's conftest module (nothing in
site-packages is edited) by one whose parameters are SciPy's plus ``nda-cpu`` and
``nda-sim`` (the devices in ``NDA_SCIPY_DEVICES``, default ``cpu,sim``):

* the test body runs with the device as nda's default device (``with nda.Device(d):``),
  as SciPy's ``SCIPY_DEVICE`` makes PyTorch's default device: SciPy's tests create their
  arrays with ``xp.asarray(...)`` and no ``device=``;
* SciPy's ``skip_xp_backends``/``xfail_xp_backends`` marks apply to nda as to any backend
  SciPy does not name: ``np_only`` skips it, a mark naming another backend does not.
  ``cpu_only`` (SciPy's statement that a function has no device-agnostic path: it converts
  to NumPy) does not skip ``nda-sim``: those tests run there, through nda's read-only host
  copies (README, "Ecosystem"), so a host copy that SciPy writes into is a loud error in
  the run, never a lost write. ``NDA_SCIPY_CPU_ONLY=skip`` skips them on sim instead;
* SciPy's ``devices`` fixture (``devices() + [None]``) assumes the 2024.12 list that SciPy
  pins array_api_strict to; for nda it gets the 2025.12 tuple as ``[*devices(), None]``,
  so the device-propagation tests run (README lists them);
* ``tests/scipy_nda_assumptions.txt`` lists test ids (``*`` matches any characters) that
  fail on nda because of an assumption of SciPy's own, each with its reason and the
  exception it raises; they are marked ``xfail(strict=True, raises=...)``, so the run
  shows if one starts to pass or fails another way. Test ids read from ``scipy/`` on
  (``--rootdir`` = SciPy's site-packages keeps the file in them);
* ``NDA_SCIPY_BACKENDS`` (``nda-cpu,nda-sim``…) keeps only the tests of those backends, and
  ``NDA_SCIPY_SAMPLE=n`` one test in ``n``, chosen by a hash of the id without the backend.

Run (one module, both devices, array_api_strict in the same run)::

    PYTHONPATH=tests NDA_SCIPY_BACKENDS=array_api_strict,nda-cpu,nda-sim .venv/bin/python -m pytest \\
        -p _scipy_nda -q -p no:cacheprovider --rootdir=.venv/lib/python3.11/site-packages \\
        --pyargs scipy.ndimage.tests

``python tests/_scipy_nda.py [module ...]`` runs the modules (default: all of
``MODULES``) one by one with ``NDA_SCIPY_REPORT`` set and prints the per-module table of
nda against array_api_strict and every test id that fails on nda but passes on
array_api_strict (``tests/test_ecosystem_scipy_suite.py`` runs part of this in the suite).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import zlib
from pathlib import Path
from typing import Any, Iterator

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402

#: SciPy's test packages that use the ``xp`` fixture, in the order the full run takes them.
MODULES = ("special", "fft", "stats", "signal", "ndimage", "cluster", "integrate", "optimize")

ASSUMPTIONS = Path(__file__).with_name("scipy_nda_assumptions.txt")

_XP_IDS = ("array_api_strict", "nda-cpu", "nda-sim", "numpy")


class NdaBackend:
    """The ``xp`` fixture's parameter for nda on one device.

    ``__name__`` is what SciPy's skip/xfail marks compare with a backend name.
    """

    __name__ = "nda"

    def __init__(self, device: str) -> None:
        self.device = device

    def __repr__(self) -> str:
        return f"nda-{self.device}"


def devices_from_env() -> list[str]:
    return [d for d in os.environ.get("NDA_SCIPY_DEVICES", "cpu,sim").split(",") if d]


def load_assumptions(path: Path = ASSUMPTIONS) -> dict[str, tuple[str, str]]:
    """{test id or pattern: (exception type names, reason)} from the assumptions file.

    Each line is ``<test id> | <ExceptionType>[,<ExceptionType>...] | <reason>``; ``#`` starts
    a comment. In a test id, ``*`` stands for any characters (``test_correlate14[nda-sim-*]``:
    every parametrisation of that test on sim); nothing else is special (``[`` is literal).
    """
    out: dict[str, tuple[str, str]] = {}
    if not path.exists():
        return out
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split("|", 2)]
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"{path.name}:{number}: expected '<test id> | <ExceptionType> | <reason>', got {line!r}")
        test_id, exc, reason = parts
        _exception_types(exc)  # a typo in the file is an error at load, not a mismatch at run time
        out[test_id] = (exc, reason)
    return out


def match_assumption(assumptions: dict[str, tuple[str, str]], test_id: str) -> tuple[str, str] | None:
    """The entry for ``test_id``: its exact line, else the first pattern (``*``) that matches it."""
    entry = assumptions.get(test_id)
    if entry is not None:
        return entry
    for pattern, value in assumptions.items():
        if "*" in pattern and re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), test_id):
            return value
    return None


def _exception_types(names: str) -> tuple[type[BaseException], ...]:
    """``"ValueError"`` or ``"AssertionError,ValueError"`` as exception classes (builtins only)."""
    import builtins

    out = []
    for name in names.split(","):
        exc = getattr(builtins, name.strip(), None)
        if not (isinstance(exc, type) and issubclass(exc, BaseException)):
            raise ValueError(f"tests/scipy_nda_assumptions.txt: {name!r} is not a builtin exception type")
        out.append(exc)
    return tuple(out)


def _patch_conftest(conftest: Any) -> None:
    """Replace SciPy's ``xp`` and ``devices`` fixtures with ones that also serve nda."""
    if getattr(conftest, "_nda_patched", False):
        return
    import nda

    original_xp = conftest.xp._get_wrapped_function()
    original_devices = conftest.devices._get_wrapped_function()
    params = list(conftest.xp_available_backends)
    params += [pytest.param(NdaBackend(d), id=f"nda-{d}", marks=pytest.mark.array_api_backends) for d in devices_from_env()]
    conftest.xp_known_backends.add("nda")
    skip_cpu_only_on_sim = os.environ.get("NDA_SCIPY_CPU_ONLY", "run") == "skip"

    def xp(request: Any) -> Iterator[Any]:
        backend = request.param
        if not isinstance(backend, NdaBackend):
            yield from original_xp(request)
            return
        from scipy._lib._array_api import default_xp
        from scipy._lib.array_api_extra.testing import patch_lazy_xp_functions

        cpu_only = conftest.xp_skip_cpu_only_backends
        added = backend.device != "cpu" and skip_cpu_only_on_sim and "nda" not in cpu_only
        if added:
            cpu_only.add("nda")
        try:
            conftest.skip_or_xfail_xp_backends(request, "skip")
            conftest.skip_or_xfail_xp_backends(request, "xfail")
        finally:
            if added:
                cpu_only.discard("nda")
        with nda.Device(backend.device), patch_lazy_xp_functions(request=request, xp=nda), default_xp(nda):
            yield nda

    def devices(xp: Any) -> Any:
        if xp is nda:
            # SciPy's fixture is ``devices() + [None]``: the 2024.12 list (see the docstring).
            return [*nda.__array_namespace_info__().devices(), None]
        return original_devices(xp)

    conftest.xp = pytest.fixture(params=params)(xp)
    conftest.devices = pytest.fixture(devices)
    conftest._nda_patched = True


def pytest_plugin_registered(plugin: Any, plugin_name: str, manager: Any) -> None:
    # SciPy's conftest is registered when its directory is first visited; pytest parses its
    # fixtures only when that Directory node is collected, after this hook.
    if getattr(plugin, "__name__", None) == "scipy.conftest" or str(plugin_name).replace("\\", "/").endswith("site-packages/scipy/conftest.py"):
        _patch_conftest(plugin)


def _backend_id(item: Any) -> str | None:
    """The id of the ``xp`` parameter of a test (``nda-sim``, ``array_api_strict``…), or None."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or "xp" not in callspec.params:
        return None
    param = callspec.params["xp"]
    return repr(param) if isinstance(param, NdaBackend) else getattr(param, "__name__", str(param))


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    wanted = os.environ.get("NDA_SCIPY_BACKENDS")
    if wanted:
        # Only the tests parametrised by these backends (``-k nda`` would also match "boundary").
        backends = set(wanted.split(","))
        keep = [item for item in items if _backend_id(item) in backends]
        if len(keep) < len(items):
            config.hook.pytest_deselected(items=[item for item in items if _backend_id(item) not in backends])
            items[:] = keep
    sample = int(os.environ.get("NDA_SCIPY_SAMPLE", "1"))
    if sample > 1:
        # One test in ``sample``, chosen by its id without the backend, so that every
        # backend runs the same tests (CI's share of a module that takes too long whole).
        keep, drop = [], []
        for item in items:
            split = split_backend(_short_id(item.nodeid))
            generic = split[1] if split else _short_id(item.nodeid)
            (keep if zlib.crc32(generic.encode()) % sample == 0 else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
    assumptions = load_assumptions()
    for item in items:
        entry = match_assumption(assumptions, _short_id(item.nodeid))
        if entry is not None:
            exc, reason = entry
            item.add_marker(pytest.mark.xfail(reason=f"{ASSUMPTIONS.name}: {reason}", raises=_exception_types(exc), strict=True))


def _short_id(nodeid: str) -> str:
    """A node id from ``scipy/`` on, whatever the path SciPy was collected from."""
    i = nodeid.find("scipy/")
    return nodeid[i:] if i >= 0 else nodeid


# ----------------------------------------------------------------------------- per-id report

_results: dict[str, str] = {}
_messages: dict[str, str] = {}


def pytest_runtest_logreport(report: Any) -> None:
    if not os.environ.get("NDA_SCIPY_REPORT"):
        return
    key = _short_id(report.nodeid)
    if hasattr(report, "wasxfail"):  # xfail marks, and pytest.xfail() in the fixture
        outcome = "xfailed" if report.skipped else "xpassed"
    elif report.when == "call" or report.outcome == "skipped":
        outcome = report.outcome
    elif report.outcome == "failed":  # in setup or teardown
        outcome = "error"
    else:
        return
    _results[key] = outcome if _results.get(key) != "error" else "error"
    if outcome in ("failed", "error"):
        longrepr = getattr(report, "longrepr", None)
        crash = getattr(longrepr, "reprcrash", None)
        # A strict xfail that passed has a string, "[XPASS(strict)] <reason>", and no crash.
        message = crash.message if crash is not None else longrepr if isinstance(longrepr, str) else ""
        _messages.setdefault(key, message.splitlines()[0][:300] if message else "")


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    path = os.environ.get("NDA_SCIPY_REPORT")
    if path:
        Path(path).write_text(json.dumps({"outcomes": _results, "messages": _messages}, indent=0, sort_keys=True))


_XP_TOKEN = re.compile(r"(?<=[\[-])(" + "|".join(re.escape(x) for x in _XP_IDS) + r")(?=[-\]])")


def split_backend(test_id: str) -> tuple[str, str] | None:
    """(backend id, the test id with it replaced by ``{xp}``), or None for an id without one."""
    head, bracket, params = test_id.partition("[")
    match = _XP_TOKEN.search(test_id, len(head)) if bracket else None
    if match is None:
        return None
    start = match.start()
    return match.group(1), test_id[:start] + "{xp}" + test_id[start + len(match.group(1)) :]


def compare(results: dict[str, str]) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """Outcome counts per backend, and per nda device the ids that fail there but pass on array_api_strict."""
    by_test: dict[str, dict[str, str]] = {}
    counts: dict[str, dict[str, int]] = {}
    for test_id, outcome in results.items():
        split = split_backend(test_id)
        if split is None:
            continue
        xp_id, generic = split
        by_test.setdefault(generic, {})[xp_id] = outcome
        counts.setdefault(xp_id, {}).setdefault(outcome, 0)
        counts[xp_id][outcome] += 1
    worse: dict[str, list[str]] = {}
    for generic, outcomes in sorted(by_test.items()):
        strict = outcomes.get("array_api_strict")
        for xp_id in ("nda-cpu", "nda-sim"):
            mine = outcomes.get(xp_id)
            if mine in ("failed", "error") and strict not in ("failed", "error"):
                worse.setdefault(xp_id, []).append(generic.replace("{xp}", xp_id) + f"  (array_api_strict: {strict})")
    return counts, worse


def _run(modules: list[str], extra: list[str]) -> int:
    import subprocess
    import tempfile

    import importlib.util

    site = str(Path(importlib.util.find_spec("scipy").origin).parent.parent)  # ids from scipy/ on
    total_worse = 0
    rows = []
    for module in modules:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            report = f.name
        env = dict(os.environ, NDA_SCIPY_REPORT=report, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
        env.setdefault("NDA_SCIPY_BACKENDS", "array_api_strict,nda-cpu,nda-sim")
        env["SCIPY_ARRAY_API"] = '["array_api_strict"]'  # SciPy's backend list: no numpy/cupy/dask variants to collect
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "_scipy_nda",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--rootdir={site}",
            "--pyargs",
            f"scipy.{module}.tests",
            "-W",
            "ignore::nda.FallbackWarning",
            *extra,
        ]
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        data = json.loads(Path(report).read_text()) if Path(report).stat().st_size else {}
        os.unlink(report)
        if os.environ.get("NDA_SCIPY_RESULTS"):  # keep the per-id outcomes and failure messages: <dir>/<module>.json
            Path(os.environ["NDA_SCIPY_RESULTS"], f"{module}.json").write_text(json.dumps(data, indent=0, sort_keys=True))
        results = data.get("outcomes", {})
        counts, worse = compare(results)
        for xp_id in ("array_api_strict", "nda-cpu", "nda-sim"):
            c = counts.get(xp_id, {})
            rows.append(
                (
                    module,
                    xp_id,
                    c.get("passed", 0),
                    c.get("failed", 0) + c.get("error", 0),
                    c.get("skipped", 0),
                    c.get("xfailed", 0),
                    c.get("xpassed", 0),
                    seconds,
                )
            )
        for xp_id, ids in worse.items():
            total_worse += len(ids)
            print(f"\n{module}: {len(ids)} fail on {xp_id} and not on array_api_strict", flush=True)
            for test_id in ids:
                print("   ", test_id, flush=True)
        print(f"{module}: done in {seconds:.0f} s", flush=True)
    print("\n| module | backend | passed | failed | skipped | xfailed | xpassed | module time (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(v) if not isinstance(v, float) else f"{v:.0f}" for v in row) + " |")
    return 1 if total_worse else 0


#: Failure messages that are nda's host-copy protocol at work (README, "Ecosystem"): SciPy
#: wrote into ``np.asarray(device_array)``, which is a read-only copy, and NumPy refused.
READ_ONLY_WRITES = ("output array is read-only", "assignment destination is read-only")
READ_ONLY_REASON = (
    "writes its result into np.asarray(output) of a sim array (SciPy declares the function cpu-only); "
    "that is nda's read-only host copy, so the write raises instead of being lost"
)


def propose_assumptions(results_dir: str) -> None:
    """Print assumption lines for the read-only writes found in ``<results_dir>/*.json``."""
    for path in sorted(Path(results_dir).glob("*.json")):
        data = json.loads(path.read_text())
        for test_id, message in sorted(data.get("messages", {}).items()):
            if "nda-" in test_id and any(m in message for m in READ_ONLY_WRITES):
                print(f"{test_id} | ValueError | {READ_ONLY_REASON}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--propose-assumptions"]:
        propose_assumptions(args[1])
        sys.exit(0)
    mods = [a for a in args if not a.startswith("-")] or list(MODULES)
    sys.exit(_run(mods, [a for a in args if a.startswith("-")]))
