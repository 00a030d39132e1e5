"""What ``nda.dispatch.explain(f, *args)`` says about a hybridized function's signature.

The graph (the most recently used one when a signature has several), how the backends
partitioned it, its *guards* (every op call the function's Python must make again, with
the Python values it must pass: :mod:`._guards`, :mod:`._check`), the arrays it takes from
outside, how its calls ran so far (as the graph, op by op, eagerly after a failed guard),
and the last failed guard with what happened then.

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

from . import _graph
from ._guards import describe

__all__ = ["Explanation", "call_text", "key_text"]


def key_text(name: str, key: Any) -> str:
    """``name(args, kw=value)`` of a call's key (:func:`._guards.freeze` of ``(args, kwargs)``), arrays as ``%slot``."""
    _, args, kwargs = key
    parts = [describe(a) for a in args[1:]]
    parts += [f"{k[1]}={describe(v)}" for k, v in kwargs[1:]]
    return f"{name}({', '.join(parts)})"


def call_text(node: _graph.Node) -> str:
    """A recorded call as :func:`key_text` writes it (an operator by its method name)."""
    return key_text(node.attr if node.kind == "attr" else node.op, node.key)


class Explanation:
    """What :meth:`HybridFunction.explain` found (``str()`` for people).

    ``reason``: why the signature runs eagerly (None when it runs a graph); ``nodes``,
    ``groups``, ``fused``: the graph; ``guards``: one line per recorded call; ``stats``: how
    the calls ran (``graph``, ``op by op``, ``eager``, ``guard failures``, ``traces``,
    ``graphs``); ``failure``: the last failed guard.
    """

    def __init__(self, function: Any, entry: Any, reason: str | None) -> None:
        self.function = function
        self.entry = entry
        self.reason = reason
        executable = entry.executable if entry is not None else None
        self.groups = list(executable.groups) if executable is not None else []
        self.nodes = list(executable.graph.nodes) if executable is not None else []
        self.guards = [f"{call_text(n)} at {n.where.rsplit('/', 1)[-1]}" for n in self.nodes]
        self.stats: dict[str, int] = dict(entry.stats, graphs=len(entry.variants)) if entry is not None else {}
        self.failure: str | None = entry.failure if entry is not None else None

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
            if self.failure:
                lines.append(f"failed:  guard failed: {self.failure}")
            return "\n".join(lines)
        ex = entry.executable
        graph = ex.graph
        others = len(entry.variants) - 1
        lines.append(
            f"graph:   {len(self.nodes)} ops recorded, {len(self.groups)} claimed subgraph(s); check on the first call: {entry.check}"
            + (f" ({others} other graph(s) for other Python values)" if others else "")
        )
        for unit in ex.order:
            if isinstance(unit, _graph.Group):
                lines.append(f"fused:   {unit.name} on {unit.device} by {unit.partitioner} ({unit.compiled.name})")
                lines.append(f"         ops at {', '.join(n.where.rsplit('/', 1)[-1] for n in unit.nodes)}")
                ins = ", ".join(f"{d.name}{tuple(s)}" for d, s in unit.program.inputs)
                lines.append(
                    f"         borders: reads {ins or 'nothing'}; writes {len(unit.outputs)} result(s) {unit.program.shape}; "
                    f"casts to the key dtype inside the kernel"
                )
                lines.append(f"         source: {unit.compiled.source}")
            else:
                where = unit.where.rsplit("/", 1)[-1]
                lines.append(f"op:      {unit.op} at {where} (op by op)")
        for note in getattr(ex, "notes", []):
            lines.append(f"note:    {note}")
        lines.append(
            "guards:  the function's Python runs at every call; each op call must be the recorded one, with the same "
            "Python values (floats by bit pattern, NumPy arrays by content) and arrays (%n: a slot of the graph), "
            "or the call runs eagerly from there, recorded as it runs (a graph for the new values)"
        )
        lines.extend(f"guard:   #{i} {g}" for i, g in enumerate(self.guards))
        for slot, kind in enumerate(graph.kinds):
            if kind in ("external", "storage"):
                meta, shape = graph.metas[slot]
                lines.append(
                    f"guard:   %{slot} an array from outside (a global, closure or attribute), read by the function at each call: "
                    f"{meta.dtype.name}{shape} on {meta.device}, {meta.layout.name}"
                )
        dynamic = [n for n in self.nodes if n.dynamic]
        if dynamic:
            lines.append(
                f"note:    taken from each call, not guarded: {', '.join(sorted({d for n in dynamic for d in n.dynamic}))} "
                "of the random ops (the generator advances as eagerly)"
            )
        s = self.stats
        lines.append(
            f"calls:   {s['graph']} as the graph, {s['op by op']} op by op, {s['guard failures']} with a failed guard (eager), "
            f"{s['traces']} traced; {s['graphs']} graph(s) for this signature"
        )
        if self.failure:
            lines.append(f"failed:  guard failed at the {self.failure}")
        if entry.shared:
            lines.append(f"note:    {entry.shared}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<hybridize explanation: {len(self.nodes)} ops, {len(self.groups)} fused>"
