"""Per-op dispatch tables keyed by ``(device type, dtype, layout)``.

Every op of the catalog owns an :class:`OpTable`. Backends add kernels to it with
:func:`register`; the front end asks :func:`resolve` for the kernel of a key. A table
holds, per key, the kernels sorted by priority (highest first, later registration wins
ties). A kernel may carry a ``supports(*args, **kwargs)`` predicate: the kernel is used
only for calls it accepts, and the next kernel of the key gets the others.

Resolution is cached. The cache of a table (``OpTable.cache``) is shared with the front
end, which stores its own hot-path entries there (for example "float32 + float32 on
cpu:0 -> this kernel, this output metadata"); registering a kernel clears it. So the hot
path of an op is one dict lookup, and the slow path below runs once per key.

Keys whose layout is not ``strided`` (csr, row_sparse, a backend's own) resolve per
call *signature* (the layouts of the operands) through :func:`resolve_plan` and
:mod:`nda.layouts`: a native kernel that accepts the signature, else the layout fallback
(convert to strided on the device, run, keep the result strided). Strided keys never
reach that code.

A missing key raises :class:`DispatchError` (a ``TypeError``, since it means the dtype,
layout or device is not supported) naming the op, the key and the keys that do exist.
If the device type has a backend that is installed but not yet loaded, resolution loads
it first (see :mod:`nda.backends`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ._devices import KernelKey, Layout, as_layout, strided
from ._dtypes import DType, as_dtype

__all__ = ["DispatchError", "DeviceUnavailableError", "FallbackWarning", "FallbackError", "coverage", "Coverage", "KernelEntry", "OpTable", "register", "resolve", "resolve_plan", "table", "explain", "kernels",
           "declare_subnormal_flush", "subnormal_flush"]


class DispatchError(TypeError):
    """No kernel is registered for an op at the requested (device type, dtype, layout)."""


class FallbackWarning(UserWarning):
    """An op ran through a fallback route (for example on cpu, with copies in and out)."""


class FallbackError(DispatchError):
    """An op would need a fallback route and ``nda.config.fallback`` is ``"error"``."""


class DeviceUnavailableError(ValueError):
    """No loaded backend serves the requested device type (unknown, excluded or failed to load)."""


class KernelEntry:
    """A registered kernel: the function and how it was registered."""

    __slots__ = ("fn", "key", "priority", "supports", "backend", "order", "signatures", "out_layout")

    def __init__(self, fn: Callable[..., Any], key: KernelKey, priority: int, supports: Callable[..., bool] | None, backend: str, order: int,
                 signatures: frozenset[tuple[str, ...]] | None = None, out_layout: Layout | None = None) -> None:
        self.fn = fn
        self.key = key
        self.priority = priority
        self.supports = supports
        self.backend = backend
        self.order = order
        self.signatures = signatures  # operand layouts accepted (non-strided keys); None: all in the key's layout
        self.out_layout = out_layout  # layout of the result; None: the key's layout

    @property
    def qualname(self) -> str:
        module = getattr(self.fn, "__module__", None) or "?"
        name = getattr(self.fn, "__qualname__", None) or repr(self.fn)
        return f"{module}.{name}"

    def __repr__(self) -> str:
        extra = ", with supports()" if self.supports is not None else ""
        return f"<kernel {self.qualname} for {self.key} from backend {self.backend!r}, priority {self.priority}{extra}>"


class OpTable:
    """The kernels of one op, by key, plus the resolution cache shared with the front end."""

    __slots__ = ("op_name", "kernels", "cache")

    def __init__(self, op_name: str) -> None:
        self.op_name = op_name
        self.kernels: dict[KernelKey, list[KernelEntry]] = {}
        self.cache: dict[Any, Any] = {}

    def __repr__(self) -> str:
        return f"<OpTable {self.op_name!r}: {len(self.kernels)} keys>"


_TABLES: dict[str, OpTable] = {}
_registration_counter = 0


def table(op_name: str) -> OpTable:
    """The table of ``op_name``; raises ValueError for an op the catalog does not declare."""
    try:
        return _TABLES[op_name]
    except KeyError:
        raise ValueError(f"unknown op {op_name!r}; the catalog declares {len(_TABLES)} ops, e.g. {', '.join(sorted(_TABLES)[:8])}, …") from None


def _declare_table(op_name: str) -> OpTable:
    """Create the table of a catalog op (called by the op catalog only)."""
    if op_name in _TABLES:
        return _TABLES[op_name]
    tbl = _TABLES[op_name] = OpTable(op_name)
    return tbl


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
    global _registration_counter
    tbl = table(op_name)
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
    for dt in dtypes:
        key = KernelKey(device_type, as_dtype(dt), lay)
        _registration_counter += 1
        entry = KernelEntry(fn, key, int(priority), supports, backend, _registration_counter, sigs, out_lay)
        entries = tbl.kernels.setdefault(key, [])
        entries.append(entry)
        entries.sort(key=lambda e: (-e.priority, -e.order))
    tbl.cache.clear()


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
    for tbl in _TABLES.values():
        tbl.cache.clear()


def unregister_backend(backend: str) -> None:
    """Remove every kernel a backend registered (used when a backend fails validation)."""
    for tbl in _TABLES.values():
        for key in list(tbl.kernels):
            kept = [e for e in tbl.kernels[key] if e.backend != backend]
            if kept:
                tbl.kernels[key] = kept
            else:
                del tbl.kernels[key]
        tbl.cache.clear()
    for device_type in [d for d, (name, _) in _FLUSHING.items() if name == backend]:
        del _FLUSHING[device_type]


#: device type -> (backend, dtypes whose subnormals its kernels flush): the backends' declarations.
_FLUSHING: dict[str, tuple[str, frozenset[DType]]] = {}


def declare_subnormal_flush(device_type: str, dtypes: Iterable[Any], backend: str) -> None:
    """Record that ``backend``'s kernels on ``device_type`` flush subnormals of ``dtypes`` (its
    ``flushes_subnormals``; called by nda.backends when the backend registers)."""
    _FLUSHING[device_type] = (backend, frozenset(as_dtype(d) for d in dtypes))


def subnormal_flush(device_type: str) -> frozenset[DType]:
    """The dtypes whose subnormals the kernels of ``device_type`` flush to zero (empty: they keep them)."""
    found = _FLUSHING.get(device_type)
    return found[1] if found else frozenset()


def _flush_note(key: KernelKey, kernel: KernelEntry, out_dtype: DType, conversions: list[str]) -> str | None:
    """explain()'s line about flushed subnormals, when the route runs the declaring backend's kernels."""
    found = _FLUSHING.get(key.device_type)
    if not found or "(host fallback)" in kernel.backend or any("host fallback" in c or "copies the inputs to cpu" in c for c in conversions):
        return None
    backend, dtypes = found
    hit = sorted({d.name for d in (key.dtype, out_dtype) if d in dtypes})
    if not hit:
        return None
    return f"backend {backend!r} flushes {' and '.join(hit)} subnormal inputs and results to zero (declared: flushes_subnormals)"


def kernels(op_name: str, key: KernelKey | None = None) -> list[KernelEntry]:
    """The kernels registered for ``op_name`` (at ``key``, or all of them)."""
    tbl = table(op_name)
    if key is not None:
        return list(tbl.kernels.get(key, ()))
    return [e for entries in tbl.kernels.values() for e in entries]


def _chooser(entries: list[KernelEntry], op_name: str, key: KernelKey) -> Callable[..., Any]:
    """A kernel that asks each entry's ``supports`` in priority order."""

    def choose(*args: Any, **kwargs: Any) -> Any:
        for entry in entries:
            if entry.supports is None or entry.supports(*args, **kwargs):
                return entry.fn(*args, **kwargs)
        raise DispatchError(
            f"{op_name}: every kernel registered for {key} declined these arguments via supports(); kernels: {entries}"
        )

    choose.__qualname__ = f"choose[{op_name}@{key}]"
    return choose


def _missing(tbl: OpTable, key: KernelKey) -> DispatchError:
    existing = sorted(tbl.kernels, key=repr)
    if existing:
        have = ", ".join(repr(k) for k in existing[:24]) + (" …" if len(existing) > 24 else "")
    else:
        have = "none"
    from . import backends

    hint = backends.explain_missing(key.device_type)
    return DispatchError(f"no kernel for op {tbl.op_name!r} at key {key}; registered keys: {have}.{hint}")


def lookup(op_name: str, key: KernelKey) -> list[KernelEntry]:
    """Kernel entries for ``key`` after making sure the device's backend is loaded."""
    tbl = table(op_name)
    entries = tbl.kernels.get(key)
    if not entries:
        from . import backends

        if backends.ensure_device_type(key.device_type):
            entries = tbl.kernels.get(key)
    if not entries:
        from . import backends

        if not backends.serves(key.device_type):
            raise DeviceUnavailableError(f"{tbl.op_name}: device type {key.device_type!r} is not available.{backends.explain_missing(key.device_type)}")
        # A non-strided key never takes the host fallback: its operands would have to leave the
        # device in their own layout. The layout fallback (nda.layouts) converts them first.
        fallback = _host_fallback(tbl, key) if key.layout is strided else None
        if fallback is None:
            raise _missing(tbl, key)
        entries = [fallback]
    return entries


def resolve(op_name: str, key: KernelKey) -> Callable[..., Any]:
    """The callable that runs ``op_name`` at ``key`` (cached; raises DispatchError when missing)."""
    tbl = table(op_name)
    cached = tbl.cache.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    cached = tbl.cache.get(("host-view", key))
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    entries = lookup(op_name, key)
    route = getattr(entries[0].fn, "_nda_route", None)
    if route is not None and not getattr(entries[0].fn, "_nda_quiet", False):
        _announce_fallback(op_name, route)
    fn = entries[0].fn if entries[0].supports is None else _chooser(entries, op_name, key)
    if key.layout is strided:
        # Front-end fast paths (x[i]) look kernels up by key in this cache and give the result
        # the input's metadata; for other layouts the output layout depends on the route. The
        # host fallback of a view op makes a copy that nda._hostviews keeps in step with its
        # base, so the fast paths must not find it: it is cached under another key.
        tbl.cache[("host-view", key) if getattr(fn, "_nda_host_view", False) else key] = fn
    return fn


def resolve_plan(op_name: str, plan: Any) -> tuple[Callable[..., Any], Layout]:
    """(kernel, output layout) for a planned call: the key's kernel for strided keys,
    otherwise the route :func:`nda.layouts.route` chooses for the operands' layouts."""
    if plan.key.layout is strided:
        for r in plan.reads:  # a sparse operand beside a strided key (x[...] = csr, x[sparse_mask])
            if r._meta.layout is not strided:
                break
        else:
            return resolve(op_name, plan.key), strided
    from . import layouts

    return layouts.route(op_name, plan)


def _announce_fallback(op_name: str, route: str) -> None:
    """On the caller's thread, when a fallback route is chosen: warn once, or refuse."""
    from ._config import config

    mode = config.fallback
    if mode == "error":
        raise FallbackError(f"{route}; nda.config.fallback is 'error' (set it to 'warn' or 'silent' to allow fallbacks)")
    if mode == "warn" and (op_name, route) not in _warned_routes:
        _warned_routes.add((op_name, route))
        import warnings

        warnings.warn(route, FallbackWarning, stacklevel=_user_stacklevel())


_warned_routes: set[tuple[str, str]] = set()
_PACKAGE_DIR = __file__.rsplit("/", 1)[0] if "/" in __file__ else ""


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the user's line, outside nda."""
    import sys

    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def _host_fallback(tbl: OpTable, key: KernelKey) -> KernelEntry | None:
    """A kernel that runs ``key``'s op on cpu with copies in and out, if the backend opts in."""
    from . import backends
    from .ops import lookup as declaration

    backend = backends.for_device_type(key.device_type)
    if not getattr(backend, "fallback_to_host", False) or key.device_type == "cpu":
        return None
    cpu_key = KernelKey("cpu", key.dtype, key.layout)
    try:
        cpu_kernel = resolve(tbl.op_name, cpu_key)
    except (DispatchError, DeviceUnavailableError):
        return None
    decl = declaration(tbl.op_name)
    buffer_type = backend.buffer_type
    from_host, device_of = backend.from_host, backend.device_of
    read_buffer = backends.read_buffer

    def to_host(buf: Any) -> Any:  # errors of device work carry the failed op's note
        return read_buffer(device_of(buf), buf)

    route = f"{tbl.op_name} on {key}: no {key.device_type} kernel; copies the inputs to cpu, runs {getattr(cpu_kernel, '__qualname__', cpu_kernel)} there and copies the result back"
    if decl.view:
        route += "; the result is a copy that nda keeps in step with its base (writes through it go to the base through the host)"
    elif tbl.op_name == "asarray":
        route = f"asarray on {key}: no {key.device_type} kernel; the data is prepared on the host and copied to the device with from_host (what asarray of host data does anyway: no FallbackWarning)"
    mutates = bool(decl.mutates)
    from ._devices import Device

    cpu = Device("cpu", 0)

    def convert(value: Any) -> Any:
        if isinstance(value, buffer_type):
            return to_host(value)
        if value.__class__ in (list, tuple):
            return value.__class__(convert(v) for v in value)
        return value

    def find_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if "device" in kwargs:
            return kwargs["device"]
        for value in args:
            for item in value if value.__class__ in (list, tuple) else (value,):
                if isinstance(item, buffer_type):
                    return device_of(item)
        raise DispatchError(f"{tbl.op_name}: host fallback found no {key.device_type} buffer to copy the result to")

    def fallback(*args: Any, **kwargs: Any) -> Any:
        device = find_device(args, kwargs)
        host_args = [convert(a) for a in args]
        host_kwargs = {k: (cpu if k == "device" else convert(v)) for k, v in kwargs.items()}
        result = cpu_kernel(*host_args, **host_kwargs)
        if mutates:
            return backends.write_buffer(device, host_args[0], args[0])
        if result.__class__ is tuple:  # an op with several outputs (qr, unique_all, nonzero)
            return tuple(from_host(np.asarray(r), device) for r in result)
        return from_host(result, device)

    fallback.__qualname__ = f"host_fallback[{tbl.op_name}]"
    fallback._nda_route = route  # type: ignore[attr-defined]
    fallback._nda_host_view = bool(decl.view)  # type: ignore[attr-defined]  # see nda._hostviews
    fallback._nda_quiet = tbl.op_name == "asarray"  # type: ignore[attr-defined]
    return KernelEntry(fallback, key, -1, None, f"{backend.name} (host fallback)", 0)


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
    from . import backends
    from ._devices import Device
    from .ops import DECLARED

    device_type = device.type if isinstance(device, Device) else str(device).split(":")[0]
    backends.ensure_device_type(device_type)
    backends.ensure_device_type("cpu")  # "fallback" means "cpu has a kernel for it"
    backend = backends.for_device_type(device_type)
    opts_in = bool(getattr(backend, "fallback_to_host", False)) and device_type != "cpu"
    lay = as_layout(layout)
    rows: dict[str, dict[str, str]] = {}
    for name, decl in sorted(DECLARED.items()):  # the catalog, and the ops of loaded op libraries
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
                from . import layouts

                status = layouts.coverage_status(name, device_type, dt, lay, status)
            by_dtype[dt.name] = status
        rows[name] = by_dtype
    return Coverage(device_type, rows, lay)


class Explanation:
    """What :func:`explain` found: the route a call would take, readable by people."""

    __slots__ = ("op", "key", "kernel", "casts", "out_dtype", "out_shape", "device", "candidates", "conversions", "out_layout")

    def __init__(self, op: str, key: KernelKey, kernel: KernelEntry, casts: list[str], out_dtype: DType, out_shape: tuple[int, ...], device: Any, candidates: list[KernelEntry],
                 conversions: list[str] | None = None, out_layout: Layout = strided) -> None:
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

    def __str__(self) -> str:
        lines = [
            f"op:      {self.op}",
            f"device:  {self.device}",
            f"key:     {self.key}",
            f"kernel:  {self.kernel.qualname} (backend {self.kernel.backend!r}, priority {self.kernel.priority})",
        ]
        route = getattr(self.kernel.fn, "_nda_route", None)
        if route:
            lines.append(f"route:   {route}")
        if self.kernel.supports is not None:
            lines.append("         chosen per call by supports(); candidates in order: " + ", ".join(e.qualname for e in self.candidates))
        for cast in self.casts:
            lines.append(f"cast:    {cast}")
        for conversion in self.conversions:
            lines.append(f"convert: {conversion}")
        lines.append(f"output:  {self.out_dtype.name} {self.out_shape}" + ("" if self.out_layout is strided else f" {self.out_layout.name}"))
        note = _flush_note(self.key, self.kernel, self.out_dtype, self.conversions)
        if note:
            lines.append(f"note:    {note}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Explanation {self.op} {self.key} -> {self.kernel.qualname}>"


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
        return _explain_layout(decl.name, plan)
    entries = lookup(decl.name, plan.key)
    return Explanation(decl.name, plan.key, entries[0], plan.casts, plan.out_dtype, plan.out_shape, plan.device, entries)


def _explain_layout(op: str, plan: Any) -> Explanation:
    """The route of a call with non-strided operands: native kernel, or conversions + strided kernel."""
    from . import layouts

    sig = layouts.signature(plan.args, plan.kwargs)
    layouts._refuse_mutation(op, plan)
    entries = layouts.usable_native(op, plan, plan.key, sig)
    if entries:
        out_layout = entries[0].out_layout or plan.key.layout
        return Explanation(op, plan.key, entries[0], plan.casts, plan.out_dtype, plan.out_shape, plan.device, entries, [], out_layout)
    fn = layouts._fallback(op, plan, plan.key, sig)
    inner = fn._nda_inner  # type: ignore[attr-defined]
    strided_key = KernelKey(plan.key.device_type, plan.key.dtype, strided)
    candidates = lookup(op, strided_key)
    entry = KernelEntry(fn, plan.key, -1, None, f"{candidates[0].backend} (layout fallback)", 0)
    conversions = list(fn._nda_conversions)  # type: ignore[attr-defined]
    host = getattr(inner, "_nda_route", None)
    if host:
        conversions.append(f"then the strided kernel's own route: {host}")
    return Explanation(op, plan.key, entry, plan.casts, plan.out_dtype, plan.out_shape, plan.device, candidates, conversions, strided)
