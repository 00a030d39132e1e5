"""The op catalog: every op nda knows, declared once (see ``_spec`` for the declaration format).

Importing this package declares all ops and creates their (empty) dispatch tables;
backends fill the tables. ``CATALOG`` maps op names to :class:`~nda.ops._spec.OpDecl`.
"""

from . import creation, elementwise, indexing, linalg, manipulation, reductions, searching  # noqa: F401  (declare the ops)
from . import fft, linalg_extension  # noqa: F401  (the standard's extensions: "linalg.*", "fft.*")
from ._spec import CATALOG, OpDecl, Plan

__all__ = ["CATALOG", "OpDecl", "Plan"]
