"""Deliberately broken plugins, installed through real entry points in a temporary environment.

A throw-away distribution (a ``*.dist-info`` folder with ``entry_points.txt``) on
``PYTHONPATH`` declares four backends in the ``nda.backends`` group: one that raises on
import, one built for another major backend API, one that registers a kernel for an op
the catalog does not have, and one whose device probe fails. Each must leave
``import nda`` and the cpu backend working, and ``status()`` must say what went wrong.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

MODULES = {
    "brk_raises": "raise ImportError('vendor driver libfoo.so not found')\n",
    "brk_oldapi": """
        class B:
            name = "oldapi"; api_version = "0.9"; device_types = ("oldapi",)
            def devices(self): return []
            def register(self, register_kernel): pass
            def to_host(self, b): return b
            def from_host(self, h, d, out=None): return h
        backend = B()
    """,
    "brk_badop": """
        import numpy as np
        import nda
        class B:
            name = "badop"; api_version = "1.0"; device_types = ("badop",)
            def devices(self): return [nda.backends.DeviceInfo(nda.Device("badop", 0), "fake")]
            def register(self, register_kernel):
                register_kernel("add", ["float32"], np.add)
                register_kernel("fused_frobnicate", ["float32"], np.add)
            def to_host(self, b): return b
            def from_host(self, h, d, out=None): return h
        backend = B()
    """,
    "brk_nodevice": """
        class B:
            name = "nodevice"; api_version = "1.1"; device_types = ("nodevice",)
            def devices(self): raise RuntimeError("CUDA driver version is insufficient for CUDA runtime version")
            def register(self, register_kernel): raise AssertionError("must not be called without a device")
            def to_host(self, b): return b
            def from_host(self, h, d, out=None): return h
        backend = B()
    """,
}
ENTRY_POINTS = {"raises": "brk_raises:backend", "oldapi": "brk_oldapi:backend", "badop": "brk_badop:backend", "nodevice": "brk_nodevice:backend"}


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    for name, body in MODULES.items():
        (root / f"{name}.py").write_text(textwrap.dedent(body))
    dist = root / "nda_broken_plugins-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: nda-broken-plugins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[nda.backends]\n" + "".join(f"{k} = {v}\n" for k, v in ENTRY_POINTS.items()))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}


def run(env, code):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_broken_plugins_are_listed_but_not_imported_by_import_nda(plugin_env):
    out = run(
        plugin_env,
        """
        import sys, json, nda
        x = nda.ones(2) + 1
        names = sorted(r["name"] for r in nda.backends.status())
        print(json.dumps([names, [m for m in ("brk_raises", "brk_oldapi", "brk_badop", "brk_nodevice") if m in sys.modules], x.tolist()]))
    """,
    )
    names, imported, values = json.loads(out)
    assert {"raises", "oldapi", "badop", "nodevice", "cpu"} <= set(names)
    assert imported == [], "a plugin's module is imported only when its device is used"
    assert values == [2.0, 2.0]


def test_each_broken_plugin_is_isolated_and_explained(plugin_env):
    out = run(
        plugin_env,
        """
        import json, nda
        report = {}
        for name in ("raises", "oldapi", "badop", "nodevice"):
            try:
                nda.zeros(2, device=name)
                report[name] = ["no error"]
            except ValueError as err:
                report[name] = [type(err).__name__, str(err)]
        report["cpu"] = (nda.arange(3) * 2).tolist()
        report["status"] = {r["name"]: [r["state"], r["reason"]] for r in nda.backends.status()}
        report["table"] = nda.backends.status_table()
        try:
            nda.backends.load("badop")
        except nda.BackendValidationError as err:
            report["load_badop"] = str(err)
        print(json.dumps(report))
    """,
    )
    report = json.loads(out)
    assert report["cpu"] == [0, 2, 4]
    status = report["status"]
    assert status["raises"][0] == "failed" and "libfoo.so not found" in status["raises"][1]
    assert status["oldapi"][0] == "failed" and "backend API 0.9" in status["oldapi"][1] and "speaks 1.4" in status["oldapi"][1]
    assert status["badop"][0] == "failed" and "unknown op 'fused_frobnicate'" in status["badop"][1]
    assert status["nodevice"][0] == "unavailable" and "CUDA driver version is insufficient" in status["nodevice"][1]
    for name in ("raises", "oldapi", "badop", "nodevice"):
        kind, message = report[name]
        assert kind == "DeviceUnavailableError" and f"'{name}'" in message, report[name]
    assert "libfoo.so not found" in report["raises"][1], "the error for the device names the cause"
    assert "unknown op 'fused_frobnicate'" in report["load_badop"]
    for word in ("raises", "failed", "unavailable", "loaded"):
        assert word in report["table"]


def test_nda_backends_excludes_a_plugin(plugin_env):
    out = run(
        {**plugin_env, "NDA_BACKENDS": "-raises,-badop"},
        """
        import nda
        print({r["name"]: r["state"] for r in nda.backends.status()})
    """,
    )
    assert "'raises': 'excluded'" in out and "'badop': 'excluded'" in out and "'oldapi': 'installed'" in out
