"""The public functions of nda: generated from the op catalog, plus the few that are not ops.

``nda/__init__.py`` re-exports this module's ``__all__``. Three catalog ops get a thin
wrapper here because the Array API asks them to return their input unchanged in some
cases, without running any kernel: ``asarray`` of an NDArray, ``astype(copy=False)`` to
the same dtype and ``to_device`` to the same device.

Layer: arrays and front end, public API (README, "Architecture").
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import _dtypes, _namespace, backends, layouts, ops
from . import engine as _engine
from ._array import NDArray, new_array
from ._execute import TO_DEVICE, TO_LAYOUT, Site, Task, invoke, submit
from ._devices import ArrayMeta, Device, as_device, as_layout, strided
from .engine import state as _state
from .ops import spec as _spec
from .ops.spec import host_scalar

_all_generated = _namespace.build_namespace("nda")
_generated = {name: fn for name, fn in _all_generated.items() if "." not in name}
globals().update(_generated)


def extension(name: str) -> dict[str, Any]:
    """The generated functions of an extension namespace (``"linalg"`` -> ``{"inv": ...}``)."""
    prefix = name + "."
    return {op[len(prefix) :]: fn for op, fn in _all_generated.items() if op.startswith(prefix)}


_catalog_asarray = _generated["asarray"]
setitem = _generated["setitem"]
_catalog_astype = _generated["astype"]
_catalog_linspace = _generated["linspace"]


def _copy_signature(fn: Any, generated: Any) -> Any:
    fn.__name__ = generated.__name__
    fn.__qualname__ = generated.__qualname__
    fn.__doc__ = generated.__doc__
    fn.__signature__ = generated.__signature__
    fn.__module__ = "nda"
    return fn


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> NDArray:
    if isinstance(obj, NDArray):
        if copy is not None and not isinstance(copy, bool):
            raise TypeError(f"asarray(): copy must be True, False or None, got {copy!r}")
        x = obj
        target_device = x.device if device is None else as_device(device)
        target_dtype = x.dtype if dtype is None else _dtypes.as_dtype(dtype)
        if copy is False and (target_device is not x.device or target_dtype is not x.dtype):
            raise ValueError(
                f"asarray(copy=False): converting a {x.dtype.name} array on {x.device} to {target_dtype.name} on {target_device} needs a copy"
            )
        moved = target_device is not x.device
        if moved:
            x = to_device(x, target_device)
        if target_dtype is not x.dtype:
            return _catalog_astype(x, target_dtype)  # type: ignore[no-any-return]
        return _catalog_astype(x, x.dtype) if copy and not moved else x  # type: ignore[no-any-return]
    out = _catalog_asarray(obj, dtype=dtype, device=device, copy=copy)
    if not copy and out._meta.device.type == "cpu" and _may_share(obj, out):
        _engine.share(out)  # the caller's memory: writes and cheap ops on it complete at the call, heavy ones copy it (nda.engine.share)
    return out  # type: ignore[no-any-return]


def _may_share(obj: Any, out: NDArray) -> bool:
    """Whether a cpu array made by ``asarray(obj)`` may share ``obj``'s memory (NumPy arrays of its
    dtype, and anything exposing memory: buffers, ``__array_interface__``, DLPack, ``__array__``)."""
    if isinstance(obj, np.ndarray):
        return obj.dtype == out._meta.dtype.numpy and obj.size > 0
    if isinstance(obj, (list, tuple, int, float, complex, bool, np.generic)):
        return False
    if builtins.any(hasattr(obj, a) for a in ("__array_interface__", "__dlpack__", "__array__")):
        return True
    try:
        memoryview(obj)  # the buffer protocol: bytearray, array.array, mmap
    except TypeError:
        return False
    return True


def astype(x: NDArray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> NDArray:
    if device is not None and isinstance(x, NDArray) and as_device(device) is not x.device:
        x = to_device(x, device)
    if not copy and isinstance(x, NDArray) and _dtypes.as_dtype(dtype) is x.dtype:
        return x
    return _catalog_astype(x, dtype, copy=copy)  # type: ignore[no-any-return]


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None, endpoint: bool = True) -> NDArray:
    try:
        dt = None if dtype is None else _dtypes.as_dtype(dtype)
    except TypeError:
        dt = None  # the catalog's planner says what is wrong
    if dt is not None and dt.category in ("signed integer", "unsigned integer"):
        dtype = dt
        # NumPy's rule (array_api_strict follows it): the float64 samples rounded towards -inf.
        # Composed of catalog ops, so every backend computes it the same way.
        values = [host_scalar(v, "linspace", name) for v, name in ((start, "start"), (stop, "stop"))]
        info = np.iinfo(dtype.numpy)
        for value, name in zip(values, ("start", "stop")):
            if isinstance(value, complex) or isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"linspace(): {name} must be a real number for an integer dtype, got {value!r}")
            if not info.min <= np.floor(value) <= info.max:
                raise OverflowError(f"linspace(): {name}={value!r} is out of bounds for {dtype.name} (range {info.min}..{info.max})")
        samples = _catalog_linspace(float(values[0]), float(values[1]), num, dtype=_dtypes.float64, device=device, endpoint=endpoint)
        return _catalog_astype(_generated["floor"](samples), dtype)  # type: ignore[no-any-return]
    return _catalog_linspace(start, stop, num, dtype=dtype, device=device, endpoint=endpoint)  # type: ignore[no-any-return]


_copy_signature(asarray, _catalog_asarray)


class _ForCatalog:
    """What the catalog's planners need from the layers above (``nda.ops.spec.Provider``)."""

    validate_device = staticmethod(backends.validate_device)  # creation ops check the device they are asked for
    asarray = staticmethod(asarray)  # list/NumPy indices become arrays on the indexed array's device


_spec.install(_ForCatalog())
_copy_signature(astype, _catalog_astype)
_copy_signature(linspace, _catalog_linspace)


def to_device(x: NDArray, device: Device | str, /, *, stream: Any = None) -> NDArray:
    """``x`` on ``device``: ``x`` itself if it is there already, else a copy.

    The copy goes through the backends' copy interface (a direct device-to-device copy
    when one backend serves both devices and offers it, else through host memory) and
    through the engine, so it is ordered like any op: after pending writes to ``x``.
    """
    return invoke(_TO_DEVICE, (x, device), {} if stream is None else {"stream": stream})  # type: ignore[no-any-return]


def _copy_to_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> NDArray:
    x, device = args
    target = as_device(device)
    if target is x.device:
        return x
    if kwargs.get("stream") is not None:
        raise ValueError("to_device(): stream= is not supported; nda orders copies with its engine")
    backends.validate_device(target)
    if x._meta.layout.name != "strided":
        return _layout_to_device(x, target)  # stays in its layout
    direct = backends.copies_directly(x.device, target)
    out = new_array(None, ArrayMeta(target, x.dtype, x.layout), x.shape)
    source = x.device

    def copy(buf: Any) -> Any:
        return backends.copy_buffer(source, buf, target, like=x)

    route = f"{source} -> {target} ({'direct' if direct else 'through host memory'})"
    submit(Task("to_device", copy, (x,), {}, (out,), (x,), target, x._size, route=route))
    return out


_TO_DEVICE = Site(TO_DEVICE, to_device, _copy_to_device)


def _to_layout(x: Any, layout: Any, /) -> Any:
    """``x`` stored in ``layout`` on its device (``x`` itself if it already is).

    The conversion is ordered by the engine like an op (after pending writes to ``x``).
    ValueError when the shape does not fit the layout (csr is 2-D) or the device has no
    converter for the pair.
    """
    if not isinstance(x, NDArray):
        raise TypeError(f"to_layout() expects an nda array, got {type(x).__name__}")
    return invoke(_TO_LAYOUT, (x, layout), {})


def _convert_layout(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    x, layout = args
    lay = as_layout(layout)
    if lay is x._meta.layout:
        return x
    layouts.info(lay).check_shape(x._shape, f"to_layout({lay.name!r})")
    layouts.check_holds(x._meta.device.type, lay, x._meta.dtype, f"to_layout({lay.name!r})")
    chain = layouts.conversion_route(x._meta.device.type, x._meta.layout, lay)
    out = new_array(None, ArrayMeta(x._meta.device, x._meta.dtype, lay), x._shape)

    def convert(buf: Any) -> Any:
        for conv in chain:
            buf = conv.fn(buf)
        return buf

    path = " -> ".join([chain[0].src.name] + [c.dst.name for c in chain])
    submit(Task(f"to_layout({lay.name})", convert, (x,), {}, (out,), (x,), x._meta.device, x._size, route=path))
    return out


_TO_LAYOUT = Site(TO_LAYOUT, _to_layout, _convert_layout)


def _layout_to_device(x: Any, target: Device) -> Any:
    """A non-strided array copied to ``target`` in the same layout (through host memory)."""
    layout = x._meta.layout
    src = layouts.storage(x._meta.device.type, layout, f"to_device({target})")
    dst = layouts.storage(target.type, layout, f"to_device({target})")
    layouts.check_holds(target.type, layout, x._meta.dtype, f"to_device({target})")
    out = new_array(None, ArrayMeta(target, x._meta.dtype, layout), x._shape)

    def copy(buf: Any) -> Any:
        return dst.from_host(src.to_host(buf), target)

    route = f"{x._meta.device} -> {target} ({layout.name}, through host memory)"
    submit(Task("to_device", copy, (x,), {}, (out,), (x,), target, x._size, route=route))
    return out


def _copy_into(x: NDArray, y: NDArray, /) -> NDArray:
    """``x.copyto(y)`` (MXNet's method): ``x``'s data into the existing array ``y`` (any device, same
    shape), cast to ``y``'s dtype under the same-kind rule; returns ``y``. Ordered by the engine
    after pending work on both arrays."""
    if not isinstance(x, NDArray) or not isinstance(y, NDArray):
        raise TypeError(f"copyto() expects two nda arrays, got {type(x).__name__} and {type(y).__name__}")
    if x.shape != y.shape:
        raise ValueError(f"copyto(): shapes differ: source {x.shape}, destination {y.shape}")
    setitem(y, ..., to_device(x, y.device))
    return y


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")
#: Python scalars are weak (NEP 50): a kind may go into its own kind or a higher one.
_KIND_RANK = {bool: 0, int: 1, float: 2, complex: 3}
_DTYPE_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def copyto(dst: NDArray, src: Any, /, *, casting: str = "same_kind", where: Any = True) -> None:
    """NumPy's ``copyto``: ``src`` (an array of any device, a NumPy array, a scalar) broadcast into the
    existing array ``dst``, where ``where`` is true; values cast to ``dst``'s dtype if ``casting``
    allows (NumPy's rules: ``'no'``, ``'equiv'``, ``'safe'``, ``'same_kind'``, ``'unsafe'``; a
    Python scalar is weak, so ``copyto(x_float32, 1.5)`` is fine and ``copyto(x_int, 1.5)`` is
    not). Ordered by the engine after pending work on both. The destination comes first, as in
    NumPy; ``x.copyto(y)``, MXNet's method, copies ``x`` into ``y``.
    """
    if not isinstance(dst, NDArray):
        raise TypeError(f"copyto(): the destination must be an nda array, got {type(dst).__name__} (copyto(dst, src), as NumPy's)")
    if casting not in _CASTINGS:
        raise ValueError(f"copyto(): casting must be one of {', '.join(map(repr, _CASTINGS))}; got {casting!r}")
    target = dst.dtype.numpy
    kind = _KIND_RANK.get(src.__class__)
    if kind is not None:  # a Python scalar (weak for int, float, complex): NumPy's own rules and errors decide
        converted = np.empty((), dtype=target)
        np.copyto(converted, src, casting=casting)
        value: Any = src if kind <= _DTYPE_RANK[target.kind] else asarray(converted, device=dst.device)
    else:
        if isinstance(src, NDArray):
            source = src.dtype.numpy
        else:
            src = np.asarray(src)
            source = src.dtype
            if source.kind not in "biufc":
                raise TypeError(f"copyto(): cannot copy {source} data into an nda array")
        if not np.can_cast(source, target, casting):
            raise TypeError(f"Cannot cast array data from dtype('{source}') to dtype('{target}') according to the rule '{casting}'")
        if isinstance(src, NDArray):
            value = src if src.device == dst.device else to_device(src, dst.device)
            if source != target:
                if source.kind == "c" and target.kind != "c":  # casting="unsafe": NumPy keeps the real part, and warns
                    import warnings

                    warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning, stacklevel=2)
                    value = _generated["real"](value)
                value = astype(value, dst.dtype)
        else:  # NumPy casts host data itself (float16, byte orders, complex to real under 'unsafe')
            value = asarray(src if source == target else src.astype(target), device=dst.device)
    if isinstance(value, NDArray) and value.ndim > dst.ndim and builtins.all(d == 1 for d in value.shape[: value.ndim - dst.ndim]):
        value = _generated["reshape"](value, value.shape[value.ndim - dst.ndim :])  # NumPy drops leading ones
    if where is True:
        setitem(dst, ..., value)
        return None
    if isinstance(where, NDArray):
        mask = where if where.dtype is _dtypes.bool else _generated["not_equal"](where, 0)
        if mask.device != dst.device:
            mask = to_device(mask, dst.device)
    else:
        host_mask = np.asarray(where, dtype=bool)  # NumPy's: None is False, 1 and 2.5 are True
        if host_mask.ndim == 0:
            if bool(host_mask):
                setitem(dst, ..., value)
            return None
        mask = asarray(host_mask, device=dst.device)
    setitem(dst, ..., _generated["where"](mask, value, dst))
    return None


def round_decimals(x: NDArray, decimals: int = 0, /) -> NDArray:
    """NumPy's ``round(x, decimals)`` (``x.round(d)``, ``round(x, d)``, ``np.round(x, d)``): ``x * 10**d``
    rounded half to even and divided back (for ``d < 0``: divided, rounded, multiplied), in the
    array's own precision as NumPy computes it; integers in float64 and cast back (a copy for
    ``d >= 0``); complex values part by part. ``decimals=0`` is the catalog's ``round``."""
    if not isinstance(x, NDArray):
        raise TypeError(f"round(): expected an nda array, got {type(x).__name__}")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"round(): decimals must be an int, got {decimals!r}")
    decimals = int(decimals)
    rnd = _generated["round"]
    kind = x.dtype.category
    if kind == "bool":
        raise TypeError(
            "round(): a bool array cannot be rounded (nda.round takes numeric dtypes; NumPy gives float16 for decimals=0 and refuses others)"
        )
    if kind == "complex floating" and decimals != 0:
        # NumPy rounds the parts apart (x * 10**d would make inf * 0 = NaN in the other part);
        # nda has no kernel that builds a complex array from two real ones: NumPy does it on a host copy.
        from .dispatch import _announce_fallback

        _announce_fallback(
            "round", f"round(decimals={decimals}) of a complex array on {x.device}: NumPy rounds a host copy's parts and the result is copied back"
        )
        return asarray(np.round(np.asarray(x), decimals), device=x.device)
    if kind in ("signed integer", "unsigned integer"):
        if decimals >= 0:
            return copy(x)
        f = _power_of_ten(-decimals)
        return astype(rnd(astype(x, _dtypes.float64) / f) * f, x.dtype)
    if decimals == 0:
        return rnd(x)  # type: ignore[no-any-return]
    f = _power_of_ten(builtins.abs(decimals))
    if decimals > 0:
        return rnd(x * f) / f  # type: ignore[no-any-return]
    return rnd(x / f) * f  # type: ignore[no-any-return]


def _power_of_ten(n: int) -> float:
    """``10.0 ** n`` as NumPy's ``round`` makes it: exact up to ``1e8``, then ``1e9`` times ``10.0``
    repeatedly (a rounding per step, so ``1e23`` and up can be an ulp from ``float(10**n)``; ``inf``
    past ``1e308``, where NumPy's round gives NaN)."""
    if n < 9:
        return float(10**n)
    value = 1e9
    for _ in range(n - 9):
        value *= 10.0
        if value == float("inf"):
            break
    return value


def divmod_(x1: Any, x2: Any, /) -> tuple[NDArray, NDArray]:
    """Python's ``divmod(x1, x2)`` of arrays: ``(x1 // x2, x1 % x2)``. nda's ``floor_divide`` and
    ``remainder`` keep the Array API's special cases, so at infinities the pair differs from
    NumPy's ``divmod`` (``inf // 3`` is ``inf``, NumPy's NaN); elsewhere the values are NumPy's."""
    return _generated["floor_divide"](x1, x2), _generated["remainder"](x1, x2)


def copy(x: NDArray, /) -> NDArray:
    """A copy of ``x`` on the same device."""
    return _catalog_astype(x, x.dtype, copy=True)  # type: ignore[no-any-return]


#: DLPack device types NumPy reads directly (host memory); kDLCUDAManaged (13) too when no backend imports it.
_HOST_DLPACK = (1, 3, 11)  # kDLCPU, kDLCUDAHost, kDLROCMHost


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> NDArray:
    """An array sharing ``x``'s memory through DLPack, on the device ``x`` is on (or on ``device``).

    ``x.__dlpack_device__()`` routes the import: host memory goes through NumPy (zero-copy on
    cpu); another device type goes to the backend that declares it in ``dlpack_device_types``
    (nda-cuda for CUDA: zero-copy from CuPy, PyTorch or JAX CUDA arrays, ordered after the
    producer's pending work). BufferError names the device type when no backend imports it.
    ``device=`` another device copies there (BufferError with ``copy=False``); ``copy=True``
    always copies. An nda array is returned as ``asarray`` returns it.
    """
    if copy is not None and not isinstance(copy, bool):  # NumPy's from_dlpack: a ValueError
        raise ValueError(f"from_dlpack(): copy must be True, False or None, got {copy!r}")
    target = None if device is None else as_device(device)
    if isinstance(x, NDArray):
        return asarray(x, device=target, copy=copy)
    if not callable(getattr(x, "__dlpack__", None)):
        raise TypeError(
            f"from_dlpack(): expected an object with __dlpack__ (a DLPack producer: a NumPy, CuPy, PyTorch or JAX array), "
            f"got {type(x).__name__}; nda.asarray() takes other data"
        )
    probe = getattr(x, "__dlpack_device__", None)
    kind, index = (int(v) for v in probe()) if probe is not None else (1, 0)
    if kind in _HOST_DLPACK:
        return _from_host_dlpack(x, target, copy)
    if target is not None and target.type == "cpu" and copy is not False:
        try:  # the producer copies to host itself (CuPy, PyTorch): no nda backend needed for its device
            return asarray(np.from_dlpack(x, device="cpu", copy=copy), device=target)
        except (BufferError, TypeError, ValueError, NotImplementedError):
            pass
    try:
        backend, device_type = backends.for_dlpack_device(kind, prefer=None if target is None else target.type)
    except BufferError:
        if kind == 13:  # CUDA managed memory is host-accessible: NumPy takes it
            return _from_host_dlpack(x, target, copy)
        raise
    source = Device(device_type, index)
    backends.validate_device(source)
    buf = backends.import_buffer(backend, x, source)
    array = new_array(buf, ArrayMeta(source, _dtypes.from_numpy_dtype(np.dtype(buf.dtype)), strided), tuple(buf.shape))
    if target is None or target is source:
        return _catalog_astype(array, array.dtype, copy=True) if copy else array  # type: ignore[no-any-return]
    if copy is False:
        raise BufferError(f"from_dlpack(copy=False): the data is on {source}; device={target} needs a copy")
    return to_device(array, target)


def _from_host_dlpack(x: Any, target: Device | None, copy: bool | None) -> NDArray:
    """Host memory through NumPy: shared on cpu unless ``copy=True``; copied to another device."""
    if copy is False and target is not None and target.type != "cpu":
        raise BufferError(f"from_dlpack(copy=False): the data is in host memory; device={target} needs a copy")
    host = np.from_dlpack(x) if copy is None else np.from_dlpack(x, copy=copy)
    return asarray(host, device=target or Device("cpu", 0))


def _from_pickle(host: np.ndarray, device: str) -> NDArray:
    return asarray(host, device=device)


def waitall() -> None:
    """Wait for all pending work, on every device; raises the first error of that work once."""
    _state.wait_all()
    backends.synchronize_all()


__all__ = sorted(set(_generated) | {"asarray", "astype", "linspace", "to_device", "copyto", "copy", "from_dlpack", "waitall"})
del ops
