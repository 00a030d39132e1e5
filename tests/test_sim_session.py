"""A first notebook session on sim is quiet (issue 37): native kernels for the basic ops, one
line per fallback, ``np.allclose`` on the device.

Before, a 10-line standardise / PCA / k-means session printed about ten FallbackWarnings (eye,
linspace, std, var, argmin, stack, concat, cumulative_sum, linalg.eigh, np.allclose), each the
whole route, once per dtype. Warnings are process state (warned once per op and device), so
the session runs in a fresh interpreter, as a notebook kernel would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import nda

pytest.importorskip("nda_sim")

SESSION = r"""
import json, warnings
import numpy as np
import nda

warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    X = nda.asarray(np.random.default_rng(0).normal(size=(60, 4)), device="sim")
    Z = (X - nda.mean(X, axis=0)) / nda.std(X, axis=0)                       # standardise
    C = Z.T @ Z / (Z.shape[0] - 1) + 0.0 * nda.eye(4, device="sim")
    w, V = nda.linalg.eigh(C)                                                # PCA
    P = Z @ V[:, -2:]
    centres = nda.stack([P[0], P[1], P[2]])
    for _ in range(3):                                                       # k-means
        d = nda.sum((P[:, None, :] - centres[None]) ** 2, axis=-1)
        labels = nda.argmin(d, axis=1)
    grid = nda.linspace(0.0, 1.0, 5, device="sim")
    both = nda.concat([P, P])
    csum = nda.cumulative_sum(nda.var(X, axis=0))
    close = np.allclose(nda.sum(P * P, axis=0), w[-2:] * (Z.shape[0] - 1))
    order = nda.argsort(w, descending=True)
    fallbacks = [str(m.message) for m in caught if issubclass(m.category, nda.FallbackWarning)]
print(json.dumps({"fallbacks": fallbacks, "close": close, "devices": sorted({str(a.device) for a in (Z, w, V, labels, grid, both, csum, order)}),
                  "labels": labels.tolist(), "w": w.tolist()}))
"""


def _run(code: str, env: dict[str, str] | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("engine", ["threaded", "naive"])
def test_a_notebook_session_on_sim_warns_nothing(engine):
    env = dict(os.environ, NDA_ENGINE=engine)
    found = _run(SESSION, env)
    assert found["fallbacks"] == [], found["fallbacks"]
    assert found["close"] is True  # np.allclose ran nda.allclose on the device: no host fallback
    assert found["devices"] == ["sim:0"]
    cpu = _run(SESSION.replace('device="sim"', 'device="cpu"'), env)
    assert cpu["fallbacks"] == [] and cpu["labels"] == found["labels"]
    np.testing.assert_allclose(found["w"], cpu["w"], rtol=1e-12)


def test_a_fallback_warns_once_per_op_and_device_in_one_line_in_a_fresh_process():
    code = (
        "import warnings, json, nda\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    for dtype in (nda.float32, nda.float64, nda.int64):\n"
        "        x = nda.asarray([3, 1, 2], dtype=dtype, device='sim')\n"
        "        nda.isin(x, x); nda.isin(x, x)\n"
        "    nda.isin(nda.asarray([1.0], device='sim:1'), nda.asarray([1.0], device='sim:1'))\n"
        "print(json.dumps([str(m.message) for m in caught if issubclass(m.category, nda.FallbackWarning)]))\n"
        "print(json.dumps(str(nda.dispatch.explain('isin', x, x))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    messages, explanation = (json.loads(line) for line in done.stdout.strip().splitlines()[-2:])
    assert messages == [
        "isin: no sim kernel, so it runs on cpu with copies to and from sim (warned once per op and device; nda.dispatch.explain shows the route)"
    ]
    assert "host fallback" in explanation and "_ref_isin" in explanation  # explain() keeps the detail


def test_sim_multi_output_kernels_fail_together(threaded):  # the failure surfaces at the reads, on the threaded engine
    s = nda.arange(4, dtype=nda.float64, device="sim")
    bad = nda.reshape(s[nda.asarray([7, 0, 1, 2], device="sim")], (2, 2))  # an IndexError on the stream
    w, v = nda.linalg.eigh(bad)
    for out in (w, v):
        with pytest.raises(IndexError):
            out.asnumpy()
    try:
        nda.waitall()  # may raise the failure once more; the engine is clean afterwards
    except IndexError:
        pass
    q, r = nda.linalg.qr(nda.asarray(np.arange(6.0).reshape(3, 2), device="sim"))
    np.testing.assert_allclose((q @ r).asnumpy(), np.arange(6.0).reshape(3, 2), atol=1e-12)
    assert "sim_linalg.qr" in str(nda.dispatch.explain("linalg.qr", q))


def test_np_isclose_and_allclose_run_nda_on_the_device():
    x = nda.asarray([1.0, 2.0, np.nan], device="sim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", nda.FallbackWarning)
        close = np.isclose(x, x + 1e-9, equal_nan=True)
        assert isinstance(close, nda.NDArray) and close.device == x.device and close.tolist() == [True, True, True]
        assert np.allclose(x, x, equal_nan=True) is True and np.allclose(x, x) is False
        assert np.allclose(np.ones(2), nda.ones(2)) is True
