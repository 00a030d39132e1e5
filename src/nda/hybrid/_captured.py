"""Captured arrays of a hybridized function: found by name after tracing, read again at every run.

A captured array (one ``fn`` uses without receiving it) is found by *name* after tracing: a
closure variable or a global of ``fn`` (or of a function it names, one level of helpers),
an argument that is not an array, then attributes (among the names ``fn``'s code uses),
dict items and list items of those, a few levels deep (a bounded search). Each run reads
the name again: a rebound global runs with the new array (same metadata), or the signature
is traced again (other metadata). An array found under no name cannot be read again, so
the signature runs eagerly; so does an argument that is also captured (``f(w)`` for
``x + w``: the graph could not tell which reads mean which), and a run where a captured
array shares memory with an argument when the recorded graph assumed not.

Layer: hybridize (README, "Architecture").
"""

from __future__ import annotations

import types
from typing import Any

from .._array import NDArray
from . import _graph

__all__ = ["AMBIGUOUS", "ALIASED", "locate", "captured_now", "alias_pattern"]

AMBIGUOUS = "eager: an argument is also an array the function captures"
ALIASED = object()
_DEPTH = 4
_BUDGET = 5000


def _code_names(fn: Any, names: set[str], codes: list[Any]) -> None:
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    stack = [code]
    while stack:
        c = stack.pop()
        codes.append(c)
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def _roots(fn: Any, args: Any, kwargs: Any) -> tuple[list[tuple[Any, Any]], set[str]]:
    """``(root, value)`` pairs to search from, and the attribute names the code uses."""
    fn = getattr(fn, "fn", fn)  # a HybridFunction
    names: set[str] = set()
    roots: list[tuple[Any, Any]] = []
    functions = [fn]
    seen: set[int] = set()
    for level in range(2):  # fn, then the functions it names (helpers)
        found = []
        for f in functions:
            f = getattr(f, "__func__", f)
            if id(f) in seen or not isinstance(f, types.FunctionType):
                continue
            seen.add(id(f))
            codes: list[Any] = []
            _code_names(f, names, codes)
            for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                roots.append((("cell", cell), value))
                found.append(value)
            glob = f.__globals__
            for c in codes:
                for name in c.co_names:
                    if name in glob:
                        value = glob[name]
                        if value.__class__ is NDArray or not isinstance(value, (types.ModuleType, type)) or level == 0:
                            roots.append((("global", glob, name), value))
                            found.append(value)
        functions = [v for v in found if isinstance(v, (types.FunctionType, types.MethodType)) or hasattr(v, "fn")]
    for i, value in enumerate(args):
        if value.__class__ is not NDArray:
            roots.append((("arg", i), value))
    for k, value in kwargs.items():
        if value.__class__ is not NDArray:
            roots.append((("kwarg", k), value))
    return roots, names


def _search(roots: list[tuple[Any, Any]], names: set[str], wanted: dict[int, Any]) -> dict[int, tuple[Any, tuple[Any, ...]]]:
    """``id(array) -> (root, steps)`` for the arrays in ``wanted`` reachable from ``roots``."""
    found: dict[int, tuple[Any, tuple[Any, ...]]] = {}
    visited: set[int] = set()
    queue: list[tuple[Any, Any, tuple[Any, ...]]] = [(root, value, ()) for root, value in roots]
    budget = _BUDGET
    while queue and budget > 0 and len(found) < len(wanted):
        next_queue = []
        for root, value, steps in queue:
            budget -= 1
            if value.__class__ is NDArray:
                if id(value) in wanted and id(value) not in found:
                    found[id(value)] = (root, steps)
                continue
            if id(value) in visited or len(steps) >= _DEPTH or isinstance(value, (str, bytes, int, float, complex, type, types.FunctionType)):
                continue
            visited.add(id(value))
            if isinstance(value, dict):
                items = [(("item", k), v) for k, v in list(value.items())[:256] if isinstance(k, (str, int))]
            elif isinstance(value, (list, tuple)):
                items = [(("item", i), v) for i, v in enumerate(value[:256])]
            else:
                attrs = getattr(value, "__dict__", None)
                if not isinstance(attrs, dict):
                    continue
                items = [(("attr", k), attrs[k]) for k in names if k in attrs]
            next_queue.extend((root, v, steps + (step,)) for step, v in items)
        queue = next_queue
    return found


def locate(fn: Any, graph: _graph.Graph, args: Any, kwargs: Any) -> list[tuple[int, Any]] | str:
    """``[(slot, path)]`` for every captured array of ``graph``, or why the signature runs eagerly."""
    externals = [slot for slot, kind in enumerate(graph.kinds) if kind == "external"]
    inputs = {id(graph.arrays[i]): i for i in range(graph.inputs)}
    wanted = {id(graph.arrays[slot]): slot for slot in externals}
    roots, names = _roots(fn, args, kwargs)
    by_name = [(r, v) for r, v in roots if r[0] in ("cell", "global")]
    also = _search(by_name, names, {**inputs})
    if also:
        return f"{AMBIGUOUS} (argument {min(inputs[i] for i in also) + 1}); it is traced again at the next call"
    found = _search(roots, names, wanted) if wanted else {}
    located = []
    for slot in externals:
        path = found.get(id(graph.arrays[slot]))
        if path is None:
            user = next((n for n in graph.nodes if slot in n.reads), None)
            where = f" (read by {user.op} at {user.where})" if user is not None else " (returned)"
            return (f"eager: an array the function captured{where} is not found under a name (a closure variable, a global, "
                    "an argument's attribute or item): a graph could not see it rebound")
        located.append((slot, path))
    return located


def _resolve(path: tuple[Any, tuple[Any, ...]], args: Any, kwargs: Any) -> Any:
    root, steps = path
    kind = root[0]
    try:
        if kind == "cell":
            value = root[1].cell_contents
        elif kind == "global":
            value = root[1][root[2]]
        elif kind == "arg":
            value = args[root[1]]
        else:
            value = kwargs[root[1]]
        for how, key in steps:
            value = getattr(value, key) if how == "attr" else value[key]
    except (LookupError, AttributeError, ValueError, TypeError):
        return None
    return value


def alias_pattern(arrays: list[NDArray]) -> tuple[int, ...]:
    """Per array, the index of the first earlier one sharing its memory (-1: none)."""
    bases = [a._base if a._base is not None else a for a in arrays]
    return tuple(next((j for j in range(i) if bases[j] is b), -1) for i, b in enumerate(bases))


def captured_now(entry: Any, args: Any, kwargs: Any, arrays: list[NDArray]) -> Any:
    """The captured arrays as their names hold them now (slot -> array); None: other metadata; ALIASED."""
    now: dict[int, NDArray] = {}
    for slot, path, meta in entry.captured:
        value = _resolve(path, args, kwargs)
        if value.__class__ is not NDArray or (value._meta, value._shape) != meta:
            return None
        now[slot] = value
    if alias_pattern(arrays + list(now.values())) != entry.aliases:
        return ALIASED
    return now
