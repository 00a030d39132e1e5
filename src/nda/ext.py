"""``nda.ext.<library>.<op>``: the public functions of the ops that op libraries add.

An op library (:mod:`nda.ops.extension`) is found through the entry-point group
``nda.extensions`` or loaded with ``nda.backends.load("package.module")``. The first access
of ``nda.ext.<library>`` loads it if needed (importing nda imports no library) and builds
its namespace: one function per op, generated from the op's declaration by the same code
as the catalog's functions (``nda._namespace.make_function``), so an extension op plans,
dispatches, runs through the engine and device queues, records under
``nda.autograd.record()`` and is traced by ``nda.hybridize`` exactly like ``nda.add``.

``dir(nda.ext)`` lists the installed and loaded libraries; ``nda.backends.libraries()``
says which loaded and why one did not.

Layer: arrays and front end, extensions (README, "Architecture").
"""

from __future__ import annotations

import threading
import types
from typing import Any, Callable

from . import _forksafe, _namespace, backends
from .backends import _libraries
from .ops import extension as _extension

__all__: list[str] = []

_lock = _forksafe.guard(threading.RLock(), "the op libraries' lock", rank=10)  # outermost: it may activate a backend
_namespaces: dict[str, types.ModuleType] = {}
#: Called with (namespace module, functions by qualified op name) when a library's namespace is built.
on_namespace: list[Callable[[types.ModuleType, dict[str, Callable[..., Any]]], None]] = []


def namespace(library: str) -> types.ModuleType:
    """The namespace of the loaded library ``library`` (built on first use)."""
    with _lock:
        found = _namespaces.get(library)
        if found is not None:
            return found
        if library not in _extension.libraries():
            backends.load_library(library)
        lib = _extension.libraries()[library]
        module = types.ModuleType(f"nda.ext.{library}", lib.doc or f"Ops of the op library {library!r} (version {lib.version}).")
        functions: dict[str, Callable[..., Any]] = {}
        for decl in _extension.ops_of(library):
            fn = _namespace.make_function(decl, module.__name__)
            setattr(module, decl.short, fn)
            functions[decl.name] = fn
        module.__all__ = sorted(d.short for d in _extension.ops_of(library))  # type: ignore[attr-defined]
        module.__library__ = lib  # type: ignore[attr-defined]
        _namespaces[library] = module
        globals()[library] = module
        for hook in list(on_namespace):
            hook(module, functions)
        return module


def function(op: str) -> Callable[..., Any]:
    """The public function of the extension op ``"<library>.<op>"``."""
    library, _, short = op.partition(".")
    return getattr(namespace(library), short)  # type: ignore[no-any-return]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    known = set(_libraries.installed_names()) | set(_extension.libraries())
    if name not in known:
        raise AttributeError(
            f"module 'nda.ext' has no library {name!r}; installed op libraries: {', '.join(sorted(known)) or 'none'} "
            f"(a library is installed through the entry-point group 'nda.extensions' or loaded with nda.backends.load('package.module'))"
        )
    return namespace(name)


def __dir__() -> list[str]:
    return sorted(set(_libraries.installed_names()) | set(_extension.libraries()) | {"namespace", "function"})


def _forget(library: str) -> None:
    """Drop a namespace (a library that failed after its namespace was built; tests)."""
    with _lock:
        _namespaces.pop(library, None)
        globals().pop(library, None)
