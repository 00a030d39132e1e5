"""Process-wide settings: ``nda.config``.

``nda.config.fallback`` says what happens when an op runs through a fallback route (a
backend without a kernel for it that opted into host fallback): ``"warn"`` (default: one
:class:`nda.FallbackWarning` per op and route), ``"silent"`` or ``"error"`` (raise
:class:`nda.FallbackError` instead of running it). The environment variable
``NDA_FALLBACK`` sets the initial value.

The ``NDA_*`` environment variables are read once, when the module that uses one is
imported, through :func:`env_int`, :func:`env_float`, :func:`env_flag` and
:func:`env_choice`: a value that is not what the variable takes raises a ValueError that
names the variable, the value and what is allowed (``import nda`` fails with it), rather
than a bare ``int()`` error, an assertion deep inside later or a hang (a device count of
10**20). An empty value means the default, for every variable. Plugins parse their own
``NDA_*`` variables with the same functions, re-exported by the public
:mod:`nda.backends.contract` (a plugin imports only nda's public modules).

Layer: values (README, "Architecture").
"""

from __future__ import annotations

import math
import os
from typing import Callable

__all__ = ["config", "env_int", "env_float", "env_flag", "env_choice"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None  # unset or empty: the default
    return value.strip()


def _range(minimum: float, maximum: float | None) -> str:
    return f">= {minimum:g}" if maximum is None else f"from {minimum:g} to {maximum:g}"


def env_int(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    """The integer in environment variable ``name`` (``default`` when unset or empty), from
    ``minimum`` to ``maximum`` (a count of devices, a size: what the setting can sensibly be;
    a value past it is refused rather than hanging or overflowing later)."""
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = None
    if value is None or value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be an integer {_range(minimum, maximum)}, got {os.environ[name]!r}; unset it for the default, {default}")
    return value


def env_float(name: str, default: float, *, minimum: float = 0.0, maximum: float | None = None) -> float:
    """The number in environment variable ``name`` (``default`` when unset or empty), from
    ``minimum`` to ``maximum`` (``inf`` allowed when there is no maximum)."""
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isnan(value) or value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be a number {_range(minimum, maximum)}, got {os.environ[name]!r}; unset it for the default, {default:g}")
    return value


def env_flag(name: str, default: bool) -> bool:
    """The switch in environment variable ``name``: 1/true/yes/on or 0/false/no/off (any case); ``default`` when unset or empty."""
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ValueError(f"{name} must be 1 or 0 (or true/false, yes/no, on/off), got {os.environ[name]!r}; unset it for the default, {int(default)}")


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """The value of environment variable ``name``, one of ``choices`` (``default`` when unset or empty)."""
    raw = _raw(name)
    if raw is None:
        return default
    if raw not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {os.environ[name]!r}; unset it for the default, {default}")
    return raw


_FALLBACK_MODES = ("warn", "silent", "error")


class Config:
    """The settings; layers that cache what a setting decides register in :attr:`on_change`."""

    __slots__ = ("_fallback", "on_change")

    def __init__(self) -> None:
        self._fallback = env_choice("NDA_FALLBACK", "warn", _FALLBACK_MODES)
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
