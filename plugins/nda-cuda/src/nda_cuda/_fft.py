"""nda's ``fft`` ops on cuFFT through ``cupy.fft``: the reference's conventions, CuPy's plans.

nda's catalog declares the ten transforms with NumPy 2's ``numpy.fft`` as reference (wrapped to pin
the output to the input's precision) and plans every call: the kernel gets complex input for the
complex transforms (real input is cast up by the plan), real input for ``rfft``/``ihfft``/``rfftn``,
and its keywords by name: ``n``, ``axis`` and ``norm`` (one axis) or ``s``, ``axes`` and ``norm``
(``axes`` always a tuple of non-negative axes, ``s`` None or one length per axis). The kernels here
map that onto ``cupy.fft`` (CuPy 14.2, ``cupy/fft/_fft.py``):

* **precision**: cuFFT transforms complex64 (C2C), float32 (R2C) and complex64 (C2R) in single
  precision and the 64-bit dtypes in double, which is what the reference computes (NumPy 2's
  pocketfft is single precision for float32/complex64, and the catalog pins the output dtype), so
  nothing is cast here; ``irfft`` of complex64 is float32 (CuPy casts one-axis C2R results to the
  input's real precision);
* **arguments**: passed by keyword, ``norm`` always explicit (CuPy's ``None`` is "backward");
  ``hfft``/``ihfft`` are CuPy's (``irfft`` of the conjugate, the conjugate of ``rfft``, with the
  opposite norm), as NumPy defines them;
* **zero-size batches**: CuPy's n-dimensional plans (``PlanNd``: two or three contiguous axes that
  include the first or the last) refuse an operand with *any* dimension of size zero, batch
  dimensions included (``ValueError: Invalid number of FFT data points (0) specified.``), where
  NumPy returns an empty result: when every transformed length is at least one and the result is
  empty anyway, the kernel returns the empty array without calling CuPy (a transformed length of
  zero still raises, as it does in NumPy);
* ``irfftn`` **of several axes** is NumPy's definition, the inverse complex transform of the other
  axes (``ifftn``) and then the inverse real transform of the last (``irfft``): cuFFT documents its
  n-dimensional C2R input as Hermitian-symmetric in every transformed dimension and leaves other
  input undefined, while NumPy's (and the standard's) ``irfftn`` is defined for any input;
* ``s`` **is applied here** (each transformed axis cropped or zero-padded, then CuPy called without
  ``s``): CuPy's ``_cook_shape`` skips cropping and padding whenever ``s`` equals the operand's
  *whole* shape, whatever the axes, so ``ifftn`` of a ``(2, 3)`` array with ``axes=(1, 0)`` and
  ``s=(2, 3)`` (axis 1 to 2 points, axis 0 to 3) returned a ``(2, 3)`` result instead of ``(3, 2)``;
* ``axes=()``: complex transforms return their operand (CuPy returns the array itself, which nda's
  kernel wrapper copies: the result never aliases the input), real ones raise ``IndexError``, as in
  NumPy.

cuFFT computes in another order than pocketfft: results agree to rounding relative to the size of
the input, not of each output element (an output that cancels to ~0 is noise of ``eps * sum|x|``
in both); the conformance kit compares transforms that way (``nda.testing.conformance``).

Everything takes the array module as a parameter: the tests run these kernels over the CuPy model
(``tests/_cupy_fft.py``), which refuses what CuPy refuses.

Layer: nda-cuda (a plugin; nda's public modules only).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

__all__ = ["OPS", "factories"]

#: One-axis and many-axes transforms (``fft.<name>``).
ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
MANY_AXES = ("fftn", "ifftn", "rfftn", "irfftn")
OPS = tuple(f"fft.{n}" for n in ONE_AXIS + MANY_AXES)
_REAL_OUT = ("irfft", "hfft", "irfftn")


def _one_axis(name: str) -> Callable[[Any], Callable[..., Any]]:
    def factory(xp: Any) -> Callable[..., Any]:
        def transform(x: Any, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
            return getattr(xp.fft, name)(x, n=n, axis=axis, norm=norm)

        transform.__name__ = transform.__qualname__ = name
        return transform

    return factory


def _lengths(name: str, shape: tuple[int, ...], s: Any, axes: tuple[int, ...]) -> tuple[list[int], tuple[int, ...]]:
    """(the transformed input lengths after cropping/padding, the result's shape) of a many-axes transform."""
    lengths = [shape[a] if s is None else int(s[i]) for i, a in enumerate(axes)]
    out = list(shape)
    for a, length in zip(axes, lengths):
        out[a] = length
    if axes and name == "rfftn":
        out[axes[-1]] = lengths[-1] // 2 + 1
    elif axes and name == "irfftn":
        last = axes[-1]
        out[last] = 2 * (shape[last] - 1) if s is None else int(s[-1])
        lengths[-1] = shape[last] if s is None else int(s[-1]) // 2 + 1
    return lengths, tuple(out)


def _dtype(name: str, x: Any) -> Any:
    single = x.dtype in (np.float32, np.complex64)
    if name in _REAL_OUT:
        return np.float32 if single else np.float64
    return np.complex64 if single else np.complex128


def _cooked(xp: Any, x: Any, axes: tuple[int, ...], lengths: list[int]) -> Any:
    """``x`` cropped or zero-padded to ``lengths`` along ``axes`` (NumPy's and CuPy's ``s``)."""
    for axis, length in zip(axes, lengths):
        have = x.shape[axis]
        if have == length:
            continue
        index = [slice(None)] * x.ndim
        if have > length:
            index[axis] = slice(0, length)
            x = x[tuple(index)]
        else:
            shape = list(x.shape)
            shape[axis] = length
            padded = xp.zeros(tuple(shape), dtype=x.dtype)
            index[axis] = slice(0, have)
            padded[tuple(index)] = x
            x = padded
    return x


def _many_axes(name: str) -> Callable[[Any], Callable[..., Any]]:
    def factory(xp: Any) -> Callable[..., Any]:
        def transform(x: Any, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
            axes = tuple(range(x.ndim)) if axes is None else tuple(axes)
            if not axes:
                return getattr(xp.fft, name)(x, axes=axes, norm=norm)  # the operand (complex), IndexError (real)
            lengths, shape = _lengths(name, x.shape, s, axes)
            if min(lengths) >= 1 and math.prod(shape) == 0:
                return xp.empty(shape, dtype=_dtype(name, x))  # cuFFT's n-d plans refuse zero-size batches
            if s is not None:
                x = _cooked(xp, x, axes, lengths)  # not CuPy's s (see the module docstring)
            if name != "irfftn":
                return getattr(xp.fft, name)(x, axes=axes, norm=norm)
            head = xp.fft.ifftn(x, axes=axes[:-1], norm=norm) if len(axes) > 1 else x
            return xp.fft.irfft(head, n=shape[axes[-1]], axis=axes[-1], norm=norm)

        transform.__name__ = transform.__qualname__ = name
        return transform

    return factory


def factories() -> dict[str, Callable[[Any], Callable[..., Any]]]:
    """op -> factory(xp) of its kernel, for :data:`nda_cuda._kernels.OVERRIDES`."""
    found: dict[str, Callable[[Any], Callable[..., Any]]] = {f"fft.{n}": _one_axis(n) for n in ONE_AXIS}
    found.update({f"fft.{n}": _many_axes(n) for n in MANY_AXES})
    return found
