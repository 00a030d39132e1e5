"""The recorded graph of a hybridized function: nodes, partitioning by the backends, replay.

Values live in *slots*: the function's input arrays first, then every array an op made,
and arrays the function took from outside (closures, globals, attributes: "externals",
which the function itself reads again at every call, :mod:`._check`). A :class:`Node` is
one recorded call: the op, its arguments with arrays replaced by slot markers (Python
values as :func:`._guards.private` keeps them), its *key* (the same arguments frozen by
:func:`._guards.freeze`, what a later call is compared with), the slots of its results
(and which of them the call made), and the user's ``file:line``. Element-wise nodes also
carry a :class:`~nda.backends.fusion.NodeInfo` for the partitioners. Random-number ops
take their generator's ``key`` and ``counter`` as *dynamic* arguments: not guarded, taken
from each call (the generator advances as eagerly).

:func:`partition` asks each device's backend for its partitioner (backend API 1.4) and
grows subgraphs MXNet-style (``select``, then ``select_input``/``select_output`` across
edges), keeps each convex over data edges *and* in-place hazards (a write to a storage is
ordered after earlier reads and writes of it, and before later ones), lets the backend
``filter`` and ``compile`` it, then orders the units (claimed subgraphs, single nodes)
topologically, keeping the recorded order where it can.

Running a plan: :mod:`._executable`.

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

from .. import _hostviews, backends
from .. import engine as _engine
from .._array import NDArray
from .._devices import strided
from ..backends import fusion
from ..ops import DECLARED
from ..ops.spec import Cast
from ._guards import Slot, Uncomparable, freeze, private, split

__all__ = ["Graph", "Node", "Group", "Slot", "partition", "DYNAMIC", "DYNAMIC_MARK", "shared"]

#: Per op, the keyword arguments taken from each call instead of guarded: a random-number
#: op's place in its generator's stream (the generator advances at every call, as eagerly;
#: the values' shape, dtype and distribution parameters stay guarded).
DYNAMIC: dict[str, tuple[str, ...]] = {f"random.philox_{kind}": ("key", "counter") for kind in ("uniform", "normal", "exponential", "integers")}
#: What a dynamic argument is replaced with in a node's key (and in a checked call's arguments).
DYNAMIC_MARK = "<taken from each call>"


class Node:
    __slots__ = (
        "index",
        "op",
        "kind",
        "attr",
        "args",
        "kwargs",
        "outs",
        "multi",
        "result_type",
        "site",
        "info",
        "reads",
        "writes",
        "key",
        "dynamic",
        "fresh",
        "args_key",
        "kwargs_key",
        "entry",
    )

    def __init__(
        self,
        index: int,
        op: str,
        kind: str,
        attr: str | None,
        args: Any,
        kwargs: Any,
        outs: list[int],
        multi: bool,
        result_type: Any,
        site: tuple[str, int],
    ) -> None:
        self.index, self.op, self.kind, self.attr, self.args, self.kwargs = index, op, kind, attr, args, kwargs
        self.outs, self.multi, self.result_type, self.site = outs, multi, result_type, site
        self.info: fusion.NodeInfo | None = None
        self.reads: list[int] = []
        self.writes: list[int] = []
        self.key: Any = None  # (args, kwargs) frozen, the dynamic kwargs marked (._guards)
        self.args_key: tuple[Any, ...] = ()  # the key split per argument (._guards.split)
        self.kwargs_key: dict[str, Any] = {}
        self.entry: Any = None  # the op's declaration or entry point the call went through (identity: a quick first test)
        self.dynamic: tuple[str, ...] = ()
        self.fresh: list[bool] = []  # per result: made by this call (else an array the graph had already)

    @property
    def where(self) -> str:
        return f"{self.site[0]}:{self.site[1]}"

    def __repr__(self) -> str:
        return f"<node #{self.index} {self.op} at {self.where}>"


class Graph:
    """What one traced call issued (see the module docstring)."""

    def __init__(self) -> None:
        self.slots: dict[int, int] = {}  # id(array) -> slot
        self.arrays: list[NDArray] = []  # slot -> the array seen while tracing (kept alive so ids stay unique)
        self.kinds: list[str] = []  # slot -> "input" | "node" | "external" | "storage"
        self.storage: list[int] = []  # slot -> slot of the array owning its memory (views share it)
        self.metas: list[tuple[Any, tuple[int, ...]]] = []  # slot -> (ArrayMeta, shape)
        self.input_slots: list[int] = []  # the slots of the function's array arguments, in order
        self.nodes: list[Node] = []
        self.inputs = 0
        self.ended: str | None = None
        self.out_tree: Any = None
        self.snapshots: dict[int, tuple[NDArray, NDArray]] = {}  # id(storage) -> (storage, its copy before the first write)
        self.kept: list[NDArray] = []  # placeholders entered under other arrays' slots (:meth:`stand_ins`)

    # ------------------------------------------------------------------ recording
    def add_input(self, array: NDArray) -> int:
        slot = self._slot(array, "input")
        self.input_slots.append(slot)
        return slot

    def _slot(self, array: NDArray, kind: str) -> int:
        found = self.slots.get(id(array))
        if found is not None:
            return found
        index = len(self.arrays)
        self.slots[id(array)] = index
        self.arrays.append(array)
        self.kinds.append(kind)
        self.storage.append(index)
        self.metas.append((array._meta, array._shape))
        base = array._base
        if base is not None and base is not array:
            self.storage[index] = self._slot(base, "storage")  # "storage": only names the memory (never bound at a run)
        if kind == "input":
            self.inputs += 1
        return index

    def _template(self, value: Any, reads: list[int]) -> Any:
        cls = value.__class__
        if cls is NDArray:
            slot = self.slots.get(id(value))
            if slot is None:
                slot = self._slot(value, "external")
            reads.append(slot)
            return Slot(slot)
        if cls is tuple or cls is list:
            return cls(self._template(v, reads) for v in value)
        if cls is dict:
            return {k: self._template(v, reads) for k, v in value.items()}
        if cls is slice and any(v.__class__ is NDArray for v in (value.start, value.stop, value.step)):
            return slice(*(self._template(v, reads) for v in (value.start, value.stop, value.step)))
        return private(value)

    def before_write(self, args: tuple[Any, ...]) -> None:
        """A traced call is about to write into its first array argument: copy that storage once.

        The first-call check replays the graph from these copies (the eager run has already
        written into the arrays themselves).
        """
        target = next((a for a in args if a.__class__ is NDArray), None)
        if target is None or self.ended is not None:
            return
        base = target._base if target._base is not None else target
        slot = self.slots.get(id(base))
        if slot is not None and self.kinds[slot] == "node":
            return  # made by the graph itself: the replay makes it again
        if id(base) not in self.snapshots:
            from .. import _api

            try:
                self.snapshots[id(base)] = (base, _api.copy(base))
            except Exception as err:  # noqa: BLE001 - a storage that cannot be copied: no graph
                self.end(f"the storage written at {target!r:.40} could not be copied for the first-call check ({type(err).__name__}: {err})")

    def end(self, reason: str) -> None:
        if self.ended is None:
            self.ended = reason

    def record(
        self, op: str, kind: str, attr: str | None, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, site: tuple[str, int], entry: Any = None
    ) -> None:
        if self.ended is not None:
            return
        decl = DECLARED.get(op)
        why = _data_dependent(op, decl, args)
        if why:
            self.end(f"{op}() at {site[0]}:{site[1]} has an output shape that depends on the data ({why})")
            return
        reads: list[int] = []
        targs = self._template(args, reads)
        tkwargs = self._template(kwargs, reads)
        dynamic = DYNAMIC.get(op, ())
        slots = self.slots
        try:
            key = freeze((args, {k: DYNAMIC_MARK if k in dynamic else v for k, v in kwargs.items()}), lambda a: Slot(slots[id(a)]))
        except Uncomparable as err:
            self.end(f"{op}() at {site[0]}:{site[1]} received {err}, a Python value that cannot be compared between calls")
            return
        multi = isinstance(out, tuple)
        if multi and type(out) is not tuple and not hasattr(type(out), "_fields"):
            self.end(f"{op}() at {site[0]}:{site[1]} returned a {type(out).__name__}, which a graph cannot make again")
            return
        results = list(out) if multi else ([] if out is None else [out])
        outs, fresh = [], []
        for r in results:
            if r.__class__ is not NDArray:
                self.end(f"{op}() at {site[0]}:{site[1]} returned a {type(r).__name__}, which a graph cannot hold")
                return
            if _hostviews.VIEWS and id(r) in _hostviews.VIEWS:
                self.end(f"{op}() at {site[0]}:{site[1]} made a host view (a copy kept in step with its base), which a graph cannot hand over")
                return
            made = len(self.arrays)
            outs.append(self._slot(r, "node"))
            fresh.append(outs[-1] >= made)
        node = Node(len(self.nodes), op, kind, attr, targs, tkwargs, outs, multi, type(out) if multi else None, site)
        node.reads = reads
        node.key, node.dynamic, node.fresh = key, dynamic, fresh
        node.args_key, node.kwargs_key = split(key)
        node.entry = entry
        mutates = kind == "attr" and attr is not None and attr.startswith("__i") or bool(decl is not None and decl.mutates)
        if mutates and reads:
            node.writes = [self.storage[reads[0]]]
        if decl is not None and decl.family in ("unary", "binary") and kind == "call" and not multi and len(outs) == 1:
            node.info = _info(node, decl, args, out)
        self.nodes.append(node)

    def output(self, value: Any) -> Any:
        """The template of the function's result (arrays as slots; other values kept)."""
        cls = value.__class__
        if cls is NDArray:
            slot = self.slots.get(id(value))
            if slot is None:
                slot = self._slot(value, "external")
            return Slot(slot)
        if cls is tuple or cls is list:
            return cls(self.output(v) for v in value)
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
            return cls(*(self.output(v) for v in value))
        if cls is dict:
            return {k: self.output(v) for k, v in value.items()}
        return value

    def stand_ins(self, visible: dict[int, NDArray], values: list[Any]) -> None:
        """Enter placeholders (slot of another graph -> placeholder) under the slots of the arrays
        they stand in for (``values``: that graph's slots as this graph saw them recorded)."""
        for slot, ph in visible.items():
            real = values[slot]
            mine = self.slots.get(id(real)) if real is not None else None
            if mine is not None and id(ph) not in self.slots:
                self.slots[id(ph)] = mine
                self.kept.append(ph)  # its id stays its own while the graph is recorded

    def shared_memory(self) -> str | None:
        """After the trace: an array the graph made or took from outside whose memory NumPy (or
        another library) holds too, which a graph cannot take (see :func:`shared`); None if none."""
        if not SHARED:
            return None
        arguments = {self.storage[s] for s in self.input_slots}  # the arguments' memory: checked at each call
        for slot, array in enumerate(self.arrays):
            if array is not None and self.storage[slot] not in arguments and shared(array):
                user = next((n for n in self.nodes if slot in n.outs or slot in n.reads), None)
                where = f" ({user.op} at {user.where})" if user is not None else ""
                return (
                    f"an array{where} shares memory with NumPy or another library (nda.asarray of a NumPy array on cpu, "
                    "DLPack): a graph cannot order the Python writes to that memory between its ops"
                )
        return None

    def release(self) -> None:
        """Drop the arrays seen while tracing (a later call binds its own: :mod:`._check`)."""
        self.arrays = [None] * len(self.arrays)  # type: ignore[list-item]
        self.slots = {}
        self.snapshots = {}
        self.kept = []


SHARED = _engine.SHARED  # id(base) of the arrays whose memory another library holds too


def shared(array: NDArray) -> bool:
    """Whether ``array``'s memory is held by another library too (``nda.engine.share``): a graph
    cannot order the writes Python makes to it between ops, so no graph takes such an array."""
    return bool(SHARED) and id(array._base if array._base is not None else array) in SHARED


def _data_dependent(op: str, decl: Any, args: tuple[Any, ...]) -> str | None:
    if decl is not None and decl.data_dependent:
        return "the number of results is read from the data"
    if op in ("getitem", "setitem") and len(args) > 1 and _has_mask(args[1]):
        return "a boolean mask"
    if op == "repeat" and len(args) > 1 and args[1].__class__ is NDArray:
        return "repeat counts given as an array"
    return None


def _has_mask(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return any(k.__class__ is NDArray and k.dtype.category == "bool" and k.ndim > 0 for k in items)


def _info(node: Node, decl: Any, args: tuple[Any, ...], out: NDArray) -> fusion.NodeInfo | None:
    try:
        plan = decl.plan(*args)
    except Exception:  # noqa: BLE001 - it ran eagerly just now; be safe
        return None
    if plan.key.layout is not strided or out.layout is not strided:
        return None
    operands = []
    for a in plan.args:
        if a.__class__ is NDArray:
            operands.append(("array", a.dtype))
        elif a.__class__ is Cast:
            operands.append(("array", a.array.dtype))
        else:
            operands.append(("scalar", a))
    return fusion.NodeInfo(
        node.index,
        decl.name,
        decl.family,
        plan.key.dtype,
        plan.out_dtype,
        tuple(plan.out_shape),
        plan.device,
        plan.key.layout,
        tuple(operands),
        node.where,
    )


# ---------------------------------------------------------------------------- partitioning


class Group:
    """A claimed subgraph: its nodes (recorded order), inputs and outputs (slots), compiled kernel,
    and the handle of the backend that claimed it (``nda.backends.handle``: its queues' members)."""

    __slots__ = ("nodes", "inputs", "outputs", "program", "compiled", "handle", "queued", "device", "partitioner")

    def __init__(
        self,
        nodes: list[Node],
        inputs: list[int],
        outputs: list[int],
        program: fusion.Program,
        compiled: fusion.Compiled,
        handle: backends.BackendHandle,
        device: Any,
        partitioner: str,
    ) -> None:
        self.nodes, self.inputs, self.outputs, self.program, self.compiled = nodes, inputs, outputs, program, compiled
        self.handle, self.device, self.partitioner = handle, device, partitioner
        self.queued = handle.queued

    @property
    def name(self) -> str:
        return f"fused[{'+'.join(n.op for n in self.nodes)}]"


def _edges(graph: Graph) -> tuple[list[set[int]], list[set[int]]]:
    """(predecessors, successors) per node: data edges and in-place hazards."""
    n = len(graph.nodes)
    preds: list[set[int]] = [set() for _ in range(n)]
    producer: dict[int, int] = {}
    last_write: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    for node in graph.nodes:
        i = node.index
        for slot in node.reads:
            p = producer.get(slot)
            if p is not None and p != i:
                preds[i].add(p)
            store = graph.storage[slot]
            w = last_write.get(store)
            if w is not None and w != i:
                preds[i].add(w)
            readers.setdefault(store, []).append(i)
        for store in node.writes:
            for r in readers.get(store, []):
                if r != i:
                    preds[i].add(r)
            w = last_write.get(store)
            if w is not None and w != i:
                preds[i].add(w)
            last_write[store] = i
        for slot in node.outs:
            producer.setdefault(slot, i)
    succs: list[set[int]] = [set() for _ in range(n)]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].add(i)
    return preds, succs


def _descendants(start: set[int], succs: list[set[int]]) -> set[int]:
    seen: set[int] = set()
    stack = list(start)
    while stack:
        i = stack.pop()
        for s in succs[i]:
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return seen


def _convex(group: set[int], preds: list[set[int]], succs: list[set[int]]) -> set[int]:
    """Drop nodes until no path leaves ``group`` and comes back (MXNet's cycle removal, simplified)."""
    while True:
        below = _descendants(group, succs)
        outside = below - group
        bad = {i for i in group if i in _descendants(outside, succs)} if outside else set()
        if not bad:
            return group
        group = group - bad - _descendants(bad, succs)


def partition(graph: Graph, external_reads: set[int], enabled: bool = True) -> tuple[list[Any], list[Group], list[str]]:
    """The units to run in order (a Node or a Group), the groups, and notes for ``explain``."""
    preds, succs = _edges(graph)
    groups: list[Group] = []
    notes: list[str] = []
    assigned: dict[int, int] = {}
    if enabled:
        consumers: dict[int, list[int]] = {}
        for node in graph.nodes:
            for slot in node.reads:
                consumers.setdefault(slot, []).append(node.index)
        partitioners: dict[Any, Any] = {}
        for node in graph.nodes:
            info = node.info
            if info is None or node.index in assigned:
                continue
            part = partitioners.get(info.device, False)
            if part is False:
                make = backends.handle(info.device).partitioner
                part = partitioners[info.device] = make(info.device) if make is not None else None
            if part is None or not part.select(info):
                continue
            group = _grow(graph, node, part, assigned, consumers)
            group = _convex(group, preds, succs)
            members = [graph.nodes[i] for i in sorted(group)]
            kept = part.filter([m.info for m in members]) if hasattr(part, "filter") else [m.info for m in members]
            members = [graph.nodes[k.index] for k in kept]
            group = _convex({m.index for m in members}, preds, succs)
            members = [graph.nodes[i] for i in sorted(group)]
            if len(members) < 2:
                continue
            made = _program(graph, members, external_reads)
            try:
                compiled = part.compile(made[0])
            except Exception as err:  # noqa: BLE001 - a backend's compiler failing means "not claimed"
                notes.append(
                    f"{type(part).__name__} could not compile {'+'.join(m.op for m in members)}: {type(err).__name__}: {err}; they run op by op"
                )
                compiled = None
            if compiled is None:
                continue
            g = Group(members, made[1], made[2], made[0], compiled, backends.handle(info.device), info.device, type(part).__name__)
            for m in members:
                assigned[m.index] = len(groups)
            groups.append(g)
    # Order the units: claimed groups as single units, topologically, recorded order first.
    unit_of = {i: ("g", assigned[i]) if i in assigned else ("n", i) for i in range(len(graph.nodes))}
    unit_preds: dict[Any, set[Any]] = {}
    for i, ps in enumerate(preds):
        u = unit_of[i]
        unit_preds.setdefault(u, set())
        for p in ps:
            if unit_of[p] != u:
                unit_preds[u].add(unit_of[p])
    first = {}
    for i in range(len(graph.nodes)):
        first.setdefault(unit_of[i], i)
    import heapq

    remaining = {u: set(ps) for u, ps in unit_preds.items()}
    ready = [(first[u], u) for u, ps in remaining.items() if not ps]
    heapq.heapify(ready)
    order: list[Any] = []
    done: set[Any] = set()
    dependents: dict[Any, list[Any]] = {}
    for u, ps in unit_preds.items():
        for p in ps:
            dependents.setdefault(p, []).append(u)
    while ready:
        _, u = heapq.heappop(ready)
        if u in done:
            continue
        done.add(u)
        order.append(groups[u[1]] if u[0] == "g" else graph.nodes[u[1]])
        for d in dependents.get(u, []):
            remaining[d].discard(u)
            if not remaining[d] and d not in done:
                heapq.heappush(ready, (first[d], d))
    if len(order) != len(unit_preds):  # cannot happen for convex groups; be exact anyway
        notes.append("the partition could not be ordered; every node runs op by op")
        return list(graph.nodes), [], notes
    return order, groups, notes


def _grow(graph: Graph, seed: Node, part: Any, assigned: dict[int, int], consumers: dict[int, list[int]]) -> set[int]:
    producers: dict[int, int] = {}
    for node in graph.nodes:
        for slot in node.outs:
            producers.setdefault(slot, node.index)
    group = {seed.index}
    frontier = [seed.index]

    def ok(i: int) -> bool:
        other = graph.nodes[i]
        return i not in group and i not in assigned and other.info is not None and part.select(other.info)

    while frontier:
        m = graph.nodes[frontier.pop()]
        for slot in m.reads:
            p = producers.get(slot)
            if p is not None and ok(p) and part.select_input(m.info, graph.nodes[p].info):
                group.add(p)
                frontier.append(p)
        for slot in m.outs:
            for c in consumers.get(slot, []):
                if ok(c) and part.select_output(m.info, graph.nodes[c].info):
                    group.add(c)
                    frontier.append(c)
    return group


def _program(graph: Graph, members: list[Node], external_reads: set[int]) -> tuple[fusion.Program, list[int], list[int]]:
    """The subgraph's :class:`~nda.backends.fusion.Program`, its input slots and output slots."""
    inside = {m.index for m in members}
    produced = {m.outs[0]: k for k, m in enumerate(members)}
    inputs: list[int] = []
    instrs = []
    for m in members:
        args = []
        for value in m.args:
            if value.__class__ is Slot:
                if value.index in produced and produced[value.index] < len(instrs):
                    args.append(("tmp", produced[value.index]))
                else:
                    if value.index not in inputs:
                        inputs.append(value.index)
                    args.append(("in", inputs.index(value.index)))
            else:
                args.append(("const", value))
        info = m.info
        instrs.append(fusion.Instr(m.op, tuple(args), info.key, info.out, m.where))  # type: ignore[union-attr]
    used_outside = set(external_reads)
    for node in graph.nodes:
        if node.index not in inside:
            used_outside.update(node.reads)
    outputs = [k for k, m in enumerate(members) if m.outs[0] in used_outside]
    shape = members[0].info.shape  # type: ignore[union-attr]
    program = fusion.Program(instrs, [(graph.arrays[s].dtype, graph.arrays[s].shape) for s in inputs], outputs, shape, members[0].info.device)  # type: ignore[union-attr]
    return program, inputs, [members[k].outs[0] for k in outputs]
