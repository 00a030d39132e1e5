"""The dependency state of the threaded engine: explicit state plus small transitions.

No threads and no locks live here (the threaded engine holds one lock around every call),
so the ordering rules can be tested directly. The rules are MXNet's:

* each *base* array that has pending work owns a :class:`Var` (views share their base's);
* a task that **reads** a var waits for the var's last pending write (read-after-write);
* a task that **writes** a var waits for the last pending write and for every pending read
  issued since it (write-after-read, write-after-write); consecutive reads do not wait
  for each other, so they may run together;
* a var disappears as soon as nothing is pending on it, so idle arrays cost nothing.

A task that fails *poisons* the arrays it writes, as the op named them: the output of a
failed view op is poisoned, not the array it views; a failed in-place write poisons the
base it writes (its contents are undefined). Reading an array raises its own poison or
its base's. A task whose input is poisoned does not
run: it fails with the same exception and poisons its own outputs. A write of a whole
array that does not read it (``x[...] = 7``, ``copyto(x, y)``: the front end then leaves
``x`` out of the op's reads) runs whatever ``x``'s state, and when it succeeds ``x`` is
valid again (:meth:`Graph.overwritten`), as after a failed write in NumPy; a partial write
reads ``x`` and stays poisoned. A *view task* (``view``: the front end's ops that only make
a view, ``x[10:20]``, ``x.T``, never ``reshape``, which may copy) of a poisoned base whose
memory exists (a failed in-place write left it there) runs anyway and is not poisoned
itself: the view reads as failed through its base, and once the base is written whole it
reads the new values, as a view does in NumPy. Poison lives in
:attr:`Graph.poison`, keyed by ``id(base)`` with a weak reference, so it goes when the
array goes; reading a poisoned array re-raises the original exception.

Transitions: :meth:`Graph.add` (a new task: its dependencies, ready or not),
:meth:`Graph.finish` (a task ended, with or without an error: which tasks became ready),
:meth:`Graph.blockers` (what a sync point must wait for), :meth:`Graph.queued_behind`
(which of those a sync point may run itself).

A task's life: ``pending`` (dependencies unfinished) -> ``ready`` -> ``queued`` (handed to
an executor, not started; only large tasks pass through here) -> ``running`` -> ``done``.
Whoever moves a task from ``queued`` to ``running`` runs it: a worker taking it from its
queue, or a sync point that would otherwise sit blocked on it. The engine makes that move
under its lock, so exactly one of them does.

Layer: engine (README, "Architecture").
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

__all__ = ["Task", "Var", "Graph"]

PENDING, READY, QUEUED, RUNNING, DONE = "pending", "ready", "queued", "running", "done"


class Task:
    """One pushed op."""

    __slots__ = (
        "run",
        "name",
        "device",
        "reads",
        "writes",
        "cost",
        "site",
        "fp",
        "state",
        "error",
        "deps_left",
        "deps",
        "dependents",
        "start",
        "end",
        "thread",
        "seq",
        "route",
        "inputs",
        "outputs",
        "view",
    )

    def __init__(
        self, run: Callable[[], Any], reads: Sequence[Any], writes: Sequence[Any], device: Any, name: str, cost: int = 0, site: str = ""
    ) -> None:
        self.run = run
        self.name = name
        self.device = device
        self.reads = reads  # base arrays
        self.writes = writes  # base arrays
        self.cost = cost
        self.site = site
        self.fp: Any = None  # NumPy's error state where it was issued (engine._fperrors), or None
        self.state = PENDING
        self.error: BaseException | None = None
        self.deps_left = 0
        self.deps: list[Task] = []  # while pending: the tasks it waits for (cleared once it is ready)
        self.dependents: list[Task] = []
        self.start = 0.0
        self.end = 0.0
        self.thread = ""
        self.seq = 0
        self.route: Any = None
        # The arrays as the op named them (views included). Dependencies use the bases;
        # poison uses these, so that a failed *view* op does not poison the array it views.
        self.inputs: Sequence[Any] = reads
        self.outputs: Sequence[Any] = writes
        self.view = False  # the op only makes a view of its base's memory (see the module docstring)

    def __repr__(self) -> str:
        return f"<Task #{self.seq} {self.name} on {self.device} {self.state}>"


class Var:
    """Pending work on one base array: its last pending write and the reads issued since."""

    __slots__ = ("array", "last_write", "readers")

    def __init__(self, array: Any) -> None:
        self.array = array
        self.last_write: Task | None = None
        self.readers: list[Task] = []

    def empty(self) -> bool:
        return self.last_write is None and not self.readers


class Graph:
    """All pending tasks and vars; the poison of failed arrays."""

    def __init__(self) -> None:
        self.vars: dict[int, Var] = {}
        self.pending = 0  # tasks added and not finished
        self.poison: dict[int, tuple[weakref.ref[Any], BaseException]] = {}
        self.first_error: BaseException | None = None
        self._seq = 0

    # ------------------------------------------------------------------ transitions
    def add(self, task: Task) -> bool:
        """Register ``task``; True when it may run now (no unfinished dependency)."""
        self._seq += 1
        task.seq = self._seq
        self.pending += 1
        deps: list[Task] = []
        for base in task.reads:
            var = self.vars.get(id(base))
            if var is None:
                var = self.vars[id(base)] = Var(base)
            if var.last_write is not None and var.last_write not in deps:
                deps.append(var.last_write)
            var.readers.append(task)
        for base in task.writes:
            var = self.vars.get(id(base))
            if var is None:
                var = self.vars[id(base)] = Var(base)
            if var.last_write is not None and var.last_write is not task and var.last_write not in deps:
                deps.append(var.last_write)
            for reader in var.readers:
                if reader is not task and reader not in deps:
                    deps.append(reader)
            var.readers = [r for r in var.readers if r is task]
            var.last_write = task
        for dep in deps:
            dep.dependents.append(task)
        task.deps = deps
        task.deps_left = len(deps)
        if task.deps_left == 0:
            task.state = READY
            return True
        return False

    def finish(self, task: Task, error: BaseException | None) -> list[Task]:
        """``task`` ended (``error`` if it failed). Returns the tasks that became ready.

        Tasks that became ready but read a poisoned array are finished here too, with the
        poison's exception, without running; only runnable tasks are returned.
        """
        ready: list[Task] = []
        stack = [(task, error)]
        while stack:
            current, err = stack.pop()
            current.state = DONE
            current.error = err
            self.pending -= 1
            if err is not None:
                if self.first_error is None:
                    self.first_error = err
                for array in current.outputs:
                    self._poison(array, err)
            elif self.poison:
                self.overwritten(current.reads, current.writes)
            for base in current.reads:
                var = self.vars.get(id(base))
                if var is not None:
                    try:
                        var.readers.remove(current)
                    except ValueError:
                        pass
                    if var.empty():
                        del self.vars[id(base)]
            for base in current.writes:
                var = self.vars.get(id(base))
                if var is not None and var.last_write is current:
                    var.last_write = None
                    if var.empty():
                        del self.vars[id(base)]
            for dep in current.dependents:
                dep.deps_left -= 1
                if dep.deps_left == 0:
                    inherited = self.poisoned_input(dep)
                    if inherited is not None:
                        stack.append((dep, inherited))
                    else:
                        dep.state = READY
                        dep.deps = []  # only pending tasks are searched through; holding finished ones would keep their arrays alive
                        ready.append(dep)
            current.dependents = []
            current.deps = []
            current.run = _done  # drop references held by the closure
            # ... and to the arrays: a finished task may still sit in an executor's queue (a
            # sync point ran it), and must not keep its arrays alive until a worker gets to it.
            current.reads = current.writes = current.inputs = current.outputs = ()
        return ready

    # ------------------------------------------------------------------ queries
    def poisoned_input(self, task: Task) -> BaseException | None:
        if not self.poison:
            return None
        viewed = task.writes[0] if task.view and task.writes else None  # a view task "writes" the base it views
        if viewed is not None and getattr(viewed, "_buf", None) is None:
            viewed = None  # nothing to view: its producer failed (or never ran)
        for array in task.inputs:
            err = self.error_of(array, viewed)
            if err is not None:
                return err
        return None

    def error_of(self, array: Any, viewed: Any = None) -> BaseException | None:
        """The exception a read of ``array`` raises: its own poison, or its base's (unless its
        base is ``viewed``: the memory a view task views, whose poison the view reads through)."""
        for candidate in (array, getattr(array, "_base", None)):
            if candidate is None or candidate is viewed:
                continue
            entry = self.poison.get(id(candidate))
            if entry is not None and entry[0]() is candidate:
                return entry[1]
        return None

    def blockers(self, base: Any, for_write: bool) -> list[Task]:
        """Unfinished tasks a read (or a write) of ``base`` must wait for."""
        var = self.vars.get(id(base))
        if var is None:
            return []
        tasks = [var.last_write] if var.last_write is not None else []
        if for_write:
            tasks.extend(var.readers)
        return tasks

    def queued_behind(self, base: Any, for_write: bool) -> Task | None:
        """The earliest-issued queued task that a read (or write) of ``base`` waits for.

        It is searched among the blockers and, through the dependencies of blockers still
        pending, everything they wait for. None when nothing there is queued (the work is
        running, or waits for something running).
        """
        stack = self.blockers(base, for_write)
        seen: set[int] = set()
        best: Task | None = None
        while stack:
            task = stack.pop()
            if id(task) in seen:
                continue
            seen.add(id(task))
            if task.state == QUEUED:
                if best is None or task.seq < best.seq:
                    best = task
            elif task.state == PENDING:
                stack.extend(task.deps)
        return best

    def quiet(self) -> bool:
        """Nothing pending: ops that touch no poisoned array may run inline (the front end's
        fast paths look their inputs up in :attr:`poison` while it is not empty)."""
        return self.pending == 0

    def clear_poison(self, base: Any) -> None:
        self.poison.pop(id(base), None)

    def overwritten(self, reads: Sequence[Any], writes: Sequence[Any]) -> None:
        """A write that succeeded: the bases it wrote without reading them were written whole
        (the front end lists a mutated array among an op's reads unless the op overwrites all
        of it), so their poison, if any, is gone. Fresh outputs have none."""
        for base in writes:
            if all(base is not r for r in reads):
                entry = self.poison.get(id(base))
                if entry is not None and entry[0]() is base:
                    del self.poison[id(base)]

    def _poison(self, base: Any, err: BaseException) -> None:
        key = id(base)
        poison = self.poison

        def forget(ref: Any, key: int = key) -> None:
            # The array is going: its entry goes at once, so that the fast paths, which read this
            # dict (``engine.state.failed``) while it is not empty, find it empty again. Called
            # while the array is deallocated, before its id can be reused; one dict operation
            # under the GIL, like every other writer's (nothing iterates the dict but a fork's child).
            entry = poison.get(key)
            if entry is not None and entry[0] is ref:
                poison.pop(key, None)

        poison[key] = (weakref.ref(base, forget), err)


def _done() -> None:
    raise RuntimeError("this task already ran")
