"""NumPy's floating-point errors: the user's line, the user's ``np.errstate``, and no global change.

NumPy attributes ``RuntimeWarning: divide by zero encountered in divide`` to the innermost
Python frame; nda runs kernels from its own frames and from worker threads, so nda runs
them under a derived NumPy error state that re-warns at the op's site
(:mod:`nda.engine._fperrors`). Importing nda changes no global state: an earlier design
appended an object to ``warnings.filters``, which broke scikit-learn (issue 38, item 2).

Each scenario runs in a fresh interpreter, without nda's pytest plugin and with Python's
default warning filters: pytest imports nda inside its own ``catch_warnings()`` and
installs its own filters, which hid both the attribution and the scikit-learn breakage.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import nda

_SCRIPT = '''
import numpy as np
import nda
x = nda.asarray([1.0, 0.0, -1.0])
big = nda.zeros(1 << 21)                 # large: the threaded engine defers the op (a task's site names the line)
a = x / 0.0                              # LINE_DIV
b = nda.log(big)                         # LINE_LOG
b.wait_to_read()
for _ in range(3):
    c = x / 0.0                          # LINE_LOOP
for _ in range(2):
    f = nda.divide(x, 0.0)               # LINE_FUNC
d = np.divide(x, 0.0)                    # LINE_PROTOCOL
s = nda.asarray([1.0, 0.0], device="sim")
e = (s / 0.0).asnumpy()                  # a device does not warn
print(a.tolist(), b[0].item(), d.tolist(), e.tolist())
'''


def _run(script: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    environment.pop("PYTHONWARNINGS", None)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=environment)


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_floating_point_warnings_name_the_users_line(tmp_path: Path, engine: str, native: str):
    pytest.importorskip("nda_sim")
    if native == "1" and nda._execute.native is None:
        pytest.skip("nda._native is not compiled here (or NDA_NATIVE=0): the C fast paths are not in use")
    script = tmp_path / "user_script.py"
    script.write_text(_SCRIPT)
    tags = ("LINE_DIV", "LINE_LOG", "LINE_LOOP", "LINE_FUNC", "LINE_PROTOCOL")
    lines = {tag: i + 1 for i, text in enumerate(_SCRIPT.splitlines()) for tag in tags if tag in text}
    proc = _run(script, NDA_ENGINE=engine, NDA_NATIVE=native)
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "RuntimeWarning" in line]

    def at(tag: str, *what: str) -> list[str]:
        return [f"{script}:{lines[tag]}: RuntimeWarning: {w} encountered in {op}" for w, op in (item.split("|") for item in what)]

    div = ("divide by zero|divide", "invalid value|divide")
    nda_dir = str(Path(nda.__file__).parent)
    if native == "1":
        # every line once: the first call (planned), a queued or large op (its recorded site),
        # a loop of operators and of functions (the C fast path), NumPy's protocol
        expected = at("LINE_DIV", *div) + at("LINE_LOG", "divide by zero|log") + at("LINE_LOOP", *div) + at("LINE_FUNC", *div) \
            + at("LINE_PROTOCOL", *div)
        assert warned == expected, proc.stderr
        assert nda_dir not in proc.stderr and "nda_sim" not in proc.stderr
    else:
        # Without the C fast paths, an op that runs at once from its cache runs in nda's Python
        # frame, and NumPy names that frame, as its own Python-level functions name NumPy's:
        # each message once, from nda's source. Every other line names the user's.
        expected_user = at("LINE_DIV", *div) + at("LINE_LOG", "divide by zero|log") + at("LINE_PROTOCOL", *div)
        assert [w for w in warned if w.startswith(str(script))] == expected_user, proc.stderr
        from_nda = [w for w in warned if w.startswith(nda_dir)]
        assert sorted(w.split(": ", 1)[1] for w in from_nda) == sorted(f"RuntimeWarning: {w} encountered in divide" for w in ("divide by zero", "invalid value"))
        assert len(warned) == len(expected_user) + len(from_nda)
    assert "nda_sim" not in proc.stderr


def test_a_users_filter_still_decides_first(tmp_path: Path):
    script = tmp_path / "quiet.py"
    script.write_text(textwrap.dedent('''
        import warnings
        warnings.filterwarnings("ignore", "divide by zero", RuntimeWarning)
        import nda
        y = nda.asarray([1.0]) / 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                nda.asarray([2.0]) / 0.0
            except RuntimeWarning as err:
                print("raised:", err)
    '''))
    proc = _run(script)
    assert proc.returncode == 0, proc.stderr
    assert "RuntimeWarning" not in proc.stderr
    assert "raised: divide by zero encountered in divide" in proc.stdout


@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_the_users_errstate_decides_as_for_numpy(tmp_path: Path, engine: str):
    """``np.errstate`` where an op is issued governs it, wherever and whenever it runs."""
    script = tmp_path / "errstate.py"
    script.write_text(textwrap.dedent('''
        import numpy as np
        import nda
        x = nda.asarray([1.0, 0.0])
        big = nda.zeros(1 << 21)
        with np.errstate(divide="ignore", invalid="ignore"):
            for _ in range(2):
                q = x / 0.0
                q = nda.divide(x, 0.0)
            quiet = nda.log(big)         # large: runs later, still under "ignore"
            q = np.divide(x, 0.0)
        quiet.wait_to_read()
        with np.errstate(divide="raise"):
            for i in range(2):           # the first call plans, the second takes the fast path
                try:
                    x / 0.0
                    print("not raised")
                except FloatingPointError as err:
                    print("raised inline:", err)
            try:
                loud = nda.log(big)      # the naive engine runs it here: raised here
            except FloatingPointError as err:
                loud = None
                print("raised:", err)
        if loud is not None:
            try:
                loud.wait_to_read()      # the threaded engine runs it later: raised at the sync point
                print("not raised")
            except FloatingPointError as err:
                print("raised:", err)
        print("state after:", np.geterr())
    '''))
    proc = _run(script, NDA_ENGINE=engine)
    assert "RuntimeWarning" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[:2] == ["raised inline: divide by zero encountered in divide"] * 2, proc.stdout
    assert out[2] == "raised: divide by zero encountered in log", proc.stdout
    assert out[3] == "state after: {'divide': 'warn', 'over': 'warn', 'under': 'ignore', 'invalid': 'warn'}"


_GLOBAL_STATE = '''
import sys, warnings
import numpy as np
{preload}
before = (list(warnings.filters), np.geterr(), np.geterrcall(), np.get_printoptions())
{importer}
assert "nda" in sys.modules
after = (list(warnings.filters), np.geterr(), np.geterrcall(), np.get_printoptions())
print("unchanged" if before == after else f"changed: {{before}} -> {{after}}")
'''


@pytest.mark.parametrize("importer", ["import nda", "import dask.array, nda", "import nda, nda.random, nda.testing"])
def test_importing_nda_changes_no_global_state(tmp_path: Path, importer: str):
    """Warning filters, NumPy's error state and print options are as before ``import nda`` (also
    with Dask loaded first, whose ``dask.sizeof`` entry point names nda)."""
    if importer.startswith("import dask"):
        pytest.importorskip("dask.array")
    script = tmp_path / "state.py"
    # dask.array imports SciPy, whose modules add filters of their own: loaded before the snapshot
    preload = "import scipy.special, scipy.sparse" if importer.startswith("import dask") else ""
    script.write_text(_GLOBAL_STATE.format(importer=importer, preload=preload))
    proc = _run(script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "unchanged", proc.stdout


_SKLEARN = '''
import sys
import warnings
{importer}
assert "nda" in sys.modules
import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.inspection import permutation_importance
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_predict, cross_val_score
from sklearn.utils.parallel import Parallel, delayed

X = np.random.default_rng(0).normal(size=(60, 3))
y = (X[:, 0] > 0).astype(int)
print(cross_val_score(LogisticRegression(), X, y, cv=3).round(3).tolist())
print(cross_val_predict(LogisticRegression(), X, y, cv=3)[:5].tolist())
print(GridSearchCV(LogisticRegression(), {{"C": [0.1, 1.0]}}, cv=3).fit(X, y).best_params_)
forest = RandomForestClassifier(n_estimators=4, random_state=0, n_jobs=2).fit(X, y)
print(round(forest.score(X, y), 3))
print(permutation_importance(forest, X, y, n_repeats=2, random_state=0).importances_mean.shape)
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "custom", UserWarning)
    print(Parallel(n_jobs=2)(delayed(abs)(-i) for i in range(3)))
'''


@pytest.mark.parametrize("importer", ["import nda", "import dask.array, nda"])
def test_scikit_learn_parallel_helpers_work_after_importing_nda(tmp_path: Path, importer: str):
    """scikit-learn copies ``warnings.filters`` into its jobs and reads each one's ``.pattern``:
    with nda imported (and with Dask loaded first), plain NumPy work
    through its parallel helpers gives what it gives without nda."""
    pytest.importorskip("sklearn")
    if importer.startswith("import dask"):
        pytest.importorskip("dask.array")
    with_nda = tmp_path / "with_nda.py"
    with_nda.write_text(_SKLEARN.format(importer=importer))
    proc = _run(with_nda)
    assert proc.returncode == 0, proc.stderr
    without = tmp_path / "without.py"
    without.write_text(_SKLEARN.format(importer="").replace('assert "nda" in sys.modules\n', "assert 'nda' not in sys.modules\n"))
    reference = _run(without)
    assert reference.returncode == 0, reference.stderr
    assert proc.stdout == reference.stdout
