"""A view costs nothing: it runs inline whenever the engine is idle, whatever its base's size.

SciPy's ``signal.minimum_phase`` (its ``hilbert`` test) calls Python's ``max()`` on a
2**19-element array: one ``x[i]`` per element. nda sized a view by its base, so every
``x[i]`` of a large array was queued for a worker thread (a thread hop per element): the
test took 129 s on nda against 17.8 s on array_api_strict. Views of strided arrays
(``getitem`` with basic keys, ``permute_dims``, ``expand_dims``, ``squeeze``, ``flip``,
``broadcast_to``) now count as one element.
"""

from __future__ import annotations

import nda


def test_a_view_of_a_large_idle_array_is_not_an_engine_task(threaded):
    # SciPy's minimum_phase calls Python's max() on a 2**19-element array: one x[i] per
    # element. A view costs nothing, so it runs inline when the engine is idle; it used to
    # be queued for a worker (the size of its base decided), a thread hop per element.
    from nda._execute import work_size
    from nda.ops import CATALOG

    x = nda.zeros(2**20)
    x.wait_to_read()
    for view in (x[5], x[1:3], nda.flip(x), nda.expand_dims(x, axis=0), x[None, ::2]):
        assert view._buf is not None  # computed on this thread, not queued
    assert work_size(CATALOG["getitem"].plan(x, (slice(1, None),)), "getitem") == 1
    assert work_size(CATALOG["reshape"].plan(x, (1024, 1024)), "reshape") == 2**20  # may copy: keeps its size
    assert max(nda.asarray([3.0, 9.0, 1.0])) == 9.0
