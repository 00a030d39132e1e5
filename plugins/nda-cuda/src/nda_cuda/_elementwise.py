"""nda-cuda's own element-wise kernels: which calls take them, compiling, caching, launching.

:mod:`nda_cuda._codegen` writes the CUDA source; this module decides, per call, whether a
generated kernel serves it, and runs it. The kernels of the table (:mod:`nda_cuda._kernels`)
for the element-wise ops, ``where`` and ``astype`` are wrapped by :meth:`Generator.wrap`:

* **Served** (:func:`Generator.serves`): the op has a generated function for the dtype it
  computes in (:data:`nda_cuda._codegen.DTYPES`: bool, int32, int64, float32, float64,
  complex64; which ops per dtype: :data:`nda_cuda._codegen.UNARY`/``BINARY``; ``where``
  and ``astype`` between those dtypes), and ``NDA_CUDA_CODEGEN_SKIP`` does not name it.
* **Taken** by a call when every array operand is C-contiguous and has the output's shape
  (``c``), or has one element (``s``), or is C-contiguous and broadcasts to the output's
  shape (``b``, at most :data:`MAX_NDIM` dimensions once adjacent dimensions that move
  together are merged); Python scalars become kernel arguments of the key dtype (``k``).
  Anything else (a strided view, a transposed array, another dtype) goes to the wrapped
  CuPy kernel, as before; so does a program whose compilation failed (warned once).
* **Launch**: 16-byte vector loads and stores when every ``c`` pointer and the output are
  aligned to them, otherwise the scalar loop of the same kernel; ``unroll`` vectors per
  thread in flight; ``threads`` per block and at most ``blocks_per_sm`` blocks per
  multiprocessor in a grid-stride loop; 32-bit indices below 2**30 elements.
* **Compiling** (:mod:`nda_cuda._nvrtc`): NVRTC through ``cupy.cuda.compiler.compile_using_nvrtc`` and
  ``cupy.cuda.function.Module`` (:class:`NvrtcCompiler`), not ``RawModule``: CuPy appends
  ``-ftz=true`` to every ``RawModule``'s options, and these kernels keep float32
  subnormals unless :data:`FTZ` says otherwise. ``--fmad=false``: ``a * b + c`` rounds twice,
  as NumPy's does. Compiled modules are cached on disk as CuPy caches its own (under
  ``$CUPY_CACHE_DIR``, keyed by a hash of the source, the options, the architecture and the
  NVRTC version) and in memory per (program, pattern, device).

The compiler is a parameter: ``tests/_cuda_host_kernels.py`` compiles the same source as host
C++ and runs every thread of the grid in turn, so the dispatch rules and the kernels' values
are tested without a GPU.

Settings (read once, when the backend registers): ``NDA_CUDA_CODEGEN=0`` turns the generator
off; ``NDA_CUDA_CODEGEN_FTZ=1`` compiles with ``-ftz=true``; ``NDA_CUDA_CODEGEN_SKIP`` lists
``op`` or ``op:dtype`` entries left to CuPy.

Layer: backend plugin (nda-cuda).
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from operator import attrgetter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, Callable, Iterable

import numpy as np
from nda.backends.contract import env_flag

from . import _codegen as cg
from ._nvrtc import NvrtcCompiler, _compile_into_cache

__all__ = ["FTZ", "MAX_NDIM", "Generator", "NvrtcCompiler", "from_environment"]

#: Compile with -ftz=true (flush float32 subnormals) instead of keeping them (issue 28's
#: measurement decides: keeping them is the default while it costs <= 2%).
FTZ = False
#: The most dimensions a broadcast operand's index may need after merging.
MAX_NDIM = 6
_INDEX32 = 2**30
_NUMPY = {name: np.dtype(name) for name in cg.DTYPES}
_SCALAR_TYPE = {"bool": np.uint8, "int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64, "complex64": np.complex64}
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_ALIGNED, _UNALIGNED = np.int32(1), np.int32(0)
_COUNTS: dict[int, Any] = {}  # element count -> its np.int64 kernel argument


class Settings:
    """The generator's knobs (see the module docstring)."""

    __slots__ = ("enabled", "ftz", "skip", "unroll", "threads", "blocks_per_sm")

    def __init__(
        self, enabled: bool = True, ftz: bool = FTZ, skip: Iterable[str] = (), unroll: int = 2, threads: int = 256, blocks_per_sm: int = 8
    ) -> None:
        self.enabled = enabled
        self.ftz = ftz
        self.skip = frozenset(skip)
        self.unroll = unroll
        self.threads = threads
        self.blocks_per_sm = blocks_per_sm


def from_environment() -> Settings:
    """The settings from ``NDA_CUDA_CODEGEN`` and ``NDA_CUDA_CODEGEN_FTZ`` (nda's parser of ``NDA_*``
    switches: 1/true/yes/on, 0/false/no/off, empty for the default, anything else a ValueError
    naming the variable) and ``NDA_CUDA_CODEGEN_SKIP`` (a comma-separated list)."""
    skip = [s.strip() for s in os.environ.get("NDA_CUDA_CODEGEN_SKIP", "").split(",") if s.strip()]
    return Settings(enabled=env_flag("NDA_CUDA_CODEGEN", True), ftz=env_flag("NDA_CUDA_CODEGEN_FTZ", FTZ), skip=skip)


def _pointer_of(xp: Any) -> Callable[[Any], int]:
    if hasattr(xp, "cuda"):
        return attrgetter("data.ptr")
    return attrgetter("ctypes.data")


def _contiguity_of(xp: Any) -> Callable[[Any], bool]:
    """``a.flags.c_contiguous``; CuPy's ``ndarray._c_contiguous`` where it has one (CuPy builds a
    ``Flags`` object on every ``a.flags``)."""
    return attrgetter("_c_contiguous" if hasattr(xp.ndarray, "_c_contiguous") else "flags.c_contiguous")


def _count(n: int) -> Any:
    """The element count as the kernels' ``long long`` argument, cached (a NumPy scalar costs a microsecond to make)."""
    count = _COUNTS.get(n)
    if count is None:
        if len(_COUNTS) > 4096:
            _COUNTS.clear()
        count = _COUNTS[n] = np.int64(n)
    return count


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    ndim = max(len(s) for s in shapes)
    out = []
    for d in range(ndim):
        size = 1
        for s in shapes:
            k = d - ndim + len(s)
            if k >= 0 and s[k] != 1:
                if size != 1 and s[k] != size:
                    return None
                size = s[k]
        out.append(size)
    return tuple(out)


def _merged(shape: tuple[int, ...], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Dimensions of size 1 dropped, adjacent ones merged where every operand's strides allow."""
    dims: list[int] = []
    steps: list[list[int]] = [[] for _ in strides]
    for d, size in enumerate(shape):
        if size == 1:
            continue
        if dims and all(st[-1] == s[d] * size for st, s in zip(steps, strides)):
            dims[-1] *= size
            for st, s in zip(steps, strides):
                st[-1] = s[d]
            continue
        dims.append(size)
        for st, s in zip(steps, strides):
            st.append(s[d])
    return dims, steps


def _c_strides(a: Any, shape: tuple[int, ...]) -> list[int]:
    """Element strides of C-contiguous ``a`` broadcast to ``shape`` (0 where it is broadcast)."""
    own = a.shape
    strides = [0] * len(shape)
    step = 1
    for k in range(len(own) - 1, -1, -1):
        d = k + len(shape) - len(own)
        strides[d] = step if own[k] != 1 else 0
        step *= own[k]
    return strides


class Generator:
    """Generated element-wise kernels over array module ``xp`` with ``compiler`` (see the module docstring)."""

    def __init__(self, xp: Any, compiler: Any, settings: Settings | None = None) -> None:
        self.xp = xp
        self.compiler = compiler
        self.settings = settings or Settings()
        self._ptr = _pointer_of(xp)
        self._c = _contiguity_of(xp)
        self._kernels: dict[tuple[Any, ...], Any] = {}
        self._fast: dict[tuple[Any, ...], Any] = {}
        #: (program, element count, alignment, device) -> (kernel, blocks, count argument): the hot path's launches
        self._contiguous: dict[tuple[Any, ...], tuple[Any, int, Any]] = {}
        #: the compiler's one device, when it has only one (no current-device query per launch)
        self._only_device: int | None = getattr(compiler, "only_device", None)
        self._lock = threading.Lock()
        self._failed: set[str] = set()
        #: launches of generated kernels, per op (tests read it; costs one dict update per call)
        self.launches: dict[str, int] = {}

    def configure(self, **knobs: int) -> None:
        """Change launch settings (``unroll``, ``threads``, ``blocks_per_sm``) and drop the launch
        caches that depend on them (``benchmarks.gpu``'s sweep); compiled kernels stay cached by
        pattern, which includes the unroll."""
        for name, value in knobs.items():
            if name not in ("unroll", "threads", "blocks_per_sm"):
                raise ValueError(f"configure(): unknown launch setting {name!r}; the settings are unroll, threads, blocks_per_sm")
            setattr(self.settings, name, value)
        self._fast.clear()
        self._contiguous.clear()

    # ------------------------------------------------------------------ what is served
    def serves(self, op: str, dtype: str) -> bool:
        s = self.settings
        if not s.enabled or op in s.skip or f"{op}:{dtype}" in s.skip:
            return False
        if s.ftz and (op, dtype) in cg.IEEE32:
            return False
        if op == "where":
            return dtype in cg.DTYPES
        if op == "astype":
            return dtype in cg.DTYPES
        return cg.serves(op, dtype)

    def served(self, ops: Iterable[str]) -> dict[str, list[str]]:
        """``{op: [dtypes]}`` the generator serves among ``ops``."""
        return {op: [d for d in cg.DTYPES if self.serves(op, d)] for op in ops if any(self.serves(op, d) for d in cg.DTYPES)}

    # ------------------------------------------------------------------ wrapping the table's kernels
    def wrap(self, op: str, family: str, fallback: Callable[..., Any]) -> Callable[..., Any]:
        """``fallback`` (the CuPy kernel) behind the generated one, for the calls it takes."""
        dtypes = {_NUMPY[d]: d for d in cg.DTYPES if self.serves(op, d)}
        if not dtypes:
            return fallback
        if op == "where":
            kernel = self._wrap_where(dtypes, fallback)
        elif op == "astype":
            kernel = self._wrap_astype(dtypes, fallback)
        elif family == "unary":
            kernel = self._wrap_unary(op, dtypes, fallback)
        else:
            kernel = self._wrap_binary(op, dtypes, fallback)
        kernel.__name__ = kernel.__qualname__ = getattr(fallback, "__name__", op)
        kernel.__wrapped__ = fallback  # type: ignore[attr-defined]
        return kernel

    def _wrap_unary(self, op: str, dtypes: dict[Any, str], fallback: Callable[..., Any]) -> Callable[..., Any]:
        ndarray = self.xp.ndarray
        programs = {np_dtype: cg.op_program(op, name, (False,)) for np_dtype, name in dtypes.items()}
        run, fast, contiguous = self.run, self._run_contiguous, self._c

        def unary(x: Any) -> Any:
            program = programs.get(x.dtype) if x.__class__ is ndarray else None
            out = None if program is None else fast(program, (x,), x.shape) if contiguous(x) else run(program, (x,))
            return fallback(x) if out is None else out[0]

        return unary

    def _wrap_binary(self, op: str, dtypes: dict[Any, str], fallback: Callable[..., Any]) -> Callable[..., Any]:
        ndarray = self.xp.ndarray
        programs = {
            (np_dtype, flags): cg.op_program(op, name, flags)
            for np_dtype, name in dtypes.items()
            for flags in ((False, False), (False, True), (True, False))
        }
        run = self.run
        if op == "pow":
            return self._wrap_pow(programs, dtypes, fallback)
        arrays = {np_dtype: programs[(np_dtype, (False, False))] for np_dtype in dtypes}
        fast, contiguous = self._run_contiguous, self._c

        def binary(x1: Any, x2: Any) -> Any:
            # Contiguous operands of one shape go straight to the hot path (what run() would pick).
            a1, a2 = x1.__class__ is ndarray, x2.__class__ is ndarray
            out = None
            if a1 and a2:
                dtype = x1.dtype
                if dtype is x2.dtype or dtype == x2.dtype:
                    program = arrays.get(dtype)
                    if program is not None:
                        shape = x1.shape
                        if shape == x2.shape and contiguous(x1) and contiguous(x2):
                            out = fast(program, (x1, x2), shape)
                        else:
                            out = run(program, (x1, x2))
            elif a1 or a2:
                array = x1 if a1 else x2
                dtype = array.dtype
                program = programs.get((dtype, (not a1, not a2)))
                if program is not None:
                    scalar = _scalar(x2 if a1 else x1, dtypes[dtype])
                    if scalar is not None:
                        operands = (x1, scalar) if a1 else (scalar, x2)
                        out = fast(program, operands, array.shape) if contiguous(array) else run(program, operands)
            return fallback(x1, x2) if out is None else out[0]

        return binary

    def _wrap_pow(self, programs: dict[Any, cg.Program], dtypes: dict[Any, str], fallback: Callable[..., Any]) -> Callable[..., Any]:
        """``pow`` with NumPy's choice of loop: an exponent the same for every element (a scalar, a
        0-d array, a one-element array broadcast) takes the ``pow_uniform`` variant (sqrt for 0.5);
        an exponent broadcast along some dimensions only goes to CuPy's kernel (NumPy's result
        then depends on its iteration order)."""
        ndarray = self.xp.ndarray
        uniform = {
            (np_dtype, flags): cg.op_program("pow_uniform" if np_dtype.kind == "f" else "pow", name, flags)
            for np_dtype, name in dtypes.items()
            for flags in ((False, False), (False, True))
        }
        xp = self.xp
        plain = self.run

        def run(program: cg.Program, operands: tuple[Any, ...]) -> Any:
            if not program.flag:
                return plain(program, operands)
            # Integers: NumPy raises for a negative exponent; the kernel sets a device flag, read
            # without a sync when the op's marker is reached (nda.engine.Deferred), as before.
            from nda.engine import Deferred

            from ._kernels import _NEGATIVE_POWER, _later

            flag = xp.zeros((1,), dtype=np.int32)
            out = plain(program, operands, flag)
            if out is None:
                return None
            read = _later(xp, [flag.reshape(())])
            return (Deferred(out[0], lambda: _NEGATIVE_POWER() if read()[0] else None),)

        def pow(x1: Any, x2: Any) -> Any:  # noqa: A001
            a1, a2 = x1.__class__ is ndarray, x2.__class__ is ndarray
            out = None
            if a1 and a2:
                if x1.dtype == x2.dtype and x1.dtype in dtypes:
                    if x2.size == 1 and (x2.ndim == 0 or x2.shape != x1.shape):
                        out = run(uniform[(x1.dtype, (False, False))], (x1, x2))
                    elif _broadcast([x1.shape, x2.shape]) == x2.shape:
                        out = run(programs[(x1.dtype, (False, False))], (x1, x2))
            elif a1 and x1.dtype in dtypes:
                scalar = _scalar(x2, dtypes[x1.dtype])
                if scalar is not None and not (x1.dtype.kind == "i" and x2 < 0):  # raises at the call (the fallback)
                    out = run(uniform[(x1.dtype, (False, True))], (x1, scalar))
            elif a2 and x2.dtype in dtypes:
                scalar = _scalar(x1, dtypes[x2.dtype])
                if scalar is not None:
                    out = run(programs[(x2.dtype, (True, False))], (scalar, x2))
            return fallback(x1, x2) if out is None else out[0]

        return pow

    def _wrap_where(self, dtypes: dict[Any, str], fallback: Callable[..., Any]) -> Callable[..., Any]:
        ndarray = self.xp.ndarray
        boolean = np.dtype(bool)
        programs = {
            (np_dtype, flags): cg.where_program(name, (False, *flags))
            for np_dtype, name in dtypes.items()
            for flags in ((False, False), (False, True), (True, False))
        }
        run = self.run

        def where(condition: Any, x1: Any, x2: Any) -> Any:
            out = None
            a1, a2 = x1.__class__ is ndarray, x2.__class__ is ndarray
            if condition.__class__ is ndarray and condition.dtype == boolean and (a1 or a2) and (not (a1 and a2) or x1.dtype == x2.dtype):
                dtype = (x1 if a1 else x2).dtype
                program = programs.get((dtype, (not a1, not a2)))
                if program is not None:
                    name = dtypes[dtype]
                    v1 = x1 if a1 else _scalar(x1, name)
                    v2 = x2 if a2 else _scalar(x2, name)
                    if v1 is not None and v2 is not None:
                        out = run(program, (condition, v1, v2))
            return fallback(condition, x1, x2) if out is None else out[0]

        return where

    def _wrap_astype(self, dtypes: dict[Any, str], fallback: Callable[..., Any]) -> Callable[..., Any]:
        ndarray = self.xp.ndarray
        programs: dict[tuple[Any, Any], cg.Program] = {}
        for src_np, src in dtypes.items():
            for dst in cg.DTYPES:
                if (src == "complex64") == (dst == "complex64") or src != "complex64":
                    if self.serves("astype", dst):
                        programs[(src_np, _NUMPY[dst])] = cg.cast_program(src, dst)
        run = self.run

        def astype(x: Any, dtype: Any, *args: Any, **kwargs: Any) -> Any:
            out = None
            if x.__class__ is ndarray and not args and kwargs.get("copy", True) is not False:
                target = getattr(dtype, "numpy", dtype)  # an nda DType, or a NumPy dtype
                program = programs.get((x.dtype, target)) if isinstance(target, np.dtype) else None
                out = None if program is None else run(program, (x,))
            return fallback(x, dtype, *args, **kwargs) if out is None else out[0]

        return astype

    # ------------------------------------------------------------------ running a program
    def run(self, program: cg.Program, operands: tuple[Any, ...], flag: Any = None) -> tuple[Any, ...] | None:
        """The program's outputs for ``operands`` (arrays of the operands' dtypes, scalars already
        typed), or None when a generated kernel does not take this call. ``flag``: the int32
        device array a program with a flag (:attr:`nda_cuda._codegen.Program.flag`) may set."""
        if flag is None:
            shape = None
            contiguous = self._c
            for a, scalar in zip(operands, program.scalars):
                if not scalar:
                    if shape is None:
                        shape = a.shape
                    elif a.shape != shape:
                        break
                    if not contiguous(a):
                        return None
            else:
                if shape is not None:
                    return self._run_contiguous(program, operands, shape)
        return self._run(program, operands, flag)

    def _run_contiguous(self, program: cg.Program, operands: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...] | None:
        """The hot path of :meth:`run`: every array operand C-contiguous with the output's shape, no flag.

        The same kernel, arguments and grid as the general path gives (modes ``program.contiguous``).
        What depends only on (program, element count, alignment, device) is cached in one dict
        entry: the launch function, the number of blocks and the count argument; a single-output
        program allocates one array; with one device, no current-device query. None when the
        kernel failed to compile (the caller runs CuPy's kernel)."""
        out_numpy = program.out_numpy
        xp = self.xp
        out = xp.empty(shape, out_numpy[0])
        outs = (out,) if len(out_numpy) == 1 else (out, *[xp.empty(shape, d) for d in out_numpy[1:]])
        n = out.size
        if n == 0:
            return outs
        if program.has_scalars:
            scalars = program.scalars
            args = [a for a, scalar in zip(operands, scalars) if not scalar]
        else:
            args = list(operands)
        args += outs
        vec = program.vec
        aligned = 1
        if vec > 1:
            ptr = self._ptr
            for a in args:
                if ptr(a) % (vec * a.itemsize):
                    aligned = 0
                    break
        device = self._only_device
        if device is None:
            device = self.compiler.device()
        key = (program, n, aligned, device)
        hit = self._contiguous.get(key)
        if hit is None:
            hit = self._contiguous_launch(program, n, aligned, device)
            if hit is None:
                return None  # compilation failed: the CuPy kernel
        fn, blocks, count = hit
        args.append(count)
        args.append(_ALIGNED if aligned else _UNALIGNED)
        if program.has_scalars:
            args += [a for a, scalar in zip(operands, scalars) if scalar]
        self.compiler.launch(fn, blocks, self.settings.threads, args)
        launches = self.launches
        launches[program.name] = launches.get(program.name, 0) + 1
        return outs

    def _contiguous_launch(self, program: cg.Program, n: int, aligned: int, device: int) -> tuple[Any, int, Any] | None:
        """(kernel, blocks, count argument) of :meth:`_run_contiguous` for ``n`` elements, cached."""
        vec = program.vec
        index64 = n >= _INDEX32
        s = self.settings
        work = -(-n // (vec * s.unroll)) if aligned and vec > 1 else n
        found = self._launchable(program, (program, program.contiguous, index64, vec), device, work)
        if found is None:
            return None
        if len(self._contiguous) > 4096:
            self._contiguous.clear()
        hit = self._contiguous[(program, n, aligned, device)] = (found[0], found[1], _count(n))
        return hit

    def _launchable(self, program: cg.Program, key: tuple[Any, ...], device: int, work: int) -> tuple[Any, int] | None:
        """The kernel of ``key`` on ``device`` (compiled once; None if it failed) and the grid's
        number of blocks for ``work`` units: at most ``blocks_per_sm`` per multiprocessor."""
        fn = self._fast.get((key, device))
        if fn is None:
            fn = self._kernel(program, self._pattern(key), device)
            if fn is None:
                return None
            self._fast[(key, device)] = fn
        s = self.settings
        blocks = min(-(-work // s.threads), self.compiler.multiprocessors(device) * s.blocks_per_sm)
        return fn, blocks if blocks > 0 else 1

    def _run(self, program: cg.Program, operands: tuple[Any, ...], flag: Any = None) -> tuple[Any, ...] | None:
        """:meth:`run`'s general path: broadcast operands, programs with a flag."""
        xp = self.xp
        flags = program.scalars
        shape = None
        same = True
        for a, scalar in zip(operands, flags):
            if not scalar:
                if shape is None:
                    shape = a.shape
                elif a.shape != shape:
                    same = False
        if same:
            for a, scalar in zip(operands, flags):
                if not scalar and not self._c(a):
                    return None
            modes = program.contiguous
        else:
            shape = _broadcast([a.shape for a, scalar in zip(operands, flags) if not scalar])
            if shape is None:
                return None
            modes = self._modes(operands, flags, shape)
            if modes is None:
                return None
        outs = tuple([xp.empty(shape, dtype=d) for d in program.out_numpy])
        n = outs[0].size
        if n == 0:
            return outs
        s = self.settings
        args: list[Any] = [a for a, m in zip(operands, modes) if m != "k"]
        args += outs
        if program.flag:
            args.append(flag)
        count = _count(n)
        args.append(count)
        index64 = n >= _INDEX32
        if "b" in modes:
            strides = [_c_strides(a, shape) for a, m in zip(operands, modes) if m == "b"]
            dims, steps = _merged(shape, strides)
            if len(dims) > MAX_NDIM:
                return None
            key: tuple[Any, ...] = (program, modes, index64, len(dims))
            work = n
            if program.has_scalars:
                args += [a for a, m in zip(operands, modes) if m == "k"]
            args += [np.int64(d) for d in dims[1:]]
            for st in steps:
                args += [np.int64(v) for v in st]
        else:
            vec = program.vec if same else self._vec(program, operands, modes)
            ptr = self._ptr
            aligned = 1
            for a in (*outs, *(a for a, m in zip(operands, modes) if m == "c")) if not same or program.flag else args[:-1]:
                if ptr(a) % (vec * a.itemsize):
                    aligned = 0
                    break
            key = (program, modes, index64, vec)
            work = -(-n // (vec * s.unroll)) if aligned and vec > 1 else n
            args.append(_ALIGNED if aligned else _UNALIGNED)
            if program.has_scalars:
                args += [a for a, m in zip(operands, modes) if m == "k"]
        device = self.compiler.device()
        found = self._launchable(program, key, device, work)
        if found is None:
            return None
        self.compiler.launch(found[0], found[1], s.threads, args)
        self.launches[program.name] = self.launches.get(program.name, 0) + 1
        return outs

    def _modes(self, operands: tuple[Any, ...], flags: tuple[bool, ...], shape: tuple[int, ...]) -> tuple[str, ...] | None:
        modes = []
        for a, scalar in zip(operands, flags):
            if scalar:
                modes.append("k")
            elif a.shape == shape and self._c(a):
                modes.append("c")
            elif a.size == 1:
                modes.append("s")
            elif self._c(a):
                modes.append("b")
            else:
                return None
        return tuple(modes)

    def _vec(self, program: cg.Program, operands: tuple[Any, ...], modes: tuple[str, ...]) -> int:
        width = max(cg._ITEMSIZE[d] for d in program.outputs)
        for (dtype, _), m in zip(program.operands, modes):
            if m == "c":
                width = max(width, cg._ITEMSIZE[dtype])
        return max(1, 16 // width)

    def _pattern(self, key: tuple[Any, ...]) -> cg.Pattern:
        program, modes, index64, extra = key
        if "b" in modes:
            return cg.Pattern(modes, 1, 1, index64, extra)
        return cg.Pattern(modes, extra, self.settings.unroll, index64)

    def _kernel(self, program: cg.Program, pattern: cg.Pattern, device: int) -> Any:
        key = (program.digest, pattern.key(), device)
        fn = self._kernels.get(key)
        if fn is None and key not in self._kernels:
            self.precompile([(program, pattern)], device)
            fn = self._kernels.get(key)
        return fn

    def precompile(
        self, requests: list[tuple[cg.Program, cg.Pattern]], device: int | None = None, *, chunk: int = 0, workers: int = 1, processes: int = 0
    ) -> int:
        """Compile ``requests`` (in modules of ``chunk`` kernels, ``workers`` threads at once) into the
        caches; returns how many failed. A failed kernel is remembered: its calls take the CuPy kernel.
        ``processes`` > 0 (NVRTC through CuPy): the modules are first compiled into the disk cache
        by that many spawned processes, then loaded here."""
        device = self.compiler.device() if device is None else device
        todo = []
        seen = set()
        for program, pattern in requests:
            key = (program.digest, pattern.key(), device)
            if key not in self._kernels and key not in seen:
                seen.add(key)
                todo.append((key, program, pattern, cg.kernel_name(program, pattern)))
        if not todo:
            return 0
        size = chunk or len(todo)
        groups = [todo[i : i + size] for i in range(0, len(todo), size)]
        if processes > 0 and hasattr(self.compiler, "options"):
            import multiprocessing

            sources = [cg.module_source([(p, pat, name) for _, p, pat, name in group]) for group in groups]
            try:
                with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
                    list(pool.map(_compile_into_cache, sources, [self.compiler.options] * len(sources), [device] * len(sources)))
            except Exception as err:  # noqa: BLE001 - no worker processes here: compiled below, in this one
                warnings.warn(
                    f"nda-cuda: compiling in {processes} processes failed ({type(err).__name__}: {err}); compiling here", RuntimeWarning, stacklevel=2
                )

        def build(group: list[Any]) -> int:
            kernels = [(p, pat, name) for _, p, pat, name in group]
            try:
                loaded = self.compiler.load(kernels, device)
            except Exception as err:  # noqa: BLE001 - a compiler error: CuPy's kernels take these calls
                if len(group) > 1:
                    return sum(build([g]) for g in group)
                key, program, pattern, name = group[0]
                with self._lock:
                    self._kernels[key] = None
                    if program.name not in self._failed:
                        self._failed.add(program.name)
                        warnings.warn(
                            f"nda-cuda: the generated kernel for {program} {pattern} did not compile; CuPy's kernel runs it "
                            f"({type(err).__name__}: {str(err)[:2000]})",
                            RuntimeWarning,
                            stacklevel=2,
                        )
                return 1
            with self._lock:
                for key, _, _, name in group:
                    self._kernels[key] = loaded[name]
            return 0

        if workers > 1 and len(groups) > 1:
            with ThreadPoolExecutor(workers) as pool:
                return sum(pool.map(build, groups))
        return sum(build(g) for g in groups)

    def patterns(self, program: cg.Program) -> list[cg.Pattern]:
        """The patterns a program's calls most often take (for :meth:`precompile`): every array
        operand ``c``; with two or more, each one ``s`` in turn, each one broadcast over two
        dimensions (``b``, a row or a column) in turn, and all of them broadcast."""
        arrays = [i for i, (_, scalar) in enumerate(program.operands) if not scalar]
        base = ["k" if scalar else "c" for _, scalar in program.operands]
        contiguous = [list(base)]
        broadcast = []
        if len(arrays) > 1:
            for i in arrays:
                v = list(base)
                v[i] = "s"
                contiguous.append(v)
                v = list(base)
                v[i] = "b"
                broadcast.append(v)
            broadcast.append(["b" if m == "c" else m for m in base])
        return [cg.Pattern(tuple(v), self._vec(program, (), tuple(v)), self.settings.unroll, False) for v in contiguous] + [
            cg.Pattern(tuple(v), 1, 1, False, 2) for v in broadcast
        ]


def _scalar(value: Any, dtype: str) -> Any:
    """A Python scalar as the kernel argument of ``dtype`` (NumPy's weak-scalar conversion), or None
    when it does not convert exactly as NumPy converts it (those calls take CuPy's kernel)."""
    cls = value.__class__
    if dtype == "bool":
        return np.uint8(value) if cls is bool else None
    if cls not in (bool, int, float, complex):
        return None
    kind = dtype[0]
    if kind == "i" and cls not in (bool, int):
        return None
    if kind == "f" and cls is complex:
        return None
    try:
        if dtype == "float32" and cls is not bool and not (abs(value) <= _FLOAT32_MAX) and not math.isnan(value) and not math.isinf(value):
            with np.errstate(over="ignore"):
                return np.float32(value)
        return _SCALAR_TYPE[dtype](value)
    except (OverflowError, ValueError, TypeError):
        return None
