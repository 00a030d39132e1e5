"""NumPy's everyday names on nda: functions with NumPy's signatures, values and dtypes, written once over nda's ops.

What a NumPy user types in a first notebook (``nda.median``, ``nda.histogram``,
``nda.concatenate``, ``nda.percentile``, ``nda.cov``...) is here, each function made of nda's
own ops so that it runs on every device with that device's kernels (on sim natively where
sim has the ops, on cuda through CuPy), ordered by the engine like the ops it is made of.
``np.<name>(x)`` of an nda array runs these same functions through ``__array_function__``
(:mod:`nda._numpy_functions`). The modules:

* :mod:`._shapes`: ``array``, ``identity``, ``diag``, ``logspace``, the joining and splitting
  functions, ``ravel``, ``atleast_*d``, ``put``;
* :mod:`._stats`: ``amin``/``amax``/``ptp``, ``cumsum``/``cumprod``, ``median``,
  ``quantile``/``percentile``, ``average``, the ``nan*`` reductions;
* :mod:`._counts`: ``unique``, ``argwhere``, ``array_equal``, ``bincount``, ``digitize``,
  ``histogram``, ``cov``/``corrcoef``;
* :mod:`._math`: NumPy's spellings of catalog ops (``absolute``, ``power``, ``arctan2``...),
  ``around``, ``nan_to_num``, ``angle``, ``cbrt``, ``deg2rad``/``rad2deg``, ``gradient``,
  ``interp``, ``convolve``/``correlate``;
* :mod:`._products`: ``dot``, ``vdot``, ``inner``, ``outer``, ``cross``, ``kron``, ``trace``,
  ``diagonal``, ``polyval``/``polyfit``, and ``nda.linalg.norm``/``lstsq`` and
  ``nda.fft.fft2``/``ifft2``/``rfft2``/``irfft2``;
* :mod:`._printing`: ``set_printoptions``/``get_printoptions``/``printoptions`` (nda's
  repr), ``errstate`` (NumPy's own).

Layer: arrays and front end, NumPy's names (README, "Architecture").
"""

from __future__ import annotations

from .. import _dtypes
from .._array import NDArray
from . import _counts, _math, _printing, _products, _shapes, _stats
from ._counts import *  # noqa: F403
from ._math import *  # noqa: F403
from ._printing import *  # noqa: F403
from ._shapes import *  # noqa: F403
from ._stats import *  # noqa: F403
from ._products import cross, diagonal, dot, inner, kron, outer, polyfit, polyval, trace, vdot

#: NumPy's type names: ``nda.ndarray`` is nda's array type, ``nda.bool_`` its bool dtype.
ndarray = NDArray
bool_ = _dtypes.bool

#: The names of ``nda.linalg`` and ``nda.fft`` made here (not at the top level, as in NumPy).
LINALG_NAMES = ("norm", "lstsq")
FFT_NAMES = ("fft2", "ifft2", "rfft2", "irfft2")

__all__ = sorted(
    set(_shapes.__all__)
    | set(_stats.__all__)
    | set(_counts.__all__)
    | set(_math.__all__)
    | set(_printing.__all__)
    | {"cross", "diagonal", "dot", "inner", "kron", "outer", "polyfit", "polyval", "trace", "vdot", "ndarray", "bool_"}
)
