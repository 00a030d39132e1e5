"""The op catalog: every op nda knows, declared once (see ``spec`` for the declaration format).

Importing this package declares all ops and creates their (empty) dispatch tables;
backends fill the tables. ``CATALOG`` maps op names to :class:`~nda.ops.spec.OpDecl`;
``EXTENSIONS`` holds the ops of loaded op libraries (:mod:`nda.ops.extension`) and
``DECLARED`` is a view of both.

Layer: op catalog (README, "Architecture").
"""

from . import creation, elementwise, indexing, linalg, manipulation, reductions, searching  # noqa: F401  (declare the ops)
from . import einsum, random, random_dist  # noqa: F401  (einsum; the Philox ops behind nda.random: "random.*")
from . import fft, linalg_extension  # noqa: F401  (the standard's extensions: "linalg.*", "fft.*")
from .spec import CATALOG, OpDecl, Plan
from .extension import DECLARED, EXTENSIONS, OpLibrary, lookup  # ops of op libraries (nda.ext.<library>.<op>)

__all__ = ["CATALOG", "OpDecl", "Plan", "EXTENSIONS", "DECLARED", "OpLibrary", "lookup"]
