"""Subgraph partitioning (backend API 1.4): how a backend claims and compiles parts of a graph.

``nda.hybridize`` records the ops a function issues into a graph. Before running it, nda
offers the graph to the backend of each device it uses, in the style of MXNet's subgraph
API (2018): the backend's ``partitioner(device)`` returns an object that says which nodes
it takes, nda grows subgraphs from them, and the backend compiles each subgraph into one
kernel. Everything the backend does not claim runs op by op, as without hybridize.

A partitioner has (see :class:`ElementwisePartitioner` for a ready base class)::

    select(node) -> bool                  # may this node be part of a subgraph?
    select_input(node, producer) -> bool  # grow from node to the producer of one of its inputs
    select_output(node, consumer) -> bool # grow from node to a consumer of its result
    filter(nodes) -> list                 # optional: the final say on a grown subgraph
    compile(program) -> Compiled | None   # one kernel for the subgraph (None: decline it)

``node`` is a :class:`NodeInfo` (the op, its key and result dtypes, shape, device, layout
and operands). nda does the traversal, keeps each subgraph *convex* (no path leaves it and
comes back, counting in-place writes as edges), orders the result, and hands ``compile`` a
:class:`Program`: the subgraph's instructions in order, with operands that refer to the
subgraph's inputs, earlier instructions or Python scalar constants. Conversions happen
only at the borders: each input arrives in its own dtype and is cast to the instruction's
key dtype inside the kernel; only the values needed outside are written to memory.
``Compiled.fn(*input_buffers) -> tuple of output buffers`` follows the kernel convention
(backend buffers in, backend buffers out); nda runs it as one op through the engine (on a
device with in-order queues it is recorded on the queue like any kernel).

Two evaluators of a :class:`Program` are here for every backend to reuse, both generated
from the same instructions:

* :func:`chunked` runs the device's own element-wise kernels over cache-sized chunks, so
  a chain reads and writes main memory once and gives exactly the eager results (the same
  kernels on the same values);
* :func:`numexpr_source` / :func:`numexpr_evaluator`: the program as one numexpr
  expression per output (optional dependency; results within rounding of the eager ones).
  numexpr reports no floating-point error: :func:`reporting` runs it only where that
  changes nothing and otherwise the chunked evaluator, which reports each op's NumPy
  warnings once, at its line, under the issuing thread's ``np.errstate``, as the ops one by
  one would (``engine._fperrors``).

Layer: backends (README, "Architecture").
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Sequence

import numpy as np

from .._config import env_flag, env_int
from .._dtypes import DType
from ..engine import _fperrors

__all__ = [
    "NodeInfo",
    "Instr",
    "Program",
    "Compiled",
    "ElementwisePartitioner",
    "chunked",
    "numexpr_source",
    "numexpr_evaluator",
    "numexpr_finite",
    "numexpr_available",
    "reporting",
    "RETRY_FAST",
    "FINITE_BLOCK",
    "NUMEXPR_TEMPLATES",
    "CHUNK",
]

#: Elements per chunk of :func:`chunked` (64 KiB of float32 per temporary: the chain stays in L2).
CHUNK = env_int("NDA_FUSION_CHUNK", 1 << 14, minimum=1)


class NodeInfo:
    """What a partitioner sees of one recorded node (read-only).

    ``operands``: per operand, ``("array", dtype)`` (an array of that dtype, cast to ``key``
    inside the op when it differs) or ``("scalar", value)`` (a Python scalar, weakly typed).
    ``index``: the node's position in the recorded order.
    """

    __slots__ = ("index", "op", "family", "key", "out", "shape", "device", "layout", "operands", "site")

    def __init__(
        self,
        index: int,
        op: str,
        family: str,
        key: DType,
        out: DType,
        shape: tuple[int, ...],
        device: Any,
        layout: Any,
        operands: tuple[tuple[str, Any], ...],
        site: str,
    ) -> None:
        self.index, self.op, self.family, self.key, self.out = index, op, family, key, out
        self.shape, self.device, self.layout, self.operands, self.site = shape, device, layout, operands, site

    def __repr__(self) -> str:
        return f"<node #{self.index} {self.op} {self.key.name}->{self.out.name}{self.shape} at {self.site}>"


class Instr:
    """One instruction of a :class:`Program`: ``op`` computed in ``key`` dtype, giving ``out``.

    ``args``: per operand ``("in", i)`` (the program's input ``i``), ``("tmp", j)`` (the
    result of instruction ``j``) or ``("const", value)`` (a Python scalar).
    """

    __slots__ = ("op", "args", "key", "out", "site")

    def __init__(self, op: str, args: tuple[tuple[str, Any], ...], key: DType, out: DType, site: str = "") -> None:
        self.op, self.args, self.key, self.out, self.site = op, args, key, out, site

    def __repr__(self) -> str:
        return f"{self.op}({', '.join(f'{k}{v}' if k != 'const' else repr(v) for k, v in self.args)}) : {self.key.name}->{self.out.name}"


class Program:
    """A claimed subgraph: ``instrs`` in order, ``inputs`` (dtype, shape) per input array,
    ``outputs`` (instruction indices whose values leave the subgraph), ``shape`` (the shape
    of every instruction's result) and ``device``."""

    __slots__ = ("instrs", "inputs", "outputs", "shape", "device")

    def __init__(
        self, instrs: list[Instr], inputs: list[tuple[DType, tuple[int, ...]]], outputs: list[int], shape: tuple[int, ...], device: Any
    ) -> None:
        self.instrs, self.inputs, self.outputs, self.shape, self.device = instrs, inputs, outputs, shape, device

    @property
    def ops(self) -> list[str]:
        return [i.op for i in self.instrs]

    def __repr__(self) -> str:
        return f"<Program {'+'.join(self.ops)} on {self.device}, {len(self.inputs)} inputs -> {len(self.outputs)} outputs {self.shape}>"


class Compiled:
    """A compiled subgraph: ``fn(*input_buffers) -> tuple of output buffers``.

    ``name`` names the technique for ``explain`` (``"chunked numpy"``, ``"numexpr"``,
    ``"cupy.ElementwiseKernel"``); ``source`` is the generated code (or a description);
    ``exact`` says whether results are the eager ones bit for bit (nda's first-call check
    then compares exactly; otherwise within the dtype's rounding).
    """

    __slots__ = ("fn", "name", "source", "exact")

    def __init__(self, fn: Callable[..., tuple[Any, ...]], name: str, source: str, exact: bool) -> None:
        self.fn, self.name, self.source, self.exact = fn, name, source, exact

    def __repr__(self) -> str:
        return f"<Compiled {self.name}{' (exact)' if self.exact else ''}>"


class ElementwisePartitioner:
    """A partitioner that claims chains of element-wise ops of ``ops`` on one device.

    A node is taken when its op is in ``ops``, it is strided, its dtypes are in ``dtypes``
    (key and result) and its result has the subgraph's shape (operands may broadcast up to
    it); subgraphs grow to producers and consumers that qualify. Subclasses give
    :meth:`compile` (and may narrow :meth:`select`).
    """

    def __init__(self, ops: Sequence[str], dtypes: Sequence[DType] | None = None, min_size: int = 1) -> None:
        self.ops = frozenset(ops)
        self.dtypes = None if dtypes is None else frozenset(dtypes)
        self.min_size = min_size

    def select(self, node: NodeInfo) -> bool:
        if node.op not in self.ops or node.layout.name != "strided" or node.family not in ("unary", "binary"):
            return False
        if not node.shape or math.prod(node.shape) < self.min_size:
            return False
        if self.dtypes is not None and (node.key not in self.dtypes or node.out not in self.dtypes):
            return False
        return all(kind == "scalar" or self.dtypes is None or dt in self.dtypes for kind, dt in node.operands)

    def select_input(self, node: NodeInfo, producer: NodeInfo) -> bool:
        return producer.shape == node.shape and producer.device == node.device

    def select_output(self, node: NodeInfo, consumer: NodeInfo) -> bool:
        return consumer.shape == node.shape and consumer.device == node.device

    def filter(self, nodes: list[NodeInfo]) -> list[NodeInfo]:
        return nodes

    def compile(self, program: Program) -> Compiled | None:
        raise NotImplementedError


# ---------------------------------------------------------------------------- evaluators


def chunked(
    program: Program, kernel_for: Callable[[Instr], Callable[..., Any]], astype: Callable[[Any, DType], Any] | None = None, chunk: int = 0
) -> Callable[..., tuple[np.ndarray, ...]]:
    """An evaluator of ``program`` over NumPy arrays, chunk by chunk along the first axis.

    ``kernel_for(instr)`` gives the element-wise kernel of an instruction (the device's own,
    so results are the eager ones); ``astype(array, dtype)`` casts an input to a key dtype
    (default: NumPy's ``astype``). Each chunk of every output is computed with the whole
    chain while its temporaries are in cache, then stored: one pass over memory.
    """
    kernels = [kernel_for(i) for i in program.instrs]
    instrs = program.instrs
    outputs = program.outputs
    shape = program.shape
    cast = astype or (lambda a, d: a.astype(d.numpy, copy=False))
    per_row = math.prod(shape[1:]) if len(shape) > 1 else 1
    rows = max(1, (chunk or CHUNK) // max(per_row, 1))
    out_dtypes = [instrs[o].out.numpy for o in outputs]
    in_full = [len(s) == len(shape) and s and s[0] == shape[0] and shape[0] != 1 for _, s in program.inputs]

    sites = [i.site for i in instrs]
    whole = max(1, shape[0]) if shape else 1  # rows of one chunk that spans the arrays: the ops one by one

    def run(*inputs: Any) -> tuple[np.ndarray, ...]:
        # NumPy's floating-point errors as the ops one by one would report them (engine._fperrors):
        # warnings collected per instruction, then warned once each at its line; a raise (or a
        # handler of the user's) sees the ops over the whole arrays, in eager's order.
        token = _fperrors.collect()
        if token is _fperrors.AS_IS:
            return evaluate(inputs, False, whole)
        try:
            try:
                return evaluate(inputs, token is not None, rows)
            except FloatingPointError:
                if rows >= whole:
                    raise
                _fperrors.restart(token)  # again, op by op over the arrays: eager's error and the warnings before it
                return evaluate(inputs, token is not None, whole)
        finally:
            if token is not None:
                _fperrors.report(token, sites)

    def evaluate(inputs: Sequence[Any], collecting: bool, rows: int) -> tuple[np.ndarray, ...]:
        outs = tuple(np.empty(shape, dtype=d) for d in out_dtypes)
        n = shape[0]
        for start in range(0, n, rows):
            stop = min(n, start + rows)
            ins = [a[start:stop] if full else a for a, full in zip(inputs, in_full)]
            values: list[Any] = []
            for index, (instr, kernel) in enumerate(zip(instrs, kernels)):
                if collecting:
                    _fperrors.at(index)
                args = []
                for kind, ref in instr.args:
                    if kind == "in":
                        a = ins[ref]
                        args.append(a if a.dtype == instr.key.numpy else cast(a, instr.key))
                    elif kind == "tmp":
                        a = values[ref]
                        args.append(a if a.dtype == instr.key.numpy else cast(a, instr.key))
                    else:
                        args.append(ref)
                values.append(kernel(*args))
            for out, o in zip(outs, outputs):
                out[start:stop] = values[o]
        return outs

    return run


#: numexpr spelling of element-wise ops (those whose numexpr form is the same function).
NUMEXPR_TEMPLATES: dict[str, str] = {
    "add": "({0} + {1})",
    "subtract": "({0} - {1})",
    "multiply": "({0} * {1})",
    "divide": "({0} / {1})",
    "negative": "(-{0})",
    "positive": "({0})",
    "square": "({0} * {0})",
    "sqrt": "sqrt({0})",
    "exp": "exp({0})",
    "expm1": "expm1({0})",
    "log": "log({0})",
    "log1p": "log1p({0})",
    "log10": "log10({0})",
    "sin": "sin({0})",
    "cos": "cos({0})",
    "tan": "tan({0})",
    "sinh": "sinh({0})",
    "cosh": "cosh({0})",
    "tanh": "tanh({0})",
    "asin": "arcsin({0})",
    "acos": "arccos({0})",
    "atan": "arctan({0})",
    "asinh": "arcsinh({0})",
    "acosh": "arccosh({0})",
    "atanh": "arctanh({0})",
    "atan2": "arctan2({0}, {1})",
    "abs": "abs({0})",
}
_NUMEXPR_DTYPES = ("float32", "float64")


#: ``NDA_NUMEXPR=0`` turns numexpr off (read once, at import: a bad value fails ``import nda``,
#: naming the variable, instead of becoming a partitioner's note at each compile).
USE_NUMEXPR = env_flag("NDA_NUMEXPR", True)


def numexpr_available() -> bool:
    """Whether numexpr can be used (installed, and not turned off with ``NDA_NUMEXPR=0``: :data:`USE_NUMEXPR`)."""
    if not USE_NUMEXPR:
        return False
    try:
        import numexpr  # noqa: F401
    except ImportError:
        return False
    return True


def numexpr_source(program: Program) -> tuple[list[str], list[tuple[str, Any]]] | None:
    """One numexpr expression per output of ``program`` and its constants ``(name, 0-d array)``,
    or None when the program has an op numexpr lacks, a cast, or a dtype other than float32/64."""
    texts: list[str] = []
    consts: list[tuple[str, Any]] = []
    for instr in program.instrs:
        template = NUMEXPR_TEMPLATES.get(instr.op)
        if template is None or instr.key.name not in _NUMEXPR_DTYPES or instr.out is not instr.key:
            return None
        parts = []
        for kind, ref in instr.args:
            if kind == "in":
                if program.inputs[ref][0] is not instr.key:
                    return None
                parts.append(f"in{ref}")
            elif kind == "tmp":
                if program.instrs[ref].out is not instr.key:
                    return None
                parts.append(texts[ref])
            else:
                if isinstance(ref, complex):
                    return None
                name = f"c{len(consts)}"
                consts.append((name, np.asarray(ref, dtype=instr.key.numpy)))  # typed: float32 stays float32
                parts.append(name)
        texts.append(template.format(*parts))
    return [texts[o] for o in program.outputs], consts


#: After a call whose outputs held NaN or ``inf`` (see :func:`reporting`), this many calls run
#: the exact evaluator at once before the fast one is tried again.
RETRY_FAST = 16

#: Elements per block of :func:`numexpr_finite` (4 MiB of float32 per output: the block is
#: still in cache when it is checked).
FINITE_BLOCK = 1 << 20

#: Ops whose result is NaN or ``inf`` when an operand is (the divisor of ``divide`` excepted):
#: what :func:`reporting`'s check of the outputs relies on.
_CARRY_NON_FINITE = frozenset({"add", "subtract", "multiply", "divide", "negative", "positive", "square"})


def reporting(
    program: Program, fast: Callable[..., tuple[Any, ...]], finite: Callable[..., tuple[Any, ...] | None], exact: Callable[..., tuple[Any, ...]]
) -> Callable[..., tuple[Any, ...]]:
    """An evaluator of ``program`` that reports floating-point errors as the ops would, running
    ``fast`` (one that cannot report them: numexpr) wherever that changes nothing.

    ``fast(*inputs)`` gives the outputs; ``finite(*inputs)`` the same outputs, or None as soon
    as one holds NaN or ``inf`` (:func:`numexpr_finite`); ``exact`` is :func:`chunked`, which
    reports as the ops one by one. All three must give the same values (the eager ones).
    Which one runs is decided per call, under the NumPy error state the kernel runs under
    (the issuing thread's, ``engine._fperrors``):

    * every category ignored: ``fast``;
    * ``under`` not ignored (an underflow leaves no trace in the result), an instruction
      whose result reaches no output, one that divides by a computed value (``a / t`` turns
      an ``inf`` that overflowed into 0), or an op outside the arithmetic ones below:
      ``exact``;
    * else ``finite``: with ``+ - * /``, negation and square, every op that divides by zero,
      overflows or meets an invalid value gives ``inf`` or NaN, and the ops after it carry
      that to an output. All outputs finite: nothing to report, ``finite``'s result stands
      (its check reads each block of each output while it is in cache). Else the call runs
      with ``exact``, which warns or raises as the ops one by one. Data that holds NaN or
      ``inf`` usually does so at the next calls too, so the next :data:`RETRY_FAST` calls run
      ``exact`` at once (the same values), then ``finite`` is tried again.
    """
    instrs = program.instrs
    used = set(program.outputs)
    for j in range(len(instrs) - 1, -1, -1):
        if j in used:
            used.update(ref for kind, ref in instrs[j].args if kind == "tmp")
    unsafe = len(used) < len(instrs) or any(i.op == "divide" and i.args[1][0] == "tmp" for i in instrs)
    unsafe = unsafe or not {i.op for i in instrs} <= _CARRY_NON_FINITE
    exact_calls = [0]  # calls left to run ``exact`` at once (no lock: a race only moves a retry)

    def run(*inputs: Any) -> tuple[Any, ...]:
        modes = _fperrors.modes()
        if modes["divide"] == modes["over"] == modes["invalid"] == modes["under"] == "ignore":
            return fast(*inputs)
        if unsafe or modes["under"] != "ignore":
            return exact(*inputs)
        if exact_calls[0] > 0:
            exact_calls[0] -= 1
            return exact(*inputs)
        token = _fperrors.silenced()  # nothing the check runs may warn
        try:
            outs = finite(*inputs)
        finally:
            _fperrors.unguard(token)
        if outs is not None:
            return outs
        exact_calls[0] = RETRY_FAST
        return exact(*inputs)

    return run


def numexpr_evaluator(program: Program) -> tuple[Callable[..., tuple[np.ndarray, ...]], str] | None:
    """A numexpr evaluator of ``program`` and its source, or None (see :func:`numexpr_source`)."""
    found = numexpr_source(program)
    if found is None:
        return None
    import numexpr

    expressions, consts = found
    constants = dict(consts)
    names = [f"in{i}" for i in range(len(program.inputs))]
    shape = program.shape
    evaluate = numexpr.evaluate  # compiles each expression once per signature (numexpr's cache)

    def run(*inputs: Any) -> tuple[np.ndarray, ...]:
        env = dict(zip(names, inputs))
        env.update(constants)
        results = []
        for text in expressions:
            value = evaluate(text, local_dict=env)
            results.append(value if value.shape == shape else np.broadcast_to(value, shape).copy())
        return tuple(results)

    source = "; ".join(f"out{i} = {text}" for i, text in enumerate(expressions))
    return run, source


def numexpr_finite(program: Program) -> Callable[..., tuple[np.ndarray, ...] | None] | None:
    """A numexpr evaluator of ``program`` that gives None as soon as an output holds NaN or
    ``inf`` (see :func:`reporting`), or None (see :func:`numexpr_source`).

    It runs block by block along the first axis (:data:`FINITE_BLOCK` elements) and checks
    each block of each output (``isfinite(block).all()``) right after numexpr wrote it, while
    it is in cache: no further pass over main memory, though the read costs about a tenth of
    numexpr's time on an arithmetic chain (``python -m benchmarks.fusion``)."""
    found = numexpr_source(program)
    if found is None:
        return None
    import numexpr

    expressions, consts = found
    constants = dict(consts)
    names = [f"in{i}" for i in range(len(program.inputs))]
    shape = program.shape
    evaluate = numexpr.evaluate
    dtypes = [program.instrs[o].out.numpy for o in program.outputs]
    full = [len(s) == len(shape) and bool(s) and s[0] == shape[0] and shape[0] != 1 for _, s in program.inputs]
    # numexpr writes a block in place where the expression's own shape is the program's (else it is broadcast into it)
    whole = [
        tuple(np.broadcast_shapes(*(program.inputs[int(k)][1] for k in re.findall(r"\bin(\d+)\b", text)))) == tuple(shape) for text in expressions
    ]
    per_row = math.prod(shape[1:]) if len(shape) > 1 else 1
    rows = max(1, FINITE_BLOCK // max(per_row, 1))
    isfinite = np.isfinite

    def run(*inputs: Any) -> tuple[np.ndarray, ...] | None:
        outs = tuple(np.empty(shape, dtype=d) for d in dtypes)
        n = shape[0]
        for start in range(0, n, rows):
            stop = min(n, start + rows)
            env = {name: (a[start:stop] if f else a) for name, a, f in zip(names, inputs, full)}
            env.update(constants)
            for out, text, in_place in zip(outs, expressions, whole):
                block = out[start:stop]
                if in_place:
                    evaluate(text, local_dict=env, out=block)
                else:
                    block[...] = evaluate(text, local_dict=env)
                if not isfinite(block).all():
                    return None
        return outs

    return run
