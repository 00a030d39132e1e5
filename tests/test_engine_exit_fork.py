"""Exit and ``os.fork`` while a kernel is inside BLAS (issue 29, items 1 and 2).

OpenBLAS's shutdown (at exit) and its fork handler wait for a thread that is inside a BLAS
call, and that call waits for them: the process hangs. nda's worker threads (and nda-sim's
stream threads) run such calls for a program that has no thread of its own, so nda stops
starting kernels and waits (bounded) for the running ones at exit and at fork.

Every scenario runs in a fresh interpreter with a timeout: a hang fails the test, it never
hangs the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX exit and fork semantics")

_TIMEOUT = 90  # seconds; each scenario takes a few seconds when it does not hang


def _run(*parts: str, engine: str = "threaded", **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    code = "\n".join(textwrap.dedent(part) for part in parts)
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=_TIMEOUT,
                              env={**os.environ, "NDA_ENGINE": engine, **env})
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"the process hung (killed after {_TIMEOUT} s); its output: {err.stdout!r} {err.stderr!r}")
    return proc, time.perf_counter() - start


# Four 2000x2000 matmuls: ~0.3-1 s each on two cores; 0.3 s after issuing them a worker (or
# the sim stream thread) is inside dgemm, and more wait in its queue.
_MATMULS = """
    import time
    import numpy as np
    import nda
    a = nda.asarray(np.random.default_rng(0).random((2000, 2000)), device={device!r})
    ys = [a @ a for _ in range(4)]
    time.sleep(0.3)
"""


@pytest.mark.parametrize("engine", ["threaded", "naive"])
@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_the_script_exits_while_a_worker_is_inside_blas(device, engine):
    """The issue's repro: queue four matmuls, sleep, end the script. It never exited."""
    proc, _ = _run(_MATMULS.format(device=device), "print('end of script', flush=True)", engine=engine)
    assert proc.returncode == 0, proc.stderr
    assert "end of script" in proc.stdout


def test_an_exit_handler_still_reads_arrays_after_nda_closed_its_workers():
    """At exit the workers stop starting queued work; a read in a later exit handler runs what
    it needs on its own thread, including ``z += 1`` (which a waiting thread otherwise leaves
    to the workers). The handler is registered before nda is imported, so it runs after nda's."""
    proc, _ = _run("""
        import atexit
        kept = {}

        def late() -> None:
            import numpy as np
            z, expected = kept["z"], kept["expected"]
            print("late read ok" if np.allclose(z.asnumpy(), expected) else "late read WRONG", flush=True)

        atexit.register(late)
        import numpy as np
        import nda
        host = np.random.default_rng(1).random((1500, 1500))
        a = nda.asarray(host)
        z = a @ a
        for _ in range(3):
            z = z @ a
        z += 1.0
        kept["z"], kept["expected"] = z, host @ host @ host @ host @ host + 1.0
    """)
    assert proc.returncode == 0, proc.stderr
    assert "late read ok" in proc.stdout, (proc.stdout, proc.stderr)


_FORK = """
    import os
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: the op that was running at the fork finished before it
        try:
            value = float(ys[0][0, 0])
            fresh = float(nda.sum(nda.ones(1 << 18, device={device!r})))
            os._exit(0 if value > 0 and fresh == float(1 << 18) else 3)
        except RuntimeError as err:
            os._exit(0 if "forked" in str(err) else 4)
        except BaseException:
            os._exit(5)
    forked_in = time.perf_counter() - t0
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status), "fork took", round(forked_in, 2), flush=True)
    assert float(ys[3][0, 0]) > 0  # the parent goes on
    print("parent ok", flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("engine", ["threaded", "naive"])
@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_fork_returns_while_a_worker_is_inside_blas(device, engine):
    proc, _ = _run(_MATMULS.format(device=device), _FORK.format(device=device), engine=engine)
    assert proc.returncode == 0, proc.stderr
    assert "child exit 0" in proc.stdout and "parent ok" in proc.stdout, (proc.stdout, proc.stderr)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_multiprocessing_fork_while_a_matmul_runs():
    proc, _ = _run(_MATMULS.format(device="cpu"), """
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(1) as pool:
            print("pool says", pool.apply(sum, ([1, 2, 3],)), flush=True)
        print(float(ys[3][0, 0]) > 0, flush=True)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "pool says 6" in proc.stdout and "True" in proc.stdout


_SLOW_KERNEL = """
    import os, time
    import numpy as np
    import nda
    from nda import dispatch

    def stuck(x):  # a user's kernel that runs far longer than the bound
        time.sleep(60)
        return np.positive(x)

    dispatch.register("positive", "cpu", ["float64"], stuck, priority=100, backend="test-stuck")
    x = nda.ones(1 << 21)
    x.wait_to_read()
    y = nda.positive(x)  # large: held until the next op (nda.engine._held) ...
    w = nda.zeros(4)  # ... which sends it to a worker
    time.sleep(0.3)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_waits_only_boundedly_for_a_long_kernel():
    proc, _ = _run(_SLOW_KERNEL, """
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                y.asnumpy()
                os._exit(3)
            except RuntimeError as err:
                os._exit(0 if "forked" in str(err) else 4)
        print("fork took", round(time.perf_counter() - t0, 1), flush=True)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
        os._exit(0)  # do not wait for the stuck kernel at exit either
    """, NDA_QUIESCE_TIMEOUT="1")
    assert proc.returncode == 0, proc.stderr
    took = float(proc.stdout.split("fork took ")[1].split()[0])
    assert 0.9 <= took < 20, proc.stdout
    assert "child exit 0" in proc.stdout
    assert "os.fork() gave up waiting" in proc.stderr


def test_exit_waits_only_boundedly_for_a_long_kernel():
    proc, took = _run(_SLOW_KERNEL, "print('end of script', flush=True)", NDA_QUIESCE_TIMEOUT="2")
    assert proc.returncode == 0, proc.stderr
    assert took < 30, "exit must not wait for the 60 s kernel"
    assert "exit gave up waiting" in proc.stderr


def test_register_at_fork_refuses_what_is_not_callable():
    import nda

    with pytest.raises(TypeError, match="callable"):
        nda.engine.register_at_fork(before=5)
