"""Showing arrays: only what is printed is copied from a device, and a failed array shows its error once.

**What is copied.** NumPy prints an array larger than ``threshold`` elements as its corners
(``edgeitems`` along each long axis, ``...`` between). For an array on a device other than
cpu, :func:`host_for_display` copies exactly those corners: one basic-indexing view per
corner block (a view on the device, so nothing else is read) and one host copy of each, at
most ``2**d`` small copies for ``d`` long axes, whatever the array's size. The corners are
assembled with one placeholder between the two edges of each long axis, and NumPy formats
them as it would the whole array (its own ``array2string`` summarises the placeholder away
and takes its number format from the edges, as for the whole array); ``repr`` uses NumPy's
own ``repr`` logic with the array's real shape and dtype. cpu arrays are printed from their
memory directly, as before. Displaying is a sync point either way: the corners are read
after the writes pending on the array.

**A failed array in a notebook.** IPython renders an object through ``_repr_mimebundle_``,
then through ``repr`` for ``text/plain``; an array whose op failed used to raise from both,
each with the kernel's traceback chained, so the same error filled a cell three times.
:func:`failure_bundle` renders it once instead: the exception's type and message, the op
and the ``file:line`` that issued it, and the device (nda's note on the error); the HTML
view keeps the full traceback under a fold, and ``x.wait_to_read()`` raises it again in
full. ``repr(x)`` in code still raises: there the error must stop the program.

Layer: arrays and front end (README, "Architecture").
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from . import _printoptions, dispatch

__all__ = ["Summary", "host_for_display", "array_repr", "array_str", "array2string", "failure_bundle", "failure_text"]

try:  # NumPy's repr/str with a replaceable array2string (numpy >= 2.0); without them, arrays are copied whole
    from numpy._core.arrayprint import _array_repr_implementation as _REPR_IMPL
except ImportError:  # pragma: no cover - other NumPy versions
    _REPR_IMPL = None

#: Long axes past which a display copies each corner block separately (2**8 blocks at most);
#: an array with more long axes is copied whole.
_MAX_LONG_AXES = 8


class Summary:
    """The corners of an array too large to print whole: ``corners`` (each long axis cut to
    ``edgeitems``, a placeholder, ``edgeitems``), and the array's real ``shape`` and ``dtype``."""

    __slots__ = ("corners", "shape", "dtype")

    def __init__(self, corners: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.corners = corners
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"<Summary of a {self.dtype} array of shape {self.shape}>"


def host_for_display(x: Any) -> np.ndarray | Summary:
    """What a display of the strided array ``x`` needs from it (module docstring); a sync point."""
    options = _printoptions.current()  # NumPy's, with nda.set_printoptions' settings over them
    edge, threshold = options["edgeitems"], options["threshold"]
    if x._meta.device.type == "cpu" or x._size <= threshold or _REPR_IMPL is None or not dispatch.kernels("getitem", x._meta.key):
        return x._host()  # type: ignore[no-any-return]  (without a native getitem a view would copy it all anyway)
    long_axes = [d for d, n in enumerate(x._shape) if n > 2 * edge]
    if len(long_axes) > _MAX_LONG_AXES:
        return x._host()  # type: ignore[no-any-return]
    pieces = []
    for n in x._shape:
        if n > 2 * edge:
            pieces.append(((slice(0, edge), slice(0, edge)), (slice(n - edge, n), slice(edge + 1, 2 * edge + 1))))
        else:
            pieces.append(((slice(None), slice(None)),))
    shape = tuple(2 * edge + 1 if n > 2 * edge else n for n in x._shape)
    corners = np.zeros(shape, dtype=x._meta.dtype.numpy)
    for combo in itertools.product(*pieces):
        source = tuple(s for s, _ in combo)
        target = tuple(t for _, t in combo)
        corners[target] = x[source]._host()  # a view on the device, then a copy of just that block
    return Summary(corners, x._shape, corners.dtype)


def _summarised(summary: Summary) -> tuple[Any, Any]:
    """(an array with the summary's shape and dtype and no memory, an array2string over the corners)."""
    fake = np.broadcast_to(np.zeros((), dtype=summary.dtype), summary.shape)
    corners = summary.corners

    def over_corners(_arr: Any, *args: Any, **kwargs: Any) -> str:
        with np.printoptions(threshold=0):  # summarise every long axis of the corners (their placeholders)
            return np.array2string(corners, *args, **kwargs)  # type: ignore[no-any-return]

    return fake, over_corners


def array_repr(host: np.ndarray | Summary) -> str:
    """NumPy's ``repr`` of the data (of the whole array, for a :class:`Summary`), with nda's print options."""
    with _printoptions.applied():
        if isinstance(host, Summary):
            fake, over_corners = _summarised(host)
            return _REPR_IMPL(fake, array2string=over_corners)  # type: ignore[no-any-return,misc]
        return np.array_repr(host)


def array_str(host: np.ndarray | Summary) -> str:
    """NumPy's ``str`` of the data, with nda's print options."""
    if isinstance(host, Summary):
        return array2string(host, separator=" ")
    with _printoptions.applied():
        return np.array_str(host)


def array2string(host: np.ndarray | Summary, **kwargs: Any) -> str:
    """``numpy.array2string`` of the data, with nda's print options."""
    with _printoptions.applied():
        if isinstance(host, Summary):
            with np.printoptions(threshold=0):
                return np.array2string(host.corners, **kwargs)  # type: ignore[no-any-return]
        return np.array2string(host, **kwargs)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- failed arrays


def _parts(error: BaseException) -> tuple[str, list[str]]:
    """(``"IndexError: message"``, nda's notes: which op failed, where it was issued, on which device)."""
    message = str(error).strip()
    head = f"{type(error).__name__}: {message}" if message else type(error).__name__
    notes = [n.removeprefix("nda: ") for n in getattr(error, "__notes__", ()) or ()]
    return head, notes


def failure_text(x: Any, error: BaseException) -> str:
    """The short plain-text view of an array whose op failed."""
    head, notes = _parts(error)
    meta = x._meta
    lines = [f"<nda.NDArray {meta.dtype.name}{x._shape} on {meta.device}: failed>", head]
    lines += [f"  {n}" for n in notes]
    lines.append("  (its .wait_to_read() raises the error with the full traceback)")
    return "\n".join(lines)


def failure_bundle(x: Any, error: BaseException) -> dict[str, str]:
    """``text/plain`` and ``text/html`` for an array whose op failed (module docstring)."""
    import html  # only for a failed array in a notebook
    import traceback

    head, notes = _parts(error)
    meta = x._meta
    # The kernel's traceback (the chained cause) and the error; not the frames of the display that read it.
    full = "".join(traceback.TracebackException(type(error), error, None).format())
    where = "".join(f"<div>{html.escape(n)}</div>" for n in notes)
    markup = (
        '<div class="nda-ndarray nda-failed" style="font-family:var(--jp-code-font-family, monospace);'
        'font-size:var(--jp-code-font-size, 13px);border-left:3px solid #c62828;padding-left:0.6em">'
        f"<div><b>nda.NDArray</b> {html.escape(f'{meta.dtype.name}{x._shape}')} on {html.escape(str(meta.device))}: "
        '<span style="color:#c62828">failed</span></div>'
        f'<div style="margin-top:0.3em"><b>{html.escape(head)}</b></div>{where}'
        f'<details style="margin-top:0.3em"><summary>full traceback</summary><pre style="margin:0">{html.escape(full)}</pre></details>'
        "</div>"
    )
    return {"text/plain": failure_text(x, error), "text/html": markup}
