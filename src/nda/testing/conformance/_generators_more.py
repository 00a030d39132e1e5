"""Case generators for nda's own additions to the standard: the Philox ops of ``nda.random``.

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
from ._cases import DEVICE, Case
from ._generators import _composite

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
    else:
        kwargs.update(scale=draw(st.sampled_from([1.0, 2.5, 0.0])))
    return Case(op, (draw(nst.shapes()),), kwargs, signed_zeros=True)


MORE: dict[str, Any] = {}
for _names, _builder in [
    (("random.philox_uniform", "random.philox_normal", "random.philox_exponential", "random.philox_integers"), _random),
]:
    for _name in _names:
        MORE[_name] = _builder
