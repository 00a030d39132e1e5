"""NumPy's linear algebra and FFT functions that nda runs on the device (``__array_function__``).

The ``np.dot``/``np.tensordot``/``np.einsum``/``np.outer``/``np.trace``/``np.diagonal`` products, ``np.linalg``
and ``np.fft`` handlers of :mod:`nda._numpy_functions`' table (the policy is in
``nda._interop``): each calls nda's functions, or raises ``_Fallback`` for what nda cannot
honour (NumPy then computes the call on host copies).

Layer: arrays and front end, NumPy protocols (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import _api, _composite
from . import fft as _fft
from . import linalg as _linalg
from ._interop_args import FUNCTIONS, _Call, _NoValue, _axis, _check_defaults, _flat, _leftover, _refuse, _register, _store, _unsupported

__all__ = ["FUNCTIONS"]


# products and linear algebra ---------------------------------------------------------------------

@_register(np.dot)
def _dot(c: _Call, a: Any, b: Any, out: Any = None) -> Any:
    x, y = c.array(a), c.array(b)
    if x.ndim == 0 or y.ndim == 0:
        result = _api.multiply(x, y)
    elif x.ndim <= 2 and y.ndim <= 2 or y.ndim == 1:
        result = _api.matmul(x, y)
    else:
        raise _refuse(c.name, f"N-d dot of shapes {x.shape} and {y.shape} is not nda.matmul; use nda.tensordot(x, y, axes=([-1], [-2]))")
    return _store(c.name, out, result)


@_register(np.tensordot)
def _tensordot(c: _Call, a: Any, b: Any, axes: Any = 2) -> Any:
    if isinstance(axes, (list, tuple)) and len(axes) == 2:
        axes = tuple(tuple(v) if isinstance(v, (list, tuple)) else (v,) for v in axes)
    return _api.tensordot(c.array(a), c.array(b), axes=axes)


@_register(np.einsum)
def _einsum(c: _Call, *operands: Any, out: Any = None, optimize: Any = False, **kw: Any) -> Any:
    _check_defaults(c.name, kw, dtype=None, order="K", casting="safe")
    _leftover(c.name, kw)
    if operands and isinstance(operands[0], str):
        args = [operands[0], *c.arrays(operands[1:])]
    else:  # interleaved: arrays at even positions, sublists at odd ones, and maybe the output's sublist last
        args = list(operands)
        last = len(args) - 1 if len(args) % 2 and len(args) > 2 else len(args)  # an odd count ends with the output's
        for i in range(0, last, 2):
            args[i] = c.array(args[i])
    return _store(c.name, out, _composite.einsum(*args, optimize=optimize))


@_register(np.einsum_path)
def _einsum_path(c: _Call, *operands: Any, optimize: Any = "greedy", einsum_call: Any = False) -> Any:
    if einsum_call:
        raise _unsupported(c.name, "einsum_call", einsum_call)
    if operands and isinstance(operands[0], str):
        return _composite.einsum_path(operands[0], *c.arrays(operands[1:]), optimize=optimize)
    raise _refuse(c.name, "the interleaved form of einsum_path runs on host copies")


@_register(np.outer)
def _outer(c: _Call, a: Any, b: Any, out: Any = None) -> Any:
    return _store(c.name, out, _linalg.outer(_flat(c.array(a)), _flat(c.array(b))))


@_register(np.trace)
def _trace(c: _Call, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None) -> Any:
    x = _composite.moveaxis(c.array(a), (axis1, axis2), (-2, -1))
    return _store(c.name, out, _linalg.trace(x, offset=offset, dtype=dtype))


@_register(np.diagonal)
def _diagonal(c: _Call, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return _linalg.diagonal(_composite.moveaxis(c.array(a), (axis1, axis2), (-2, -1)), offset=offset)


@_register(np.linalg.qr)
def _qr(c: _Call, a: Any, mode: str = "reduced") -> Any:
    if mode not in ("reduced", "complete"):
        raise _unsupported(c.name, "mode", mode)
    return _linalg.qr(c.array(a), mode=mode)


@_register(np.linalg.svd)
def _svd(c: _Call, a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    x = c.array(a)
    return _linalg.svd(x, full_matrices=full_matrices) if compute_uv else _linalg.svdvals(x)


@_register(np.linalg.eigh)
def _eigh(c: _Call, a: Any, UPLO: str = "L") -> Any:  # noqa: N803 - NumPy's name
    if UPLO != "L":
        raise _unsupported(c.name, "UPLO", UPLO)
    return _linalg.eigh(c.array(a))


@_register(np.linalg.eigvalsh)
def _eigvalsh(c: _Call, a: Any, UPLO: str = "L") -> Any:  # noqa: N803 - NumPy's name
    if UPLO != "L":
        raise _unsupported(c.name, "UPLO", UPLO)
    return _linalg.eigvalsh(c.array(a))


@_register(np.linalg.cholesky)
def _cholesky(c: _Call, a: Any, /, *, upper: bool = False) -> Any:
    return _linalg.cholesky(c.array(a), upper=upper)


def _linalg_unary(name: str) -> Callable[..., Any]:
    def handler(c: _Call, a: Any) -> Any:
        return getattr(_linalg, name)(c.array(a))

    return handler


for _name in ("inv", "det", "slogdet", "eig", "eigvals", "svdvals"):
    if hasattr(np.linalg, _name) and hasattr(_linalg, _name):
        _register(getattr(np.linalg, _name))(_linalg_unary(_name))


@_register(np.linalg.solve)
def _solve(c: _Call, a: Any, b: Any) -> Any:
    return _linalg.solve(c.array(a), c.array(b))


@_register(np.linalg.matrix_power)
def _matrix_power(c: _Call, a: Any, n: int) -> Any:
    return _linalg.matrix_power(c.array(a), n)


@_register(np.linalg.pinv)
def _pinv(c: _Call, a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NoValue) -> Any:
    # NumPy's defaults: rcond=1e-15 when neither is given; rtol=None is the Array API's max(M, N) * eps
    if rcond is not None and rtol is not _NoValue:
        raise ValueError(f"{c.name}: rtol and rcond cannot both be set")
    tol = rcond if rcond is not None else 1e-15 if rtol is _NoValue else rtol
    return _linalg.pinv(c.array(a), rtol=None if tol is None else c.operand(tol))


@_register(np.linalg.matrix_rank)
def _matrix_rank(c: _Call, A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:  # noqa: N803
    if tol is not None:
        raise _unsupported(c.name, "tol", tol)
    return _linalg.matrix_rank(c.array(A), rtol=None if rtol is None else c.operand(rtol))


@_register(np.linalg.norm)
def _norm(c: _Call, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    a = c.array(x)
    axis = _axis(axis)
    if axis is None and ord is not None and a.ndim > 2:
        raise ValueError(f"{c.name}: ord={ord!r} needs a 1-d or 2-d array when axis is None, got {a.ndim}-d")
    if isinstance(axis, tuple) and len(axis) == 2 or (axis is None and ord is not None and a.ndim == 2):
        if axis is not None:
            a = _composite.moveaxis(a, axis, (-2, -1))
        result = _linalg.matrix_norm(a, ord="fro" if ord is None else ord, keepdims=False)
        if keepdims:
            shape = list(a.shape[:-2]) + [1, 1]
            result = _composite.moveaxis(_api.reshape(result, tuple(shape)), (-2, -1), axis or (0, 1))
        return result
    return _linalg.vector_norm(a, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)


# fft ---------------------------------------------------------------------------------------------

def _fft_handler(name: str, many: bool) -> Callable[..., Any]:
    fn = getattr(_fft, name)

    def one(c: _Call, a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
        return _store(c.name, out, fn(c.array(a), n=n, axis=axis, norm="backward" if norm is None else norm))

    def several(c: _Call, a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
        x = c.array(a)
        if axes is None and s is None and name in ("fft2", "ifft2", "rfft2", "irfft2"):
            axes = (-2, -1)
        return _store(c.name, out, fn(x, s=None if s is None else tuple(s), axes=None if axes is None else tuple(axes), norm="backward" if norm is None else norm))

    return several if many else one


for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    _register(getattr(np.fft, _name))(_fft_handler(_name, False))
for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    _register(getattr(np.fft, _name))(_fft_handler(_name, True))
for _name, _nda_name in (("fft2", "fftn"), ("ifft2", "ifftn"), ("rfft2", "rfftn"), ("irfft2", "irfftn")):
    _handler = _fft_handler(_nda_name, True)

    def _two(c: _Call, a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None, _h: Any = _handler) -> Any:
        return _h(c, a, s=s, axes=axes, norm=norm, out=out)

    _register(getattr(np.fft, _name))(_two)


@_register(np.fft.fftshift)
def _fftshift(c: _Call, x: Any, axes: Any = None) -> Any:
    return _fft.fftshift(c.array(x), axes=_axis(axes))


@_register(np.fft.ifftshift)
def _ifftshift(c: _Call, x: Any, axes: Any = None) -> Any:
    return _fft.ifftshift(c.array(x), axes=_axis(axes))
