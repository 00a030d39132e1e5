"""Guards: the Python values a traced op call received, frozen so that a later call can be compared.

Every Python value that reaches an nda op as a non-array argument (the scalar of ``lr * x``,
slice bounds, an axis, a shape, ``dtype=``, a NumPy array converted inside the function, the
items of a list given to ``asarray``) is visible at the invocation point where the tracer
records the call. :func:`freeze` turns the call's arguments into a *key*: nested tuples in
which every array is a :class:`~._graph.Slot` (which recorded array it is) and every other
value a leaf compared by type and value:

* ``float`` and ``complex`` by bit pattern (``-0.0`` is not ``0.0``; NaNs with other sign or
  payload differ), NumPy scalars by type and bytes, ``int``/``bool``/``str``/``bytes``/``None``
  /``...`` by type and value (``1``, ``1.0`` and ``True`` are three values);
* tuples, lists, dicts and slices by their items, recursively;
* NumPy arrays by dtype, shape and content (a private copy is what the graph then runs with:
  a write into the array after the call is not seen, as eager's ``asarray`` does not see it);
* nda's dtypes, devices and layouts, NumPy dtypes, classes and functions by identity or
  equality (they are immutable values).

Any other object cannot be compared between calls: :class:`Uncomparable` (the tracer ends
the graph there, and that signature runs eagerly).

At a later call :func:`match` walks a recorded key and the actual arguments together; arrays
are checked by the caller's ``bind(slot, array)`` (which array it must be: see
:mod:`._check`). Nothing else is frozen at a later call, so a call that matches costs one walk
of its arguments.

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

import enum
import struct
import types
from typing import Any, Callable

import numpy as np

from .._array import NDArray
from .._devices import _Interned
from .._dtypes import DType

__all__ = ["Slot", "Uncomparable", "freeze", "match", "match_call", "split", "describe", "private"]

_PACK = struct.Struct("<d").pack
_PLAIN = (int, bool, str, bytes, type(None), type(Ellipsis))
_IDENTITY = (type, types.FunctionType, types.BuiltinFunctionType, np.ufunc)


class Slot:
    """Marks an array in a recorded call: which of the graph's values (slots) it is."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __eq__(self, other: object) -> bool:
        return other.__class__ is Slot and other.index == self.index  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(("slot", self.index))

    def __repr__(self) -> str:
        return f"%{self.index}"


class Uncomparable(Exception):
    """A Python value that cannot be compared between calls (the message names its type)."""


class _Bytes:
    """A NumPy array's dtype, shape and content, compared without copying the other side."""

    __slots__ = ("dtype", "shape", "data")

    def __init__(self, array: np.ndarray) -> None:
        self.dtype, self.shape = array.dtype, array.shape
        self.data = np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()

    def same(self, other: np.ndarray) -> bool:
        if other.dtype != self.dtype or other.shape != self.shape:
            return False
        flat = np.ascontiguousarray(other).reshape(-1).view(np.uint8)
        return memoryview(flat) == memoryview(self.data)

    def __eq__(self, other: object) -> bool:
        return (
            other.__class__ is _Bytes and other.dtype == self.dtype and other.shape == self.shape and memoryview(other.data) == memoryview(self.data)
        )  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.dtype.str, self.shape))

    def __repr__(self) -> str:
        if self.data.size <= 8 * 16:
            values = np.frombuffer(self.data.tobytes(), dtype=self.dtype).reshape(self.shape)
            return f"np.{np.array_repr(values)}"
        return f"<a NumPy {self.dtype} array of shape {self.shape}, compared by content>"


def _leaf(value: Any) -> Any:
    """The comparable form of a non-container, non-array value (raises :class:`Uncomparable`)."""
    cls = value.__class__
    if cls is float:
        return (float, _PACK(value))
    if cls in _PLAIN:
        return (cls, value)
    if cls is complex:
        return (complex, _PACK(value.real), _PACK(value.imag))
    if isinstance(value, np.generic):
        if value.dtype.kind == "O":
            raise Uncomparable("a NumPy object scalar")
        return (cls, value.tobytes())
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise Uncomparable("a NumPy array of Python objects")
        return _Bytes(value)
    if isinstance(value, (_Interned, DType, np.dtype, enum.Enum)) or isinstance(value, _IDENTITY):
        return ("is", value)
    if cls is range:
        return (range, value.start, value.stop, value.step)
    raise Uncomparable(f"a {cls.__module__}.{cls.__qualname__}")


def freeze(value: Any, slot_of: Callable[[NDArray], Any]) -> Any:
    """The key of ``value`` (see the module docstring); arrays become ``slot_of(array)``."""
    cls = value.__class__
    if cls is NDArray:
        return slot_of(value)
    if cls is tuple or cls is list:
        return (cls, *(freeze(v, slot_of) for v in value))
    if cls is dict:
        return (dict, *((_leaf(k), freeze(v, slot_of)) for k, v in value.items()))
    if cls is slice:
        return (slice, freeze(value.start, slot_of), freeze(value.stop, slot_of), freeze(value.step, slot_of))
    return _leaf(value)


def private(value: Any) -> Any:
    """What the graph runs with for a recorded argument: containers rebuilt, NumPy arrays copied."""
    cls = value.__class__
    if cls is tuple or cls is list:
        return cls(private(v) for v in value)
    if cls is dict:
        return {k: private(v) for k, v in value.items()}
    if isinstance(value, np.ndarray) and cls is not np.ndarray:
        return np.array(value, copy=True, subok=False)
    if cls is np.ndarray:
        return value.copy()
    return value


def match(key: Any, value: Any, bind: Callable[[int, NDArray], bool]) -> bool:
    """Whether ``value`` is what ``key`` recorded; arrays are handed to ``bind(slot index, array)``."""
    cls = value.__class__
    if cls is NDArray:
        return key.__class__ is Slot and bind(key.index, value)
    if cls is float:
        return key.__class__ is tuple and key[0] is float and key[1] == _PACK(value)
    if cls is tuple or cls is list:
        if key.__class__ is not tuple or len(key) != len(value) + 1 or key[0] is not cls:
            return False
        for k, v in zip(key[1:], value):
            if not match(k, v, bind):
                return False
        return True
    if cls is dict:
        if key.__class__ is not tuple or key[0] is not dict or len(key) != len(value) + 1:
            return False
        for (kk, kv), (k, v) in zip(key[1:], value.items()):
            if not (_same_leaf(kk, k) and match(kv, v, bind)):
                return False
        return True
    if cls is slice:
        return (
            key.__class__ is tuple
            and key[0] is slice
            and match(key[1], value.start, bind)
            and match(key[2], value.stop, bind)
            and match(key[3], value.step, bind)
        )
    return _same_leaf(key, value)


def split(key: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A call's key (``freeze((args, kwargs))``) as (per positional argument, per keyword) keys."""
    _, args, kwargs = key
    return tuple(args[1:]), {k[1]: v for k, v in kwargs[1:]}


def match_call(
    args_key: tuple[Any, ...],
    kwargs_key: dict[str, Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    dynamic: tuple[str, ...],
    bind: Callable[[int, NDArray], bool],
) -> bool:
    """:func:`match` for a whole call (keys from :func:`split`); the ``dynamic`` keywords are not compared."""
    if len(args) != len(args_key) or len(kwargs) != len(kwargs_key):
        return False
    for k, v in zip(args_key, args):
        if v.__class__ is NDArray:
            if k.__class__ is not Slot or not bind(k.index, v):
                return False
        elif not match(k, v, bind):
            return False
    for name, v in kwargs.items():
        k = kwargs_key.get(name, _MISSING)
        if k is _MISSING:
            return False
        if name in dynamic:
            continue
        if v.__class__ is NDArray:
            if k.__class__ is not Slot or not bind(k.index, v):
                return False
        elif not match(k, v, bind):
            return False
    return True


_MISSING = object()


def _same_leaf(key: Any, value: Any) -> bool:
    if key.__class__ is _Bytes:
        return isinstance(value, np.ndarray) and key.same(value)
    try:
        leaf = _leaf(value)
    except Uncomparable:
        return False
    if leaf.__class__ is tuple and leaf[0] == "is":
        return key.__class__ is tuple and key[0] == "is" and (key[1] is leaf[1] or (key[1].__class__ is leaf[1].__class__ and key[1] == leaf[1]))
    return bool(key == leaf)


def describe(key: Any) -> str:
    """A recorded key as Python-like text (``explain``): ``%0`` for arrays, values as given."""
    if key.__class__ is Slot or key.__class__ is _Bytes:
        return repr(key)
    if key.__class__ is not tuple or not key:
        return repr(key)
    head = key[0]
    if head is float:
        return repr(struct.unpack("<d", key[1])[0])
    if head is complex:
        return repr(complex(struct.unpack("<d", key[1])[0], struct.unpack("<d", key[2])[0]))
    if head is tuple or head is list:
        items = ", ".join(describe(k) for k in key[1:])
        return f"({items}{',' if len(key) == 2 else ''})" if head is tuple else f"[{items}]"
    if head is dict:
        return "{" + ", ".join(f"{describe(k)}: {describe(v)}" for k, v in key[1:]) + "}"
    if head is slice:
        return f"slice({describe(key[1])}, {describe(key[2])}, {describe(key[3])})"
    if head is range:
        return f"range({key[1]}, {key[2]}, {key[3]})"
    if head == "is":
        return repr(key[1])
    if isinstance(head, type) and issubclass(head, np.generic):
        return repr(np.frombuffer(key[1], dtype=head)[0])
    return repr(key[1]) if len(key) == 2 else repr(key)
