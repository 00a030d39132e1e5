"""The device memory of the CuPy model: arrays NumPy cannot read, kernels that flush, CuPy's DLPack.

Part of the CuPy 14.2 model over NumPy (``tests/_cupy_quirks.py`` builds the modules, this file
the arrays). :class:`DeviceArray` stands for ``cupy.ndarray``. Like it, it is *not* a NumPy array,
and it refuses what CuPy refuses (each rule follows CuPy's source, ``cupy/_core/core.pyx`` and
``_kernel.pyx``, which the H200 run of 2026-11-26 showed nda-cuda depending on):

* implicit conversion to the host: ``numpy.asarray(x)``, ``numpy.array([x, y])`` raise CuPy's
  ``TypeError: Implicit conversion to a NumPy array is not allowed ...``; ``x.get()`` is the way;
* host arrays as kernel operands: a ``numpy.ndarray`` (0-d ones too) given to a ufunc or a
  function of the model raises ``TypeError: Unsupported type <class 'numpy.ndarray'>`` (CuPy
  wraps scalars as kernel arguments and has no rule for a host array); ``array``/``asarray``
  copy host data to the device, and an index array may be on the host, as in CuPy;
* ``x[key] = host_array`` (not 0-d) raises ``ValueError`` (CuPy assigns through ``fill``);
* NumPy's functions and ufuncs on device arrays dispatch to the model's function of the same
  name (``__array_function__``/``__array_ufunc__``, as CuPy's do), or raise ``TypeError``;
* DLPack: arrays export capsules of device type kDLCUDA (``__dlpack_device__`` is ``(2, 0)``);
  a host copy only with ``dl_device=(1, 0)``; :func:`from_dlpack` checks the capsule's own device
  type as ``cupy.from_dlpack`` does (``RuntimeError: CuPy is built against CUDA, different from
  the backend that backs the incoming DLPack tensor`` for host memory claiming to be CUDA memory).
  The stream handshake is CuPy's: ``cupy.from_dlpack`` passes its current stream (1 for the
  legacy default one), and ``__dlpack__(stream=s)`` makes ``s`` wait for an event on CuPy's
  *current* stream (none when that is ``s`` itself);
* streams (``tests/_cupy_streams.py``): a kernel runs after the work its stream was given
  before; a write into existing memory (``x[key] = v``, ``fill``, ``put``, a ufunc's ``out=``,
  ``ufunc.at``, ``get(out=..., blocking=False)``) is enqueued on the current stream and lands in
  stream order; ``get()`` and host reads of values (``float(x)``, ``repr(x)``, ``item()``)
  synchronize the stream they read on.

The model's memory is host memory, so two safety rules that CuPy does not need: a capsule is
imported only if this model exported it (a real CUDA pointer is never read on the host), and an
array refuses a real CUDA consumer (one that passes a stream handle the model did not make).

Arithmetic: every ufunc on device arrays (operators included) and every computing function of
the model flushes float32/complex64 subnormal inputs and results to signed zeros (CuPy compiles
with ``-ftz=true``); copies, views and data movement do not.
"""

from __future__ import annotations

import ctypes
import math
import weakref
from typing import Any

import numpy as np

import _cupy_streams as streams

__all__ = [
    "DeviceArray",
    "HOST_REFUSED",
    "FLUSHED",
    "flush",
    "flush_scalar",
    "single",
    "plain",
    "device",
    "refuse_host",
    "from_dlpack",
    "IllegalAddress",
]

#: CuPy's message for an implicit device -> host conversion (``ndarray.__array__``).
HOST_REFUSED = "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."
#: dtypes whose subnormals CuPy's kernels flush to zero.
FLUSHED = ("float32", "complex64")
_TINY = float(np.finfo(np.float32).smallest_normal)
#: set by ``_cupy_quirks``: the model's array module, for NumPy's dispatch protocols.
MODEL: Any = None


class IllegalAddress(RuntimeError):
    """The model of ``cudaErrorIllegalAddress``: a kernel wrote or read outside its buffers."""


# --------------------------------------------------------------------------- flush to zero


def _flush_real(a: np.ndarray) -> np.ndarray:
    sub = (a != 0) & (np.abs(a) < _TINY)
    return np.where(sub, np.copysign(np.zeros((), a.dtype), a), a) if sub.any() else a


def flush(value: Any) -> Any:
    """``value`` with float32/complex64 subnormals replaced by signed zeros (a copy only if there are any)."""
    if isinstance(value, np.ndarray):
        if value.dtype == np.float32:
            return _flush_real(value)
        if value.dtype == np.complex64:
            re, im = _flush_real(value.real), _flush_real(value.imag)
            if re is value.real and im is value.imag:
                return value
            out = np.empty_like(value)
            out.real, out.imag = re, im
            return out
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(flush(v) for v in value)
    return value


def flush_scalar(value: Any) -> Any:
    if value.__class__ is float:
        return math.copysign(0.0, value) if 0 < abs(value) < _TINY else value
    if value.__class__ is complex:
        return complex(flush_scalar(value.real), flush_scalar(value.imag))
    return value


def single(args: tuple[Any, ...]) -> bool:
    """Whether a call computes in single precision: a float32/complex64 array and no wider float."""
    found = False
    for a in args:
        dtype = getattr(a, "dtype", None)
        if dtype is None or not isinstance(a, np.ndarray):
            continue
        if dtype in (np.float32, np.complex64):
            found = True
        elif dtype.kind in "fc":
            return False
    return found


# --------------------------------------------------------------------------- host <-> device rules


def refuse_host(args: Any, kwargs: dict[str, Any] | None = None) -> None:
    """CuPy's refusal of host arrays as kernel operands (``_kernel._preprocess_arg``)."""
    for value in args:
        if value.__class__ in (list, tuple):
            refuse_host(value)
        elif isinstance(value, np.ndarray):
            raise TypeError(f"Unsupported type {type(value)}")
    if kwargs:
        refuse_host(tuple(kwargs.values()))


def plain(value: Any) -> Any:
    """Device arrays as the NumPy arrays holding their memory (inside the model only)."""
    if value.__class__ is DeviceArray:
        return value._a
    if value.__class__ in (tuple, list):
        return type(value)(plain(v) for v in value)
    return value


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def device(value: Any, sources: Any = ()) -> Any:
    """Results as device arrays; a result sharing memory with a device array in ``sources`` is its view
    (``base`` is the array owning the memory, as in CuPy)."""
    if isinstance(value, np.ndarray):
        if value.base is not None and sources:
            root = _root(value)
            for s in _arrays(sources):
                if _root(s._a) is root:
                    return DeviceArray(value, s._base if s._base is not None else s)
        return DeviceArray(value)
    if isinstance(value, np.generic):
        return DeviceArray(np.asarray(value))  # CuPy returns 0-d arrays, never scalars
    if value.__class__ is tuple or (isinstance(value, tuple) and hasattr(value, "_fields")):
        items = [device(v, sources) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if value.__class__ is list:
        return [device(v, sources) for v in value]
    return value


def _arrays(sources: Any) -> list[DeviceArray]:
    found: list[DeviceArray] = []
    for s in sources if sources.__class__ in (tuple, list) else (sources,):
        if s.__class__ is DeviceArray:
            found.append(s)
        elif s.__class__ in (tuple, list):
            found += _arrays(s)
    return found


class _Pointer:
    """``cupy.cuda.MemoryPointer``'s address (``x.data.ptr``): the model's memory, for host-compiled kernels."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class _Device:
    __slots__ = ("id",)

    def __init__(self) -> None:
        self.id = 0

    def __repr__(self) -> str:
        return "<CUDA Device 0 (model)>"


_DEVICE0 = _Device()

#: computing methods (run as kernels: they flush); the others move data or read it back.
_COMPUTING = {
    "sum",
    "prod",
    "mean",
    "std",
    "var",
    "max",
    "min",
    "any",
    "all",
    "cumsum",
    "cumprod",
    "clip",
    "dot",
    "round",
    "trace",
    "nonzero",
    "conj",
    "conjugate",
}
_METHODS = _COMPUTING | {
    "copy",
    "reshape",
    "ravel",
    "flatten",
    "transpose",
    "swapaxes",
    "squeeze",
    "view",
    "repeat",
    "take",
    "diagonal",
    "sort",
    "argsort",
    "fill",
    "item",
    "tolist",
    "tobytes",
    "partition",
    "argpartition",
    "searchsorted",
    "put",
    "choose",
    "compress",
}
#: methods writing into the array's memory (kernels enqueued on the current stream: ``_cupy_streams``).
_WRITING = {"fill", "put"}


class DeviceArray:
    """A CuPy array of the model: device memory (a NumPy array inside), CuPy's rules (see the module docstring)."""

    __slots__ = ("_a", "_base", "__weakref__")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, a: np.ndarray, base: DeviceArray | None = None) -> None:
        self._a = a
        self._base = base

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> tuple[int, ...]:
        return self._a.shape

    @shape.setter
    def shape(self, value: Any) -> None:
        """CuPy's ``x.shape = ...``: in place where the strides allow, else AttributeError (array-api-compat's
        ``reshape(copy=False)`` relies on it)."""
        try:
            self._a.shape = value
        except AttributeError as err:
            raise AttributeError(f"incompatible shape: {err}") from None

    def _set_shape_and_strides(self, shape: Any, strides: Any, update_c_contiguity: bool = True, update_x_contiguity: bool = True) -> None:
        """CuPy's private in-place re-striding of a view (``cupy.linalg._einsum``'s diagonals): the same memory."""
        self._a = np.lib.stride_tricks.as_strided(self._a, shape=tuple(shape), strides=tuple(strides))

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    base = property(lambda self: self._base)
    device = property(lambda self: _DEVICE0)
    #: ``x.data.ptr``, as CuPy's: the address of the model's memory (host memory), which the test
    #: suite's host-compiled kernels (stand-ins for CUDA modules) read and write.
    data = property(lambda self: _Pointer(self._a.__array_interface__["data"][0]))
    #: NumPy's ``ctypes`` of that memory (not CuPy's API: for the host-compiled kernels' launchers only).
    ctypes = property(lambda self: self._a.ctypes)

    @property
    def T(self) -> DeviceArray:  # noqa: N802
        return device(self._a.T, (self,))

    @property
    def mT(self) -> DeviceArray:  # noqa: N802
        return device(np.swapaxes(self._a, -1, -2), (self,))

    @property
    def real(self) -> DeviceArray:
        return device(self._a.real, (self,))

    @real.setter
    def real(self, value: Any) -> None:
        self.real[...] = value

    @property
    def imag(self) -> DeviceArray:
        if self._a.dtype.kind != "c":
            return DeviceArray(np.zeros_like(self._a))  # CuPy: a new zero array for real input
        return device(self._a.imag, (self,))

    @imag.setter
    def imag(self, value: Any) -> None:
        self.imag[...] = value

    # ------------------------------------------------------------------ to the host, explicitly
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(HOST_REFUSED)

    def get(self, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True) -> np.ndarray:
        """A copy on ``stream`` (the current one): after its work (and the streams the legacy rule orders
        it after); ``blocking=False`` with ``out``: the copy into ``out`` is enqueued (it lands later)."""
        stream = streams.get_current_stream() if stream is None else stream
        if out is not None and not blocking:
            a = self._a
            streams.enqueue(lambda: np.copyto(out, a), stream)
            return out  # type: ignore[no-any-return]
        streams.drain(stream)
        host = np.array(self._a, copy=True, order=order)
        if out is not None:
            out[...] = host
            return out  # type: ignore[no-any-return]
        return host

    def _read(self) -> np.ndarray:
        """The memory for a host read of values (``float(x)``, ``repr(x)``): after the current stream's work."""
        streams.drain()
        return self._a

    def __repr__(self) -> str:
        return repr(self.get())

    def __str__(self) -> str:
        return str(self.get())

    def __format__(self, spec: str) -> str:
        return format(self.get(), spec)

    def __bool__(self) -> bool:
        return bool(self._read())

    def __int__(self) -> int:
        return int(self._read())

    def __float__(self) -> float:
        return float(self._read())

    def __complex__(self) -> complex:
        return complex(self._read())

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        for i in range(len(self._a)):
            yield self[i]

    def __copy__(self) -> DeviceArray:
        return DeviceArray(self._read().copy())

    def __deepcopy__(self, memo: Any) -> DeviceArray:
        return DeviceArray(self._read().copy())

    def __reduce__(self) -> Any:
        return (DeviceArray, (self._read().copy(),))

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, key: Any) -> DeviceArray:
        streams.before_kernel()  # an advanced index reads (gathers) values
        return device(self._a[plain(key)], (self,))

    def __setitem__(self, key: Any, value: Any) -> None:
        """A kernel writing into this memory: enqueued on the current stream (``_cupy_streams``); the value
        (a device array's: its values now, after the stream's earlier work) is taken at the call."""
        if isinstance(value, np.ndarray) and value.shape != ():
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")  # CuPy: host data is assigned through fill
        host_scalar = (
            value.__class__ in (float, complex) or isinstance(value, np.inexact) or (isinstance(value, np.ndarray) and value.dtype.kind in "fc")
        )
        if host_scalar and value == 0 and self._a.dtype.kind in "fc":
            value = 0  # CuPy: host scalars (and 0-d host arrays) go through ndarray.fill: a memset for zero (loses -0.0)
        streams.before_kernel()
        target, index = self._a, plain(key)
        value = plain(value)
        if isinstance(value, np.ndarray):
            value = value.copy()
        np.array(target[index], copy=True)[...] = value  # a bad key or value raises at the call, as in CuPy
        streams.enqueue(lambda: target.__setitem__(index, value))

    # ------------------------------------------------------------------ NumPy's protocols, CuPy's answers
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        fn = getattr(MODEL, ufunc.__name__, None)
        if method == "__call__" and fn is not None and fn is not ufunc:
            return fn(*inputs, **kwargs)  # the model's function of that name (a quirk, or the ufunc)
        return ufunc_call(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        module = MODEL
        for part in func.__module__.split(".")[1:]:
            if part.startswith("_"):
                continue
            module = getattr(module, part, None)
        target = getattr(module, func.__name__, None) if module is not None else None
        if target is None or target is func:
            return NotImplemented
        return target(*args, **kwargs)

    def __array_namespace__(self, api_version: Any = None) -> Any:
        from _cupy_compat import compat_model  # array_api_compat.array_namespace(cupy array) is array_api_compat.cupy

        return compat_model

    # ------------------------------------------------------------------ methods
    def __getattr__(self, name: str) -> Any:
        if name not in _METHODS:
            raise AttributeError(f"'cupy.ndarray' object (model) has no attribute {name!r}")
        method = getattr(self._a, name)
        computing = name in _COMPUTING

        if name in _WRITING:

            def write(*args: Any, **kwargs: Any) -> Any:
                refuse_host(args, kwargs)
                streams.before_kernel()
                target = self._a
                scratch = target.copy()  # the kernel's result now, written into this memory in stream order
                getattr(scratch, name)(*plain(args), **plain(kwargs))
                streams.enqueue(lambda: np.copyto(target, scratch))

            return write

        def call(*args: Any, **kwargs: Any) -> Any:
            refuse_host(args, kwargs)
            if name in ("item", "tolist", "tobytes"):
                streams.drain()  # host reads of values: after the current stream's work
            else:
                streams.before_kernel()
            a = flush(self._a) if computing else self._a
            result = getattr(a, name)(*plain(args), **plain(kwargs)) if computing else method(*plain(args), **plain(kwargs))
            if name in ("item", "tolist", "tobytes"):
                return result
            return device(flush(result) if computing else result, (self,))

        return call

    def astype(self, dtype: Any, order: str = "K", casting: Any = None, subok: Any = None, copy: bool = True) -> DeviceArray:
        """A conversion kernel flushes (``cvt.ftz``) when the dtype changes; a copy does not."""
        streams.before_kernel()
        if np.dtype(dtype) != self._a.dtype:
            return DeviceArray(flush(flush(self._a).astype(dtype, order=order)))
        if not copy:
            return self
        return DeviceArray(self._a.astype(dtype, order=order, copy=True))

    def argmax(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> DeviceArray:
        return MODEL.argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> DeviceArray:
        return MODEL.argmin(self, axis=axis, keepdims=keepdims)

    # ------------------------------------------------------------------ DLPack (CuPy's ``__dlpack__``)
    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None) -> Any:
        """CuPy's export: the consumer passes its stream (an int: -1 no order, 1 the legacy default stream,
        another handle: that stream; None: legacy) and it waits for an event recorded on CuPy's *current*
        stream. Only streams of the model: a real CUDA consumer (a real stream handle) is refused."""
        if dl_device is None or tuple(dl_device) == (2, 0):
            if copy is True:
                raise BufferError("copy=True only supported for copy to CPU.")
            consumer = 1 if stream is None else stream
            if consumer.__class__ is not int:
                raise TypeError(f"stream must be an int, got {type(stream).__name__}")
            if consumer < -1:
                raise ValueError(f"On CUDA, the valid stream for the DLPack protocol is -1, 1, 2, or any larger value, but {stream} was provided")
            if consumer != -1:
                try:
                    waiting = streams.cuda.ExternalStream(consumer)
                except ValueError:
                    raise BufferError("a CuPy-model array is host memory: it cannot be handed to a real CUDA consumer") from None
                current = streams.get_current_stream()
                if waiting != current:
                    waiting.wait_event(current.record())
            capsule = self._a.__dlpack__(max_version=max_version) if max_version is not None else self._a.__dlpack__()
            _EXPORTED[self._a.__array_interface__["data"][0]] = weakref.ref(_root(self._a))
            _set_device_type(capsule, 2)
            return capsule
        if tuple(dl_device) == (1, 0):
            if copy is False:
                raise ValueError("GPU memory cannot be exported to CPU without copy.")
            host = self.get()
            return host.__dlpack__(max_version=max_version) if max_version is not None else host.__dlpack__()
        raise BufferError("unsupported device requested.")

    # ------------------------------------------------------------------ operators (ufuncs of the model)
    def __matmul__(self, other: Any) -> Any:
        return MODEL.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return MODEL.matmul(other, self)


def _operator(ufunc: np.ufunc, reflected: bool = False, inplace: bool = False) -> Any:
    def op(self: DeviceArray, other: Any) -> Any:
        if inplace:
            return self.__array_ufunc__(ufunc, "__call__", self, other, out=(self,))
        return self.__array_ufunc__(ufunc, "__call__", *((other, self) if reflected else (self, other)))

    return op


def _unary_operator(ufunc: np.ufunc) -> Any:
    return lambda self: self.__array_ufunc__(ufunc, "__call__", self)


for _name, _ufunc in [
    ("add", np.add),
    ("sub", np.subtract),
    ("mul", np.multiply),
    ("truediv", np.true_divide),
    ("floordiv", np.floor_divide),
    ("mod", np.remainder),
    ("pow", np.power),
    ("lshift", np.left_shift),
    ("rshift", np.right_shift),
    ("and", np.bitwise_and),
    ("or", np.bitwise_or),
    ("xor", np.bitwise_xor),
]:
    setattr(DeviceArray, f"__{_name}__", _operator(_ufunc))
    setattr(DeviceArray, f"__r{_name}__", _operator(_ufunc, reflected=True))
    setattr(DeviceArray, f"__i{_name}__", _operator(_ufunc, inplace=True))
for _name, _ufunc in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    setattr(DeviceArray, f"__{_name}__", _operator(_ufunc))
for _name, _ufunc in [("neg", np.negative), ("pos", np.positive), ("abs", np.absolute), ("invert", np.invert)]:
    setattr(DeviceArray, f"__{_name}__", _unary_operator(_ufunc))


def ufunc_call(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A NumPy ufunc as a CuPy kernel: host arrays refused, float32/complex64 subnormals flushed; run after
    the current stream's work, and a write into existing memory (``out=``, ``ufunc.at``) enqueued there."""
    refuse_host(inputs, kwargs)
    streams.before_kernel()
    if method == "at":
        target = plain(inputs[0])
        scratch = target.copy()
        ufunc.at(flush(scratch), *(flush(plain(a)) for a in inputs[1:]))
        streams.enqueue(lambda: np.copyto(target, scratch))
        return None
    args = tuple(flush(plain(a)) for a in inputs)
    if single(args):
        args = tuple(flush_scalar(a) for a in args)
    out = kwargs.get("out")
    targets: tuple[np.ndarray, ...] = ()
    if out is not None:
        out = out if out.__class__ is tuple else (out,)
        targets = tuple(plain(o) for o in out)
        kwargs = {**kwargs, "out": tuple(t.copy() for t in targets)}  # computed now, written in stream order
    kwargs = {k: plain(v) for k, v in kwargs.items()}
    result = getattr(ufunc, method)(*args, **kwargs)
    if out is not None:
        written = [(t, flush(scratch)) for t, scratch in zip(targets, kwargs["out"])]
        streams.enqueue(lambda: [np.copyto(t, v) for t, v in written] and None)
        return out[0] if len(out) == 1 else out
    return device(flush(result), inputs)


# --------------------------------------------------------------------------- DLPack capsules

_EXPORTED: dict[int, Any] = {}
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype, _capsule_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
#: offset of ``DLTensor`` in ``DLManagedTensor`` (first member) and ``DLManagedTensorVersioned``
#: (after the version, manager_ctx, deleter and flags).
_TENSOR_OFFSET = {b"dltensor": 0, b"dltensor_versioned": 32}


def _tensor(capsule: Any) -> tuple[int, bytes]:
    for name, offset in _TENSOR_OFFSET.items():
        if _capsule_valid(capsule, name):
            return _capsule_pointer(capsule, name) + offset, name
    raise ValueError(f"A DLPack tensor object cannot be consumed multiple times (or object was not a DLPack capsule). Got: {capsule!r}")


def _set_device_type(capsule: Any, device_type: int) -> None:
    address, _ = _tensor(capsule)
    ctypes.c_int32.from_address(address + 8).value = device_type  # DLTensor: void *data; DLDevice device; ...


class _HostCapsule:
    """A consumed model capsule, handed to NumPy as the host memory it is."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def _import_capsule(capsule: Any) -> DeviceArray:
    """``cupy._core.dlpack.DLPackMemory``: the capsule's own device type decides."""
    address, _ = _tensor(capsule)
    kind = ctypes.c_int32.from_address(address + 8).value
    if kind not in (2, 13):  # kDLCUDA, kDLCUDAManaged
        raise RuntimeError("CuPy is built against CUDA, different from the backend that backs the incoming DLPack tensor")
    data = ctypes.c_void_p.from_address(address).value or 0
    owner = _EXPORTED.get(data)
    if owner is None or owner() is None:
        raise RuntimeError("the CuPy model imports only memory it exported (a real CUDA pointer is never read on the host)")
    _set_device_type(capsule, 1)
    return DeviceArray(np.from_dlpack(_HostCapsule(capsule)))


def from_dlpack(array: Any, *, device: Any = None, copy: Any = None) -> DeviceArray:
    """``cupy.from_dlpack`` (CuPy 14.2): the producer's ``__dlpack_device__`` routes, the capsule's device is checked."""
    if not hasattr(array, "__dlpack_device__"):
        return _import_capsule(array)  # backward compatibility: a capsule
    kind, _ = array.__dlpack_device__()
    if device is not None:
        raise NotImplementedError("from_dlpack() does not support device yet.")
    if kind in (2, 13):
        stream = streams.get_current_stream().ptr or 1  # CuPy: the current stream, the legacy default one for 0
        try:
            capsule = array.__dlpack__(stream=stream, max_version=(1, 0), copy=copy)
        except TypeError:
            if copy is not None:
                raise
            capsule = array.__dlpack__(stream=stream)
    elif kind == 1:
        raise TypeError("CPU arrays cannot be directly imported to CuPy. Use `cupy.array(numpy.from_dlpack(input))` instead.")
    else:
        raise TypeError(f"Unsupported array type: {kind}")
    return _import_capsule(capsule)
