"""Bad input raises the exception type Python, NumPy and the Array API use, with a message
naming the function, what was wrong and what is allowed; on cpu and on sim alike (the
checks run at the call, before any device work) and never a silently changed value.
"""

from __future__ import annotations

import math
import os
import re
import warnings

import numpy as np
import pytest

import nda

DEVICES = ["cpu", "sim"]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


# ----------------------------------------------------------------------------- indexing


@pytest.mark.parametrize(
    "key",
    [slice(1, 2.5), slice("a", None), slice(None, None, 1.0), (None, slice(0.5, None)), (Ellipsis, slice(None, nda.asarray(1.5)))],
    ids=["stop-float", "start-str", "step-float", "in-a-tuple", "0d-float-array"],
)
def test_slice_bounds_that_are_not_ints_are_a_type_error(device, key):
    x = nda.arange(5, device=device)
    with pytest.raises(TypeError, match=r"x\[\.\.\.\]: slice bounds must be ints or None, got slice"):
        x[key]
    with pytest.raises(TypeError, match=r"x\[\.\.\.\] = value: slice bounds must be ints or None, got slice"):
        x[key] = 0
    np.testing.assert_array_equal(x.asnumpy(), np.arange(5))
    with pytest.raises(TypeError):  # what Python and NumPy raise
        np.arange(5)[key if not isinstance(key, tuple) else key[1]]


def test_indices_of_the_wrong_kind_stay_index_errors_as_in_numpy(device):
    x = nda.arange(5, device=device)
    for key in (1.5, "a", np.float64(1.0)):
        with pytest.raises(IndexError, match="only integers, slices, '...', None, integer arrays and bool masks are valid indices"):
            x[key]


# ----------------------------------------------------------------------------- concat / stack


@pytest.mark.parametrize("op", ["concat", "stack"])
@pytest.mark.parametrize("empty", [[], ()], ids=["list", "tuple"])
def test_joining_no_arrays_is_a_value_error(op, empty):
    with pytest.raises(ValueError, match=rf"{op}\(\) needs at least one array, got an empty {type(empty).__name__}"):
        getattr(nda, op)(empty)
    with pytest.raises(ValueError):  # NumPy: "need at least one array to concatenate/stack"
        (np.concatenate if op == "concat" else np.stack)(empty)


def test_joining_something_that_is_not_a_sequence_is_a_type_error(device):
    x = nda.ones(3, device=device)
    with pytest.raises(TypeError, match=r"concat\(\) expects a non-empty tuple or list of arrays, got NDArray"):
        nda.concat(x)


# ----------------------------------------------------------------------------- sparse construction


def _csr(data, shape=(1, 1), **kw):
    return nda.sparse.csr_array((data, [0], [0, 1] + [1] * (int(shape[0]) - 1 if isinstance(shape[0], int) else 0)), shape=shape, **kw)


@pytest.mark.parametrize("data", [[300], np.array([300])], ids=["list", "numpy"])
def test_csr_refuses_values_its_dtype_cannot_hold_as_asarray_does(data):
    with pytest.raises(OverflowError, match=r"asarray\(\): the .* 300 does not fit in int8 \(range -128..127\)"):
        nda.asarray(data, dtype=nda.int8)
    with pytest.raises(OverflowError, match=r"csr_array\(\): the .* 300 does not fit in int8 \(range -128..127\)"):
        _csr(data, dtype=nda.int8)
    with pytest.raises(OverflowError, match=r"row_sparse_array\(\): the .* 300 does not fit in int8"):
        nda.sparse.row_sparse_array((data, [0]), shape=(2,), dtype=nda.int8)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("wrap", [list, np.array], ids=["list", "numpy"])
def test_csr_refuses_non_finite_values_for_an_integer_dtype_as_asarray_does(value, wrap):
    data = wrap([value])
    with pytest.raises(ValueError, match=rf"asarray\(\): cannot store {value} in int32; integer dtypes hold finite values only"):
        nda.asarray(data, dtype=nda.int32)
    with pytest.raises(ValueError, match=rf"csr_array\(\): cannot store {value} in int32; integer dtypes hold finite values only"):
        _csr(data, dtype=nda.int32)


@pytest.mark.parametrize("shape", [(2.5, 3), ("2", "3"), (2, None)])
def test_csr_shape_must_be_ints_as_zeros_requires(shape):
    with pytest.raises(TypeError, match=r"zeros\(\): shape must be an int or a tuple of ints"):
        nda.zeros(shape)
    with pytest.raises(
        TypeError, match=rf"csr_array\(\): shape must be an int or a tuple of ints, got {repr(shape).replace('(', '.').replace(')', '.')}"
    ):
        nda.sparse.csr_array(([1.0], [0], [0, 1, 1]), shape=shape)
    with pytest.raises(TypeError, match=r"row_sparse_array\(\): shape must be an int or a tuple of ints"):
        nda.sparse.row_sparse_array(([[1.0, 2.0, 3.0]], [0]), shape=shape)


def test_csr_accepts_what_asarray_accepts(device):
    x = nda.sparse.csr_array(([1.5, 127], [0, 2], [0, 1, 2]), shape=(np.int64(2), 3), dtype=nda.int8, device=device)
    np.testing.assert_array_equal(x.asnumpy(), [[1, 0, 0], [0, 0, 127]])  # 1.5 truncates, as asarray([1.5], dtype=int8)
    np.testing.assert_array_equal(nda.asarray([1.5, 127], dtype=nda.int8).asnumpy(), [1, 127])


# ----------------------------------------------------------------------------- asarray of big ints


@pytest.mark.parametrize("data", [[2**70], [1, -(2**70)], [[1], [2**64]], 2**70], ids=["list", "negative", "nested", "scalar"])
def test_asarray_of_an_int_no_integer_dtype_holds_is_an_overflow_error(device, data):
    with pytest.raises(OverflowError, match=r"asarray\(\): the int -?\d+ does not fit in (any nda integer dtype|int64)"):
        nda.asarray(data, device=device)


def test_asarray_of_ints_that_fit_no_one_integer_dtype_is_an_overflow_error_not_floats(device):
    assert np.asarray([2**64 - 1, -1]).dtype == np.float64  # NumPy silently rounds to floats
    with pytest.raises(OverflowError, match=r"the ints -1 and 18446744073709551615 fit no one nda integer dtype.*dtype=nda.float64"):
        nda.asarray([2**64 - 1, -1], device=device)
    big = nda.asarray([2**64 - 1, -1], dtype=nda.float64, device=device)  # asked for: fine
    assert big.dtype == nda.float64


def test_asarray_of_big_ints_with_floats_follows_python(device):
    x = nda.asarray([1.0, 2**70], device=device)  # NumPy makes an object array
    assert x.dtype == nda.float64 and x.asnumpy()[1] == 2.0**70
    z = nda.asarray([1j, 2**70], device=device)
    assert z.dtype == nda.complex128
    np.testing.assert_array_equal(nda.asarray([2**64 - 1], device=device).asnumpy(), np.array([2**64 - 1], np.uint64))
    with pytest.raises(TypeError, match=r"asarray\(\): list holds objects that are not numbers"):
        nda.asarray([2**70, "a"], device=device)


def test_asarray_names_itself_for_an_unsupported_numpy_dtype():
    with pytest.raises(TypeError, match=r"asarray\(\): NumPy dtype <U1 has no nda equivalent; supported dtypes: bool"):
        nda.asarray(["a"])


# ----------------------------------------------------------------------------- ranges


@pytest.mark.parametrize("args, name", [((math.nan,), "stop"), ((0, math.inf), "stop"), ((-math.inf, 0), "start"), ((0, 1, math.nan), "step")])
def test_arange_of_non_finite_bounds_is_a_value_error_naming_it(device, args, name):
    with pytest.raises(ValueError, match=rf"arange\(\): {name} must be a finite number, got (nan|-?inf)"):
        nda.arange(*args, device=device)
    with pytest.raises(ValueError):  # NumPy: "arange: cannot compute length", "Maximum allowed size exceeded"
        np.arange(*args)


@pytest.mark.parametrize("args", [(2**70,), (0.0, 1e300, 1e-300), (0.0, 1e30)])
def test_arange_with_too_many_elements_is_a_value_error(args):
    with pytest.raises(ValueError, match=r"arange\(\): .* elements, more than an array can hold"):
        nda.arange(*args)


def test_arange_values_outside_the_dtype_are_an_overflow_error(device):
    with pytest.raises(OverflowError, match=r"arange\(\): the value 259 does not fit in uint8 \(range 0..255\)"):
        nda.arange(250, 260, dtype=nda.uint8, device=device)
    with pytest.raises(OverflowError, match=r"arange\(\): the value 9223372036854775812 does not fit in int64"):
        nda.arange(2**63 - 2, 2**63 + 5, device=device)
    np.testing.assert_array_equal(nda.arange(250, 256, dtype=nda.uint8, device=device).asnumpy(), np.arange(250, 256, dtype=np.uint8))


def test_arange_lengths_match_numpy_for_ints_and_floats():
    for start, stop, step in [(0, 10, 3), (10, 0, -3), (5, 5, 1), (0, -5, 1), (-7, 13, 4), (3, -11, -5)]:
        assert nda.arange(start, stop, step).shape == np.arange(start, stop, step).shape
        f = (start / 3, stop / 7, step / 2)
        assert nda.arange(*f).shape == np.arange(*f).shape


def test_eye_names_the_argument_that_is_not_an_int():
    with pytest.raises(TypeError, match=r"eye\(\): n_cols must be an int, got float"):
        nda.eye(3, 2.5)
    with pytest.raises(TypeError, match=r"eye\(\): n_rows must be an int, got str"):
        nda.eye("3")
    with pytest.raises(ValueError, match=r"eye\(\): n_rows must be non-negative, got -1"):
        nda.eye(-1)


# ----------------------------------------------------------------------------- issue 29, item 7


def test_hybridize_refuses_what_is_not_a_function_at_decoration():
    with pytest.raises(TypeError, match=r"hybridize\(\) records a function; got 5 \(a int\), which is not callable"):
        nda.hybridize(5)
    with pytest.raises(TypeError, match="not callable"):
        nda.hybridize(partition=False)("f")
    with pytest.raises(ValueError, match=r"max_signatures=...\) must be at least 1, got 0"):
        nda.hybridize(lambda x: x, max_signatures=0)
    assert nda.hybridize(lambda x: x * 2)(nda.ones(2)).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("where", ["cpu", "sim:1"])
def test_numpy_out_on_another_device_is_named(where):
    pytest.importorskip("nda_sim")
    x = nda.asarray([1.0, 2.0], device="sim" if where == "sim:1" else "cpu")
    out = nda.zeros(2, device="sim" if where == "cpu" else where)
    with pytest.raises(ValueError, match=rf"numpy.add\(\): out= is on {out.device} but the inputs are on {x.device}"):
        np.add(x, x, out=out)
    with pytest.raises(ValueError, match=r"out= is on .* but the inputs are on"):
        np.heaviside(x, 0.5, out=out)  # no nda equivalent: NumPy's host copies would move the data, so refused too
    assert out.tolist() == [0.0, 0.0]
    same = nda.zeros(2, device=x.device)
    assert np.add(x, x, out=same) is same and same.tolist() == [2.0, 4.0]


def test_einsum_on_two_devices_is_refused_as_matmul_is():
    pytest.importorskip("nda_sim")
    x, s = nda.asarray([1.0, 2.0]), nda.asarray([3.0, 4.0], device="sim")
    with pytest.raises(ValueError, match=r"matmul\(\) got arrays on different devices \(cpu:0 and sim:0\)"):
        np.matmul(x, s)
    with pytest.raises(ValueError, match=r"einsum\(\) got arrays on different devices \(cpu:0 and sim:0\)"):
        np.einsum("i,i->", x, s)  # NumPy's einsum is nda.einsum (__array_function__)
    assert float(np.einsum("i,i->", x, x)) == 5.0


def test_dask_nbytes_of_something_else_is_a_type_error():
    from nda import dask as nda_dask

    with pytest.raises(TypeError, match=r"nda.dask.nbytes\(\) takes an nda array, got int"):
        nda_dask.nbytes(5)
    assert nda_dask.nbytes(nda.ones((3, 4), dtype=nda.float32)) == 48


def test_from_dlpack_copy_must_be_a_bool_or_none():
    for source in (nda.ones(3), np.ones(3)):
        with pytest.raises(ValueError, match=r"from_dlpack\(\): copy must be True, False or None, got 'a'"):
            nda.from_dlpack(source, copy="a")
    with pytest.raises(TypeError, match=r"asarray\(\): copy must be True, False or None, got 'a'"):
        nda.asarray(nda.ones(3), copy="a")


@pytest.mark.parametrize("device", ["cpu", "sim"])
def test_shapes_are_taken_as_numpy_takes_them(device):
    if device == "sim":
        pytest.importorskip("nda_sim")
    assert nda.zeros(np.int64(3), device=device).shape == (3,)
    assert nda.ones((np.int32(2), np.uint8(4)), device=device).shape == (2, 4)
    assert nda.zeros(np.array(5), device=device).shape == (5,)
    assert nda.zeros(nda.asarray(2, device=device), device=device).shape == (2,)
    assert nda.empty([nda.asarray(1), 2], device=device).shape == (1, 2)
    for bad in [(True, 2), True, (2, np.True_), np.array(True)]:
        with pytest.raises(TypeError, match=r"zeros\(\): shape must be an int or a tuple of ints"):
            nda.zeros(bad, device=device)
        with pytest.raises(TypeError):
            np.zeros(bad)  # NumPy refuses them too
    with pytest.raises(TypeError, match="a bool is not a dimension"):
        nda.zeros((True, 2))
    with pytest.raises(TypeError, match=r"shape must be an int or a tuple of ints, got array\(\[2\., 3\.\]\)"):
        nda.zeros(np.array([2.0, 3.0]))  # floats are not dimensions


def test_comparing_with_a_python_sequence_is_refused_not_an_identity_test():
    """Before: ``x == [0, 1, 2]`` fell back to Python's identity test and gave False (a user probe)."""
    x = nda.asarray([0, 1, 2])
    for compare in (lambda: x == [0, 1, 2], lambda: x != (0, 1, 2), lambda: [0, 1, 2] == x):
        with pytest.raises(TypeError, match=r"(==|!=) compares nda arrays with nda arrays and Python scalars, got a (list|tuple)"):
            compare()
    assert bool(nda.all(x == nda.asarray([0, 1, 2]))) and not bool(nda.any(x != nda.asarray([0, 1, 2])))


# ----------------------------------------------------------------------------- issue 38, item 8

_HUGE = """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))  # a huge allocation fails; it never takes the machine
    import nda
    D = sys.argv[1]
    big = lambda shape: nda.broadcast_to(nda.ones(1, device=D), shape)  # no memory behind it
    cases = {
        "repeat": lambda: nda.repeat(nda.ones(4, device=D), 2**62),  # np.repeat's size overflows: it crashed the process
        "repeat axis": lambda: nda.repeat(nda.ones((4, 1), device=D), 2**62, axis=0),
        # counts as an array: their int64 sum wrapped to 0 (a segfault) or below 0 (a negative shape)
        "repeat counts": lambda: nda.repeat(nda.ones(4, device=D), nda.asarray([2**62] * 4, device=D)),
        "repeat counts negative": lambda: nda.repeat(nda.ones(3, device=D), nda.asarray([2**62] * 3, device=D)),
        "repeat counts uint64": lambda: nda.repeat(nda.ones(2, device=D), nda.asarray([2**63, 2**63], dtype=nda.uint64, device=D)),
        "zeros": lambda: nda.zeros((2**32, 2**32), device=D),
        "ones": lambda: nda.ones(2**62, device=D),
        "empty": lambda: nda.empty((2**61, 4), dtype=nda.int8, device=D),
        "full": lambda: nda.full(2**62, 1.0, device=D),
        "eye": lambda: nda.eye(2**32, device=D),
        "linspace": lambda: nda.linspace(0, 1, 2**62, device=D),
        "tile": lambda: nda.tile(nda.ones(4, device=D), (2**62,)),
        "broadcast_to": lambda: big((2**62,)),
        "add": lambda: big((2**31, 1)) + big((1, 2**31)),
        "matmul": lambda: big((2**31, 1)) @ big((1, 2**31)),
        "concat": lambda: nda.concat([big((2**59,))] * 8),
        "stack": lambda: nda.stack([big((2**59,))] * 8),
        "random": lambda: nda.random.default_rng(0).random(2**62, device=D),  # errors name the user's method
    }
    for name, call in cases.items():
        try:
            call()
            print(name, "accepted at the call")
        except ValueError as err:
            named = str(err).startswith(f"{name.split()[0]}(): array is too big") and "sys.maxsize" in str(err)
            # An element-wise op small enough for the engine's inline limit (the naive engine's is
            # unbounded) runs NumPy's ufunc at once, which refuses the broadcast itself.
            numpy_s = name == "add" and str(err).startswith("array is too big")
            print(name, "refused" if named or numpy_s else f"other: {err}")
        except BaseException as err:
            print(name, "raised", type(err).__name__, err)
    nda.waitall()
    print("done")
"""


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_no_array_can_span_are_refused_at_the_call(device):
    """``nda.repeat(x, 2**62)`` handed NumPy a size that overflowed in ``np.repeat``: a segfault.
    Every planned output is checked where a plan becomes work (and before a plan is memoised),
    element-wise broadcasts where they go to the engine: more than sys.maxsize bytes is a
    ValueError at the call naming the op, the shape and the limit, before any kernel runs
    (NumPy: "array is too big").
    In a subprocess: before the fix it crashed."""
    import subprocess
    import sys
    import textwrap

    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_HUGE), device], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    lines = proc.stdout.splitlines()
    assert lines[-1] == "done" and len(lines) == 19, proc.stdout
    assert all(line.endswith(" refused") for line in lines[:-1]), proc.stdout


def test_the_size_limit_is_numpy_s():
    with pytest.raises(ValueError, match="array is too big"):
        np.empty(2**62)
    with pytest.raises(ValueError, match=r"zeros\(\): array is too big: the result of shape \(1152921504606846976, 16\) and dtype int8"):
        nda.zeros((2**60, 16), dtype=nda.int8)
    assert nda.broadcast_to(nda.ones(1, dtype=nda.int8), (2**62,)).shape == (2**62,)  # 2**62 bytes: it fits (a view)
    x = nda.sparse.csr_array(([1.0], [5], [0, 1]), shape=(1, 2**62))  # sparse: what is stored counts, not the shape
    assert (x * 2).shape == (1, 2**62)


@pytest.mark.parametrize("mode", ["w+", "write"])
def test_load_refuses_mmap_mode_w_plus_and_leaves_the_file_as_it_was(tmp_path, mode):
    """``mmap_mode="w+"`` truncated the file to 0 bytes, then raised TypeError: a load never
    creates or truncates the file it reads."""
    path = tmp_path / "a.npy"
    np.save(path, np.arange(6.0))
    before = path.read_bytes()
    with pytest.raises(ValueError, match=rf"load\(\): mmap_mode='{re.escape(mode)}' creates or truncates the file, and a load never does"):
        nda.load(path, mmap_mode=mode)
    assert path.read_bytes() == before
    np.testing.assert_array_equal(nda.load(path, mmap_mode="c").asnumpy(), np.arange(6.0))
    with pytest.raises(ValueError, match=r"load\(\): mmap_mode must be one of 'r', 'r\+', 'c'"):
        nda.load(path, mmap_mode="x")
    with pytest.raises(TypeError, match=r"load\(\): mmap_mode must be None or a str"):
        nda.load(path, mmap_mode=1)


def test_an_npz_member_that_is_not_array_data_is_a_type_error(tmp_path):
    import zipfile

    path = tmp_path / "odd.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", b"not a .npy file")
        archive.writestr("notes.txt", b"text")
    with nda.load(path) as f:
        for name in ("x", "notes.txt"):
            with pytest.raises(TypeError, match=rf"load\(\) of '{re.escape(name)}': the archive member is not NumPy array data \(\.npy\)"):
                f[name]


@pytest.mark.parametrize("shape", [{3: 1}, {3}, frozenset({2})], ids=["dict", "set", "frozenset"])
def test_a_mapping_or_a_set_is_not_a_shape(device, shape):
    with pytest.raises(TypeError):
        np.zeros(shape)  # NumPy: "expected a sequence of integers or a single integer"
    with pytest.raises(
        TypeError, match=rf"zeros\(\): shape must be an int or a tuple of ints, got .* \(a {type(shape).__name__} is not a sequence of dimensions\)"
    ):
        nda.zeros(shape, device=device)


_NOT_SHAPES = [{6: 1}, {6}, (6, True), (True, 6), True, (6.0,), "6"]


@pytest.mark.parametrize("shape", _NOT_SHAPES, ids=["dict", "set", "bool-inside", "bool-first", "bool", "float", "str"])
def test_every_shape_taking_function_refuses_what_the_constructors_refuse(device, shape):
    """reshape, NumPy's reshape/*_like(shape=)/unravel_index, broadcast_shapes and the random
    generators parse shapes as the constructors do (``ops.spec.parse_shape``): ``{6: 1}`` or
    ``(6, True)`` was taken as ``(6,)`` / ``(6, 1)`` where NumPy raises TypeError."""
    x = nda.ones((2, 3), device=device)
    rng = nda.random.default_rng(0)
    bad = shape if not isinstance(shape, tuple) else shape
    size_bad = shape if shape != (6.0,) else (3.0,)
    calls = {
        "nda.reshape": lambda: nda.reshape(x, bad),
        "x.reshape(tuple)": lambda: x.reshape(bad),
        "np.reshape": lambda: np.reshape(x, bad),
        "np.zeros_like(shape=)": lambda: np.zeros_like(x, shape=bad),
        "np.full_like(shape=)": lambda: np.full_like(x, 2.0, shape=bad),
        "rng.random": lambda: rng.random(size_bad, device=device),
        "rng.normal(size=)": lambda: rng.normal(size=size_bad, device=device),
        "rng.integers(size=)": lambda: rng.integers(0, 5, size=size_bad, device=device),
    }
    if isinstance(shape, tuple):
        calls["x.reshape(*dims)"] = lambda: x.reshape(*bad)
        calls["nda.broadcast_shapes"] = lambda: nda.broadcast_shapes(bad)
        calls["np.unravel_index"] = lambda: np.unravel_index(nda.asarray(1, device=device), bad)
    for what, call in calls.items():
        # nda's message; a NumPy function nda refuses goes to NumPy (a FallbackWarning), which raises its own
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nda.FallbackWarning)
            with pytest.raises(
                TypeError,
                match=r"must be an int or a tuple of ints|expected a sequence of integers|an integer is required|cannot be interpreted as an integer",
            ):
                call()
                pytest.fail(f"{what} accepted {shape!r}")


def test_np_reshape_and_like_name_numpys_function_and_still_take_ints(device):
    x = nda.ones((2, 3), device=device)
    assert np.reshape(x, 6).shape == (6,)
    assert np.reshape(x, np.int64(6)).shape == (6,)
    assert x.reshape(np.int64(3), -1).shape == (3, 2)
    assert np.zeros_like(x, shape=4).shape == (4,)
    assert np.zeros_like(x, shape=[2, np.int64(2)]).shape == (2, 2)
    assert nda.random.default_rng(0).random([2, np.int32(2)], device=device).shape == (2, 2)
    with warnings.catch_warnings():  # nda refuses (a FallbackWarning once per route); NumPy, given the call, refuses too
        warnings.simplefilter("ignore", nda.FallbackWarning)
        with pytest.raises(TypeError):
            np.zeros_like(x, shape={4: 1})
        with pytest.raises(ValueError, match="negative dimension"):
            np.zeros_like(x, shape=(-1,))
    with pytest.raises(TypeError, match=r"random\(\): size must be an int or a tuple of ints, got \{3: 1\} \(a dict is not"):
        nda.random.default_rng(0).random({3: 1})


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "mean", "argmax", "cumulative_sum", "sort", "flip", "concat"])
@pytest.mark.parametrize("axis", [True, False, np.True_], ids=["True", "False", "np.True_"])
def test_a_bool_is_not_an_axis(device, op, axis):
    x = nda.ones((2, 3), device=device)
    with pytest.raises(TypeError):
        np.sum(np.ones((2, 3)), axis=True)  # NumPy refuses it
    args = ([x, x],) if op == "concat" else (x,)
    with pytest.raises(TypeError, match=rf"{op}\(\): axis must be an int, got (bool|bool_)"):
        getattr(nda, op)(*args, axis=axis)


def test_from_dlpack_of_something_without_dlpack_is_a_type_error():
    for bad in (object(), [1, 2], 3.5):
        with pytest.raises(TypeError, match=r"from_dlpack\(\): expected an object with __dlpack__ .* got (object|list|float)"):
            nda.from_dlpack(bad)
    assert nda.from_dlpack(np.arange(3.0)).asnumpy().tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("bad", [5, None, 2.5, ["sim"]])
def test_backends_load_of_something_that_is_not_a_name_is_a_type_error(bad):
    with pytest.raises(TypeError, match=r"backends\.load\(\): expected a backend or op library name"):
        nda.backends.load(bad)


# ----------------------------------------------------------------------------- NDA_* environment variables


def test_environment_values_are_parsed_with_errors_naming_the_variable(monkeypatch):
    from nda._config import env_choice, env_flag, env_float, env_int

    monkeypatch.setenv("NDA_TEST_VALUE", "x")
    for parse, allowed in (
        (lambda: env_int("NDA_TEST_VALUE", 3, minimum=1), "an integer >= 1"),
        (lambda: env_float("NDA_TEST_VALUE", 1.5), "a number >= 0"),
        (lambda: env_flag("NDA_TEST_VALUE", True), "1 or 0"),
        (lambda: env_choice("NDA_TEST_VALUE", "a", ("a", "b")), "one of a, b"),
    ):
        with pytest.raises(ValueError, match=rf"NDA_TEST_VALUE must be {allowed}.*got 'x'; unset it for the default"):
            parse()
    for value, expected in (("0", None), ("-2", None), ("nan", None), ("7", 7)):
        monkeypatch.setenv("NDA_TEST_VALUE", value)
        if expected is None:
            with pytest.raises(ValueError, match="NDA_TEST_VALUE must be"):
                env_int("NDA_TEST_VALUE", 3, minimum=1) if value != "nan" else env_float("NDA_TEST_VALUE", 1.0)
        else:
            assert env_int("NDA_TEST_VALUE", 3, minimum=1) == expected
    monkeypatch.setenv("NDA_TEST_VALUE", " ")
    assert env_int("NDA_TEST_VALUE", 3) == 3 and env_flag("NDA_TEST_VALUE", False) is False  # empty: the default
    monkeypatch.setenv("NDA_TEST_VALUE", "inf")
    assert env_float("NDA_TEST_VALUE", 1.0) == math.inf
    for value, flag in (("Yes", True), ("off", False), ("1", True), ("FALSE", False)):
        monkeypatch.setenv("NDA_TEST_VALUE", value)
        assert env_flag("NDA_TEST_VALUE", not flag) is flag


_BAD_ENVIRONMENT = [
    ("NDA_QUIESCE_TIMEOUT", "soon"),
    ("NDA_MAX_PENDING", "0"),
    ("NDA_MAX_PENDING_ELEMENTS", "-1"),
    ("NDA_INLINE_MAX", "lots"),
    ("NDA_MAX_IN_FLIGHT", "1.5"),
    ("NDA_NATIVE", "maybe"),
    ("NDA_FUSION_CHUNK", "0"),
    ("NDA_SIM_DEVICES", "two"),
    ("NDA_SIM_LATENCY_US", "-5"),
    ("NDA_SIM_CAPACITY", "1GB"),
    ("NDA_SIM_FLUSH_SUBNORMALS", "sometimes"),
    # past what the setting can be: a hang (a list of 10**20 devices), a bare AssertionError (a stream's sleep overflowed)
    ("NDA_SIM_DEVICES", "99999999999999999999"),
    ("NDA_SIM_LATENCY_US", "99999999999999999999"),
    ("NDA_SIM_CAPACITY", "99999999999999999999"),
    ("NDA_NUMEXPR", "maybe"),  # was a partitioner's note at each compile, never an error
    ("NDA_ENGINE", "fast"),
]


def test_a_bad_nda_environment_value_is_an_error_naming_the_variable():
    """A bare AssertionError (``NDA_SIM_LATENCY_US=-5``: a stream item failed silently), an
    ``int()`` error that does not say which variable, or a silent default: now ``import nda``
    (or the sim device, which names its import error) says which variable, its value and what
    it takes. One fresh interpreter per variable, all at once."""
    import subprocess
    import sys

    script = "import nda\nf = nda.hybridize(lambda a: a * 2 + 1)\nf(nda.ones(4)).wait_to_read()\nprint((nda.ones(3, device='sim') + 1).asnumpy())"
    procs = {
        (name, value): subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "NDA_ENGINE": "threaded", name: value},
        )  # the threaded engine reads its settings
        for name, value in _BAD_ENVIRONMENT
    }
    for (name, value), proc in procs.items():
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"{name}={value}: the process hung")
        assert proc.returncode != 0, f"{name}={value!r} was accepted"
        assert re.search(rf"ValueError: {name} must be .*, got {re.escape(repr(value))}", err), (name, err[-1500:])
        assert "AssertionError" not in err


def test_an_empty_nda_variable_means_its_default():
    """README: an empty value means the default, for every variable (``NDA_ENGINE=`` was a ValueError)."""
    import subprocess
    import sys

    script = "import nda\nprint(nda.engine.current().name, (nda.ones(3, device='sim') + 1).asnumpy().tolist())"
    names = ["NDA_ENGINE", "NDA_NUMEXPR", "NDA_SIM_DEVICES", "NDA_SIM_LATENCY_US", "NDA_SIM_FLUSH_SUBNORMALS", "NDA_FALLBACK", "NDA_NATIVE"]
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env={**os.environ, **{name: "" for name in names}}
    )
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.split()[0] == "threaded" and "[2.0, 2.0, 2.0]" in proc.stdout


def test_the_largest_accepted_values_work(monkeypatch):
    """The bounds refuse only what cannot work: the limits themselves are accepted."""
    from nda._config import env_float, env_int

    monkeypatch.setenv("NDA_TEST_VALUE", "64")
    assert env_int("NDA_TEST_VALUE", 2, maximum=64) == 64
    monkeypatch.setenv("NDA_TEST_VALUE", "65")
    with pytest.raises(ValueError, match=r"NDA_TEST_VALUE must be an integer from 0 to 64, got '65'; unset it for the default, 2"):
        env_int("NDA_TEST_VALUE", 2, maximum=64)
    monkeypatch.setenv("NDA_TEST_VALUE", "1e7")
    assert env_float("NDA_TEST_VALUE", 0.0, maximum=1e7) == 1e7
    monkeypatch.setenv("NDA_TEST_VALUE", "inf")
    with pytest.raises(ValueError, match=r"must be a number from 0 to 1e\+07, got 'inf'"):
        env_float("NDA_TEST_VALUE", 0.0, maximum=1e7)
