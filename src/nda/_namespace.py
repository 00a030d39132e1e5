"""The namespace builder: every catalog op's public function, and NDArray's methods, once.

Nothing here is written per op. For each :class:`~nda.ops.spec.OpDecl` this module makes
one Python function with the op's real ``__name__``, ``__doc__`` and ``__signature__``
(closures, no ``exec``; the signature says what the user passes and gets,
:mod:`nda._signatures`) through the generators (:mod:`nda._elementwise` for element-wise
ops, :mod:`nda._planned` for the rest), and in the same loop attaches to NDArray the
operators and methods the declaration names: ``operators`` (``+``, ``x[i]``, ``x += y``,
``@``) and ``methods`` (``x.sum(axis=0)``, ``x.reshape(2, 3)``, ``x.ravel()``), then
``x.T``, ``x.mT`` and ``iter(x)``, which are made of those ops.

NDArray's other methods call layers above this one: ``astype``, ``to_device``,
``to_layout``, ``copy``, ``copyto``, ``round``, ``divmod``, ``x[i] = numpy_array`` and
pickling call the public API (:mod:`nda._api`), ``__array_ufunc__`` and
``__array_function__`` NumPy's protocols (:mod:`nda._interop`), ``attach_grad``, ``grad``,
``detach`` and ``backward`` :mod:`nda.autograd`, a sparse array's pickling
:mod:`nda.sparse`, and ``__array_namespace__`` the ``nda`` package. A lower layer never
imports a higher one, so they are attached by :func:`complete_ndarray`, which the ``nda``
package calls once, at the end of its import, with an object that implements the typed
protocol :class:`ArrayAPI` (mypy checks it): the methods close over its functions, and
nothing is looked up in a slot at call time.

These two functions are the only places that attach anything to NDArray, and they run
once, at import: afterwards no module rebinds an attribute of NDArray or of a namespace
(autograd and hybridize intercept calls at the invocation point instead,
:mod:`nda._intercept`).

Layer: arrays and front end, namespace builder (README, "Architecture").
"""

from __future__ import annotations

import functools
import inspect
import operator
from types import ModuleType
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from . import _elementwise, _execute, _planned
from ._docstrings import public_doc
from ._signatures import function_signature, method_signature, operator_signature
from ._array import NDArray
from ._devices import Device, Layout
from ._dtypes import same_kind_castable
from .ops.spec import CATALOG, Method, OpDecl

__all__ = ["ArrayAPI", "build_namespace", "complete_ndarray", "make_function", "operator_roles"]


#: What :func:`build_namespace` made for :func:`complete_ndarray` to attach (``__setitem__``).
_DEFERRED: dict[str, Callable[..., Any]] = {}


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
        if attr == "__setitem__":
            _DEFERRED[attr] = value  # x[i] = numpy_array needs nda.asarray: complete_ndarray() attaches it
            continue
        python = _named(getattr(value, "fallback", value), attr)  # a C operator (nda._native) answers with its Python one's names
        role = roles[attr][1]
        if role != "method":  # what help(NDArray) shows for the operators
            python.__signature__ = _operator_signature(attr, role)  # type: ignore[attr-defined]
        _attach(attr, value, "declared by the op catalog")
    _attach_op_made(namespace["permute_dims"], _generated_getitem(namespace))
    return namespace


def _attach(attr: str, value: Any, where: str) -> None:
    """``NDArray.<attr> = value``, once: an attribute defined twice is an error at import."""
    if attr in NDArray.__dict__:
        raise RuntimeError(f"NDArray.{attr} is defined in nda._array (or attached already) and {where} too: define it once")
    setattr(NDArray, attr, value)


def _generated_getitem(namespace: dict[str, Callable[..., Any]]) -> Callable[..., Any]:
    for decl in CATALOG.values():
        if "__getitem__" in decl.operators:
            return namespace[decl.name]
    raise RuntimeError("the op catalog declares no __getitem__")  # pragma: no cover


def _method_of(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    fn.__name__ = name
    fn.__qualname__ = f"NDArray.{name}"
    fn.__module__ = NDArray.__module__
    return fn


def _attach_op_made(permute_dims: Callable[..., Any], getitem: Callable[..., Any]) -> None:
    """``x.T``, ``x.mT`` (``permute_dims``) and ``iter(x)`` (``x[0]``, ``x[1]``… as ``next()``
    asks: the rows the getitem generator made beside ``x[i]``'s fast path, :mod:`nda._planned`)."""
    rows = getitem.__nda_rows__  # type: ignore[attr-defined]

    def T(self: NDArray) -> NDArray:
        """The transpose: axes reversed (for a 2-D array, the matrix transpose)."""
        return permute_dims(self, tuple(range(len(self._shape) - 1, -1, -1)))  # type: ignore[no-any-return]

    def mT(self: NDArray) -> NDArray:
        """Transpose of the last two axes (a stack of matrices transposed)."""
        ndim = len(self._shape)
        if ndim < 2:
            raise ValueError(f"mT needs an array of at least 2 dimensions, got shape {self._shape}")
        return permute_dims(self, tuple(range(ndim - 2)) + (ndim - 1, ndim - 2))  # type: ignore[no-any-return]

    def __iter__(self: NDArray) -> Iterator[NDArray]:
        # Not a generator: iter() of a 0-d array must raise at once, as NumPy's does
        # (np.iterable, matplotlib's hist and set_ylim decide on it).
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        return rows(self)  # type: ignore[no-any-return]

    _attach("T", property(_method_of(T, "T")), "made of permute_dims")
    _attach("mT", property(_method_of(mT, "mT")), "made of permute_dims")
    _attach("__iter__", _method_of(__iter__, "__iter__"), "made of getitem")


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
        return fn  # complete_ndarray() attaches x[i] = value (a NumPy value needs nda.asarray)
    if name.startswith("__r"):
        forward = "__" + name[3:]

        def reflected(self: NDArray, other: Any) -> Any:
            """``other @ self`` for an ``other`` that declined (a Dask array that did not know nda yet)."""
            return _execute.foreign_operand(other, forward, self)

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


# ---------------------------------------------------------------------------- methods that call the layers above


class ArrayAPI(Protocol):
    """What NDArray's methods that are not ops call in the layers above this one.

    The ``nda`` package implements it (``nda/__init__.py``: the public API, NumPy's
    protocols, autograd and sparse arrays, all imported by then) and hands it to
    :func:`complete_ndarray` once. Each member is what the method of the same name does,
    with the array first; ``namespace`` is the ``nda`` module (``x.__array_namespace__()``),
    ``asarray`` makes ``x[i] = numpy_array``'s value, ``from_pickle(host, device)`` is the
    module-level function an unpickled strided array is made by, and ``sparse_reduce`` is a
    sparse array's ``__reduce__``.
    """

    @property
    def namespace(self) -> ModuleType: ...

    def asarray(self, obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> NDArray: ...
    def to_device(self, x: NDArray, device: Device | str, /, *, stream: Any = None) -> NDArray: ...
    def to_layout(self, x: Any, layout: Any, /) -> Any: ...
    def astype(self, x: NDArray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> NDArray: ...
    def copy(self, x: NDArray, /) -> NDArray: ...
    def copyto(self, x: NDArray, y: NDArray, /) -> NDArray: ...
    def round(self, x: NDArray, decimals: int = 0, /) -> NDArray: ...
    def divmod(self, x1: Any, x2: Any, /) -> tuple[NDArray, NDArray]: ...
    def from_pickle(self, host: np.ndarray, device: str, /) -> NDArray: ...
    def sparse_reduce(self, x: NDArray, /) -> Any: ...
    def array_ufunc(self, x: NDArray, ufunc: Any, method: str, /, *inputs: Any, **kwargs: Any) -> Any: ...
    def array_function(self, x: NDArray, func: Any, types: Any, args: Any, kwargs: Any, /) -> Any: ...
    def attach_grad(self, x: NDArray, grad_req: str = "write", /) -> None: ...
    def grad(self, x: NDArray, /) -> NDArray | None: ...
    def detach(self, x: NDArray, /) -> NDArray: ...
    def backward(self, x: NDArray, head_grad: NDArray | None = None, retain_graph: bool = False, /) -> None: ...


_API_VERSIONS = ("2022.12", "2023.12", "2024.12", "2025.12")


def complete_ndarray(api: ArrayAPI) -> None:
    """Attach NDArray's methods that call the layers above (see :class:`ArrayAPI`), once.

    Each method is a plain function with its own signature and docstring (what ``help()``,
    editors and ``nda._stubgen`` read), closing over ``api``'s function: no lookup at call time.
    """
    if "astype" in NDArray.__dict__:
        raise RuntimeError("NDArray's methods are complete already: nda._namespace.complete_ndarray runs once, when nda is imported")
    namespace = api.namespace
    asarray, to_device_, to_layout_, astype_, copy_, copyto_ = api.asarray, api.to_device, api.to_layout, api.astype, api.copy, api.copyto
    round_, divmod_, from_pickle, sparse_reduce = api.round, api.divmod, api.from_pickle, api.sparse_reduce
    array_ufunc, array_function = api.array_ufunc, api.array_function
    attach_grad_, grad_, detach_, backward_ = api.attach_grad, api.grad, api.detach, api.backward
    setitem_ = _DEFERRED.pop("__setitem__")

    def __setitem__(self: NDArray, key: Any, value: Any, /) -> None:
        if isinstance(value, np.ndarray):  # NumPy's values join x's device, as in x + numpy_array
            try:
                value = asarray(value, device=self._meta.device)
            except TypeError as err:
                raise TypeError(f"x[...] = value: {err}") from None
        setitem_(self, key, value)

    def to_layout(self: NDArray, layout: Layout | str, /) -> NDArray:
        """This array stored in ``layout`` (``"strided"``, ``"csr"``, ``"row_sparse"``, …); ``self`` if it already is.

        Converting to strided is the explicit way to densify a sparse array.
        """
        return to_layout_(self, layout)  # type: ignore[no-any-return]

    def to_device(self: NDArray, device: Device | str, /, *, stream: Any = None) -> NDArray:
        """This array on ``device`` (``self`` when it is already there)."""
        return to_device_(self, device, stream=stream)

    def astype(self: NDArray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> NDArray:
        """This array cast to ``dtype`` (``self`` when ``copy=False`` and nothing changes); see ``nda.astype``."""
        return astype_(self, dtype, copy=copy, device=device)

    def copy(self: NDArray) -> NDArray:
        """A copy of this array on the same device."""
        return copy_(self)

    def round(self: NDArray, decimals: int = 0) -> NDArray:
        """NumPy's ``ndarray.round``: to ``decimals`` places (negative: tens, hundreds…), halves to even.

        ``x * 10**decimals`` rounded and divided back, as NumPy computes it (integers in float64,
        then cast back; complex part by part); ``decimals=0`` is ``nda.round``."""
        return round_(self, decimals)

    def __round__(self: NDArray, ndigits: int | None = None) -> NDArray:
        return round_(self, 0 if ndigits is None else ndigits)

    def __divmod__(self: NDArray, other: Any) -> tuple[NDArray, NDArray]:
        return divmod_(self, other)

    def __rdivmod__(self: NDArray, other: Any) -> tuple[NDArray, NDArray]:
        return divmod_(other, self)

    def copyto(self: NDArray, other: NDArray, /) -> NDArray:
        """Copy this array's data into the existing array ``other`` (any device, same shape); returns ``other``."""
        return copyto_(self, other)

    matmul_ = namespace.matmul

    def __imatmul__(self: NDArray, other: Any) -> Any:
        """``x @= y``: ``x @ y`` stored into ``x`` itself (its views see it), as NumPy and the Array API do.

        The product must have ``x``'s shape (ValueError otherwise) and its dtype must cast to
        ``x``'s under the same-kind rule (TypeError otherwise); it is computed first, then written."""
        if other.__class__ is not NDArray:
            return NotImplemented  # Python then tries x = x @ other, which gets the operand's own answer
        product = matmul_(self, other)
        if product._shape != self._shape:
            raise ValueError(f"x @= y: the product has shape {product._shape}, which does not fit x's shape {self._shape}; use x = x @ y")
        if not same_kind_castable(product._meta.dtype, self._meta.dtype):
            raise TypeError(f"x @= y: cannot store the {product._meta.dtype.name} product in place in a {self._meta.dtype.name} array; use x = x @ y")
        setitem_(self, Ellipsis, product)
        return self

    def __array_namespace__(self: NDArray, *, api_version: str | None = None) -> Any:
        if api_version is not None and api_version not in _API_VERSIONS:
            raise ValueError(f"unsupported Array API version {api_version!r}; nda implements 2025.12 (and accepts 2022.12, 2023.12, 2024.12)")
        return namespace

    def __array_ufunc__(self: NDArray, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return array_ufunc(self, ufunc, method, *inputs, **kwargs)

    def __array_function__(self: NDArray, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return array_function(self, func, types, args, kwargs)

    def attach_grad(self: NDArray, grad_req: str = "write") -> None:
        """Give this array a gradient buffer ``self.grad`` that ``backward()`` fills (see ``nda.autograd``)."""
        attach_grad_(self, grad_req)

    def grad(self: NDArray) -> NDArray | None:
        """The gradient buffer given by ``attach_grad()`` (None for an array without one)."""
        return grad_(self)

    def detach(self: NDArray) -> NDArray:
        """The same data without gradient history: a view (strided) or a copy (sparse arrays have no views)."""
        return detach_(self)

    def backward(self: NDArray, head_grad: NDArray | None = None, retain_graph: bool = False) -> None:
        """Compute the gradients of this array with respect to the leaves (``attach_grad``); see ``nda.autograd.backward``."""
        backward_(self, head_grad, retain_graph)

    def __reduce__(self: NDArray) -> Any:
        if self._meta.layout.name != "strided":
            return sparse_reduce(self)
        return (from_pickle, (self.asnumpy(), str(self._meta.device)))

    def __copy__(self: NDArray) -> NDArray:
        return copy_(self)

    def __deepcopy__(self: NDArray, memo: Any) -> NDArray:
        return copy_(self)

    functools.wraps(setitem_)(__setitem__)  # the op's doc and declaration, as every operator has
    __setitem__.__name__ = "__setitem__"
    __setitem__.__signature__ = _operator_signature("__setitem__", "operator")  # type: ignore[attr-defined]
    methods: list[Callable[..., Any]] = [
        __setitem__, to_layout, to_device, astype, copy, round, __round__, __divmod__, __rdivmod__, copyto, __imatmul__, __array_namespace__,
        __array_ufunc__, __array_function__, attach_grad, detach, backward, __reduce__, __copy__, __deepcopy__,
    ]  # fmt: skip
    for method in methods:
        _attach(method.__name__, _method_of(method, method.__name__), "called in a layer above")
    _attach("grad", property(_method_of(grad, "grad")), "called in a layer above")
