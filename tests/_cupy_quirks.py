"""A model of CuPy 14.2 over NumPy: NumPy with the behaviours nda's conformance kit found on an H100.

``tests/_cuda_numpy_mirror.py`` builds nda-cuda's kernel table over :data:`cupy_model` (the
array module) and :data:`compat_model` (its Array-API namespace, built the way
``array_api_compat.cupy`` is built over CuPy), so that every workaround in
``nda_cuda._workarounds`` runs, in CI, against the behaviour it works around. Each quirk
here reproduces a fact measured on the GPU (``../shared/gpu/h100-2026-11-22``) and follows
CuPy's source where that says how it comes about:

* 0-d host data through ``array``/``asarray`` loses the sign of a zero: CuPy builds a 0-d
  array with ``ndarray.fill``, whose memset path writes ``+0`` for a value equal to zero;
  ``full`` fills the same way;
* float32 and complex64 subnormals are flushed to (signed) zero on the way into and out of
  every arithmetic kernel, comparison and reduction (CuPy compiles with ``-ftz=true``):
  the model's arrays are :class:`DeviceArray`, on which every ufunc (operators included)
  flushes, and the model's other computing functions flush too; copies, views, ``where``
  and sorting are left alone;
* float64 ``hypot`` rounds a result within two ulps of the largest finite value up to ``inf`` (the
  measured ``hypot(1.0, 1.797e308) == inf``; how far below the top CUDA's ``hypot`` can do
  that is not known, two ulps is the documented error bound); complex ``abs``, ``log``,
  ``log10`` and ``log1p`` take ``hypot`` of the parts;
* complex division scales by ``|c| + |d|`` (thrust's formula, written out below);
  ``reciprocal`` and ``log2`` divide that way, ``sign`` is ``z / abs(z)``, ``expm1`` is
  ``exp(z) - 1``;
* float ``floor_divide`` is ``floor(a / b)`` and ``remainder`` ``a - floor(a / b) * b``;
* ``arange`` converts ``start``/``step`` to the dtype first; ``linspace`` takes ``float()``
  of scalar bounds; ``isin`` needs an array ``x2``; ``linalg.eigvals`` of an empty matrix
  has the input's real dtype; ``linalg.pinv`` of a stack of matrices is off by about
  ``eps * |x|`` everywhere (batched Jacobi SVD; here a deterministic shift of that size);
* cuSPARSE's ``csrgeam2`` behind ``csr + csr`` multiplies complex values by ``alpha = 1``
  (:class:`CsrMatrix`). That one is inferred from the measured results (``(1+infj) + (1+infj)``
  gives ``nan+infj``), not from CuPy's source.

* ``x[key] = -0.0`` (a Python scalar) assigns through ``fill``: the memset writes ``+0``
  (:meth:`DeviceArray.__setitem__`).
"""

from __future__ import annotations

import functools
import math
import types
from typing import Any, Callable

import array_api_compat.numpy as compat_numpy
import numpy as np
import scipy.sparse
from array_api_compat._internal import get_xp

__all__ = ["cupy_model", "compat_model", "sparse_model", "CsrMatrix", "DeviceArray", "flush", "FLUSHED"]

#: dtypes whose subnormals CuPy's kernels flush to zero.
FLUSHED = ("float32", "complex64")
_TINY = float(np.finfo(np.float32).smallest_normal)


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


def _flush_scalar(value: Any) -> Any:
    if value.__class__ is float:
        return math.copysign(0.0, value) if 0 < abs(value) < _TINY else value
    if value.__class__ is complex:
        return complex(_flush_scalar(value.real), _flush_scalar(value.imag))
    return value


def _single(args: tuple[Any, ...]) -> bool:
    """Whether the call computes in single precision: a float32/complex64 array and no wider float."""
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


def _plain(value: Any) -> Any:
    if isinstance(value, DeviceArray):
        return value.view(np.ndarray)
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    return value


def _device(value: Any) -> Any:
    """Results as device arrays (views, no copy)."""
    if isinstance(value, np.ndarray) and not isinstance(value, DeviceArray):
        return value.view(DeviceArray)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_device(v) for v in value)
    return value


class DeviceArray(np.ndarray):
    """An array in the model's device memory: ufuncs on it (operators included) run as kernels compiled
    with ``-ftz=true``, and a Python zero assigned to it is written by a memset (``+0``)."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        args = tuple(flush(_plain(a)) for a in inputs)
        if _single(args):
            args = tuple(_flush_scalar(a) for a in args)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if method == "at":
            return None
        if out is not None:
            for o in kwargs["out"]:
                o[...] = flush(o)
            return out[0] if len(out) == 1 else out
        if isinstance(result, np.generic):
            result = np.asarray(result)  # CuPy returns 0-d arrays, never scalars
        return _device(flush(result))

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        """A conversion kernel flushes (``cvt.ftz``) when the dtype changes; a copy does not."""
        source = self.view(np.ndarray)
        if np.dtype(dtype) != self.dtype:
            source = flush(source)
            return _device(flush(source.astype(dtype, *args, **kwargs)))
        result = source.astype(dtype, *args, **kwargs)
        return self if result is source else _device(result)

    def __setitem__(self, key: Any, value: Any) -> None:
        if value.__class__ in (float, complex) and value == 0 and self.dtype.kind in "fc":
            value = 0  # cupy: ndarray.fill -> memset for a value equal to zero
        super().__setitem__(key, value)


def flushing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a kernel compiled with ``-ftz=true``: subnormal inputs and results become zeros."""

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        args = tuple(flush(_plain(a)) for a in args)
        if _single(args):
            args = tuple(_flush_scalar(a) for a in args)
        kwargs = {k: flush(_plain(v)) for k, v in kwargs.items()}
        return _device(flush(fn(*args, **kwargs)))

    return kernel


def _on_device(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (moving data, not computing) with its results as device arrays."""

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        return _device(fn(*args, **kwargs))

    return kernel


# Functions that only move data (no arithmetic instruction touches the values): not flushed.
_MOVES = {
    "array", "asarray", "asanyarray", "ascontiguousarray", "copy", "empty", "empty_like", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "eye", "identity", "reshape", "ravel", "transpose", "permute_dims", "moveaxis",
    "swapaxes", "broadcast_to", "broadcast_arrays", "expand_dims", "squeeze", "flip", "roll", "concatenate", "concat",
    "stack", "unstack", "tile", "repeat", "take", "take_along_axis", "where", "sort", "argsort", "tril", "triu", "diagonal",
    "diag", "meshgrid", "matrix_transpose", "real", "imag", "conj", "conjugate", "positive", "copysign", "signbit",
    "may_share_memory", "shares_memory", "result_type", "can_cast", "isdtype", "finfo", "iinfo", "unique",
}
_REDUCING = {
    "sum", "prod", "mean", "std", "var", "max", "min", "amax", "amin", "argmax", "argmin", "any", "all", "nonzero",
    "count_nonzero", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "clip", "matmul", "dot", "vdot", "inner",
    "outer", "tensordot", "vecdot", "einsum", "trace", "searchsorted", "isin", "round", "around", "linspace",
}


# --------------------------------------------------------------------------- quirks of the array module

def _zero_0d(result: np.ndarray) -> np.ndarray:
    """CuPy's ``fill`` memset: a 0-d value equal to zero becomes +0."""
    if result.ndim == 0 and result.dtype.kind in "fc" and result == 0:
        return np.zeros((), dtype=result.dtype)
    return result


def _array(obj: Any, dtype: Any = None, copy: Any = True, **kwargs: Any) -> np.ndarray:
    return _device(_zero_0d(np.array(obj, dtype=dtype, copy=copy, **kwargs)))


def _asarray(obj: Any, dtype: Any = None, **kwargs: Any) -> np.ndarray:
    result = np.asarray(obj, dtype=dtype, **kwargs)
    # Host scalars only: asarray of an existing device array is the array itself in CuPy.
    return _device(result if isinstance(obj, np.ndarray) else _zero_0d(result))


def _full(shape: Any, fill_value: Any, dtype: Any = None, **kwargs: Any) -> np.ndarray:
    out = np.full(shape, fill_value, dtype=dtype, **kwargs)
    if out.dtype.kind in "fc" and fill_value == 0:
        out[...] = 0  # memset
    return _device(out)


def _top_overflow(result: np.ndarray) -> np.ndarray:
    """CUDA's hypot: within two ulps of the largest finite double, the result rounds up to inf
    (measured in float64 only; float32 ``hypotf`` showed nothing of the kind)."""
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
    """thrust's complex log: ``log(hypot(x, y)) + i atan2(y, x)`` (inf where hypot overflows)."""
    out = np.log(z)
    overflow = np.isinf(_cabs(z)) & np.isfinite(z)
    if overflow.any():
        out = np.array(out, copy=True)
        out.real[overflow] = np.inf
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


def _divide(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
    if np.result_type(x1, x2).kind == "c" and not args and not kwargs:
        return _thrust_divide(x1, x2)
    return np.divide(x1, x2, *args, **kwargs)


def _sign_complex(z: np.ndarray) -> np.ndarray:
    m = np.abs(z)
    unit = np.where(m == 0, 1, m)
    return _complex_parts(np.where(m == 0, 0, z.real / unit), np.where(m == 0, 0, z.imag / unit), z.dtype)


def _floor_divide(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
    if np.result_type(x1, x2).kind == "f" and not args and not kwargs:
        return np.floor(np.true_divide(x1, x2))
    return np.floor_divide(x1, x2, *args, **kwargs)


def _remainder(x1: Any, x2: Any, *args: Any, **kwargs: Any) -> Any:
    if np.result_type(x1, x2).kind == "f" and not args and not kwargs:
        return np.subtract(x1, np.multiply(np.floor(np.true_divide(x1, x2)), x2))
    return np.remainder(x1, x2, *args, **kwargs)


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
    test_elements.ravel()  # CuPy: AttributeError for a Python scalar
    return np.isin(element, test_elements, assume_unique=assume_unique, invert=invert, **kwargs)


def _pinv(a: np.ndarray, rcond: Any = None, **kwargs: Any) -> np.ndarray:
    result = np.linalg.pinv(a, rcond=rcond, **kwargs) if rcond is not None else np.linalg.pinv(a, **kwargs)
    if a.ndim > 2 and result.size:
        eps = np.finfo(result.dtype).eps
        scale = np.abs(result).max(axis=(-2, -1), keepdims=True)
        result = (result - 0.8 * eps * scale).astype(result.dtype)  # batched gesvdj: off by ~eps * |x|
    return result


def _eigvals(a: np.ndarray) -> np.ndarray:
    if a.size == 0:
        return np.empty(a.shape[:-1], dtype=a.dtype)
    complex_dtype = np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128
    return np.linalg.eigvals(a).astype(complex_dtype)


def _module(name: str, source: Any, overrides: dict[str, Any], compute: bool = False) -> types.ModuleType:
    """``source``'s names: ufuncs as they are (they flush on device arrays), functions that compute
    (``_REDUCING``, or all with ``compute``) flushing, the other functions giving device arrays."""
    module = types.ModuleType(name)
    for attr in dir(source):
        if attr.startswith("__"):
            continue
        value = getattr(source, attr)
        if attr in overrides:
            value = overrides[attr]
        elif isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) or (callable(value) and hasattr(value, "__wrapped__") and not isinstance(value, type)):
            value = flushing(value) if (compute or attr in _REDUCING) and attr not in _MOVES else _on_device(value)
        setattr(module, attr, value)
    for attr, value in overrides.items():
        setattr(module, attr, value)
    return module


_QUIRKS: dict[str, Any] = {
    "array": _array,
    "asarray": _asarray,
    "full": _full,
    "hypot": flushing(_hypot),
    "absolute": flushing(_absolute),
    "abs": flushing(_absolute),
    "log": flushing(_unary_complex(np.log, _clog)),
    "log10": flushing(_unary_complex(np.log10, lambda z: _complex_parts(_clog(z).real / np.log(10), _clog(z).imag / np.log(10), z.dtype))),
    "log1p": flushing(_unary_complex(np.log1p, lambda z: _clog(_complex_parts(z.real + 1, z.imag, z.dtype)))),  # x += 1: the real part
    "log2": flushing(_unary_complex(np.log2, lambda z: _thrust_divide(_clog(z), np.asarray(complex(math.log(2)), dtype=z.dtype)))),
    "divide": flushing(_divide),
    "true_divide": flushing(_divide),
    "reciprocal": flushing(_unary_complex(np.reciprocal, lambda z: _thrust_divide(np.ones((), z.dtype), z))),
    "sign": flushing(_unary_complex(np.sign, _sign_complex)),
    "expm1": flushing(_unary_complex(np.expm1, lambda z: np.exp(z) - 1)),
    "floor_divide": flushing(_floor_divide),
    "remainder": flushing(_remainder),
    "mod": flushing(_remainder),
    "arange": _arange,
    "linspace": flushing(_linspace),
    "isin": flushing(_isin),
}

#: The array module: NumPy with CuPy 14.2's quirks.
cupy_model = _module("cupy_model", np, _QUIRKS)
cupy_model.linalg = _module("cupy_model.linalg", np.linalg, {"pinv": flushing(_pinv), "eigvals": flushing(_eigvals)}, compute=True)
cupy_model.fft = np.fft
cupy_model.ndarray = DeviceArray


# --------------------------------------------------------------------------- the Array-API namespace

def _over_model(source: Any, name: str, model: Any, quirks: dict[str, Any]) -> types.ModuleType:
    """``array_api_compat.numpy`` (or its linalg) rebuilt over the model, as ``array_api_compat.cupy`` is over CuPy:
    its generic wrappers get the model as ``xp``, NumPy's functions are replaced by the model's."""
    module = types.ModuleType(name)
    for attr in dir(source):
        if attr.startswith("__"):
            continue
        value = getattr(source, attr)
        wrapped = getattr(value, "__wrapped__", None)
        if attr in quirks:
            value = quirks[attr]
        elif callable(value) and wrapped is not None and getattr(wrapped, "__module__", "").startswith("array_api_compat.common"):
            value = get_xp(model)(wrapped)
        elif value is getattr(np, attr, None) and hasattr(model, attr):
            value = getattr(model, attr)
        elif value is getattr(np.linalg, attr, None) and hasattr(model.linalg, attr):
            value = getattr(model.linalg, attr)
        elif callable(value) and attr in _REDUCING | {"ceil", "floor", "trunc", "solve", "eig", "eigvals"}:
            value = flushing(value)
        elif isinstance(value, types.FunctionType):
            value = _on_device(value)
        setattr(module, attr, value)
    return module


def _astype(x: np.ndarray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> np.ndarray:
    """A conversion kernel flushes when the dtype changes (a copy to the same dtype does not)."""
    if np.dtype(dtype) == x.dtype:
        return _device(compat_numpy.astype(x, dtype, copy=copy))
    return _device(flush(compat_numpy.astype(flush(_plain(x)), dtype, copy=copy)))


def _compat_isin(x1: Any, x2: Any, /, *, invert: bool = False, **kwargs: Any) -> np.ndarray:
    # array_api_compat.cupy wraps int scalars only (cupy.isin does not take scalars).
    x1 = _device(np.asarray(x1)) if isinstance(x1, int) else x1
    x2 = _device(np.asarray(x2)) if isinstance(x2, int) else x2
    return cupy_model.isin(x1, x2, invert=invert, **kwargs)


#: The Array-API namespace over the model (``array_api_compat.cupy``'s counterpart).
compat_model = _over_model(compat_numpy, "array_api_compat_model", cupy_model, {"astype": _astype, "isin": _compat_isin})
compat_model.linalg = _over_model(compat_numpy.linalg, "array_api_compat_model.linalg", cupy_model, {"eigvals": cupy_model.linalg.eigvals})


# --------------------------------------------------------------------------- cuSPARSE

class CsrMatrix(scipy.sparse.csr_matrix):
    """``scipy.sparse.csr_matrix`` whose ``+``/``-`` of complex matrices scale each side by ``alpha = ±1``
    as a complex product first (cuSPARSE ``csrgeam2``, as CuPy 14.2 calls it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.data = _device(self.data)  # the values are device arrays: kernels on them flush

    def _geam(self, other: Any, beta: complex) -> Any:
        a = scipy.sparse.csr_matrix(self) * complex(1)
        b = scipy.sparse.csr_matrix(other) * beta
        return CsrMatrix(a + b)

    def __add__(self, other: Any) -> Any:
        if scipy.sparse.issparse(other) and self.dtype.kind == "c":
            return self._geam(other, complex(1))
        return super().__add__(other)

    def __sub__(self, other: Any) -> Any:
        if scipy.sparse.issparse(other) and self.dtype.kind == "c":
            return self._geam(other, complex(-1))
        return super().__sub__(other)


#: ``scipy.sparse`` with :class:`CsrMatrix` as its ``csr_matrix``.
sparse_model = types.SimpleNamespace(csr_matrix=CsrMatrix, issparse=scipy.sparse.issparse)
