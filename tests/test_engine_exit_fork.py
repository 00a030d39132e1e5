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
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=_TIMEOUT, env={**os.environ, "NDA_ENGINE": engine, **env}
        )
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
    proc, _ = _run(
        _MATMULS.format(device="cpu"),
        """
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(1) as pool:
            print("pool says", pool.apply(sum, ([1, 2, 3],)), flush=True)
        print(float(ys[3][0, 0]) > 0, flush=True)
    """,
    )
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
    proc, _ = _run(
        _SLOW_KERNEL,
        """
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
    """,
        NDA_QUIESCE_TIMEOUT="1",
    )
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


# ----------------------------------------------------------------------------- issue 38, item 8: fork and exit

# In the scripts below: each child's exit code, or "hung" for one still running after ``seconds`` (then killed).
_WAIT_CHILDREN = """
    import os, signal, time

    def wait_children(pids, seconds=20.0):
        deadline = time.monotonic() + seconds
        codes = {}
        while len(codes) < len(pids) and time.monotonic() < deadline:
            for pid in pids:
                if pid not in codes:
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        codes[pid] = os.waitstatus_to_exitcode(status)
            time.sleep(0.02)
        for pid in pids:
            if pid not in codes:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                codes[pid] = "hung"
        return [codes[pid] for pid in pids]
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("engine", ["threaded", "naive"])
@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_fork_while_another_thread_makes_the_first_array_on_a_device_does_not_hang(device, engine):
    """The issue's hang: the child of a fork taken while another thread activates the device's
    backend (its first array there) waited forever on the activation lock. The fork now waits
    for the activation, and every child can use the device. Several forks at different moments
    of the activation, in one process (the activation happens once per process)."""
    proc, _ = _run(
        _WAIT_CHILDREN,
        f"""
        import threading
        import nda

        def first():
            nda.ones(3, device={device!r})

        thread = threading.Thread(target=first)
        thread.start()
        pids = []
        for delay in (0.0, 0.002, 0.01, 0.03):
            time.sleep(delay)
            pid = os.fork()
            if pid == 0:
                try:
                    ok = float((nda.ones(3, device={device!r}) + 1)[0]) == 2.0
                    os._exit(0 if ok else 3)
                except BaseException:
                    os._exit(4)
            pids.append(pid)
        thread.join()
        print("children", wait_children(pids), flush=True)
    """,
        engine=engine,
    )
    assert proc.returncode == 0, proc.stderr
    assert "children [0, 0, 0, 0]" in proc.stdout, (proc.stdout, proc.stderr)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_waits_for_a_slow_backend_activation_and_the_child_has_that_backend(tmp_path):
    """Deterministic: a backend whose import takes 0.5 s is loaded on a thread; a fork taken
    while the import runs waits for the activation to finish (the child never finds it half
    imported, nor its lock held by a thread it does not have) and says nothing when the wait
    is short."""
    marker = tmp_path / "importing"
    (tmp_path / "slow_fork_backend.py").write_text(
        textwrap.dedent(f"""
        import pathlib, time
        import numpy as np
        import nda

        pathlib.Path({str(marker)!r}).touch()  # the import runs
        time.sleep(0.5)


        class Backend:
            name = "slowfork"
            api_version = "1.4"
            device_types = ("slowfork",)
            buffer_type = np.ndarray

            def devices(self):
                return [nda.backends.DeviceInfo(nda.Device("slowfork", 0), "slow-import test device", 1 << 20)]

            def register(self, register_kernel):
                from nda.ops import CATALOG

                for op in ("add", "asarray", "astype", "ones", "getitem"):
                    decl = CATALOG[op]
                    register_kernel(op, [d for d in decl.supported_dtypes if d is nda.float64], decl.reference)

            def to_host(self, buf):
                return np.array(buf, copy=True)

            def from_host(self, host, device, out=None):
                return np.array(host, copy=True)

            def device_of(self, buf):
                return nda.Device("slowfork", 0)


        backend = Backend()
    """)
    )
    proc, _ = _run(
        _WAIT_CHILDREN,
        f"""
        import sys, threading
        sys.path.insert(0, {str(tmp_path)!r})
        import nda

        thread = threading.Thread(target=nda.backends.load, args=("slow_fork_backend",))
        thread.start()
        while not os.path.exists({str(marker)!r}):
            time.sleep(0.005)
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                x = nda.ones(3, device="slowfork") + 1.0
                os._exit(0 if x.asnumpy().tolist() == [2.0, 2.0, 2.0] else 3)
            except BaseException as err:
                print("child:", repr(err), flush=True)
                os._exit(4)
        took = time.perf_counter() - t0
        thread.join()
        print("children", wait_children([pid]), "fork took", round(took, 2), flush=True)
    """,
    )
    assert proc.returncode == 0, proc.stderr
    assert "children [0]" in proc.stdout, (proc.stdout, proc.stderr)
    took = float(proc.stdout.split("fork took ")[1].split()[0])
    assert 0.2 <= took < 10, proc.stdout
    assert "os.fork()" not in proc.stderr  # no notice for a wait under two seconds


_PENDING_AT_FORK = """
    import os, time
    import nda
    L = 1 << 21
    held = nda.exp(nda.zeros(L, device={device!r}))  # issued while idle: held until the next nda call
    x = nda.ones(8, device={device!r})
    for _ in range(100):
        x = x + 1  # on sim, a chain the stream runs slowly (NDA_SIM_LATENCY_US)
    y = nda.ones(L, device={device!r}) * 2  # a task not sent yet, and one waiting for it
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("engine", ["threaded", "naive"])
@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_a_fork_child_gets_the_values_of_work_issued_and_not_run_before_the_fork(device, engine):
    """Held, unsent and queued work (host tasks, a device queue's items) was failed in the child
    ("still being computed when the process forked") although nothing was running: the child
    now computes it, as the naive engine's and NumPy's children have the values. The fork
    itself does not wait for it."""
    proc, _ = _run(
        _WAIT_CHILDREN,
        _PENDING_AT_FORK.format(device=device),
        """
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            try:
                ok = float(held[5]) == 1.0 and float(x[0]) == 101.0 and float(y[7]) == 2.0
                os._exit(0 if ok else 3)
            except BaseException as err:
                print("child:", repr(err)[:300], flush=True)
                os._exit(4)
        took = time.perf_counter() - t0
        print("children", wait_children([pid]), "fork took", round(took, 3), flush=True)
        assert float(held[5]) == 1.0 and float(x[0]) == 101.0 and float(y[7]) == 2.0  # the parent's own values
    """,
        engine=engine,
        NDA_SIM_LATENCY_US="2000",
    )
    assert proc.returncode == 0, proc.stderr
    assert "children [0]" in proc.stdout, (proc.stdout, proc.stderr)
    assert float(proc.stdout.split("fork took ")[1].split()[0]) < 2.0, "the fork waited for queued work"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("engine", ["threaded", "naive"])
@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_a_fork_pool_reads_an_array_computed_just_before_it(device, engine):
    """The common program of the issue (failed 10 of 10 times on cpu): ``data = nda.ones(L) * 2``
    and a ``multiprocessing`` pool of forked workers that read it."""
    proc, _ = _run(
        f"""
        import multiprocessing
        import nda

        data = nda.ones(1 << 21, device={device!r}) * 2

        def f(i):
            return float(data[i * 1000])

        with multiprocessing.get_context("fork").Pool(2) as pool:
            print("pool says", pool.map(f, range(4)), flush=True)
    """,
        engine=engine,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pool says [2.0, 2.0, 2.0, 2.0]" in proc.stdout, (proc.stdout, proc.stderr)


def test_an_exit_handler_reads_a_long_pending_sim_chain():
    """An exit handler registered before ``import nda`` (it runs after nda's) reads a sim chain
    still queued at exit: its temporaries' memory must come back while the exit runs (it did
    not: nda-sim freed device memory with ``weakref.finalize``, which stops at exit, and the
    chain ran out of its 16 MiB with a MemoryError)."""
    proc, _ = _run(
        """
        import atexit
        kept = {}

        def late():
            print("late", float(kept["z"][0]), flush=True)

        atexit.register(late)
        import nda
        z = nda.ones(1 << 16, device="sim")
        for _ in range(2000):
            z = z * 1.0 + 1.0
        kept["z"] = z
    """,
        NDA_SIM_CAPACITY=str(1 << 24),
    )
    assert proc.returncode == 0, proc.stderr
    assert "late 2001.0" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
    assert "MemoryError" not in proc.stderr


def test_exit_with_pending_sim_work_says_that_it_waits():
    """Exit lets the sim streams finish what was queued (at most NDA_QUIESCE_TIMEOUT); a wait
    longer than two seconds says so on stderr, as the cpu engine's does (it was silent)."""
    proc, took = _run(
        """
        import nda
        x = nda.ones(4, device="sim")
        for _ in range(250):
            x = x + 1
        print("end of script", flush=True)
    """,
        NDA_SIM_LATENCY_US="15000",
    )
    assert proc.returncode == 0, proc.stderr
    assert "end of script" in proc.stdout
    assert "nda-sim: exit waits for" in proc.stderr and "NDA_QUIESCE_TIMEOUT" in proc.stderr, proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_two_dozen_forks_while_threads_issue_work_on_cpu_and_sim(engine):
    """Forks at random moments while two threads issue chains (cpu tasks and held ops, a sim
    queue): every child reads an array the parent issued just before the fork and computes
    a fresh one, on both devices, and exits; none hangs, none gets a wrong value."""
    proc, _ = _run(
        _WAIT_CHILDREN,
        """
        import random, threading
        import nda

        stop = threading.Event()

        def busy(device, n):
            x = nda.ones(n, device=device)
            while not stop.is_set():
                x = nda.exp(x * 0.0)  # always 1.0

        threads = [threading.Thread(target=busy, args=("cpu", 1 << 20)), threading.Thread(target=busy, args=("sim", 1 << 12))]
        for t in threads:
            t.start()
        rng = random.Random(0)
        pids, expected = [], []
        for i in range(24):
            time.sleep(rng.random() * 0.02)
            data = nda.full(1 << 20 if i % 2 else 64, float(i), device="cpu" if i % 3 else "sim") * 2
            pid = os.fork()
            if pid == 0:
                try:
                    ok = (float(data[5]) == 2.0 * i and float(nda.sum(nda.ones(8, device="sim"))) == 8.0
                          and float(nda.sum(nda.ones(1 << 20))) == 2.0 ** 20)
                    os._exit(0 if ok else 3)
                except BaseException as err:
                    print("child", i, repr(err)[:200], flush=True)
                    os._exit(4)
            pids.append(pid)
        stop.set()
        for t in threads:
            t.join()
        print("children", wait_children(pids, 60), flush=True)
    """,
        engine=engine,
    )
    assert proc.returncode == 0, proc.stderr
    assert "children [" + ", ".join(["0"] * 24) + "]" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
