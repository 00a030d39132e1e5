"""Data types, dtype categories and type promotion.

Every Array API dtype is one interned :class:`DType` instance. Interning means equality
between nda dtypes is identity, so a ``DType`` hashes at C speed (identity) and compares
by identity first when it sits inside dispatch keys (dicts and tuples never call
``__eq__`` for the same object). ``DType.__eq__`` also answers True for NumPy's
equivalent dtype, scalar type or Python type (``nda.bool == bool``, ``nda.float64 ==
np.float64``), as NumPy's dtypes do: Dask tests ``index.dtype == bool`` on the arrays it
is given. Their hashes differ, as NumPy's ``np.dtype(bool)`` and ``bool`` do.

Promotion follows the Array API lattice inside a kind (bool, signed, unsigned, real
floating, complex floating) and NumPy's rules across kinds (``int32 + float32 ->
float64``), which is what NumPy users expect and what the standard leaves to the
implementation. Results are cached per pair, so promotion on the hot path is one dict
lookup.

Layer: values (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "DType",
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
    "ALL_DTYPES",
    "CATEGORIES",
    "as_dtype",
    "result_type",
    "isdtype",
    "can_cast",
    "python_scalar",
]

_builtin_bool = bool
_PYTHON_TYPES = (bool, int, float, complex)


class DType:
    """An array element type: one interned instance per Array API dtype.

    ``kind`` is one of ``"bool"``, ``"signed integer"``, ``"unsigned integer"``,
    ``"real floating"``, ``"complex floating"``; ``itemsize`` is in bytes.
    """

    __slots__ = ("name", "kind", "itemsize", "numpy")
    _registry: dict[str, DType] = {}

    name: str
    kind: str
    itemsize: int
    numpy: np.dtype

    def __new__(cls, name: str, kind: str, itemsize: int) -> DType:
        existing = cls._registry.get(name)
        if existing is not None:
            return existing
        self = object.__new__(cls)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "itemsize", itemsize)
        object.__setattr__(self, "numpy", np.dtype(name))
        cls._registry[name] = self
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"DType is immutable; cannot set {name!r}")

    def __repr__(self) -> str:
        return f"nda.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> _builtin_bool:
        # Identity between nda dtypes (interned). NumPy's dtype of the same name, and the
        # NumPy scalar type or Python type NumPy reads as that dtype, are equal as well,
        # as NumPy's dtypes compare (``np.dtype(bool) == bool``): Dask and other code
        # written for NumPy test ``x.dtype == bool`` on the arrays it is given.
        if other is self:
            return True
        if isinstance(other, np.dtype):
            return other == self.numpy  # type: ignore[no-any-return]
        if isinstance(other, type) and (issubclass(other, np.generic) or other in _PYTHON_TYPES):
            return np.dtype(other) == self.numpy  # type: ignore[no-any-return]
        return False

    def __ne__(self, other: object) -> _builtin_bool:
        return not self.__eq__(other)

    # Hashing stays identity (C speed inside dispatch keys). Equal NumPy objects hash
    # differently, as NumPy's own np.dtype(bool) and bool do.
    __hash__ = object.__hash__

    def __reduce__(self) -> tuple[Any, ...]:
        return (as_dtype, (self.name,))

    def __copy__(self) -> DType:
        return self

    def __deepcopy__(self, memo: Any) -> DType:
        return self

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the same name, so that ``np.dtype(nda.float64)`` works.

        NumPy converts any object with a ``dtype`` attribute this way; Dask, pandas and
        matplotlib call ``np.dtype(...)`` on the dtypes of the arrays they are handed.
        """
        return self.numpy

    @property
    def type(self) -> type:
        """NumPy's scalar type of this dtype (``np.float64`` for ``nda.float64``), as ``np.dtype(...).type``.

        Code written for NumPy dtypes (Dask's ``iscomplexobj``) asks for it. Note that
        ``kind`` is nda's (``"real floating"``), not NumPy's one-letter code.
        """
        return self.numpy.type  # type: ignore[no-any-return]


bool = DType("bool", "bool", 1)  # noqa: A001 - the Array API name
int8 = DType("int8", "signed integer", 1)
int16 = DType("int16", "signed integer", 2)
int32 = DType("int32", "signed integer", 4)
int64 = DType("int64", "signed integer", 8)
uint8 = DType("uint8", "unsigned integer", 1)
uint16 = DType("uint16", "unsigned integer", 2)
uint32 = DType("uint32", "unsigned integer", 4)
uint64 = DType("uint64", "unsigned integer", 8)
float32 = DType("float32", "real floating", 4)
float64 = DType("float64", "real floating", 8)
complex64 = DType("complex64", "complex floating", 8)
complex128 = DType("complex128", "complex floating", 16)

ALL_DTYPES: tuple[DType, ...] = tuple(DType._registry.values())
_BY_NUMPY: dict[np.dtype, DType] = {d.numpy: d for d in ALL_DTYPES}

default_int = int64
default_float = float64
default_complex = complex128

_INTEGER_KINDS = ("signed integer", "unsigned integer")
_FLOAT_KINDS = ("real floating", "complex floating")

#: The dtype categories the op catalog speaks in (names follow the Array API spec).
CATEGORIES: dict[str, tuple[DType, ...]] = {
    "any": ALL_DTYPES,
    "bool": (bool,),
    "integer": tuple(d for d in ALL_DTYPES if d.kind in _INTEGER_KINDS),
    "integer or boolean": tuple(d for d in ALL_DTYPES if d.kind in _INTEGER_KINDS or d is bool),
    "real floating": (float32, float64),
    "complex floating": (complex64, complex128),
    "floating": (float32, float64, complex64, complex128),
    "real numeric": tuple(d for d in ALL_DTYPES if d.kind in _INTEGER_KINDS or d.kind == "real floating"),
    "numeric": tuple(d for d in ALL_DTYPES if d is not bool),
}


def as_dtype(value: Any) -> DType:
    """Return the nda dtype for ``value``: a DType, a name, a NumPy dtype or a scalar type.

    Names are nda's (``"float64"``) or NumPy's spellings of the same dtypes (``"f8"``,
    ``"<i4"``, ``"double"``), which Dask and other NumPy code pass around.
    """
    if value.__class__ is DType:
        return value
    try:
        if isinstance(value, str):
            found = DType._registry.get(value)
            if found is not None:
                return found
        found = _BY_NUMPY.get(np.dtype(value))
    except (TypeError, KeyError):
        found = None
    if found is None:
        names = ", ".join(d.name for d in ALL_DTYPES)
        raise TypeError(f"{value!r} is not a supported dtype; expected one of: {names}")
    return found


def from_numpy_dtype(dt: np.dtype) -> DType:
    """Map a NumPy dtype to the nda dtype, raising TypeError for unsupported ones."""
    found = _BY_NUMPY.get(dt)
    if found is None:
        names = ", ".join(d.name for d in ALL_DTYPES)
        raise TypeError(f"NumPy dtype {dt} has no nda equivalent; supported dtypes: {names}")
    return found


def python_scalar(value: np.generic) -> Any:
    """The Python scalar of a NumPy scalar (``np.float32(0.5)`` -> ``0.5``), exactly.

    NumPy scalars are accepted wherever Python scalars are and follow the same (weak)
    promotion rule, so they are converted here, once, on the way in. Kinds with no exact
    Python scalar (``np.longdouble``, ``np.datetime64``, strings) raise TypeError.
    """
    dt = value.dtype
    if dt in _BY_NUMPY or dt == _FLOAT16:
        return value.item()
    raise TypeError(
        f"NumPy scalar of type numpy.{type(value).__name__} has no nda equivalent; "
        f"nda takes bool, int, float and complex scalars (and NumPy scalars of the dtypes nda has)"
    )


_FLOAT16 = np.dtype(np.float16)

_PROMOTION: dict[tuple[DType, DType], DType] = {}


def promote(a: DType, b: DType) -> DType:
    """Result dtype of a binary operation on arrays of dtypes ``a`` and ``b`` (cached)."""
    try:
        return _PROMOTION[a, b]
    except KeyError:
        pass
    result = _BY_NUMPY[np.promote_types(a.numpy, b.numpy)]
    _PROMOTION[a, b] = result
    return result


_SCALAR_PROMOTION: dict[tuple[DType, type], DType] = {}


def promote_scalar(a: DType, scalar_type: type) -> DType:
    """Result dtype of an array of dtype ``a`` combined with a Python scalar type.

    A Python scalar is "weak": it takes the array's dtype when its kind fits
    (``float32 + 1.0 -> float32``) and otherwise lifts to the default dtype of its kind
    (``int32 + 1.5 -> float64``), as NumPy 2 does.
    """
    try:
        return _SCALAR_PROMOTION[a, scalar_type]
    except KeyError:
        pass
    if scalar_type is _builtin_bool:
        result = a
    elif scalar_type is int:
        result = a if a is not bool else default_int
    elif scalar_type is float:
        result = a if a.kind in _FLOAT_KINDS else default_float
    elif scalar_type is complex:
        if a is complex64 or a is complex128:
            result = a
        else:
            result = complex64 if a is float32 else default_complex
    else:
        raise TypeError(f"unsupported scalar type {scalar_type.__name__}")
    _SCALAR_PROMOTION[a, scalar_type] = result
    return result


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype that results from promoting all arguments (arrays, dtypes or scalars)."""
    dtypes: list[DType] = []
    scalars: list[type] = []
    for item in arrays_and_dtypes:
        if isinstance(item, np.generic):
            item = python_scalar(item)  # weak, like the Python scalar it holds
        dt = getattr(item, "dtype", None)
        if dt.__class__ is DType:
            dtypes.append(dt)
        elif item.__class__ in (int, float, complex, _builtin_bool):
            scalars.append(item.__class__)
        else:
            dtypes.append(as_dtype(item))
    if not dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    result = dtypes[0]
    for dt in dtypes[1:]:
        result = promote(result, dt)
    for st in scalars:
        result = promote_scalar(result, st)
    return result


_KIND_NAMES = {
    "bool": ("bool",),
    "signed integer": ("signed integer",),
    "unsigned integer": ("unsigned integer",),
    "integral": _INTEGER_KINDS,
    "real floating": ("real floating",),
    "complex floating": ("complex floating",),
    "numeric": _INTEGER_KINDS + _FLOAT_KINDS,
}


def isdtype(dtype: DType, kind: Any) -> _builtin_bool:
    """Array API ``isdtype``: whether ``dtype`` is of ``kind`` (a dtype, a kind name or a tuple)."""
    if dtype.__class__ is not DType:
        raise TypeError(f"isdtype expects an nda dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if kind.__class__ is DType:
        return dtype is kind
    if isinstance(kind, str):
        kinds = _KIND_NAMES.get(kind)
        if kinds is None:
            raise ValueError(f"unknown dtype kind {kind!r}; expected one of: {', '.join(_KIND_NAMES)}")
        return dtype.kind in kinds
    raise TypeError(f"kind must be a dtype, a kind name or a tuple of them, got {kind!r}")


def can_cast(from_: Any, to: DType) -> _builtin_bool:
    """Whether ``from_`` (an array or dtype) promotes to ``to`` without changing kind rules."""
    src = as_dtype(from_) if from_.__class__ is DType or not hasattr(from_, "dtype") else as_dtype(from_.dtype)
    return _builtin_bool(np.can_cast(src.numpy, as_dtype(to).numpy, casting="safe"))


def same_kind_castable(src: DType, dst: DType) -> _builtin_bool:
    return _builtin_bool(np.can_cast(src.numpy, dst.numpy, casting="same_kind"))
