"""nda.testing: tools to test nda and its backends.

* :func:`assert_allclose` / :func:`default_tolerance`: comparisons of nda arrays on any
  device and in any layout, with dtype-aware tolerances and exact NaN/inf/signed-zero rules
  (no Hypothesis needed);
* :mod:`nda.testing.strategies`: Hypothesis strategies (arrays on a device, dtypes,
  devices, shapes, broadcastable shapes, index expressions, edge values);
* :mod:`nda.testing.conformance`: the conformance kit that compares a device's kernels with
  the reference, per (op, dtype, layout), and its pytest plugin
  (``pytest --pyargs nda.testing.conformance --nda-device=TYPE``).

``strategies`` and ``conformance`` import Hypothesis, so they load on first access.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import importlib
from typing import Any

from ._compare import assert_allclose, default_tolerance

__all__ = ["assert_allclose", "default_tolerance", "strategies", "conformance"]


def __dir__() -> list[str]:
    """``dir()`` and tab completion list the public names (``__all__``); the module's helper imports
    (``importlib``, ``Any``) stay importable but out of sight."""
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__") and n.endswith("__")})


def __getattr__(name: str) -> Any:
    if name in ("strategies", "conformance"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
