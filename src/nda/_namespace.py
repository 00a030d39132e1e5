"""The namespace builder: every catalog op's public function, and NDArray's op methods, once.

Nothing here is written per op. For each :class:`~nda.ops.spec.OpDecl` this module makes
one Python function with the op's real ``__name__``, ``__doc__`` and ``__signature__``
(closures, no ``exec``; the signature says what the user passes and gets,
:mod:`nda._signatures`) through the generators (:mod:`nda._elementwise` for element-wise
ops, :mod:`nda._planned` for the rest), and in the same loop attaches to NDArray the
operators and methods the declaration names: ``operators`` (``+``, ``x[i]``, ``x += y``,
``@``) and ``methods`` (``x.sum(axis=0)``, ``x.reshape(2, 3)``, ``x.ravel()``). This is the
only place that attaches anything to NDArray, and it runs once, at import: afterwards no
module rebinds an attribute of NDArray or of a namespace (autograd and hybridize intercept
calls at the invocation point instead, :mod:`nda._intercept`).

Layer: arrays and front end, namespace builder (README, "Architecture").
"""

from __future__ import annotations

import functools
import inspect
import operator
from typing import Any, Callable

import numpy as np

from . import _elementwise, _execute, _planned
from ._docstrings import public_doc
from ._signatures import function_signature, method_signature, operator_signature
from ._array import NDArray, up
from .ops.spec import CATALOG, Method, OpDecl

__all__ = ["build_namespace", "make_function", "operator_roles"]


def _make(decl: OpDecl) -> Callable[..., Any]:
    if decl.family == "unary":
        return _elementwise.make_unary(decl)
    if decl.family == "binary":
        return _elementwise.make_binary(decl)[0]
    if decl.outputs is not None or decl.data_dependent:
        return _planned.make_multi(decl)
    return _planned.make_generic(decl)


def _finalize(fn: Callable[..., Any], decl: OpDecl, module: str) -> Callable[..., Any]:
    extension, _, short = decl.name.rpartition(".")  # "linalg.inv" -> nda.linalg.inv
    fn.__name__ = short
    fn.__qualname__ = short
    fn.__doc__ = public_doc(decl)  # NumPy-style sections and examples for the most used (nda._docstrings)
    fn.__module__ = f"{module}.{extension}" if extension else module
    fn.__signature__ = function_signature(decl)  # type: ignore[attr-defined]  # NDArray in, NDArray out (nda._signatures)
    fn.__wrapped_decl__ = decl  # type: ignore[attr-defined]
    return fn


def make_function(decl: OpDecl, module: str) -> Callable[..., Any]:
    """The public function of one declaration, without NDArray operators or methods (an
    op library's op: ``nda.ext.<library>.<op>``); the same generators as the catalog's."""
    fn = _finalize(_make(decl), decl, module)
    fn.__name__ = fn.__qualname__ = getattr(decl, "short", fn.__name__)
    fn.__module__ = module
    return fn


def build_namespace(module: str) -> dict[str, Callable[..., Any]]:
    """Make every catalog op's public function and attach NDArray's operators and methods."""
    namespace: dict[str, Callable[..., Any]] = {}
    attached: dict[str, Callable[..., Any]] = {}
    for decl in CATALOG.values():
        if decl.family == "binary":
            fn, forward, reflected = _elementwise.make_binary(decl)
            for i, op_name in enumerate(decl.operators):
                if i == 0:
                    attached[op_name] = _elementwise.native_operator(_named(forward, op_name), forward._nda_cache, "binary")  # type: ignore[attr-defined]
                elif op_name.startswith("__i"):
                    attached[op_name] = _elementwise.make_inplace(decl, op_name)
                else:
                    attached[op_name] = _elementwise.native_operator(_named(reflected, op_name), forward._nda_cache, "reflected")  # type: ignore[attr-defined]
        else:
            fn = _make(decl)
            for op_name in decl.operators:
                attached[op_name] = _operator(fn, decl, op_name)
        public = _finalize(fn, decl, module)
        if decl.family in ("unary", "binary"):
            # ``nda.log(x)``, ``nda.add(x, y)``: the operators' C fast path (nda._native) in front
            # of the Python function, which it answers for (names, signature, pickling)
            public = _elementwise.native_operator(fn, fn._nda_cache, decl.family)  # type: ignore[attr-defined]
        namespace[decl.name] = public
        for spec in decl.methods:
            attached[spec.name] = _method(fn, decl, spec)
    roles = operator_roles()
    for attr, value in attached.items():
        if attr in NDArray.__dict__:
            raise RuntimeError(f"NDArray.{attr} is defined in nda._array and declared by the op catalog too: define it once")
        python = _named(getattr(value, "fallback", value), attr)  # a C operator (nda._native) answers with its Python one's names
        role = roles[attr][1]
        if role != "method":  # what help(NDArray) shows for the operators
            python.__signature__ = _operator_signature(attr, role)  # type: ignore[attr-defined]
        setattr(NDArray, attr, value)
    return namespace


def _operator_signature(attr: str, role: str) -> inspect.Signature:
    if attr not in ("__getitem__", "__setitem__"):
        return operator_signature(role)
    P = inspect.Parameter
    this = P("self", P.POSITIONAL_ONLY, annotation="NDArray")
    if attr == "__getitem__":
        return inspect.Signature([this, P("key", P.POSITIONAL_ONLY, annotation="Any")], return_annotation="NDArray")
    return inspect.Signature(
        [this, P("key", P.POSITIONAL_ONLY, annotation="Any"), P("value", P.POSITIONAL_ONLY, annotation="Any")], return_annotation="None"
    )  # __setitem__


def _named(fn: Callable[..., Any], attr: str) -> Callable[..., Any]:
    fn.__name__ = attr
    fn.__qualname__ = f"NDArray.{attr}"
    return fn


def _operator(fn: Callable[..., Any], decl: OpDecl, name: str) -> Callable[..., Any]:
    """The operator method ``name`` of a non-binary op: unary (``-x``), indexing, ``@``."""
    if decl.family == "unary":

        def unary(self: NDArray) -> Any:
            return fn(self)

        return _elementwise.native_operator(_named(functools.wraps(fn)(unary), name), fn._nda_cache, "unary")  # type: ignore[attr-defined]
    if name == "__getitem__":
        return _planned.make_getitem(fn)
    if name == "__setitem__":

        def setitem(self: NDArray, key: Any, value: Any) -> None:
            if isinstance(value, np.ndarray):  # NumPy's values join x's device, as in x + numpy_array
                try:
                    value = up.asarray(value, device=self._meta.device)
                except TypeError as err:
                    raise TypeError(f"x[...] = value: {err}") from None
            fn(self, key, value)

        return functools.wraps(fn)(setitem)
    if name.startswith("__r"):
        forward = "__" + name[3:]

        def reflected(self: NDArray, other: Any) -> Any:
            """``other @ self`` for an ``other`` that declined (a Dask array that did not know nda yet)."""
            hook = _execute.hooks.foreign_operand
            return NotImplemented if hook is None else hook(other, forward, self)

        return reflected
    return fn._nda_operator  # type: ignore[attr-defined,no-any-return]  # make_generic's two-array fast path in its own frame


def _method(fn: Callable[..., Any], decl: OpDecl, spec: Method) -> Callable[..., Any]:
    """``x.<spec.name>(...)``: the op with ``x`` first (see :class:`~nda.ops.spec.Method`).

    NumPy's ``order`` argument of the shape methods is taken when it says row-major (``"C"``,
    the only memory order of nda's results) and refused otherwise, naming the method.
    """
    name, varargs, fixed, empty = spec.name, spec.varargs, spec.fixed, spec.empty
    axis = decl.signature.parameters.get("axis")
    if varargs is None and not fixed and axis is not None and axis.kind is inspect.Parameter.KEYWORD_ONLY:
        # NumPy's reduction methods take the axis positionally too: x.sum(0), x.mean(1), x.argmax(-1)
        # (x.std(ddof=1): the planners of std and var take NumPy's ddof themselves)
        def method(self: NDArray, *args: Any, **kwargs: Any) -> Any:
            if args:
                if len(args) > 1:
                    raise TypeError(f"{name}() takes at most 1 positional argument (axis), got {len(args)}; pass the others by keyword")
                if "axis" in kwargs:
                    raise TypeError(f"{name}() got 'axis' both as a positional argument and as a keyword")
                return fn(self, axis=args[0], **kwargs)
            return fn(self, **kwargs)
    elif varargs is None and not fixed:

        def method(self: NDArray, *args: Any, **kwargs: Any) -> Any:
            return fn(self, *args, **kwargs)
    else:

        def method(self: NDArray, *args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            if "order" in kwargs:
                _check_order(name, kwargs.pop("order"))
            if fixed:  # x.ravel(), x.flatten(): NumPy's only argument is the order
                if len(args) > 1:
                    raise TypeError(f"{name}() takes at most 1 argument (order), got {len(args)}")
                if args:
                    _check_order(name, args[0])
                    args = ()
            elif args and varargs in kwargs:
                raise TypeError(f"{name}() got {varargs!r} both as positional arguments and as a keyword")
            elif empty is not None and (not args or (len(args) == 1 and args[0] is None)):
                if varargs not in kwargs:
                    kwargs[varargs] = empty(self)  # x.transpose(), x.transpose(None)
                args = ()
            elif len(args) == 1:
                value = args[0]
                if not isinstance(value, (tuple, list)) and _is_index(value):
                    value = (value,)  # x.reshape(6), x.transpose(0): NumPy's one-int form
                kwargs[varargs] = value
                args = ()
            elif args:
                kwargs[varargs] = args
                args = ()
            return fn(self, *args, **fixed, **kwargs)

    method.__doc__ = spec.doc or public_doc(decl)
    method.__signature__ = method_signature(decl, spec)  # type: ignore[attr-defined]  # what help() and editors show
    method.__wrapped_decl__ = decl  # type: ignore[attr-defined]
    method.__nda_method__ = spec  # type: ignore[attr-defined]
    return method


def _check_order(name: str, order: Any) -> None:
    if order != "C":
        raise ValueError(f"{name}(): order={order!r} is not supported: nda's results are row-major, pass order='C' (or nothing)")


def _is_index(value: Any) -> bool:
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def operator_roles() -> dict[str, tuple[OpDecl, str]]:
    """NDArray's attributes that call ops, as :func:`build_namespace` attaches them: name -> (op, role).

    Roles: ``"unary"`` (``-x``), ``"forward"`` (``x + y``), ``"reflected"`` (``1 + x``),
    ``"inplace"`` (``x += y``), ``"operator"`` (``x @ y``, ``x[i]``, ``x[i] = v``) and
    ``"method"`` (``x.sum()``, ``x.reshape(2, 3)``). The typed stubs are generated from it.
    """
    roles: dict[str, tuple[OpDecl, str]] = {}
    for decl in CATALOG.values():
        for i, op_name in enumerate(decl.operators):
            if decl.family == "unary":
                role = "unary"
            elif decl.family == "binary":
                role = "forward" if i == 0 else "inplace" if op_name.startswith("__i") else "reflected"
            else:
                role = "operator"
            roles[op_name] = (decl, role)
        for spec in decl.methods:
            roles[spec.name] = (decl, "method")
    return roles
