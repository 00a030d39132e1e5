"""``nda.hybridize(fn)``: record the ops a function issues, check the graph, then run it, guarded.

Gluon's ``hybridize()`` for functions, with MXNet's subgraph API for the backends and
torch.compile's rule that a graph never outlives the Python values it was traced with::

    @nda.hybridize
    def gelu(x):
        return 0.5 * x * (1.0 + nda.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    y = gelu(x)                  # first call for x's metadata: traced, checked, then the graph
    y = gelu(x2)                 # same shape/dtype/device/layout: the function's Python is checked, the graph runs
    print(nda.dispatch.explain(gelu, x))   # the graph, its guards and how the backends partitioned it

**Per input metadata.** A call's *signature* is the metadata of its array arguments
(shape, dtype, device, layout, which arguments are the same array and which share memory,
views included) and the values of its other arguments, which must be hashable (floating
scalars count by type and bit pattern, so ``-0.0`` is not ``0.0``). A function keeps at most
``max_signatures`` signatures (128; the oldest is forgotten). The first call with a
signature runs ``fn`` eagerly while recording every op it issues (:mod:`._trace`); its
results are the eager ones. The graph is then partitioned (each device's backend claims
subgraphs through its ``partitioner``, backend API 1.4, :mod:`nda.backends.fusion`), run
once more from the state before the eager run (the storages ``fn`` writes in place are
copied before their first write and put back) and compared with the eager results and
writes (exactly, or within rounding for a claimed subgraph whose compiler says it is not
exact).

**Never another result than eager: guards.** A graph depends on Python values the trace
read: a global ``lr``, a dict item, a slice bound, an attribute of an argument, a closure
cell, a NumPy array converted inside, and the ``if`` that picked the ops. So a later call
runs ``fn``'s Python again, in *check mode* (:mod:`._check`): every op call it makes is
compared with the recorded graph (the op; its Python arguments by value, :mod:`._guards`;
which arrays it takes) instead of being executed, and gets placeholder results. When the
function returns having issued exactly the recorded calls, the graph runs on the arrays this
call used (claimed subgraphs as one kernel each, every other node through the op's public
function: planning, dispatch, the engine, device queues) and the placeholders the function
kept receive their arrays. At the first difference (a guard fails: another value, another
op, another array, a host read, an exception) the ops matched so far run op by op and the
rest of the call runs eagerly: its result is eager's. Where the difference is in the op
calls, that call is recorded as it runs (the ops matched so far under the tracer too), and
its graph, once checked, is kept next to the others (up to :data:`MAX_GRAPHS` per signature,
most recent first; a call is checked against all of them at once), so a value that flips
between two settings runs as a graph either way. Past that the signature runs eagerly, with
a :class:`HybridizeWarning`. Arrays the function takes from outside (globals, closures,
attributes: Gluon's parameters) are whatever the function reads at each call, with the
recorded metadata and aliasing. Python side effects of ``fn`` (appending to a list,
printing) happen at every call, as eagerly.

**Random numbers** run in the graph: a random op's place in its generator's stream is not a
guard but taken from each call, so the generator advances exactly as eagerly and the same
seed gives eager's bits.

**Fallbacks stay exact.** A graph that differs from the eager results with its claimed
subgraphs runs op by op; one that differs even so (or could not be recorded) is not used:
the signature runs ``fn`` eagerly, and ``explain`` says why. The graph *ends*, and the
signature runs eagerly, when ``fn`` reads data on the host (``float(x)``, ``asnumpy``,
``repr``, ``bool(x)``...), issues an op whose output shape depends on the data
(``nonzero``, ``unique_*``, boolean masks, ``repeat`` with array counts), or passes an op a
Python value that cannot be compared between calls (:class:`._guards.Uncomparable`). Errors
keep the op and the user's ``file:line``: each node runs through a trampoline carrying the
line of ``fn`` that issued it, so the engine's and the device queues' error notes, and
tracebacks, point there; a note names the call of the hybridized function too.

**Autograd.** Hybridized functions are differentiable: inside ``nda.autograd.record()`` the
function runs eagerly (recorded op by op, so every op's VJP applies).

In-place writes into arrays from outside or into the arguments happen at every run, in
program order.

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

import functools
import struct
import warnings
from typing import Any, Callable

import numpy as np

from .. import _intercept
from .._array import NDArray
from ..autograd._graph import FLAGS as _AUTOGRAD
from .. import _forksafe
from . import _executable, _graph, _trace
from ._check import Checker, Variant
from ._explain import Explanation

__all__ = ["hybridize", "HybridFunction", "HybridizeWarning", "Explanation"]


class HybridizeWarning(UserWarning):
    """A hybridized function runs eagerly, or op by op, for a signature (the message says why)."""


_UNHASHABLE = object()
_PACK = struct.Struct("<d").pack  # a float's bit pattern, for the signature keys


#: Signatures a hybridized function keeps (the oldest is forgotten beyond; ``max_signatures=``).
MAX_SIGNATURES = 128
#: Graphs a signature keeps for Python values that changed (torch.compile's cache limit is 8
#: too); one more failed guard and the signature runs eagerly.
MAX_GRAPHS = 8


class _Entry:
    """What one signature runs: its graphs (most recent first), or ``fn`` eagerly (``reason``)."""

    __slots__ = ("variants", "reason", "check", "inputs", "failure", "stats", "shared", "retraced")

    def __init__(self, inputs: int) -> None:
        self.variants: list[Variant] = []
        self.reason: str | None = None
        self.check = ""  # the last trace's first-call check
        self.inputs = inputs
        self.failure: str | None = None  # the last failed guard, and what it did
        self.stats = {"traces": 0, "graph": 0, "op by op": 0, "eager": 0, "guard failures": 0}
        self.shared: str | None = None  # why calls with arguments NumPy shares run eagerly (once said)
        self.retraced = 0  # failed guards whose recording gave no new graph (the same one, or none)

    @property
    def executable(self) -> Any:
        return self.variants[0].executable if self.variants and self.reason is None else None


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
        if _AUTOGRAD.recording or _trace.tracing_now():  # recorded op by op; or inside another's trace or check: inline
            return self.fn(*args, **kwargs)
        arrays: list[NDArray] = []
        key = _signature(args, kwargs, arrays)
        if key is _UNHASHABLE:
            return self.fn(*args, **kwargs)
        entry = self._cache.get(key)
        if entry is None:
            return self._trace(key, args, kwargs, arrays)[0]
        if entry.reason is not None:
            entry.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        if _graph.SHARED and any(_graph.shared(a) for a in arrays):
            self._shared(entry, arrays)
            return self.fn(*args, **kwargs)
        return self._checked(entry, args, kwargs, arrays)

    def _shared(self, entry: _Entry, arrays: list[NDArray]) -> None:
        """An argument's memory is NumPy's (or another library's) too: this call runs eagerly (said once)."""
        entry.stats["eager"] += 1
        which = next(i for i, a in enumerate(arrays) if _graph.shared(a))
        note = (
            f"array argument {which + 1} shares memory with NumPy or another library (nda.asarray of a NumPy array on "
            "cpu, np.asarray(x), DLPack): a graph cannot order the writes Python may make to that memory between its ops, "
            "so such calls run eagerly; pass a copy (nda.asarray(a, copy=True)) to run the graph"
        )
        if entry.shared is None:
            entry.shared = note
            name = getattr(self.fn, "__qualname__", self.fn)
            warnings.warn(HybridizeWarning(f"{name}: {note}"), stacklevel=3)

    def _checked(self, entry: _Entry, args: Any, kwargs: Any, arrays: list[NDArray]) -> Any:
        """Run ``fn``'s Python in check mode, then the graph it matched (see :mod:`._check`)."""
        checker = Checker(list(entry.variants), arrays)
        _intercept.push(checker)
        try:
            try:
                result = self.fn(*args, **kwargs)
            except BaseException:
                _intercept.pop(checker)
                checker.abandon()
                raise
            _intercept.pop(checker)
            checker.finish()
        finally:
            graph = checker.stop_tracing()
            self._after(entry, checker)
        if graph is not None:  # a guard failed and the rest of the call was recorded: a graph for these values
            self._keep(entry, graph, result, arrays, "{}:{}".format(*_trace.user_site()))
        return result

    def _after(self, entry: _Entry, checker: Checker) -> None:
        if checker.failure is None:
            entry.stats[checker.ran] += 1
            used = checker.alive[0].variant
            if entry.variants and entry.variants[0] is not used:
                with self._lock:
                    if used in entry.variants:
                        entry.variants.remove(used)
                        entry.variants.insert(0, used)
            return
        entry.stats["guard failures"] += 1
        entry.failure = f"{checker.failure}; that call ran its earlier ops op by op and the rest eagerly (eager's result)"

    def _trace(self, key: Any, args: Any, kwargs: Any, arrays: list[NDArray]) -> tuple[Any, _Entry]:
        """The first call of a signature: run ``fn`` eagerly while recording it; keep the graph if it checks out."""
        graph = _graph.Graph()
        for a in arrays:
            graph.add_input(a)
        with _trace.tracing(graph):
            result = self.fn(*args, **kwargs)
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                entry = self._cache[key] = _Entry(len(arrays))
                while len(self._cache) > self.max_signatures:
                    del self._cache[next(iter(self._cache))]  # the oldest signature
                    if not self._evicted:
                        self._evicted = True
                        warnings.warn(
                            HybridizeWarning(
                                f"{getattr(self.fn, '__qualname__', self.fn)}: more than {self.max_signatures} "
                                "signatures; the oldest are forgotten (each new one is traced again)"
                            ),
                            stacklevel=3,
                        )
        self._keep(entry, graph, result, arrays, "{}:{}".format(*_trace.user_site()))
        return result, entry

    def _keep(self, entry: _Entry, graph: _graph.Graph, result: Any, arrays: list[NDArray], caller: str) -> None:
        """Check a recorded call's graph and add it to the signature's graphs (or say why it cannot be one)."""
        variant, reason, check = self._build(graph, result, arrays, caller)
        name = getattr(self.fn, "__qualname__", self.fn)
        warn: str | None = None
        with self._lock:
            entry.stats["traces"] += 1
            entry.check = check
            if variant is not None:
                fingerprint = variant.fingerprint()
                before = len(entry.variants)
                entry.variants = [variant] + [v for v in entry.variants if v.fingerprint() != fingerprint]
                if len(entry.variants) <= before:
                    entry.retraced += 1  # the same graph again: the call differed in what a graph cannot hold (an op that raised)
                if entry.failure is not None and entry.stats["traces"] > 1:
                    entry.failure += "; it was traced as it ran: a graph for these values"
            elif not entry.variants:
                entry.reason = reason
                warn = reason
            else:  # a guard failed and this path cannot be a graph: the other graphs stay
                entry.retraced += 1
                entry.failure = f"{entry.failure}; traced as it ran, that path cannot be a graph ({reason})"
            if entry.variants and len(entry.variants) + entry.retraced > MAX_GRAPHS:
                entry.variants = []
                entry.reason = (
                    f"eager: its calls differed from its graphs {MAX_GRAPHS} times (Python values that change, "
                    f"or paths a graph cannot hold; the last failed guard: {entry.failure})"
                )
                warn = entry.reason
        if warn is not None:
            warnings.warn(
                HybridizeWarning(
                    f"{name} (called at {caller}) runs eagerly for this signature: {warn[len('eager: ') :] if warn.startswith('eager: ') else warn}"
                ),
                stacklevel=4,
            )
        elif variant is not None and not variant.executable.groups and any("op by op" in n for n in getattr(variant.executable, "notes", [])):
            warnings.warn(
                HybridizeWarning(f"{name} (called at {caller}) runs op by op for this signature: {variant.executable.notes[-1]}"), stacklevel=4
            )  # type: ignore[attr-defined]

    def _build(self, graph: _graph.Graph, result: Any, arrays: list[NDArray], caller: str) -> tuple[Variant | None, str | None, str]:
        """(the checked graph, None, its check) or (None, why the trace cannot run as a graph, its check)."""
        if graph.ended is not None:
            graph.release()
            return None, f"eager: the graph ended at {graph.ended}", ""
        held = graph.shared_memory()
        if held is not None:
            graph.release()
            return None, f"eager: {held}", ""
        graph.out_tree = graph.output(result)
        external_reads = _slots_of(graph.out_tree)
        order, groups, notes = _graph.partition(graph, external_reads, enabled=self.partition)
        executable = _executable.Executable(graph, order, groups, caller)
        executable.notes = notes  # type: ignore[attr-defined]
        eager = _host_leaves(result)  # before the replays (a result may be an array the function writes)
        written = [(base, snap, _copy(base)) for base, snap in graph.snapshots.values()]  # (storage, before, after the eager run)
        check = self._check(executable, eager, arrays, groups, written)
        if check.startswith("differs") and groups:
            plain = _executable.Executable(graph, list(graph.nodes), [], caller)
            plain.notes = notes + [f"the claimed subgraphs gave results that {check}; the graph runs op by op"]  # type: ignore[attr-defined]
            executable, check = plain, self._check(plain, eager, arrays, [], written)
        if check.startswith("differs"):
            _restore(written, after=True)  # the arrays the function wrote hold what the eager run wrote
            graph.release()
            return None, f"eager: re-running the recorded graph {check}", check
        graph.release()
        return Variant(executable, check), None, check

    def _check(
        self, executable: Any, eager: list[Any], arrays: list[NDArray], groups: list[Any], written: list[tuple[NDArray, NDArray, NDArray]]
    ) -> str:
        """Replay ``executable`` from the state before the eager run and compare results and writes with it."""
        from .. import autograd

        try:
            # The eager run has just warned (or raised) for these values; the replay must not
            # warn again: NumPy's error state ignores every category while it is issued and run.
            with autograd.pause(), np.errstate(all="ignore"):
                _restore(written, after=False)  # the storages the function writes, as they were before the eager run
                replayed = executable.run(arrays)  # (work left pending runs under the state it was issued in)
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
        """The graphs recorded for these arguments' signature, their guards and partition (traces on first use)."""
        arrays: list[NDArray] = []
        key = _signature(args, kwargs, arrays)
        if key is _UNHASHABLE:
            return Explanation(self, None, "eager: an argument that is neither an array nor hashable")
        entry = self._cache.get(key)
        if entry is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", HybridizeWarning)  # explain says it
                entry = self._trace(key, args, kwargs, arrays)[1]
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
    """Decorator: run ``fn`` as a recorded graph per input signature, guarded (see :mod:`nda.hybrid`).

    ``partition=False`` keeps every node op by op (no backend claims subgraphs);
    ``max_signatures`` bounds the signatures kept (the oldest is forgotten beyond).
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
