"""Extension ops: libraries that add *new* ops to nda, declared exactly like the catalog's.

A library (an :class:`OpLibrary`) is what a plugin ships to add ops, where a backend only
adds kernels for ops nda already has (MXNet's ``mx.library.load``). Its ops are declared
with the catalog's own declaration: the planning function (signature, validation, the
dtype/shape rule), the NumPy reference in the kernel convention, what it mutates, whether
it is a view, and optionally its vector-Jacobian product (``vjp(nd, need, g, y, *args)``
returning one gradient per array input: ``g`` times the *conjugate* derivative, as
``nda.conj`` gives it, so that one VJP serves real and complex dtypes)::

    from nda.ops.extension import OpLibrary, Plan

    library = OpLibrary("mylib", api_version="1.4", nda_version="0.1")

    @library.op("fma", dtypes="numeric", reference=_fma_reference, vjp=_fma_vjp, inputs=("array", "array", "array"))
    def fma(x1, x2, x3, /) -> Plan:
        "``x1 * x2 + x3`` in one pass."
        ...validate, promote, broadcast...
        return Plan(device, key_dtype, out_dtype, shape, (x1, x2, x3), reads=(x1, x2, x3))

    library.elementwise("softsign", arity=1, dtypes="floating", reference=_softsign, vjp=...)

    @library.kernels
    def register(register_kernel):
        register_kernel("fma", dtypes, cpu_fma, device_type="cpu")
        register_kernel("fma", dtypes, mydev_fma, device_type="mydev")

Declaring records a *specification* in the library object; nothing enters nda's tables
until nda loads the library (``nda.backends`` does: entry point group ``nda.extensions``,
or ``nda.backends.load("package.module")``). Loading checks the versions, then
:func:`install` turns the specifications into :class:`ExtensionDecl` objects named
``"<library>.<op>"`` (so ``nda.dispatch.explain("mylib.fma", ...)``), refusing clashes
with one sentence naming both sides: a library name already taken (or one of the catalog's
namespaces, ``linalg``/``fft``), an op name another library declares, or an op name that
shadows a catalog op. The front end makes the public functions ``nda.ext.mylib.fma`` from
the declarations with the same machinery as the catalog's (planning, dispatch, the engine,
device queues, autograd recording).

``inputs`` (and ``options``) tell the conformance kit how to call an op that is not
element-wise: one entry per positional parameter, ``"array"`` (an array of the cell's
dtype; the arrays of one call have mutually broadcastable shapes) or ``"scalar"`` (a
Python scalar of the cell's dtype), and for keyword parameters the values to try.

This module is part of the op catalog layer: declarations only, no dispatch, no arrays.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import inspect
from collections import ChainMap
from typing import Any, Callable

from .._dtypes import CATEGORIES
from .spec import CATALOG, Cast, NoVJP, OpDecl, Plan, broadcast_shapes, check_array, check_dtype_category, constant, not_differentiable, same_device

__all__ = [
    "OpLibrary",
    "ExtensionDecl",
    "EXTENSIONS",
    "DECLARED",
    "ExtensionError",
    "install",
    "uninstall",
    "lookup",
    "Plan",
    "Cast",
    "broadcast_shapes",
    "check_array",
    "check_dtype_category",
    "same_device",
    "constant",
    "not_differentiable",
]

#: Ops of the loaded libraries by qualified name (``"mylib.fma"``).
EXTENSIONS: dict[str, ExtensionDecl] = {}
#: The catalog and the extension ops together (a live view of both).
DECLARED: ChainMap[str, OpDecl] = ChainMap(CATALOG, EXTENSIONS)  # type: ignore[arg-type]
#: Libraries installed, by name.
_LIBRARIES: dict[str, OpLibrary] = {}
_INPUT_KINDS = ("array", "scalar")


class ExtensionError(ValueError):
    """A library's declarations cannot be installed (a clash, or a malformed declaration)."""


def lookup(name: str) -> OpDecl | None:
    """The declaration of a catalog op or of an op of a loaded library (None if nobody declares it)."""
    return CATALOG.get(name) or EXTENSIONS.get(name)


class ExtensionDecl(OpDecl):
    """The declaration of an op of a library: an :class:`OpDecl` that knows its library."""

    __slots__ = ("library", "short", "inputs", "options")

    def __repr__(self) -> str:
        return f"<extension op {self.name} ({self.family}, dtypes: {self.dtypes})>"


class _Spec:
    """A declaration recorded by an :class:`OpLibrary`, installed when nda loads the library."""

    __slots__ = ("name", "kind", "fields")

    def __init__(self, name: str, kind: str, fields: dict[str, Any]) -> None:
        self.name = name
        self.kind = kind
        self.fields = fields


class OpLibrary:
    """A library of extension ops (see the module docstring).

    ``name`` becomes the namespace ``nda.ext.<name>``; ``api_version`` is the backend API the
    library was built for (libraries exist since 1.4); ``nda_version`` (``"major.minor"``,
    optional) the nda release series it was built against; ``version`` its own version.
    """

    def __init__(self, name: str, *, api_version: str, nda_version: str | None = None, version: str = "0", doc: str = "") -> None:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise ExtensionError(f"an op library's name must be a Python identifier not starting with '_' (it becomes nda.ext.<name>), got {name!r}")
        self.name = name
        self.api_version = api_version
        self.nda_version = nda_version
        self.version = version
        self.doc = doc
        self.specs: list[_Spec] = []
        self.register: Callable[[Callable[..., None]], None] | None = None

    # ------------------------------------------------------------------ declaring
    def op(
        self,
        name: str,
        *,
        dtypes: str,
        reference: Callable[..., Any],
        mutates: tuple[str, ...] = (),
        view: bool = False,
        vjp: Callable[..., tuple[Any, ...]] | NoVJP | None = None,
        inputs: tuple[str, ...] | None = None,
        options: dict[str, tuple[Any, ...]] | None = None,
    ) -> Callable[[Callable[..., Plan]], Callable[..., Plan]]:
        """Declare an op from its planning function (the catalog's ``declare``); returns it unchanged."""

        def wrap(plan: Callable[..., Plan]) -> Callable[..., Plan]:
            self._add(
                _Spec(
                    name,
                    "generic",
                    dict(
                        plan=plan,
                        dtypes=dtypes,
                        reference=reference,
                        mutates=tuple(mutates),
                        view=view,
                        vjp=vjp,
                        inputs=tuple(inputs) if inputs is not None else None,
                        options=dict(options or {}),
                    ),
                )
            )
            return plan

        return wrap

    def elementwise(
        self,
        name: str,
        *,
        arity: int,
        dtypes: str,
        reference: Callable[..., Any],
        result: str = "same",
        vjp: Callable[..., tuple[Any, ...]] | NoVJP | None = None,
        doc: str = "",
    ) -> None:
        """Declare an element-wise op: a row like the catalog's element-wise table (promotion,
        broadcasting, the floating categories' integer rule and the result rule included)."""
        if arity not in (1, 2):
            raise ExtensionError(f"op library {self.name!r}, op {name!r}: element-wise ops take 1 or 2 operands, got arity={arity!r}")
        if result not in ("same", "bool", "real"):
            raise ExtensionError(f"op library {self.name!r}, op {name!r}: result must be 'same', 'bool' or 'real', got {result!r}")
        self._add(_Spec(name, "unary" if arity == 1 else "binary", dict(dtypes=dtypes, reference=reference, result=result, vjp=vjp, doc=doc)))

    def kernels(self, register: Callable[[Callable[..., None]], None]) -> Callable[[Callable[..., None]], None]:
        """Set the function that registers the library's kernels: ``register(register_kernel)``.

        ``register_kernel(op, dtypes, fn, *, device_type, layout="strided", priority=0,
        supports=None)`` takes the library's own ops (short or qualified names), for any
        device type; nda applies each kernel when that device type's backend is loaded.
        """
        self.register = register
        return register

    def _add(self, spec: _Spec) -> None:
        if not isinstance(spec.name, str) or not spec.name.isidentifier():
            raise ExtensionError(f"op library {self.name!r}: an op name must be a Python identifier, got {spec.name!r}")
        if any(s.name == spec.name for s in self.specs):
            raise ExtensionError(f"op library {self.name!r} declares op {spec.name!r} twice")
        if spec.fields["dtypes"] not in CATEGORIES:
            raise ExtensionError(
                f"op library {self.name!r}, op {spec.name!r}: unknown dtype category {spec.fields['dtypes']!r}; known: {', '.join(CATEGORIES)}"
            )
        self.specs.append(spec)

    @property
    def op_names(self) -> list[str]:
        return [s.name for s in self.specs]

    def __repr__(self) -> str:
        return f"<op library {self.name!r} {self.version}: {', '.join(self.op_names) or 'no ops'}>"


# ---------------------------------------------------------------------------- installing


def _catalog_names() -> dict[str, str]:
    """Names an extension op may not take: each catalog op's name and short name -> the op."""
    names: dict[str, str] = {}
    for full in CATALOG:
        names.setdefault(full, full)
        names.setdefault(full.rpartition(".")[2], full)
    return names


def clash(library: OpLibrary, source: str, sources: dict[str, str]) -> str | None:
    """The sentence refusing ``library`` (from ``source``), or None when nothing clashes.

    ``sources`` maps the loaded libraries' names to where they came from.
    """
    name = library.name
    if name in _LIBRARIES:
        return (
            f"op library {name!r} from {source} clashes with the library {name!r} already loaded from {sources.get(name, '?')}; "
            f"uninstall one of them or rename one library"
        )
    namespaces = {full.partition(".")[0] for full in CATALOG if "." in full}
    if name in namespaces:
        return f"op library {name!r} from {source} clashes with nda's own namespace nda.{name} (the catalog's {name}.* ops); rename the library"
    catalog = _catalog_names()
    for spec in library.specs:
        if spec.name in catalog:
            return (
                f"op library {name!r} from {source} declares op {spec.name!r}, which shadows the catalog op {catalog[spec.name]!r} "
                f"(nda.{catalog[spec.name]}); rename the extension op"
            )
        for other in _LIBRARIES.values():
            if spec.name in other.op_names:
                return (
                    f"op library {name!r} from {source} declares op {spec.name!r}, which the loaded library {other.name!r} "
                    f"from {sources.get(other.name, '?')} declares too; rename one of the ops"
                )
    return None


def install(library: OpLibrary) -> list[ExtensionDecl]:
    """Turn ``library``'s specifications into declarations (call :func:`clash` first)."""
    from . import elementwise as ew

    made: list[ExtensionDecl] = []
    try:
        for spec in library.specs:
            qualified = f"{library.name}.{spec.name}"
            f = spec.fields
            if spec.kind in ("unary", "binary"):
                decl = ExtensionDecl(
                    qualified,
                    family=spec.kind,
                    signature=ew.UNARY_SIGNATURE if spec.kind == "unary" else ew.BINARY_SIGNATURE,
                    dtypes=f["dtypes"],
                    plan=_placeholder,
                    reference=f["reference"],
                    doc=f["doc"] or f"{spec.name} (op library {library.name!r}).",
                    result=f["result"],
                    vjp=f["vjp"],
                )
                decl.plan = ew._plan_unary(decl) if spec.kind == "unary" else ew._plan_binary(decl)
                decl.inputs, decl.options = ("array",) * (1 if spec.kind == "unary" else 2), {}
            else:
                plan = f["plan"]
                signature = inspect.signature(plan)
                _check_inputs(library, spec, signature)
                decl = ExtensionDecl(
                    qualified,
                    family="generic",
                    signature=signature,
                    dtypes=f["dtypes"],
                    plan=plan,
                    reference=f["reference"],
                    doc=inspect.getdoc(plan) or "",
                    mutates=f["mutates"],
                    view=f["view"],
                    vjp=f["vjp"],
                )
                decl.inputs, decl.options = f["inputs"], f["options"]
            decl.library, decl.short = library.name, spec.name
            made.append(decl)
    except ExtensionError:
        raise
    except Exception as err:  # noqa: BLE001 - a malformed declaration
        raise ExtensionError(f"op library {library.name!r}: declaring its ops failed: {type(err).__name__}: {err}") from err
    for decl in made:
        EXTENSIONS[decl.name] = decl
    _LIBRARIES[library.name] = library
    return made


def uninstall(name: str) -> list[str]:
    """Forget library ``name``'s declarations (a library that failed after installing); returns the op names."""
    _LIBRARIES.pop(name, None)
    gone = [op for op, decl in EXTENSIONS.items() if decl.library == name]
    for op in gone:
        del EXTENSIONS[op]
    return gone


def libraries() -> dict[str, OpLibrary]:
    """The installed libraries by name."""
    return dict(_LIBRARIES)


def ops_of(name: str) -> list[ExtensionDecl]:
    """The declarations of library ``name``, in declaration order."""
    return [decl for decl in EXTENSIONS.values() if decl.library == name]


def _placeholder(*args: Any, **kwargs: Any) -> Plan:  # replaced right after the declaration is made
    raise AssertionError("element-wise planner not set")


def _check_inputs(library: OpLibrary, spec: _Spec, signature: inspect.Signature) -> None:
    inputs = spec.fields["inputs"]
    if inputs is None:
        return
    positional = [p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if len(inputs) != len(positional) or any(k not in _INPUT_KINDS for k in inputs):
        raise ExtensionError(
            f"op library {library.name!r}, op {spec.name!r}: inputs= must give one of {_INPUT_KINDS} per required positional "
            f"parameter ({', '.join(p.name for p in positional)}), got {inputs!r}"
        )
    for key in spec.fields["options"]:
        if key not in signature.parameters:
            raise ExtensionError(
                f"op library {library.name!r}, op {spec.name!r}: options= names {key!r}, which is not a parameter of {spec.name}{signature}"
            )
