"""``einsum``: Einstein summation with NumPy's rules, its parser and its vector-Jacobian product.

The catalog op takes the operands as one sequence, ``einsum(subscripts, operands, /, *,
optimize=False)`` (like ``concat``'s arrays); ``nda.einsum(subscripts, *operands,
optimize=False)`` is NumPy's calling convention over it (``nda._composite``), also with
NumPy's interleaved form ``einsum(x, [0, 1], y, [1, 2])``.

The subscripts follow ``numpy.einsum``: letters label axes, ``...`` stands for broadcast
axes (right-aligned, as in broadcasting), ``->`` gives the output explicitly; without it
the output is ``...`` followed by the labels that appear once, in alphabetical order. A
label's axes must have one size, except that a size 1 broadcasts. Repeated labels in one
operand take a diagonal; a label absent from the output is summed. The planner validates
all of it at the call (ValueError naming the operand and label, as NumPy does) and hands
the kernel the explicit form (``"ij,jk->ik"``), so every backend computes the same thing.
The dtype is nda's ``result_type`` of the operands (numeric dtypes), as for ``matmul``.

``optimize`` is NumPy's: False, True (``"greedy"``), ``"greedy"``, ``"optimal"``, or an
explicit path ``["einsum_path", (0, 1), ...]``. It picks the order of pairwise
contractions, so it may change rounding, never the result's meaning.

The VJP of operand ``k`` is itself one einsum: the cotangent (labelled by the output) with
the conjugates of the other operands, a ones array over the labels only operand ``k`` has
(they were summed, so the gradient is constant along them) and an identity matrix per
repeated label (a diagonal's gradient lies on the diagonal), contracted to operand ``k``'s
labels. An axis of size 1 that broadcast against a larger one gets a label of its own, so
its gradient is the sum over the broadcast.

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _dtypes
from .spec import Cast, Plan, check_array, declare, same_device
from ._vjp import conj

__all__ = ["Parsed", "parse", "check_optimize"]

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # string.ascii_letters: the labels NumPy accepts, in its order (a-z, A-Z)


class Parsed:
    """A validated einsum: per operand its labels (ints; ellipsis axes get their own), the
    output's labels, each label's size, and the explicit subscripts for kernels."""

    __slots__ = ("inputs", "output", "sizes", "explicit")

    def __init__(self, inputs: list[list[int]], output: list[int], sizes: dict[int, int], explicit: str) -> None:
        self.inputs = inputs
        self.output = output
        self.sizes = sizes
        self.explicit = explicit


def _split_term(term: str, where: str) -> tuple[list[str], bool]:
    """A term's letters (with ``"."`` marking the ellipsis's place once) and whether it has one."""
    if term.count("...") > 1 or (term.count(".") != 3 * term.count("...")):
        raise ValueError(f"einsum(): {where} has a '.' that is not part of one ellipsis ('...')")
    letters: list[str] = []
    rest = term.replace("...", ".")
    for ch in rest:
        if ch != "." and ch not in _LETTERS:
            raise ValueError(f"einsum(): invalid subscript {ch!r} in {where}; subscripts are letters a-z and A-Z")
        letters.append(ch)
    return letters, "..." in term


def parse(subscripts: str, shapes: Sequence[tuple[int, ...]]) -> Parsed:
    """Validate ``subscripts`` for operands of ``shapes`` (see the module docstring)."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum(): subscripts must be a str, got {type(subscripts).__name__}")
    text = subscripts.replace(" ", "")
    if text.count("->") > 1 or ("-" in text.replace("->", "")) or (">" in text.replace("->", "")):
        raise ValueError(f"einsum(): subscripts {subscripts!r} may contain '->' once, and '-' or '>' only as part of it")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum(): the subscripts {subscripts!r} name {len(terms)} operand(s), but {len(shapes)} were given")
    parsed_terms = [_split_term(t, f"operand {i}'s subscripts") for i, t in enumerate(terms)]
    # ellipsis axes: as many as the operand has beyond its letters; right-aligned across operands
    ell_dims = []
    for i, ((letters, has_ell), shape) in enumerate(zip(parsed_terms, shapes)):
        named = len([c for c in letters if c != "."])
        if named > len(shape):
            raise ValueError(f"einsum(): operand {i} has {len(shape)} dimension(s) but its subscripts {terms[i]!r} name {named}")
        if named < len(shape) and not has_ell:
            raise ValueError(
                f"einsum(): operand {i} has {len(shape)} dimensions but its subscripts {terms[i]!r} name {named}, and no '...' takes the rest"
            )
        ell_dims.append(len(shape) - named)
    n_ell = max(ell_dims, default=0)
    ell_labels = list(range(len(_LETTERS), len(_LETTERS) + n_ell))  # ints past the letters
    sizes: dict[int, int] = {}
    inputs: list[list[int]] = []
    for i, ((letters, _), shape) in enumerate(zip(parsed_terms, shapes)):
        labels: list[int] = []
        axis = 0
        for ch in letters:
            if ch == ".":
                k = ell_dims[i]
                labels += ell_labels[n_ell - k :]
                axis += k
            else:
                labels.append(_LETTERS.index(ch))
                axis += 1
        for label, n in zip(labels, shape):
            _merge(sizes, label, n, i, subscripts)
        inputs.append(labels)
    if arrow:
        out_letters, out_ell = _split_term(rhs, "the output's subscripts")
        output: list[int] = []
        seen_in = {lab for labels in inputs for lab in labels}
        for ch in out_letters:
            if ch == ".":
                output += ell_labels
                continue
            label = _LETTERS.index(ch)
            if label in output:
                raise ValueError(f"einsum(): the output subscript {ch!r} appears more than once")
            if label not in seen_in:
                raise ValueError(f"einsum(): the output subscript {ch!r} appears in no operand")
            output.append(label)
        if n_ell and not out_ell:
            raise ValueError(f"einsum(): the operands have axes under '...' but the output {rhs!r} has no '...' to put them")
    else:
        counts: dict[int, int] = {}
        for labels in inputs:
            for lab in labels:
                if lab < len(_LETTERS):
                    counts[lab] = counts.get(lab, 0) + 1
        output = ell_labels + sorted((lab for lab, c in counts.items() if c == 1), key=lambda lab: _LETTERS[lab])
    explicit = ",".join(_text(labels, ell_labels) for labels in inputs) + "->" + _text(output, ell_labels)
    return Parsed(inputs, output, sizes, explicit)


def _merge(sizes: dict[int, int], label: int, n: int, operand: int, subscripts: str) -> None:
    known = sizes.get(label)
    if known is None or known == 1:
        sizes[label] = n
    elif n != 1 and n != known:
        name = _LETTERS[label] if label < len(_LETTERS) else "..."
        raise ValueError(
            f"einsum(): label {name!r} has size {known} but operand {operand} has size {n} there ({subscripts!r}); sizes must match or be 1"
        )


def _text(labels: list[int], ell_labels: list[int]) -> str:
    """Labels back to subscripts: ellipsis axes as '...' (they are contiguous by construction)."""
    out, put = [], False
    for lab in labels:
        if lab >= len(_LETTERS):
            if not put:
                out.append("...")
                put = True
        else:
            out.append(_LETTERS[lab])
    return "".join(out)


def check_optimize(optimize: Any) -> Any:
    """NumPy's ``optimize`` values (a path list becomes a tuple, so that plans can be memoised)."""
    if isinstance(optimize, (bool, np.bool_)) or optimize in ("greedy", "optimal"):
        return bool(optimize) if isinstance(optimize, np.bool_) else optimize
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        try:
            return ("einsum_path", *(tuple(int(i) for i in step) for step in optimize[1:]))
        except (TypeError, ValueError):
            pass
    raise TypeError(f"einsum(): optimize must be False, True, 'greedy', 'optimal' or ['einsum_path', (i, j), ...], got {optimize!r}")


# --------------------------------------------------------------------------- the op


def _ref_einsum(subscripts: str, operands: list[np.ndarray], optimize: Any = False) -> np.ndarray:
    path = list(optimize) if isinstance(optimize, tuple) else optimize
    result = np.asarray(np.einsum(subscripts, *operands, optimize=path))
    if any(np.may_share_memory(result, a) for a in operands):
        result = result.copy()  # NumPy returns views for 'ij->ji' or 'ii->i'; einsum is not a view op
    return result


def _vjp_einsum(nd: Any, need: Any, g: Any, y: Any, subscripts: str, operands: Sequence[Any], /, *, optimize: Any = False) -> tuple[Any, ...]:
    parsed = parse(subscripts, [a.shape for a in operands])
    path = "greedy" if isinstance(optimize, (list, tuple)) else optimize
    grads = [_operand_gradient(nd, parsed, g, operands, k, path) for k in range(len(operands))]
    return (None, grads)


def _operand_gradient(nd: Any, parsed: Parsed, g: Any, operands: Sequence[Any], k: int, optimize: Any) -> Any:
    """d(sum(g * einsum(...)))/d(operand k), as one einsum (module docstring)."""
    fresh = iter(range(10_000, 20_000))  # labels of our own: private broadcast axes, renamed repeats
    shapes = [a.shape for a in operands]
    # axes of size 1 that broadcast against a larger size get a label of their own
    labels = [[lab if n == parsed.sizes[lab] else next(fresh) for lab, n in zip(lbls, shape)] for lbls, shape in zip(parsed.inputs, shapes)]
    sizes = dict(parsed.sizes)
    for lbls, shape in zip(labels, shapes):
        for lab, n in zip(lbls, shape):
            sizes.setdefault(lab, n)
    mine = labels[k]
    elsewhere = set(parsed.output).union(*(set(l) for j, l in enumerate(labels) if j != k))
    terms: list[list[int]] = [list(parsed.output)]
    arrays: list[Any] = [g]
    for j, a in enumerate(operands):
        if j != k:
            terms.append(labels[j])
            arrays.append(conj(nd, a))
    dtype, device = g.dtype, g.device
    own = [lab for lab in dict.fromkeys(mine) if lab not in elsewhere]
    if own:
        terms.append(own)
        arrays.append(nd.ones(tuple(sizes[lab] for lab in own), dtype=dtype, device=device))
    out: list[int] = []
    seen: set[int] = set()
    for lab in mine:
        if lab in seen:  # a repeat: its own label, tied to the first by an identity matrix
            twin = next(fresh)
            terms.append([lab, twin])
            arrays.append(_identity(nd, sizes[lab], dtype, device))
            out.append(twin)
        else:
            seen.add(lab)
            out.append(lab)
    letters = _letters([*terms, out])
    spec = ",".join("".join(letters[lab] for lab in t) for t in terms) + "->" + "".join(letters[lab] for lab in out)
    return nd.einsum(spec, *arrays, optimize=optimize)


def _identity(nd: Any, n: int, dtype: Any, device: Any) -> Any:
    """The ``n x n`` identity from ops every backend has natively (``eye`` is not one of them everywhere)."""
    r = nd.arange(n, device=device)
    return nd.astype(nd.equal(nd.reshape(r, (n, 1)), r), dtype)


def _letters(terms: list[list[int]]) -> dict[int, str]:
    used = list(dict.fromkeys(lab for t in terms for lab in t))
    if len(used) > len(_LETTERS):
        raise NotImplementedError(f"einsum()'s gradient needs {len(used)} labels; einsum has {len(_LETTERS)}")
    return {lab: _LETTERS[i] for i, lab in enumerate(used)}


@declare("einsum", dtypes="numeric", reference=_ref_einsum, vjp=_vjp_einsum)
def einsum(subscripts: str, operands: tuple[Any, ...] | list[Any], /, *, optimize: bool | str | list[Any] = False) -> Plan:
    """Einstein summation over ``operands`` (NumPy's subscripts and ``optimize``; see ``nda.einsum``).

    The catalog form takes the operands as one sequence; ``nda.einsum(subscripts, *operands)``
    is NumPy's calling convention. Dtypes are promoted with ``nda.result_type``.
    """
    if not isinstance(operands, (list, tuple)) or not operands:
        raise TypeError("einsum() needs at least one operand")
    arrays = [check_array(a, "einsum", f"operands[{i}]") for i, a in enumerate(operands)]
    device = same_device("einsum", arrays)
    dtype = _dtypes.result_type(*arrays)
    if dtype.category == "bool":
        raise TypeError("einsum() does not support bool operands; numeric dtypes are allowed (cast with astype)")
    parsed = parse(subscripts, [a.shape for a in arrays])
    opt = check_optimize(optimize)
    out_shape = tuple(parsed.sizes[lab] for lab in parsed.output)
    args = [a if a.dtype is dtype else Cast(a, dtype) for a in arrays]
    return Plan(device, dtype, dtype, out_shape, (parsed.explicit, args), {"optimize": opt}, reads=arrays)
