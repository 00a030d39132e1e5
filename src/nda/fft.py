"""``nda.fft``: the Array API ``fft`` extension.

The transforms are generated from the ``"fft.*"`` ops of the catalog (``nda.ops.fft``);
``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` are built from other ops
(``nda._composite``); ``fft2``, ``ifft2``, ``rfft2`` and ``irfft2`` are NumPy's, the
n-dimensional transforms over the last two axes.

Layer: arrays and front end, extensions (README, "Architecture").
"""

from __future__ import annotations

from ._api import extension as _extension
from ._composite import fftfreq, fftshift, ifftshift, rfftfreq  # noqa: F401  (re-exported)
from ._numpyapi._products import fft2, ifft2, irfft2, rfft2  # noqa: F401  (NumPy's 2-D transforms: fftn on two axes)

globals().update(_extension("fft"))

__all__ = sorted(set(_extension("fft")) | {"fftfreq", "rfftfreq", "fftshift", "ifftshift", "fft2", "ifft2", "rfft2", "irfft2"})


def __dir__() -> list[str]:
    """``dir()`` and tab completion list the public names (``__all__``); the module's helper imports
    (``annotations``) stay importable but out of sight."""
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__") and n.endswith("__")})
