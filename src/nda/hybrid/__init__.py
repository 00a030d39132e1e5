"""``nda.hybridize(fn)``: record the ops a function issues once, check the graph, then run the graph.

Gluon's ``hybridize()`` for functions, with MXNet's subgraph API for the backends::

    @nda.hybridize
    def gelu(x):
        return 0.5 * x * (1.0 + nda.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    y = gelu(x)                  # first call for x's metadata: traced, checked, then the graph
    y = gelu(x2)                 # same shape/dtype/device/layout: runs the graph
    print(nda.dispatch.explain(gelu, x))   # the graph and how the backends partitioned it

**Per input metadata.** A call's *signature* is the metadata of its array arguments
(shape, dtype, device, layout, and which arguments are the same array) and the values of
its other arguments, which must be hashable (they are constants of the graph, like
Gluon's non-array arguments). The first call with a signature runs ``fn`` eagerly while
recording every op it issues (:mod:`._trace`); its results are the eager ones. The graph
is then partitioned (each device's backend claims subgraphs through its ``partitioner``,
backend API 1.4, :mod:`nda.backends.fusion`), run once more on the same inputs and
compared with the eager results (exactly, or within rounding for a claimed subgraph whose
compiler says it is not exact). Later calls with that signature run the graph: claimed
subgraphs as one kernel each, every other node op by op through the op's public function
(planning, dispatch, the engine, device queues: what the eager call does).

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

Arrays the function uses without receiving them (closures, globals) are read at every
run as they are then (Gluon's parameters), and in-place writes into them or into the
arguments happen at every run, in program order.

Layer: arrays and front end (README, "Architecture").
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import numpy as np

from .._array import NDArray
from ..autograd._graph import FLAGS as _AUTOGRAD
from . import _graph, _trace

__all__ = ["hybridize", "HybridFunction", "HybridizeWarning"]


class HybridizeWarning(UserWarning):
    """A hybridized function runs eagerly, or op by op, for a signature (the message says why)."""


_UNHASHABLE = object()


class _Entry:
    """What one signature runs: an :class:`~._graph.Executable`, or ``fn`` eagerly (``reason``)."""

    __slots__ = ("executable", "reason", "check", "inputs")

    def __init__(self, executable: Any, reason: str | None, check: str, inputs: int) -> None:
        self.executable, self.reason, self.check, self.inputs = executable, reason, check, inputs


class HybridFunction:
    """A function wrapped by :func:`hybridize` (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], partition: bool = True) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.partition = partition
        self._cache: dict[Any, _Entry] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _trace.STATE.graph is not None:  # inside another hybridized function's trace: inline
            return self.fn(*args, **kwargs)
        arrays: list[NDArray] = []
        key = _signature(args, kwargs, arrays)
        if key is _UNHASHABLE:
            return self.fn(*args, **kwargs)
        entry = self._cache.get(key)
        if entry is None:
            return self._first_call(key, args, kwargs, arrays)
        if entry.executable is None:
            return self.fn(*args, **kwargs)
        unfused = _AUTOGRAD.recording  # recorded op by op: differentiable
        return entry.executable.run(arrays, unfused=unfused)

    def _first_call(self, key: Any, args: Any, kwargs: Any, arrays: list[NDArray]) -> Any:
        graph = _graph.Graph()
        for a in arrays:
            graph.add_input(a)
        tracer = _trace.tracing(graph)
        with tracer:
            result = self.fn(*args, **kwargs)
        if not tracer.intact:
            graph.end("the function entered autograd.record() while it was being recorded")
        caller = "{}:{}".format(*_trace.user_site())
        entry = self._build(graph, result, arrays, caller)
        with self._lock:
            self._cache.setdefault(key, entry)
        return result

    def _build(self, graph: _graph.Graph, result: Any, arrays: list[NDArray], caller: str) -> _Entry:
        if graph.ended is not None:
            graph.release()
            return _Entry(None, f"eager: the graph ended at {graph.ended}", "", len(arrays))
        graph.out_tree = graph.output(result)
        external_reads = _slots_of(graph.out_tree)
        order, groups, notes = _graph.partition(graph, external_reads, enabled=self.partition)
        executable = _graph.Executable(graph, order, groups, caller)
        executable.notes = notes  # type: ignore[attr-defined]
        check = self._check(executable, graph, result, arrays, groups)
        if check.startswith("differs") and groups:
            plain = _graph.Executable(graph, list(graph.nodes), [], caller)
            plain.notes = notes + [f"the claimed subgraphs gave results that {check}; the graph runs op by op"]  # type: ignore[attr-defined]
            check2 = self._check(plain, graph, result, arrays, [])
            executable, check = plain, check2
        graph.release()
        if check.startswith("differs"):
            return _Entry(None, f"eager: re-running the recorded graph {check}", check, len(arrays))
        return _Entry(executable, None, check, len(arrays))

    def _check(self, executable: Any, graph: _graph.Graph, result: Any, arrays: list[NDArray], groups: list[Any]) -> str:
        """Run ``executable`` on the first call's inputs and compare with the eager ``result``."""
        from .. import autograd

        mutated = {graph.storage[s] for n in graph.nodes for s in n.writes}
        inputs = [a if graph.storage[i] not in mutated else _copy(a) for i, a in enumerate(arrays)]
        saved = {}
        for slot, kind in enumerate(graph.kinds):
            if kind == "external" and graph.storage[slot] in mutated:
                saved[slot] = graph.arrays[slot]
                graph.arrays[slot] = _copy(graph.arrays[slot])
        try:
            with autograd.pause():
                replayed = executable.run(inputs)
        except Exception as err:  # noqa: BLE001 - the graph cannot run: not used
            return f"differs: it raised {type(err).__name__}: {err}"
        finally:
            for slot, array in saved.items():
                graph.arrays[slot] = array
        exact = all(g.compiled.exact for g in groups)
        return _compare(result, replayed, exact)

    # ------------------------------------------------------------------ introspection
    def explain(self, *args: Any, **kwargs: Any) -> Explanation:
        """The graph recorded for these arguments' signature and its partition (traces on first use)."""
        arrays: list[NDArray] = []
        key = _signature(args, kwargs, arrays)
        if key is _UNHASHABLE:
            return Explanation(self, None, "eager: an argument that is neither an array nor hashable")
        if key not in self._cache:
            self(*args, **kwargs)
        entry = self._cache[key]
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


def hybridize(fn: Callable[..., Any] | None = None, *, partition: bool = True) -> Any:
    """Decorator: run ``fn`` as a recorded graph per input signature (see :mod:`nda.hybrid`).

    ``partition=False`` keeps every node op by op (no backend claims subgraphs).
    """
    if fn is None:
        return lambda f: HybridFunction(f, partition)
    return HybridFunction(fn, partition)


# ---------------------------------------------------------------------------- helpers

def _signature(args: tuple[Any, ...], kwargs: dict[str, Any], arrays: list[NDArray]) -> Any:
    parts: list[Any] = []

    def walk(value: Any) -> Any:
        cls = value.__class__
        if cls is NDArray:
            for i, a in enumerate(arrays):
                if a is value:
                    return ("same", i)
            arrays.append(value)
            return (value._meta, value._shape)
        if cls is tuple or cls is list:
            return (cls, tuple(walk(v) for v in value))
        if cls is dict:
            return (dict, tuple((k, walk(v)) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))))
        if cls is float:
            return (float, value.hex())
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


def _compare(eager: Any, replayed: Any, exact: bool) -> str:
    a: list[Any] = []
    b: list[Any] = []
    _leaves(eager, a)
    _leaves(replayed, b)
    if len(a) != len(b):
        return f"differs: {len(b)} results instead of {len(a)}"
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, b)):
        if x.__class__ is not NDArray:
            if y.__class__ is NDArray or not (x is y or x == y):
                return f"differs: result {i} is {y!r} instead of {x!r}"
            continue
        if y.__class__ is not NDArray or (x.shape, x.dtype, x.device, x.layout) != (y.shape, y.dtype, y.device, y.layout):
            return f"differs: result {i} has other metadata"
        hx, hy = x.asnumpy(), y.asnumpy()
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
