"""GPU section: nda on ``cuda`` against raw CuPy (and PyTorch CUDA when installed), in the
same process and the same rounds.

* large arrays: ``add`` and ``exp`` on 64M float32 elements, each timed to completion
  (nda: ``wait_to_read()``; CuPy and PyTorch: a synchronize); target nda/CuPy <= 1.05x;
* tiny-op latency: ``x + y`` on (4,) float32 as issued (asynchronous everywhere: the launch
  cost the caller pays); target nda <= CuPy + 2 µs;
* a host read: ``float(sum(x + y))`` on (4,) float32, two launches and a read of one
  value (nda records one event, after the sum, and waits for it on the caller's thread);
  target nda/CuPy <= 1.2x;
* a dependent chain: 200 tiny ops (``z = z * 1.0001 + y``, 100 times) then
  ``float(sum(z))``; target nda/CuPy <= 1.2x;
* markers: CUDA events nda records per op in those three cases (an event is recorded only
  where the host waits: about one per read, none per op otherwise);
* ``sum`` on (4,) float32, issue cost, in CuPy alone: ``cupy.sum(x)`` against the call nda-cuda
  made before its small-reduction path (``cupy.sum(x, axis=None, dtype=float32,
  keepdims=False)``), on the legacy stream and inside a non-blocking stream as nda uses, and
  nda's ``nda.sum(x)``: which argument or stream made CuPy's ``ndarray.sum`` cost ~30 µs
  inside nda-cuda on the H200 (``nda_cuda._reductions``);
* chains: two independent chains of 8 ``exp``/``sin`` on 16M float32, against CuPy on one
  stream (sequential), on two streams issued by two threads (the hand-made optimum), and
  PyTorch on its current stream. nda's ops on one device share its stream (its queue):
  each op is enqueued at once, a dependent op right behind its producer, and the host
  waits only at the two reads; target nda/CuPy one stream <= 1.05x;
* element-wise ops (issue 28, :func:`elementwise`): add, multiply, exp, where, a comparison and a
  cast at float32 and float64 on 64M elements against CuPy and PyTorch, with the floor from the
  measured bandwidth of a device-to-device copy; target nda <= 1.10x PyTorch.
* the generated kernels' launch settings (:func:`launch_sweep`, alone: ``python -m benchmarks.gpu
  --sweep``): unroll, threads per block and blocks per SM, one at a time, for add and exp at
  float32 and float64; ``NDA_CUDA_CODEGEN_FTZ=1 python -m benchmarks.gpu --elementwise`` gives the
  table with float32 subnormals flushed, whose cost issue 28 asks for (keep them if <= 2%);
* random numbers (:func:`random_section`, also alone: ``python -m benchmarks.gpu --random``):
  ``nda.random`` (its own Philox4x32-10 CUDA kernel, bit-identical to cpu) against
  ``cupy.random`` (cuRAND) for ``random`` and ``standard_normal``, float32 and float64, at
  1M and 64M values, each timed to completion; target nda/CuPy <= 1.2x.

Without a GPU (or without nda-cuda) every case is skipped with the probe's reason.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import nda

from ._timing import alternate


def unavailable() -> str | None:
    """Why there is no GPU benchmark here, or None."""
    try:
        import cupy
    except ImportError as err:
        return f"CuPy is not installed ({err})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as err:
        return f"no usable NVIDIA GPU: {err}"
    if count == 0:
        return "no usable NVIDIA GPU: CUDA reports no device"
    if "cuda" not in [r["name"] for r in nda.backends.status()]:
        return f"CuPy sees {count} GPU(s) but nda-cuda is not installed (pip install ./plugins/nda-cuda)"
    try:
        nda.backends.load("cuda")
    except nda.backends.BackendError as err:
        return f"nda-cuda did not load: {err}"
    return None


def _torch() -> Any:
    """PyTorch with CUDA, or None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def large(rounds: int) -> dict[str, dict[str, float]]:
    import cupy

    n = 64 * 1024 * 1024
    stream = cupy.cuda.get_current_stream()
    a_cp = cupy.random.default_rng(0).random(n, dtype=cupy.float32)
    b_cp = cupy.random.default_rng(1).random(n, dtype=cupy.float32)
    a = nda.asarray(a_cp.get(), device="cuda")
    b = nda.asarray(b_cp.get(), device="cuda")
    nda.waitall()

    def cp(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> None:
            fn()
            stream.synchronize()

        return run

    cases = {
        "add": {"cupy": cp(lambda: a_cp + b_cp), "nda": lambda: (a + b).wait_to_read()},
        "exp": {"cupy": cp(lambda: cupy.exp(a_cp)), "nda": lambda: nda.exp(a).wait_to_read()},
    }
    torch = _torch()
    if torch is not None:
        a_t = torch.as_tensor(a_cp, device="cuda")
        b_t = torch.as_tensor(b_cp, device="cuda")

        def tc(fn: Callable[[], Any]) -> Callable[[], Any]:
            def run() -> None:
                fn()
                torch.cuda.synchronize()

            return run

        cases["add"]["torch"] = tc(lambda: a_t + b_t)
        cases["exp"]["torch"] = tc(lambda: torch.exp(a_t))
    return {name: alternate(fns, rounds, 5) for name, fns in cases.items()}


def host_read(rounds: int, number: int) -> dict[str, float]:
    """``float(sum(x + y))`` on (4,) float32: two launches and one value read back."""
    import cupy

    x_cp = cupy.ones(4, dtype=cupy.float32)
    y_cp = cupy.ones(4, dtype=cupy.float32)
    x = nda.ones(4, dtype=nda.float32, device="cuda")
    y = nda.ones(4, dtype=nda.float32, device="cuda")
    nda.waitall()
    fns: dict[str, Callable[[], Any]] = {"cupy": lambda: float(cupy.sum(x_cp + y_cp)), "nda": lambda: float(nda.sum(x + y))}
    torch = _torch()
    if torch is not None:
        x_t = torch.ones(4, dtype=torch.float32, device="cuda")
        y_t = torch.ones(4, dtype=torch.float32, device="cuda")
        fns["torch"] = lambda: float(torch.sum(x_t + y_t))
    return alternate(fns, rounds, number)


def tiny(rounds: int, number: int) -> dict[str, float]:
    import cupy

    x_cp = cupy.ones(4, dtype=cupy.float32)
    y_cp = cupy.ones(4, dtype=cupy.float32)
    x = nda.ones(4, dtype=nda.float32, device="cuda")
    y = nda.ones(4, dtype=nda.float32, device="cuda")
    nda.waitall()
    fns: dict[str, Callable[[], Any]] = {"cupy": lambda: x_cp + y_cp, "nda": lambda: x + y}
    torch = _torch()
    if torch is not None:
        x_t = torch.ones(4, dtype=torch.float32, device="cuda")
        y_t = torch.ones(4, dtype=torch.float32, device="cuda")
        fns["torch"] = lambda: x_t + y_t
    result = alternate(fns, rounds, number)
    cupy.cuda.get_current_stream().synchronize()
    nda.waitall()
    return result


def chain_read(rounds: int, number: int) -> dict[str, float]:
    """200 dependent tiny ops on (4,) float32, then one value read back."""
    import cupy

    x_cp = cupy.ones(4, dtype=cupy.float32)
    y_cp = cupy.ones(4, dtype=cupy.float32)
    x = nda.ones(4, dtype=nda.float32, device="cuda")
    y = nda.ones(4, dtype=nda.float32, device="cuda")
    nda.waitall()

    def run_cp() -> float:
        z = x_cp
        for _ in range(100):
            z = z * 1.0001 + y_cp
        return float(cupy.sum(z))

    def run_nda() -> float:
        z = x
        for _ in range(100):
            z = z * 1.0001 + y
        return float(nda.sum(z))

    fns: dict[str, Callable[[], Any]] = {"cupy": run_cp, "nda": run_nda}
    torch = _torch()
    if torch is not None:
        x_t = torch.ones(4, dtype=torch.float32, device="cuda")
        y_t = torch.ones(4, dtype=torch.float32, device="cuda")

        def run_t() -> float:
            z = x_t
            for _ in range(100):
                z = z * 1.0001 + y_t
            return float(torch.sum(z))

        fns["torch"] = run_t
    return alternate(fns, rounds, number)


def markers_per_op() -> dict[str, float]:
    """CUDA events nda records per op: tiny ops issued, a host read, a chain and a read."""
    from nda.engine import queues as _queues

    queue = _queues.queue_of_device(nda.Device("cuda", 0))
    x = nda.ones(4, dtype=nda.float32, device="cuda")
    y = nda.ones(4, dtype=nda.float32, device="cuda")
    nda.waitall()

    def count(fn: Callable[[], Any], ops: int, times: int) -> float:
        nda.waitall()
        before = queue.markers if queue is not None else 0
        for _ in range(times):
            fn()
        after = queue.markers if queue is not None else 0
        nda.waitall()
        return (after - before) / (ops * times)

    def chain() -> float:
        z = x
        for _ in range(100):
            z = z * 1.0001 + y
        return float(nda.sum(z))

    return {
        "x + y issued": count(lambda: x + y, 1, 1000),
        "float(sum(x + y))": count(lambda: float(nda.sum(x + y)), 2, 200),
        "200 ops + float(sum(z))": count(chain, 201, 5),
    }


def sum_variants(rounds: int, number: int) -> dict[str, float]:
    """Issue cost of a (4,) float32 sum in CuPy alone, per argument form and stream, and in nda."""
    import cupy

    x_cp = cupy.ones(4, dtype=cupy.float32)
    x = nda.ones(4, dtype=nda.float32, device="cuda")
    side = cupy.cuda.Stream(non_blocking=True)
    f32 = cupy.float32

    def on_side(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with side:
                return fn()

        return run

    fns: dict[str, Callable[[], Any]] = {
        "cupy.sum(x)": lambda: cupy.sum(x_cp),
        "cupy.sum(x, axis=None, dtype=float32, keepdims=False)": lambda: cupy.sum(x_cp, axis=None, dtype=f32, keepdims=False),
        "cupy.sum(x, axis=(0,))": lambda: cupy.sum(x_cp, axis=(0,)),
        "non-blocking stream: cupy.sum(x)": on_side(lambda: cupy.sum(x_cp)),
        "non-blocking stream: cupy.sum(x, ..., dtype=float32, ...)": on_side(lambda: cupy.sum(x_cp, axis=None, dtype=f32, keepdims=False)),
        "nda.sum(x)": lambda: nda.sum(x),
    }
    result = alternate(fns, rounds, number)
    cupy.cuda.get_current_stream().synchronize()
    side.synchronize()
    nda.waitall()
    return result


def overlap(rounds: int) -> dict[str, float]:
    import cupy

    n = 16 * 1024 * 1024
    host = cupy.random.default_rng(2).random(n, dtype=cupy.float32).get()

    def chain_cp(x: Any) -> Any:
        for i in range(8):
            x = cupy.exp(x) if i % 2 == 0 else cupy.sin(x)
        return x

    def chain_nda(x: Any) -> Any:
        for i in range(8):
            x = nda.exp(x) if i % 2 == 0 else nda.sin(x)
        return x

    p_cp, q_cp = cupy.asarray(host), cupy.asarray(host)
    p, q = nda.asarray(host, device="cuda"), nda.asarray(host, device="cuda")
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]

    def cupy_sequential() -> None:
        chain_cp(p_cp)
        chain_cp(q_cp)
        cupy.cuda.get_current_stream().synchronize()

    def cupy_two_streams() -> None:
        def work(stream: Any, x: Any) -> None:
            with stream:
                chain_cp(x)
            stream.synchronize()

        threads = [threading.Thread(target=work, args=(s, x)) for s, x in zip(streams, (p_cp, q_cp))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def nda_engine() -> None:
        r1, r2 = chain_nda(p), chain_nda(q)
        r1.wait_to_read()
        r2.wait_to_read()

    fns: dict[str, Callable[[], Any]] = {"cupy one stream": cupy_sequential, "cupy two streams": cupy_two_streams, "nda": nda_engine}
    torch = _torch()
    if torch is not None:
        p_t, q_t = torch.as_tensor(p_cp, device="cuda"), torch.as_tensor(q_cp, device="cuda")

        def chain_t(x: Any) -> Any:
            for i in range(8):
                x = torch.exp(x) if i % 2 == 0 else torch.sin(x)
            return x

        def torch_chains() -> None:
            chain_t(p_t)
            chain_t(q_t)
            torch.cuda.synchronize()

        fns["torch"] = torch_chains
    return alternate(fns, rounds, 1)


def copy_bandwidth(nbytes: int = 1 << 30, reps: int = 20) -> float:
    """Bytes per second a device-to-device copy moves (read plus written), median of ``reps``, CUDA events."""
    import statistics

    import cupy

    src = cupy.ones(nbytes // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    times = []
    for i in range(reps + 3):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        cupy.copyto(dst, src)
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3)
    return 2.0 * src.nbytes / statistics.median(times)


#: Issue 28's element-wise cases: name -> (nda, CuPy/NumPy-style, torch) callables over (a, b, c), and
#: the bytes moved per element as (arrays read of the dtype, arrays written of it, bool arrays).
ELEMENTWISE_CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], tuple[int, int, int]]] = {
    "add": (lambda a, b, c: a + b, lambda cp, a, b, c: a + b, lambda t, a, b, c: a + b, (2, 1, 0)),
    "multiply": (lambda a, b, c: a * b, lambda cp, a, b, c: a * b, lambda t, a, b, c: a * b, (2, 1, 0)),
    "exp": (lambda a, b, c: nda.exp(a), lambda cp, a, b, c: cp.exp(a), lambda t, a, b, c: t.exp(a), (1, 1, 0)),
    "where": (lambda a, b, c: nda.where(c, a, b), lambda cp, a, b, c: cp.where(c, a, b), lambda t, a, b, c: t.where(c, a, b), (2, 1, 1)),
    "less": (lambda a, b, c: a < b, lambda cp, a, b, c: a < b, lambda t, a, b, c: a < b, (2, 0, 1)),
}


def elementwise(rounds: int, n: int = 64 * 1024 * 1024) -> dict[str, Any]:
    """Issue 28's table: add, multiply, exp, where, a comparison and a cast at float32 and float64 on
    ``n`` elements, to completion, nda against CuPy and PyTorch in this process (the same memory:
    nda and PyTorch see CuPy's arrays through DLPack), and the floor: the bytes the op must move
    at the bandwidth of a device-to-device copy (measured here). Target: nda <= 1.10x PyTorch."""
    import cupy

    torch = _torch()
    bandwidth = copy_bandwidth()
    stream = cupy.cuda.get_current_stream()
    results: dict[str, Any] = {"bandwidth": bandwidth, "n": n, "cases": {}}
    for dtype in ("float32", "float64"):
        rng = cupy.random.default_rng(0)
        a_cp = rng.random(n, dtype=dtype) * 4 - 2
        b_cp = rng.random(n, dtype=dtype) * 4 - 2
        c_cp = rng.random(n, dtype="float32") < 0.5
        arrays = [nda.from_dlpack(x) for x in (a_cp, b_cp, c_cp)]
        tensors = [torch.as_tensor(x, device="cuda") for x in (a_cp, b_cp, c_cp)] if torch is not None else []
        size = a_cp.itemsize
        other = "float64" if dtype == "float32" else "float32"
        cases = dict(ELEMENTWISE_CASES)
        cases[f"astype {other}"] = (
            lambda a, b, c, o=other: nda.astype(a, getattr(nda, o)),
            lambda cp, a, b, c, o=other: a.astype(o),
            lambda t, a, b, c, o=other: a.to(getattr(t, o)),
            (1, 0, 0),
        )
        nda.waitall()
        for name, (fn_nda, fn_cp, fn_t, (reads, writes, bools)) in cases.items():
            moved = n * (size * (reads + writes) + bools)
            if name.startswith("astype"):
                moved += n * (12 - size)  # the other float dtype written
            fns: dict[str, Callable[[], Any]] = {
                # noqa F821 below: the closures run before the `del` that frees device memory per dtype
                "cupy": lambda f=fn_cp: (f(cupy, a_cp, b_cp, c_cp), stream.synchronize()),  # noqa: F821
                "nda": lambda f=fn_nda: f(*arrays).wait_to_read(),  # noqa: F821
            }
            if torch is not None:
                fns["torch"] = lambda f=fn_t: (f(torch, *tensors), torch.cuda.synchronize())  # noqa: F821
            timed = alternate(fns, rounds, 5)
            timed["floor"] = moved / bandwidth
            results["cases"][f"{dtype} {name}"] = timed
        del arrays, tensors, a_cp, b_cp, c_cp
        cupy.get_default_memory_pool().free_all_blocks()
    return results


def elementwise_table(result: dict[str, Any]) -> str:
    out = [
        f"element-wise ops, {result['n'] // (1024 * 1024)}M elements, to completion; copy bandwidth "
        f"{result['bandwidth'] / 1e12:.2f} TB/s (read + written): target nda <= 1.10x torch"
    ]
    for name, r in result["cases"].items():
        torch = f"   torch {r['torch'] * 1e3:7.3f} ms   nda/torch {r['nda'] / r['torch']:.2f}x" if "torch" in r else ""
        out.append(
            f"  {name:<17} cupy {r['cupy'] * 1e3:7.3f} ms   nda {r['nda'] * 1e3:7.3f} ms{torch}   "
            f"floor {r['floor'] * 1e3:7.3f} ms   nda/floor {r['nda'] / r['floor']:.2f}x"
        )
    return "\n".join(out)


#: The generator's launch settings the sweep tries (issue 28: float32 reached 1.21x the copy floor
#: where float64 reached 1.11x on the H200, with unroll 2, 256 threads, 8 blocks per SM).
SWEEP = {"unroll": (1, 2, 4, 8), "threads": (128, 256, 512), "blocks_per_sm": (4, 8, 16, 32)}


def launch_sweep(rounds: int, n: int = 64 * 1024 * 1024, ops: tuple[str, ...] = ("add", "exp"), device: str = "cuda") -> dict[str, Any]:
    """nda-cuda's generated kernels under each launch setting of :data:`SWEEP` (one knob at a time
    from the defaults, then the best of each knob together): seconds per op on ``n`` elements, to
    completion. The settings are the generator's (``Generator.configure``, which drops the launch
    caches), so each setting runs the kernel compiled for it. ``device``: a device whose backend
    has the generator as ``elementwise`` (the tests use the host-compiled ``cudagen``)."""
    import numpy as np

    dev = nda.Device(device) if ":" in device else nda.Device(device, 0)
    generator = getattr(nda.backends.for_device(dev), "elementwise", None) or getattr(nda.backends.for_device(dev), "generator", None)
    if generator is None:
        return {"skipped": "nda-cuda's element-wise generator is off (NDA_CUDA_CODEGEN=0)"}
    settings = generator.settings
    default = {k: getattr(settings, k) for k in SWEEP}

    def apply(config: dict[str, int]) -> None:
        generator.configure(**config)

    def label(config: dict[str, int]) -> str:
        return " ".join(f"{k}={v}" for k, v in config.items())

    configs = [dict(default)]
    for knob, values in SWEEP.items():
        configs += [{**default, knob: v} for v in values if v != default[knob]]
    results: dict[str, Any] = {"default": default, "n": n, "cases": {}}
    host = np.random.default_rng(1)
    try:
        for dtype in ("float32", "float64"):
            a = nda.asarray(host.random(n).astype(dtype), device=dev)
            b = nda.asarray(host.random(n).astype(dtype), device=dev)
            calls = {"add": lambda: a + b, "exp": lambda: nda.exp(a), "multiply": lambda: a * b}  # noqa: F821 - run before the `del`
            for op in ops:
                run = {"nda": lambda f=calls[op]: f().wait_to_read()}
                timed: dict[str, float] = {}
                for config in configs:
                    apply(config)
                    timed[label(config)] = alternate(run, rounds, 5)["nda"]
                best = {}
                for knob in SWEEP:  # the fastest value of each knob, the others at their defaults
                    alone = [c for c in configs if all(c[k] == default[k] for k in SWEEP if k != knob)]
                    best[knob] = min(alone, key=lambda c: timed[label(c)])[knob]
                if label(best) not in timed:
                    apply(best)
                    timed[label(best)] = alternate(run, rounds, 5)["nda"]
                results["cases"][f"{dtype} {op}"] = {"times": timed, "best": label(best)}
            del a, b
            nda.waitall()
    finally:
        apply(default)
    return results


def sweep_table(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"launch sweep skipped: {result['skipped']}"
    default = " ".join(f"{k}={v}" for k, v in result["default"].items())
    out = [f"generated kernels' launch settings, {result['n']:,} elements, to completion (default {default}):"]
    for name, r in result["cases"].items():
        times = r["times"]
        base = times[default]
        fastest = min(times, key=times.__getitem__)
        out.append(f"  {name:<14} default {base * 1e3:7.3f} ms   fastest {times[fastest] * 1e3:7.3f} ms ({times[fastest] / base:.3f}x) at {fastest}")
    return "\n".join(out)


def random_section(rounds: int) -> dict[str, dict[str, float]]:
    """``nda.random`` on cuda against ``cupy.random``: seconds per call, to completion (both synchronised)."""
    import cupy

    rng = nda.random.default_rng(0, device="cuda")
    cp_rng = cupy.random.default_rng(0)
    sync = cupy.cuda.get_current_stream().synchronize
    cases: dict[str, dict[str, Callable[[], Any]]] = {}
    for n in (1_000_000, 64 * 1024 * 1024):
        for dtype, cp_dtype in ((nda.float32, cupy.float32), (nda.float64, cupy.float64)):
            label = f"{n:,} {dtype.name}"

            def pair(nda_fn: Callable[[], Any], cupy_fn: Callable[[], Any]) -> dict[str, Callable[[], Any]]:
                return {"cupy": lambda: (cupy_fn(), sync()), "nda": lambda: nda_fn().wait_to_read()}

            cases[f"random {label}"] = pair(lambda n=n, d=dtype: rng.random(n, dtype=d), lambda n=n, d=cp_dtype: cupy.random.random(n, dtype=d))
            cases[f"standard_normal {label}"] = pair(
                lambda n=n, d=dtype: rng.standard_normal(n, dtype=d), lambda n=n, d=cp_dtype: cupy.random.standard_normal(n, dtype=d)
            )
            cases[f"standard_normal {label} (cupy Generator)"] = pair(
                lambda n=n, d=dtype: rng.standard_normal(n, dtype=d), lambda n=n, d=cp_dtype: cp_rng.standard_normal(n, dtype=d)
            )
    return {name: alternate(fns, rounds, 1) for name, fns in cases.items()}


def random_table(report: dict[str, dict[str, float]]) -> str:
    out = ["random numbers, to completion: target nda/cupy.random <= 1.2x"]
    for name, r in report.items():
        out.append(f"  {name:<48} cupy {r['cupy'] * 1e3:8.3f} ms   nda {r['nda'] * 1e3:8.3f} ms   nda/cupy {r['nda'] / r['cupy']:.2f}x")
    return "\n".join(out)


def run(rounds: int, quick: bool) -> dict[str, Any]:
    reason = unavailable()
    if reason is not None:
        return {"skipped": reason}
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {
        "device": f"{name} (compute capability {props['major']}.{props['minor']}), CuPy {cupy.__version__}",
        "large": large(3 if quick else 9),
        "tiny": tiny(rounds, 2_000 if quick else 10_000),
        "host_read": host_read(rounds, 500 if quick else 2_000),
        "chain_read": chain_read(rounds, 5 if quick else 20),
        "markers": markers_per_op(),
        "sum_variants": sum_variants(rounds, 500 if quick else 2_000),
        "overlap": overlap(3 if quick else 7),
        "elementwise": elementwise(3 if quick else 7),
        "random": random_section(3 if quick else 9),
    }


def table(report: dict[str, Any]) -> str:
    if "skipped" in report:
        return f"skipped: {report['skipped']}"
    out = [report["device"]]
    out.append("large arrays, 64M float32 (to completion): target nda/cupy <= 1.05x")
    for name, r in report["large"].items():
        torch = f"   torch {r['torch'] * 1e3:8.3f} ms" if "torch" in r else ""
        out.append(f"  {name:<4} cupy {r['cupy'] * 1e3:8.3f} ms   nda {r['nda'] * 1e3:8.3f} ms{torch}   nda/cupy {r['nda'] / r['cupy']:.3f}x")
    t = report["tiny"]
    torch = f"   torch {t['torch'] * 1e6:.2f} µs" if "torch" in t else ""
    out.append(
        f"tiny op x + y, (4,) float32 (issue cost): cupy {t['cupy'] * 1e6:.2f} µs   nda {t['nda'] * 1e6:.2f} µs{torch}   "
        f"nda - cupy {(t['nda'] - t['cupy']) * 1e6:+.2f} µs (target <= +2 µs)"
    )
    h = report["host_read"]
    torch = f"   torch {h['torch'] * 1e6:.1f} µs" if "torch" in h else ""
    out.append(
        f"host read float(sum(x + y)), (4,) float32: cupy {h['cupy'] * 1e6:.1f} µs   nda {h['nda'] * 1e6:.1f} µs{torch}   "
        f"nda/cupy {h['nda'] / h['cupy']:.2f}x (target <= 1.2x)"
    )
    c = report["chain_read"]
    torch = f"   torch {c['torch'] * 1e3:.3f} ms" if "torch" in c else ""
    out.append(
        f"200 dependent tiny ops then float(sum(z)): cupy {c['cupy'] * 1e3:.3f} ms   nda {c['nda'] * 1e3:.3f} ms{torch}   "
        f"nda/cupy {c['nda'] / c['cupy']:.2f}x (target <= 1.2x)"
    )
    out.append("CUDA events nda recorded per op: " + ", ".join(f"{k} {v:.3f}" for k, v in report["markers"].items()))
    out.append("sum of (4,) float32, issue cost (CuPy alone unless nda):")
    for name, v in report["sum_variants"].items():
        out.append(f"  {name:<58} {v * 1e6:7.2f} µs")
    o = report["overlap"]
    base = o["cupy one stream"]
    out.append("two independent chains of 8 exp/sin on 16M float32: target nda/cupy one stream <= 1.05x")
    for name, s in o.items():
        out.append(f"  {name:<17} {s * 1e3:8.3f} ms   {s / base:.3f}x cupy one stream")
    if "elementwise" in report:
        out.append(elementwise_table(report["elementwise"]))
    if "random" in report:
        out.append(random_table(report["random"]))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.gpu [--quick] [--json PATH]``: only this section."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--random", action="store_true", help="only nda.random against cupy.random")
    parser.add_argument("--elementwise", action="store_true", help="only the element-wise table (issue 28)")
    parser.add_argument("--sweep", action="store_true", help="only the generated kernels' launch-setting sweep")
    args = parser.parse_args(argv)
    if args.elementwise or args.sweep:
        reason = unavailable()
        if reason:
            report = {"skipped": reason}
            print(f"skipped: {reason}")
        elif args.sweep:
            report = {"sweep": launch_sweep(3 if args.quick else 7)}
            print(sweep_table(report["sweep"]))
        else:
            report = {"elementwise": elementwise(3 if args.quick else 7)}
            print(elementwise_table(report["elementwise"]))
    elif args.random:
        reason = unavailable()
        report: dict[str, Any] = {"skipped": reason} if reason else {"random": random_section(3 if args.quick else 9)}
        print(f"skipped: {reason}" if reason else random_table(report["random"]))
    else:
        report = run(5 if args.quick else 15, args.quick)
        print(table(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
