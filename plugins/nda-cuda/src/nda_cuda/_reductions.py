"""Reductions called the way CuPy's own functions are called: the small-size path.

nda's kernel convention passes every keyword of a reduction (``sum(x, axis=None,
keepdims=False, dtype=float32)``) and gives ``axis`` as a tuple; the generic adapter in
:mod:`nda_cuda._kernels` then binds the names, translates dtypes and checks the result for
aliasing with ``may_share_memory`` on every call. For a small array that host work is most of
the cost of the op, and CuPy itself is called with other arguments than a CuPy user's
``cupy.sum(x)``: an explicit ``dtype`` (CuPy then takes its keep-dtype branches: CUB's
general dtype list instead of its list for sums, ``_sum_keep_dtype`` instead of
``_sum_auto_dtype`` when CUB declines) and explicit defaults. On an H200, ``ndarray.sum``
took ~30 µs per call inside nda-cuda while all of ``float(cupy.sum(x + y))`` took 27 µs.
Here, for ``sum``, ``prod``, ``max``, ``min``, ``mean``, ``any`` and ``all``, the kernel

* turns an ``axis`` covering every axis into ``None`` and a one-element tuple into an int,
* drops a ``dtype`` equal to the one CuPy picks by itself (NumPy's rule: integers and bools
  sum in the default integer, floats and complexes in their own type),
* and calls the function with only what differs from its defaults, so that
  ``nda.sum(x)`` on a float32 array is ``cupy.sum(x)``, exactly as a CuPy user writes it.

Results are the same as through the adapter (the same CuPy function, the same meaning of
every argument); a reduction allocates its output, so no alias check is needed (an empty
``axis=()``, the one case where a library might hand back its input, gets a copy).
``benchmarks/gpu.py`` (``sum_variants``) times each of these argument forms in CuPy alone.

Layer: nda-cuda (a plugin; nda's public modules only).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np
from nda import DType

from . import _workarounds as fix

__all__ = ["REDUCTIONS", "adapt"]

#: Reductions with the small-size path (the catalog's name, whether it takes ``dtype``).
REDUCTIONS: dict[str, bool] = {"sum": True, "prod": True, "max": False, "min": False, "mean": False, "any": False, "all": False}


def _auto_dtypes(name: str) -> Callable[[Any], Any]:
    """dtype -> the dtype ``name`` (sum or prod) gives without ``dtype=`` (NumPy's rule, which CuPy follows)."""
    cache: dict[Any, Any] = {}
    reduce = getattr(np, name)

    def auto(dtype: Any) -> Any:
        hit = cache.get(dtype)
        if hit is None:
            hit = cache[dtype] = reduce(np.zeros(1, dtype=dtype)).dtype
        return hit

    return auto


def _takes(target: Callable[..., Any], names: tuple[str, ...]) -> bool:
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return all(n in params and params[n].kind in kinds for n in names) or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def adapt(decl: Any, target: Callable[..., Any], xp: Any) -> Callable[..., Any] | None:
    """The small-size kernel of reduction ``decl`` over ``target`` (``cupy.sum``...), or None
    when ``decl`` is not one of :data:`REDUCTIONS` or ``target`` does not take its keywords."""
    takes_dtype = REDUCTIONS.get(decl.name)
    if takes_dtype is None or not _takes(target, ("axis", "keepdims", "dtype") if takes_dtype else ("axis", "keepdims")):
        return None
    ndarray = xp.ndarray
    auto = _auto_dtypes(decl.name) if takes_dtype else None

    def finish(result: Any, axis: Any, x: Any) -> Any:
        if result.__class__ is not ndarray:
            # A scalar becomes a 0-d array through fix.to_device (CuPy 14.2 would drop the sign of -0.0).
            result = xp.asarray(result) if isinstance(result, ndarray) else fix.to_device(xp, result)
        if axis == () and x.ndim:
            result = result.copy()
        return result

    if takes_dtype:

        def kernel(x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
            if axis.__class__ is tuple:
                n = len(axis)
                axis = None if n == x.ndim else axis[0] if n == 1 else axis
            if dtype is not None:
                dtype = dtype.numpy if type(dtype) is DType else dtype
                if dtype == auto(x.dtype):
                    dtype = None
            if axis is None and dtype is None and not keepdims:
                return finish(target(x), None, x)
            return finish(target(x, axis=axis, dtype=dtype, keepdims=keepdims), axis, x)
    else:

        def kernel(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
            if axis.__class__ is tuple:
                n = len(axis)
                axis = None if n == x.ndim else axis[0] if n == 1 else axis
            if axis is None and not keepdims:
                return finish(target(x), None, x)
            return finish(target(x, axis=axis, keepdims=keepdims), axis, x)

    kernel.__name__ = kernel.__qualname__ = f"{decl.name.replace('.', '_')}_small"
    kernel.__module__ = __name__
    return kernel
