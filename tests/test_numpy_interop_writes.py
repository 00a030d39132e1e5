"""NumPy calls that write into nda arrays, and the host fallback's other corners.

The rule (``nda._interop_args._on_host``, README "Ecosystem"): the host fallback hands NumPy
fresh host copies of the nda arrays, read-only except the ones NumPy writes by contract
(``out=``, ``ufunc.at``'s operand, ``np.copyto``'s destination, ``np.put``, ``np.place``,
``np.putmask``, ``np.put_along_axis``, ``np.fill_diagonal``, ``np.nan_to_num(copy=False)``);
those are written back through nda's setitem, so the engine orders the write after queued
readers and autograd counts it. Where nda's answer differs from NumPy's the rule is: NumPy's
values and dtype, or NumPy's exception type. Every rule runs on cpu and sim; the suite runs
under both engines.
"""

from __future__ import annotations

import numpy as np
import pytest

import nda
from nda import autograd

DEVICES = ["cpu", "sim"]

pytestmark = pytest.mark.filterwarnings("ignore::nda.FallbackWarning")


# ----------------------------------------------------------------------------- writes into arguments


def _writes(xp_asarray):
    """(label, data, call(arrays) -> result) of NumPy calls that write into their first argument."""
    a = xp_asarray
    return [
        ("add.at", lambda: [a([0.0, 0.0, 0.0])], lambda x: np.add.at(x, [0, 0, 2], 1.0)),
        ("multiply.at", lambda: [a([1.0, 2.0, 3.0])], lambda x: np.multiply.at(x, [1, 1], 3.0)),
        ("copyto", lambda: [a([3.0, 1.0, 2.0])], lambda x: np.copyto(x, 0.0)),
        ("copyto where", lambda: [a([3.0, 1.0, 2.0]), a([True, False, True])], lambda x, m: np.copyto(x, 7.0, where=m)),
        ("put", lambda: [a([3.0, 1.0, 2.0])], lambda x: np.put(x, [0], [9.0])),
        ("place", lambda: [a([3.0, 1.0, 2.0])], lambda x: np.place(x, np.asarray([False, True, True]), [5.0])),
        ("putmask", lambda: [a([3.0, 1.0, 2.0])], lambda x: np.putmask(x, np.asarray([True, False, True]), -1.0)),
        ("put_along_axis", lambda: [a([[3.0, 1.0], [2.0, 5.0]])], lambda x: np.put_along_axis(x, np.asarray([[1], [0]]), 0.0, axis=1)),
        ("fill_diagonal", lambda: [a([[3.0, 1.0], [2.0, 5.0]])], lambda x: np.fill_diagonal(x, 8.0)),
        ("nan_to_num copy=False", lambda: [a([np.nan, 1.0, np.inf])], lambda x: np.nan_to_num(x, copy=False)),
        ("median out=", lambda: [a([0.0, 0.0]), a([[3.0, 1.0], [2.0, 5.0]])], lambda o, m: np.median(m, axis=0, out=o)),
        ("median positional out", lambda: [a([0.0, 0.0]), a([[3.0, 1.0], [2.0, 5.0]])], lambda o, m: np.median(m, 0, o)),
        ("sum where= out=", lambda: [a(0.0), a([1.0, 2.0, 4.0])], lambda o, x: np.sum(x, where=np.asarray([True, False, True]), out=o)),
        (
            "add where= out=",
            lambda: [a([-1.0, -1.0, -1.0]), a([1.0, 2.0, 4.0]), a([True, False, True])],
            lambda o, x, m: np.add(x, 1.0, where=m, out=o),
        ),
        ("add.outer out=", lambda: [a(np.zeros((2, 2))), a([1.0, 2.0])], lambda o, x: np.add.outer(x, x, out=o)),
        ("subtract.reduce out=", lambda: [a(0.0), a([1.0, 2.0, 4.0])], lambda o, x: np.subtract.reduce(x, out=o)),
        ("cbrt out=", lambda: [a([0.0, 0.0]), a([8.0, 27.0])], lambda o, x: np.cbrt(x, out=o)),
        ("einsum out=", lambda: [a(0.0), a([1.0, 2.0])], lambda o, x: np.einsum("i,i", x, x, out=o)),
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", range(len(_writes(np.asarray))), ids=[c[0] for c in _writes(np.asarray)])
def test_numpy_calls_that_write_an_nda_argument_write_it(device, case):
    label, np_data, np_call = _writes(np.asarray)[case]
    _, nda_data, nda_call = _writes(lambda v: nda.asarray(np.asarray(v), device=device))[case]
    expected_arrays, arrays = np_data(), nda_data()
    expected = np_call(*expected_arrays)
    result = nda_call(*arrays)
    for want, got in zip(expected_arrays, arrays):
        assert isinstance(got, nda.NDArray) and got.device.type == device, label
        np.testing.assert_array_equal(got.asnumpy(), want, err_msg=label)
    if expected is expected_arrays[0]:  # NumPy returns out=: nda returns the nda out=
        assert result is arrays[0], label
    elif expected is None:
        assert result is None, label


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_writes_are_ordered_after_queued_readers(device, all_tasks):
    # Every op goes to the workers (all_tasks): y is still queued when NumPy writes into x.
    for _ in range(3):
        x = nda.ones(1_000_000, device=device)
        nda.waitall()
        y = nda.exp(x) * 2.0
        np.copyto(x, 0.0)
        z = nda.sqrt(x) + 1.0
        o = nda.zeros(1_000_000, device=device)
        np.cbrt(x, out=o)  # a ufunc fallback writing into o while nothing is queued on o...
        w = o + 1.0
        np.add.at(o, [0], 5.0)  # ...then writing o while w still reads it
        np.testing.assert_allclose(y.asnumpy()[:3], 2 * np.e)
        assert float(nda.max(z)) == 1.0 and float(nda.max(w)) == 1.0
        assert float(nda.max(x)) == 0.0 and o[0].item() == 5.0


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_writes_count_as_in_place_writes_for_autograd(device):
    w = nda.asarray([1.0, 2.0], device=device)
    w.attach_grad()
    c = nda.asarray([3.0, 4.0], device=device)
    with autograd.record():
        loss = nda.sum(w * c)
    np.copyto(c, 0.0)  # multiply saved c: backward must see the write, as for c[...] = 0
    with pytest.raises(autograd.AutogradError, match="modified in place"):
        loss.backward()


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_gets_read_only_copies_of_the_arrays_it_does_not_write(device):
    x = nda.asarray([1.0, 2.0, 3.0], device=device)
    view = np.flipud(x)  # a NumPy view of a host copy: writing it could not reach x
    assert isinstance(view, np.ndarray) and not view.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 9.0
    assert x.tolist() == [1.0, 2.0, 3.0]
    # overwrite_input=True lets NumPy clobber its copy; x itself keeps its values
    assert np.median(x, overwrite_input=True) == 2.0 and x.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("device", DEVICES)
def test_nda_where_mask_in_a_ufunc_is_converted(device):
    x = nda.asarray([1.0, 2.0], device=device)
    m = nda.asarray([True, False], device=device)
    out = nda.full(2, -1.0, device=device)
    assert np.add(x, 1.0, where=m, out=out) is out  # was a RecursionError
    assert out.tolist() == [2.0, -1.0]
    assert np.sum(x, where=m) == 1.0


# ----------------------------------------------------------------------------- same answer as NumPy


def _agreement_cases():
    """(label, call(a)) where ``a`` makes an array of NumPy data: NumPy's, or nda's on a device."""
    f32_diag = np.asarray([[1.0, 0.0], [0.0, 1e-7]], dtype=np.float32)
    ones = np.ones((1, 2))
    return [
        # A7: NumPy's pinv default cutoff is rcond=1e-15, not the Array API's max(M, N) * eps
        ("pinv default rcond", lambda a: np.linalg.pinv(a(f32_diag))),
        ("pinv rtol=None", lambda a: np.linalg.pinv(a(f32_diag), rtol=None)),
        ("pinv rcond", lambda a: np.linalg.pinv(a(f32_diag), 1e-3)),
        ("pinv rtol and rcond", lambda a: np.linalg.pinv(a(f32_diag), 1e-3, rtol=1e-3)),
        # A9: dtype= applies to every array joined, under casting=
        ("vstack dtype", lambda a: np.vstack([a(ones), a(ones)], dtype=np.float32)),
        ("hstack dtype", lambda a: np.hstack([a(ones), a(ones)], dtype=np.float32)),
        ("hstack 1-d dtype", lambda a: np.hstack([a(ones[0]), a(ones[0])], dtype=np.float32)),
        ("vstack dtype same_kind refused", lambda a: np.vstack([a(ones), a(ones)], dtype=np.int64)),
        ("concatenate dtype unsafe", lambda a: np.concatenate([a(ones), a(ones * 2.5)], dtype=np.int64, casting="unsafe")),
        ("stack dtype safe refused", lambda a: np.stack([a(ones), a(ones)], dtype=np.float32, casting="safe")),
        # A10: NumPy's loop decides the dtype (and whether there is one)
        ("reciprocal int", lambda a: np.reciprocal(a([1, 2, 4]))),
        ("rint int", lambda a: np.rint(a([1, 2, 4]))),
        ("rint int8 (float16)", lambda a: np.rint(a(np.asarray([1, 2], dtype=np.int8)))),
        ("divide int dtype=int64", lambda a: np.divide(a([1, 2, 4]), 2, dtype=np.int64)),
        ("add int8 dtype=float32", lambda a: np.add(a(np.asarray([1, 2], dtype=np.int8)), 1, dtype=np.float32)),
        ("equal dtype=float64", lambda a: np.equal(a([1, 2]), 1, dtype=np.float64)),
        # B3: dtypes nda refuses are NumPy's on host copies
        ("logical_and int", lambda a: np.logical_and(a([1, 0, 4]), 1)),
        ("square bool", lambda a: np.square(a([True, False]))),
        ("maximum complex", lambda a: np.maximum(a([1 + 1j, 2 - 1j]), 1.5)),
        ("less complex (a call, not an operator)", lambda a: np.less(a([1 + 1j, 2 - 1j]), 1.5, casting="same_kind")),
        ("logical_and int", lambda a: np.logical_and(a([1, 0, 4]), 1)),
        ("clip int by floats", lambda a: np.clip(a([1, 2, 4]), 0.5, 2.5)),
        ("where python scalars", lambda a: np.where(a([True, False]), 1, 2.5)),
        ("where int condition", lambda a: np.where(a([1, 0]), a([1.0, 2.0]), 0.0)),
        ("linalg.norm int", lambda a: np.linalg.norm(a([1, 2, 4]))),
        ("linalg.inv int", lambda a: np.linalg.inv(a([[1, 2], [3, 4]]))),
        ("linalg.det int", lambda a: np.linalg.det(a([[1, 2], [3, 4]]))),
        ("fft.fft int", lambda a: np.fft.fft(a([1, 2, 4]))),
        ("std complex", lambda a: np.std(a([1 + 1j, 2 - 1j]))),
        ("var complex", lambda a: np.var(a([1 + 1j, 2 - 1j]))),
        ("full_like int 2.7", lambda a: np.full_like(a([1, 2, 4]), 2.7)),
        ("sort complex", lambda a: np.sort(a([2 + 1j, 1 - 1j]))),
        ("max bool", lambda a: np.max(a([True, False]))),
        ("cumulative_sum include_initial", lambda a: np.cumulative_sum(a([1, 2, 4]), include_initial=True)),
        ("cumulative_prod axis include_initial", lambda a: np.cumulative_prod(a([[1, 2], [3, 4]]), axis=1, include_initial=True)),
        ("cumulative_sum 2-d without axis", lambda a: np.cumulative_sum(a([[1, 2], [3, 4]]))),
        ("tile numpy int", lambda a: np.tile(a([1, 2]), np.int64(2))),
        ("tile numpy ints", lambda a: np.tile(a([1, 2]), (np.int64(2), 1))),
        # out= of another dtype: NumPy's casting rule (same_kind for ufunc calls, unsafe for reductions)
        ("add float into int out=", lambda a: np.add(a([1.0, 2.0]), 1.5, out=a(np.zeros(2, dtype=np.int64)))),
        ("add complex into float out=", lambda a: np.add(a([1 + 1j]), 1, out=a(np.zeros(1)))),
        ("add.reduce float into int out=", lambda a: np.add.reduce(a([1.5, 1.5]), out=a(np.zeros((), dtype=np.int64)))),
        ("add.accumulate float into int out=", lambda a: np.add.accumulate(a([1.5, 1.5]), out=a(np.zeros(2, dtype=np.int64)))),
        ("sum float into int out=", lambda a: np.sum(a([1.5, 1.5]), out=a(np.zeros((), dtype=np.int64)))),
        ("clip float into int out=", lambda a: np.clip(a([1.5, 2.5]), 1, 2, out=a(np.zeros(2, dtype=np.int64)))),
        # A10 (functions): memory order and NumPy's checks
        ("ravel K of a transpose", lambda a: np.ravel(a(np.arange(6.0).reshape(2, 3)).T, order="K")),
        ("ravel A of a transpose", lambda a: np.ravel(a(np.arange(6.0).reshape(2, 3)).T, order="A")),
        ("ravel K 1-d", lambda a: np.ravel(a([1.0, 2.0]), order="K")),
        ("linalg.norm 3-d ord=1", lambda a: np.linalg.norm(a(np.ones((2, 2, 2))), ord=1)),
        ("linalg.norm 3-d", lambda a: np.linalg.norm(a(np.ones((2, 2, 2))))),
    ]


_CASES = _agreement_cases()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", range(len(_CASES)), ids=[label for label, _ in _CASES])
def test_numpy_protocol_answers_are_numpys(device, case):
    # Same values and dtype as NumPy, or NumPy's exception type.
    label, call = _CASES[case]
    try:
        expected = call(np.asarray)
    except Exception as err:  # noqa: BLE001 - NumPy's exception is the expected answer
        with pytest.raises(type(err)):
            call(lambda v: nda.asarray(np.asarray(v), device=device))
        return
    result = call(lambda v: nda.asarray(np.asarray(v), device=device))
    _same(expected, result, device, label)


def _same(expected, result, device, label):
    if isinstance(expected, tuple):
        assert isinstance(result, tuple) and len(result) == len(expected), label
        for e, r in zip(expected, result):
            _same(e, r, device, label)
        return
    if isinstance(result, nda.NDArray):
        assert result.device.type == device, label
        result = result.asnumpy()
    result = np.asarray(result)
    expected = np.asarray(expected)
    assert result.dtype == expected.dtype, (label, result.dtype, expected.dtype)
    assert result.shape == expected.shape, (label, result.shape, expected.shape)
    np.testing.assert_allclose(result, expected, rtol=1e-6, atol=0, err_msg=label)


# ----------------------------------------------------------------------------- every ufunc, every dtype

_DTYPES = ["bool", "int8", "uint8", "int32", "int64", "uint64", "float32", "float64", "complex64", "complex128"]


def _ufunc_data(dtype, k):
    base = np.asarray([1, 2, 3, 0] if k == 0 else [2, 1, 3, 5])
    if dtype == "bool":
        return (base % 2).astype(bool)
    values = base.astype(dtype)
    return values + 1j * values[::-1] if dtype.startswith("complex") else values


def _ufunc_calls(ufunc):
    if ufunc.nin == 1:
        return [(d,) for d in _DTYPES]
    return [(a, b) for a in _DTYPES for b in _DTYPES] + [(d, s) for d in _DTYPES for s in (1, 2.5, 1j, True)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ufunc", sorted(nda._interop.UFUNCS, key=lambda u: u.__name__), ids=lambda u: u.__name__)
def test_every_numpy_ufunc_nda_runs_gives_numpys_dtype_and_values(device, ufunc):
    # nda's own op where it agrees with NumPy's loop (inputs cast to the loop's dtypes, as
    # NumPy does), NumPy on host copies where nda refuses or its dtype rule differs, and
    # NumPy's exception where NumPy has no loop: never a different dtype or value.
    for combo in _ufunc_calls(ufunc):
        np_args = [_ufunc_data(c, i) if isinstance(c, str) else c for i, c in enumerate(combo)]
        nda_args = [nda.asarray(a, device=device) if isinstance(a, np.ndarray) else a for a in np_args]
        with np.errstate(all="ignore"):
            try:
                expected = ufunc(*np_args)
            except Exception as err:  # noqa: BLE001 - NumPy's exception is the expected answer
                with pytest.raises(type(err)):
                    ufunc(*nda_args)
                continue
            result = ufunc(*nda_args)
        _same(expected, result, device, f"{ufunc.__name__}{combo}")


def test_fallback_messages_name_no_nda_internals():
    x = nda.asarray([1, 2, 4])
    previous = nda.config.fallback
    try:
        nda.config.fallback = "error"
        for call in (
            lambda: np.rot90(nda.reshape(x, (1, 3))),
            lambda: np.linalg.inv(nda.asarray([[1, 2], [3, 4]])),
            lambda: np.logical_and(x, 1),
            lambda: np.ravel(nda.reshape(x, (3, 1)), order="K"),
        ):
            with pytest.raises(nda.FallbackError) as info:
                call()
            assert "<locals>" not in str(info.value) and "handler" not in str(info.value), str(info.value)
    finally:
        nda.config.fallback = previous


@pytest.mark.parametrize("device", DEVICES)
def test_a_dtype_nda_has_no_equivalent_of_is_a_type_error_not_a_fallback(device):
    # The result could not be an nda array: Dask (like code written for CuPy) catches the
    # TypeError and takes another route, which keeps its chunks on the device.
    x = nda.asarray([1.0, 2.0], device=device)
    with pytest.raises(TypeError, match="numpy.empty_like: .* is not a supported dtype"):
        np.empty_like(x, shape=x.shape, dtype=[("vals", np.float64), ("arg", np.int64)])
    with pytest.raises(TypeError, match="numpy.add: .* is not a supported dtype"):
        np.add(x, 1.0, dtype=np.float16)
    # NumPy's loop may still be in a dtype nda lacks: NumPy's answer on host copies
    assert np.rint(nda.asarray(np.asarray([1, 2], dtype=np.int8), device=device)).dtype == np.float16


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.minimum, np.logical_and, np.logical_or], ids=lambda u: u.__name__)
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_numpy_ufunc_reduce_and_accumulate_give_numpys_answer(device, ufunc):
    for dtype in _DTYPES:
        data = np.arange(6).reshape(2, 3) % 3
        data = (data % 2).astype(bool) if dtype == "bool" else data.astype(dtype)
        calls = [
            ("reduce", {}),
            ("reduce", {"axis": 1, "keepdims": True}),
            ("reduce", {"axis": None}),
            ("reduce", {"dtype": np.int64}),
            ("accumulate", {"axis": 1}),
            ("accumulate", {"dtype": np.float64}),
        ]
        for method, kwargs in calls:
            label = f"{ufunc.__name__}.{method}({dtype}, {kwargs})"
            try:
                expected = getattr(ufunc, method)(data, **kwargs)
            except Exception as err:  # noqa: BLE001 - NumPy's exception is the expected answer
                with pytest.raises(type(err)):
                    getattr(ufunc, method)(nda.asarray(data, device=device), **kwargs)
                continue
            _same(expected, getattr(ufunc, method)(nda.asarray(data, device=device), **kwargs), device, label)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_ufunc_out_of_every_dtype_follows_numpys_casting_rule(device):
    for dtype in _DTYPES:
        for out_dtype in _DTYPES:
            data = np.ones(2, dtype=dtype)
            try:
                expected = np.add(data, data, out=np.zeros(2, dtype=out_dtype)).copy()
            except Exception as err:  # noqa: BLE001 - NumPy's exception is the expected answer
                with pytest.raises(type(err)):
                    x = nda.asarray(data, device=device)
                    np.add(x, x, out=nda.zeros(2, dtype=getattr(nda, out_dtype), device=device))
                continue
            out = nda.zeros(2, dtype=getattr(nda, out_dtype), device=device)
            x = nda.asarray(data, device=device)
            assert np.add(x, x, out=out) is out
            _same(expected, out, device, f"add({dtype}) into {out_dtype}")


@pytest.mark.parametrize("device", DEVICES)
def test_out_of_another_shape_or_dtype_follows_numpy(device):
    a = lambda v: nda.asarray(np.asarray(v), device=device)  # noqa: E731
    cases = [
        ("inputs broadcast to out", lambda a: np.add(a([1.0, 2.0, 3.0]), 1, out=a(np.zeros((2, 3))))),
        ("add float64 into float32", lambda a: np.add(a([1.0, 2.0]), 1, out=a(np.zeros(2, dtype=np.float32)))),
        ("dot needs out's exact dtype", lambda a: np.dot(a([1.0, 2.0]), a([1.0, 2.0]), out=a(np.zeros((), dtype=np.float32)))),
        ("concatenate int into float out", lambda a: np.concatenate([a([1, 2]), a([3])], out=a(np.zeros(3)))),
        ("concatenate float into int out", lambda a: np.concatenate([a([1.5]), a([3.0])], out=a(np.zeros(2, dtype=np.int64)))),
        ("argmax into int32 out", lambda a: np.argmax(a([1.0, 3.0]), out=a(np.zeros((), dtype=np.int32)))),
        ("sum wrong shape out", lambda a: np.sum(a([[1.0, 2.0]]), axis=1, out=a(np.zeros(2)))),
    ]
    for label, call in cases:
        try:
            expected = call(np.asarray)
        except Exception as err:  # noqa: BLE001 - NumPy's exception is the expected answer
            with pytest.raises(type(err)):
                call(a)
            continue
        _same(expected, call(a), device, label)
