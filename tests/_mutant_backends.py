"""Runtime-loaded "mutant" backends: each is correct except for one specific bug.

The conformance kit must fail every mutant on exactly the cell that has the bug, with a
minimal example, and pass everything else it tests. Each mutant serves its own device
type (``mut_<bug>``) so they can all be loaded at once; their buffers are opaque
``MutBuffer`` handles, so nda reaches the data only through ``to_host``/``from_host``,
as with a real accelerator. Load one with ``nda.backends.load("_mutant_backends:<name>")``.

Correct kernels wrap the catalog's NumPy reference; ``BUGS`` lists the wrong ones.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import nda
from nda.ops import CATALOG


class MutBuffer:
    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"MutBuffer({self.data!r})"


def _unwrap(value: Any) -> Any:
    if isinstance(value, MutBuffer):
        return value.data
    if value.__class__ in (tuple, list):
        return value.__class__(_unwrap(v) for v in value)
    return value


def wrap(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """A kernel: unwrap the buffers, call ``fn`` (NumPy), wrap the result."""

    def kernel(*args: Any, **kwargs: Any) -> Any:
        kwargs = {k: (nda.Device("cpu", 0) if k == "device" else _unwrap(v)) for k, v in kwargs.items()}
        result = fn(*_unwrap(args), **kwargs)
        return None if result is None else MutBuffer(np.asarray(result))

    kernel.__name__ = kernel.__qualname__ = f"mutant_{name}"
    return kernel


# ----------------------------------------------------------------------------- the bugs


def _saturating_add(x1: Any, x2: Any) -> np.ndarray:
    """int8 add that clips instead of wrapping around: wrong only when int8 overflows."""
    if np.asarray(x1).dtype == np.int8 or np.asarray(x2).dtype == np.int8:
        return np.clip(np.add(x1, x2, dtype=np.int16), -128, 127).astype(np.int8)
    return np.add(x1, x2)


def _nan_dropping_sum(x: np.ndarray, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> np.ndarray:
    """A sum that skips NaN (numpy.nansum): wrong only when a NaN is summed."""
    return np.asarray(np.nansum(x, axis=axis, keepdims=keepdims, dtype=None if dtype is None else dtype.numpy))


def _float64_multiply(x1: Any, x2: Any) -> np.ndarray:
    """float32 multiply that computes and returns float64: the wrong dtype."""
    return np.multiply(np.asarray(x1, dtype=np.float64), np.asarray(x2, dtype=np.float64))


def _subtract_into_input(x1: Any, x2: Any) -> np.ndarray:
    """subtract that reuses x1's memory for the result: it writes into its input."""
    if isinstance(x1, np.ndarray) and x1.flags.writeable and x1.shape == np.broadcast_shapes(x1.shape, np.shape(x2)):
        return np.subtract(x1, x2, out=x1)
    return np.subtract(x1, x2)


def _negative_as_zero_minus(x: np.ndarray) -> np.ndarray:
    """negative computed as 0 - x: gives +0.0 for +0.0 instead of -0.0."""
    return np.subtract(np.zeros((), x.dtype), x)


def _nan_ignoring_maximum(x1: Any, x2: Any) -> np.ndarray:
    """maximum that prefers numbers to NaN (numpy.fmax): NaN must propagate."""
    return np.fmax(x1, x2)


def _keepdims_ignoring_max(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    """max that ignores keepdims: a result of the wrong shape."""
    return np.asarray(np.max(x, axis=axis))


def _exp_failing_on_large_input(x: np.ndarray) -> np.ndarray:
    """exp that raises (at run time, like a device error) for inputs above 700."""
    if np.any(np.real(x) > 700):
        raise FloatingPointError("mutant exp: argument too large for the device")
    return np.exp(x)


def _logical_and(x1: Any, x2: Any) -> np.ndarray:
    return np.logical_and(x1, x2)


#: name -> (op, dtypes or None for all declared, wrong kernel)
BUGS: dict[str, tuple[str, list[str] | None, Callable[..., Any]]] = {
    "int8_add": ("add", ["int8"], _saturating_add),
    "nan_sum": ("sum", ["float32", "float64", "complex64", "complex128"], _nan_dropping_sum),
    "wrong_dtype": ("multiply", ["float32"], _float64_multiply),
    "writes_input": ("subtract", None, _subtract_into_input),
    "signed_zero": ("negative", ["float32", "float64"], _negative_as_zero_minus),
    "nan_maximum": ("maximum", ["float32", "float64"], _nan_ignoring_maximum),
    "wrong_shape": ("max", None, _keepdims_ignoring_max),
    "device_error": ("exp", ["float64"], _exp_failing_on_large_input),
}

#: Ops every mutant implements correctly, so that the kit can build inputs (and views).
SUPPORT_OPS = ("asarray", "getitem", "astype")


class MutantBackend:
    """Correct for ``SUPPORT_OPS`` and ``ops``; ``bug`` replaces one op's kernel for some dtypes."""

    api_version = "1.1"
    buffer_type = MutBuffer

    def __init__(
        self,
        name: str,
        ops: tuple[str, ...],
        bug: tuple[str, list[str] | None, Callable[..., Any]] | None = None,
        *,
        fallback: bool = False,
        undeclared: bool = False,
    ) -> None:
        self.name = name
        self.device_types = (name,)
        self.ops = ops
        self.bug = bug
        self.fallback_to_host = fallback
        self.undeclared = undeclared

    def devices(self) -> list[Any]:
        return [nda.backends.DeviceInfo(nda.Device(self.name, 0), f"mutant device ({self.name})", 1 << 20)]

    def register(self, register_kernel: Callable[..., None]) -> None:
        for op in dict.fromkeys(SUPPORT_OPS + self.ops):
            decl = CATALOG[op]
            register_kernel(op, decl.supported_dtypes, wrap(decl.reference, op))
        if self.bug is not None:
            op, dtypes, fn = self.bug
            chosen = CATALOG[op].supported_dtypes if dtypes is None else dtypes
            register_kernel(op, chosen, wrap(fn, op), priority=1)
        if self.undeclared:
            # Bypasses the backend validation on purpose: logical_and is declared for bool only.
            nda.dispatch.register("logical_and", self.name, ["bool", "int8"], wrap(_logical_and, "logical_and"), backend=self.name)

    def to_host(self, buf: MutBuffer) -> np.ndarray:
        return np.array(buf.data, copy=True)

    def from_host(self, host: np.ndarray, device: nda.Device, out: MutBuffer | None = None) -> MutBuffer:
        if out is not None:
            out.data[...] = host
            return out
        return MutBuffer(np.array(host, copy=True))

    def device_of(self, buf: MutBuffer) -> nda.Device:
        return nda.Device(self.name, 0)


def _make(name: str) -> MutantBackend:
    op = BUGS[name][0]
    return MutantBackend(f"mut_{name}", (op,), BUGS[name])


int8_add = _make("int8_add")
nan_sum = _make("nan_sum")
wrong_dtype = _make("wrong_dtype")
writes_input = _make("writes_input")
signed_zero = _make("signed_zero")
nan_maximum = _make("nan_maximum")
wrong_shape = _make("wrong_shape")
device_error = _make("device_error")
# ----------------------------------------------------------------------------- a process lost to one op
# These misbehave only while NDA_MUTANT_ARMED=1 (a test sets it for its own run and the worker
# processes it starts): loaded in a test process, they must not kill, hang or poison the other
# tests that draw arrays on every loaded device.


def _armed() -> bool:
    import os

    return os.environ.get("NDA_MUTANT_ARMED") == "1"


def _exit_process(x: np.ndarray) -> np.ndarray:
    """exp that kills its process (a segmentation fault, a driver abort): the worker dies mid-cell."""
    import os

    if _armed():
        os._exit(86)
    return np.exp(x)


def _hang(x: np.ndarray) -> np.ndarray:
    """exp that never returns (a kernel in an endless loop)."""
    import time

    if _armed():
        time.sleep(3600)
    return np.exp(x)


class CorruptingMutant(MutantBackend):
    """A device left unusable by one op, as a GPU after an illegal memory access: ``exp`` corrupts it,
    and every later kernel call of the process then fails (``cudaErrorIllegalAddress`` on the H200)."""

    lost = False

    def register(self, register_kernel: Callable[..., None]) -> None:
        backend = self

        def guarded(op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
            def kernel(*args: Any, **kwargs: Any) -> Any:
                if not _armed():
                    return fn(*args, **kwargs)
                if backend.lost:
                    raise RuntimeError("mutant cudaErrorIllegalAddress: an illegal memory access was encountered (by an earlier op)")
                if op == "exp":
                    backend.lost = True
                    raise RuntimeError("mutant cudaErrorIllegalAddress: an illegal memory access was encountered")
                return fn(*args, **kwargs)

            return kernel

        for op in dict.fromkeys(SUPPORT_OPS + self.ops):
            decl = CATALOG[op]
            register_kernel(op, decl.supported_dtypes, guarded(op, wrap(decl.reference, op)))

    def from_host(self, host: np.ndarray, device: nda.Device, out: MutBuffer | None = None) -> MutBuffer:
        if self.lost and _armed():
            raise RuntimeError("mutant cudaErrorIllegalAddress: an illegal memory access was encountered (by an earlier op)")
        return super().from_host(host, device, out)


process_exit = MutantBackend("mut_process_exit", ("exp", "add"), ("exp", ["float64"], _exit_process))
hang = MutantBackend("mut_hang", ("exp", "add"), ("exp", ["float64"], _hang))
corrupting = CorruptingMutant("mut_corrupting", ("add", "exp", "negative"))

# ----------------------------------------------------------------------------- flush to zero


def flushing(fn: Callable[..., Any], dtypes: tuple[str, ...]) -> Callable[..., Any]:
    """``fn`` treating subnormals of ``dtypes`` as zeros, in its inputs and its result (a GPU's flush-to-zero)."""
    from nda.testing.conformance._subnormals import flush

    chosen = frozenset(dtypes)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        args = tuple(flush(np.asarray(a), chosen) if isinstance(a, np.ndarray) else a for a in args)
        return flush(np.asarray(fn(*args, **kwargs)), chosen)

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


class FlushingMutant(MutantBackend):
    """Kernels that flush ``flushes`` subnormals and declare ``declares`` (``flushes_subnormals``)."""

    def __init__(self, name: str, ops: tuple[str, ...], *, declares: tuple[str, ...], flushes: tuple[str, ...], bug: Any = None) -> None:
        super().__init__(name, ops, bug)
        self.flushes_subnormals = declares
        self.flushes = flushes

    def register(self, register_kernel: Callable[..., None]) -> None:
        for op in dict.fromkeys(SUPPORT_OPS + self.ops):
            decl = CATALOG[op]
            fn = decl.reference if op in SUPPORT_OPS else flushing(decl.reference, self.flushes)
            register_kernel(op, decl.supported_dtypes, wrap(fn, op))
        if self.bug is not None:
            op, dtypes, fn = self.bug
            register_kernel(op, dtypes, wrap(flushing(fn, self.flushes), op), priority=1)


_FLUSH_OPS = ("less", "sqrt", "multiply", "sum")
_SINGLE = ("float32", "complex64")
#: Flushes float32/complex64 subnormals and says so: correct.
flush_declared = FlushingMutant("mut_flush_declared", _FLUSH_OPS, declares=_SINGLE, flushes=_SINGLE)
#: Flushes float32/complex64 subnormals without declaring it.
flush_undeclared = FlushingMutant("mut_flush_undeclared", _FLUSH_OPS, declares=(), flushes=_SINGLE)
#: Declares float32/complex64, flushes float64 too.
flush_float64 = FlushingMutant("mut_flush_float64", _FLUSH_OPS, declares=_SINGLE, flushes=(*_SINGLE, "float64"))
#: Declares and flushes float32/complex64, and its float32 less is less_equal: a real bug besides.
flush_and_wrong = FlushingMutant("mut_flush_and_wrong", _FLUSH_OPS, declares=_SINGLE, flushes=_SINGLE, bug=("less", ["float32"], np.less_equal))

#: Correct, with host fallback for every op it lacks: the kit must say "fallback", not test them.
partial = MutantBackend("mut_partial", ("add", "sum"), fallback=True)
#: Registers logical_and for int8, which the op does not declare.
undeclared = MutantBackend("mut_undeclared", ("logical_and",), undeclared=True)


def _swapped_where(condition: Any, x1: Any, x2: Any) -> np.ndarray:
    """where with its branches swapped: wrong values, and wrong gradients (the VJP runs this kernel)."""
    return np.where(condition, x2, x1)


#: float64 where with swapped branches, the host fallback for the ops its gradient needs besides.
#: Its gradient cell failed with a bool input the case's repr tried to round (the kit crashed).
where_swapped = MutantBackend("mut_where_swapped", ("where",), ("where", ["float64"], _swapped_where), fallback=True)
