"""Element-wise ops: one row per op of the Array API's element-wise functions.

A row gives the name, the arity, the dtype category, the result rule, the NumPy reference
and the NDArray operators the op backs. Rows become :class:`OpDecl` objects with the
``unary``/``binary`` family; their public functions get a specialised fast path in
``nda._elementwise``.

Dtype rules (decided here, documented in the README):

* inputs are promoted to one key dtype (``nda.result_type``; Python scalars are weak);
  kernels always receive inputs of the key dtype (or a Python scalar);
* ops of a floating category given integer or bool inputs compute in the default float
  dtype (``float64``), as NumPy and PyTorch do, rather than raising;
* result rules: ``same`` (the key dtype), ``bool`` (comparisons and tests), ``real``
  (``abs``, ``real``, ``imag`` of complex give the matching real dtype).

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import contextlib
import inspect
import math
from typing import Any, Callable

import numpy as np

from .. import _dtypes
from .._dtypes import CATEGORIES, DType
from .spec import Array, CATALOG, constant, not_differentiable, OpDecl, Plan
from ._vjp import conj, holomorphic, is_complex

__all__ = ["ELEMENTWISE", "unary_result", "binary_result"]

_P = inspect.Parameter
_ARRAY = "NDArray"
UNARY_SIGNATURE = inspect.Signature([_P("x", _P.POSITIONAL_ONLY, annotation=_ARRAY)], return_annotation=_ARRAY)
BINARY_SIGNATURE = inspect.Signature(
    [
        _P("x1", _P.POSITIONAL_ONLY, annotation="NDArray | bool | int | float | complex"),
        _P("x2", _P.POSITIONAL_ONLY, annotation="NDArray | bool | int | float | complex"),
    ],
    return_annotation=_ARRAY,
)

# Categories whose ops accept integer/bool input by computing in float64 (``imag``'s
# "complex floating" is not one: the imaginary part of a real array is not a float64 op).
_FLOATING_CATEGORIES = ("floating", "real floating")


def _real_copy(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    result = np.real(x)
    if out is not None:
        out[...] = result
        return out
    return result.copy()


def _imag_copy(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    result = np.imag(x)
    if out is not None:
        out[...] = result
        return out
    return result.copy()


def _store(result: Any, out: np.ndarray | None) -> Any:
    if out is not None:
        out[...] = result
        return out
    return result


def floor_divide_for(xp: Any) -> Callable[..., Any]:
    """Floor division in the array module ``xp`` with the standard's results where exactly one
    operand is infinite.

    NumPy (and CuPy) give NaN for ``inf // 2`` and -1 for ``-1 // inf``; the standard asks for
    ``+inf`` and ``-0`` there, which is ``x1 / x2`` in both cases. On NumPy the fix-up runs
    only when such an element exists; on other modules (where asking would synchronise a
    device) it is one ``where``. Backends mirroring NumPy's API reuse this (nda-cuda does).
    """
    eager = xp is np
    errstate = getattr(xp, "errstate", None)

    def floor_divide(x1: Any, x2: Any, out: Any = None) -> Any:
        a, b = xp.asarray(x1), xp.asarray(x2)
        if a.dtype.kind == "f" or b.dtype.kind == "f":
            special = (xp.isinf(a) != xp.isinf(b)) & ~xp.isnan(a) & ~xp.isnan(b) & (b != 0)
            if not eager or special.any():
                with errstate(invalid="ignore", divide="ignore") if errstate else contextlib.nullcontext():
                    result = xp.floor_divide(x1, x2)
                    result = xp.where(special, a / b, result).astype(result.dtype, copy=False)
                return _store(result, out)
        return xp.floor_divide(x1, x2, out=out)

    return floor_divide


def expm1_for(xp: Any) -> Callable[..., Any]:
    """expm1 in ``xp``; for complex input with an infinite or NaN part, ``exp(x) - 1`` (C99 ``cexp``
    rules), and ``+0`` real parts for zero input."""
    eager = xp is np
    errstate = getattr(xp, "errstate", None)

    def expm1(x: Any, out: Any = None) -> Any:
        if x.dtype.kind == "c":
            odd = ~xp.isfinite(x)
            zero = x == 0  # NumPy gives -0 + 0j for -0 + 0j; the standard asks for +0 + 0j
            if not eager or odd.any() or zero.any():
                with errstate(invalid="ignore") if errstate else contextlib.nullcontext():
                    result = xp.where(odd, xp.exp(x) - 1, xp.expm1(x)).astype(x.dtype, copy=True)
                real = result.real  # a view: the real parts are fixed in place
                real[zero] = 0
                return _store(result, out)
        return xp.expm1(x, out=out)

    return expm1


def tanh_for(xp: Any) -> Callable[..., Any]:
    """tanh in ``xp``; for complex ``±inf + bj`` with finite ``b``, the standard's ``±1 ± 0j`` (sign of ``b``)."""
    eager = xp is np

    def tanh(x: Any, out: Any = None) -> Any:
        if x.dtype.kind == "c":
            edge = xp.isinf(x.real) & xp.isfinite(x.imag)
            if not eager or edge.any():
                limit = xp.copysign(xp.ones_like(x.real), x.real) + 1j * xp.copysign(xp.zeros_like(x.imag), x.imag)
                return _store(xp.where(edge, limit, xp.tanh(x)).astype(x.dtype, copy=False), out)
        return xp.tanh(x, out=out)

    return tanh


_floor_divide = floor_divide_for(np)
_expm1 = expm1_for(np)
_tanh = tanh_for(np)


def _round(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return np.round(x, out=out)


# name, arity, dtype category, result rule, NumPy reference, operators (forward, reflected, in-place), doc
_ROWS: list[tuple[str, int, str, str, Callable[..., Any], tuple[str, ...], str]] = [
    ("abs", 1, "numeric", "real", np.absolute, ("__abs__",), "Absolute value; complex input gives the magnitude in the matching real dtype."),
    ("acos", 1, "floating", "same", np.arccos, (), "Inverse cosine."),
    ("acosh", 1, "floating", "same", np.arccosh, (), "Inverse hyperbolic cosine."),
    ("add", 2, "numeric", "same", np.add, ("__add__", "__radd__", "__iadd__"), "Sum ``x1 + x2``."),
    ("asin", 1, "floating", "same", np.arcsin, (), "Inverse sine."),
    ("asinh", 1, "floating", "same", np.arcsinh, (), "Inverse hyperbolic sine."),
    ("atan", 1, "floating", "same", np.arctan, (), "Inverse tangent."),
    ("atan2", 2, "real floating", "same", np.arctan2, (), "Quadrant-aware inverse tangent of ``x1 / x2``."),
    ("atanh", 1, "floating", "same", np.arctanh, (), "Inverse hyperbolic tangent."),
    ("bitwise_and", 2, "integer or boolean", "same", np.bitwise_and, ("__and__", "__rand__", "__iand__"), "Bitwise AND."),
    (
        "bitwise_left_shift",
        2,
        "integer",
        "same",
        np.left_shift,
        ("__lshift__", "__rlshift__", "__ilshift__"),
        "Shift the bits of ``x1`` left by ``x2``.",
    ),
    ("bitwise_invert", 1, "integer or boolean", "same", np.invert, ("__invert__",), "Bitwise NOT (logical NOT for bool)."),
    ("bitwise_or", 2, "integer or boolean", "same", np.bitwise_or, ("__or__", "__ror__", "__ior__"), "Bitwise OR."),
    (
        "bitwise_right_shift",
        2,
        "integer",
        "same",
        np.right_shift,
        ("__rshift__", "__rrshift__", "__irshift__"),
        "Shift the bits of ``x1`` right by ``x2``.",
    ),
    ("bitwise_xor", 2, "integer or boolean", "same", np.bitwise_xor, ("__xor__", "__rxor__", "__ixor__"), "Bitwise XOR."),
    ("ceil", 1, "real numeric", "same", np.ceil, (), "Smallest integer-valued number not less than ``x`` (integers pass through)."),
    ("conj", 1, "numeric", "same", np.conjugate, (), "Complex conjugate (real input passes through)."),
    ("copysign", 2, "real floating", "same", np.copysign, (), "Magnitude of ``x1`` with the sign of ``x2``."),
    ("cos", 1, "floating", "same", np.cos, (), "Cosine."),
    ("cosh", 1, "floating", "same", np.cosh, (), "Hyperbolic cosine."),
    (
        "divide",
        2,
        "floating",
        "same",
        np.true_divide,
        ("__truediv__", "__rtruediv__", "__itruediv__"),
        "True division ``x1 / x2``; integer inputs compute in float64.",
    ),
    ("equal", 2, "any", "bool", np.equal, ("__eq__",), "Element-wise ``x1 == x2``."),
    ("exp", 1, "floating", "same", np.exp, (), "Exponential."),
    ("expm1", 1, "floating", "same", _expm1, (), "``exp(x) - 1``, accurate near zero."),
    ("floor", 1, "real numeric", "same", np.floor, (), "Largest integer-valued number not greater than ``x``."),
    ("floor_divide", 2, "real numeric", "same", _floor_divide, ("__floordiv__", "__rfloordiv__", "__ifloordiv__"), "Floor division ``x1 // x2``."),
    ("greater", 2, "real numeric", "bool", np.greater, ("__gt__",), "Element-wise ``x1 > x2``."),
    ("greater_equal", 2, "real numeric", "bool", np.greater_equal, ("__ge__",), "Element-wise ``x1 >= x2``."),
    ("hypot", 2, "real floating", "same", np.hypot, (), "``sqrt(x1**2 + x2**2)`` without undue overflow."),
    ("imag", 1, "complex floating", "real", _imag_copy, (), "Imaginary part, in the matching real dtype."),
    ("isfinite", 1, "numeric", "bool", np.isfinite, (), "Whether each element is finite."),
    ("isinf", 1, "numeric", "bool", np.isinf, (), "Whether each element is infinite."),
    ("isnan", 1, "numeric", "bool", np.isnan, (), "Whether each element is NaN."),
    ("less", 2, "real numeric", "bool", np.less, ("__lt__",), "Element-wise ``x1 < x2``."),
    ("less_equal", 2, "real numeric", "bool", np.less_equal, ("__le__",), "Element-wise ``x1 <= x2``."),
    ("log", 1, "floating", "same", np.log, (), "Natural logarithm."),
    ("log1p", 1, "floating", "same", np.log1p, (), "``log(1 + x)``, accurate near zero."),
    ("log2", 1, "floating", "same", np.log2, (), "Base-2 logarithm."),
    ("log10", 1, "floating", "same", np.log10, (), "Base-10 logarithm."),
    ("logaddexp", 2, "real floating", "same", np.logaddexp, (), "``log(exp(x1) + exp(x2))`` without overflow."),
    ("logical_and", 2, "bool", "same", np.logical_and, (), "Logical AND of bool arrays."),
    ("logical_not", 1, "bool", "same", np.logical_not, (), "Logical NOT of a bool array."),
    ("logical_or", 2, "bool", "same", np.logical_or, (), "Logical OR of bool arrays."),
    ("logical_xor", 2, "bool", "same", np.logical_xor, (), "Logical XOR of bool arrays."),
    ("maximum", 2, "real numeric", "same", np.maximum, (), "Element-wise maximum (NaN propagates)."),
    ("minimum", 2, "real numeric", "same", np.minimum, (), "Element-wise minimum (NaN propagates)."),
    ("multiply", 2, "numeric", "same", np.multiply, ("__mul__", "__rmul__", "__imul__"), "Product ``x1 * x2``."),
    ("negative", 1, "numeric", "same", np.negative, ("__neg__",), "Numerical negative ``-x``."),
    ("nextafter", 2, "real floating", "same", np.nextafter, (), "Next representable value after ``x1`` towards ``x2``."),
    ("not_equal", 2, "any", "bool", np.not_equal, ("__ne__",), "Element-wise ``x1 != x2``."),
    ("positive", 1, "numeric", "same", np.positive, ("__pos__",), "Numerical positive ``+x`` (a copy)."),
    ("pow", 2, "numeric", "same", np.power, ("__pow__", "__rpow__", "__ipow__"), "``x1 ** x2``."),
    ("real", 1, "numeric", "real", _real_copy, (), "Real part, in the matching real dtype (real input is copied)."),
    ("reciprocal", 1, "floating", "same", np.reciprocal, (), "``1 / x``."),
    (
        "remainder",
        2,
        "real numeric",
        "same",
        np.remainder,
        ("__mod__", "__rmod__", "__imod__"),
        "Remainder of floor division; the sign follows ``x2``.",
    ),
    ("round", 1, "numeric", "same", _round, (), "Round to the nearest integer-valued number, halves to even."),
    ("sign", 1, "numeric", "same", np.sign, (), "Sign: -1, 0 or 1 (``x / abs(x)`` for complex)."),
    ("signbit", 1, "real floating", "bool", np.signbit, (), "Whether the sign bit is set (true for -0.0)."),
    ("sin", 1, "floating", "same", np.sin, (), "Sine."),
    ("sinh", 1, "floating", "same", np.sinh, (), "Hyperbolic sine."),
    ("square", 1, "numeric", "same", np.square, (), "``x * x``."),
    ("sqrt", 1, "floating", "same", np.sqrt, (), "Square root."),
    ("subtract", 2, "numeric", "same", np.subtract, ("__sub__", "__rsub__", "__isub__"), "Difference ``x1 - x2``."),
    ("tan", 1, "floating", "same", np.tan, (), "Tangent."),
    ("tanh", 1, "floating", "same", _tanh, (), "Hyperbolic tangent."),
    ("trunc", 1, "real numeric", "same", np.trunc, (), "Round towards zero."),
]

# ----------------------------------------------------------------------------- vector-Jacobian products
# One entry per row above (see ``spec`` for the convention). Holomorphic functions give
# their derivative ``f'(x)``; the VJP is ``g * conj(f'(x))`` (``_vjp.holomorphic``).

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_INTEGER_RESULT = constant("bool or integer result")
_STEPS = constant("piecewise constant: the derivative is zero wherever it is defined")


def _vjp_abs(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    return (g * nd.sign(x),)  # x / |x| for complex input; 0 at 0


def _vjp_add(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    return g, g


def _vjp_subtract(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    return g, (-g if need[1] else None)


def _vjp_multiply(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    return (g * conj(nd, x2) if need[0] else None), (g * conj(nd, x1) if need[1] else None)


def _vjp_divide(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    g1 = g / conj(nd, x2)
    return g1, (-g1 * conj(nd, y) if need[1] else None)


def is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic))


def _scalar_log(value: Any) -> Any:
    import cmath  # only for pow's gradient at a scalar base

    return cmath.log(value) if isinstance(value, complex) or value < 0 else math.log(value)


def _vjp_pow(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    # d/dx1 = x2 * x1 ** (x2 - 1) and d/dx2 = x1 ** x2 * log(x1); each taken as 0 where its
    # factor x2 (resp. x1) is 0, which is the limit and avoids 0 * inf.
    g1 = g2 = None
    if need[0]:
        if is_scalar(x2):
            g1 = nd.zeros_like(g) if x2 == 0 else g * conj(nd, x2 * x1 ** (x2 - 1))
        else:
            g1 = g * conj(nd, nd.where(x2 == 0, 0, x2 * x1 ** (x2 - 1)))
    if need[1]:
        if is_scalar(x1):
            g2 = nd.zeros_like(g) if x1 == 0 else g * conj(nd, y * _scalar_log(x1))
        else:
            g2 = g * conj(nd, nd.where(x1 == 0, 0, y * nd.log(x1)))
    return g1, g2


def _vjp_atan2(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    scale = g / (x1 * x1 + x2 * x2)
    return scale * x2, -scale * x1


def _vjp_copysign(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    if not need[0]:
        return (None,)
    sign2 = math.copysign(1.0, x2) if is_scalar(x2) else nd.copysign(1.0, x2)
    return (g * nd.sign(x1) * sign2,)  # |x1| with x2's sign; no gradient for x2


def _vjp_hypot(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    scale = g / y
    return (scale * x1 if need[0] else None), (scale * x2 if need[1] else None)


def _vjp_logaddexp(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    return (g * nd.exp(x1 - y) if need[0] else None), (g * nd.exp(x2 - y) if need[1] else None)


def _extremum(first_wins: Callable[[Any, Any, Any], Any]) -> Callable[..., tuple[Any, ...]]:
    """maximum/minimum: the gradient goes to the operand that was chosen, half to each on a tie."""

    def vjp(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
        share = nd.astype(first_wins(nd, x1, x2), g.dtype) + 0.5 * nd.astype(x1 == x2, g.dtype)
        return (g * share if need[0] else None), (g * (1.0 - share) if need[1] else None)

    return vjp


def _vjp_remainder(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    # x1 - floor(x1 / x2) * x2
    return g, (-g * nd.floor(x1 / x2) if need[1] else None)


def _vjp_real(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    return (g,)


def _vjp_imag(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    return (g * 1j,)


def _vjp_conj(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    return (conj(nd, g),)


def _vjp_sign(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    """Zero for real input (a step); for complex ``x / |x|`` it is ``(g - Re(conj(g) y) y) / |x|``."""
    if not is_complex(x):
        return (None,)
    magnitude = nd.abs(x)
    return (nd.where(magnitude == 0, 0, (g - nd.real(conj(nd, g) * y) * y) / nd.where(magnitude == 0, 1, magnitude)),)


def _vjp_identity(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    return (g,)


def _vjp_negative(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    return (-g,)


_VJPS: dict[str, Any] = {
    "abs": _vjp_abs,
    "acos": holomorphic(lambda nd, x, y: -1 / nd.sqrt(1 - x * x)),
    "acosh": holomorphic(lambda nd, x, y: 1 / (nd.sqrt(x - 1) * nd.sqrt(x + 1))),
    "add": _vjp_add,
    "asin": holomorphic(lambda nd, x, y: 1 / nd.sqrt(1 - x * x)),
    "asinh": holomorphic(lambda nd, x, y: 1 / nd.sqrt(x * x + 1)),
    "atan": holomorphic(lambda nd, x, y: 1 / (1 + x * x)),
    "atan2": _vjp_atan2,
    "atanh": holomorphic(lambda nd, x, y: 1 / (1 - x * x)),
    "bitwise_and": _INTEGER_RESULT,
    "bitwise_left_shift": _INTEGER_RESULT,
    "bitwise_invert": _INTEGER_RESULT,
    "bitwise_or": _INTEGER_RESULT,
    "bitwise_right_shift": _INTEGER_RESULT,
    "bitwise_xor": _INTEGER_RESULT,
    "ceil": _STEPS,
    "conj": _vjp_conj,
    "copysign": _vjp_copysign,
    "cos": holomorphic(lambda nd, x, y: -nd.sin(x)),
    "cosh": holomorphic(lambda nd, x, y: nd.sinh(x)),
    "divide": _vjp_divide,
    "equal": _INTEGER_RESULT,
    "exp": holomorphic(lambda nd, x, y: y),
    "expm1": holomorphic(lambda nd, x, y: y + 1),
    "floor": _STEPS,
    "floor_divide": _STEPS,
    "greater": _INTEGER_RESULT,
    "greater_equal": _INTEGER_RESULT,
    "hypot": _vjp_hypot,
    "imag": _vjp_imag,
    "isfinite": _INTEGER_RESULT,
    "isinf": _INTEGER_RESULT,
    "isnan": _INTEGER_RESULT,
    "less": _INTEGER_RESULT,
    "less_equal": _INTEGER_RESULT,
    "log": holomorphic(lambda nd, x, y: 1 / x),
    "log1p": holomorphic(lambda nd, x, y: 1 / (1 + x)),
    "log2": holomorphic(lambda nd, x, y: 1 / (x * _LN2)),
    "log10": holomorphic(lambda nd, x, y: 1 / (x * _LN10)),
    "logaddexp": _vjp_logaddexp,
    "logical_and": _INTEGER_RESULT,
    "logical_not": _INTEGER_RESULT,
    "logical_or": _INTEGER_RESULT,
    "logical_xor": _INTEGER_RESULT,
    "maximum": _extremum(lambda nd, x1, x2: x1 > x2),
    "minimum": _extremum(lambda nd, x1, x2: x1 < x2),
    "multiply": _vjp_multiply,
    "negative": _vjp_negative,
    "nextafter": not_differentiable("a step to the neighbouring floating-point number has no useful derivative"),
    "not_equal": _INTEGER_RESULT,
    "positive": _vjp_identity,
    "pow": _vjp_pow,
    "real": _vjp_real,
    "reciprocal": holomorphic(lambda nd, x, y: -(y * y)),
    "remainder": _vjp_remainder,
    "round": _STEPS,
    "sign": _vjp_sign,
    "signbit": _INTEGER_RESULT,
    "sin": holomorphic(lambda nd, x, y: nd.cos(x)),
    "sinh": holomorphic(lambda nd, x, y: nd.cosh(x)),
    "square": holomorphic(lambda nd, x, y: 2 * x),
    "sqrt": holomorphic(lambda nd, x, y: 0.5 / y),
    "subtract": _vjp_subtract,
    "tan": holomorphic(lambda nd, x, y: 1 + y * y),
    "tanh": holomorphic(lambda nd, x, y: 1 - y * y),
    "trunc": _STEPS,
}

_REAL_OF = {_dtypes.complex64: _dtypes.float32, _dtypes.complex128: _dtypes.float64}


def key_dtype_for(category: str, dtype: DType, op: str) -> DType:
    """The dtype an element-wise op computes in for (already promoted) input ``dtype``."""
    allowed = CATEGORIES[category]
    if dtype in allowed:
        return dtype
    if category in _FLOATING_CATEGORIES and dtype.category in ("bool", "signed integer", "unsigned integer"):
        return _dtypes.default_float
    names = ", ".join(d.name for d in allowed)
    raise TypeError(f"{op}() does not support dtype {dtype.name}; it accepts {category} dtypes: {names}")


def result_dtype(rule: str, key: DType) -> DType:
    if rule == "same":
        return key
    if rule == "bool":
        return _dtypes.bool
    return _REAL_OF.get(key, key)  # "real"


def unary_result(decl: OpDecl, dtype: DType) -> tuple[DType, DType]:
    """(key dtype, output dtype) for a unary op on ``dtype``."""
    key = key_dtype_for(decl.dtypes, dtype, decl.name)
    return key, result_dtype(decl.result, key)


def binary_result(decl: OpDecl, d1: DType | type, d2: DType | type) -> tuple[DType, DType]:
    """(key dtype, output dtype) for a binary op; either side may be a Python scalar type."""
    if type(d1) is DType and type(d2) is DType:
        promoted = _dtypes.promote(d1, d2)  # type: ignore[arg-type]
    elif type(d1) is DType:
        promoted = _dtypes.promote_scalar(d1, d2)  # type: ignore[arg-type]
    else:
        promoted = _dtypes.promote_scalar(d2, d1)  # type: ignore[arg-type]
    key = key_dtype_for(decl.dtypes, promoted, decl.name)
    return key, result_dtype(decl.result, key)


def _plan_unary(decl: OpDecl) -> Callable[..., Plan]:
    from .spec import Cast, check_array

    def plan(x: Any, /) -> Plan:
        x = check_array(x, decl.name)
        key, out = unary_result(decl, x._meta.dtype)
        arg = x if key is x._meta.dtype else Cast(x, key)
        return Plan(x._meta.device, key, out, x._shape, (arg,), reads=(x,), layout=x._meta.layout)

    return plan


def _plan_binary(decl: OpDecl) -> Callable[..., Plan]:
    from .spec import Cast, broadcast_shapes, same_device, scalar_arg

    def plan(x1: Any, x2: Any, /) -> Plan:
        x1, x2 = scalar_arg(x1), scalar_arg(x2)
        arrays = [a for a in (x1, x2) if isinstance(a, Array)]
        if not arrays:
            raise TypeError(f"{decl.name}() needs at least one nda array, got {type(x1).__name__} and {type(x2).__name__}")
        for a in (x1, x2):
            if not isinstance(a, Array) and a.__class__ not in (bool, int, float, complex):
                raise TypeError(
                    f"{decl.name}() operands must be nda arrays or Python scalars (bool, int, float, complex), "
                    f"got {type(a).__name__}; convert with nda.asarray()"
                )
        device = same_device(decl.name, arrays)
        t1 = x1._meta.dtype if isinstance(x1, Array) else x1.__class__
        t2 = x2._meta.dtype if isinstance(x2, Array) else x2.__class__
        key, out = binary_result(decl, t1, t2)
        args = []
        for a in (x1, x2):
            if isinstance(a, Array):
                args.append(a if a._meta.dtype is key else Cast(a, key))
            else:
                args.append(_check_scalar(a, key, decl.name))
        shape = broadcast_shapes(*(a._shape for a in arrays))
        return Plan(device, key, out, shape, tuple(args), reads=arrays)

    return plan


def _check_scalar(value: Any, key: DType, op: str) -> Any:
    """A Python scalar must be representable in the key dtype (NumPy raises for ``int8 + 1000``)."""
    if key.category in ("signed integer", "unsigned integer"):
        if value.__class__ is int:
            info = np.iinfo(key.numpy)
            if not info.min <= value <= info.max:
                raise OverflowError(f"{op}(): Python int {value} is out of bounds for {key.name} (range {info.min}..{info.max})")
        elif value.__class__ is not bool:
            raise TypeError(f"{op}(): a {type(value).__name__} scalar cannot combine with {key.name} here")
    return value


ELEMENTWISE: dict[str, OpDecl] = {}

for _name, _arity, _category, _result, _ref, _operators, _doc in _ROWS:
    _decl = OpDecl(
        _name,
        family="unary" if _arity == 1 else "binary",
        signature=UNARY_SIGNATURE if _arity == 1 else BINARY_SIGNATURE,
        dtypes=_category,
        plan=lambda *a, **k: None,  # type: ignore[arg-type,return-value]  # replaced below
        reference=_ref,
        doc=_doc,
        operators=_operators,
        result=_result,
        vjp=_VJPS[_name],
    )
    _decl.plan = _plan_unary(_decl) if _arity == 1 else _plan_binary(_decl)
    ELEMENTWISE[_name] = CATALOG[_name] = _decl
