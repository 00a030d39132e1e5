"""The backend contract, version 1.4 (``API_VERSION``): what a backend object provides.

nda accepts a backend whose ``api_version`` has the same major number and a minor number
no higher than its own; a minor version only adds optional members (1.1: memory, executor,
completion, DLPack; 1.2: layouts; 1.3: in-order device queues; 1.4: op libraries and
subgraph partitioners). A backend built for a newer
minor version is refused with a message saying to upgrade nda. nda reads a backend's members
once, when it activates (into its handle, ``nda.backends.handle(device)``); a member set or
replaced on the object afterwards is not seen. The members (see the backend
guide, "Writing a backend", which ships with nda: ``python -m nda.testing.conformance --guide``
prints it and says where it and its complete minimal backend are installed):

Identity
    ``name``, ``api_version``, ``device_types`` (the device types it serves; its entry
    point's name is the first one).
Processor info
    ``devices() -> list[DeviceInfo]``: the devices it can run on. Raising, or returning an
    empty list, marks the backend *unavailable* with that reason; nda keeps working.
Kernels
    ``register(register_kernel)``: calls ``register_kernel(op, dtypes, fn, layout=,
    priority=, supports=, device_type=)`` for each kernel. Every call is validated at once
    (unknown op, dtype outside the op's category, unknown layout, a signature that does not
    accept the op's kernel arguments, an incompatible ``api_version``); one failure rejects
    the whole backend with :class:`BackendValidationError` naming it and the fix.
Data movement
    ``to_host(buf) -> numpy.ndarray`` (a copy, after the buffer's pending work);
    ``from_host(host, device, out=None)`` (a new buffer; or, with ``out``, ``host`` written
    in place into that existing buffer of the same shape and dtype, which is returned: the
    host fallback's writes and host views use it); ``buffer_type`` (the class, or tuple of
    classes, of the backend's buffers: the host fallback finds them with ``isinstance``);
    optional ``copy_to_device(buf, device)`` for direct device-to-device copies (else the
    route goes through host memory); ``device_of(buf)``.
Memory (optional, for accelerators)
    ``allocate(nbytes, device)``/``free(allocation)`` as the allocator its kernels use
    (nda never calls these two: it frees memory by dropping its references to buffers),
    ``memory_stats(device) -> dict`` with ``in_use``, ``peak``, ``cached`` (and
    ``capacity``), ``release_all(device) -> int`` (bytes of cached memory given back).
Execution (optional)
    ``executor(device)``: an object with ``submit(fn)`` the engine runs this device's host
    tasks on (default: one worker thread per device). ``synchronize(device)``: wait for all
    enqueued work (``nda.waitall()`` calls it).
In-order queues (optional, 1.3; the way for an accelerator)
    ``in_order_queues = True`` declares that the kernels of a device run in the order they
    are enqueued, on one queue per device (a CUDA stream), and return as soon as their work
    is enqueued. The backend then provides markers: ``record_marker(device)`` (a marker for
    everything enqueued on the device's queue so far: a CUDA event), ``wait_marker(device,
    marker)`` (the device's queue waits for ``marker``, no host thread blocks:
    ``cudaStreamWaitEvent``), ``synchronize_marker(marker)`` (block the calling thread until
    it is reached) and ``marker_reached(marker)`` (a non-blocking query); the engine records
    markers only where something waits (one covers everything enqueued before it). Optional:
    ``buffer_owner(buf)``, the buffer owning a view's memory (the engine orders a write
    through a view as a write of its owner); ``record_timed_marker(device)`` and
    ``marker_time(marker)`` (when a timed marker was reached, in ``time.perf_counter()``
    seconds, or None), which the profiler uses to show when each op ran on the device;
    ``to_host_in_order(buf)``, a host copy enqueued on the queue after everything so far
    (a read of the newest work of a queue then needs no marker). A kernel with a data-dependent check (an
    index bound) returns :class:`nda.engine.Deferred` ``(buffer, check)``; ``check()`` runs
    on the host once the op's work is finished and returns (or raises) the op's error.
    ``to_host(buf)`` copies the buffer as it is, without waiting for the queue: nda has
    waited for exactly the work that wrote it (a copy on the compute queue would also wait
    for everything enqueued after that work).
    The engine issues every op on such a device at once and waits only when the host reads
    data (the backend guide, section 7). After ``os.fork``, the work in flight on such a
    device fails in the child ("still being computed when the process forked"), as a GPU's
    must (CUDA cannot be used in a child forked after it was initialised), unless the backend
    declares ``continues_after_fork = True``: its queues then run on in the child (its fork
    hooks, ``nda.engine.register_at_fork``, restart them with what was queued and not run),
    and its markers stay valid there (nda-sim does this).
Completion (optional, 1.1; superseded by in-order queues)
    ``record_completion(device)``: an :class:`nda.engine.Completion` signalled when the
    work enqueued so far on ``device`` has finished; the engine calls it after each task
    and starts dependent work only after the signal.
Layouts (optional, 1.2)
    Inside ``register``: ``register_kernel(..., layout=, signatures=, out_layout=)`` for
    kernels of a non-strided layout, ``register_kernel.converter(src, dst, fn)``,
    ``register_kernel.storage(layout, to_host=, from_host=, dtypes=None)`` (``dtypes``: the
    only dtypes the device holds in that layout) and ``register_kernel.layout(name, ...)``
    for a layout of the backend's own (see :mod:`nda.layouts`).
Fallback (optional)
    ``fallback_to_host = True``: ops without a kernel run on cpu with copies in and out
    (``nda.FallbackWarning`` once per route; ``nda.config.fallback`` makes it silent or an
    error; ``asarray`` of host data never warns). View ops without a kernel give copies that
    nda keeps in step with their base ("host views", the backend guide, section 4); a view op's kernel, if
    registered, must return a buffer sharing memory with its input.
DLPack (optional)
    ``dlpack(buf, **kwargs)`` and ``dlpack_device(device)`` (export: ``x.__dlpack__`` and
    ``x.__dlpack_device__``). Import: ``dlpack_device_types``, a mapping from the DLPack
    device type codes the backend takes data from (``2``: kDLCUDA, ``13``: kDLCUDAManaged,
    ...; never ``1``, kDLCPU, which nda imports itself) to the device type of its own that
    receives it, and ``import_dlpack(obj, device) -> buffer``: a buffer on ``device`` (the
    device type above, the index the producer's ``__dlpack_device__`` gives) sharing the
    producer's memory, ordered after the producer's pending work (DLPack's ``stream``
    handshake), with NumPy-style ``shape`` and ``dtype``; ``BufferError`` if it cannot be
    imported without a copy. ``nda.from_dlpack`` routes a producer by its
    ``__dlpack_device__`` to the backend that declares that device type.
Subgraphs (optional, 1.4)
    ``partitioner(device) -> Partitioner | None``: the object through which the backend
    claims subgraphs of a graph recorded by ``nda.hybridize`` and compiles each into one
    kernel (MXNet's subgraph API: ``select``/``select_input``/``select_output``, an optional
    ``filter``, ``compile``); see :mod:`nda.hybrid.partition`. Unclaimed nodes run op by op.
Op libraries (1.4)
    Not a backend member: a distribution adds new ops with an
    :class:`nda.ops.extension.OpLibrary` in the entry-point group ``nda.extensions``
    (the backend guide, section 9); ``register_kernel`` accepts the ops of loaded
    libraries as it accepts catalog ops.
Numerics (optional)
    ``flushes_subnormals``: the names of the floating dtypes whose subnormal inputs and
    results the backend's kernels treat as zeros of the same sign (flush-to-zero, what GPU
    compilers do for single precision: CuPy compiles every kernel with ``-ftz=true``, XLA
    flushes on GPUs), e.g. ``("float32", "complex64")``. Default ``()``: subnormals are kept,
    as in NumPy. It is a declaration of semantics, validated at registration:
    ``nda.backends.status()``, ``python -m nda info`` and ``nda.dispatch.explain`` show it,
    and the conformance kit accepts a result of those dtypes that equals the reference's on
    inputs and results with their subnormals flushed (and says so in its report).

(``dlpack_device_types``/``import_dlpack`` and ``flushes_subnormals`` are optional members
of 1.2 backends here; the next minor version of the contract lists them.)

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Protocol, runtime_checkable

from .._config import env_choice, env_flag, env_float, env_int
from .._devices import Device

#: ``env_int``, ``env_float``, ``env_flag``, ``env_choice``: the one parser of ``NDA_*``
#: environment variables (:mod:`nda._config`), for a backend's own settings (``NDA_SIM_DEVICES``,
#: ``NDA_CUDA_CODEGEN``): an empty value is the default, a bad one a ValueError naming the
#: variable, its value and what it takes.
__all__ = ["API_VERSION", "QUEUE_MEMBERS", "DeviceInfo", "Backend", "check_kernel_signature", "env_int", "env_float", "env_flag", "env_choice"]

API_VERSION = "1.4"

#: What a backend declaring ``in_order_queues = True`` must provide.
QUEUE_MEMBERS = ("record_marker", "wait_marker", "synchronize_marker", "marker_reached")


class DeviceInfo:
    """What a backend says about one of its devices."""

    __slots__ = ("device", "name", "memory", "extra")

    def __init__(self, device: Device, name: str, memory: int | None = None, **extra: Any) -> None:
        self.device = device
        self.name = name
        self.memory = memory
        self.extra = extra

    def as_dict(self) -> dict[str, Any]:
        return {"device": str(self.device), "name": self.name, "memory": self.memory, **self.extra}

    def __repr__(self) -> str:
        mem = f", {self.memory / 2**30:.1f} GiB" if self.memory else ""
        return f"<{self.device}: {self.name}{mem}>"


@runtime_checkable
class Backend(Protocol):
    """The required members; the optional ones are listed in the module docstring."""

    name: str
    api_version: str
    device_types: tuple[str, ...]

    def devices(self) -> list[DeviceInfo]: ...

    def register(self, register_kernel: Callable[..., None]) -> None: ...

    def to_host(self, buf: Any) -> Any: ...

    def from_host(self, host: Any, device: Device, out: Any = None) -> Any: ...


def kernel_parameters(decl: Any) -> tuple[list[str], list[str]]:
    """(positional, keyword) argument names the front end passes to a kernel of ``decl``.

    Element-wise kernels take their operands positionally and nothing else. Other ops'
    kernels take the reference implementation's required parameters positionally and its
    parameters with defaults by keyword.
    """
    if decl.family in ("unary", "binary"):
        return (["x"] if decl.family == "unary" else ["x1", "x2"]), []
    ref = inspect.signature(decl.reference)
    positional = [p.name for p in ref.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    keywords = [p.name for p in ref.parameters.values() if p.default is not p.empty or p.kind is p.KEYWORD_ONLY]
    return positional, keywords


def check_kernel_signature(fn: Callable[..., Any], decl: Any) -> str | None:
    """Why ``fn`` cannot be called the way the front end calls kernels of ``decl``, or None.

    Callables without an introspectable signature (some C functions) pass.
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    positional, keywords = kernel_parameters(decl)
    try:
        sig.bind(*[None] * len(positional), **{k: None for k in keywords})
    except TypeError as err:
        wanted = ", ".join(positional + [f"{k}=" for k in keywords])
        return f"kernel {getattr(fn, '__qualname__', fn)!r}{sig} cannot be called as {decl.name}({wanted}): {err}"
    return None
