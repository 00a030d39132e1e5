"""Interceptors: who sees an op call at the invocation point, per thread, and how.

Every generated function, operator and method reaches its kernel through one invocation
point (:mod:`nda._execute`). Autograd's recording and hybridize's tracing do not rebind
anything: each is an :class:`Interceptor` pushed on a per-thread stack while it is active
(``autograd.record()``, the first call of a hybridized function), as JAX's ``bind`` consults
its trace stack and MXNet's ``Imperative::Invoke`` its ``is_recording()`` flag. A function
bound anywhere (``from nda import exp``) therefore records and traces, and nothing is
locked while user code runs.

**Its own flag.** Whether a call is intercepted is the calling thread's business alone, and
the engine's inline limit is not involved: :data:`ACTIVE` counts the interceptors installed
over all threads, and every fast path (the C ones in ``nda/_native.c`` and the Python ones)
tests ``not ACTIVE[0] or not <the thread's stack>.pushed`` beside its ``size < engine.state.limit``.
While nobody intercepts that is one list read; while another thread records it adds one
thread-local read, and this thread's tiny ops stay on their fast paths. A thread with
interceptors leaves every fast path, and its slow paths hand the call to its stack
(``nda._execute.invoke``).

**The chain.** :func:`call` hands the call to the thread's top interceptor with that
interceptor *taken off* the stack; its ``proceed(*args, **kwargs)`` calls the op's public
function again, which finds the rest of the stack: the next interceptor, and at the bottom
the op itself. Calls nda makes inside an intercepted call (a composite's inner ops, a
kernel's own nda calls) therefore reach only the interceptors below: the outermost call is
the one that is recorded, as autograd and hybridize want. An interceptor pushed above
others is announced to them (:meth:`Interceptor.pushed_above`): a traced function that
enters ``autograd.record()`` is noticed that way.

**Reads and writes.** Host reads (``asnumpy``, ``float(x)``, ``repr``, ``np.asarray``,
``__dlpack__``, displays) are announced to the thread's interceptors (:func:`reading`;
hybridize ends its graph there), and so are waits (``wait_to_read``/``wait_to_write``,
:func:`waiting`: hybridize's check mode answers for its stand-in arrays, which have no data
to wait for yet). Writes into existing arrays (in-place operators, ``setitem`` and
the ops that mutate) call the global :data:`WRITES` hooks first, from any thread:
autograd counts writes into arrays a live graph saved, and refuses writes into the graph
inside ``record()``; the list is empty unless a graph is alive, and the in-place fast path
tests it once.

Layer: arrays and front end, lowest (README, "Architecture").
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterator
from contextlib import contextmanager

from . import _forksafe

__all__ = ["Interceptor", "EntryPoint", "ACTIVE", "WRITES", "push", "pop", "stack", "call", "reading", "waiting", "suspended", "installed"]


class Interceptor:
    """Sees the calls a thread makes while it is on that thread's stack (see the module docstring).

    Subclasses override what they need; the defaults pass everything on unchanged.
    """

    __slots__ = ()

    def call(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], proceed: Callable[..., Any]) -> Any:
        """Handle one call of ``op`` (an ``OpDecl`` or an :class:`EntryPoint`); ``proceed`` runs it."""
        return proceed(*args, **kwargs)

    def read(self, array: Any, what: str) -> None:
        """The thread reads ``array``'s data on the host (``what``: how)."""

    def wait(self, array: Any) -> bool:
        """The thread waits for ``array`` (a sync point); True: the interceptor answers for it, no wait."""
        return False

    def pushed_above(self, other: Interceptor) -> None:
        """``other`` was pushed above this interceptor on its thread."""


class EntryPoint:
    """A call that is intercepted like an op but is not a catalog op of its own.

    ``kind`` is ``"inplace"`` (``x += y``: ``decl`` is the binary op, ``attr`` the operator
    method), ``"to_device"`` or ``"to_layout"``. A catalog op (``OpDecl``) has ``kind == "op"``.
    """

    __slots__ = ("name", "kind", "attr", "decl", "mutates", "data_dependent", "vjp")

    def __init__(self, name: str, kind: str, attr: str | None = None, decl: Any = None, mutates: tuple[str, ...] = ()) -> None:
        self.name = name
        self.kind = kind
        self.attr = attr
        self.decl = decl
        self.mutates = mutates
        self.data_dependent = False
        self.vjp = None

    def __repr__(self) -> str:
        return f"<entry point {self.name} ({self.kind})>"


class _Stack(list):  # type: ignore[type-arg]
    """A thread's interceptors, bottom first, and ``pushed``: how many were pushed on it and not
    popped yet. The fast paths test ``pushed``, not the list: :func:`call` takes the top off
    the list while it runs, and :func:`suspended` empties it, yet the calls made meanwhile
    (an interceptor's ``proceed``, nda's own bookkeeping) still take the slow paths, whose
    NumPy warnings name the user's line (``engine._fperrors``)."""

    __slots__ = ("pushed",)

    def __init__(self, pushed: int = 0) -> None:
        super().__init__()
        self.pushed = pushed


class _Local(threading.local):
    def __init__(self) -> None:
        self.stack: _Stack = _Stack()


_local = _Local()
_lock = _forksafe.guard(threading.Lock(), "the interceptors' lock", rank=30, stage=_forksafe.INNER)

#: ``[n]``: interceptors installed over all threads. The fast and slow paths test ``ACTIVE[0]``
#: before they look at the calling thread's stack (a list read, where a thread-local is more).
ACTIVE = [0]

#: Hooks ``hook(target, value, what)`` called before every write into an existing array, from
#: any thread (autograd's version counting and its refusal of in-place writes into the graph).
WRITES: list[Callable[[Any, Any, str], None]] = []


def push(interceptor: Interceptor) -> None:
    """Install ``interceptor`` on top of the calling thread's stack."""
    stack = _local.stack
    for below in stack:
        below.pushed_above(interceptor)
    with _lock:
        ACTIVE[0] += 1  # before the push: a fast path that reads 0 finds the stack empty too
    stack.append(interceptor)
    stack.pushed += 1


def pop(interceptor: Interceptor, stack: _Stack | None = None) -> None:
    """Remove ``interceptor`` from the calling thread's stack, or from ``stack`` (a thread's stack
    as :func:`stack` gave it: a scope left on another thread than the one that entered it)."""
    if stack is None:
        stack = _local.stack
    if interceptor not in stack:
        raise RuntimeError(f"interceptor {interceptor!r} is not on this thread's stack")
    if stack[-1] is interceptor:
        stack.pop()
    else:  # a scope left out of order (another thread's, or a generator's): take it out where it is
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is interceptor:
                del stack[i]
                break
    stack.pushed -= 1
    with _lock:
        ACTIVE[0] -= 1


def stack() -> _Stack:
    """The calling thread's interceptors, bottom first (the list itself: do not modify it)."""
    return _local.stack


def installed(kind: type) -> bool:
    """Whether an interceptor of class ``kind`` is on the calling thread's stack."""
    return any(isinstance(i, kind) for i in _local.stack)


def call(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], proceed: Callable[..., Any]) -> Any:
    """Run a call through the thread's top interceptor, which is off the stack meanwhile.

    Callers check first that the stack is not empty (``ACTIVE[0] and stack()``).
    """
    local_stack = _local.stack
    top = local_stack.pop()
    try:
        return top.call(op, args, kwargs, proceed)
    finally:
        local_stack.append(top)


def reading(array: Any, what: str) -> None:
    """Announce a host read of ``array`` to the calling thread's interceptors (top first)."""
    for interceptor in reversed(_local.stack):
        interceptor.read(array, what)


def waiting(array: Any) -> bool:
    """Announce a wait for ``array``; True if an interceptor of the calling thread answered for it."""
    for interceptor in reversed(_local.stack):
        if interceptor.wait(array):
            return True
    return False


@contextmanager
def suspended() -> Iterator[None]:
    """Calls made inside reach no interceptor of this thread (nda's own bookkeeping calls)."""
    saved = _local.stack
    _local.stack = _Stack(saved.pushed)  # their slow paths all the same (see _Stack)
    try:
        yield
    finally:
        _local.stack = saved
