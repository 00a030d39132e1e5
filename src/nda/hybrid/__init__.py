"""``nda.hybridize(fn)``: record the ops a function issues once, check the graph, then run the graph.

Gluon's ``hybridize()`` for functions, with MXNet's subgraph API for the backends::

    @nda.hybridize
    def gelu(x):
        return 0.5 * x * (1.0 + nda.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    y = gelu(x)                  # first call for x's metadata: traced, checked, then the graph
    y = gelu(x2)                 # same shape/dtype/device/layout: runs the graph
    print(nda.dispatch.explain(gelu, x))   # the graph and how the backends partitioned it

**Per input metadata.** A call's *signature* is the metadata of its array arguments
(shape, dtype, device, layout, which arguments are the same array and which share memory,
views included) and the values of its other arguments, which must be hashable (they are
constants of the graph, like Gluon's non-array arguments; floating scalars count by type
and bit pattern, so ``-0.0`` is not ``0.0`` and every NaN is one key). A function keeps at
most ``max_signatures`` graphs (128; the oldest is forgotten). The first call with a
signature runs ``fn`` eagerly while recording every op it issues (:mod:`._trace`); its
results are the eager ones. The graph is then partitioned (each device's backend claims
subgraphs through its ``partitioner``, backend API 1.4, :mod:`nda.backends.fusion`), run
once more from the state before the eager run (the storages ``fn`` writes in place are
copied before their first write and put back) and compared with the eager results and
writes (exactly, or within rounding for a claimed subgraph whose compiler says it is not
exact). Later calls with that signature run the graph: claimed subgraphs as one kernel
each, every other node op by op through the op's public function (planning, dispatch, the
engine, device queues: what the eager call does).

**Never another result than eager.** The tracer is an interceptor at the invocation point
every op call goes through (:mod:`nda._intercept`), so every op the function issues is
recorded however it was bound (``nda.exp``, ``from nda import exp``, operators, methods,
``nda.ext.<library>.<op>``); nothing is rebound and nothing is locked while the function
runs. Arrays ``fn`` uses without receiving them (closures,
globals, attributes and items of its non-array arguments: Gluon's parameters) are found
*by name* after tracing and read under that name at every run: a rebound global runs with
the new array, or traces again when its metadata changed; a captured array that shares
memory with an argument at a run makes that call eager; one found under no name makes the
signature eager; an argument that is also a captured array (``f(w)`` for ``x + w``) makes
that call eager and is traced again next time. Each of these, and every other eager or
op-by-op fallback, emits a :class:`HybridizeWarning` naming the reason, once per
signature; ``explain`` says it too.

**Fallbacks stay exact.** A graph that differs from the eager results with its claimed
subgraphs runs op by op; one that differs even so (or could not be recorded) is not used:
the signature runs ``fn`` eagerly, and ``explain`` says why. The graph *ends*, and the
signature runs eagerly, when ``fn`` reads data on the host (``float(x)``, ``asnumpy``,
``repr``, ``bool(x)``...) or issues an op whose output shape depends on the data
(``nonzero``, ``unique_*``, boolean masks, ``repeat`` with array counts): what follows
may depend on the values. Errors keep the op and the user's ``file:line``: each node runs
through a trampoline carrying the line of ``fn`` that issued it, so the engine's and the
device queues' error notes, and tracebacks, point there; a note names the call of the
hybridized function too.

**Autograd.** Hybridized functions are differentiable, as Gluon's are: inside
``nda.autograd.record()`` the graph runs op by op through the recording versions of the
ops (no fusion), so every op's VJP applies. Tracing inside ``record()`` records too. A
function that enters ``record()`` itself is not hybridized (it runs eagerly).

In-place writes into captured arrays or into the arguments happen at every run, in
program order.

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

import functools
import struct
import warnings
from typing import Any, Callable

import numpy as np

from .._array import NDArray
from ..autograd._graph import FLAGS as _AUTOGRAD
from .. import _forksafe
from . import _graph, _trace
from ._captured import ALIASED, AMBIGUOUS, alias_pattern, captured_now, locate

__all__ = ["hybridize", "HybridFunction", "HybridizeWarning"]


class HybridizeWarning(UserWarning):
    """A hybridized function runs eagerly, or op by op, for a signature (the message says why)."""


_UNHASHABLE = object()
_PACK = struct.Struct("<d").pack  # a float's bit pattern, for the signature keys


#: Signatures a hybridized function keeps (the oldest is forgotten beyond; ``max_signatures=``).
MAX_SIGNATURES = 128


class _Entry:
    """What one signature runs: an :class:`~._graph.Executable`, or ``fn`` eagerly (``reason``).

    ``captured``: per captured array, ``(slot, path, metadata)``: where ``fn`` finds it (read
    again at every run) and the shape/dtype/device/layout the graph was recorded for.
    """

    __slots__ = ("executable", "reason", "check", "inputs", "captured", "aliases")

    def __init__(self, executable: Any, reason: str | None, check: str, inputs: int) -> None:
        self.executable, self.reason, self.check, self.inputs = executable, reason, check, inputs
        self.captured: list[tuple[int, Any, Any]] = []
        self.aliases: tuple[int, ...] = ()


class HybridFunction:
    """A function wrapped by :func:`hybridize` (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], partition: bool = True, max_signatures: int = MAX_SIGNATURES) -> None:
        if not callable(fn):
            raise TypeError(f"hybridize() records a function; got {fn!r} (a {type(fn).__name__}), which is not callable")
        if isinstance(max_signatures, bool) or not isinstance(max_signatures, int):
            raise TypeError(f"hybridize(max_signatures=...) must be an int, got {max_signatures!r}")
        if max_signatures < 1:
            raise ValueError(f"hybridize(max_signatures=...) must be at least 1, got {max_signatures}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.partition = partition
        self.max_signatures = max_signatures
        self._cache: dict[Any, _Entry] = {}
        self._lock = _forksafe.lock()
        self._evicted = False

    # ------------------------------------------------------------------ calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _trace.tracing_now():  # inside another hybridized function's trace: inline
            return self.fn(*args, **kwargs)
        arrays: list[NDArray] = []
        key = _signature(args, kwargs, arrays)
        if key is _UNHASHABLE:
            return self.fn(*args, **kwargs)
        entry = self._cache.get(key)
        if entry is None:
            return self._first_call(key, args, kwargs, arrays)[0]
        if entry.executable is None:
            return self.fn(*args, **kwargs)
        externals = None
        if entry.captured:
            externals = captured_now(entry, args, kwargs, arrays)
            if externals is None:  # a captured name now holds an array of other metadata: record again
                with self._lock:
                    if self._cache.get(key) is entry:
                        del self._cache[key]
                return self._first_call(key, args, kwargs, arrays)[0]
            if externals is ALIASED:  # a captured array now shares memory with an argument: the graph assumed not
                return self.fn(*args, **kwargs)
        unfused = _AUTOGRAD.recording  # recorded op by op: differentiable
        return entry.executable.run(arrays, unfused=unfused, externals=externals)

    def _first_call(self, key: Any, args: Any, kwargs: Any, arrays: list[NDArray]) -> tuple[Any, _Entry]:
        graph = _graph.Graph()
        for a in arrays:
            graph.add_input(a)
        with _trace.tracing(graph):
            result = self.fn(*args, **kwargs)
        caller = "{}:{}".format(*_trace.user_site())
        entry = self._build(graph, result, args, kwargs, arrays, caller)
        keep = not entry.reason or not entry.reason.startswith(AMBIGUOUS)
        if entry.reason is not None:
            warnings.warn(HybridizeWarning(f"{getattr(self.fn, '__qualname__', self.fn)} (called at {caller}) runs eagerly for this "
                                           f"signature: {entry.reason[len('eager: '):] if entry.reason.startswith('eager: ') else entry.reason}"),
                          stacklevel=3)
        elif entry.executable is not None and not entry.executable.groups and any("op by op" in n for n in getattr(entry.executable, "notes", [])):
            warnings.warn(HybridizeWarning(f"{getattr(self.fn, '__qualname__', self.fn)} (called at {caller}) runs op by op for this "
                                           f"signature: {entry.executable.notes[-1]}"), stacklevel=3)  # type: ignore[attr-defined]
        if keep:
            with self._lock:
                self._cache.setdefault(key, entry)
                while len(self._cache) > self.max_signatures:
                    del self._cache[next(iter(self._cache))]  # the oldest signature
                    if not self._evicted:
                        self._evicted = True
                        warnings.warn(HybridizeWarning(f"{getattr(self.fn, '__qualname__', self.fn)}: more than {self.max_signatures} signatures; "
                                                       "the oldest are forgotten (each new one is traced again)"), stacklevel=3)
        return result, entry

    def _build(self, graph: _graph.Graph, result: Any, args: Any, kwargs: Any, arrays: list[NDArray], caller: str) -> _Entry:
        if graph.ended is not None:
            graph.release()
            return _Entry(None, f"eager: the graph ended at {graph.ended}", "", len(arrays))
        graph.out_tree = graph.output(result)
        located = locate(self.fn, graph, args, kwargs)
        if isinstance(located, str):
            graph.release()
            return _Entry(None, located, "", len(arrays))
        external_reads = _slots_of(graph.out_tree)
        order, groups, notes = _graph.partition(graph, external_reads, enabled=self.partition)
        executable = _graph.Executable(graph, order, groups, caller)
        executable.notes = notes  # type: ignore[attr-defined]
        eager = _host_leaves(result)  # before the replays (a result may be an array the function writes)
        written = [(base, snap, _copy(base)) for base, snap in graph.snapshots.values()]  # (storage, before, after the eager run)
        check = self._check(executable, graph, eager, arrays, groups, written)
        if check.startswith("differs") and groups:
            plain = _graph.Executable(graph, list(graph.nodes), [], caller)
            plain.notes = notes + [f"the claimed subgraphs gave results that {check}; the graph runs op by op"]  # type: ignore[attr-defined]
            check2 = self._check(plain, graph, eager, arrays, [], written)
            executable, check = plain, check2
        if check.startswith("differs"):
            _restore(written, after=True)  # the arrays the function wrote hold what the eager run wrote
        entry = _Entry(None, f"eager: re-running the recorded graph {check}", check, len(arrays)) if check.startswith("differs") \
            else _Entry(executable, None, check, len(arrays))
        entry.captured = [(slot, path, (graph.arrays[slot]._meta, graph.arrays[slot]._shape)) for slot, path in located]
        entry.aliases = alias_pattern(arrays + [graph.arrays[slot] for slot, _ in located])
        graph.release()
        return entry

    def _check(self, executable: Any, graph: _graph.Graph, eager: list[Any], arrays: list[NDArray], groups: list[Any],
               written: list[tuple[NDArray, NDArray, NDArray]]) -> str:
        """Replay ``executable`` from the state before the eager run and compare results and writes with it."""
        from .. import autograd

        try:
            with autograd.pause():
                _restore(written, after=False)  # the storages the function writes, as they were before the eager run
                replayed = executable.run(arrays)
        except Exception as err:  # noqa: BLE001 - the graph cannot run: not used
            return f"differs: it raised {type(err).__name__}: {err}"
        exact = all(g.compiled.exact for g in groups)
        found = _compare(eager, _host_leaves(replayed), exact)
        if not found.startswith("differs") and written:
            wrote = _compare([after.asnumpy() for _, _, after in written], [base.asnumpy() for base, _, _ in written], True)
            if wrote.startswith("differs"):
                return "differs: the arrays it writes in place hold other values than after the eager run"
        return found

    # ------------------------------------------------------------------ introspection
    def explain(self, *args: Any, **kwargs: Any) -> Explanation:
        """The graph recorded for these arguments' signature and its partition (traces on first use)."""
        arrays: list[NDArray] = []
        key = _signature(args, kwargs, arrays)
        if key is _UNHASHABLE:
            return Explanation(self, None, "eager: an argument that is neither an array nor hashable")
        entry = self._cache.get(key)
        if entry is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", HybridizeWarning)  # explain says it
                entry = self._first_call(key, args, kwargs, arrays)[1]
        return Explanation(self, entry, entry.reason)

    __nda_explain__ = explain

    def clear(self) -> None:
        """Forget every recorded graph (the next call of each signature traces again)."""
        with self._lock:
            self._cache.clear()

    @property
    def signatures(self) -> int:
        return len(self._cache)

    def __get__(self, instance: Any, owner: Any = None) -> Any:  # a method: bind like a function
        if instance is None:
            return self
        return functools.partial(self, instance)

    def __repr__(self) -> str:
        return f"<hybridized {getattr(self.fn, '__qualname__', self.fn)}: {len(self._cache)} signature(s)>"


def hybridize(fn: Callable[..., Any] | None = None, *, partition: bool = True, max_signatures: int = MAX_SIGNATURES) -> Any:
    """Decorator: run ``fn`` as a recorded graph per input signature (see :mod:`nda.hybrid`).

    ``partition=False`` keeps every node op by op (no backend claims subgraphs);
    ``max_signatures`` bounds the graphs kept (the oldest signature is forgotten beyond).
    """
    if fn is None:
        return lambda f: HybridFunction(f, partition, max_signatures)
    return HybridFunction(fn, partition, max_signatures)


# ---------------------------------------------------------------------------- helpers

def _signature(args: tuple[Any, ...], kwargs: dict[str, Any], arrays: list[NDArray]) -> Any:
    parts: list[Any] = []
    bases: list[NDArray] = []

    def walk(value: Any) -> Any:
        cls = value.__class__
        if cls is NDArray:
            for i, a in enumerate(arrays):
                if a is value:
                    return ("same", i)
            base = value._base if value._base is not None else value
            arrays.append(value)
            for i, b in enumerate(bases):
                if b is base:  # a view of (or the base of) an earlier argument: they share memory
                    bases.append(base)
                    return (value._meta, value._shape, "shares memory with", i)
            bases.append(base)
            return (value._meta, value._shape)
        if cls is tuple or cls is list:
            return (cls, tuple(walk(v) for v in value))
        if cls is dict:
            return (dict, tuple((k, walk(v)) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))))
        if cls is float:
            return (float, _PACK(value))  # by bit pattern: -0.0 and 0.0 differ, and nan and -nan
        if cls is complex:
            return (complex, _PACK(value.real), _PACK(value.imag))
        if isinstance(value, np.generic) and value.dtype.kind in "fc":
            return (cls, value.tobytes())  # NumPy floating scalars: by type and bit pattern
        try:
            hash(value)
        except TypeError:
            raise _Unhashable() from None
        return (cls, value)

    try:
        for a in args:
            parts.append(walk(a))
        for k in sorted(kwargs):
            parts.append((k, walk(kwargs[k])))
    except _Unhashable:
        return _UNHASHABLE
    return tuple(parts)


class _Unhashable(Exception):
    pass


def _restore(written: list[tuple[NDArray, NDArray, NDArray]], after: bool) -> None:
    from .. import _api

    for base, before, later in written:
        _api._copy_into(later if after else before, base)


def _host_leaves(value: Any) -> list[Any]:
    out: list[Any] = []
    _leaves(value, out)
    return [np.array(v.asnumpy(), copy=True) if v.__class__ is NDArray else v for v in out]


def _slots_of(template: Any) -> set[int]:
    found: set[int] = set()

    def walk(v: Any) -> None:
        if v.__class__ is _graph.Slot:
            found.add(v.index)
        elif isinstance(v, (tuple, list)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    walk(template)
    return found


def _copy(a: NDArray) -> NDArray:
    from .. import _api

    return _api.copy(a)  # type: ignore[no-any-return]


def _leaves(value: Any, out: list[Any]) -> None:
    if isinstance(value, (tuple, list)):
        for v in value:
            _leaves(v, out)
    elif isinstance(value, dict):
        for k in sorted(value, key=repr):
            _leaves(value[k], out)
    else:
        out.append(value)


def _compare(a: list[Any], b: list[Any], exact: bool) -> str:
    """Compare result leaves on the host (arrays as NumPy copies, see :func:`_host_leaves`)."""
    if len(a) != len(b):
        return f"differs: {len(b)} results instead of {len(a)}"
    worst = 0.0
    for i, (hx, hy) in enumerate(zip(a, b)):
        if hx.__class__ is not np.ndarray:
            if hy.__class__ is np.ndarray or not (hx is hy or hx == hy):
                return f"differs: result {i} is {hy!r} instead of {hx!r}"
            continue
        if hy.__class__ is not np.ndarray or (hx.shape, hx.dtype) != (hy.shape, hy.dtype):
            return f"differs: result {i} has other metadata"
        if exact or hx.dtype.kind not in "fc":
            same = np.array_equal(hx, hy, equal_nan=hx.dtype.kind in "fc")
            if same and hx.dtype.kind in "fc":
                same = bool(np.array_equal(np.signbit(hx.real), np.signbit(hy.real)))
            if not same:
                return f"differs: result {i} is not equal to the eager one"
            continue
        eps = float(np.finfo(hx.dtype).eps)
        finite = np.isfinite(hx)
        if not np.array_equal(finite, np.isfinite(hy)) or not np.array_equal(hx[~finite], hy[~finite], equal_nan=True):
            return f"differs: result {i} has infinities or NaNs elsewhere"
        if finite.any():
            scale = float(np.max(np.abs(hx[finite])))
            diff = float(np.max(np.abs(hx[finite] - hy[finite])))
            tol = 64 * eps * max(scale, float(np.finfo(hx.dtype).tiny))
            if diff > tol:
                return f"differs: result {i} is off by {diff:.3g} (tolerance {tol:.3g})"
            worst = max(worst, diff / max(scale, float(np.finfo(hx.dtype).tiny)) / eps)
    return "same as eager (bit for bit)" if exact else f"same as eager within {worst:.1f} ulp of the largest result"


class Explanation:
    """What :meth:`HybridFunction.explain` found (``str()`` for people)."""

    def __init__(self, function: HybridFunction, entry: _Entry | None, reason: str | None) -> None:
        self.function = function
        self.entry = entry
        self.reason = reason
        executable = entry.executable if entry is not None else None
        self.groups = list(executable.groups) if executable is not None else []
        self.nodes = list(executable.graph.nodes) if executable is not None else []

    @property
    def fused(self) -> list[list[str]]:
        """The ops of each claimed subgraph."""
        return [[n.op for n in g.nodes] for g in self.groups]

    def __str__(self) -> str:
        name = getattr(self.function.fn, "__qualname__", repr(self.function.fn))
        lines = [f"hybridized: {name}"]
        entry = self.entry
        if entry is None or entry.executable is None:
            lines.append(f"runs:    {self.reason}")
            return "\n".join(lines)
        ex = entry.executable
        lines.append(f"graph:   {len(self.nodes)} ops recorded, {len(self.groups)} claimed subgraph(s); check on the first call: {entry.check}")
        for unit in ex.order:
            if isinstance(unit, _graph.Group):
                lines.append(f"fused:   {unit.name} on {unit.device} by {unit.partitioner} ({unit.compiled.name})")
                lines.append(f"         ops at {', '.join(n.where.rsplit('/', 1)[-1] for n in unit.nodes)}")
                ins = ", ".join(f"{d.name}{tuple(s)}" for d, s in unit.program.inputs)
                lines.append(f"         borders: reads {ins or 'nothing'}; writes {len(unit.outputs)} result(s) {unit.program.shape}; "
                             f"casts to the key dtype inside the kernel")
                lines.append(f"         source: {unit.compiled.source}")
            else:
                where = unit.where.rsplit("/", 1)[-1]
                lines.append(f"op:      {unit.op} at {where} (op by op)")
        for note in getattr(ex, "notes", []):
            lines.append(f"note:    {note}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<hybridize explanation: {len(self.nodes)} ops, {len(self.groups)} fused>"
