"""Snapshots of shared inputs: heavy ops on memory NumPy holds too stay asynchronous.

An array made by ``nda.asarray(numpy_array)`` on cpu (or exported by ``np.asarray(x)``,
DLPack) shares its memory with another library (``nda.engine.share``), which may write there
at any moment without the engine knowing. Every op that touches such an array would have to
complete before its call returns for a later NumPy write never to reach its result; for a
1200 x 1200 matmul that made each call cost the whole matmul, and the engine's overlap was
gone for the most common first line of a notebook.

So a *heavy* op that only *reads* shared arrays copies them at the call, on the calling
thread (a **snapshot**: the values they have now, earlier NumPy writes included), and is
queued reading the copies, like an op on arrays nda owns: a NumPy write after the call can
no longer reach it, and nothing waits for it. Everything else is left as it was:

* A cheap op (element-wise, a reduction, a copy, indexing) would cost about as much as its
  snapshot, so it still completes at the call (``nda.engine``'s ``_watched_push``), or runs
  inline as any small op does.
* Writes into shared arrays (``out``-style kernels, in-place operators, ``x[i] = v``) are not
  planned here (:func:`nda._execute.execute_mutation`): NumPy may read that memory right
  after the call, so they still complete before it returns.

**Heavy** means: the op's estimated cost (:func:`estimate`, in element operations) is at
least :data:`RATIO` (4) times the elements of its shared inputs, and at least the engine's
inline limit. A snapshot is one pass over those elements on the calling thread, about what
one element operation per element costs; at 4x or more the call gives back at least three
quarters of the op's time (a 1200 x 1200 matmul is 600x its inputs), while a matrix-vector
product, a sum or an element-wise op (1x) never pays for its copy. Under the inline limit
the engine would run the op on the caller's thread anyway (a thread hop costs more), so a
copy would buy nothing. The cost model is deliberately rough (:data:`COSTS`: matmul,
tensordot, the linalg factorisations and solvers, FFTs, sorts): an op it underestimates runs
at the call as before, one it overestimates pays one copy. Reductions, however large, read
each element once: their snapshot would cost as much as they do, so they stay at the call (a
reduction of a heavy op's result reads no shared memory and is queued behind that op anyway).
Views of one base that together cover it (``a @ a.T``) share one copy of the base.

The one place this happens is :func:`queued_inputs`, called by :func:`nda._execute.execute`
and :func:`nda._execute.execute_multi` on their queued path only (after the inline check,
before the engine's ``run`` closure captures the buffers): the inline fast paths, the naive
engine (everything inline) and the hot path of tiny ops never get here. Views of shared
arrays are shared (their base is). A shared input with pending or failed work is waited for
first (its error raises at the call, as it did when the whole op ran there). Only strided cpu
arrays are ever shared (``share`` is called for cpu memory only); any other case, an array
inside ``kwargs``, or a view op (its result must alias the shared memory), is left to the
synchronous path. ``nda.hybridize`` runs calls with shared arguments eagerly and so goes
through here; its own decision is untouched. While the profiler records, the copies show as
one span, ``<op> (snapshot)`` (its route: "copy on the calling thread").

Layer: arrays and front end, execution (README, "Architecture").
"""

from __future__ import annotations

import time
from math import isqrt, log2, prod
from typing import Any, Callable

import numpy as np

from ._array import NDArray, new_array
from .engine import SHARED, profiler
from .engine import state as _state
from .ops.spec import Cast, Plan

__all__ = ["RATIO", "COSTS", "estimate", "queued_inputs"]

#: An op is heavy when its estimated cost is at least this many times its shared elements.
RATIO = 4


def _arrays(plan: Plan) -> list[NDArray]:
    """The plan's array arguments in order (a cast argument counts as its array)."""
    found = []
    for a in plan.args:
        if a.__class__ is NDArray:
            found.append(a)
        elif a.__class__ is Cast:
            found.append(a.array)
    return found


def _matmul(plan: Plan, size: int) -> int:
    """``out elements x contracted length`` (``x1``'s last axis)."""
    arrays = _arrays(plan)
    k = arrays[0]._shape[-1] if arrays and arrays[0]._shape else 1
    return max(prod(plan.out_shape), 1) * k


def _tensordot(plan: Plan, size: int) -> int:
    """``sqrt(x1 x x2 x out)``: ``free1 x contracted x free2`` exactly when no axis is batched."""
    arrays = _arrays(plan)
    if len(arrays) < 2:
        return size
    return isqrt(arrays[0]._size * arrays[1]._size * max(prod(plan.out_shape), 1))


def _cubic(plan: Plan, size: int) -> int:
    """A factorisation of the first argument's matrices: ``batch x m x n x min(m, n)``."""
    arrays = _arrays(plan)
    if not arrays or len(arrays[0]._shape) < 2:
        return size
    shape = arrays[0]._shape
    return arrays[0]._size * min(shape[-2], shape[-1])


def _matrix_norm(plan: Plan, size: int) -> int:
    """The 2-norms and the nuclear norm need singular values; the others one pass."""
    return _cubic(plan, size) if plan.kwargs.get("ord") in (2, -2, "nuc") else size


def _n_log_n(plan: Plan, size: int) -> int:
    """Sorts and FFTs: ``elements x log2(longest axis)`` (the axes they work on are no longer)."""
    longest = max((max(a._shape, default=1) for a in plan.reads), default=1)
    return size * max(1, int(log2(max(longest, 2))))


#: Cost estimates by op name, in element operations; an op not named here costs its elements.
COSTS: dict[str, Callable[[Plan, int], int]] = {
    "matmul": _matmul,
    "tensordot": _tensordot,
    **{
        f"linalg.{n}": _cubic
        for n in (
            "cholesky",
            "det",
            "eig",
            "eigh",
            "eigvals",
            "eigvalsh",
            "inv",
            "matrix_power",
            "matrix_rank",
            "pinv",
            "qr",
            "slogdet",
            "solve",
            "svd",
            "svdvals",
        )
    },
    "linalg.matrix_norm": _matrix_norm,
    **{f"fft.{n}": _n_log_n for n in ("fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft")},
    "sort": _n_log_n,
    "argsort": _n_log_n,
}


def estimate(name: str, plan: Plan, size: int) -> int:
    """The estimated cost of running ``plan`` (op ``name``, touching ``size`` elements)."""
    cost = COSTS.get(name)
    return size if cost is None else cost(plan, size)


def _shared(a: Any) -> bool:
    return a.__class__ is NDArray and id(a._base if a._base is not None else a) in SHARED


def queued_inputs(name: str, plan: Plan, size: int) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The kernel arguments and the reads a queued op goes to the engine with: ``plan.args``
    and ``plan.reads``, or, for a heavy op reading shared arrays, both with snapshots of them."""
    args, reads = plan.args, plan.reads
    if not SHARED:
        return args, reads
    shared = [a for a in reads if _shared(a)]
    if not shared or plan.view_of is not None:
        return args, reads
    for value in plan.kwargs.values():
        if value.__class__ is NDArray or value.__class__ is Cast:
            return args, reads  # kwargs go to the kernel as they are: left to the synchronous path
    elements = sum(a._size for a in {id(a): a for a in shared}.values())
    cost = estimate(name, plan, size)
    if cost < RATIO * elements or cost < _state.engine.idle_limit:
        return args, reads
    for a in shared:
        if a._meta.device.type != "cpu" or a._meta.layout.name != "strided":
            return args, reads
    for a in shared:
        # Its pending writes first (nda.asarray's own op may be held; another thread's write);
        # a failed one raises here, at the call, as when the whole op completed here.
        _state.wait_for(a, False)
        if not isinstance(a._buf, np.ndarray):
            return args, reads
    timed = profiler.active
    start = time.perf_counter() if timed else 0.0
    copies = _snapshot(shared)
    if timed:
        profiler.record(f"{name} (snapshot)", shared[0]._meta.device, "copy on the calling thread", start, time.perf_counter())
    try:
        substituted = _substitute(args, copies)
    except LookupError:  # a shared array in a place the plan's reads do not name: the synchronous path
        return args, reads
    return substituted, tuple(copies.get(id(a), a) for a in reads)


def _snapshot(shared: list[NDArray]) -> dict[int, NDArray]:
    """A copy of each array in ``shared`` (by ``id``). Arrays of one base that together cover
    at least its elements (``a @ a.T``, the halves of ``a``) are views of one copy of the base."""
    groups: dict[int, list[NDArray]] = {}
    for a in shared:
        members = groups.setdefault(id(a._base if a._base is not None else a), [])
        if all(m is not a for m in members):
            members.append(a)
    copies: dict[int, NDArray] = {}
    for members in groups.values():
        first = members[0]
        base = first._base if first._base is not None else first
        whole = None
        if len(members) > 1 and sum(m._size for m in members) >= base._size:
            buf = base._buf
            if isinstance(buf, np.ndarray) and (buf.flags.c_contiguous or buf.flags.f_contiguous):
                whole = (buf, buf.copy(order="K"))  # the same byte layout as the original
        for a in members:
            copy = _view_of_copy(a._buf, *whole) if whole is not None else None
            copies[id(a)] = new_array(a._buf.copy(order="K") if copy is None else copy, a._meta, a._shape)
    return copies


def _bounds(x: np.ndarray) -> tuple[int, int]:
    """The first and one past the last byte address ``x`` reaches (NumPy's ``byte_bounds``)."""
    lo = hi = x.__array_interface__["data"][0]
    for n, stride in zip(x.shape, x.strides):
        if stride > 0:
            hi += (n - 1) * stride
        else:
            lo += (n - 1) * stride
    return lo, hi + x.itemsize


def _view_of_copy(view: np.ndarray, original: np.ndarray, copy: np.ndarray) -> np.ndarray | None:
    """``view`` (inside ``original``'s memory) as the same view of ``copy``; None if it is not inside."""
    if view.size == 0 or view.ndim == 0 and view.base is None:
        return None  # nothing to share, or a scalar-like buffer
    lo, hi = _bounds(view)
    base_lo, base_hi = _bounds(original)
    if not (base_lo <= lo and hi <= base_hi):
        return None  # not a view of that memory (a view op that had to copy)
    offset = view.__array_interface__["data"][0] - base_lo
    try:
        return np.ndarray(view.shape, view.dtype, buffer=copy, offset=offset, strides=view.strides)
    except (TypeError, ValueError):
        return None


def _substitute(value: Any, copies: dict[int, NDArray]) -> Any:
    """``value`` (the kernel arguments, as :func:`nda._execute.unwrap` walks them) with each
    shared array replaced by its snapshot; LookupError for a shared array without one."""
    cls = value.__class__
    if cls is NDArray:
        if _shared(value):
            return copies[id(value)]
        return value
    if cls is Cast:
        array = _substitute(value.array, copies)
        return value if array is value.array else Cast(array, value.dtype)
    if cls is tuple or cls is list:
        return cls(_substitute(v, copies) for v in value)
    return value
