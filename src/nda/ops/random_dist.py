"""The rejection-sampled distributions of ``nda.random``: ``random.philox_gamma`` and friends.

Stateless ops like those of :mod:`nda.ops.random`: each is a pure function of ``(shape, key,
counter, parameters, dtype)``, the same bits on every device. Their stream (each element's
own sequence of Philox blocks, so that a rejection loop needs no shared state) is stated in
:mod:`nda.ops._philox_dist`, whose NumPy functions are the references; a request of ``n``
values consumes ``n`` blocks of the generator's counter (:func:`nda.ops.random.consumed`).

A parameter is a Python number or an nda array on the result's device that broadcasts to
``shape`` (read by the kernel in float64, so that an element's value does not depend on how
its parameter was given). The planners check scalar parameters; ``nda.random.Generator``
checks array ones (reading them, as NumPy checks them); the kernels give NaN (float results)
or 0 for values outside a distribution's domain that reach them anyway.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtypes
from .._devices import Device
from .._dtypes import DType
from . import _philox_dist
from .spec import Array, Cast, Plan, broadcast_shapes, check_shape, declare, dtype_arg, not_differentiable, same_device
from .creation import _device
from .random import check_counter, check_key

__all__ = ["DISTRIBUTIONS", "mvn_factor"]

_SAMPLE = not_differentiable("a random sample (its gradient with respect to the parameters is not implemented)")
#: The ops of this module by their short names (the generator's methods).
DISTRIBUTIONS = ("gamma", "beta", "standard_t", "lognormal", "poisson", "binomial")


def _param(value: Any, name: str, op: str, check: Any) -> Any:
    """A scalar parameter, checked (a Python float), or an nda array (checked by the caller)."""
    if isinstance(value, Array):
        if value.dtype.category not in ("bool", "signed integer", "unsigned integer", "real floating"):
            raise TypeError(f"{op}(): {name} must hold real numbers, got dtype {value.dtype.name}")
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}(): {name} must be a real number or an nda array, got {type(value).__name__}")
    number = float(value)
    why = check(number)
    if why:
        raise ValueError(f"{op}(): {name} {why}, got {value!r}")
    return number


def _plan(op: str, shape: Any, key: Any, counter: Any, params: list[Any], dt: DType, device: Any) -> Plan:
    dims, k, c = check_shape(shape, op), check_key(key, op), check_counter(counter, op)
    arrays = [p for p in params if isinstance(p, Array)]
    if not arrays:
        return Plan(_device(device, op), dt, dt, dims, (dims, k, c, *params), {"dtype": dt, "device": _device(device, op)})
    dev = same_device(op, arrays)
    if device is not None and _device(device, op) is not dev:
        raise ValueError(f"{op}(): the parameters are on {dev} but device={device!r} was asked for")
    for a in arrays:
        if broadcast_shapes(a.shape, dims) != dims:
            raise ValueError(f"{op}(): a parameter of shape {a.shape} does not broadcast to the size {dims}")
    args = tuple(p if not isinstance(p, Array) or p.dtype is _dtypes.float64 else Cast(p, _dtypes.float64) for p in params)
    return Plan(dev, dt, dt, dims, (dims, k, c, *args), {"dtype": dt, "device": dev}, reads=arrays)


def _float(dtype: Any, op: str) -> DType:
    dt = dtype_arg(dtype, op) or _dtypes.default_float
    if dt.category != "real floating":
        raise TypeError(f"{op}(): dtype must be float32 or float64, got {dt.name}")
    return dt


def _int(dtype: Any, op: str) -> DType:
    dt = dtype_arg(dtype, op) or _dtypes.int64
    if dt.category not in ("signed integer", "unsigned integer"):
        raise TypeError(f"{op}(): dtype must be an integer dtype (int64, NumPy's, by default), got {dt.name}")
    return dt


def _non_negative(x: float) -> str:
    return "must be non-negative" if not x >= 0 else ""


def _positive(x: float) -> str:
    return "must be positive" if not x > 0 else ""


def _finite(x: float) -> str:
    return "must be finite" if not np.isfinite(x) else ""


_HOSTS = ("counter",)


@declare("random.philox_gamma", dtypes="real floating", reference=_philox_dist.gamma, family="creation", vjp=_SAMPLE, host_values=_HOSTS)
def philox_gamma(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    alpha: Any,
    scale: Any = 1.0,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Gamma variates ``scale * G``, ``G ~ gamma(alpha)``, from the Philox stream at ``(key, counter)`` (stateless).

    Marsaglia and Tsang's method, each element on its own blocks (``nda.ops._philox_dist``).
    """
    op = "random.philox_gamma"
    params = [_param(alpha, "alpha", op, _non_negative), _param(scale, "scale", op, _non_negative)]
    return _plan(op, shape, key, counter, params, _float(dtype, op), device)


@declare("random.philox_beta", dtypes="real floating", reference=_philox_dist.beta, family="creation", vjp=_SAMPLE, host_values=_HOSTS)
def philox_beta(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    a: Any,
    b: Any,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Beta(a, b) variates from the Philox stream at ``(key, counter)``: two gamma variates, in log space."""
    op = "random.philox_beta"
    params = [_param(a, "a", op, _positive), _param(b, "b", op, _positive)]
    return _plan(op, shape, key, counter, params, _float(dtype, op), device)


@declare("random.philox_standard_t", dtypes="real floating", reference=_philox_dist.standard_t, family="creation", vjp=_SAMPLE, host_values=_HOSTS)
def philox_standard_t(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    df: Any,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Student's t variates with ``df`` degrees of freedom from the Philox stream at ``(key, counter)``."""
    op = "random.philox_standard_t"
    return _plan(op, shape, key, counter, [_param(df, "df", op, _positive)], _float(dtype, op), device)


@declare("random.philox_lognormal", dtypes="real floating", reference=_philox_dist.lognormal, family="creation", vjp=_SAMPLE, host_values=_HOSTS)
def philox_lognormal(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    mean: Any = 0.0,
    sigma: Any = 1.0,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Log-normal variates ``exp(mean + sigma * z)`` from the Philox stream at ``(key, counter)`` (one block a value)."""
    op = "random.philox_lognormal"
    params = [_param(mean, "mean", op, _finite), _param(sigma, "sigma", op, _non_negative)]
    return _plan(op, shape, key, counter, params, _float(dtype, op), device)


def _lam(x: float) -> str:
    if not x >= 0:
        return "must be non-negative"
    return "is too large (at most about 9.2e18, as NumPy's)" if x > 9.2e18 else ""


@declare("random.philox_poisson", dtypes="integer", reference=_philox_dist.poisson, family="creation", vjp=_SAMPLE, host_values=_HOSTS)
def philox_poisson(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    lam: Any = 1.0,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Poisson counts (int64 unless ``dtype`` says another integer dtype) with mean ``lam`` from the Philox
    stream at ``(key, counter)``; a count the dtype cannot hold is an OverflowError when the result is read."""
    op = "random.philox_poisson"
    return _plan(op, shape, key, counter, [_param(lam, "lam", op, _lam)], _int(dtype, op), device)


def _fits(n: Any, dt: DType, op: str) -> None:
    if isinstance(n, float) and n > np.iinfo(dt.numpy).max:
        raise ValueError(f"{op}(): n={int(n)} trials can give counts that {dt.name} cannot hold; ask for a wider dtype")


def _trials(x: float) -> str:
    if not x >= 0:
        return "must be non-negative"
    if x != np.floor(x):
        return "must be an integer"
    return "is too large for exact float64 counts (at most 2**53)" if x > 2.0**53 else ""


def _probability(x: float) -> str:
    return "must be in [0, 1]" if not 0.0 <= x <= 1.0 else ""


@declare("random.philox_binomial", dtypes="integer", reference=_philox_dist.binomial, family="creation", vjp=_SAMPLE, host_values=_HOSTS)
def philox_binomial(
    shape: int | tuple[int, ...],
    /,
    *,
    key: tuple[int, int],
    counter: int = 0,
    n: Any,
    p: Any,
    dtype: DType | None = None,
    device: Device | str | None = None,
) -> Plan:
    """Binomial counts (int64 unless ``dtype`` says another integer dtype) of ``n`` trials with success
    probability ``p`` from the Philox stream at ``(key, counter)``."""
    op = "random.philox_binomial"
    params = [_param(n, "n", op, _trials), _param(p, "p", op, _probability)]
    dt = _int(dtype, op)
    _fits(params[0], dt, op)
    return _plan(op, shape, key, counter, params, dt, device)


def mvn_factor(mean: np.ndarray, cov: np.ndarray, method: str, check_valid: str, tol: float) -> np.ndarray:
    """The factor ``F`` with ``F.T @ F = cov`` that ``multivariate_normal`` multiplies standard normals by,
    computed on the host from ``cov`` as NumPy computes it (``method`` "svd", "eigh" or "cholesky"),
    with NumPy's positive-semidefinite check (``check_valid`` "warn", "raise" or "ignore")."""
    import warnings

    if mean.ndim != 1:
        raise ValueError("multivariate_normal(): mean must be 1 dimensional")
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError("multivariate_normal(): cov must be 2 dimensional and square")
    if mean.shape[0] != cov.shape[0]:
        raise ValueError("multivariate_normal(): mean and cov must have same length")
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError(f"multivariate_normal(): method must be one of 'svd', 'eigh', 'cholesky', got {method!r}")
    if check_valid not in ("warn", "raise", "ignore"):
        raise ValueError("multivariate_normal(): check_valid must equal 'warn', 'raise', or 'ignore'")
    cov = cov.astype(np.float64)
    if method == "cholesky":
        return np.linalg.cholesky(cov).T  # type: ignore[no-any-return]
    if method == "eigh":
        s, u = np.linalg.eigh(cov)
        psd = not np.any(s < -tol)
    else:
        u, s, vh = np.linalg.svd(cov)
        psd = bool(np.allclose(np.dot(vh.T * s, vh), cov, rtol=tol, atol=tol))
    if not psd and check_valid != "ignore":
        if check_valid == "raise":
            raise ValueError("multivariate_normal(): covariance is not symmetric positive-semidefinite.")
        warnings.warn("covariance is not symmetric positive-semidefinite.", RuntimeWarning, stacklevel=3)
    if method == "eigh":
        return (u * np.sqrt(np.maximum(s, 0.0))).T  # type: ignore[no-any-return]
    return np.sqrt(s)[:, None] * vh  # type: ignore[no-any-return]
