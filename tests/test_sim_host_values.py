"""Values a kernel needs on the host are read at planning time, never on a device's thread (issue 17, item 2).

On sim, ``x = nda.arange(10, device="sim"); n = nda.sum(x > 4); x[:n]`` never returned:
the slice reached the kernel with the 0-d array ``n`` inside it, and the sim stream
thread called ``n.__index__``, which waits for the stream it runs on. Every argument a
kernel needs as a Python number (slice bounds, ``arange``/``linspace``/``full`` values,
``k=``/``n=``/``axis=``/``offset=``/``ord=``/``correction=`` given as 0-d arrays) is now read
on the caller's thread when the call is planned, or refused with a TypeError.

A hang must fail, not hang the suite: the cases run in a child process with a timeout
(the child inherits ``NDA_ENGINE``, so both engines are covered).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_PROGRAM = textwrap.dedent(
    """
    import warnings
    import numpy as np
    import nda

    warnings.simplefilter("ignore", nda.FallbackWarning)
    dev = "sim"
    x = nda.arange(10, device=dev)
    m = nda.asarray(np.eye(3) * 2 + 1, device=dev)
    v = nda.arange(5.0, device=dev)

    def n():  # a fresh pending 0-d int64 array (5) each time, so no case sees a finished one
        return nda.sum(nda.arange(10, device=dev) > 4)

    def z(value, dtype=nda.int64):
        return nda.asarray(value, dtype=dtype, device=dev)

    cases = [
        ("x[:n]", lambda: x[:n()], list(range(5))),
        ("x[n:]", lambda: x[n():], list(range(5, 10))),
        ("x[::n]", lambda: x[::n()], [0, 5]),
        ("x[n-3:n:n-4]", lambda: x[n() - 3:n():n() - 4], [2, 3, 4]),
        ("x[1:, :n] (2-D)", lambda: nda.reshape(x, (2, 5))[1:, :n() - 2], [[5, 6, 7]]),
        ("x[:n] = 0", lambda: (lambda y: (y.__setitem__(slice(None, n()), 0), y)[1])(nda.arange(10, device=dev)), [0] * 5 + [5, 6, 7, 8, 9]),
        ("x[n]", lambda: x[n()], 5),
        ("arange(1, n + 1)", lambda: nda.arange(1, n() + 1, device=dev), [1, 2, 3, 4, 5]),
        ("arange(0-d float)", lambda: nda.arange(z(2.5, nda.float64), device=dev), [0.0, 1.0, 2.0]),
        ("linspace(0, n, 3)", lambda: nda.linspace(0, n(), 3, device=dev), [0.0, 2.5, 5.0]),
        ("linspace(n, int)", lambda: nda.linspace(0, n(), 3, dtype=nda.int64, device=dev), [0, 2, 5]),
        ("linspace(num=n)", lambda: nda.linspace(0, 1, n() - 2, device=dev), [0.0, 0.5, 1.0]),
        ("full(2, n)", lambda: nda.full(2, n(), device=dev), [5, 5]),
        ("full_like(v, n)", lambda: nda.full_like(v, n()), [5.0] * 5),
        ("eye(n, k=n-4)", lambda: nda.eye(n() - 2, k=n() - 4, device=dev), np.eye(3, k=1).tolist()),
        ("tril(k=n-5)", lambda: nda.tril(m, k=n() - 5), np.tril(np.eye(3) * 2 + 1).tolist()),
        ("zeros((n, 1))", lambda: nda.zeros((n() - 3, 1), device=dev), [[0.0], [0.0]]),
        ("reshape(n, -1)", lambda: nda.reshape(x, (n(), -1)), np.arange(10).reshape(5, 2).tolist()),
        ("roll(x, n)", lambda: nda.roll(x, n()), list(range(5, 10)) + list(range(5))),
        ("repeat(v, n-3)", lambda: nda.repeat(v, n() - 3), [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]),
        ("sum(axis=n-5)", lambda: nda.sum(nda.reshape(x, (2, 5)), axis=n() - 5), [5, 7, 9, 11, 13]),
        ("fft(n=n)", lambda: nda.fft.fft(v, n=n() - 1).shape, (4,)),
        ("matrix_power(n-3)", lambda: nda.linalg.matrix_power(m, n() - 3), ((np.eye(3) * 2 + 1) @ (np.eye(3) * 2 + 1)).tolist()),
        ("diagonal(offset)", lambda: nda.linalg.diagonal(m, offset=n() - 4), [1.0, 1.0]),
        ("vector_norm(ord)", lambda: nda.linalg.vector_norm(v, ord=n() - 4), 10.0),
        ("matrix_norm(ord)", lambda: nda.linalg.matrix_norm(m, ord=n() - 4), 5.0),
        ("std(correction)", lambda: nda.std(v, correction=n() - 4), float(np.std(np.arange(5.0), ddof=1))),
        ("take(axis=0-d)", lambda: nda.take(v, z([0, 4]), axis=n() - 5), [0.0, 4.0]),
        ("moveaxis(0-d)", lambda: nda.moveaxis(nda.reshape(x, (2, 5)), n() - 5, n() - 4).shape, (5, 2)),
    ]
    failures = []
    for label, call, expected in cases:
        result = call()
        got = result.tolist() if isinstance(result, nda.NDArray) else result
        if isinstance(expected, float):
            ok = abs(got - expected) < 1e-9
        else:
            ok = got == expected
        print(label, "ok" if ok else f"WRONG: {got!r} != {expected!r}", flush=True)
        if not ok:
            failures.append(label)
    for label, call in [
        ("tensordot(axes=0-d)", lambda: nda.tensordot(m, m, axes=z(1))),
        ("cross(axis=0-d)", lambda: nda.linalg.cross(m, m, axis=z(1))),
        ("sum(keepdims=0-d)", lambda: nda.sum(v, keepdims=z(True, nda.bool))),
        ("arange(1-d)", lambda: nda.arange(z([1, 2]), device=dev)),
    ]:
        try:
            call()
            failures.append(label + " (not refused)")
        except TypeError as err:
            print(label, "refused:", err, flush=True)
    nda.waitall()
    print("FAILURES", failures)
    raise SystemExit(1 if failures else 0)
    """
)


def test_0d_arrays_a_kernel_needs_on_the_host_never_deadlock_on_sim():
    try:
        done = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        pytest.fail(f"hung on sim (no answer in 60 s); the last case that answered:\n{out}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAILURES []" in done.stdout


def test_the_slice_that_reaches_the_kernel_holds_python_ints():
    import nda
    from nda.ops import CATALOG

    x = nda.arange(10, device="sim")
    n = nda.sum(x > 4)
    plan = CATALOG["getitem"].plan(x, (slice(n - 3, n, None),))
    (key,) = plan.args[1]
    assert (key.start, key.stop, key.step) == (2, 5, None)
    assert all(part is None or type(part) is int for part in (key.start, key.stop, key.step))
