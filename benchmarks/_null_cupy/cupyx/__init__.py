"""The null CuPy's ``cupyx``: pinned host memory only (no ``cupyx.scipy``: nda-cuda's csr layer
then reports itself unavailable, as on a CuPy build without it). Shadows the real ``cupyx``
while ``benchmarks/_null_cupy`` is on ``sys.path`` (the real one would import the null ``cupy``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def empty_pinned(shape: Any, dtype: Any = float, order: str = "C") -> np.ndarray:
    return np.empty(shape, dtype=dtype, order=order)
