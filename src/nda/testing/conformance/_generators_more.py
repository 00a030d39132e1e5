"""Case generators for nda's own additions to the standard: the Philox ops of ``nda.random`` (and its
rejection-sampled distributions), ``einsum``.

Random ops are creation ops whose values are a function of ``(key, counter)``: a case draws
a shape, a key, a counter (near the carries of its 32-bit words and the 2**128 wrap as often
as anywhere else) and the parameters, and the kit compares the device's values with the
cpu reference's like any other op's (they must in fact be equal bit for bit:
``tests/test_random.py``).

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from nda._dtypes import DType

from .. import strategies as nst
from ._cases import DEVICE, Case, _clip_parts
from ._generators import _arr, _composite

__all__ = ["MORE"]

_KEY = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
_COUNTER = st.one_of(
    st.integers(0, 2**128 - 1),
    st.sampled_from([0, 2**32 - 1, 2**64 - 2, 2**96 - 1, 2**128 - 1]).flatmap(lambda c: st.integers(max(0, c - 3), c)),
)


@_composite
def _random(draw: Any, op: str, dtype: DType) -> Case:
    kwargs: dict[str, Any] = {"key": draw(_KEY), "counter": draw(_COUNTER), "dtype": dtype, "device": DEVICE}
    if op == "random.philox_integers":
        info = np.iinfo(dtype.numpy)
        low = draw(st.integers(int(info.min), int(info.max)))
        kwargs.update(low=low, high=draw(st.integers(low + 1, int(info.max) + 1)))
    elif op == "random.philox_uniform":
        kwargs.update(low=draw(st.sampled_from([0.0, -1.5, 3.0])), high=draw(st.sampled_from([1.0, 4.0, 100.0])))
    elif op == "random.philox_normal":
        kwargs.update(loc=draw(st.sampled_from([0.0, -2.0, 10.0])), scale=draw(st.sampled_from([1.0, 0.5, 0.0])))
    elif op in _DISTRIBUTIONS:  # the rejection-sampled ones (nda.ops.random_dist): parameters of every branch
        kwargs.update({name: draw(st.sampled_from(values)) for name, values in _DISTRIBUTIONS[op].items()})
    else:
        kwargs.update(scale=draw(st.sampled_from([1.0, 2.5, 0.0])))
    return Case(op, (draw(nst.shapes()),), kwargs, signed_zeros=True)


_DISTRIBUTIONS: dict[str, dict[str, list[float]]] = {
    "random.philox_gamma": {"alpha": [0.0, 0.3, 1.0, 2.5, 40.0], "scale": [1.0, 0.5]},
    "random.philox_beta": {"a": [0.2, 1.0, 3.0], "b": [0.5, 2.0]},
    "random.philox_standard_t": {"df": [0.5, 1.0, 7.0]},
    "random.philox_lognormal": {"mean": [0.0, -1.0, 2.0], "sigma": [1.0, 0.25, 0.0]},
    "random.philox_poisson": {"lam": [0.0, 0.5, 3.0, 12.0, 40.0]},  # counts an int8 holds (up to astronomically rare ones)
    "random.philox_binomial": {"n": [0, 1, 10, 100], "p": [0.0, 0.2, 0.5, 0.9, 1.0]},
}

_EINSUM = [
    ("ij,jk->ik", ((2, 3), (3, 4))),
    ("ij,jk", ((0, 3), (3, 2))),
    ("ii->i", ((3, 3),)),
    ("ij->ji", ((2, 3),)),
    ("...ij,...jk", ((2, 2, 3), (1, 3, 2))),
    ("i,i", ((4,), (4,))),
    ("ij,jk,kl->il", ((2, 3), (3, 1), (1, 2))),
    ("", ((),)),
    ("ij,ij->", ((2, 3), (2, 1))),
    ("bij->b", ((2, 3, 3),)),
]


@_composite
def _einsum(draw: Any, op: str, dtype: DType) -> Case:
    """Explicit and implicit subscripts, ellipses, diagonals, broadcast sizes of 1, empty operands;
    values small so that integer sums do not overflow differently from NumPy, complex parts below
    overflow of a product of one part of each operand (:func:`_products_finite`)."""
    spec, shapes = draw(st.sampled_from(_EINSUM))
    arrays = [draw(_arr(dtype, shape, _products_finite(len(shapes)))) for shape in shapes]
    kwargs = {"optimize": draw(st.sampled_from([False, True]))} if len(shapes) > 2 else {}
    return Case(op, (spec, arrays), kwargs)  # the catalog op's form: the operands as one sequence


def _small(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return a % 4
    if a.dtype.kind in "fc":
        with np.errstate(invalid="ignore"):
            return (
                np.where(np.isfinite(a), np.clip(a.real, -8, 8), 1.0).astype(a.dtype)
                if a.dtype.kind == "f"
                else np.where(np.isfinite(a), a, 1.0).astype(a.dtype)
            )
    return a


def _products_finite(n: int) -> Any:
    """:func:`_small`, with complex parts at most ``2**(1021 // n)`` (``2**(125 // n)`` in complex64): a
    product of one part of each of ``n`` operands stays finite. einsum sums complex products, and
    whether such a product's ``a c - b d`` is rounded once (a fused multiply-add: a GPU's GEMM) or
    twice (NumPy's loop) decides whether an overflowing term is ``inf`` or ``nan`` (the kit's rule for
    ``multiply``, ``_cases.COMPLEX_PRODUCTS``; for two operands the same bounds)."""

    def repair(a: np.ndarray) -> np.ndarray:
        a = _small(a)
        if a.dtype.kind != "c":
            return a
        return _clip_parts(a, 0.0, 2.0 ** ((125 if a.dtype == np.complex64 else 1021) // n))

    return repair


MORE: dict[str, Any] = {}
for _names, _builder in [
    (("random.philox_uniform", "random.philox_normal", "random.philox_exponential", "random.philox_integers", *_DISTRIBUTIONS), _random),
    (("einsum",), _einsum),
]:
    for _name in _names:
        MORE[_name] = _builder
