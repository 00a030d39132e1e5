"""nda: an eager array library whose ops dispatch per (device type, dtype, layout) to pluggable backends.

This module only re-exports; see ``nda._api`` (functions generated from the op catalog),
``nda.ops`` (the catalog), ``nda.dispatch``, ``nda.engine``, ``nda.backends``,
``nda.layouts`` (strided, csr, row_sparse and their converters), ``nda.sparse`` and
``nda.autograd`` (gradients), ``nda.ext`` (ops of op libraries).

Layer: the nda namespace (README, "Architecture").
"""

from __future__ import annotations

import importlib as _importlib
import math as _math
import sys as _sys

from . import _api, _namespace, backends, dispatch, engine, layouts, ops, sparse
from ._config import config
from .engine import profiler
from ._api import *  # noqa: F403
from ._api import __all__ as _api_all
from . import _interop  # NumPy's protocols (__array_ufunc__, __array_function__) on NDArray
from ._composite import *  # noqa: F403
from ._composite import __all__ as _composite_all
from ._numpyapi import *  # noqa: F403  (NumPy's everyday names: nda._numpyapi)
from ._numpyapi import __all__ as _numpyapi_all
from ._info import __array_namespace_info__, finfo, iinfo
from . import fft, linalg
from . import autograd
from . import ext
from ._array import NDArray
from ._devices import ArrayMeta, Device, KernelKey, Layout, default_device
from ._dtypes import (
    DType,
    bool,
    can_cast,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    result_type,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .backends import BackendError, BackendValidationError
from .dispatch import DeviceUnavailableError, DispatchError, FallbackError, FallbackWarning


class _ArrayAPI:
    """What NDArray's methods that are not ops call (``nda._namespace.ArrayAPI``): the layers
    above NDArray, given to ``nda._namespace`` once, now that they are all imported."""

    namespace = _sys.modules[__name__]  # x.__array_namespace__() (nothing inside nda imports nda)
    asarray = staticmethod(_api.asarray)
    to_device = staticmethod(_api.to_device)
    to_layout = staticmethod(_api._to_layout)
    astype = staticmethod(_api.astype)
    copy = staticmethod(_api.copy)
    copyto = staticmethod(_api._copy_into)
    round = staticmethod(_api.round_decimals)
    divmod = staticmethod(_api.divmod_)
    from_pickle = staticmethod(_api._from_pickle)
    sparse_reduce = staticmethod(sparse._reduce)
    array_ufunc = staticmethod(_interop.array_ufunc)
    array_function = staticmethod(_interop.array_function)
    attach_grad = staticmethod(autograd._attach_grad)
    grad = staticmethod(autograd._grad)
    detach = staticmethod(autograd._detach)
    backward = staticmethod(autograd._ndarray_backward)


_namespace.complete_ndarray(_ArrayAPI())
del _ArrayAPI

__version__ = "0.1.0"
__array_api_version__ = "2025.12"

e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None

# Loaded at first use (module __getattr__, PEP 562), as ``from nda import X`` and ``nda.X`` ask
# for them: nda.hybridize (the top layer), nda.random (its generators; the Philox ops are in
# the catalog) and the .npy files (nda._io). Each is a module's object, bound here once.
_LAZY = {
    "hybridize": ("hybrid", "hybridize"),
    "HybridizeWarning": ("hybrid", "HybridizeWarning"),
    "hybrid": ("hybrid", None),
    "random": ("random", None),
    "load": ("_io", "load"),
    "save": ("_io", "save"),
    "savez": ("_io", "savez"),
    "savez_compressed": ("_io", "savez_compressed"),
    "savetxt": ("_io", "savetxt"),
    "loadtxt": ("_io", "loadtxt"),
}


def __getattr__(name: str) -> object:
    found = _LAZY.get(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _importlib.import_module(f"{__name__}.{found[0]}")  # binds nda.<module>; import locks serialise first uses
    value = module if found[1] is None else getattr(module, found[1])
    globals()[name] = value  # idempotent: every thread binds the same object
    return value


def __dir__() -> list[str]:
    """``dir(nda)`` and tab completion: the public names and the deferred ones, without the private
    modules and helper imports (``annotations``) that the package's globals also hold."""
    public = {n for n in globals() if not n.startswith("_") and n != "annotations"}
    return sorted(public | set(_LAZY) | {n for n in globals() if n.startswith("__") and n.endswith("__")})


__all__ = sorted(
    set(_api_all)
    | (set(_composite_all) - {"fftfreq", "rfftfreq", "fftshift", "ifftshift"})
    | set(_numpyapi_all)
    | {"__array_namespace_info__", "finfo", "iinfo", "fft", "linalg", "random", "save", "savez", "savez_compressed", "load", "savetxt", "loadtxt"}
    | {
        "NDArray",
        "Device",
        "Layout",
        "KernelKey",
        "ArrayMeta",
        "DType",
        "default_device",
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "complex64",
        "complex128",
        "isdtype",
        "result_type",
        "can_cast",
        "e",
        "pi",
        "inf",
        "nan",
        "newaxis",
        "autograd",
        "ext",
        "hybridize",
        "HybridizeWarning",
        "backends",
        "dispatch",
        "engine",
        "ops",
        "profiler",
        "layouts",
        "sparse",
        "BackendError",
        "BackendValidationError",
        "DispatchError",
        "DeviceUnavailableError",
        "FallbackWarning",
        "FallbackError",
        "config",
    }
)
