"""Memory shared with another library through DLPack, and nda-cuda's stream ordered with that library's.

nda-cuda enqueues its work on a non-blocking stream of its own per device (:mod:`nda_cuda._streams`);
CuPy and PyTorch enqueue theirs on their *current* stream, by default the legacy default stream, which
orders the two libraries with each other but not with a non-blocking stream. Memory imported with
``nda.from_dlpack`` (CuPy, PyTorch, JAX) or exported with ``cupy.from_dlpack(x)`` / ``torch.from_dlpack(x)``
is then written on one stream and read on another, in whatever order the GPU runs them: on the H200
(2026-11-28) ``x = nda.from_dlpack(c); c[0] = 7; x.asnumpy()[0]`` was 0. The DLPack handshake orders
only what was enqueued before the exchange (the consumer passes its stream, the producer makes it
wait), and not even that for a CuPy producer: called inside nda-cuda's stream context, CuPy takes
nda-cuda's stream for its own current one and orders nothing.

:class:`SharedMemory` keeps the buffers whose memory another library holds (by the array owning the
memory, weakly; views of it count) and, for every op that reads or writes one, orders the streams both
ways, as CuPy and PyTorch users are ordered with each other on the legacy default stream:

* **before** the op, nda-cuda's stream waits for an event recorded on each *foreign* stream: the calling
  thread's current CuPy stream and, once PyTorch has initialized CUDA, ``torch.cuda.current_stream()``.
  A write the other library enqueued before the call is seen by the op;
* **after** it, each of those streams waits for an event recorded on nda-cuda's stream. The other
  library's next op sees nda's write, and cannot overwrite memory nda's op still reads.

The ops: every kernel (:func:`wrap_kernel`), host copies (:func:`to_host`: the reading stream waits, the
copy completes before the call returns), host data written into a buffer (:func:`write`: a host
fallback's in-place result), copies to another device, the import itself (:func:`import_buffer`: nda's
stream waits) and the export (:func:`export`: CuPy's handshake makes the consumer wait for nda's
stream). Everything is asynchronous (``cudaEventRecord``, ``cudaStreamWaitEvent``): no host thread
waits and the engine still issues each op at once.

The cost lands on shared buffers only: an op on other buffers pays one test of a dict that stays empty
until something is shared (then one owner lookup per array argument); an op on a shared buffer pays
two event records and two stream waits per foreign stream (a few microseconds). JAX arrays are
immutable: the handshake at the import orders them.

Layer: nda-cuda (a plugin; nda's public modules only).
"""

from __future__ import annotations

import sys
import weakref
from typing import Any, Callable

__all__ = ["SharedMemory", "wrap_kernel", "to_host", "write", "import_buffer", "export"]


def _owner(buf: Any) -> Any:
    """The array owning ``buf``'s memory (``buf`` itself unless it is a view)."""
    base = buf.base
    while base is not None:
        buf, base = base, base.base
    return buf


class SharedMemory:
    """The buffers another library shares, and the ordering of the streams (see the module docstring).

    ``cupy``: the CuPy module (its ``cuda`` namespace: the current stream, events, the runtime);
    ``ndarray``: the buffer type.
    """

    __slots__ = ("cupy", "ndarray", "owners")

    def __init__(self, cupy: Any, ndarray: type) -> None:
        self.cupy = cupy
        self.ndarray = ndarray
        #: id of an owning array -> a weak reference to it (the entry goes with the array).
        self.owners: dict[int, Any] = {}

    def add(self, buf: Any) -> None:
        """Mark ``buf``'s memory as shared with another library (for as long as its owner lives)."""
        owner = _owner(buf)
        key = id(owner)
        owners = self.owners
        ref = owners.get(key)
        if ref is not None and ref() is owner:
            return

        def forget(_ref: Any, key: int = key) -> None:
            owners.pop(key, None)

        owners[key] = weakref.ref(owner, forget)

    def holds(self, buf: Any) -> bool:
        """Whether ``buf`` (a buffer, or a view of one) is shared."""
        if not self.owners or not isinstance(buf, self.ndarray):
            return False
        owner = _owner(buf)
        ref = self.owners.get(id(owner))
        return ref is not None and ref() is owner

    def touches(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether a kernel's arguments (sequences of arrays one level down) include a shared buffer."""
        for value in (*args, *kwargs.values()):
            if value.__class__ in (tuple, list):
                if any(self.holds(item) for item in value):
                    return True
            elif self.holds(value):
                return True
        return False

    def foreign(self, ds: Any) -> list[int]:
        """The raw handles of the other libraries' streams the calling thread enqueues on now (CuPy's current
        stream; PyTorch's once it has initialized CUDA), without ``ds``'s own streams, each once."""
        own = (ds.stream.ptr, ds.reader.ptr)
        ptrs: list[int] = []
        current = int(self.cupy.cuda.get_current_stream().ptr)
        if current not in own:
            ptrs.append(current)
        torch = sys.modules.get("torch")
        if torch is not None:
            try:
                if torch.cuda.is_initialized():
                    ptr = int(torch.cuda.current_stream(ds.index).cuda_stream)
                    if ptr not in own and ptr not in ptrs:
                        ptrs.append(ptr)
            except Exception:  # noqa: BLE001 - a PyTorch without CUDA, or a partial import: no stream of its own
                pass
        return ptrs

    def run(self, ds: Any, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``fn`` enqueued on ``ds``'s stream between the waits both ways (see the module docstring)."""
        ptrs = self.foreign(ds)
        ds.wait_for(ptrs)
        try:
            with ds.device, ds.stream:
                return fn(*args, **kwargs)
        finally:
            ds.make_wait(ptrs)


def wrap_kernel(
    fn: Callable[..., Any],
    source: str,
    streams: list[Any],
    shared: SharedMemory,
    device_index: Callable[..., int],
    oom: type[BaseException],
    out_of_memory: Callable[[int, BaseException], BaseException],
) -> Callable[..., Any]:
    """``fn`` run with its buffers' device current and that device's stream as CuPy's current stream; an op
    on a shared buffer ordered with the other library's streams (:meth:`SharedMemory.run`).

    ``device_index(args, kwargs)`` finds the device of a call (with several GPUs); ``oom`` is the
    allocator's error, turned into ``out_of_memory(index, err)``.
    """
    held = shared.owners  # the dict itself: empty (false) until something is shared

    if len(streams) == 1:
        ds = streams[0]
        stream = ds.stream  # one GPU: it is every thread's current device already

        def kernel(*args: Any, **kwargs: Any) -> Any:
            try:
                if held and shared.touches(args, kwargs):
                    return shared.run(ds, fn, args, kwargs)
                with stream:
                    return fn(*args, **kwargs)
            except oom as err:
                raise out_of_memory(0, err) from None
    else:

        def kernel(*args: Any, **kwargs: Any) -> Any:
            index = device_index(args, kwargs)
            ds = streams[index]
            try:
                if held and shared.touches(args, kwargs):
                    return shared.run(ds, fn, args, kwargs)
                with ds.device, ds.stream:
                    return fn(*args, **kwargs)
            except oom as err:
                raise out_of_memory(index, err) from None

    kernel.__name__ = kernel.__qualname__ = f"cuda[{source}]"
    return kernel


def to_host(ds: Any, shared: SharedMemory, buf: Any, in_order: bool) -> Any:
    """A host copy of ``buf``: on the reader stream (nda has waited for the version's marker), or on the
    compute stream after everything enqueued on it (``in_order``). A shared buffer's copy first waits
    for the other libraries' streams; it completes before the call returns, so nothing waits after it."""
    stream = ds.stream if in_order else ds.reader
    if shared.owners and shared.holds(buf):
        ds.wait_for(shared.foreign(ds), stream)
    with ds.device:
        return buf.get(stream=stream, blocking=True)


def write(ds: Any, shared: SharedMemory, out: Any, data: Any) -> Any:
    """``out[...] = data`` on ``ds``'s stream (ordered both ways when ``out`` is shared); returns ``out``."""
    if shared.owners and shared.holds(out):
        shared.run(ds, out.__setitem__, (Ellipsis, data), {})
    else:
        with ds.device, ds.stream:
            out[...] = data
    return out


def import_buffer(ds: Any, shared: SharedMemory, import_fn: Callable[[], Any]) -> Any:
    """The buffer ``import_fn()`` makes of a producer's memory (``cupy.from_dlpack`` inside ``ds``'s stream
    context), after nda's stream waits for the other libraries' streams; from then on shared."""
    ds.wait_for(shared.foreign(ds))
    with ds.device, ds.stream:
        buf = import_fn()
    shared.add(buf)
    return buf


def export(ds: Any, shared: SharedMemory, buf: Any, kwargs: dict[str, Any]) -> Any:
    """``buf.__dlpack__(**kwargs)`` with ``ds``'s stream current (CuPy makes the consumer's stream wait for
    it); from then on ``buf`` is shared."""
    shared.add(buf)
    with ds.device, ds.stream:
        return buf.__dlpack__(**kwargs)
