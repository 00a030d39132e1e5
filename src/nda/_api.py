"""The public functions of nda: generated from the op catalog, plus the few that are not ops.

``nda/__init__.py`` re-exports this module's ``__all__``. Three catalog ops get a thin
wrapper here because the Array API asks them to return their input unchanged in some
cases, without running any kernel: ``asarray`` of an NDArray, ``astype(copy=False)`` to
the same dtype and ``to_device`` to the same device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtypes, _frontend, ops
from ._array import NDArray
from ._devices import Device, as_device
from ._dtypes import DType

_generated = _frontend.build_namespace("nda")
globals().update(_generated)

_catalog_asarray = _generated["asarray"]
_catalog_astype = _generated["astype"]


def _copy_signature(fn: Any, generated: Any) -> Any:
    fn.__name__ = generated.__name__
    fn.__qualname__ = generated.__qualname__
    fn.__doc__ = generated.__doc__
    fn.__signature__ = generated.__signature__
    fn.__module__ = "nda"
    return fn


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> NDArray:
    if isinstance(obj, NDArray):
        x = obj
        target_device = x.device if device is None else as_device(device)
        target_dtype = x.dtype if dtype is None else _dtypes.as_dtype(dtype)
        if copy is False and (target_device is not x.device or target_dtype is not x.dtype):
            raise ValueError(f"asarray(copy=False): converting a {x.dtype.name} array on {x.device} to {target_dtype.name} on {target_device} needs a copy")
        moved = target_device is not x.device
        if moved:
            x = to_device(x, target_device)
        if target_dtype is not x.dtype:
            return _catalog_astype(x, target_dtype)  # type: ignore[no-any-return]
        return _catalog_astype(x, x.dtype) if copy and not moved else x  # type: ignore[no-any-return]
    return _catalog_asarray(obj, dtype=dtype, device=device, copy=copy)  # type: ignore[no-any-return]


def astype(x: NDArray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> NDArray:
    if device is not None and isinstance(x, NDArray) and as_device(device) is not x.device:
        x = to_device(x, device)
    if not copy and isinstance(x, NDArray) and _dtypes.as_dtype(dtype) is x.dtype:
        return x
    return _catalog_astype(x, dtype, copy=copy)  # type: ignore[no-any-return]


_copy_signature(asarray, _catalog_asarray)
_copy_signature(astype, _catalog_astype)
NDArray.astype = lambda self, dtype, /, *, copy=True, device=None: astype(self, dtype, copy=copy, device=device)  # type: ignore[attr-defined]
NDArray.astype.__doc__ = astype.__doc__  # type: ignore[attr-defined]


def to_device(x: NDArray, device: Device | str, /, *, stream: Any = None) -> NDArray:
    """``x`` on ``device``: ``x`` itself if it is there already, else a copy made through the host."""
    target = as_device(device)
    if target is x.device:
        return x
    if stream is not None:
        raise ValueError("to_device(): stream= is not supported by the host copy route")
    return _catalog_asarray(x._host(), device=target, copy=True)  # type: ignore[no-any-return]


def copy(x: NDArray, /) -> NDArray:
    """A copy of ``x`` on the same device."""
    return _catalog_astype(x, x.dtype, copy=True)  # type: ignore[no-any-return]


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> NDArray:
    """An array from any object that implements ``__dlpack__`` (zero-copy on cpu when possible)."""
    host = np.from_dlpack(x)
    return asarray(host, device=device, copy=copy)


def _from_pickle(host: np.ndarray, device: str) -> NDArray:
    return asarray(host, device=device)


def waitall() -> None:
    """Wait for all pending work; raises the first pending error (a sync point)."""
    from .engine import state

    state.wait_all()


__all__ = sorted(set(_generated) | {"asarray", "astype", "to_device", "copy", "from_dlpack", "waitall"})
del ops, DType
