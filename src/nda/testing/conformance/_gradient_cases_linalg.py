"""Gradient-check inputs for products, ``linalg`` and ``fft`` (see :mod:`._gradient_cases`).

Matrices are built with the properties each derivative needs: well-conditioned square
matrices for ``inv``/``solve``/``det``, separated singular values for ``svd``/``pinv``/the
spectral norms, separated eigenvalues for ``eigh``, symmetric positive definite ones for
``cholesky``, and distinct row and column sums for the 1- and inf-norms.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ._gradient_cases import (
    _BUILDERS,
    GradCase,
    _away,
    _axis_arg,
    _broadcastable,
    _Builder,
    _case,
    _distinct,
    _kw,
    _shape,
    _spread,
    _uniform,
    _well_conditioned,
    _with_spectrum,
)


# ----------------------------------------------------------------------------- products and linalg


def _batch(draw: Any) -> tuple[int, ...]:
    return draw(st.sampled_from([(), (), (2,)]))


@_case("matmul")
def _matmul(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    m, k, n = (draw(st.integers(1, 3)) for _ in range(3))
    form = draw(st.sampled_from(["2d", "batched", "vector left", "vector right", "vectors", "broadcast"]))
    shapes = {
        "2d": ((m, k), (k, n)),
        "batched": ((2, m, k), (2, k, n)),
        "vector left": ((k,), (k, n)),
        "vector right": ((m, k), (k,)),
        "vectors": ((k,), (k,)),
        "broadcast": ((2, m, k), (k, n)),
    }[form]
    a, b = (_uniform(rng, sh, -2, 2, cplx) for sh in shapes)
    return GradCase("matmul", lambda xp, x, y: x @ y, [a, b], (0, 1), f"x1 @ x2 ({form})")


@_case("tensordot")
def _tensordot(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    if draw(st.booleans()):
        s1 = _shape(draw, 1, 3)
        k = draw(st.integers(0, len(s1)))
        s2 = s1[len(s1) - k :] + _shape(draw, 0, 2)
        axes: Any = k
    else:
        s1, s2 = (2, 3, 2), (2, 3)
        axes = ((1, 0), (1, 0))
    a, b = _uniform(rng, s1, -2, 2, cplx), _uniform(rng, s2, -2, 2, cplx)
    return GradCase("tensordot", lambda xp, x, y: xp.tensordot(x, y, axes=axes), [a, b], (0, 1), f"tensordot(x1, x2, axes={axes})")


@_case("vecdot")
def _vecdot(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _shape(draw, min_dims=1)
    s2 = _broadcastable(draw, shape) or shape[-1:]
    axis = -1 if len(s2) < 2 or draw(st.booleans()) else -len(s2)
    if shape[axis] != s2[axis]:
        s2 = s2[: len(s2) + axis] + (shape[axis],) + (s2[len(s2) + axis + 1 :] if axis != -1 else ())
    a, b = _uniform(rng, shape, -2, 2, cplx), _uniform(rng, s2, -2, 2, cplx)
    return GradCase("vecdot", lambda xp, x, y: xp.vecdot(x, y, axis=axis), [a, b], (0, 1), f"vecdot(x1, x2, axis={axis})")


_EINSUM_FORMS = [
    ("ij,jk->ik", ((2, 3), (3, 2))),
    ("ii->", ((3, 3),)),
    ("ii->i", ((3, 3),)),
    ("ij->", ((2, 3),)),
    ("...ij,...jk", ((2, 2, 3), (1, 3, 2))),
    ("ij,jk,kl->il", ((2, 3), (3, 2), (2, 2))),
    ("ij,ij->i", ((2, 3), (2, 1))),
    ("iij->ji", ((2, 2, 3),)),
    ("i,j->ij", ((3,), (2,))),
    ("bij,bjk->bik", ((2, 2, 3), (2, 3, 2))),
]


@_case("einsum")
def _einsum(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    spec, shapes = draw(st.sampled_from(_EINSUM_FORMS))
    optimize = draw(st.sampled_from([False, "greedy"]))
    values = [_uniform(rng, sh, -2, 2, cplx) for sh in shapes]
    return GradCase(
        "einsum",
        lambda xp, *ops: xp.einsum(spec, *ops, optimize=optimize),
        values,
        tuple(range(len(values))),
        f"einsum({spec!r}, optimize={optimize!r})",
        torch=False,
    )


def _outer(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    a, b = _uniform(rng, (draw(st.integers(1, 3)),), -2, 2, cplx), _uniform(rng, (draw(st.integers(1, 3)),), -2, 2, cplx)
    return GradCase("linalg.outer", lambda xp, x, y: xp.linalg.outer(x, y), [a, b], (0, 1), "linalg.outer(x1, x2)")


def _cross(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    shape = _batch(draw) + (3,)
    a, b = _uniform(rng, shape, -2, 2, cplx), _uniform(rng, (3,), -2, 2, cplx)
    return GradCase("linalg.cross", lambda xp, x, y: xp.linalg.cross(x, y), [a, b], (0, 1), "linalg.cross(x1, x2)")


_BUILDERS["linalg.outer"] = _outer
_BUILDERS["linalg.cross"] = _cross


def _square_for(name: str) -> _Builder:
    short = name.split(".")[1]

    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        n = draw(st.integers(1, 3))
        a = _well_conditioned(rng, _batch(draw) + (n, n), cplx)
        if short == "solve":
            b = _uniform(rng, (n,) if draw(st.booleans()) else (n, draw(st.integers(1, 2))), -2, 2, cplx)
            return GradCase(name, lambda xp, x, y: xp.linalg.solve(x, y), [a, b], (0, 1), "linalg.solve(x1, x2)")
        if short == "matrix_power":
            power = draw(st.integers(-2, 3))
            return GradCase(name, lambda xp, x: xp.linalg.matrix_power(x, power), [a], (0,), f"linalg.matrix_power(x, {power})")
        if short == "slogdet":
            return GradCase(name, lambda xp, x: xp.linalg.slogdet(x)[1], [a], (0,), "linalg.slogdet(x).logabsdet")
        return GradCase(name, lambda xp, x: getattr(xp.linalg, short)(x), [a], (0,), f"linalg.{short}(x)")

    return build


for _name in ("linalg.inv", "linalg.det", "linalg.slogdet", "linalg.solve", "linalg.matrix_power"):
    _BUILDERS[_name] = _square_for(_name)


@_case("linalg.pinv")
def _pinv(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    a = _general(rng, (), m, n, cplx)
    return GradCase("linalg.pinv", lambda xp, x: xp.linalg.pinv(x), [a], (0,), "linalg.pinv(x)")


def _diag_for(name: str) -> _Builder:
    short = name.split(".")[1]

    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        shape = _batch(draw) + (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        offset = draw(st.integers(-2, 2))
        a = _uniform(rng, shape, -2, 2, cplx)
        return GradCase(name, lambda xp, x: getattr(xp.linalg, short)(x, offset=offset), [a], (0,), f"linalg.{short}(x, offset={offset})")

    return build


_BUILDERS["linalg.trace"] = _diag_for("linalg.trace")
_BUILDERS["linalg.diagonal"] = _diag_for("linalg.diagonal")


def _general(rng: np.random.Generator, batch: tuple[int, ...], m: int, n: int, cplx: bool = False) -> np.ndarray:
    """A matrix with well-separated singular values (random singular vectors)."""
    k = min(m, n)

    def unitary(size: int) -> np.ndarray:
        a = rng.standard_normal(batch + (size, size))
        return np.linalg.qr(a + 1j * rng.standard_normal(a.shape) if cplx else a)[0]

    u, v = unitary(m), unitary(n)
    s = _spread(rng, batch, k)
    return (u[..., :, :k] * s[..., None, :]) @ np.conj(np.swapaxes(v[..., :, :k], -1, -2))


@_case("linalg.matrix_norm")
def _matrix_norm(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    order = draw(st.sampled_from(["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf]))
    keepdims = draw(st.booleans())
    m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if order in ("fro", "nuc", 2, -2):
        a = _general(rng, _batch(draw), m, n, cplx)
    else:
        a = _distinct(rng, _batch(draw) + (m, n))  # distinct column / row sums (no ties), away from 0
        a = a + np.sign(a) * 0.2
        if cplx:
            a = a * np.exp(1j * rng.uniform(-math.pi, math.pi, a.shape))
    return GradCase(
        "linalg.matrix_norm",
        lambda xp, x: xp.linalg.matrix_norm(x, ord=order, keepdims=keepdims),
        [a],
        (0,),
        f"linalg.matrix_norm(x, ord={order!r}, keepdims={keepdims})",
    )


@_case("linalg.vector_norm")
def _vector_norm(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    order = draw(st.sampled_from([2, 1, 3, 0.5, -1, math.inf, -math.inf]))
    shape = _shape(draw, min_dims=1)
    axis = _axis_arg(draw, len(shape))
    if axis == ():
        axis = None
    keepdims = draw(st.booleans())
    a = _distinct(rng, shape) if order in (math.inf, -math.inf) else _away(rng, shape, cplx=cplx)
    if order in (math.inf, -math.inf):
        a = np.sign(a) * (np.abs(a) + 0.2)
        a = np.where(a == 0, 0.3, a)
    return GradCase(
        "linalg.vector_norm",
        lambda xp, x: xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=order),
        [a],
        (0,),
        f"linalg.vector_norm(x, axis={axis}, keepdims={keepdims}, ord={order})",
    )


def _svd_for(name: str) -> _Builder:
    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        a = _general(rng, _batch(draw), m, n, cplx and name == "linalg.svdvals")
        if name == "linalg.svdvals":
            return GradCase(name, lambda xp, x: xp.linalg.svdvals(x), [a], (0,), "linalg.svdvals(x)")
        full = m == n and draw(st.booleans())

        def fn(xp: Any, x: Any) -> Any:
            u, s, vh = xp.linalg.svd(x, full_matrices=full)
            return u * u, s, vh * vh  # singular vectors are defined up to sign

        return GradCase(name, fn, [a], (0,), f"linalg.svd(x, full_matrices={full}) as (U*U, S, Vh*Vh)")

    return build


_BUILDERS["linalg.svdvals"] = _svd_for("linalg.svdvals")
_BUILDERS["linalg.svd"] = _svd_for("linalg.svd")


def _symmetric_for(name: str) -> _Builder:
    short = name.split(".")[1]

    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        n = draw(st.integers(1, 3))
        batch = _batch(draw)
        a = _with_spectrum(rng, batch + (n, n), _spread(rng, batch, n))
        # The op reads one triangle: the other gets noise its gradient must ignore, unless
        # the matrix is made symmetric inside fn (the convention PyTorch shares).
        symmetrised = draw(st.booleans())
        if symmetrised:
            a = a / 2
        else:
            a = a + np.triu(rng.uniform(-1, 1, a.shape), 1)
        upper = short == "cholesky" and draw(st.booleans())
        if upper and not symmetrised:
            a = np.swapaxes(a, -1, -2)

        def fn(xp: Any, x: Any) -> Any:
            m = x + xp.matrix_transpose(x) if symmetrised else x
            if short == "eigh":
                w, v = xp.linalg.eigh(m)
                return w, v * v  # eigenvectors are defined up to sign
            if short == "cholesky":
                return xp.linalg.cholesky(m, upper=upper)
            return xp.linalg.eigvalsh(m)

        label = f"linalg.{short}({'x + x.mT' if symmetrised else 'x'}{', upper=True' if upper else ''})"
        return GradCase(name, fn, [a], (0,), label, torch=symmetrised)

    return build


for _name in ("linalg.eigh", "linalg.eigvalsh", "linalg.cholesky"):
    _BUILDERS[_name] = _symmetric_for(_name)


@_case("linalg.qr")
def _qr(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
    m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    a = _general(rng, _batch(draw), m, n)
    return GradCase("linalg.qr", lambda xp, x: tuple(xp.linalg.qr(x)), [a], (0,), "linalg.qr(x)")


# ----------------------------------------------------------------------------- fft

_ONE_AXIS = ("fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft")
_MANY_AXES = ("fft.fftn", "fft.ifftn", "fft.rfftn", "fft.irfftn")


def _fft_for(name: str) -> _Builder:
    short = name.split(".")[1]
    real_input = short in ("rfft", "ihfft", "rfftn")

    def build(draw: Any, rng: np.random.Generator, cplx: bool) -> GradCase:
        shape = _shape(draw, min_dims=1, max_side=4)
        x = _uniform(rng, shape, -2, 2, cplx and not real_input)
        if short in ("irfft", "hfft", "irfftn"):
            x = _uniform(rng, shape, -2, 2, True)
        norm = draw(st.sampled_from(["backward", "ortho", "forward"]))
        if name in _ONE_AXIS:
            axis = draw(st.integers(-len(shape), len(shape) - 1))
            n = draw(st.sampled_from([None, None, 1, 2, 3, 5]))
            if short in ("irfft", "hfft") and n is None and shape[axis] == 1:
                n = 2
            kwargs = {"n": n, "axis": axis, "norm": norm}
        else:
            axes = tuple(draw(st.permutations(range(len(shape)))))[: draw(st.integers(1, len(shape)))]
            sizes = tuple(draw(st.sampled_from([1, 2, 3, 4])) for _ in axes) if draw(st.booleans()) else None
            if short == "irfftn" and sizes is None and shape[axes[-1]] == 1:
                sizes = tuple(shape[a] for a in axes[:-1]) + (2,)
            kwargs = {"s": sizes, "axes": axes, "norm": norm}
        return GradCase(name, lambda xp, a: getattr(xp.fft, short)(a, **kwargs), [x], (0,), f"{name}(x, {_kw(kwargs)})")

    return build


for _name in _ONE_AXIS + _MANY_AXES:
    _BUILDERS[_name] = _fft_for(_name)
