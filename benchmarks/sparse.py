"""Sparse matmul: a 100000 x 100000 csr matrix with 1M non-zeros times a 100000 x 16 block.

    python benchmarks/sparse.py            # 21 rounds
    python benchmarks/sparse.py --quick    # 7 rounds
    python benchmarks/sparse.py --json out.json

Each measurement runs in a fresh child process, so that its peak RSS (the child's
``VmHWM`` from ``/proc/self/status``; ``ru_maxrss`` where there is no /proc, which on Linux
also counts the parent's RSS at the fork, since it survives ``execve``) belongs to that
measurement alone: one child times ``scipy.sparse`` directly, one times nda (``A @ B``
with ``A`` in the csr layout, waited for) against SciPy in alternating rounds inside the
same process. A dense copy of ``A`` would take 37 GiB (float32), so an RSS under 1 GiB
shows nothing was densified. Times are the best of the rounds (the median ratio is shown
too: a round takes ~8 ms and this machine's noise is ±1 ms, so many cheap rounds make
both figures steadier); nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

N, NNZ, K = 100_000, 1_000_000, 16


def _problem() -> tuple[Any, Any, Any, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, N * N, size=int(NNZ * 1.01), dtype=np.int64))[:NNZ]
    rng.shuffle(keys)
    keys = np.sort(keys[:NNZ])
    rows, cols = np.divmod(keys, N)
    indptr = np.zeros(N + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=N), out=indptr[1:])
    data = rng.standard_normal(len(keys)).astype(np.float32)
    block = rng.standard_normal((N, K)).astype(np.float32)
    return data, cols.astype(np.int32), indptr.astype(np.int32), block


def _child(mode: str, rounds: int) -> dict[str, Any]:
    import numpy as np
    import scipy.sparse as sp

    data, indices, indptr, block = _problem()
    a = sp.csr_array((data, indices, indptr), shape=(N, N))
    result: dict[str, Any] = {"nnz": int(a.nnz)}

    def best(fn: Any) -> float:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    if mode == "scipy":
        result["scipy"] = min(best(lambda: a @ block) for _ in range(rounds))
    else:
        import nda

        x = nda.sparse.csr_array((data, indices, indptr), shape=(N, N))
        b = nda.asarray(block)
        (x @ b).wait_to_read()  # resolve once
        ours, theirs = [], []
        for _ in range(rounds):  # alternate, same process, same data
            ours.append(best(lambda: (x @ b).wait_to_read()))
            theirs.append(best(lambda: a @ block))
        result["nda"], result["scipy"] = min(ours), min(theirs)
        result["median_ratio"] = statistics.median(ours) / statistics.median(theirs)
        np.testing.assert_allclose((x @ b).asnumpy(), a @ block, rtol=1e-5, atol=1e-4)
        result["layout"] = x.layout.name
    result["peak_rss"] = _peak_rss()
    return result


def _peak_rss() -> int:
    """This process's peak resident set size in bytes, since its ``execve``."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


def run(rounds: int) -> dict[str, Any]:
    report: dict[str, Any] = {"shape": [N, N], "nnz": NNZ, "block": [N, K], "dtype": "float32", "rounds": rounds}
    for mode in ("scipy", "nda"):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        out = subprocess.run([sys.executable, __file__, "--child", mode, "--rounds", str(rounds)], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"the {mode} child failed:\n{out.stderr}")
        child = json.loads(out.stdout.strip().splitlines()[-1])
        after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        # RUSAGE_CHILDREN reports the largest child so far; the child's own figure is exact.
        child["peak_rss_children"] = after if after > before * 1024 else None
        report[mode] = child
    return report


def table(report: dict[str, Any]) -> str:
    s, n = report["scipy"], report["nda"]
    gib = 1 << 30
    lines = [
        f"csr {report['shape'][0]:,} x {report['shape'][1]:,}, {report['nnz']:,} nnz, {report['dtype']} @ strided {report['block'][0]:,} x {report['block'][1]}; best of {report['rounds']}",
        f"{'':<28}{'time':>10}{'peak RSS':>12}",
        f"{'scipy (own process)':<28}{s['scipy'] * 1e3:>8.1f}ms{s['peak_rss'] / gib:>10.2f}GiB",
        f"{'scipy (in the nda process)':<28}{n['scipy'] * 1e3:>8.1f}ms",
        f"{'nda (csr layout)':<28}{n['nda'] * 1e3:>8.1f}ms{n['peak_rss'] / gib:>10.2f}GiB",
        f"nda / scipy: {n['nda'] / n['scipy']:.3f}x best, {n['median_ratio']:.3f}x median (target <= 1.10x); nda peak RSS {n['peak_rss'] / gib:.2f} GiB (target < 1 GiB; dense A would be {report['shape'][0] ** 2 * 4 / gib:.0f} GiB)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="7 rounds instead of 21")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--child", choices=["scipy", "nda"], help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    rounds = args.rounds or (7 if args.quick else 21)
    if args.child:
        print(json.dumps(_child(args.child, rounds)))
        return 0
    report = run(rounds)
    print(table(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
