"""The standard's ``linalg`` extension: ops named ``"linalg.<name>"``, public as ``nda.linalg.<name>``.

Most functions take a stack of matrices ``(..., M, N)`` and work on the last two axes;
planners check the shapes and dtypes, reference kernels are ``numpy.linalg``'s (whose
NumPy 2 semantics follow the standard). Decompositions with several results (``eigh``,
``qr``, ``svd``, ``slogdet``, ``eig``) are declared with ``outputs=`` and return named
tuples. Failures that depend on the data (a singular matrix for ``inv``, a matrix that
is not positive definite for ``cholesky``) raise ``numpy.linalg.LinAlgError`` (a
``ValueError``) at the sync point, like any kernel error.

``matmul``, ``tensordot``, ``vecdot`` and ``matrix_transpose`` of ``nda.linalg`` are the
top-level functions themselves (see ``nda.linalg``).

Layer: op catalog (README, "Architecture").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _dtypes
from .._dtypes import DType
from .spec import (
    Array,
    broadcast_shapes,
    Cast,
    check_array,
    check_dtype_category,
    constant,
    declare,
    host_scalar,
    int_arg,
    normalize_axes,
    not_differentiable,
    Plan,
    scalar_arg,
)
from ._vjp import (
    conj,
    diag_matrix,
    expand_reduced,
    eye_like,
    is_complex,
    lower_read,
    matrix_t,
    off_diagonal_inverse,
    real_only,
    solve_right,
)
from .linalg import _promote_pair

_ARRAY = "NDArray"

_REAL_OF = {"complex64": "float32", "complex128": "float64"}
_COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


def real_dtype(dtype: DType) -> DType:
    """The real dtype of the same precision (``complex64`` -> ``float32``)."""
    name = _REAL_OF.get(dtype.name)
    return _dtypes.as_dtype(name) if name else dtype


def complex_dtype(dtype: DType) -> DType:
    """The complex dtype of the same precision (``float32`` -> ``complex64``)."""
    name = _COMPLEX_OF.get(dtype.name)
    return _dtypes.as_dtype(name) if name else dtype


def _matrices(op: str, x: Any, *, square: bool = False, category: str = "floating") -> Any:
    x = check_array(x, op)
    check_dtype_category(x, category, op)
    if x.ndim < 2:
        raise ValueError(f"{op}() needs a stack of matrices (at least 2 dimensions), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}() needs square matrices, got shape {x.shape} (the last two axes differ)")
    return x


def _asarray(result: Any, dtype: Any) -> np.ndarray:
    return np.asarray(result, dtype=dtype)


# The VJPs below read one triangle of their input where the op does (``eigh``, ``eigvalsh``,
# ``cholesky``): see ``_vjp.lower_read``.


# ----------------------------------------------------------------------------- single result, same shape


def _ref_cholesky(x: np.ndarray, upper: bool = False) -> np.ndarray:
    return np.linalg.cholesky(x, upper=upper)


def _vjp_cholesky(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, upper: bool = False) -> tuple[Any, ...]:
    """For ``L = cholesky(A)`` (lower, reading A's lower triangle):
    ``dL = <L^-T phi(L^T gL) L^-1, dA>`` with ``phi`` the lower triangle, diagonal halved.
    ``upper=True`` reads the upper triangle and returns ``L^T`` of ``A^T``: the same, transposed."""
    real_only(x, "cholesky")
    lower = nd.matrix_transpose(y) if upper else y
    gl = nd.matrix_transpose(g) if upper else g
    p = nd.matrix_transpose(lower) @ gl
    phi = nd.tril(p) - 0.5 * p * eye_like(nd, p)
    lt = nd.matrix_transpose(lower)
    s = nd.matrix_transpose(nd.linalg.solve(lt, nd.matrix_transpose(nd.linalg.solve(lt, phi))))
    grad = lower_read(nd, s)
    return (nd.matrix_transpose(grad) if upper else grad,)


@declare("linalg.cholesky", dtypes="floating", reference=_ref_cholesky, vjp=_vjp_cholesky)
def cholesky(x: _ARRAY, /, *, upper: bool = False) -> Plan:
    """Cholesky factor of each Hermitian positive-definite matrix: lower ``L`` (``x = L @ L^H``), or upper with ``upper=True``."""
    x = _matrices("cholesky", x, square=True)
    if not isinstance(upper, bool):
        raise TypeError(f"cholesky(): upper must be a bool, got {upper!r}")
    return Plan.of(x, out_shape=x.shape, args=(x,), kwargs={"upper": upper})


def _ref_inv(x: np.ndarray) -> np.ndarray:
    return np.linalg.inv(x)


def _vjp_inv(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    yh = matrix_t(nd, y)
    return (-(yh @ g @ yh),)


@declare("linalg.inv", dtypes="floating", reference=_ref_inv, vjp=_vjp_inv)
def inv(x: _ARRAY, /) -> Plan:
    """Inverse of each square matrix (LinAlgError at the sync point if one is singular)."""
    x = _matrices("inv", x, square=True)
    return Plan.of(x, out_shape=x.shape, args=(x,))


def _ref_matrix_power(x: np.ndarray, n: int) -> np.ndarray:
    return np.linalg.matrix_power(x, n)


def _power_vjp(nd: Any, g: Any, a: Any, n: int) -> Any:
    """``sum_k (a^k)^H g (a^(n-1-k))^H`` for ``y = a^n``, ``n >= 1``."""
    powers = [None, a]
    for _ in range(2, n):
        powers.append(powers[-1] @ a)
    total = None
    for k in range(n):
        left = g if k == 0 else matrix_t(nd, powers[k]) @ g
        term = left if n - 1 - k == 0 else left @ matrix_t(nd, powers[n - 1 - k])
        total = term if total is None else total + term
    return total


def _vjp_matrix_power(nd: Any, need: Any, g: Any, y: Any, x: Any, n: int, /) -> tuple[Any, ...]:
    if n == 0:
        return (None,)
    if n > 0:
        return (_power_vjp(nd, g, x, n),)
    inverse = nd.linalg.inv(x)
    gi = _power_vjp(nd, g, inverse, -n)
    ih = matrix_t(nd, inverse)
    return (-(ih @ gi @ ih),)


@declare("linalg.matrix_power", dtypes="numeric", reference=_ref_matrix_power, vjp=_vjp_matrix_power, host_values=("n",))
def matrix_power(x: _ARRAY, n: int, /) -> Plan:
    """Each square matrix raised to the integer power ``n`` (``n = 0`` gives identities, negative ``n`` inverts)."""
    x = _matrices("matrix_power", x, square=True, category="numeric")
    n = int_arg(n, "matrix_power", "n")
    if n < 0 and x.dtype.category not in ("real floating", "complex floating"):
        raise TypeError(f"matrix_power(): a negative power inverts, which needs a floating dtype; got {x.dtype.name}")
    return Plan.of(x, out_shape=x.shape, args=(x, n))


def _ref_pinv(x: np.ndarray, rtol: Any = None) -> np.ndarray:
    if rtol is None:
        rtol = max(x.shape[-2:], default=0) * np.finfo(x.dtype).eps
    return np.linalg.pinv(x, rtol=rtol)


def _rtol(op: str, x: Any, rtol: Any) -> tuple[Any, list[Any]]:

    rtol = scalar_arg(rtol)
    if rtol is None or rtol.__class__ in (int, float):
        return rtol, []
    if isinstance(rtol, Array):
        check_dtype_category(rtol, "real floating", op, "rtol")
        broadcast_shapes(rtol.shape, x.shape[:-2])
        dtype = real_dtype(x.dtype)
        return (rtol if rtol.dtype is dtype else Cast(rtol, dtype)), [rtol]
    raise TypeError(f"{op}(): rtol must be a float, a real floating array or None, got {type(rtol).__name__}")


def _vjp_pinv(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, rtol: Any = None) -> tuple[Any, ...]:
    """Golub and Pereyra's derivative (valid where the rank does not change):
    ``-P^H g P^H + (I - A P) g^H P P^H + P^H P g^H (I - P A)`` with ``P = pinv(A)``."""
    p, ph, gh = y, matrix_t(nd, y), matrix_t(nd, g)
    m, n = x.shape[-2], x.shape[-1]
    left = nd.eye(m, dtype=x.dtype, device=x.device) - x @ p
    right = nd.eye(n, dtype=x.dtype, device=x.device) - p @ x
    return (-(ph @ g @ ph) + left @ gh @ (p @ ph) + (ph @ p) @ gh @ right,)


@declare("linalg.pinv", dtypes="floating", reference=_ref_pinv, vjp=_vjp_pinv)
def pinv(x: _ARRAY, /, *, rtol: float | _ARRAY | None = None) -> Plan:
    """Moore-Penrose pseudo-inverse of each matrix; singular values below ``rtol * largest`` count as zero.

    ``rtol`` defaults to ``max(M, N) * eps`` of ``x``'s dtype.
    """
    x = _matrices("pinv", x)
    tol, extra = _rtol("pinv", x, rtol)
    plan = Plan.of(x, out_shape=x.shape[:-2] + (x.shape[-1], x.shape[-2]), args=(x, tol))
    plan.reads = (x, *extra)
    return plan


# ----------------------------------------------------------------------------- reductions of matrices


def _ref_det(x: np.ndarray) -> np.ndarray:
    return _asarray(np.linalg.det(x), x.dtype)


def _vjp_det(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    return ((g * conj(nd, y))[..., None, None] * matrix_t(nd, nd.linalg.inv(x)),)


@declare("linalg.det", dtypes="floating", reference=_ref_det, vjp=_vjp_det)
def det(x: _ARRAY, /) -> Plan:
    """Determinant of each square matrix."""
    x = _matrices("det", x, square=True)
    return Plan.of(x, out_shape=x.shape[:-2], args=(x,))


def _ref_slogdet(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sign, logabs = np.linalg.slogdet(x)
    return _asarray(sign, x.dtype), _asarray(logabs, real_dtype(_dtypes.from_numpy_dtype(x.dtype)).numpy)


def _vjp_slogdet(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    """logabsdet: ``A^-H``; a real sign is constant (complex phases: not implemented)."""
    g_sign, g_log = g
    if g_sign is not None and is_complex(x):
        raise TypeError("the gradient of the phase (sign) of linalg.slogdet() of complex input is not implemented; use logabsdet or det")
    if g_log is None:
        return (None,)
    return (g_log[..., None, None] * matrix_t(nd, nd.linalg.inv(x)),)


@declare("linalg.slogdet", dtypes="floating", reference=_ref_slogdet, outputs=("sign", "logabsdet"), vjp=_vjp_slogdet)
def slogdet(x: _ARRAY, /) -> Plan:
    """Sign (or phase, for complex input) and natural log of the absolute value of each determinant.

    ``det = sign * exp(logabsdet)``; for a singular matrix ``sign`` is 0 and ``logabsdet`` is ``-inf``.
    """
    x = _matrices("slogdet", x, square=True)
    batch = x.shape[:-2]
    return Plan.of(x, out_shape=(batch, batch), out_dtype=(x.dtype, real_dtype(x.dtype)), args=(x,))  # type: ignore[arg-type]


def _ref_trace(x: np.ndarray, offset: int = 0, dtype: DType | None = None) -> np.ndarray:
    return _asarray(np.linalg.trace(x, offset=offset, dtype=None if dtype is None else dtype.numpy), None if dtype is None else dtype.numpy)


def _vjp_trace(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, offset: int = 0, dtype: Any = None) -> tuple[Any, ...]:
    eye = nd.eye(x.shape[-2], x.shape[-1], k=offset, dtype=g.dtype, device=g.device)
    return (g[..., None, None] * eye,)


@declare("linalg.trace", dtypes="numeric", reference=_ref_trace, vjp=_vjp_trace, host_values=("offset",))
def trace(x: _ARRAY, /, *, offset: int = 0, dtype: DType | None = None) -> Plan:
    """Sum along diagonal ``offset`` of each matrix; accumulation dtype as for :func:`nda.sum`."""
    from .spec import dtype_arg
    from .reductions import _sum_dtype

    x = _matrices("trace", x, category="numeric")
    offset = int_arg(offset, "trace", "offset")
    out_dtype = _sum_dtype(x.dtype, dtype_arg(dtype, "trace"), "trace")
    return Plan.of(x, out_shape=x.shape[:-2], out_dtype=out_dtype, args=(x,), kwargs={"offset": offset, "dtype": out_dtype})


def _ref_diagonal(x: np.ndarray, offset: int = 0) -> np.ndarray:
    return np.linalg.diagonal(x, offset=offset).copy()


def _vjp_diagonal(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, offset: int = 0) -> tuple[Any, ...]:
    """``g`` laid on diagonal ``offset`` of zero matrices."""
    rows, cols = x.shape[-2:]
    eye = nd.eye(rows, cols, k=offset, dtype=g.dtype, device=g.device)
    span = rows if offset >= 0 else cols  # g[i] sits in row i (offset >= 0) or column i (offset < 0)
    missing = span - g.shape[-1]
    if missing:
        g = nd.concat([g, nd.zeros(g.shape[:-1] + (missing,), dtype=g.dtype, device=g.device)], axis=-1)
    return ((g[..., :, None] if offset >= 0 else g[..., None, :]) * eye,)


@declare("linalg.diagonal", dtypes="any", reference=_ref_diagonal, vjp=_vjp_diagonal, host_values=("offset",))
def diagonal(x: _ARRAY, /, *, offset: int = 0) -> Plan:
    """Diagonal ``offset`` of each matrix (positive: above the main diagonal), as a new array."""
    x = _matrices("diagonal", x, category="any")
    offset = int_arg(offset, "diagonal", "offset")
    rows, cols = x.shape[-2:]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    return Plan.of(x, out_shape=x.shape[:-2] + (length,), args=(x,), kwargs={"offset": offset})


def _ref_matrix_rank(x: np.ndarray, rtol: Any = None) -> np.ndarray:
    if x.shape[-2] == 0 or x.shape[-1] == 0:
        return np.zeros(x.shape[:-2], np.int64)
    if rtol is None:
        rtol = max(x.shape[-2:]) * np.finfo(x.dtype).eps
    return _asarray(np.linalg.matrix_rank(x, rtol=rtol), np.int64)


@declare("linalg.matrix_rank", dtypes="floating", reference=_ref_matrix_rank, vjp=constant("integer result"))
def matrix_rank(x: _ARRAY, /, *, rtol: float | _ARRAY | None = None) -> Plan:
    """Rank of each matrix: singular values above ``rtol * largest`` (int64)."""
    x = _matrices("matrix_rank", x)
    tol, extra = _rtol("matrix_rank", x, rtol)
    plan = Plan.of(x, out_shape=x.shape[:-2], out_dtype=_dtypes.int64, args=(x, tol))
    plan.reads = (x, *extra)
    return plan


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _ref_matrix_norm(x: np.ndarray, keepdims: bool = False, ord: Any = "fro") -> np.ndarray:  # noqa: A002
    out_dtype = real_dtype(_dtypes.from_numpy_dtype(x.dtype)).numpy
    if x.size == 0:
        shape = x.shape[:-2] + ((1, 1) if keepdims else ())
        return np.zeros(shape, out_dtype)
    return _asarray(np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord), out_dtype)


def _share(nd: Any, hit: Any, axis: int) -> Any:
    """A 0/1 mask turned into equal shares of one along ``axis`` (ties split the gradient)."""
    return hit / nd.sum(hit, axis=axis, keepdims=True)


def _vjp_matrix_norm(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> tuple[Any, ...]:  # noqa: A002
    if not keepdims:
        g, y = g[..., None, None], y[..., None, None]
    if ord == "fro":
        return (g * x / nd.where(y == 0, 1, y),)
    if ord in ("nuc", 2, -2):
        u, _, vh = nd.linalg.svd(x, full_matrices=False)
        if ord == "nuc":
            return (g * (u @ vh),)
        pick = slice(0, 1) if ord == 2 else slice(-1, None)
        return (g * (u[..., :, pick] @ vh[..., pick, :]),)
    axis = -2 if ord in (1, -1) else -1  # 1, -1: sums over rows (one per column); inf, -inf: over columns
    sums = nd.sum(nd.abs(x), axis=axis, keepdims=True)
    hit = nd.astype(sums == y, y.dtype)
    return (g * _share(nd, hit, -1 if axis == -2 else -2) * nd.sign(x),)


@declare("linalg.matrix_norm", dtypes="floating", reference=_ref_matrix_norm, vjp=_vjp_matrix_norm, host_values=("ord",))
def matrix_norm(x: _ARRAY, /, *, keepdims: bool = False, ord: int | float | str = "fro") -> Plan:  # noqa: A002
    """Norm of each matrix: ``'fro'`` (default), ``'nuc'``, ``1``, ``-1``, ``2``, ``-2``, ``inf`` or ``-inf``; real dtype."""
    x = _matrices("matrix_norm", x)
    if not isinstance(keepdims, bool):
        raise TypeError(f"matrix_norm(): keepdims must be a bool, got {keepdims!r}")
    if not isinstance(ord, str):
        ord = host_scalar(ord, "matrix_norm", "ord")  # noqa: A001 - a NumPy scalar or 0-d array: read now
    if ord not in _MATRIX_ORDS or isinstance(ord, bool):
        raise ValueError(f"matrix_norm(): ord must be one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf; got {ord!r}")
    shape = x.shape[:-2] + ((1, 1) if keepdims else ())
    return Plan.of(x, out_shape=shape, out_dtype=real_dtype(x.dtype), args=(x,), kwargs={"keepdims": keepdims, "ord": ord})


def _ref_vector_norm(x: np.ndarray, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> np.ndarray:  # noqa: A002
    out_dtype = real_dtype(_dtypes.from_numpy_dtype(x.dtype)).numpy
    return _asarray(np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord), out_dtype)


def _vjp_vector_norm(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> tuple[Any, ...]:  # noqa: A002
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    g = expand_reduced(nd, g, x.shape, axes, keepdims)
    y = expand_reduced(nd, y, x.shape, axes, keepdims)
    if ord == 0:
        return (None,)  # a count of non-zero elements
    magnitude = nd.abs(x)
    if ord in (math.inf, -math.inf):
        hit = nd.astype(magnitude == y, y.dtype)
        return (g * nd.sign(x) * hit / nd.sum(hit, axis=axes, keepdims=True),)
    if ord == 2:
        return (g * x / nd.where(y == 0, 1, y),)
    if ord == 1:
        return (g * nd.sign(x),)
    return (g * nd.sign(x) * (magnitude / y) ** (ord - 1),)


@declare("linalg.vector_norm", dtypes="floating", reference=_ref_vector_norm, vjp=_vjp_vector_norm, host_values=("ord",))
def vector_norm(x: _ARRAY, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, ord: int | float = 2) -> Plan:  # noqa: A002
    """p-norm over ``axis`` (all axes by default): ``ord`` any real number, ``inf``, ``-inf`` or 0 (count of non-zeros)."""
    from .reductions import _check_keepdims, _reduced_shape

    x = check_array(x, "vector_norm")
    check_dtype_category(x, "floating", "vector_norm")
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    keepdims = _check_keepdims(keepdims, "vector_norm")
    ord = host_scalar(ord, "vector_norm", "ord")  # noqa: A001 - a NumPy scalar or 0-d array: read now
    if ord.__class__ not in (int, float):
        raise TypeError(f"vector_norm(): ord must be a real number, got {ord!r}")
    if ord == -math.inf and any(x.shape[a] == 0 for a in axes):  # a minimum over nothing (NumPy's error; inf gives 0)
        raise ValueError(f"vector_norm(ord={ord}) of an empty array (shape {x.shape}) along axis {axis} has no identity; pass a non-empty array")
    kernel_axis = None if len(axes) == x.ndim and not keepdims else axes
    return Plan.of(
        x,
        out_shape=_reduced_shape(x.shape, axes, keepdims),
        out_dtype=real_dtype(x.dtype),
        args=(x,),
        kwargs={"axis": kernel_axis, "keepdims": keepdims, "ord": ord},
    )


def _ref_svdvals(x: np.ndarray) -> np.ndarray:
    return np.linalg.svdvals(x)


def _vjp_svdvals(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    u, _, vh = nd.linalg.svd(x, full_matrices=False)
    return ((u * g[..., None, :]) @ vh,)


@declare("linalg.svdvals", dtypes="floating", reference=_ref_svdvals, vjp=_vjp_svdvals)
def svdvals(x: _ARRAY, /) -> Plan:
    """Singular values of each matrix, in descending order (real dtype)."""
    x = _matrices("svdvals", x)
    return Plan.of(x, out_shape=x.shape[:-2] + (min(x.shape[-2:]),), out_dtype=real_dtype(x.dtype), args=(x,))


def _ref_eigvalsh(x: np.ndarray) -> np.ndarray:
    return np.linalg.eigvalsh(x)


def _vjp_eigvalsh(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    real_only(x, "eigvalsh")
    v = nd.linalg.eigh(x).eigenvectors
    return (lower_read(nd, (v * g[..., None, :]) @ nd.matrix_transpose(v)),)


@declare("linalg.eigvalsh", dtypes="floating", reference=_ref_eigvalsh, vjp=_vjp_eigvalsh)
def eigvalsh(x: _ARRAY, /) -> Plan:
    """Eigenvalues of each Hermitian (symmetric) matrix, ascending (real dtype); only the lower triangle is read."""
    x = _matrices("eigvalsh", x, square=True)
    return Plan.of(x, out_shape=x.shape[:-1], out_dtype=real_dtype(x.dtype), args=(x,))


_NOT_GENERAL = not_differentiable("eigen-decomposition of a general (non-Hermitian) matrix: not implemented; eigh and eigvalsh have gradients")


def _ref_eigvals(x: np.ndarray) -> np.ndarray:
    return np.linalg.eigvals(x).astype(complex_dtype(_dtypes.from_numpy_dtype(x.dtype)).numpy, copy=False)


@declare("linalg.eigvals", dtypes="floating", reference=_ref_eigvals, vjp=_NOT_GENERAL)
def eigvals(x: _ARRAY, /) -> Plan:
    """Eigenvalues of each square matrix (complex dtype, in no particular order)."""
    x = _matrices("eigvals", x, square=True)
    return Plan.of(x, out_shape=x.shape[:-1], out_dtype=complex_dtype(x.dtype), args=(x,))


# ----------------------------------------------------------------------------- decompositions


def _ref_eigh(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w, v = np.linalg.eigh(x)
    return w, v


def _vjp_eigh(nd: Any, need: Any, g: Any, y: Any, x: Any, /) -> tuple[Any, ...]:
    """``V (diag(gw) + F o (V^T gV)) V^T`` with ``F[i, j] = 1 / (w[j] - w[i])`` (eigenvalues
    must be distinct where eigenvectors get a gradient), for the lower triangle read."""
    real_only(x, "eigh")
    w, v = y
    gw, gv = g
    inner = None if gw is None else diag_matrix(nd, gw)
    if gv is not None:
        term = off_diagonal_inverse(nd, w) * (nd.matrix_transpose(v) @ gv)
        inner = term if inner is None else inner + term
    if inner is None:
        return (None,)
    return (lower_read(nd, v @ inner @ nd.matrix_transpose(v)),)


@declare("linalg.eigh", dtypes="floating", reference=_ref_eigh, outputs=("eigenvalues", "eigenvectors"), vjp=_vjp_eigh)
def eigh(x: _ARRAY, /) -> Plan:
    """Eigenvalues (ascending, real dtype) and eigenvectors (columns) of each Hermitian matrix."""
    x = _matrices("eigh", x, square=True)
    return Plan.of(x, out_shape=(x.shape[:-1], x.shape), out_dtype=(real_dtype(x.dtype), x.dtype), args=(x,))  # type: ignore[arg-type]


def _ref_eig(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w, v = np.linalg.eig(x)
    dtype = complex_dtype(_dtypes.from_numpy_dtype(x.dtype)).numpy
    return w.astype(dtype, copy=False), v.astype(dtype, copy=False)


@declare("linalg.eig", dtypes="floating", reference=_ref_eig, outputs=("eigenvalues", "eigenvectors"), vjp=_NOT_GENERAL)
def eig(x: _ARRAY, /) -> Plan:
    """Eigenvalues and right eigenvectors (columns) of each square matrix, both complex."""
    x = _matrices("eig", x, square=True)
    dtype = complex_dtype(x.dtype)
    return Plan.of(x, out_shape=(x.shape[:-1], x.shape), out_dtype=(dtype, dtype), args=(x,))  # type: ignore[arg-type]


def _ref_qr(x: np.ndarray, mode: str = "reduced") -> tuple[np.ndarray, np.ndarray]:
    q, r = np.linalg.qr(x, mode=mode)
    return q, r


def _qr_square_or_tall(nd: Any, q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """``A = QR`` with ``Q`` of shape (m, n), m >= n: ``(gQ + Q copyltu(M)) R^-T`` with
    ``M = R gR^T - gQ^T Q`` and ``copyltu`` the symmetric matrix of M's lower triangle."""
    m = r @ nd.matrix_transpose(gr) - nd.matrix_transpose(gq) @ q
    lower = nd.tril(m, k=-1)
    sym = lower + nd.matrix_transpose(lower) + m * eye_like(nd, m)
    return solve_right(nd, gq + q @ sym, nd.matrix_transpose(r))


def _vjp_qr(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, mode: str = "reduced") -> tuple[Any, ...]:
    real_only(x, "qr")
    q, r = y
    gq, gr = g
    gq = nd.zeros_like(q) if gq is None else gq
    gr = nd.zeros_like(r) if gr is None else gr
    rows, cols = x.shape[-2:]
    if rows >= cols:
        if q.shape[-1] != cols:
            raise ValueError(
                "linalg.qr(mode='complete') of a tall matrix: the extra columns of Q are not unique, so Q has no gradient; use mode='reduced'"
            )
        return (_qr_square_or_tall(nd, q, r, gq, gr),)
    # wide: A = Q [X | Y] with X square; Y = Q R_Y adds Y gR_Y^T to the cotangent of Q
    gry = gr[..., :, rows:]
    gx = _qr_square_or_tall(nd, q, r[..., :, :rows], gq + x[..., :, rows:] @ nd.matrix_transpose(gry), gr[..., :, :rows])
    return (nd.concat([gx, q @ gry], axis=-1),)


@declare("linalg.qr", dtypes="floating", reference=_ref_qr, outputs=("Q", "R"), vjp=_vjp_qr)
def qr(x: _ARRAY, /, *, mode: str = "reduced") -> Plan:
    """QR decomposition of each matrix: ``Q`` with orthonormal columns and upper-triangular ``R``.

    ``mode="reduced"`` gives ``Q`` of shape ``(..., M, K)`` and ``R`` of ``(..., K, N)`` with
    ``K = min(M, N)``; ``mode="complete"`` gives ``(..., M, M)`` and ``(..., M, N)``.
    """
    x = _matrices("qr", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    if mode == "reduced":
        k = min(m, n)
        shapes = (batch + (m, k), batch + (k, n))
    elif mode == "complete":
        shapes = (batch + (m, m), batch + (m, n))
    else:
        raise ValueError(f"qr(): mode must be 'reduced' or 'complete', got {mode!r}")
    return Plan.of(x, out_shape=shapes, out_dtype=(x.dtype, x.dtype), args=(x,), kwargs={"mode": mode})  # type: ignore[arg-type]


def _ref_svd(x: np.ndarray, full_matrices: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return u, s, vh


def _vjp_svd(nd: Any, need: Any, g: Any, y: Any, x: Any, /, *, full_matrices: bool = True) -> tuple[Any, ...]:
    """Townsend's formula for ``A = U diag(S) V^T`` (distinct, non-zero singular values where
    U or V get a gradient); singular vectors beyond ``min(m, n)`` have none."""
    real_only(x, "svd")
    u, s, vh = y
    gu, gs, gvh = g
    rows, cols = x.shape[-2:]
    k = min(rows, cols)
    if full_matrices and rows != cols and (gu is not None or gvh is not None):
        raise ValueError(
            "linalg.svd(full_matrices=True) of a non-square matrix: the extra singular vectors are not unique, "
            "so U and Vh have no gradient; use full_matrices=False"
        )
    u, vh = u[..., :, :k], vh[..., :k, :]
    v = nd.matrix_transpose(vh)
    inner = nd.zeros(x.shape[:-2] + (k, k), dtype=x.dtype, device=x.device) if gs is None else diag_matrix(nd, gs)
    f = None if gu is None and gvh is None else off_diagonal_inverse(nd, s * s)
    grad = None
    if gu is not None:
        gu = gu[..., :, :k]
        utgu = nd.matrix_transpose(u) @ gu
        inner = inner + (f * (utgu - nd.matrix_transpose(utgu))) * s[..., None, :]
        grad = ((gu - u @ utgu) / s[..., None, :]) @ vh
    if gvh is not None:
        gv = nd.matrix_transpose(gvh[..., :k, :])
        vtgv = vh @ gv
        inner = inner + s[..., :, None] * (f * (vtgv - nd.matrix_transpose(vtgv)))
        term = (u / s[..., None, :]) @ nd.matrix_transpose(gv - v @ vtgv)
        grad = term if grad is None else grad + term
    core = u @ inner @ vh
    return (core if grad is None else core + grad,)


@declare("linalg.svd", dtypes="floating", reference=_ref_svd, outputs=("U", "S", "Vh"), vjp=_vjp_svd)
def svd(x: _ARRAY, /, *, full_matrices: bool = True) -> Plan:
    """Singular value decomposition ``x = U @ diag(S) @ Vh`` of each matrix (``S`` descending, real dtype)."""
    x = _matrices("svd", x)
    if not isinstance(full_matrices, bool):
        raise TypeError(f"svd(): full_matrices must be a bool, got {full_matrices!r}")
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    u, vh = ((m, m), (n, n)) if full_matrices else ((m, k), (k, n))
    shapes = (batch + u, batch + (k,), batch + vh)
    return Plan.of(x, out_shape=shapes, out_dtype=(x.dtype, real_dtype(x.dtype), x.dtype), args=(x,), kwargs={"full_matrices": full_matrices})  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- two arguments


def _ref_solve(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    if x2.ndim == 1:
        return np.linalg.solve(x1, x2[:, None])[..., 0]
    return np.linalg.solve(x1, x2)


def _vjp_solve(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    """``gB = A^-H g`` and ``gA = -gB X^H`` (a 1-D ``x2`` is one column)."""
    vector = x2.ndim == 1
    gm, xm = (g[..., None], y[..., None]) if vector else (g, y)
    gb = nd.linalg.solve(matrix_t(nd, x1), gm)
    ga = -(gb @ matrix_t(nd, xm)) if need[0] else None
    return ga, ((gb[..., 0] if vector else gb) if need[1] else None)


@declare("linalg.solve", dtypes="floating", reference=_ref_solve, vjp=_vjp_solve)
def solve(x1: _ARRAY, x2: _ARRAY, /) -> Plan:
    """Solve ``x1 @ x = x2`` for each square ``x1``; a 1-D ``x2`` is one right-hand-side vector.

    Otherwise ``x2`` is a stack of ``(M, K)`` right-hand sides and the batch axes broadcast.
    """
    device, dtype, args = _promote_pair("solve", x1, x2, "floating")
    _matrices("solve", x1, square=True)
    m = x1.shape[-1]
    if x2.ndim == 0:
        raise ValueError("solve(): x2 must have at least one dimension, got a 0-d array")
    if x2.ndim == 1:
        if x2.shape[0] != m:
            raise ValueError(f"solve(): x2 of shape {x2.shape} does not match x1 of shape {x1.shape} (need {m} elements)")
        out = x1.shape[:-1]
    else:
        if x2.shape[-2] != m:
            raise ValueError(f"solve(): x2 of shape {x2.shape} does not match x1 of shape {x1.shape} (need {m} rows)")
        out = broadcast_shapes(x1.shape[:-2], x2.shape[:-2]) + x2.shape[-2:]
    return Plan(device, dtype, dtype, out, tuple(args), reads=(x1, x2))


def _ref_cross(x1: np.ndarray, x2: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.cross(x1, x2, axis=axis))


def _vjp_cross(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /, *, axis: int = -1) -> tuple[Any, ...]:
    g1 = nd.linalg.cross(conj(nd, x2), g, axis=axis) if need[0] else None
    g2 = nd.linalg.cross(g, conj(nd, x1), axis=axis) if need[1] else None
    return g1, g2


@declare("linalg.cross", dtypes="numeric", reference=_ref_cross, vjp=_vjp_cross)
def cross(x1: _ARRAY, x2: _ARRAY, /, *, axis: int = -1) -> Plan:
    """Cross product of 3-element vectors along ``axis`` (the other axes broadcast)."""
    device, dtype, args = _promote_pair("cross", x1, x2, "numeric")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(f"cross() needs arrays of at least one dimension, got shapes {x1.shape} and {x2.shape}")
    shape = broadcast_shapes(x1.shape, x2.shape)
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"cross(): axis must be an int, got {axis!r}")
    if not -min(x1.ndim, x2.ndim) <= axis < 0:
        # Counted from the end, the axis must exist in both inputs (the standard's rule).
        raise ValueError(f"cross(): axis {axis} must be a negative axis present in both shapes {x1.shape} and {x2.shape}")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross(): axis {axis} must have size 3 in both arrays, got shapes {x1.shape} and {x2.shape}")
    return Plan(device, dtype, dtype, shape, tuple(args), {"axis": axis}, reads=(x1, x2))


def _ref_outer(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    return np.outer(x1, x2)


def _vjp_outer(nd: Any, need: Any, g: Any, y: Any, x1: Any, x2: Any, /) -> tuple[Any, ...]:
    return (g @ conj(nd, x2) if need[0] else None), (conj(nd, x1) @ g if need[1] else None)


@declare("linalg.outer", dtypes="numeric", reference=_ref_outer, vjp=_vjp_outer)
def outer(x1: _ARRAY, x2: _ARRAY, /) -> Plan:
    """Outer product of two 1-D arrays: ``out[i, j] = x1[i] * x2[j]``."""
    device, dtype, args = _promote_pair("outer", x1, x2, "numeric")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer() needs two 1-D arrays, got shapes {x1.shape} and {x2.shape}")
    return Plan(device, dtype, dtype, (x1.shape[0], x2.shape[0]), tuple(args), reads=(x1, x2))
