"""The engine's dependency state, tested without threads (explicit transitions)."""

from __future__ import annotations

import gc

from nda.engine._graph import DONE, QUEUED, READY, RUNNING, Graph, Task


class Arr:
    """Stands in for a base array (the graph only uses identity and weak references)."""

    _base = None


def task(name, reads=(), writes=()):
    return Task(lambda: None, tuple(reads), tuple(writes), "cpu:0", name)


def test_read_after_write_waits_and_reads_share():
    g, a = Graph(), Arr()
    w = task("w", writes=[a])
    r1 = task("r1", reads=[a])
    r2 = task("r2", reads=[a])
    assert g.add(w) is True
    assert g.add(r1) is False and g.add(r2) is False
    assert g.finish(w, None) == [r1, r2], "both reads become ready together"
    assert r1.state == r2.state == READY


def test_write_after_read_and_write_after_write():
    g, a = Graph(), Arr()
    r = task("r", reads=[a])
    w1 = task("w1", writes=[a])
    w2 = task("w2", writes=[a])
    assert g.add(r) is True
    assert g.add(w1) is False
    assert g.add(w2) is False
    assert g.finish(r, None) == [w1]
    assert g.finish(w1, None) == [w2]
    assert g.finish(w2, None) == []
    assert g.vars == {} and g.pending == 0 and g.quiet() and not g.poison


def test_independent_arrays_do_not_wait():
    g, a, b = Graph(), Arr(), Arr()
    assert g.add(task("wa", writes=[a])) is True
    assert g.add(task("wb", writes=[b])) is True
    assert g.add(task("rb", reads=[b])) is False


def test_in_place_task_reads_and_writes_its_array():
    g, a = Graph(), Arr()
    first = task("first", writes=[a])
    inplace = task("inplace", reads=[a], writes=[a])
    after = task("after", reads=[a])
    g.add(first)
    assert g.add(inplace) is False
    assert g.add(after) is False
    assert g.finish(first, None) == [inplace]
    assert g.finish(inplace, None) == [after]
    g.finish(after, None)
    assert g.vars == {} and g.pending == 0


def test_failure_poisons_outputs_and_dependants_do_not_run():
    g, a, b, c = Graph(), Arr(), Arr(), Arr()
    bad = task("bad", writes=[a])
    use = task("use", reads=[a], writes=[b])
    other = task("other", writes=[c])
    g.add(bad)
    g.add(use)
    g.add(other)
    err = ValueError("boom")
    assert g.finish(bad, err) == [], "the dependant inherits the error instead of running"
    assert use.state == DONE and use.error is err
    assert g.error_of(a) is err and g.error_of(b) is err and g.error_of(c) is None
    assert g.first_error is err
    assert g.poison, "the failed arrays are kept (the fast paths look their inputs up there)"
    g.finish(other, None)
    assert g.pending == 0


def test_poison_goes_away_with_the_array():
    g = Graph()
    a = Arr()
    t = task("bad", writes=[a])
    g.add(t)
    g.finish(t, RuntimeError("x"))
    assert g.poison and g.quiet()  # failed, but nothing pending: ops that do not read it run inline
    del a, t
    gc.collect()
    assert not g.poison  # gone at once, without waiting for the next op (the fast paths read it)


def test_blockers_for_read_and_write():
    g, a = Graph(), Arr()
    w = task("w", writes=[a])
    r = task("r", reads=[a])
    g.add(w)
    g.add(r)
    assert g.blockers(a, for_write=False) == [w]
    assert g.blockers(a, for_write=True) == [w, r]


def test_queued_behind_finds_the_earliest_queued_work_a_sync_point_waits_for():
    g, a, b, c = Graph(), Arr(), Arr(), Arr()
    first = task("first", writes=[a])
    other = task("other", writes=[c])  # unrelated: never offered for a or b
    second = task("second", reads=[a], writes=[b])
    for t in (first, other, second):
        g.add(t)
    assert g.queued_behind(b, for_write=False) is None, "nothing is queued yet (ready is not queued)"
    first.state = other.state = QUEUED
    assert g.queued_behind(b, for_write=False) is first, "found through the pending blocker's dependency"
    assert g.queued_behind(a, for_write=False) is first
    first.state = RUNNING
    assert g.queued_behind(b, for_write=False) is None, "running work is waited for, not taken"
    assert g.finish(first, None) == [second]
    assert second.deps == [], "a ready task no longer holds its finished dependencies (nor their arrays)"
    second.state = QUEUED
    assert g.queued_behind(b, for_write=False) is second
    assert g.queued_behind(a, for_write=True) is second, "a write of a waits for the queued reader"
    assert g.queued_behind(a, for_write=False) is None
    g.finish(second, None)
    assert g.queued_behind(b, for_write=False) is None


def test_queued_behind_prefers_program_order():
    g, a = Graph(), Arr()
    r1, r2 = task("r1", reads=[a]), task("r2", reads=[a])
    w = task("w", writes=[a])
    for t in (r1, r2, w):
        g.add(t)
    r2.state = r1.state = QUEUED
    assert w.deps == [r1, r2]
    assert g.queued_behind(a, for_write=True) is r1
