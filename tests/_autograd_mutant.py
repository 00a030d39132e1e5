"""A backend whose only native kernel is a wrong ``cos`` (everything else: host fallback).

Forward results of ``sin`` are right on it (sin itself falls back to cpu), but the
gradient of ``sin`` is ``g * cos(x)`` computed on the device: the conformance kit's
gradient mode must fail ``sin`` and pass ``exp``.
"""

from __future__ import annotations

import numpy as np

import nda
from nda.ops import CATALOG

from _mutant_backends import MutantBackend, wrap


class _WrongCos(MutantBackend):
    def register(self, register_kernel):  # type: ignore[no-untyped-def]
        super().register(register_kernel)
        register_kernel("cos", CATALOG["cos"].supported_dtypes, wrap(lambda x: -np.cos(x), "cos"), priority=1)


backend = _WrongCos("mut_grad_cos", (), fallback=True)


def load() -> str:
    if not nda.backends.serves("mut_grad_cos"):
        nda.backends.load("_autograd_mutant:backend")
    return "mut_grad_cos"
