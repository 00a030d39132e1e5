"""Per-op dispatch tables keyed by ``(device type, dtype, layout)``.

Every op of the catalog owns an :class:`OpTable`. Backends add kernels to it with
:func:`register`; the front end asks :func:`resolve` for the kernel of a key. A table
holds, per key, the kernels sorted by priority (highest first, later registration wins
ties). A kernel may carry a ``supports(*args, **kwargs)`` predicate: the kernel is used
only for calls it accepts, and the next kernel of the key gets the others.

Resolution answers a :class:`Route` (:mod:`nda._route`): its kind (native, queued, host
fallback, host view, layout conversion), the callable that runs it (``route.run``) and what it
announces, announced once when it is resolved. The front end runs ``route.run``; its fast paths
cache that callable. Resolution is cached: ``OpTable.resolved`` maps a key to its route, and it
belongs to this layer alone. The layers above keep caches of their own built from
resolutions (the front end's hot-path entries, "float32 + float32 on cpu:0 -> this kernel,
this output metadata"; the layouts' routes); each registers its ``clear`` in
:data:`dependents`, and every change of what resolution would answer (a registration, a
backend unregistered, ``nda.config.fallback`` changed) clears them all with this layer's
own (:func:`invalidate`). So the hot path of an op is one dict lookup, and the slow path
below runs once per key.

Keys whose layout is not ``strided`` (csr, row_sparse, a backend's own) resolve per
call *signature* (the layouts of the operands) through :func:`resolve_plan` and
:mod:`nda.layouts`: a native kernel that accepts the signature, else the layout fallback
(convert to strided on the device, run, keep the result strided). Strided keys never
reach that code.

A missing key raises :class:`DispatchError` (a ``TypeError``, since it means the dtype,
layout or device is not supported) naming the op, the key and the keys that do exist.
If the device type has a backend that is installed but not yet loaded, resolution loads
it first (see :mod:`nda.backends`).

Layer: dispatch (README, "Architecture").
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Protocol


from . import _forksafe
from ._handles import HANDLES as _HANDLES
from ._devices import KernelKey, Layout, as_layout, strided
from ._dtypes import DType, as_dtype
from ._config import config as _config
from .ops import DECLARED as _DECLARED
from .ops import spec as _spec
from .ops.spec import CATALOG as _CATALOG
from ._route import (
    HOST_FALLBACK,
    HOST_VIEW,
    LAYOUT_CONVERSION,
    NATIVE,
    QUEUED,
    DispatchError,
    FallbackError,
    FallbackWarning,
    Route,
    RouteKind,
    announce_fallback as _announce_fallback,
    warned,
)

__all__ = [
    "DispatchError",
    "DeviceUnavailableError",
    "FallbackWarning",
    "FallbackError",
    "Route",
    "RouteKind",
    "NATIVE",
    "QUEUED",
    "HOST_FALLBACK",
    "HOST_VIEW",
    "LAYOUT_CONVERSION",
    "route_of",
    "coverage",
    "Coverage",
    "KernelEntry",
    "OpTable",
    "register",
    "prepare",
    "publish",
    "invalidate",
    "dependents",
    "generation",
    "remember",
    "resolve",
    "resolve_plan",
    "table",
    "explain",
    "kernels",
    "subnormal_flush",
    "Provider",
    "install",
]


class DeviceUnavailableError(ValueError):
    """No loaded backend serves the requested device type (unknown, excluded or failed to load)."""


class Provider(Protocol):
    """What dispatch asks of the layers above it: the one registration into this layer.

    Dispatch sits below the backends and the layouts, so it never imports them. The
    layouts layer, the lowest that sees both, implements this protocol (mypy checks it) and
    installs it once, at import, with :func:`install`:

    * ``ensure_device_type(device_type)``: load the backend of a device type not loaded yet
      (a plugin, on first use); ``serves(device_type)``: whether a loaded backend serves it;
      ``explain_missing(device_type)``: why none does (a sentence, or ``""``);
    * ``host_fallback(table, key)``: the host fallback's entry for a strided key with no
      kernel (``None`` where the backend did not opt in, or cpu has no kernel either), and
      ``falls_back_to_host(device_type)``: whether that backend opted in (for coverage);
    * ``layout_route(op_name, plan)``, ``explain_layout(op_name, plan)`` and
      ``layout_coverage(op_name, device_type, dtype, layout, status)``: the route, the
      explanation and the coverage status of a call with non-strided operands.

    Until it is installed (``nda.dispatch`` used on its own) there are no backends and no
    layouts to ask (:class:`_Alone`).
    """

    def ensure_device_type(self, device_type: str, /) -> bool: ...
    def serves(self, device_type: str, /) -> bool: ...
    def explain_missing(self, device_type: str, /) -> str: ...
    def falls_back_to_host(self, device_type: str, /) -> bool: ...
    def host_fallback(self, table: OpTable, key: KernelKey, /) -> KernelEntry | None: ...
    def layout_route(self, op_name: str, plan: Any, /) -> Route: ...
    def explain_layout(self, op_name: str, plan: Any, /) -> Explanation: ...
    def layout_coverage(self, op_name: str, device_type: str, dtype: DType, layout: Layout, status: str, /) -> str: ...


class _Alone:
    """The :class:`Provider` of dispatch used on its own: no backends, no layouts."""

    def ensure_device_type(self, device_type: str, /) -> bool:
        return False

    def serves(self, device_type: str, /) -> bool:
        return False

    def explain_missing(self, device_type: str, /) -> str:
        return ""

    def falls_back_to_host(self, device_type: str, /) -> bool:
        raise DeviceUnavailableError("no backends are loaded (import nda, not nda.dispatch alone)")

    def host_fallback(self, table: OpTable, key: KernelKey, /) -> KernelEntry | None:
        return None

    def layout_route(self, op_name: str, plan: Any, /) -> Route:
        raise DispatchError("non-strided layouts need nda.layouts (import nda, not nda.dispatch alone)")

    def explain_layout(self, op_name: str, plan: Any, /) -> Explanation:
        raise DispatchError("non-strided layouts need nda.layouts (import nda, not nda.dispatch alone)")

    def layout_coverage(self, op_name: str, device_type: str, dtype: DType, layout: Layout, status: str, /) -> str:
        return status


_upper: Provider = _Alone()


def install(provider: Provider) -> None:
    """Install what dispatch asks of the layers above it (see :class:`Provider`); once, at import of ``nda.layouts``."""
    global _upper
    if not isinstance(_upper, _Alone):
        raise RuntimeError("nda.dispatch.install: a provider is installed already (nda.layouts installs it once, at import)")
    _upper = provider


class KernelEntry:
    """A registered kernel: the function and how it was registered.

    ``kind`` is the :class:`Route` kind a resolution to this entry gets (``native``, ``queued``
    for a backend with in-order queues; ``host fallback`` or ``host view`` for the entry the
    host fallback makes), with ``description`` and ``warning`` (what that route announces).
    """

    __slots__ = ("fn", "key", "priority", "supports", "backend", "order", "signatures", "out_layout", "route", "op", "kind", "description", "warning")

    def __init__(
        self,
        fn: Callable[..., Any],
        key: KernelKey,
        priority: int,
        supports: Callable[..., bool] | None,
        backend: str,
        order: int,
        signatures: frozenset[tuple[str, ...]] | None = None,
        out_layout: Layout | None = None,
        route: str = "native",
        kind: RouteKind = NATIVE,
        description: str = "",
        warning: str | None = None,
    ) -> None:
        self.fn = fn
        self.key = key
        self.priority = priority
        self.supports = supports
        self.backend = backend
        self.order = order
        self.signatures = signatures  # operand layouts accepted (non-strided keys); None: all in the key's layout
        self.out_layout = out_layout  # layout of the result; None: the key's layout
        self.route = route  # "native", or "host fallback" for the kernel the host fallback makes
        self.op = ""  # the op's name (set by prepare())
        self.kind = kind
        self.description = description  # the route in words (explain; the FallbackError's message)
        self.warning = warning  # the FallbackWarning's line; None: the route announces nothing

    @property
    def qualname(self) -> str:
        module = getattr(self.fn, "__module__", None) or "?"
        name = getattr(self.fn, "__qualname__", None) or repr(self.fn)
        return f"{module}.{name}"

    def __repr__(self) -> str:
        extra = ", with supports()" if self.supports is not None else ""
        return f"<kernel {self.qualname} for {self.key} from backend {self.backend!r}, priority {self.priority}{extra}>"


class OpTable:
    """The kernels of one op, by key, and the routes resolved from them (``resolved``)."""

    __slots__ = ("op_name", "kernels", "resolved")

    def __init__(self, op_name: str) -> None:
        self.op_name = op_name
        self.kernels: dict[KernelKey, list[KernelEntry]] = {}
        self.resolved: dict[KernelKey, Route] = {}

    def __repr__(self) -> str:
        return f"<OpTable {self.op_name!r}: {len(self.kernels)} keys>"


#: What has warned, (op, where) pairs: nda._route's set, by its old name here (tests clear it).
_warned_routes = warned

_TABLES: dict[str, OpTable] = {}
_registration_counter = 0
_lock = _forksafe.guard(threading.RLock(), "the dispatch tables' lock", rank=30)  # changes of the tables (registration, unregistration)

#: ``clear`` callables of the caches that higher layers build from resolutions: called, with
#: every table's own ``resolved`` cleared, whenever what resolution answers may change.
dependents: list[Callable[[], None]] = []

#: ``[n]``: bumped by every :func:`invalidate` (before it clears anything). A cache entry built
#: from resolutions is stored with :func:`remember`, given the generation read before resolving.
generation = [0]


def invalidate() -> None:
    """Forget every resolution, and every cache built from one (see :data:`dependents`)."""
    generation[0] += 1
    for tbl in _TABLES.values():
        tbl.resolved.clear()
    for clear in list(dependents):
        clear()


def remember(cache: dict[Any, Any], key: Any, value: Any, seen: int) -> Any:
    """``cache[key] = value``, unless dispatch changed since generation ``seen`` (read before the
    value was resolved): a registration that lands meanwhile must not leave a stale entry behind.
    Stored first, then checked: an :func:`invalidate` that follows the check clears it anyway."""
    cache[key] = value
    if generation[0] != seen:
        cache.pop(key, None)
    return value


def table(op_name: str) -> OpTable:
    """The table of ``op_name``; raises ValueError for an op the catalog does not declare."""
    try:
        return _TABLES[op_name]
    except KeyError:
        raise ValueError(f"unknown op {op_name!r}; the catalog declares {len(_TABLES)} ops, e.g. {', '.join(sorted(_TABLES)[:8])}, …") from None


def _declare_table(op_name: str) -> OpTable:
    """Create the table of a declared op (the catalog tells dispatch of each declaration)."""
    if op_name in _TABLES:
        return _TABLES[op_name]
    tbl = _TABLES[op_name] = OpTable(op_name)
    return tbl


def _on_declare(decl: Any) -> None:
    _declare_table(decl.name)


def op_names() -> list[str]:
    return sorted(_TABLES)


def register(
    op_name: str,
    device_type: str,
    dtypes: Iterable[DType | str] | DType | str,
    fn: Callable[..., Any],
    *,
    layout: Layout | str = strided,
    priority: int = 0,
    supports: Callable[..., bool] | None = None,
    backend: str = "<runtime>",
    signatures: Iterable[tuple[str, ...]] | None = None,
    out_layout: Layout | str | None = None,
) -> None:
    """Register ``fn`` as the kernel of ``op_name`` for each ``(device_type, dtype, layout)``.

    Kernels receive the op's arguments with every array replaced by its backend buffer
    (for cpu: a ``numpy.ndarray``), inputs already cast to the key's dtype. ``priority``
    orders kernels of the same key (highest first); ``supports(*args, **kwargs)``, if
    given, restricts the kernel to the calls it accepts.

    For a non-strided ``layout``: ``signatures`` lists the operand layouts the kernel
    accepts, one tuple per accepted call shape, e.g. ``[("csr", "strided")]`` for
    ``csr @ strided`` or ``[("csr", "scalar")]`` for ``x * 2.0`` (default: every array
    operand in ``layout``, Python scalars anywhere); ``out_layout`` is the layout of the
    result (default: ``layout``).
    """
    publish(
        prepare(
            op_name,
            device_type,
            dtypes,
            fn,
            layout=layout,
            priority=priority,
            supports=supports,
            backend=backend,
            signatures=signatures,
            out_layout=out_layout,
        )
    )


def prepare(
    op_name: str,
    device_type: str,
    dtypes: Iterable[DType | str] | DType | str,
    fn: Callable[..., Any],
    *,
    layout: Layout | str = strided,
    priority: int = 0,
    supports: Callable[..., bool] | None = None,
    backend: str = "<runtime>",
    signatures: Iterable[tuple[str, ...]] | None = None,
    out_layout: Layout | str | None = None,
    queued: bool = False,
) -> list[KernelEntry]:
    """The entries :func:`register` would add, validated, without adding them (a backend's
    activation stages its kernels this way and publishes them all once they are valid).
    ``queued``: ``fn`` records its work on the device's in-order queue (``engine.queues.issuing``
    wrapped it), so its routes are ``queued`` ones."""
    global _registration_counter
    table(op_name)
    if not isinstance(device_type, str) or not device_type:
        raise TypeError(f"device_type must be a non-empty string such as 'cpu', got {device_type!r}")
    if not callable(fn):
        raise TypeError(f"kernel for {op_name!r} must be callable, got {fn!r}")
    if supports is not None and not callable(supports):
        raise TypeError(f"supports for {op_name!r} must be callable or None, got {supports!r}")
    lay = as_layout(layout)
    sigs = _check_signatures(op_name, signatures)
    out_lay = None if out_layout is None else as_layout(out_layout)
    if lay is strided and (sigs is not None or out_lay not in (None, strided)):
        raise ValueError(f"{op_name}: signatures= and out_layout= apply to kernels of non-strided layouts only")
    if isinstance(dtypes, (DType, str)):
        dtypes = (dtypes,)
    entries = []
    for dt in dtypes:
        key = KernelKey(device_type, as_dtype(dt), lay)
        with _lock:
            _registration_counter += 1
            order = _registration_counter
        entries.append(KernelEntry(fn, key, int(priority), supports, backend, order, sigs, out_lay, kind=QUEUED if queued else NATIVE))
        entries[-1].op = op_name
    return entries


def publish(entries: Iterable[KernelEntry]) -> None:
    """Add prepared entries to their tables, then forget every resolution once."""
    with _lock:
        for entry in entries:
            tbl = _TABLES[entry.op]
            key = entry.key
            # The list is replaced, never changed in place: a reader never sees it half sorted.
            tbl.kernels[key] = sorted(tbl.kernels.get(key, []) + [entry], key=lambda e: (-e.priority, -e.order))
    invalidate()


def _check_signatures(op_name: str, signatures: Iterable[tuple[str, ...]] | None) -> frozenset[tuple[str, ...]] | None:
    if signatures is None:
        return None
    found = []
    for sig in signatures:
        if not isinstance(sig, tuple) or not sig:
            raise TypeError(f"{op_name}: each signature must be a non-empty tuple of layout names or 'scalar', got {sig!r}")
        for name in sig:
            if name != "scalar":
                as_layout(name)
        found.append(sig)
    return frozenset(found)


def clear_caches() -> None:
    """Forget every resolution (and memoised plan); the next call of each op resolves again."""
    invalidate()


def unregister_backend(backend: str) -> None:
    """Remove every kernel a backend registered (an op library whose backend failed; tests)."""
    with _lock:
        _remove_backend(backend)
    invalidate()


def _remove_backend(backend: str) -> None:
    for tbl in _TABLES.values():
        for key in list(tbl.kernels):
            kept = [e for e in tbl.kernels[key] if e.backend != backend]
            if kept:
                tbl.kernels[key] = kept
            else:
                del tbl.kernels[key]


_NO_FLUSH: frozenset[DType] = frozenset()


def subnormal_flush(device_type: str) -> frozenset[DType]:
    """The dtypes whose subnormals the kernels of ``device_type`` flush to zero (empty: they keep them).

    The declaration is the backend's ``flushes_subnormals``, resolved into its handle when it
    activated (``flushed_dtypes``): read from the published handles (:mod:`nda._handles`), so a
    backend withdrawn takes its declaration with it."""
    found = _HANDLES.get(device_type)
    return _NO_FLUSH if found is None else found.flushed_dtypes


def _flush_note(key: KernelKey, route: Route, out_dtype: DType) -> str | None:
    """explain()'s line about flushed subnormals, when the route runs the declaring backend's kernels."""
    found = _HANDLES.get(key.device_type)
    on_host = (HOST_FALLBACK, HOST_VIEW)
    if found is None or not found.flushed_dtypes or route.kind in on_host or (route.inner is not None and route.inner.kind in on_host):
        return None
    hit = sorted({d.name for d in (key.dtype, out_dtype) if d in found.flushed_dtypes})
    if not hit:
        return None
    return f"backend {found.name!r} flushes {' and '.join(hit)} subnormal inputs and results to zero (declared: flushes_subnormals)"


def kernels(op_name: str, key: KernelKey | None = None) -> list[KernelEntry]:
    """The kernels registered for ``op_name`` (at ``key``, or all of them)."""
    tbl = table(op_name)
    if key is not None:
        return list(tbl.kernels.get(key, ()))
    return [e for entries in tbl.kernels.values() for e in entries]


def _chooser(entries: list[KernelEntry], op_name: str, key: KernelKey, fallback: KernelEntry | None = None, note: str = "") -> Callable[..., Any]:
    """A kernel that asks each entry's ``supports`` in priority order.

    When every kernel declines, the call takes ``fallback`` (the host fallback of a backend
    that opted in; announced like any fallback route), else raises DispatchError.
    """
    route = (
        f"{op_name} on {key}: every {key.device_type} kernel declined these arguments (supports()); the call takes the "
        "host fallback: copies the inputs to cpu, runs the cpu kernel there and copies the result back"
    )

    def choose(*args: Any, **kwargs: Any) -> Any:
        for entry in entries:
            if entry.supports is None or entry.supports(*args, **kwargs):
                return entry.fn(*args, **kwargs)
        if fallback is not None:
            _announce_fallback(op_name, route, where=(key.device_type, key.layout.name, "declined"))
            return fallback.fn(*args, **kwargs)
        raise DispatchError(f"{op_name}: every kernel registered for {key} declined these arguments via supports(); kernels: {entries}{note}")

    choose.__qualname__ = f"choose[{op_name}@{key}]"
    return choose


def _missing(tbl: OpTable, key: KernelKey) -> DispatchError:
    existing = sorted(tbl.kernels, key=repr)
    if existing:
        have = ", ".join(repr(k) for k in existing[:24]) + (" …" if len(existing) > 24 else "")
    else:
        have = "none"
    hint = _upper.explain_missing(key.device_type)
    return DispatchError(f"no kernel for op {tbl.op_name!r} at key {key}; registered keys: {have}.{hint}")


def lookup(op_name: str, key: KernelKey) -> list[KernelEntry]:
    """Kernel entries for ``key`` after making sure the device's backend is loaded."""
    tbl = table(op_name)
    entries = tbl.kernels.get(key)
    if not entries:
        # Read again whatever ensure_device_type says: False also means that another thread
        # finished activating the backend while this one waited for the activation lock.
        _upper.ensure_device_type(key.device_type)
        entries = tbl.kernels.get(key)
    if not entries:
        if not _upper.serves(key.device_type):
            raise DeviceUnavailableError(f"{tbl.op_name}: device type {key.device_type!r} is not available.{_upper.explain_missing(key.device_type)}")
        # A non-strided key never takes the host fallback: its operands would have to leave the
        # device in their own layout. The layout fallback (nda.layouts) converts them first.
        fallback = _upper.host_fallback(tbl, key) if key.layout is strided else None
        if fallback is None:
            raise _missing(tbl, key)
        entries = [fallback]
    return entries


def resolve(op_name: str, key: KernelKey) -> Route:
    """The :class:`Route` of ``op_name`` at ``key`` (cached; raises DispatchError when missing).

    Its fallback is announced here, once per resolution (a FallbackWarning once per op and
    device, or a FallbackError under ``nda.config.fallback = "error"``); running it
    (``route.run``) announces nothing."""
    tbl = table(op_name)
    cached = tbl.resolved.get(key)
    if cached is not None:
        return cached
    seen = generation[0]
    entries = lookup(op_name, key)
    found = route_of(op_name, key, entries, _declined_fallback(tbl, key, entries) if entries[0].supports is not None else (None, ""))
    found.announce()
    if key.layout is strided:  # for other layouts the route depends on the operands (nda.layouts)
        remember(tbl.resolved, key, found, seen)
    return found


def route_of(op_name: str, key: KernelKey, entries: list[KernelEntry], declined: tuple[KernelEntry | None, str] = (None, "")) -> Route:
    """The route that runs ``entries`` (the kernels of ``key`` a call may use, priority order):
    the first one's, or a chooser asking each one's ``supports`` when it has one (``declined``:
    the host fallback and note for calls every kernel declines, see :func:`_chooser`)."""
    first = entries[0]
    run = first.fn if first.supports is None else _chooser(entries, op_name, key, *declined)
    return Route(
        first.kind,
        run,
        op_name,
        key,
        first.out_layout or key.layout,
        description=first.description,
        warning=first.warning,
        where=(key.device_type, key.layout.name),
        queue=key.device_type if first.kind is QUEUED else None,
    )


def _declined_fallback(tbl: OpTable, key: KernelKey, entries: list[KernelEntry]) -> tuple[KernelEntry | None, str]:
    """The host fallback for calls every kernel of ``key`` declines, where the backend opted
    in (design: the host fallback comes after the kernels whose predicate declines), and a
    note for the error raised where there is none.

    Not for view ops: their result must share memory with the input, and whether it will
    is decided when the call is planned (a host fallback's copy is kept in step with its
    base by ``nda._hostviews`` only when planned as one), so a declined view is an error.
    """
    if key.layout is not strided or entries[-1].supports is None:
        return None, ""  # the last kernel accepts every call
    fallback = _upper.host_fallback(tbl, key)
    if fallback is None:
        return None, ""
    if fallback.kind is HOST_VIEW:
        return None, (
            f". {tbl.op_name} makes views, which cannot take the host fallback per call (the result must share "
            "memory with its input): register a kernel that accepts every call for this key, or none (the op then "
            "makes host views)"
        )
    return fallback, ""


def resolve_plan(op_name: str, plan: Any) -> Route:
    """The :class:`Route` of a planned call: the key's route for strided keys, otherwise the
    route :func:`nda.layouts.route` chooses for the operands' layouts (``route.layout``: the
    result's layout)."""
    if plan.key.layout is strided:
        for r in plan.reads:  # a sparse operand beside a strided key (x[...] = csr, x[sparse_mask])
            if r._meta.layout is not strided:
                break
        else:
            return resolve(op_name, plan.key)
    return _upper.layout_route(op_name, plan)


class Coverage:
    """Per op and dtype of one device type and layout: ``native``, ``fallback`` or ``missing``."""

    def __init__(self, device_type: str, rows: dict[str, dict[str, str]], layout: Layout = strided) -> None:
        self.device_type = device_type
        self.rows = rows
        self.layout = layout

    def as_dict(self) -> dict[str, dict[str, str]]:
        return {op: dict(by_dtype) for op, by_dtype in self.rows.items()}

    def counts(self) -> dict[str, int]:
        counts = {"native": 0, "fallback": 0, "missing": 0}
        for by_dtype in self.rows.values():
            for status in by_dtype.values():
                counts[status] += 1
        return counts

    def __str__(self) -> str:
        where = f"device type {self.device_type!r}" + ("" if self.layout is strided else f", layout {self.layout.name}")
        lines = [f"coverage of {where}: " + ", ".join(f"{v} {k}" for k, v in self.counts().items()), ""]
        width = max(len(op) for op in self.rows) if self.rows else 2
        for op, by_dtype in self.rows.items():
            groups: dict[str, list[str]] = {}
            for dtype, status in by_dtype.items():
                groups.setdefault(status, []).append(dtype)
            parts = [f"{status}: {', '.join(dts)}" for status, dts in groups.items()]
            lines.append(f"{op:<{width}}  " + "; ".join(parts))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Coverage {self.device_type} {self.layout.name}: {self.counts()}>"


def coverage(device: Any, layout: Layout | str = strided) -> Coverage:
    """Which ops run natively on ``device`` (a Device, a type or a string), per declared dtype.

    For a non-strided ``layout``: ``native`` when a kernel is registered at that layout
    (for some operand signature; ``explain`` tells which), ``fallback`` when the op runs
    through the layout fallback (converted to strided, then the strided route).
    """
    from ._devices import Device

    device_type = device.type if isinstance(device, Device) else str(device).split(":")[0]
    _upper.ensure_device_type(device_type)
    _upper.ensure_device_type("cpu")  # "fallback" means "cpu has a kernel for it"
    opts_in = _upper.falls_back_to_host(device_type)  # the backend's handle: resolved when it activated
    lay = as_layout(layout)
    rows: dict[str, dict[str, str]] = {}
    for name, decl in sorted(_DECLARED.items()):  # the catalog, and the ops of loaded op libraries
        tbl = _TABLES[name]
        by_dtype = {}
        for dt in decl.supported_dtypes:
            key = KernelKey(device_type, dt)
            if tbl.kernels.get(key):
                status = "native"
            elif opts_in and tbl.kernels.get(KernelKey("cpu", dt)):
                status = "fallback"
            else:
                status = "missing"
            if lay is not strided:
                status = _upper.layout_coverage(name, device_type, dt, lay, status)
            by_dtype[dt.name] = status
        rows[name] = by_dtype
    return Coverage(device_type, rows, lay)


class Explanation:
    """What :func:`explain` found: the route a call would take, readable by people."""

    __slots__ = ("op", "key", "kernel", "casts", "out_dtype", "out_shape", "device", "candidates", "conversions", "out_layout", "route")

    def __init__(
        self,
        op: str,
        key: KernelKey,
        kernel: KernelEntry,
        casts: list[str],
        out_dtype: DType,
        out_shape: tuple[int, ...],
        device: Any,
        candidates: list[KernelEntry],
        conversions: list[str] | None = None,
        out_layout: Layout = strided,
        route: Route | None = None,
    ) -> None:
        self.op = op
        self.key = key
        self.kernel = kernel
        self.casts = casts
        self.out_dtype = out_dtype
        self.out_shape = out_shape
        self.device = device
        self.candidates = candidates
        self.conversions = conversions or []  # layout conversions the route runs, in order
        self.out_layout = out_layout
        #: the Route the call would take (its ``kind``: native, queued, host fallback, host view, layout conversion)
        self.route = route if route is not None else route_of(op, key, [kernel])

    def __str__(self) -> str:
        lines = [
            f"op:      {self.op}",
            f"device:  {self.device}",
            f"key:     {self.key}",
            f"kernel:  {self.kernel.qualname} (backend {self.kernel.backend!r}, priority {self.kernel.priority})",
        ]
        route = self.route
        lines.append(
            f"route:   {route.kind.value}"
            + (f": {route.description}" if route.description else "")
            + (f" (recorded on the {route.queue} queue)" if route.queue else "")
        )
        if self.kernel.supports is not None:
            then = ", then the host fallback" if _declined_fallback(table(self.op), self.key, self.candidates)[0] is not None else ""
            lines.append("         chosen per call by supports(); candidates in order: " + ", ".join(e.qualname for e in self.candidates) + then)
        for cast in self.casts:
            lines.append(f"cast:    {cast}")
        for conversion in self.conversions:
            lines.append(f"convert: {conversion}")
        if isinstance(self.out_dtype, tuple):  # an op with several results (qr, eigh, slogdet)
            outputs = "; ".join(f"{d.name} {s}" for d, s in zip(self.out_dtype, self.out_shape))
        else:
            outputs = f"{self.out_dtype.name} {self.out_shape}"
        lines.append(f"output:  {outputs}" + ("" if self.out_layout is strided else f" {self.out_layout.name}"))
        first = self.out_dtype[0] if isinstance(self.out_dtype, tuple) else self.out_dtype
        note = _flush_note(self.key, self.route, first)
        if note:
            lines.append(f"note:    {note}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Explanation {self.op} {self.key} -> {self.kernel.qualname} ({self.route.kind.value})>"


def explain(op: str | Callable[..., Any], *args: Any, **kwargs: Any) -> Explanation:
    """Say which kernel ``op(*args, **kwargs)`` would run, at which key, with which casts.

    ``op`` is an op's name (``"add"``, ``"linalg.inv"``, ``"<library>.<op>"`` for an op
    library's op), its public function, or a function made by ``nda.hybridize``: that one
    explains its recorded graph and how the backends partitioned it.

    Nothing is computed: the op's front end plans the call (validation, promotion, output
    shape) and the dispatch table is consulted, so bad arguments raise just as the call
    would.
    """
    from .ops import lookup as declaration

    custom = getattr(op, "__nda_explain__", None)  # a hybridized function explains its graph and partition
    if custom is not None:
        return custom(*args, **kwargs)  # type: ignore[no-any-return]
    decl = getattr(op, "__wrapped_decl__", None)  # a public function (nda.linalg.inv, nda.ext.<library>.<op>)
    name = op if isinstance(op, str) else getattr(op, "__name__", None)
    if decl is None:
        decl = declaration(name)  # type: ignore[arg-type]
    if decl is None:
        raise ValueError(f"unknown op {name!r}; see nda.ops.CATALOG (and nda.ops.EXTENSIONS for op libraries) for the declared ops")
    plan = decl.plan(*args, **kwargs)
    if plan.key.layout is not strided:
        return _upper.explain_layout(decl.name, plan)
    entries = lookup(decl.name, plan.key)
    route = route_of(decl.name, plan.key, entries)  # what resolve() answers, without announcing or caching it
    return Explanation(decl.name, plan.key, entries[0], plan.casts, plan.out_dtype, plan.out_shape, plan.device, entries, route=route)


# ---------------------------------------------------------------------------- registrations (at import)

_config.on_change.append(invalidate)  # a memoised route was announced under the old setting
for _decl in _CATALOG.values():  # ops declared before dispatch loaded
    _declare_table(_decl.name)
_spec.declared.append(_on_declare)  # and those declared later (an extension library's)
