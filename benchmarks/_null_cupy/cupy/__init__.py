"""A null CuPy: just enough of CuPy's API for nda-cuda to register and run, at (almost) no cost.

``benchmarks/cuda_host.py`` puts ``benchmarks/_null_cupy`` first on ``sys.path`` in a process of
its own; nda-cuda's backend class then imports this package as ``cupy`` and runs its real code
(streams, markers, the generated element-wise kernels, the small reductions) over it. Every
call here is as cheap as Python allows, so the time an op takes is nda's and nda-cuda's own
host work. It is deliberately fast and dumb, unlike the test suite's faithful CuPy model
(``tests/_cupy_quirks.py``, ``tests/_cupy_device.py``):

* :class:`ndarray` is a Python object with CuPy's attributes (``shape``, ``dtype``, ``strides``,
  ``size``, ``itemsize``, ``ndim``, ``_c_contiguous``, ``data.ptr``, ``data.device_id``, ``base``)
  stored in slots, and ``flags`` made per access as CuPy makes it; its "device memory" is a NumPy array made (zeroed) only when something reads it.
  Fresh arrays share one 256-byte-aligned pointer object; views get one of their own.
* :func:`empty` and :func:`sum` compute nothing (the two calls nda-cuda's benchmarked paths
  make); generated kernels launch a function that does nothing (``cupy.cuda.function``).
* Everything else NumPy has is served by :func:`__getattr__`: NumPy on the host buffers, results
  wrapped as arrays again. Slow, correct enough for registration and the host fallback, and
  never on the timed paths (the benchmark checks which paths its ops took).
* One device, streams and events that do nothing (:mod:`cupy.cuda`); the memory pool holds
  nothing; NVRTC compiles nothing; ``cupyx.scipy`` does not exist (csr is unavailable).

Not a model of CuPy's semantics: values of generated kernels are not computed, there is no
thread-local current stream, and implicit host conversion raises as in CuPy.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as _np

from . import cuda  # noqa: F401
from .cuda.memory import POOL as _POOL

__version__ = "0.0.0+null"

_new = object.__new__
_HOST_REFUSED = "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."


class _Pointer:
    __slots__ = ("ptr", "device_id")

    def __init__(self, ptr: int, device_id: int = 0) -> None:
        self.ptr = ptr
        self.device_id = device_id


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, c: bool, f: bool, own: bool) -> None:
        self.c_contiguous = c
        self.f_contiguous = f
        self.owndata = own

    def __getitem__(self, key: str) -> bool:
        return bool({"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous, "OWNDATA": self.owndata}[key])


class _Dev:
    __slots__ = ("id",)

    def __init__(self) -> None:
        self.id = 0


_FRESH = _Pointer(1 << 40)  # every fresh array's pointer (aligned; nda-cuda reads alignment and device)
_DEVICE = _Dev()
_DTYPES: dict[Any, _np.dtype] = {}
_LAYOUT: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # (shape, dtype) -> (strides, size, ndim, flags)


def _dtype(dtype: Any) -> _np.dtype:
    hit = _DTYPES.get(dtype)
    if hit is None:
        hit = _DTYPES[dtype] = _np.dtype(dtype)
    return hit


class ndarray:  # noqa: N801 - CuPy's name
    """A device array of the null CuPy (see the module docstring)."""

    __slots__ = ("shape", "dtype", "strides", "size", "itemsize", "ndim", "_c_contiguous", "_f_contiguous", "data", "base", "_h", "__weakref__")

    def __init__(self, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None, order: str = "C") -> None:
        _init(self, _np.zeros(shape, dtype=dtype), None)

    # ---------------------------------------------------------------- memory
    def _host(self) -> _np.ndarray:
        h = self._h
        if h is None:
            h = self._h = _np.zeros(self.shape, self.dtype)
        return h

    @property
    def flags(self) -> _Flags:
        """A new object per access, as CuPy's (``_c_contiguous`` is the cheap attribute)."""
        return _Flags(self._c_contiguous, self._f_contiguous, self.base is None)

    @property
    def device(self) -> _Dev:
        return _DEVICE

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def get(self, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True) -> _np.ndarray:
        h = self._h
        if h is None:
            if out is None:
                return _np.zeros(self.shape, self.dtype)
            h = self._host()
        if out is not None:
            out[...] = h
            return out  # type: ignore[no-any-return]
        return h.copy()

    def set(self, arr: Any, stream: Any = None) -> None:
        self._host()[...] = arr

    def __array__(self, dtype: Any = None, copy: Any = None) -> _np.ndarray:
        raise TypeError(_HOST_REFUSED)

    def __float__(self) -> float:
        return float(self._host())

    def __int__(self) -> int:
        return int(self._host())

    def __complex__(self) -> complex:
        return complex(self._host())

    def __bool__(self) -> bool:
        return bool(self._host())

    def __index__(self) -> int:
        return self._host().__index__()  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return len(self._host())

    def __iter__(self) -> Any:
        return iter([self[i] for i in range(len(self))])

    def __repr__(self) -> str:
        return f"null_cupy.{self._host()!r}"

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self._host()[_unwrap(key)], self)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._host()[_unwrap(key)] = _unwrap(value)

    def __getattr__(self, name: str) -> Any:
        """Every other attribute or method: NumPy's, on the host buffer, results wrapped."""
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._host(), name)
        if callable(value):
            return lambda *args, **kwargs: _wrap(value(*_unwrap(args), **_unwrap(kwargs)), self)
        return _wrap(value, self)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)


def _init(a: ndarray, h: _np.ndarray, base: Any) -> ndarray:
    a.shape = h.shape
    a.dtype = h.dtype
    a.strides = h.strides
    a.size = h.size
    a.itemsize = h.itemsize
    a.ndim = h.ndim
    a.base = base
    a._h = h
    a._c_contiguous = bool(h.flags.c_contiguous)
    a._f_contiguous = bool(h.flags.f_contiguous)
    if base is None:
        a.data = _FRESH
    else:
        root = base._host()
        a.data = _Pointer(base.data.ptr + (h.__array_interface__["data"][0] - root.__array_interface__["data"][0]))
    return a


def _wrap(value: Any, source: Any = None) -> Any:
    """A NumPy result as null-CuPy arrays (a view of ``source``'s memory when it is one)."""
    if isinstance(value, _np.ndarray):
        base = None
        if source is not None:
            root = source if source.base is None else source.base
            if _np.may_share_memory(value, root._host()):
                base = root
        return _init(_new(ndarray), value, base)
    if isinstance(value, _np.generic):  # CuPy returns 0-d arrays where NumPy returns scalars
        return _init(_new(ndarray), _np.asarray(value), None)
    if value.__class__ in (tuple, list):
        return value.__class__(_wrap(v, source) for v in value)
    return value


def _unwrap(value: Any) -> Any:
    if value.__class__ is ndarray:
        return value._host()
    if value.__class__ in (tuple, list):
        return value.__class__(_unwrap(v) for v in value)
    if value.__class__ is dict:
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def _binary(name: str) -> Callable[..., Any]:
    def op(self: ndarray, other: Any) -> Any:
        if other.__class__ is not ndarray and not isinstance(other, (int, float, complex, bool, _np.generic)):
            return NotImplemented
        return _wrap(getattr(self._host(), name)(_unwrap(other)), self if name.startswith("__i") else None)

    op.__name__ = name
    return op


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift", "matmul"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        setattr(ndarray, _form.format(_name), _binary(_form.format(_name)))
for _name in ("lt", "le", "eq", "ne", "gt", "ge"):
    setattr(ndarray, f"__{_name}__", _binary(f"__{_name}__"))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(ndarray, f"__{_name}__", (lambda n: lambda self: _wrap(getattr(self._host(), n)()))(f"__{_name}__"))
ndarray.__hash__ = None  # type: ignore[assignment]


# ---------------------------------------------------------------- the fast functions (the timed paths)


def empty(shape: Any, dtype: Any = float, order: str = "C") -> ndarray:
    """A new array; its memory is made only when read (the hot path: a few slot stores)."""
    if shape.__class__ is not tuple:
        shape = (shape,) if shape.__class__ is int else tuple(shape)
    key = (shape, dtype)
    layout = _LAYOUT.get(key)
    if layout is None:
        h = _np.empty(shape, dtype)
        if len(_LAYOUT) > 4096:
            _LAYOUT.clear()
        layout = _LAYOUT[key] = (h.dtype, h.strides, h.size, h.itemsize, h.ndim, True, h.ndim < 2)
    a = _new(ndarray)
    a.shape = shape
    a.dtype, a.strides, a.size, a.itemsize, a.ndim, a._c_contiguous, a._f_contiguous = layout
    a.data = _FRESH
    a.base = None
    a._h = None
    return a


def sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    """``cupy.sum``: computed on the host for other arguments; a full sum of an array computes
    nothing (a new 0-d array of the result dtype: the launch nda-cuda's small path makes)."""
    if axis is None and dtype is None and out is None and not keepdims and a.__class__ is ndarray:
        kind = a.dtype.kind
        return empty((), _INT if kind in "biu" else a.dtype)
    return _wrap(_np.sum(_unwrap(a), axis=axis, dtype=dtype, out=out, keepdims=keepdims))


_INT = _np.dtype(_np.int64)


# ---------------------------------------------------------------- creation and host transfer


def array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K", subok: bool = False, ndmin: int = 0, blocking: bool = False) -> ndarray:
    return _init(_new(ndarray), _np.array(_unwrap(obj), dtype=dtype, copy=True, order="C" if order == "K" else order, ndmin=ndmin), None)


def asarray(a: Any, dtype: Any = None, order: Any = None, blocking: bool = False) -> ndarray:
    if a.__class__ is ndarray and (dtype is None or _dtype(dtype) == a.dtype):
        return a
    return array(a, dtype=dtype)


def ascontiguousarray(a: Any, dtype: Any = None) -> ndarray:
    if a.__class__ is ndarray and a.flags.c_contiguous and (dtype is None or _dtype(dtype) == a.dtype):
        return a
    return array(a, dtype=dtype, order="C")


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True) -> Any:
    return a.get(out=out) if a.__class__ is ndarray else _np.asarray(a)


def may_share_memory(a: Any, b: Any, max_work: Any = None) -> bool:
    ra = a if a.base is None else a.base
    rb = b if b.base is None else b.base
    return ra is rb and a.size > 0 and b.size > 0


shares_memory = may_share_memory


def get_default_memory_pool() -> Any:
    return _POOL


def get_default_pinned_memory_pool() -> Any:
    return _POOL


def get_array_module(*args: Any) -> Any:
    import sys

    return sys.modules[__name__]


class RawModule:
    """A compiled module (nda-cuda's Philox kernels): its functions launch nothing."""

    def __init__(self, code: str = "", options: Any = (), **kwargs: Any) -> None:
        pass

    def get_function(self, name: str) -> Any:
        from .cuda.function import _launch

        return _launch


class ElementwiseKernel:
    """A fused kernel (nda-cuda's hybridize partitioner): launches nothing, returns new arrays."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel", **kwargs: Any) -> None:
        self.nout = len([p for p in out_params.split(",") if p.strip()])
        self.out_types = [p.split()[0] for p in out_params.split(",") if p.strip()]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        shape = _np.broadcast_shapes(*[a.shape for a in args if a.__class__ is ndarray])
        dtype = next(a.dtype for a in args if a.__class__ is ndarray)
        outs = tuple(empty(shape, dtype) for _ in range(self.nout))
        return outs[0] if self.nout == 1 else outs


# ---------------------------------------------------------------- everything else: NumPy on the host buffers


class _HostUfunc:
    """A NumPy ufunc over null-CuPy arrays (no signature, as CuPy's ufuncs have none)."""

    def __init__(self, ufunc: Any) -> None:
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        self.nin, self.nout = ufunc.nin, ufunc.nout

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _wrap(self._ufunc(*_unwrap(args), **_unwrap(kwargs)))

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._ufunc, name)
        return (lambda *a, **k: _wrap(method(*_unwrap(a), **_unwrap(k)))) if callable(method) else method


def _host_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        sources = [a for a in args if a.__class__ is ndarray]
        return _wrap(fn(*_unwrap(args), **_unwrap(kwargs)), sources[0] if sources else None)

    call.__name__ = call.__qualname__ = getattr(fn, "__name__", "function")
    call.__wrapped__ = fn  # type: ignore[attr-defined]  (inspect.signature: NumPy's parameters)
    return call


class _Namespace:
    """``cupy.linalg``, ``cupy.fft``, ``cupy.random``: NumPy's, over the host buffers."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self.__name__ = f"cupy.{module.__name__.rpartition('.')[2]}"

    def __getattr__(self, name: str) -> Any:
        value = _served(getattr(self._module, name))
        setattr(self, name, value)
        return value


def _served(value: Any) -> Any:
    if isinstance(value, _np.ufunc):
        return _HostUfunc(value)
    if isinstance(value, type) or not callable(value):
        return value
    return _host_function(value)


_SUBMODULES = {"linalg": _np.linalg, "fft": _np.fft, "random": _np.random}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value: Any = _Namespace(_SUBMODULES[name])
    elif name.startswith("_") or not hasattr(_np, name):
        raise AttributeError(f"module 'cupy' (null) has no attribute {name!r}")
    else:
        value = _served(getattr(_np, name))
    globals()[name] = value
    return value


#: ``from cupy import *`` (array-api-compat's cupy namespace) sees NumPy's public names.
__all__ = sorted(
    {
        n
        for n in dir(_np)
        if not n.startswith("_")
        and n
        not in ("ndarray", "char", "rec", "ma", "testing", "typing", "ctypeslib", "lib", "polynomial", "emath", "exceptions", "dtypes", "strings")
    }
    | {
        "ndarray",
        "empty",
        "sum",
        "array",
        "asarray",
        "ascontiguousarray",
        "asnumpy",
        "may_share_memory",
        "cuda",
        "linalg",
        "fft",
        "random",
        "get_default_memory_pool",
        "RawModule",
        "ElementwiseKernel",
    }
)
