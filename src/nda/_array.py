"""NDArray: a small handle on a backend buffer.

An NDArray holds five things: ``_buf`` (the backend's buffer, e.g. a ``numpy.ndarray``
on cpu; ``None`` while the engine has not produced it yet), ``_meta`` (an interned
:class:`~nda._devices.ArrayMeta`: device, dtype, layout and kernel key), ``_shape``,
``_size`` (its element count, which decides whether an op on it may run inline) and
``_base`` (for a view, the array whose storage it shares, so that the engine orders
writes through views; ``None`` otherwise). It is slotted, and the hot path builds it with
``object.__new__`` plus five attribute stores.

This module defines the parts of NDArray that are not ops: attributes, conversions to
Python and NumPy, DLPack, ``repr`` and the notebook view (``_repr_html_``, which like
every display is a sync point) and sync points. Arrays of a non-strided layout (``csr``,
``row_sparse``) report their logical ``shape``/``size``; ``asnumpy()``/``tolist()``
densify them (explicit conversions), ``np.asarray`` refuses (a library calling it must not
densify a huge sparse matrix behind the user's back), and ``repr`` shows the stored
components.

NDArray is defined here, once, with what needs no higher layer. Everything else is attached
by ``nda._namespace`` when nda is imported, and nothing rebinds it afterwards: in one loop
over the op catalog, the operators and methods that *are* ops (``+``, ``x[i]``,
``.sum()``, ``.reshape()``…), with ``x.T``, ``x.mT`` and iteration (made of those ops);
then, once the layers above have been imported, the methods that call them (``astype``,
``to_device``, ``copy``, pickling, NumPy's protocols, ``attach_grad``…), through one typed
registration (:class:`nda._namespace.ArrayAPI`, given by the ``nda`` package). This
module never calls a higher layer: a lower layer never imports a higher one, and no
slot here is filled from above. NumPy's methods that are NumPy-named functions
(``x.cumsum()``, ``x.sort()``, ``x.flat``, ``x.nbytes``) come from the base class
:class:`nda._arraymethods.NumPyMethods`. The typed stubs (``_array.pyi``) list the
class as it is once nda is imported.

Layer: arrays and front end, array handle (README, "Architecture").
"""

from __future__ import annotations

from math import prod
from time import perf_counter
from typing import Any

import numpy as np

from . import _display, _hostcopy, _intercept, backends, layouts
from ._arraymethods import NumPyMethods
from ._devices import ArrayMeta, Device, Layout
from ._dtypes import DType
from .ops.spec import Array
from .engine import queued_pending
from .engine import state as _engine_state

__all__ = ["NDArray", "HOST_READS", "new_array"]


#: ``[n]``: host reads of arrays so far (any thread). A generated function compares it before
#: and after planning: a plan during which a value was read is not memoised (nda._planned).
HOST_READS = [0]


class NDArray(Array, NumPyMethods):
    """An n-dimensional array on some device, computed by nda's engine.

    Create arrays with ``nda.asarray``, ``nda.zeros``, ``nda.arange``…; all Array API
    operators and methods work, and data leaves the device only through explicit calls
    (``asnumpy()``, ``to_numpy()``, ``tolist()``, ``item()``, ``float(x)``,
    ``np.asarray(x)``), each of which waits for pending work on the array.
    """

    __slots__ = ("_buf", "_meta", "_shape", "_size", "_base", "__weakref__")
    __array_priority__ = 1000
    # NumPy's ufuncs and functions on an NDArray (``np.sin(x)``, ``np.sum(x)``,
    # ``numpy_array + x``) never pull the data to the host: ``__array_ufunc__`` and
    # ``__array_function__`` (attached by ``nda._namespace``) call ``nda._interop``, which
    # runs nda's own functions or refuses with a TypeError naming what to call instead.
    __hash__ = None  # type: ignore[assignment]  # mutable, and == is element-wise

    _buf: Any
    _meta: ArrayMeta
    _shape: tuple[int, ...]
    _size: int
    _base: NDArray | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("NDArray is not constructed directly; use nda.asarray(...), nda.zeros(...), nda.empty(...) and friends")

    # ------------------------------------------------------------------ attributes
    @property
    def shape(self) -> tuple[int, ...]:
        """The array's dimensions."""
        return self._shape

    @property
    def dtype(self) -> DType:
        """The element dtype (an ``nda`` dtype such as ``nda.float32``)."""
        return self._meta.dtype

    @property
    def device(self) -> Device:
        """The device the array's data lives on."""
        return self._meta.device

    @property
    def layout(self) -> Layout:
        """The storage layout (``strided`` for dense arrays)."""
        return self._meta.layout

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return self._size

    # ------------------------------------------------------------------ sync points
    def wait_to_read(self) -> NDArray:
        """Block until every pending write to this array has finished; raise its error if it failed."""
        if _intercept.ACTIVE[0] and _intercept.waiting(self):
            return self  # an interceptor's stand-in (hybridize's check mode): nothing to wait for yet
        _engine_state.wait_for(self, False)
        return self

    def wait_to_write(self) -> NDArray:
        """Block until every pending read and write of this array has finished; raise its error if it failed."""
        if _intercept.ACTIVE[0] and _intercept.waiting(self):
            return self
        _engine_state.wait_for(self, True)
        return self

    def _host(self) -> np.ndarray:
        """The data as a NumPy array (no copy on cpu), after waiting for pending writes.

        For a non-strided layout this is a dense copy: only explicit conversions call it.
        A host read is announced to the calling thread's interceptors (hybridize ends its
        graph there: what follows may depend on the data).
        """
        HOST_READS[0] += 1
        if _intercept.ACTIVE[0]:
            _intercept.reading(self, "asnumpy, float(x), repr, tolist, np.asarray")
        if self._meta.layout.name != "strided":
            return layouts.dense_host(self)  # type: ignore[no-any-return]
        return backends.to_host(self)  # a sync point: waits for the writes, raises their error

    # ------------------------------------------------------------------ conversions
    def asnumpy(self) -> np.ndarray:
        """A NumPy copy of the data (waits for pending work); dense whatever the layout."""
        return np.array(self._host(), copy=True)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's array protocol: shared memory on cpu, a read-only copy elsewhere unless ``copy=True`` (``nda._hostcopy``)."""
        if self._meta.layout.name != "strided":
            raise TypeError(
                f"np.asarray() of a {self._meta.layout.name} array would densify its {self._size:,} elements implicitly; "
                f"call x.asnumpy() or x.to_layout('strided') to do it explicitly"
            )
        return _hostcopy.array(self, dtype, copy)

    def to_numpy(self, dtype: Any = None, copy: bool | None = False) -> np.ndarray:
        """The data as a NumPy array, with the meaning pandas' and xarray's ``to_numpy()`` give it.

        ``copy=False`` (the default; ``None`` means the same) is ``np.asarray(x, dtype)``: on
        cpu the array's own memory, shared (a write reaches the array); on any other device a
        read-only host copy (README "Ecosystem": a write into a host copy raises, it never
        vanishes). ``copy=True`` is a fresh, writable copy (``np.array(x, dtype)``).
        Non-strided layouts refuse, as ``np.asarray`` does.

        Why it exists: matplotlib unpacks its input with ``to_numpy()`` where there is one,
        and takes any other object with ``len()`` and iteration for a list of datasets, so a
        2-d array was one dataset per *row* to ``ax.hist``, ``ax.boxplot`` and
        ``ax.violinplot`` (NumPy's arrays give one per column). It is ``np.asarray``'s answer,
        not always a copy, so that the two never disagree about a cpu array (matplotlib
        calls both on the same input).
        """
        if copy is not None and copy is not True and copy is not False:
            raise TypeError(f"to_numpy(copy=...) takes True or False, got {copy!r}")
        return self.__array__(dtype, True if copy else None)

    def tolist(self) -> Any:
        """The data as nested Python lists of Python scalars."""
        return self._host().tolist()

    def item(self) -> bool | int | float | complex:
        """The single element as a Python scalar (the array must have exactly one element)."""
        if self.size != 1:
            raise ValueError(f"item() needs an array with exactly one element, got shape {self._shape}")
        return self._host().item()  # type: ignore[no-any-return]

    def _scalar(self, kind: str) -> Any:
        if self.size != 1:
            raise TypeError(f"only arrays with exactly one element can be converted to Python {kind}, got shape {self._shape}")
        return self._host().reshape(()).item()

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"the truth value of an array of shape {self._shape} is ambiguous; use nda.any(x) or nda.all(x)")
        return bool(self._scalar("bool"))

    def __int__(self) -> int:
        value = self._scalar("int")
        if isinstance(value, complex):
            raise TypeError("cannot convert a complex array to int; take nda.real(x) first")
        return int(value)

    def __float__(self) -> float:
        value = self._scalar("float")
        if isinstance(value, complex):
            raise TypeError("cannot convert a complex array to float; take nda.real(x) first")
        return float(value)

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if self.ndim != 0 or self._meta.dtype.category not in ("signed integer", "unsigned integer"):
            raise TypeError(f"only 0-d integer arrays can be used as an index, got a {self._meta.dtype.name} array of shape {self._shape}")
        return int(self._host().item())

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: bool | None = None) -> Any:
        if self._meta.layout.name != "strided":
            raise BufferError(f"DLPack exports strided arrays only; this array is {self._meta.layout.name} (use x.to_layout('strided'))")
        if _intercept.ACTIVE[0]:
            _intercept.reading(self, "__dlpack__")
        return _hostcopy.dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return _hostcopy.dlpack_device(self)

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        if self._meta.layout.name != "strided":
            if _intercept.ACTIVE[0]:
                _intercept.reading(self, "repr")
            return layouts.sparse_repr(self)
        return self._repr_of(_display.host_for_display(self))  # a large device array: only its corners

    def _repr_of(self, host: np.ndarray) -> str:
        """NumPy's repr of the data, plus ``device=``/``layout=`` when they are not the defaults."""
        if self._meta.layout.name != "strided":
            return layouts.sparse_repr(self)
        body = _display.array_repr(host)
        dev = self._meta.device
        extras = []
        if dev.type != "cpu" or dev.index != 0:
            extras.append(f"device='{dev}'")
        if self._meta.layout.name != "strided":
            extras.append(f"layout='{self._meta.layout.name}'")
        if extras:
            body = body[:-1] + ", " + ", ".join(extras) + ")"
        return body

    def __str__(self) -> str:
        if self._meta.layout.name != "strided":
            return repr(self)
        return _display.array_str(_display.host_for_display(self))

    def _repr_html_(self) -> str:
        """The notebook view: shape, dtype, device, layout, readiness, nbytes and values.

        Displaying is a sync point like ``repr``: it waits for pending writes. The array of a
        failed op shows that op's error, once and short (its type and message, the op, the
        line that issued it, the device; the full traceback folded: ``nda._display``) where
        ``repr`` raises it. Only what is printed is copied from a device. Whether the array was still being
        computed when it was displayed is recorded before waiting, so the header says
        ``ready`` or ``pending → ready`` with the time the display waited. Values are
        truncated the way NumPy truncates them (``np.get_printoptions()``); a non-strided
        (sparse) layout also shows its number of stored non-zeros and the density.
        """
        try:
            fetched = _fetch_for_display(self)
        except Exception as err:  # noqa: BLE001 - a failed op: its error, once and short (nda._display)
            return _display.failure_bundle(self, err)["text/html"]
        return _html(self, *fetched)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """``text/plain`` and ``text/html`` from one wait.

        IPython asks for this bundle before any single-format ``_repr_*_`` method. Without
        it, IPython renders ``text/plain`` (``repr``, which waits) before ``text/html``, and
        the HTML view could never see that the array was still pending.
        """
        try:
            host, pending, waited = _fetch_for_display(self)
        except Exception as err:  # noqa: BLE001 - a failed op: its error, once and short (nda._display)
            return _display.failure_bundle(self, err)
        return {"text/plain": self._repr_of(host), "text/html": _html(self, host, pending, waited)}

    def __format__(self, spec: str) -> str:
        """``f"{x}"`` is ``str(x)``; ``f"{x:.3f}"`` formats the element of a 0-d or 1-element array
        (as ``float(x)`` takes it); a format spec for more elements is a TypeError, as in NumPy."""
        if not spec:
            return str(self)
        if self._size != 1:
            raise TypeError(
                f"format spec {spec!r} needs an array with exactly one element, got shape {self._shape}; "
                f"format its elements (x.tolist(), or x[i].item()) or use str(x)"
            )
        return format(self.item(), spec)


def _is_pending(array: NDArray) -> bool:
    """Whether the engine still has unfinished writes to ``array`` (never blocks).

    Work on a device queue is pending until its marker is reached (a non-blocking query).
    Otherwise only the threaded engine runs work in the background; its dependency graph
    answers under its lock. The deferred test engine is pending while its queue is not
    empty, and the synchronous engine never is.
    """
    if queued_pending(array):
        return True
    engine = _engine_state.engine
    probe = getattr(engine, "writes_pending", None)  # the threaded engine answers under its lock
    if probe is not None:
        return bool(probe(array))
    return bool(getattr(engine, "_queue", None))


def _fetch_for_display(array: NDArray) -> tuple[np.ndarray, bool, float]:
    """(host data, was it pending, seconds waited): the one sync point of a display."""
    if _intercept.ACTIVE[0]:
        _intercept.reading(array, "a display")
    pending = _is_pending(array)
    start = perf_counter()
    if array._meta.layout.name != "strided":
        host = layouts.host_buffer(array)  # the stored parts: a display never densifies
    else:
        host = _display.host_for_display(array)  # raises a failed op's error, with its note
    return host, pending, perf_counter() - start


def _html(array: NDArray, host: np.ndarray, pending: bool, waited: float) -> str:
    """The notebook view of ``array`` (see ``NDArray._repr_html_``)."""
    import html

    meta = array._meta
    state = f"pending → ready (waited {waited * 1e3:.1f} ms)" if pending else "ready"
    facts = [
        ("shape", str(array._shape)),
        ("dtype", meta.dtype.name),
        ("device", str(meta.device)),
        ("layout", meta.layout.name),
        ("state", state),
        ("nbytes", _format_bytes(array._size * np.dtype(meta.dtype.name).itemsize)),
    ]
    if meta.layout.name != "strided":
        nnz = getattr(host, "nnz", None)
        nnz = int(np.count_nonzero(host) if nnz is None else nnz)
        facts.append(("nnz", f"{nnz:,}"))
        facts.append(("density", f"{nnz / array._size:.2%}" if array._size else "-"))
    header = " ".join(f'<span style="margin-right:0.9em"><span style="opacity:0.6">{html.escape(k)}</span> {html.escape(v)}</span>' for k, v in facts)
    if meta.layout.name != "strided" and isinstance(array, NDArray):
        values = layouts.sparse_repr(array)
    else:
        values = _display.array2string(host, separator=", ") if host.ndim else repr(np.asarray(host).item())
    return (
        '<div class="nda-ndarray" style="font-family:var(--jp-code-font-family, monospace);font-size:var(--jp-code-font-size, 13px)">'
        f"<div><b>nda.NDArray</b> {header}</div>"
        f'<pre style="margin:0.3em 0 0 0">{html.escape(values)}</pre></div>'
    )


def _format_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


_new = object.__new__


def new_array(buf: Any, meta: ArrayMeta, shape: tuple[int, ...]) -> NDArray:
    """Build an NDArray around a buffer (no checks; front-end use only)."""
    out = _new(NDArray)
    out._buf = buf
    out._meta = meta
    out._shape = shape
    out._size = prod(shape)
    out._base = None
    return out
