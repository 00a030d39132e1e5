"""The backend handle is the one view of a backend (issue 34).

What nda knows of a loaded backend is resolved once, when it activates, into its handle
(``nda._handles.BackendHandle``, published per device type in ``nda._handles.HANDLES``): the
engine's queues, completion and synchronize hooks, and dispatch's subnormal-flush declaration
read the handle, never the backend object. Each test runs in a fresh interpreter
(tests/_guarded_backend.py, loaded at run time), on the engine of the environment
(``NDA_ENGINE``): activation, publication and the engine's registries are process state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def run(script: str) -> dict:
    """Run ``script`` in a fresh interpreter (tests/ on its path); the JSON it printed last."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=HERE, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the fork path needs os.fork")
def test_after_activation_nothing_reads_members_off_the_backend_object():
    """Ops (the queues' fast and general paths, a scalar made a buffer, a copy between two
    devices' queues, the host fallback, host views, in-place writes), a device whose queue is
    made only now, reads, syncs, the profiler's timed markers, explain's flush note and a
    forked child (which checks whether the backend's queues run on there) read the handle.
    Before: the queue of guarded:1, made at its first use, read record_marker, wait_marker,
    synchronize_marker, marker_reached, record_timed_marker, marker_time, to_host,
    to_host_in_order, buffer_owner and buffer_type off the object, and the fork read
    continues_after_fork."""
    found = run(
        """
        import json, os, warnings
        import numpy as np
        import nda
        warnings.simplefilter("ignore")
        b = nda.backends.load("_guarded_backend")
        x = nda.asarray(np.arange(4.0), device="guarded:0")
        b.armed = True
        y = x * 2.0 + x                                   # the queue of guarded:0 (made at the upload)
        s = nda.sum(y)                                    # a NumPy scalar: ensure_buffer
        z = nda.asarray([1.0, 2.0], device="guarded:1") + 1.0   # guarded:1's queue is made now
        c = y.to_device("guarded:1")                      # copy_to_device between two queues
        h = nda.cumulative_sum(y)                         # no kernel: the host fallback
        v = y[1:3]                                        # a host view
        w = nda.asarray(np.zeros(4), device="guarded:0")
        w[1:3] = 5.0                                      # an in-place write through the fallback
        w += x                                            # an in-place op
        vals = [y.tolist(), float(s), z.tolist(), c.tolist(), h.tolist(), np.asarray(v).tolist(), w.tolist()]
        y.wait_to_read()
        nda.waitall()
        nda.profiler.start()
        (x + x).tolist()
        nda.profiler.stop()
        f = nda.asarray(np.ones(2, dtype=np.float32), device="guarded:0")
        note = str(nda.dispatch.explain("add", f, f))
        flushed = sorted(d.name for d in nda.dispatch.subnormal_flush("guarded"))
        r, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                out = (nda.asarray([1.0], device="guarded:0") + 1.0).tolist()
            except BaseException as err:
                out = repr(err)
            os.write(wr, json.dumps({"reads": b.reads, "out": out}).encode())
            os._exit(0)
        os.close(wr)
        child = json.loads(os.read(r, 1 << 16).decode())
        os.waitpid(pid, 0)
        print(json.dumps({"reads": b.reads, "child": child, "vals": vals, "note": note, "flushed": flushed}))
        """
    )
    assert found["reads"] == [], f"members read off the backend object after activation: {sorted(set(found['reads']))}"
    assert found["child"]["reads"] == [], f"read in a forked child: {sorted(set(found['child']['reads']))}"
    assert found["child"]["out"] == [2.0]
    y = [0.0, 3.0, 6.0, 9.0]
    assert found["vals"] == [y, 18.0, [2.0, 3.0], y, [0.0, 3.0, 9.0, 18.0], [3.0, 6.0], [0.0, 6.0, 7.0, 3.0]]
    assert found["flushed"] == ["float32"]
    assert "backend 'guarded' flushes float32 subnormal inputs and results to zero" in found["note"]


def test_a_backend_taken_out_withdraws_its_handle_flush_declaration_queues_and_hooks():
    """Taking a backend out (what a failed activation does, and tests/_first_use.py) withdraws
    its handle, and with it its subnormal-flush declaration, its device queues and the engine's
    cached synchronize hook: a later sync point does not call the backend taken out."""
    found = run(
        """
        import json
        import nda
        from nda.backends import _activation
        from nda.engine import queues
        b = nda.backends.load("_guarded_backend")
        x = nda.asarray([1.0, 2.0], device="guarded:0") + 1.0
        x.wait_to_read()
        nda.engine.device_sync(nda.Device("guarded", 0))  # caches the device's synchronize hook
        before = [sorted(d.name for d in nda.dispatch.subnormal_flush("guarded")), queues.queue_backends()["guarded"].name]
        calls = b.synchronized
        with _activation.LOCK:
            _activation._unregister("guarded", b, True)
        nda.engine.device_sync(nda.Device("guarded", 0))
        after = {
            "flush": sorted(d.name for d in nda.dispatch.subnormal_flush("guarded")),
            "queued": "guarded" in queues.queue_backends(),
            "queue": queues.queue_of_device(nda.Device("guarded", 0)) is not None,
            "handle": "guarded" in _activation._handles,
            "synchronized": b.synchronized - calls,
        }
        print(json.dumps({"before": before, "after": after}))
        """
    )
    assert found["before"] == [["float32"], "guarded"]
    assert found["after"] == {"flush": [], "queued": False, "queue": False, "handle": False, "synchronized": 0}


def test_a_backend_that_takes_over_a_device_type_brings_its_own_flush_declaration_and_queues():
    """A backend loaded at run time for a device type another backend served: the device type's
    flush declaration and queues are the new backend's, and a backend whose activation fails
    leaves the one that served the device type as it was. Before: the old backend's flush
    declaration stayed (``subnormal_flush`` said float32 for a backend that declares nothing)
    and so did its queues (the new backend's ops were ordered by the old one's markers); and a
    backend whose registration failed took the served backend's queues with it."""
    found = run(
        """
        import json, warnings
        import nda
        from nda.engine import queues
        warnings.simplefilter("ignore")
        def state():
            handle = nda.backends.handle(nda.Device("guarded", 0))
            served = queues.queue_backends().get("guarded")
            return {
                "handle": handle.name,
                "flush": sorted(d.name for d in nda.dispatch.subnormal_flush("guarded")),
                "queues": None if served is None else served.name,
                "value": (nda.asarray([1.0, 2.0], device="guarded:0") * 2.0).tolist(),
            }
        nda.backends.load("_guarded_backend")
        states = [state()]
        try:
            nda.backends.load("_guarded_backend:failing")
        except nda.backends.BackendError as err:
            states.append(str(err).splitlines()[0])
        states.append(state())
        nda.backends.load("_guarded_backend:plain")
        states.append(state())
        print(json.dumps(states))
        """
    )
    guarded = {"handle": "guarded", "flush": ["float32"], "queues": "guarded", "value": [2.0, 4.0]}
    assert found[0] == guarded
    assert "guarded-failing" in found[1] and "do not compile here" in found[1]
    assert found[2] == guarded
    assert found[3] == {"handle": "guarded-plain", "flush": [], "queues": None, "value": [2.0, 4.0]}
