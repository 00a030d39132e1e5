"""``nda.linalg``: the Array API ``linalg`` extension.

The functions are generated from the ``"linalg.*"`` ops of the catalog
(``nda.ops.linalg_extension``); ``matmul``, ``tensordot``, ``vecdot`` and
``matrix_transpose`` are the top-level functions themselves, as the standard allows.
``norm`` and ``lstsq`` are NumPy's (``nda._numpyapi._products``), made of the ops here.

Layer: arrays and front end, extensions (README, "Architecture").
"""

from __future__ import annotations

from ._api import extension as _extension
from ._api import matmul, tensordot, vecdot  # noqa: F401  (re-exported: the same functions)
from ._composite import matrix_transpose  # noqa: F401
from ._numpyapi._products import lstsq, norm  # noqa: F401  (NumPy's names, not in the standard)

globals().update(_extension("linalg"))

__all__ = sorted(set(_extension("linalg")) | {"matmul", "tensordot", "vecdot", "matrix_transpose", "norm", "lstsq"})


def __dir__() -> list[str]:
    """``dir()`` and tab completion list the public names (``__all__``); the module's helper imports
    (``annotations``) stay importable but out of sight."""
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__") and n.endswith("__")})
