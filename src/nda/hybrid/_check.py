"""Check mode: a hybridized function's Python runs at every call, and its op calls are checked.

A trace cannot see every Python value the function depends on: a global read by an ``if``
decides which ops run without being an argument of any. So a later call does not skip the
function: it runs ``fn`` with a :class:`Checker` on the thread's interceptor stack. Each op
call the function makes reaches the checker instead of the op, which compares it with the
next recorded node of each graph the signature has (:class:`Variant`):

* the op (name, operator or method);
* its Python arguments, by value (:mod:`._guards`: floats by bit pattern, NumPy arrays by
  content, slices, shapes, axes, dtypes...), except a random op's place in its generator's
  stream (:data:`._graph.DYNAMIC`: taken from this call, so the generator advances as eagerly);
* its array arguments: an argument of the call, an array an earlier op made, or an array
  from outside (a global, a closure cell, an attribute: bound at its first use, by
  identity from then on, with the recorded shape, dtype, device and layout, and sharing
  memory with the other arrays exactly as when traced).

A call that matches returns *placeholders*: arrays with the recorded metadata and no data
yet, which nothing outside the function's Python can have seen. When the function returns
and every recorded op was matched, the graph runs (claimed subgraphs fused, the rest op by
op) on the arrays this call bound, and every placeholder still alive (returned, or kept by
the function somewhere) is handed its array (:func:`adopt`): its data, or a pending engine
task that fills it. A placeholder that is an intermediate of a claimed subgraph makes that
call run op by op instead.

A call that does not match (another op, another value, another array), a host read, an
exception or the function entering ``autograd.record()`` is a *failed guard*: the ops matched
so far run op by op (their placeholders adopted), and the rest of the call runs eagerly
(the checker lets every later call through). The result is eager's. When the difference is
in the op calls, that call is traced as it goes: the ops matched so far run under a
:class:`~._trace.Tracer` (which records them as a first call would, and copies what they
write first), the placeholders are entered in its graph under their arrays' slots, and the
rest of the function is recorded as it runs eagerly; :mod:`nda.hybrid` then checks that
graph and keeps it next to the others, so a value that flips between two settings costs
one eager call per setting, not one per flip.

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from .. import _intercept
from .._array import NDArray, new_array
from .._execute import Task, submit, touches_failed
from ..engine import state as _state
from . import _executable, _graph
from ._explain import call_text, key_text
from ._guards import Uncomparable, freeze, match_call
from ._trace import Scope, Tracer, user_site

__all__ = ["Variant", "Checker", "adopt"]

DYNAMIC_MARK = _graph.DYNAMIC_MARK

_Ref = weakref.ref


class Variant:
    """One graph a signature can run: its executable, the first-call check, and counters."""

    __slots__ = ("executable", "check", "graph", "runs", "unfused_runs")

    def __init__(self, executable: _executable.Executable, check: str) -> None:
        self.executable = executable
        self.graph = executable.graph
        self.check = check
        self.runs = 0
        self.unfused_runs = 0

    def fingerprint(self) -> Any:
        """What makes two traces the same graph (ops, keys, result metadata, outside arrays)."""
        g = self.graph
        return (
            [(n.op, n.kind, n.attr, n.key, [g.metas[o] for o in n.outs], n.fresh) for n in g.nodes],
            [(k, g.metas[s], g.storage[s]) for s, k in enumerate(g.kinds) if k != "node"],
        )


def _deref(o: Any) -> Any:
    return o() if o.__class__ is _Ref else o


class _Binding:
    """Which array each slot of one variant's graph is in this call (see the module docstring)."""

    __slots__ = ("variant", "graph", "objs", "ids", "bases", "base_ids", "overrides")

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        self.graph = g = variant.graph
        self.objs: list[Any] = [None] * len(g.kinds)  # an array, or a weak reference to a placeholder
        self.ids: dict[int, int] = {}  # id(array) -> slot
        self.bases: dict[int, NDArray] = {}  # storage slot -> the array owning that memory in this call
        self.base_ids: dict[int, int] = {}
        self.overrides: dict[int, dict[str, Any]] = {}

    def bind(self, slot: int, array: NDArray) -> bool:
        """Whether ``array`` may be (or is) the value of ``slot`` in this call; binds it if new."""
        bound = self.objs[slot]
        if bound is array:
            return True
        if bound is not None:
            return bound.__class__ is _Ref and bound() is array
        g = self.graph
        if g.kinds[slot] == "node":
            return False  # made by the graph, and not made yet in this call
        known = self.ids.get(id(array))
        if known is not None and _deref(self.objs[known]) is array:
            return False  # already another slot: the graph was recorded for two arrays
        if (array._meta, array._shape) != g.metas[slot] or _graph.shared(array):
            return False
        base = array._base if array._base is not None else array
        store = g.storage[slot]
        have = self.bases.get(store)
        if have is not None:
            if have is not base:
                return False
        else:
            other = self.base_ids.get(id(base))
            if other is not None and self.bases.get(other) is base:
                return False  # shares memory with an array the graph took for separate memory
            self.bases[store] = base
            self.base_ids[id(base)] = store
        self.objs[slot] = array
        self.ids[id(array)] = slot
        return True

    def values(self) -> tuple[list[Any], dict[int, NDArray]]:
        """(slot -> bound array, for the plan), (slot -> live placeholder); :func:`adopt` after the plan ran."""
        values: list[Any] = [None] * len(self.objs)
        visible: dict[int, NDArray] = {}
        for slot, o in enumerate(self.objs):
            if o is None:
                continue
            if o.__class__ is _Ref:
                ph = o()
                if ph is not None:
                    visible[slot] = ph
            else:
                values[slot] = o
        return values, visible


def _signature_of(op: Any) -> tuple[str, str, str | None]:
    kind = op.kind
    if kind == "inplace":
        return op.name, "attr", op.attr
    if kind == "to_layout":
        return "to_layout", "attr", "to_layout"
    return op.name, "call", None


def _guarded(kwargs: dict[str, Any], dynamic: tuple[str, ...]) -> dict[str, Any]:
    return {k: DYNAMIC_MARK if k in dynamic else v for k, v in kwargs.items()} if dynamic else kwargs


class Checker(Scope):
    """The interceptor of a checked call (see the module docstring)."""

    __slots__ = ("alive", "pos", "passthrough", "failure", "ran", "inputs", "tracer")

    def __init__(self, variants: list[Variant], inputs: list[NDArray]) -> None:
        self.inputs = inputs
        self.tracer: Tracer | None = None  # recording the rest of a call whose guard failed
        self.alive: list[_Binding] = []
        for v in variants:
            b = _Binding(v)
            if len(v.graph.input_slots) == len(inputs) and all(b.bind(s, a) for s, a in zip(v.graph.input_slots, inputs)):
                self.alive.append(b)
        self.pos = 0
        self.passthrough = not self.alive
        self.failure: str | None = None if self.alive else "the arguments do not bind to the recorded graph"
        self.ran: str = ""  # "graph", "op by op" or "eager" once finished

    # ------------------------------------------------------------------ interception
    def call(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], proceed: Callable[..., Any]) -> Any:
        if self.passthrough:
            return proceed(*args, **kwargs)
        i = self.pos
        alive = self.alive
        if len(alive) == 1:  # the common case: one graph, one new array
            b = alive[0]
            nodes = b.graph.nodes
            if i < len(nodes):
                node = nodes[i]
                if (node.entry is op or (node.op, node.kind, node.attr) == _signature_of(op)) and match_call(
                    node.args_key, node.kwargs_key, args, kwargs, node.dynamic, b.bind
                ):
                    out = self._results(b, node, None)
                    if out is not None:
                        if node.dynamic:
                            b.overrides[i] = {k: kwargs[k] for k in node.dynamic if k in kwargs}
                        self.pos = i + 1
                        if not node.outs:
                            return None
                        if node.multi:
                            kind = node.result_type
                            return tuple(out) if kind is tuple else kind(*out)
                        return out[0]
        sig = _signature_of(op)
        made: list[NDArray] | None = None
        survivors = []
        for b in alive:
            nodes = b.graph.nodes
            if i >= len(nodes):
                continue
            node = nodes[i]
            if (node.op, node.kind, node.attr) != sig or not match_call(node.args_key, node.kwargs_key, args, kwargs, node.dynamic, b.bind):
                continue
            made = self._results(b, node, made)
            if made is None:
                continue
            if node.dynamic:
                b.overrides[i] = {k: kwargs[k] for k in node.dynamic if k in kwargs}
            survivors.append(b)
        if not survivors:
            self._fail(self._why(op, sig, args, kwargs), trace=True)
            return proceed(*args, **kwargs)  # reaches the tracer, then the op
        self.alive = survivors
        self.pos = i + 1
        node = survivors[0].graph.nodes[i]
        if not node.outs:
            return None
        if node.multi:
            kind = node.result_type
            return tuple(made) if kind is tuple else kind(*made)
        return made[0]

    def _results(self, b: _Binding, node: Any, made: list[NDArray] | None) -> list[NDArray] | None:
        """The call's results for binding ``b``: new placeholders (or those another variant made), or arrays it has."""
        g = b.graph
        if made is None and len(node.outs) == 1 and node.fresh[0]:  # the common case: one new array
            slot = node.outs[0]
            meta, shape = g.metas[slot]
            ph = new_array(None, meta, shape)
            b.objs[slot] = _Ref(ph)
            b.ids[id(ph)] = slot
            return [ph]
        out: list[NDArray] = []
        for k, (slot, fresh) in enumerate(zip(node.outs, node.fresh)):
            if fresh:
                meta, shape = g.metas[slot]
                if made is None:
                    ph = new_array(None, meta, shape)
                else:
                    ph = made[k]
                    if (ph._meta, ph._shape) != (meta, shape):
                        return None
                out.append(ph)
            else:
                have = _deref(b.objs[slot])
                if have is None or (made is not None and made[k] is not have):
                    return None
                out.append(have)
        for slot, fresh, ph in zip(node.outs, node.fresh, out):
            if fresh:
                b.objs[slot] = _Ref(ph)
                b.ids[id(ph)] = slot
        return out

    def read(self, array: Any, what: str) -> None:
        if self.passthrough:
            return
        self._fail(f"a host read ({what}) at {'{}:{}'.format(*user_site())}, which the recorded graph does not have")
        array.wait_to_write()  # what the read (or a NumPy view) may meet: every op on it done

    def wait(self, array: Any) -> bool:
        """A wait for one of this call's placeholders: nothing to wait for (no data yet, none observable)."""
        if self.passthrough or array._buf is not None:
            return False
        b = self.alive[0]
        slot = b.ids.get(id(array))
        return slot is not None and b.objs[slot].__class__ is _Ref and b.objs[slot]() is array

    def pushed_above(self, other: Any) -> None:
        if not self.passthrough:
            self._fail(f"the function entered another recording scope ({other!r})")

    # ------------------------------------------------------------------ outcomes
    def _why(self, op: Any, sig: tuple[str, str, str | None], args: Any, kwargs: Any) -> str:
        """Why the call at position ``pos`` matched no graph (described against the most recent one)."""
        b = self.alive[0]
        where = "{}:{}".format(*user_site())
        nodes = b.graph.nodes
        name = sig[2] or sig[0]
        if self.pos >= len(nodes):
            return f"{name} at {where}, an op call the recorded graph does not have (it ends after {len(nodes)} calls)"
        node = nodes[self.pos]
        if (node.op, node.kind, node.attr) != sig:
            return f"{name} at {where} where the recorded graph has {call_text(node)} at {node.where}"
        try:
            ids = b.ids
            now = key_text(name, freeze((args, _guarded(kwargs, node.dynamic)), lambda a: _graph.Slot(ids.get(id(a), -1))))
        except Uncomparable as err:
            now = f"{name}({err})"
        unknown = " (%-1: an array the graph does not have there, or of other shape, dtype, device, layout or aliasing)" if "%-1" in now else ""
        if now == call_text(node):
            unknown = " (an array there is not the one, or not of the shape, dtype, device, layout or aliasing, the graph has)"
        return f"{now} at {where} where the recorded graph has {call_text(node)}{unknown}"

    def _fail(self, why: str, trace: bool = False) -> None:
        """A guard failed: run the ops matched so far (op by op), then let everything through.

        ``trace``: record the call from here on (the ops matched so far included) under a
        tracer pushed on this thread's stack (the checker is off it: this runs inside its
        ``call``, or after it was popped); :meth:`stop_tracing` takes it off.
        """
        self.passthrough = True
        self.failure = f"op call #{self.pos}: {why}"
        self.ran = "eager"
        graph = None
        if trace:
            graph = _graph.Graph()
            for a in self.inputs:
                graph.add_input(a)
            self.tracer = Tracer(graph)
            _intercept.push(self.tracer)
        if self.pos and self.alive:
            b = self.alive[0]
            values, visible = b.values()
            outside = {id(v) for v in values if v is not None}
            try:
                b.variant.executable.execute(values, overrides=b.overrides, upto=self.pos)
            finally:  # an op that raised: what ran before is handed over all the same
                adopt(visible, values, outside)
            if graph is not None:
                graph.stand_ins(visible, values)

    def abandon(self) -> None:
        """The function raised: what it issued before still happens (as eagerly)."""
        if not self.passthrough:
            self._fail("the function raised")

    def stop_tracing(self) -> _graph.Graph | None:
        """Take the tracer of a failed guard off the stack; its graph (None if there was none)."""
        tracer = self.tracer
        if tracer is None:
            return None
        self.tracer = None
        _intercept.pop(tracer)
        return tracer.graph  # type: ignore[no-any-return]

    def finish(self) -> None:
        """The function returned: run the graph it matched (or the ops it issued, op by op)."""
        if self.passthrough:
            return
        done = [b for b in self.alive if len(b.graph.nodes) == self.pos]
        if not done:
            self._fail(f"the function returned after {self.pos} ops where the recorded graph has {len(self.alive[0].graph.nodes)}", trace=True)
            return
        b = done[0]
        values, visible = b.values()
        ex = b.variant.executable
        unfused = bool(ex.groups) and not visible.keys() <= ex.made
        outside = {id(v) for v in values if v is not None}
        self.ran = "op by op" if unfused else "graph"
        self.alive = [b]
        b.variant.runs += 1
        if unfused:
            b.variant.unfused_runs += 1
        try:
            ex.execute(values, unfused, b.overrides, premade=visible if not unfused else None)
        finally:  # an op that raised: what ran before is handed over all the same
            adopt(visible, values, outside)


def adopt(visible: dict[int, NDArray], values: list[Any], outside: set[int]) -> None:
    """Hand each live placeholder (slot -> placeholder) the array the plan made for its slot.

    ``outside``: ids of the arrays the call bound (arguments, arrays from outside): a
    placeholder whose op gave one of those back becomes a view of it.
    """
    if not visible:
        return
    stand_in = {id(values[s]): ph for s, ph in visible.items() if values[s] is not None and values[s] is not ph}
    idle = _state.engine.current_limit() > 0
    failed = _state.failed  # failed arrays kept do not make the engine busy: a failed result is handed over by a task
    for slot in sorted(visible):
        ph, real = visible[slot], values[slot]
        if real is ph:
            continue  # a claimed subgraph wrote into it
        if real is None:
            continue  # not made: an op before it raised (the exception is on its way to the caller)
        if (real._meta, real._shape) != (ph._meta, ph._shape):
            raise RuntimeError(
                f"nda.hybridize: the graph made {real!r:.60} for slot %{slot} where the function holds an array "
                f"of shape {ph._shape} {ph._meta.dtype.name}; this is a bug in nda"
            )
        base = real._base
        if base is None and id(real) in outside:
            base = real  # the op gave back an array the function has: the placeholder is a view of all of it
        if base is not None:
            ph._base = stand_in.get(id(base), base)  # a view: of the placeholder standing in for its base, if any
        if real._buf is not None and idle and not (failed and touches_failed((real,))):
            ph._buf = real._buf
            continue
        _hand_over(ph, real)


def _hand_over(ph: NDArray, real: NDArray) -> None:
    """An engine task filling ``ph`` with ``real``'s buffer once ``real`` is written (and no one reads it)."""

    writes = (ph,) if ph._base is not None else (ph, real)
    submit(Task("hybridize: result", _same, (real,), {}, (ph,), (real,), ph._meta.device, 0, writes=writes, inline=False))


def _same(buf: Any) -> Any:
    """The kernel of a hand-over: the result's buffer, once it is written, becomes the placeholder's."""
    return buf
