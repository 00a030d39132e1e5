"""What help(), inspect and editors show for nda's generated functions and methods (issue 37).

Before, ``help(x.sum)`` showed ``(*args, **kwargs) -> Any`` and ``help(nda.sum)`` showed the
planner's ``(x: '_ARRAY', ...) -> 'Plan'``. The signatures are now the public ones
(``nda._signatures``), the same as the typed stubs.
"""

from __future__ import annotations

import inspect
import pydoc

import pytest

import nda

FUNCTIONS = [
    nda.sum,
    nda.mean,
    nda.reshape,
    nda.concat,
    nda.zeros,
    nda.asarray,
    nda.linalg.inv,
    nda.fft.fft,
    nda.add,
    nda.sin,
    nda.sort,
    nda.where,
    nda.matmul,
    nda.einsum,
]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_functions_return_ndarray_and_take_ndarrays(fn):
    sig = inspect.signature(fn)
    text = str(sig)
    assert sig.return_annotation == "NDArray", text
    assert "Plan" not in text and "_ARRAY" not in text, text


def test_named_results_and_in_place_ops():
    assert inspect.signature(nda.linalg.eigh).return_annotation == "EighResult"
    assert nda.linalg.eigh(nda.eye(2)).__class__.__name__ == "EighResult"
    assert inspect.signature(nda.nonzero).return_annotation == "tuple[NDArray, ...]"


def test_dtype_parameters_take_numpys_spellings():
    assert inspect.signature(nda.zeros).parameters["dtype"].annotation == "DTypeLike | None"
    assert inspect.signature(nda.astype).parameters["dtype"].annotation == "DTypeLike"
    assert nda.zeros(2, dtype="float32").dtype == nda.float32


@pytest.mark.parametrize("name", ["sum", "mean", "std", "reshape", "transpose", "ravel", "max", "argsort", "sort", "astype", "flatten"])
def test_methods_show_their_arguments(name):
    method = getattr(nda.NDArray, name, None)
    if method is None:
        pytest.skip(f"NDArray.{name} is not there")
    sig = inspect.signature(method)
    text = str(sig)
    assert "**kwargs" not in text and "*args" not in text, text
    # x.sort() sorts in place and returns None, as NumPy's (nda.sort returns the sorted copy)
    assert sig.return_annotation == ("None" if name == "sort" else "NDArray"), text
    bound = inspect.signature(getattr(nda.ones((2, 3)), name))
    assert "self" not in bound.parameters


def test_method_signatures_follow_numpys_forms():
    assert str(inspect.signature(nda.NDArray.sum)).startswith("(self: 'NDArray', /, axis:")
    assert "ddof" in inspect.signature(nda.NDArray.std).parameters
    reshape = inspect.signature(nda.NDArray.reshape).parameters
    assert reshape["shape"].kind is inspect.Parameter.VAR_POSITIONAL
    assert str(inspect.signature(nda.NDArray.__add__)) == "(self: 'NDArray', other: 'NDArray | bool | int | float | complex', /) -> 'NDArray'"


def test_help_text_of_a_method():
    text = pydoc.render_doc(nda.NDArray.sum, renderer=pydoc.plaintext)
    assert "sum(self: 'NDArray', /, axis:" in text and "-> 'NDArray'" in text


@pytest.mark.parametrize(
    "module, helpers",
    [
        ("random", {"Any", "np", "math", "operator", "annotations"}),
        ("testing", {"Any", "importlib", "annotations"}),
        ("linalg", {"annotations"}),
        ("fft", {"annotations"}),
    ],
)
def test_dir_of_a_module_lists_its_public_names(module, helpers):
    import importlib

    mod = importlib.import_module(f"nda.{module}")
    names = set(dir(mod))
    assert not names & helpers, names & helpers
    assert set(mod.__all__) <= names
    assert not [n for n in names if n.startswith("_") and not n.startswith("__")]
    for helper in helpers - {"annotations"}:
        assert hasattr(mod, helper)  # hidden, still importable


def test_dir_of_nda_hides_private_modules():
    names = set(dir(nda))
    assert "annotations" not in names and "_api" not in names and "_namespace" not in names
    assert {"sum", "random", "hybridize", "linalg", "float32", "__version__"} <= names
