"""The recorded graph of a hybridized function: nodes, partitioning by the backends, replay.

Values live in *slots*: the function's input arrays first, then every array an op made,
and arrays the function captured from outside (closures, globals: "externals", read at
each run as they are then). A :class:`Node` is one recorded call: the op, its arguments
with arrays replaced by slot markers, the slots of its results, and the user's
``file:line``. Element-wise nodes also carry a :class:`~nda.backends.fusion.NodeInfo`
for the partitioners.

:func:`partition` asks each device's backend for its partitioner (backend API 1.4) and
grows subgraphs MXNet-style (``select``, then ``select_input``/``select_output`` across
edges), keeps each convex over data edges *and* in-place hazards (a write to a storage is
ordered after earlier reads and writes of it, and before later ones), lets the backend
``filter`` and ``compile`` it, then orders the units (claimed subgraphs, single nodes)
topologically, keeping the recorded order where it can.

:class:`Executable` runs the plan: a node calls the op's public function as installed at
that moment (so inside ``autograd.record()`` it records), through a one-line trampoline
compiled with the user's file name at the node's line: engine and queue entries, error
notes and tracebacks then point at the line of the hybridized function that issued the
op. A claimed subgraph is one op: its output arrays are made pending, and its compiled
kernel runs through the engine (recorded on the device queue for a queue backend).

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .. import backends
from .._array import NDArray, new_array
from .._devices import ArrayMeta, strided
from ..backends import fusion
from ..engine import _queues
from ..engine import state as _state
from ..ops import DECLARED
from ..ops._spec import Cast
from ._trace import public_function

__all__ = ["Graph", "Node", "Slot", "partition", "Executable"]


class Slot:
    """Marks an array argument in a node's recorded arguments."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"%{self.index}"


class Node:
    __slots__ = ("index", "op", "kind", "attr", "args", "kwargs", "outs", "multi", "result_type", "site", "info", "reads", "writes")

    def __init__(self, index: int, op: str, kind: str, attr: str | None, args: Any, kwargs: Any, outs: list[int], multi: bool,
                 result_type: Any, site: tuple[str, int]) -> None:
        self.index, self.op, self.kind, self.attr, self.args, self.kwargs = index, op, kind, attr, args, kwargs
        self.outs, self.multi, self.result_type, self.site = outs, multi, result_type, site
        self.info: fusion.NodeInfo | None = None
        self.reads: list[int] = []
        self.writes: list[int] = []

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
        self.nodes: list[Node] = []
        self.inputs = 0
        self.ended: str | None = None
        self.out_tree: Any = None
        self.snapshots: dict[int, tuple[NDArray, NDArray]] = {}  # id(storage) -> (storage, its copy before the first write)

    # ------------------------------------------------------------------ recording
    def add_input(self, array: NDArray) -> int:
        return self._slot(array, "input")

    def _slot(self, array: NDArray, kind: str) -> int:
        found = self.slots.get(id(array))
        if found is not None:
            return found
        index = len(self.arrays)
        self.slots[id(array)] = index
        self.arrays.append(array)
        self.kinds.append(kind)
        self.storage.append(index)
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
        return value

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

    def record(self, op: str, kind: str, attr: str | None, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, site: tuple[str, int]) -> None:
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
        multi = isinstance(out, tuple)
        results = list(out) if multi else ([] if out is None else [out])
        outs = []
        for r in results:
            if r.__class__ is not NDArray:
                self.end(f"{op}() at {site[0]}:{site[1]} returned a {type(r).__name__}, which a graph cannot hold")
                return
            outs.append(self._slot(r, "node"))
        node = Node(len(self.nodes), op, kind, attr, targs, tkwargs, outs, multi, type(out) if multi else None, site)
        node.reads = reads
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

    def release(self) -> None:
        """Drop the arrays seen while tracing (the externals stay: they are read at every run)."""
        self.arrays = [a if k == "external" else None for a, k in zip(self.arrays, self.kinds)]  # type: ignore[misc]
        self.slots = {}
        self.snapshots = {}


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
    return fusion.NodeInfo(node.index, decl.name, decl.family, plan.key.dtype, plan.out_dtype, tuple(plan.out_shape), plan.device, plan.key.layout,
                           tuple(operands), node.where)


# ---------------------------------------------------------------------------- partitioning

class Group:
    """A claimed subgraph: its nodes (recorded order), inputs and outputs (slots), compiled kernel."""

    __slots__ = ("nodes", "inputs", "outputs", "program", "compiled", "backend", "queued", "device", "partitioner")

    def __init__(self, nodes: list[Node], inputs: list[int], outputs: list[int], program: fusion.Program, compiled: fusion.Compiled,
                 backend: Any, device: Any, partitioner: str) -> None:
        self.nodes, self.inputs, self.outputs, self.program, self.compiled = nodes, inputs, outputs, program, compiled
        self.backend, self.device, self.partitioner = backend, device, partitioner
        self.queued = backends.handle(device).queued

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
                notes.append(f"{type(part).__name__} could not compile {'+'.join(m.op for m in members)}: {type(err).__name__}: {err}; they run op by op")
                compiled = None
            if compiled is None:
                continue
            backend = backends.for_device(info.device)
            g = Group(members, made[1], made[2], made[0], compiled, backend, info.device, type(part).__name__)
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


# ---------------------------------------------------------------------------- running

_TRAMPOLINES: dict[tuple[str, int], Callable[..., Any]] = {}


def trampoline(site: tuple[str, int]) -> Callable[..., Any]:
    """``call(f, args, kwargs)`` whose frame has the user's file name and line (see the module docstring)."""
    found = _TRAMPOLINES.get(site)
    if found is None:
        filename, line = site
        source = "\n" * max(line - 1, 0) + "def _nda_hybridized(f, a, k): return f(*a, **k)\n"
        namespace: dict[str, Any] = {}
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - a fixed one-line function
        found = _TRAMPOLINES[site] = namespace["_nda_hybridized"]
    return found


def _fill(template: Any, values: list[Any]) -> Any:
    cls = template.__class__
    if cls is Slot:
        return values[template.index]
    if cls is tuple or cls is list:
        return cls(_fill(v, values) for v in template)
    if cls is dict:
        return {k: _fill(v, values) for k, v in template.items()}
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return cls(*(_fill(v, values) for v in template))
    return template


class Executable:
    """A graph ready to run: units in order (see :func:`partition`)."""

    def __init__(self, graph: Graph, order: list[Any], groups: list[Group], caller: str) -> None:
        self.graph = graph
        self.order = order
        self.groups = groups
        self.caller = caller
        self.steps: list[Any] = []
        for unit in order:
            if isinstance(unit, Group):
                self.steps.append((1, unit, _fused_kernel(unit), trampoline(unit.nodes[-1].site)))
            else:
                self.steps.append((0, unit, None, trampoline(unit.site)))

    def run(self, inputs: list[NDArray], unfused: bool = False, externals: dict[int, NDArray] | None = None) -> Any:
        """Run the plan on ``inputs``; ``externals`` (slot -> array) replaces captured arrays (rebound names)."""
        graph = self.graph
        values: list[Any] = [None] * len(graph.kinds)
        values[: len(inputs)] = inputs
        for slot, kind in enumerate(graph.kinds):
            if kind == "external":
                values[slot] = graph.arrays[slot]
        if externals:
            for slot, array in externals.items():
                values[slot] = array
        steps = self.steps if not unfused else [(0, n, None, trampoline(n.site)) for n in graph.nodes]
        for fused, unit, kernel, at in steps:
            try:
                if fused:
                    outs = at(_run_fused, (unit, kernel, [values[s] for s in unit.inputs]), {})
                    for slot, out in zip(unit.outputs, outs):
                        values[slot] = out
                    continue
                args = _fill(unit.args, values)
                kwargs = _fill(unit.kwargs, values)
                if unit.kind == "attr":
                    out = at(getattr(NDArray, unit.attr), args, kwargs)  # x += y, x.to_layout(...)
                else:
                    out = at(public_function(unit.op), args, kwargs)
            except Exception as err:
                _note(err, unit, self.caller)
                raise
            results = list(out) if unit.multi else ([] if out is None else [out])
            for slot, value in zip(unit.outs, results):
                values[slot] = value
        return _fill(graph.out_tree, values)


def _note(err: BaseException, unit: Any, caller: str) -> None:
    if getattr(err, "_nda_hybrid_noted", False):
        return
    try:
        err._nda_hybrid_noted = True  # type: ignore[attr-defined]
    except AttributeError:
        return
    if isinstance(unit, Group):
        sites = ", ".join(f"{n.op} at {n.where}" for n in unit.nodes)
        err.add_note(f"nda.hybridize: the fused subgraph {unit.name} ({sites}) failed, run by the graph of the call at {caller}")
    else:
        err.add_note(f"nda.hybridize: op '{unit.op}' recorded at {unit.where}, run by the graph of the call at {caller}")


def _fused_kernel(group: Group) -> Callable[..., Any]:
    fn = group.compiled.fn
    if group.queued:  # recorded on the device's queue like any kernel (marker, op, the user's line)
        fn = _queues.issuing(fn, group.name, group.backend)
    fn.__qualname__ = f"{group.name} ({group.compiled.name})"  # type: ignore[union-attr]
    return fn


def _run_fused(group: Group, kernel: Callable[..., Any], inputs: list[NDArray]) -> list[NDArray]:
    """One claimed subgraph as one op through the engine: pending outputs, a task or an inline call."""
    program = group.program
    device = group.device
    outs = []
    for o in program.outputs:
        dtype = program.instrs[o].out
        meta = ArrayMeta._registry.get((device, dtype, strided)) or ArrayMeta(device, dtype, strided)
        outs.append(new_array(None, meta, program.shape))
    size = max(math.prod(program.shape), *(a._size for a in inputs)) if inputs else math.prod(program.shape)

    def run() -> Any:
        result = kernel(*[a._buf for a in inputs])
        for out, buf in zip(outs, result):
            out._buf = buf
        return None

    if size < _state.limit:
        run()
    else:
        _state.push(run, tuple(inputs), tuple(outs), device, group.name, cost=size, route=kernel)
    return outs

