"""Inputs for gradient checks: for each differentiable op, calls where its derivative exists.

A :class:`GradCase` is a function ``fn(xp, *arrays)`` that calls the op through an array
namespace ``xp`` (``nda``, or ``array_api_compat.torch`` for a comparison with
PyTorch), its host inputs (float64/complex128 data, cast to the cell's dtype; integer
inputs such as indices stay integer) and which inputs the gradient is checked for.
Hypothesis draws shapes and parameters; values come from a NumPy generator seeded by
Hypothesis (fast to draw), inside each op's domain: away from kinks and branch cuts
(``abs`` away from 0, ``log`` positive, ``acos`` inside (-1, 1)), without ties where the
gradient picks one element (``max``, ``sort``, ``maximum``), with distinct eigenvalues
and singular values, well-conditioned matrices, and zeros on purpose where the
derivative is defined at zero (``prod``, ``cumulative_prod``).

``fn`` may post-process an op's results so that the loss is well defined: eigenvectors
and singular vectors are only defined up to sign, so ``eigh``/``svd`` are checked
through ``v * v``; ``eigh``/``cholesky`` are also checked with a symmetric argument
``b + b^T`` built inside ``fn``, which PyTorch's convention (symmetric gradients) and
nda's (the gradient of the triangle the op reads) agree on.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from nda.ops import DECLARED as CATALOG  # the catalog and the ops of loaded op libraries

from .. import strategies as nst

__all__ = ["GradCase", "GRADIENT_OPS", "strategy"]


class GradCase:
    """One gradient check: ``fn(xp, *inputs)``; gradients of the inputs ``wrt`` are compared."""

    __slots__ = ("op", "fn", "inputs", "wrt", "label", "torch", "weights")

    def __init__(self, op: str, fn: Callable[..., Any], inputs: list[np.ndarray], wrt: tuple[int, ...], label: str, torch: bool = True) -> None:
        self.op = op
        self.fn = fn
        self.inputs = inputs
        self.wrt = wrt
        self.label = label
        self.torch = torch  # whether array_api_compat.torch can run fn (PyTorch has the op, same semantics)
        self.weights: list[np.ndarray] | None = None  # the loss's weights, one per floating result (set on first use)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{a.dtype.name}{a.shape}" for a in self.inputs)
        # Only floating inputs are rounded: a bool condition (where) or an integer index (take) cannot be.
        data = [(a.round(3) if a.dtype.kind in "fc" else a).tolist() for a in self.inputs]
        return f"<gradient of {self.label} at inputs {shapes}, seed data {data}>"


_Builder = Callable[[Any, np.random.Generator, bool], GradCase]
_BUILDERS: dict[str, _Builder] = {}


def _case(*names: str) -> Callable[[_Builder], _Builder]:
    def wrap(fn: _Builder) -> _Builder:
        for name in names:
            _BUILDERS[name] = fn
        return fn

    return wrap


# ----------------------------------------------------------------------------- values


def _shape(draw: Any, min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 3) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims)))


def _uniform(
    rng: np.random.Generator, shape: tuple[int, ...], lo: float, hi: float, cplx: bool = False, im: tuple[float, float] = (-1.0, 1.0)
) -> np.ndarray:
    x = rng.uniform(lo, hi, shape)
    return x + 1j * rng.uniform(im[0], im[1], shape) if cplx else x


def _away(rng: np.random.Generator, shape: tuple[int, ...], gap: float = 0.3, hi: float = 2.0, cplx: bool = False) -> np.ndarray:
    """Values with ``|x| >= gap``: random signs (complex: random phases)."""
    r = rng.uniform(gap, hi, shape)
    if cplx:
        return r * np.exp(1j * rng.uniform(-math.pi, math.pi, shape))
    return r * rng.choice([-1.0, 1.0], shape)


def _distinct(rng: np.random.Generator, shape: tuple[int, ...], gap: float = 0.25) -> np.ndarray:
    """Pairwise distinct values at least ``gap`` apart, in random order."""
    n = int(np.prod(shape)) if shape else 1
    return (rng.permutation(n) * gap + rng.uniform(0, gap / 3, n) - n * gap / 2).reshape(shape)


def _broadcastable(draw: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: a suffix of it with some sides set to 1."""
    keep = draw(st.integers(0, len(shape)))
    suffix = shape[len(shape) - keep :]
    return tuple(1 if draw(st.booleans()) else n for n in suffix)


def _axis_arg(draw: Any, ndim: int) -> Any:
    """None, an int or a tuple of distinct axes (possibly negative)."""
    if ndim == 0:
        return draw(st.sampled_from([None, ()]))
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    return tuple(a - ndim if draw(st.booleans()) else a for a in axes)


def _well_conditioned(rng: np.random.Generator, shape: tuple[int, ...], cplx: bool = False) -> np.ndarray:
    n = shape[-1]
    a = _uniform(rng, shape, -0.5, 0.5, cplx, (-0.5, 0.5)) / max(n, 1)
    return a + 2.0 * np.eye(n) * rng.choice([-1.0, 1.0], shape[:-1])[..., None]


def _with_spectrum(rng: np.random.Generator, shape: tuple[int, ...], values: np.ndarray) -> np.ndarray:
    """Symmetric matrices with the given eigenvalues (random orthogonal eigenvectors)."""
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    return (q * values[..., None, :]) @ np.swapaxes(q, -1, -2)


def _spread(rng: np.random.Generator, batch: tuple[int, ...], n: int, lo: float = 0.5) -> np.ndarray:
    """``n`` well-separated positive values per batch element (eigenvalues, singular values)."""
    return lo + np.sort(rng.permutation(n) + rng.uniform(0, 0.3, batch + (n,)), axis=-1)


# ----------------------------------------------------------------------------- element-wise

_UNARY_DOMAINS: dict[str, tuple[Any, ...]] = {
    # name: (real sampler, complex sampler or None)
    "abs": (lambda r, s: _away(r, s), lambda r, s: _away(r, s, cplx=True)),
    "acos": (lambda r, s: _uniform(r, s, -0.85, 0.85), lambda r, s: _uniform(r, s, -0.6, 0.6, True, (-0.6, 0.6))),
    "acosh": (lambda r, s: _uniform(r, s, 1.2, 3.0), lambda r, s: _uniform(r, s, 1.5, 3.0, True, (-0.5, 0.5))),
    "asin": (lambda r, s: _uniform(r, s, -0.85, 0.85), lambda r, s: _uniform(r, s, -0.6, 0.6, True, (-0.6, 0.6))),
    "asinh": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True, (-0.6, 0.6))),
    "atan": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True, (-0.6, 0.6))),
    "atanh": (lambda r, s: _uniform(r, s, -0.85, 0.85), lambda r, s: _uniform(r, s, -0.6, 0.6, True, (-0.6, 0.6))),
    "conj": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True)),
    "cos": (lambda r, s: _uniform(r, s, -3, 3), lambda r, s: _uniform(r, s, -2, 2, True)),
    "cosh": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True)),
    "exp": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True)),
    "expm1": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True)),
    "imag": (lambda r, s: _uniform(r, s, -2, 2, True), lambda r, s: _uniform(r, s, -2, 2, True)),  # complex input only
    "log": (lambda r, s: _uniform(r, s, 0.2, 3), lambda r, s: _uniform(r, s, 0.2, 2, True)),
    "log1p": (lambda r, s: _uniform(r, s, -0.5, 3), lambda r, s: _uniform(r, s, -0.5, 2, True)),
    "log2": (lambda r, s: _uniform(r, s, 0.2, 3), lambda r, s: _uniform(r, s, 0.2, 2, True)),
    "log10": (lambda r, s: _uniform(r, s, 0.2, 3), lambda r, s: _uniform(r, s, 0.2, 2, True)),
    "negative": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True)),
    "positive": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True)),
    "real": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True)),
    "reciprocal": (lambda r, s: _away(r, s), lambda r, s: _away(r, s, cplx=True)),
    "sin": (lambda r, s: _uniform(r, s, -3, 3), lambda r, s: _uniform(r, s, -2, 2, True)),
    "sinh": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True)),
    "sign": (lambda r, s: _away(r, s), lambda r, s: _away(r, s, cplx=True)),
    "sqrt": (lambda r, s: _uniform(r, s, 0.2, 3), lambda r, s: _uniform(r, s, 0.2, 2, True)),
    "square": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -2, 2, True)),
    "tan": (lambda r, s: _uniform(r, s, -1.2, 1.2), lambda r, s: _uniform(r, s, -1, 1, True, (-0.5, 0.5))),
    "tanh": (lambda r, s: _uniform(r, s, -2, 2), lambda r, s: _uniform(r, s, -1, 1, True, (-0.5, 0.5))),
}


def _unary(name: str) -> _Builder:
    real_sampler, complex_sampler = _UNARY_DOMAINS[name]

    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        sampler = complex_sampler if cplx else real_sampler
        x = sampler(rng, _shape(draw))
        return GradCase(name, lambda xp, a: getattr(xp, name)(a), [x], (0,), f"{name}(x)")

    return build


for _name in _UNARY_DOMAINS:
    _BUILDERS[_name] = _unary(_name)


_BINARY = ("add", "subtract", "multiply", "divide", "pow", "atan2", "copysign", "hypot", "logaddexp", "maximum", "minimum", "remainder")
_REAL_ONLY = {"atan2", "copysign", "hypot", "logaddexp", "maximum", "minimum", "remainder"}


def _binary_values(name: str, rng: np.random.Generator, s1: tuple[int, ...], s2: tuple[int, ...], cplx: bool) -> tuple[np.ndarray, np.ndarray]:
    if name == "divide":
        return _uniform(rng, s1, -2, 2, cplx), _away(rng, s2, cplx=cplx)
    if name == "pow":
        return _uniform(rng, s1, 0.5, 2, cplx, (-0.5, 0.5)), _uniform(rng, s2, -2, 2, cplx, (-0.5, 0.5))
    if name in ("atan2", "hypot", "copysign"):
        return _away(rng, s1), _away(rng, s2)
    if name in ("maximum", "minimum"):  # values in disjoint bands, so no two are within 0.2 (no ties)
        return (rng.uniform(0.1, 0.9, s1) + 2 * rng.integers(-1, 2, s1), rng.uniform(1.1, 1.9, s2) + 2 * rng.integers(-1, 2, s2))
    if name == "remainder":  # x1 / x2 at least 0.15 away from an integer (the jumps)
        d = _away(rng, s2, gap=0.5)
        q = rng.integers(-3, 3, s1) + rng.uniform(0.15, 0.85, s1)
        return q * np.broadcast_to(d, s1), d
    return _uniform(rng, s1, -2, 2, cplx), _uniform(rng, s2, -2, 2, cplx)


def _binary_for(name: str) -> _Builder:
    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        s1 = _shape(draw)
        s2 = _broadcastable(draw, s1) if draw(st.booleans()) else s1
        if name != "remainder" and draw(st.booleans()):
            s1, s2 = s2, s1
        x1, x2 = _binary_values(name, rng, s1, s2, cplx)
        form = draw(st.sampled_from(["arrays", "arrays", "scalar right", "scalar left", "same"]))
        if form == "scalar right" and x2.size:
            value = complex(x2.reshape(-1)[0]) if cplx else float(x2.reshape(-1)[0])
            if name == "remainder":
                x1 = (rng.integers(-3, 3, s1) + rng.uniform(0.15, 0.85, s1)) * value
            return GradCase(name, lambda xp, a: getattr(xp, name)(a, value), [x1], (0,), f"{name}(x1, {value!r})")
        if form == "scalar left" and x1.size and name != "remainder":
            value = complex(x1.reshape(-1)[0]) if cplx else float(x1.reshape(-1)[0])
            return GradCase(name, lambda xp, b: getattr(xp, name)(value, b), [x2], (0,), f"{name}({value!r}, x2)")
        if form == "same" and name not in ("maximum", "minimum", "remainder", "atan2", "copysign", "divide", "hypot"):
            return GradCase(name, lambda xp, a: getattr(xp, name)(a, a), [x1], (0,), f"{name}(x, x)")
        return GradCase(name, lambda xp, a, b: getattr(xp, name)(a, b), [x1, x2], (0, 1), f"{name}(x1, x2)")

    return build


for _name in _BINARY:
    _BUILDERS[_name] = _binary_for(_name)


# ----------------------------------------------------------------------------- reductions and scans


def _reduction_for(name: str) -> _Builder:
    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        shape = _shape(draw)
        axis = _axis_arg(draw, len(shape))
        keepdims = draw(st.booleans())
        kwargs: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
        if name in ("min", "max"):
            x = _distinct(rng, shape)
        elif name == "prod":
            x = _uniform(rng, shape, -1.5, 1.5, cplx)
            zeros = draw(st.integers(0, 2)) if x.size else 0
            if zeros:
                x.reshape(-1)[rng.choice(x.size, min(zeros, x.size), replace=False)] = 0
        elif name in ("std", "var"):
            axes = range(len(shape)) if axis is None else [axis] if isinstance(axis, int) else axis
            count = int(np.prod([shape[a] for a in axes])) if shape else 1
            correction = draw(st.sampled_from([0, 0.5, 1])) if count > 1 else 0
            if count == 1 and name == "std":
                shape = shape + (3,) if shape else (3,)
                kwargs["axis"] = -1
            kwargs["correction"] = correction
            x = _distinct(rng, shape, gap=0.3)
        else:
            x = _uniform(rng, shape, -2, 2, cplx)
        torch = kwargs.get("correction", 0) in (0, 1)  # array_api_compat.torch: integer corrections only
        return GradCase(name, lambda xp, a: getattr(xp, name)(a, **kwargs), [x], (0,), f"{name}(x, {_kw(kwargs)})", torch=torch)

    return build


def _kw(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


for _name in ("sum", "mean", "prod", "std", "var", "min", "max"):
    _BUILDERS[_name] = _reduction_for(_name)


def _scan_for(name: str) -> _Builder:
    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        shape = _shape(draw, min_dims=1, max_side=4)
        axis = draw(st.integers(-len(shape), len(shape) - 1)) if len(shape) > 1 or draw(st.booleans()) else None
        kwargs = {"axis": axis, "include_initial": draw(st.booleans())}
        x = _uniform(rng, shape, -1.5, 1.5, cplx)
        if name == "cumulative_prod" and x.size:
            x.reshape(-1)[rng.choice(x.size, min(draw(st.integers(0, 2)), x.size), replace=False)] = 0
        return GradCase(name, lambda xp, a: getattr(xp, name)(a, **kwargs), [x], (0,), f"{name}(x, {_kw(kwargs)})")

    return build


for _name in ("cumulative_sum", "cumulative_prod"):
    _BUILDERS[_name] = _scan_for(_name)


# ----------------------------------------------------------------------------- manipulation


@_case("reshape")
def _reshape(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw)
    size = int(np.prod(shape))
    target = draw(st.sampled_from([(size,), (1, size), (size, 1), (-1,)] + ([(2, size // 2)] if size % 2 == 0 and size else [])))
    x = _uniform(rng, shape, -2, 2, cplx)
    return GradCase("reshape", lambda xp, a: xp.reshape(a, target), [x], (0,), f"reshape(x, {target})")


@_case("permute_dims")
def _permute(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw)
    axes = tuple(draw(st.permutations(range(len(shape)))))
    x = _uniform(rng, shape, -2, 2, cplx)
    return GradCase("permute_dims", lambda xp, a: xp.permute_dims(a, axes), [x], (0,), f"permute_dims(x, {axes})")


def _join_for(name: str) -> _Builder:
    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        shape = _shape(draw, min_dims=1)
        count = draw(st.integers(1, 3))
        if name == "concat":
            axis = draw(st.sampled_from([None, *range(-len(shape), len(shape))]))
            ax = 0 if axis is None else axis % len(shape)
            shapes = (
                [shape[:ax] + (draw(st.integers(1, 3)),) + shape[ax + 1 :] for _ in range(count)]
                if axis is not None
                else [_shape(draw) for _ in range(count)]
            )
        else:
            axis = draw(st.integers(-len(shape) - 1, len(shape)))
            shapes = [shape] * count
        xs = [_uniform(rng, sh, -2, 2, cplx) for sh in shapes]
        return GradCase(
            name, lambda xp, *arrays: getattr(xp, name)(list(arrays), axis=axis), xs, tuple(range(count)), f"{name}([{count} arrays], axis={axis})"
        )

    return build


_BUILDERS["concat"] = _join_for("concat")
_BUILDERS["stack"] = _join_for("stack")


@_case("expand_dims", "squeeze")
def _dims(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw, min_dims=1)
    x = _uniform(rng, shape, -2, 2, cplx)
    if draw(st.booleans()):
        axis = draw(st.integers(-len(shape) - 1, len(shape)))
        return GradCase("expand_dims", lambda xp, a: xp.expand_dims(a, axis=axis), [x], (0,), f"expand_dims(x, axis={axis})")
    shape = shape[:1] + (1,) + shape[1:]
    x = x.reshape(shape)
    return GradCase("squeeze", lambda xp, a: xp.squeeze(a, axis=1), [x], (0,), "squeeze(x, axis=1)")


@_case("flip", "roll")
def _reorder(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw, min_dims=1)
    x = _uniform(rng, shape, -2, 2, cplx)
    axis = draw(st.sampled_from([None, *range(len(shape)), tuple(range(len(shape)))]))
    if draw(st.booleans()):
        return GradCase("flip", lambda xp, a: xp.flip(a, axis=axis), [x], (0,), f"flip(x, axis={axis})")
    if isinstance(axis, tuple):
        shift: Any = tuple(draw(st.integers(-4, 4)) for _ in axis)
    else:
        shift = draw(st.integers(-4, 4))
    return GradCase("roll", lambda xp, a: xp.roll(a, shift, axis=axis), [x], (0,), f"roll(x, {shift}, axis={axis})")


def _broadcast_to(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    target = _shape(draw, min_dims=1)
    shape = _broadcastable(draw, target)
    x = _uniform(rng, shape, -2, 2, cplx)
    return GradCase("broadcast_to", lambda xp, a: xp.broadcast_to(a, target), [x], (0,), f"broadcast_to(x, {target})")


def _tile(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw)
    reps = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))
    x = _uniform(rng, shape, -2, 2, cplx)
    return GradCase("tile", lambda xp, a: xp.tile(a, reps), [x], (0,), f"tile(x, {reps})")


def _repeat(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw, min_dims=1)
    axis = draw(st.sampled_from([None, *range(len(shape))]))
    x = _uniform(rng, shape, -2, 2, cplx)
    length = x.size if axis is None else shape[axis]
    if draw(st.booleans()):
        counts = rng.integers(0, 3, length)
        return GradCase("repeat", lambda xp, a, c: xp.repeat(a, c, axis=axis), [x, counts], (0,), f"repeat(x, counts, axis={axis})")
    count = draw(st.integers(0, 3))
    return GradCase("repeat", lambda xp, a: xp.repeat(a, count, axis=axis), [x], (0,), f"repeat(x, {count}, axis={axis})")


_BUILDERS["broadcast_to"] = _broadcast_to
_BUILDERS["tile"] = _tile
_BUILDERS["repeat"] = _repeat


def _triangle_for(name: str) -> _Builder:
    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        shape = _shape(draw, min_dims=2)
        k = draw(st.integers(-2, 2))
        x = _uniform(rng, shape, -2, 2, cplx)
        return GradCase(name, lambda xp, a: getattr(xp, name)(a, k=k), [x], (0,), f"{name}(x, k={k})")

    return build


_BUILDERS["tril"] = _triangle_for("tril")
_BUILDERS["triu"] = _triangle_for("triu")


# ----------------------------------------------------------------------------- indexing, selection


def _basic_key(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    key: list[Any] = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "int", "all", "step", "reverse"]))
        if kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            a, b = sorted((draw(st.integers(-n, n)), draw(st.integers(-n, n))))
            key.append(slice(a, b))
        elif kind == "step":
            key.append(slice(None, None, draw(st.integers(2, 3))))
        elif kind == "reverse":
            key.append(slice(None, None, -draw(st.integers(1, 2))))
        else:
            key.append(slice(None))
    if key and draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    if key and draw(st.booleans()):
        cut = draw(st.integers(0, len(key)))
        key = key[:cut] + [Ellipsis]
    return tuple(key)


@_case("getitem")
def _getitem(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw, min_dims=1)
    x = _uniform(rng, shape, -2, 2, cplx)
    kind = draw(st.sampled_from(["basic", "basic", "integers", "mask", "mixed"]))
    if kind == "basic":
        key = _basic_key(draw, shape)
        reverses = any(isinstance(k, slice) and (k.step or 1) < 0 for k in key)
        return GradCase("getitem", lambda xp, a: a[key], [x], (0,), f"x[{key}]", torch=not reverses)  # torch has no negative steps
    if kind == "mask":
        mask = rng.random(shape[:1]) < 0.6
        return GradCase("getitem", lambda xp, a, m: a[m], [x, mask], (0,), "x[mask]")
    index = rng.integers(-shape[0], shape[0], draw(st.integers(1, 5)))  # repeats on purpose
    if kind == "integers":
        return GradCase("getitem", lambda xp, a, i: a[i], [x, index], (0,), "x[int_array]")
    return GradCase("getitem", lambda xp, a, i: a[i, ...], [x, index], (0,), "x[int_array, ...]")


@_case("take")
def _take(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw, min_dims=1)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    x = _uniform(rng, shape, -2, 2, cplx)
    n = shape[axis]
    index = rng.integers(-n, n, draw(st.integers(1, 5)))
    return GradCase("take", lambda xp, a, i: xp.take(a, i, axis=axis), [x, index], (0,), f"take(x, indices, axis={axis})")


@_case("take_along_axis")
def _take_along(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw, min_dims=1)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    x = _uniform(rng, shape, -2, 2, cplx)
    ishape = list(shape)
    ishape[axis] = draw(st.integers(1, 4))
    index = rng.integers(0, shape[axis], ishape)
    return GradCase(
        "take_along_axis", lambda xp, a, i: xp.take_along_axis(a, i, axis=axis), [x, index], (0,), f"take_along_axis(x, indices, axis={axis})"
    )


@_case("where")
def _where(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw)
    s1 = _broadcastable(draw, shape) if draw(st.booleans()) else shape
    cond = rng.random(shape) < 0.5
    x1, x2 = _uniform(rng, s1, -2, 2, cplx), _uniform(rng, shape, -2, 2, cplx)
    if draw(st.booleans()):
        return GradCase("where", lambda xp, c, a, b: xp.where(c, a, b), [cond, x1, x2], (1, 2), "where(c, x1, x2)")
    return GradCase("where", lambda xp, c, a: xp.where(c, a, 0.5), [cond, x1], (1,), "where(c, x1, 0.5)")


@_case("sort")
def _sort(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw, min_dims=1)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    descending = draw(st.booleans())
    x = _distinct(rng, shape)
    return GradCase("sort", lambda xp, a: xp.sort(a, axis=axis, descending=descending), [x], (0,), f"sort(x, axis={axis}, descending={descending})")


@_case("clip")
def _clip(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw)
    x = rng.uniform(-2, 2, shape)
    lo, hi = rng.uniform(-1.5, 0, shape), rng.uniform(0, 1.5, shape)
    x = np.where(np.abs(x - lo) < 0.1, x + 0.2, x)
    x = np.where(np.abs(x - hi) < 0.1, x + 0.2, x)
    form = draw(st.sampled_from(["arrays", "scalars", "min only", "max only"]))
    if form == "arrays":
        return GradCase("clip", lambda xp, a, b, c: xp.clip(a, b, c), [x, lo, hi], (0, 1, 2), "clip(x, lo, hi)")
    x = np.where(np.abs(np.abs(x) - 0.5) < 0.1, x * 1.5, x)
    if form == "scalars":
        return GradCase("clip", lambda xp, a: xp.clip(a, -0.5, 0.5), [x], (0,), "clip(x, -0.5, 0.5)")
    if form == "min only":
        return GradCase("clip", lambda xp, a, b: xp.clip(a, min=b), [x, lo], (0, 1), "clip(x, min=lo)")
    return GradCase("clip", lambda xp, a, c: xp.clip(a, max=c), [x, hi], (0, 1), "clip(x, max=hi)")


@_case("astype")
def _astype(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    x = _uniform(rng, _shape(draw), -2, 2, cplx)
    target = draw(st.sampled_from(["complex128", "float64"] if not cplx else ["complex128"]))
    return GradCase("astype", lambda xp, a: xp.astype(a, getattr(xp, target)), [x], (0,), f"astype(x, {target})")


from . import _gradient_cases_linalg  # noqa: E402,F401  (products, linalg and fft register their builders)


# ----------------------------------------------------------------------------- the table

_COMPLEX_LINALG = (
    "linalg.inv",
    "linalg.det",
    "linalg.slogdet",
    "linalg.solve",
    "linalg.matrix_power",
    "linalg.trace",
    "linalg.diagonal",
    "linalg.outer",
    "linalg.cross",
    "linalg.vector_norm",
    "linalg.matrix_norm",
    "linalg.svdvals",
    "linalg.pinv",
)


def _complex_ok(name: str) -> bool:
    decl = CATALOG[name]
    if name in _REAL_ONLY or name.startswith("linalg.") and name not in _COMPLEX_LINALG:
        return False
    return any(d.category == "complex floating" for d in decl.supported_dtypes) or name in ("astype", "getitem", "take", "take_along_axis")


#: Every op with a gradient check (the differentiable ops of the catalog).
GRADIENT_OPS: frozenset[str] = frozenset(_BUILDERS)


def extension_ops() -> frozenset[str]:
    """The differentiable ops of loaded op libraries that declare their inputs; their builders
    draw real arrays of mutually broadcastable shapes in [-2, 2] (scalars for ``"scalar"`` inputs)."""
    from nda.backends import _libraries
    from nda.ops import EXTENSIONS

    _libraries.load_all()
    found = []
    for name, decl in EXTENSIONS.items():
        if callable(decl.vjp) and decl.inputs and not decl.mutates:
            _BUILDERS.setdefault(name, _extension_builder(name, decl.inputs, decl.options))
            found.append(name)
    return frozenset(found)


def _extension_builder(name: str, inputs: tuple[str, ...], options: dict[str, tuple[Any, ...]]) -> _Builder:
    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        shapes = iter(draw(nst.mutually_broadcastable_shapes(max(1, inputs.count("array")), min_side=1, max_side=3)).input_shapes)
        values = [np.asarray(_uniform(rng, next(shapes), -2, 2, cplx)) if kind == "array" else float(rng.uniform(-2, 2)) for kind in inputs]
        kwargs = {k: draw(st.sampled_from(list(v))) for k, v in options.items()}
        arrays = [v for v in values if isinstance(v, np.ndarray)]
        positions = [i for i, v in enumerate(values) if isinstance(v, np.ndarray)]

        def fn(xp: Any, *given: Any) -> Any:
            args = list(values)
            for i, a in zip(positions, given):
                args[i] = a
            return xp.ext.function(name)(*args, **kwargs)

        return GradCase(name, fn, arrays, tuple(range(len(arrays))), f"{name}(...)", torch=False)

    return build


def strategy(op: str, *, complex_input: bool = False) -> Any:
    """Hypothesis strategy of :class:`GradCase` for ``op`` (complex inputs where it accepts them)."""
    builder = _BUILDERS[op]
    cplx = complex_input and _complex_ok(op)

    @st.composite
    def cases(draw: Any) -> GradCase:
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        return builder(draw, rng, cplx)

    return cases()


def supports_complex(op: str) -> bool:
    """Whether ``op``'s gradient is checked with complex inputs too."""
    return _complex_ok(op)
