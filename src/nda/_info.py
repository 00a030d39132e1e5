"""Inspection: ``finfo``, ``iinfo`` and ``__array_namespace_info__()``.

The namespace info is derived from what is loaded, not written down: ``devices()`` asks
every available backend for its devices; ``dtypes(device=)`` lists the dtypes that the
device's backend has kernels for (in the ``astype`` table, which every backend fills for
the dtypes it can hold); ``default_dtypes(device=)`` picks float64/complex128/int64 where
the device has them and the widest it has otherwise (a backend without float64 gets
float32 defaults). ``capabilities()`` reports boolean indexing and data-dependent shapes
only where the device can run ``getitem`` and ``nonzero`` (natively or through a fallback).

Layer: arrays and front end, extensions (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtypes
from ._devices import Device, as_device, default_device
from ._dtypes import DType

__all__ = ["finfo", "iinfo", "finfo_object", "iinfo_object", "__array_namespace_info__", "Info"]


class finfo_object:  # noqa: N801  (the standard's name)
    """Machine limits of a floating dtype (``bits``, ``eps``, ``max``, ``min``, ``smallest_normal``, ``dtype``)."""

    __slots__ = ("bits", "eps", "max", "min", "smallest_normal", "dtype")

    def __init__(self, dtype: DType) -> None:
        info = np.finfo(dtype.numpy)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.dtype = _dtypes.from_numpy_dtype(np.dtype(info.dtype))  # complex64 -> float32

    def __repr__(self) -> str:
        return f"finfo(bits={self.bits}, eps={self.eps}, max={self.max}, min={self.min}, smallest_normal={self.smallest_normal}, dtype={self.dtype.name})"


class iinfo_object:  # noqa: N801
    """Machine limits of an integer dtype (``bits``, ``max``, ``min``, ``dtype``)."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, dtype: DType) -> None:
        info = np.iinfo(dtype.numpy)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"iinfo(bits={self.bits}, max={self.max}, min={self.min}, dtype={self.dtype.name})"


def _dtype_of(type: Any, op: str) -> DType:  # noqa: A002
    dtype = getattr(type, "dtype", None)
    if dtype is not None and not isinstance(type, DType):
        type = dtype  # an array
    try:
        return _dtypes.as_dtype(type)
    except TypeError:
        raise TypeError(f"{op}(): expected an nda dtype or array, got {type!r}") from None


def finfo(type: Any, /) -> finfo_object:  # noqa: A002
    """Machine limits of a floating-point dtype (or of an array's dtype)."""
    dtype = _dtype_of(type, "finfo")
    if dtype.category not in ("real floating", "complex floating"):
        raise TypeError(f"finfo(): {dtype.name} is not a floating dtype; use iinfo() for integers")
    return finfo_object(dtype)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    """Machine limits of an integer dtype (or of an array's dtype)."""
    dtype = _dtype_of(type, "iinfo")
    if dtype.category not in ("signed integer", "unsigned integer"):
        raise TypeError(f"iinfo(): {dtype.name} is not an integer dtype; use finfo() for floating dtypes")
    return iinfo_object(dtype)


_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric")


class Info:
    """What ``nda.__array_namespace_info__()`` returns (see the module docstring)."""

    __slots__ = ()

    def capabilities(self) -> dict[str, Any]:
        from .dispatch import DeviceUnavailableError, DispatchError, resolve

        device = default_device()

        def runs(op: str, dtype: DType) -> bool:
            try:
                resolve(op, _key(device, dtype))
            except (DispatchError, DeviceUnavailableError):
                return False
            return True

        return {
            "boolean indexing": runs("getitem", _dtypes.bool),
            "data-dependent shapes": runs("nonzero", _dtypes.bool),
            "max dimensions": 64,  # NumPy's limit, which every buffer passes through on the host
        }

    def default_device(self) -> Device:
        return default_device()

    def devices(self) -> tuple[Device, ...]:
        from . import backends

        found: list[Device] = []
        for entry in backends.status():
            if entry["state"] in ("installed", "loaded"):
                try:
                    backends.load(entry["name"])
                except Exception:  # noqa: BLE001  (a failing backend has no devices; status() says why)
                    continue
        for entry in backends.status():
            if entry["state"] == "loaded":
                found.extend(as_device(d["device"]) for d in entry["devices"])
        return tuple(sorted(set(found), key=lambda d: (d.type != "cpu", d.type, d.index)))

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, DType]:
        available = _device_dtypes(device)
        if kind is not None:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            for k in kinds:
                if isinstance(k, str) and k not in _KINDS:
                    raise ValueError(f"dtypes(): unknown kind {k!r}; known: {', '.join(_KINDS)}")
            available = [d for d in available if _dtypes.isdtype(d, kind)]
        return {d.name: d for d in available}

    def default_dtypes(self, *, device: Any = None) -> dict[str, DType]:
        available = set(_device_dtypes(device))

        def pick(*candidates: DType) -> DType:
            return next((d for d in candidates if d in available), candidates[0])

        return {
            "real floating": pick(_dtypes.float64, _dtypes.float32),
            "complex floating": pick(_dtypes.complex128, _dtypes.complex64),
            "integral": pick(_dtypes.int64, _dtypes.int32),
            "indexing": pick(_dtypes.int64, _dtypes.int32),
        }

    def __repr__(self) -> str:
        return "<nda array namespace info>"


def _key(device: Device, dtype: DType) -> Any:
    from ._devices import ArrayMeta, strided

    return ArrayMeta(device, dtype, strided).key


def _device_dtypes(device: Any) -> list[DType]:
    from . import backends
    from .dispatch import table

    target = default_device() if device is None else as_device(device)
    backends.validate_device(target)  # loads the device's backend: its kernels are registered now
    found = {k.dtype for k in table("astype").kernels if k.device_type == target.type}
    order = list(_dtypes.CATEGORIES["any"])
    return sorted(found, key=order.index)


_INFO = Info()


def __array_namespace_info__() -> Info:
    """The standard's inspection object: devices, default device and dtypes of what is loaded."""
    return _INFO
