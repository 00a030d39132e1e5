"""How an op is declared: :class:`OpDecl`, the :class:`Plan` a declaration returns, helpers.

An op is declared once. Element-wise ops are rows of a table (see ``elementwise.py``);
every other op is a *planning function* decorated with :func:`declare`::

    @declare("flip", dtypes="any", reference=_flip, method=None)
    def flip(x: NDArray, /, *, axis: int | tuple[int, ...] | None = None) -> Plan:
        "Reverse the order of elements along ``axis``."
        ...validate, work out the output shape and dtype...
        return Plan.of(x, out_shape=x.shape, args=(x,), kwargs={"axis": axes})

Ops of the standard's extensions are named with their namespace (``"linalg.inv"``,
``"fft.rfft"``) and appear as ``nda.linalg.inv`` and ``nda.fft.rfft``.

The planning function *is* the op's shape/dtype rule and its argument validation. It
never touches data, so it runs at the caller's line (errors there have the Array API's
exception types) and it is what ``nda.dispatch.explain`` uses. The public function
``nda.flip`` is generated from it (same name, signature and docstring) by
``nda._namespace``: it plans, resolves the kernel for ``plan.key``, and hands the work to
the engine.

Kernels use the "kernel convention": the plan's ``args``/``kwargs`` with every NDArray
replaced by its backend buffer, cast first where the plan says so. ``reference`` is the
NumPy implementation in that same convention; the cpu backend registers it and the
conformance tests compare every backend against it.

``vjp`` is the op's vector-Jacobian product, which ``nda.autograd`` calls to propagate a
gradient backwards through a recorded call. It is written with nda ops, taken from the
namespace ``nd`` that autograd passes in (the catalog imports neither ``nda`` nor the
front end), so gradients dispatch, run on the arrays' device and are ordered by the
engine like any op, and are themselves recorded for higher-order gradients::

    def vjp(nd, need, g, y, *args, **kwargs) -> tuple[gradient | None, ...]

``args``/``kwargs`` are the call's arguments as the caller passed them, ``y`` the result
(a tuple for ops with several outputs), ``g`` its cotangent (a tuple with ``None`` for
outputs no gradient reached) and ``need`` one entry per parameter of the signature,
in order: whether that parameter's gradient is wanted (``"stored"`` for a csr array whose
gradient is wanted at its stored elements only; a VJP may treat it as true). The VJP returns one gradient per
parameter in that order (``None``: none; a list for a sequence parameter such as
``concat``'s ``arrays``; a shorter tuple leaves the rest ``None``). A gradient may keep
the broadcast shape and the promoted dtype of the computation: autograd sums it over
broadcast axes and casts it to its input's dtype. Complex gradients follow PyTorch's
convention (for a real loss ``L`` and ``z = a + ib``, the gradient is ``dL/da + i dL/db``),
so the VJP of a holomorphic ``f`` is ``g * conj(f'(x))``. An op without a VJP declares
why with :func:`constant` (its result does not change with the inputs where it is
defined: comparisons, integer results, ``floor``; gradients through it are zero) or
:func:`not_differentiable` (a gradient reaching it is an error).

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import inspect
import operator
import sys
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from .. import _dtypes
from .._devices import ArrayMeta, Device, KernelKey, strided
from .._dtypes import CATEGORIES, DType


# What nda's other layers use: the declaration types the front end, dispatch, layouts,
# autograd and hybridize read (``OpDecl``, ``Plan``, ``Cast``, ``Method``, ``NoVJP``, the
# catalog, ``Array``), the argument checks the hand-written functions share with the
# planners, the size bound, and the two ways the layers above reach it, each installed at
# import (``install``, a typed :class:`Provider`, and ``declared``). What only the catalog's own modules use to declare ops
# (``declare``, ``constant``, ``not_differentiable``, ``same_device``, ``scalar_arg``,
# ``check_dtype_category``) is the ``nda.ops`` package's; op libraries get it from
# :mod:`nda.ops.extension`.
__all__ = [
    "OpDecl",
    "Plan",
    "Cast",
    "Method",
    "NoVJP",
    "CATALOG",
    "Array",
    "Provider",
    "install",
    "upper",
    "declared",
    "broadcast_shapes",
    "normalize_axis",
    "normalize_axes",
    "int_arg",
    "host_scalar",
    "dtype_arg",
    "parse_shape",
    "check_shape",
    "check_array",
    "check_size",
    "SURELY_FITS",
]

_META = ArrayMeta._registry
_new = object.__new__

#: Every declared op by name (element-wise, reductions, manipulation, creation, …).
CATALOG: dict[str, OpDecl] = {}


class Array:
    """The array type the catalog plans over: ``nda.NDArray`` is its one subclass.

    The catalog is a lower layer than the arrays it describes: its planners check
    ``isinstance(x, Array)`` and read the array's metadata (``shape``, ``dtype``, ``device``,
    ``_meta``), never the front end itself. An empty slotted base costs an NDArray nothing.
    """

    __slots__ = ()


class Provider(Protocol):
    """What the catalog's planners need from the layers above: the one registration into this layer.

    ``validate_device(device)`` (a device a creation op names must exist: the backends
    layer's check, which loads a plugin on first use) and ``asarray(obj, device=, dtype=)``
    (an index given as a list, a NumPy array or a bool becomes an array on the indexed
    array's device). The front end (``nda._api``), the lowest layer that has both,
    implements this protocol (mypy checks it) and installs it once, at import, with
    :func:`install`. Until then (``nda.ops`` used on its own) the planners that need it
    raise a RuntimeError saying so.
    """

    def validate_device(self, device: Device, /) -> None: ...
    def asarray(self, obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Any: ...


class _Alone:
    """The :class:`Provider` of the catalog used on its own."""

    def validate_device(self, device: Device, /) -> None:
        raise RuntimeError("nda's backends layer is not there to check devices for the op catalog (import nda, not nda.ops alone)")

    def asarray(self, obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Any:
        raise RuntimeError("nda's front end is not there to make index arrays for the op catalog (import nda, not nda.ops alone)")


#: The installed :class:`Provider`: the planners read it as ``spec.upper`` when they call it
#: (never ``from .spec import upper``, which would keep the one of ``nda.ops`` alone).
upper: Provider = _Alone()


def install(provider: Provider) -> None:
    """Install what the catalog's planners need from the layers above (see :class:`Provider`); once, at import of ``nda._api``."""
    global upper
    if not isinstance(upper, _Alone):
        raise RuntimeError("nda.ops.spec.install: a provider is installed already (nda._api installs it once, at import)")
    upper = provider


#: Called with every :class:`OpDecl` as it is declared (dispatch registers one: each op
#: gets its table; ops declared before dispatch loaded get theirs when it loads).
declared: list[Callable[[Any], None]] = []


class Cast:
    """Marks an argument that must be cast to ``dtype`` on its device before the kernel runs."""

    __slots__ = ("array", "dtype")

    def __init__(self, array: Array, dtype: DType) -> None:
        self.array = array
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"Cast({self.array.dtype.name} -> {self.dtype.name})"


class Plan:
    """What a call will do: kernel key, arguments in kernel convention, output metadata."""

    # ``values_decide_shape`` (left unset unless true): the output shape was read from an
    # argument's data (``repeat`` with an array of counts), so the plan must not be memoised.
    # ``overwrites`` (left unset unless true): a mutating op's plan that writes every element of
    # its target from values that are not the target's, and so does not list the target among
    # its ``reads`` (a full ``x[...] = v``): it clears the target's poison when it succeeds.
    __slots__ = ("key", "device", "out_dtype", "out_shape", "args", "kwargs", "reads", "view_of", "values_decide_shape", "overwrites")

    def __init__(
        self,
        device: Device,
        key_dtype: DType,
        out_dtype: DType,
        out_shape: tuple[int, ...],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None = None,
        reads: Sequence[Array] = (),
        view_of: Array | None = None,
        layout: Any = None,
    ) -> None:
        if layout is None:
            # The key's layout: strided unless an operand is stored otherwise (the first such
            # operand's layout; nda.layouts routes mixed signatures from there).
            layout = strided
            for r in reads:
                if r._meta.layout is not strided:
                    layout = r._meta.layout
                    break
        meta = _META.get((device, key_dtype, layout))
        if meta is None:
            meta = ArrayMeta(device, key_dtype, layout)
        self.key: KernelKey = meta.key
        self.device = device
        self.out_dtype = out_dtype
        self.out_shape = out_shape
        self.args = args
        self.kwargs = kwargs or {}
        self.reads = tuple(reads)
        self.view_of = view_of

    @property
    def casts(self) -> list[str]:
        """The casts the call needs, for people (``nda.dispatch.explain`` shows them)."""
        found = []
        for i, a in enumerate(self.args):
            for item in a if isinstance(a, (list, tuple)) else (a,):
                if item.__class__ is Cast:
                    found.append(f"{item.array.dtype.name} -> {item.dtype.name} (argument {i})")
        return found

    @classmethod
    def of(
        cls,
        x: Array,
        *,
        out_shape: tuple[int, ...],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None = None,
        out_dtype: DType | None = None,
        view: bool = False,
    ) -> Plan:
        """A plan whose kernel key comes from the one array ``x`` (the common case)."""
        meta = x._meta
        plan = _new(cls)
        plan.key = meta.key
        plan.device = meta.device
        plan.out_dtype = meta.dtype if out_dtype is None else out_dtype
        plan.out_shape = out_shape
        plan.args = args
        plan.kwargs = kwargs or {}
        plan.reads = (x,)
        plan.view_of = x if view else None
        return plan

    def __repr__(self) -> str:
        return f"<Plan {self.key} -> {self.out_dtype.name}{self.out_shape}>"


class NoVJP:
    """Why an op has no vector-Jacobian product (see the module docstring).

    ``zero`` true: the result is a constant of the inputs wherever it is defined, so
    gradients through it are zero and nothing is recorded. ``zero`` false: no derivative
    is defined (or implemented); a gradient that reaches the op raises, naming ``reason``.
    """

    __slots__ = ("reason", "zero")

    def __init__(self, reason: str, *, zero: bool) -> None:
        self.reason = reason
        self.zero = zero

    def __repr__(self) -> str:
        return f"{'constant' if self.zero else 'not_differentiable'}({self.reason!r})"


def constant(reason: str) -> NoVJP:
    """The op's result does not change with its inputs where it is defined: zero gradient."""
    return NoVJP(reason, zero=True)


def not_differentiable(reason: str) -> NoVJP:
    """The op has no gradient: a gradient that reaches it is an error naming ``reason``."""
    return NoVJP(reason, zero=False)


#: Parameters that give the structure of the result: their values are always read on the host
#: (a host value of every op that has one, without saying so in its declaration).
_STRUCTURAL = ("axis", "axes", "shape")


class Method:
    """An NDArray method that calls its op: ``x.<name>(*args, **kwargs)`` is ``op(x, ...)``.

    ``varargs`` names the parameter that collects the method's positional arguments, as
    NumPy's methods do (``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` both pass
    ``shape=(2, 3)``); with no positional argument, ``empty(x)`` gives its value when set
    (``x.transpose()`` reverses the axes). ``fixed`` are keyword arguments the method always
    passes (``x.ravel()`` is ``reshape(x, shape=(-1,))``).
    """

    __slots__ = ("name", "varargs", "fixed", "empty", "doc")

    def __init__(
        self,
        name: str,
        *,
        varargs: str | None = None,
        fixed: dict[str, Any] | None = None,
        empty: Callable[[Any], Any] | None = None,
        doc: str | None = None,
    ) -> None:
        self.name = name
        self.varargs = varargs
        self.fixed = dict(fixed or {})
        self.empty = empty
        self.doc = doc

    def __repr__(self) -> str:
        return f"Method({self.name!r})"


class OpDecl:
    """The declaration of one op: the single source its public function is generated from."""

    __slots__ = (
        "name",
        "family",
        "signature",
        "dtypes",
        "plan",
        "reference",
        "mutates",
        "method",
        "methods",
        "operators",
        "doc",
        "view",
        "result",
        "ufunc_name",
        "outputs",
        "data_dependent",
        "vjp",
        "host_values",
    )
    #: What an interceptor is told an op call is (nda._intercept.EntryPoint has other kinds).
    kind = "op"

    def __init__(
        self,
        name: str,
        *,
        family: str,
        signature: inspect.Signature,
        dtypes: str,
        plan: Callable[..., Plan],
        reference: Callable[..., Any],
        doc: str,
        mutates: tuple[str, ...] = (),
        method: str | None = None,
        operators: tuple[str, ...] = (),
        view: bool = False,
        result: str = "same",
        outputs: tuple[str, ...] | None = None,
        data_dependent: bool = False,
        vjp: Callable[..., tuple[Any, ...]] | NoVJP | None = None,
        methods: tuple[Method, ...] = (),
        host_values: tuple[str, ...] = (),
    ) -> None:
        if dtypes not in CATEGORIES:
            raise ValueError(f"op {name!r}: unknown dtype category {dtypes!r}; known: {', '.join(CATEGORIES)}")
        self.name = name
        self.family = family
        self.signature = signature
        self.dtypes = dtypes
        self.plan = plan
        self.reference = reference
        self.doc = doc
        self.mutates = mutates
        self.method = method
        self.methods = ((Method(method),) if method else ()) + tuple(methods)
        self.operators = operators
        self.view = view
        self.result = result
        self.outputs = outputs
        self.data_dependent = data_dependent
        self.vjp = vjp
        unknown = [p for p in host_values if p not in signature.parameters]
        if unknown:
            raise ValueError(f"op {name!r}: host_values names {unknown}, which are not parameters of its signature {signature}")
        structural = tuple(p for p in _STRUCTURAL if p in signature.parameters and p not in host_values)
        self.host_values = tuple(host_values) + structural
        for listener in declared:
            listener(self)  # dispatch creates the op's table

    @property
    def supported_dtypes(self) -> tuple[DType, ...]:
        """The dtypes a kernel of this op may be registered for (the declared category)."""
        return CATEGORIES[self.dtypes]

    def __repr__(self) -> str:
        return f"<op {self.name} ({self.family}, dtypes: {self.dtypes})>"


def declare(
    name: str,
    *,
    dtypes: str,
    reference: Callable[..., Any],
    family: str = "generic",
    method: str | None = None,
    operators: tuple[str, ...] = (),
    mutates: tuple[str, ...] = (),
    view: bool = False,
    outputs: tuple[str, ...] | None = None,
    data_dependent: bool = False,
    vjp: Callable[..., tuple[Any, ...]] | NoVJP | None = None,
    methods: tuple[Method, ...] = (),
    host_values: tuple[str, ...] = (),
) -> Callable[[Callable[..., Plan]], OpDecl]:
    """Declare an op from its planning function (see the module docstring).

    ``outputs`` names the arrays of an op with several results (``("Q", "R")``): its plan's
    ``out_dtype`` and ``out_shape`` are then tuples with one entry per output, its kernel
    returns a tuple of buffers, and the public function returns a named tuple. ``("*",)``
    means "as many as the plan says", returned as a plain tuple (``nonzero``).
    ``data_dependent`` ops cannot know their output shapes without the data (``unique_values``,
    ``nonzero``): their plans give ``out_shape=None``, the call is a sync point for the
    inputs and the shapes are read from the buffers the kernel returns.
    ``vjp`` is the op's vector-Jacobian product, or :func:`constant`/:func:`not_differentiable`.
    ``method`` names the NDArray method that calls the op with the array first (``x.sum()``);
    ``methods`` adds :class:`Method` specs (``x.reshape(2, 3)``, ``x.ravel()``).
    ``host_values`` names the parameters whose *values* the planner reads on the host when
    they are 0-d arrays (``linspace``'s ``start``): a call passing an array there is planned
    every time, never answered from a plan memoised for other values. ``axis``, ``axes`` and
    ``shape`` are host values of every op that has them.
    """

    def wrap(plan: Callable[..., Plan]) -> OpDecl:
        if name in CATALOG:
            raise ValueError(f"op {name!r} is declared twice")
        decl = OpDecl(
            name,
            family=family,
            signature=inspect.signature(plan),
            dtypes=dtypes,
            plan=plan,
            reference=reference,
            doc=inspect.getdoc(plan) or "",
            mutates=mutates,
            method=method,
            operators=operators,
            view=view,
            outputs=outputs,
            data_dependent=data_dependent,
            vjp=vjp,
            methods=methods,
            host_values=host_values,
        )
        CATALOG[name] = decl
        return decl

    return wrap


# --------------------------------------------------------------------------- helpers


def check_array(x: Any, op: str, argname: str = "x") -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{op}() expects an nda array for {argname!r}, got {type(x).__name__}; convert with nda.asarray()")
    return x  # type: ignore[no-any-return]


def check_dtype_category(x: Array, category: str, op: str, argname: str = "x") -> None:
    if x._meta.dtype not in CATEGORIES[category]:
        allowed = ", ".join(d.name for d in CATEGORIES[category])
        raise TypeError(f"{op}() does not support dtype {x._meta.dtype.name} for {argname!r}; {category} dtypes are allowed: {allowed}")


def same_device(op: str, arrays: Sequence[Array]) -> Device:
    device = arrays[0]._meta.device
    for a in arrays[1:]:
        if a._meta.device is not device:
            raise ValueError(
                f"{op}() got arrays on different devices ({device} and {a._meta.device}); move them to one device first with x.to_device(...)"
            )
    return device


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Array API broadcasting; ValueError names the shapes that do not broadcast."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        offset = ndim - len(s)
        for i, n in enumerate(s):
            cur = out[offset + i]
            if cur == 1:
                out[offset + i] = n
            elif n != 1 and n != cur:
                raise ValueError(f"shapes {', '.join(map(str, shapes))} cannot be broadcast together (size {n} vs {cur} in axis {offset + i - ndim})")
    return tuple(out)


def normalize_axis(axis: Any, ndim: int, op: str) -> int:
    try:
        if isinstance(axis, (bool, np.bool_)):
            raise TypeError  # a bool is not an axis (NumPy refuses axis=True too)
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}(): axis must be an int, got {type(axis).__name__}") from None
    if not -ndim <= ax < ndim:
        # NumPy's AxisError (an IndexError for the Array API, a ValueError for NumPy) with
        # NumPy's wording, "axis 3 is out of bounds for array of dimension 2", which SciPy's
        # tests match; prefixed with the function's name.
        raise np.exceptions.AxisError(ax, ndim, msg_prefix=f"{op}()")
    return ax % ndim


def normalize_axes(axis: Any, ndim: int, op: str) -> tuple[int, ...]:
    """``None`` -> all axes; an int or a tuple of ints -> sorted non-negative axes (no repeats)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        axes = tuple(normalize_axis(a, ndim, op) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{op}(): repeated axis in {axis}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim, op),)


def int_arg(value: Any, op: str, name: str, *, minimum: int | None = None) -> int:
    """An integer argument (``k``, ``n``, ``offset``): TypeError if it is not one, ValueError below ``minimum``."""
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{op}(): {name} must be an int, got {type(value).__name__}") from None
    if minimum is not None and number < minimum:
        bound = "non-negative" if minimum == 0 else f"at least {minimum}"
        raise ValueError(f"{op}(): {name} must be {bound}, got {number}")
    return number


def scalar_arg(value: Any) -> Any:
    """A NumPy scalar as the Python scalar it holds (NumPy scalars are weak, like Python's); anything else unchanged."""
    return _dtypes.python_scalar(value) if isinstance(value, np.generic) else value


def host_scalar(value: Any, op: str, name: str) -> Any:
    """A scalar argument the kernel needs as a Python number: a NumPy scalar or a 0-d nda array is read now.

    A 0-d array's value is read here, at planning time on the caller's thread (a sync point
    for that array), never by a kernel on a device's own thread, which would wait for itself.
    """
    if isinstance(value, Array):
        if value.ndim != 0:
            raise TypeError(f"{op}(): {name} must be a scalar or a 0-d array, got an array of shape {value.shape}")
        return value._host().reshape(()).item()
    return scalar_arg(value)


def parse_shape(shape: Any, op: str, what: str = "shape") -> tuple[int, ...]:
    """A shape argument as a tuple of ints, signs unchecked: the one parser of every shape nda takes.

    An int or a sequence of ints, as NumPy takes them. Anything with ``__index__`` counts as
    an int (NumPy integer scalars, 0-d integer arrays); a bool does not, alone or inside the
    sequence (NumPy refuses ``(True, 2)``), and a dict, a set, a str or bytes is not a
    sequence of dimensions (iterating ``{6: 1}`` would give ``(6,)``). ``what`` names the
    argument in the TypeError (``"size"`` for a random generator's). :func:`check_shape`
    adds the sign check; ``reshape`` takes its one ``-1`` from here.
    """
    if not isinstance(shape, (bool, np.bool_)):
        try:
            return (operator.index(shape),)
        except TypeError:
            pass
    why = ""
    try:
        if shape.__class__ is not tuple and shape.__class__ is not list and isinstance(shape, (str, bytes, Mapping, AbstractSet)):
            why = f" (a {type(shape).__name__} is not a sequence of dimensions)" if not isinstance(shape, (str, bytes)) else ""
            raise TypeError
        if isinstance(shape, (bool, np.bool_)) or any(isinstance(n, (bool, np.bool_)) for n in shape):
            why = " (a bool is not a dimension)"
            raise TypeError
        return tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"{op}(): {what} must be an int or a tuple of ints, got {shape!r}{why}") from None


def check_shape(shape: Any, op: str, what: str = "shape") -> tuple[int, ...]:
    """A shape argument: an int or a sequence of non-negative ints, as NumPy takes them (:func:`parse_shape`)."""
    dims = parse_shape(shape, op, what)
    for n in dims:
        if n < 0:
            raise ValueError(f"{op}(): negative dimension {n} in {what} {dims}")
    return dims


def prod(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


#: The most bytes one array may span: what NumPy, CuPy and the device backends index with a
#: signed pointer-sized integer (``np.intp``). NumPy refuses more ("array is too big"); some of
#: its functions (``np.repeat``) compute such a size without checking and crash.
MAX_BYTES = sys.maxsize


def check_size(op: str, shape: tuple[int, ...], dtype: DType) -> None:
    """ValueError when an output of ``shape`` and ``dtype`` would span more than :data:`MAX_BYTES`.

    The front end checks every planned output where a plan becomes work (``nda._execute``:
    ``execute``, ``execute_multi``, ``run_elementwise``; ``nda._planned`` before it memoises a
    plan), at the call, before any kernel runs: no backend is handed a size it cannot index.
    Sparse results are not checked: they index what they store, whatever their shape.
    """
    n = 1
    for s in shape:
        n *= s
    if n * dtype.itemsize > MAX_BYTES:
        raise ValueError(
            f"{op}(): array is too big: the result of shape {tuple(shape)} and dtype {dtype.name} would span {n * dtype.itemsize:,} bytes; "
            f"an array spans at most {MAX_BYTES:,} bytes (sys.maxsize: what NumPy and every device backend can index)"
        )


#: Elements up to which no dtype's array can exceed :data:`MAX_BYTES` (16: complex128's itemsize);
#: callers compare a size they have anyway with it before calling :func:`check_size`.
SURELY_FITS = MAX_BYTES // 16


def dtype_arg(dtype: Any, op: str) -> DType | None:
    if dtype is None:
        return None
    try:
        return _dtypes.as_dtype(dtype)
    except TypeError as err:
        raise TypeError(f"{op}(): {err}") from None
