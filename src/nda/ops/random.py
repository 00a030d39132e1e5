"""Random number generation: the stateless Philox4x32-10 ops behind ``nda.random``, and their stream.

``nda.random.Generator`` (the NumPy-shaped API) keeps a key and a counter and calls these
ops; each op is a pure function of ``(shape, key, counter, parameters, dtype)``, so one
seed gives the same bits on every device. The vectorised NumPy kernels
(:mod:`nda.ops._philox`) are the reference; the same stream is written once more as one
C/CUDA source (:func:`kernel_source`, :mod:`nda.ops._philox_source`), which nda-cuda
compiles with NVRTC (``nda_cuda._philox``) and nda compiles for the host as the optional
extension ``nda._philox_native``, the cpu backend's kernels where it is built (the NumPy
ones otherwise, or with ``NDA_NATIVE=0``). nda-sim runs the NumPy kernels on its device
memory, and any other backend gets the cpu kernels through the host fallback.

The stream, exactly (every backend must produce these bits):

* **Block function.** Philox4x32-10 (Salmon et al., SC 2011; the generator of cuRAND's
  ``curandStatePhilox4_32_10``): a 128-bit counter ``(c0, c1, c2, c3)`` and a 64-bit key
  ``(k0, k1)`` give four 32-bit words ``(x0, x1, x2, x3)``; it matches Random123's known
  answers (``tests/test_random.py``).
* **Key and counter.** ``key`` is two 32-bit words; ``counter`` an integer in
  ``[0, 2**128)``. Block ``b`` of a request uses the counter ``(counter + b) mod 2**128``,
  ``c0`` its least significant 32 bits. ``nda.random.default_rng(seed)`` takes the key from
  ``numpy.random.SeedSequence(seed).generate_state(2, numpy.uint32)`` and starts the counter
  at 0.
* **Words to values.** The words of blocks 0, 1, 2, ... are read in order (x0, x1, x2, x3
  of block 0, then block 1's); a value that needs ``w`` words takes the next ``w``; a 64-bit
  value is ``w[i] | w[i+1] << 32``. A request of ``n`` values consumes
  ``ceil(n * w / 4)`` blocks (the leftover words of the last block are dropped) and the
  generator's counter advances by exactly that, on every device.
* **uniform** ``low + span * u`` (``span = high - low`` rounded to the dtype; each operation
  rounded to the dtype, never fused): float64 ``u = (v >> 11) * 2**-53`` from a 64-bit
  value ``v`` (2 words); float32 ``u = (w >> 8) * 2**-24`` (1 word). ``u`` is in [0, 1);
  as in NumPy, rounding can make a value equal ``high``.
* **normal** ``loc + scale * z`` (in the dtype), ``z`` from Box-Muller in float64 on pairs
  of uniforms: ``z0 = r * cos(2*pi*t)``, ``z1 = r * sin(2*pi*t)``, ``r = sqrt(-2 * log(u1))``.
  float64: a pair takes 4 words (a block), ``u1 = 1 - (v1 >> 11) * 2**-53`` in (0, 1],
  ``t = (v2 >> 11) * 2**-53``. float32: a pair takes 2 words, ``u1 = (w1 + 1/2) * 2**-32``,
  ``t = w2 * 2**-32``, and ``z`` is rounded to float32 before ``loc``/``scale``. Values
  ``2i`` and ``2i + 1`` are the cos and sin of pair ``i``. ``log``, ``cos`` and ``sin`` are
  nda's own (:func:`nda.ops._philox.log01`, :func:`~nda.ops._philox.cossin_2pi`), made of
  IEEE operations that every device rounds alike.
* **exponential** ``scale * (0 - log(u))``, ``u`` as ``u1`` above (float64: 2 words a value,
  float32: 1 word, rounded to float32 before ``scale``).
* **integers** in ``[low, low + span)``: ``low + floor(U * span / 2**k)``. For
  ``span <= 2**32``, ``U`` is a 64-bit value (2 words, ``k = 64``); for larger spans (64-bit
  dtypes only) a 128-bit one ``w0 | w1 << 32 | w2 << 64 | w3 << 96`` (a block, ``k = 128``).
  No rejection, so every value costs the same words on every device; there is no modulo
  bias, and the bias of the multiply is below ``2**-32`` relative (``2**-64`` for the wide path).

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .._devices import Device
from .._dtypes import DType
from . import _philox
from ._philox import COS_COEFFS, LN2_HI, LN2_LO, LOG_COEFFS, M0, M1, ROUNDS, SIN_COEFFS, SQRT_HALF, TWO_PI, W0, W1
from .spec import Plan, check_shape, constant, declare, dtype_arg
from .creation import _creation_plan

__all__ = [
    "consumed",
    "check_key",
    "check_counter",
    # the stream's constants, for backends that implement it (nda_cuda._philox)
    "M0",
    "M1",
    "W0",
    "W1",
    "ROUNDS",
    "LOG_COEFFS",
    "SIN_COEFFS",
    "COS_COEFFS",
    "LN2_HI",
    "LN2_LO",
    "SQRT_HALF",
    "TWO_PI",
    # the stream as one C/CUDA source (nda.ops._philox_source): nda-cuda's kernels, nda._philox_native on the host
    "kernel_source",  # noqa: F822 - the module __getattr__ imports it on first use
]


def __getattr__(name: str) -> Any:
    """``kernel_source`` (:func:`nda.ops._philox_source.source`), imported on first use: the
    C/CUDA text generator (and ``pathlib``) is not needed to import nda."""
    if name == "kernel_source":
        from ._philox_source import source

        globals()["kernel_source"] = source  # idempotent: every thread binds the same function
        return source
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"kernel_source"})


_NO_ARRAY_INPUT = constant("no array input")
_TWO128 = 1 << 128


def consumed(op: str, n: int, dtype: DType, span: int = 0) -> int:
    """Philox blocks a request of ``n`` values of ``op`` (``"uniform"``, ``"normal"``,
    ``"exponential"``, ``"integers"`` with its ``span``, or a distribution of
    :mod:`nda.ops.random_dist`) consumes: what a generator's counter advances by. A block
    yields 2 float64 values or 4 float32 ones; 2 integers when ``span <= 2**32``, else 1; the
    rejection-sampled distributions take one block a value (their further draws lie outside
    the generator's range: :mod:`nda.ops._philox_dist`)."""
    if op in ("gamma", "beta", "standard_t", "lognormal", "poisson", "binomial"):
        return n
    if op == "integers":
        per_block = 2 if span <= 1 << 32 else 1
    elif op in ("uniform", "normal", "exponential"):
        per_block = 2 if dtype.name == "float64" else 4
    else:
        raise ValueError(f"consumed(): unknown op {op!r}")
    return _philox.blocks(n, per_block)


def check_key(key: Any, op: str) -> tuple[int, int]:
    """``key``: a pair of ints in [0, 2**32)."""
    try:
        k0, k1 = (operator.index(k) for k in key)
    except (TypeError, ValueError):
        raise TypeError(f"{op}(): key must be a pair of ints in [0, 2**32), got {key!r}") from None
    for k in (k0, k1):
        if not 0 <= k < 1 << 32:
            raise ValueError(f"{op}(): key words must be in [0, 2**32), got {k}")
    return k0, k1


def check_counter(counter: Any, op: str) -> int:
    """``counter``: an int in [0, 2**128)."""
    try:
        value = operator.index(counter)
    except TypeError:
        raise TypeError(f"{op}(): counter must be an int in [0, 2**128), got {type(counter).__name__}") from None
    if not 0 <= value < _TWO128:
        raise ValueError(f"{op}(): counter must be in [0, 2**128), got {value}")
    return value


def _float_dtype(dtype: Any, op: str) -> DType:
    dt = dtype_arg(dtype, op)
    if dt is None:
        from .. import _dtypes

        return _dtypes.default_float
    if dt.category != "real floating":
        raise TypeError(f"{op}(): dtype must be float32 or float64, got {dt.name}")
    return dt


def _real(value: Any, name: str, op: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}(): {name} must be a real number, got {type(value).__name__}")
    number = float(value)
    if not np.isfinite(number):
        raise ValueError(f"{op}(): {name} must be finite, got {number}")
    return number


def _in_dtype(value: float, dt: DType, name: str, op: str) -> float:
    """``value`` rounded to ``dt`` (OverflowError if it does not fit), as a Python float."""
    with np.errstate(over="ignore"):
        rounded = dt.numpy.type(value)
    if not np.isfinite(rounded):
        raise OverflowError(f"{op}(): {name}={value!r} does not fit in {dt.name}")
    return float(rounded)


# --------------------------------------------------------------------------- ops


@declare(
    "random.philox_uniform",
    dtypes="real floating",
    reference=_philox.uniform,
    family="creation",
    vjp=_NO_ARRAY_INPUT,
    host_values=("counter", "low", "high"),
)
def philox_uniform(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    low: float = 0.0,
    high: float = 1.0,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Uniform floats in ``[low, high)`` from the Philox stream at ``(key, counter)`` (stateless).

    ``nda.random.Generator.uniform`` calls this with its key and counter; the stream is stated
    in :mod:`nda.ops.random`. It consumes ``ceil(n * w / 4)`` blocks (``w`` = 2 words a float64
    value, 1 a float32 one).
    """
    op = "random.philox_uniform"
    dims, k, c, dt = check_shape(shape, op), check_key(key, op), check_counter(counter, op), _float_dtype(dtype, op)
    lo = _in_dtype(_real(low, "low", op), dt, "low", op)
    hi = _in_dtype(_real(high, "high", op), dt, "high", op)
    with np.errstate(over="ignore"):
        span = dt.numpy.type(hi) - dt.numpy.type(lo)
    if not np.isfinite(span):
        raise OverflowError(f"{op}(): high - low = {hi!r} - {lo!r} overflows {dt.name}")
    return _creation_plan(op, dims, dt, device, (dims, k, c, lo, float(span)), {"dtype": dt})


@declare(
    "random.philox_normal",
    dtypes="real floating",
    reference=_philox.normal,
    family="creation",
    vjp=_NO_ARRAY_INPUT,
    host_values=("counter", "loc", "scale"),
)
def philox_normal(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    loc: float = 0.0,
    scale: float = 1.0,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Normal floats ``loc + scale * z`` from the Philox stream at ``(key, counter)`` (stateless; Box-Muller).

    It consumes ``ceil(n / 2)`` blocks for float64 and ``ceil(n / 4)`` for float32.
    """
    op = "random.philox_normal"
    dims, k, c, dt = check_shape(shape, op), check_key(key, op), check_counter(counter, op), _float_dtype(dtype, op)
    mu = _in_dtype(_real(loc, "loc", op), dt, "loc", op)
    sigma = _in_dtype(_real(scale, "scale", op), dt, "scale", op)
    if sigma < 0:
        raise ValueError(f"{op}(): scale must be non-negative, got {scale!r}")
    return _creation_plan(op, dims, dt, device, (dims, k, c, mu, sigma), {"dtype": dt})


@declare(
    "random.philox_exponential",
    dtypes="real floating",
    reference=_philox.exponential,
    family="creation",
    vjp=_NO_ARRAY_INPUT,
    host_values=("counter", "scale"),
)
def philox_exponential(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    scale: float = 1.0,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Exponential floats ``scale * E`` from the Philox stream at ``(key, counter)`` (stateless; ``E = -log(u)``)."""
    op = "random.philox_exponential"
    dims, k, c, dt = check_shape(shape, op), check_key(key, op), check_counter(counter, op), _float_dtype(dtype, op)
    beta = _in_dtype(_real(scale, "scale", op), dt, "scale", op)
    if beta < 0:
        raise ValueError(f"{op}(): scale must be non-negative, got {scale!r}")
    return _creation_plan(op, dims, dt, device, (dims, k, c, beta), {"dtype": dt})


@declare(
    "random.philox_integers",
    dtypes="integer",
    reference=_philox.integers,
    family="creation",
    vjp=constant("integer result"),
    host_values=("counter", "low", "high"),
)
def philox_integers(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    low: int,
    high: int,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Integers in ``[low, high)`` from the Philox stream at ``(key, counter)`` (stateless; no modulo bias).

    It consumes ``ceil(n / 2)`` blocks when ``high - low <= 2**32`` and ``n`` blocks otherwise.
    """
    op = "random.philox_integers"
    dims, k, c = check_shape(shape, op), check_key(key, op), check_counter(counter, op)
    dt = dtype_arg(dtype, op)
    if dt is None:
        from .. import _dtypes

        dt = _dtypes.default_int
    if dt.category not in ("signed integer", "unsigned integer"):
        raise TypeError(f"{op}(): dtype must be an integer dtype, got {dt.name}")
    bounds = []
    for value, name in ((low, "low"), (high, "high")):
        if isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{op}(): {name} must be an int, got bool")
        try:
            bounds.append(operator.index(value))
        except TypeError:
            raise TypeError(f"{op}(): {name} must be an int, got {type(value).__name__}") from None
    lo, hi = bounds
    info = np.iinfo(dt.numpy)
    if lo < info.min:
        raise ValueError(f"{op}(): low={lo} is out of bounds for {dt.name} (range {info.min}..{info.max})")
    if hi - 1 > info.max:
        raise ValueError(f"{op}(): high={hi} is out of bounds for {dt.name} (largest: {info.max} + 1)")
    if hi <= lo:
        raise ValueError(f"{op}(): low must be less than high, got low={lo}, high={hi}")
    return _creation_plan(op, dims, dt, device, (dims, k, c, lo, hi - lo), {"dtype": dt})
