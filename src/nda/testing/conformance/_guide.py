"""Where the backend guide is: ``python -m nda.testing.conformance --guide`` prints it.

The guide (``writing-a-backend.md``) and its complete minimal backend (``minimal_backend.py``)
ship inside the package, in ``nda/_guide/`` (copied there from the repository's ``docs/`` when
the wheel is built, see ``setup.py``). In a source checkout or an editable install they are
read from ``docs/`` itself.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["guide_path", "example_path"]

_SOURCE = {"writing-a-backend.md": Path("docs") / "writing-a-backend.md", "minimal_backend.py": Path("docs") / "examples" / "minimal_backend.py"}


def _find(name: str) -> Path:
    packaged = resources.files("nda").joinpath("_guide", name)
    if packaged.is_file():
        return Path(str(packaged))
    root = Path(str(resources.files("nda"))).resolve().parents[1]  # src/nda -> the repository
    checkout = root / _SOURCE[name]
    if checkout.is_file():
        return checkout
    raise FileNotFoundError(f"the backend guide's {name} is missing from this nda installation (looked in {packaged} and {checkout})")


def guide_path() -> Path:
    """The backend guide, ``writing-a-backend.md`` (Markdown)."""
    return _find("writing-a-backend.md")


def example_path() -> Path:
    """The guide's complete minimal backend, ``minimal_backend.py`` (load it with ``nda.backends.load``
    once its directory is on ``sys.path``)."""
    return _find("minimal_backend.py")
