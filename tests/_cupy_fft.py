"""CuPy 14.2's ``cupy.fft`` in the model: cuFFT's plans and the conventions CuPy wraps around them.

Part of the CuPy model (``tests/_cupy_quirks.py`` installs these as ``cupy_model.fft``). Each rule
follows CuPy's source (``cupy/fft/_fft.py``; ``cupy/cuda/cufft.pyx`` for the plans), which the
GPU never contradicted (nda's fft ops ran through the host fallback until issue 35):

* the operand must be a device array (``TypeError: The input array a must be a cupy.ndarray``);
* dtypes (``_output_dtype``): complex transforms compute float16/float32/complex64 input in
  complex64 and everything else that is not complex in complex128; real-input transforms (R2C)
  take float16/float32 as float32, the *real part* of complex input, everything else as float64;
  so a single-precision input is transformed in single precision (cuFFT's C2C/R2C/C2R), as NumPy 2
  does (pocketfft in float);
* ``n``/``s`` crop or zero-pad the input (``_cook_shape``); for an inverse real transform (C2R)
  the input's last axis to ``s[-1] // 2 + 1``; a transform of fewer than one point is refused
  (``ValueError: Invalid number of FFT data points (0) specified.``);
* ``axes=()``: complex transforms return the operand itself (no copy), real ones raise
  ``IndexError`` (NumPy 2 does the same); ``norm`` must be ``None``, ``"backward"``, ``"ortho"`` or
  ``"forward"`` (``ValueError``), checked after the empty-axes return;
* one-dimensional plans (``Plan1d``, ``_fft``): a multi-axis complex transform is one plan per axis
  in the order given, each normalised on its own; a real one transforms its last axis (R2C first,
  C2R last) and the others as complex transforms; the normalisation is a division by the number of
  points (``out /= n``, ``sqrt(n)`` for "ortho"), a kernel of its own after cuFFT's unnormalised
  transform (a batch of zero transforms runs no plan);
* n-dimensional plans (``PlanNd``, ``_fftn``) for 2 or 3 sorted contiguous axes that include the
  first or the last one (``_nd_plan_is_possible``; not for R2C/C2R of an F-ordered array): every
  dimension of the (cropped or padded) operand must be at least 1, batch dimensions included:
  ``fftn`` of a ``(0, 3, 4)`` array over axes ``(1, 2)`` raises ``ValueError: Invalid number of
  FFT data points (0) specified.`` where NumPy returns an empty result. cuFFT's n-dimensional C2R
  documents its input as Hermitian-symmetric in every transformed dimension; the model computes
  NumPy's definition (inverse transforms of the other axes, then C2R of the last), which cuFFT's
  is not known to agree with on other input;
* ``irfft``/``irfftn`` of one axis return the real dtype of the input's precision; ``hfft`` is
  ``irfft`` of the conjugate with the opposite norm, ``ihfft`` the conjugate of ``rfft``.

Arithmetic is pocketfft's (NumPy's) in the transform's precision with CuPy's separate
normalisation; float32/complex64 subnormals are flushed in and out (the model's kernels flush).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import _cupy_streams as streams
from _cupy_device import DeviceArray, device, flush, plain

__all__ = ["FFT"]

_NORMS = ("backward", "ortho", "forward")
_INVALID = "Invalid number of FFT data points ({}) specified."


def _output_dtype(dtype: np.dtype, value_type: str) -> np.dtype:
    if value_type != "R2C":
        if dtype in (np.float16, np.float32):
            return np.dtype(np.complex64)
        if dtype not in (np.complex64, np.complex128):
            return np.dtype(np.complex128)
        return dtype
    if dtype in (np.complex64, np.complex128):
        return np.dtype(dtype.char.lower())
    if dtype == np.float16:
        return np.dtype(np.float32)
    if dtype not in (np.float32, np.float64):
        return np.dtype(np.float64)
    return dtype


def _convert(a: np.ndarray, value_type: str) -> np.ndarray:
    dtype = _output_dtype(a.dtype, value_type)
    if dtype == a.dtype:
        return a
    with np.errstate(all="ignore"):
        return flush(a.real.astype(dtype) if dtype.kind == "f" and a.dtype.kind == "c" else a.astype(dtype))


def _cook(a: np.ndarray, s: Any, axes: Any, value_type: str) -> np.ndarray:
    """``_cook_shape``: crop or zero-pad ``a`` to ``s`` along ``axes`` (C2R: the last to ``s[-1] // 2 + 1``)."""
    if s is None or tuple(s) == a.shape:
        return a
    s = list(s)
    if value_type == "C2R" and s[-1] is not None:
        s[-1] = s[-1] // 2 + 1
    for size, axis in zip(s, axes):
        if size is None or size == a.shape[axis]:
            continue
        if a.shape[axis] > size:
            index = [slice(None)] * a.ndim
            index[axis] = slice(0, size)
            a = a[tuple(index)]
        else:
            shape = list(a.shape)
            index = [slice(None)] * a.ndim
            index[axis] = slice(0, shape[axis])
            shape[axis] = size
            padded = np.zeros(shape, a.dtype)
            padded[tuple(index)] = a
            a = padded
    return a


def _transform(a: np.ndarray, forward: bool, value_type: str, axes: tuple[int, ...], out_size: int | None) -> np.ndarray:
    """cuFFT's unnormalised transform over ``axes`` (the last one the real one), in ``a``'s precision."""
    single = a.dtype in (np.float32, np.complex64)
    with np.errstate(all="ignore"):
        if value_type == "C2C":
            fn = np.fft.fftn if forward else np.fft.ifftn
            out = fn(a, axes=axes, norm="backward" if forward else "forward")
        elif value_type == "R2C":
            out = np.fft.rfftn(a, axes=axes, norm="backward")
        else:
            s = [a.shape[ax] for ax in axes[:-1]] + [out_size]
            out = np.fft.irfftn(a, s=s, axes=axes, norm="forward")
    dtype = (np.complex64 if single else np.complex128) if value_type != "C2R" else (np.float32 if single else np.float64)
    return out.astype(dtype, copy=False)


def _normalise(out: np.ndarray, forward: bool, norm: str, points: int) -> np.ndarray:
    """CuPy's ``out /= sz`` after the plan (a kernel of its own: flushed)."""
    with np.errstate(all="ignore"):
        if norm == "backward" and not forward:
            out = out / points  # a Python scalar: the array's precision (NEP 50, as CuPy's in-place division)
        elif norm == "ortho":
            out = out / math.sqrt(points)
        elif norm == "forward" and forward:
            out = out / points
    return flush(np.asarray(out))


def _exec_1d(a: np.ndarray, forward: bool, value_type: str, norm: str, axis: int, out_size: int | None = None) -> np.ndarray:
    """``_exec_fft``: one ``Plan1d`` along ``axis``."""
    n = a.shape[axis]
    if n < 1:
        raise ValueError(_INVALID.format(n))
    points = n if value_type == "R2C" else (out_size if out_size is not None else n)
    out = _transform(flush(a), forward, value_type, (axis % a.ndim,), points if value_type == "C2R" else None)
    return _normalise(out, forward, norm, points)


def _check_norm(norm: Any) -> str:
    norm = "backward" if norm is None else norm
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}, should be "backward", "ortho", or "forward".')
    return norm  # type: ignore[no-any-return]


def _out_size(shape: tuple[int, ...], s: Any, last_axis: int, value_type: str) -> int | None:
    if value_type == "C2R":
        return 2 * (shape[last_axis] - 1) if s is None or s[-1] is None else s[-1]
    if value_type == "R2C":
        return shape[last_axis] // 2 + 1
    return None


def _fft_1d_plans(a: np.ndarray, s: Any, axes: Any, norm: Any, forward: bool, value_type: str) -> np.ndarray:
    """``_fft``: one-dimensional plans, axis by axis."""
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if axes is None:
        axes = list(range(-(a.ndim if s is None else len(s)), 0))
    else:
        axes = tuple(axes)
    if not axes:
        if value_type == "C2C":
            return a
        raise IndexError("list index out of range")
    norm = _check_norm(norm)
    a = _convert(a, value_type)
    a = _cook(a, s, axes, value_type)
    if value_type == "C2C":
        for axis in axes:
            a = _exec_1d(a, forward, "C2C", norm, axis)
        return a
    if value_type == "R2C":
        a = _exec_1d(a, forward, "R2C", norm, axes[-1])
        for axis in axes[:-1]:
            a = _exec_1d(a, forward, "C2C", norm, axis)
        return a
    for axis in axes[:-1]:
        a = _exec_1d(a, forward, "C2C", norm, axis)
    return _exec_1d(a, forward, "C2R", norm, axes[-1], _out_size(a.shape, s, axes[-1], "C2R"))


def _prep_axes(ndim: int, s: Any, axes: Any, value_type: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if axes is None:
        dim = ndim if s is None else len(s)
        found = tuple(i + ndim for i in range(-dim, 0))
        return found, found
    axes = tuple(axes)
    if not axes:
        return (), ()
    if min(axes) < -ndim or max(axes) > ndim - 1:
        raise ValueError("The specified axes exceed the array dimensions.")
    if value_type == "C2C":
        return axes, tuple(sorted(ax % ndim for ax in axes))
    return axes, tuple(sorted(ax % ndim for ax in axes[:-1])) + (axes[-1] % ndim,)


def _nd_plan_possible(axes_sorted: tuple[int, ...], ndim: int) -> bool:
    return (
        0 < len(axes_sorted) <= 3
        and (0 in axes_sorted or ndim - 1 in axes_sorted)
        and all(axes_sorted[i + 1] - axes_sorted[i] == 1 for i in range(len(axes_sorted) - 1))
    )


def _fftn_plan(a: np.ndarray, s: Any, axes: Any, norm: Any, forward: bool, value_type: str) -> np.ndarray:
    """``_fftn``: one n-dimensional plan over the sorted axes."""
    norm = _check_norm(norm)
    axes, axes_sorted = _prep_axes(a.ndim, s, axes, value_type)
    if not axes_sorted:
        if value_type == "C2C":
            return a
        raise IndexError("list index out of range")
    a = _convert(a, value_type)
    a = _cook(a, s, axes, value_type)
    for n in a.shape:  # batch dimensions too
        if n < 1:
            raise ValueError(_INVALID.format(n))
    out_size = _out_size(a.shape, s, axes_sorted[-1], value_type)
    out = _transform(flush(a), forward, value_type, axes_sorted, out_size)
    sized = a if value_type == "R2C" else out
    return _normalise(out, forward, norm, math.prod(sized.shape[ax] for ax in axes_sorted))


def _default_func(a: np.ndarray, s: Any, axes: Any, value_type: str) -> Any:
    """``_default_fft_func``: which path CuPy takes (n-dimensional planning is on by default)."""
    if a.ndim == 1:
        return _fft_1d_plans
    if a.flags.f_contiguous and value_type != "C2C":  # (a (1, n) array is F-contiguous too)
        return _fft_1d_plans
    _, axes_sorted = _prep_axes(a.ndim, s, axes, value_type)
    if len(axes_sorted) > 1 and _nd_plan_possible(axes_sorted, a.ndim):
        return _fftn_plan
    return _fft_1d_plans


def _operand(a: Any) -> np.ndarray:
    if a.__class__ is not DeviceArray:
        raise TypeError("The input array a must be a cupy.ndarray")
    streams.before_kernel()
    return plain(a)


def _result(out: np.ndarray, a: Any) -> Any:
    if out is plain(a):
        return a  # axes=(): the operand itself
    return device(out)


def _one(name: str, forward: bool, value_type: str) -> Any:
    def transform(a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Any:
        host = _operand(a)
        out = _fft_1d_plans(host, (n,), (axis,), norm, forward, value_type)
        if value_type == "C2R" and out.dtype.kind == "f":
            out = out.astype(np.result_type(host.real.dtype, 1.0), copy=False)  # _compat_caster
        return _result(out, a)

    transform.__name__ = transform.__qualname__ = name
    return transform


def _many(name: str, forward: bool, value_type: str) -> Any:
    def transform(a: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Any:
        host = _operand(a)
        out = _default_func(host, s, axes, value_type)(host, s, axes, norm, forward, value_type)
        if value_type == "C2R" and axes is not None and len(axes) == 1:
            out = out.astype(np.result_type(host.real.dtype, 1.0), copy=False)
        return _result(out, a)

    transform.__name__ = transform.__qualname__ = name
    return transform


def _swap(norm: Any) -> str:
    if norm in (None, "backward"):
        return "forward"
    if norm == "forward":
        return "backward"
    if norm != "ortho":
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho", or "forward".')
    return "ortho"


_irfft = _one("irfft", False, "C2R")
_rfft = _one("rfft", True, "R2C")


def hfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Any:
    return _irfft(a.conj(), n, axis, _swap(norm))


def ihfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Any:
    return _rfft(a, n, axis, _swap(norm)).conj()


#: The model's ``cupy.fft`` functions nda-cuda calls (the rest of the module is NumPy's, flushed).
FFT: dict[str, Any] = {
    "fft": _one("fft", True, "C2C"),
    "ifft": _one("ifft", False, "C2C"),
    "rfft": _rfft,
    "irfft": _irfft,
    "hfft": hfft,
    "ihfft": ihfft,
    "fftn": _many("fftn", True, "C2C"),
    "ifftn": _many("ifftn", False, "C2C"),
    "rfftn": _many("rfftn", True, "R2C"),
    "irfftn": _many("irfftn", False, "C2R"),
}
