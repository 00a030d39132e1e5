"""pandas with nda arrays: NumPy's values and dtypes, which objects share memory, masks and isin.

pandas knows two kinds of arrays, NumPy's and its own; it converts any other object that has
``__array__`` with ``np.asarray(x)`` (README "Ecosystem"). So:

* its objects hold NumPy's values and dtypes (checked against the same calls on NumPy data);
* what they hold follows nda's host-copy rule: on cpu, the constructors that take an
  ``np.asarray`` result as their own (``pd.Series(x)``, ``pd.Index(x)``…) share the array's
  memory, where pandas 3 copies a NumPy array; on other devices they hold nda's read-only
  host copy. The README lists them; ``SHARED_ON_CPU`` below is that list, checked;
* a boolean mask or ``isin``'s values must be handed over as NumPy arrays (``x.to_numpy()``):
  pandas takes any other array for a list of labels or elements.

Every check runs on cpu and sim; the suite also runs under ``NDA_ENGINE=naive``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import nda

pd = pytest.importorskip("pandas")

pytestmark = [
    pytest.mark.filterwarnings("ignore::nda.FallbackWarning"),
    pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning"),  # Series(complex, dtype=float64), NumPy's too
]

DEVICES = ["cpu", "sim"]
DTYPES = ["bool", "int8", "uint16", "int64", "float32", "float64", "complex64"]


def _assert_same(got: Any, want: Any) -> None:
    """``got`` (made from nda arrays) is ``want`` (made from NumPy arrays): kind, dtypes, index, values."""
    assert type(got) is type(want)
    if isinstance(want, pd.Series):
        pd.testing.assert_series_equal(got, want, check_exact=True)
    elif isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    elif isinstance(want, pd.Index):
        pd.testing.assert_index_equal(got, want, exact=True)
    else:
        assert isinstance(want, (np.ndarray, pd.api.extensions.ExtensionArray)), type(want)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _compare(call: Callable[..., Any], numpy_args: tuple, device: str) -> None:
    nda_args = tuple(nda.asarray(a, device=device) for a in numpy_args)
    try:
        want = call(*numpy_args)
    except Exception as err:  # noqa: BLE001 - the same exception type is all that is asked
        with pytest.raises(type(err)):
            call(*nda_args)
        return
    _assert_same(call(*nda_args), want)


# ----------------------------------------------------------------------------- values and dtypes

#: name -> a call on a 1-d array ``x`` and a (4, 2) array ``M`` (both NumPy, or both nda).
CONSTRUCTORS: dict[str, Callable[[Any, Any], Any]] = {
    "Series(x)": lambda x, M: pd.Series(x),
    "Series(x, index, name)": lambda x, M: pd.Series(x, index=list("abcd"), name="s"),
    "Series(x, copy=True)": lambda x, M: pd.Series(x, copy=True),
    "Series(x, dtype=float64)": lambda x, M: pd.Series(x, dtype="float64"),
    "Series(v, index=x)": lambda x, M: pd.Series(np.arange(4), index=x),
    "Index(x)": lambda x, M: pd.Index(x),
    "DataFrame(M)": lambda x, M: pd.DataFrame(M, columns=["p", "q"]),
    "DataFrame(M.T)": lambda x, M: pd.DataFrame(M.T),
    "DataFrame({'a': x})": lambda x, M: pd.DataFrame({"a": x, "b": np.arange(4)}),
    "df['c'] = x": lambda x, M: pd.DataFrame({"b": np.arange(4)}).assign(c=x),
    "Series(x).describe()": lambda x, M: pd.Series(x).describe(),
    "Series(x).cumsum()": lambda x, M: pd.Series(x).cumsum(),
    "DataFrame(M).sum()": lambda x, M: pd.DataFrame(M).sum(),
    "Series(x) * x": lambda x, M: pd.Series(x) * x,
    "Series(x) == x": lambda x, M: pd.Series(x) == x,
    "x - Series(x)": lambda x, M: x - pd.Series(x),
    "Series(x).where(x > 1)": lambda x, M: pd.Series(x).where(x > 1) if np.dtype(x.dtype).kind != "c" else pd.Series(x),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_pandas_objects_of_nda_arrays_are_those_of_numpy_arrays(dtype, device):
    x = np.asarray([3, 0, 1, 2]).astype(dtype)
    M = np.asarray([[1, 0], [0, 1], [1, 1], [2, 0]]).astype(dtype)
    for name, make in CONSTRUCTORS.items():
        try:
            _compare(make, (x, M), device)
        except AssertionError as err:
            raise AssertionError(f"{name}, {dtype} on {device}: {err}") from err


# ----------------------------------------------------------------------------- memory

#: name -> (a pandas object made from ``x``, whether it holds a cpu array's memory). pandas
#: copies a NumPy array in Series(...) and Index(...), but takes what np.asarray(x) gives it
#: as its own; the README lists exactly these.
SHARED_ON_CPU: dict[str, tuple[Callable[[Any], Any], bool]] = {
    "Series(x)": (lambda x: pd.Series(x), True),
    "Series(x, dtype=x.dtype)": (lambda x: pd.Series(x, dtype="float64"), True),
    "Series(x, copy=False)": (lambda x: pd.Series(x, copy=False), True),
    "Index(x)": (lambda x: pd.Index(x), True),
    "Series(v, index=x).index": (lambda x: pd.Series(np.zeros(4), index=x).index, True),
    "DataFrame({'a': x}, copy=False)": (lambda x: pd.DataFrame({"a": x}, copy=False), True),
    "Series(x, copy=True)": (lambda x: pd.Series(x, copy=True), False),
    "Index(x, copy=True)": (lambda x: pd.Index(x, copy=True), False),
    "Series(x, dtype=float32)": (lambda x: pd.Series(x, dtype="float32"), False),
    "DataFrame({'a': x})": (lambda x: pd.DataFrame({"a": x}), False),
    "DataFrame(M)": (lambda x: pd.DataFrame(nda.reshape(x, (2, 2))), False),
    "df['a'] = x": (lambda x: pd.DataFrame(index=range(4)).assign(a=x), False),
    "pd.array(x)": (lambda x: pd.Series(pd.array(x)), False),
    "Series(x.to_numpy(copy=True))": (lambda x: pd.Series(x.to_numpy(copy=True)), False),
}


def _values(obj: Any) -> list[float]:
    return np.asarray(obj.to_numpy() if hasattr(obj, "to_numpy") else obj).ravel().tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_which_pandas_objects_share_a_cpu_arrays_memory(device):
    for name, (make, shared_on_cpu) in SHARED_ON_CPU.items():
        x = nda.asarray([1.0, 2.0, 3.0, 4.0], device=device)
        obj = make(x)
        x += 1  # nda's own write, after pandas took the data
        expected = [2.0, 3.0, 4.0, 5.0] if shared_on_cpu and device == "cpu" else [1.0, 2.0, 3.0, 4.0]
        assert _values(obj) == expected, f"{name} on {device}"
        if not isinstance(obj, (pd.Series, pd.DataFrame)):
            continue
        if device == "cpu" or not shared_on_cpu:
            obj.iloc[0] = 9.0  # pandas' own write: into x's memory where they share, else a copy
            assert x.tolist()[0] == (9.0 if shared_on_cpu and device == "cpu" else 2.0), f"{name} on {device}"
        else:  # nda's read-only host copy: a write into it raises; it never vanishes
            with pytest.raises(ValueError, match="read-only"):
                obj.iloc[0] = 9.0
            assert x.tolist() == [2.0, 3.0, 4.0, 5.0]


# ----------------------------------------------------------------------------- masks and isin

#: name -> a call on a bool mask ``m``, values ``v`` and integer positions ``i`` (4, 2 and 2
#: elements) where pandas recognises NumPy arrays only (any other array is a list to it):
#: the README's way to hand nda arrays over is ``x.to_numpy()``, whose answers must be NumPy's.
_S = pd.Series([10.0, 20.0, 30.0, 40.0], index=[5, 6, 7, 8])
_DF = pd.DataFrame({"a": [1.0, 10.0, 3.0, 40.0], "b": [5, 6, 7, 8]})
MASK_CALLS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "s[m]": lambda m, v, i: _S[m],
    "s.loc[m]": lambda m, v, i: _S.loc[m],
    "s.iloc[m]": lambda m, v, i: _S.iloc[m],
    "df[m]": lambda m, v, i: _DF[m],
    "df.loc[m]": lambda m, v, i: _DF.loc[m],
    "df.iloc[m]": lambda m, v, i: _DF.iloc[m],
    "s.where(m)": lambda m, v, i: _S.where(m),
    "s.mask(m)": lambda m, v, i: _S.mask(m),
    "s.isin(v)": lambda m, v, i: _S.isin(v),
    "df.isin(v)": lambda m, v, i: _DF.isin(v),
    "Index.isin(v)": lambda m, v, i: _S.index.isin(v.astype(np.int64)),
    "pd.unique(v)": lambda m, v, i: pd.unique(v),
    "pd.factorize(v)": lambda m, v, i: pd.factorize(v)[0],
    "pd.array(v)": lambda m, v, i: pd.array(v),
    "pd.array(i)": lambda m, v, i: pd.array(i.astype(np.int8)),
    "df + 2-d": lambda m, v, i: _DF + m.reshape(2, 2).repeat(2, axis=0),
    "s.iloc[i]": lambda m, v, i: _S.iloc[i],
    "s.take(i)": lambda m, v, i: _S.take(i),
    "s[m] = 0": lambda m, v, i: (lambda s: (s.__setitem__(m, 0.0), s)[1])(_S.copy()),
    "s.iloc[m] = 0": lambda m, v, i: (lambda s: (s.iloc.__setitem__(m, 0.0), s)[1])(_S.copy()),
}


@pytest.mark.parametrize("device", DEVICES)
def test_masks_and_isin_values_handed_over_with_to_numpy_give_numpys_results(device):
    m, v, i = np.asarray([True, False, True, False]), np.asarray([10.0, 40.0]), np.asarray([2, 0])
    xm, xv, xi = (nda.asarray(a, device=device) for a in (m, v, i))
    for name, call in MASK_CALLS.items():
        want = call(m, v, i)
        for convert in (lambda a: a.to_numpy(), np.asarray):
            try:
                _assert_same(call(convert(xm), convert(xv), convert(xi)), want)
            except AssertionError as err:
                raise AssertionError(f"{name} on {device}: {err}") from err


@pytest.mark.parametrize("device", DEVICES)
def test_pandas_takes_any_other_array_for_a_list_as_the_readme_says(device):
    # The README says what pandas does with an nda array as a mask or as isin's values (it is
    # pandas' rule for every array that is not NumPy's or its own). If this fails, pandas
    # changed: say what it does now there.
    xm = nda.asarray([True, False, True, False], device=device)
    with pytest.raises(KeyError):
        _S[xm]
    assert _S.iloc[xm].index.tolist() == [6, 5, 6, 5]  # positions 1, 0, 1, 0
    with pytest.raises(TypeError, match="requires a Series, Index, ExtensionArray, np.ndarray"):
        pd.unique(nda.asarray([1.0, 1.0], device=device))
    assert pd.array(nda.asarray([1, 2], dtype=nda.int8, device=device)).dtype == "Int64"  # NumPy's int8 gives Int8
    with pytest.raises(ValueError, match="Unable to coerce list"):
        _DF + nda.ones((4, 2), device=device)
    assert _S.isin(nda.asarray([10.0, 40.0], device=device)).tolist() != [True, False, False, True]
