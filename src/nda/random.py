"""``nda.random``: random numbers shaped like NumPy's ``Generator``, bit-identical on every device.

::

    rng = nda.random.default_rng(42)
    x = rng.standard_normal((1000, 3), device="sim")      # the same bits on cpu, sim, cuda, ...
    i = rng.integers(0, 10, size=5, dtype=nda.int8)
    rng.shuffle(x)                                        # in place, ordered by the engine

The generator is counter-based: Philox4x32-10 (the generator of cuRAND's
``curandStatePhilox4_32_10``), whose state is a 64-bit key and a 128-bit counter. Every
method is one or a few catalog ops (``random.philox_*``, :mod:`nda.ops.random`) that compute
their values from ``(key, counter)`` alone, so the values do not depend on the device that
computes them, on the order in which devices run, or on how the work is split: cpu computes
them in C (the optional extension ``nda._philox_native``; in vectorised NumPy without it or
with ``NDA_NATIVE=0``), nda-cuda in a CUDA kernel of the same C/CUDA source, other backends
through the host fallback, and all produce the same bits. A call consumes a number of Philox blocks fixed by
its size and dtype (never by the data), and the counter advances by exactly that, on the
caller's thread when the call is issued: the state after a call is the same whatever the
device. :mod:`nda.ops.random` states the stream (how values are made from words).

What is not NumPy's: the numbers (NumPy's default generator is PCG64 with other
transforms), ``size=None`` gives a 0-d array rather than a Python scalar (the value stays
on its device), every method takes ``dtype=`` and ``device=`` (and ``shape=`` as another
name for ``size``), and ``integers`` takes scalar bounds only. ``permutation``, ``shuffle``
and ``choice`` sort random 64-bit keys (``argsort``, stable), so they are the same on every
device too; ``choice(p=...)`` reads ``p`` on the host (to check it, as NumPy does).

State: ``rng.bit_generator.state`` (a dict of plain ints; assignable), ``advance(n)``,
``spawn(n)`` (independent generators, from ``numpy.random.SeedSequence``); generators
pickle as their state.

Layer: arrays and front end (README, "Architecture").
"""

from __future__ import annotations

import math
import operator
import re
import sys
from typing import Any, Callable

import numpy as np

from . import _api, _composite, _dtypes, _forksafe
from ._api import extension as _extension
from ._array import NDArray
from ._devices import Device, as_device
from .ops import random as _spec
from .ops.spec import check_shape as _check_shape
from .ops.random_dist import mvn_factor as _mvn_factor

__all__ = [
    "Generator",
    "Philox",
    "default_rng",
    "philox_uniform",
    "philox_normal",
    "philox_exponential",
    "philox_integers",
    "philox_gamma",
    "philox_beta",
    "philox_standard_t",
    "philox_lognormal",
    "philox_poisson",
    "philox_binomial",
]


def __dir__() -> list[str]:
    """``dir()`` and tab completion list the public names (``__all__``); the module's helper imports
    (``np``, ``math``, ``Any``…) stay importable but out of sight."""
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__") and n.endswith("__")})


_ops = _extension("random")
philox_uniform = _ops["philox_uniform"]
philox_normal = _ops["philox_normal"]
philox_exponential = _ops["philox_exponential"]
philox_integers = _ops["philox_integers"]
philox_gamma = _ops["philox_gamma"]
philox_beta = _ops["philox_beta"]
philox_standard_t = _ops["philox_standard_t"]
philox_lognormal = _ops["philox_lognormal"]
philox_poisson = _ops["philox_poisson"]
philox_binomial = _ops["philox_binomial"]

_TWO128 = 1 << 128


class Philox:
    """The state of a Philox4x32-10 stream: a key (two 32-bit words) and a 128-bit counter.

    ``Philox(seed)`` takes its key from ``numpy.random.SeedSequence(seed)`` (any non-negative
    int, a sequence of them, a ``SeedSequence``, or None for fresh entropy) and starts the
    counter at 0; ``Philox(key=(k0, k1), counter=c)`` sets both directly. Drawing is
    thread-safe: a call reserves its blocks under a lock.
    """

    __slots__ = ("_key", "_counter", "_lock", "_seed_seq")
    name = "Philox4x32-10"

    def __init__(self, seed: Any = None, *, key: Any = None, counter: int = 0) -> None:
        self._lock = _forksafe.lock()  # held while a draw is issued (which may wait for the engine): a child gets it unlocked
        if key is not None:
            if seed is not None:
                raise TypeError("Philox(): give a seed or a key, not both")
            self._seed_seq = None
            self._key = _spec.check_key(key, "Philox")
        else:
            seq = seed if isinstance(seed, np.random.SeedSequence) else _seed_sequence(seed)
            self._seed_seq = seq
            k0, k1 = (int(w) for w in seq.generate_state(2, np.uint32))
            self._key = (k0, k1)
        self._counter = _spec.check_counter(counter, "Philox")

    @property
    def key(self) -> tuple[int, int]:
        return self._key

    @property
    def counter(self) -> int:
        return self._counter

    @property
    def state(self) -> dict[str, Any]:
        """``{"bit_generator": "Philox4x32-10", "key": (k0, k1), "counter": c}`` (assignable)."""
        with self._lock:
            return {"bit_generator": self.name, "key": self._key, "counter": self._counter}

    @state.setter
    def state(self, value: dict[str, Any]) -> None:
        if not isinstance(value, dict) or value.get("bit_generator") != self.name:
            raise ValueError(f"state must be a dict with bit_generator={self.name!r}, key and counter, got {value!r}")
        key = _spec.check_key(value.get("key"), "Philox.state")
        counter = _spec.check_counter(value.get("counter"), "Philox.state")
        with self._lock:
            self._key, self._counter = key, counter

    def advance(self, delta: int) -> Philox:
        """Skip ``delta`` blocks (the counter moves by ``delta``, modulo 2**128); returns self."""
        step = operator.index(delta)
        if step < 0:
            raise ValueError(f"advance(): delta must be non-negative, got {step}")
        with self._lock:
            self._counter = (self._counter + step) % _TWO128
        return self

    def spawn(self, n_children: int) -> list[Philox]:
        """``n_children`` independent streams (keys from ``SeedSequence.spawn``)."""
        if self._seed_seq is None:
            raise TypeError("spawn(): this Philox was made from a key, not a seed; make it with Philox(seed) to spawn")
        return [Philox(child) for child in self._seed_seq.spawn(n_children)]

    def _draw(self, blocks: int, issue: Callable[[int], Any]) -> Any:
        """Run ``issue(counter)`` and advance the counter by ``blocks`` if it did not raise."""
        with self._lock:
            try:
                result = issue(self._counter)
            except Exception as err:
                _user_named(err)
                raise
            self._counter = (self._counter + blocks) % _TWO128
            return result

    def __reduce__(self) -> Any:
        seq = self._seed_seq
        seed = None if seq is None else (seq.entropy, tuple(seq.spawn_key), seq.pool_size, seq.n_children_spawned)
        return (_restore_philox, (self._key, self._counter, seed))

    def __repr__(self) -> str:
        return f"Philox(key=({self._key[0]:#010x}, {self._key[1]:#010x}), counter={self._counter})"


_OP_PREFIX = re.compile(r"^(?:random\.philox_\w+|uniform|normal|exponential)\(\)")


def _user_named(err: BaseException) -> None:
    """Name the function the user called in ``err``'s message, in place of the catalog op's
    (``random.philox_integers(): low must be less than high`` raised inside ``rng.integers``
    reads ``integers(): ...``): the outermost method of this module on the stack, below the
    user's code. The exception keeps its type and traceback."""
    frame, public = sys._getframe(1), None
    while frame is not None:
        code = frame.f_code
        if code.co_filename != __file__:
            if public is not None:
                break
        elif not code.co_name.startswith("_") and code.co_name != "<lambda>":
            public = code.co_name
        frame = frame.f_back
    if public is None or not err.args or not isinstance(err.args[0], str):
        return
    renamed = _OP_PREFIX.sub(f"{public}()", err.args[0], count=1)
    if renamed != err.args[0]:
        err.args = (renamed, *err.args[1:])


def _seed_sequence(seed: Any) -> np.random.SeedSequence:
    if isinstance(seed, (bool, np.bool_)) or isinstance(seed, float):
        raise TypeError(f"seed must be None, a non-negative int or a sequence of them, got {seed!r}")
    try:
        return np.random.SeedSequence(seed)
    except (TypeError, ValueError) as err:
        raise type(err)(f"seed must be None, a non-negative int or a sequence of them: {err}") from None


def _restore_philox(key: tuple[int, int], counter: int, seed: Any) -> Philox:
    bg = Philox(key=key, counter=counter)
    if seed is not None:
        entropy, spawn_key, pool_size, spawned = seed
        bg._seed_seq = np.random.SeedSequence(entropy, spawn_key=spawn_key, pool_size=pool_size, n_children_spawned=spawned)
    return bg


class Generator:
    """NumPy's ``Generator`` API over a :class:`Philox` stream (see the module docstring).

    ``device`` is where the methods put their results unless a call says otherwise (default:
    nda's default device at the call).
    """

    __slots__ = ("_bit_generator", "_device")

    def __init__(self, bit_generator: Philox, *, device: Device | str | None = None) -> None:
        if not isinstance(bit_generator, Philox):
            raise TypeError(f"Generator() takes an nda.random.Philox, got {type(bit_generator).__name__}; use nda.random.default_rng(seed)")
        self._bit_generator = bit_generator
        self._device = None if device is None else as_device(device)

    @property
    def bit_generator(self) -> Philox:
        return self._bit_generator

    @property
    def device(self) -> Device | None:
        return self._device

    def spawn(self, n_children: int) -> list[Generator]:
        """``n_children`` independent generators on the same device."""
        return [Generator(bg, device=self._device) for bg in self._bit_generator.spawn(n_children)]

    def __reduce__(self) -> Any:
        return (_restore_generator, (self._bit_generator, None if self._device is None else str(self._device)))

    def __repr__(self) -> str:
        where = "" if self._device is None else f", device='{self._device}'"
        return f"Generator({self._bit_generator!r}{where})"

    # ------------------------------------------------------------------ helpers
    def _where(self, device: Any) -> Device:
        return as_device(device if device is not None else self._device)

    def _float(self, op: str, shape: tuple[int, ...], dtype: Any, device: Any, **params: Any) -> NDArray:
        try:
            dt = _float_dtype(dtype, op)
        except TypeError as err:
            _user_named(err)  # rng.random(dtype=nda.int32): "random(): ...", not the transform's name
            raise
        fn = {"uniform": philox_uniform, "normal": philox_normal, "exponential": philox_exponential}[op]
        blocks = _spec.consumed(op, math.prod(shape), dt)
        where = self._where(device)
        return self._bit_generator._draw(blocks, lambda c: fn(shape, key=self._bit_generator.key, counter=c, dtype=dt, device=where, **params))

    # ------------------------------------------------------------------ floats
    def random(self, size: Any = None, dtype: Any = None, *, shape: Any = None, device: Any = None) -> NDArray:
        """Floats in [0, 1) (float64 from 53 random bits, float32 from 24)."""
        return self._float("uniform", _size(size, shape, "random"), dtype, device, low=0.0, high=1.0)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None, *, dtype: Any = None, shape: Any = None, device: Any = None) -> NDArray:
        """Floats in ``[low, high)``: ``low + (high - low) * u``. ``low``/``high`` may be arrays (broadcast)."""
        dims = _size(size, shape, "uniform", allow_none=True)
        if _is_scalar(low) and _is_scalar(high):
            return self._float("uniform", dims or (), dtype, device, low=low, high=high)
        dt = _float_dtype(dtype, "uniform")
        lo, hi, where = self._params("uniform", (low, high), dt, device)
        u = self._float("uniform", dims if dims is not None else _composite.broadcast_shapes(lo.shape, hi.shape), dt, where, low=0.0, high=1.0)
        return _api.add(lo, _api.multiply(_api.subtract(hi, lo), u))

    def standard_normal(self, size: Any = None, dtype: Any = None, *, shape: Any = None, device: Any = None) -> NDArray:
        """Normal floats, mean 0, standard deviation 1 (Box-Muller; see nda.ops.random)."""
        return self._float("normal", _size(size, shape, "standard_normal"), dtype, device, loc=0.0, scale=1.0)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, *, dtype: Any = None, shape: Any = None, device: Any = None) -> NDArray:
        """Normal floats ``loc + scale * z``. ``loc``/``scale`` may be arrays (broadcast; a negative
        scale in an array is found by reading it, a sync point)."""
        dims = _size(size, shape, "normal", allow_none=True)
        if _is_scalar(loc) and _is_scalar(scale):
            return self._float("normal", dims or (), dtype, device, loc=loc, scale=scale)
        dt = _float_dtype(dtype, "normal")
        mu, sigma, where = self._params("normal", (loc, scale), dt, device)
        _non_negative(sigma, "normal", "scale")
        z = self._float("normal", dims if dims is not None else _composite.broadcast_shapes(mu.shape, sigma.shape), dt, where, loc=0.0, scale=1.0)
        return _api.add(mu, _api.multiply(sigma, z))

    def standard_exponential(self, size: Any = None, dtype: Any = None, *, shape: Any = None, device: Any = None) -> NDArray:
        """Exponential floats with scale 1: ``-log(u)``."""
        return self._float("exponential", _size(size, shape, "standard_exponential"), dtype, device, scale=1.0)

    def exponential(self, scale: Any = 1.0, size: Any = None, *, dtype: Any = None, shape: Any = None, device: Any = None) -> NDArray:
        """Exponential floats ``scale * E``. ``scale`` may be an array (broadcast)."""
        dims = _size(size, shape, "exponential", allow_none=True)
        if _is_scalar(scale):
            return self._float("exponential", dims or (), dtype, device, scale=scale)
        dt = _float_dtype(dtype, "exponential")
        beta, where = self._params("exponential", (scale,), dt, device)
        _non_negative(beta, "exponential", "scale")
        e = self._float("exponential", dims if dims is not None else beta.shape, dt, where, scale=1.0)
        return _api.multiply(beta, e)

    def _params(self, op: str, values: tuple[Any, ...], dt: Any, device: Any) -> Any:
        """Array parameters on one device, cast to ``dt`` (and the device)."""
        devices = {v.device for v in values if isinstance(v, NDArray)}
        if len(devices) > 1:
            raise ValueError(f"{op}(): parameters on different devices ({', '.join(map(str, devices))})")
        where = next(iter(devices)) if devices else self._where(device)
        if device is not None and as_device(device) is not where:
            raise ValueError(f"{op}(): parameters are on {where} but device={device!r} was asked for")
        arrays = []
        for v in values:
            a = v if isinstance(v, NDArray) else _api.asarray(v, device=where)
            if a.dtype.category not in ("signed integer", "unsigned integer", "real floating", "bool"):
                raise TypeError(f"{op}(): parameters must be real numbers, got dtype {a.dtype.name}")
            arrays.append(_api.astype(a, dt, copy=False))
        return (*arrays, where)

    # ------------------------------------------------------------------ integers
    def integers(
        self, low: Any, high: Any = None, size: Any = None, dtype: Any = None, endpoint: bool = False, *, shape: Any = None, device: Any = None
    ) -> NDArray:
        """Integers in ``[low, high)`` (``[low, high]`` with ``endpoint=True``; ``[0, low)`` without ``high``).

        Unbiased (a widening multiply, no modulo); bounds are ints (arrays of bounds are not
        supported). ``dtype`` defaults to int64.
        """
        dims = _size(size, shape, "integers")
        if high is None:
            low, high = 0, low
        for value, name in ((low, "low"), (high, "high")):
            if not _is_scalar(value) or isinstance(value, (float, np.floating)):
                raise TypeError(f"integers(): {name} must be an int (arrays of bounds are not supported), got {type(value).__name__}")
        if not isinstance(endpoint, (bool, np.bool_)):
            raise TypeError(f"integers(): endpoint must be a bool, got {endpoint!r}")
        lo, hi = _int(low, "low"), _int(high, "high") + bool(endpoint)
        dt = _dtypes.default_int if dtype is None else _dtypes.as_dtype(dtype)
        blocks = _spec.consumed("integers", math.prod(dims), dt, span=max(hi - lo, 0))
        where = self._where(device)
        bg = self._bit_generator
        return bg._draw(blocks, lambda c: philox_integers(dims, key=bg.key, counter=c, low=lo, high=hi, dtype=dt, device=where))

    # ------------------------------------------------------------------ rejection-sampled distributions
    def _sample(
        self,
        short: str,
        parameters: dict[str, Any],
        checks: dict[str, Callable[[Any], Any]],
        size: Any,
        shape: Any,
        dtype: Any,
        device: Any,
        integer: bool = False,
    ) -> NDArray:
        """One ``random.philox_<short>`` call: scalar parameters as they are, array ones on one device
        (checked on the host, as NumPy checks them), the result of ``size`` or of their broadcast shape."""
        dims = _size(size, shape, short, allow_none=True)
        arrays = {k: v for k, v in parameters.items() if not _is_scalar(v)}
        where = self._where(device)
        values = dict(parameters)
        if arrays:
            devices = {v.device for v in arrays.values() if isinstance(v, NDArray)}
            if len(devices) > 1:
                raise ValueError(f"{short}(): parameters on different devices ({', '.join(map(str, devices))})")
            if devices:
                where = next(iter(devices))
                if device is not None and as_device(device) is not where:
                    raise ValueError(f"{short}(): parameters are on {where} but device={device!r} was asked for")
            for name, v in arrays.items():
                a = v if isinstance(v, NDArray) else _api.asarray(np.asarray(v, dtype=np.float64), device=where)
                if a.dtype.category not in ("bool", "signed integer", "unsigned integer", "real floating"):
                    raise TypeError(f"{short}(): {name} must hold real numbers, got dtype {a.dtype.name}")
                bad = checks[name](a)
                if bad is not None and bool(_api.any(bad)):
                    raise ValueError(f"{short}(): {name} {_WHY[short, name]}")
                values[name] = a
        else:
            values = {k: float(v) for k, v in parameters.items()}
        out = dims if dims is not None else _composite.broadcast_shapes(*(a.shape for a in values.values() if isinstance(a, NDArray)))
        dt = (_dtypes.int64 if dtype is None else _dtypes.as_dtype(dtype)) if integer else _float_dtype(dtype, short)
        fn = _ops[f"philox_{short}"]
        bg = self._bit_generator
        blocks = _spec.consumed(short, math.prod(out), dt)
        return bg._draw(blocks, lambda c: fn(out, key=bg.key, counter=c, dtype=dt, device=where, **values))  # type: ignore[no-any-return]

    def standard_gamma(self, shape: Any, size: Any = None, dtype: Any = None, out: Any = None, *, device: Any = None) -> NDArray:
        """Gamma variates with shape ``shape`` and scale 1 (Marsaglia-Tsang, the same bits on every device)."""
        result = self._sample("gamma", {"alpha": shape, "scale": 1.0}, _GAMMA_CHECKS, size, None, dtype, device)
        return _into(out, result)

    def gamma(self, shape: Any, scale: Any = 1.0, size: Any = None, *, dtype: Any = None, device: Any = None) -> NDArray:
        """Gamma variates with ``shape`` (k) and ``scale`` (theta): mean ``k * theta``. Parameters may be arrays (broadcast)."""
        return self._sample("gamma", {"alpha": shape, "scale": scale}, _GAMMA_CHECKS, size, None, dtype, device)

    def beta(self, a: Any, b: Any, size: Any = None, *, dtype: Any = None, device: Any = None) -> NDArray:
        """Beta(a, b) variates in [0, 1] (two gamma variates, in log space: no underflow for small a, b)."""
        return self._sample("beta", {"a": a, "b": b}, _BETA_CHECKS, size, None, dtype, device)

    def standard_t(self, df: Any, size: Any = None, *, dtype: Any = None, device: Any = None) -> NDArray:
        """Student's t variates with ``df`` (> 0) degrees of freedom."""
        return self._sample("standard_t", {"df": df}, _T_CHECKS, size, None, dtype, device)

    def lognormal(self, mean: Any = 0.0, sigma: Any = 1.0, size: Any = None, *, dtype: Any = None, device: Any = None) -> NDArray:
        """Log-normal variates ``exp(mean + sigma * z)`` (``mean``, ``sigma`` of the underlying normal)."""
        return self._sample("lognormal", {"mean": mean, "sigma": sigma}, _LOGNORMAL_CHECKS, size, None, dtype, device)

    def poisson(self, lam: Any = 1.0, size: Any = None, *, dtype: Any = None, device: Any = None) -> NDArray:
        """Poisson counts (int64, or ``dtype``) with mean ``lam`` (inversion below 10, Hormann's PTRS from 10)."""
        return self._sample("poisson", {"lam": lam}, _POISSON_CHECKS, size, None, dtype, device, integer=True)

    def binomial(self, n: Any, p: Any, size: Any = None, *, dtype: Any = None, device: Any = None) -> NDArray:
        """Binomial counts (int64, or ``dtype``) of ``n`` trials with success probability ``p`` (inversion, or Hormann's BTRS from ``n p >= 10``)."""
        if _is_scalar(n):
            n = int(n)  # NumPy takes n as an integer (a float is truncated)
        elif isinstance(n, NDArray) and n.dtype.category == "real floating":
            n = _api.astype(n, _dtypes.int64)
        elif not isinstance(n, NDArray):
            n = np.asarray(n).astype(np.int64)
        return self._sample("binomial", {"n": n, "p": p}, _BINOMIAL_CHECKS, size, None, dtype, device, integer=True)

    def multivariate_normal(
        self,
        mean: Any,
        cov: Any,
        size: Any = None,
        check_valid: str = "warn",
        tol: float = 1e-8,
        *,
        method: str = "svd",
        dtype: Any = None,
        device: Any = None,
    ) -> NDArray:
        """Samples of a multivariate normal: shape ``size + (N,)``; ``mean`` (N,) and ``cov`` (N, N) are read on the host.

        ``z @ F + mean`` with ``F`` NumPy's factor of ``cov`` (``method`` "svd", "eigh" or
        "cholesky"; ``check_valid`` and ``tol`` as NumPy's) and ``z`` standard normals. For up to
        64 dimensions the product is written as element-wise multiply-adds in a fixed order, so
        the bits are the same on every device; above that it is a ``matmul``.
        """
        m = np.asarray(mean._host() if isinstance(mean, NDArray) else mean, dtype=np.float64)
        c = np.asarray(cov._host() if isinstance(cov, NDArray) else cov, dtype=np.float64)
        factor = _mvn_factor(m, c, method, check_valid, tol)
        dims = _size(size, None, "multivariate_normal", allow_none=True) or ()
        k = m.shape[0]
        dt = _float_dtype(dtype, "multivariate_normal")
        where = self._where(device if device is not None else (mean.device if isinstance(mean, NDArray) else None))
        z = self.standard_normal(dims + (k,), dtype=_dtypes.float64, device=where)
        f = _api.asarray(factor, device=where)
        if k <= 64:
            total = None
            for i in range(k):
                term = _api.multiply(z[..., i : i + 1], f[i])
                total = term if total is None else _api.add(total, term)
            x = total if total is not None else _api.zeros(dims + (0,), device=where)
        else:
            x = _api.matmul(z, f)
        x = _api.add(x, _api.asarray(m, device=where))
        return _api.astype(x, dt) if dt is not _dtypes.float64 else x

    def bytes(self, length: int) -> bytes:
        """``length`` random bytes (Python ``bytes``): the little-endian bytes of random 32-bit integers."""
        n = operator.index(length)
        if n < 0:
            raise ValueError(f"bytes(): length must be non-negative, got {n}")
        words = self.integers(0, 1 << 32, size=(-(-n // 4),), dtype=_dtypes.uint32, device="cpu")
        return words._host().astype("<u4").tobytes()[:n]

    # ------------------------------------------------------------------ permutations
    def _order(self, n: int, device: Device) -> NDArray:
        """A random permutation of ``0..n-1`` (int64): the stable argsort of random 64-bit keys."""
        keys = self.integers(0, 1 << 64, size=(n,), dtype=_dtypes.uint64, device=device)
        return _api.argsort(keys, stable=True)

    def permutation(self, x: Any, axis: int = 0, *, device: Any = None) -> NDArray:
        """A permuted copy of ``x`` along ``axis``, or of ``arange(x)`` for an int ``x``."""
        if _is_int(x):
            n = _int(x, "x")
            if n < 0:
                raise ValueError(f"permutation(): x must be a non-negative int, got {n}")
            return self._order(n, self._where(device))
        arr = self._array(x, device, "permutation")
        if arr.ndim == 0:
            raise ValueError("permutation(): x must be an int or an array of at least 1 dimension, got a 0-d array")
        ax = _axis(axis, arr.ndim, "permutation")
        return _api.take(arr, self._order(arr.shape[ax], arr.device), axis=ax)

    def shuffle(self, x: NDArray, axis: int = 0) -> None:
        """Permute ``x`` in place along ``axis`` (a write, ordered by the engine like ``x[...] = v``)."""
        if not isinstance(x, NDArray):
            raise TypeError(f"shuffle() works in place on an nda array, got {type(x).__name__}; use permutation() for a shuffled copy")
        if x.ndim == 0:
            raise ValueError("shuffle(): x must have at least 1 dimension, got a 0-d array")
        if x.layout.name != "strided":
            raise ValueError(f"shuffle(): x is stored as {x.layout.name}; shuffle a strided array (x.to_layout('strided'))")
        ax = _axis(axis, x.ndim, "shuffle")
        x[...] = _api.take(x, self._order(x.shape[ax], x.device), axis=ax)

    def choice(
        self,
        a: Any,
        size: Any = None,
        replace: bool = True,
        p: Any = None,
        axis: int = 0,
        shuffle: bool = True,
        *,
        shape: Any = None,
        device: Any = None,
    ) -> NDArray:
        """Samples from ``a`` (an array, along ``axis``) or from ``arange(a)``; ``p`` gives probabilities.

        With replacement and ``p``: inverse CDF (``searchsorted`` of uniforms in the cumulative
        sum of ``p``). Without replacement: the first ``k`` of a random permutation, or with
        ``p`` the ``k`` smallest of ``E_i / p_i`` (``E`` exponential: weighted sampling without
        replacement). ``shuffle`` is accepted for NumPy's signature: samples come out in
        random order either way.
        """
        dims = _size(size, shape, "choice", allow_none=True)
        for value, name in ((replace, "replace"), (shuffle, "shuffle")):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"choice(): {name} must be a bool, got {value!r}")
        if _is_int(a):
            n, arr = _int(a, "a"), None
            where = self._where(device)
            if n < 0:
                raise ValueError(f"choice(): a must be a non-negative int, got {n}")
        else:
            arr = self._array(a, device, "choice")
            if arr.ndim == 0:
                raise ValueError("choice(): a must be an int or an array of at least 1 dimension, got a 0-d array")
            ax = _axis(axis, arr.ndim, "choice")
            n, where = arr.shape[ax], arr.device
        k = 1 if dims is None else math.prod(dims)
        if n == 0 and k:
            raise ValueError("choice(): a is empty, so no sample can be taken")
        if not replace and k > n:
            raise ValueError(f"choice(): cannot take {k} samples from a population of {n} without replacement")
        weights = None if p is None else _probabilities(p, n)
        if replace and weights is None:
            index = self.integers(0, max(n, 1), size=(k,), device=where)
        elif replace:
            cdf = np.cumsum(weights)
            cdf /= cdf[-1]
            u = self._float("uniform", (k,), _dtypes.float64, where, low=0.0, high=1.0)
            index = _api.searchsorted(_api.asarray(cdf, device=where), u, side="right")
        elif weights is None:
            index = self._order(n, where)[:k]
        else:
            if np.count_nonzero(weights) < k:
                raise ValueError(f"choice(): p has fewer than {k} non-zero entries, so {k} samples cannot be taken without replacement")
            e = self._float("exponential", (n,), _dtypes.float64, where, scale=1.0)
            keys = _api.divide(e, _api.asarray(weights, device=where))
            index = _api.argsort(keys, stable=True)[:k]
        out_dims = () if dims is None else dims
        if arr is None:
            return _api.reshape(index, out_dims)
        picked = _api.take(arr, index, axis=ax)
        return _api.reshape(picked, arr.shape[:ax] + out_dims + arr.shape[ax + 1 :])

    def _array(self, x: Any, device: Any, op: str) -> NDArray:
        if isinstance(x, NDArray):
            if device is not None and as_device(device) is not x.device:
                raise ValueError(f"{op}(): x is on {x.device} but device={device!r} was asked for")
            return x
        return _api.asarray(x, device=self._where(device))


def default_rng(seed: Any = None, *, device: Device | str | None = None) -> Generator:
    """A :class:`Generator` over ``Philox(seed)``; a Generator is returned as it is, a Philox wrapped."""
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, Philox):
        return Generator(seed, device=device)
    return Generator(Philox(seed), device=device)


def _restore_generator(bit_generator: Philox, device: str | None) -> Generator:
    return Generator(bit_generator, device=device)


# --------------------------------------------------------------------------- argument helpers


def _size(size: Any, shape: Any, op: str, allow_none: bool = False) -> Any:
    if size is not None and shape is not None:
        raise TypeError(f"{op}(): give size or shape, not both")
    value = size if size is not None else shape
    if value is None:
        return None if allow_none else ()
    return _check_shape(value, op, "size" if size is not None else "shape")  # the constructors' parser: no bool, dict or set


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _int(value: Any, name: str) -> int:
    if not _is_int(value):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return operator.index(value)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _float_dtype(dtype: Any, op: str) -> Any:
    dt = _dtypes.default_float if dtype is None else _dtypes.as_dtype(dtype)
    if dt.category != "real floating":
        raise TypeError(f"{op}(): dtype must be float32 or float64, got {dt.name}")
    return dt


def _axis(axis: Any, ndim: int, op: str) -> int:
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}(): axis must be an int, got {type(axis).__name__}") from None
    if not -ndim <= ax < ndim:
        raise np.exceptions.AxisError(f"{op}(): axis {ax} is out of bounds for an array of {ndim} dimensions")
    return ax % ndim


def _non_negative(x: NDArray, op: str, name: str) -> None:
    if bool(_api.any(_api.less(x, 0))):
        raise ValueError(f"{op}(): {name} must be non-negative")


def _into(out: Any, result: NDArray) -> NDArray:
    """NumPy's ``out=`` of ``standard_gamma``: the values written into an nda array of the same shape."""
    if out is None:
        return result
    if not isinstance(out, NDArray) or out.shape != result.shape:
        raise ValueError(f"standard_gamma(): out= must be an nda array of shape {result.shape}")
    out[...] = _api.astype(result, out.dtype, copy=False)
    return out


_WHY = {
    ("gamma", "alpha"): "(shape) must be non-negative",
    ("gamma", "scale"): "must be non-negative",
    ("beta", "a"): "must be positive",
    ("beta", "b"): "must be positive",
    ("standard_t", "df"): "must be positive",
    ("lognormal", "mean"): "must be finite",
    ("lognormal", "sigma"): "must be non-negative",
    ("poisson", "lam"): "must be non-negative (and at most about 9.2e18)",
    ("binomial", "n"): "must be a non-negative integer (at most 2**53)",
    ("binomial", "p"): "must be in [0, 1]",
}
_GAMMA_CHECKS = {"alpha": lambda a: _api.logical_not(_api.greater_equal(a, 0)), "scale": lambda a: _api.logical_not(_api.greater_equal(a, 0))}
_BETA_CHECKS = {"a": lambda a: _api.logical_not(_api.greater(a, 0)), "b": lambda a: _api.logical_not(_api.greater(a, 0))}
_T_CHECKS = {"df": lambda a: _api.logical_not(_api.greater(a, 0))}
_LOGNORMAL_CHECKS = {"mean": lambda a: _api.logical_not(_api.isfinite(a)), "sigma": lambda a: _api.logical_not(_api.greater_equal(a, 0))}
_POISSON_CHECKS = {"lam": lambda a: _api.logical_not(_api.logical_and(_api.greater_equal(a, 0), _api.less_equal(a, 9.2e18)))}
_BINOMIAL_CHECKS = {
    "n": lambda a: _api.logical_or(_api.less(a, 0), _api.greater(a, 2.0**53)),
    "p": lambda a: _api.logical_not(_api.logical_and(_api.greater_equal(a, 0), _api.less_equal(a, 1))),
}


def _probabilities(p: Any, n: int) -> np.ndarray:
    """``p`` read on the host as float64 and checked as NumPy checks it."""
    host = p._host() if isinstance(p, NDArray) else np.asarray(p)
    if host.dtype.kind not in "biuf":
        raise TypeError(f"choice(): p must hold real numbers, got dtype {host.dtype}")
    if host.ndim != 1 or host.shape[0] != n:
        raise ValueError(f"choice(): p must be 1-D with one probability per element of a ({n}), got shape {host.shape}")
    weights = host.astype(np.float64)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("choice(): probabilities must be finite and non-negative")
    atol = max(np.sqrt(np.finfo(np.float64).eps), np.sqrt(np.finfo(host.dtype).eps) if host.dtype.kind == "f" else 0.0)
    if n and abs(math.fsum(weights) - 1.0) > atol:
        raise ValueError(f"choice(): probabilities do not sum to 1 (sum {math.fsum(weights)!r})")
    return weights
