"""The recorded graph: which arrays need gradients, the nodes of recorded calls, versions.

Nothing here lives on NDArray itself (no slot, so arrays and the hot path pay nothing):

* ``ENTRIES`` maps ``id(array)`` to an :class:`Entry` for every array that needs a
  gradient: a leaf (``attach_grad``: its gradient buffer and ``grad_req``) or an output of
  a recorded call (its :class:`Node` and output index). A weak reference with a callback
  removes the entry when the array dies, so ids are never reused while listed.
* A :class:`Node` is one recorded call: the op, the call's arguments (strong references:
  the VJP needs them), weak references to its outputs (a node never keeps its own outputs
  alive, so a graph dies with the last array that can reach it) and its edges, one per
  argument that needs a gradient, each holding the producer's :class:`Entry`. Edges are
  fixed when the call is recorded, so later changes of an array's entry
  (``attach_grad`` on an intermediate) do not rewire earlier calls.
* ``VERSIONS`` counts in-place writes per storage (an array's base): a node remembers the
  version of every array it saved, and backward refuses to use an array written in place
  since (PyTorch's rule), naming the write. The counters are only bumped while a graph
  is alive (``nda.autograd._record`` installs its write hook then).
* NumPy writes into memory an array shares with NumPy (``nda.asarray(buf)`` on cpu,
  ``nda.engine.share``) reach no hook: a node saves a snapshot of such an argument instead
  (:data:`SNAPSHOT`), so its gradient uses the values the call read.

Layer: autograd (README, "Architecture").
"""

from __future__ import annotations

import itertools
import sys
import threading
import weakref
from typing import Any

from .._array import NDArray

__all__ = ["AutogradError", "FLAGS", "ThreadFlags", "ENTRIES", "Entry", "Node", "Op", "LIVE", "entry_of", "requires_grad", "record_call", "bump"]


class AutogradError(RuntimeError):
    """A gradient cannot be computed as asked (see the message for why and what to do)."""


class ThreadFlags:
    """One thread's autograd state. A recording scope keeps the object of the thread that
    entered it, so that leaving the scope on another thread (a generator holding ``record()``
    closed by a worker) restores the entering thread's state, not the leaving thread's."""

    __slots__ = ("recording", "scopes", "internal", "stack")

    def __init__(self) -> None:
        self.recording = False  # this thread records the calls it makes
        self.scopes = 0  # recording scopes this thread is in (its recorder is installed while > 0)
        self.internal = 0  # > 0 while autograd itself calls ops (never recorded, writes not checked)
        self.stack: Any = None  # the thread's interceptor stack while its recorder is on it


class _Flags(threading.local):
    def __init__(self) -> None:
        self.t = ThreadFlags()

    @property
    def recording(self) -> bool:
        return self.t.recording

    @recording.setter
    def recording(self, value: bool) -> None:
        self.t.recording = value

    @property
    def internal(self) -> int:
        return self.t.internal

    @internal.setter
    def internal(self, value: int) -> None:
        self.t.internal = value


FLAGS = _Flags()
ENTRIES: dict[int, Entry] = {}
VERSIONS: dict[int, list[Any]] = {}  # id(base) -> [writes, weakref(base), what wrote last]
LIVE: weakref.WeakSet[Node] = weakref.WeakSet()  # nodes still holding saved arrays
_SEQ = itertools.count()
_FLOATING = ("real floating", "complex floating")


class _Ref(weakref.ref):  # type: ignore[type-arg]
    __slots__ = ("key",)


def _forget_entry(ref: _Ref) -> None:
    entry = ENTRIES.get(ref.key)
    if entry is not None and entry.ref is ref:
        del ENTRIES[ref.key]


def _forget_version(ref: _Ref) -> None:
    found = VERSIONS.get(ref.key)
    if found is not None and found[1] is ref:
        del VERSIONS[ref.key]


class Op:
    """What autograd needs of an op: name, VJP, parameter positions, its public function."""

    __slots__ = ("name", "vjp", "params", "position", "function")

    def __init__(self, name: str, vjp: Any, params: tuple[str, ...], function: Any) -> None:
        self.name = name
        self.vjp = vjp
        self.params = params
        self.position = {p: i for i, p in enumerate(params)}
        self.function = function  # the public function, to recompute outputs that died (multi-output ops)


class Entry:
    """An array that needs a gradient: a leaf (``node is None``) or an output of ``node``."""

    __slots__ = ("ref", "node", "index", "grad", "req", "__weakref__")

    def __init__(self, array: NDArray, node: Node | None, index: int, req: str | None = None, grad: Any = None) -> None:
        ref = _Ref(array, _forget_entry)
        ref.key = id(array)
        self.ref = ref
        self.node = node
        self.index = index
        self.req = req
        self.grad = grad


class Node:
    """One recorded call (see the module docstring)."""

    __slots__ = ("op", "args", "kwargs", "edges", "outs", "multi", "versions", "seq", "freed", "__weakref__")

    def __init__(
        self, op: Op, args: tuple[Any, ...], kwargs: dict[str, Any], edges: tuple[Any, ...], outs: tuple[Any, ...], multi: bool, saved: list[NDArray]
    ) -> None:
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.edges = edges
        self.outs = tuple(weakref.ref(o) for o in outs)
        self.multi = multi
        self.versions = tuple(_version_of(a) for a in saved)
        self.seq = next(_SEQ)
        self.freed = False
        LIVE.add(self)

    def release(self) -> None:
        """Drop what the node saved (backward without ``retain_graph``)."""
        self.args = ()
        self.kwargs = {}
        self.versions = ()
        self.freed = True
        LIVE.discard(self)

    def check_versions(self) -> None:
        for counter, seen in self.versions:
            if counter[0] != seen:
                what = counter[2] or "an in-place write"
                raise AutogradError(
                    f"an array that {self.op.name}() saved for the gradient was modified in place ({what}) after the call was "
                    f"recorded, so its gradient would be wrong; write to a copy instead (y = x + 1 rather than x += 1), "
                    f"or make the write before recording"
                )


def _base(array: NDArray) -> NDArray:
    base = array._base
    return array if base is None else base


def _version_of(array: NDArray) -> tuple[list[Any], int]:
    base = _base(array)
    key = id(base)
    counter = VERSIONS.get(key)
    if counter is None:
        ref = _Ref(base, _forget_version)
        ref.key = key
        counter = VERSIONS.setdefault(key, [0, ref, None])  # atomic: two recording threads share one counter
    return counter, counter[0]


def bump(array: NDArray, what: str) -> None:
    """Count an in-place write to ``array``'s storage (if a recorded call saved it)."""
    counter = VERSIONS.get(id(_base(array)))
    if counter is not None:
        counter[0] += 1
        counter[2] = f"{what} at {_caller()}"


def _caller() -> str:
    """``file:line`` of the first frame outside nda (for messages)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "nda":
        frame = frame.f_back  # type: ignore[assignment]
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "<unknown>"


def entry_of(value: Any) -> Entry | None:
    """The entry of ``value`` if it is an array that needs a gradient."""
    if value.__class__ is not NDArray:
        return None
    entry = ENTRIES.get(id(value))
    if entry is None or (entry.node is None and entry.req is None):
        return None
    return entry


def requires_grad(value: Any) -> bool:
    return entry_of(value) is not None


def _is_floating(array: Any) -> bool:
    return array.__class__ is NDArray and array._meta.dtype.category in _FLOATING


#: Set by ``nda.autograd._record``: ``(args, kwargs, saved) -> (args, kwargs, saved)`` with the arrays
#: whose memory another library holds replaced by snapshots (None: no such array exists).
SNAPSHOT: list[Any] = [None]


def record_call(op: Op, args: tuple[Any, ...], kwargs: dict[str, Any] | None, out: Any) -> None:
    """Record ``out = op(*args, **kwargs)`` if an argument needs a gradient."""
    edges = []
    saved = []
    entries = ENTRIES
    for i, a in enumerate(args):
        cls = a.__class__
        if cls is NDArray:
            saved.append(a)
            entry = entries.get(id(a))
            if entry is not None and (entry.node is not None or entry.req is not None):
                edges.append((i, -1, entry))
        elif cls is tuple or cls is list:
            for j, b in enumerate(a):
                if b.__class__ is NDArray:
                    saved.append(b)
                    entry = entries.get(id(b))
                    if entry is not None and (entry.node is not None or entry.req is not None):
                        edges.append((i, j, entry))
    if kwargs:
        for name, a in kwargs.items():
            if a.__class__ is NDArray:
                saved.append(a)
                entry = entries.get(id(a))
                if entry is not None and (entry.node is not None or entry.req is not None):
                    edges.append((op.position[name], -1, entry))
    if not edges:
        return
    multi = isinstance(out, tuple)
    outs = tuple(out) if multi else (out,)
    # Integer and bool results carry no gradient; a result that is an argument itself
    # (``to_device`` to the device it is on) keeps its own history.
    fresh = [o for o in outs if _is_floating(o) and not any(o is a for a in saved)]
    if not fresh:
        return
    # Lists (concat's arrays, a list index) are copied: the caller may change them later.
    args = tuple(list(a) if a.__class__ is list else a for a in args)
    snapshot = SNAPSHOT[0]
    if snapshot is not None:
        args, kwargs, saved = snapshot(args, kwargs, saved)
    node = Node(op, args, dict(kwargs) if kwargs else {}, tuple(edges), outs, multi, saved + fresh)
    for index, o in enumerate(outs):
        if _is_floating(o) and any(o is f for f in fresh):
            entries[id(o)] = Entry(o, node, index)
