"""nda's ``dask.sizeof`` entry point, outside the nda package: importing Dask does not import nda.

Dask loads every ``dask.sizeof`` entry point when ``dask.sizeof`` is imported (by
``import dask.array``). Pointing the entry point into ``nda`` would import all of nda into
every program that imports Dask, nda user or not. This module registers a *lazy* sizeof
instead: Dask calls it the first time it sizes an object of a type from the ``nda``
package, and by then nda is imported (the object exists); it then registers
:func:`nda.dask.nbytes` for nda arrays.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(sizeof: Any) -> None:
    """The entry point: ``sizeof`` of nda arrays, registered on first use (see the module docstring)."""

    def register_nda() -> None:
        from nda.dask import register_sizeof

        register_sizeof(sizeof)

    sizeof.register_lazy("nda")(register_nda)
