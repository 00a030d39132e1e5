"""Sync points on device queues, and the delivery of a failed op's error there.

A sync point (``x.wait_to_read()``, ``asnumpy``, ``nda.waitall()``…) first waits for the
engine's own tasks on what it reads (the engine's ``wait_for``/``wait_tasks``), then for the
device-queue work that wrote it, here: exactly the marker of the version it reads, on the
caller's thread (:func:`wait_queued`, :func:`host_read`), or everything in flight
(:func:`drain_queues`). An error found there is raised by :func:`deliver`, with the original
traceback and the note of the op that failed, once: ``waitall()`` reports only errors not yet
raised at a read. Backends without queues (API 1.1/1.2) are asked to ``synchronize`` instead.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable

from . import queues as _queues
from ._completion import device_sync
from ._entries import fresh

__all__ = ["deliver", "drain_queues", "host_read", "queued_pending", "wait_queued"]


def wait_queued(array: Any, for_write: bool) -> None:
    """The device-queue part of a sync point on ``array`` (after its engine tasks are done).

    Waits, on this thread, for exactly the marker of the latest write of ``array``'s buffer
    or of the buffer owning its memory (a write through any view), retires up to there and
    raises the error of that work. For a write (``wait_to_write``), everything enqueued on
    the queue so far. Backends without queues: their ``synchronize`` (API 1.1/1.2).
    """
    queue = _queues.queue_for(array)
    if queue is None:
        device_sync(array._meta.device)
        return
    base = array._base
    if for_write:
        queue.drain()
        bufs = (array._buf,) if base is None else (array._buf, base._buf)
    else:
        bufs = _wait_versions(queue, array._meta.device, array._buf, None if base is None else base._buf)
    error = queue.error_of(*bufs)
    if error is not None:
        deliver(error)


def _written(device: Any, buf: Any, base_buf: Any) -> tuple[Any, ...]:
    """``buf``, its base and the buffer owning its memory (the buffers whose writes a read waits for)."""
    owner = _queues._owner_of.get(device.type)
    extra = owner(buf) if owner is not None else None  # every host read asks: no generators here
    if base_buf is None or base_buf is buf:
        return (buf,) if extra is None or extra is buf else (buf, extra)
    return (buf, base_buf) if extra is None or extra is buf or extra is base_buf else (buf, base_buf, extra)


def _wait_versions(queue: _queues.Queue, device: Any, buf: Any, base_buf: Any = None) -> tuple[Any, ...]:
    """Wait for the latest in-flight writes of ``buf``, of its base and of the buffer owning its
    memory; returns those buffers. A backend may learn that a buffer is a view only once the
    op making it has run, so the owner is asked again after each wait until nothing is left."""
    while True:
        bufs = _written(device, buf, base_buf)
        number = queue.version(*bufs)
        if number is None:
            return bufs
        queue.wait(number)


def queued_pending(array: Any) -> bool:
    """Whether device-queue work writing ``array`` has not finished (a non-blocking query)."""
    queue = _queues.queue_for(array)
    if queue is None or array._buf is None:
        return False
    base = array._base
    number = queue.version(array._buf) if base is None else queue.version(array._buf, base._buf)
    return number is not None and not queue.finished(number)


def host_read(device: Any, read: Callable[[Any], Any], buf: Any, base_buf: Any = None) -> Any:
    """``read(buf)`` (a backend's ``to_host``) once the work that wrote ``buf`` is done.

    On a device with in-order queues the backend's ``to_host`` reads the buffer as it is;
    this waits first, on the calling thread, for exactly the marker of the latest write of
    ``buf`` or of the buffer owning its memory (not for the whole device), and raises the
    error of that work with the note of the op that failed. If the read itself raises the
    error of work still in flight (a failed buffer's exception), the entries already done
    are retired first, so that the error carries the note of the op that failed, not of the
    reader.

    When the version read is the newest work on its queue and the backend can copy *in queue
    order* (``to_host_in_order(buf)``: a copy enqueued on the queue itself, after everything
    enqueued before; a CUDA copy on the compute stream), the read does that instead: no marker,
    one wait, as a CuPy user's ``float(x)``. Everything enqueued before the copy is then
    finished, and retired before the data is returned (errors first).
    """
    queue = _queues.queue_of_device(device)
    if queue is None:
        return read(buf)
    in_order = queue.to_host_in_order
    if in_order is not None and read == queue.to_host:
        bufs = _written(device, buf, base_buf)
        number = queue.version(*bufs)
        if number is not None and queue.peek() == number + 1:  # nothing enqueued after it
            return _read_in_order(queue, device, in_order, buf, base_buf)
    bufs = _wait_versions(queue, device, buf, base_buf)
    error = queue.error_of(*bufs)
    if error is not None:
        deliver(error)
    try:
        return read(buf)
    except BaseException as err:
        queue.retire_reached()
        if not getattr(err, "_nda_noted", False):
            raise
        if _queues.first_error is err:
            _queues.first_error = None  # raised here, at a read: waitall() does not raise it again
        raise fresh(err)  # noqa: B904 - fresh() sets the cause (the kernel's traceback)


def _read_in_order(queue: _queues.Queue, device: Any, read: Callable[[Any], Any], buf: Any, base_buf: Any) -> Any:
    """``read(buf)`` copying in queue order; then every number taken before it is finished."""
    taken = queue.take()  # the copy is enqueued after every number below this one
    try:
        data = read(buf)
    except BaseException as err:
        queue.retire_to(taken)  # the work before is finished: its checks run, errors get their notes
        error = queue.error_of(*_written(device, buf, base_buf))
        if error is not None:
            deliver(error)
        if not getattr(err, "_nda_noted", False):
            raise
        raise fresh(err)  # noqa: B904 - fresh() sets the cause (the kernel's traceback)
    queue.retire_to(taken)
    error = queue.error_of(*_written(device, buf, base_buf))
    if error is not None:
        deliver(error)
    return data


def deliver(error: BaseException) -> None:
    """Raise ``error`` (a failed op's, kept by nda) at a sync point, with its original traceback.

    What is raised is a copy: an exception collects the frames it passes through, and the
    kept one would then keep the reader's frames, and with them the failed array, alive.
    """
    if _queues.first_error is error:
        _queues.first_error = None  # delivered here; waitall() reports only errors not yet raised
    raise fresh(error)


def drain_queues() -> BaseException | None:
    """Wait for everything in flight on every device queue; the first error not raised yet."""
    for queue in _queues.all_queues():
        queue.drain()
    error, _queues.first_error = _queues.first_error, None
    return error
