"""nda-sim's op library: two extension ops, ``nda.ext.sim.multiply_add`` and ``nda.ext.sim.gelu``.

The example of an op library (backend API 1.4, :mod:`nda.ops.extension`) that the backend
guide walks through. nda finds it through the entry point ``sim = "nda_sim.ext:library"``
in the group ``nda.extensions`` and loads it on first use of ``nda.ext.sim``. Each op is
declared like a catalog op (planning function or element-wise row, NumPy reference, VJP)
and gets two kernels: the reference itself on cpu, and on sim the reference enqueued on
the device's stream (the same wrapper as nda-sim's native catalog kernels, so the ops run
asynchronously, in queue order, with errors at sync points).

* ``multiply_add(x1, x2, x3)``: ``x1 * x2 + x3`` with the Array API's promotion and
  broadcasting (two roundings, as the two ops give; not a fused multiply-add);
* ``gelu(x)``: the tanh approximation of GELU, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``,
  computed in the input's floating dtype (integers compute in float64, like ``nda.tanh``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import nda
from nda.ops.extension import Cast, OpLibrary, Plan, broadcast_shapes, check_array, same_device

__all__ = ["library", "gelu_reference", "multiply_add_reference"]

library = OpLibrary(
    "sim", api_version="1.4", nda_version="0.1", version="0.1.0", doc="nda-sim's op library: multiply_add and gelu (the example of extension ops)."
)

_C = math.sqrt(2.0 / math.pi)
_K = 0.044715


# ----------------------------------------------------------------------------- multiply_add


def multiply_add_reference(x1: np.ndarray, x2: np.ndarray, x3: np.ndarray) -> np.ndarray:
    """The NumPy reference, in the kernel convention (inputs already of the key dtype)."""
    return np.add(np.multiply(x1, x2), x3)


def _vjp_multiply_add(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, x3: Any, /) -> tuple[Any, ...]:
    return (g * nd.conj(x2) if need[0] else None), (g * nd.conj(x1) if need[1] else None), g


@library.op("multiply_add", dtypes="numeric", reference=multiply_add_reference, vjp=_vjp_multiply_add, inputs=("array", "array", "array"))
def multiply_add(x1: Any, x2: Any, x3: Any, /) -> Plan:
    """``x1 * x2 + x3`` in one op: promoted and broadcast like ``nda.add`` and ``nda.multiply``."""
    arrays = [check_array(a, "multiply_add", name) for a, name in ((x1, "x1"), (x2, "x2"), (x3, "x3"))]
    device = same_device("multiply_add", arrays)
    key = nda.result_type(*arrays)
    if key == nda.bool:
        raise TypeError("multiply_add() does not support bool arrays; numeric dtypes are allowed")
    shape = broadcast_shapes(*(a.shape for a in arrays))
    args = tuple(a if a.dtype is key else Cast(a, key) for a in arrays)
    return Plan(device, key, key, shape, args, reads=arrays)


# ----------------------------------------------------------------------------- gelu


def gelu_reference(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """GELU's tanh approximation in ``x``'s dtype (Python constants are weak: float32 stays float32)."""
    inner = np.tanh(_C * (x + _K * (x * x * x)))
    result = 0.5 * x * (1.0 + inner)
    if out is not None:
        out[...] = result
        return out
    return result


def _vjp_gelu(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    t = nd.tanh(_C * (x + _K * (x * x * x)))
    return (g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _C * (1.0 + 3.0 * _K * (x * x))),)


library.elementwise(
    "gelu",
    arity=1,
    dtypes="real floating",
    reference=gelu_reference,
    vjp=_vjp_gelu,
    doc="GELU (tanh approximation): ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.",
)


# ----------------------------------------------------------------------------- kernels


@library.kernels
def register(register_kernel: Any) -> None:
    """The reference on cpu; on sim, the reference enqueued on the device's stream."""
    from nda.ops import EXTENSIONS

    from . import backend

    for short in ("multiply_add", "gelu"):
        decl = EXTENSIONS[f"sim.{short}"]
        register_kernel(short, decl.supported_dtypes, decl.reference, device_type="cpu")
        register_kernel(short, decl.supported_dtypes, backend._native(decl), device_type="sim")
