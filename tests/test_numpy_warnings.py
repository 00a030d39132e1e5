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

import importlib.util
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nda

_SCRIPT = """
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
"""


def _run(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    environment.pop("PYTHONWARNINGS", None)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=120, env=environment)


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
        expected = (
            at("LINE_DIV", *div) + at("LINE_LOG", "divide by zero|log") + at("LINE_LOOP", *div) + at("LINE_FUNC", *div) + at("LINE_PROTOCOL", *div)
        )
        assert warned == expected, proc.stderr
        assert nda_dir not in proc.stderr and "nda_sim" not in proc.stderr
    else:
        # Without the C fast paths, an op that runs at once from its cache runs in nda's Python
        # frame, and NumPy names that frame, as its own Python-level functions name NumPy's:
        # each message once, from nda's source. Every other line names the user's.
        expected_user = at("LINE_DIV", *div) + at("LINE_LOG", "divide by zero|log") + at("LINE_PROTOCOL", *div)
        assert [w for w in warned if w.startswith(str(script))] == expected_user, proc.stderr
        from_nda = [w for w in warned if w.startswith(nda_dir)]
        assert sorted(w.split(": ", 1)[1] for w in from_nda) == sorted(
            f"RuntimeWarning: {w} encountered in divide" for w in ("divide by zero", "invalid value")
        )
        assert len(warned) == len(expected_user) + len(from_nda)
    assert "nda_sim" not in proc.stderr


def test_a_users_filter_still_decides_first(tmp_path: Path):
    script = tmp_path / "quiet.py"
    script.write_text(
        textwrap.dedent("""
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
    """)
    )
    proc = _run(script)
    assert proc.returncode == 0, proc.stderr
    assert "RuntimeWarning" not in proc.stderr
    assert "raised: divide by zero encountered in divide" in proc.stdout


@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_the_users_errstate_decides_as_for_numpy(tmp_path: Path, engine: str):
    """``np.errstate`` where an op is issued governs it, wherever and whenever it runs."""
    script = tmp_path / "errstate.py"
    script.write_text(
        textwrap.dedent("""
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
    """)
    )
    proc = _run(script, NDA_ENGINE=engine)
    assert "RuntimeWarning" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[:2] == ["raised inline: divide by zero encountered in divide"] * 2, proc.stdout
    assert out[2] == "raised: divide by zero encountered in log", proc.stdout
    assert out[3] == "state after: {'divide': 'warn', 'over': 'warn', 'under': 'ignore', 'invalid': 'warn'}"


_GLOBAL_STATE = """
import sys, warnings
import numpy as np
{preload}
before = (list(warnings.filters), np.geterr(), np.geterrcall(), np.get_printoptions())
{importer}
assert "nda" in sys.modules
after = (list(warnings.filters), np.geterr(), np.geterrcall(), np.get_printoptions())
print("unchanged" if before == after else f"changed: {{before}} -> {{after}}")
"""


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


_SKLEARN = """
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
"""


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


_HYBRID = """
import json, sys, warnings
import numpy as np
import nda

def chain(x, y):
    a = x / y                    # LINE_DIV
    b = (a * 2) - 3              # (numexpr may run this arithmetic chain)
    c = nda.sqrt(b)              # LINE_SQRT: invalid where b < 0
    return c + 1

def arith(x, y):
    return (x / y) * 2           # LINE_ARITH: an arithmetic chain (numexpr on cpu)

def record(f, *args, mode=None):
    # One call, read to the host: its RuntimeWarnings (message, line), its result's bits or its
    # FloatingPointError, and what a handler of the user's (mode "call") was called with.
    calls = []
    mode = dict(mode or {})
    if "call" in mode.values():
        mode["call"] = lambda kind, flag: calls.append(kind)
    got = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with np.errstate(**mode):
                bits = f(*args).asnumpy().view(np.uint64)
            got["value"] = [int(bits.sum() % (1 << 61)), int(bits[0]), int(bits[-1])]
        except FloatingPointError as err:
            got["raised"] = str(err)
    # the line as None where NumPy's warning names nda's own frame (README: an op run from
    # nda's Python fast paths, NDA_NATIVE=0, as np.mean names NumPy's source)
    got["warned"] = [(str(w.message), None if "/nda/" in w.filename else w.lineno) for w in caught if issubclass(w.category, RuntimeWarning)]
    got["calls"] = calls
    return got

MODES = (("default", None), ("raise", {"divide": "raise"}), ("ignore", {"all": "ignore"}), ("divide ignored", {"divide": "ignore"}),
         ("invalid raised", {"invalid": "raise"}), ("all raised", {"all": "raise"}), ("handler", {"divide": "call", "invalid": "call"}))
out = {}
for device in ("cpu", "sim"):
    for n in (4, 1 << 18, 1 << 21)[:3 if device == "cpu" else 2]:  # inline and chunked, and an engine task
        with nda.Device(device):
            x = nda.ones(n)
            ok = nda.full(n, 0.25)
            # 1/0 -> inf at the end (the last chunk); 1/2*2-3 < 0 -> sqrt invalid from the first
            bad = nda.asarray(np.concatenate([np.full(n - 1, 2.0), np.zeros(1)]), copy=True)
        for name, f in (("chain", chain), ("arith", arith)):
            h = nda.hybridize(f)
            first = record(h, x, bad)     # the first call of the signature: traced, checked (the replay must not warn again)
            h(x, ok).asnumpy()
            for label, mode in MODES:
                eager = record(f, x, bad, mode=mode)
                graph = [record(h, x, bad, mode=mode) for _ in range(2)]
                out[f"{device} {name} n={n} {label}"] = [eager, *graph]
            out[f"{device} {name} n={n} first"] = [record(f, x, bad), first]
            out[f"{device} {name} n={n} explain"] = str(nda.dispatch.explain(h, x, bad))
print(json.dumps(out))
"""


@pytest.mark.parametrize(
    "engine,native,numexpr",
    [("threaded", "1", "1"), ("threaded", "1", "0"), ("threaded", "0", "1"), ("naive", "0", "1"), ("naive", "0", "0"), ("naive", "1", "1")],
)
def test_a_hybridized_function_warns_and_raises_as_its_eager_calls(tmp_path: Path, engine: str, native: str, numexpr: str):
    """A hybridized call reports NumPy's floating-point errors exactly as the eager call: the
    same messages, once per op, naming the op's line, under the caller's ``np.errstate``
    (a raise: the first failing op's error; a handler of the user's: called once per op),
    with the eager values bit for bit; on sim neither reports (a device does not).
    Before: a chain run by numexpr reported nothing (no warning, no FloatingPointError under
    ``errstate(divide="raise")``: ``[inf, 2.]`` silently); the chunked fused kernel warned
    once per chunk (16 for 2**18 elements) naming nda's fusion.py; the first call warned twice
    (the eager run, then the replay that checks the graph)."""
    import importlib.util
    import json

    pytest.importorskip("nda_sim")
    script = tmp_path / "hybrid_fp.py"
    script.write_text(_HYBRID)
    lines = {tag: i + 1 for i, text in enumerate(_HYBRID.splitlines()) for tag in ("LINE_DIV", "LINE_SQRT", "LINE_ARITH") if tag in text}
    proc = _run(script, NDA_ENGINE=engine, NDA_NATIVE=native, NDA_NUMEXPR=numexpr)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RuntimeWarning" not in proc.stderr, proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    explained = " ".join(v for k, v in found.items() if k.startswith("cpu") and k.endswith("explain"))
    assert "chunked numpy" in explained, explained
    assert ("numexpr" in explained) == (numexpr == "1" and importlib.util.find_spec("numexpr") is not None), explained
    for key, value in found.items():
        if key.endswith("explain"):
            continue
        eager, *graph = value
        want_lines = [lines["LINE_DIV"], lines["LINE_SQRT"]] if " chain " in key else [lines["LINE_ARITH"]]
        for got in graph:  # the same messages in the same order, value or error, handler calls; the user's lines
            assert {k: v for k, v in got.items() if k != "warned"} == {k: v for k, v in eager.items() if k != "warned"}, (key, eager, got)
            assert [m for m, _ in got["warned"]] == [m for m, _ in eager["warned"]], (key, eager, got)
            assert all(line in want_lines for _, line in got["warned"]), (key, got)
            assert all(e is None or e == g for (_, g), (_, e) in zip(got["warned"], eager["warned"])), (
                key,
                eager,
                got,
            )  # where eager names nda's frame: None
        if key.startswith("sim"):
            assert eager["warned"] == eager["calls"] == [] and "raised" not in eager, (key, eager)  # a device does not report
            continue
        if key.endswith("default") or key.endswith("first"):
            assert len(eager["warned"]) == len(want_lines), (key, eager)  # once per op
            assert [line for _, line in graph[0]["warned"]] == want_lines, (key, graph)
        if key.endswith(" raise") or key.endswith("all raised"):
            assert eager["raised"] == "divide by zero encountered in divide" and eager["warned"] == [], (key, eager)
        if key.endswith("invalid raised"):  # the divide's warning, then sqrt's error (found in the first chunk, the division by 0 in the last)
            assert eager.get("raised") == ("invalid value encountered in sqrt" if " chain " in key else None), (key, eager)
            assert [m for m, _ in eager["warned"]] == ["divide by zero encountered in divide"], (key, eager)
        if key.endswith("handler"):
            assert eager["calls"] == (["divide by zero", "invalid value"] if " chain " in key else ["divide by zero"]), (key, eager)
        if key.endswith("ignore") and "divide" not in key:
            assert eager["warned"] == [], (key, eager)


_ONCE_PER_LINE = """
import sys
import numpy as np
import nda

def arith(x, y):
    return (x / y) * 2           # LINE_ARITH

def chain(x, y):
    return nda.sqrt(x - y) + 1   # LINE_SQRT

x = nda.ones(1 << 18)
bad = nda.full(1 << 18, 2.0)
zero = nda.zeros(1 << 18)
for f in (arith, chain):
    h = nda.hybridize(f)
    arg = zero if f is arith else bad
    for _ in range(3):
        f(x, arg).asnumpy()
    if sys.argv[1:] == ["hybridized"]:
        for _ in range(3):
            h(x, arg).asnumpy()  # Python's default filter: shown once per line, the eager run's
print("done")
"""


@pytest.mark.parametrize("engine,native", [("threaded", "1"), ("naive", "0")])
def test_under_the_default_filter_a_hybridized_line_warns_once_as_eager(tmp_path: Path, engine: str, native: str):
    """Python's default "once per location" counts the graph's warnings in the registry of the
    user's module, as NumPy's own from that line: after the eager loops, the hybridized calls
    of the same lines add no warning (before: the graph's once more, or one naming fusion.py)."""
    script = tmp_path / "once.py"
    script.write_text(_ONCE_PER_LINE)
    env = {"NDA_ENGINE": engine, "NDA_NATIVE": native}
    eager, both = _run(script, **env), _run(script, "hybridized", **env)
    for proc in (eager, both):
        assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr[-3000:]
    warned = [line for line in both.stderr.splitlines() if "RuntimeWarning" in line]
    assert warned == [line for line in eager.stderr.splitlines() if "RuntimeWarning" in line], (eager.stderr, both.stderr)
    lines = {tag: i + 1 for i, text in enumerate(_ONCE_PER_LINE.splitlines()) for tag in ("LINE_ARITH", "LINE_SQRT") if tag in text}
    assert any(f"{script}:{lines['LINE_ARITH']}: RuntimeWarning: divide by zero encountered in divide" in w for w in warned), both.stderr
    assert any(f"{script}:{lines['LINE_SQRT']}: RuntimeWarning: invalid value encountered in sqrt" in w for w in warned), both.stderr
    if native == "1" and nda._execute.native is not None:
        assert len(warned) == 2, both.stderr  # with the C fast paths every eager call names the user's line


def _program(*ops: tuple[str, tuple[tuple[str, object], ...]], n: int) -> Any:
    from nda.backends import fusion

    f64 = nda.float64
    instrs = [fusion.Instr(op, args, f64, f64, f"{__file__}:{1000 + i}") for i, (op, args) in enumerate(ops)]
    return fusion.Program(instrs, [(f64, (n,)), (f64, (n,))], [len(instrs) - 1], (n,), nda.Device("cpu", 0))


def _counted(fn: Any, calls: list[str], name: str) -> Any:
    def run(*args: Any) -> Any:
        calls.append(name)
        return fn(*args)

    return run


@pytest.mark.skipif(importlib.util.find_spec("numexpr") is None, reason="numexpr is not installed")
def test_numexpr_runs_where_it_changes_nothing_and_the_chunked_kernels_elsewhere():
    """``fusion.reporting``: numexpr (which reports no floating-point error) when every category
    is ignored or the outputs are finite; else the chunked evaluator (which reports as the ops
    would), for :data:`~nda.backends.fusion.RETRY_FAST` calls, then numexpr is tried again.
    Both give the same bits. Unsafe programs (a divisor computed in the chain) always run chunked."""
    from nda.backends import fusion

    n = 50_000
    program = _program(("divide", (("in", 0), ("in", 1))), ("multiply", (("tmp", 0), ("const", 2.0))), n=n)
    kernels = {"divide": np.divide, "multiply": np.multiply}
    calls: list[str] = []
    fast = _counted(fusion.numexpr_evaluator(program)[0], calls, "fast")
    finite = _counted(fusion.numexpr_finite(program), calls, "finite")
    exact = _counted(fusion.chunked(program, lambda i: kernels[i.op], chunk=4096), calls, "exact")
    run = fusion.reporting(program, fast, finite, exact)
    x = np.linspace(1, 2, n)
    good, bad = np.full(n, 0.5), np.full(n, 0.5)
    bad[-1] = 0.0
    with np.errstate(all="ignore"):
        want_good, want_bad = (x / good * 2).tobytes(), (x / bad * 2).tobytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run(x, good)[0].tobytes() == want_good and calls == ["finite"]
        with np.errstate(all="ignore"):
            calls.clear()
            assert run(x, bad)[0].tobytes() == want_bad and calls == ["fast"]
        assert caught == []
        calls.clear()
        assert run(x, bad)[0].tobytes() == want_bad and calls == ["finite", "exact"]
        assert [(str(w.message), w.lineno) for w in caught] == [("divide by zero encountered in divide", 1000)]
        calls.clear()
        for _ in range(fusion.RETRY_FAST):
            run(x, good)
        assert calls == ["exact"] * fusion.RETRY_FAST
        calls.clear()
        run(x, good)
        assert calls == ["finite"]
        with np.errstate(divide="raise"):
            with pytest.raises(FloatingPointError, match="divide by zero"):
                run(x, bad)
    unsafe = _program(("add", (("in", 0), ("in", 1))), ("divide", (("in", 0), ("tmp", 0))), n=n)
    calls.clear()
    kernels["add"] = np.add
    run = fusion.reporting(
        unsafe,
        _counted(fusion.numexpr_evaluator(unsafe)[0], calls, "fast"),
        _counted(fusion.numexpr_finite(unsafe), calls, "finite"),
        _counted(fusion.chunked(unsafe, lambda i: kernels[i.op]), calls, "exact"),
    )
    run(x, good)
    assert calls == ["exact"]


@pytest.mark.skipif(importlib.util.find_spec("numexpr") is None, reason="numexpr is not installed")
@pytest.mark.parametrize("block", [1, 7, 1 << 20])
def test_the_checked_numexpr_evaluator_gives_numexprs_values_block_by_block(monkeypatch: pytest.MonkeyPatch, block: int):
    """``fusion.numexpr_finite``: the outputs of the plain numexpr evaluator, bit for bit, with
    inputs that broadcast (a row, a column, one that is the whole shape) and an output whose
    own shape is smaller than the program's; None as soon as an output holds NaN or inf."""
    from nda.backends import fusion

    monkeypatch.setattr(fusion, "FINITE_BLOCK", block)
    f64 = nda.float64
    shape = (40, 3)
    program = fusion.Program(
        [
            fusion.Instr("multiply", (("in", 0), ("const", 3.0)), f64, f64),
            fusion.Instr("add", (("tmp", 0), ("in", 1)), f64, f64),
            fusion.Instr("divide", (("tmp", 1), ("in", 2)), f64, f64),
        ],
        [(f64, (40, 1)), (f64, (1, 3)), (f64, (40, 3))],
        [0, 2],
        shape,
        nda.Device("cpu", 0),
    )
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal((40, 1)), rng.standard_normal((1, 3)), rng.standard_normal((40, 3)) + 5
    plain = fusion.numexpr_evaluator(program)[0](a, b, c)
    checked = fusion.numexpr_finite(program)(a, b, c)
    assert [o.shape for o in checked] == [shape, shape] and all(p.tobytes() == q.tobytes() for p, q in zip(plain, checked))
    c[-1, -1] = 0.0
    with np.errstate(all="ignore"):
        assert fusion.numexpr_finite(program)(a, b, c) is None


def test_a_chunked_kernel_raises_the_error_the_ops_one_by_one_raise():
    """A fused kernel that meets a ``raise`` category in a chunk runs again op by op over the
    whole arrays: the error is the first failing op's, after the warnings of the ops before it
    (before: the first chunk's, here sqrt's invalid value, though the division by zero comes first eagerly)."""
    from nda.backends import fusion

    n = 50_000
    program = _program(("divide", (("in", 0), ("in", 1))), ("sqrt", (("tmp", 0),)), n=n)
    run = fusion.chunked(program, lambda i: {"divide": np.divide, "sqrt": np.sqrt}[i.op], chunk=4096)
    x = np.full(n, 4.0)
    x[0] = -1.0  # sqrt's invalid value in the first chunk
    y = np.ones(n)
    y[-1] = 0.0  # the division by zero in the last
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            run(x, y)
    with warnings.catch_warnings(record=True) as caught, np.errstate(divide="warn", invalid="raise"):
        warnings.simplefilter("always")
        with pytest.raises(FloatingPointError, match="invalid value"):
            run(x, y)
    assert [(str(w.message), w.lineno) for w in caught] == [("divide by zero encountered in divide", 1000)]
