"""The backward pass: propagate cotangents from heads to leaves (or variables) through the VJPs.

1. From the heads, collect the recorded nodes they reach through edges.
2. Keep the *relevant* ones: those with a path to a target (for ``backward``, the leaves
   whose ``grad_req`` is not ``"null"``; for ``grad``, the given variables). Nodes are
   numbered in recording order, so one pass in that order decides relevance and the
   reverse order is a valid order for propagation (every consumer after its producers).
3. In reverse recording order, each relevant node whose outputs received a cotangent
   checks that nothing it saved was written in place since, calls its op's VJP with the
   namespace ``nda`` (so gradients dispatch, run on the arrays' device and are ordered by
   the engine like any op) and fits each gradient to its input: summed over broadcast
   axes, cast to the input's dtype (the real part for a real input), densified for a
   strided input, kept to the stored pattern for a csr leaf. Gradients of one array
   from several consumers are added.
4. ``backward`` writes (``grad_req="write"``) or adds (``"add"``) each leaf's gradient
   into its gradient buffer; ``grad`` returns the variables' gradients. Without
   ``retain_graph`` the nodes used drop what they saved.

With ``create_graph`` the whole pass runs as if inside ``record()``, so the gradients
are themselves recorded and can be differentiated again.

Layer: autograd (README, "Architecture").
"""

from __future__ import annotations

from typing import Any, Sequence

from .._array import NDArray
from ..ops.spec import NoVJP
from ..ops._vjp import project_to_pattern
from ._graph import FLAGS, AutogradError, Entry, Node, bump, entry_of
from ._record import fast, maybe_release_checks, scope_enter, scope_exit

__all__ = ["run"]


def _key(entry: Entry) -> Any:
    return (id(entry.node), entry.index) if entry.node is not None else id(entry)


def _namespace() -> Any:
    import sys

    return sys.modules["nda"]


def run(
    heads: Sequence[Any],
    head_grads: Sequence[Any] | None,
    variables: Sequence[Any] | None,
    retain_graph: bool,
    create_graph: bool,
    caller: str,
) -> list[Any] | None:
    nd = _namespace()
    heads = list(heads)
    if head_grads is not None and len(head_grads) != len(heads):
        raise ValueError(f"{caller}: {len(heads)} heads but {len(head_grads)} head gradients; give one per head (None for ones)")
    head_entries = []
    for i, h in enumerate(heads):
        if h.__class__ is not NDArray:
            raise TypeError(f"{caller}: heads must be nda arrays, got {type(h).__name__}")
        entry = entry_of(h)
        if entry is None:
            raise AutogradError(
                f"{caller}: the head{'' if len(heads) == 1 else f' {i}'} was not computed inside autograd.record() from an array "
                f"that needs a gradient; call x.attach_grad() on the inputs and compute the result inside `with autograd.record():`"
            )
        head_entries.append(entry)
    targets: dict[Any, Entry] = {}
    if variables is not None:
        for i, v in enumerate(variables):
            if v.__class__ is not NDArray:
                raise TypeError(f"{caller}: variables must be nda arrays, got {type(v).__name__}")
            entry = entry_of(v)
            if entry is None:
                raise AutogradError(f"{caller}: variable {i} does not need a gradient; call attach_grad() on it before recording")
            targets[_key(entry)] = entry
    nodes = _reachable(head_entries)
    if variables is None:
        for e in head_entries:
            if e.node is None:
                targets[_key(e)] = e
        for n in nodes:
            for _, _, e in n.edges:
                if e.node is None and e.req is not None:
                    targets[_key(e)] = e
    relevant = _relevant(nodes, targets)
    previous = FLAGS.recording
    flags = scope_enter() if create_graph else None
    FLAGS.recording = create_graph
    try:
        cots: dict[Any, Any] = {}
        for h, entry, hg in zip(heads, head_entries, head_grads or [None] * len(heads)):
            _add(nd, cots, _key(entry), _head_grad(nd, h, hg, caller))
        used = []
        for node in sorted(relevant.values(), key=lambda n: n.seq, reverse=True):
            g = [cots.get((id(node), i)) for i in range(len(node.outs))]
            if all(c is None for c in g):
                continue
            _propagate(nd, node, g, cots, targets, relevant)
            used.append(node)
        if variables is not None:
            result = []
            for v in variables:
                found = cots.get(_key(entry_of(v)))  # type: ignore[arg-type]
                result.append(found if found is not None else fast("zeros_like")(v))
        else:
            result = None
            for key, entry in targets.items():
                found = cots.get(key)
                if found is not None and entry.node is None:
                    _deliver(nd, entry, found)
    finally:
        FLAGS.recording = previous
        if flags is not None:
            scope_exit(flags)
    if not retain_graph:
        for node in used:
            node.release()
        maybe_release_checks()
    return result


def _reachable(heads: list[Entry]) -> list[Node]:
    seen: dict[int, Node] = {}
    stack = [e.node for e in heads if e.node is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        for _, _, e in node.edges:
            if e.node is not None and id(e.node) not in seen:
                stack.append(e.node)
    return list(seen.values())


def _relevant(nodes: list[Node], targets: dict[Any, Entry]) -> dict[int, Node]:
    relevant: dict[int, Node] = {}
    for node in sorted(nodes, key=lambda n: n.seq):
        for _, _, e in node.edges:
            if _key(e) in targets or (e.node is not None and id(e.node) in relevant):
                relevant[id(node)] = node
                break
    return relevant


def _head_grad(nd: Any, head: NDArray, given: Any, caller: str) -> Any:
    if given is None:
        return fast("ones_like")(head)
    if given.__class__ is not NDArray:
        raise TypeError(f"{caller}: a head gradient must be an nda array (or None for ones), got {type(given).__name__}")
    if given.shape != head.shape:
        raise ValueError(f"{caller}: head gradient of shape {given.shape} does not match the head's shape {head.shape}")
    if given.device is not head.device:
        raise ValueError(f"{caller}: head gradient is on {given.device} but the head is on {head.device}; move it with to_device()")
    return given if given.dtype is head.dtype else nd.astype(given, head.dtype)


def _add(nd: Any, cots: dict[Any, Any], key: Any, g: Any) -> None:
    found = cots.get(key)
    cots[key] = g if found is None else nd.add(found, g)


def _argument(node: Node, position: int, inner: int) -> Any:
    params = node.op.params
    if position < len(node.args):
        value = node.args[position]
    else:
        value = node.kwargs[params[position]]
    return value if inner < 0 else value[inner]


def _propagate(nd: Any, node: Node, g: list[Any], cots: dict[Any, Any], targets: dict[Any, Entry], relevant: dict[int, Node]) -> None:
    op = node.op
    if node.freed:
        raise AutogradError(
            f"the graph through {op.name}() was already used by a backward pass and released; "
            f"pass retain_graph=True to the first backward() to run backward through it again"
        )
    if isinstance(op.vjp, NoVJP) or op.vjp is None:
        reason = op.vjp.reason if op.vjp is not None else "no vector-Jacobian product is declared"
        raise AutogradError(f"cannot compute a gradient through {op.name}(): it is not differentiable ({reason})")
    node.check_versions()
    wanted = [(p, j, e) for p, j, e in node.edges if _key(e) in targets or (e.node is not None and id(e.node) in relevant)]
    need: list[Any] = [False] * len(op.params)
    for p, j, e in wanted:
        # A csr leaf's gradient is wanted at its stored elements only (its pattern is fixed);
        # a csr array computed from others (``x.to_layout("csr")``) needs the dense gradient.
        stored = j < 0 and e.node is None and e.grad is not None and e.grad.layout.name == "csr"
        need[p] = "stored" if stored and need[p] in (False, "stored") else True
    outs = [r() for r in node.outs]
    if any(o is None for o in outs):  # an output died (multi-output ops): compute them again
        fresh = op.function(*node.args, **node.kwargs)
        fresh = tuple(fresh) if node.multi else (fresh,)
        outs = [o if o is not None else f for o, f in zip(outs, fresh)]
    y = tuple(outs) if node.multi else outs[0]
    cot = tuple(g) if node.multi else g[0]
    try:
        grads = op.vjp(nd, tuple(need), cot, y, *node.args, **node.kwargs)
        for p, j, e in wanted:
            gp = grads[p] if p < len(grads) else None
            if gp is not None and j >= 0:
                gp = gp[j]
            if gp is None:
                continue
            _add(nd, cots, _key(e), _fit(nd, gp, _argument(node, p, j), op.name, e.node is None))
    except Exception as err:
        if hasattr(err, "add_note"):
            err.add_note(f"(raised while computing the gradient of {op.name}())")
        del err  # no frame -> exception -> traceback -> frame cycle keeping the graph alive
        raise


def _fit(nd: Any, g: Any, x: NDArray, name: str, leaf: bool) -> Any:
    """``g`` as a gradient of ``x``: its shape, dtype and layout (see the module docstring).

    A csr leaf's gradient is kept to its stored elements; a csr array computed inside the
    graph (``w.to_layout("csr")``) passes the dense gradient on to what it was made from.
    """
    if g.__class__ is not NDArray:
        g = nd.full_like(x, g, dtype=None)
    strided_x = x.layout.name == "strided" or not leaf
    if g.layout.name != "strided" and (strided_x or g.layout is not x.layout):
        g = g.to_layout("strided")
    if g.shape != x.shape:
        g = _unbroadcast(nd, g, x.shape, name)
    if g.dtype is not x.dtype:
        if g.dtype.category == "complex floating" and x.dtype.category != "complex floating":
            g = nd.real(g)
        if g.dtype is not x.dtype:
            g = nd.astype(g, x.dtype)
    if g.device is not x.device:
        raise AutogradError(f"the gradient of {name}() came out on {g.device} for an input on {x.device} (an nda bug)")
    if not strided_x and g.layout is not x.layout:
        g = project_to_pattern(nd, g, x)
    return g


def _unbroadcast(nd: Any, g: Any, shape: tuple[int, ...], name: str) -> Any:
    lead = g.ndim - len(shape)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(shape, g.shape[lead:])):
        raise AutogradError(f"the VJP of {name}() gave a gradient of shape {g.shape} for an input of shape {shape} (an nda bug)")
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    if axes:
        g = nd.sum(g, axis=axes, keepdims=True)
    return nd.reshape(g, shape) if g.shape != shape else g


def _deliver(nd: Any, entry: Entry, g: Any) -> None:
    """Write or add ``g`` into the leaf's gradient buffer (in place for strided arrays)."""
    buffer = entry.grad
    if buffer is None:
        return
    if buffer.layout.name != "strided":
        total = g if entry.req == "write" else fast("add")(buffer, g)
        entry.grad = total if total.layout is buffer.layout else project_to_pattern(nd, total, buffer)
        return
    bump(buffer, "backward()")
    fast("setitem")(buffer, ..., g if entry.req == "write" else fast("add")(buffer, g))
