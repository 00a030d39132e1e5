"""``nda.fft``: the Array API ``fft`` extension.

The transforms are generated from the ``"fft.*"`` ops of the catalog (``nda.ops.fft``);
``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` are built from other ops
(``nda._composite``).

Layer: arrays and front end, extensions (README, "Architecture").
"""

from __future__ import annotations

from ._api import extension as _extension
from ._composite import fftfreq, fftshift, ifftshift, rfftfreq  # noqa: F401  (re-exported)

globals().update(_extension("fft"))

__all__ = sorted(set(_extension("fft")) | {"fftfreq", "rfftfreq", "fftshift", "ifftshift"})


def __dir__() -> list[str]:
    """``dir()`` and tab completion list the public names (``__all__``); the module's helper imports
    (``annotations``) stay importable but out of sight."""
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__") and n.endswith("__")})
