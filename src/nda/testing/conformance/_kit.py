"""The conformance kit: compare a device's kernels with the reference, cell by cell.

A *cell* is one ``(op, dtype, layout)`` of the catalog on one device type. :func:`cells`
classifies every cell from the dispatch tables (never by calling anything): ``native``
(the device registers a kernel), ``fallback`` (no kernel, but the backend opted into the
host fallback and cpu has one), ``missing`` (neither) or ``undeclared`` (a kernel
registered for a dtype outside the op's declared category, itself a failure).

:class:`Runner` tests native cells. For each it lets Hypothesis draw cases (host inputs,
see :mod:`._generators`), runs every case

* on the device under test, through nda's public function, so the whole route (planning,
  casts, dispatch, the engine, the backend's copies) is exercised, and reads the result
  back at a sync point (errors raised by asynchronous work surface there);
* on the reference: either the catalog's NumPy reference functions (``reference=
  "reference"``), called with exactly the arguments nda's planner hands the kernel, or
  the same call on another device (``reference="cpu"``);

and checks that the result's buffer has the dtype and shape nda declared, that values
agree (:func:`nda.testing.assert_allclose`, dtype-aware tolerances, NaN/inf/signed
zeros), that both raised the same exception type if either raised, and that no input
array changed (a kernel must not write into its inputs; ``setitem`` writes only into
its target). Hypothesis shrinks a failure to a minimal example. After a passing
Hypothesis run, a deterministic edge sweep (:func:`._cases.sweep`) runs; a failing sweep
is reduced to the one- or two-element case that still fails. Cells of a sparse layout then
run the degenerate sweep (:func:`._cases.degenerate_sweep`): zero-size matrices, matrices
storing nothing, everything, or nothing in a row.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any, Callable, Iterable

import numpy as np
from hypothesis import given, reject
from hypothesis import errors as hyp_errors

import nda
from nda._devices import Device, KernelKey, Layout, as_device, strided
from nda._dtypes import ALL_DTYPES, DType, as_dtype
from nda import layouts
from nda.ops import DECLARED as CATALOG  # the catalog and the ops of loaded op libraries
from nda.ops.spec import Cast

from .._compare import assert_allclose, host_data
from .._profiles import profile_settings
from ..strategies import to_layout
from . import _cases, _generators, _subnormals
from ._tolerances import tolerance, undetermined_signs
from ._cases import DEVICE, Arr, Case, Raw
from ._report import CellResult, Report

__all__ = ["Cell", "cells", "Runner", "run", "auto_jobs", "ConformanceFailure"]

CPU = Device("cpu", 0)


class ConformanceFailure(AssertionError):
    """A case on which the device and the reference disagree."""


class _Invalid(Exception):
    """nda's front end refused the drawn inputs: not a case of this cell."""


class Cell:
    """One (op, dtype, layout) of a device type and how the device serves it."""

    __slots__ = ("op", "dtype", "layout", "route")

    def __init__(self, op: str, dtype: DType, layout: Layout, route: str) -> None:
        self.op, self.dtype, self.layout, self.route = op, dtype, layout, route

    @property
    def id(self) -> str:
        return f"{self.op}-{self.dtype.name}-{self.layout.name}"

    def __repr__(self) -> str:
        return f"<Cell {self.id}: {self.route}>"


def _device_type(device: Any) -> str:
    return device.type if isinstance(device, Device) else str(device).split(":")[0]


def cells(device: Device | str, *, ops: Iterable[str] | None = None, dtypes: Iterable[Any] | None = None) -> list[Cell]:
    """Every cell of ``device``'s type: each catalog op × each declared dtype × strided and each
    layout the device registers kernels for (plus any registered dtype the op does not declare)."""
    device_type = _device_type(device)
    nda.backends.ensure_device_type(device_type)
    if not nda.backends.serves(device_type):
        raise ValueError(f"cannot test device type {device_type!r}: it is not available.{nda.backends.explain_missing(device_type)}")
    opts_in = nda.backends.handle(nda.Device(device_type, 0)).fallback_to_host
    if opts_in:
        nda.backends.ensure_device_type("cpu")  # the fallback runs cpu's kernels: they must be registered
    from nda.backends import _libraries

    _libraries.load_all()  # the ops of installed op libraries are cells too
    wanted_ops = None if ops is None else set(ops)
    if wanted_ops is not None and wanted_ops - set(CATALOG):
        raise ValueError(f"unknown op(s) {sorted(wanted_ops - set(CATALOG))}; see nda.ops.CATALOG")
    wanted_dtypes = None if dtypes is None else {as_dtype(d) for d in dtypes}
    found = []
    for name, decl in sorted(CATALOG.items()):
        if wanted_ops is not None and name not in wanted_ops:
            continue
        kernels = nda.dispatch.table(name).kernels
        layouts = {k.layout for k, entries in kernels.items() if k.device_type == device_type and entries} | {strided}
        for layout in sorted(layouts, key=lambda lay: (lay is not strided, lay.name)):
            for dt in ALL_DTYPES:
                if wanted_dtypes is not None and dt not in wanted_dtypes:
                    continue
                native = bool(kernels.get(KernelKey(device_type, dt, layout)))
                declared = dt in decl.supported_dtypes
                if not declared:
                    if native:
                        found.append(Cell(name, dt, layout, "undeclared"))
                    continue
                if native:
                    route = "native"
                elif opts_in and kernels.get(KernelKey("cpu", dt, layout)):
                    route = "fallback"
                else:
                    route = "missing"
                found.append(Cell(name, dt, layout, route))
    return found


class _Outcome:
    __slots__ = ("value", "error", "problems", "plan", "hosts", "metadata_ok")

    def __init__(self) -> None:
        self.metadata_ok = True
        self.value: np.ndarray | None = None
        self.error: BaseException | None = None
        self.problems: list[str] = []
        self.plan: Any = None
        self.hosts: dict[int, np.ndarray] = {}


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _short(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}"
    return text if len(text) < 400 else text[:400] + " …"


def public_function(op: str) -> Any:
    """The public function of an op: ``nda.add``, ``nda.linalg.inv`` for ``"linalg.inv"``, or
    ``nda.ext.mylib.fma`` for an op library's ``"mylib.fma"``."""
    if getattr(CATALOG.get(op), "library", None) is not None:
        return nda.ext.function(op)
    extension, _, short = op.rpartition(".")
    return getattr(getattr(nda, extension) if extension else nda, short)


def _count(value: Any) -> int:
    return len(value) if isinstance(value, tuple) else 1


def _fmt(a: Any) -> str:
    if isinstance(a, tuple):
        return "(" + ", ".join(_cases.fmt(v) for v in a) + ")"
    return _cases.fmt(a)


class Runner:
    """Runs cells of one device against one reference (see the module docstring)."""

    def __init__(self, device: Device | str, reference: str = "reference", *, profile: str = "quick", settings: Any = None) -> None:
        self.device = as_device(device if ":" in str(device) or isinstance(device, Device) else f"{device}:0")
        nda.backends.validate_device(self.device)
        self.reference_device: Device | None = None
        if reference != "reference":
            self.reference_device = as_device(reference if ":" in reference else f"{reference}:0")
            nda.backends.validate_device(self.reference_device)
            if self.reference_device.type == self.device.type:
                raise ValueError(f"the reference must be another device type than the one tested ({self.device})")
        self.reference = reference if self.reference_device is None else str(self.reference_device)
        self.profile = profile
        self.settings = settings if settings is not None else profile_settings(profile)
        #: dtypes whose subnormals the device (or the reference) declares it flushes (see _subnormals)
        self.flushed = _subnormals.declared(self.device, self.reference_device)
        self.flushed_cases = 0

    # ------------------------------------------------------------------ one cell
    def run_cell(self, cell: Cell) -> CellResult:
        start = time.perf_counter()
        self.flushed_cases = 0
        result = self._run_cell(cell)
        result.seconds = time.perf_counter() - start
        result.flushed = self.flushed_cases if result.status == "passed" else 0
        return result

    def _run_cell(self, cell: Cell) -> CellResult:
        base = dict(op=cell.op, dtype=cell.dtype.name, layout=cell.layout.name)
        decl = CATALOG[cell.op]
        if cell.route == "undeclared":
            return CellResult(
                **base,
                status="failed",
                error=f"a kernel is registered for {cell.dtype.name}, but {cell.op!r} is declared for {decl.dtypes} dtypes only",
            )
        if cell.route == "fallback":
            return CellResult(**base, status="fallback", reason="no native kernel; nda runs it on cpu through the host fallback")
        if cell.route == "missing":
            return CellResult(**base, status="not covered", reason="no kernel and no host fallback")
        strategy = _generators.strategy(cell.op, cell.dtype)
        if strategy is None:
            return CellResult(**base, status="not covered", reason=f"the kit has no input generator for {cell.op!r}")
        strategy = _generators.for_layout(strategy, cell.dtype, cell.layout)
        if cell.layout is not strided:
            try:
                layouts.info(cell.layout)
            except ValueError as err:  # a layout only named in a kernel key: no arrays of it can be built
                return CellResult(**base, status="not covered", reason=f"cannot build {cell.layout.name} inputs: {err}")
        state: dict[str, Any] = {"examples": 0, "failed": None}

        def conformance_case(case: Case) -> None:
            try:
                self.check(case, cell)
            except _Invalid:
                reject()
            except BaseException:
                state["failed"] = case
                raise
            state["examples"] += 1

        test = self.settings(given(case=strategy)(conformance_case))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                test()
            except hyp_errors.Unsatisfiable:
                return CellResult(**base, status="not covered", reason="every generated input was refused by nda's front end (a kit bug)")
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as err:  # noqa: BLE001 - any failure of the device is a result
                flaky = isinstance(err, getattr(hyp_errors, "FlakyFailure", ())) or isinstance(err, hyp_errors.Flaky)
                case = state["failed"]
                error = _short(err) if not isinstance(err, ConformanceFailure) else str(err)
                if flaky:
                    error = "the failure did not reproduce when replayed (flaky: a race, or state kept between calls): " + error
                error += self._diagnose(case, cell) if case is not None and not flaky else ""
                return CellResult(
                    **base, status="failed", examples=state["examples"], example=repr(case), error=error, found_by="hypothesis", case=case
                )
            for case in _cases.sweep(cell.op, cell.dtype):
                failure = self._try(case, cell)
                if failure is None:
                    state["examples"] += 1
                    continue
                minimal, error = case, failure
                for smaller in _cases.sub_cases(case):
                    found = self._try(smaller, cell)
                    if found is not None:
                        minimal, error = smaller, found
                        break
                error += self._diagnose(minimal, cell)
                return CellResult(
                    **base, status="failed", examples=state["examples"], example=repr(minimal), error=error, found_by="edge sweep", case=minimal
                )
            for case in _cases.degenerate_sweep(cell.op, cell.dtype) if cell.layout is not strided else ():
                failure = self._try(case, cell)
                if failure is None:
                    state["examples"] += 1
                    continue
                failure += self._diagnose(case, cell)
                return CellResult(
                    **base, status="failed", examples=state["examples"], example=repr(case), error=failure, found_by="degenerate sweep", case=case
                )
        return CellResult(**base, status="passed", examples=state["examples"])

    def _try(self, case: Case, cell: Cell) -> str | None:
        try:
            self.check(case, cell)
        except _Invalid:
            return None
        except ConformanceFailure as err:
            return str(err)
        except Exception as err:  # noqa: BLE001
            return _short(err)
        return None

    def _diagnose(self, case: Case, cell: Cell) -> str:
        """Whose bug is it: the backend's kernel ("wrong when run in order"), an ordering bug ("right
        alone, wrong in the program") or nda's front end (see :mod:`._blame`)."""
        from ._blame import diagnose

        return diagnose(self, case, cell)

    # ------------------------------------------------------------------ one case
    def check(self, case: Case, cell: Cell) -> None:
        """Run ``case`` on the device and the reference; raise ConformanceFailure if they differ."""
        got = self._run_on(case, self.device, cell)
        expected, where = self._expected(case, cell, got)
        problems = self._compare(case, cell, got, expected, where)
        if problems and self.flushed and _subnormals.involved(case, cell, self.flushed, got.value, expected.value):
            if not self._compare_flushed(case, cell, got, where):
                self.flushed_cases += 1
                return
        if problems:
            raise ConformanceFailure("\n".join(problems))

    def _expected(self, case: Case, cell: Cell, got: _Outcome) -> tuple[_Outcome, str]:
        if self.reference_device is None:
            return self._reference(case, got), "the catalog's reference"
        return self._run_on(case, self.reference_device, cell, reference=True), f"the reference device {self.reference_device}"

    def _compare_flushed(self, case: Case, cell: Cell, got: _Outcome, where: str) -> list[str]:
        """The problems left when the declared dtypes' subnormals count as zeros (see _subnormals)."""
        flushed_case = _subnormals.flush_case(case, cell, self.flushed)
        if self.reference_device is None:  # the plan and host inputs of the flushed case, from cpu
            expected = self._reference(flushed_case, self._run_on(flushed_case, CPU, cell, reference=True))
        else:
            expected, where = self._expected(flushed_case, cell, got)
        seen = _Outcome()
        seen.value, seen.error, seen.problems, seen.metadata_ok = _subnormals.flush(got.value, self.flushed), got.error, got.problems, got.metadata_ok
        expected.value = _subnormals.flush(expected.value, self.flushed)
        return self._compare(case, cell, seen, expected, f"{where} (subnormals flushed)")

    def _compare(self, case: Case, cell: Cell, got: _Outcome, expected: _Outcome, where: str) -> list[str]:
        """What differs between the device's outcome and the reference's."""
        problems = list(got.problems)
        problems += [f"{where}: {p}" for p in expected.problems]
        if expected.error is not None or got.error is not None:
            if got.error is None:
                problems.append(f"{where} raised {_short(expected.error)}, but {self.device} returned {_fmt(got.value)}")  # type: ignore[arg-type]
            elif expected.error is None:
                problems.append(f"{self.device} raised {_short(got.error)}")
            elif not isinstance(got.error, type(expected.error)):
                problems.append(f"{self.device} raised {_short(got.error)}, but {where} raised {_short(expected.error)}")
        else:
            assert got.value is not None and expected.value is not None
            several = isinstance(expected.value, tuple)
            if several and (not isinstance(got.value, tuple) or len(got.value) != len(expected.value)):
                problems.append(f"{self.device} returned {_count(got.value)} results, {where} gives {len(expected.value)}")
            else:
                pairs = zip(got.value, expected.value) if several else [(got.value, expected.value)]
                for i, (a, d) in enumerate(pairs):
                    label = f"result {i}: " if several else ""
                    if a.dtype != d.dtype or a.shape != d.shape:
                        if got.metadata_ok and expected.metadata_ok:
                            problems.append(f"{label}result is {a.dtype} of shape {a.shape}, {where} gives {d.dtype} of shape {d.shape}")
                    elif case.check_values:
                        rtol, atol = self._tolerance(case, d.dtype, d)
                        # Sparse layouts store no signs of zeros: an unstored element is +0.
                        zeros = case.signed_zeros and cell.layout is strided
                        try:
                            a = undetermined_signs(case, a, d)
                            assert_allclose(a, d, rtol=rtol, atol=atol, signed_zeros=zeros, check_dtype=False)
                        except AssertionError as err:
                            problems.append(f"{label}values differ from {where}: {err}")
        return problems

    def _tolerance(self, case: Case, dtype: np.dtype, expected: np.ndarray | None = None) -> tuple[float, float]:
        return tolerance(case, dtype, expected)

    def _materialize(
        self, case: Case, device: Device, cell: Cell
    ) -> tuple[list[Any], dict[str, Any], list[tuple[Any, np.ndarray, str]], dict[int, np.ndarray]]:
        made: dict[int, Any] = {}
        inputs: list[tuple[Any, np.ndarray, str]] = []
        hosts: dict[int, np.ndarray] = {}

        def conv(value: Any, label: str, top: bool) -> Any:
            if isinstance(value, Arr):
                if id(value) in made:
                    return made[id(value)]
                x = value.on(device)
                snapshot = value.host()
                if top and cell.layout is not strided and x.dtype is cell.dtype:
                    try:
                        x = to_layout(x, cell.layout.name)
                    except ValueError:
                        raise _Invalid() from None  # the layout cannot hold this shape (csr is 2-D)
                    snapshot = x.asnumpy()  # what the layout holds (an unstored -0.0 reads back as 0.0)
                made[id(value)] = x
                inputs.append((x, snapshot, label))
                hosts[id(x)] = snapshot
                return x
            if isinstance(value, Raw):
                return np.array(value.array, copy=True)
            if value is DEVICE:
                return device
            if isinstance(value, (tuple, list)):
                return type(value)(conv(v, f"{label}[{i}]", False) for i, v in enumerate(value))
            return value

        args = [conv(a, f"argument {i}", True) for i, a in enumerate(case.args)]
        kwargs = {k: conv(v, k, True) for k, v in case.kwargs.items()}
        return args, kwargs, inputs, hosts

    def _run_on(self, case: Case, device: Device, cell: Cell, reference: bool = False, in_order: bool = False) -> _Outcome:
        """Run ``case`` through the public function on ``device``; ``in_order``: every input finished
        before the call, and the call before its result is read (``nda.waitall`` between them)."""
        out = _Outcome()
        try:
            args, kwargs, inputs, out.hosts = self._materialize(case, device, cell)
        except _Invalid:
            raise
        except Exception as err:  # noqa: BLE001
            raise ConformanceFailure(f"building the inputs on {device} failed: {_short(err)}") from err
        if in_order:
            try:
                nda.waitall()
            except Exception:  # noqa: BLE001 - an earlier case's error: not this case's business
                pass
        decl = CATALOG[case.op]
        try:
            out.plan = decl.plan(*args, **kwargs)
        except Exception:  # noqa: BLE001 - refused at the call: not a case of this cell
            raise _Invalid() from None
        key = out.plan.key
        if not reference and (key.dtype is not cell.dtype or key.layout is not cell.layout or key.device_type != device.type):
            raise _Invalid()
        target = None
        try:
            result = public_function(case.op)(*args, **kwargs)
            if in_order:
                nda.waitall()
            target = args[0] if decl.mutates else result
            out.value = tuple(host_data(t) for t in target) if isinstance(target, tuple) else host_data(target)  # checked below, naming the call
        except Exception as err:  # noqa: BLE001 - compared with the reference's behaviour
            out.error = err
        if out.value is not None and target is not None:
            pairs = zip(out.value, target) if isinstance(target, tuple) else [(out.value, target)]
            for value, array in pairs:
                if value.dtype != array.dtype.numpy or value.shape != array.shape:
                    out.metadata_ok = False
                    out.problems.append(
                        f"the kernel returned {value.dtype} data of shape {value.shape}, but nda declared "
                        f"{array.dtype.name} of shape {array.shape} for this call"
                    )
        mutated = args[0] if decl.mutates else None
        for x, snapshot, label in inputs:
            if x is mutated:
                continue
            try:
                now = x.asnumpy()
            except Exception as err:  # noqa: BLE001
                out.problems.append(f"reading input {label} back after the op failed: {_short(err)}")
                continue
            if not _same_bits(now, snapshot):
                out.problems.append(f"the op wrote into its input ({label}): it held {_fmt(snapshot)}, afterwards {_fmt(now)}")
        return out

    def _reference(self, case: Case, got: _Outcome) -> _Outcome:
        """The catalog's reference on exactly the kernel arguments of nda's plan."""
        out = _Outcome()
        plan, hosts = got.plan, got.hosts
        decl = CATALOG[case.op]

        def conv(value: Any) -> Any:
            if isinstance(value, nda.NDArray):
                return np.array(hosts[id(value)], copy=True) if id(value) in hosts else value.asnumpy()
            if isinstance(value, Cast):
                return np.asarray(conv(value.array)).astype(value.dtype.numpy)
            if isinstance(value, (tuple, list)):
                return type(value)(conv(v) for v in value)
            if isinstance(value, Device):
                return CPU
            return value

        args = [conv(a) for a in plan.args]
        kwargs = {k: conv(v) for k, v in plan.kwargs.items()}
        try:
            result = decl.reference(*args, **kwargs)
        except Exception as err:  # noqa: BLE001
            out.error = err
            return out
        if decl.outputs is not None:  # several outputs: one declared dtype (and shape) per output
            values: Any = tuple(np.asarray(r) for r in result)
            dtypes = plan.out_dtype if len(plan.out_dtype) == len(values) else (plan.out_dtype[0],) * len(values)
            shapes = plan.out_shape if plan.out_shape is not None else (None,) * len(values)
            checks = [(v, d.numpy, s) for v, d, s in zip(values, dtypes, shapes)]
        else:
            values = np.asarray(args[0] if decl.mutates else result)
            want_dtype = args[0].dtype if decl.mutates else plan.out_dtype.numpy
            want_shape = args[0].shape if decl.mutates else plan.out_shape
            checks = [(values, want_dtype, want_shape)]
        for value, want_dtype, want_shape in checks:
            # A data-dependent op declares no shape (None): only its dtype can be checked.
            if value.dtype != want_dtype or (want_shape is not None and value.shape != want_shape):
                out.metadata_ok = False
                out.problems.append(
                    f"nda core: the reference returns {value.dtype} of shape {value.shape} where nda's planner "
                    f"declares {np.dtype(want_dtype).name} of shape {want_shape}"
                )
        out.value = values
        return out

    # ------------------------------------------------------------------ many cells
    def run(self, selected: list[Cell], progress: Callable[[CellResult], None] | None = None) -> Report:
        return run_cells(self, selected, progress, self.reference)


def run_cells(runner: Any, selected: list[Any], progress: Callable[[CellResult], None] | None, reference: str) -> Report:
    """Run ``selected`` cells in order with ``runner.run_cell`` (the kit's and the gradient
    mode's runners), telling ``progress`` of each result; the report of the whole run."""
    start = time.perf_counter()
    results = []
    for cell in selected:
        result = runner.run_cell(cell)
        results.append(result)
        if progress is not None:
            progress(result)
    return Report(str(runner.device), reference, runner.profile, results, environment(runner), time.perf_counter() - start)


def environment(runner: Runner) -> dict[str, Any]:
    """Versions and settings a report needs to be reproduced."""
    import platform

    import hypothesis

    record = next((r for r in nda.backends.status() if runner.device.type in (r["device_types"] or [r["name"]])), {})
    s = runner.settings
    return {
        "nda": nda.__version__,
        "numpy": np.__version__,
        "hypothesis": hypothesis.__version__,
        "python": platform.python_version(),
        "engine": nda.engine.current().name,
        "backend": {k: record.get(k) for k in ("name", "source", "state", "api_version")},
        "max_examples": s.max_examples,
        "derandomize": s.derandomize,
        "flushes_subnormals": sorted(getattr(runner, "flushed", ())),
        "jobs": 1,
    }


def run(
    device: Device | str,
    *,
    reference: str = "reference",
    ops: Iterable[str] | None = None,
    dtypes: Iterable[Any] | None = None,
    profile: str = "quick",
    settings: Any = None,
    progress: Callable[[CellResult], None] | None = None,
    gradients: bool = False,
    jobs: int | None = 1,
    isolate: bool = False,
    worker_timeout: float | None = None,
    deadline: float | None = None,
    stall: Callable[[Device, float], None] | None = None,
) -> Report:
    """Run the conformance kit on ``device`` (a type such as ``"sim"`` or a device ``"sim:1"``).

    ``reference`` is ``"reference"`` (the catalog's NumPy reference functions) or another
    device (``"cpu"``). ``ops``/``dtypes`` restrict the cells; ``profile`` is ``"quick"``,
    ``"deep"`` or ``"ordering"`` (or pass Hypothesis ``settings``). ``"ordering"`` runs the
    ordering profile alone (programs of dependent ops over the device type's devices 0 and 1
    and cpu, against sequential execution on cpu: :mod:`._ordering`); ``"deep"`` runs it after
    the value cells. The names of its program families (``chains``, ``in-place``, ``views``,
    ``copies``, ``index bounds``, ``mixed``) may be given in ``ops``. ``stall(device, seconds)``
    replaces the kit's ballast as the way the ordering profile keeps a queue busy (see
    :mod:`._pressure`). ``gradients=True`` checks the
    device's gradients instead (see :mod:`._gradients`). ``jobs`` > 1 splits the cells among
    that many worker processes (:mod:`._parallel`; not with ``settings``), ``None`` picks a
    number from the cores and the size of the run (:func:`auto_jobs`). ``isolate=True`` runs one
    op per worker process, ``jobs`` (default: one per core) at a time, so that a crash or a
    device left unusable by one op fails that op's cells only; ``worker_timeout`` (seconds)
    kills a worker that runs longer and fails its cells; ``deadline`` (seconds, worker processes
    only) ends the run then, reporting the ops not finished as not covered. Returns a :class:`Report`.
    """
    if gradients:
        from . import _gradients

        return _gradients.run(device, reference=reference, ops=ops, dtypes=dtypes, profile=profile, settings=settings, progress=progress)
    from . import _ordering

    families, ops = _ordering.split_ops(ops)
    if profile == "ordering":
        return _ordering.run(device, settings=settings, dtypes=dtypes, families=families, progress=progress, stall=stall)
    values = None
    if ops is None or ops:
        values = _run_values(
            device,
            reference=reference,
            ops=ops,
            dtypes=dtypes,
            profile=profile,
            settings=settings,
            progress=progress,
            jobs=jobs,
            isolate=isolate,
            worker_timeout=worker_timeout,
            deadline=deadline,
        )
    if families == [] or (families is None and profile != "deep"):
        assert values is not None
        return values
    ordering = _ordering.run(device, profile=profile, settings=settings, dtypes=dtypes, families=families, progress=progress, stall=stall)
    if values is None:
        return ordering
    environment = {**values.environment, "ordering": ordering.environment.get("ordering")}
    return Report(values.device, values.reference, profile, values.results + ordering.results, environment, values.seconds + ordering.seconds)


def _run_values(
    device: Device | str,
    *,
    reference: str,
    ops: Iterable[str] | None,
    dtypes: Iterable[Any] | None,
    profile: str,
    settings: Any,
    progress: Callable[[CellResult], None] | None,
    jobs: int | None,
    isolate: bool,
    worker_timeout: float | None,
    deadline: float | None,
) -> Report:
    runner = Runner(device, reference, profile=profile, settings=settings)
    selected = cells(runner.device, ops=ops, dtypes=dtypes)
    from ._parallel import default_jobs, run_parallel

    workers = (default_jobs() if isolate else auto_jobs(selected)) if jobs is None else jobs
    if (workers > 1 or isolate) and settings is None:
        return run_parallel(
            runner.device,
            selected,
            reference=runner.reference,
            profile=profile,
            jobs=workers,
            environment=environment(runner),
            progress=progress,
            isolate=isolate,
            worker_timeout=worker_timeout,
            deadline=deadline,
        )
    return runner.run(selected, progress)


def auto_jobs(selected: list[Cell]) -> int:
    """Worker processes for a run of ``selected`` cells: one per core (``NDA_KIT_JOBS`` overrides),
    and one per 100 native cells at most (a worker costs an interpreter start, about a second)."""
    from ._parallel import default_jobs

    if os.environ.get("NDA_KIT_JOBS", "").strip():
        return default_jobs()
    native = sum(1 for c in selected if c.route == "native")
    return max(1, min(default_jobs(), native // 100))
