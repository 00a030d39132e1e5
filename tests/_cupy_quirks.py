"""A model of CuPy 14.2 over NumPy: its arrays, its refusals and the behaviours nda's conformance kit measured on GPUs.

``tests/_cuda_numpy_mirror.py`` builds nda-cuda's kernel table over :data:`cupy_model` (the
array module) and :data:`compat_model` (``array_api_compat.cupy`` rebuilt over the model), so
that every workaround in ``nda_cuda._workarounds`` runs, in CI, against the behaviour it works
around, and nda-cuda's code meets CuPy's rules. The parts:

* ``tests/_cupy_device.py``: the arrays (:class:`DeviceArray`, which is not a NumPy array and
  refuses implicit host conversion, host arrays as kernel operands and host arrays assigned into
  it, as CuPy does), flush-to-zero arithmetic (``-ftz=true``), CuPy's DLPack checks and stream
  handshake;
* ``tests/_cupy_streams.py``: CUDA streams and events; a write into existing memory lands in
  stream order, unseen by other streams until an event (or the legacy default stream's rule)
  orders them;
* ``tests/_cupy_fft.py``: ``cupy.fft`` (cuFFT's one- and n-dimensional plans, CuPy's dtype,
  shape and normalisation conventions and its refusals);
* ``tests/_cupy_solver.py``: cuBLAS and cuSOLVER (``matmul`` and its complex ``alpha``, CuPy's own
  ``einsum`` over it, ``solve``, SVD, ``pinv``, eigenvalues, ``norm``);
* ``tests/_cupy_linalg.py``: CuPy's ``eig``, ``eigh``, ``qr``, ``slogdet`` and ``matrix_rank`` (plain
  tuples, dtypes, refusals); ``tests/_cupy_unique.py``: ``unique`` and ``unique_*`` (radix order,
  ``intp`` indices, CuPy's named tuples);
* ``tests/_cupy_thrust.py``: CuPy's complex functions (its vendored thrust/FreeBSD headers);
* ``tests/_cupy_sparse.py``: ``cupyx.scipy.sparse``'s csr matrix and cuSPARSE's limits;
* this module: the array module and the Array-API namespace, with the quirks below.

Each quirk reproduces a fact measured on a GPU (``../shared/gpu/h100-2026-11-22``,
``h200-2026-11-26`` and ``h200-2026-11-28``) and follows CuPy's source where that says how it
comes about:

* 0-d host data through ``array``/``asarray`` loses the sign of a zero (``ndarray.fill``'s
  memset path writes ``+0`` for a value equal to zero); ``full`` fills the same way;
* float64 ``hypot`` rounds a result within two ulps of the largest finite value up to ``inf``;
  complex ``abs``, ``log``, ``log10`` and ``log1p`` take ``hypot`` of the parts; complex ``log``
  (``clog.h``) of a NaN with an infinite part has a NaN real part (C99: ``+inf``), and ``pow``,
  ``log1p``, ``log2``, ``log10`` inherit it (the H200, 2026-11-28);
* complex division scales by ``|c| + |d|`` (thrust); ``reciprocal`` and ``log2`` divide that
  way, ``sign`` is ``z / abs(z)``; complex ``exp``, ``expm1``, ``log1p``, ``pow``, multiplication
  (fused multiply-adds) and complex64 ``sin``/``cos``/``sinh``/``cosh`` as ``_cupy_thrust`` says;
* float64 ``log``, ``log2`` and ``log10`` of a negative subnormal are ``-inf`` (the H200:
  ``log(-5e-324)``; CUDA's double ``log`` takes a negative subnormal for a zero);
* real ``pow`` is C's ``pow`` everywhere (NumPy computes ``x ** 0.5`` with a scalar exponent as
  ``sqrt(x)``, so ``(-0.0) ** 0.5`` is ``-0.0`` there and ``+0.0`` on CUDA);
* float ``floor_divide`` is ``floor(a / b)`` and ``remainder`` ``a - floor(a / b) * b``;
* ``argmax``/``argmin`` of floats with several NaNs return the NaN CuPy's reduction keeps,
  modelled as the last one (the H200: ``argmin`` of ``[0, nan, nan]`` is ``2``; CuPy's
  ``my_argmin_float`` keeps ``a`` when both values are NaN, without the smaller index);
* ``matmul``, ``einsum`` and the linear algebra: ``_cupy_solver``'s docstring;
* ``arange`` converts ``start``/``step`` to the dtype first; ``linspace`` takes ``float()``
  of scalar bounds; ``isin`` needs an array ``x2``, sorts it (the radix order below) and
  binary-searches each element assuming NaNs last, so a NaN with its sign bit set, sorted first,
  hides the values after it (the H200: ``isin(0.0, [-nan, 0.0])`` is False);
* ``x[key] = -0.0`` (a Python scalar) assigns through ``fill``: the memset writes ``+0``;
* ``sort``/``argsort`` of a 1-d float array order NaNs by their bits (thrust's radix sort): a
  NaN with its sign bit set comes first (the H200: ``argsort([0.0, nan])`` is ``[1, 0]``).
"""

from __future__ import annotations

import functools
import math
import types
from typing import Any, Callable

import numpy as np

import _cupy_device
import _cupy_linalg as decompositions
import _cupy_solver as solver
from _cupy_fft import FFT
from _cupy_unique import UNIQUE
import _cupy_streams as streams
import _cupy_thrust as thrust
from _cupy_device import FLUSHED, DeviceArray, device, flush, flush_scalar, plain, refuse_host, single, ufunc_call

__all__ = ["cupy_model", "compat_model", "sparse_model", "DeviceArray", "flush", "FLUSHED"]

_TINY64 = float(np.finfo(np.float64).smallest_normal)


# --------------------------------------------------------------------------- kernels of the model


def flushing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a CuPy kernel compiled with ``-ftz=true``: host arrays refused, subnormals flushed in and out."""

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        refuse_host(args, kwargs)
        streams.before_kernel()
        host = tuple(flush(plain(a)) for a in args)
        if single(host):
            host = tuple(flush_scalar(a) for a in host)
        return device(flush(fn(*host, **{k: flush(plain(v)) for k, v in kwargs.items()})), args)

    return kernel


def on_bits(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a flushing kernel that tests the raw bits of its input first: ``fn`` gets the input
    unflushed and models the flushing itself (thrust's complex64 functions); its result is flushed."""

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        refuse_host(args, kwargs)
        streams.before_kernel()
        return device(flush(fn(*plain(args), **plain(kwargs))), args)

    return kernel


def moving(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` moving data (no arithmetic): host arrays refused, results on the device (views kept)."""

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        refuse_host(args, kwargs)
        streams.before_kernel()
        return device(fn(*plain(args), **plain(kwargs)), args)

    return kernel


def transfer(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` taking host data to the device (``array``, ``asarray``): results on the device."""

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        streams.before_kernel()
        return device(fn(*plain(args), **plain(kwargs)), args)

    return kernel


class Ufunc:
    """A CuPy ufunc of the model: a NumPy ufunc run as a flushing kernel on device arrays.

    Like ``cupy._core._kernel.ufunc`` it has no Python signature (``inspect.signature`` raises).
    """

    __slots__ = ("ufunc", "__name__", "__qualname__")

    def __init__(self, ufunc: np.ufunc) -> None:
        self.ufunc = ufunc
        self.__name__ = self.__qualname__ = ufunc.__name__

    @property
    def __signature__(self) -> Any:
        raise ValueError(f"no signature found for ufunc {self.__name__}")

    nin = property(lambda self: self.ufunc.nin)
    nout = property(lambda self: self.ufunc.nout)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return ufunc_call(self.ufunc, "__call__", args, kwargs)

    def _method(self, method: str) -> Callable[..., Any]:
        return lambda *args, **kwargs: ufunc_call(self.ufunc, method, args, kwargs)

    reduce = property(lambda self: self._method("reduce"))
    accumulate = property(lambda self: self._method("accumulate"))
    outer = property(lambda self: self._method("outer"))
    at = property(lambda self: self._method("at"))

    def __repr__(self) -> str:
        return f"<ufunc 'cupy_{self.__name__}' (model)>"


# --------------------------------------------------------------------------- transfers


def _zero_0d(result: np.ndarray) -> np.ndarray:
    """CuPy's ``fill`` memset: a 0-d value equal to zero becomes +0."""
    if result.ndim == 0 and result.dtype.kind in "fc" and result == 0:
        return np.zeros((), dtype=result.dtype)
    return result


def _array(obj: Any, dtype: Any = None, copy: Any = True, order: str = "K", subok: bool = False, ndmin: int = 0) -> np.ndarray:
    result = np.array(obj, dtype=dtype, copy=True if copy is not False else None, order=order, ndmin=ndmin)
    return _zero_0d(result) if not isinstance(obj, np.ndarray) or obj.ndim == 0 else result


def _asarray(obj: Any, dtype: Any = None, order: Any = None) -> np.ndarray:
    result = np.array(obj, dtype=dtype, order=order or "K", copy=True)  # a private copy: the device's memory
    return _zero_0d(result) if result.ndim == 0 else result


def _cupy_asarray(obj: Any, dtype: Any = None, order: Any = None, **kwargs: Any) -> Any:
    """``cupy.asarray``: a device array stays itself (or is cast); host data is copied to the device."""
    if obj.__class__ is DeviceArray:
        return obj if dtype is None or np.dtype(dtype) == obj.dtype else obj.astype(dtype)
    return device(_asarray(plain(obj), dtype=dtype, order=order))


def _cupy_array(obj: Any, dtype: Any = None, copy: Any = True, order: str = "K", subok: bool = False, ndmin: int = 0) -> Any:
    if obj.__class__ is DeviceArray:
        if copy is False and (dtype is None or np.dtype(dtype) == obj.dtype):
            return obj
        streams.before_kernel()
        return DeviceArray(np.array(obj._a, dtype=dtype, copy=True, order=order, ndmin=ndmin))
    return device(_array(plain(obj), dtype=dtype, copy=copy, order=order, ndmin=ndmin))


def _full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C") -> np.ndarray:
    out = np.full(shape, plain(fill_value), dtype=dtype, order=order)
    if out.dtype.kind in "fc" and np.all(plain(fill_value) == 0):
        out[...] = 0  # memset
    return out


# --------------------------------------------------------------------------- element-wise quirks


def _top_overflow(result: np.ndarray) -> np.ndarray:
    """CUDA's hypot: within two ulps of the largest finite double, the result rounds up to inf."""
    if result.dtype != np.float64 or not result.size:
        return result
    limit = np.nextafter(np.nextafter(np.finfo(result.dtype).max, 0, dtype=result.dtype), 0, dtype=result.dtype)
    return np.where(np.abs(result) >= limit, np.copysign(np.inf, result), result).astype(result.dtype, copy=False)


def _hypot(x1: Any, x2: Any) -> np.ndarray:
    return _top_overflow(np.asarray(np.hypot(x1, x2)))


def _cabs(z: np.ndarray) -> np.ndarray:
    return _top_overflow(np.asarray(np.hypot(z.real, z.imag)))


def _absolute(x: Any) -> Any:
    x = np.asarray(x)
    return _cabs(x) if x.dtype.kind == "c" else np.absolute(x)


def _clog(z: np.ndarray) -> np.ndarray:
    """thrust's complex log: ``log(hypot(x, y)) + i atan2(y, x)`` (inf where hypot overflows).

    ``clog.h``/``clogf.h`` (FreeBSD's msun) first send a NaN part to ``log(norm(z)) + i atan2(y, x)``,
    ``norm`` being ``x*x + y*y``: the real part is NaN whenever a part is, where C99 (NumPy) gives
    ``+inf`` for an infinite other part (``log(nan+infj)``: ``nan+nanj``, NumPy ``inf+nanj``)."""
    with np.errstate(all="ignore"):
        out = np.log(z)
    overflow = np.isinf(_cabs(z)) & np.isfinite(z)
    nan_part = np.isnan(z.real) | np.isnan(z.imag)
    if overflow.any() or nan_part.any():
        out = np.array(out, copy=True)
        out.real[overflow] = np.inf
        out.real[nan_part] = np.nan
    return out


def _complex_parts(real: np.ndarray, imag: np.ndarray, dtype: Any) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(np.shape(real), np.shape(imag)), dtype=dtype)
    out.real, out.imag = real, imag
    return out


def _thrust_divide(a: Any, b: Any) -> np.ndarray:
    """thrust's complex division: scale by ``s = |c| + |d|`` of the divisor, then multiply out."""
    a, b = np.asarray(a), np.asarray(b)
    dtype = np.result_type(a, b)
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    s = np.abs(b.real) + np.abs(b.imag)
    oos = 1 / s
    ars, ais, brs, bis = a.real * oos, a.imag * oos, b.real * oos, b.imag * oos
    oos = 1 / (brs * brs + bis * bis)
    return _complex_parts((ars * brs + ais * bis) * oos, (ais * brs - ars * bis) * oos, dtype)


def _unary_complex(real_fn: Callable[..., Any], complex_fn: Callable[[np.ndarray], Any]) -> Callable[..., Any]:
    @functools.wraps(real_fn)
    def fn(x: Any, *args: Any, **kwargs: Any) -> Any:
        if np.asarray(x).dtype.kind == "c" and not args and not kwargs:
            return complex_fn(np.asarray(x))
        return real_fn(x, *args, **kwargs)

    return fn


def _negative_subnormal_log(fn: Callable[..., Any]) -> Callable[..., Any]:
    """CUDA's double ``log``/``log2``/``log10``: a negative subnormal gives ``-inf`` (a zero's result), not NaN."""

    def log(x: Any) -> Any:
        result = np.asarray(fn(x))
        x = np.asarray(x)
        if x.dtype == np.float64:
            result = np.where((x < 0) & (x > -_TINY64), -np.inf, result)
        return result

    return log


def _divide(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
    if np.result_type(x1, x2).kind == "c" and not args and not kwargs:
        return _thrust_divide(x1, x2)
    return np.divide(x1, x2, *args, **kwargs)


def _multiply(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
    if np.result_type(x1, x2).kind == "c" and not args and not kwargs:
        return thrust.multiply(x1, x2)  # Python scalars stay weak
    return np.multiply(x1, x2, *args, **kwargs)


def _square(x: Any, *args: Any, **kwargs: Any) -> Any:
    x = np.asarray(x)
    if x.dtype.kind == "c" and not args and not kwargs:
        return thrust.multiply(x, x)
    return np.square(x, *args, **kwargs)


def _power(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
    kind = np.result_type(x1, x2).kind
    if kind == "c" and not args and not kwargs:
        return thrust.power(x1, x2, _clog)  # Python scalars stay weak
    if kind == "f" and not args and not kwargs:
        # C's pow for every element: no operand broadcast with stride 0 (NumPy's scalar fast paths)
        a, b = np.broadcast_arrays(np.asarray(x1), np.asarray(x2))
        dtype = np.result_type(x1, x2)
        shape = a.shape
        a, b = np.array(a, dtype=dtype, ndmin=1), np.array(b, dtype=dtype, ndmin=1)
        return np.power(a, b).reshape(shape)
    return np.power(x1, x2, *args, **kwargs)


def _sign_complex(z: np.ndarray) -> np.ndarray:
    m = np.abs(z)
    unit = np.where(m == 0, 1, m)
    return _complex_parts(np.where(m == 0, 0, z.real / unit), np.where(m == 0, 0, z.imag / unit), z.dtype)


def _trig(name: str) -> Callable[..., Any]:
    fn = getattr(np, name)

    def trig(x: Any, *args: Any, **kwargs: Any) -> Any:
        x = np.asarray(x)
        if x.dtype == np.complex64 and not args and not kwargs:
            return thrust.trig32(name, x)
        return fn(x, *args, **kwargs)

    trig.__name__ = name
    return trig


def _floor_divide(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
    if np.result_type(x1, x2).kind == "f" and not args and not kwargs:
        return np.floor(np.true_divide(x1, x2))
    return np.floor_divide(x1, x2, *args, **kwargs)


def _remainder(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
    if np.result_type(x1, x2).kind == "f" and not args and not kwargs:
        return np.subtract(x1, np.multiply(np.floor(np.true_divide(x1, x2)), x2))
    return np.remainder(x1, x2, *args, **kwargs)


# --------------------------------------------------------------------------- reductions, creation, sets


def _arg_extreme(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``argmax``/``argmin``: with several NaNs along the axis, the last one (what CuPy's reduction kept)."""

    def arg(a: np.ndarray, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> np.ndarray:
        a = np.asarray(a)
        result = np.asarray(fn(a, axis=axis, keepdims=keepdims))
        if a.dtype.kind not in "fc" or not a.size:
            return result
        flat = a.reshape(-1) if axis is None else np.moveaxis(a, axis, -1)
        nan = np.isnan(flat)
        last = flat.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        several = nan.sum(axis=-1) > 1
        if keepdims:
            last = last.reshape(result.shape)
            several = several.reshape(result.shape)
        return np.where(several, last, result).astype(result.dtype)

    arg.__name__ = fn.__name__
    return arg


def _radix_order(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """CuPy's ``argsort`` order: a 1-d float array goes to thrust's radix sort (``thrust::less``),
    which orders NaNs by their bits, so a NaN with its sign bit set comes before ``-inf``
    (``cupy_thrust.cu``: "radix sort, which happens to sort NaNs to the back", true only of
    positive NaNs; CUB: "no special handling is implemented for NaN values"). Other arrays
    use thrust's comparison sort with NumPy's order (NaNs last)."""
    order = np.argsort(a, axis=axis, kind="stable")
    if a.ndim != 1 or a.dtype.kind != "f":
        return order
    negative_nan = np.isnan(a) & np.signbit(a)
    if not negative_nan.any():
        return order
    return np.concatenate([np.flatnonzero(negative_nan), order[~negative_nan[order]]])


def _argsort(a: np.ndarray, axis: int = -1, kind: Any = None, **kwargs: Any) -> np.ndarray:
    a = np.asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), -1
    return _radix_order(a, axis)


def _sort(a: np.ndarray, axis: int = -1, kind: Any = None, **kwargs: Any) -> np.ndarray:
    a = np.asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), -1
    return np.take_along_axis(a, _radix_order(a, axis), axis=axis)


def _arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, **kwargs: Any) -> np.ndarray:
    if dtype is not None:
        kind = np.dtype(dtype).type
        kind(start), kind(step)  # CuPy: _arange_ufunc(typ(start), typ(step), ...): OverflowError
    return np.arange(start, stop, step, dtype=dtype, **kwargs)


def _linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype: Any = None, **kwargs: Any) -> Any:
    if np.isscalar(start) and np.isscalar(stop):
        float(stop - start)  # CuPy's _linspace_scalar: TypeError for complex bounds
    return np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype, **kwargs)


def _isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, **kwargs: Any) -> np.ndarray:
    """CuPy's ``isin`` (``in1d``): ``test_elements`` sorted (the model's sort: thrust's radix order for 1-d
    floats, a NaN with its sign bit first), then each element binary-searched in it (``_exists_kernel``:
    ``bins[m] < x`` assuming NaNs last) and compared with the element found. A NaN sorted first hides
    what follows it (the H200: ``isin(0.0, [-nan, 0.0])`` is False)."""
    test_elements.ravel()  # CuPy: AttributeError for a Python scalar
    element = np.asarray(element)
    x, bins = element.ravel(), _sort(np.asarray(test_elements).ravel())
    n = bins.size
    if x.size == 0 or n == 0:
        return np.full(element.shape, bool(invert))
    with np.errstate(invalid="ignore"):
        left, right = np.zeros(x.size, np.int64), np.full(x.size, n - 1, np.int64)
        while (left < right).any():
            m = left + (right - left) // 2
            look_right = bins[m] < x
            left, right = np.where((left < right) & look_right, m + 1, left), np.where((left < right) & ~look_right, m, right)
        y = np.where(x > bins[n - 1], n, right)  # beyond the last (NaN elements never found: NaN == NaN is false)
        found = (y < n) & (bins[np.minimum(y, n - 1)] == x)
    return (found != bool(invert)).reshape(element.shape)


# --------------------------------------------------------------------------- the array module

# Functions that only move data (no arithmetic instruction touches the values): not flushed.
_MOVES = {
    "empty",
    "empty_like",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "eye",
    "identity",
    "reshape",
    "ravel",
    "transpose",
    "permute_dims",
    "moveaxis",
    "swapaxes",
    "broadcast_to",
    "broadcast_arrays",
    "expand_dims",
    "squeeze",
    "flip",
    "roll",
    "concatenate",
    "concat",
    "stack",
    "unstack",
    "tile",
    "repeat",
    "take",
    "take_along_axis",
    "where",
    "sort",
    "argsort",
    "tril",
    "triu",
    "diagonal",
    "diag",
    "meshgrid",
    "matrix_transpose",
    "real",
    "imag",
    "conj",
    "conjugate",
    "positive",
    "copysign",
    "signbit",
    "may_share_memory",
    "shares_memory",
    "result_type",
    "can_cast",
    "isdtype",
    "finfo",
    "iinfo",
    "unique",
    "copy",
    "ascontiguousarray",
    "asfortranarray",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "shape",
    "ndim",
    "size",
    "broadcast_shapes",
    "flatnonzero",
}
#: Functions taking host data to the device.
_TRANSFERS = {"array", "asarray", "asanyarray"}


def _module(name: str, source: Any, overrides: dict[str, Any]) -> types.ModuleType:
    """``source``'s names as the model's: ufuncs as :class:`Ufunc`, data movement :func:`moving`, the rest :func:`flushing`."""
    module = types.ModuleType(name)
    for attr in dir(source):
        if attr.startswith("__"):
            continue
        value = getattr(source, attr)
        if isinstance(value, np.ufunc):
            value = Ufunc(value)
        elif isinstance(value, type) or not callable(value):
            pass
        elif attr in _TRANSFERS:
            value = transfer(value)
        elif attr in _MOVES:
            value = moving(value)
        else:
            value = flushing(value)
        setattr(module, attr, value)
    for attr, value in overrides.items():
        setattr(module, attr, value)
    return module


_QUIRKS: dict[str, Any] = {
    "ndarray": DeviceArray,
    "array": _cupy_array,
    "asarray": _cupy_asarray,
    "asanyarray": _cupy_asarray,
    "asnumpy": lambda a, stream=None, order="C", out=None, blocking=True: (
        a.get(order=order, out=out) if a.__class__ is DeviceArray else np.asarray(a, order=order)
    ),
    "from_dlpack": _cupy_device.from_dlpack,
    "full": moving(_full),
    "hypot": flushing(_hypot),
    "absolute": flushing(_absolute),
    "abs": flushing(_absolute),
    "exp": flushing(_unary_complex(np.exp, thrust.exp)),
    "log": flushing(_unary_complex(_negative_subnormal_log(np.log), _clog)),
    "log10": flushing(
        _unary_complex(_negative_subnormal_log(np.log10), lambda z: _complex_parts(_clog(z).real / np.log(10), _clog(z).imag / np.log(10), z.dtype))
    ),
    "log1p": flushing(_unary_complex(np.log1p, lambda z: thrust.log1p(z, _clog))),
    "log2": flushing(
        _unary_complex(_negative_subnormal_log(np.log2), lambda z: _thrust_divide(_clog(z), np.asarray(complex(math.log(2)), dtype=z.dtype)))
    ),
    "divide": flushing(_divide),
    "true_divide": flushing(_divide),
    "multiply": flushing(_multiply),
    "square": flushing(_square),
    "power": flushing(_power),
    "pow": flushing(_power),
    "sin": on_bits(_trig("sin")),
    "cos": on_bits(_trig("cos")),
    "sinh": on_bits(_trig("sinh")),
    "cosh": on_bits(_trig("cosh")),
    "reciprocal": flushing(_unary_complex(np.reciprocal, lambda z: _thrust_divide(np.ones((), z.dtype), z))),
    "sign": flushing(_unary_complex(np.sign, _sign_complex)),
    "expm1": flushing(_unary_complex(np.expm1, thrust.expm1)),
    "floor_divide": flushing(_floor_divide),
    "remainder": flushing(_remainder),
    "mod": flushing(_remainder),
    "argmax": flushing(_arg_extreme(np.argmax)),
    "argmin": flushing(_arg_extreme(np.argmin)),
    "matmul": flushing(solver.matmul),
    "arange": moving(_arange),
    "linspace": flushing(_linspace),
    "isin": flushing(_isin),
    "argsort": moving(_argsort),
    "sort": moving(_sort),
}

#: The array module: NumPy with CuPy 14.2's arrays, rules and quirks.
cupy_model = _module("cupy_model", np, {**_QUIRKS, **UNIQUE})
cupy_model.linalg = _module(
    "cupy_model.linalg",
    np.linalg,
    {
        "pinv": solver.scaled_by_norm(flushing(solver.pinv), "pinv"),
        "solve": flushing(solver.solve),
        "eigvals": solver.refusing_subnormal_parts(flushing(solver.eigvals)),
        "eigvalsh": flushing(solver.eigvalsh),
        "svd": solver.scaled_by_norm(flushing(solver.svd), "svd"),
        "norm": flushing(solver.norm),
        "LinAlgError": np.linalg.LinAlgError,
        "eig": solver.refusing_subnormal_parts(flushing(decompositions.eig)),
        "eigh": flushing(decompositions.eigh),
        "qr": flushing(decompositions.qr),
        "slogdet": flushing(decompositions.slogdet),
        "matrix_rank": flushing(decompositions.matrix_rank),
    },
)
_einsum = solver.einsum_over(cupy_model)
if _einsum is not None:
    cupy_model.einsum = _einsum  # CuPy's einsum: its contractions are the model's matmul (cuBLAS)
cupy_model.fft = _module("cupy_model.fft", np.fft, FFT)  # cuFFT's plans and CuPy's conventions (_cupy_fft)
_cupy_device.MODEL = cupy_model

from _cupy_compat import compat_model  # noqa: E402  (array_api_compat.cupy over the model)
from _cupy_sparse import sparse_model  # noqa: E402
