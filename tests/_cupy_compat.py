"""``array_api_compat.cupy`` rebuilt over the CuPy model: the Array-API namespace nda-cuda looks ops up in.

Part of the CuPy model (``tests/_cupy_quirks.py``). ``array_api_compat.cupy`` is imported as it
is (importing it needs CuPy installed, not a GPU) and every name is mapped the way it is built:

* a CuPy function or ufunc re-exported as it is (``acos = cupy.arccos``, ``linalg.solve``) becomes
  the model's function of the same name, so CuPy's own semantics (no broadcasting in ``solve``,
  ``linalg.norm``'s reductions, ...) come from the model, as they come from CuPy on a GPU;
* a generic wrapper of ``array_api_compat.common`` (``get_xp(cupy)(f)``) is rebuilt as
  ``get_xp(cupy_model)(f)``;
* a wrapper written for CuPy (``array_api_compat.cupy._aliases``: ``ceil``, ``count_nonzero``,
  ``isin``, ...) runs its own code with the module global ``cp`` bound to the model; ``asarray``
  (which enters ``cupy.cuda.Device``) is replaced by its logic without the device context.

Without CuPy installed, ``array_api_compat.numpy`` is rebuilt the same way (less faithful: its
wrappers are NumPy's, e.g. a broadcasting ``linalg.solve``).
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
from array_api_compat._internal import get_xp

from _cupy_device import DeviceArray
from _cupy_quirks import cupy_model

__all__ = ["compat_model", "FAITHFUL"]

try:
    import array_api_compat.cupy as _source
    import cupy as _cupy

    FAITHFUL = True
except ImportError:  # no CuPy wheel: rebuild the NumPy namespace instead
    import array_api_compat.numpy as _source  # type: ignore[no-redef]

    _cupy = None
    FAITHFUL = False

_ALIASES = f"{_source.__name__}._aliases"


def _model_function(value: Any, space: Any, model: Any) -> Any:
    """The model's function for a CuPy (or NumPy) function or ufunc: by name in ``space`` (the model's
    namespace of the one being rebuilt), then in the model's main namespace; None if neither has it."""
    name = getattr(value, "__name__", "")
    module = getattr(value, "__module__", None) or ""
    if type(value).__name__ == "ufunc":
        name = name[len("cupy_") :] if name.startswith("cupy_") else name
    elif not module.startswith(("cupy", "numpy")) or isinstance(value, type):
        return None
    return getattr(space, name, None) or getattr(model, name, None)


def _rebound(fn: Any, model: Any) -> Any:
    """``fn`` (written with the module global ``cp``) running with ``cp`` = the model."""
    namespace = dict(fn.__globals__)
    namespace["cp"] = namespace["np"] = model
    clone = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__doc__, clone.__qualname__, clone.__module__ = fn.__doc__, fn.__qualname__, "array_api_compat_model"
    return clone


def _asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Any = None, **kwargs: Any) -> Any:
    """``array_api_compat.cupy.asarray`` without ``cupy.cuda.Device`` (the model has one device)."""
    if copy is None:
        return cupy_model.asarray(obj, dtype=dtype, **kwargs)
    result = cupy_model.array(obj, dtype=dtype, copy=copy, **kwargs)
    if not copy and result is not obj:
        raise ValueError("Unable to avoid copy while creating an array as requested")
    return result


def _rebuild(source: Any, name: str, model: Any, space: Any, overrides: dict[str, Any]) -> types.ModuleType:
    module = types.ModuleType(name)
    for attr in dir(source):
        if attr.startswith("__"):
            continue
        value = getattr(source, attr)
        wrapped = getattr(value, "__wrapped__", None)
        if attr in overrides:
            value = overrides[attr]
        elif _cupy is not None and value is _cupy.ndarray or value is np.ndarray:
            value = DeviceArray
        elif isinstance(value, types.ModuleType) or isinstance(value, type):
            pass
        elif wrapped is not None and getattr(wrapped, "__module__", "").startswith("array_api_compat.common"):
            value = get_xp(model)(wrapped)
        elif isinstance(value, types.FunctionType) and value.__module__ == _ALIASES:
            value = _rebound(value, model)
        elif callable(value):
            value = _model_function(value, space, model) or value
        setattr(module, attr, value)
    return module


#: The Array-API namespace over the model (``array_api_compat.cupy``'s counterpart).
compat_model = _rebuild(_source, "array_api_compat_model", cupy_model, cupy_model, {"asarray": _asarray})
compat_model.linalg = _rebuild(_source.linalg, "array_api_compat_model.linalg", cupy_model, cupy_model.linalg, {})
compat_model.fft = _rebuild(_source.fft, "array_api_compat_model.fft", cupy_model, cupy_model.fft, {})
