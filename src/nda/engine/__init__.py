"""The engine entry point: every op in nda reaches its kernel through here.

The front end never calls a kernel "by hand"; it asks the *current engine*, held in the
module-level :data:`state`, in exactly one of two ways:

``size < state.limit``
    The op touches ``size`` elements. When this holds, running the op right now on the
    caller's thread gives the same result as running every op in program order, and the
    op is cheap enough that a thread hop would cost more than the op. The front end then
    calls the kernel directly. The synchronous engine's limit is unbounded; the threaded
    engine's is its inline threshold while it is idle (nothing pending, nothing failed)
    and 0 otherwise.

``state.push(run, reads, writes, device, name, cost=0, route=None)``
    Otherwise the op becomes a task: ``run()`` does the work (it reads the buffers of the
    ``reads`` arrays and fills or mutates the ``writes`` arrays) and the engine orders it
    after earlier writers of what it reads and earlier readers/writers of what it writes.
    ``run`` may return a :class:`Completion` when the work finishes later (a backend of
    backend API 1.1/1.2 whose kernels only enqueue work); the task ends when the
    completion is signalled.

Sync points call ``state.wait_for(array, for_write)`` and ``state.wait_all()``.

The limit has one concern, the engine's: whether an op may run inline now (idle, or the
profiler recording, which routes every op through ``push``). Nothing else sets it: whether
the calling thread intercepts calls (``autograd.record()``, hybridize's tracing) is its own
flag (``nda._intercept``), and arrays whose memory another library holds (:func:`share`)
route their ops through :meth:`_State._shared_push` without touching it. Every transition
that changes what the engine wants (a task finished, an error raised or its poisoned array
collected, a held op run, the profiler stopped) leaves ``limit == engine.current_limit()``
by the next op: the engine stores it under its lock, and a slow path that finds the engine
idle with ``limit`` still 0 refreshes it (:meth:`_State.push_inline`).

Device queues (backend API 1.3, :mod:`.queues`): a backend whose kernels run in order on
one queue per device has every kernel wrapped so that it takes a number on the device's
queue when it enqueues its work (and, when it may fail, an entry: op, ``file:line``,
data-dependent check). Such an op never waits for its producers to *finish*: those on the
same queue are ordered by the queue itself, so the op is issued at once, on the caller's
thread, inline or through ``push`` alike. An engine whose ``waits_at_issue`` is true (the
naive and deferred engines) is told of each op (``issued(queue, number, entry)``) and waits
for it there (errors at the call); the threaded engine is not told at all: the queue itself
retires what is done and applies the bound on work in flight. Markers are recorded only
where someone waits. Sync points wait for exactly the version they read, on the caller's
thread; errors found when an entry retires are raised at the sync point that reads what the
op wrote, with the op's note.

Exit and ``os.fork`` (:mod:`._lifecycle`): an engine with threads of its own starts no
kernel on them and waits, bounded, for the running ones (``Engine.pause``/``resume``/
``for_child`` around a fork, ``Engine.close`` at exit); backends with threads of their own
register their fork hooks with :func:`register_at_fork` so that they run in order with the
engine's.

Engines: ``threaded`` (the default: per-device worker threads, the inline fast path,
errors raised at sync points), ``naive`` (synchronous, for debugging: ``NDA_ENGINE=naive``
or :func:`use`), and ``deferred`` (runs the queue at sync points; a test tool proving that
no op depends on running inline).

The package's modules, each one concern (``nda.engine`` re-exports their public names and
holds no state of its own):

- :mod:`._base`: the :class:`Engine` interface; :mod:`._sync`: the naive and deferred engines;
  :mod:`.threaded`: the threaded engine (with :mod:`._graph`, :mod:`._held`, :mod:`._child`);
- :mod:`._state`: :data:`state`, the one holder of the current engine (``limit``, ``push``);
- :mod:`._select`: :func:`use`, :func:`current`, :func:`waitall` and ``NDA_ENGINE``;
- :mod:`._completion`: :class:`Completion`, the device completion hooks, running a task now;
- :mod:`._syncpoints`: device-queue waits at sync points and the delivery of errors there;
- :mod:`._sharing`: :func:`share` and the :data:`SHARED` registry;
- :mod:`.queues` (with :mod:`._entries`): device queues; :mod:`._fperrors`: NumPy's
  floating-point warnings; :mod:`._profile`: the :data:`profiler`; :mod:`._lifecycle`: exit and fork.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

from . import _fperrors as _fperrors
from . import queues as queues
from . import _select
from ._base import UNBOUNDED as UNBOUNDED
from ._base import Engine
from ._completion import Completion
from ._completion import device_completion as device_completion
from ._completion import device_sync as device_sync
from ._completion import forget_device_hooks as forget_device_hooks
from ._entries import Deferred, KernelTraceback
from ._lifecycle import QUIESCE_TIMEOUT, register_at_fork
from ._profile import Profiler, profiler
from ._select import current, use, waitall
from ._sharing import SHARED as SHARED
from ._sharing import share
from ._state import state
from ._sync import DeferredEngine, SyncEngine
from ._syncpoints import deliver as deliver
from ._syncpoints import drain_queues as drain_queues
from ._syncpoints import host_read as host_read
from ._syncpoints import queued_pending as queued_pending
from ._syncpoints import wait_queued as wait_queued

__all__ = [
    "share",
    "Engine",
    "SyncEngine",
    "DeferredEngine",
    "Completion",
    "Deferred",
    "KernelTraceback",
    "state",
    "use",
    "current",
    "waitall",
    "profiler",
    "register_at_fork",
    "QUIESCE_TIMEOUT",
    "Profiler",
]
# The ``x as x`` imports above are re-exported for nda's other layers, outside ``__all__``: the
# backends layer forgets the cached device hooks when it publishes or withdraws a backend's
# handle (the engine reads published handles from ``nda._handles``); the front end, autograd
# and hybridize read ``SHARED``; backends and arrays call the sync-point functions.

_select.initial_engine()  # NDA_ENGINE's engine (the threaded one by default)
