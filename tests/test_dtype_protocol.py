"""An nda dtype is NumPy's dtype of the same name to NumPy-minded code (issue 38, item 5).

Libraries written for NumPy (xarray, Dask, pandas) read a dtype through NumPy's interface:
``isinstance(dtype, np.dtype)``, ``dtype.kind in "uifc"``, ``dtype.char``, ``np.isdtype``,
``np.issubdtype``, ``dtype == np.floating``. Each answer here is compared with NumPy's own
answer for ``np.dtype(name)``. The Array API category that ``kind`` used to hold is
``category``; comparing ``kind`` with a category name still answers, with a
DeprecationWarning, so that a plugin written for the old meaning is not silently wrong.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import nda
from _helpers import ALL_DTYPES

_IDS = {"ids": lambda d: d.name}
CATEGORY = {"b": "bool", "i": "signed integer", "u": "unsigned integer", "f": "real floating", "c": "complex floating"}

#: NumPy's dtype attributes that describe a dtype (not methods), as NumPy 2 names them.
ATTRIBUTES = (
    "alignment",
    "byteorder",
    "char",
    "descr",
    "fields",
    "flags",
    "hasobject",
    "isalignedstruct",
    "isbuiltin",
    "isnative",
    "itemsize",
    "kind",
    "metadata",
    "name",
    "names",
    "ndim",
    "num",
    "shape",
    "str",
    "subdtype",
    "type",
)

#: What NumPy-minded code compares a dtype with: NumPy's abstract types (which NumPy 2 refuses
#: to convert), concrete types, Python types, NumPy's spellings, and things that are no dtype.
OTHERS = (
    np.generic,
    np.number,
    np.integer,
    np.signedinteger,
    np.unsignedinteger,
    np.inexact,
    np.floating,
    np.complexfloating,
    np.bool_,
    np.float64,
    np.float32,
    np.int64,
    np.int8,
    np.uint8,
    np.complex64,
    np.complex128,
    bool,
    int,
    float,
    complex,
    object,
    str,
    bytes,
    np.str_,
    np.datetime64,
    "float64",
    "f8",
    "<f8",
    "d",
    "float",
    "double",
    "int",
    "int64",
    "i8",
    "bool",
    "?",
    "b",
    "u1",
    "c16",
    "complex64",
    "O",
    "U",
    "nonsense",
    b"f8",
    1,
    1.0,
    object(),
    [("a", "f8")],
)


@pytest.mark.parametrize("dtype", ALL_DTYPES, **_IDS)
def test_dtype_attributes_are_numpys(dtype):
    np_dt = np.dtype(dtype.name)
    for attr in ATTRIBUTES:
        assert getattr(dtype, attr) == getattr(np_dt, attr), attr
    assert dtype.kind in "biufc" and dtype.kind == np_dt.kind and hash(dtype.kind) == hash(np_dt.kind)
    assert dtype.base is dtype and dtype.type is np_dt.type
    assert dtype.category == CATEGORY[np_dt.kind] and nda.isdtype(dtype, dtype.category)
    assert dtype.newbyteorder() == np_dt.newbyteorder()
    assert bool(dtype)  # not NumPy's len(dtype) == 0: `dtype or default` keeps the dtype


@pytest.mark.parametrize("dtype", ALL_DTYPES, **_IDS)
def test_dtype_is_a_numpy_dtype_to_isinstance(dtype):
    np_dt = np.dtype(dtype.name)
    assert isinstance(dtype, np.dtype) and isinstance(dtype, type(np_dt))
    assert type(dtype) is nda.DType and isinstance(dtype, nda.DType)
    assert not isinstance(np_dt, nda.DType)
    assert not isinstance(dtype, type(np.dtype("float16")))


@pytest.mark.parametrize("dtype", ALL_DTYPES, **_IDS)
def test_dtype_equality_is_numpys(dtype):
    """``nda.float64 == np.floating`` used to raise TypeError (NumPy 2 refuses to convert it)."""
    np_dt = np.dtype(dtype.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # NumPy's own, for some spellings
        for other in OTHERS:
            want = bool(np_dt == other)
            assert (dtype == other) is want, other
            assert (dtype != other) is (not want), other
            assert (other == dtype) is want, other
    assert dtype != None  # noqa: E711 - NumPy says np.dtype("float64") == None; nda's default float depends on the device
    for other in ALL_DTYPES:
        assert (dtype == other) is (dtype is other) and (dtype == np.dtype(other.name)) is (dtype is other)


@pytest.mark.parametrize("dtype", ALL_DTYPES, **_IDS)
def test_numpy_functions_read_nda_dtypes_as_numpys(dtype):
    np_dt = np.dtype(dtype.name)
    for kind in ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric"):
        assert np.isdtype(dtype, kind) is np.isdtype(np_dt, kind), kind
        assert np.isdtype(np_dt, dtype) and np.isdtype(dtype, np_dt)
    for abstract in (np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger, np.inexact, np.floating, np.complexfloating, np.bool_):
        assert np.issubdtype(dtype, abstract) is np.issubdtype(np_dt, abstract), abstract
    assert np.issubdtype(dtype, np_dt) and np.issubdtype(np_dt, dtype)
    assert np.dtype(dtype) == np_dt and np.empty(1, dtype=dtype).dtype == np_dt
    assert np.result_type(dtype, np.float32) == np.result_type(np_dt, np.float32)
    if dtype.kind in "fciu":
        info, want = (np.finfo(dtype), np.finfo(np_dt)) if dtype.kind in "fc" else (np.iinfo(dtype), np.iinfo(np_dt))
        assert (info.min, info.max, info.bits, info.dtype) == (want.min, want.max, want.bits, want.dtype)


def test_isdtype_and_comparisons_in_a_fresh_process():
    """The issue's probes as a user runs them: no pytest, no warnings filter of its own."""
    code = (
        "import numpy as np, nda\n"
        "assert np.isdtype(nda.float64, 'real floating') and not np.isdtype(nda.int8, 'real floating')\n"
        "assert (nda.float64 == np.floating) is False and (nda.int64 == np.integer) is False\n"
        "assert (nda.float64 == np.generic) is False and nda.float64 == np.float64\n"
        "assert np.issubdtype(nda.float32, np.floating) and isinstance(nda.float32, np.dtype)\n"
        "assert nda.float64.kind in 'uifc' and nda.bool.kind == 'b' and nda.float64.category == 'real floating'\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("dtype", ALL_DTYPES, **_IDS)
def test_interning_and_identity_hashing_stay(dtype):
    # Dispatch keys hash dtypes by identity (C speed); equal NumPy objects hash differently.
    assert hash(dtype) == object.__hash__(dtype)
    assert pickle.loads(pickle.dumps(dtype)) is dtype and copy.copy(dtype) is dtype and copy.deepcopy(dtype) is dtype
    assert nda.asarray([0], dtype=np.dtype(dtype.name)).dtype is dtype
    assert nda.asarray([0], dtype=dtype.name).dtype is dtype
    with pytest.raises(AttributeError, match="immutable"):
        dtype.kind = "f"


@pytest.mark.parametrize("dtype", ALL_DTYPES, **_IDS)
def test_kind_compared_with_a_category_name_still_answers_with_a_deprecation_warning(dtype):
    """A plugin written when ``kind`` was the category name keeps its answers, and is told."""
    others = sorted(set(CATEGORY.values()) - {dtype.category})
    with pytest.warns(DeprecationWarning, match="DType.category"):
        assert dtype.kind == dtype.category
    with pytest.warns(DeprecationWarning, match="DType.category"):
        assert not dtype.kind != dtype.category
    with pytest.warns(DeprecationWarning, match="DType.category"):
        assert dtype.kind in (dtype.category, "nothing")
    with pytest.warns(DeprecationWarning):
        assert dtype.kind not in others
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's one-letter comparisons do not warn
        assert dtype.kind == np.dtype(dtype.name).kind and dtype.kind in "biufc" and dtype.kind != "O"
        assert {dtype.kind: 1}[np.dtype(dtype.name).kind] == 1 and str(dtype.kind) == repr(dtype.kind)[1:-1]


def test_result_type_of_scalars_alone_is_a_type_error():
    # xarray asks the namespace for the result type of each argument alone and skips the
    # ones that raise TypeError; nda has no dtype for a lone Python scalar (the default
    # dtype depends on the device). No argument at all stays NumPy's ValueError.
    with pytest.raises(TypeError, match="at least one array or dtype"):
        nda.result_type(1.0)
    with pytest.raises(TypeError, match="at least one array or dtype"):
        nda.result_type(1, True)
    with pytest.raises(ValueError, match="at least one array or dtype"):
        nda.result_type()
    assert nda.result_type(nda.int8, 1.0) is nda.float64 and nda.result_type(nda.float32, 1.0) is nda.float32
