"""Arrays whose memory another library holds too: the :data:`SHARED` registry and :func:`share`.

The registry lives here and only here; ``nda._snapshots``, ``nda.autograd`` and
``nda.hybrid`` read the same dict (it is never rebound). Marking the first array switches
``state.push`` to the shared-memory path (:meth:`._state._State._shared_push`) through the
:data:`on_share` hook that :mod:`._state` registers at import: this module stays below the
state holder, which reads :data:`SHARED` and :func:`touches_shared`.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

__all__ = ["SHARED", "share", "touches_shared"]

#: Arrays whose memory another library holds too (id of the base array -> a weak reference).
SHARED: dict[int, Any] = {}


def _unregistered() -> None:
    raise RuntimeError("nda.engine._state has not registered its share hook")


#: Called after :func:`share` marks an array: routes ``state.push`` through the shared-memory
#: path. Set by :mod:`._state` when it is imported (``nda.engine`` imports it before any array).
on_share: Callable[[], None] = _unregistered


def touches_shared(reads: Sequence[Any], writes: Sequence[Any]) -> bool:
    """Whether an op reading ``reads`` and writing ``writes`` touches a shared array (or a view of one)."""
    for array in (*reads, *writes):
        base = array._base if array._base is not None else array
        if id(base) in SHARED:
            return True
    return False


def share(array: Any) -> None:
    """Mark ``array``'s memory as held by another library too (a NumPy array that
    ``nda.asarray`` wraps on cpu, ``np.asarray(x)`` of a cpu array, a DLPack exchange).

    Such memory can change, or be read, behind the engine's back: NumPy writes into the
    caller's buffer after ``y = x + 1`` must not reach ``y``, and ``h = np.asarray(x);
    x += 1`` must show in ``h`` at once. So every op that still reads or writes a shared array
    when it reaches ``push`` runs to completion before its call returns, as under the naive
    engine (an op's error raises at its call then). A heavy op that only reads shared arrays
    does not get here with them: the front end hands it copies taken at the call
    (``nda._snapshots``), and it keeps the overlap. Other arrays keep it too; nothing changes
    on the hot path of tiny ops, which run inline anyway. The mark lasts as long as the array
    (its base, for views).
    """
    base = array._base if array._base is not None else array
    key = id(base)
    if key in SHARED:
        return
    SHARED[key] = weakref.ref(base, lambda _ref, key=key: SHARED.pop(key, None))
    on_share()  # stored, then switched: _State.set, which checks SHARED after storing, cannot lose it
