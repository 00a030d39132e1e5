"""What a notebook prints (issue 37): format specs on arrays, and errors in the user's words.

``f"{x:.3f}"`` of a 1-element array said ``Unknown format code 'f' for object of type 'str'``
(the array's text was formatted); now the element is formatted, as ``float(x)`` takes it, and a
format spec for more elements is a TypeError that says so. ``nda.random``'s errors named the
catalog ops a Generator method runs (``random.philox_integers(): low must be less than
high``); they name the method the user called.
"""

from __future__ import annotations

import numpy as np
import pytest

import nda

DEVICES = ["cpu", "sim"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("value, shape", [(1.5, ()), (1.5, (1,)), (2.25, (1, 1)), (-7, (1,)), (3 + 4j, (1,))])
def test_format_spec_of_a_one_element_array(device, value, shape):
    x = nda.asarray(np.full(shape, value), device=device)
    for spec in (".3f", ">10", "+.1e", "^12.2f"):
        assert format(x, spec) == format(np.full(shape, value).item(), spec)
    assert f"{x:.2f}" == format(value, ".2f")
    assert f"{x}" == str(x) and format(x, "") == str(x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(2,), (0,), (2, 3)])
def test_format_spec_of_more_elements_is_a_clear_type_error(device, shape):
    x = nda.zeros(shape, device=device)
    with pytest.raises(TypeError, match=rf"format spec '\.3f' needs an array with exactly one element, got shape {re_shape(shape)}"):
        f"{x:.3f}"
    with pytest.raises(TypeError):
        np.zeros(shape).__format__(".3f")  # NumPy refuses too
    assert f"{x}" == str(x)


def re_shape(shape):
    return str(shape).replace("(", r"\(").replace(")", r"\)")


RNG_ERRORS = [
    (lambda rng: rng.integers(5, 1, size=3), ValueError, "integers(): low must be less than high"),
    (lambda rng: rng.integers(0, 10, size=3, dtype=nda.float32), TypeError, "integers(): dtype must be an integer dtype"),
    (lambda rng: rng.exponential(-1.0, size=2), ValueError, "exponential(): scale must be non-negative"),
    (lambda rng: rng.normal(0.0, -1.0, size=2), ValueError, "normal(): scale must be non-negative"),
    (lambda rng: rng.random(3, dtype=nda.int32), TypeError, "random(): dtype must be float32 or float64"),
    (lambda rng: rng.standard_exponential(2, dtype="int8"), TypeError, "standard_exponential(): dtype must be float32 or float64"),
    (lambda rng: rng.standard_normal(3, device="nope"), nda.DeviceUnavailableError, "standard_normal(): device type 'nope' is not available"),
    (lambda rng: rng.permutation(3, device="nope"), nda.DeviceUnavailableError, "permutation(): device type 'nope'"),
]


@pytest.mark.parametrize("call, kind, message", RNG_ERRORS, ids=[m.split("(")[0] for _, _, m in RNG_ERRORS])
def test_random_errors_name_the_method_the_user_called(call, kind, message):
    rng = nda.random.default_rng(0)
    with pytest.raises(kind) as info:
        call(rng)
    assert str(info.value).startswith(message), str(info.value)
    assert "philox" not in str(info.value)
    assert rng.bit_generator.state["counter"] == 0  # a refused call draws nothing


def test_the_catalog_op_called_directly_keeps_its_name():
    with pytest.raises(ValueError, match=r"random.philox_integers\(\): low must be less than high"):
        nda.random.philox_integers((2,), key=(1, 2), counter=0, low=3, high=1, dtype=nda.int64)
