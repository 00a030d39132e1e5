"""The ordering profile's programs: random sequences of dependent ops over two devices and cpu.

A :class:`Program` is a list of :class:`Step` values written with host data and *slots*
instead of devices: ``A`` and ``B`` are devices 0 and 1 of the backend under test (``B`` only
where it has two), ``C`` is cpu. The same program runs on the device under test (the slots
as they are) and on the reference (every slot on cpu, a ``to_device`` a copy), see
:mod:`._ordering`. Variables are ``v0``, ``v1``, ...; a program prints as the Python a person
can paste (:meth:`Program.render`).

The steps (``Step.kind``):

``new``       ``v = nda.asarray(data, device=S)`` (float values, or int64 index arrays);
``unary``     ``v = nda.<op>(x)``;  ``binary``: ``v = nda.<op>(x, y)`` or ``nda.<op>(x, 2.0)``;
``matmul``    ``v = x @ y``;  ``reduce``: ``v = nda.sum(x, axis=...)`` (``max``, ``min``);
``view``      ``v = x[1:]``, ``x[0]`` of a 2-d array, ``reshape``, ``permute_dims``, ``flip``
              (native views where the backend has the kernel, else host views);
``item``      ``v = x[1]`` of a 1-d array: a 0-d *copy*, as in NumPy;
``setitem``   ``x[key] = value`` (a basic key, or an index array that may be out of bounds);
``iop``       ``x += y``, ``x *= 2.0`` (the in-place operators);
``to_device`` ``v = x.to_device(S)`` (between the backend's devices, and to and from cpu);
``gather``    ``v = x[i]`` with an index array ``i`` (which may be out of bounds);
``read``      ``print(x)``: a sync point, compared with the reference then and there;
``drop``      ``del x`` (its memory may be reused while work on it is in flight);
``stall``     the kit keeps a device's queue busy for a while (:class:`._pressure.Pressure`).

:func:`programs` draws programs of one *family* (a cell of the profile: ``chains``,
``in-place``, ``views``, ``copies``, ``index bounds``, ``mixed``) as a few *motifs*, each the
shape of a bug an asynchronous backend has (:data:`MOTIFS`, :class:`_Builder`): a chain of two
kinds of op behind a stall of the first kind's queue; a pending reader of an array, then an
in-place write to it; a native or host view, a pending reader of its family, a write through
the view or its base; ``x[i]`` of a 1-d array, then a write to ``x``; ``to_device`` of a
result still being computed, behind a stall of the target (a slow copy), then a write to the
source; an index array (pending or not, often out of bounds) used to gather or to write; an
array dropped while work on it is pending. Ops, slots, shapes, values and stalls are drawn;
:data:`FAMILIES` weights the single steps a program may also get.
:func:`without` deletes a step and every later step that needs what it made (the minimiser's
move). Values are small integers stored as floats, so that most results are exact.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable

import numpy as np
from hypothesis import strategies as st

__all__ = ["Step", "Program", "Capabilities", "FAMILIES", "programs", "without", "renumbered", "fmt_key"]

#: The families of programs (the cells of the ordering profile), with the weights of the single
#: steps (:func:`_step`) a program draws besides its motifs (:data:`MOTIFS`).
FAMILIES: dict[str, dict[str, int]] = {
    "chains": {"new": 2, "unary": 2, "binary": 3, "matmul": 3, "read": 1, "stall": 2, "to_device": 1},
    "in-place": {"new": 2, "unary": 1, "binary": 2, "view": 1, "read": 2, "stall": 2},
    "views": {"new": 2, "binary": 1, "view": 4, "read": 2, "stall": 2},
    "copies": {"new": 2, "binary": 1, "matmul": 1, "to_device": 4, "read": 2, "stall": 2},
    "index bounds": {"new": 1, "index": 3, "read": 1, "stall": 1},
    "mixed": {"new": 2, "index": 1, "unary": 1, "binary": 2, "matmul": 1, "view": 2, "to_device": 2, "read": 2, "stall": 2},
}

_SHAPES = ((2, 2), (4,), (2, 3), (3,))
_UNARY = ("negative", "abs", "square", "exp", "sin")
_BINARY = ("add", "subtract", "multiply", "maximum", "minimum")
_REDUCE = ("sum", "max", "min")
#: What a stall step issues: the whole ballast (""), or its element-wise or matmul part alone.
_STALLS = ("", "elementwise", "elementwise", "matmul")
_VIEWS_1D = ("slice", "reverse", "reshape", "flip")
_VIEWS_2D = ("row", "rows", "transpose", "reshape", "flip")


@dataclass(frozen=True)
class Step:
    """One step of a program (see the module docstring); ``ins`` are the variables it reads."""

    kind: str
    out: int | None = None
    ins: tuple[int, ...] = ()
    op: str = ""
    slot: str = ""
    data: Any = None  # host array (new), Python scalar (binary, iop, setitem), shape (view reshape)
    key: Any = None  # a basic key (tuple), or None when the index is ``ins[-1]``

    def writes(self) -> int | None:
        """The variable this step writes in place (its family changes), if any."""
        return self.ins[0] if self.kind in ("setitem", "iop") else None


@dataclass
class Program:
    """A family's program: steps, and the slots whose every op the kit delays (``slow``)."""

    family: str
    steps: list[Step]
    slow: tuple[str, ...] = ()
    dtype: str = "float64"
    devices: dict[str, str] = field(default_factory=dict)  # slot -> device, for printing
    slow_kind: str = ""  # which ballast the delays use: "" (all), "elementwise" or "matmul"

    def families(self) -> dict[int, int]:
        """Variable -> the variable owning its memory (views share their input's)."""
        owner: dict[int, int] = {}
        for s in self.steps:
            if s.out is not None:
                owner[s.out] = owner.get(s.ins[0], s.ins[0]) if s.kind == "view" else s.out
        return owner

    def render(self, notes: dict[int, str] | None = None) -> str:
        """The program as Python; ``notes`` adds a comment to step ``i``."""
        notes = notes or {}
        used = sorted({s.slot for s in self.steps if s.slot} | {"A"})
        lines = []
        for slot in used:
            kind, _, index = self.devices.get(slot, "?:0").partition(":")
            lines.append(f"{slot} = nda.Device({kind!r}, {index or 0})")
        if self.slow:
            work = {"elementwise": "element-wise ", "matmul": "matmul "}.get(self.slow_kind, "")
            lines.append(f"# the kit delays every op on {', '.join(self.slow)} (independent {work}work queued before each)")
        for i, s in enumerate(self.steps):
            text = _render(s, self.dtype)
            if i in notes:
                text = f"{text:<44} # {notes[i]}"
            lines.append(text)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.render()


def fmt_key(key: tuple[Any, ...]) -> str:
    def one(k: Any) -> str:
        if isinstance(k, slice):
            return ":".join("" if p is None else str(p) for p in (k.start, k.stop, k.step)).rstrip(":") or ":"
        return repr(k)

    return ", ".join(one(k) for k in key) if key else "..."


def _render(s: Step, dtype: str) -> str:
    v = [f"v{i}" for i in s.ins]
    out = f"v{s.out}"
    if s.kind == "new":
        kind = "nda.int64" if s.data.dtype.kind == "i" else f"nda.{dtype}"
        return f"{out} = nda.asarray({s.data.tolist()!r}, dtype={kind}, device={s.slot})"
    if s.kind in ("unary", "reduce"):
        axis = "" if s.kind == "unary" or s.key is None else f", axis={s.key}"
        return f"{out} = nda.{s.op}({v[0]}{axis})"
    if s.kind in ("binary", "shift"):
        other = v[1] if len(v) > 1 else repr(s.data)
        return f"{out} = nda.{s.op}({v[0]}, {other})"
    if s.kind == "matmul":
        return f"{out} = {v[0]} @ {v[1]}"
    if s.kind == "view":
        return f"{out} = {_view_text(s, v[0])}"
    if s.kind == "item":
        return f"{out} = {v[0]}[{fmt_key(s.key)}]"
    if s.kind == "setitem":
        key = v[-1] if s.key is None else fmt_key(s.key)
        value = v[1] if s.data is None else repr(s.data)
        return f"{v[0]}[{key}] = {value}"
    if s.kind == "iop":
        return f"{v[0]} {s.op}= {v[1] if len(v) > 1 else repr(s.data)}"
    if s.kind == "to_device":
        return f"{out} = {v[0]}.to_device({s.slot})"
    if s.kind == "gather":
        return f"{out} = {v[0]}[{v[1]}]"
    if s.kind == "read":
        return f"print({v[0]})"
    if s.kind == "drop":
        return f"del {v[0]}"
    if s.kind == "stall":
        return f"kit.stall({s.slot}{', ' + repr(s.op) if s.op else ''})"
    raise ValueError(s.kind)


def _view_text(s: Step, x: str) -> str:
    if s.op == "reshape":
        return f"nda.reshape({x}, {s.data!r})"
    if s.op == "transpose":
        return f"nda.permute_dims({x}, (1, 0))"
    if s.op == "flip":
        return f"nda.flip({x})"
    return f"{x}[{fmt_key(s.key)}]"


@dataclass
class Capabilities:
    """What a program may use: the slots, the value dtype, the ops served on the device (natively or
    through the host fallback) and whether the device has a second device (slot ``B``)."""

    slots: tuple[str, ...]
    dtype: str
    ops: frozenset[str]
    stall_slots: tuple[str, ...]
    host_views: frozenset[str] = frozenset()  # view ops the device runs through the host fallback (host views)

    def has(self, *ops: str) -> bool:
        return all(op in self.ops for op in ops)


@dataclass
class _Var:
    shape: tuple[int, ...]
    kind: str  # "f" values, "i" index arrays
    slot: str


class _Model:
    """What the generator knows of the variables while it draws a program."""

    def __init__(self, caps: Capabilities) -> None:
        self.caps = caps
        self.vars: dict[int, _Var] = {}
        self.next = 0

    def new(self, shape: tuple[int, ...], kind: str, slot: str) -> int:
        n = self.next
        self.next += 1
        self.vars[n] = _Var(shape, kind, slot)
        return n

    def pick(self, draw: Any, pred: Any) -> int | None:
        """A variable for which ``pred`` holds: half the time the newest (the one most likely
        still being computed), else any."""
        found = sorted((n for n, v in self.vars.items() if pred(v)), reverse=True)
        if not found:
            return None
        return found[0] if draw(st.booleans()) else draw(st.sampled_from(found))

    def partner(self, draw: Any, x: int) -> int | None:
        v = self.vars[x]
        return self.pick(draw, lambda w: w.shape == v.shape and w.slot == v.slot and w.kind == v.kind)


#: Array values: small non-zero integers (exact in every float dtype). Not zero: memory read before
#: it is written often holds zeros, and a result of zeros would hide such a read.
_VALUE = st.sampled_from([1, 2, -1, 3, -2, -3])
#: Values written in place: not among the arrays' values, so that a write that lands shows.
_SCALAR = st.sampled_from([7, 9, -7, 5])


def _values(draw: Any, shape: tuple[int, ...]) -> np.ndarray:
    size = int(np.prod(shape))
    items = draw(st.lists(_VALUE, min_size=size, max_size=size))
    return np.asarray(items, dtype=np.float64).reshape(shape)


def _step(draw: Any, m: _Model, kind: str, family: str, given: int | None = None) -> Step | None:
    """A single step of ``kind`` on the variables so far, or None when they do not allow one."""
    caps = m.caps
    if kind in ("new", "index"):
        slot = draw(st.sampled_from(caps.slots))
        if kind == "index":
            size = draw(st.integers(1, 3))
            data = np.asarray(draw(st.lists(st.integers(-6, 6), min_size=size, max_size=size)), dtype=np.int64)
            return Step("new", m.new(data.shape, "i", slot), slot=slot, data=data)
        shape = draw(st.sampled_from(_SHAPES))
        return Step("new", m.new(shape, "f", slot), slot=slot, data=_values(draw, shape))
    if kind == "unary":
        ops = [o for o in _UNARY if o in caps.ops]
        x = m.pick(draw, lambda v: v.kind == "f")
        if x is None or not ops:
            return None
        v = m.vars[x]
        return Step("unary", m.new(v.shape, "f", v.slot), (x,), op=draw(st.sampled_from(ops)))
    if kind == "binary":
        ops = [o for o in _BINARY if o in caps.ops]
        x = m.pick(draw, lambda v: v.kind == "f")
        if x is None or not ops:
            return None
        v = m.vars[x]
        op = draw(st.sampled_from(ops))
        y = m.partner(draw, x) if draw(st.booleans()) else None
        if y is not None:
            return Step("binary", m.new(v.shape, "f", v.slot), (x, y), op=op)
        return Step("binary", m.new(v.shape, "f", v.slot), (x,), op=op, data=float(draw(_VALUE)))
    if kind == "matmul":
        x = m.pick(draw, lambda v: v.kind == "f" and len(v.shape) == 2)
        if x is None or "matmul" not in caps.ops:
            return None
        v = m.vars[x]
        y = m.pick(draw, lambda w: w.kind == "f" and len(w.shape) == 2 and w.shape[0] == v.shape[1] and w.slot == v.slot)
        if y is None:
            return None
        return Step("matmul", m.new((v.shape[0], m.vars[y].shape[1]), "f", v.slot), (x, y))
    if kind == "view":
        x = given if given is not None else m.pick(draw, lambda v: v.kind == "f" and len(v.shape) in (1, 2))
        if x is None or m.vars[x].kind != "f" or len(m.vars[x].shape) not in (1, 2):
            return None
        v = m.vars[x]
        kinds = _VIEWS_1D if len(v.shape) == 1 else _VIEWS_2D
        hosted = [k for k in kinds if {"reshape": "reshape", "transpose": "permute_dims", "flip": "flip"}.get(k) in caps.host_views]
        how = draw(st.sampled_from(hosted)) if hosted and draw(st.booleans()) else draw(st.sampled_from(kinds))
        needs = {"reshape": "reshape", "transpose": "permute_dims", "flip": "flip"}.get(how, "getitem")
        if needs not in caps.ops:
            return None
        key: Any = None
        data: Any = None
        if how in ("slice", "rows"):
            key = (slice(1, None),)
        elif how == "reverse":
            key = (slice(None, None, -1),)
        elif how == "row":
            key = (draw(st.integers(0, v.shape[0] - 1)),)
        elif how == "reshape":
            size = int(np.prod(v.shape))
            data = (size,) if len(v.shape) == 2 else ((2, size // 2) if size % 2 == 0 else None)
            if data is None:
                return None
        probe = np.empty(v.shape)
        shape = {"transpose": probe.T.shape, "flip": probe.shape, "reshape": data}.get(how) or probe[key].shape
        return Step("view", m.new(tuple(shape), "f", v.slot), (x,), op="getitem" if key is not None else how, data=data, key=key)
    if kind == "to_device":
        x = m.pick(draw, lambda v: True)
        if x is None:
            return None
        v = m.vars[x]
        targets = [s for s in caps.slots if s != v.slot]
        if not targets:
            return None
        slot = draw(st.sampled_from(targets))
        return Step("to_device", m.new(v.shape, v.kind, slot), (x,), slot=slot)
    if kind == "read":
        x = m.pick(draw, lambda v: True)
        return None if x is None else Step("read", None, (x,))
    if kind == "stall":
        return Step("stall", slot=draw(st.sampled_from(caps.stall_slots)), op=draw(st.sampled_from(_STALLS))) if caps.stall_slots else None
    return None


class _Builder:
    """Draws the steps of one program into ``steps`` (the model follows along)."""

    def __init__(self, draw: Any, caps: Capabilities, family: str) -> None:
        self.draw, self.caps, self.family = draw, caps, family
        self.m = _Model(caps)
        self.steps: list[Step] = []

    # ------------------------------------------------------------------ pieces
    def add(self, step: Step) -> Step:
        self.steps.append(step)
        return step

    def slot(self) -> str:
        """Mostly ``A`` (the device under test), sometimes any slot."""
        return "A" if self.draw(st.booleans()) else self.draw(st.sampled_from(self.caps.slots))

    def value_var(self, ndim: int | None = None, fresh: bool = False) -> int:
        """A float variable (of ``ndim`` dimensions): the newest one, any one, or a new one."""

        def ok(v: Any) -> bool:
            return v.kind == "f" and (ndim is None or len(v.shape) == ndim)

        found = None if fresh or self.draw(st.integers(0, 3)) == 0 else self.m.pick(self.draw, ok)
        if found is not None:
            return found
        shapes = [s for s in _SHAPES if ndim is None or len(s) == ndim]
        shape = shapes[0] if self.draw(st.booleans()) else self.draw(st.sampled_from(shapes))
        slot = self.slot()
        return self.add(Step("new", self.m.new(shape, "f", slot), slot=slot, data=_values(self.draw, shape))).out  # type: ignore[return-value]

    def index_var(self, slot: str, length: int) -> int:
        """An index array for an axis of ``length`` on ``slot``: often out of bounds."""
        found = self.m.pick(self.draw, lambda w: w.kind == "i" and w.slot == slot) if self.draw(st.booleans()) else None
        if found is not None:
            return found
        size = self.draw(st.integers(1, 3))
        data = np.asarray(self.draw(st.lists(st.integers(-length - 2, length + 1), min_size=size, max_size=size)), dtype=np.int64)
        return self.add(Step("new", self.m.new(data.shape, "i", slot), slot=slot, data=data)).out  # type: ignore[return-value]

    def maybe_stall(self, slot: str, producer: str = "") -> None:
        """Usually a stall of ``slot``'s queue; ``producer`` (the kind of the op it should delay, see
        :meth:`kind`) picks the ballast of the same kind, which a backend runs on the same queue."""
        if slot in self.caps.stall_slots and self.draw(st.integers(0, 7)) > 0:
            same = "matmul" if producer == "matmul" else "elementwise" if producer else ""
            kind = same if producer and self.draw(st.integers(0, 3)) > 0 else self.draw(st.sampled_from(_STALLS))
            self.add(Step("stall", slot=slot, op=kind))

    def kind(self, x: int, unlike: str = "") -> str:
        """The kind of op to compute from ``x``: ``elementwise``, ``matmul`` (square matrices) or
        ``reduce``; mostly not ``unlike`` (a chain of two kinds, which a backend may put on two queues)."""
        v = self.m.vars[x]
        kinds = ["elementwise"] * 3
        if len(v.shape) == 2 and v.shape[0] == v.shape[1] and self.caps.has("matmul"):
            kinds += ["matmul"] * 3
        if any(o in self.caps.ops for o in _REDUCE) and v.shape:
            kinds.append("reduce")
        others = [k for k in kinds if k != unlike]
        return self.draw(st.sampled_from(others)) if others and self.draw(st.integers(0, 7)) > 0 else self.draw(st.sampled_from(kinds))

    def compute(self, x: int, kind: str = "") -> int:
        """A new variable computed from ``x`` on its device (it is pending if the queue is busy)."""
        v = self.m.vars[x]
        caps, draw = self.caps, self.draw
        kind = kind or self.kind(x)
        if kind == "matmul":
            return self.add(Step("matmul", self.m.new(v.shape, "f", v.slot), (x, x))).out  # type: ignore[return-value]
        if kind == "reduce":
            axis = draw(st.sampled_from([None, *range(len(v.shape))]))
            shape = () if axis is None else v.shape[:axis] + v.shape[axis + 1 :]
            op = draw(st.sampled_from([o for o in _REDUCE if o in caps.ops]))
            return self.add(Step("reduce", self.m.new(shape, "f", v.slot), (x,), op=op, key=axis)).out  # type: ignore[return-value]
        unary = [o for o in _UNARY if o in caps.ops]
        if unary and draw(st.booleans()):
            return self.add(Step("unary", self.m.new(v.shape, "f", v.slot), (x,), op=draw(st.sampled_from(unary)))).out  # type: ignore[return-value]
        op = draw(st.sampled_from([o for o in _BINARY if o in caps.ops] or ["add"]))
        y = self.m.partner(draw, x) if draw(st.booleans()) else None
        if y is not None:
            return self.add(Step("binary", self.m.new(v.shape, "f", v.slot), (x, y), op=op)).out  # type: ignore[return-value]
        return self.add(Step("binary", self.m.new(v.shape, "f", v.slot), (x,), op=op, data=float(draw(_VALUE)))).out  # type: ignore[return-value]

    def produce(self, x: int) -> int:
        """A stall (usually) and an op computing from ``x`` behind it: a result still being computed."""
        kind = self.kind(x)
        self.maybe_stall(self.m.vars[x].slot, kind)
        return self.compute(x, kind)

    def write(self, x: int) -> None:
        """An in-place write into ``x`` (``setitem`` with a basic key, or an in-place operator)."""
        v = self.m.vars[x]
        draw = self.draw
        if v.shape and draw(st.integers(0, 2)) > 0 and "setitem" in self.caps.ops:
            key = draw(st.sampled_from([(slice(1, None),), (0,), (slice(None),), (slice(None, None, -1),)]))
            selected = np.empty(v.shape)[key].shape
            y = self.m.pick(draw, lambda w: w.kind == "f" and w.slot == v.slot and w.shape == selected) if draw(st.booleans()) else None
            if y is not None and y != x:
                self.add(Step("setitem", None, (x, y), key=key))
            else:
                self.add(Step("setitem", None, (x,), key=key, data=float(draw(_SCALAR))))
            return
        op = draw(st.sampled_from(["+", "*", "-"]))
        y = self.m.partner(draw, x) if draw(st.booleans()) else None
        self.add(Step("iop", None, (x, y) if y is not None else (x,), op=op, data=None if y is not None else float(draw(_VALUE))))

    def view(self, x: int) -> int | None:
        step = _step(self.draw, self.m, "view", self.family, x)
        return None if step is None else self.add(step).out

    def read(self, *xs: int) -> None:
        for x in xs:
            if x in self.m.vars and self.draw(st.booleans()):
                self.add(Step("read", None, (x,)))

    # ------------------------------------------------------------------ motifs
    def chain(self) -> None:
        """Dependent ops of two kinds, the first behind a busy queue."""
        x = self.value_var(fresh=self.draw(st.booleans()))
        first = self.kind(x)
        self.maybe_stall(self.m.vars[x].slot, first)
        y = self.compute(x, first)
        if self.draw(st.integers(0, 7)) > 0:
            y = self.compute(y, self.kind(y, unlike=first))
        self.read(y)

    def reader_then_write(self) -> None:
        """A pending reader of ``x``, then an in-place write to ``x``: the write must wait for it."""
        x = self.value_var()
        y = self.produce(x)
        self.write(x)
        self.read(y, x)

    def view_write(self) -> None:
        """A (native or host) view, a pending reader of the family, a write through the view or the base."""
        x = self.value_var(fresh=self.draw(st.booleans()))
        v = self.view(x)
        if v is None:
            return
        y = self.produce(self.draw(st.sampled_from([x, v])))
        # Mostly through the view: a write through a host view goes back with from_host(out=), behind readers.
        self.write(v if self.draw(st.integers(0, 3)) > 0 else x)
        self.read(y, v, x)

    def item(self) -> None:
        """``e = x[i]`` of a 1-d array is a 0-d copy: a later write to ``x`` must not change it."""
        if "getitem" not in self.caps.ops:
            return
        x = self.value_var(ndim=1)
        n = self.m.vars[x].shape[0]
        e = self.add(Step("item", self.m.new((), "f", self.m.vars[x].slot), (x,), key=(self.draw(st.integers(0, n - 1)),))).out
        self.maybe_stall(self.m.vars[x].slot)
        self.write(x)
        self.read(e)  # type: ignore[arg-type]

    def copy(self) -> None:
        """``to_device`` of a result still being computed; then a write to the source, which must not reach the copy."""
        x = self.value_var()
        src = self.m.vars[x].slot
        y = self.produce(x)
        target = self.draw(st.sampled_from([s for s in self.caps.slots if s != src] or [src]))
        if target == src:
            return
        self.maybe_stall(target)  # a slow copy: it waits behind work on the target's queue
        z = self.add(Step("to_device", self.m.new(self.m.vars[y].shape, "f", target), (y,), slot=target)).out
        if self.draw(st.booleans()):
            self.write(y)
        if self.draw(st.booleans()):
            self.compute(z)  # type: ignore[arg-type]
        self.read(z)  # type: ignore[arg-type]

    def bounds(self) -> None:
        """An index array (pending or not, maybe out of bounds) used to gather or to write."""
        if "getitem" not in self.caps.ops:
            return
        x = self.value_var(ndim=1)
        slot, n = self.m.vars[x].slot, self.m.vars[x].shape[0]
        i = self.index_var(slot, n)
        self.maybe_stall(slot)
        if self.draw(st.booleans()) and self.caps.has("add"):
            i = self.add(Step("shift", self.m.new(self.m.vars[i].shape, "i", slot), (i,), op="add", data=self.draw(st.integers(-2, 2)))).out
        if self.draw(st.booleans()) or "setitem" not in self.caps.ops:
            g = self.add(Step("gather", self.m.new(self.m.vars[i].shape, "f", slot), (x, i))).out  # type: ignore[arg-type]
            self.read(g)  # type: ignore[arg-type]
        else:
            self.add(Step("setitem", None, (x, i), data=float(self.draw(_SCALAR))))  # type: ignore[arg-type]
            self.read(x)

    def dropped(self) -> None:
        """An array dropped while work on it is pending; its memory may be reused at once."""
        x = self.value_var()
        y = self.produce(x)
        z = self.compute(y)
        self.add(Step("drop", None, (y,)))
        del self.m.vars[y]
        self.value_var(fresh=True)
        self.read(z)

    def single(self) -> None:
        """One step of any kind the family draws."""
        weights = FAMILIES[self.family]
        kind = self.draw(st.sampled_from([k for k, w in weights.items() for _ in range(w)]))
        step = _step(self.draw, self.m, kind, self.family)
        if step is not None:
            self.add(step)


#: The motifs of each family, in the order Hypothesis shrinks towards (the first is the simplest).
MOTIFS: dict[str, tuple[str, ...]] = {
    "chains": ("chain", "chain", "chain", "chain", "chain", "dropped"),
    "in-place": ("reader_then_write", "reader_then_write", "item"),
    "views": ("view_write", "view_write", "view_write", "item"),
    "copies": ("copy",),
    "index bounds": ("bounds",),
    "mixed": ("chain", "reader_then_write", "view_write", "item", "copy", "bounds", "dropped", "single"),
}


def programs(family: str, caps: Capabilities, *, max_motifs: int = 4) -> st.SearchStrategy[Program]:
    """Programs of ``family`` over ``caps``: one to ``max_motifs`` motifs (see the module docstring)."""
    slows = [()] + [(s,) for s in caps.stall_slots]

    @st.composite
    def draw_program(draw: Any) -> Program:
        builder = _Builder(draw, caps, family)
        for _ in range(draw(st.integers(1, max_motifs))):
            getattr(builder, draw(st.sampled_from(MOTIFS[family])))()
        if not builder.steps:
            builder.value_var(fresh=True)
        slow = draw(st.sampled_from(slows)) if draw(st.booleans()) else ()
        kind = draw(st.sampled_from(_STALLS)) if slow else ""
        return Program(family, builder.steps, slow, caps.dtype, slow_kind=kind)

    return draw_program()


def without(program: Program, index: int) -> Program:
    """``program`` without step ``index`` and every later step that reads a variable it made
    (or a variable made by a step removed so)."""
    gone: set[int] = set()
    steps = []
    for i, s in enumerate(program.steps):
        if i == index or any(v in gone for v in s.ins):
            if s.out is not None:
                gone.add(s.out)
            continue
        steps.append(s)
    return replace(program, steps=steps)


def renumbered(program: Program) -> Program:
    """``program`` with its variables numbered ``v0``, ``v1``, ... in the order the steps make them."""
    names: dict[int, int] = {}
    for s in program.steps:
        if s.out is not None:
            names[s.out] = len(names)
    steps = [replace(s, out=None if s.out is None else names[s.out], ins=tuple(names.get(v, v) for v in s.ins)) for s in program.steps]
    return replace(program, steps=steps)


def variables(steps: Iterable[Step]) -> list[int]:
    """The variables the steps make, in order."""
    return [s.out for s in steps if s.out is not None]
