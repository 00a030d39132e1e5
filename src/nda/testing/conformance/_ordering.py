"""The ordering profile: does a device keep nda's asynchronous contract in whole programs?

The value profile calls one op at a time on inputs that are ready, and reads the result: a
backend that forgets a wait, writes too early or skips a device-side check passes it. The
ordering profile (``--profile ordering``, and part of ``deep``) runs random *programs* of
dependent ops (:mod:`._programs`) over two devices of the backend under test and cpu:
chains, in-place updates of arrays that have pending readers, native views and host views,
``to_device`` between devices while the source is still being computed, index arrays in and
out of bounds, reads in the middle, arrays dropped while work on them is in flight. Each
program runs on the device while the kit keeps its queues busy (:mod:`._pressure`: stalls,
and a delay before every op of a slow device), then sequentially on cpu, and every read must
agree (:func:`._execution.compare`; an out-of-bounds index raises ``IndexError`` at the sync
point, never returns a value).

A cell is one *family* of programs (``chains``, ``in-place``, ``views``, ``copies``, ``index
bounds``, ``mixed``) in the dtype the device serves best (float64, else float32); the report
shows them as ``chains [ordering]`` and so on. The quick profile runs 24 derandomized programs
per family, the deep one 150 random ones.

A program counts as failing when it fails on two replays too (a timing bug may show on some
runs only, and the program printed should show it every time); one that failed on some runs
only is reported only if no program of the family fails every time. **A failure prints the program, minimised**: the kit deletes steps (and what
depends on them) and slow devices for as long as the program still fails twice in a row (so the
stalls that make it certain stay), and prints it as Python with the reads that differ annotated. **It then says whose bug it is**:

* it replays the program *in order*: no stalls, a ``waitall`` after every step. If it still
  fails, the kernels (or copies) compute wrong values even with nothing pending: "wrong when
  run in order", the backend's kernel, and the kit names the first step whose result is wrong;
* if the in-order replay is right, the failure is "right alone, wrong in the program": an
  ordering bug. The kit finds where a single sync hides it (the step that ran before work it
  depends on, or whose write overtook work queued before it) and names the contract rules
  involved; then it replays the program on another backend with queues (nda-sim, when
  installed: the *witness*). Right there: the backend's; wrong there too: nda's engine.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from typing import Any, Callable, Iterable, Iterator

from hypothesis import Phase, given

import nda
from nda._devices import Device, KernelKey, as_device, strided
from nda._dtypes import as_dtype

from .._profiles import profile_settings
from ._execution import compare, describe_step, execute
from ._pressure import Pressure, STALL_SECONDS
from ._programs import FAMILIES, Capabilities, Program, Step, programs, renumbered, without
from ._report import CellResult, Report

__all__ = ["OrderingCell", "OrderingRunner", "ordering_cells", "run", "split_ops", "ORDERING_OPS", "threaded_engine"]

CPU = Device("cpu", 0)
#: The ops programs use (each where the device serves it, natively or through the host fallback).
ORDERING_OPS = (
    "add",
    "subtract",
    "multiply",
    "maximum",
    "minimum",
    "negative",
    "abs",
    "square",
    "exp",
    "sin",
    "sum",
    "max",
    "min",
    "matmul",
    "getitem",
    "setitem",
    "reshape",
    "permute_dims",
    "flip",
)
#: Programs per family: (quick, deep).
PROGRAMS = {"quick": 24, "deep": 150}
#: Seconds the minimiser may spend on one failing program.
MINIMISE_SECONDS = 20.0


class OrderingFailure(AssertionError):
    """A program whose reads on the device differ from sequential execution on cpu."""


class OrderingCell:
    """One family of programs on a device type, in one dtype."""

    __slots__ = ("op", "dtype", "layout", "route")

    def __init__(self, family: str, dtype: Any) -> None:
        self.op, self.dtype, self.layout, self.route = family, dtype, _ORDERING_LAYOUT, "native"

    @property
    def id(self) -> str:
        return f"ordering-{self.op.replace(' ', '-')}-{self.dtype.name}"

    def __repr__(self) -> str:
        return f"<OrderingCell {self.id}>"


class _Layout:
    name = "ordering"


_ORDERING_LAYOUT = _Layout()


def _served(device_type: str, op: str, dtype: Any) -> str | None:
    """ "native", "fallback" or None for (op, dtype) on the device type."""
    if nda.dispatch.kernels(op, KernelKey(device_type, dtype, strided)):
        return "native"
    if nda.backends.handle(Device(device_type, 0)).fallback_to_host and nda.dispatch.kernels(op, KernelKey("cpu", dtype, strided)):
        return "fallback"
    return None


def _dtype_for(device_type: str) -> Any:
    for name in ("float64", "float32"):
        dt = as_dtype(name)
        if all(_served(device_type, op, dt) == "native" for op in ("add", "multiply")):
            return dt
    return as_dtype("float64")


def ordering_cells(device: Device | str, *, dtypes: Iterable[Any] | None = None, families: Iterable[str] | None = None) -> list[OrderingCell]:
    """The cells of the ordering profile for ``device``'s type (one per family)."""
    device_type = device.type if isinstance(device, Device) else str(device).split(":")[0]
    nda.backends.ensure_device_type(device_type)
    if not nda.backends.serves(device_type):
        raise ValueError(f"cannot test device type {device_type!r}: it is not available.{nda.backends.explain_missing(device_type)}")
    chosen = [as_dtype(d) for d in dtypes if as_dtype(d).kind == "real floating"] if dtypes is not None else []
    dtype = chosen[0] if chosen else _dtype_for(device_type)
    wanted = list(FAMILIES) if families is None else [f for f in FAMILIES if f in set(families)]
    return [OrderingCell(family, dtype) for family in wanted]


@contextlib.contextmanager
def threaded_engine() -> Iterator[None]:
    """Run the block on nda's threaded engine (the naive engine waits for every op, which hides
    what the profile looks for), then go back to the engine in use."""
    previous = nda.engine.current()
    if previous.name == "threaded":
        yield
        return
    nda.engine.use("threaded")
    try:
        yield
    finally:
        nda.engine.use(previous)


class OrderingRunner:
    """Runs ordering cells of one device type (see the module docstring)."""

    def __init__(
        self,
        device: Device | str,
        reference: str = "cpu",
        *,
        profile: str = "quick",
        settings: Any = None,
        stall: Callable[[Device, float], None] | None = None,
        seconds: float = STALL_SECONDS,
    ) -> None:
        """``reference`` is accepted for the plugin's sake and ignored: the reference of a program is
        always its sequential execution on cpu. ``profile`` ``"quick"``/``"ordering"`` runs
        :data:`PROGRAMS` ``["quick"]`` derandomized programs per family, ``"deep"`` ``["deep"]`` random
        ones; ``settings`` (Hypothesis) overrides both. ``stall``/``seconds``: see :mod:`._pressure`."""
        first = as_device(device if ":" in str(device) or isinstance(device, Device) else f"{device}:0")
        nda.backends.validate_device(first)
        nda.backends.ensure_device_type("cpu")  # the reference, and the host fallback's kernels
        self.device = first
        self.reference = "cpu (sequential)"
        self.profile = profile
        base = settings if settings is not None else profile_settings("quick" if profile in ("quick", "ordering") else profile)
        count = settings.max_examples if settings is not None else PROGRAMS["deep" if profile == "deep" else "quick"]
        self.settings = base.__class__(base, max_examples=count, phases=(Phase.explicit, Phase.generate))
        infos = [info.device for info in nda.backends.devices(first.type)]
        self.slots: dict[str, Device] = {"A": infos[0] if first.index == 0 else first}
        if first.type != "cpu":
            self.slots["C"] = CPU
        others = [d for d in infos if d != self.slots["A"]]
        if others:
            self.slots["B"] = others[0]
        self.pressure = Pressure(seconds, stall)
        self._witness_pressure: Pressure | None = None
        self.minimise_seconds = MINIMISE_SECONDS

    @property
    def reference_label(self) -> str:
        return self.reference

    def capabilities(self, dtype: Any, slots: dict[str, Device] | None = None) -> Capabilities:
        slots = slots or self.slots
        device_type = slots["A"].type
        ops = frozenset(op for op in ORDERING_OPS if _served(device_type, op, dtype) is not None)
        stall_slots = tuple(s for s in ("A", "B") if s in slots)
        host_views = frozenset(op for op in ("reshape", "permute_dims", "flip") if _served(device_type, op, dtype) == "fallback")
        return Capabilities(tuple(sorted(slots)), dtype.name, ops, stall_slots, host_views)

    # ------------------------------------------------------------------ one program
    def check(
        self,
        program: Program,
        slots: dict[str, Device] | None = None,
        pressure: Pressure | None = None,
        sync_after: Callable[[int], bool] | None = None,
        stalls: bool = True,
    ) -> list[tuple[int, int | None, str]]:
        """The differences between ``program`` on the devices and sequentially on cpu."""
        slots = slots or self.slots
        pressure = pressure or self.pressure
        got = execute(program, slots, stall=pressure.stall if stalls else None, delaying=pressure.delaying if stalls else None, sync_after=sync_after)
        return compare(program, got, execute(program, None))

    def run_cell(self, cell: OrderingCell) -> CellResult:
        start = time.perf_counter()
        with threaded_engine():
            result = self._run_cell(cell)
        result.seconds = time.perf_counter() - start
        return result

    def _run_cell(self, cell: OrderingCell) -> CellResult:
        base = dict(op=cell.op, dtype=cell.dtype.name, layout="ordering")
        caps = self.capabilities(cell.dtype)
        if not caps.has("add", "multiply"):
            return CellResult(
                **base,
                status="not covered",
                reason=f"{self.device.type} serves neither add nor multiply for {cell.dtype.name} "
                "(natively or through the host fallback): programs need them",
            )
        state: dict[str, Any] = {"examples": 0, "failed": None, "flaky": None}

        def ordering_program(program: Program) -> None:
            program.devices = {k: str(v) for k, v in self.slots.items()}
            problems = self.check(program)
            if problems and self.check(program) and self.check(program):  # it fails every time: minimise it, report it
                state["failed"] = program
                raise OrderingFailure("\n".join(text for _, _, text in problems))
            if problems and state["flaky"] is None:  # failed, not every time: kept, in case no program fails every time
                state["flaky"] = program
            state["examples"] += 1

        test = self.settings(given(program=programs(cell.op, caps))(ordering_program))
        try:
            test()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:  # noqa: BLE001 - a failing program, a flaky one, or the kit's own error
            program = state["failed"]
            if program is None:
                return CellResult(**base, status="failed", examples=state["examples"], error=f"the ordering kit failed: {type(err).__name__}: {err}")
            return self._failure(base, program, state["examples"])
        if state["flaky"] is not None:
            return self._failure(base, state["flaky"], state["examples"])
        return CellResult(**base, status="passed", examples=state["examples"])

    def _failure(self, base: dict[str, Any], program: Program, examples: int) -> CellResult:
        minimal = renumbered(self.minimise(program))
        problems = next((found for found in (self.check(minimal) for _ in range(3)) if found), [])
        if not problems:  # did not fail again: report what was seen first
            minimal = program
            problems = next((found for found in (self.check(program) for _ in range(3)) if found), [])
        if not problems:
            return CellResult(
                **base,
                status="failed",
                examples=examples,
                example="\n" + program.render(),
                found_by="ordering program",
                error="this program failed once and did not fail again when replayed: a race the kit could not "
                "reproduce (no other program failed; run the profile again, or --profile deep)",
            )
        notes = {i: "differs" for i, _, _ in problems if i < len(minimal.steps)}
        error = "\n".join(text for _, _, text in problems[:6]) + "\n" + self.blame(minimal)
        return CellResult(
            **base, status="failed", examples=examples, example="\n" + minimal.render(notes), error=error, found_by="ordering program", case=minimal
        )

    # ------------------------------------------------------------------ minimising
    def minimise(self, program: Program) -> Program:
        """``program`` with as few steps and slow devices as still fail (see the module docstring).

        A smaller candidate is kept only if it fails on three runs in a row: a timing bug may show
        on some runs only, and the program printed should show it every time (so the stalls that
        make it certain stay). Runs of steps go first (halves, quarters, ...: a program is a few
        motifs), then single steps, each with what depends on it. A shared machine's noise can
        still make a candidate fail three times by chance: the result is checked again at the
        end, and the last kept candidate that fails again is returned."""
        deadline = time.perf_counter() + self.minimise_seconds

        def fails(candidate: Program) -> bool:
            return bool(candidate.steps) and all(self.check(candidate) for _ in range(3))

        kept = [program]
        if program.slow and fails(replace(program, slow=())):
            kept.append(replace(program, slow=()))
        size = max(1, len(kept[-1].steps) // 2)
        while size >= 1 and time.perf_counter() < deadline:
            changed = False
            start = len(kept[-1].steps) - size
            while start >= 0 and time.perf_counter() < deadline:
                current = kept[-1]
                candidate = current
                for i in reversed(range(start, min(start + size, len(current.steps)))):
                    candidate = without(candidate, i) if i < len(candidate.steps) else candidate
                if len(candidate.steps) < len(current.steps) and fails(candidate):
                    kept.append(candidate)
                    changed = True
                start -= size
            if not changed:
                size //= 2
        for candidate in reversed(kept[1:]):
            if sum(bool(self.check(candidate)) for _ in range(3)) >= 2:
                return candidate
        return program

    # ------------------------------------------------------------------ whose bug
    def blame(self, program: Program) -> str:
        """Who is wrong: "wrong when run in order" (a kernel) or "right alone, wrong in the program" (ordering)."""
        in_order = self.check(program, sync_after=lambda i: True, stalls=False)
        witness = self._witness()
        if in_order:
            where, steps = self._first_wrong(program)
            text = (
                "whose bug: wrong when run in order. With no stalls and a waitall after every step, the device still differs "
                f"from cpu{where}: the backend's kernel (or copy) computes a wrong value even with nothing pending"
            )
            if any("raise" in t and "IndexError" in t for _, _, t in in_order):
                text += (
                    "; an index out of bounds must raise IndexError at the sync point: check index arrays on the device "
                    "and report it with nda.engine.Deferred(value, check) (the backend guide, section 7)"
                )
            if any(program.steps[i].kind == "item" for i in steps):
                text += "; x[i] of a 1-d array is a 0-d copy (as in NumPy, on cpu and sim), not a view: a later write to x must not change it"
            return text + self._witness_text(program, witness, in_order=True)
        first = self.check(program)
        seen = {(k, v) for k, v, _ in first} or {None}  # the reads that differ (None: could not see it again)

        def hidden(i: int) -> bool:  # a waitall after step i, and none of those reads differs, twice
            return all(not seen & {(k, v) for k, v, _ in self.check(program, sync_after=lambda j: j == i)} for _ in range(2))

        hides = [i for i in range(len(program.steps) - 1) if first and hidden(i)]
        text = (
            "whose bug: right alone, wrong in the program. Replayed in order (no stalls, a waitall after every step) the "
            "program gives cpu's results: an ordering bug, an op that ran before work it depends on, or a write that "
            "overtook work queued before it"
        )
        if hides:
            i = hides[-1]
            text += f"; a waitall after {describe_step(program, i)} alone hides it, so the race is with {describe_step(program, i + 1)}"
            text += self._hint(program, i + 1)
        return text + self._witness_text(program, witness, in_order=False)

    def _first_wrong(self, program: Program) -> tuple[str, list[int]]:
        """Where the in-order replay first differs (reading every result right after the step that makes
        or writes it), as text, and the steps involved: the one just before and the one that made the variable."""
        probe, origin = [], []
        for i, s in enumerate(program.steps):
            probe.append(s)
            origin.append(i)
            target = s.out if s.out is not None else s.writes()
            if target is not None:
                probe.append(Step("read", None, (target,)))
                origin.append(i)
        probed = replace(program, steps=probe, slow=())
        found = self.check(probed, sync_after=lambda i: True, stalls=False)
        if not found:
            return "", []
        at, var, _ = found[0]
        before = origin[min(at, len(origin) - 1)]
        made = next((i for i, s in enumerate(program.steps) if var is not None and s.out == var), None)
        text = (
            f" at the first read of v{var} after {describe_step(program, before)}" if var is not None else f" after {describe_step(program, before)}"
        )
        if made is not None and made != before:
            text += f" (v{var} was made by {describe_step(program, made)})"
        return text, [i for i in (before, made) if i is not None]

    def _hint(self, program: Program, i: int) -> str:
        s = program.steps[i]
        device_type = self.slots["A"].type
        dtype = as_dtype(program.dtype)
        rules = []
        if s.kind == "to_device":
            rules.append(
                "copy_to_device must make the target's queue wait for a marker of the source's queue before copying, "
                "and the source's queue wait for the copy's marker after it"
            )
        if s.kind in ("setitem", "iop") or any(p.kind == "view" for p in program.steps):
            host_views = [op for op in ("reshape", "permute_dims", "flip") if _served(device_type, op, dtype) == "fallback"]
            if s.kind in ("setitem", "iop") and (_served(device_type, "setitem", dtype) == "fallback" or host_views):
                rules.append(
                    "from_host(host, device, out=buf) must enqueue its write after the work already queued on buf "
                    "(nda writes host views and host-fallback results back this way while readers may be pending)"
                )
        if s.kind in ("unary", "binary", "matmul", "reduce", "gather", "item", "view"):
            rules.append(
                f"the kernel of {s.op or s.kind} must read its inputs on the queue that produced them, in order "
                "(a side queue must first wait for a marker of the main one; a host read at the call must wait)"
            )
        if s.kind == "item":
            rules.append("x[i] of a 1-d array is a 0-d copy, not a view (as in NumPy and on cpu)")
        return "" if not rules else " (the contract rules involved: " + "; ".join(rules) + ")"

    def _witness(self) -> dict[str, Device] | None:
        """Slots on another backend with in-order queues (nda-sim if installed), to tell nda from the backend."""
        tested = self.slots["A"].type
        candidates = [r for r in nda.backends.status() if r.get("state") == "loaded"]
        names = [t for r in candidates for t in (r.get("device_types") or [])]
        if "sim" not in names:
            try:
                nda.backends.ensure_device_type("sim")
                names.append("sim")
            except Exception:  # noqa: BLE001 - no witness then
                pass
        for device_type in sorted(set(names), key=lambda t: (t != "sim", t)):
            if device_type in (tested, "cpu") or not nda.backends.serves(device_type):
                continue
            try:
                if not nda.backends.handle(Device(device_type, 0)).queued:
                    continue
                infos = [info.device for info in nda.backends.devices(device_type)]
            except Exception:  # noqa: BLE001
                continue
            if len(infos) >= (2 if "B" in self.slots else 1):
                slots = {"A": infos[0], "C": CPU}
                if "B" in self.slots:
                    slots["B"] = infos[1]
                return slots
        return None

    def _witness_text(self, program: Program, witness: dict[str, Device] | None, in_order: bool) -> str:
        if witness is None:
            return (
                ". No other backend with queues is loaded to tell nda's engine from the backend (nda-sim is the usual witness: pip install nda-sim)"
            )
        name = witness["A"].type
        if self._witness_pressure is None:
            self._witness_pressure = Pressure(self.pressure.seconds)
        moved = replace(program, devices={k: str(v) for k, v in witness.items()})
        wrong = any(self.check(moved, slots=witness, pressure=self._witness_pressure) for _ in range(3))
        if wrong:
            return (
                f". The same program fails on {name} too (a backend with queues that nda's own tests check): "
                "most likely nda's bug (its front end or engine), not the backend's; please report it to nda"
            )
        party = "the backend's kernel" if in_order else "the backend's, not nda's engine"
        return f". The same program gives cpu's results on {name} (another backend with queues): {party}"


def split_ops(ops: Iterable[str] | None) -> tuple[list[str] | None, list[str] | None]:
    """``ops`` split into ordering families and catalog ops (None: no restriction of that kind).

    With only catalog ops named, no family is selected (``[]``), and the other way round."""
    if ops is None:
        return None, None
    named = list(ops)
    families = [o for o in named if o in FAMILIES]
    others = [o for o in named if o not in FAMILIES]
    return families, others


def run(
    device: Device | str,
    *,
    profile: str = "quick",
    settings: Any = None,
    dtypes: Iterable[Any] | None = None,
    families: Iterable[str] | None = None,
    progress: Callable[[CellResult], None] | None = None,
    stall: Callable[[Device, float], None] | None = None,
) -> Report:
    """The ordering profile on ``device`` (its type's devices 0 and 1, and cpu); see the module docstring."""
    from ._kit import environment, run_cells

    runner = OrderingRunner(device, profile=profile, settings=settings, stall=stall)
    selected = ordering_cells(runner.device, dtypes=dtypes, families=families)
    report = run_cells(runner, selected, progress, runner.reference)
    report.profile = "ordering" if profile in ("quick", "ordering") else profile
    report.environment = {**environment(runner), "ordering": runner_environment(runner)}
    return report


def runner_environment(runner: OrderingRunner) -> dict[str, Any]:
    """What the report says about the ordering run: the slots and how the kit stalls each device."""
    return {
        "slots": {k: str(v) for k, v in runner.slots.items()},
        "stall": {str(d): runner.pressure.describe(d) for s, d in runner.slots.items() if s != "C"},
        "programs_per_family": runner.settings.max_examples,
    }
