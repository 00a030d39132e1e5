"""Running a hybridized function's plan: claimed subgraphs as one op each, every other node op by op.

:class:`Executable` runs the plan (:func:`._graph.partition`) on the arrays a call bound to
the graph's slots (:mod:`._check`): a node calls the op's public function (through the
invocation point, so the thread's interceptors see it), through a one-line trampoline
compiled with the user's file name at the node's line: engine and queue entries, error
notes and tracebacks then point at the line of the hybridized function that issued the
op. A claimed subgraph is one op: its output arrays are made pending (or are the
placeholders the function holds), and its compiled kernel runs through the engine
(recorded on the device queue for a queue backend). :meth:`Executable.execute` can also run
only the first nodes, op by op: what a call whose guard failed had issued before.

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .._array import NDArray, new_array
from .._devices import ArrayMeta, strided
from ..engine import queues as _queues
from .._execute import Task, submit
from ._graph import Graph, Group, Node, Slot
from ._trace import public_function

__all__ = ["Executable", "trampoline"]


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
                self.steps.append((0, unit, _function(unit), trampoline(unit.site)))
        self.plain = [(0, n, _function(n), trampoline(n.site)) for n in graph.nodes]  # every node op by op, recorded order
        #: The slots this plan makes (claimed subgraphs' outputs, every other node's results):
        #: a call whose function keeps another (an intermediate of a subgraph) runs op by op.
        self.made = {slot for unit in order for slot in (unit.outputs if isinstance(unit, Group) else unit.outs)}

    def run(self, inputs: list[NDArray], unfused: bool = False) -> Any:
        """Run the plan on the traced call's arrays (the first-call check); returns the result as ``fn`` did."""
        graph = self.graph
        values: list[Any] = [None] * len(graph.kinds)
        for slot, array in zip(graph.input_slots, inputs):
            values[slot] = array
        for slot, kind in enumerate(graph.kinds):
            if kind in ("external", "storage") and values[slot] is None:
                values[slot] = graph.arrays[slot]
        self.execute(values, unfused)
        return _fill(graph.out_tree, values)

    def execute(
        self,
        values: list[Any],
        unfused: bool = False,
        overrides: dict[int, dict[str, Any]] | None = None,
        premade: dict[int, NDArray] | None = None,
        upto: int | None = None,
    ) -> None:
        """Run the plan (or its first ``upto`` nodes op by op) on ``values`` (slot -> array), filling in what it makes.

        ``overrides``: per node index, keyword arguments taken from this call (:data:`DYNAMIC`);
        ``premade``: per slot, the array a claimed subgraph writes that output into.
        """
        steps = self.plain[:upto] if upto is not None else self.plain if unfused else self.steps
        for fused, unit, kernel, at in steps:
            try:
                if fused:
                    outs = at(
                        _run_fused, (unit, kernel, [values[s] for s in unit.inputs], [premade.get(s) for s in unit.outputs] if premade else None), {}
                    )
                    for slot, out in zip(unit.outputs, outs):
                        values[slot] = out
                    continue
                args = _fill(unit.args, values)
                kwargs = _fill(unit.kwargs, values)
                if overrides and unit.index in overrides:
                    kwargs.update(overrides[unit.index])
                out = at(kernel, args, kwargs)  # the op's public function, or NDArray's operator (x += y, x.to_layout(...))
            except Exception as err:
                _note(err, unit, self.caller)
                raise
            results = list(out) if unit.multi else ([] if out is None else [out])
            for slot, value in zip(unit.outs, results):
                values[slot] = value


def _function(node: Node) -> Callable[..., Any]:
    """What runs a node op by op: the op's public function, or NDArray's method (``x += y``, ``x.to_layout(...)``)."""
    return getattr(NDArray, node.attr) if node.kind == "attr" else public_function(node.op)  # type: ignore[arg-type]


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
        fn = _queues.issuing(fn, group.name, group.handle)
    fn.__qualname__ = f"{group.name} ({group.compiled.name})"  # type: ignore[union-attr]
    return fn


def _run_fused(group: Group, kernel: Callable[..., Any], inputs: list[NDArray], premade: list[NDArray | None] | None = None) -> list[NDArray]:
    """One claimed subgraph as one op through the engine: pending outputs (``premade`` ones where given), a task or an inline call."""
    program = group.program
    device = group.device
    outs = []
    for k, o in enumerate(program.outputs):
        given = premade[k] if premade else None
        if given is not None:
            outs.append(given)
            continue
        dtype = program.instrs[o].out
        meta = ArrayMeta._registry.get((device, dtype, strided)) or ArrayMeta(device, dtype, strided)
        outs.append(new_array(None, meta, program.shape))
    size = max(math.prod(program.shape), *(a._size for a in inputs)) if inputs else math.prod(program.shape)

    # NumPy's warnings as the ops' own when it runs inline (engine._fperrors: the fused kernel reports per op)
    submit(Task(group.name, kernel, tuple(inputs), {}, tuple(outs), tuple(inputs), device, size, multi=True))
    return outs
