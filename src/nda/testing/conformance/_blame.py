"""Whose bug is a failing value cell? The note the kit adds to a failure (:meth:`Runner._diagnose`).

A case that fails through nda's public function may be wrong for three reasons, and the
vendor needs to know which before reading any code:

* **wrong when run in order**: the device's kernel, called directly with the arguments nda
  planned once its inputs are finished, gives a wrong result too. The backend's kernel.
* **right alone, wrong in the program**: the kernel alone is right, and so is the public call
  when every input is finished before it is issued (a ``waitall`` between the steps); only the
  call issued behind pending work (the inputs' uploads, casts, views) is wrong. An ordering
  bug: the backend's queue contract (markers, ``from_host``, side queues) or nda's engine; the
  ordering profile (``--profile ordering``) runs programs that tell the two apart.
* the kernel alone is right and the public call stays wrong when nothing is pending: nda's
  front end (planning, casts, dispatch): an nda bug, not the backend's.

Before this distinction the kit blamed nda whenever the kernel alone was right, which is what
a timing bug in a backend looks like too (its queue has drained when the kernel is replayed).

Layer: clients (of the nda namespace) (README, "Architecture").
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import nda
from nda._devices import strided
from nda.ops import DECLARED as CATALOG

from .._compare import assert_allclose

__all__ = ["diagnose", "IN_ORDER", "IN_PROGRAM", "FRONT_END"]

IN_ORDER = (
    "\nnote: wrong when run in order: the device's kernel, called directly with the arguments nda planned once its "
    "inputs were finished, gives a wrong result too: the bug is in the backend's kernel"
)
IN_PROGRAM = (
    "\nnote: right alone, wrong in the program: the device's kernel called directly, and the public call with every "
    "input finished before it was issued, both give the reference's result; only the call issued behind pending work "
    "differs. An ordering bug: in the backend's queue contract (markers, from_host, copies, a kernel that reads an "
    "input before the work producing it has run) or in nda's engine; --profile ordering runs programs that tell "
    "which"
)
RACE = (
    "\nnote: the result depends on timing: the same call gave the reference's result on some replays and not on others "
    "(an ordering bug: --profile ordering tells whose)"
)
FRONT_END = (
    "\nnote: the device's kernel, called directly with the arguments nda planned, gives the reference's result, and "
    "the public call is wrong even with every input finished before it is issued: the difference comes from nda's "
    "front end (planning, casts, dispatch): an nda bug, not the backend's"
)


def diagnose(runner: Any, case: Any, cell: Any) -> str:
    """The note for a failing ``case`` of ``cell`` (see the module docstring); "" when there is no verdict."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            alone = _kernel_alone(runner, case, cell)
        except Exception:  # noqa: BLE001 - no verdict: the kernel cannot be called directly
            return ""
        if alone is None:
            return ""
        if not alone:
            return IN_ORDER
        replays = [_public_in_order(runner, case, cell) for _ in range(2)]
    if all(r is True for r in replays):
        return IN_PROGRAM
    if all(r is False for r in replays):
        return FRONT_END
    return RACE if any(r is True for r in replays) else ""


def _agrees(runner: Any, case: Any, cell: Any, value: np.ndarray, expected: np.ndarray) -> bool:
    if value.dtype != expected.dtype or value.shape != expected.shape:
        return False
    if not case.check_values:
        return True
    rtol, atol = runner._tolerance(case, expected.dtype, expected)
    try:
        assert_allclose(value, expected, rtol=rtol, atol=atol, signed_zeros=case.signed_zeros and cell.layout is strided, check_dtype=False)
    except AssertionError:
        return False
    return True


def _kernel_alone(runner: Any, case: Any, cell: Any) -> bool | None:
    """Whether the kernel, called directly on finished inputs, agrees with the reference (None: cannot tell)."""
    from nda._execute import unwrap

    from ._kit import _Outcome, _same_bits

    args, kwargs, inputs, hosts = runner._materialize(case, runner.device, cell)
    for x, _, _ in inputs:
        x.wait_to_read()
    decl = CATALOG[case.op]
    direct = _Outcome()
    direct.plan, direct.hosts = decl.plan(*args, **kwargs), hosts
    kernel = nda.dispatch.resolve(case.op, direct.plan.key).run
    try:
        result = kernel(*unwrap(direct.plan.args), **{k: unwrap(v) for k, v in direct.plan.kwargs.items()})
        buf = args[0]._buf if decl.mutates else result
        value = np.asarray(nda.backends.read_buffer(runner.device, buf))
    except Exception:  # noqa: BLE001 - the kernel alone fails: whether that is right is the comparison's business
        return None
    expected = runner._reference(case, direct).value
    if expected is None or isinstance(expected, tuple):
        return None
    if any(not _same_bits(x.asnumpy(), snapshot) for x, snapshot, _ in inputs if not (decl.mutates and x is args[0])):
        return False
    return _agrees(runner, case, cell, value, expected)


def _public_in_order(runner: Any, case: Any, cell: Any) -> bool | None:
    """Whether the public call agrees with the reference when every input is finished before it is
    issued and the call is finished before it is read (None: cannot tell)."""
    try:
        got = runner._run_on(case, runner.device, cell, in_order=True)
        expected, where = runner._expected(case, cell, got)
    except Exception:  # noqa: BLE001
        return None
    return not runner._compare(case, cell, got, expected, where)
