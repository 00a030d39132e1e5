"""Layouts: the third part of the dispatch key, their registry, converters and routes.

A *layout* says how an array's elements are stored. ``strided`` (dense) is the default;
``csr`` (2-D compressed sparse rows) and ``row_sparse`` (N-D, only some rows along axis
0 stored: sparse gradients, embedding updates) ship in the core, and backends may add
their own with :func:`register_layout`. An array's layout is part of its interned
``ArrayMeta``, so a strided array's dispatch never looks at this module.

Per device type a backend registers, for a non-strided layout:

* **converters** ``(device type, from, to) -> fn(buf) -> buf`` (:func:`register_converter`).
  A pair without a direct converter goes through ``strided`` (two converters);
* **storage**: ``to_host(buf)`` (the same layout as a cpu buffer) and
  ``from_host(cpu_buf, device)`` (:func:`register_storage`), which ``to_device``,
  ``asnumpy``, ``repr`` and the component accessors use; without it the layout cannot
  leave or enter that device;
* **kernels**: ordinary op kernels registered at ``layout=`` with ``signatures=`` (the
  operand layouts they accept, ``"scalar"`` for a Python scalar) and ``out_layout=``
  (the layout of their result; ``sum`` of a csr matrix is strided).

How an op on a non-strided key runs (:func:`route`, cached per key and operand
signature, so it is decided once): a native kernel whose signature matches, else the
*layout fallback*: the non-strided operands are converted to strided on the same device,
the strided kernel runs (which may itself be the host fallback of an accelerator) and the
result stays strided. The fallback warns once per (op, route) with
:class:`nda.FallbackWarning`; ``nda.config.fallback`` makes it silent or an error, and
``nda.dispatch.explain`` names every conversion. Nothing is densified silently: sparse
arrays never take part in ``np.asarray`` (``asnumpy()`` and ``to_layout("strided")``
are the explicit ways to get dense data).

Everything here is plain Python and NumPy; SciPy is imported by the cpu kernels the first
time a csr array is built.

Layer: layouts (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from . import backends, dispatch
from .backends._fallback import host_fallback
from ._devices import Device, KernelKey, Layout, as_layout, strided
from .ops.spec import Array, Cast

__all__ = [
    "LayoutInfo",
    "register_layout",
    "register_converter",
    "register_storage",
    "holds",
    "info",
    "layouts",
    "converters",
    "conversion_route",
    "route",
    "csr",
    "row_sparse",
    "strided",
]

_SCALARS = (bool, int, float, complex)


class LayoutInfo:
    """What nda knows about a layout: its rank limits and the names of its components."""

    __slots__ = ("layout", "min_ndim", "max_ndim", "components", "description", "host_components")

    def __init__(
        self,
        layout: Layout,
        min_ndim: int,
        max_ndim: int | None,
        components: tuple[str, ...],
        description: str,
        host_components: Callable[[Any], dict[str, Any]] | None,
    ) -> None:
        self.layout = layout
        self.min_ndim = min_ndim
        self.max_ndim = max_ndim
        self.components = components
        self.description = description
        self.host_components = host_components

    def check_shape(self, shape: tuple[int, ...], what: str) -> None:
        """ValueError unless an array of ``shape`` can be stored in this layout."""
        n = len(shape)
        if n < self.min_ndim or (self.max_ndim is not None and n > self.max_ndim):
            if self.max_ndim == self.min_ndim:
                need = f"exactly {self.min_ndim}"
            elif self.max_ndim is None:
                need = f"at least {self.min_ndim}"
            else:
                need = f"{self.min_ndim} to {self.max_ndim}"
            hint = "; row_sparse stores N-D arrays" if self.layout.name == "csr" else ""
            raise ValueError(f"{what}: a {self.layout.name} array has {need} dimensions, got shape {shape}{hint}")

    def __repr__(self) -> str:
        return f"<layout {self.layout.name}: {self.description}>"


class _Registered:
    """A converter or a storage entry, with the backend that registered it."""

    __slots__ = ("device_type", "src", "dst", "fn", "to_host", "from_host", "backend", "dtypes")

    def __init__(
        self,
        device_type: str,
        src: Layout,
        dst: Layout,
        backend: str,
        fn: Any = None,
        to_host: Any = None,
        from_host: Any = None,
        dtypes: frozenset[Any] | None = None,
    ) -> None:
        self.device_type, self.src, self.dst, self.backend = device_type, src, dst, backend
        self.fn, self.to_host, self.from_host = fn, to_host, from_host
        self.dtypes = dtypes  # storage only: the dtypes the device can hold in this layout (None: all)

    @property
    def qualname(self) -> str:
        fn = self.fn
        return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"

    def __repr__(self) -> str:
        return f"<converter {self.src.name} -> {self.dst.name} on {self.device_type}: {self.qualname} (backend {self.backend!r})>"


_INFO: dict[Layout, LayoutInfo] = {}
_CONVERTERS: dict[tuple[str, Layout, Layout], _Registered] = {}
_STORAGE: dict[tuple[str, Layout], _Registered] = {}


def register_layout(
    name: str,
    *,
    min_ndim: int = 0,
    max_ndim: int | None = None,
    components: Iterable[str] = (),
    description: str = "",
    host_components: Callable[[Any], dict[str, Any]] | None = None,
) -> Layout:
    """Declare a layout (idempotent for the same name); returns the interned :class:`Layout`.

    ``host_components(cpu_buffer) -> {name: numpy array}`` lets ``nda.sparse.components``
    and ``repr`` show the stored parts of an array in this layout.
    """
    layout = Layout(name)
    if not isinstance(min_ndim, int) or min_ndim < 0 or (max_ndim is not None and (not isinstance(max_ndim, int) or max_ndim < min_ndim)):
        raise ValueError(f"register_layout({name!r}): min_ndim/max_ndim must be ints with 0 <= min_ndim <= max_ndim, got {min_ndim!r}, {max_ndim!r}")
    existing = _INFO.get(layout)
    if existing is not None and host_components is None:
        host_components = existing.host_components
    _INFO[layout] = LayoutInfo(layout, min_ndim, max_ndim, tuple(components), description, host_components)
    return layout


def info(layout: Layout | str) -> LayoutInfo:
    """The :class:`LayoutInfo` of a registered layout (ValueError names the known ones)."""
    lay = as_layout(layout)
    found = _INFO.get(lay)
    if found is None:  # a Layout value made without register_layout (e.g. only named in a kernel key)
        raise ValueError(f"layout {lay.name!r} is not registered (nda.layouts.register_layout); registered: {', '.join(l.name for l in _INFO)}")
    return found


def layouts() -> list[Layout]:
    """Every declared layout, strided first."""
    return list(_INFO)


def register_converter(device_type: str, src: Layout | str, dst: Layout | str, fn: Callable[[Any], Any], *, backend: str = "<runtime>") -> None:
    """Register ``fn(buf) -> buf`` converting ``src`` buffers of ``device_type`` to ``dst`` buffers."""
    s, d = as_layout(src), as_layout(dst)
    if s is d:
        raise ValueError(f"a converter needs two different layouts, got {s.name} -> {d.name}")
    if not callable(fn):
        raise TypeError(f"converter {s.name} -> {d.name} on {device_type} must be callable, got {fn!r}")
    _CONVERTERS[device_type, s, d] = _Registered(device_type, s, d, backend, fn=fn)
    _clear_routes()


def register_storage(
    device_type: str,
    layout: Layout | str,
    *,
    to_host: Callable[[Any], Any],
    from_host: Callable[[Any, Device], Any],
    dtypes: Iterable[Any] | None = None,
    backend: str = "<runtime>",
) -> None:
    """How ``layout`` buffers of ``device_type`` move: ``to_host(buf)`` gives the cpu buffer of
    the same layout, ``from_host(cpu_buf, device)`` makes one on ``device``.

    ``dtypes``: the dtypes the device can hold in this layout, when not all (cuSPARSE stores
    floating and bool values only). Converting another dtype to the layout there is a
    ValueError, and an op whose result could not be held takes the layout fallback (its
    result is strided) instead of the native kernel.
    """
    from ._dtypes import as_dtype

    lay = as_layout(layout)
    if not callable(to_host) or not callable(from_host):
        raise TypeError(f"storage of {lay.name} on {device_type}: to_host and from_host must be callable")
    held = None if dtypes is None else frozenset(as_dtype(d) for d in dtypes)
    _STORAGE[device_type, lay] = _Registered(device_type, lay, lay, backend, to_host=to_host, from_host=from_host, dtypes=held)
    _clear_routes()


def holds(device_type: str, layout: Layout, dtype: Any) -> bool:
    """Whether ``device_type`` can store ``dtype`` values in ``layout`` (strided: always)."""
    if layout is strided:
        return True
    entry = _STORAGE.get((device_type, layout))
    return entry is None or entry.dtypes is None or dtype in entry.dtypes


def check_holds(device_type: str, layout: Layout, dtype: Any, what: str) -> None:
    """ValueError naming what the device holds unless it can store ``dtype`` in ``layout``."""
    if not holds(device_type, layout, dtype):
        held = sorted(d.name for d in _STORAGE[device_type, layout].dtypes)  # type: ignore[union-attr]
        raise ValueError(
            f"{what}: a {layout.name} array on {device_type} holds {', '.join(held)} values, not {dtype.name}; "
            f"cast it first (x.astype(...)) or keep it strided"
        )


def unregister_backend(backend: str) -> None:
    """Forget the converters and storage a backend registered (it failed validation)."""
    for registry in (_CONVERTERS, _STORAGE):
        for k in [k for k, v in registry.items() if v.backend == backend]:  # type: ignore[attr-defined]
            del registry[k]  # type: ignore[attr-defined]
    _clear_routes()


def _clear_routes() -> None:
    dispatch.invalidate()


def converters(device_type: str | None = None) -> list[_Registered]:
    """The registered converters (of one device type, or all)."""
    return [c for (dev, _, _), c in _CONVERTERS.items() if device_type is None or dev == device_type]


def _ensure(device_type: str) -> None:
    from . import backends

    backends.ensure_device_type(device_type)


def conversion_route(device_type: str, src: Layout, dst: Layout) -> list[_Registered]:
    """The converters that take ``src`` to ``dst`` on ``device_type``: direct, else through strided."""
    _ensure(device_type)
    direct = _CONVERTERS.get((device_type, src, dst))
    if direct is not None:
        return [direct]
    if src is not strided and dst is not strided:
        first, second = _CONVERTERS.get((device_type, src, strided)), _CONVERTERS.get((device_type, strided, dst))
        if first is not None and second is not None:
            return [first, second]
    have = ", ".join(f"{c.src.name}->{c.dst.name}" for c in converters(device_type)) or "none"
    raise ValueError(
        f"no way to convert {src.name} to {dst.name} on device type {device_type!r} (no direct converter, and none through strided); "
        f"converters registered for {device_type}: {have}"
    )


def storage(device_type: str, layout: Layout, what: str) -> _Registered:
    _ensure(device_type)
    entry = _STORAGE.get((device_type, layout))
    if entry is None:
        have = ", ".join(sorted(lay.name for dev, lay in _STORAGE if dev == device_type)) or "none"
        raise ValueError(
            f"{what}: layout {layout.name!r} is not available on device type {device_type!r} (sparse layouts it stores: {have}); "
            f"convert with x.to_layout('strided') first"
        )
    return entry


# ---------------------------------------------------------------------------- arrays


def host_buffer(x: Any) -> Any:
    """The cpu buffer (same layout) of a non-strided array, after its pending writes."""
    x.wait_to_read()
    return storage(x._meta.device.type, x._meta.layout, "reading the array").to_host(x._buf)


def dense_host(x: Any) -> Any:
    """A dense NumPy array of a non-strided array's values (an explicit densification)."""
    from . import backends

    x.wait_to_read()
    buf = x._buf
    for conv in conversion_route(x._meta.device.type, x._meta.layout, strided):  # on the array's device
        buf = conv.fn(buf)
    return backends.read_buffer(x._meta.device, buf)


def host_components(x: Any) -> dict[str, Any]:
    """``{component name: numpy array}`` of a non-strided array."""
    lay_info = _INFO[x._meta.layout]
    if lay_info.host_components is None:
        raise TypeError(f"layout {x._meta.layout.name!r} does not expose its components")
    return lay_info.host_components(host_buffer(x))


def sparse_repr(x: Any) -> str:
    """``repr`` of a non-strided array: metadata and stored components, never densified."""
    import numpy as np

    lay_info = _INFO[x._meta.layout]
    buf = host_buffer(x)
    parts = lay_info.host_components(buf) if lay_info.host_components is not None else {}
    meta = x._meta
    head = f"NDArray(layout='{meta.layout.name}', shape={x._shape}, dtype={meta.dtype.name}"
    nnz = getattr(buf, "nnz", None)
    if nnz is not None:
        head += f", nnz={int(nnz)}"
    if meta.device.type != "cpu" or meta.device.index != 0:
        head += f", device='{meta.device}'"
    body = [f"  {k}={np.array2string(np.asarray(v), separator=', ', prefix='  ' + k + '=')}" for k, v in parts.items()]
    return head + (",\n" + ",\n".join(body) if body else "") + ")"


# ---------------------------------------------------------------------------- routes


def _sig(value: Any) -> Any:
    """The layout signature of one kernel argument: a layout name, "scalar", nested tuple or None."""
    cls = value.__class__
    if cls is Cast:
        return value.array._meta.layout.name
    if isinstance(value, Array):  # an nda array
        return value._meta.layout.name
    if cls in _SCALARS:
        return "scalar"
    if cls is tuple or cls is list:
        inner = tuple(_sig(v) for v in value)
        return inner if any(i is not None and i != "scalar" for i in inner) else None
    return None


def signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]:
    """Layouts of a call's operands: per positional argument, and per keyword holding arrays."""
    kw = tuple((k, s) for k, s in ((k, _sig(v)) for k, v in kwargs.items()) if s is not None and s != "scalar")
    return tuple(_sig(a) for a in args), kw


def _flat(sig: Any) -> list[str]:
    if isinstance(sig, tuple):
        return [leaf for s in sig for leaf in _flat(s)]
    return [] if sig is None else [sig]


def _operands(sig: tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]) -> tuple[str, ...]:
    """The flat operand signature a kernel's ``signatures=`` is matched against."""
    return tuple(_flat(sig[0]) + [leaf for _, s in sig[1] for leaf in _flat(s)])


def _matches(entry: Any, operands: tuple[str, ...], key_layout: Layout) -> bool:
    sigs = entry.signatures
    if sigs is None:
        return all(s == "scalar" or s == key_layout.name for s in operands)
    return operands in sigs


def route(op: str, plan: Any) -> dispatch.Route:
    """The :class:`~nda.dispatch.Route` of a planned call with non-strided operands (cached per
    signature): a native (or queued) kernel that accepts the operands' layouts, or a layout
    conversion, announced here when it is resolved."""
    key = plan.key
    sig = signature(plan.args, plan.kwargs)
    cache_key = (op, key, sig, plan.out_dtype)
    hit = _ROUTES.get(cache_key)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    seen = dispatch.generation[0]
    result = _native(op, plan, key, sig)
    if result is None:
        result = _fallback(op, plan, key, sig)
        result.announce()
    return dispatch.remember(_ROUTES, cache_key, result, seen)  # type: ignore[no-any-return]


#: Routes by (op, key, operand signature, output dtype): this layer's cache, cleared with
#: dispatch's resolutions (a registration, a converter, ``nda.config.fallback``).
_ROUTES: dict[Any, dispatch.Route] = {}
dispatch.dependents.append(_ROUTES.clear)


def out_layout(op: str, plan: Any) -> Layout:
    """The layout :func:`route` would give the result (nothing is announced or cached)."""
    if plan.key.layout is strided:
        return strided
    entries = usable_native(op, plan, plan.key, signature(plan.args, plan.kwargs))
    return (entries[0].out_layout or plan.key.layout) if entries else strided


def _refuse_mutation(op: str, plan: Any) -> None:
    from .ops import lookup

    decl = lookup(op)  # a catalog op or an op of a library (nda.ext.<library>.<op>)
    if decl is not None and decl.mutates and plan.args and getattr(getattr(plan.args[0], "_meta", None), "layout", strided) is not strided:
        lay = plan.args[0]._meta.layout.name
        raise TypeError(
            f"{op}(): cannot write into a {lay} array in place (that would change which elements are stored); "
            f"convert it with x.to_layout('strided') first, or build a new array"
        )


def native_entries(op: str, key: KernelKey, sig: Any) -> list[Any]:
    """The kernels registered at ``key`` whose signature accepts ``sig`` (priority order)."""
    _ensure(key.device_type)
    operands = _operands(sig)
    return [e for e in dispatch.table(op).kernels.get(key, ()) if _matches(e, operands, key.layout)]


def _casts_native(plan: Any) -> bool:
    """Casts of non-strided operands must run natively too, or a kernel would get a strided buffer."""
    for a in plan.args:
        if a.__class__ is Cast and a.array._meta.layout is not strided:
            if not native_entries("astype", a.array._meta.key, ((a.array._meta.layout.name, None), ())):
                return False
    return True


def usable_native(op: str, plan: Any, key: KernelKey, sig: Any) -> list[Any]:
    """The native kernels a call's route uses; empty when it takes the layout fallback.

    That is when no kernel accepts the operands' layouts, when a cast of a non-strided
    operand has no native kernel, or when the device cannot hold the result's dtype in the
    kernel's output layout (the fallback then gives it strided).
    """
    entries = native_entries(op, key, sig)
    if not entries or not _casts_native(plan):
        return []
    if not holds(key.device_type, entries[0].out_layout or key.layout, plan.out_dtype):
        return []
    return entries


def _native(op: str, plan: Any, key: KernelKey, sig: Any) -> dispatch.Route | None:
    _refuse_mutation(op, plan)
    entries = usable_native(op, plan, key, sig)
    if not entries:
        return None
    out_layout = entries[0].out_layout or key.layout
    same = [e for e in entries if (e.out_layout or key.layout) is out_layout]
    return dispatch.route_of(op, key, same)  # its layout: the first kernel's out_layout


def _converter_for(device_type: str, sig: Any) -> Any:
    """Per argument: None (passed as is), a converter chain to strided, or a list for a sequence."""
    if isinstance(sig, tuple):
        return [_converter_for(device_type, s) for s in sig]
    if sig is None or sig == "scalar" or sig == "strided":
        return None
    return tuple(conversion_route(device_type, as_layout(sig), strided))  # a chain (a list is a sequence argument)


def _apply(value: Any, conv: Any) -> Any:
    if conv is None:
        return value
    if isinstance(conv, list):
        return value.__class__(_apply(v, c) for v, c in zip(value, conv))
    for step in conv:
        value = step.fn(value)
    return value


def _fallback(op: str, plan: Any, key: KernelKey, sig: Any) -> dispatch.Route:
    """The layout conversion: convert the non-strided operands to strided on the device, run
    the strided route (``inner``); announced (by the caller) once per op, key and signature."""
    dev = key.device_type
    n = len(plan.args)
    arg_convs = [_converter_for(dev, s) for s in sig[0]]
    kw_convs = {k: _converter_for(dev, s) for k, s in sig[1]}
    strided_key = KernelKey(dev, key.dtype, strided)
    try:
        inner = dispatch.resolve(op, strided_key)
    except dispatch.DispatchError as err:
        raise dispatch.DispatchError(
            f"{op} on {key}: no native {key.layout.name} kernel for operands {_describe(sig)}, and the layout fallback has no strided kernel: {err}"
        ) from None
    conversions = _conversion_lines(plan, sig, arg_convs, kw_convs)
    kernel = inner.run

    def layout_fallback(*args: Any, **kwargs: Any) -> Any:
        args = tuple(_apply(a, c) for a, c in zip(args, arg_convs)) + args[n:]
        for k, c in kw_convs.items():
            kwargs[k] = _apply(kwargs[k], c)
        return kernel(*args, **kwargs)

    steps = "; ".join(conversions)
    layout_fallback.__qualname__ = f"layout_fallback[{op}]"
    native = native_entries(op, key, sig)
    result_layout = (native[0].out_layout or key.layout) if native else key.layout
    if native and not holds(dev, result_layout, plan.out_dtype):
        why = f"{dev} cannot hold {plan.out_dtype.name} results in {result_layout.name}"
    else:
        why = f"no native {key.layout.name} kernel for these operand layouts"
    description = f"{op} on {key} with operands {_describe(sig)}: {why}; {steps}; runs {_name(kernel)} on {dev}; the result is strided"
    return dispatch.Route(
        dispatch.LAYOUT_CONVERSION,
        layout_fallback,
        op,
        key,
        strided,
        description=description,
        warning=description,
        where=(dev, key.layout.name, sig),
        conversions=tuple(conversions),
        inner=inner,
    )


def _name(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or ("numpy" if hasattr(fn, "nin") else "?")
    return f"{module}.{getattr(fn, '__qualname__', None) or getattr(fn, '__name__', repr(fn))}"


def _describe(sig: Any) -> str:
    def one(s: Any) -> str:
        if isinstance(s, tuple):
            return "[" + ", ".join(one(v) for v in s) + "]"
        return "-" if s is None else s

    return "(" + ", ".join([one(s) for s in sig[0]] + [f"{k}={one(s)}" for k, s in sig[1]]) + ")"


def _conversion_lines(plan: Any, sig: Any, arg_convs: list[Any], kw_convs: dict[str, Any]) -> list[str]:
    lines = []

    def walk(label: str, conv: Any) -> None:
        if conv is None:
            return
        if isinstance(conv, list):
            for i, c in enumerate(conv):
                walk(f"{label}[{i}]", c)
            return
        path = " -> ".join([conv[0].src.name] + [c.dst.name for c in conv])
        names = ", ".join(c.qualname for c in conv)
        lines.append(f"converts {label} {path} ({names})")

    for i, c in enumerate(arg_convs):
        walk(f"argument {i}", c)
    for k, c in kw_convs.items():
        walk(k, c)
    return lines


def coverage_status(op: str, device_type: str, dtype: Any, layout: Layout, strided_status: str) -> str:
    """``native``, ``fallback`` (layout fallback to a strided route) or ``missing``
    (also when the device cannot hold ``dtype`` in ``layout`` at all)."""
    if not holds(device_type, layout, dtype):
        return "missing"
    if dispatch.table(op).kernels.get(KernelKey(device_type, dtype, layout)):
        return "native"
    if strided_status != "missing" and (device_type, layout, strided) in _CONVERTERS:
        return "fallback"
    return "missing"


# ---------------------------------------------------------------------------- the core layouts


def _csr_components(buf: Any) -> dict[str, Any]:
    return {"data": buf.data, "indices": buf.indices, "indptr": buf.indptr}


def _row_sparse_components(buf: Any) -> dict[str, Any]:
    return {"values": buf.values, "row_indices": buf.indices}


register_layout("strided", description="dense, the default")
csr = register_layout(
    "csr",
    min_ndim=2,
    max_ndim=2,
    components=("data", "indices", "indptr"),
    description="compressed sparse rows (2-D)",
    host_components=_csr_components,
)
row_sparse = register_layout(
    "row_sparse",
    min_ndim=1,
    components=("values", "row_indices"),
    description="N-D; only some rows along axis 0 are stored (sparse gradients, embedding updates)",
    host_components=_row_sparse_components,
)


def explain_layout(op: str, plan: Any) -> Any:
    """``nda.dispatch.explain`` of a call with non-strided operands: native kernel, or conversions + strided kernel."""
    from .dispatch import Explanation, KernelEntry, lookup

    sig = signature(plan.args, plan.kwargs)
    _refuse_mutation(op, plan)
    entries = usable_native(op, plan, plan.key, sig)
    if entries:
        out_layout = entries[0].out_layout or plan.key.layout
        same = [e for e in entries if (e.out_layout or plan.key.layout) is out_layout]
        return Explanation(
            op,
            plan.key,
            entries[0],
            plan.casts,
            plan.out_dtype,
            plan.out_shape,
            plan.device,
            entries,
            [],
            out_layout,
            route=dispatch.route_of(op, plan.key, same),
        )
    found = _fallback(op, plan, plan.key, sig)
    strided_key = KernelKey(plan.key.device_type, plan.key.dtype, strided)
    candidates = lookup(op, strided_key)
    entry = KernelEntry(found.run, plan.key, -1, None, f"{candidates[0].backend} (layout fallback)", 0, kind=dispatch.LAYOUT_CONVERSION)
    conversions = list(found.conversions)
    inner = found.inner
    if inner is not None and inner.description:
        conversions.append(f"then the strided kernel's own route: {inner.description}")
    return Explanation(op, plan.key, entry, plan.casts, plan.out_dtype, plan.out_shape, plan.device, candidates, conversions, strided, route=found)


class _ForDispatch:
    """What dispatch asks of the layers above it (:class:`nda.dispatch.Provider`): loading a
    device type's backend, why none serves one and the host fallback (the backends layer's),
    and the route of a call with non-strided operands and how explain and coverage describe
    one (this layer's). This layer is the lowest that sees both, so it installs it, once."""

    ensure_device_type = staticmethod(backends.ensure_device_type)
    serves = staticmethod(backends.serves)
    explain_missing = staticmethod(backends.explain_missing)
    host_fallback = staticmethod(host_fallback)
    layout_route = staticmethod(route)
    explain_layout = staticmethod(explain_layout)
    layout_coverage = staticmethod(coverage_status)

    @staticmethod
    def falls_back_to_host(device_type: str, /) -> bool:
        return backends.handle(Device(device_type, 0)).fallback_to_host  # the backend's handle: resolved when it activated


dispatch.install(_ForDispatch())


class _ForBackends:
    """How the backends layer, below this one too, registers a backend's layouts (:class:`nda.backends._activation.Layouts`)."""

    register_converter = staticmethod(register_converter)
    register_storage = staticmethod(register_storage)
    register_layout = staticmethod(register_layout)
    unregister_backend = staticmethod(unregister_backend)


backends.install_layouts(_ForBackends())
