"""The notebooks' set-up: what they import is installed by the README's set-up, CI runs them from
it alone, and each is titled with its number. (Running them is ``notebooks/run_all.py``, in CI.)"""

from __future__ import annotations

import ast
import json
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _cells(path: Path, kind: str) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in nb["cells"] if c["cell_type"] == kind]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    return {_normal(re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0]) for r in requirements}


def test_every_notebook_is_titled_with_its_number():
    assert NOTEBOOKS
    for path in NOTEBOOKS:
        title = _cells(path, "markdown")[0].splitlines()[0]
        number = path.name.split("-", 1)[0]
        assert title.startswith(f"# {number} "), f"{path.name} is titled {title!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_what_a_notebook_uses_is_in_the_notebooks_extra(path):
    """The README's set-up installs nda[notebooks] and nda-sim: everything else a notebook imports
    (or makes nda import: SciPy for csr and row_sparse) must be in that extra or in nda's dependencies."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    installed = _requirement_names(project["optional-dependencies"]["notebooks"]) | _requirement_names(project["dependencies"])
    installed |= {"nda", "nda-sim"}
    code = _cells(path, "code")
    modules = set()
    for source in code:
        tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module.split(".")[0])
    if any(re.search(r"""to_layout\(\s*["'](csr|row_sparse)|nda\.sparse\.""", s) for s in code):
        modules.add("scipy")  # nda's sparse layouts on cpu are built on SciPy (pyproject: the sparse extra)
    dists = packages_distributions()
    missing = set()
    for module in modules - set(sys.stdlib_module_names):
        names = {_normal(d) for d in dists.get(module, [module])}
        if not names & installed:
            missing.add(f"{module} ({', '.join(sorted(names))})")
    assert not missing, f"{path.name} needs {sorted(missing)}, which the README's set-up does not install (pyproject: the notebooks extra)"


def test_ci_runs_the_notebooks_from_the_readmes_set_up_alone():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = re.search(r"```bash\n(python3 -m venv \.venv && .*?) && \.venv/bin/python -m nda demo\n```", readme).group(1)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    expected = setup.replace(".venv", ".venv-notebooks") + " && .venv-notebooks/bin/python notebooks/run_all.py"
    assert expected in ci, f"CI must run the notebooks from the README's set-up alone: {expected}"
