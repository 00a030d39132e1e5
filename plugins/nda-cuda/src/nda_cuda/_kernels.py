"""Derive a kernel for every op of nda's catalog from an array module (CuPy, or NumPy in tests).

nda's catalog gives each op a *reference*: a NumPy implementation written in the kernel
convention (the required parameters positionally, the ones with defaults by keyword;
dtypes as ``nda.DType``; creation ops get ``device=``). CuPy mirrors NumPy's API and
array-api-compat's cupy namespace gives it the Array API's names and semantics, so most
kernels need no code of their own: :func:`build` looks each op up *by name* and adapts the
call to the function's signature. New catalog ops therefore get a kernel as soon as their
name (or the NumPy function their reference is named after) exists in the namespace.

Lookup order for an op (first hit whose signature fits wins):

1. an explicit override from :data:`OVERRIDES` (where CuPy's semantics differ from the
   reference's, or the convention cannot be mapped by name);
2. the reference's own name: ``numpy.fft.fft`` -> ``fft.fft``, ``_ref_zeros`` -> ``zeros``
   (the reference says what the op *is*; ``zeros_like``'s reference is ``_ref_zeros``);
   a NumPy function's name is looked up in the array module first (CuPy mirrors NumPy,
   and the reference is NumPy), any other name in the Array-API namespace first;
3. the op's name (``acos``, ``linalg.inv``), Array-API namespace first.

The adapter (:func:`adapt`) binds the kernel convention to the target's signature: a
reference parameter goes by keyword when the target has a keyword parameter of that name,
positionally when it sits in the target's leading positional slots, and ``device`` is
dropped (the backend selects the device around the call). A target that cannot take every
argument is not used: the op then has no native kernel and runs through the host fallback.
``nda.DType`` values become the module's dtypes; a NumPy scalar result becomes a 0-d array;
a result that shares memory with an input of an op nda does not declare as a view is
copied (nda's engine tracks views only where the catalog says so).

Everything here takes the array module as a parameter, so ``tests/test_cuda.py`` builds
the same table over NumPy and runs nda's conformance kit on it without a GPU: that checks
the op -> function mapping and the argument conventions, not CuPy.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, Callable

import numpy as np

from nda import DType
from nda.engine import Deferred
from nda.backends.contract import kernel_parameters
from nda.ops import CATALOG, elementwise

from . import _decompositions, _fft, _reductions, _unique
from . import _workarounds as fix
from ._workarounds_linalg import WRAPPERS, eigvals as _eigvals, pinv as _pinv

__all__ = ["KernelSpec", "build", "adapt", "OVERRIDES", "FLUSHED_COMPLEX64"]

_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
#: Ops whose result may share memory with an input (besides those declared as views).
_MAY_ALIAS = {"astype"}


class KernelSpec:
    """One kernel: the op, the callable (module arrays in, module array out), where it came from."""

    __slots__ = ("op", "fn", "source")

    def __init__(self, op: str, fn: Callable[..., Any], source: str) -> None:
        self.op = op
        self.fn = fn
        self.source = source

    def __repr__(self) -> str:
        return f"<kernel {self.op} <- {self.source}>"


# --------------------------------------------------------------------------- lookup


def _resolve(namespace: Any, path: str) -> Any:
    obj = namespace
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if callable(obj) else None


def candidates(decl: Any, xp: Any, namespace: Any) -> list[tuple[str, Any]]:
    """(name, namespace) pairs to look the op up in, best first (see the module docstring).

    A reference that *is* a NumPy function (``numpy.sign``) is looked up in the array module
    first: CuPy's contract is to mirror NumPy, and the Array-API wrapper can differ at the
    edges (array-api-compat's complex ``sign`` gives NaN for infinite input, NumPy does not).
    Other names go to the Array-API namespace first.
    """
    found: list[tuple[str, Any]] = []
    ref = decl.reference
    ref_name = getattr(ref, "__name__", "") or ""
    module = getattr(ref, "__module__", None) or ""
    std = [s for s in (namespace, xp) if s is not None]
    if module == "numpy" or module.startswith("numpy."):
        public = [p for p in module.split(".")[1:] if not p.startswith("_") and p != "lib"]
        found += [(".".join([*public, ref_name]), s) for s in (xp, *std)]
    elif ref_name.startswith("_ref_"):
        prefix = decl.name.rpartition(".")[0]
        base = ref_name[len("_ref_") :]
        found += [(f"{prefix}.{base}" if prefix else base, s) for s in std]
    found += [(decl.name, s) for s in std]
    unique: list[tuple[str, Any]] = []
    for name, space in found:
        if all(name != n or space is not s for n, s in unique):
            unique.append((name, space))
    return unique


# --------------------------------------------------------------------------- the adapter


def adapt(decl: Any, target: Callable[..., Any], xp: ModuleType) -> Callable[..., Any] | None:
    """A kernel calling ``target`` with ``decl``'s kernel convention, or None if it cannot take it."""
    small = _reductions.adapt(decl, target, xp)  # sum, max, ...: called as cupy.sum(x) is (_reductions)
    if small is not None:
        return small
    positional, keywords = kernel_parameters(decl)
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        sig = None  # a ufunc or a C function: positional operands only
    if sig is None:
        if keywords or "device" in positional:
            return None
        return _finish(decl, target, xp)
    params = list(sig.parameters.values())
    slots = [p for p in params if p.kind in _POSITIONAL]
    open_ended = any(p.kind is _P.VAR_POSITIONAL for p in params)
    by_keyword = {p.name for p in params if p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)}
    # For each reference parameter: an int (positional slot), a str (keyword) or None (dropped).
    routes: list[tuple[str, Any]] = []
    leading = True
    for i, name in enumerate(positional):
        if name == "device":
            routes.append((name, None))
            leading = False
            continue
        slot_fits = leading and (i < len(slots) or open_ended)
        if slot_fits and (i >= len(slots) or slots[i].name == name or name not in by_keyword):
            routes.append((name, i))
        elif name in by_keyword:
            routes.append((name, name))
            leading = False
        else:
            return None
    for name in keywords:
        if name == "device":
            routes.append((name, None))
        elif name in by_keyword:
            routes.append((name, name))
        else:
            return None
    # nda's plans pass some required parameters by keyword (creation ops: ``dtype=``,
    # ``device=``), so every call is bound by name first and then laid out for the target.
    names = positional + [k for k in keywords if k not in positional]
    slot_names = [name for name, route in routes if route.__class__ is int]
    keyword_routes = [(name, route) for name, route in routes if route.__class__ is str]

    def call(*args: Any, **kwargs: Any) -> Any:
        named = dict(zip(names, args))
        named.update(kwargs)
        out_args = [named[n] for n in slot_names]
        out_kwargs = {route: named[n] for n, route in keyword_routes if n in named}
        return target(*out_args, **out_kwargs)

    return _finish(decl, call, xp)


def _finish(decl: Any, call: Callable[..., Any], xp: ModuleType) -> Callable[..., Any]:
    """Translate dtypes, make scalars 0-d arrays, copy unexpected views."""
    ndarray = xp.ndarray
    elementwise = decl.family in ("unary", "binary")
    guard_alias = not elementwise and not decl.view and decl.name not in _MAY_ALIAS and not decl.mutates
    may_share = getattr(xp, "may_share_memory", None)

    if elementwise:
        # The hot path: operands only, and the module's ufuncs already return arrays for
        # arrays (NumPy returns a scalar for 0-d input; nda's ensure_buffer takes care).
        return call

    def kernel(*args: Any, **kwargs: Any) -> Any:
        kwargs = {k: _translate(v) for k, v in kwargs.items()}
        result = call(*[_translate(a) for a in args], **kwargs)
        if result.__class__ is Deferred:  # a data-dependent check travels with the (finished) value
            return Deferred(None if decl.mutates else finish(result.value, args), result.check)
        if result is None or decl.mutates:
            return None
        return finish(result, args)

    def finish(result: Any, args: tuple[Any, ...]) -> Any:
        if result.__class__ is tuple:  # several outputs (nonzero): each one a device array
            return tuple(finish(r, args) for r in result)
        if result.__class__ is not ndarray:
            # A scalar becomes a 0-d array through fix.to_device (CuPy 14.2 would drop the sign of -0.0).
            result = xp.asarray(result) if isinstance(result, ndarray) else fix.to_device(xp, result)
        if guard_alias and may_share is not None:
            for a in args:
                for item in a if a.__class__ in (list, tuple) else (a,):
                    if item.__class__ is ndarray and may_share(result, item):
                        return result.copy()
        return result

    return kernel


def _translate(value: Any) -> Any:
    """nda dtypes become the module's (CuPy takes NumPy dtypes); everything else passes."""
    return value.numpy if type(value) is DType else value


# --------------------------------------------------------------------------- overrides
# Each factory takes the array module and returns a kernel in nda's convention, written
# only with functions NumPy and CuPy share (so the NumPy build tests them too).


def _index_bounds(xp: ModuleType, x: Any, key: Any) -> Callable[[], BaseException | None] | None:
    """The bounds check of an integer-array index ``x[key]``, computed on the device (:func:`_bounds`)."""
    return _bounds(xp, _index_arrays(x, key))


def _wrapped_key(x: Any, key: Any) -> Any:
    """``key`` with its integer index arrays taken modulo their axis (CuPy's behaviour)."""
    arrays = {id(part): n for part, n, _ in _index_arrays(x, key)}
    parts = key if key.__class__ is tuple else (key,)
    wrapped = tuple(part % arrays[id(part)] if id(part) in arrays and arrays[id(part)] else part for part in parts)
    return wrapped if key.__class__ is tuple else wrapped[0]


def _index_arrays(x: Any, key: Any) -> list[tuple[Any, int, int]]:
    """``(index array, axis size, axis)`` for each integer array in the index ``key`` of ``x``."""
    parts = key if key.__class__ is tuple else (key,)
    consuming = sum(
        0 if p is None or p is Ellipsis else (p.ndim if getattr(p, "dtype", None) is not None and p.dtype.kind == "b" else 1) for p in parts
    )
    axis = 0
    indexed: list[tuple[Any, int, int]] = []
    for part in parts:
        if part is None:
            continue
        if part is Ellipsis:
            axis += x.ndim - consuming
            continue
        dtype = getattr(part, "dtype", None)
        if dtype is not None and dtype.kind == "b":
            axis += part.ndim
            continue
        if dtype is not None and dtype.kind in "iu" and part.size:
            indexed.append((part, x.shape[axis], axis))
        axis += 1
    return indexed


def _bounds(xp: ModuleType, indexed: list[tuple[Any, int, int]]) -> Callable[[], BaseException | None] | None:
    """A check for integer index arrays, computed on the device without a sync.

    CuPy wraps out-of-bounds integer indices around silently; NumPy raises IndexError. Per
    ``(indices, axis size, axis)``, a flag (any index out of range) and the first offending
    index are computed with device ops and copied to host memory asynchronously
    (:func:`_later`); the returned check reads them once the op's marker is reached and
    returns the IndexError NumPy would raise, or None. nda calls it then
    (``nda.engine.Deferred``): the error surfaces at the sync point that reads the result,
    with the op's note, and the call never waits for the GPU. None when there is nothing to check.
    """
    checked: list[tuple[int, int]] = []
    values: list[Any] = []
    for part, n, axis in indexed:
        if not part.size:
            continue
        bad = ((part >= n) | (part < -n) if part.dtype.kind == "i" else part >= n).ravel()
        values.append(xp.any(bad))
        values.append(part.ravel()[xp.argmax(bad)])  # the first offending index (any index when none is)
        checked.append((axis, n))
    if not checked:
        return None
    read = _later(xp, values)

    def check() -> BaseException | None:
        found = read()
        for i, (axis, n) in enumerate(checked):
            if found[2 * i]:
                return IndexError(f"index {int(found[2 * i + 1])} is out of bounds for axis {axis} with size {n}")
        return None

    return check


def _checked_take(kernel: Callable[..., Any], xp: ModuleType) -> Callable[..., Any]:
    """``take``/``take_along_axis`` with NumPy's IndexError for out-of-bounds indices (CuPy wraps)."""

    def take(x: Any, indices: Any, **kwargs: Any) -> Any:
        axis = kwargs.get("axis")
        axis = (0 if axis is None else axis) % max(x.ndim, 1)
        n = x.shape[axis] if x.ndim else 1
        check = _bounds(xp, [(indices, n, axis)])
        if check is None:
            return kernel(x, indices, **kwargs)
        try:
            out = kernel(x, indices, **kwargs)
        except IndexError:  # NumPy (the mirror) raises at the call; CuPy wraps: do as CuPy, the check reports it
            out = kernel(x, indices % n, **kwargs)
        return Deferred(out, check)

    take.__name__ = getattr(kernel, "__name__", "take")
    return take


def _later(xp: ModuleType, values: list[Any]) -> Callable[[], list[Any]]:
    """0-d device values as host values, copied without waiting; read them after the op's marker.

    Over CuPy they are packed into one int64 array whose copy into pinned host memory is enqueued
    on the current (the device's) stream, behind the kernels that computed them; the op's marker
    is recorded after it. Read before the marker is reached, the buffer holds whatever it held.
    Over the model of CuPy (no ``cuda`` module of its own) the same copy goes into host memory
    filled with -1 (the model's copy lands in stream order: an early read sees the -1); over
    NumPy the values are on the host already.
    """
    real = hasattr(xp, "cuda")
    if not real and not hasattr(values[0], "get"):
        return lambda: [v.item() for v in values]
    packed = xp.stack([v.astype(xp.int64) for v in values])
    if real:
        import cupyx

        host = cupyx.empty_pinned(packed.shape, dtype=packed.dtype)
        packed.get(stream=xp.cuda.get_current_stream(), out=host, blocking=False)
    else:
        host = np.full(packed.shape, -1, dtype=np.int64)
        packed.get(out=host, blocking=False)
    return lambda: host.tolist()


def _getitem(xp: ModuleType) -> Callable[..., Any]:
    def getitem(a: Any, b: Any) -> Any:
        check = _index_bounds(xp, a, b)
        if check is None:
            return a[b]
        try:
            out = a[b]
        except IndexError:  # NumPy (the mirror) raises at the call; CuPy wraps: do as CuPy, the check reports it
            out = a[_wrapped_key(a, b)]
        return Deferred(out, check)

    return getitem


def _setitem(xp: ModuleType) -> Callable[..., Any]:
    def setitem(x: Any, key: Any, value: Any) -> Any:
        check = _index_bounds(xp, x, key)
        if check is None:
            x[key] = value
            return None
        try:
            x[key] = value
        except IndexError:  # as in getitem; the target is poisoned by the check anyway
            x[_wrapped_key(x, key)] = value
        return Deferred(None, check)

    return setitem


def _asarray(xp: ModuleType) -> Callable[..., Any]:
    def asarray(host: Any, device: Any, copy: bool | None = None) -> Any:
        return fix.to_device(xp, host)  # into device memory (for NumPy: a private copy), signed zeros kept

    return asarray


def _part(name: str) -> Callable[[ModuleType], Callable[..., Any]]:
    def factory(xp: ModuleType) -> Callable[..., Any]:
        fn = getattr(xp, name)

        def part(x: Any) -> Any:
            return fn(x).copy()  # xp.real/imag return views (or x itself); nda's op is a new array

        part.__name__ = name
        return part

    return factory


def _shift(left: bool) -> Callable[[ModuleType], Callable[..., Any]]:
    """NumPy defines shifts by >= the bit width (or negative counts) as 0, or -1 for a negative
    signed value shifted right; C (and so a CUDA kernel) leaves them undefined."""

    def factory(xp: ModuleType) -> Callable[..., Any]:
        shift = xp.left_shift if left else xp.right_shift

        def kernel(x1: Any, x2: Any) -> Any:
            dtype = (x1 if hasattr(x1, "dtype") else x2).dtype
            bits = dtype.itemsize * 8
            a = xp.asarray(x1, dtype=dtype)
            count = xp.asarray(x2, dtype=dtype)
            ok = (count >= 0) & (count < bits) if dtype.kind == "i" else count < bits
            shifted = shift(a, xp.where(ok, count, xp.zeros((), dtype=dtype)))
            if left or dtype.kind == "u":
                spill = xp.zeros((), dtype=dtype)
            else:
                spill = xp.where(a < 0, xp.asarray(-1, dtype=dtype), xp.zeros((), dtype=dtype))
            return xp.where(ok, shifted, spill)

        kernel.__name__ = "left_shift" if left else "right_shift"
        return kernel

    return factory


def _NEGATIVE_POWER() -> ValueError:
    return ValueError("Integers to negative integer powers are not allowed.")


def _pow(xp: ModuleType) -> Callable[..., Any]:
    power = xp.power

    def pow(x1: Any, x2: Any) -> Any:  # noqa: A001
        dtype = getattr(x2, "dtype", None)
        if dtype is not None and dtype.kind == "i" and getattr(x1, "dtype", dtype).kind in "iu":
            if x2.size:  # NumPy raises; a CUDA kernel would return garbage. Checked on the device, no sync.
                negative = x2 < 0
                read = _later(xp, [xp.any(negative)])
                # NumPy (the mirror) raises at the call; CuPy computes garbage: the check reports it.
                out = power(x1, xp.where(negative, xp.zeros((), dtype=dtype), x2)) if not hasattr(xp, "cuda") else power(x1, x2)
                return Deferred(out, lambda: _NEGATIVE_POWER() if read()[0] else None)
        elif x2.__class__ is int and x2 < 0 and getattr(x1, "dtype", None) is not None and x1.dtype.kind in "iu":
            raise ValueError("Integers to negative integer powers are not allowed.")
        return power(x1, x2)

    return pow


#: op -> factory(xp) for ops whose CuPy function differs from the reference, or that have none.
OVERRIDES: dict[str, Callable[[ModuleType], Callable[..., Any]]] = {
    "asarray": _asarray,
    "getitem": _getitem,
    "setitem": lambda xp: fix.keep_zero_sign(xp, _setitem(xp)),
    "real": _part("real"),
    "imag": _part("imag"),
    "bitwise_left_shift": _shift(True),
    "bitwise_right_shift": _shift(False),
    "pow": lambda xp: fix.power(xp, _pow(xp)),
    # The standard's special cases that NumPy's (and CuPy's) functions miss: nda's reference
    # implementations are written over any NumPy-like module, so they are reused as they are.
    "tanh": lambda xp: fix.flushed_complex64(xp, elementwise.tanh_for(xp)),
    # Where CuPy 14.2 differs from NumPy (found on an H100; see nda_cuda._workarounds): NumPy's
    # algorithms, written over the array module, and nda's special cases on top where it has any.
    "exp": fix.exp,
    "expm1": lambda xp: fix.expm1(xp, elementwise.expm1_for),
    "floor_divide": fix.floor_divide,
    "remainder": fix.remainder,
    "hypot": fix.hypot,
    "abs": fix.absolute,
    "log": fix.log,
    "log10": fix.log10,
    "log2": fix.log2,
    "log1p": fix.log1p,
    "divide": fix.divide,
    "reciprocal": fix.reciprocal,
    "sign": fix.sign,
    "full": fix.full,
    "full_like": fix.full,
    "arange": fix.arange,
    "linspace": fix.linspace,
    "isin": fix.isin,
    "linalg.pinv": _pinv,
    "linalg.eigvals": _eigvals,
    # nda's fft ops on cupy.fft, keywords by name (their references take **kwargs, which the
    # adapter cannot route), zero-size batches and irfftn's convention (nda_cuda._fft)
    **_fft.factories(),
    # eig, eigh, qr, svd, slogdet, matrix_rank on CuPy's own functions (plain tuples; array-api-compat's
    # are named tuples), with the reference's dtypes, tolerance and empty matrices (nda_cuda._decompositions)
    **_decompositions.factories(),
    # unique_* on cupy.unique (plain tuples), NaNs last, int64 indices, the inverse of x's shape (nda_cuda._unique)
    **_unique.factories(),
}

#: Element-wise ops whose CuPy 14.2 complex64 functions test the bits of subnormal parts
#: (``nda_cuda._workarounds.flushed_complex64``): their derived kernels get flushed input.
FLUSHED_COMPLEX64 = ("sin", "cos", "tan", "sinh", "cosh")


#: Ops that run through nda's host fallback on purpose, with why (``build`` reports them in
#: ``unmapped``). None since issue 35: the ops that were here for their result conventions have
#: kernels of their own (``fft.*``: :mod:`nda_cuda._fft`; ``linalg.eig``, ``eigh``, ``qr``, ``svd``,
#: ``slogdet``, ``matrix_rank``: :mod:`nda_cuda._decompositions`; ``unique_*``: :mod:`nda_cuda._unique`).
HOST_FALLBACK: dict[str, str] = {}


# --------------------------------------------------------------------------- the table


def build(
    xp: ModuleType, namespace: Any = None, catalog: dict[str, Any] | None = None, generator: Any = None
) -> tuple[list[KernelSpec], dict[str, str]]:
    """Kernels for the catalog over array module ``xp`` (and its Array-API ``namespace``).

    Returns the kernels and, for every op without one, why (those run through nda's host
    fallback). ``namespace`` defaults to ``xp``. With a ``generator``
    (:class:`nda_cuda._elementwise.Generator`), the kernels of the element-wise ops, ``where``
    and ``astype`` run nda-cuda's generated kernels for the calls those take, and the kernel
    found here for the others.
    """
    kernels, missing = _build(xp, namespace, catalog)
    if generator is not None:
        catalog = CATALOG if catalog is None else catalog
        kernels = [
            KernelSpec(k.op, generator.wrap(k.op, catalog[k.op].family, k.fn), k.source)
            if catalog[k.op].family in ("unary", "binary") or k.op in ("where", "astype")
            else k
            for k in kernels
        ]
    return kernels, missing


def _build(xp: ModuleType, namespace: Any, catalog: dict[str, Any] | None) -> tuple[list[KernelSpec], dict[str, str]]:
    catalog = CATALOG if catalog is None else catalog
    kernels: list[KernelSpec] = []
    missing: dict[str, str] = {}
    for name, decl in catalog.items():
        if name in HOST_FALLBACK:
            missing[name] = HOST_FALLBACK[name]
            continue
        override = OVERRIDES.get(name)
        if override is not None:
            fn = override(xp)
            kernel = fn if decl.family in ("unary", "binary") else _finish(decl, fn, xp)
            kernels.append(KernelSpec(name, kernel, f"nda_cuda override {fn.__name__}"))
            continue
        tried = []
        for path, space in candidates(decl, xp, namespace):
            target = _resolve(space, path)
            if target is None:
                continue
            where = f"{getattr(space, '__name__', 'xp')}.{path}"
            tried.append(where)
            kernel = adapt(decl, target, xp)
            if kernel is not None:
                if name in ("take", "take_along_axis"):
                    kernel = _checked_take(kernel, xp)
                if name in WRAPPERS:
                    kernel = WRAPPERS[name](xp, kernel)
                if name in FLUSHED_COMPLEX64:
                    kernel = fix.flushed_complex64(xp, kernel)
                if getattr(kernel, "__qualname__", "").endswith("_small"):  # the reductions' small-size path (_reductions)
                    where = f"{where} {kernel.__qualname__}"
                kernels.append(KernelSpec(name, kernel, where))
                break
        else:
            names = sorted({n for n, _ in candidates(decl, xp, namespace)})
            missing[name] = f"signature does not fit ({', '.join(tried)})" if tried else f"no function named {' or '.join(names)}"
    return kernels, missing
