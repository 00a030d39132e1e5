"""Each route kind of dispatch (issue 34): what ``resolve()`` answers, what ``explain()`` names,
and what execution runs, on the synchronous and the threaded engine.

A :class:`nda.dispatch.Route` carries the kind (native, queued, host fallback, host view,
layout conversion), the callable that runs it and what it announces; nothing rides on the
kernel function any more. What ran is read from the profiler, which records the callable
each op handed to the engine (``Event.route``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import nda
from nda import _hostviews
from nda.engine.threaded import ThreadedEngine


@pytest.fixture(params=["naive", "threaded"])
def engine(request):
    previous = nda.engine.current()
    nda.engine.use("naive" if request.param == "naive" else ThreadedEngine())
    yield request.param
    try:
        nda.waitall()
    finally:
        nda.engine.use(previous if previous.name != "threaded" else "threaded")


def _ensure(device: str) -> str:
    loaders = {"few": "_few_kernels_backend"}
    if device in loaders and not nda.backends.serves(device):
        nda.backends.load(loaders[device])
    return device


def _ran(op_name: str, make):
    """The result of ``make()`` and the profiler's events of ``op_name`` while it ran."""
    nda.profiler.start()
    try:
        out = make()
        out.wait_to_read()
    finally:
        events = nda.profiler.stop()
    return out, [e for e in events if e.name == op_name]


def _name(fn) -> str:
    return f"{getattr(fn, '__module__', None) or '?'}.{getattr(fn, '__qualname__', None) or type(fn).__name__}"


def _route_line(explanation) -> str:
    return next(line for line in str(explanation).splitlines() if line.startswith("route:"))


def test_native_on_cpu(engine):
    x = nda.asarray(np.arange(4.0))
    route = nda.dispatch.resolve("add", x._meta.key)
    assert isinstance(route, nda.dispatch.Route)
    assert (route.kind, route.queue, route.warning, route.fallback) == ("native", None, None, False)
    assert nda.dispatch.table("add").resolved[x._meta.key] is route  # the table caches the route itself
    explained = nda.dispatch.explain("add", x, x)
    assert explained.route.kind == "native" and _route_line(explained) == "route:   native"
    out, events = _ran("add", lambda: nda.add(x, x))
    assert [e.route for e in events] == [route.run]
    np.testing.assert_array_equal(out.asnumpy(), np.arange(4.0) * 2)
    with pytest.raises(AttributeError, match="a Route is frozen"):
        route.kind = nda.dispatch.RouteKind.HOST_FALLBACK  # shared by every cache and caller: frozen


def test_queued_device_op_on_sim(engine):
    x = nda.asarray(np.arange(4.0), device="sim")
    route = nda.dispatch.resolve("add", x._meta.key)
    assert (route.kind, route.queue, route.warning) == ("queued", "sim", None)
    explained = nda.dispatch.explain("add", x, x)
    assert explained.route.kind == "queued" and _route_line(explained) == "route:   queued (recorded on the sim queue)"
    out, events = _ran("add", lambda: nda.add(x, x))
    assert [e.route for e in events] == [route.run]
    np.testing.assert_array_equal(out.asnumpy(), np.arange(4.0) * 2)


def test_host_fallback_on_sim_warns_once(engine):
    a = nda.asarray(np.arange(6.0), device="sim")
    b = nda.asarray(np.array([1.0, 4.0]), device="sim")
    nda.dispatch.invalidate()  # routes announce when they are resolved
    nda.dispatch._warned_routes.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, events = _ran("isin", lambda: nda.isin(a, b))
        nda.isin(a, b).wait_to_read()
        nda.dispatch.invalidate()  # resolved again: still warned once per op and device
        nda.isin(nda.astype(a, nda.float32), nda.astype(b, nda.float32)).wait_to_read()
    fallbacks = [w for w in caught if issubclass(w.category, nda.FallbackWarning)]
    route = nda.dispatch.resolve("isin", a._meta.key)
    assert route.kind == "host fallback" and route.fallback and route.queue is None
    assert [str(w.message) for w in fallbacks] == [route.warning]
    assert route.warning.startswith("isin: no sim kernel, so it runs on cpu")
    assert fallbacks[0].filename == __file__  # the user's line, not nda's
    explained = nda.dispatch.explain("isin", a, b)
    assert explained.route.kind == "host fallback"
    assert _route_line(explained).startswith("route:   host fallback: isin on (sim, float64, strided): no sim kernel; copies the inputs to cpu")
    assert [_name(e.route) for e in events] == [_name(route.run)]
    np.testing.assert_array_equal(first.asnumpy(), [False, True, False, False, True, False])


@pytest.mark.filterwarnings("ignore::nda.FallbackWarning")  # few: creation and views take the host fallback
def test_host_view_of_a_fallback_view_op(engine):
    device = _ensure("few")
    x = nda.arange(6.0, device=device)
    route = nda.dispatch.resolve("getitem", x._meta.key)
    assert route.kind == "host view" and route.fallback
    explained = nda.dispatch.explain("getitem", x, slice(1, 3))
    assert explained.route.kind == "host view" and _route_line(explained).startswith("route:   host view: getitem on (few, float64, strided)")
    view, events = _ran("getitem", lambda: x[1:3])
    assert [_name(e.route) for e in events] == ["nda._hostviews.host_view[getitem]"]  # execute made it a host view
    assert _hostviews.is_live(view)
    x[...] = 7.0  # the view follows its base's writes, as in NumPy
    np.testing.assert_array_equal(view.asnumpy(), [7.0, 7.0])


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_csr_layout_conversion(engine, device):
    host = np.array([[0.0, 1.0], [2.0, 0.0]])
    a = nda.asarray(host, device=device).to_layout("csr")
    explained = nda.dispatch.explain("cos", a)
    route = explained.route
    assert route.kind == "layout conversion" and route.fallback and route.layout.name == "strided"
    assert route.inner.kind == ("native" if device == "cpu" else "queued")
    assert route.conversions and "csr -> strided" in route.conversions[0]
    assert _route_line(explained).startswith(f"route:   layout conversion: cos on ({device}, float64, csr) with operands (csr)")
    nda.dispatch.invalidate()
    nda.dispatch._warned_routes.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, events = _ran("cos", lambda: nda.cos(a))
        nda.cos(a).wait_to_read()
    assert [str(w.message) for w in caught if issubclass(w.category, nda.FallbackWarning)] == [route.warning]
    assert [_name(e.route) for e in events] == [_name(route.run)] == ["nda.layouts.layout_fallback[cos]"]
    assert out.layout.name == "strided"
    np.testing.assert_allclose(out.asnumpy(), np.cos(host))


def test_kernel_function_attributes_are_no_route():
    """Before: a kernel carrying ``_nda_route`` was announced as a fallback (refused under
    ``fallback = "error"``) and one carrying ``_nda_host_view`` made host views. The route is
    what dispatch resolved, never what a function object says."""

    def exp_kernel(x):
        return np.exp(x)

    exp_kernel._nda_route = "a route a kernel claims"
    exp_kernel._nda_summary = "a warning a kernel claims"
    previous = nda.config.fallback
    nda.dispatch.register("exp", "cpu", ["float64"], exp_kernel, priority=100, backend="<test routes>")
    nda.config.fallback = "error"
    try:
        x = nda.asarray(np.arange(3.0))
        assert nda.dispatch.resolve("exp", x._meta.key).kind == "native"
        np.testing.assert_allclose(nda.exp(x).asnumpy(), np.exp(np.arange(3.0)))
    finally:
        nda.config.fallback = previous
        nda.dispatch.unregister_backend("<test routes>")


def test_fallback_warns_once_in_a_fresh_process():
    """The once-per-(op, device) set is process state: a fresh interpreter, with warnings as
    Python shows them by default (pytest's capture hides the default filters)."""
    script = textwrap.dedent("""
        import nda
        a = nda.asarray([1.0, 2.0, 3.0], device="sim")
        b = nda.asarray([2.0], device="sim")
        for _ in range(3):
            nda.isin(a, b).wait_to_read()
        nda.isin(nda.astype(a, nda.float32), nda.astype(b, nda.float32)).wait_to_read()
        print(nda.dispatch.resolve("isin", a._meta.key).kind)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "host fallback"
    assert done.stderr.count("FallbackWarning") == 1 and "<string>:6: FallbackWarning: isin: no sim kernel" in done.stderr
