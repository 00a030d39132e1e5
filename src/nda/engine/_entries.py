"""What an op that may fail carries on a device queue, and how its error is kept and raised.

:class:`Deferred` is a queue kernel's result whose error is known only once its work has
run (a data-dependent check); :class:`Entry` is such an op in flight on a queue (see
:mod:`.queues`). A failed op's error is kept until a sync point raises it, possibly for
as long as the failed array lives: :func:`annotate` adds nda's note (op, ``file:line``,
device) and keeps the kernel's traceback as text instead of frames (which would keep the
op's arrays alive), and :func:`fresh` is what a sync point raises: a copy whose cause is
that traceback (:class:`KernelTraceback`). :func:`user_site` finds the user's ``file:line``
an entry names (the first frame outside nda, or the site of the engine task running it).

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable

__all__ = ["Deferred", "Entry", "KernelTraceback", "annotate", "strip_frames", "fresh", "local", "user_site"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Deferred:
    """A queue kernel's result whose error can only be known when its work has run.

    ``value`` is what the kernel would return (the output buffer, or None for a kernel
    that writes its first argument); ``check()`` is called on the host once the op's
    work is finished and returns the op's exception, or None (it may also raise it).
    """

    __slots__ = ("value", "check")

    def __init__(self, value: Any, check: Callable[[], BaseException | None]) -> None:
        self.value = value
        self.check = check

    def __repr__(self) -> str:
        return f"<Deferred {self.value!r}>"


class Entry:
    """An op in flight that may fail: it has a check, or it read the output of an entry."""

    __slots__ = ("seq", "queue", "name", "site", "check", "outs", "deps", "error", "retired")

    def __init__(self, queue: Any, seq: int, name: str, site: Any, check: Any, outs: tuple[Any, ...], deps: Any) -> None:
        self.queue = queue
        self.seq = seq  # its number on the queue
        self.name = name
        self.site = site  # (code, lineno), a "file:line" string, or None
        self.check = check
        self.outs = outs  # ((id, weak reference), ...) of the buffers it writes
        self.deps = deps  # entries in flight (any queue) that produced its inputs, or None
        self.error: BaseException | None = None
        self.retired = False

    def where(self) -> str:
        site = self.site
        if site is None:
            return "<unknown>"
        if isinstance(site, str):
            return site
        code, line = site
        return f"{code.co_filename}:{line}"

    def __repr__(self) -> str:
        state = "retired" if self.retired else "in flight"
        return f"<Entry #{self.seq} {self.name} on {self.queue.device} {state}>"


def annotate(error: BaseException, name: str, site: str, device: Any) -> None:
    """Add nda's note (op, ``file:line``, device) to the kept ``error`` once, and drop its frames.

    An error of asynchronous work is kept until a sync point raises it, possibly for as long
    as the failed array lives. Its frames would keep the op's arrays, buffers and closures
    alive (a finished frame still holds its function and cells), so the traceback of the
    kernel is kept as text instead (``error.nda_kernel_traceback``); a sync point raises a
    copy of the error with that text as its cause (:func:`fresh`), as ``multiprocessing``
    shows the traceback of a worker.
    """
    if getattr(error, "_nda_noted", False):
        return
    try:
        error._nda_noted = True  # type: ignore[attr-defined]
    except AttributeError:
        return
    if error.__traceback__ is not None:
        import traceback  # only when an op failed

        error.nda_kernel_traceback = "".join(traceback.format_exception(error))  # type: ignore[attr-defined]
    strip_frames(error)
    error.add_note(f"nda: op '{name}' issued at {site} failed on {device}")


def strip_frames(error: BaseException) -> None:
    """Drop the frames of ``error`` and of the exceptions chained to it."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = None
        current = current.__cause__ or current.__context__


class KernelTraceback(Exception):
    """Where a kept error of asynchronous work was raised: the kernel's traceback, as text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return "\n\n" + self.text.rstrip()

    def __reduce__(self) -> Any:
        return (KernelTraceback, (self.text,))


KernelTraceback.__module__ = "nda.engine"


def fresh(error: BaseException) -> BaseException:
    """What a sync point raises for the kept ``error``: a copy (type, message, notes alike)
    whose cause shows the kernel's traceback; ``error`` itself if its class cannot be copied.

    Raising the kept object would attach the reader's frames to it, and through them keep
    the failed array alive for as long as the error is kept.
    """
    import copy  # only when an op failed

    try:
        raised = copy.copy(error)
    except Exception:  # noqa: BLE001 - an exception class whose __init__ does not match its args
        raised = error
    text = getattr(error, "nda_kernel_traceback", None)
    if text and raised.__cause__ is None:
        raised.__cause__ = KernelTraceback(text)
    raised.__suppress_context__ = True  # whatever the reader was handling is not the story
    return raised.with_traceback(None)


class _Local(threading.local):
    site: Any = None  # set by an engine while it runs a task: the site its ops were issued at
    base: Any = None  # set by the front end around a write: the buffer of the array owning the memory written
    overwrite: Any = None  # ... and the buffer written when that write covers all of the memory without reading it (a full x[...] = v)


local = _Local()
_internal_codes: dict[Any, bool] = {}


def user_site() -> Any:
    """(code, lineno) of the first frame outside nda, or the running task's site."""
    site = local.site
    if site is not None:
        return site
    frame = sys._getframe(2)
    known = _internal_codes
    while frame is not None:
        code = frame.f_code
        internal = known.get(code)
        if internal is None:
            internal = known[code] = code.co_filename.startswith(_PACKAGE_DIR)
        if not internal:
            return (code, frame.f_lineno)
        frame = frame.f_back
    return None
