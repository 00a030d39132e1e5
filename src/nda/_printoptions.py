"""nda's print options: NumPy's options with nda's own settings layered on top, per context.

``nda.set_printoptions(precision=3)`` changes how nda arrays print and leaves NumPy's own
options (and how NumPy arrays print) alone. The settings live in a ``ContextVar``, as
NumPy 2 keeps its own: a change made in one thread or asyncio task is that context's
(a thread started afterwards begins with nda's defaults, as with NumPy's options), and
``nda.printoptions(...)`` sets them for a ``with`` block. An option nda does not set
is NumPy's current one, so ``np.set_printoptions`` still reaches nda's arrays.

:func:`applied` is the one place that applies them: nda's display code
(:mod:`nda._display`) formats inside it, with NumPy's ``printoptions`` context manager
entered for the overrides only (a context-local change, undone on exit).

Layer: values (README, "Architecture").
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, Iterator

import numpy as np

__all__ = ["overrides", "update", "restore", "current", "applied", "OPTIONS"]

#: NumPy's print options nda can set (``numpy.set_printoptions``' parameters).
OPTIONS = (
    "precision",
    "threshold",
    "edgeitems",
    "linewidth",
    "suppress",
    "nanstr",
    "infstr",
    "formatter",
    "sign",
    "floatmode",
    "legacy",
    "override_repr",
)

_OVERRIDES: ContextVar[dict[str, Any]] = ContextVar("nda_printoptions", default={})  # noqa: B039 - never mutated


def overrides() -> dict[str, Any]:
    """nda's settings in this context (the options nda sets over NumPy's)."""
    return dict(_OVERRIDES.get())


def _validated(changes: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(changes) - set(OPTIONS))
    if unknown:
        raise TypeError(f"set_printoptions() got unexpected keyword arguments {unknown}; the options are {', '.join(OPTIONS)}")
    merged = dict(_OVERRIDES.get())
    for key, value in changes.items():
        if value is not None or key in ("formatter", "override_repr"):  # NumPy: None leaves an option as it is, except these two
            merged[key] = value
    for key in ("formatter", "override_repr"):
        if merged.get(key, 0) is None:
            del merged[key]
    with np.printoptions(**merged):  # NumPy checks the values (its exceptions), in this context only
        pass
    return merged


def update(**changes: Any) -> Any:
    """Set nda's print options in this context; returns the token that restores the previous ones."""
    return _OVERRIDES.set(_validated(changes))


def restore(token: Any) -> None:
    _OVERRIDES.reset(token)


def current() -> dict[str, Any]:
    """The options nda arrays print with: NumPy's current ones, with nda's settings over them."""
    options = np.get_printoptions()
    options.update(_OVERRIDES.get())
    return options


@contextlib.contextmanager
def applied() -> Iterator[None]:
    """Format inside this to print with nda's options (NumPy's own are back on exit)."""
    settings = _OVERRIDES.get()
    if not settings:
        yield
        return
    with np.printoptions(**settings):
        yield
