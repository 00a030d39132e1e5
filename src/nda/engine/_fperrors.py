"""NumPy's floating-point warnings name the user's line, with no change to any global state.

NumPy reports a division by zero, an invalid value, an overflow or an underflow in a ufunc
by the mode its *error state* gives that category (``np.errstate``: ignore, warn, raise,
call, print, log). In ``warn`` mode the ``RuntimeWarning`` is attributed to the innermost
Python frame. nda runs NumPy kernels from its own frames, and from worker threads, so
without help the warning would name nda's source, and Python's "once per location" rule
would show it once per program instead of once per user line.

An earlier design appended an object to ``warnings.filters`` to re-raise such warnings.
That changed what other libraries see (scikit-learn copies the filters into its jobs and
reads ``.pattern``; a filter that is not a regular expression broke it). Now nothing global
changes. NumPy's error state is a context variable (per thread), and a kernel runs under a
*derived* state: the state where the op was issued, with every ``warn`` category turned
into ``log``, whose writer (:data:`_WRITER`) warns again at the op's site. So:

- the user's own ``np.errstate`` decides, as for a NumPy call: ``ignore`` stays silent,
  ``raise`` raises ``FloatingPointError`` (for queued work, at the sync point that reads the
  result, like any error of work done later), ``call``/``log`` keep the user's handler (a
  state with one of those is used as it is, unattributed);
- a warning names the line that issued the op: the first frame outside nda on the issuing
  thread, or, for a task run later (by a worker or a waiting thread), the site recorded
  when it was issued; it goes through the user's warning filters there, once per line;
- tasks carry the error state of the thread that issued them (:func:`issuing`), so an op
  issued inside ``with np.errstate(...)`` runs under it wherever it runs.

:func:`guard` / :func:`unguard` bracket a kernel call (two context-variable operations and
a dict lookup, about 0.1 µs). Derived states are cached per issuing state (by identity: a
``np.errstate`` block makes a new one each time it is entered, so the cache is bounded).
The C fast paths of the operators (``nda._native``) need no guard: NumPy's warning there
already names the user's frame, the innermost Python one.

Without NumPy's context variable (a NumPy that moved it) the guard does nothing and
warnings are attributed as NumPy attributes them.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import contextvars
import os
import sys
import warnings
from typing import Any

import numpy as np

from ._entries import local as _task_local

__all__ = ["guard", "unguard", "issuing", "derived"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:  # NumPy >= 2.0 keeps the error state in this context variable
    from numpy._core._ufunc_config import _extobj_contextvar as _STATE
except ImportError:  # pragma: no cover - a NumPy without it: no guard, NumPy's attribution
    _STATE = None

_CATEGORIES = ("divide", "over", "under", "invalid")
_registries: dict[str, dict[Any, Any]] = {}  # per file, for warnings re-raised at a recorded site
_cache: dict[Any, Any] = {}  # issuing state -> derived state (both NumPy extobj capsules)
_CACHE_SIZE = 64


class _Writer:
    """NumPy's ``log`` target: ``write("Warning: divide by zero encountered in divide\\n")``."""

    def write(self, message: str) -> None:
        text = message.strip()
        if text.startswith("Warning: "):
            text = text[len("Warning: "):]
        _warn_at_site(text)

    def __repr__(self) -> str:
        return "<nda: NumPy floating-point warnings at the user's line>"


_WRITER = _Writer()


def _warn_at_site(text: str) -> None:
    """Warn ``text`` as a ``RuntimeWarning`` where the running op was issued."""
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
        return
    frame: Any = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:  # no user frame (an nda thread with no task): as NumPy would
        warnings.warn(text, RuntimeWarning, stacklevel=3)
        return
    globals_ = frame.f_globals
    registry = globals_.get("__warningregistry__")
    if registry is None:
        registry = globals_["__warningregistry__"] = {}
    warnings.warn_explicit(text, RuntimeWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=globals_.get("__name__", "<unknown>"), registry=registry)


def _derive(state: Any) -> Any:
    """The state to run kernels under for ``state``: its ``warn`` categories become ``log``."""
    def read() -> Any:
        _STATE.set(state)
        modes = np.geterr()
        if any(mode in ("call", "log") for mode in modes.values()) or "warn" not in modes.values():
            return state  # the user's own handler, or nothing to attribute: their state as it is
        with np.errstate(call=_WRITER, **{c: ("log" if modes[c] == "warn" else modes[c]) for c in _CATEGORIES}):
            return _STATE.get()

    return contextvars.Context().run(read)


def derived(state: Any) -> Any:
    """The derived state of ``state`` (an issuing thread's error state), cached."""
    found = _cache.get(state)
    if found is None:
        found = _derive(state)
        if len(_cache) >= _CACHE_SIZE:
            _cache.clear()  # np.errstate blocks make new states: keep the cache small
        _cache[state] = found  # (no lock: a race between threads only computes a state twice)
    return found


if _STATE is not None:
    _get = _STATE.get
    _set = _STATE.set
    _reset = _STATE.reset

    def issuing() -> Any:
        """The error state of the calling thread (what a task it issues runs under)."""
        return _get()

    def guard(state: Any = None) -> Any:
        """Enter the derived state of ``state`` (default: the calling thread's); returns a token."""
        current = _get() if state is None else state
        found = _cache.get(current)
        return _set(found if found is not None else derived(current))

    def unguard(token: Any) -> None:
        """Leave what :func:`guard` entered."""
        _reset(token)

else:  # pragma: no cover
    def issuing() -> Any:
        return None

    def guard(state: Any = None) -> Any:
        return None

    def unguard(token: Any) -> None:
        return None
