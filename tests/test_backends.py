"""Backend discovery through entry points, NDA_BACKENDS, runtime loading, isolation of broken backends."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import pytest

import nda


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_cpu_backend_is_an_entry_point():
    eps = {ep.name: ep.value for ep in entry_points(group="nda.backends")}
    assert eps["cpu"] == "nda.backends.cpu:backend"


def test_import_nda_imports_neither_scipy_nor_cupy():
    result = _run(
        """
        import sys, json
        import nda
        before = sorted(m for m in ("scipy", "cupy", "nda.backends.cpu") if m in sys.modules)
        x = nda.arange(6) * 2
        after = sorted(m for m in ("scipy", "cupy", "nda.backends.cpu") if m in sys.modules)
        print(json.dumps([before, after, x.tolist()]))
        """
    )
    assert result.returncode == 0, result.stderr
    before, after, values = json.loads(result.stdout)
    assert before == [], "import nda must not load any backend or heavy module"
    assert after == ["nda.backends.cpu"], "the cpu backend loads on first use, and scipy/cupy never"
    assert values == [0, 2, 4, 6, 8, 10]


def test_excluding_cpu_keeps_nda_importable_with_a_clear_error():
    result = _run(
        """
        import nda
        print(next(r for r in nda.backends.status() if r["name"] == "cpu")["state"])  # entry-point order is not fixed
        try:
            nda.zeros(3)
        except ValueError as err:
            print(type(err).__name__, err)
        """,
        NDA_BACKENDS="-cpu",
    )
    assert result.returncode == 0, result.stderr
    state, message = result.stdout.split("\n", 1)
    assert state == "excluded"
    assert "DeviceUnavailableError" in message and "NDA_BACKENDS" in message and "'cpu'" in message


def test_selecting_backends_by_name():
    result = _run(
        "import nda; print(next(r for r in nda.backends.status() if r['name'] == 'cpu')['state']); print(nda.ones(2).tolist())", NDA_BACKENDS="cpu"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["installed", "[1.0,", "1.0]"]


def _write_module(tmp_path, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))


def test_broken_backends_are_isolated(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _write_module(tmp_path, "nda_test_raises", "raise RuntimeError('driver exploded')\n")
    _write_module(
        tmp_path,
        "nda_test_oldapi",
        """
        class B:
            name = "oldapi"; api_version = "0.3"; device_types = ("oldapi",)
            def register(self, register_kernel): pass
        backend = B()
    """,
    )
    _write_module(
        tmp_path,
        "nda_test_newapi",
        """
        class B:
            name = "newapi"; api_version = "1.9"; device_types = ("newapi",)
            def register(self, register_kernel): pass
        backend = B()
    """,
    )
    _write_module(
        tmp_path,
        "nda_test_unknownop",
        """
        import numpy as np
        class B:
            name = "unknownop"; api_version = "1.0"; device_types = ("unknownop",)
            def devices(self):
                import nda
                return [nda.backends.DeviceInfo(nda.Device(self.name, 0), "fake")]
            def to_host(self, b): return b
            def from_host(self, h, d, out=None): return h
            def register(self, register_kernel):
                register_kernel("add", ["float32"], np.add)
                register_kernel("frobnicate", ["float32"], np.add)
        backend = B()
    """,
    )
    _write_module(
        tmp_path,
        "nda_test_baddtype",
        """
        import numpy as np
        class B:
            name = "baddtype"; api_version = "1.0"; device_types = ("baddtype",)
            def devices(self):
                import nda
                return [nda.backends.DeviceInfo(nda.Device(self.name, 0), "fake")]
            def to_host(self, b): return b
            def from_host(self, h, d, out=None): return h
            def register(self, register_kernel):
                register_kernel("bitwise_and", ["float32"], np.bitwise_and)
        backend = B()
    """,
    )
    with pytest.raises(nda.BackendError, match="driver exploded"):
        nda.backends.load("nda_test_raises")
    with pytest.raises(nda.BackendValidationError, match="implements backend API 0.3.*speaks 1.4"):
        nda.backends.load("nda_test_oldapi")
    with pytest.raises(nda.BackendValidationError, match="implements backend API 1.9, newer than this nda's 1.4; upgrade nda"):
        nda.backends.load("nda_test_newapi")
    with pytest.raises(nda.BackendValidationError, match="unknown op 'frobnicate'"):
        nda.backends.load("nda_test_unknownop")
    with pytest.raises(nda.BackendValidationError, match="declared for integer or boolean dtypes only"):
        nda.backends.load("nda_test_baddtype")
    # A failed backend leaves nothing behind in the tables, and cpu keeps working.
    assert all(e.backend != "unknownop" for e in nda.dispatch.kernels("add"))
    assert (nda.ones(2) + 1).tolist() == [2.0, 2.0]
    states = {rec["name"]: rec for rec in nda.backends.status()}
    assert states["oldapi"]["state"] == "failed" and "0.3" in states["oldapi"]["reason"]
    assert states["unknownop"]["state"] == "failed"
    table = nda.backends.status_table()
    assert "cpu" in table and "failed" in table


def test_load_unknown_name_says_what_is_installed():
    with pytest.raises(nda.BackendError, match="installed: .*cpu"):
        nda.backends.load("nosuchbackend")


def test_a_refused_backend_shows_its_sentence_everywhere_and_keeps_the_traceback(tmp_path, monkeypatch, capsys):
    """status_table(), `python -m nda info`, DeviceUnavailableError and the conformance kit
    show why the backend was refused, not "Traceback (most recent call last):"."""
    from nda.__main__ import main
    from nda.testing import conformance

    monkeypatch.syspath_prepend(str(tmp_path))
    common = """
        import numpy as np
        import nda
        class B:
            device_types = (NAME,)
            name = NAME
            def devices(self): return [nda.backends.DeviceInfo(nda.Device(NAME, 0), "fake")]
            def to_host(self, b): return b
            def from_host(self, h, d, out=None): return h
    """
    _write_module(
        tmp_path,
        "nda_test_refused_version",
        common.replace("NAME", "'refusedversion'")
        + """
            api_version = "2.0"
            def register(self, register_kernel): pass
        backend = B()
    """,
    )
    _write_module(
        tmp_path,
        "nda_test_refused_op",
        common.replace("NAME", "'refusedop'")
        + """
            api_version = "1.2"
            def register(self, register_kernel): register_kernel("frobnicate", ["float32"], np.add)
        backend = B()
    """,
    )
    sentences = {
        "refusedversion": "backend 'refusedversion' implements backend API 2.0, but this nda speaks 1.4; install a version of the backend built for nda's backend API 1.x",
        "refusedop": "backend 'refusedop' registers a kernel for unknown op 'frobnicate'; the catalog's ops are listed in nda.ops.CATALOG",
    }
    for module, name in (("nda_test_refused_version", "refusedversion"), ("nda_test_refused_op", "refusedop")):
        with pytest.raises(nda.BackendValidationError):
            nda.backends.load(module)
        sentence = sentences[name]
        record = next(r for r in nda.backends.status() if r["name"] == name)
        assert record["reason"].startswith(sentence + "\nTraceback (most recent call last):")  # status() keeps both
        row = next(line for line in nda.backends.status_table().splitlines() if line.startswith(name))
        assert row.endswith(sentence) and "Traceback" not in row
        with pytest.raises(nda.DeviceUnavailableError, match=f"Backend '{name}' failed to load: {re.escape(sentence)}$"):
            nda.zeros(2, device=name)
        with pytest.raises(ValueError, match=re.escape(sentence)):
            conformance.run(name, ops=["add"])
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for sentence in sentences.values():
        assert f"reason: {sentence}\n    (the full traceback: nda.backends.status())" in out
    assert "reason: Traceback" not in out
