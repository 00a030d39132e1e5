"""``nda.set_printoptions``/``printoptions``/``get_printoptions`` govern nda's repr; ``nda.errstate`` is NumPy's (issue 37).

nda's print options layer over NumPy's (an option nda has not set is NumPy's current one),
per context as NumPy 2's own are, and never change NumPy's options or how NumPy arrays
print. ``nda.errstate`` is ``numpy.errstate``: nda's cpu ops run under the issuing thread's
NumPy error state, whichever engine thread runs the kernel.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import nda

DEVICES = ["cpu", "sim"]


@pytest.fixture(autouse=True)
def _fresh_options():
    token = nda._printoptions._OVERRIDES.set({})
    yield
    nda._printoptions._OVERRIDES.reset(token)


@pytest.mark.parametrize("device", DEVICES)
def test_printoptions_govern_nda_repr_and_leave_numpys_alone(device):
    h = np.arange(6.0).reshape(2, 3) / 3
    x = nda.asarray(h, device=device)
    numpy_before = np.get_printoptions()
    with nda.printoptions(precision=2, suppress=True) as opts:
        assert opts["precision"] == 2 and nda.get_printoptions()["precision"] == 2
        assert "0.33," in repr(x) and "0.33333333" not in repr(x)
        assert "0.33 " in str(x)
        assert "0.33333333" in repr(h)  # NumPy's own arrays print as before
        assert np.get_printoptions() == numpy_before
    assert "0.33333333" in repr(x)
    nda.set_printoptions(threshold=5, edgeitems=1)
    big = nda.arange(100, device=device)
    assert "..." in repr(big) and "..." not in repr(np.arange(100))
    assert np.get_printoptions() == numpy_before
    html = big._repr_html_()
    assert "..." in html


def test_an_option_nda_does_not_set_follows_numpys():
    x = nda.asarray([1 / 3])
    with np.printoptions(precision=3):
        assert repr(x) == "array([0.333])"
        with nda.printoptions(precision=5):
            assert repr(x) == "array([0.33333])"
        nda.set_printoptions(formatter={"float": lambda v: "F"})
        assert repr(x) == "array([F])"
        nda.set_printoptions(formatter=None)  # as NumPy: None resets the formatter
        assert repr(x) == "array([0.333])"


def test_printoptions_are_per_context_like_numpys():
    """A thread started after a change begins with nda's defaults (a ContextVar, as NumPy 2's options)."""
    nda.set_printoptions(precision=1)
    seen = {}

    def worker():
        seen["nda"] = nda.get_printoptions()["precision"]
        seen["numpy"] = np.get_printoptions()["precision"]

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert nda.get_printoptions()["precision"] == 1
    assert seen == {"nda": np.get_printoptions()["precision"], "numpy": np.get_printoptions()["precision"]}


def test_bad_print_options_are_numpys_errors():
    with pytest.raises(ValueError):
        nda.set_printoptions(floatmode="sideways")
    with pytest.raises(TypeError, match="unexpected keyword"):
        nda.printoptions(colour=True).__enter__()
    assert nda.get_printoptions() == np.get_printoptions()


def test_setting_nda_print_options_in_a_fresh_process_changes_no_numpy_state():
    code = (
        "import numpy as np; before = np.get_printoptions(); import nda; nda.set_printoptions(precision=1); "
        "assert np.get_printoptions() == before, np.get_printoptions(); "
        "assert repr(nda.asarray([1/3, 2/3, 1.0, 4/3])) == 'array([0.3, 0.7, 1. , 1.3])', repr(nda.asarray([1/3, 2/3, 1.0, 4/3])); "
        "assert repr(np.array([1/3])) == 'array([0.33333333])'; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_errstate_is_numpys_and_governs_nda_ops_on_cpu():
    assert nda.errstate is np.errstate
    x = nda.asarray([0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with nda.errstate(divide="ignore"):
            assert nda.log(x).tolist()[0] == -np.inf
    with nda.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            nda.log(x).wait_to_read()
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        with nda.errstate(divide="warn"):
            nda.log(x).wait_to_read()
