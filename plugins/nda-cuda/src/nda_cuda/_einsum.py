"""``einsum`` on the GPU: ``cupy.einsum`` in the catalog's kernel convention.

The catalog op takes its operands as one sequence (``einsum(subscripts, operands,
optimize=)``, the subscripts already in NumPy's explicit form), which the by-name derivation
of :mod:`nda_cuda._kernels` cannot map onto ``cupy.einsum(subscripts, *operands)``; this
module adapts it. CuPy's ``optimize`` takes False, True, ``"greedy"`` and ``"optimal"``: an
explicit ``einsum_path`` becomes ``"greedy"`` (the order of pairwise contractions changes
rounding, never the result's meaning). A result that shares memory with an operand (CuPy,
like NumPy, returns views for ``"ij->ji"``) is copied: einsum is not a view op.

**Complex operands, ``optimize=False``.** NumPy's ``einsum`` without ``optimize`` sums complex
products in its own loops; CuPy contracts through cuBLAS's ``gemm``, which multiplies each
accumulated sum by ``alpha = 1 + 0j`` as a complex number: an infinite part makes the other
part NaN (the H200: ``einsum("ij,jk->ik")`` of ``1.797e308-1j`` by ``1j`` gave ``nan+infj``,
NumPy ``3+infj``). :func:`complex_as_real` computes such an einsum as one real einsum over
the parts: the first operand as the vector ``(re, im)`` on a new axis, every other one as the
real 2x2 matrix of multiplication by it, ``[[re, im], [-im, re]]``, chained by new labels.
Every term of the sum is then a product of parts, as in NumPy's loop, and real ``gemm``'s
``alpha = 1`` cannot make a NaN. Without ``optimize`` the pairwise contractions go from the left
(:func:`left_to_right`), as NumPy multiplies each term's factors. It costs the real einsum of the same number of operations
plus copies of the parts (twice, resp. four times, an operand's real size). With ``optimize``
NumPy contracts pairwise through BLAS itself (``tensordot``), as CuPy does: those calls stay
CuPy's.

Layer: nda-cuda (a plugin; nda's public modules only).
"""

from __future__ import annotations

import string
from typing import Any, Callable

from nda.ops import CATALOG

__all__ = ["OPS", "kernel", "register", "complex_as_real"]

#: The catalog ops this module gives kernels.
OPS = ("einsum",)


def complex_as_real(xp: Any, subscripts: str, operands: list[Any]) -> Any:
    """The einsum of complex ``operands`` (explicit ``subscripts``) as one real einsum over their parts
    (see the module docstring); None when there are not enough free labels for the parts' axes."""
    from ._workarounds import _complex

    inputs, _, output = subscripts.partition("->")
    terms = inputs.split(",")
    free = [c for c in string.ascii_letters if c not in subscripts]
    if len(free) < len(operands):
        return None
    first = operands[0]
    parts = [xp.stack([first.real, first.imag], axis=-1)]
    spec = [terms[0] + free[0]]
    for i, x in enumerate(operands[1:], start=1):
        re, im = x.real, x.imag
        parts.append(xp.stack([xp.stack([re, im], axis=-1), xp.stack([-im, re], axis=-1)], axis=-2))
        spec.append(terms[i] + free[i - 1] + free[i])
    real = xp.einsum(",".join(spec) + "->" + output + free[len(operands) - 1], *parts, optimize=left_to_right(len(operands)))
    return _complex(xp, real[..., 0], real[..., 1], first.dtype)


def left_to_right(n: int) -> list[Any]:
    """The pairwise path ``((x0 x1) x2) ...`` in CuPy's form: NumPy's ``optimize=False`` multiplies each
    term's factors from the left; CuPy's contracts the last two operands first, which overflows (and
    then makes ``0 * inf`` NaN) where NumPy's products do not (``0j * 2.7e11j * 6.8e296j``)."""
    return ["einsum_path", *[(0, 1)] * (n - 1)]


def kernel(xp: Any) -> Callable[..., Any]:
    """The einsum kernel over array module ``xp`` (CuPy; NumPy in the tests)."""

    def einsum(subscripts: str, operands: list[Any], optimize: Any = False) -> Any:
        if optimize is False and len(operands) > 1 and operands[0].dtype.kind == "c":
            result = complex_as_real(xp, subscripts, operands)
            if result is not None:
                return result
        if optimize is False and len(operands) > 2:
            opt: Any = left_to_right(len(operands))
        else:
            opt = "greedy" if isinstance(optimize, (list, tuple)) else optimize
        result = xp.asarray(xp.einsum(subscripts, *operands, optimize=opt))
        if any(xp.may_share_memory(result, a) for a in operands):
            result = result.copy()
        return result

    einsum.__qualname__ = "einsum"
    return einsum


def register(register_kernel: Callable[..., None], xp: Any, wrap: Callable[[Callable[..., Any], str], Callable[..., Any]]) -> None:
    register_kernel("einsum", CATALOG["einsum"].supported_dtypes, wrap(kernel(xp), f"{getattr(xp, '__name__', 'xp')}.einsum"))
