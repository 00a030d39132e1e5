"""Gluon-style automatic differentiation: ``attach_grad``, ``record()``, ``backward()``, ``x.grad``.

::

    w = nda.asarray(np.random.randn(3, 1))
    w.attach_grad()                       # w.grad: a zero array of w's shape, dtype, device
    with nda.autograd.record():           # this thread records the calls it makes
        loss = nda.mean((x @ w - y) ** 2)
    loss.backward()                       # w.grad now holds d loss / d w
    w -= 0.1 * w.grad                     # outside record(): a plain update

How it works, and what it costs:

* **Recording.** ``record()`` puts autograd's interceptor on the calling thread's stack at
  the invocation point every op call goes through (``nda._intercept``, ``_record``); a
  call whose arguments need a gradient adds a node to the graph (``_graph``). Nothing in
  NDArray or in a namespace changes: a function bound anywhere records. Recording is per
  thread: ``record()`` and ``pause()`` set a thread-local flag, and other threads keep
  running unrecorded (while any thread records, every op takes the slow path of its
  function, where the calling thread's interceptors are looked up).
* **Gradients are ops.** Each op's declaration in the catalog carries its
  vector-Jacobian product written with nda ops (``nda.ops.spec``), so the backward
  pass (``_backward``) dispatches, runs on the arrays' device (cpu, sim, cuda, a
  vendor's) and is ordered by the engine asynchronously like any other work, and with
  ``create_graph=True`` it is recorded too, for gradients of gradients.
* **State.** Which arrays need gradients, their gradient buffers and the graph live in
  side tables keyed by array identity with weak references (no slot on NDArray, so
  arrays and the hot path do not pay for autograd). ``x.grad`` is a buffer written in
  place by ``backward`` (``grad_req="write"``) or added to (``"add"``), as in MXNet.
* **In-place writes.** Inside ``record()``, writing in place into an array that is part
  of the graph (``x += 1``, ``x[i] = v``) raises :class:`AutogradError`, as in MXNet.
  Outside, writes are allowed, but backward refuses to use an array that a recorded call
  saved and that was overwritten since (PyTorch's rule); ``retain_graph`` graphs and
  graphs not yet used are checked this way.
* **What records.** Every op call: functions however they were bound (``nda.exp``,
  ``from nda import exp``, ``nda.linalg.inv``, ``nda.ext.<library>.<op>``), NDArray
  operators and methods, indexing, ``to_device`` and ``to_layout``. ``asnumpy()``, ``from_dlpack`` and the constructors of
  ``nda.sparse`` leave the graph, as does :meth:`NDArray.detach`. Ops whose results are
  constant in their inputs (comparisons, integer results, ``floor``, ``round``) give no
  gradient; ops without a derivative raise when a gradient reaches them
  (:func:`differentiable_ops` lists both, with the reason).

Complex gradients follow PyTorch's convention: for a real loss and ``z = a + ib`` the
gradient is ``dL/da + i dL/db``. Gradients of a ``csr`` array are taken with respect to
its stored values (its sparsity pattern is fixed), so its ``grad`` is csr with the same
pattern.

Layer: autograd (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Sequence

from .._array import NDArray
from ..ops import DECLARED
from ..ops.spec import NoVJP
from . import _backward
from ._graph import ENTRIES, FLAGS, AutogradError, Entry
from ._record import fast, scope_enter, scope_exit

__all__ = ["record", "pause", "is_recording", "backward", "grad", "AutogradError", "differentiable_ops"]

_REQS = ("write", "add", "null")


class _Scope:
    """The context manager of ``record()`` and ``pause()``."""

    __slots__ = ("_on", "_previous", "_flags")

    def __init__(self, on: bool) -> None:
        self._on = on
        self._previous = False
        self._flags: Any = None

    def __enter__(self) -> None:
        flags = self._flags = scope_enter() if self._on else FLAGS.t
        self._previous = flags.recording
        flags.recording = self._on

    def __exit__(self, *exc: Any) -> None:
        flags = self._flags  # the entering thread's state, whichever thread leaves
        flags.recording = self._previous
        if self._on:
            scope_exit(flags)


def record() -> _Scope:
    """Record, on this thread, the calls that involve arrays needing gradients (a context manager)."""
    return _Scope(True)


def pause() -> _Scope:
    """Stop recording on this thread inside a ``record()`` block (a context manager)."""
    return _Scope(False)


def is_recording() -> bool:
    """Whether this thread is recording."""
    return FLAGS.recording


def backward(heads: NDArray | Sequence[NDArray], head_grads: Any = None, retain_graph: bool = False) -> None:
    """Compute the gradients of ``heads`` with respect to every array with ``attach_grad()``.

    ``head_grads`` (one per head, None for ones) weights each head; the gradients are
    written into (``grad_req="write"``) or added to (``"add"``) the leaves' ``grad``.
    Without ``retain_graph`` the graph's saved arrays are released afterwards, so a
    second backward through it raises.
    """
    heads_list, grads_list = _as_list(heads, head_grads, "backward()")
    _backward.run(heads_list, grads_list, None, retain_graph, False, "backward()")


def grad(
    heads: NDArray | Sequence[NDArray],
    variables: NDArray | Sequence[NDArray],
    head_grads: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> list[NDArray]:
    """The gradients of ``heads`` with respect to ``variables`` (returned, not stored in ``x.grad``).

    ``variables`` are arrays with ``attach_grad()`` or results of recorded calls; one that
    the heads do not depend on gets zeros. With ``create_graph=True`` the gradients are
    recorded, so they can be differentiated again (higher-order gradients); the graph is
    then retained. ``retain_graph`` defaults to ``create_graph``.
    """
    heads_list, grads_list = _as_list(heads, head_grads, "grad()")
    single = isinstance(variables, NDArray)
    var_list = [variables] if single else list(variables)  # type: ignore[arg-type]
    retain = create_graph if retain_graph is None else retain_graph
    result = _backward.run(heads_list, grads_list, var_list, retain, create_graph, "grad()")
    return result  # type: ignore[return-value]


def _as_list(heads: Any, head_grads: Any, caller: str) -> tuple[list[Any], list[Any] | None]:
    if isinstance(heads, NDArray):
        return [heads], (None if head_grads is None else [head_grads[0] if isinstance(head_grads, (list, tuple)) else head_grads])
    if not isinstance(heads, (list, tuple)) or not heads:
        raise TypeError(f"{caller}: heads must be an nda array or a non-empty list of them, got {type(heads).__name__}")
    if head_grads is None:
        return list(heads), None
    if isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    return list(heads), list(head_grads)


def differentiable_ops() -> dict[str, str]:
    """Every catalog op and what autograd does with it: ``"vjp"``, or ``"constant: <why>"``/``"not differentiable: <why>"``."""
    out = {}
    for name, decl in sorted(DECLARED.items()):  # the catalog and the ops of loaded op libraries
        vjp = decl.vjp
        if isinstance(vjp, NoVJP):
            out[name] = f"{'constant' if vjp.zero else 'not differentiable'}: {vjp.reason}"
        elif vjp is None:
            out[name] = "not declared"
        elif decl.mutates:
            out[name] = "in-place write: not recorded (refused inside record() on arrays of the graph)"
        else:
            out[name] = "vjp"
    return out


# ----------------------------------------------------------------------------- NDArray methods


def _attach_grad(self: NDArray, grad_req: str = "write") -> None:
    """Give this array a gradient buffer ``self.grad`` (zeros) that ``backward()`` fills.

    ``grad_req`` is ``"write"`` (each backward overwrites ``grad``), ``"add"`` (backward
    adds to it; zero it yourself) or ``"null"`` (no gradient). Only floating arrays
    (real or complex) have gradients. An array computed inside ``record()`` becomes a
    leaf: the calls that made it are no longer part of its graph.
    """
    if grad_req not in _REQS:
        raise ValueError(f"attach_grad(): grad_req must be 'write', 'add' or 'null', got {grad_req!r}")
    if grad_req == "null":
        ENTRIES.pop(id(self), None)
        return
    if self.dtype.category not in ("real floating", "complex floating"):
        raise TypeError(f"attach_grad(): only floating arrays have gradients, this one is {self.dtype.name}; cast it first (x.astype(nda.float64))")
    layout = self.layout.name
    if layout == "strided":
        buffer = fast("zeros_like")(self)
    elif layout == "csr":
        from ..ops._vjp import project_to_pattern
        import sys

        nd = sys.modules["nda"]
        buffer = project_to_pattern(nd, fast("zeros")(self.shape, dtype=self.dtype, device=self.device), self)
    else:
        raise TypeError(f"attach_grad(): gradients of {layout} arrays are not supported; use a strided or csr array")
    ENTRIES[id(self)] = Entry(self, None, 0, grad_req, buffer)


def _grad(self: NDArray) -> NDArray | None:
    """The gradient buffer given by ``attach_grad()`` (None for an array without one)."""
    entry = ENTRIES.get(id(self))
    return entry.grad if entry is not None and entry.node is None else None


def _detach(self: NDArray) -> NDArray:
    """The same data without gradient history: a view (strided) or a copy (sparse arrays have no views)."""
    if self.layout.name == "strided":
        return fast("getitem")(self, ...)  # type: ignore[no-any-return]  # deliberately unrecorded
    return fast("astype")(self, self.dtype, copy=True)  # type: ignore[no-any-return]


def _ndarray_backward(self: NDArray, head_grad: NDArray | None = None, retain_graph: bool = False) -> None:
    """Compute the gradients of this array with respect to the leaves (``attach_grad``); see ``nda.autograd.backward``."""
    _backward.run([self], None if head_grad is None else [head_grad], None, retain_graph, False, "backward()")
