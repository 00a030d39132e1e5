"""Devices, layouts, kernel keys and the per-array metadata record.

All four are small frozen value types with ``__slots__``. They are *interned*: building
``Device("cpu", 0)`` twice returns the same object. Interning makes equality identity and
hashing C-fast, which matters because these objects are the parts of every dispatch key
looked up on the hot path.

``ArrayMeta`` bundles (device, dtype, layout) of an array together with its kernel key
``(device type, dtype, layout)``; an NDArray carries one reference to it instead of three
fields, so creating an array on the hot path stores fewer attributes.

Layer: values (README, "Architecture").
"""

from __future__ import annotations

import contextvars
import re
import threading
from typing import Any

from ._dtypes import DType

__all__ = ["Device", "Layout", "KernelKey", "ArrayMeta", "as_device", "default_device"]

_DEVICE_RE = re.compile(r"^([a-z][a-z0-9_]*)(?::(\d+))?$")


class _Interned:
    """Base for immutable interned value types (instances are created only once)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name!r}")

    @classmethod
    def _intern(cls, registry_key: Any, **fields: Any) -> Any:
        """The instance for ``registry_key``, created with ``fields`` the first time it is asked for."""
        existing = cls._registry.get(registry_key)  # type: ignore[attr-defined]
        if existing is not None:
            return existing
        self = object.__new__(cls)
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        cls._registry[registry_key] = self  # type: ignore[attr-defined]
        return self

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> Any:
        return self


class Device(_Interned):
    """A device: a type (``"cpu"``, ``"cuda"``, ``"sim"``, …) and an index.

    ``Device("cuda", 1)``, ``Device("cuda:1")`` and ``as_device("cuda:1")`` are the same
    object. A device is also a context manager that makes it the default device for
    array creation::

        with nda.Device("sim", 0):
            x = nda.zeros(3)      # lives on sim:0
    """

    __slots__ = ("type", "index")
    _registry: dict[tuple[str, int], Device] = {}

    type: str
    index: int

    def __new__(cls, type: str, index: int | None = None) -> Device:  # noqa: A002
        if not isinstance(type, str):
            raise TypeError(f"device type must be a string such as 'cpu', got {type!r}")
        match = _DEVICE_RE.match(type)
        if match is None:
            raise ValueError(f"invalid device {type!r}; expected 'type' or 'type:index', e.g. 'cpu' or 'cuda:0'")
        dev_type, dev_index = match.group(1), match.group(2)
        if dev_index is not None:
            if index is not None and index != int(dev_index):
                raise ValueError(f"device {type!r} given together with a different index {index}")
            index = int(dev_index)
        if index is None:
            index = 0
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"device index must be a non-negative int, got {index!r}")
        existing = cls._registry.get((dev_type, index))
        if existing is not None:
            return existing
        self = object.__new__(cls)
        object.__setattr__(self, "type", dev_type)
        object.__setattr__(self, "index", index)
        cls._registry[dev_type, index] = self
        return self

    def __repr__(self) -> str:
        return f"Device({self.type!r}, {self.index})"

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Device, (self.type, self.index))

    def __enter__(self) -> Device:
        # Tokens live per thread (and per context), so nested and concurrent ``with``
        # blocks on the same interned Device never pop each other's token.
        _token_stack().append(_default_device.set(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        _default_device.reset(_token_stack().pop())


class Layout(_Interned):
    """A storage layout: ``strided`` (dense), ``csr`` or ``row_sparse``; backends may add more."""

    __slots__ = ("name",)
    _registry: dict[str, Layout] = {}

    name: str

    def __new__(cls, name: str) -> Layout:
        existing = cls._registry.get(name)
        if existing is not None:
            return existing
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"layout name must be an identifier such as 'strided', got {name!r}")
        self = object.__new__(cls)
        object.__setattr__(self, "name", name)
        cls._registry[name] = self
        return self

    def __repr__(self) -> str:
        return f"Layout({self.name!r})"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[Any, ...]:
        return (Layout, (self.name,))


strided = Layout("strided")


def as_layout(value: Layout | str) -> Layout:
    if value.__class__ is Layout:
        return value  # type: ignore[return-value]
    if isinstance(value, str) and value in Layout._registry:
        return Layout._registry[value]
    known = ", ".join(Layout._registry)
    raise ValueError(f"unknown layout {value!r}; known layouts: {known}")


class KernelKey(_Interned):
    """The dispatch key of a kernel: ``(device_type, dtype, layout)``."""

    __slots__ = ("device_type", "dtype", "layout")
    _registry: dict[tuple[str, DType, Layout], KernelKey] = {}

    device_type: str
    dtype: DType
    layout: Layout

    def __new__(cls, device_type: str, dtype: DType, layout: Layout = strided) -> KernelKey:
        return cls._intern((device_type, dtype, layout), device_type=device_type, dtype=dtype, layout=layout)  # type: ignore[no-any-return]

    def __iter__(self) -> Any:
        return iter((self.device_type, self.dtype, self.layout))

    def __repr__(self) -> str:
        return f"({self.device_type}, {self.dtype.name}, {self.layout.name})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (KernelKey, (self.device_type, self.dtype, self.layout))


class ArrayMeta(_Interned):
    """Where an array lives and what it holds: (device, dtype, layout) plus its kernel key."""

    __slots__ = ("device", "dtype", "layout", "key")
    _registry: dict[tuple[Device, DType, Layout], ArrayMeta] = {}

    device: Device
    dtype: DType
    layout: Layout
    key: KernelKey

    def __new__(cls, device: Device, dtype: DType, layout: Layout = strided) -> ArrayMeta:
        existing = cls._registry.get((device, dtype, layout))
        if existing is not None:
            return existing
        key = KernelKey(device.type, dtype, layout)
        return cls._intern((device, dtype, layout), device=device, dtype=dtype, layout=layout, key=key)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"ArrayMeta({self.device}, {self.dtype.name}, {self.layout.name})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ArrayMeta, (self.device, self.dtype, self.layout))


_tokens = threading.local()


def _token_stack() -> list[contextvars.Token[Device]]:
    stack = getattr(_tokens, "stack", None)
    if stack is None:
        stack = _tokens.stack = []
    return stack


cpu = Device("cpu", 0)
_default_device: contextvars.ContextVar[Device] = contextvars.ContextVar("nda_default_device", default=cpu)


def default_device() -> Device:
    """The device new arrays are created on (``cpu:0`` unless a ``with Device(...)`` is active)."""
    return _default_device.get()


def as_device(value: Any) -> Device:
    """Accept a Device, a ``"type[:index]"`` string or None (the default device)."""
    if value.__class__ is Device:
        return value  # type: ignore[no-any-return]
    if value is None:
        return _default_device.get()
    if isinstance(value, str):
        return Device(value)
    raise TypeError(f"device must be an nda.Device, a string such as 'cpu' or 'cuda:0', or None; got {value!r}")
