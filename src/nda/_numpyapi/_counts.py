"""NumPy's counting and covariance functions, written once over nda's ops.

``unique`` is the Array API's ``unique_all`` in NumPy's form (one NaN for all, by
default); ``argwhere`` stacks ``nonzero``; ``bincount`` sorts the values and
``searchsorted``\\ s the bin boundaries into them (exact counts, with no scatter kernel),
summing weights per bin with a masked reduction (or, past 2**24 mask elements, as
differences of a cumulative sum, as NumPy's own histogram does for explicit edges);
``histogram`` counts the values between the positions of the edges (made as NumPy makes
them) in the sorted data, NumPy's rule, or with weights finds each value's bin with
``searchsorted`` (the data's range is read on the host, like NumPy's estimators); ``cov``/``corrcoef``
centre and ``matmul``. The results that must be known on the host (``array_equal``'s
Python bool, ``bincount``'s length, ``histogram``'s range) are read there: those calls are
sync points.

Layer: arrays and front end, NumPy's names (README, "Architecture").
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np

from .. import _composite, _dtypes
from .._array import NDArray
from ._common import LINALG, api, array_arg, np_result_type, param_array, to_dtype
from ._stats import average, percentile

__all__ = ["unique", "argwhere", "array_equal", "bincount", "digitize", "histogram", "histogram_bin_edges", "cov", "corrcoef"]

#: Above this many mask elements (values x bins), weighted bins are summed as cumulative-sum differences.
_MASK_LIMIT = 1 << 24


def unique(
    ar: NDArray,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: Any = None,
    *,
    equal_nan: bool = True,
    sorted: bool = True,
) -> Any:  # noqa: A002 - NumPy's name
    """The sorted unique values of ``ar`` (NumPy's ``unique``), with the first indices, the inverse
    (``ar``'s shape) and the counts on request; NaNs count as one value unless ``equal_nan=False``.

    A sync point: the number of unique values decides the shape. ``axis`` is not supported
    (``np.unique(x, axis=...)`` computes it on a host copy).
    """
    ar = array_arg(ar, "unique", "ar")
    if axis is not None:
        raise TypeError("unique(): axis= is not supported by nda (np.unique(x, axis=...) computes it on a host copy)")
    flat = api.reshape(ar, (-1,))
    values, index, inverse, counts = api.unique_all(flat)
    inverse = api.reshape(inverse, ar.shape)
    if equal_nan and ar.dtype.category in ("real floating", "complex floating") and values.size:
        nans = int(api.sum(api.astype(api.isnan(values), _dtypes.int64)))
        if nans > 1:
            first = values.size - nans  # NaNs sort last: keep the first, fold the others into it
            counts = api.concat([counts[:first], api.reshape(api.sum(counts[first:]), (1,))])
            index = api.concat([index[:first], api.reshape(api.min(index[first:]), (1,))])
            inverse = api.minimum(inverse, first)
            values = values[: first + 1]
    extras = [r for r, wanted in ((index, return_index), (inverse, return_inverse), (counts, return_counts)) if wanted]
    return (values, *extras) if extras else values


def argwhere(a: NDArray) -> NDArray:
    """The indices of the non-zero elements, one row each: shape ``(N, a.ndim)`` (a sync point, as ``nonzero``)."""
    a = array_arg(a, "argwhere")
    if a.ndim == 0:
        return api.zeros((int(bool(a)), 0), dtype=_dtypes.int64, device=a.device)  # type: ignore[no-any-return]
    return api.stack(api.nonzero(a), axis=-1)  # type: ignore[no-any-return]


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    """Whether the two arrays have the same shape and elements, as a Python bool (a sync point).

    ``equal_nan=True`` counts NaN as equal to NaN (complex: NaN in either part).
    """
    if not isinstance(a1, NDArray) and not isinstance(a2, NDArray):
        raise TypeError("array_equal(): at least one of a1 and a2 must be an nda array (convert with nda.asarray)")
    device = (a1 if isinstance(a1, NDArray) else a2).device
    x = param_array(a1, device, "array_equal", "a1")
    y = param_array(a2, device, "array_equal", "a2")
    if x.shape != y.shape:
        return False
    common = np_result_type(x, y)
    x, y = to_dtype(x, common), to_dtype(y, common)
    same = api.equal(x, y)
    if equal_nan and common.category in ("real floating", "complex floating"):
        same = api.logical_or(same, api.logical_and(api.isnan(x), api.isnan(y)))
    return bool(api.all(same))


def _counts(index: NDArray, bins: int, weights: NDArray | None) -> NDArray:
    """How many of ``index`` (int64 in ``[0, bins)``) fall in each bin, or the sum of their ``weights``."""
    if weights is None:
        order = api.sort(index, stable=False)  # counts need no order among equal values
        edges = api.searchsorted(order, api.arange(bins + 1, dtype=_dtypes.int64, device=index.device))
        return api.subtract(edges[1:], edges[:-1])  # type: ignore[no-any-return]
    if index.size * bins <= _MASK_LIMIT:
        hits = api.equal(api.reshape(index, (1, -1)), api.reshape(api.arange(bins, dtype=_dtypes.int64, device=index.device), (-1, 1)))
        zero = api.zeros((), dtype=weights.dtype, device=index.device)
        return api.sum(api.where(hits, api.reshape(weights, (1, -1)), zero), axis=1)  # type: ignore[no-any-return]
    order = api.argsort(index, stable=True)
    sorted_index = api.take(index, order)
    running = api.cumulative_sum(api.take(weights, order), include_initial=True)
    edges = api.searchsorted(sorted_index, api.arange(bins + 1, dtype=_dtypes.int64, device=index.device))
    return api.subtract(api.take(running, edges[1:]), api.take(running, edges[:-1]))  # type: ignore[no-any-return]


def bincount(x: NDArray, weights: Any = None, minlength: int = 0) -> NDArray:
    """How many times each value ``0 .. max(x)`` occurs in the 1-D non-negative integer array ``x``
    (at least ``minlength`` bins); with ``weights``, their sum per value (float64).

    ``max(x)`` is read on the host (the length of the result depends on it): a sync point.
    """
    x = array_arg(x, "bincount", "x")
    if x.ndim != 1:
        raise ValueError(f"bincount(): x must be 1-D, got shape {x.shape}")
    if x.dtype.category not in ("signed integer", "unsigned integer", "bool"):
        raise TypeError(f"bincount(): cannot cast array data from dtype('{x.dtype.name}') to dtype('int64') according to the rule 'safe'")
    if x.dtype is _dtypes.uint64:
        raise TypeError("bincount(): cannot cast array data from dtype('uint64') to dtype('int64') according to the rule 'safe'")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("bincount(): minlength must be non-negative")
    index = to_dtype(x, _dtypes.int64)
    top = -1
    if x.size:
        if int(api.min(index)) < 0:
            raise ValueError("bincount(): x must have no negative elements")
        top = int(api.max(index))
    w = None
    if weights is not None:
        w = param_array(weights, x.device, "bincount", "weights")
        if w.shape != x.shape:
            raise ValueError(f"bincount(): weights must have x's shape {x.shape}, got {w.shape}")
        if w.dtype.category == "complex floating":
            raise TypeError("bincount(): weights must be real numbers (NumPy casts them to float64)")
        w = to_dtype(w, _dtypes.float64)
    return _counts(index, max(top + 1, minlength), w)


def _monotonic(bins: np.ndarray) -> int:
    """1 if ``bins`` increase, -1 if they decrease (both non-strictly), 0 otherwise."""
    if bins.size <= 1:
        return 1
    step = np.diff(bins)
    if np.all(step >= 0):
        return 1
    if np.all(step <= 0):
        return -1
    return 0


def digitize(x: NDArray, bins: Any, right: bool = False) -> NDArray:
    """The index of the bin of ``bins`` (1-D, monotonic) each value of ``x`` falls in (NumPy's ``digitize``).

    ``bins[i-1] <= v < bins[i]`` for increasing bins (``<`` and ``<=`` swapped by ``right=True``),
    mirrored for decreasing ones; ``bins`` is read on the host to check its order, and the
    search runs on the device (``searchsorted``).
    """
    x = array_arg(x, "digitize", "x")
    if x.dtype.category == "complex floating":
        raise TypeError("digitize(): x may not be complex")
    host = bins._host() if isinstance(bins, NDArray) else np.asarray(bins)
    if host.ndim != 1:
        raise ValueError("digitize(): object too deep for desired array (bins must be 1-D)")
    if host.dtype.kind == "c":
        raise TypeError("digitize(): bins may not be complex")
    direction = _monotonic(host)
    if direction == 0:
        raise ValueError("digitize(): bins must be monotonically increasing or decreasing")
    common = np_result_type(x, host.dtype)
    values = to_dtype(x, common)
    side = "left" if right else "right"
    if direction > 0:
        return api.searchsorted(api.asarray(host.astype(common.numpy), device=x.device), values, side=side)  # type: ignore[no-any-return]
    found = api.searchsorted(api.asarray(host[::-1].astype(common.numpy), device=x.device), values, side=side)
    return api.subtract(host.size, found)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- histogram


def _host_scalar(x: NDArray) -> Any:
    return x._host().reshape(())[()]


def _outer_edges(a: NDArray, range: Any) -> tuple[Any, Any]:  # noqa: A002 - NumPy's name
    if range is not None:
        first, last = range
        if first > last:
            raise ValueError("histogram(): max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"histogram(): supplied range of [{first}, {last}] is not finite")
    elif a.size == 0:
        first, last = 0, 1
    else:
        first, last = _host_scalar(api.min(a)), _host_scalar(api.max(a))
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"histogram(): autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first = first - 0.5
        last = last + 0.5
    return first, last


def _difference(hi: Any, lo: Any) -> Any:
    """``hi - lo`` without wrapping around for integers (NumPy's unsigned subtraction)."""
    if isinstance(hi, np.integer):
        return np.uint64(int(hi) - int(lo))
    return np.subtract(hi, lo)


def _bin_width(name: str, x: NDArray) -> float:
    """NumPy's bin-width estimators, on the device; their few scalars read on the host."""
    n = x.size
    if n == 0:
        return 0.0
    spread = _difference(_host_scalar(api.max(x)), _host_scalar(api.min(x)))
    if name == "sqrt":
        return float(spread / np.sqrt(n))
    if name == "sturges":
        return float(spread / (np.log2(n) + 1.0))
    if name == "rice":
        return float(spread / (2.0 * n ** (1.0 / 3)))
    xf = to_dtype(x, _dtypes.float64) if x.dtype.category != "real floating" else x
    if name == "scott":
        return float((24.0 * np.pi**0.5 / n) ** (1.0 / 3.0) * float(api.std(xf)))
    if name == "fd":
        hi, lo = percentile(x, [75, 25]).tolist()
        return float(2.0 * np.subtract(hi, lo) * n ** (-1.0 / 3.0))
    if name == "doane":
        if n <= 2:
            return 0.0
        sg1 = np.sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)))
        sigma = float(api.std(xf))
        if sigma > 0.0:
            g1 = float(api.mean(api.pow(api.divide(api.subtract(xf, api.mean(xf)), sigma), 3)))
            return float(spread / (1.0 + np.log2(n) + np.log2(1.0 + np.absolute(g1) / sg1)))
        return 0.0
    if name == "auto":  # FD, but no narrower than half the sqrt rule's width, and no wider than Sturges'
        fd, sturges, root = _bin_width("fd", x), _bin_width("sturges", x), _bin_width("sqrt", x)
        return min(max(fd, root / 2), sturges)
    raise ValueError(
        f"histogram(): {name!r} is not a bin estimator nda knows (use one of 'auto', 'fd', 'doane', 'scott', 'rice', 'sturges', 'sqrt', "
        "or np.histogram for 'stone', which computes it on a host copy)"
    )


def _edges(a: NDArray, bins: Any, range: Any, weights: Any) -> tuple[np.ndarray, bool]:  # noqa: A002
    """The bin edges on the host (as NumPy computes them) and whether they are equally spaced."""
    if isinstance(bins, str):
        if weights is not None:
            raise TypeError("histogram(): automated bin estimation is not supported for weighted data")
        first, last = _outer_edges(a, range)
        data = a
        if range is not None and a.size:
            keep = api.logical_and(api.greater_equal(a, first), api.less_equal(a, last))
            if not bool(api.all(keep)):
                data = a[keep]
        width = _bin_width(bins, data)
        if width and a.dtype.category in ("signed integer", "unsigned integer") and width < 1:
            width = 1  # integer data: no bin narrower than one
        count = int(np.ceil(_difference(last, first) / width)) if width else 1
        if a.size == 0:
            count = 1
        return _linear_edges(a, first, last, count), True
    if np.ndim(bins) == 0:
        try:
            count = operator.index(bins)
        except TypeError:
            raise TypeError("histogram(): bins must be an integer, a string, or an array") from None
        if count < 1:
            raise ValueError("histogram(): bins must be positive, when an integer")
        first, last = _outer_edges(a, range)
        return _linear_edges(a, first, last, count), True
    edges = bins._host() if isinstance(bins, NDArray) else np.asarray(bins)
    if edges.ndim != 1:
        raise ValueError("histogram(): bins must be 1d, when an array")
    if np.any(edges[:-1] > edges[1:]):
        raise ValueError("histogram(): bins must increase monotonically, when an array")
    return edges, False


def _linear_edges(a: NDArray, first: Any, last: Any, count: int) -> np.ndarray:
    bin_type = np.result_type(first, last, a.dtype.numpy)
    if np.issubdtype(bin_type, np.integer):
        bin_type = np.result_type(bin_type, float)
    return np.linspace(first, last, count + 1, endpoint=True, dtype=bin_type)


def histogram_bin_edges(a: NDArray, bins: Any = 10, range: Any = None, weights: Any = None) -> NDArray:  # noqa: A002
    """The bin edges :func:`histogram` uses (NumPy's ``histogram_bin_edges``), on ``a``'s device."""
    a = array_arg(a, "histogram_bin_edges")
    edges, _ = _edges(a, bins, range, weights)
    return api.asarray(edges, device=a.device)  # type: ignore[no-any-return]


def histogram(a: NDArray, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> tuple[NDArray, NDArray]:  # noqa: A002
    """NumPy's ``histogram``: ``(hist, bin_edges)``, both nda arrays on ``a``'s device.

    ``bins`` is a count (equal-width bins over ``range``, or over the data's range, which is
    read on the host), NumPy's estimator names ("auto", "fd", "doane", "scott", "rice",
    "sturges", "sqrt"), or the edges. Every bin is half-open except the last, which
    includes its right edge; values outside the range are left out. ``weights`` sums them
    instead of counting (``hist`` in their dtype); ``density=True`` normalises to a density.
    The binning (a ``sort`` and a ``searchsorted`` of the edges) and the counting run on the device.
    """
    a = array_arg(a, "histogram")
    if a.dtype.category == "complex floating":
        raise TypeError("histogram(): complex data is not supported (NumPy compares complex values by their real part)")
    flat = api.reshape(a, (-1,))
    w = None
    if weights is not None:
        w = api.reshape(param_array(weights, a.device, "histogram", "weights"), (-1,))
        if w.shape != flat.shape:
            raise ValueError("histogram(): weights should have the same shape as a.")
    edges, uniform = _edges(flat, bins, range, weights)
    count = edges.size - 1
    bin_edges = api.asarray(edges, device=a.device)
    # equal bins: the values in the edges' dtype (NumPy casts them); given edges: both in their common dtype
    common = edges.dtype if uniform else np.result_type(flat.dtype.numpy, edges.dtype)
    values = to_dtype(flat, _dtypes.from_numpy_dtype(common))
    search = bin_edges if edges.dtype == common else api.asarray(edges.astype(common), device=a.device)
    if w is None:  # NumPy's rule for given edges: counts between the edges' positions in the sorted data
        ordered = api.sort(values, stable=False)
        below = api.searchsorted(ordered, search[:-1], side="left")  # values < edges[i]
        through = api.searchsorted(ordered, search[-1:], side="right")  # values <= the last edge: the last bin is closed
        bounds = api.concat([below, through])
        hist = api.subtract(bounds[1:], bounds[:-1])
    else:
        index = api.subtract(api.searchsorted(search, values, side="right"), 1)
        last = float(edges[-1]) if edges.dtype.kind == "f" else int(edges[-1])
        index = api.where(api.equal(values, last), count - 1, index)  # the last bin is closed
        inside = api.logical_and(api.greater_equal(values, edges[0].item()), api.less_equal(values, last))
        index = api.where(inside, index, count)  # an extra bin for what falls outside, dropped below
        hist = _counts(api.astype(index, _dtypes.int64), count + 1, w)[:count]
    if density:
        widths = api.asarray(np.diff(edges).astype(float), device=a.device)
        total = api.sum(hist)
        hist = api.divide(api.divide(to_dtype(hist, _dtypes.float64) if w is None or hist.dtype.category != "real floating" else hist, widths), total)
    return hist, bin_edges


# ----------------------------------------------------------------------------- covariance


def _observations(m: Any, device: Any, dtype: Any, rowvar: bool, op: str, name: str) -> NDArray:
    x = param_array(m, device, op, name)
    if x.ndim > 2:
        raise ValueError(f"{op}(): {name} has more than 2 dimensions")
    x = to_dtype(x, dtype)
    if x.ndim < 2:
        x = api.reshape(x, (1,) * (2 - x.ndim) + x.shape)
    if not rowvar and x.shape[0] != 1:
        x = _composite.matrix_transpose(x)
    return x


def _integer_weights(f: Any, device: Any, n: int, name: str) -> NDArray:
    w = param_array(f, device, "cov", name)
    if w.ndim > 1:
        raise RuntimeError(f"cov(): cannot handle multidimensional {name}")
    if w.shape[0] != n:
        raise RuntimeError(f"cov(): incompatible numbers of samples and {name}")
    return w


def cov(
    m: NDArray,
    y: Any = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: int | None = None,
    fweights: Any = None,
    aweights: Any = None,
    *,
    dtype: Any = None,
) -> NDArray:
    """The covariance matrix of the variables in the rows of ``m`` (columns with ``rowvar=False``), NumPy's ``cov``.

    ``y`` adds variables; ``bias``/``ddof`` choose the normalisation (N - 1 by default);
    ``fweights`` (integer frequencies) and ``aweights`` (observation weights) weight the
    observations. The result is float64 unless ``dtype`` says otherwise (0-d for one
    variable); the weights are read on the host to check them, as NumPy does.
    """
    m = array_arg(m, "cov", "m")
    if ddof is not None and ddof != int(ddof):
        raise ValueError("cov(): ddof must be integer")
    dt = (
        _dtypes.as_dtype(dtype)
        if dtype is not None
        else (np_result_type(m, np.float64) if y is None else np_result_type(m, param_array(y, m.device, "cov", "y"), np.float64))
    )
    x = _observations(m, m.device, dt, rowvar, "cov", "m")
    if x.shape[0] == 0:
        return api.zeros((0, 0), dtype=dt, device=m.device)  # type: ignore[no-any-return]
    if y is not None:
        x = api.concat([x, _observations(y, m.device, dt, rowvar, "cov", "y")], axis=0)
    if ddof is None:
        ddof = 1 if not bias else 0
    n = x.shape[1]
    w = None
    if fweights is not None:
        fw = _integer_weights(fweights, m.device, n, "fweights")
        host = fw._host()
        if not np.all(host == np.around(host)):
            raise TypeError("cov(): fweights must be integer")
        if np.any(host < 0):
            raise ValueError("cov(): fweights cannot be negative")
        w = to_dtype(fw, _dtypes.float64)
    aw = None
    if aweights is not None:
        aw = to_dtype(_integer_weights(aweights, m.device, n, "aweights"), _dtypes.float64)
        if np.any(aw._host() < 0):
            raise ValueError("cov(): aweights cannot be negative")
        w = aw if w is None else api.multiply(w, aw)
    avg, w_sum = average(x, axis=1, weights=w, returned=True)
    w_total = float(w_sum[0]) if w is not None else float(n)
    if w is None:
        fact = float(n - ddof)
    elif ddof == 0:
        fact = w_total
    elif aw is None:
        fact = w_total - ddof
    else:
        fact = w_total - ddof * float(api.sum(api.multiply(w, aw))) / w_total
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    centred = api.subtract(x, api.reshape(to_dtype(avg, dt), (-1, 1)))
    weighted = centred if w is None else api.multiply(centred, to_dtype(w, dt))
    other = _composite.matrix_transpose(weighted)
    if dt.category == "complex floating":
        other = api.conj(other)
    c = api.matmul(centred, other)
    with np.errstate(divide="ignore"):
        scale = np.true_divide(1, fact)
    c = api.multiply(c, float(scale))
    squeezed = tuple(i for i, d in enumerate(c.shape) if d == 1)
    return api.squeeze(c, axis=squeezed) if squeezed else c  # type: ignore[no-any-return]


def corrcoef(x: NDArray, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> NDArray:
    """Pearson correlation coefficients (NumPy's ``corrcoef``): :func:`cov` normalised by the standard
    deviations, with the real (and imaginary) parts clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return api.divide(c, c)  # type: ignore[no-any-return]
    d = LINALG["diagonal"](c)
    stddev = api.sqrt(api.real(d) if d.dtype.category == "complex floating" else d)
    c = api.divide(c, api.reshape(stddev, (-1, 1)))
    c = api.divide(c, api.reshape(stddev, (1, -1)))
    if c.dtype.category == "complex floating":
        re, im = api.clip(api.real(c), -1.0, 1.0), api.clip(api.imag(c), -1.0, 1.0)
        return api.add(to_dtype(re, c.dtype), api.multiply(to_dtype(im, c.dtype), 1j))  # type: ignore[no-any-return]
    return api.clip(c, -1.0, 1.0)  # type: ignore[no-any-return]
