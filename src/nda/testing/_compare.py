"""Tolerant comparisons of nda arrays (any device, any layout) with each other or with NumPy.

:func:`assert_allclose` is what the conformance kit uses and what a backend's own tests
should use. Compared with ``numpy.testing.assert_allclose`` it

* accepts ``nda.NDArray`` on any device and in any layout (they are brought to the host,
  through ``to_layout("strided")`` when needed) and checks that an array's buffer agrees
  with the array's own dtype and shape;
* picks **dtype-aware default tolerances** (:func:`default_tolerance`): exact for bool and
  integers (an explicit ``rtol``/``atol`` applies to integers as NumPy's does); ``rtol`` 1e-5 for float32/complex64 and 1e-12 for float64/complex128; ``atol``
  the dtype's smallest normal number, so that only flush-to-zero differences below the
  normal range are forgiven;
* handles special values precisely: NaN must meet NaN (a complex number is NaN when
  either part is), infinities must match exactly, sign included, and with
  ``signed_zeros=True`` (the default) ``-0.0`` and ``0.0`` differ;
* checks shapes exactly (no broadcasting) and, by default, dtypes.

The error lists the number of mismatches and the first few, each with its index, both
values and why it failed.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["assert_allclose", "default_tolerance", "mismatches"]

_SHOWN = 6


def default_tolerance(dtype: Any) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing results of ``dtype`` (an nda dtype, a NumPy dtype or a name)."""
    npd = np.dtype(getattr(dtype, "numpy", dtype) if not isinstance(dtype, str) else dtype)
    if npd.kind not in "fc":
        return 0.0, 0.0
    real = np.finfo(npd)
    rtol = 1e-5 if real.bits <= 32 else 1e-12
    return rtol, float(real.smallest_normal)


def host_data(x: Any) -> np.ndarray:
    """A copy of what ``x``'s buffer holds, read after the work that writes it but without
    nda's host-read check (``nda.backends.KernelResultError``): the testing tools report a
    buffer that differs from the declaration themselves, naming the op and the call."""
    import nda

    if x.layout.name != "strided":
        return x.asnumpy()  # (assembled from the layout's parts: the declaration's shape)
    x.wait_to_read()  # a sync point: raises the error of the work that wrote x
    return np.array(nda.backends.read_buffer(x.device, x._buf), copy=True)


def _to_host(value: Any, name: str) -> np.ndarray:
    import nda

    if isinstance(value, nda.NDArray):
        x = value
        if x.layout.name != "strided":
            convert = getattr(x, "to_layout", None)
            if convert is None:
                raise TypeError(f"{name} is a {x.layout.name} array and this nda cannot convert it to strided")
            x = convert("strided")
        host = host_data(x)
        if host.dtype != x.dtype.numpy or host.shape != x.shape:
            raise AssertionError(
                f"{name} reports dtype {x.dtype.name} and shape {x.shape}, but its buffer on {x.device} holds "
                f"{host.dtype} data of shape {host.shape} (the kernel that produced it broke the op's declared result)"
            )
        return host
    return np.asarray(value)


def _within(a: np.ndarray, d: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """``|a - d| <= atol + rtol * |d|`` for finite values, computed without overflow.

    Near the top of the range ``a - d`` or a complex modulus overflows (``|1.27e308+1.27e308j|``
    is past the largest float64), and ``0 * inf`` is NaN: both sides are scaled by a power of
    two, exactly, where the magnitudes are large.
    """
    diff = a - d
    parts = (diff.real, diff.imag, d.real, d.imag) if np.iscomplexobj(diff) else (diff, d)
    magnitude = np.maximum.reduce([np.abs(p) for p in parts])
    magnitude = np.where(np.isfinite(magnitude), magnitude, np.finfo(np.float64).max)
    exponent = np.where(magnitude > 1.0, np.frexp(magnitude)[1], 0)
    if not np.any(exponent):
        return np.abs(diff) <= atol + rtol * np.abs(d)
    if np.iscomplexobj(diff):  # a - d itself overflowed in a part: compare the scaled difference
        scaled_diff = (np.ldexp(a.real, -exponent) - np.ldexp(d.real, -exponent)) + 1j * (np.ldexp(a.imag, -exponent) - np.ldexp(d.imag, -exponent))
        scaled_d = np.ldexp(d.real, -exponent) + 1j * np.ldexp(d.imag, -exponent)
    else:
        scaled_diff = np.ldexp(a, -exponent) - np.ldexp(d, -exponent)
        scaled_d = np.ldexp(d, -exponent)
    return np.abs(scaled_diff) <= np.ldexp(atol, -exponent) + rtol * np.abs(scaled_d)


def mismatches(
    actual: np.ndarray, desired: np.ndarray, *, rtol: float, atol: float, equal_nan: bool = True, signed_zeros: bool = True
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A bool array (True where ``actual`` and ``desired`` disagree) and the reason masks."""
    kind = np.result_type(actual.dtype, desired.dtype).kind
    if kind not in "fc":
        bad = actual != desired
        if kind in "iu" and (rtol or atol) and bad.any():  # tolerances given for integers: as NumPy's, in float64
            a, d = actual.astype(np.float64), desired.astype(np.float64)
            with np.errstate(all="ignore"):
                bad &= ~(np.abs(a - d) <= atol + rtol * np.abs(d))
            return bad, {"outside tolerance": bad}
        return bad, {"not equal": bad}
    a = actual.astype(np.complex128 if kind == "c" else np.float64)
    d = desired.astype(np.complex128 if kind == "c" else np.float64)
    a_nan, d_nan = np.isnan(a), np.isnan(d)  # complex: NaN when either part is
    nan_bad = (a_nan != d_nan) | (d_nan & a_nan & (not equal_nan))
    both = ~(a_nan | d_nan)
    parts_a = (a.real, a.imag) if kind == "c" else (a,)
    parts_d = (d.real, d.imag) if kind == "c" else (d,)
    inf_bad = np.zeros(a.shape, bool)
    zero_bad = np.zeros(a.shape, bool)
    has_inf = np.zeros(a.shape, bool)
    for pa, pd in zip(parts_a, parts_d):
        inf_a, inf_d = np.isinf(pa), np.isinf(pd)
        has_inf |= inf_a | inf_d
        inf_bad |= both & (inf_a | inf_d) & (pa != pd)
        if signed_zeros:
            zero_bad |= both & (pa == 0) & (pd == 0) & (np.signbit(pa) != np.signbit(pd))
    finite = both & ~has_inf
    with np.errstate(all="ignore"):
        tol_bad = finite & (a != d) & ~_within(a, d, rtol, atol)  # equal values agree, whatever their size
        # An element with an infinite part: its finite parts still have to agree.
        for pa, pd in zip(parts_a, parts_d):
            fin = both & has_inf & np.isfinite(pa) & np.isfinite(pd)
            tol_bad |= fin & ~(np.abs(pa - pd) <= atol + rtol * np.abs(pd))
    reasons = {"NaN mismatch": nan_bad, "infinity mismatch": inf_bad, "outside tolerance": tol_bad, "sign of zero": zero_bad}
    return nan_bad | inf_bad | tol_bad | zero_bad, reasons


def assert_allclose(
    actual: Any,
    desired: Any,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    signed_zeros: bool = True,
    check_dtype: bool = True,
    err_msg: str = "",
) -> None:
    """Raise AssertionError unless ``actual`` and ``desired`` agree (see the module docstring).

    ``actual``/``desired`` may be nda arrays (any device, any layout), NumPy arrays or
    anything ``numpy.asarray`` accepts. ``rtol``/``atol`` default to
    :func:`default_tolerance` of ``desired``'s dtype.
    """
    a = _to_host(actual, "actual")
    d = _to_host(desired, "desired")
    header = f"{err_msg}\n" if err_msg else ""
    if a.shape != d.shape:
        raise AssertionError(f"{header}shapes differ: actual {a.shape}, desired {d.shape}")
    if check_dtype and a.dtype != d.dtype:
        raise AssertionError(f"{header}dtypes differ: actual {a.dtype}, desired {d.dtype}")
    default_rtol, default_atol = default_tolerance(d.dtype if d.dtype.kind in "fc" else a.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    bad, reasons = mismatches(a, d, rtol=rtol, atol=atol, equal_nan=equal_nan, signed_zeros=signed_zeros)
    count = int(np.count_nonzero(bad))
    if not count:
        return
    lines = [f"{header}Not equal to tolerance rtol={rtol:g}, atol={atol:g}: {count} of {a.size} elements differ"]
    for index in list(zip(*np.nonzero(bad)))[:_SHOWN] if a.ndim else [()]:
        why = ", ".join(name for name, mask in reasons.items() if mask[index])
        lines.append(f"  at {tuple(int(i) for i in index)}: actual {a[index].item()!r}, desired {d[index].item()!r} ({why})")
    if count > _SHOWN:
        lines.append(f"  … and {count - _SHOWN} more")
    raise AssertionError("\n".join(lines))
