"""Process-wide settings: ``nda.config``.

``nda.config.fallback`` says what happens when an op runs through a fallback route (a
backend without a kernel for it that opted into host fallback): ``"warn"`` (default: one
:class:`nda.FallbackWarning` per op and route), ``"silent"`` or ``"error"`` (raise
:class:`nda.FallbackError` instead of running it). The environment variable
``NDA_FALLBACK`` sets the initial value.
"""

from __future__ import annotations

import os

__all__ = ["config"]

_FALLBACK_MODES = ("warn", "silent", "error")


class Config:
    __slots__ = ("_fallback",)

    def __init__(self) -> None:
        mode = os.environ.get("NDA_FALLBACK", "warn")
        if mode not in _FALLBACK_MODES:
            raise ValueError(f"NDA_FALLBACK must be one of {', '.join(_FALLBACK_MODES)}, got {mode!r}")
        self._fallback = mode

    @property
    def fallback(self) -> str:
        return self._fallback

    @fallback.setter
    def fallback(self, mode: str) -> None:
        if mode not in _FALLBACK_MODES:
            raise ValueError(f"nda.config.fallback must be one of {', '.join(_FALLBACK_MODES)}, got {mode!r}")
        self._fallback = mode
        from . import dispatch

        dispatch.clear_caches()  # routes are announced (warned about, or refused) when resolved

    def __repr__(self) -> str:
        return f"nda.config(fallback={self._fallback!r})"


config = Config()
