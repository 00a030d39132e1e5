"""nda-cuda's small-reduction path (``nda_cuda._reductions``), built over the model of CuPy.

Not a GPU test: ``nda_cuda._kernels.build`` takes the array module as a parameter, so the
table is built here over a namespace whose reductions record how they are called. A small
reduction must reach CuPy as a CuPy user writes it (``cupy.sum(x)``: no ``dtype`` equal to
CuPy's own choice, no all-axes tuple, no default keywords), and give exactly what the
generic adapter gave, for every axis, ``keepdims`` and ``dtype``.
"""

from __future__ import annotations

import functools
import types

import numpy as np
import pytest

pytest.importorskip("nda_cuda")
from _cupy_quirks import compat_model, cupy_model  # noqa: E402

import nda  # noqa: E402
from nda.ops import CATALOG  # noqa: E402
from nda_cuda import _kernels, _reductions  # noqa: E402


def _recording(calls: list) -> types.SimpleNamespace:
    """``compat_model`` whose reductions append ``(name, n positional, keywords)`` to ``calls``."""
    space = types.SimpleNamespace(**{k: getattr(compat_model, k) for k in dir(compat_model) if not k.startswith("__")})
    for name in _reductions.REDUCTIONS:
        target = getattr(compat_model, name)

        @functools.wraps(target)
        def spy(*args, _name=name, _target=target, **kwargs):
            calls.append((_name, len(args), dict(kwargs)))
            return _target(*args, **kwargs)

        setattr(space, name, spy)
    return space


@pytest.fixture(scope="module")
def table():
    calls: list = []
    kernels, _ = _kernels.build(cupy_model, _recording(calls), catalog={n: CATALOG[n] for n in _reductions.REDUCTIONS})
    return {spec.op: spec.fn for spec in kernels}, calls


def _dev(a):
    return cupy_model.asarray(a)


def _get(out):
    """A result's values on the host, as CuPy gives them (``.get()``: the model, like CuPy, refuses np.asarray)."""
    return out.get() if hasattr(out, "get") else np.asarray(out)


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint16", "bool", "complex64"])
def test_a_whole_array_sum_is_called_as_cupy_sum_x(table, dtype):
    kernels, calls = table
    x = _dev(np.arange(6).astype(dtype).reshape(2, 3))
    requested = getattr(nda, np.sum(np.zeros(1, dtype)).dtype.name)  # the sum dtype nda's plan gives
    calls.clear()
    out = kernels["sum"](x, axis=None, keepdims=False, dtype=requested)
    assert calls == [("sum", 1, {})], calls  # cupy.sum(x): nothing CuPy would pick by itself
    calls.clear()
    kernels["sum"](x, axis=(0, 1), keepdims=False, dtype=requested)
    assert calls == [("sum", 1, {})]  # every axis is axis=None
    assert out.shape == () and out.dtype == requested.numpy
    np.testing.assert_array_equal(_get(out), np.sum(np.arange(6).astype(dtype), dtype=requested.numpy))


def test_only_what_differs_from_the_defaults_is_passed(table):
    kernels, calls = table
    x = _dev(np.arange(12, dtype=np.float32).reshape(3, 4))
    calls.clear()
    kernels["sum"](x, axis=(1,), keepdims=False, dtype=nda.float32)
    kernels["sum"](x, axis=None, keepdims=False, dtype=nda.float64)
    kernels["max"](x, axis=(0,), keepdims=True)
    kernels["mean"](x, axis=None, keepdims=False)
    assert calls == [
        ("sum", 1, {"axis": 1, "dtype": None, "keepdims": False}),
        ("sum", 1, {"axis": None, "dtype": np.dtype("float64"), "keepdims": False}),
        ("max", 1, {"axis": 0, "keepdims": True}),
        ("mean", 1, {}),
    ]


@pytest.mark.parametrize("op", sorted(_reductions.REDUCTIONS))
@pytest.mark.parametrize("axis", [None, (0,), (1,), (0, 2), (0, 1, 2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_small_reductions_give_what_numpy_gives(table, op, axis, keepdims):
    """Called twice with different values (a kernel must not keep anything from a call)."""
    kernels, _ = table
    for seed in (0, 1):
        host = np.random.default_rng(seed).standard_normal((2, 3, 4)).astype(np.float32)
        if op in ("any", "all"):
            host = host > 0
        x = _dev(host)
        kw = {"dtype": nda.float32} if op in ("sum", "prod") else {}
        out = kernels[op](x, axis=axis, keepdims=keepdims, **kw)
        expected = getattr(np, op)(host, axis=axis, keepdims=keepdims)
        assert out.__class__ is not np.ndarray or isinstance(out, np.ndarray)
        assert np.shape(out) == np.shape(expected)
        np.testing.assert_allclose(_get(out), expected, rtol=1e-5)
        if axis == ():
            assert not np.shares_memory(getattr(out, "_a", out), host)  # a reduction over no axis is a copy


def test_the_cuda_mirror_uses_the_small_path_and_agrees_with_cpu():
    if not nda.backends.serves("cudamirror"):
        nda.backends.load("_cuda_numpy_mirror:backend")
    host = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = nda.asarray(host, device="cudamirror")
    assert nda.dispatch.explain("sum", x).kernel.qualname.endswith("sum_small]")  # cuda[array_api_compat_model.sum sum_small], as on a GPU
    for axis in (None, 0, (1, 2), (0, 1, 2)):
        for keepdims in (False, True):
            np.testing.assert_array_equal(nda.sum(x, axis=axis, keepdims=keepdims).asnumpy(), np.sum(host, axis=axis, keepdims=keepdims))
    assert nda.sum(nda.ones(3, dtype=nda.int8, device="cudamirror")).dtype == nda.int64
    np.testing.assert_array_equal(nda.max(x, axis=1).asnumpy(), host.max(axis=1))
