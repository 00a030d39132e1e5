"""nda-sim's subgraph partitioner (backend API 1.4): element-wise chains as one op on the stream.

A chain claimed here runs as one work item on the device's stream thread: nda's chunked
evaluator (:func:`nda.backends.fusion.chunked`) over the same reference functions nda-sim's
native kernels run (flushing subnormals when declared), so the results are the eager ones
bit for bit, and the fused op goes through the device queue like any kernel (marker,
errors at sync points with the op's note).
"""

from __future__ import annotations

from typing import Any

from nda.backends import fusion
from nda.engine import Deferred
from nda.ops import DECLARED

from . import _flush
from ._device import InputFailed, SimBuffer, read, submit, track


class SimPartitioner(fusion.ElementwisePartitioner):
    """Claims chains of the element-wise ops nda-sim has native kernels for."""

    def __init__(self, backend: Any, device: Any) -> None:
        super().__init__([n for n, d in DECLARED.items() if d.family in ("unary", "binary")])
        self.backend = backend
        self.device = device

    def compile(self, program: fusion.Program) -> fusion.Compiled:
        flushed = self.backend.flushes_subnormals
        evaluator = fusion.chunked(program, lambda instr: _flush.wrap(DECLARED[instr.op], flushed))
        backend, device = self.backend, program.device
        count = len(program.outputs)

        def kernel(*bufs: Any) -> Deferred:
            stream = backend._stream(device)
            alloc = backend._allocator(device)
            outs = tuple(SimBuffer(device) for _ in range(count))

            def work() -> None:
                try:
                    results = evaluator(*[read(b) for b in bufs])
                    for out, result in zip(outs, results):
                        track(out, alloc, alloc.allocate(result.nbytes))
                        out._array = result
                except BaseException as err:
                    for out in outs[1:]:  # the first output gets the error from submit()
                        out._error = err.error if isinstance(err, InputFailed) else err
                    raise

            return Deferred(outs, submit(stream, work, outs[0], more=outs[1:]))

        return fusion.Compiled(
            kernel, "chunked numpy on the sim stream", " -> ".join(program.ops) + " (nda-sim's reference kernels, chunk by chunk)", exact=True
        )
