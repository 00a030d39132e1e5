"""nda's architecture in layers, checked on its imports (every import, also inside functions).

The layers are written once, as import-linter contracts in ``pyproject.toml``; CI runs
``lint-imports``. This test runs it too, and checks with grimp (which import-linter is
built on) what a layers contract does not say: that no circle of imports joins two parts,
and that nothing inside nda imports the ``nda`` package itself (only its clients, the
testing kit and the command line, use the namespace). The README's "Architecture" section
must name the same layers.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (pip install import-linter)")

ROOT = Path(__file__).resolve().parents[1]


def _layers() -> list[list[str]]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [[m.strip() for m in re.split(r"[|:]", layer)] for layer in contract["layers"]]


def _part(module: str, layers: list[list[str]]) -> int | None:
    """The index of the layer ``module`` belongs to (0 = the top)."""
    name = module.split(".", 1)[1] if "." in module else ""
    for i, layer in enumerate(layers):
        for member in layer:
            if name == member or name.startswith(member + "."):
                return i
    return None


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("nda", include_external_packages=False)


def test_every_module_of_nda_is_in_a_layer(graph):
    layers = _layers()
    loose = sorted(m for m in graph.modules if m != "nda" and _part(m, layers) is None)
    assert not loose, f"modules in no layer of pyproject.toml's layers contract: {loose}"


def test_no_import_circle_joins_two_layers(graph):
    layers = _layers()
    parts = {m: _part(m, layers) for m in graph.modules if m != "nda"}
    for m, part in parts.items():
        for imported in graph.find_modules_directly_imported_by(m):
            if imported == "nda":
                continue
            if parts[imported] != part and graph.find_shortest_chain(importer=imported, imported=m) is not None:
                chain = graph.find_shortest_chain(importer=imported, imported=m)
                pytest.fail(f"an import circle joins two layers: {m} -> {' -> '.join(chain)}")


def test_nothing_inside_nda_imports_the_nda_package(graph):
    clients = ("nda.testing", "nda.__main__", "nda._stubgen")
    importers = sorted(m for m in graph.find_modules_that_directly_import("nda") if not m.startswith(clients))
    assert not importers, f"modules that import the nda package itself (register with it instead): {importers}"


def test_import_linter_contracts_are_kept():
    linter = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(linter).exists():
        pytest.skip("lint-imports is not installed (pip install import-linter)")
    done = subprocess.run([linter, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_the_readme_names_the_same_layers():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    for layer in _layers():
        for member in layer:
            assert f"`{member}`" in section, f"the README's Architecture section does not name {member!r} (pyproject.toml's layers contract)"


def test_every_module_says_its_layer(graph):
    import importlib

    missing = []
    for name in sorted(graph.modules):
        if name.endswith("__main__") or ".test_" in name:
            continue
        doc = importlib.import_module(name).__doc__ or ""
        if "Layer:" not in doc:
            missing.append(name)
    assert not missing, f"module docstrings that do not say their layer: {missing}"


def test_every_name_in_a_modules_all_exists(graph):
    """``from module import *`` works: every name a module's ``__all__`` lists is there (a module
    ``__getattr__`` may serve it). Issue 34, found by ruff's F822: ``nda.layouts`` listed
    ``to_layout``, which it never defined, so ``from nda.layouts import *`` raised."""
    import importlib

    missing = []
    for name in sorted(graph.modules):
        if name.endswith("__main__") or ".test_" in name:
            continue
        module = importlib.import_module(name)
        missing += [f"{name}.{attr}" for attr in getattr(module, "__all__", ()) if not hasattr(module, attr)]
    assert not missing, f"names in __all__ that the module does not have: {missing}"
