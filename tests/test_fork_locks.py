"""Every lock nda holds is safe across ``os.fork`` (issue 38, item 8).

A forked child has one thread, the one that forked. A lock another thread held at that
instant stays held in the child forever: the child of a fork taken while another thread
activated a backend waited forever on the activation lock. ``nda._forksafe`` registers
each lock nda makes: module-level locks the forking thread acquires before the fork (so
the child sees whole state and the lock free), and objects' locks the child re-initialises.

The census below fails when a lock appears in nda's (or a first-party plugin's) source
without a decision; the fork tests run in subprocesses with timeouts: a hang fails a test,
it never hangs the suite.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "src" / "nda", ROOT / "plugins" / "nda-sim" / "src", ROOT / "plugins" / "nda-cuda" / "src"]
_LOCK = re.compile(r"threading\.(Lock|RLock|Condition|Semaphore|BoundedSemaphore|Event)\(")

#: Locks made outside nda._forksafe, and why each is safe across a fork (file, a snippet of its line).
DECIDED = {
    ("engine/threaded.py", "self._lock = threading.Lock()"): "the engine's lock: the fork takes it (Engine.pause) and the child gets a fresh engine",
    ("engine/threaded.py", "threading.Condition(self._lock)"): "the engine's condition: as its lock",
    ("_forksafe.py", "threading.RLock() if reentrant else threading.Lock()"): "_forksafe.lock(): registered for the child",
    (
        "backends/cpu_random.py",
        "self._lock = threading.Lock()",
    ): "ChunkRunner's: its own os.register_at_fork(after_in_child=...) makes it (and its pool) anew",
    ("nda_sim/_device.py", "self._lock = threading.RLock()"): "a sim allocator's: SimBackend's child hook re-makes it (Allocator.after_fork)",
    ("nda_sim/_device.py", "self._cond = threading.Condition()"): "a sim stream's: re-made in the child (Stream.restart_after_fork)",
    ("nda_sim/_device.py", "self._count_lock = threading.Lock()"): "a sim stream's: re-made in the child (Stream.restart_after_fork)",
    ("nda_sim/_device.py", "self._start_lock = threading.Lock()"): "a sim stream's: re-made in the child (Stream.restart_after_fork)",
    ("nda_sim/_device.py", "self._gate = threading.Condition()"): "a sim stream's: re-made in the child (Stream.restart_after_fork)",
    (
        "nda_cuda/__init__.py",
        "self._lock = threading.Lock()",
    ): "CUDA cannot be used in a child forked after it was initialised (CUDA's rule): nothing to keep usable",
    ("nda_cuda/_streams.py", "self._lock = threading.Lock()"): "CUDA cannot be used in a forked child (as above)",
    ("nda_cuda/_elementwise.py", "self._lock = threading.Lock()"): "CUDA cannot be used in a forked child (as above)",
}


def test_every_lock_nda_makes_is_decided_for_fork():
    undecided = []
    for root in SOURCES:
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if not _LOCK.search(line) or line.lstrip().startswith("#"):
                    continue
                if "_forksafe.guard(" in line or "_forksafe.lock(" in line or "_forksafe.reset(" in line:
                    continue
                if any(rel.endswith(file) and snippet in line for file, snippet in DECIDED):
                    continue
                undecided.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not undecided, "locks without a fork decision (register them with nda._forksafe, or add a reason to DECIDED):\n" + "\n".join(undecided)


def _run(*parts: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    code = "\n".join(textwrap.dedent(part) for part in parts)
    try:
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env={**os.environ, "NDA_QUIESCE_TIMEOUT": "10"}
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"the process hung (killed after {timeout} s); its output: {err.stdout!r} {err.stderr!r}")


_CHILD = """
    import os, threading, time

    def fork_and_try(lock, hold=0.3, action=None):
        '''Another thread holds ``lock`` (``hold`` seconds, or for ever when None) while this one
        forks; the child must be able to take it and run ``action`` (a hang ends it with SIGALRM).
        Returns the child's exit code.'''
        taken, release = threading.Event(), threading.Event()

        def holder():
            lock.acquire()
            taken.set()
            release.wait(hold)
            if hold is not None:
                lock.release()

        thread = threading.Thread(target=holder, daemon=True)
        thread.start()
        taken.wait()
        pid = os.fork()
        if pid == 0:
            import signal
            signal.alarm(10)
            try:
                if action is not None:
                    action()
                os._exit(0 if lock.acquire(timeout=3) else 1)
            except BaseException as err:
                print("child:", repr(err), flush=True)
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        release.set()
        thread.join()
        return os.waitstatus_to_exitcode(status)
"""


def test_a_fork_while_another_thread_holds_one_of_nda_s_module_locks():
    """Each module-level lock (backend activation, op libraries, the dispatch tables, the device
    queues' state, host views, interceptors, autograd): held by another thread at the fork, it
    is free in the child (the fork waits for the holder, which takes a moment here)."""
    proc = _run(
        _CHILD,
        """
        import nda, nda.ext
        from nda import _hostviews, _intercept, dispatch
        from nda.autograd import _record
        from nda.backends import _activation
        from nda.engine import queues as _queues

        locks = {"activation": _activation.LOCK, "op libraries": nda.ext._lock, "dispatch": dispatch._lock,
                 "queues": _queues.LOCK, "host views": _hostviews._lock, "interceptors": _intercept._lock, "autograd": _record._STATE.lock}
        print({name: fork_and_try(lock) for name, lock in locks.items()}, flush=True)
    """,
    )
    assert proc.returncode == 0, proc.stderr
    assert "1" not in proc.stdout.replace("nda", ""), proc.stdout
    assert proc.stdout.count(": 0") == 7, proc.stdout


def test_a_fork_while_another_thread_is_inside_a_generator_or_a_hybridized_function():
    """Objects' locks (a random generator's, held while a draw is issued, which may wait for the
    engine; a hybridized function's; the profiler's): the fork does not wait for them, and the
    child gets them unlocked and can draw, call and profile."""
    proc = _run(
        _CHILD,
        """
        import nda

        gen = nda.random.default_rng(0)
        f = nda.hybridize(lambda x: x * 2 + 1)
        f(nda.ones(4))

        def draw():
            assert 0 <= float(gen.random(3)[0]) < 1

        def call():
            f.clear()  # traced again in the child, under its lock
            assert f(nda.ones(4)).asnumpy().tolist() == [3.0] * 4

        def profile():
            with nda.profiler.profile() as prof:
                (nda.ones(3) + 1).wait_to_read()
            assert len(prof) > 0

        codes = {"generator": fork_and_try(gen.bit_generator._lock, hold=None, action=draw),
                 "hybridized": fork_and_try(f._lock, hold=None, action=call),
                 "profiler": fork_and_try(nda.profiler._lock, hold=None, action=profile)}
        print(codes, flush=True)
    """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(": 0") == 3, proc.stdout
