"""The engine a forked child gets from the threaded engine: the parent's poison and unfinished work.

``os.fork`` pauses the threaded engine (no task starts, the running ones are waited for,
bounded) and forks holding its lock, so the child copies a consistent graph. The child's
engine (:func:`inherit`) then has what NumPy's and the naive engine's children have: every
array the parent issued. What had finished is in the child's memory; what had not started
(the held op, tasks queued on the workers, unsent, or waiting for others) is added again, in
issue order, and computed in the child when needed: its first op or sync point sends the
ready tasks to the child's own workers (``ThreadedEngine._start_inherited``), not the fork
hook, since other libraries' fork hooks run after nda's. Only a task that was *running*
(the fork stopped waiting for it after ``NDA_QUIESCE_TIMEOUT``) has no value in the child:
its outputs are poisoned with :data:`~._lifecycle.FORKED`, and tasks that read them fail
the same way. The parent's pending work may run twice (in the parent and in a child that
reads it): kernels are functions of the buffers they read, and memory shared with another
process or library is never pending (``nda.engine.share``: such ops run at their call).

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

from typing import Any

from ._graph import DONE, RUNNING, Graph, Task
from ._held import Held
from ._lifecycle import FORKED

__all__ = ["inherit"]


def inherit(parent: Any, child: Any) -> Any:
    """Fill ``child`` (a fresh ThreadedEngine) with ``parent``'s poison and unfinished work; returns it.

    Called in the forked child, with the parent's lock held by the fork and nothing running.
    """
    graph = parent._graph
    for ref, err in list(graph.poison.values()):  # poisoned again, so that the child's own graph forgets them when they go
        array = ref()
        if array is not None:
            child._graph._poison(array, err)
    child._graph.first_error = graph.first_error
    error = RuntimeError(FORKED)
    held = parent._held
    if held is not None and held.task is None:
        if held.runner is None:  # issued, never started: held in the child too
            child._held = Held(held.run, held.reads, held.writes, held.device, held.name, held.cost, held.route, held.site)
        else:  # a sync point on another thread was running it
            for array in held.writes:
                child._graph._poison(array, error)
    for task in unfinished(graph):
        if task.state == RUNNING:
            for array in task.outputs:
                child._graph._poison(array, error)
            continue
        copy = Task(task.run, task.reads, task.writes, task.device, task.name, task.cost, task.site)
        copy.route, copy.inputs, copy.outputs = task.route, task.inputs, task.outputs
        child._pending_elements += task.cost
        if child._graph.add(copy):
            child._inherited.append(copy)
    return child


def unfinished(graph: Graph) -> list[Task]:
    """Every task of ``graph`` not finished, in issue order (lock held).

    Each is reachable from a var (its last write, its reads since) or, superseded there, from
    the dependencies of a task still pending.
    """
    found: dict[int, Task] = {}
    stack: list[Task] = []
    for var in graph.vars.values():
        if var.last_write is not None:
            stack.append(var.last_write)
        stack.extend(var.readers)
    while stack:
        task = stack.pop()
        if id(task) in found or task.state == DONE:
            continue
        found[id(task)] = task
        stack.extend(task.deps)
    return sorted(found.values(), key=lambda t: t.seq)
