"""NumPy's print-option functions for nda arrays, and NumPy's ``errstate``.

``set_printoptions``, ``get_printoptions`` and ``printoptions`` take NumPy's arguments and
govern how nda arrays print (``repr``, ``str``, the notebook view), per context as NumPy 2's
own options are (:mod:`nda._printoptions`); NumPy's own options, and how NumPy arrays print,
stay as they are. An option nda has not set follows NumPy's current one.

``errstate`` *is* ``numpy.errstate``: nda's cpu kernels are NumPy calls, and each op runs
under the NumPy error state of the thread that issued it (:mod:`nda.engine._fperrors`), so
``with nda.errstate(divide="ignore"):`` silences ``nda.log(0.0)`` and ``divide="raise"``
makes it raise ``FloatingPointError``, whichever engine thread runs the kernel.
Accelerators (sim, cuda) do not report floating-point exceptions, as in CuPy.

Layer: arrays and front end, NumPy's names (README, "Architecture").
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import Any, Iterator

import numpy as np

from .. import _printoptions

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "errstate"]

errstate = np.errstate


def set_printoptions(
    precision: int | None = None,
    threshold: int | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    suppress: bool | None = None,
    nanstr: str | None = None,
    infstr: str | None = None,
    formatter: Any = None,
    sign: str | None = None,
    floatmode: str | None = None,
    *,
    legacy: Any = None,
    override_repr: Any = None,
) -> None:
    """Set how nda arrays print in this context (NumPy's ``set_printoptions`` arguments; ``None`` leaves
    an option as it is, except ``formatter`` and ``override_repr``, which it resets, as in NumPy).

    NumPy's own print options are not changed; invalid values raise NumPy's errors.
    """
    _printoptions.update(
        precision=precision,
        threshold=threshold,
        edgeitems=edgeitems,
        linewidth=linewidth,
        suppress=suppress,
        nanstr=nanstr,
        infstr=infstr,
        formatter=formatter,
        sign=sign,
        floatmode=floatmode,
        legacy=legacy,
        override_repr=override_repr,
    )


def get_printoptions() -> dict[str, Any]:
    """The options nda arrays print with now: NumPy's current ones with nda's settings over them."""
    return _printoptions.current()


def printoptions(*args: Any, **kwargs: Any) -> AbstractContextManager[dict[str, Any]]:
    """Set nda's print options for a ``with`` block (NumPy's ``printoptions`` arguments); yields them."""
    return _printoptions_block(*args, **kwargs)


@contextlib.contextmanager
def _printoptions_block(*args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
    names = ("precision", "threshold", "edgeitems", "linewidth", "suppress", "nanstr", "infstr", "formatter", "sign", "floatmode")
    if len(args) > len(names):
        raise TypeError(f"printoptions() takes at most {len(names)} positional arguments ({len(args)} given)")
    for name, value in zip(names, args):
        if name in kwargs:
            raise TypeError(f"printoptions() got multiple values for argument {name!r}")
        kwargs[name] = value
    token = _printoptions.update(**kwargs)
    try:
        yield _printoptions.current()
    finally:
        _printoptions.restore(token)
