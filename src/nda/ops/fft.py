"""The standard's ``fft`` extension: ops named ``"fft.<name>"``, public as ``nda.fft.<name>``.

Precision is kept: float32/complex64 input transforms in complex64, float64/complex128 in
complex128 (NumPy 2's ``numpy.fft`` does the same, so it is the reference kernel).
``fft``/``ifft``/``fftn``/``ifftn`` accept real floating input too and cast it to the
complex dtype of its precision (the standard only asks for complex input; NumPy users
expect real input to work). ``norm`` is ``"backward"`` (default), ``"ortho"`` or
``"forward"``. ``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` are built from
other ops in ``nda.fft`` itself.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .spec import Cast, Plan, check_array, check_dtype_category, declare, int_arg, normalize_axis
from ._vjp import conj
from .linalg_extension import complex_dtype, real_dtype

_ARRAY = "NDArray"
_NORMS = ("backward", "ortho", "forward")


def _length(op: str, n: Any, name: str = "n") -> int | None:
    return None if n is None else int_arg(n, op, name, minimum=1)


def _sequence(value: Any) -> Any:
    """A list (any non-string sequence) of ints as a tuple; None and everything else unchanged."""
    if value is None or isinstance(value, (tuple, str, bytes)) or not hasattr(value, "__len__") or not hasattr(value, "__getitem__"):
        return value
    return tuple(value)


def _norm(op: str, norm: Any) -> str:
    if norm not in _NORMS:
        raise ValueError(f"{op}(): norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return norm  # type: ignore[no-any-return]


def _input(op: str, x: Any, kind: str) -> tuple[Any, Any]:
    """The array and what the kernel gets: complex input (real input cast up), or real input."""
    x = check_array(x, op)
    if x.ndim == 0:
        raise ValueError(f"{op}() needs an array of at least one dimension, got a 0-d array")
    if kind == "real":
        check_dtype_category(x, "real floating", op)
        return x, x
    if kind == "complex":
        check_dtype_category(x, "complex floating", op)
        return x, x
    check_dtype_category(x, "floating", op)
    target = complex_dtype(x.dtype)
    return x, (x if x.dtype is target else Cast(x, target))


def _one_axis(op: str, x: Any, n: Any, axis: Any, norm: Any, kind: str, out_length: Any, out_kind: str) -> Plan:
    x, arg = _input(op, x, kind)
    ax = normalize_axis(axis, x.ndim, op)
    length = _length(op, n)
    shape = list(x.shape)
    shape[ax] = out_length(length, x.shape[ax])
    if shape[ax] < 1:
        raise ValueError(f"{op}(): the output would have {shape[ax]} points along axis {ax}; pass n= (input shape {x.shape})")
    return _plan(x, arg, out_kind, tuple(shape), {"n": length, "axis": ax, "norm": _norm(op, norm)})


def _many_axes(op: str, x: Any, s: Any, axes: Any, norm: Any, kind: str, out_kind: str, last: Any = None) -> Plan:
    x, arg = _input(op, x, kind)
    s, axes = _sequence(s), _sequence(axes)  # the standard says Sequence[int]: lists too
    if axes is None:
        if s is None:
            ax = tuple(range(x.ndim))
        else:
            ax = tuple(range(x.ndim - len(s), x.ndim))
    else:
        ax = tuple(normalize_axis(a, x.ndim, op) for a in axes)
        if len(set(ax)) != len(ax):
            raise ValueError(f"{op}(): repeated axis in {axes}")
    if s is not None:
        if not isinstance(s, tuple) or len(s) != len(ax):
            raise ValueError(f"{op}(): s must be a sequence with one length per transformed axis ({len(ax)}), got {s!r}")
        sizes: tuple[Any, ...] = tuple(None if v == -1 else _length(op, v, "s[i]") for v in s)
    else:
        sizes = (None,) * len(ax)
    shape = list(x.shape)
    for a, size in zip(ax, sizes):
        shape[a] = x.shape[a] if size is None else size
    if last is not None and ax:
        a = ax[-1]
        shape[a] = last(sizes[-1], x.shape[a])
    if any(shape[a] < 1 for a in ax):
        raise ValueError(f"{op}(): an output axis would be empty (input shape {x.shape}, s={s}); pass s=")
    kernel_s = None if s is None else tuple(x.shape[a] if size is None else size for a, size in zip(ax, sizes))
    return _plan(x, arg, out_kind, tuple(shape), {"s": kernel_s, "axes": ax, "norm": _norm(op, norm)})


def _plan(x: Any, arg: Any, out_kind: str, shape: tuple[int, ...], kwargs: dict[str, Any]) -> Plan:
    """Keyed by the dtype the kernel computes in: the complex one when real input is cast up."""
    key_dtype = arg.dtype if isinstance(arg, Cast) else x.dtype
    out_dtype = complex_dtype(x.dtype) if out_kind == "complex" else real_dtype(x.dtype)
    return Plan(x.device, key_dtype, out_dtype, shape, (arg,), kwargs, reads=(x,))


def _same(n: int | None, m: int) -> int:
    return m if n is None else n


def _half(n: int | None, m: int) -> int:
    return (m if n is None else n) // 2 + 1


def _full(n: int | None, m: int) -> int:
    return 2 * (m - 1) if n is None else n


def _reference(name: str, *, out: str) -> Any:
    """``numpy.fft.<name>`` with the output dtype pinned to the input's precision (``numpy.fft``
    is looked up at the call: NumPy imports it on first use, and importing nda does not need it)."""

    def reference(x: np.ndarray, **kwargs: Any) -> np.ndarray:
        result = getattr(np.fft, name)(x, **kwargs)
        single = x.dtype in (np.float32, np.complex64)
        dtype = (np.complex64 if single else np.complex128) if out == "complex" else (np.float32 if single else np.float64)
        return result.astype(dtype, copy=False)

    reference.__name__ = reference.__qualname__ = f"_ref_{name}"
    return reference


def _declare_one(name: str, kind: str, out_length: Any, out_kind: str, doc: str) -> None:
    def plan(x: _ARRAY, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Plan:
        return _one_axis(name, x, n, axis, norm, kind, out_length, out_kind)

    plan.__doc__ = doc
    plan.__name__ = plan.__qualname__ = name
    declare(
        f"fft.{name}",
        dtypes="real floating" if kind == "real" else "complex floating",
        reference=_reference(name, out=out_kind),
        vjp=_VJPS[name],
        host_values=("n",),
    )(plan)


def _declare_many(name: str, kind: str, out_kind: str, last: Any, doc: str) -> None:
    def plan(x: _ARRAY, /, *, s: tuple[int, ...] | None = None, axes: tuple[int, ...] | None = None, norm: str = "backward") -> Plan:
        return _many_axes(name, x, s, axes, norm, kind, out_kind, last)

    plan.__doc__ = doc
    plan.__name__ = plan.__qualname__ = name
    declare(
        f"fft.{name}",
        dtypes="real floating" if kind == "real" else "complex floating",
        reference=_reference(name, out=out_kind),
        vjp=_VJPS[name],
        host_values=("s",),
    )(plan)


# ----------------------------------------------------------------------------- vector-Jacobian products
# A transform with norm ``m`` is linear; its adjoint is the inverse transform with the
# opposite norm (backward <-> forward, ortho <-> ortho). Cropping or zero-padding the
# input (``n``, ``s``) has zero-padding or cropping as adjoint. The real transforms add
# the Hermitian symmetry: rfft's adjoint is the real part of a full inverse transform
# of the zero-padded half spectrum; irfft's is rfft with the non-redundant terms doubled.

_OPPOSITE = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _resize(nd: Any, a: Any, axis: int, length: int) -> Any:
    """``a`` cropped or zero-padded to ``length`` along ``axis``."""
    have = a.shape[axis]
    if have > length:
        return a[(slice(None),) * axis + (slice(0, length),)]
    if have < length:
        pad = nd.zeros(a.shape[:axis] + (length - have,) + a.shape[axis + 1 :], dtype=a.dtype, device=a.device)
        return nd.concat([a, pad], axis=axis)
    return a


def _transform_axes(x: Any, s: Any, axes: Any) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    return tuple(normalize_axis(a, x.ndim, "fft") for a in axes)


def _rfft_adjoint(nd: Any, g: Any, axis: int, points: int, norm: str, length: int) -> Any:
    """Adjoint of ``rfft`` of ``points`` points along ``axis`` (input ``length`` long)."""
    full = nd.fft.ifft(_resize(nd, g, axis, points), axis=axis, norm=_OPPOSITE[norm])
    return _resize(nd, nd.real(full), axis, length)


def _irfft_adjoint(nd: Any, g: Any, axis: int, points: int, norm: str, length: int) -> Any:
    """Adjoint of ``irfft`` to ``points`` real points along ``axis`` (input ``length`` long)."""
    half = nd.fft.rfft(g, n=points, axis=axis, norm=_OPPOSITE[norm])
    k = nd.arange(half.shape[axis], device=g.device)
    single = (k == 0) | (k == points // 2) if points % 2 == 0 else k == 0
    weight = 2.0 - nd.astype(single, nd.float32 if half.dtype == nd.complex64 else nd.float64)
    weight = nd.reshape(weight, tuple(-1 if i == axis else 1 for i in range(g.ndim)))
    return _resize(nd, half * weight, axis, length)


def _complex_vjp(adjoint: str) -> Any:
    def vjp(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> tuple[Any, ...]:
        ax = normalize_axis(axis, x.ndim, "fft")
        return (_resize(nd, getattr(nd.fft, adjoint)(g, axis=ax, norm=_OPPOSITE[norm]), ax, x.shape[ax]),)

    return vjp


def _vjp_rfft(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> tuple[Any, ...]:
    ax = normalize_axis(axis, x.ndim, "rfft")
    return (_rfft_adjoint(nd, g, ax, x.shape[ax] if n is None else n, norm, x.shape[ax]),)


def _vjp_irfft(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> tuple[Any, ...]:
    ax = normalize_axis(axis, x.ndim, "irfft")
    return (_irfft_adjoint(nd, g, ax, y.shape[ax], norm, x.shape[ax]),)


def _vjp_hfft(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> tuple[Any, ...]:
    ax = normalize_axis(axis, x.ndim, "hfft")  # hfft(x) = irfft(conj(x)) with the opposite norm
    return (conj(nd, _irfft_adjoint(nd, g, ax, y.shape[ax], _OPPOSITE[norm], x.shape[ax])),)


def _vjp_ihfft(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, n: Any = None, axis: int = -1, norm: str = "backward") -> tuple[Any, ...]:
    ax = normalize_axis(axis, x.ndim, "ihfft")  # ihfft(x) = conj(rfft(x)) with the opposite norm
    return (_rfft_adjoint(nd, conj(nd, g), ax, x.shape[ax] if n is None else n, _OPPOSITE[norm], x.shape[ax]),)


def _complex_vjp_n(adjoint: str) -> Any:
    def vjp(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> tuple[Any, ...]:
        ax = _transform_axes(x, s, axes)
        out = getattr(nd.fft, adjoint)(g, axes=ax, norm=_OPPOSITE[norm]) if ax else g
        for a in ax:
            out = _resize(nd, out, a, x.shape[a])
        return (out,)

    return vjp


def _vjp_rfftn(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> tuple[Any, ...]:
    ax = _transform_axes(x, s, axes)
    if not ax:
        return (nd.real(g),)
    *rest, last = ax
    out = nd.fft.ifftn(g, axes=tuple(rest), norm=_OPPOSITE[norm]) if rest else g
    for a in rest:
        out = _resize(nd, out, a, x.shape[a])
    points = x.shape[last] if s is None or tuple(s)[-1] in (None, -1) else tuple(s)[-1]
    return (_rfft_adjoint(nd, out, last, points, norm, x.shape[last]),)


def _vjp_irfftn(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> tuple[Any, ...]:
    ax = _transform_axes(x, s, axes)
    if not ax:
        return (g,)
    *rest, last = ax
    out = _irfft_adjoint(nd, g, last, y.shape[last], norm, x.shape[last])
    if rest:
        out = nd.fft.fftn(out, axes=tuple(rest), norm=_OPPOSITE[norm])
    for a in rest:
        out = _resize(nd, out, a, x.shape[a])
    return (out,)


_VJPS = {
    "fft": _complex_vjp("ifft"),
    "ifft": _complex_vjp("fft"),
    "rfft": _vjp_rfft,
    "irfft": _vjp_irfft,
    "hfft": _vjp_hfft,
    "ihfft": _vjp_ihfft,
    "fftn": _complex_vjp_n("ifftn"),
    "ifftn": _complex_vjp_n("fftn"),
    "rfftn": _vjp_rfftn,
    "irfftn": _vjp_irfftn,
}


_declare_one("fft", "any", _same, "complex", "One-dimensional discrete Fourier transform along ``axis`` (cropped or zero-padded to ``n`` points).")
_declare_one("ifft", "any", _same, "complex", "One-dimensional inverse discrete Fourier transform along ``axis``.")
_declare_one("rfft", "real", _half, "complex", "Transform of real input along ``axis``: the ``n // 2 + 1`` non-negative frequency terms.")
_declare_one("irfft", "complex", _full, "real", "Inverse of :func:`rfft`: ``n`` real points (default ``2 * (m - 1)``) along ``axis``.")
_declare_one("hfft", "complex", _full, "real", "Transform of a Hermitian-symmetric signal given by its first half: ``n`` real points.")
_declare_one("ihfft", "real", _half, "complex", "Inverse of :func:`hfft`: the ``n // 2 + 1`` first terms of a Hermitian spectrum of real input.")
_declare_many("fftn", "any", "complex", None, "N-dimensional discrete Fourier transform over ``axes`` (shapes ``s``).")
_declare_many("ifftn", "any", "complex", None, "N-dimensional inverse discrete Fourier transform over ``axes``.")
_declare_many("rfftn", "real", "complex", _half, "N-dimensional transform of real input; the last axis keeps ``s[-1] // 2 + 1`` terms.")
_declare_many("irfftn", "complex", "real", _full, "Inverse of :func:`rfftn`; the last axis gives ``s[-1]`` real points (default ``2 * (m - 1)``).")
