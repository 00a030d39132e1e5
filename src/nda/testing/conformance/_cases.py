"""What the kit runs: :class:`Case` values, the rules that keep inputs defined, the edge sweeps.

A :class:`Case` is one call of one op written with **host** data: arrays are
:class:`Arr` (a NumPy array, optionally seen through a strided or reversed view), the
target device is the placeholder :data:`DEVICE`. The kit materialises the same case on
the device under test and on the reference, so both see identical inputs, and a failing
case prints as a call a person can paste (``add(asarray([127], dtype=int8), 1)``,
``asarray([1, 2], dtype=int8)[::-1] = 3``).

Input repairs avoid only what the catalog leaves undefined or what nda refuses at the
call: integer division by zero, shifts by the bit width or more, negative integer
powers, float-to-int casts of values that do not fit, and (for the :data:`ACCUMULATING`
ops) finite values large enough that the order of summation changes the result.
Everything else, NaN, infinities, signed zeros, subnormals, integer wrap-around, empty
and 0-d arrays, views, is fair game. The strategies that draw cases are in
:mod:`._generators`.

:func:`sweep` gives deterministic edge cases (every edge value of the dtype; every pair
of them for binary ops and reductions) and :func:`sub_cases` the one- and two-element
cases a failing sweep is reduced to.

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

import nda
from nda._dtypes import ALL_DTYPES, DType
from nda.ops import DECLARED as CATALOG  # the catalog and the ops of loaded op libraries

from .. import strategies as nst

__all__ = ["Arr", "Raw", "Case", "DEVICE", "ACCUMULATING", "COMPLEX_PRODUCTS", "sweep", "degenerate_sweep", "sub_cases", "fmt", "signed_zeros"]


class _Device:
    def __repr__(self) -> str:
        return "device"


#: Placeholder for the device under test in a case's keyword arguments.
DEVICE = _Device()


def fmt(a: np.ndarray) -> str:
    """``a`` as the nda call that makes it; a NaN whose sign bit is set is written ``-nan``."""
    if a.size == 0:
        return f"empty({a.shape}, dtype={a.dtype.name})"
    text = repr(a.tolist())
    if a.dtype.kind == "f" and (np.isnan(a) & np.signbit(a)).any():
        text = repr(_SignedNan.wrap(a.tolist()))
    return f"asarray({text}, dtype={a.dtype.name})"


class _SignedNan(float):
    """A float whose repr says ``-nan`` for a NaN with its sign bit set (Python's says ``nan``)."""

    def __repr__(self) -> str:
        return "-nan" if self != self and np.signbit(self) else float.__repr__(self)

    @classmethod
    def wrap(cls, value: Any) -> Any:
        return [cls.wrap(v) for v in value] if isinstance(value, list) else cls(value)


class Arr:
    """A host array input; ``view`` (``"step"``/``"reverse"``) makes the op see ``base[::2]``/``base[::-1]``."""

    __slots__ = ("base", "view")

    def __init__(self, base: np.ndarray, view: str | None = None) -> None:
        self.base = base
        self.view = view

    def host(self) -> np.ndarray:
        """The values the op sees, as a fresh NumPy array."""
        return np.array(self.base[_VIEWS[self.view]] if self.view else self.base, copy=True)

    def on(self, device: nda.Device) -> nda.NDArray:
        x = nda.asarray(self.base, device=device, copy=True)
        return x[_VIEWS[self.view]] if self.view else x

    def __repr__(self) -> str:
        return fmt(self.base) + (_VIEW_TEXT[self.view] if self.view else "")


_VIEWS = {"step": slice(None, None, 2), "reverse": slice(None, None, -1)}
_VIEW_TEXT = {"step": "[::2]", "reverse": "[::-1]"}


class Raw:
    """A NumPy array passed as it is (``asarray``'s input); each run gets its own copy."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __repr__(self) -> str:
        return "numpy." + fmt(self.array)


class Case:
    """One call of ``op`` with host inputs (see the module docstring)."""

    __slots__ = ("op", "args", "kwargs", "check_values", "signed_zeros", "origin")

    def __init__(
        self,
        op: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None = None,
        *,
        check_values: bool = True,
        signed_zeros: bool = False,
        origin: str = "hypothesis",
    ) -> None:
        self.op = op
        self.args = args
        self.kwargs = kwargs or {}
        self.check_values = check_values
        self.signed_zeros = signed_zeros
        self.origin = origin

    def replace(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> Case:
        return Case(
            self.op,
            args,
            self.kwargs if kwargs is None else kwargs,
            check_values=self.check_values,
            signed_zeros=self.signed_zeros,
            origin=self.origin,
        )

    def arrays(self) -> list[Arr]:
        found: list[Arr] = []
        _walk(self.args, found)
        _walk(tuple(self.kwargs.values()), found)
        return found

    def __repr__(self) -> str:
        if self.op in ("getitem", "setitem"):
            key = self.args[1]
            index = ", ".join(_repr_arg(k) for k in key) if isinstance(key, tuple) and key else "()" if key == () else _repr_arg(key)
            text = f"{_repr_arg(self.args[0])}[{index}]"
            return text if self.op == "getitem" else f"{text} = {_repr_arg(self.args[2])}"
        parts = [_repr_arg(a) for a in self.args] + [f"{k}={_repr_arg(v)}" for k, v in self.kwargs.items()]
        return f"{self.op}({', '.join(parts)})"


def _walk(value: Any, found: list[Arr]) -> None:
    if isinstance(value, Arr):
        found.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _walk(v, found)


def _repr_arg(value: Any) -> str:
    if isinstance(value, tuple):
        inner = ", ".join(_repr_arg(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_repr_arg(v) for v in value) + "]"
    if isinstance(value, slice):
        return ":".join("" if p is None else str(p) for p in (value.start, value.stop, value.step)).rstrip(":") or ":"
    if value is Ellipsis:
        return "..."
    return repr(value)


# ----------------------------------------------------------------------------- input repair


def _signed(dt: np.dtype) -> bool:
    return dt.kind == "i"


def _nonzero(a: np.ndarray) -> np.ndarray:
    return np.where(a == 0, a.dtype.type(1), a).astype(a.dtype)


def _no_int_min(a: np.ndarray) -> np.ndarray:
    if not _signed(a.dtype):
        return a
    low = np.iinfo(a.dtype).min
    return np.where(a == low, a.dtype.type(low + 1), a).astype(a.dtype)


def _shift_amount(a: np.ndarray) -> np.ndarray:
    return np.mod(a, a.dtype.type(a.dtype.itemsize * 8)).astype(a.dtype)


def _nonnegative(a: np.ndarray) -> np.ndarray:
    if not _signed(a.dtype):
        return a
    return np.where(a < 0, -(a + a.dtype.type(1)), a).astype(a.dtype)


def compose(*repairs: Callable[[np.ndarray], np.ndarray] | None) -> Callable[[np.ndarray], np.ndarray] | None:
    chosen = [r for r in repairs if r is not None]
    if not chosen:
        return None

    def repair(a: np.ndarray) -> np.ndarray:
        for r in chosen:
            a = r(a)
        return a

    return repair


def binary_repairs(op: str, dtype: DType) -> tuple[Callable[[np.ndarray], np.ndarray] | None, Callable[[np.ndarray], np.ndarray] | None]:
    """How to make (x1, x2) defined for integer inputs: (repair of x1, repair of x2)."""
    if op in COMPLEX_PRODUCTS and dtype.category == "complex floating":
        return _product_parts, _product_parts
    if dtype.category not in ("signed integer", "unsigned integer"):
        return None, None
    if op in ("floor_divide", "remainder"):
        return _no_int_min, _nonzero
    if op in ("bitwise_left_shift", "bitwise_right_shift"):
        return None, _shift_amount
    if op == "pow":
        return None, _nonnegative
    return None, None


def _fits(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """Where a float/complex -> integer/bool cast of ``x`` is defined (NaN, inf, out of range are not)."""
    if target.kind not in "iu":
        return np.ones(x.shape, bool)
    info = np.iinfo(target)
    v = np.real(x).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return np.isfinite(v) & (v > float(int(info.min) - 1)) & (v < float(int(info.max) + 1))


def cast_safe(x: np.ndarray, target: DType) -> np.ndarray:
    if x.dtype.kind in "fc" and target.category in ("signed integer", "unsigned integer"):
        return np.where(_fits(x, target.numpy), x, x.dtype.type(0)).astype(x.dtype)
    return x


def _clip_parts(a: np.ndarray, low: float, high: float, *, finite: bool = False) -> np.ndarray:
    """Finite float values moved into ``low <= |x| <= high`` (zeros kept; NaN and infinities kept
    unless ``finite``, which replaces them by ``high``)."""
    if a.dtype.kind not in "fc":
        return a

    def clip(part: np.ndarray) -> np.ndarray:
        part = np.array(part, copy=True)
        if finite:
            part[~np.isfinite(part)] = high
        ok, size = np.isfinite(part), np.abs(part)
        big = ok & (size > high)
        part[big] = np.copysign(high, part[big])
        small = ok & (size > 0) & (size < low)
        part[small] = np.copysign(low, part[small])
        return part

    if a.dtype.kind == "f":
        return clip(a)
    out = np.empty_like(a)
    out.real, out.imag = clip(a.real), clip(a.imag)
    return out


#: Ops whose result depends on the order of accumulation once intermediate values overflow
#: or underflow: their finite float inputs are kept moderate (NaN, ±inf, ±0 stay), so that
#: any summation order gives the reference's result up to rounding. ``einsum`` sums too (its
#: own generator keeps its inputs moderate); CuPy's contracts pairwise and reduces with CUB, in
#: another order than NumPy's loop (a cancellation ``-1 + 1 + 7e-15 + ...`` differs in the last
#: bits of 1, found on the CuPy model running CuPy's own einsum).
ACCUMULATING = {"sum", "prod", "mean", "std", "var", "cumulative_sum", "cumulative_prod", "matmul", "tensordot", "vecdot", "einsum"}

#: Products of arrays get finite inputs: with NaN or inf the result is the library's choice
#: (BLAS skips zero terms, so NaN*0 may vanish; complex multiplication formulas differ).
_PRODUCTS = {"matmul", "tensordot", "vecdot"}


def accumulation_repair(op: str) -> Callable[[np.ndarray], np.ndarray] | None:
    """The input repair of an :data:`ACCUMULATING` op (None for other ops)."""
    if op in _PRODUCTS:
        return lambda a: _clip_parts(a, 0.0, 1024.0, finite=True)
    if op in ("prod", "cumulative_prod"):
        # complex products of infinities depend on the multiplication formula: keep them finite
        return lambda a: _clip_parts(a, 0.5, 2.0, finite=a.dtype.kind == "c")
    if op in ACCUMULATING:
        return lambda a: _clip_parts(a, 0.0, 1024.0)
    return None


#: Element-wise ops whose sign of a zero result the Array API leaves to the implementation
#: (which zero ``maximum``/``minimum`` pick between -0 and +0; ``sign`` of ±0 is "0").
ZERO_SIGN_FREE = {"maximum", "minimum", "sign"}
#: ... and the same for complex input only. Complex ``pow`` is specified "as if ``exp(x2 *
#: log(x1))``" and left underspecified: its zero results come from ``exp(-inf + NaN j)`` where the
#: NaN is a ``0 * inf`` of the product, and the sign of such a NaN is the processor's (negative
#: on x86, positive on NVIDIA GPUs), so ``infj ** (-inf+0j)`` is ``-0j`` with NumPy on x86 and
#: ``+0j`` on a GPU that computes exactly the same formula.
ZERO_SIGN_FREE_COMPLEX = {"pow"}


def signed_zeros(op: str, dtype: DType) -> bool:
    """Whether the kit compares the signs of zero results of element-wise ``op`` in ``dtype``."""
    return op not in ZERO_SIGN_FREE and not (dtype.category == "complex floating" and op in ZERO_SIGN_FREE_COMPLEX)


#: Element-wise ops computing complex results as sums of products (``(a c - b d, a d + b c)``).
#: Whether ``a c - b d`` is rounded once (a fused multiply-add) or twice is the implementation's
#: choice, and NumPy itself makes both: its AVX2 loop fuses, its scalar loop does not (on one
#: machine, ``(2**512 + 2**485 j)**2`` has real part ``1.797e308`` from an array and ``inf``
#: from a scalar). So the kit keeps the products clear of the overflow threshold (finite parts
#: at most ``2**510``, ``2**62`` in complex64) and compares with an absolute tolerance of a few
#: ``eps * |x1| * |x2|`` (a cancellation in ``a c - b d`` is exact in one rounding, not the other).
COMPLEX_PRODUCTS = {"multiply", "square"}


def _product_parts(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "c":
        return a
    bound = 2.0**62 if a.dtype == np.complex64 else 2.0**510
    return _clip_parts(a, 0.0, bound)


def unary_repair(op: str, dtype: DType) -> Callable[[np.ndarray], np.ndarray] | None:
    """How to make the input of element-wise ``op`` one the kit compares (None: any input)."""
    return _product_parts if op in COMPLEX_PRODUCTS and dtype.category == "complex floating" else None


def cast_targets(dtype: DType) -> list[DType]:
    """The dtypes ``astype`` accepts from ``dtype`` (complex to real is refused)."""
    return [d for d in ALL_DTYPES if not (dtype.category == "complex floating" and d.category != "complex floating")]


# ----------------------------------------------------------------------------- edge sweeps

SWEPT_REDUCTIONS = {"sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax", "all", "any", "cumulative_sum", "sort", "argsort"}


def sweep(op: str, dtype: DType) -> list[Case]:
    """Deterministic cases holding every edge value of ``dtype`` (every pair of them for binary ops)."""
    decl = CATALOG[op]
    edges = np.array(nst.edge_values(dtype), dtype=dtype.numpy)
    n = edges.size
    zeros = signed_zeros(op, dtype)
    if decl.family == "unary":
        repair = unary_repair(op, dtype)
        return [Case(op, (Arr(repair(edges) if repair else edges),), signed_zeros=zeros, origin="edge sweep")]
    if decl.family == "binary":
        r1, r2 = binary_repairs(op, dtype)
        x1, x2 = np.repeat(edges, n), np.tile(edges, n)
        return [Case(op, (Arr(r1(x1) if r1 else x1), Arr(r2(x2) if r2 else x2)), signed_zeros=zeros, origin="edge sweep")]
    if op in SWEPT_REDUCTIONS:
        # Every ordered pair of edge values as one row, reduced along the rows.
        repair = accumulation_repair(op)
        pairs = np.stack([np.repeat(edges, n), np.tile(edges, n)], axis=1)
        found = [Case(op, (Arr(repair(pairs) if repair else pairs),), {"axis": 1}, origin="edge sweep")]
        if op in ("sort", "argsort"):
            # The edge values as one 1-d array too, both ways: a GPU sorts 1-d floats by radix (by
            # their bits), rows of a matrix by comparison.
            found += [Case(op, (Arr(edges),), {"descending": d}, origin="edge sweep") for d in (False, True)]
        return found
    if op == "astype":
        return [Case(op, (Arr(cast_safe(edges, t)), t), signed_zeros=True, origin="edge sweep") for t in cast_targets(dtype)]
    if op == "where":
        cond = np.arange(n) % 2 == 0
        return [Case(op, (Arr(cond), Arr(edges), Arr(edges[::-1].copy())), signed_zeros=True, origin="edge sweep")]
    return []


#: The matrices of :func:`degenerate_sweep`: empty in each way, storing nothing, storing everything, an empty row.
_DEGENERATE = [((1, 0), None), ((0, 3), None), ((0, 0), None), ((2, 3), None), ((2, 3), "ones"), ((2, 3), "row")]


def _degenerate(dtype: DType) -> list[np.ndarray]:
    found = []
    for shape, fill in _DEGENERATE:
        a = np.zeros(shape, dtype=dtype.numpy)
        if fill == "ones":
            a[...] = 1
        elif fill == "row":  # the first row stores nothing
            a[1, 0], a[1, 2] = 1, (True if dtype is nda.bool else 2)
        found.append(a)
    return found


def degenerate_sweep(op: str, dtype: DType) -> list[Case]:
    """Deterministic cases of a sparse-layout cell: zero-size matrices, ones storing nothing, one storing
    everything, one with an empty row (the kit converts them to the cell's layout).

    A kernel that hands a vendor library a matrix with a zero dimension or no stored element
    (cuSPARSE corrupted device memory for ``(1, 0) - (1, 0)`` on an H200) fails here, on every
    backend, before a random case happens to draw one. Element-wise ops get each matrix, each
    pair of same-shape matrices with a zero one and a scalar on either side; ``sum`` every axis;
    ``matmul`` the matrices of matching inner sides; ``permute_dims`` and ``astype`` each matrix.
    """
    decl = CATALOG[op]
    mats = _degenerate(dtype)
    scalar = np.array(2, dtype=dtype.numpy).item()
    found: list[Case] = []
    if decl.family == "unary":
        found = [Case(op, (Arr(m),), origin="degenerate sweep") for m in mats]
    elif decl.family == "binary":
        r1, r2 = binary_repairs(op, dtype)
        for m in mats:
            a, b = (r1(m) if r1 else m), (r2(m) if r2 else m)
            zero = np.zeros_like(m)
            found += [
                Case(op, (Arr(a), Arr(zero if r2 is None else b)), origin="degenerate sweep"),
                Case(op, (Arr(zero if r1 is None else a), Arr(b)), origin="degenerate sweep"),
                Case(op, (Arr(a), scalar), origin="degenerate sweep"),
                Case(op, (scalar, Arr(b)), origin="degenerate sweep"),
            ]
    elif op == "sum":
        found = [
            Case(
                op, (Arr(m),), {k: v for k, v in (("axis", axis), ("keepdims", keep)) if v is not None and v is not False}, origin="degenerate sweep"
            )
            for m in mats
            for axis in (None, 0, 1)
            for keep in (False, True)
        ]
    elif op == "matmul":
        found = [
            Case(op, (Arr(a), Arr(b.T.copy() if a.shape[1] != b.shape[0] else b)), origin="degenerate sweep")
            for a in mats
            for b in mats
            if a.shape[1] in b.shape
        ]
    elif op == "permute_dims":
        found = [Case(op, (Arr(m), axes), origin="degenerate sweep") for m in mats for axes in ((1, 0), (0, 1))]
    elif op == "astype":
        targets = [t for t in cast_targets(dtype) if t in (dtype, nda.bool, nda.float64, nda.complex128)]
        found = [Case(op, (Arr(m), t), origin="degenerate sweep") for m in mats for t in targets]
    return found


def sub_cases(case: Case, limit: int = 400) -> Iterator[Case]:
    """Smaller cases of a failing sweep: single elements first, then pairs (rows of a reduction sweep)."""
    positions = [i for i, a in enumerate(case.args) if isinstance(a, Arr)]
    if not positions:
        return
    first = case.args[positions[0]].base
    if case.op in SWEPT_REDUCTIONS and first.ndim == 2:
        kwargs = {k: v for k, v in case.kwargs.items() if k != "axis"}
        seen: dict[bytes, np.ndarray] = {}
        for value in first.reshape(-1):
            seen.setdefault(value.tobytes(), np.array([value]))
        candidates = list(seen.values()) + [row.copy() for row in first]
        for values in candidates[:limit]:
            yield case.replace((Arr(values),), kwargs)
        return
    n = first.shape[0] if first.ndim == 1 else -1
    if any(case.args[i].base.shape != (n,) for i in positions):
        return

    def take(index: list[int]) -> Case:
        args = list(case.args)
        for i in positions:
            args[i] = Arr(case.args[i].base[index])
        return case.replace(tuple(args))

    for i in range(min(n, limit)):
        yield take([i])
