"""NumPy-style docstrings (Parameters, Returns, Examples) of the functions used most.

A catalog declaration's docstring says what the op does and what nda decided; a NumPy user
reading ``help(nda.sum)`` or an editor's hover also looks for the parameter list and an
example. :func:`public_doc` gives the generated function that: the declaration's text, then
a ``Parameters`` section (each parameter with its public annotation, :mod:`nda._signatures`,
and its description here), ``Returns`` and ``Examples``. The examples are doctests:
``tests/test_docstrings.py`` runs every one of them, so they stay true. Ops not listed here
keep their declaration's docstring.

Layer: arrays and front end, generators (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

from ._signatures import function_signature

__all__ = ["DOCUMENTED", "public_doc"]

_X = "The input array."
_DTYPE = 'The result\'s dtype: an nda dtype, a name (``"float32"``), a NumPy dtype or scalar type (``np.int64``). By default {}.'
_DEVICE = 'Where the result lives (``"cpu"``, ``"sim:0"``, a ``Device``); by default the default device.'
_AXIS = "The axis or axes to reduce; all of them when None."
_KEEPDIMS = "Keep the reduced axes, with length 1 (the result then broadcasts against ``x``)."
_SHAPE = "The shape of the result: an int for a 1-D array, or a tuple of ints."
_CORRECTION = "Degrees of freedom removed from the element count (NumPy's ``ddof``): 0 for the population, 1 for the sample."
_DDOF = "NumPy's name of ``correction`` (give one or the other); None: ``correction`` applies."

#: op name -> (parameter descriptions, what it returns, examples as doctest lines)
_DOCS: dict[str, tuple[dict[str, str], str, str]] = {
    "asarray": (
        {
            "obj": "Python scalars or nested sequences, a NumPy array, an nda array, or an object exporting DLPack or a buffer.",
            "dtype": _DTYPE.format("inferred from ``obj``"),
            "device": _DEVICE,
            "copy": "True: always copy; False: never (ValueError if one is needed); None: copy only when needed.",
        },
        "The array.",
        '>>> nda.asarray([[1, 2], [3, 4]])\narray([[1, 2],\n       [3, 4]])\n>>> nda.asarray([1, 2], dtype="float32")\narray([1., 2.], dtype=float32)',
    ),
    "zeros": (
        {"shape": _SHAPE, "dtype": _DTYPE.format("float64"), "device": _DEVICE},
        "An array of zeros.",
        ">>> nda.zeros((2, 3))\narray([[0., 0., 0.],\n       [0., 0., 0.]])",
    ),
    "ones": (
        {"shape": _SHAPE, "dtype": _DTYPE.format("float64"), "device": _DEVICE},
        "An array of ones.",
        ">>> nda.ones(3, dtype=nda.int32)\narray([1, 1, 1], dtype=int32)",
    ),
    "full": (
        {
            "shape": _SHAPE,
            "fill_value": "The value of every element.",
            "dtype": _DTYPE.format("the default dtype of the value's kind"),
            "device": _DEVICE,
        },
        "An array holding ``fill_value`` everywhere.",
        ">>> nda.full((2, 2), 7)\narray([[7, 7],\n       [7, 7]])",
    ),
    "arange": (
        {
            "start": "The first value, or the end when ``stop`` is None (then counting starts at 0).",
            "stop": "The end, not included.",
            "step": "The distance between values (not 0).",
            "dtype": _DTYPE.format("int64 for ints, float64 otherwise"),
            "device": _DEVICE,
        },
        "A 1-D array of evenly spaced values.",
        ">>> nda.arange(5)\narray([0, 1, 2, 3, 4])\n>>> nda.arange(1.0, 2.0, 0.25)\narray([1.  , 1.25, 1.5 , 1.75])",
    ),
    "linspace": (
        {
            "start": "The first sample.",
            "stop": "The last sample (or the end when ``endpoint`` is False).",
            "num": "How many samples.",
            "dtype": _DTYPE.format("float64"),
            "device": _DEVICE,
            "endpoint": "Whether ``stop`` is the last sample.",
        },
        "A 1-D array of ``num`` samples.",
        ">>> nda.linspace(0, 1, 5)\narray([0.  , 0.25, 0.5 , 0.75, 1.  ])",
    ),
    "eye": (
        {
            "n_rows": "Rows.",
            "n_cols": "Columns; ``n_rows`` when None.",
            "k": "The diagonal: 0 the main one, > 0 above, < 0 below.",
            "dtype": _DTYPE.format("float64"),
            "device": _DEVICE,
        },
        "A 2-D array.",
        ">>> nda.eye(3, k=1)\narray([[0., 1., 0.],\n       [0., 0., 1.],\n       [0., 0., 0.]])",
    ),
    "reshape": (
        {
            "x": _X,
            "shape": "The new shape; one dimension may be -1 (inferred).",
            "copy": "True: always copy; False: never (ValueError if needed); None: a view where the memory allows.",
        },
        "``x`` with the new shape (a view where possible).",
        ">>> x = nda.arange(6)\n>>> nda.reshape(x, (2, 3))\narray([[0, 1, 2],\n       [3, 4, 5]])\n>>> x.reshape(3, -1).shape\n(3, 2)",
    ),
    "concat": (
        {"arrays": "The arrays, with equal shapes except along ``axis``.", "axis": "The axis to join along; None flattens them first."},
        "The joined array.",
        ">>> a, b = nda.asarray([[1, 2]]), nda.asarray([[3, 4]])\n>>> nda.concat([a, b])\narray([[1, 2],\n       [3, 4]])\n"
        ">>> nda.concat([a, b], axis=1)\narray([[1, 2, 3, 4]])",
    ),
    "stack": (
        {"arrays": "The arrays, all of one shape.", "axis": "Where the new axis goes in the result."},
        "The stacked array, one dimension more.",
        ">>> a, b = nda.asarray([1, 2]), nda.asarray([3, 4])\n>>> nda.stack([a, b], axis=1)\narray([[1, 3],\n       [2, 4]])",
    ),
    "sum": (
        {"x": _X, "axis": _AXIS, "dtype": _DTYPE.format("x's, widened to int64/uint64 for integers and bools"), "keepdims": _KEEPDIMS},
        "The sums (a 0-d array when every axis is reduced).",
        ">>> x = nda.asarray([[1.0, 2.0], [3.0, 4.0]])\n>>> nda.sum(x)\narray(10.)\n>>> x.sum(axis=0)\narray([4., 6.])",
    ),
    "mean": (
        {"x": _X, "axis": _AXIS, "keepdims": _KEEPDIMS},
        "The means.",
        ">>> x = nda.asarray([[1.0, 2.0], [3.0, 4.0]])\n>>> nda.mean(x, axis=1)\narray([1.5, 3.5])\n>>> float(x.mean())\n2.5",
    ),
    "std": (
        {"x": _X, "axis": _AXIS, "correction": _CORRECTION, "keepdims": _KEEPDIMS, "ddof": _DDOF},
        "The standard deviations.",
        ">>> x = nda.asarray([1.0, 2.0, 3.0, 4.0])\n>>> nda.std(x)\narray(1.11803399)\n>>> x.std(ddof=1)\narray(1.29099445)",
    ),
    "var": (
        {"x": _X, "axis": _AXIS, "correction": _CORRECTION, "keepdims": _KEEPDIMS, "ddof": _DDOF},
        "The variances.",
        ">>> x = nda.asarray([1.0, 2.0, 3.0, 4.0])\n>>> nda.var(x)\narray(1.25)\n>>> nda.var(x, correction=1)\narray(1.66666667)",
    ),
    "max": (
        {"x": _X, "axis": _AXIS, "keepdims": _KEEPDIMS},
        "The maxima.",
        ">>> x = nda.asarray([[1, 5], [7, 2]])\n>>> nda.max(x, axis=0)\narray([7, 5])\n>>> int(x.max())\n7",
    ),
    "min": (
        {"x": _X, "axis": _AXIS, "keepdims": _KEEPDIMS},
        "The minima.",
        ">>> x = nda.asarray([[1, 5], [7, 2]])\n>>> nda.min(x, axis=1)\narray([1, 2])",
    ),
    "argmax": (
        {"x": _X, "axis": "The axis to search; the flattened array when None.", "keepdims": _KEEPDIMS},
        "int64 indices.",
        ">>> x = nda.asarray([[1, 5], [7, 2]])\n>>> nda.argmax(x, axis=1)\narray([1, 0])\n>>> int(nda.argmax(x))\n2",
    ),
    "argmin": (
        {"x": _X, "axis": "The axis to search; the flattened array when None.", "keepdims": _KEEPDIMS},
        "int64 indices.",
        ">>> x = nda.asarray([[1, 5], [7, 2]])\n>>> nda.argmin(x, axis=0)\narray([0, 1])",
    ),
    "sort": (
        {
            "x": _X,
            "axis": "The axis to sort along.",
            "descending": "Largest first (NaNs then come first).",
            "stable": "Keep equal elements in their order; the values are the same either way, at the same speed on cpu.",
        },
        "The sorted copy.",
        ">>> nda.sort(nda.asarray([3.0, float('nan'), 1.0, 2.0]))\narray([ 1.,  2.,  3., nan])\n"
        ">>> nda.sort(nda.asarray([[3, 1], [0, 2]]), axis=0, descending=True)\narray([[3, 2],\n       [0, 1]])",
    ),
    "argsort": (
        {
            "x": _X,
            "axis": "The axis to sort along.",
            "descending": "Largest first.",
            "stable": "Keep equal elements in their order (the default); False may be faster.",
        },
        "int64 indices that sort ``x`` (``nda.take_along_axis(x, i, axis=axis)`` is sorted).",
        ">>> nda.argsort(nda.asarray([30, 10, 20, 10]))\narray([1, 3, 2, 0])",
    ),
    "where": (
        {"condition": "A bool array.", "x1": "Taken where ``condition`` is true (an array or a Python scalar).", "x2": "Taken elsewhere."},
        "The broadcast result, of the promoted dtype of ``x1`` and ``x2``.",
        ">>> x = nda.asarray([-2.0, 0.5, 3.0])\n>>> nda.where(x > 0, x, 0.0)\narray([0. , 0.5, 3. ])",
    ),
    "matmul": (
        {"x1": "The left operand (1-D: a row vector).", "x2": "The right operand (1-D: a column vector)."},
        "The matrix product, broadcast over leading dimensions (also ``x1 @ x2``).",
        ">>> a = nda.asarray([[1.0, 2.0], [3.0, 4.0]])\n>>> nda.matmul(a, nda.asarray([1.0, 1.0]))\narray([3., 7.])\n"
        ">>> a @ a\narray([[ 7., 10.],\n       [15., 22.]])",
    ),
    "exp": (
        {"x": _X},
        "``e ** x``, element-wise (integers compute in float64).",
        ">>> nda.exp(nda.asarray([0.0, 1.0]))\narray([1.        , 2.71828183])",
    ),
    "log": ({"x": _X}, "The natural logarithm, element-wise (NaN below 0, -inf at 0).", ">>> nda.log(nda.asarray([1.0, nda.e]))\narray([0., 1.])"),
    "sqrt": ({"x": _X}, "The square root, element-wise (NaN below 0 for real input).", ">>> nda.sqrt(nda.asarray([4.0, 9.0]))\narray([2., 3.])"),
    "abs": (
        {"x": _X},
        "The absolute values (magnitudes for complex input, in the real dtype).",
        ">>> nda.abs(nda.asarray([-1.5, 2.0]))\narray([1.5, 2. ])\n>>> nda.abs(nda.asarray([3 + 4j]))\narray([5.])",
    ),
    "clip": (
        {"x": _X, "min": "The lower bound (array, scalar, or None for none).", "max": "The upper bound (array, scalar, or None)."},
        "``x`` limited to ``[min, max]``, in ``x``'s dtype.",
        ">>> nda.clip(nda.arange(6), 1, 4)\narray([1, 1, 2, 3, 4, 4])",
    ),
    "cumulative_sum": (
        {
            "x": _X,
            "axis": "The axis to accumulate along (may be None for a 1-D ``x``).",
            "dtype": _DTYPE.format("as for ``sum``"),
            "include_initial": "Start with 0 (the result is one longer along ``axis``).",
        },
        "The running sums.",
        ">>> nda.cumulative_sum(nda.asarray([1, 2, 3]))\narray([1, 3, 6])\n"
        ">>> nda.cumulative_sum(nda.asarray([1, 2, 3]), include_initial=True)\narray([0, 1, 3, 6])",
    ),
    "linalg.inv": (
        {"x": "Square matrices (the last two dimensions), possibly stacked."},
        "Their inverses; a singular matrix raises ``numpy.linalg.LinAlgError`` when the result is read.",
        ">>> nda.linalg.inv(nda.asarray([[2.0, 0.0], [0.0, 4.0]]))\narray([[0.5 , 0.  ],\n       [0.  , 0.25]])",
    ),
    "linalg.eigh": (
        {"x": "Hermitian (real symmetric) matrices, possibly stacked; only their lower triangle is read."},
        "A named tuple ``(eigenvalues, eigenvectors)``: eigenvalues ascending, eigenvectors as columns.",
        ">>> w, v = nda.linalg.eigh(nda.asarray([[2.0, 0.0], [0.0, 1.0]]))\n>>> w\narray([1., 2.])\n"
        ">>> nda.abs(v)\narray([[0., 1.],\n       [1., 0.]])",
    ),
}

#: The ops whose generated function has a NumPy-style docstring.
DOCUMENTED = tuple(_DOCS)


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else "" for line in text.splitlines())


def public_doc(decl: Any) -> str:
    """The docstring of the generated function of ``decl`` (see the module docstring)."""
    entry = _DOCS.get(decl.name)
    if entry is None:
        return decl.doc  # type: ignore[no-any-return]
    params, returns, examples = entry
    signature = function_signature(decl)
    missing = set(signature.parameters) ^ set(params)
    if missing:
        raise RuntimeError(f"nda._docstrings: the parameters of {decl.name} are {list(signature.parameters)}, described: {sorted(params)}")
    lines = [decl.doc.rstrip(), "", "Parameters", "----------"]
    for name, param in signature.parameters.items():
        default = "" if param.default is param.empty else f", default {param.default!r}"
        lines.append(f"{name} : {param.annotation}{default}")
        lines.append(_indent(params[name]))
    lines += ["", "Returns", "-------", signature.return_annotation, _indent(returns), "", "Examples", "--------", examples]
    return "\n".join(lines) + "\n"
