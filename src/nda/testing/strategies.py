"""Hypothesis strategies for nda: arrays on any device, dtypes, devices, shapes, index expressions.

Two levels, so that a test can build one input and replay it on several devices:

* **host level** (NumPy): :func:`host_arrays`, :func:`elements`, :func:`edge_values`,
  :func:`index_expressions` with ``host=True``. The conformance kit works at this level:
  it draws NumPy inputs once and materialises them on the device under test and on the
  reference.
* **nda level**: :func:`arrays` (an ``nda.NDArray`` on a device, in a layout),
  :func:`dtypes`, :func:`devices`, :func:`index_expressions` (index arrays on the device).

Edge values are drawn **on purpose**: every element strategy mixes Hypothesis's own
values with :func:`edge_values` of the dtype (NaN, ±inf, ±0, the smallest subnormal and
normal, the largest finite value, integer extremes and their neighbours), so an array
of a few elements very often holds one. Shapes default to 0–3 dimensions of 0–4
elements (empty arrays included), which keeps examples small and shrinking fast.

Everything here works without nda's test suite; it imports only ``nda``, NumPy and
Hypothesis (which must be installed: ``pip install hypothesis``).

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nda
from nda._devices import as_device
from nda._dtypes import ALL_DTYPES, CATEGORIES, DType, as_dtype

__all__ = [
    "edge_values",
    "elements",
    "scalars",
    "host_arrays",
    "arrays",
    "dtypes",
    "devices",
    "shapes",
    "broadcastable_shapes",
    "mutually_broadcastable_shapes",
    "index_expressions",
    "available_devices",
]

_Strategy = st.SearchStrategy


# ----------------------------------------------------------------------------- values


def edge_values(dtype: DType | str) -> list[Any]:
    """The values of ``dtype`` that break kernels most often, as Python scalars.

    bool: both. Integers: 0, ±1, the extremes and their neighbours. Floats: ±0, ±1,
    0.5, NaN, a NaN with its sign bit set (x86 makes those: ``0 * inf``; a radix sort
    puts them first), ±inf, ± the smallest subnormal, the smallest normal, ± the largest
    finite value. Complex: combinations of ±0, 1, NaN and ±inf in both parts, plus a
    subnormal, a huge real part and ``1e-6j`` (near 1 after ``1 +``: where ``log1p`` and
    ``log`` lose or keep precision).
    """
    dt = as_dtype(dtype)
    npd = dt.numpy
    if dt is nda.bool:
        return [False, True]
    if dt.category in ("signed integer", "unsigned integer"):
        info = np.iinfo(npd)
        candidates = [0, 1, -1, int(info.min), int(info.min) + 1, int(info.max), int(info.max) - 1]
        return sorted({v for v in candidates if info.min <= v <= info.max}, key=lambda v: (abs(v), v))
    if dt.category == "real floating":
        fi = np.finfo(npd)
        sub, normal, big = float(fi.smallest_subnormal), float(fi.smallest_normal), float(fi.max)
        return [0.0, -0.0, 1.0, -1.0, 0.5, float("nan"), -float("nan"), float("inf"), float("-inf"), sub, -sub, normal, big, -big]
    real = as_dtype("float32" if dt is nda.complex64 else "float64")
    parts = [0.0, -0.0, 1.0, float("nan"), float("inf"), float("-inf")]
    fi = np.finfo(real.numpy)
    values = [complex(r, i) for r in parts for i in parts]
    values += [complex(float(fi.smallest_subnormal), 0.0), complex(float(fi.max), -1.0), complex(0.0, 1e-6)]
    return values


def elements(dtype: DType | str, *, edges: bool = True) -> _Strategy[Any]:
    """Element values of ``dtype`` (full range, NaN/inf/subnormals), mixed with :func:`edge_values`."""
    dt = as_dtype(dtype)
    if dt.category == "bool":
        base: _Strategy[Any] = st.booleans()
    elif dt.category in ("real floating", "complex floating"):
        base = hnp.from_dtype(dt.numpy, allow_nan=True, allow_infinity=True, allow_subnormal=True)
    else:
        base = hnp.from_dtype(dt.numpy)
    if not edges:
        return base
    return st.one_of(base, st.sampled_from(edge_values(dt)))


def scalars(dtype: DType | str, *, edges: bool = True) -> _Strategy[Any]:
    """Python scalars that combine with a ``dtype`` array without changing its dtype (weak scalars).

    bool for bool, int (in range) for integers, float for real floating (representable in
    the dtype), complex for complex floating.
    """
    dt = as_dtype(dtype)
    convert = {"bool": bool, "signed integer": int, "unsigned integer": int, "real floating": float, "complex floating": complex}[dt.category]
    return elements(dt, edges=edges).map(convert)


def shapes(*, min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 4) -> _Strategy[tuple[int, ...]]:
    """Array shapes; by default 0-3 dimensions of 0-4 elements (0-d and empty arrays included)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcastable_shapes(shape: Sequence[int], *, min_dims: int = 0) -> _Strategy[tuple[int, ...]]:
    """Shapes that broadcast *to* ``shape`` (a trailing part of it, some sizes replaced by 1).

    This is what ``broadcast_to(x, shape)`` and ``x[key] = value`` need; for shapes that
    broadcast *together* use :func:`mutually_broadcastable_shapes`.
    """
    return _to_shape(tuple(shape), min_dims)


@st.composite
def _to_shape(draw: Any, shape: tuple[int, ...], min_dims: int) -> tuple[int, ...]:
    ndim = draw(st.integers(min(min_dims, len(shape)), len(shape)))
    tail = shape[len(shape) - ndim :]
    return tuple(1 if draw(st.booleans()) else n for n in tail)


def mutually_broadcastable_shapes(
    num_shapes: int, *, base_shape: Sequence[int] = (), min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4
) -> _Strategy[Any]:
    """``num_shapes`` shapes that broadcast together; draws ``(input_shapes, result_shape)``."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, base_shape=tuple(base_shape), min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


def host_arrays(
    dtype: DType | str | _Strategy[Any],
    shape: int | Sequence[int] | _Strategy[Any] | None = None,
    *,
    elements: _Strategy[Any] | None = None,
    edges: bool = True,
) -> _Strategy[np.ndarray]:
    """NumPy arrays of an nda dtype, with edge values drawn on purpose (see :func:`elements`)."""
    return _host_arrays(dtype, shape, elements, edges)


@st.composite
def _host_arrays(draw: Any, dtype: Any, shape: Any, elems: Any, edges: bool) -> np.ndarray:
    dt = as_dtype(draw(dtype) if isinstance(dtype, _Strategy) else dtype)
    if shape is None:
        shape = shapes()
    shp = draw(shape) if isinstance(shape, _Strategy) else ((shape,) if isinstance(shape, int) else tuple(shape))
    if elems is not None:
        return draw(hnp.arrays(dt.numpy, shp, elements=elems))
    return draw(_cached_arrays(dt, shp, edges))


_ARRAY_CACHE: dict[tuple[DType, tuple[int, ...], bool], _Strategy[np.ndarray]] = {}
_ELEMENT_CACHE: dict[tuple[DType, bool], _Strategy[Any]] = {}


def _cached_arrays(dt: DType, shape: tuple[int, ...], edges: bool) -> _Strategy[np.ndarray]:
    """``hnp.arrays`` for (dtype, shape), built and validated once (drawing is the hot path of the kit)."""
    found = _ARRAY_CACHE.get((dt, shape, edges))
    if found is None:
        elem = _ELEMENT_CACHE.get((dt, edges))
        if elem is None:
            elem = _ELEMENT_CACHE[dt, edges] = elements(dt, edges=edges)
        found = _ARRAY_CACHE[dt, shape, edges] = hnp.arrays(dt.numpy, shape, elements=elem)
    return found


def draw_host_array(draw: Any, dtype: DType | str, shape: Sequence[int], *, edges: bool = True) -> np.ndarray:
    """Draw one NumPy array of ``dtype`` and ``shape`` inside a ``@composite`` strategy (fast path)."""
    return draw(_cached_arrays(as_dtype(dtype), tuple(shape), edges))  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- devices and dtypes


def available_devices(device_type: str | None = None) -> list[nda.Device]:
    """The devices of every installed backend that loads (or of ``device_type``), cpu first."""
    if device_type is not None:
        found = [info.device for info in nda.backends.devices(device_type)]
        if not found:
            raise ValueError(f"no {device_type!r} device is available.{nda.backends.explain_missing(device_type)}")
        return found
    for record in nda.backends.status():
        if record["state"] == "installed":
            for dev_type in record["device_types"] or [record["name"]]:
                nda.backends.ensure_device_type(dev_type)
    return sorted((info.device for info in nda.backends.devices()), key=lambda d: (d.type != "cpu", d.type, d.index))


def devices(device_type: str | None = None) -> _Strategy[nda.Device]:
    """Devices that can be used right now (all loaded backends, or those of ``device_type``)."""
    return st.sampled_from(available_devices(device_type))


def _kind_dtypes(kind: Any) -> set[DType]:
    if kind is None:
        return set(ALL_DTYPES)
    if isinstance(kind, tuple):
        return set().union(*(_kind_dtypes(k) for k in kind))
    if isinstance(kind, DType):
        return {kind}
    if kind in CATEGORIES:
        return set(CATEGORIES[kind])
    try:
        return {d for d in ALL_DTYPES if nda.isdtype(d, kind)}
    except ValueError:
        raise ValueError(
            f"unknown dtype kind {kind!r}; use an Array API kind ('integral', 'real floating', 'numeric', …) or a catalog category ({', '.join(CATEGORIES)})"
        ) from None


def dtypes(device: nda.Device | str | None = None, kind: Any = None) -> _Strategy[DType]:
    """nda dtypes, optionally of ``kind`` and only those ``device`` can hold (it can create arrays of them)."""
    allowed = _kind_dtypes(kind)
    if device is not None:
        device_type = device.type if isinstance(device, nda.Device) else str(device).split(":")[0]
        nda.backends.ensure_device_type("cpu")  # coverage() counts host fallbacks only once cpu's kernels exist
        rows = nda.dispatch.coverage(device_type).rows["asarray"]
        allowed &= {as_dtype(name) for name, status in rows.items() if status != "missing"}
    ordered = [d for d in ALL_DTYPES if d in allowed]
    if not ordered:
        raise ValueError(f"no dtype matches kind={kind!r} on device {device}")
    return st.sampled_from(ordered)


# ----------------------------------------------------------------------------- nda arrays


def arrays(
    dtype: DType | str | _Strategy[Any] | None = None,
    shape: int | Sequence[int] | _Strategy[Any] | None = None,
    *,
    device: nda.Device | str | _Strategy[Any] | None = None,
    layout: str | None = None,
    elements: _Strategy[Any] | None = None,
    edges: bool = True,
) -> _Strategy[nda.NDArray]:
    """``nda.NDArray`` values on ``device`` (default: the default device) in ``layout``.

    ``dtype`` defaults to any dtype the device can hold, ``shape`` to :func:`shapes`.
    The data is drawn on the host (:func:`host_arrays`) and copied to the device.
    """
    return _arrays(dtype, shape, device, layout, elements, edges)


def to_layout(x: nda.NDArray, layout: str | None) -> nda.NDArray:
    """``x`` in ``layout`` (``None`` or ``"strided"``: unchanged); nda's error if it cannot convert."""
    if layout is None or layout == x.layout.name:
        return x
    return x.to_layout(layout)


@st.composite
def _arrays(draw: Any, dtype: Any, shape: Any, device: Any, layout: Any, elems: Any, edges: bool) -> nda.NDArray:
    dev = draw(device) if isinstance(device, _Strategy) else as_device(device)
    if dtype is None:
        dtype = dtypes(dev)
    host = draw(host_arrays(dtype, shape, elements=elems, edges=edges))
    return to_layout(nda.asarray(host, device=dev, copy=True), layout)


# ----------------------------------------------------------------------------- index expressions


def index_expressions(
    shape: Sequence[int],
    *,
    arrays: bool = True,
    device: nda.Device | str | None = None,
    host: bool = False,
    unique: bool = False,
) -> _Strategy[Any]:
    """Keys for ``x[key]`` on an array of ``shape``: ints, slices, ``...``, ``None`` and tuples of
    them (NumPy's basic indexing), and with ``arrays=True`` also an integer index array on one
    axis or a bool mask of the whole shape.

    Index arrays are ``nda`` arrays on ``device``, or NumPy arrays with ``host=True``.
    ``unique=True`` draws integer index arrays without repeated positions (what ``setitem``
    needs for a result that does not depend on the order of writes).
    """
    strategy = _index(tuple(shape), arrays, unique)
    if host:
        return strategy
    return strategy.map(lambda key: _key_on(key, device))


def _key_on(key: Any, device: Any) -> Any:
    if isinstance(key, tuple):
        return tuple(_key_on(k, device) for k in key)
    if isinstance(key, np.ndarray):
        return nda.asarray(key, device=device, copy=True)
    return key


@st.composite
def _index(draw: Any, shape: tuple[int, ...], allow_arrays: bool, unique: bool) -> Any:
    kinds = ["basic"]
    if allow_arrays and shape:
        kinds += ["integer array", "bool mask"]
    kind = draw(st.sampled_from(kinds))
    if kind == "basic":
        return draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    if kind == "bool mask":
        return draw(hnp.arrays(np.bool_, shape))
    axis = draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    if n == 0:
        positions: Any = np.zeros((0,), np.int64)
    else:
        values = st.integers(-n, n - 1)
        size = draw(st.integers(0, n if unique else 4))
        drawn = draw(st.lists(values, min_size=size, max_size=size, unique_by=(lambda v: v % n) if unique else None))
        positions = np.asarray(drawn, dtype=np.int64)
    return (slice(None),) * axis + (positions,)


def iter_dtypes(names: Iterable[str] | None) -> list[DType]:
    """Dtypes from names (``None``: all), in nda's canonical order."""
    if names is None:
        return list(ALL_DTYPES)
    wanted = {as_dtype(n) for n in names}
    return [d for d in ALL_DTYPES if d in wanted]
