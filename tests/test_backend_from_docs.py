"""What a vendor writing a backend from the guide alone ran into (issue 29, items 4 and 5).

All on ``docs/examples/minimal_backend.py`` (device ``mini``: four native kernels, the host
fallback for the rest, no DLPack members):

* a kernel whose ``supports()`` declines a call: the call takes the host fallback the
  backend opted into (docs/design.md, "Dispatch"), not a DispatchError; a view op cannot
  (its result must share memory) and says so;
* DLPack on a backend without ``dlpack``/``dlpack_device``: ``BufferError`` (not an
  AttributeError), and a host copy on request (``numpy.from_dlpack(x, device="cpu", copy=True)``);
* a host read checks the buffer against the shape and dtype nda declared for the array,
  and names the op and the backend when a kernel returned something else.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import nda
from nda import dispatch
from nda.ops import CATALOG

from test_docs import _mini


@pytest.fixture
def mini():
    backend = _mini()
    yield backend
    dispatch.unregister_backend("mini-extra")
    nda.config.fallback = "warn"


def _small_only_subtract(backend, calls):
    def mini_subtract(x1, x2):
        calls.append(x1.array.size)
        return backend._wrap(np.subtract(x1.array, x2.array), x1.device)

    def small_only(x1, x2):
        return x1.array.size <= 4

    dispatch.register("subtract", "mini", CATALOG["subtract"].supported_dtypes, mini_subtract, supports=small_only, backend="mini-extra")


def test_a_kernel_that_declines_a_call_gives_it_to_the_host_fallback(mini):
    calls: list[int] = []
    _small_only_subtract(mini, calls)
    small = nda.asarray([5.0, 7.0], device="mini")
    large = nda.asarray(np.arange(10.0), device="mini")
    assert (small - nda.asarray([1.0, 2.0], device="mini")).tolist() == [4.0, 5.0]
    assert calls == [2], "the native kernel accepts small calls"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = large - nda.asarray(np.full(10, 3.0), device="mini")
        np.testing.assert_array_equal(result.asnumpy(), np.arange(10.0) - 3.0)
    assert calls == [2], "the native kernel declined the large call"
    assert result.device == nda.Device("mini", 0)
    messages = [str(w.message) for w in caught if issubclass(w.category, nda.FallbackWarning)]
    assert any("declined these arguments (supports())" in m and "host fallback" in m for m in messages), messages
    assert "then the host fallback" in str(nda.dispatch.explain("subtract", large, large))


def test_a_declined_call_is_refused_when_fallbacks_are_errors(mini):
    _small_only_subtract(mini, [])
    large = nda.asarray(np.arange(10.0), device="mini")
    nda.config.fallback = "error"
    with pytest.raises(nda.dispatch.FallbackError, match="declined these arguments"):
        (large - large).asnumpy()  # raised at the call (inline) or at this sync point (a worker ran it)


def test_a_view_kernel_that_declines_says_why_it_cannot_fall_back(mini):
    def mini_flip(x, axis=None):
        return mini._wrap(np.flip(x.array, axis), x.device)

    dispatch.register("flip", "mini", CATALOG["flip"].supported_dtypes, mini_flip, supports=lambda x, axis=None: False, backend="mini-extra")
    x = nda.asarray([1.0, 2.0, 3.0], device="mini")
    with pytest.raises(nda.dispatch.DispatchError, match="makes views, which cannot take the host fallback per call"):
        nda.flip(x).asnumpy()


# ----------------------------------------------------------------------------- DLPack


def test_dlpack_on_a_backend_without_dlpack_members(mini):
    assert not hasattr(mini, "dlpack") and not hasattr(mini, "dlpack_device")
    a = nda.asarray([1.0, 2.0, 3.0], device="mini")
    x = a * 2 + a  # computed on the device, through the engine
    with pytest.raises(BufferError, match=r"no DLPack device of their own \(backend 'mini' exports none\).*numpy.from_dlpack\(x, device='cpu'\)"):
        x.__dlpack_device__()
    with pytest.raises(BufferError, match=r"cannot be shared through DLPack \(backend 'mini' exports none\)"):
        x.__dlpack__()
    with pytest.raises(BufferError, match="exports none"):
        np.from_dlpack(x)
    shown = np.from_dlpack(x, device="cpu")  # a host copy nobody asked to own: read-only (nda._hostcopy)
    np.testing.assert_array_equal(shown, [3.0, 6.0, 9.0])
    with pytest.raises(ValueError, match="read-only"):
        shown[0] = -1.0
    with pytest.raises(BufferError, match="without a copy"):
        np.from_dlpack(x, device="cpu", copy=False)
    host = np.from_dlpack(x, device="cpu", copy=True)
    np.testing.assert_array_equal(host, [3.0, 6.0, 9.0])
    host[0] = -1.0  # a copy: the device array is unchanged
    y = a * 3  # another value, another export
    np.testing.assert_array_equal(np.from_dlpack(y, device="cpu", copy=True), [3.0, 6.0, 9.0])
    np.testing.assert_array_equal(np.from_dlpack(a + (-1.0), device="cpu", copy=True), [0.0, 1.0, 2.0])
    assert x.tolist() == [3.0, 6.0, 9.0]


def test_dlpack_copy_must_be_a_bool_or_none():
    x = nda.asarray([1.0, 2.0])
    with pytest.raises(ValueError, match="copy"):
        x.__dlpack__(copy="a")


# ----------------------------------------------------------------------------- host reads check the buffer


@pytest.mark.parametrize("wrong", ["shape", "dtype"])
def test_a_host_read_refuses_a_buffer_that_is_not_what_nda_declared(mini, wrong):
    def bad_sum(x, axis=None, keepdims=False, dtype=None):
        result = np.sum(x.array, axis=axis, keepdims=wrong == "shape", dtype=None if dtype is None else dtype.numpy)
        if wrong == "dtype":
            result = result.astype(np.float32)
        return mini._wrap(np.asarray(result), x.device)

    dispatch.register("sum", "mini", CATALOG["sum"].supported_dtypes, bad_sum, priority=10, backend="mini-extra")
    x = nda.asarray([[1.0, 2.0], [3.0, 4.0]], device="mini")
    s = nda.sum(x, axis=0)
    assert s.shape == (2,) and s.dtype == nda.float64  # nda's declaration, without reading the buffer
    declared = "shape (2,) and dtype float64"
    actual = "shape (1, 2) and dtype float64" if wrong == "shape" else "shape (2,) and dtype float32"
    for read in (s.asnumpy, s.tolist, lambda: np.asarray(s), lambda: repr(s), lambda: s.to_device("cpu")):
        with pytest.raises(
            nda.backends.KernelResultError, match=rf"backend 'mini' returned a buffer with {re.escape(actual)} .* declared {re.escape(declared)}"
        ):
            read()
    np.testing.assert_array_equal(nda.sum(nda.asarray([[5.0, 6.0]]), axis=0).asnumpy(), [5.0, 6.0])  # cpu is fine


def test_a_host_read_of_a_right_buffer_passes(mini):
    x = nda.asarray(np.arange(6.0).reshape(2, 3), device="mini")
    for value in (x * 2, nda.sum(x, axis=1), x[1], nda.astype(x, nda.float32)):
        host = value.asnumpy()
        assert host.shape == value.shape and host.dtype == value.dtype.numpy
