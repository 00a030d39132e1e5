"""The conformance kit's gradient mode: a device's gradients against finite differences.

For each differentiable op (``nda.autograd.differentiable_ops()``) and floating dtype,
Hypothesis draws calls where the op's derivative exists (:mod:`._gradient_cases`). Each
case runs as a user would write it, on the device under test: the inputs get
``attach_grad()``, the call and a loss ``L = sum(Re(conj(w) * result))`` (fixed random
weights ``w``, one per floating result) are recorded, and ``L.backward()`` fills the
gradients; so the op's VJP, and every op the VJP is made of, runs on the device through
dispatch and the engine. The gradients are compared with

* ``reference="reference"`` (default): central finite differences of the same loss,
  computed on cpu in float64 (complex inputs: the real and imaginary parts separately,
  giving ``dL/da + i dL/db``, the convention nda and PyTorch share);
* or another device (``reference="cpu"``): the same autograd computation there.

Float32 and complex64 cells are compared with tolerances of their precision. A vendor
runs::

    pytest --pyargs nda.testing.conformance --nda-device=mydev --nda-gradients
    python -m nda.testing.conformance mydev --gradients

:func:`check` is also what nda's own test suite uses, on cpu and sim.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from hypothesis import given, reject
from hypothesis import errors as hyp_errors

import nda
from nda._devices import Device, KernelKey, as_device, strided
from nda._dtypes import ALL_DTYPES, DType, as_dtype
from nda.ops import DECLARED as CATALOG  # the catalog and the ops of loaded op libraries

from .._profiles import profile_settings
from ._gradient_cases import GRADIENT_OPS, GradCase, extension_ops, strategy, supports_complex
from ._report import CellResult, Report

__all__ = ["GradientMismatch", "GradientRunner", "gradient_cells", "run", "check", "autograd_gradients", "finite_differences", "torch_gradients"]

CPU = Device("cpu", 0)
_FLOATING = ("float32", "float64", "complex64", "complex128")
_SINGLE = ("float32", "complex64")


class GradientMismatch(AssertionError):
    """A device's gradient differs from the reference's."""


class _Skip(Exception):
    """The case does not apply (the front end refused it, or its values are not finite)."""


# ----------------------------------------------------------------------------- evaluating a case


def _input_dtype(host: np.ndarray, dtype: DType) -> Any:
    if host.dtype.kind == "c":
        return dtype if dtype.category == "complex floating" else as_dtype("complex64" if dtype.name == "float32" else "complex128")
    if host.dtype.kind == "f":
        return dtype if dtype.category == "real floating" else as_dtype("float32" if dtype.name == "complex64" else "float64")
    return None  # integers and bools keep their dtype


def _results(out: Any) -> list[Any]:
    outs = list(out) if isinstance(out, tuple) else [out]
    return [o for o in outs if o.dtype.category in ("real floating", "complex floating")]


def _weights(case: GradCase, results: Sequence[np.ndarray]) -> list[np.ndarray]:
    if case.weights is None:
        rng = np.random.default_rng(sum(r.size for r in results) + 7 * len(results))
        case.weights = [np.asarray(rng.uniform(-1, 1, r.shape) + (1j * rng.uniform(-1, 1, r.shape) if np.iscomplexobj(r) else 0)) for r in results]
    return case.weights


def _loss_host(case: GradCase, arrays: list[Any]) -> float:
    results = [r.asnumpy() for r in _results(case.fn(nda, *arrays))]
    return float(sum(np.sum(np.real(np.conj(w) * r)) for w, r in zip(_weights(case, results), results)))


def autograd_gradients(case: GradCase, device: Device | str, dtype: DType | str) -> list[np.ndarray]:
    """The gradients of the case's loss with respect to its ``wrt`` inputs, by nda.autograd on ``device``."""
    device, dtype = as_device(device), as_dtype(dtype)
    arrays = []
    for host in case.inputs:
        target = _input_dtype(host, dtype)
        arrays.append(nda.asarray(host if target is None else host.astype(target.numpy), device=device))
    for i in case.wrt:
        arrays[i].attach_grad()
    with nda.autograd.record():
        results = _results(case.fn(nda, *arrays))
        weights = _weights(case, [np.asarray(r.asnumpy()) for r in results]) if case.weights is None else case.weights
        loss = None
        for w, r in zip(weights, results):
            wd = nda.asarray(w.astype(r.dtype.numpy), device=device)
            term = nda.sum(nda.real(nda.conj(wd) * r)) if r.dtype.category == "complex floating" else nda.sum(wd * r)
            loss = term if loss is None else loss + term
    if loss is None:
        raise _Skip("the case has no floating result")
    loss.backward()
    return [arrays[i].grad.asnumpy() for i in case.wrt]


def finite_differences(case: GradCase, step: float = 1e-6) -> list[np.ndarray]:
    """Central finite differences of the case's loss in float64 (complex128) on cpu."""
    base = [np.array(h, dtype=np.complex128 if h.dtype.kind == "c" else np.float64 if h.dtype.kind == "f" else h.dtype) for h in case.inputs]

    def loss(values: list[np.ndarray]) -> float:
        return _loss_host(case, [nda.asarray(v, device=CPU) for v in values])

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if not np.isfinite(loss(base)):
            raise _Skip("the loss is not finite at this point")
        grads = []
        for i in case.wrt:
            grad = np.zeros(base[i].shape, dtype=base[i].dtype)
            flat = grad.reshape(-1)
            for j in range(base[i].size):
                parts = (1.0, 1j) if base[i].dtype.kind == "c" else (1.0,)
                for unit in parts:
                    h = step * max(1.0, abs(base[i].reshape(-1)[j]))
                    plus = [b.copy() for b in base]
                    minus = [b.copy() for b in base]
                    plus[i].reshape(-1)[j] += unit * h
                    minus[i].reshape(-1)[j] -= unit * h
                    flat[j] += unit * (loss(plus) - loss(minus)) / (2 * h)
            grads.append(grad)
    return grads


def torch_gradients(case: GradCase) -> list[np.ndarray]:
    """The same gradients by ``torch.autograd`` through ``array_api_compat.torch`` (float64/complex128)."""
    import array_api_compat.torch as xpt
    import torch

    tensors = []
    for i, host in enumerate(case.inputs):
        t = torch.from_numpy(
            np.array(
                host,
                dtype=np.complex128
                if host.dtype.kind == "c"
                else np.float64
                if host.dtype.kind == "f"
                else np.int64
                if host.dtype.kind in "iu"
                else host.dtype,
            )
        )
        if i in case.wrt:
            t.requires_grad_(True)
        tensors.append(t)
    out = case.fn(xpt, *tensors)
    results = [r for r in (list(out) if isinstance(out, tuple) else [out]) if r.dtype.is_floating_point or r.dtype.is_complex]
    weights = _weights(case, [r.detach().resolve_conj().numpy() for r in results])
    loss = sum(
        (torch.real(torch.conj(torch.from_numpy(w)) * r) if r.dtype.is_complex else torch.from_numpy(w) * r).sum() for w, r in zip(weights, results)
    )
    if isinstance(loss, torch.Tensor) and loss.requires_grad:  # torch returns a constant for some empty reductions
        loss.backward()
    return [tensors[i].grad.resolve_conj().numpy() if tensors[i].grad is not None else np.zeros(case.inputs[i].shape) for i in case.wrt]


def check(case: GradCase, device: Device | str, dtype: DType | str = "float64", reference: str = "reference") -> None:
    """Raise :class:`GradientMismatch` if ``device``'s gradients differ from the reference's.

    ``reference`` is ``"reference"`` (finite differences), ``"torch"`` (PyTorch) or a device.
    """
    dtype = as_dtype(dtype)
    if reference == "reference":
        expected = finite_differences(case)
        where = "finite differences"
    elif reference == "torch":
        expected = torch_gradients(case)
        where = "torch.autograd"
    else:
        expected = autograd_gradients(case, reference, dtype)
        where = f"nda.autograd on {reference}"
    got = autograd_gradients(case, device, dtype)
    single = dtype.name in _SINGLE
    problems = []
    for k, (g, e) in enumerate(zip(got, expected)):
        if g.shape != np.shape(e):
            problems.append(f"input {case.wrt[k]}: gradient of shape {g.shape}, {where} give {np.shape(e)}")
            continue
        scale = 1.0 + (float(np.max(np.abs(e))) if np.size(e) else 0.0)
        rtol, atol = (2e-3, 2e-3 * scale) if single else (1e-5, 1e-6 * scale)
        if not np.allclose(g, e, rtol=rtol, atol=atol):
            problems.append(f"input {case.wrt[k]}: gradient {np.round(g, 6).tolist()} but {where} give {np.round(e, 6).tolist()}")
    if problems:
        raise GradientMismatch(f"{case.label} on {device} ({dtype.name}): " + "; ".join(problems))


# ----------------------------------------------------------------------------- the kit's gradient mode


class GradCell:
    """One (differentiable op, dtype) of a device type, for the gradient mode."""

    __slots__ = ("op", "dtype", "layout", "route")

    def __init__(self, op: str, dtype: DType, route: str) -> None:
        self.op, self.dtype, self.layout, self.route = op, dtype, strided, route

    @property
    def id(self) -> str:
        return f"grad-{self.op}-{self.dtype.name}"

    def __repr__(self) -> str:
        return f"<GradCell {self.id}: {self.route}>"


def gradient_cells(device: Device | str, *, ops: Iterable[str] | None = None, dtypes: Iterable[Any] | None = None) -> list[GradCell]:
    """The (op, floating dtype) cells of the gradient mode for ``device``'s type."""
    device_type = device.type if isinstance(device, Device) else str(device).split(":")[0]
    nda.backends.ensure_device_type(device_type)
    if not nda.backends.serves(device_type):
        raise ValueError(f"cannot test device type {device_type!r}: it is not available.{nda.backends.explain_missing(device_type)}")
    opts_in = nda.backends.handle(nda.Device(device_type, 0)).fallback_to_host
    wanted_ops = None if ops is None else set(ops)
    checked = GRADIENT_OPS | extension_ops()
    if wanted_ops is not None and wanted_ops - checked:
        raise ValueError(f"no gradient check for {sorted(wanted_ops - checked)}; differentiable ops: {', '.join(sorted(checked))}")
    wanted_dtypes = None if dtypes is None else {as_dtype(d) for d in dtypes}
    found = []
    for name in sorted(checked):
        if wanted_ops is not None and name not in wanted_ops:
            continue
        kernels = nda.dispatch.table(name).kernels
        for dt in ALL_DTYPES:
            if dt.name not in _FLOATING or (wanted_dtypes is not None and dt not in wanted_dtypes):
                continue
            if dt.category == "complex floating" and not supports_complex(name):
                continue
            if name not in ("getitem", "take", "take_along_axis") and dt not in CATALOG[name].supported_dtypes and dt.category == "complex floating":
                continue
            route = "native" if kernels.get(KernelKey(device_type, dt, strided)) else "fallback" if opts_in else "native"
            found.append(GradCell(name, dt, route))
    return found


def _describe(case: Any) -> str:
    """``repr(case)``, or what can be said when that fails: a failing cell always gets its report."""
    try:
        return repr(case)
    except Exception as err:  # noqa: BLE001
        label = getattr(case, "label", None) or getattr(case, "op", "?")
        return f"<gradient of {label} (its inputs could not be shown: {type(err).__name__}: {err})>"


class GradientRunner:
    """Runs gradient cells of one device against finite differences or another device."""

    def __init__(self, device: Device | str, reference: str = "reference", *, profile: str = "quick", settings: Any = None) -> None:
        self.device = as_device(device if ":" in str(device) or isinstance(device, Device) else f"{device}:0")
        nda.backends.validate_device(self.device)
        if reference != "reference":
            ref = as_device(reference if ":" in reference else f"{reference}:0")
            nda.backends.validate_device(ref)
            reference = str(ref)
        self.reference = reference
        self.profile = profile
        base = settings if settings is not None else profile_settings(profile)
        # A gradient case costs a forward and backward pass plus finite differences: fewer examples than a kernel cell.
        self.settings = base if settings is not None else base.__class__(base, max_examples=max(2, base.max_examples // 2))

    @property
    def reference_label(self) -> str:
        return "finite differences (cpu, float64)" if self.reference == "reference" else self.reference

    def run_cell(self, cell: GradCell) -> CellResult:
        start = time.perf_counter()
        result = self._run_cell(cell)
        result.seconds = time.perf_counter() - start
        return result

    def _run_cell(self, cell: GradCell) -> CellResult:
        base = dict(op=cell.op, dtype=cell.dtype.name, layout="gradient")
        state: dict[str, Any] = {"examples": 0, "failed": None}
        complex_input = cell.dtype.category == "complex floating"

        def gradient_case(case: GradCase) -> None:
            try:
                check(case, self.device, cell.dtype, self.reference)
            except _Skip:
                reject()
            except BaseException:
                state["failed"] = case
                raise
            state["examples"] += 1

        test = self.settings(given(case=strategy(cell.op, complex_input=complex_input))(gradient_case))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                test()
            except hyp_errors.Unsatisfiable:
                return CellResult(**base, status="not covered", reason="no drawn case had a finite loss (a kit bug)")
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as err:  # noqa: BLE001 - any failure of the device is a result
                text = str(err) if isinstance(err, GradientMismatch) else f"{type(err).__name__}: {err}"
                return CellResult(
                    **base,
                    status="failed",
                    examples=state["examples"],
                    example=_describe(state["failed"]),
                    error=text[:2000],
                    found_by="hypothesis",
                    case=state["failed"],
                )
        return CellResult(**base, status="passed", examples=state["examples"])

    def run(self, selected: list[GradCell], progress: Callable[[CellResult], None] | None = None) -> Report:
        from ._kit import run_cells

        return run_cells(self, selected, progress, self.reference_label)


def run(
    device: Device | str,
    *,
    reference: str = "reference",
    ops: Iterable[str] | None = None,
    dtypes: Iterable[Any] | None = None,
    profile: str = "quick",
    settings: Any = None,
    progress: Callable[[CellResult], None] | None = None,
) -> Report:
    """The gradient mode of :func:`nda.testing.conformance.run` (``gradients=True``)."""
    runner = GradientRunner(device, reference, profile=profile, settings=settings)
    return runner.run(gradient_cells(runner.device, ops=ops, dtypes=dtypes), progress)
