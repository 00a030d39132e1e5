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

A re-raised warning goes through the registry of the module that issued the op (its
``__warningregistry__``, found by file name), as NumPy's own warning from that line would:
Python's "once per location" then counts an op run inline, as a task or in a hybridized
function's graph as the same location.

**Fused kernels** (a hybridized function's claimed element-wise chains, ``nda.backends.fusion``)
run many ops in one kernel, chunk by chunk. :func:`collect` / :func:`at` / :func:`report`
make them report as the ops would have one by one: while the kernel runs, the categories the
issuing state warns about go to a collector (per instruction, per message), and at the end
each message is warned once per instruction, at that instruction's line, in the order the
ops would have warned. A ``raise`` category raises NumPy's ``FloatingPointError`` as the op
would: the kernel that meets one in a chunk runs again op by op over the whole arrays
(:func:`restart`), so the error is the one the first failing op raises eagerly, after the
warnings of the ops before it; ``ignore`` stays silent. A state with a handler of the user's
(``call``, or ``log`` to their object) or ``print`` is used as it is, and the kernel runs op by op over
the whole arrays (:data:`AS_IS`), so the handler sees each op's errors once, as eagerly.
:func:`modes` and :func:`silenced` let an evaluator that cannot report (numexpr) see the
state it runs under.

Without NumPy's context variable (a NumPy that moved it) the guard does nothing and
warnings are attributed as NumPy attributes them.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
import warnings
from typing import Any, Sequence

import numpy as np

from ._entries import local as _task_local

__all__ = ["guard", "unguard", "issuing", "derived", "collect", "at", "restart", "report", "modes", "silenced", "warn_at", "AS_IS"]

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
            text = text[len("Warning: ") :]
        _warn_at_site(text)

    def __repr__(self) -> str:
        return "<nda: NumPy floating-point warnings at the user's line>"


_WRITER = _Writer()


_module_globals: dict[str, dict[str, Any] | None] = {}  # file name -> the globals of the module loaded from it


def _registry_for(filename: str) -> tuple[dict[Any, Any], str]:
    """The warning registry (and module name) a warning from a line of ``filename`` uses: its
    module's ``__warningregistry__``, as for NumPy's own warning there; else one of nda's."""
    found = _module_globals.get(filename, False)
    if found is False:
        found = None
        for module in list(sys.modules.values()):
            if getattr(module, "__file__", None) == filename:
                found = vars(module)
                break
        else:
            main = sys.modules.get("__main__")
            if main is not None and filename in ("<string>", "<stdin>") and getattr(main, "__file__", None) is None:
                found = vars(main)  # python -c, an interactive session
        if len(_module_globals) > 1024:
            _module_globals.clear()
        _module_globals[filename] = found
    if found is not None:
        registry = found.get("__warningregistry__")
        if registry is None:
            registry = found["__warningregistry__"] = {}
        return registry, found.get("__name__", "<unknown>")
    return _registries.setdefault(filename, {}), os.path.splitext(os.path.basename(filename))[0]


def warn_at(site: Any, text: str) -> None:
    """Warn ``text`` as a ``RuntimeWarning`` from ``site`` (``"file:line"`` or ``(code, line)``)."""
    if isinstance(site, str):
        filename, _, line = site.rpartition(":")
        lineno = int(line) if line.isdigit() else 0
    else:
        code, lineno = site
        filename = code.co_filename
    registry, module = _registry_for(filename)
    warnings.warn_explicit(text, RuntimeWarning, filename, lineno, module=module, registry=registry)


def _warn_at_site(text: str) -> None:
    """Warn ``text`` as a ``RuntimeWarning`` where the running op was issued."""
    site = _task_local.site
    if site is not None:  # a task: the op was issued at its recorded site
        warn_at(site, text)
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
    warnings.warn_explicit(
        text, RuntimeWarning, frame.f_code.co_filename, frame.f_lineno, module=globals_.get("__name__", "<unknown>"), registry=registry
    )


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


# ---------------------------------------------------------------------------- fused kernels

_ORDER = {"divide by zero": 0, "overflow": 1, "underflow": 2, "invalid value": 3}  # NumPy's order within one op


class _Sink(threading.local):
    found: list[tuple[int, str]] | None = None  # (instruction, message) while a fused kernel collects
    index: int = -1  # the instruction running


_SINK = _Sink()


class _Collector:
    """NumPy's ``log`` target while a fused kernel runs: keeps (instruction, message)."""

    def write(self, message: str) -> None:
        text = message.strip()
        if text.startswith("Warning: "):
            text = text[len("Warning: ") :]
        found = _SINK.found
        if found is None:  # not collecting on this thread: where the op was issued
            _warn_at_site(text)
        else:
            found.append((_SINK.index, text))

    def __repr__(self) -> str:
        return "<nda: NumPy floating-point warnings of a fused kernel, once per op>"


_COLLECTOR = _Collector()

#: What :func:`collect` returns under a handler of the user's: run the ops one by one, as they are.
AS_IS: Any = object()
_collecting: dict[Any, Any] = {}  # state -> the collecting state derived from it, or False
_modes: dict[Any, dict[str, str]] = {}  # state -> np.geterr() under it
_silent: list[Any] = []  # the all-ignore state, once made


def _read(state: Any, fn: Any) -> Any:
    def read() -> Any:
        _STATE.set(state)
        return fn()

    return contextvars.Context().run(read)


def _cached(cache: dict[Any, Any], state: Any, make: Any) -> Any:
    found = cache.get(state)
    if found is None:
        found = make(state)
        if len(cache) >= _CACHE_SIZE:
            cache.clear()
        cache[state] = found
    return found


def _make_collecting(state: Any) -> Any:
    def make() -> Any:
        modes = np.geterr()
        handler = np.geterrcall()
        if "call" in modes.values() or "print" in modes.values() or ("log" in modes.values() and handler is not _WRITER):
            return AS_IS  # the user's own handler (or NumPy's print): their state as it is, the ops one by one
        targets = [c for c in _CATEGORIES if modes[c] == "warn" or (modes[c] == "log" and handler is _WRITER)]
        if not targets:
            return False
        with np.errstate(call=_COLLECTOR, **{c: ("log" if c in targets else modes[c]) for c in _CATEGORIES}):
            return _STATE.get()

    return _read(state, make)


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

    def modes() -> dict[str, str]:
        """``np.geterr()`` of the calling thread's state (cached per state; do not modify)."""
        state = _get()
        found = _modes.get(state)
        return found if found is not None else _cached(_modes, state, lambda st: _read(st, np.geterr))

    def silenced() -> Any:
        """Enter a state that ignores every category (a check that must not warn); :func:`unguard` leaves it."""
        if not _silent:
            _silent.append(_read(_get(), lambda: _enter_ignore()))
        return _set(_silent[0])

    def collect() -> Any:
        """Collect the floating-point warnings of a fused kernel about to run on this thread (see
        the module docstring): a token for :func:`report`; None when there is nothing to collect
        (every category ignored or raised); :data:`AS_IS` under a handler of the user's."""
        state = _get()
        found = _collecting.get(state)
        if found is None:
            found = _cached(_collecting, state, _make_collecting)
        if found is False:
            return None
        if found is AS_IS:
            return AS_IS
        previous = (_SINK.found, _SINK.index)
        _SINK.found = []
        return (_set(found), previous)

    def at(index: int) -> None:
        """The fused kernel now runs its instruction ``index``."""
        _SINK.index = index

    def restart(token: Any) -> None:
        """Forget what :func:`collect` has collected so far (the kernel runs again); ``token`` may be None."""
        if token is not None and _SINK.found is not None:
            _SINK.found.clear()

    def report(token: Any, sites: Sequence[Any]) -> None:
        """End :func:`collect`: warn each message once per instruction, at ``sites[instruction]``,
        instruction by instruction and in NumPy's order of categories within one."""
        context_token, previous = token
        found = _SINK.found or []
        _reset(context_token)
        _SINK.found, _SINK.index = previous
        if not found:
            return
        seen = {}
        for index, text in found:
            seen.setdefault((index, text), None)
        ordered = sorted(seen, key=lambda it: (it[0], _ORDER.get(it[1].split(" encountered", 1)[0], 4)))
        for index, text in ordered:
            site = sites[index] if 0 <= index < len(sites) and sites[index] else None
            if site is None:
                _warn_at_site(text)
            else:
                warn_at(site, text)

    def _enter_ignore() -> Any:
        with np.errstate(all="ignore"):
            return _STATE.get()

else:  # pragma: no cover

    def issuing() -> Any:
        return None

    def guard(state: Any = None) -> Any:
        return None

    def unguard(token: Any) -> None:
        return None

    def modes() -> dict[str, str]:
        return np.geterr()

    def silenced() -> Any:
        return None

    def collect() -> Any:
        return None

    def at(index: int) -> None:
        return None

    def restart(token: Any) -> None:
        return None

    def report(token: Any, sites: Sequence[Any]) -> None:
        return None
