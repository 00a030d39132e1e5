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


# ---------------------------------------------------------------------------- calls upward (issue 34)
#
# A lower layer that must call up declares what it needs as a typing.Protocol and a function
# that installs an implementation of it, once; the higher layer installs it at import. Nothing
# else reaches down to fill a slot: a new `lower.slot.attr = fn`, `setattr(lower_object, ...)`
# or `_Up`/`Upcalls`/`_Hooks` class fails here. Before issue 34 there were 35 such slots.

#: (module that installs, the lower module, its install function, the Protocol it takes).
REGISTRATIONS = {
    ("nda", "nda._namespace", "complete_ndarray", "ArrayAPI"),
    ("nda._api", "nda.ops.spec", "install", "Provider"),
    ("nda._interop", "nda._execute", "install", "Provider"),
    ("nda.layouts", "nda.dispatch", "install", "Provider"),
    ("nda.layouts", "nda.backends", "install_layouts", "Layouts"),
}

#: The one module that attaches attributes to a class of a lower layer: NDArray's methods.
_ATTACHES = {"nda._namespace": "NDArray"}

_SLOT_CLASS = re.compile(r"^_?(Up|Upper|Upcalls|\w*Hooks|\w*Upcalls|\w*Slots)$")


def _sources() -> dict[str, Path]:
    src = ROOT / "src"
    found = {}
    for path in sorted((src / "nda").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported_names(tree, module: str) -> dict[str, str]:
    """Module-level names bound by imports: name -> the module (or module.object) it comes from."""
    import ast

    package = module if module == "nda" or (ROOT / "src" / Path(*module.split(".")) / "__init__.py").exists() else module.rpartition(".")[0]
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join(parent + ([node.module] if node.module else []))
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def _layer_of(name: str, layers: list[list[str]]) -> int | None:
    """The layer of a dotted name (a module, or an object in one), 0 = the top."""
    while name.startswith("nda"):
        found = _part(name, layers) if name != "nda" else -1
        if found is not None:
            return found
        name = name.rpartition(".")[0]
    return None


def _per_thread(origin: str) -> bool:
    """Whether ``origin`` (module.object) is a threading.local: per-thread state written at run time, not a slot."""
    import importlib
    import threading

    module, _, name = origin.rpartition(".")
    try:
        return isinstance(getattr(importlib.import_module(module), name), threading.local)
    except (ImportError, AttributeError):
        return False


def _upward_slots() -> list[str]:
    """`lower.attr... = value`, `setattr(lower_thing, ...)` into a lower layer, and slot classes."""
    import ast

    layers = _layers()
    found = []
    for module, path in _sources().items():
        tree = ast.parse(path.read_text(), str(path))
        imported = _imported_names(tree, module)
        here = _layer_of(module, layers) if module != "nda" else -1
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and _SLOT_CLASS.match(node.name):
                found.append(f"{module}: class {node.name}")
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args:
                targets = [ast.Attribute(value=node.args[0], attr="<setattr>")]
            for target in targets:
                if not isinstance(target, ast.Attribute):
                    continue
                root = target
                while isinstance(root, ast.Attribute):
                    root = root.value
                if not isinstance(root, ast.Name) or root.id not in imported:
                    continue
                origin = imported[root.id]
                lower = _layer_of(origin, layers)
                if lower is None or here is None or lower <= here:
                    continue  # not nda's, or the same layer (a package's own modules)
                if _ATTACHES.get(module) == root.id or _per_thread(origin):
                    continue
                found.append(f"{module}: {ast.unparse(target)}")
    return found


def test_no_lower_layer_has_slots_that_a_higher_one_fills():
    """Issue 34: upward calls hid in run-time slots (`_array.up`, `dispatch.upper`, `spec.upcalls`,
    `_execute.hooks`, `backends.layout_hooks`: 35 of them) that lint-imports cannot see."""
    slots = _upward_slots()
    assert not slots, (
        f"a higher layer fills a slot of a lower one: {slots}. Declare what the lower layer needs as a typing.Protocol "
        f"there, with an install function, and install one implementation once from the higher layer (see REGISTRATIONS)"
    )


def test_the_registrations_into_lower_layers_are_typed_protocols_installed_once():
    """Every import-time call from a higher layer into a lower one's install function is
    listed in REGISTRATIONS, made once, and takes a Protocol the lower layer declares;
    installing a second time is refused."""
    import ast
    import importlib
    import inspect
    import typing

    installs = {(lower, fn) for _, lower, fn, _ in REGISTRATIONS}
    seen: dict[tuple[str, str, str], int] = {}
    for module, path in _sources().items():
        tree = ast.parse(path.read_text(), str(path))
        imported = _imported_names(tree, module)
        for stmt in tree.body:  # at import: a call statement of the module's body
            node = stmt.value if isinstance(stmt, ast.Expr) else None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                origin = imported.get(node.func.value.id)
                if origin is None or not (node.func.attr in ("install", "complete_ndarray") or node.func.attr.startswith("install_")):
                    continue
                key = (module, origin, node.func.attr)
                seen[key] = seen.get(key, 0) + 1
    assert {k: 1 for k in seen} == {(h, lower, fn): 1 for h, lower, fn, _ in REGISTRATIONS} and set(seen.values()) == {1}, seen
    for _, lower, fn_name, protocol_name in REGISTRATIONS:
        fn = getattr(importlib.import_module(lower), fn_name)
        protocol = getattr(sys.modules[fn.__module__], protocol_name)  # declared beside the install function, in the lower layer
        assert getattr(protocol, "_is_protocol", False) and typing.Protocol in protocol.__mro__, protocol
        (param,) = inspect.signature(fn).parameters.values()
        assert param.annotation in (protocol_name, protocol), (lower, fn_name, param)
        assert (lower, fn_name) in installs
    import nda

    with pytest.raises(RuntimeError, match="once"):
        nda._namespace.complete_ndarray(None)  # type: ignore[arg-type]
    for install, provider in (
        (nda.dispatch.install, nda.dispatch._upper),
        (nda.ops.spec.install, nda.ops.spec.upper),
        (nda._execute.install, nda._execute._upper),
        (nda.backends.install_layouts, nda.backends._activation._layouts),
    ):
        with pytest.raises(RuntimeError, match="installed already"):
            install(provider)


def test_mypy_checks_each_registration_against_its_protocol(tmp_path):
    """The implementations the higher layers install conform to the lower layers' protocols
    (mypy --strict): a wrong signature is a type error, not a surprise at call time."""
    pytest.importorskip("mypy")
    snippet = tmp_path / "registrations.py"
    snippet.write_text(
        "from nda import dispatch, _execute\nfrom nda.ops import spec\nfrom nda.backends import _activation\n"
        "from nda.layouts import _ForDispatch, _ForBackends\nfrom nda._interop import _ForExecute\nfrom nda._api import _ForCatalog\n\n"
        "a: dispatch.Provider = _ForDispatch()\nb: _activation.Layouts = _ForBackends()\n"
        "c: _execute.Provider = _ForExecute()\nd: spec.Provider = _ForCatalog()\n"
    )
    init = ROOT / "src" / "nda" / "__init__.py"
    install_lines = {i for i, line in enumerate(init.read_text().splitlines(), 1) if "complete_ndarray(" in line}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
            "nda/__init__.py",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT / "src",
    ).stdout
    errors = [
        line
        for line in out.splitlines()
        if ": error:" in line
        and (line.startswith(str(snippet)) or (line.startswith("nda/__init__.py:") and int(line.split(":")[1]) in install_lines))
    ]
    assert install_lines and not errors, out
    assert "error" not in out or errors == [], out
