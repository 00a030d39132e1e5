"""Build hooks: nda's optional C extensions (``nda._native``, ``nda._philox_native``), and the backend guide.

Everything else about the package is in ``pyproject.toml``. The backend guide
(``docs/writing-a-backend.md``) and its complete minimal backend (``docs/examples/minimal_backend.py``)
ship inside the package, as ``nda/_guide/``: a vendor has them with an installed nda
(``python -m nda.testing.conformance --guide`` prints the guide and says where both are). They are
copied at build time from ``docs/``, where they are edited and tested, so there is one copy in the
repository (an editable install reads ``docs/`` directly). The extensions are optional: where
they cannot be compiled (no compiler), nda installs and runs its pure-Python fast paths and
vectorised NumPy kernels, with the same results (``NDA_NATIVE=0`` selects them at run time too).

``nda._philox_native`` is nda.random's Philox kernels (``src/nda/_philox_kernels.h``, generated
by ``nda.ops._philox_source``) compiled for the host: its floating-point operations must each
round once, as NumPy's do, so it is compiled without FMA contraction and without fast-math.
"""

import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

#: docs/ file -> its name in the package's ``nda/_guide/``
GUIDE = {"docs/writing-a-backend.md": "writing-a-backend.md", "docs/examples/minimal_backend.py": "minimal_backend.py"}


class build_py_with_guide(build_py):
    """``build_py``, then the backend guide and its example backend copied into ``nda/_guide/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads docs/ in the source tree
        target = Path(self.build_lib) / "nda" / "_guide"
        target.mkdir(parents=True, exist_ok=True)
        for source, name in GUIDE.items():
            shutil.copyfile(source, target / name)


setup(
    cmdclass={"build_py": build_py_with_guide},
    ext_modules=[
        Extension("nda._native", ["src/nda/_native.c"], optional=True, extra_compile_args=["-O2"]),
        Extension(
            "nda._philox_native",
            ["src/nda/_philox_native.c"],
            depends=["src/nda/_philox_kernels.h"],
            optional=True,
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno"],
        ),
    ],
)
