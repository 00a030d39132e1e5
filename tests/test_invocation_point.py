"""One way from a call to work (issue 34): ``nda._execute.invoke`` and ``nda._execute.submit``.

Every generated function, operator and method is a hit of its own fast cache or goes through
``invoke`` (the calling thread's interceptors, then the op's body), and every call's work is
handed over by ``submit`` (inline, or one engine task). The structural tests read nda's source:
a second place that asks for interceptors or pushes engine work fails them. The behavioural
ones push a real interceptor and check that each kind of entry reaches it, on cpu and on sim,
on whichever engine the suite runs (both in CI).
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import nda
from nda import _intercept
from nda._array import new_array
from nda._execute import Site, Task, invoke, submit
from nda.dispatch import resolve

SRC = pathlib.Path(nda.__file__).parent


def _calls(path: pathlib.Path) -> list[tuple[str, int]]:
    """Every call ``<something>.<attr>(...)`` in ``path``: (dotted text of the callee, line)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found.append((ast.unparse(node.func), node.lineno))
    return found


def _modules_outside_engine() -> list[pathlib.Path]:
    return [p for p in SRC.rglob("*.py") if "engine" not in p.relative_to(SRC).parts and "testing" not in p.relative_to(SRC).parts]


def test_only_submit_hands_work_to_the_engine() -> None:
    pushes = []
    for path in _modules_outside_engine():
        for callee, line in _calls(path):
            if callee.endswith("state.push") or callee == "_state.push":
                pushes.append(f"{path.relative_to(SRC)}:{line} {callee}")
    assert len(pushes) == 1 and pushes[0].startswith("_execute.py:"), pushes


def test_only_invoke_asks_for_interceptors() -> None:
    calls = []
    for path in _modules_outside_engine():
        for callee, line in _calls(path):
            if callee == "_intercept.call":
                calls.append(f"{path.relative_to(SRC)}:{line}")
    assert len(calls) == 1 and calls[0].startswith("_execute.py:"), calls
    import nda._execute as ex

    assert not hasattr(ex, "intercepted") and not hasattr(ex, "NOT_INTERCEPTED")


class _Seen(_intercept.Interceptor):
    __slots__ = ("names",)

    def __init__(self) -> None:
        self.names: list[str] = []

    def call(self, op, args, kwargs, proceed):  # type: ignore[no-untyped-def]
        self.names.append(op.name if getattr(op, "kind", "op") != "inplace" else f"{op.name} ({op.attr})")
        return proceed(*args, **kwargs)


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_every_kind_of_entry_reaches_the_interceptors(device: str) -> None:
    x = nda.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
    y = nda.asarray(np.ones((2, 3), dtype=np.float32), device=device)
    m = nda.asarray(np.eye(3, dtype=np.float32), device=device)
    x + y, nda.exp(x), x @ m, nda.sum(x)  # warm every fast cache: a hit must still reach the stack
    seen = _Seen()
    _intercept.push(seen)
    try:
        z = x + y  # binary operator (C fast path where built)
        nda.exp(x)  # unary function
        nda.sum(x, axis=0)  # generic, memoised with keywords
        x @ m  # generic operator (C PlannedOp)
        nda.linalg.eigh(m)  # several outputs
        z += 1.0  # in place
        nda.copyto(z, y)  # mutating (a setitem)
        nda.to_device(x, "cpu")  # entry point
        x.to_layout("csr") if device == "cpu" else None  # entry point
    finally:
        _intercept.pop(seen)
    expected = ["add", "exp", "sum", "matmul", "linalg.eigh", "add (__iadd__)", "setitem", "to_device"] + (["to_layout"] if device == "cpu" else [])
    assert seen.names == expected


def test_a_site_passes_on_what_the_fast_path_computed() -> None:
    got = []
    site = Site(None, lambda *a, **k: None, lambda args, kwargs, *state: got.append((args, kwargs, state)) or "done")
    assert invoke(site, (1, 2), {"k": 3}, "key", None) == "done"
    assert got == [((1, 2), {"k": 3}, ("key", None))]


@pytest.mark.parametrize("inline", [True, False], ids=["inline-allowed", "always-queued"])
@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_submit_makes_a_buffer_of_a_0d_scalar(device: str, inline: bool) -> None:
    x = nda.asarray(np.arange(4.0), device=device)
    kernel = resolve("sum", x._meta.key).run  # NumPy's sum gives a scalar for a 0-d result
    out = new_array(None, nda.sum(x)._meta, ())
    submit(Task("sum", kernel, (x,), {}, (out,), (x,), x.device, 4, inline=inline))
    assert float(out) == 6.0 and out.device == x.device


@pytest.mark.parametrize("inline", [True, False], ids=["inline-allowed", "always-queued"])
def test_submit_fills_several_outputs_and_writes_a_target(inline: bool) -> None:
    x = nda.asarray(np.arange(4.0))
    outs = (new_array(None, x._meta, (4,)), new_array(None, x._meta, (4,)))
    submit(Task("two", lambda b: (b + 1, b * 2), (x,), {}, outs, (x,), x.device, 4, multi=True, inline=inline))
    np.testing.assert_array_equal(outs[0].to_numpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(outs[1].to_numpy(), [0, 2, 4, 6])
    t = nda.zeros(4)

    def fill(buf: np.ndarray, value: float) -> None:
        buf[...] = value

    submit(Task("fill", fill, (t, 7.0), {}, (), (t,), t.device, 4, target=t, inline=inline))
    np.testing.assert_array_equal(t.to_numpy(), [7, 7, 7, 7])


def test_a_0d_result_in_a_registered_layout_keeps_the_converters_buffer():
    """Found by review: ``submit`` made every 0-d output's buffer the strided device's
    (``ensure_buffer``: ``np.asarray`` on cpu), also for ``to_layout`` into a layout a program
    registered, whose converter's 0-d buffer (a ``Box``) became a NumPy object array. Run in a
    fresh interpreter: the registered layout stays out of this process."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import numpy as np, nda
        from nda import layouts
        class Box:
            def __init__(self, a):
                self.a = np.array(a)
        layouts.register_layout("boxed")
        layouts.register_converter("cpu", "strided", "boxed", lambda b: Box(b))
        layouts.register_converter("cpu", "boxed", "strided", lambda b: b.a)
        layouts.register_storage("cpu", "boxed", to_host=lambda b: b, from_host=lambda b, d: b)
        for shape in [(), (2,)]:
            y = nda.asarray(np.full(shape, 3.0)).to_layout("boxed")
            print(type(y._buf).__name__, y.to_layout("strided").to_numpy().tolist())
        """
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split("\n")[:2] == ["Box 3.0", "Box [3.0, 3.0]"], found.stdout + found.stderr
