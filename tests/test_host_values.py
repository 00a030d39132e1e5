"""Values a planner reads are never answered from a plan memoised for other values (issue 25, item 1).

Some planners read the *value* of an argument that may be a 0-d array (``linspace``'s
``start``, ``roll``'s ``shift``, ``eye``'s ``n_rows``, ``matrix_power``'s ``n``) and bake it
into the kernel's arguments. Before the fix, nda memoised such plans by the arguments'
metadata, so a second call with the same metadata and another value returned the first
call's answer (``linspace(asarray(2.), asarray(4.), 3)`` then
``linspace(asarray(0.), asarray(3.), 3)`` gave ``[2, 3, 4]``).

The property test covers the whole catalog: for every op the conformance kit draws cases
for, every numeric Python scalar of a case is passed as a 0-d array instead; the op is
called twice, with the case and with the same case where those values differ (same
metadata, so a memo keyed by metadata would collide), and both results are compared with
NumPy's: the catalog's reference run on a fresh plan of the same call. A second test checks
that the catalog *declares* (``host_values``) every parameter whose value a planner reads.
Both run on cpu and sim (and the suite runs again under the naive engine in CI).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nda
from nda._array import HOST_READS
from nda.ops import CATALOG
from nda.ops.spec import Cast
from nda.testing.conformance._cases import DEVICE, Arr, Case, Raw
from nda.testing.conformance._generators import GENERATED_OPS, strategy

DEVICES = ["cpu", "sim"]
_NUMBERS = (int, float, complex)


def _numbers(case: Case) -> list[tuple[object, object]]:
    """Where a case has numeric Python scalars: (position or keyword name, value)."""
    found = [(i, a) for i, a in enumerate(case.args) if a.__class__ in _NUMBERS]
    found += [(k, v) for k, v in case.kwargs.items() if v.__class__ in _NUMBERS]
    return found


def _dtype_for(op: str) -> nda.DType:
    dtypes = CATALOG[op].supported_dtypes
    for preferred in (nda.float64, nda.int64, nda.complex128, nda.bool):
        if preferred in dtypes:
            return preferred
    return dtypes[0]


#: Ops whose cases hold numeric scalars somewhere (the others have nothing to check).
_OPS = sorted(op for op in GENERATED_OPS if op in CATALOG and CATALOG[op].family not in ("unary",))


def _materialize(case: Case, device: nda.Device, zero_d: set[object]) -> tuple[list[object], dict[str, object]]:
    made: dict[int, object] = {}

    def conv(value: object, where: object, top: bool) -> object:
        if isinstance(value, Arr):
            if id(value) not in made:
                made[id(value)] = value.on(device)
            return made[id(value)]
        if isinstance(value, Raw):
            return np.array(value.array, copy=True)
        if value is DEVICE:
            return device
        if top and where in zero_d:
            return nda.asarray(value, device=device)  # the 0-d array form of a Python scalar
        if isinstance(value, (tuple, list)):
            return type(value)(conv(v, None, False) for v in value)
        return value

    args = [conv(a, i, True) for i, a in enumerate(case.args)]
    kwargs = {k: conv(v, k, True) for k, v in case.kwargs.items()}
    return args, kwargs


def _reference(op: str, args: list[object], kwargs: dict[str, object]) -> object:
    """NumPy's answer: the catalog's reference on the kernel arguments of a fresh plan."""
    plan = CATALOG[op].plan(*args, **kwargs)

    def host(value: object) -> object:
        if isinstance(value, nda.NDArray):
            return np.array(value.asnumpy(), copy=True)
        if isinstance(value, Cast):
            return np.asarray(host(value.array)).astype(value.dtype.numpy)
        if isinstance(value, (tuple, list)):
            return type(value)(host(v) for v in value)
        if isinstance(value, nda.Device):
            return nda.Device("cpu", 0)
        return value

    host_args = [host(a) for a in plan.args]
    result = CATALOG[op].reference(*host_args, **{k: host(v) for k, v in plan.kwargs.items()})
    if CATALOG[op].mutates:
        return np.asarray(host_args[0])  # the reference wrote into the host copy of the target
    return tuple(np.asarray(r) for r in result) if isinstance(result, tuple) else np.asarray(result)


def _alternatives(value: object) -> list[object]:
    if value.__class__ is int:
        return [value + 1, value - 1, value + 2, 0, 1, 2, value * 2 + 3]
    if value.__class__ is float:
        return [value + 1.5, -value - 0.75, value * 2 + 1.0, 0.5, 3.25]
    return [value + 1.5, complex(value.imag, value.real) + 0.5j, 0.5 - 1j]


def _valid(op: str, case: Case, device: nda.Device, where: set[object]) -> bool:
    try:
        args, kwargs = _materialize(case, device, where)
        CATALOG[op].plan(*args, **kwargs)
        return True
    except Exception:  # noqa: BLE001 - a value the op refuses: not a case
        return False


def _changed(op: str, case: Case, device: nda.Device, where: set[object]) -> Case | None:
    """The case with every value at ``where`` replaced by another value the op accepts."""
    args, kwargs = list(case.args), dict(case.kwargs)
    for position in where:
        current = args[position] if isinstance(position, int) else kwargs[position]
        for candidate in _alternatives(current):
            trial_args, trial_kwargs = list(args), dict(kwargs)
            if isinstance(position, int):
                trial_args[position] = candidate
            else:
                trial_kwargs[position] = candidate
            trial = case.replace(tuple(trial_args), trial_kwargs)
            if candidate != current and _valid(op, trial, device, where):
                args, kwargs = trial_args, trial_kwargs
                break
        else:
            return None
    return case.replace(tuple(args), kwargs)


def _assert_same(got: object, expected: object, op: str) -> None:
    if isinstance(expected, tuple):
        for g, e in zip(got, expected):  # type: ignore[call-overload]
            _assert_same(g, e, op)
        return
    value = got.asnumpy() if isinstance(got, nda.NDArray) else np.asarray(got)
    assert value.shape == expected.shape, f"{op}: shape {value.shape}, NumPy's {expected.shape}"  # type: ignore[union-attr]
    if value.dtype.kind in "fc":
        np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=op)
    else:
        np.testing.assert_array_equal(value, expected, err_msg=op)


def _wait(got: object) -> None:
    for value in got if isinstance(got, tuple) else (got,):
        if isinstance(value, nda.NDArray):
            value.wait_to_read()


def _call(op: str, args: list[object], kwargs: dict[str, object]) -> object:
    fn = nda.ext.function(op) if "." in op and not hasattr(nda, op.split(".")[0]) else _public(op)
    result = fn(*args, **kwargs)
    return args[0] if CATALOG[op].mutates else result


def _public(op: str) -> object:
    namespace, _, short = op.rpartition(".")
    return getattr(getattr(nda, namespace) if namespace else nda, short)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", _OPS)
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_op_called_twice_with_other_values_gives_numpys_answer_both_times(op, device, data):
    """Each numeric argument as a 0-d array, two calls with equal metadata and other values."""
    dev = nda.Device(device, 0)
    case = data.draw(strategy(op, _dtype_for(op)))
    numbers = _numbers(case)
    where = {position for position, _ in numbers}
    if not numbers or not _valid(op, case, dev, where):
        return  # nothing of this case can be a 0-d array (the op's other cases are drawn too)
    other = _changed(op, case, dev, where)
    if other is None:
        return
    for current in (case, other):  # the second call has the first one's metadata and other values
        args, kwargs = _materialize(current, dev, where)
        try:
            got = _call(op, args, kwargs)
            _wait(got)  # a device's data-dependent error (an index out of bounds) raises at the sync point
        except Exception as err:  # noqa: BLE001 - then NumPy's reference must refuse too
            with pytest.raises(type(err)):
                _reference(op, *_materialize(current, dev, where))
            continue
        _assert_same(got, _reference(op, *_materialize(current, dev, where)), f"{op}{current!r} on {device}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", _OPS)
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_parameter_a_planner_reads_on_the_host_is_declared(op, device, data):
    """A planner that reads an argument's value (HOST_READS moves while it plans) declares that
    parameter in ``host_values``: op libraries and readers of the catalog see the rule."""
    dev = nda.Device(device, 0)
    case = data.draw(strategy(op, _dtype_for(op)))
    params = list(CATALOG[op].signature.parameters)
    for position, _ in _numbers(case):
        try:
            args, kwargs = _materialize(case, dev, {position})
        except (OverflowError, TypeError, ValueError):  # no 0-d array holds this value (a 128-bit counter)
            continue
        for a in [*args, *kwargs.values()]:
            if isinstance(a, nda.NDArray):
                a.wait_to_read()
        before = HOST_READS[0]
        try:
            CATALOG[op].plan(*args, **kwargs)
        except Exception:  # noqa: BLE001 - refused: nothing was planned
            continue
        if HOST_READS[0] != before:
            name = params[position] if isinstance(position, int) else position
            assert name in CATALOG[op].host_values, f"{op}() reads the value of {name!r} when planning; declare host_values=({name!r}, ...)"


@pytest.mark.parametrize("device", DEVICES)
def test_the_calls_seen_by_scipy_give_each_calls_answer(device):
    """The examples of the issue, each called twice with the same metadata and other values."""

    def a(v):
        return nda.asarray(v, device=device)

    assert nda.linspace(a(2.0), a(4.0), 3).tolist() == [2.0, 3.0, 4.0]
    assert nda.linspace(a(0.0), a(3.0), 3).tolist() == [0.0, 1.5, 3.0]
    assert nda.arange(a(3)).tolist() == [0, 1, 2] and nda.arange(a(5)).tolist() == [0, 1, 2, 3, 4]
    assert nda.arange(a(1), a(3)).tolist() == [1, 2] and nda.arange(a(2), a(5)).tolist() == [2, 3, 4]
    assert nda.eye(a(2)).shape == (2, 2) and nda.eye(a(3)).shape == (3, 3)
    x = nda.zeros(3, device=device)
    assert nda.full_like(x, a(1.0)).tolist() == [1.0] * 3 and nda.full_like(x, a(7.0)).tolist() == [7.0] * 3
    r = nda.arange(4, device=device)
    assert nda.roll(r, a(1)).tolist() == [3, 0, 1, 2] and nda.roll(r, a(2)).tolist() == [2, 3, 0, 1]
    m = nda.asarray([[1.0, 1.0], [0.0, 1.0]], device=device)
    assert nda.linalg.matrix_power(m, a(2)).tolist() == [[1.0, 2.0], [0.0, 1.0]]
    assert nda.linalg.matrix_power(m, a(3)).tolist() == [[1.0, 3.0], [0.0, 1.0]]
    assert r[a(1)].tolist() == 1 and r[a(3)].tolist() == 3


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_negative_zero_and_nan_scalars_key_their_own_plans(device):
    """Before: NumPy's -0.0 hit the plan memoised for 0.0 (equal and hashing alike): +0.0 filled."""
    x = nda.zeros(3, device=device)
    nda.full_like(x, np.float64(0.0))
    assert np.signbit(nda.full_like(x, np.float64(-0.0)).asnumpy()).all()
    c = nda.asarray([1.0, -1.0], device=device)
    nda.where(c > 0, c, np.float64(0.0))
    assert np.signbit(nda.where(c > 0, c, np.float64(-0.0)).asnumpy()[1])
    z = nda.zeros(2, device=device)
    nda.full_like(z, np.complex128(0j), dtype=nda.complex128)
    filled = nda.full_like(z, np.complex128(complex(-0.0, -0.0)), dtype=nda.complex128).asnumpy()
    assert np.signbit(filled.real).all() and np.signbit(filled.imag).all()
    assert np.isnan(nda.full_like(x, np.float32("nan")).asnumpy()).all()
