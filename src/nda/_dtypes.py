"""Data types, dtype categories and type promotion.

Every Array API dtype is one interned :class:`DType` instance. Interning means equality
between nda dtypes is identity, so a ``DType`` hashes at C speed (identity) and compares
by identity first when it sits inside dispatch keys (dicts and tuples never call
``__eq__`` for the same object).

To NumPy-minded code (xarray, Dask, pandas, matplotlib, NumPy's own functions) a ``DType``
is the NumPy dtype of the same name, so that code written for ``np.dtype`` works unchanged
on nda arrays:

* it carries ``np.dtype``'s attributes with NumPy's values: ``kind`` is NumPy's one-letter
  kind (``"f"``, tested as ``kind in "uifc"``), ``char``, ``str``, ``num``, ``type``,
  ``byteorder``, ``alignment``, ``descr``, ``names``/``fields`` (None), ``shape`` (``()``),
  ``base`` (itself), ``subdtype``, ``hasobject``, ``isbuiltin``, ``isnative``, ``metadata``;
  the Array API category (``"real floating"``, what :func:`isdtype` names) is ``category``;
* ``isinstance(nda.float64, np.dtype)`` is True: ``__class__`` answers NumPy's dtype class
  (``np.dtypes.Float64DType``), which is what ``isinstance`` consults after the real type.
  xarray fills missing values only for ``isinstance(dtype, np.dtype)``, and ``np.isdtype``
  reads ``dtype.type`` of such an object. ``type(nda.float64)`` stays ``nda.DType`` and
  ``isinstance(nda.float64, nda.DType)`` is True. ``isinstance(d, C)`` for any other class
  ``C`` reads that property (a Python call), so nda's own checks, and any code on the per-op
  path, test ``type(x) is DType`` first;
* ``__eq__`` answers as NumPy's dtype does: True for nda's dtype itself, for NumPy's dtype,
  scalar type or Python type of the same name (``nda.bool == bool``, ``nda.float64 ==
  np.float64``) and for NumPy's spellings (``"float64"``, ``"f8"``); False for anything else,
  NumPy's abstract types included (``nda.float64 == np.floating`` is False, as in NumPy 2,
  where converting ``np.floating`` to a dtype raises). One deliberate difference: ``None`` is
  not ``float64`` (the default float of nda depends on the device). Hashes stay identity, as
  NumPy's ``np.dtype(bool)`` and ``bool`` hash differently.

In nda 0.1.0 ``kind`` was the Array API category name. Code that still compares ``kind``
with a category name (``dt.kind == "real floating"``, ``dt.kind in ("signed integer",
"unsigned integer")``) gets the old answer with a ``DeprecationWarning`` (see
:class:`_Kind`); lookups by hash (``{"real floating": ...}[dt.kind]``) do not.

Promotion follows the Array API lattice inside a category (bool, signed, unsigned, real
floating, complex floating) and NumPy's rules across categories (``int32 + float32 ->
float64``), which is what NumPy users expect and what the standard leaves to the
implementation. Results are cached per pair, so promotion on the hot path is one dict
lookup.

Layer: values (README, "Architecture").
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any, Union

import numpy as np

__all__ = [
    "DType",
    "DTypeLike",
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

#: The Array API categories of the dtypes, by NumPy's one-letter kind.
_CATEGORY_OF_KIND = {
    "b": "bool",
    "i": "signed integer",
    "u": "unsigned integer",
    "f": "real floating",
    "c": "complex floating",
}
_CATEGORY_NAMES = frozenset(_CATEGORY_OF_KIND.values())


class _Kind(str):
    """NumPy's one-letter kind (``"f"``) that still answers comparisons with a category name.

    ``DType.kind`` used to be the Array API category name. A plugin or program written
    against that compares ``dt.kind == "real floating"``; with a plain ``"f"`` that would be
    silently False. This string is ``"f"`` everywhere (``in "uifc"``, hashing, printing,
    ``==`` with one-letter codes), and an equality test against one of the five category
    names answers by the dtype's category with a ``DeprecationWarning`` that says to use
    ``DType.category``. Lookups by hash with a category name (dict keys, sets) see ``"f"``.
    """

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> builtins.bool:
        if other.__class__ is str and other in _CATEGORY_NAMES:
            _warn_kind(other)  # type: ignore[arg-type]
            return _CATEGORY_OF_KIND[str(self)] == other
        return str.__eq__(self, other)  # type: ignore[no-any-return]

    def __ne__(self, other: object) -> builtins.bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal


def _warn_kind(name: str) -> None:
    warnings.warn(
        f"comparing DType.kind with {name!r}: DType.kind is NumPy's one-letter kind ('b', 'i', 'u', 'f', 'c') "
        f"(it was the category name in nda 0.1.0); compare DType.category (the Array API category name) instead",
        DeprecationWarning,
        stacklevel=3,
    )


class DType:
    """An array element type: one interned instance per Array API dtype.

    ``category`` is the Array API category: one of ``"bool"``, ``"signed integer"``,
    ``"unsigned integer"``, ``"real floating"``, ``"complex floating"`` (what
    :func:`nda.isdtype` takes). ``itemsize`` is in bytes. The other attributes are NumPy's
    dtype's, with NumPy's values (``kind`` is NumPy's one-letter kind, ``"f"`` for
    float64); see the module docstring for how a ``DType`` stands in for ``np.dtype``.
    """

    __slots__ = ("name", "category", "kind", "itemsize", "numpy", "type", "char", "str", "num", "alignment", "byteorder")
    _registry: dict[builtins.str, DType] = {}

    name: builtins.str
    category: builtins.str
    kind: builtins.str
    itemsize: int
    numpy: np.dtype
    type: builtins.type
    char: builtins.str
    str: builtins.str
    num: int
    alignment: int
    byteorder: builtins.str

    def __new__(cls, name: builtins.str, category: builtins.str, itemsize: int) -> DType:
        existing = cls._registry.get(name)
        if existing is not None:
            return existing
        self = object.__new__(cls)
        npd = np.dtype(name)
        assert _CATEGORY_OF_KIND[npd.kind] == category and npd.itemsize == itemsize, (name, category, itemsize)
        for attr, value in (
            ("name", name),
            ("category", category),
            ("kind", _Kind(npd.kind)),
            ("itemsize", itemsize),
            ("numpy", npd),
            ("type", npd.type),
            ("char", npd.char),
            ("str", npd.str),
            ("num", npd.num),
            ("alignment", npd.alignment),
            ("byteorder", npd.byteorder),
        ):
            object.__setattr__(self, attr, value)
        cls._registry[name] = self
        return self

    def __setattr__(self, name: builtins.str, value: Any) -> None:
        raise AttributeError(f"DType is immutable; cannot set {name!r}")

    def __repr__(self) -> builtins.str:
        return f"nda.{self.name}"

    def __str__(self) -> builtins.str:
        return self.name

    @property  # type: ignore[misc]
    def __class__(self) -> builtins.type:  # noqa: D105
        # What isinstance() consults after the real type: NumPy's dtype class, so that
        # ``isinstance(nda.float64, np.dtype)`` holds (module docstring). type(self) is DType.
        return builtins.type(self.numpy)

    def __eq__(self, other: object) -> builtins.bool:
        # Identity between nda dtypes (interned). Otherwise NumPy's answer for its dtype of
        # the same name: NumPy's dtypes, scalar types, Python types and NumPy's spellings
        # ("f8") that convert to it. NumPy's abstract types (np.floating, np.generic) do not
        # convert (NumPy 2 raises); they are not equal, as in NumPy.
        if other is self:
            return True
        if builtins.type(other) is DType:
            return False
        if isinstance(other, np.dtype):
            return other == self.numpy  # type: ignore[no-any-return]
        if isinstance(other, (builtins.type, builtins.str, bytes)):
            try:
                return np.dtype(other) == self.numpy  # type: ignore[no-any-return, arg-type]
            except (TypeError, ValueError, SyntaxError):  # np.floating, "nonsense", object types NumPy refuses
                return False
        return False

    def __ne__(self, other: object) -> builtins.bool:
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

    # NumPy's dtype attributes that describe structured, subarray or object dtypes: an nda
    # dtype is none of these, and answers as NumPy's plain numeric dtypes do.

    @property
    def descr(self) -> list[tuple[builtins.str, builtins.str]]:
        """NumPy's array-interface description, ``[("", "<f8")]``."""
        return [("", self.str)]

    @property
    def base(self) -> DType:
        """The element dtype of a subarray dtype: the dtype itself (nda has no subarray dtypes)."""
        return self

    @property
    def shape(self) -> tuple[int, ...]:
        """The subarray shape: ``()``."""
        return ()

    @property
    def ndim(self) -> int:
        """The number of subarray dimensions: 0."""
        return 0

    @property
    def subdtype(self) -> None:
        """``(base, shape)`` for a subarray dtype; None, as for NumPy's numeric dtypes."""
        return None

    @property
    def names(self) -> None:
        """Field names of a structured dtype; None."""
        return None

    @property
    def fields(self) -> None:
        """Fields of a structured dtype; None."""
        return None

    @property
    def metadata(self) -> None:
        """NumPy's per-dtype metadata mapping; None."""
        return None

    @property
    def hasobject(self) -> builtins.bool:
        """Whether the dtype holds Python objects: False."""
        return False

    @property
    def flags(self) -> int:
        """NumPy's dtype flags (0 for its numeric dtypes)."""
        return self.numpy.flags  # type: ignore[no-any-return]

    @property
    def isbuiltin(self) -> int:
        """1: a dtype NumPy builds in (nda's are all NumPy's numeric dtypes)."""
        return 1

    @property
    def isnative(self) -> builtins.bool:
        """Whether the byte order is the machine's: True (nda keeps native byte order only)."""
        return True

    @property
    def isalignedstruct(self) -> builtins.bool:
        """Whether a structured dtype is C-aligned: False (not a structured dtype)."""
        return False

    def newbyteorder(self, new_order: builtins.str = "S", /) -> np.dtype:
        """NumPy's dtype of this element type in another byte order (a NumPy dtype: nda arrays are native)."""
        return self.numpy.newbyteorder(new_order)  # type: ignore[arg-type]


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

_INTEGER_CATEGORIES = ("signed integer", "unsigned integer")
_FLOAT_CATEGORIES = ("real floating", "complex floating")

#: The dtype categories the op catalog speaks in (names follow the Array API spec).
CATEGORIES: dict[str, tuple[DType, ...]] = {
    "any": ALL_DTYPES,
    "bool": (bool,),
    "integer": tuple(d for d in ALL_DTYPES if d.category in _INTEGER_CATEGORIES),
    "integer or boolean": tuple(d for d in ALL_DTYPES if d.category in _INTEGER_CATEGORIES or d is bool),
    "real floating": (float32, float64),
    "complex floating": (complex64, complex128),
    "floating": (float32, float64, complex64, complex128),
    "real numeric": tuple(d for d in ALL_DTYPES if d.category in _INTEGER_CATEGORIES or d.category == "real floating"),
    "numeric": tuple(d for d in ALL_DTYPES if d is not bool),
}


#: What nda takes where it asks for a dtype (:func:`as_dtype`): an nda dtype (``nda.float32``),
#: a name (``"float32"``, NumPy's ``"f4"``), a NumPy dtype (``np.dtype("int16")``) or a scalar
#: type (``np.int64``, ``float``). The public signatures and the typed stubs annotate ``dtype``
#: parameters with it (``nda._signatures``), so a type checker accepts what runs.
DTypeLike = Union[DType, str, type, "np.dtype[Any]"]


def as_dtype(value: Any) -> DType:
    """Return the nda dtype for ``value``: a DType, a name, a NumPy dtype or a scalar type.

    Names are nda's (``"float64"``) or NumPy's spellings of the same dtypes (``"f8"``,
    ``"<i4"``, ``"double"``), which Dask and other NumPy code pass around.
    """
    if type(value) is DType:
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
        why = "; datetimes and timedeltas stay in NumPy (nda, as CuPy, has no datetime64 or timedelta64)" if np.dtype(dt).kind in "mM" else ""
        raise TypeError(f"NumPy dtype {dt} has no nda equivalent; supported dtypes: {names}{why}")
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
        result = a if a.category in _FLOAT_CATEGORIES else default_float
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
        if type(item) is DType:  # first: isinstance() on a DType reads its __class__ property
            dtypes.append(item)
            continue
        if isinstance(item, np.generic):
            item = python_scalar(item)  # weak, like the Python scalar it holds
        dt = getattr(item, "dtype", None)
        if type(dt) is DType:
            dtypes.append(dt)
        elif item.__class__ in (int, float, complex, _builtin_bool):
            scalars.append(item.__class__)
        else:
            dtypes.append(as_dtype(item))
    if not dtypes:
        if scalars:  # the standard asks for one array or dtype; a scalar's dtype is the device's default
            raise TypeError(
                "result_type needs at least one array or dtype: Python scalars alone have no dtype in nda (their default dtype depends on the device)"
            )
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
    "integral": _INTEGER_CATEGORIES,
    "real floating": ("real floating",),
    "complex floating": ("complex floating",),
    "numeric": _INTEGER_CATEGORIES + _FLOAT_CATEGORIES,
}


def isdtype(dtype: DType, kind: Any) -> _builtin_bool:
    """Array API ``isdtype``: whether ``dtype`` is of ``kind`` (a dtype, a kind name or a tuple)."""
    if type(dtype) is not DType:
        raise TypeError(f"isdtype expects an nda dtype, got {dtype!r}")
    if type(kind) is DType:
        return dtype is kind
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        kinds = _KIND_NAMES.get(kind)
        if kinds is None:
            raise ValueError(f"unknown dtype kind {kind!r}; expected one of: {', '.join(_KIND_NAMES)}")
        return dtype.category in kinds
    raise TypeError(f"kind must be a dtype, a kind name or a tuple of them, got {kind!r}")


def can_cast(from_: Any, to: DType) -> _builtin_bool:
    """Whether ``from_`` (an array or dtype) promotes to ``to`` without changing kind rules."""
    src = as_dtype(from_) if type(from_) is DType or not hasattr(from_, "dtype") else as_dtype(from_.dtype)
    return _builtin_bool(np.can_cast(src.numpy, as_dtype(to).numpy, casting="safe"))


def same_kind_castable(src: DType, dst: DType) -> _builtin_bool:
    return _builtin_bool(np.can_cast(src.numpy, dst.numpy, casting="same_kind"))
