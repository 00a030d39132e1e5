"""NumPy's linear algebra and FFT functions that nda runs on the device (``__array_function__``).

The ``np.tensordot``/``np.einsum`` products, ``np.linalg`` and ``np.fft`` handlers of :mod:`nda._numpy_functions`' table (the policy is in
``nda._interop``): each calls nda's functions, or raises ``_Fallback`` for what nda cannot
honour (NumPy then computes the call on host copies). ``np.dot``, ``np.outer``, ``np.trace``,
``np.diagonal``, ``np.linalg.norm``/``lstsq`` and ``np.fft.fft2`` and friends run nda's
NumPy-named functions (``nda._numpy_names``).

Layer: arrays and front end, NumPy protocols (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import _api, _composite
from . import fft as _fft
from . import linalg as _linalg
from ._interop_args import FUNCTIONS, _Call, _NoValue, _axis, _check_defaults, _leftover, _refuse, _register, _store, _unsupported

__all__ = ["FUNCTIONS"]


# products and linear algebra ---------------------------------------------------------------------


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


# fft ---------------------------------------------------------------------------------------------


def _fft_handler(name: str, many: bool) -> Callable[..., Any]:
    fn = getattr(_fft, name)

    def one(c: _Call, a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
        return _store(c.name, out, fn(c.array(a), n=n, axis=axis, norm="backward" if norm is None else norm))

    def several(c: _Call, a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
        x = c.array(a)
        return _store(
            c.name,
            out,
            fn(x, s=None if s is None else tuple(s), axes=None if axes is None else tuple(axes), norm="backward" if norm is None else norm),
        )

    return several if many else one


for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    _register(getattr(np.fft, _name))(_fft_handler(_name, False))
for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    _register(getattr(np.fft, _name))(_fft_handler(_name, True))


@_register(np.fft.fftshift)
def _fftshift(c: _Call, x: Any, axes: Any = None) -> Any:
    return _fft.fftshift(c.array(x), axes=_axis(axes))


@_register(np.fft.ifftshift)
def _ifftshift(c: _Call, x: Any, axes: Any = None) -> Any:
    return _fft.ifftshift(c.array(x), axes=_axis(axes))
