"""Process-wide settings: ``nda.config``.

``nda.config.fallback`` says what happens when an op runs through a fallback route (a
backend without a kernel for it that opted into host fallback): ``"warn"`` (default: one
:class:`nda.FallbackWarning` per op and route), ``"silent"`` or ``"error"`` (raise
:class:`nda.FallbackError` instead of running it). The environment variable
``NDA_FALLBACK`` sets the initial value.

Layer: values (README, "Architecture").
"""

from __future__ import annotations

import os
from typing import Callable

__all__ = ["config"]

_FALLBACK_MODES = ("warn", "silent", "error")


class Config:
    """The settings; layers that cache what a setting decides register in :attr:`on_change`."""

    __slots__ = ("_fallback", "on_change")

    def __init__(self) -> None:
        mode = os.environ.get("NDA_FALLBACK", "warn")
        if mode not in _FALLBACK_MODES:
            raise ValueError(f"NDA_FALLBACK must be one of {', '.join(_FALLBACK_MODES)}, got {mode!r}")
        self._fallback = mode
        #: Called after a setting changes (dispatch clears its resolution caches: routes are
        #: announced, warned about or refused, when they are resolved).
        self.on_change: list[Callable[[], None]] = []

    @property
    def fallback(self) -> str:
        return self._fallback

    @fallback.setter
    def fallback(self, mode: str) -> None:
        if mode not in _FALLBACK_MODES:
            raise ValueError(f"nda.config.fallback must be one of {', '.join(_FALLBACK_MODES)}, got {mode!r}")
        self._fallback = mode
        for listener in self.on_change:
            listener()

    def __repr__(self) -> str:
        return f"nda.config(fallback={self._fallback!r})"


config = Config()
