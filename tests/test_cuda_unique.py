"""nda-cuda's ``unique_*`` kernels (``nda_cuda._unique``) over the model of ``cupy.unique``, without a GPU.

The four ``unique_*`` ops ran through nda-cuda's host fallback until issue 35. Here: the model
(``tests/_cupy_unique.py``) keeps CuPy 14.2's conventions (radix order with negative NaNs first,
``intp`` indices, named tuples of its own, ``-ftz`` comparisons); nda over the mirror with
``nda.config.fallback = "error"`` gives cpu's results; the kit passes every cell natively, with its
rule for the indices of NaN elements in ``unique_inverse`` (``nda.testing.conformance``).
"""

from __future__ import annotations

import numpy as np
import pytest

import nda
from nda.testing import conformance

pytest.importorskip("scipy")
from _cupy_quirks import DeviceArray, cupy_model  # noqa: E402
from nda_cuda import _unique  # noqa: E402

D = "cudamirror"
with np.errstate(invalid="ignore"):
    NEG_NAN = np.float64(0.0) * np.float64(np.inf)  # x86's default NaN: sign bit set
SUB32 = float(np.finfo(np.float32).smallest_subnormal)


@pytest.fixture(scope="module")
def mirror():
    if not nda.backends.serves(D):
        nda.backends.load("_cuda_numpy_mirror:backend")
    import _cuda_numpy_mirror

    return _cuda_numpy_mirror.backend


@pytest.fixture
def native_only():
    previous = nda.config.fallback
    nda.config.fallback = "error"
    yield
    nda.config.fallback = previous


def test_the_model_of_cupy_unique_keeps_cupys_conventions():
    assert np.signbit(NEG_NAN)
    x = DeviceArray(np.array([[3.0, 1.0, NEG_NAN], [1.0, -np.inf, np.nan]]))
    values, index, inverse, counts = result = cupy_model.unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    assert result.__class__ is tuple
    assert np.isnan(values.get()[0]) and values.get()[1] == -np.inf  # radix order: the negative NaN first (NumPy: last)
    assert (index.dtype, inverse.dtype, counts.dtype, inverse.shape) == (np.intp, np.intp, np.intp, (2, 3))
    assert counts.get().tolist() == [1, 1, 2, 1, 1]
    assert cupy_model.unique(x).size == 4  # equal_nan=True by default: one NaN
    named = cupy_model.unique_all(x)
    assert type(named).__name__ == "UniqueAllResult" and type(named).__module__ == "_cupy_unique"
    assert cupy_model.unique_values(DeviceArray(np.array([SUB32, 0.0], np.float32))).size == 1  # -ftz=true's !=
    with pytest.raises(TypeError, match="Unsupported type"):
        cupy_model.unique(np.zeros(3))


def test_unique_ops_have_native_kernels_on_the_mirror(mirror):
    from nda_cuda._kernels import HOST_FALLBACK

    assert HOST_FALLBACK == {}
    assert not set(_unique.OPS) & set(mirror.unmapped)
    assert {mirror.sources[op] for op in _unique.OPS} == {f"nda_cuda override {op}" for op in _unique.OPS}


def _complex_with_nans():
    return np.array([1 + 1j, complex(np.nan, 1), 1 + 1j, complex(0, np.nan), -2j, complex(np.nan, np.nan)], np.complex128)


HOSTS = [
    np.array([[3.0, 1.0, NEG_NAN], [1.0, -np.inf, NEG_NAN]]),
    np.array([0.0, -0.0, 2.5, -0.0, np.nan, 2.5], np.float64),
    np.array([SUB32, 0.0, -SUB32, 1.0], np.float32),  # flushed (declared): one zero
    np.array([complex(SUB32, 1), 1j, 2.0], np.complex64),
    _complex_with_nans(),
    np.array([[True, False], [True, True]]),
    np.array([[5, -3], [5, 127]], np.int8),
    np.array([2**64 - 1, 0, 2**64 - 1], np.uint64),
    np.zeros((0, 3), np.float32),
    np.array(7.5),
]


@pytest.mark.parametrize("host", HOSTS, ids=[f"{h.dtype}-{h.shape}" for h in HOSTS])
@pytest.mark.parametrize("op", _unique.OPS)
def test_unique_ops_give_cpus_results_on_nda_cudas_kernels(mirror, native_only, op, host):
    fn = getattr(nda, op)
    flushed = host.dtype in (np.float32, np.complex64)
    reference = host
    if flushed:  # the backend declares float32/complex64 flushing: cpu's result on the flushed input
        parts = host.view(np.float32)
        reference = np.where(np.abs(parts) < np.finfo(np.float32).smallest_normal, parts * 0, parts).view(host.dtype)
    got, want = fn(nda.asarray(host, device=D)), fn(nda.asarray(reference))
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    got, want = [g.asnumpy() for g in got], [w.asnumpy() for w in want]
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    np.testing.assert_array_equal(got[0], want[0])  # values: sorted, every NaN last and distinct
    if op == "unique_inverse":  # which NaN value a NaN element names is the sort's choice (NumPy's is unstable)
        np.testing.assert_array_equal(got[0][got[1]], reference)
        nan = np.isnan(host)
        np.testing.assert_array_equal(got[1][~nan], want[1][~nan])
        assert sorted(got[1][nan].tolist()) == sorted(want[1][nan].tolist())
    else:
        for g, w in zip(got[1:], want[1:]):
            np.testing.assert_array_equal(g, w)


def test_the_kits_rule_for_the_indices_of_nan_elements():
    from nda.testing.conformance._cases import Arr, Case
    from nda.testing.conformance._tolerances import undetermined_signs

    x = np.full((2, 3, 3), np.nan)
    x[0, 0, 0] = 1.0
    case = Case("unique_inverse", (Arr(x),))
    expected = np.unique_inverse(x).inverse_indices
    stable = np.empty(x.size, np.int64)
    stable[np.argsort(x.reshape(-1), kind="stable")] = np.arange(x.size)
    stable = stable.reshape(x.shape)
    assert not np.array_equal(stable, expected)  # NumPy's unstable sort
    np.testing.assert_array_equal(undetermined_signs(case, stable, expected), expected)
    wrong = stable.copy()
    wrong[0, 0, 1] = wrong[0, 0, 2]  # two NaN elements naming one NaN value: not one-to-one
    assert not np.array_equal(undetermined_signs(case, wrong, expected), expected)
    moved = stable.copy()
    moved[0, 0, 0], moved[0, 0, 1] = moved[0, 0, 1], moved[0, 0, 0]  # the number 1.0 naming a NaN: wrong
    assert not np.array_equal(undetermined_signs(case, moved, expected), expected)


def test_the_kit_passes_every_unique_cell_natively_on_the_mirror(mirror):
    report = conformance.run(D, reference="cpu", ops=list(_unique.OPS))
    counts = report.counts()
    assert report.ok, report.table()
    assert counts.get("fallback", 0) == 0 and counts["passed"] == 13 * len(_unique.OPS), counts
