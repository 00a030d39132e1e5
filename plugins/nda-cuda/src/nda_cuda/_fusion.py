"""nda-cuda's subgraph partitioner (backend API 1.4): element-wise chains as one CuPy kernel.

``nda.hybridize`` offers each recorded graph to the backend; :class:`CudaPartitioner` claims
chains of real floating element-wise ops whose CuPy ufunc is one C expression (the
:data:`TEMPLATES`), and :func:`cuda_source` turns a claimed
:class:`~nda.backends.fusion.Program` into the three strings of a
``cupy.ElementwiseKernel`` (``in_params``, ``out_params``, ``operation``): one thread per
element reads the chain's inputs once, keeps every intermediate in registers and writes
only the values needed outside, one pass over memory instead of one per op.

Exactness: each instruction is computed in its key dtype (``float``/``double``
variables, inputs cast at the border), with the same CUDA math functions CuPy's ufuncs
call, and the kernel is compiled with ``--fmad=false`` so ``a * b + c`` is not contracted
into a fused multiply-add (which rounds once where the eager ops round twice). Python
scalars are kernel arguments of the key dtype (weakly typed, as in the eager ops).

With nda-cuda's element-wise generator (:mod:`nda_cuda._elementwise`, issue 28) the claimed
program runs as one generated kernel instead (:func:`generated_program`): each instruction
calls the very function the eager op's generated kernel calls, so the fused results are the
eager ones bit for bit, with 16-byte vector accesses; ``cupy.ElementwiseKernel`` remains for
inputs the generator does not take (strided views).

Everything here takes the array module as a parameter. :func:`python_source` generates,
from the same program, the equivalent array-module code (``t0 = xp.multiply(in0, in1)``),
which the test suite runs over its model of CuPy (``tests/_cuda_numpy_mirror.py``) without
a GPU; the CUDA source itself is unit-tested as text and parsed by ``cupy.ElementwiseKernel``
there. Compiling and timing it needs a GPU (owed: ``python -m benchmarks.gpu``).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

import numpy as np

from nda.backends import fusion

__all__ = ["TEMPLATES", "CudaPartitioner", "cuda_source", "python_source"]

#: op -> (C expression over operand names, the array-module function computing the same)
TEMPLATES: dict[str, tuple[str, str]] = {
    "add": ("({0} + {1})", "add"),
    "subtract": ("({0} - {1})", "subtract"),
    "multiply": ("({0} * {1})", "multiply"),
    "divide": ("({0} / {1})", "divide"),
    "negative": ("(-{0})", "negative"),
    "positive": ("({0})", "positive"),
    "square": ("({0} * {0})", "square"),
    "sqrt": ("sqrt({0})", "sqrt"),
    "exp": ("exp({0})", "exp"),
    "expm1": ("expm1({0})", "expm1"),
    "log": ("log({0})", "log"),
    "log2": ("log2({0})", "log2"),
    "log10": ("log10({0})", "log10"),
    "log1p": ("log1p({0})", "log1p"),
    "sin": ("sin({0})", "sin"),
    "cos": ("cos({0})", "cos"),
    "tan": ("tan({0})", "tan"),
    "sinh": ("sinh({0})", "sinh"),
    "cosh": ("cosh({0})", "cosh"),
    "tanh": ("tanh({0})", "tanh"),
    "asin": ("asin({0})", "arcsin"),
    "acos": ("acos({0})", "arccos"),
    "atan": ("atan({0})", "arctan"),
    "asinh": ("asinh({0})", "arcsinh"),
    "acosh": ("acosh({0})", "arccosh"),
    "atanh": ("atanh({0})", "arctanh"),
    "atan2": ("atan2({0}, {1})", "arctan2"),
    "abs": ("fabs({0})", "absolute"),
}
_CTYPES = {"float32": "float", "float64": "double"}
OPTIONS = ("--fmad=false",)


def cuda_source(program: fusion.Program) -> tuple[str, str, str, list[Any]]:
    """``(in_params, out_params, operation, scalars)`` of a ``cupy.ElementwiseKernel`` for ``program``.

    The kernel is called as ``kernel(*inputs, *scalars)``; ``scalars`` are NumPy scalars of
    the key dtype of the instruction using them.
    """
    params = [f"{dtype.name} in{i}" for i, (dtype, _) in enumerate(program.inputs)]
    scalars: list[Any] = []
    lines = []
    for k, instr in enumerate(program.instrs):
        ctype = _CTYPES[instr.key.name]
        operands = []
        for kind, ref in instr.args:
            if kind == "in":
                source = program.inputs[ref][0]
                operands.append(f"in{ref}" if source is instr.key else f"(({ctype})in{ref})")
            elif kind == "tmp":
                operands.append(f"t{ref}" if program.instrs[ref].out is instr.key else f"(({ctype})t{ref})")
            else:
                name = f"c{len(scalars)}"
                scalars.append(instr.key.numpy.type(ref))
                params.append(f"{instr.key.name} {name}")
                operands.append(name)
        lines.append(f"{_CTYPES[instr.out.name]} t{k} = {TEMPLATES[instr.op][0].format(*operands)};")
    outs = [f"{program.instrs[o].out.name} out{i}" for i, o in enumerate(program.outputs)]
    lines += [f"out{i} = t{o};" for i, o in enumerate(program.outputs)]
    return ", ".join(params), ", ".join(outs), "\n".join(lines), scalars


def python_source(program: fusion.Program) -> str:
    """The same program as array-module code: ``def fused(xp, in0, ..., c0, ...)`` returning the outputs."""
    names = [f"in{i}" for i in range(len(program.inputs))]
    consts = []
    lines = []
    for k, instr in enumerate(program.instrs):
        dtype = f"xp.{instr.key.name}"
        operands = []
        for kind, ref in instr.args:
            if kind == "in":
                source = program.inputs[ref][0]
                operands.append(f"in{ref}" if source is instr.key else f"in{ref}.astype({dtype})")
            elif kind == "tmp":
                operands.append(f"t{ref}" if program.instrs[ref].out is instr.key else f"t{ref}.astype({dtype})")
            else:
                name = f"c{len(consts)}"
                consts.append(name)
                operands.append(name)
        lines.append(f"    t{k} = xp.{TEMPLATES[instr.op][1]}({', '.join(operands)})")
    lines.append(f"    return ({', '.join(f't{o}' for o in program.outputs)},)")
    return f"def fused(xp, {', '.join(names + consts)}):\n" + "\n".join(lines) + "\n"


def generated_program(program: fusion.Program) -> tuple[Any, list[Any]]:
    """The program for nda-cuda's kernel generator, and its scalar arguments: each instruction
    calls the function the eager op's generated kernel calls (:mod:`nda_cuda._codegen`), in its
    key dtype, with C casts at the border (the eager ``astype`` kernels' conversions), so
    fused results equal the eager ones bit for bit."""
    from . import _codegen as cg

    operands = [(dtype.name, False) for dtype, _ in program.inputs]
    scalars: list[Any] = []
    helpers: dict[str, str] = {}
    lines = []
    for k, instr in enumerate(program.instrs):
        ctype = cg.CTYPE[instr.key.name]
        args = []
        for kind, ref in instr.args:
            if kind == "in":
                source = program.inputs[ref][0]
                args.append(f"v{ref}" if source is instr.key else f"(({ctype})v{ref})")
            elif kind == "tmp":
                args.append(f"t{ref}" if program.instrs[ref].out is instr.key else f"(({ctype})t{ref})")
            else:
                args.append(f"v{len(operands)}")
                operands.append((instr.key.name, True))
                scalars.append(instr.key.numpy.type(ref))
        name, definition = cg.op_function(instr.op, instr.key.name)
        helpers[name] = definition
        lines.append(f"const {cg.CTYPE[instr.out.name]} t{k} = {name}({', '.join(args)});")
    lines += [f"r{j} = t{o};" for j, o in enumerate(program.outputs)]
    outputs = tuple(program.instrs[o].out.name for o in program.outputs)
    return cg.Program("fused", tuple(operands), outputs, "\n".join(lines), tuple(helpers.items())), scalars


class CudaPartitioner(fusion.ElementwisePartitioner):
    """Claims chains of :data:`TEMPLATES` ops in float32/float64 on one GPU.

    ``xp`` is CuPy (``cupy.ElementwiseKernel`` on the device's stream) or, in the test
    suite, a NumPy model of it: then the program runs as :func:`python_source` over ``xp``,
    generated from the same instructions.
    """

    def __init__(self, xp: Any, run_on_stream: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None, generator: Any = None) -> None:
        from nda import float32, float64

        super().__init__(list(TEMPLATES), dtypes=[float32, float64])
        self.xp = xp
        self.run_on_stream = run_on_stream or (lambda fn: fn)
        #: nda-cuda's kernel generator (:mod:`nda_cuda._elementwise`): it runs the programs whose
        #: inputs it takes, with the eager kernels' own functions; None: ElementwiseKernel only.
        self.generator = generator

    def select(self, node: fusion.NodeInfo) -> bool:
        if node.op not in self.ops or node.family not in ("unary", "binary") or not node.shape or node.layout.name != "strided":
            return False
        if node.key.name not in _CTYPES or node.out is not node.key:
            return False
        real = ("bool", "signed integer", "unsigned integer", "real floating")
        return all((kind == "scalar" and not isinstance(v, complex)) or (kind == "array" and v.category in real) for kind, v in node.operands)

    def compile(self, program: fusion.Program) -> fusion.Compiled:
        compiled = self._compile(program)
        if self.generator is None:
            return compiled
        generated, scalars = generated_program(program)
        run_generated = self.generator.run
        other = compiled.fn

        def run(*inputs: Any) -> tuple[Any, ...]:
            outs = run_generated(generated, (*inputs, *scalars))
            return other(*inputs) if outs is None else outs

        source = f"{generated.code} (else {compiled.name}: {compiled.source})"
        return fusion.Compiled(self.run_on_stream(run), "nda_cuda generated kernel", source, exact=True)

    def _compile(self, program: fusion.Program) -> fusion.Compiled:
        in_params, out_params, operation, scalars = cuda_source(program)
        source = f"in: {in_params} | out: {out_params} | {operation.replace(chr(10), ' ')}"
        kernel_class = getattr(self.xp, "ElementwiseKernel", None)
        if kernel_class is not None:
            digest = hashlib.sha1(f"{in_params}|{out_params}|{operation}".encode()).hexdigest()[:12]
            kernel = kernel_class(in_params, out_params, operation, f"nda_fused_{digest}", options=OPTIONS)

            def run(*inputs: Any) -> tuple[Any, ...]:
                outs = kernel(*inputs, *scalars)
                return outs if isinstance(outs, tuple) else (outs,)

            return fusion.Compiled(self.run_on_stream(run), "cupy.ElementwiseKernel", source, exact=True)
        namespace: dict[str, Any] = {}
        exec(compile(python_source(program), "<nda_cuda fused program>", "exec"), namespace)  # noqa: S102 - generated from the program
        fused = namespace["fused"]
        xp = self.xp
        shape = program.shape

        def evaluate(*inputs: Any) -> tuple[Any, ...]:
            outs = fused(xp, *inputs, *scalars)
            return tuple(np.broadcast_to(o, shape).copy() if o.shape != shape else o for o in outs)

        return fusion.Compiled(evaluate, "array-module evaluator (the CUDA kernel's program over a model of CuPy)", source, exact=True)
