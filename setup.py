"""Build hook: nda's optional C fast paths (``nda._native``).

Everything else about the package is in ``pyproject.toml``. The extension is optional: where
it cannot be compiled (no compiler), nda installs and runs its pure-Python fast paths, with
the same results (``NDA_NATIVE=0`` selects them at run time too).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("nda._native", ["src/nda/_native.c"], optional=True, extra_compile_args=["-O2"]),
    ],
)
