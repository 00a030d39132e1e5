"""Running an ordering program (:mod:`._programs`) and comparing two runs of it.

:func:`execute` runs a program through nda's public API, either on the devices of the slots
(the device under test: stalls and slow slots applied, nothing synchronised but the program's
own reads) or on the reference (every slot on cpu, ``to_device`` an explicit copy: sequential
execution). It records an :class:`Observation` at each ``print(x)`` step and, at the end, of
every live variable, and which steps raised at the call.

:func:`compare` checks the device's observations against the reference's, with nda's
documented error semantics:

* a value must equal the reference's (dtype, shape, values with the dtype's tolerance);
* where the reference raised (an index array out of bounds: cpu raises ``IndexError`` at the
  call), the device must raise an exception of the same type, at the call or at the sync
  point that reads the result, *never return a value*; ops that read a failed result fail
  the same way;
* a write that fails (``x[i] = v`` with ``i`` out of bounds) leaves its target undefined on an
  asynchronous device (nda poisons it) but unchanged on cpu: the device must raise at the call
  or at the next read of the target; afterwards the target's family (its views, its base) and
  what is computed from it are not compared.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import operator
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import nda
from nda._devices import Device

from .._compare import assert_allclose
from ._cases import fmt
from ._programs import Program, Step, _render

__all__ = ["Observation", "Execution", "execute", "compare", "describe_step"]

CPU = Device("cpu", 0)
_IOPS = {"+": operator.iadd, "*": operator.imul, "-": operator.isub}


class _Failed:
    """A variable whose step raised at the call (or read a variable that did)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


@dataclass
class Observation:
    """What a read of variable ``var`` at step ``step`` gave (``step == len(steps)``: the final reads)."""

    step: int
    var: int
    value: np.ndarray | None = None
    dtype: str = ""
    error: BaseException | None = None
    device: str = ""


@dataclass
class Execution:
    """One run of a program: its observations and the steps that raised at the call."""

    observations: dict[tuple[int, int], Observation] = field(default_factory=dict)
    call_errors: dict[int, BaseException] = field(default_factory=dict)
    #: steps not run because they read a variable whose step raised at the call (its error)
    skipped: dict[int, BaseException] = field(default_factory=dict)
    where: str = ""


def describe_step(program: Program, i: int) -> str:
    if i >= len(program.steps):
        return "the final reads"
    return f"step {i + 1}, `{_render(program.steps[i], program.dtype)}`"


def execute(
    program: Program,
    devices: dict[str, Device] | None,
    *,
    stall: Callable[[Device, str], None] | None = None,
    delaying: Callable[[tuple[Device, ...], str], Any] | None = None,
    sync_after: Callable[[int], bool] | None = None,
) -> Execution:
    """Run ``program`` on ``devices`` (slot -> device), or on the reference when ``devices`` is None.

    ``stall(device)`` runs the program's stall steps and ``delaying(devices)`` (a context
    manager) delays every op on the program's slow slots; ``sync_after(i)``: wait for all work
    after step ``i`` (``nda.waitall``, its error swallowed: it is read again where it is due).
    """
    reference = devices is None
    run = Execution(where="cpu" if reference else ", ".join(sorted({str(d) for d in devices.values()})))
    env: dict[int, Any] = {}
    slow = tuple(devices[s] for s in program.slow if s in devices) if not reference and delaying is not None else ()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        context = delaying(slow, program.slow_kind) if slow else _nothing()
        with context:
            for i, s in enumerate(program.steps):
                _step(program, i, s, env, devices, run, stall)
                if sync_after is not None and sync_after(i):
                    _waitall()
        final = len(program.steps)
        for var in sorted(env):
            run.observations[final, var] = _read(final, var, env[var])
        env.clear()
        _waitall()
    return run


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _waitall() -> None:
    try:
        nda.waitall()
    except Exception:  # noqa: BLE001 - the errors are read again at the program's own reads
        pass


def _read(i: int, var: int, x: Any) -> Observation:
    if isinstance(x, _Failed):
        return Observation(i, var, error=x.error)
    try:
        value = x.asnumpy()
    except Exception as err:  # noqa: BLE001 - compared with the reference's behaviour
        return Observation(i, var, error=err, device=str(x.device))
    return Observation(i, var, value=np.array(value, copy=True), dtype=x.dtype.name, device=str(x.device))


def _step(
    program: Program,
    i: int,
    s: Step,
    env: dict[int, Any],
    devices: dict[str, Device] | None,
    run: Execution,
    stall: Callable[[Device, str], None] | None,
) -> None:
    if s.kind == "stall":
        if devices is not None and stall is not None and s.slot in devices:
            stall(devices[s.slot], s.op)
        return
    if s.kind == "read":
        run.observations[i, s.ins[0]] = _read(i, s.ins[0], env[s.ins[0]])
        return
    if s.kind == "drop":
        del env[s.ins[0]]
        return
    failed = next((env[v] for v in s.ins if isinstance(env.get(v), _Failed)), None)
    if failed is not None:  # it reads a result that failed at the call: it fails the same way
        run.skipped[i] = failed.error
        if s.out is not None:
            env[s.out] = failed
        return
    try:
        result = _apply(program, s, env, devices)
    except Exception as err:  # noqa: BLE001 - compared with the reference's behaviour
        run.call_errors[i] = err
        if s.out is not None:
            env[s.out] = _Failed(err)
        return
    if s.out is not None:
        env[s.out] = result
    elif s.kind == "iop":
        env[s.ins[0]] = result


def _apply(program: Program, s: Step, env: dict[int, Any], devices: dict[str, Device] | None) -> Any:
    x = env[s.ins[0]] if s.ins else None
    if s.kind == "new":
        dtype = nda.int64 if s.data.dtype.kind == "i" else getattr(nda, program.dtype)
        data = np.array(s.data, copy=True)  # on cpu nda shares the NumPy array's memory: the program's data must stay
        return nda.asarray(data, dtype=dtype, device=CPU if devices is None else devices[s.slot])
    if s.kind == "unary":
        return getattr(nda, s.op)(x)
    if s.kind in ("binary", "shift"):
        return getattr(nda, s.op)(x, env[s.ins[1]] if len(s.ins) > 1 else s.data)
    if s.kind == "matmul":
        return x @ env[s.ins[1]]
    if s.kind == "reduce":
        return getattr(nda, s.op)(x, axis=s.key)
    if s.kind == "view":
        if s.op == "reshape":
            return nda.reshape(x, s.data)
        if s.op == "transpose":
            return nda.permute_dims(x, (1, 0))
        if s.op == "flip":
            return nda.flip(x)
        return x[s.key]
    if s.kind == "item":
        return x[s.key]
    if s.kind == "setitem":
        key = env[s.ins[-1]] if s.key is None else s.key
        x[key] = env[s.ins[1]] if s.data is None and s.key is not None else s.data
        return None
    if s.kind == "iop":
        return _IOPS[s.op](x, env[s.ins[1]] if len(s.ins) > 1 else s.data)
    if s.kind == "to_device":
        return nda.asarray(x, copy=True) if devices is None else x.to_device(devices[s.slot])
    if s.kind == "gather":
        return x[env[s.ins[1]]]
    raise ValueError(f"unknown step {s.kind!r}")


# ----------------------------------------------------------------------------- comparing two runs


def _text(obs: Observation) -> str:
    if obs.error is not None:
        text = f"{type(obs.error).__name__}: {str(obs.error).splitlines()[0] if str(obs.error) else ''}"
        return text if len(text) < 200 else text[:200] + " …"
    assert obs.value is not None
    return fmt(obs.value)


def compare(program: Program, got: Execution, expected: Execution) -> list[tuple[int, int | None, str]]:
    """The differences between the device's run and the reference's, as ``(step, variable read, text)``, in
    step order (``step == len(program.steps)``: the final reads)."""
    owner = program.families()
    tainted: set[int] = set()  # owners (families) and variables no longer compared
    must_raise: dict[int, tuple[type, int]] = {}  # variable -> (error type, step) due at its next read
    problems: list[tuple[int, int | None, str]] = []

    def is_tainted(v: int) -> bool:
        return v in tainted or owner.get(v, v) in tainted

    def check(obs_key: tuple[int, int]) -> None:
        i, v = obs_key
        dev, ref = got.observations.get(obs_key), expected.observations.get(obs_key)
        if dev is None or ref is None:
            return
        where = describe_step(program, i) if i < len(program.steps) else f"the final read of v{v}"
        device = dev.device or got.where
        if v in must_raise:
            kind, step = must_raise.pop(v)
            if dev.error is None or not isinstance(dev.error, kind):
                problems.append(
                    (
                        i,
                        v,
                        f"{where}: {device} gives {_text(dev)}; the write of {describe_step(program, step)} failed on cpu "
                        f"({kind.__name__}), so this read must raise {kind.__name__} (an out-of-bounds index raises at the "
                        "call or at the sync point, and never leaves a value behind)",
                    )
                )
            return
        if is_tainted(v):
            return
        if ref.error is not None:
            if dev.error is None:
                problems.append(
                    (
                        i,
                        v,
                        f"{where}: {device} returned {_text(dev)}, but sequential execution on cpu raised {_text(ref)} "
                        f"(nda raises it at the sync point, never returns a value)",
                    )
                )
            elif not isinstance(dev.error, type(ref.error)):
                problems.append((i, v, f"{where}: {device} raised {_text(dev)}, but sequential execution on cpu raised {_text(ref)}"))
            return
        if dev.error is not None:
            problems.append((i, v, f"{where}: {device} raised {_text(dev)}, where sequential execution on cpu gives {_text(ref)}"))
            return
        assert dev.value is not None and ref.value is not None
        if dev.dtype != ref.dtype or dev.value.shape != ref.value.shape:
            problems.append((i, v, f"{where}: {device} gives {dev.dtype} of shape {dev.value.shape}, cpu {ref.dtype} of shape {ref.value.shape}"))
            return
        try:
            assert_allclose(dev.value, ref.value, check_dtype=False)
        except AssertionError:
            problems.append((i, v, f"{where}: {device} gives {_text(dev)}, where sequential execution on cpu gives {_text(ref)}"))

    for i, s in enumerate(program.steps):
        error = got.call_errors.get(i)
        due = expected.call_errors.get(i) or expected.skipped.get(i)  # the reference failed here too (its input failed)
        if error is not None and not isinstance(error, type(due) if due is not None else ()) and not any(is_tainted(v) for v in s.ins):
            there = "it runs on cpu" if due is None else f"on cpu it raises {type(due).__name__}"
            problems.append((i, None, f"{describe_step(program, i)} raised {type(error).__name__}: {error} at the call on the device; {there}"))
        if s.kind == "read":
            check((i, s.ins[0]))
        target = s.writes()
        if target is not None:
            reads_tainted = any(is_tainted(v) for v in s.ins[1:])
            error = expected.call_errors.get(i)
            if error is not None and not isinstance(got.call_errors.get(i), type(error)):
                must_raise[target] = (type(error), i)
            if error is not None or reads_tainted:
                tainted.add(owner.get(target, target))
        elif s.out is not None and any(is_tainted(v) for v in s.ins):
            tainted.add(s.out)
        if s.kind == "drop":
            must_raise.pop(s.ins[0], None)
    final = len(program.steps)
    for key in sorted(k for k in got.observations if k[0] == final):
        check(key)
    return problems
