"""NumPy's floating-point warnings point at the user's line, not at nda's source.

NumPy reports a division by zero, an invalid value, an overflow or an underflow in a ufunc
with ``RuntimeWarning("divide by zero encountered in divide")`` attributed to the innermost
*Python* frame, which for a NumPy call in a user's script is the user's line. nda runs
NumPy kernels from its own frames (and from worker threads), so without help every such
warning would name the nda line that called the kernel, and Python's "once per location"
rule would then show it once per program instead of once per user line.

Wrapping each kernel call in ``numpy.errstate`` would fix that at a cost of about a
microsecond per op, as much as a whole tiny op. Instead this module adds, once, one entry
at the end of ``warnings.filters`` (so any filter of the user's that matches first wins,
and ``-W error`` or ``simplefilter("always")`` behave as without nda). Python's warning
machinery asks a filter's message and module patterns to ``match`` the warning; this entry
matches only NumPy's floating-point messages raised in an ``nda`` module, and for those it
warns again, with the same message and category, at the place the op was issued (the
first frame outside nda, or for an op run by a worker or a waiting thread the
``file:line`` recorded when it was issued), then lets its ``ignore`` action drop the
original. Python keeps a registry of warnings already shown per module; the registry of
an nda module that raised one is set to None, so that each later warning comes here again
and is attributed to its own user line. Nothing runs per op: only when NumPy warns.

Devices other than cpu decide for themselves: nda-sim's stream threads, like a GPU, do not
warn at all.

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

import os
import re
import sys
import threading
import warnings
from typing import Any

from ..engine._queues import local as _task_local

__all__ = ["install"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The messages of NumPy's floating-point error warnings (``numpy.seterr`` categories).
_NUMPY_FP = re.compile(r"(divide by zero|invalid value|overflow|underflow) encountered in ")
_seen = threading.local()  # the message of the warning being filtered on this thread
_registries: dict[str, dict[Any, Any]] = {}  # per file, for warnings re-raised at a recorded "file:line"


class _Message:
    """The filter's message pattern: NumPy's floating-point warnings (remembered for :class:`_Module`)."""

    def match(self, text: str) -> bool:
        matched = _NUMPY_FP.match(text) is not None
        _seen.text = text if matched else None
        return matched

    def __repr__(self) -> str:
        return "<nda: NumPy floating-point warnings>"


class _Module:
    """The filter's module pattern: a module of nda. Matching warns again at the user's line."""

    def match(self, module: str) -> bool:
        text = getattr(_seen, "text", None)
        _seen.text = None
        if text is None or not (module == "nda" or module.startswith("nda.")):
            return False
        owner = sys.modules.get(module)
        if owner is not None and owner.__dict__.get("__warningregistry__") is not None:
            owner.__dict__["__warningregistry__"] = None  # later warnings from this module come here again
        return _warn_at_user(text)

    def __repr__(self) -> str:
        return "<nda: modules of nda (re-raised at the user's line)>"


def _warn_at_user(text: str) -> bool:
    """Warn ``text`` again where the op was issued; False when that place is unknown."""
    site = _task_local.site
    if site is not None:  # a task: the op was issued at its recorded site
        if isinstance(site, str):
            filename, _, line = site.rpartition(":")
            lineno = int(line) if line.isdigit() else 0
        else:
            code, lineno = site
            filename = code.co_filename
        registry = _registries.setdefault(filename, {})
        module = os.path.splitext(os.path.basename(filename))[0]
        warnings.warn_explicit(text, RuntimeWarning, filename, lineno, module=module, registry=registry)
        return True
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return False
    globals_ = frame.f_globals
    registry = globals_.get("__warningregistry__")
    if registry is None and "__warningregistry__" not in globals_:
        registry = globals_["__warningregistry__"] = {}
    warnings.warn_explicit(text, RuntimeWarning, frame.f_code.co_filename, frame.f_lineno, module=globals_.get("__name__", "<unknown>"),
                           registry=registry)
    return True


_FILTER = ("ignore", _Message(), RuntimeWarning, _Module(), 0)


def install() -> None:
    """Append the filter to ``warnings.filters`` unless it is there (idempotent)."""
    if any(entry is _FILTER for entry in warnings.filters):
        return
    warnings.filters.append(_FILTER)  # type: ignore[arg-type]
    mutated = getattr(warnings, "_filters_mutated", None)
    if mutated is not None:
        mutated()
