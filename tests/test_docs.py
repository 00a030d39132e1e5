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
import os
import pathlib
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
    for topic in (
        "What `buffer_type` must provide",
        "`from_host(host, device, out=None)`",
        "Which dtype the key names",
        "The `dtype` argument",
        "### Views",
        "How a backend learns a buffer is dead",
        "Before a release, run the deep profile",
    ):
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


# ----------------------------------------------------------------------------- issue 29, item 8


def test_the_guide_refers_to_nothing_outside_the_installed_package():
    """A vendor has the guide and the installed nda: no repository paths, no private modules
    (also not in the docstrings of the modules the guide sends them to)."""
    import re

    from nda.backends import contract, fusion
    from nda.ops import extension

    private = re.compile(r"\bnda(?:\.\w+)*\._\w+")
    texts = {"guide": GUIDE.read_text(encoding="utf-8")}
    texts.update({m.__name__: m.__doc__ or "" for m in (contract, extension, fusion)})
    for name, text in texts.items():
        for path in ("plugins/", "tests/", "docs/examples", "_mutant_backends", "nda_sim/", "nda_cuda/"):
            assert path not in text, f"{name} refers to {path!r}"
        assert not private.findall(text), f"{name} names private modules: {sorted(set(private.findall(text)))}"


def test_the_guide_answers_what_a_vendor_asked():
    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    for answer in (
        "nda.engine.register_at_fork(before=...,",  # threads of one's own at os.fork
        "a copy whose `__cause__` shows the original traceback",  # Deferred.check errors keep their traceback
        "`getitem(x, key)` and `setitem(x, key, value)` receive `key` as a tuple",  # what getitem kernels receive
        "With an index array or a mask `getitem` returns a new buffer (a copy)",
        '`"real floating"` (float32, float64)',  # the real-floating category's name
        "g * nd.conj(x2), g * nd.conj(x1), g",  # complex VJPs
        "May `from_host` return before the copy is done?",
        "`kernel_for(instr)` returns",
        "may return `nda.engine.Deferred(outputs, check)`",  # Compiled.fn on a queue backend
        "**your `copy_to_device` adds both marker waits itself**",
        "**The result dtype of an element-wise kernel** is not passed to it",
    ):
        assert answer in text, answer


def _guide_function(name: str):
    import re

    match = re.search(rf"^def {name}\(.*?(?=^\S)", GUIDE.read_text(encoding="utf-8"), re.S | re.M)
    namespace = {"np": np, "nda": nda}
    exec(match.group(0), namespace)  # noqa: S102 - the guide's own code
    return namespace[name]


def test_the_guides_fma_gradient_is_right_for_complex_inputs():
    """The guide's VJP against central finite differences of a real loss, for complex inputs,
    in nda's convention (which nda's own multiply follows): grad = dL/dRe + i dL/dIm."""
    vjp = _guide_function("_fma_vjp")
    rng = np.random.default_rng(29)
    x1, x2, x3, w = (rng.standard_normal(3) + 1j * rng.standard_normal(3) for _ in range(4))

    def loss(a1, a2, a3):
        return float(np.real(np.sum(np.conj(w) * (a1 * a2 + a3))))

    got = vjp(nda, (True, True, True), nda.asarray(w), None, nda.asarray(x1), nda.asarray(x2), nda.asarray(x3))
    for i, grad in enumerate(got):
        expected = np.zeros(3, dtype=complex)
        for k in range(3):
            for unit in (1.0, 1.0j):
                plus, minus = [x1, x2, x3], [x1, x2, x3]
                step = np.zeros(3, dtype=complex)
                step[k] = unit * 1e-6
                plus[i], minus[i] = plus[i] + step, minus[i] - step
                expected[k] += unit * (loss(*plus) - loss(*minus)) / 2e-6
        np.testing.assert_allclose(np.asarray(grad), expected, rtol=1e-6, atol=1e-8)
    a = nda.asarray(x1)
    a.attach_grad()
    with nda.autograd.record():
        y = a * nda.asarray(x2)
    y.backward(nda.asarray(w))
    np.testing.assert_allclose(a.grad.asnumpy(), w * np.conj(x2))  # the same convention


# ----------------------------------------------------------------------------- issue 36: the guide ships with nda


def test_the_guide_says_what_issue_36_asked():
    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    for answer in (
        "**except where NumPy returns a scalar**: a key with an int for every dimension (`x[1]` of a 1-d array",
        "Six differ from the ufunc",  # the element-wise references that are not NumPy's ufunc
        "`expm1`",
        "`tanh`",
        "`floor_divide`",
        "`real` and `imag`",
        "`round`",
        "every element-wise reference takes an optional `out=`",
        "nda never passes `out=` to a kernel",
        "are not called by nda",  # allocate/free
        "**The VJP, in words.**",
        "`dL/da + j dL/db`",
        "`g * conj(f'(x))`",
        "**The ordering profile**",
        "Wrong when run in order",
        "Right alone, wrong in the program",
        "python -m nda.testing.conformance --guide",
    ):
        assert answer in text, answer
    from nda.ops import CATALOG

    differing = sorted(n for n, d in CATALOG.items() if d.family in ("unary", "binary") and getattr(d.reference, "__module__", "") != "numpy")
    assert differing == ["expm1", "floor_divide", "imag", "real", "round", "tanh"], "update the guide's list of references that are not NumPy's ufunc"


def test_the_guide_ships_in_the_wheel_and_every_pointer_resolves(tmp_path):
    """Build the wheel, unpack it (nothing of the repository on the path) and ask the installed nda
    for its guide: it is the guide, its example backend loads, and the modules it names exist."""
    import subprocess
    import zipfile

    import shutil

    tree = tmp_path / "tree"  # what an sdist holds: no build/ left over from another build, no tests
    ignore = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "*.so")
    tree.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    for name in ("src", "docs"):
        shutil.copytree(ROOT / name, tree / name, ignore=ignore)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "-q", "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if build.returncode != 0:
        pytest.skip(f"cannot build a wheel here (pip wheel: {build.stderr.strip().splitlines()[-1:] or build.returncode})")
    [wheel] = (tmp_path / "dist").glob("nda-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        zf.extractall(site)
    assert "nda/_guide/writing-a-backend.md" in names and "nda/_guide/minimal_backend.py" in names, sorted(n for n in names if "guide" in n)
    assert (site / "nda/_guide/writing-a-backend.md").read_text(encoding="utf-8") == GUIDE.read_text(encoding="utf-8")
    assert (site / "nda/_guide/minimal_backend.py").read_text(encoding="utf-8") == EXAMPLE.read_text(encoding="utf-8")
    import numpy

    numpy_site = str(pathlib.Path(numpy.__file__).parents[1])
    code = (
        "import sys, nda, importlib\n"
        "from nda.testing.conformance._guide import guide_path, example_path\n"
        "assert str(guide_path()).startswith(sys.argv[1]) and str(example_path()).startswith(sys.argv[1]), (guide_path(), nda.__file__)\n"
        "sys.path.insert(0, str(example_path().parent))\n"
        "nda.backends.load('minimal_backend')\n"
        "print((nda.asarray([1.0, 2.0], device='mini') * 2).tolist())\n"
        "for module in ('nda.backends.contract', 'nda.ops.extension', 'nda.backends.fusion', 'nda.testing.conformance', 'nda.testing.strategies', 'nda.ops.random'):\n"
        "    importlib.import_module(module)\n"
        "assert 'python -m nda.testing.conformance --guide' in importlib.import_module('nda.backends.contract').__doc__\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(site), numpy_site]), "PATH": os.environ.get("PATH", ""), "NDA_BACKENDS": "cpu", "NDA_NATIVE": "0"}
    run = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path[:0] = {[str(site), numpy_site]!r}\n" + code, str(site)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "[2.0, 4.0]", run.stdout
    guide = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys, runpy; sys.path[:0] = {[str(site), numpy_site]!r}; sys.argv = ['x', '--guide']; "
            "runpy.run_module('nda.testing.conformance', run_name='__main__')",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert guide.stdout == GUIDE.read_text(encoding="utf-8") and str(site) in guide.stderr, guide.stderr[-2000:]
