"""nda-cuda's generated element-wise kernels on a real GPU (issue 28): correctness, then speed.

One command for a lent GPU (``python -m benchmarks.gpu_elementwise_check``), in steps, each
printing a compact summary:

1. **compile**: every program the generator serves (each op and dtype, array/scalar operand
   variants, ``where``, ``astype``) in its common patterns, with NVRTC through CuPy, in
   modules compiled by spawned processes (the disk cache fills: a second run loads only);
   failures are listed (their calls would go to CuPy's kernels).
2. **values**: every served (op, dtype) on the GPU against NumPy (the catalog's reference) on
   every pair of edge values (signed zeros, NaN, infinities, subnormals, integer extremes,
   shifts past the width), in several layouts: contiguous, misaligned by one element (the
   scalar loop), a Python scalar on either side, broadcast rows and columns, 0-d, size 0
   and 1, and sizes that are not multiples of the vector width; also large random inputs.
   Differences from NumPy are failures; with ``--vs-cupy`` differences from CuPy's own kernel
   are counted too (the generator follows NumPy where CuPy does not; that compiles every one
   of CuPy's kernels, minutes on a fresh machine). Float-to-integer casts out of range (no
   NumPy answer) are compared with CuPy's ``astype``.
3. **nda**: the ops through nda on ``cuda`` take the generated kernels; hybridized GELU and
   ``a * b + c`` give the eager results bit for bit.
4. **subnormals**: float32 kernels compiled keeping subnormals against compiled flushing them
   (``-ftz=true``), on normal and on subnormal data: issue 28 keeps them if that costs <= 2%
   (the switch: ``nda_cuda._elementwise.FTZ``).
5. **launch sweep**: unroll x blocks per SM for ``add``/``exp`` float32 and ``add`` float64.
6. **tables**: issue 28's table (:func:`benchmarks.gpu.elementwise`), the fused chains
   (:func:`benchmarks.fusion.gpu`, GELU against torch.compile, ``a * b + c`` against PyTorch
   eager), the issue cost of a tiny op (CuPy's ufunc against the generator's dispatch and
   launch), and CuPy's reductions against PyTorch (whether the generator should serve them).

``--skip-timing`` stops after step 3; ``--quick`` takes fewer rounds. Exit status 1 when a
value differs from NumPy or a kernel does not compile.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from typing import Any

import numpy as np

import nda

DTYPES = ("bool", "int32", "int64", "float32", "float64", "complex64")


def _edge_values(dtype: str) -> np.ndarray:
    from nda.testing import strategies

    values = list(strategies.edge_values(dtype))
    kind = np.dtype(dtype).kind
    if kind == "i":
        values += [2, -2, 3, -3, 5, -7, 31, 32, 33, 63, 64, 65, -64]
    elif kind == "f":
        values += [2.5, -2.5, 1.5, -0.5, 3.0, -7.0, 0.1, 5.0, -5.0, 100.0, -100.0, 88.7, 710.0, 1e-300, -3e-39, 1e20]
    elif kind == "c":
        values += [1.5 + 2.5j, -3 - 4j, 2.5 - 0.5j, complex(1e-40, -1e-40), complex(3e38, 3e38), 0.5j]
    host = np.array(values, dtype=dtype)
    distinct = {h.tobytes(): i for i, h in enumerate(host)}
    return host[sorted(distinct.values())]


def _reference(op: str, *args: Any) -> np.ndarray:
    from nda.ops import CATALOG

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op == "where":
            return np.asarray(np.where(*args))
        if op == "astype_ref":
            return np.asarray(args[0].astype(args[1]))
        return np.asarray(CATALOG[op].reference(*args))


def _value(result: Any, synchronize: Any) -> Any:
    """A kernel's array; a Deferred (integer pow's negative-exponent flag) must hold no error.

    Its check reads a flag the kernel's stream copies to host memory without a sync (``nda_cuda._kernels._later``):
    as nda's engine does, it is read once that stream got there (``synchronize``). Read at once it was
    whatever the pinned buffer held before (the H200, 2026-11-28: "Integers to negative integer powers"
    for ``pow`` int32/int64 cases with no negative exponent, the 0-d and size-0 ones)."""
    from nda.engine import Deferred

    if result.__class__ is Deferred:
        synchronize()
        error = result.check()
        if error is not None:
            raise AssertionError(f"unexpected {type(error).__name__}: {error}")
        return result.value
    return result


def _differ(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    from nda.testing import default_tolerance
    from nda.testing._compare import mismatches

    if got.shape != want.shape or got.dtype != want.dtype:
        return np.ones(max(want.size, 1), bool)
    rtol, atol = default_tolerance(want.dtype)
    bad, _ = mismatches(got, want, rtol=rtol, atol=atol, signed_zeros=True)
    return bad


class Checker:
    def __init__(self, cupy: Any, gen: Any, vs_cupy: bool = False, synchronize: Any = None) -> None:
        self.cupy = cupy
        self.gen = gen
        #: waits for the work enqueued on the current stream (a kernel's flag copy): CuPy's by default.
        self.synchronize = synchronize or (lambda: cupy.cuda.get_current_stream().synchronize())
        self.vs_cupy = vs_cupy  # also run CuPy's kernel on every case (compiles each of CuPy's kernels: minutes)
        self.failures: list[str] = []
        self.cupy_differs: dict[str, int] = {}
        self.cases = 0

    def refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the generated kernel did not take this call")

    def compare(
        self, label: str, kernel: Any, fallback: Any, op: str, host_args: tuple[Any, ...], device_args: tuple[Any, ...], *, vs_cupy: bool = False
    ) -> None:
        self.cases += 1
        try:
            got = _value(kernel(*device_args), self.synchronize)
        except AssertionError as err:
            self.failures.append(f"{label}: {err}")
            return
        got = self.cupy.asnumpy(got)
        want = None if vs_cupy else _reference(op, *host_args)
        theirs = None
        if vs_cupy or self.vs_cupy:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = self.cupy.asnumpy(_value(fallback(*device_args), self.synchronize))
        if want is None:
            want = theirs
        bad = _differ(got, want)
        if bad.any():
            i = tuple(np.argwhere(bad.reshape(got.shape) if got.shape else bad)[0]) if got.ndim else ()
            shown = [a[i] if isinstance(a, np.ndarray) and a.shape == got.shape else a for a in host_args]
            self.failures.append(
                f"{label}: {int(bad.sum())} of {bad.size} differ from {'CuPy' if vs_cupy else 'NumPy'}, "
                f"e.g. {shown} -> {got[i]!r}, expected {want[i]!r}"
            )
        elif not vs_cupy and theirs is not None:
            diff = _differ(got, theirs) if theirs.shape == got.shape and theirs.dtype == got.dtype else np.ones(1, bool)
            if diff.any():
                self.cupy_differs[label.split(" [")[0]] = self.cupy_differs.get(label.split(" [")[0], 0) + int(diff.sum())


def check_values(cupy: Any, gen: Any, fallbacks: dict[str, Any], vs_cupy: bool = False, synchronize: Any = None) -> Checker:
    """Step 2 over array module ``cupy`` (CuPy; the CuPy model in the tests, with its ``synchronize``)."""
    from nda.ops import CATALOG

    chk = Checker(cupy, gen, vs_cupy, synchronize)
    ops = sorted(op for op, d in CATALOG.items() if d.family in ("unary", "binary"))
    rng = np.random.default_rng(0)
    for dtype in DTYPES:
        values = _edge_values(dtype)
        npd = np.dtype(dtype)
        for op in ops:
            if not gen.serves(op, dtype):
                continue
            family = CATALOG[op].family
            kernel = gen.wrap(op, family, chk.refuse)
            fb = fallbacks[op]
            if family == "unary":
                x = np.concatenate([values, values[::-1], values])
                layouts = {"contiguous": x, "size 1": x[:1], "0-d": x[0].reshape(()), "size 0": x[:0]}
                for name, h in layouts.items():
                    # a 0-d host value goes up as one element: CuPy 14.2's asarray of a 0-d array fills
                    # the device array, and its fill of a zero is a memset, which drops the sign of -0.0
                    chk.compare(f"{op} {dtype} [{name}]", kernel, fb, op, (h,), (cupy.asarray(h.reshape(-1)).reshape(h.shape),))
                base = cupy.asarray(np.concatenate([x[:1], x]))
                chk.compare(f"{op} {dtype} [misaligned]", kernel, fb, op, (x,), (base[1:],))
                big = (rng.standard_normal(1 << 20 | 3) * 3).astype(npd) if npd.kind in "fc" else rng.integers(-1000, 1000, 1 << 20 | 3).astype(npd)
                if npd.kind == "b":
                    big = rng.random(1 << 20 | 3) < 0.5
                chk.compare(f"{op} {dtype} [random 2**20+3]", kernel, fb, op, (big,), (cupy.asarray(big),))
            else:
                x1 = np.repeat(values, values.size)
                x2 = np.tile(values, values.size)
                integer_pow = op == "pow" and npd.kind == "i"
                if integer_pow:  # NumPy raises for negative exponents (the flag; checked by the tests)
                    x2 = np.where(x2 < 0, -(x2 + 1), x2).astype(npd)
                d1, d2 = cupy.asarray(x1), cupy.asarray(x2)
                chk.compare(f"{op} {dtype} [contiguous]", kernel, fb, op, (x1, x2), (d1, d2))
                b1, b2 = cupy.asarray(np.concatenate([x1[:1], x1])), cupy.asarray(np.concatenate([x2[:3], x2]))
                chk.compare(f"{op} {dtype} [misaligned]", kernel, fb, op, (x1, x2), (b1[1:], b2[3:]))
                for s in values[:6].tolist():
                    s = complex(s) if npd.kind == "c" else s
                    if not (integer_pow and s < 0):
                        chk.compare(f"{op} {dtype} [array, scalar {s!r}]", kernel, fb, op, (x1, npd.type(s)), (d1, s))
                    chk.compare(f"{op} {dtype} [scalar {s!r}, array]", kernel, fb, op, (npd.type(s), x2), (s, d2))
                rows, cols = x2[: values.size].reshape(1, -1), values.reshape(-1, 1)
                grid = np.broadcast_to(x2[: values.size].reshape(-1, 1), (values.size, values.size)).copy()
                if op != "pow":  # pow with an exponent broadcast along some axes only is CuPy's (by design)
                    chk.compare(f"{op} {dtype} [broadcast row]", kernel, fb, op, (grid, rows[0]), (cupy.asarray(grid), cupy.asarray(rows[0])))
                    chk.compare(f"{op} {dtype} [broadcast column/row]", kernel, fb, op, (cols, rows), (cupy.asarray(cols), cupy.asarray(rows)))
                chk.compare(f"{op} {dtype} [broadcast row, first]", kernel, fb, op, (rows[0], grid), (cupy.asarray(rows[0]), cupy.asarray(grid)))
                chk.compare(f"{op} {dtype} [0-d with array]", kernel, fb, op, (x1[-1].reshape(()), x2), (cupy.asarray(x1[-1:]).reshape(()), d2))
                chk.compare(f"{op} {dtype} [size 0]", kernel, fb, op, (x1[:0], x2[:0]), (d1[:0], d2[:0]))
                for n in (1, 3, 5, 17, 1023):
                    chk.compare(f"{op} {dtype} [size {n}]", kernel, fb, op, (x1[:n], x2[:n]), (d1[:n], d2[:n]))
        # where and astype
        cond = np.arange(values.size) % 3 == 0
        where = gen.wrap("where", "generic", chk.refuse)
        other = values[::-1].copy()
        dc, dv, do = cupy.asarray(cond), cupy.asarray(values), cupy.asarray(other)
        chk.compare(f"where {dtype} [contiguous]", where, fallbacks["where"], "where", (cond, values, other), (dc, dv, do))
        chk.compare(f"where {dtype} [scalar]", where, fallbacks["where"], "where", (cond, values, values[-1]), (dc, dv, values[-1].item()))
        astype = gen.wrap("astype", "generic", chk.refuse)
        for target in DTYPES:
            if dtype == "complex64" and target != "complex64":
                continue
            tnp = np.dtype(target)
            fb = fallbacks["astype"]
            real = np.real(values).astype(np.float64)
            if npd.kind in "fc" and tnp.kind == "i":
                info = np.iinfo(tnp)
                with np.errstate(invalid="ignore"):
                    fits = np.isfinite(real) & (real > info.min - 1.0) & (real < info.max + 1.0)
                chk.compare(f"astype {dtype}->{target} [defined]", astype, fb, "astype_ref", (values[fits], tnp), (cupy.asarray(values[fits]), tnp))
                chk.compare(
                    f"astype {dtype}->{target} [out of range, vs CuPy]",
                    astype,
                    fb,
                    "astype_ref",
                    (values[~fits], tnp),
                    (cupy.asarray(values[~fits]), tnp),
                    vs_cupy=True,
                )
            else:
                chk.compare(f"astype {dtype}->{target}", astype, fb, "astype_ref", (values, tnp), (dv, tnp))
    return chk


def cupy_kernels(cupy: Any, namespace: Any = None) -> dict[str, Any]:
    """CuPy's kernels for every served op, built as nda-cuda builds its table, without the generator."""
    from nda_cuda import _kernels

    if namespace is None:
        import array_api_compat.cupy as namespace

    kernels, _ = _kernels.build(cupy, namespace)
    table = {k.op: k.fn for k in kernels}

    def astype(x: Any, dtype: Any) -> Any:
        return x.astype(dtype)

    table["astype"] = astype
    return table


def _programs(gen: Any) -> list[Any]:
    from nda.ops import CATALOG
    from nda_cuda import _codegen as cg

    programs = []
    for dtype in DTYPES:
        for op in sorted(CATALOG):
            if CATALOG[op].family not in ("unary", "binary") or not gen.serves(op, dtype):
                continue
            if CATALOG[op].family == "unary":
                programs.append(cg.op_program(op, dtype, (False,)))
            else:
                programs += [cg.op_program(op, dtype, f) for f in ((False, False), (False, True), (True, False))]
                if op == "pow" and cg.serves("pow_uniform", dtype):
                    programs += [cg.op_program("pow_uniform", dtype, f) for f in ((False, False), (False, True))]
        programs += [cg.where_program(dtype, (False, a, b)) for a, b in ((False, False), (False, True), (True, False))]
        programs += [cg.cast_program(dtype, d) for d in DTYPES if dtype != "complex64" or d == "complex64"]
    return programs


def _events(cupy: Any, fn: Any, reps: int = 30) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3)
    return statistics.median(times)


def subnormal_cost(cupy: Any) -> list[tuple[str, float, float, float, float]]:
    """(case, keep normal, ftz normal, keep subnormal data, ftz subnormal data) seconds, 64M float32."""
    from nda_cuda._elementwise import Generator, NvrtcCompiler, Settings

    keep = Generator(cupy, NvrtcCompiler(cupy, False), Settings(ftz=False))
    flush = Generator(cupy, NvrtcCompiler(cupy, True), Settings(ftz=True))
    n = 64 * 1024 * 1024
    rng = cupy.random.default_rng(1)
    normal = [rng.random(n, dtype="float32") + 0.5 for _ in range(2)]
    tiny = [(rng.random(n, dtype="float32") + 0.5) * np.float32(1e-39) for _ in range(2)]
    rows = []
    for op in ("add", "multiply", "exp", "sin", "divide", "sqrt", "maximum"):
        family = "unary" if op in ("exp", "sin", "sqrt") else "binary"
        k, f = keep.wrap(op, family, None), flush.wrap(op, family, None)
        args_n = normal[:1] if family == "unary" else normal
        args_t = tiny[:1] if family == "unary" else tiny
        rows.append(
            (
                op,
                _events(cupy, lambda: k(*args_n)),
                _events(cupy, lambda: f(*args_n)),
                _events(cupy, lambda: k(*args_t)),
                _events(cupy, lambda: f(*args_t)),
            )
        )
    return rows


def sweep(cupy: Any) -> list[tuple[str, int, int, int, float]]:
    from nda_cuda._elementwise import FTZ, Generator, NvrtcCompiler, Settings

    n = 64 * 1024 * 1024
    rng = cupy.random.default_rng(2)
    rows = []
    for dtype, op in (("float32", "add"), ("float32", "exp"), ("float64", "add")):
        a, b = rng.random(n, dtype=dtype), rng.random(n, dtype=dtype)
        for threads in (256, 512):
            for unroll in (1, 2, 4):
                for per_sm in (4, 8, 16, 32):
                    if threads * per_sm > 8192:
                        continue
                    gen = Generator(cupy, NvrtcCompiler(cupy, FTZ), Settings(ftz=FTZ, unroll=unroll, threads=threads, blocks_per_sm=per_sm))
                    k = gen.wrap(op, "unary" if op == "exp" else "binary", None)
                    args = (a,) if op == "exp" else (a, b)
                    rows.append((f"{op} {dtype}", threads, unroll, per_sm, _events(cupy, lambda: k(*args))))
        del a, b
    return rows


def issue_cost(cupy: Any, gen: Any) -> dict[str, float]:
    """Seconds to issue ``x + y`` on (4,) float32 (asynchronous): CuPy's ufunc against the generated kernel's
    dispatch and launch (the same stream), median of rounds of 2000 calls."""
    import timeit

    x = cupy.ones(4, dtype=cupy.float32)
    add = gen.wrap("add", "binary", None)
    exp = gen.wrap("exp", "unary", None)
    fns = {"cupy add": lambda: cupy.add(x, x), "generated add": lambda: add(x, x), "cupy exp": lambda: cupy.exp(x), "generated exp": lambda: exp(x)}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(7):
        for k, fn in fns.items():
            samples[k].append(timeit.timeit(fn, number=2000) / 2000)
        cupy.cuda.get_current_stream().synchronize()
    return {k: statistics.median(v) for k, v in samples.items()}


def reductions(cupy: Any, bandwidth: float) -> dict[str, dict[str, float]]:
    """sum, max and mean of 64M float32 (all elements, and over the last axis of (8192, 8192)): CuPy
    against PyTorch and the floor (issue 28: whether the generator should serve reductions too)."""
    try:
        import torch

        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    n = 64 * 1024 * 1024
    a = cupy.random.default_rng(3).random(n, dtype="float32")
    t = torch.as_tensor(a, device="cuda") if torch is not None else None
    out: dict[str, dict[str, float]] = {}
    for name in ("sum", "max", "mean"):
        for axis in (None, -1):
            label = f"{name} {'all' if axis is None else 'rows'}"
            shaped = a if axis is None else a.reshape(8192, 8192)
            row = {"cupy": _events(cupy, lambda: getattr(cupy, name)(shaped, axis=axis)), "floor": a.nbytes / (bandwidth / 2)}
            if t is not None:
                ts = t if axis is None else t.reshape(8192, 8192)
                fn = {"sum": torch.sum, "max": torch.amax, "mean": torch.mean}[name]
                row["torch"] = _events(cupy, lambda: fn(ts) if axis is None else fn(ts, dim=-1))
            out[label] = row
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_elementwise_check", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer timing rounds")
    parser.add_argument("--skip-timing", action="store_true", help="stop after the correctness steps")
    parser.add_argument("--processes", type=int, default=8, help="processes compiling with NVRTC in step 1")
    parser.add_argument("--vs-cupy", action="store_true", help="also count where CuPy's kernels differ from NumPy (compiles them all: minutes)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    import cupy

    nda.backends.load("cuda")
    import nda_cuda

    backend = nda_cuda.backend
    gen = backend.elementwise
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    try:
        nvrtc = ".".join(str(v) for v in cupy.cuda.nvrtc.getVersion())
    except Exception:  # noqa: BLE001
        nvrtc = "?"
    print(
        f"{name} (sm_{props['major']}{props['minor']}, {props['multiProcessorCount']} SMs), CuPy {cupy.__version__}, NVRTC {nvrtc}, NumPy {np.__version__}"
    )
    if gen is None:
        print("the generator is off (NDA_CUDA_CODEGEN=0): nothing to check")
        return 1
    s = gen.settings
    print(
        f"generator: ftz={s.ftz} unroll={s.unroll} threads={s.threads} blocks/SM={s.blocks_per_sm} skip={sorted(s.skip)}; cache {gen.compiler.cache_dir}"
    )
    status = 0

    # 1. compile
    t = time.perf_counter()
    programs = _programs(gen)
    requests = [(p, pattern) for p in programs for pattern in gen.patterns(p)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        failed = gen.precompile(requests, chunk=48, workers=4, processes=args.processes)
    elapsed = time.perf_counter() - t
    print(f"[1 compile] {len(programs)} programs, {len(requests)} kernels, {failed} failed, {elapsed:.1f} s")
    for w in caught[:5]:
        print("   ", str(w.message)[:600])
    report["compile"] = {"programs": len(programs), "kernels": len(requests), "failed": failed, "seconds": elapsed}
    status |= failed > 0

    # 2. values
    t = time.perf_counter()
    fallbacks = cupy_kernels(cupy)
    fallbacks["astype_ref"] = fallbacks["astype"]
    chk = check_values(cupy, gen, fallbacks, args.vs_cupy)
    elapsed = time.perf_counter() - t
    print(f"[2 values] {chk.cases} cases, {len(chk.failures)} differ from NumPy, {elapsed:.1f} s")
    for line in chk.failures[:40]:
        print("   ", line[:400])
    if chk.cupy_differs:
        print("    (NumPy's answer where CuPy's kernel differs, elements:", ", ".join(f"{k} {v}" for k, v in sorted(chk.cupy_differs.items())), ")")
    report["values"] = {"cases": chk.cases, "failures": chk.failures, "cupy_differs": chk.cupy_differs}
    status |= bool(chk.failures)

    # 3. through nda
    before = dict(gen.launches)
    rng = np.random.default_rng(5)
    host = rng.standard_normal(1 << 20).astype(np.float32)
    x = nda.asarray(host, device="cuda")
    y = nda.asarray(host[::-1].copy(), device="cuda")
    eager_ok = np.array_equal((x + y).asnumpy(), host + host[::-1]) and np.allclose(nda.exp(x).asnumpy(), np.exp(host), rtol=1e-6)
    gelu = lambda v: 0.5 * v * (1.0 + nda.tanh(0.7978845608 * (v + 0.044715 * (v * v * v))))  # noqa: E731
    mul_add = lambda a, b, c: a * b + c  # noqa: E731
    fused_ok = np.array_equal(nda.hybridize(gelu)(x).asnumpy(), gelu(x).asnumpy()) and np.array_equal(
        nda.hybridize(mul_add)(x, y, x).asnumpy(), mul_add(x, y, x).asnumpy()
    )
    used = {k: v - before.get(k, 0) for k, v in gen.launches.items() if v > before.get(k, 0)}
    print(f"[3 nda] eager ok={eager_ok}, hybridized == eager: {fused_ok}, generated launches {used}")
    report["nda"] = {"eager": eager_ok, "fused": fused_ok, "launches": used}
    status |= not (eager_ok and fused_ok and used.get("fused", 0) > 0 and used.get("add", 0) > 0)
    if args.skip_timing:
        print(f"done: {'FAIL' if status else 'ok'}")
        return int(status)

    def step(name: str, fn: Any) -> None:
        """Run one timing step; an error is printed and the next step runs."""
        try:
            fn()
        except Exception as err:  # noqa: BLE001 - report and go on: the GPU time is short
            import traceback

            print(f"[{name}] failed: {type(err).__name__}: {err}")
            traceback.print_exc(limit=4)
            report[f"error {name}"] = f"{type(err).__name__}: {err}"

    def step4() -> None:
        rows = subnormal_cost(cupy)
        print("[4 subnormals] 64M float32, kernel ms (CUDA events): keep/ftz on normal data, keep/ftz on subnormal data")
        worst = 0.0
        for op, kn, fn_, kt, ft in rows:
            worst = max(worst, kn / fn_ - 1)
            print(
                f"    {op:<9} normal {kn * 1e3:.3f}/{fn_ * 1e3:.3f} ({(kn / fn_ - 1) * 100:+.1f}%)   subnormal {kt * 1e3:.3f}/{ft * 1e3:.3f} ({(kt / ft - 1) * 100:+.1f}%)"
            )
        print(
            f"    keeping subnormals costs at most {worst * 100:+.1f}% on normal data: {'keep them (<= 2%)' if worst <= 0.02 else 'over 2%: set nda_cuda._elementwise.FTZ = True'}"
        )
        report["subnormals"] = rows

    def step5() -> None:
        rows5 = sweep(cupy)
        print("[5 launch sweep] kernel ms (CUDA events), best per case first")
        for case in dict.fromkeys(r[0] for r in rows5):
            mine = sorted((r for r in rows5 if r[0] == case), key=lambda r: r[4])
            print(
                f"    {case:<12} "
                + "  ".join(f"t{t}/u{u}/b{b} {v * 1e3:.3f}" for _, t, u, b, v in mine[:4])
                + f"   (current t{s.threads}/u{s.unroll}/b{s.blocks_per_sm}: "
                + " ".join(f"{v * 1e3:.3f}" for _, t, u, b, v in mine if (t, u, b) == (s.threads, s.unroll, s.blocks_per_sm))
                + ")"
            )
        report["sweep"] = rows5

    from . import fusion, gpu

    rounds = 3 if args.quick else 7
    tables: dict[str, Any] = {}
    report["tables"] = tables

    def step6a() -> None:
        tables["elementwise"] = gpu.elementwise(rounds)
        print("[6 tables]")
        print(gpu.elementwise_table(tables["elementwise"]))

    def step6b() -> None:
        tables["fusion"] = fusion.gpu(rounds, bandwidth=tables.get("elementwise", {}).get("bandwidth") or gpu.copy_bandwidth())
        print(fusion.table({"cuda": tables["fusion"]}))

    def step6c() -> None:
        cost = tables["issue_cost"] = issue_cost(cupy, gen)
        print("issue cost of a tiny op, (4,) float32: " + "   ".join(f"{k} {v * 1e6:.2f} µs" for k, v in cost.items()))
        red = tables["reductions"] = reductions(cupy, tables.get("elementwise", {}).get("bandwidth") or gpu.copy_bandwidth())
        print("reductions, 64M float32 (kernel ms, CUDA events; floor: one read at the copy bandwidth):")
        for label, row in red.items():
            print(f"    {label:<9} " + "   ".join(f"{k} {v * 1e3:.3f}" for k, v in row.items()))

    for name, fn in (
        ("4 subnormals", step4),
        ("5 launch sweep", step5),
        ("6 elementwise table", step6a),
        ("6 fused chains", step6b),
        ("6 issue cost, reductions", step6c),
    ):
        step(name, fn)
        cupy.get_default_memory_pool().free_all_blocks()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2, default=str)
    print(f"done: {'FAIL' if status else 'ok'}")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
