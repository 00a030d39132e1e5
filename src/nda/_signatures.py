"""The signatures the user sees: a catalog declaration's planner signature, made public.

A planner is declared ``def sum(x: _ARRAY, /, *, axis=..., dtype: DType | None = None) ->
Plan``; the public function ``nda.sum`` takes NumPy's dtype spellings too and returns an
NDArray, and the method ``x.sum(axis)`` takes its axis positionally. ``help()``, ``inspect``,
an editor's completion and the typed stubs (:mod:`nda._stubgen`) all read the signatures made
here, so they say the same thing:

* ``_ARRAY`` is ``NDArray``; a ``DType`` parameter is ``DTypeLike`` (``nda.float32``,
  ``"float32"``, ``np.int64``, ``np.dtype("f4")``, ``float``: what ``nda.as_dtype`` takes);
* the return is what the generated function returns: ``NDArray``, the op's named tuple of
  arrays (``EighResult``), ``tuple[NDArray, ...]`` for a variable number, ``None`` for an op
  that writes in place;
* a method drops the array, puts the Method spec's positional form first (``x.reshape(2, 3)``:
  ``*shape``), drops the arguments it fixes (``x.ravel()``), takes a keyword-only ``axis``
  positionally as NumPy's reductions do (``x.sum(0)``) and ``ddof`` beside ``correction``.

Layer: arrays and front end, generators (README, "Architecture").
"""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any

__all__ = ["result_name", "returns", "public_annotation", "function_signature", "method_signature", "operator_signature"]

_P = inspect.Parameter
_DTYPE = re.compile(r"\bDType\b")


def result_name(op_name: str) -> str:
    """The named tuple of an op with several named outputs: ``linalg.eigh`` -> ``EighResult``."""
    short = op_name.rsplit(".", 1)[-1]
    special = {"qr": "QR", "svd": "SVD"}
    return special.get(short, "".join(part.capitalize() for part in short.split("_"))) + "Result"


def returns(decl: Any) -> str:
    """What the generated function of ``decl`` returns, as an annotation."""
    if decl.mutates:
        return "None"
    if decl.outputs is None:
        return "NDArray"
    if decl.outputs == ("*",):
        return "tuple[NDArray, ...]"
    return result_name(decl.name)


def public_annotation(annotation: Any) -> Any:
    """A parameter's annotation as the user passes it (see the module docstring)."""
    if not isinstance(annotation, str):
        return annotation
    return _DTYPE.sub("DTypeLike", annotation.replace("_ARRAY", "NDArray"))


def _public(param: inspect.Parameter) -> inspect.Parameter:
    annotation = public_annotation(param.annotation)
    return param if annotation == param.annotation else param.replace(annotation=annotation)


def function_signature(decl: Any) -> inspect.Signature:
    """The public function's signature of a declaration (built at import for every op: the
    declared one itself where nothing changes, as for most element-wise ops)."""
    signature = decl.signature
    params = list(signature.parameters.values())
    public = [_public(p) for p in params]
    result = returns(decl)
    if result == signature.return_annotation and all(a is b for a, b in zip(public, params)):
        return signature  # type: ignore[no-any-return]
    return signature.replace(parameters=public, return_annotation=result)


def method_signature(decl: Any, spec: Any) -> inspect.Signature:
    """The signature of ``x.<spec.name>(...)`` (``self`` first), as ``nda._namespace._method`` takes its arguments."""
    rest = [_public(p) for p in decl.signature.parameters.values()][1:]
    this = _P("self", _P.POSITIONAL_ONLY, annotation="NDArray")
    if spec.varargs:
        collected = next((p for p in rest if p.name == spec.varargs), None)
        others = [p.replace(kind=_P.KEYWORD_ONLY) for p in rest if p.name != spec.varargs and p.name not in spec.fixed]
        # each positional argument: an int, or the whole sequence (x.reshape(2, 3), x.reshape((2, 3)))
        star = _P(spec.varargs, _P.VAR_POSITIONAL, annotation="int | tuple[int, ...] | list[int]" if collected is not None else "Any")
        out = [this, star] + others
    elif spec.fixed:
        out = [this] + [p.replace(kind=_P.KEYWORD_ONLY) for p in rest if p.name not in spec.fixed]
    else:
        axis = next((p for p in rest if p.name == "axis"), None)
        if axis is not None and axis.kind is _P.KEYWORD_ONLY:  # x.sum(0): NumPy's reductions take the axis positionally
            positional = [p for p in rest if p.kind is _P.POSITIONAL_ONLY]
            rest = positional + [axis.replace(kind=_P.POSITIONAL_OR_KEYWORD)] + [p for p in rest if p is not axis and p not in positional]
        if "correction" in decl.signature.parameters and "ddof" not in decl.signature.parameters:  # x.std(ddof=1): NumPy's name
            rest.append(_P("ddof", _P.KEYWORD_ONLY, default=None, annotation="int | float | None"))
        out = [this] + rest
    return inspect.Signature(out, return_annotation=returns(decl))


_OPERAND = "NDArray | bool | int | float | complex"


@functools.lru_cache(maxsize=None)
def operator_signature(role: str) -> inspect.Signature:
    """An operator's signature by its role (``nda._namespace.operator_roles``): ``-x``, ``x + y``,
    ``1 + x``, ``x += y``, ``x @ y`` (one object per role: signatures are immutable)."""
    this = _P("self", _P.POSITIONAL_ONLY, annotation="NDArray")
    if role == "unary":
        return inspect.Signature([this], return_annotation="NDArray")
    other = _P("other", _P.POSITIONAL_ONLY, annotation=_OPERAND if role in ("forward", "reflected", "inplace") else "NDArray")
    return inspect.Signature([this, other], return_annotation="NDArray")
