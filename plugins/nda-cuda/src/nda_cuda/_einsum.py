"""``einsum`` on the GPU: ``cupy.einsum`` in the catalog's kernel convention.

The catalog op takes its operands as one sequence (``einsum(subscripts, operands,
optimize=)``, the subscripts already in NumPy's explicit form), which the by-name derivation
of :mod:`nda_cuda._kernels` cannot map onto ``cupy.einsum(subscripts, *operands)``; this
module adapts it. CuPy's ``optimize`` takes False, True, ``"greedy"`` and ``"optimal"``: an
explicit ``einsum_path`` becomes ``"greedy"`` (the order of pairwise contractions changes
rounding, never the result's meaning). A result that shares memory with an operand (CuPy,
like NumPy, returns views for ``"ij->ji"``) is copied: einsum is not a view op.

Layer: nda-cuda (a plugin; nda's public modules only).
"""

from __future__ import annotations

from typing import Any, Callable

from nda.ops import CATALOG

__all__ = ["OPS", "kernel", "register"]

#: The catalog ops this module gives kernels.
OPS = ("einsum",)


def kernel(xp: Any) -> Callable[..., Any]:
    """The einsum kernel over array module ``xp`` (CuPy; NumPy in the tests)."""

    def einsum(subscripts: str, operands: list[Any], optimize: Any = False) -> Any:
        opt = "greedy" if isinstance(optimize, (list, tuple)) else optimize
        result = xp.asarray(xp.einsum(subscripts, *operands, optimize=opt))
        if any(xp.may_share_memory(result, a) for a in operands):
            result = result.copy()
        return result

    einsum.__qualname__ = "einsum"
    return einsum


def register(register_kernel: Callable[..., None], xp: Any, wrap: Callable[[Callable[..., Any], str], Callable[..., Any]]) -> None:
    register_kernel("einsum", CATALOG["einsum"].supported_dtypes, wrap(kernel(xp), f"{getattr(xp, '__name__', 'xp')}.einsum"))
