"""Static types: the generated stubs are current, and mypy sees real types from a user's code (issue 26).

nda's functions and NDArray's op methods are generated from the op catalog at import, so
the package ships ``.pyi`` stubs generated from the same declarations
(``python -m nda._stubgen --write``). Before, mypy on ``x = nda.ones((2, 3))`` reported
``Module has no attribute "ones"`` and every type was ``Any``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from nda import _stubgen

pytest.importorskip("mypy", reason="mypy is a test dependency (pip install -e '.[test]')")

SNIPPET = textwrap.dedent(
    """
    import nda

    x = nda.ones((2, 3))
    s = nda.sum(x, axis=0)
    inv = nda.linalg.inv(nda.eye(3, dtype=nda.float64))
    t = x.T
    y = x * 2.0 + 1
    r = x.reshape(3, 2).sum(axis=1)
    q, upper = nda.linalg.qr(nda.eye(3))
    f = nda.fft.fft(nda.zeros(4, dtype=nda.complex128))
    reveal_type(x)
    reveal_type(s)
    reveal_type(inv)
    reveal_type(t)
    reveal_type(y)
    reveal_type(r)
    reveal_type(upper)
    reveal_type(f)
    """
)
MISTAKES = textwrap.dedent(
    """
    import nda

    x = nda.ones((2, 3))
    a = nda.onez((2, 3))
    n: int = nda.sum(x)
    b = x.resahpe(6)
    """
)


def test_the_stubs_are_current():
    stale = _stubgen.check()
    assert not stale, f"stale stubs: {[p.name for p in stale]}; run `python -m nda._stubgen --write`"


def _mypy(tmp_path, source: str) -> str:
    path = tmp_path / "user_code.py"
    path.write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    return done.stdout + done.stderr


def test_mypy_sees_real_types_of_functions_methods_and_extensions(tmp_path):
    out = _mypy(tmp_path, SNIPPET)
    revealed = [line for line in out.splitlines() if "Revealed type" in line]
    assert len(revealed) == 8, out
    assert all('"nda._array.NDArray"' in line for line in revealed), out
    assert "error" not in out, out


def test_mypy_reports_a_users_mistakes(tmp_path):
    out = _mypy(tmp_path, MISTAKES)
    assert 'Module has no attribute "onez"' in out, out
    assert 'expression has type "NDArray", variable has type "int"' in out, out
    assert '"NDArray" has no attribute "resahpe"' in out, out


NUMPY_SPELLINGS = textwrap.dedent(
    """
    import numpy as np
    import nda

    a = nda.zeros(3, dtype="float32")
    b = nda.asarray([1, 2], dtype=np.int64)
    c = nda.ones((2, 2), dtype=np.dtype("float64")).sum(axis=0, dtype=float)
    d = nda.astype(nda.arange(4, dtype=nda.int16), "int32")
    m = nda.eye(2, dtype="f8")
    e = nda.einsum("ij,jk->ik", m, m)
    w, v = nda.linalg.eigh(m)
    reveal_type(e)
    reveal_type(w)
    reveal_type(c)
    """
)


def test_mypy_accepts_numpys_dtype_spellings_and_types_einsum(tmp_path):
    # Issue 37: dtype="float32" and dtype=np.int64 run, and the stubs said `DType | None`.
    out = _mypy(tmp_path, NUMPY_SPELLINGS)
    revealed = [line for line in out.splitlines() if "Revealed type" in line]
    assert len(revealed) == 3 and all('"nda._array.NDArray"' in line for line in revealed), out
    assert "error" not in out, out


PREDICATES = textwrap.dedent(
    """
    import nda

    reveal_type(nda.can_cast(nda.int8, nda.int16))
    reveal_type(nda.isdtype(nda.float32, "real floating"))
    """
)


def test_mypy_sees_the_bool_results_of_can_cast_and_isdtype(tmp_path):
    # Issue 34 (found by ruff's F821 on the stubs): the stub said `-> _builtin_bool`, nda._dtypes'
    # private alias of the builtin, a name the stub never defines; mypy read the results as Any.
    out = _mypy(tmp_path, PREDICATES)
    revealed = [line for line in out.splitlines() if "Revealed type" in line]
    assert len(revealed) == 2 and all(line.endswith(('"bool"', '"builtins.bool"')) for line in revealed), out
    assert "error" not in out, out
