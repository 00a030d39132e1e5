"""Build hook: nda's optional C extensions (``nda._native``, ``nda._philox_native``).

Everything else about the package is in ``pyproject.toml``. The extensions are optional: where
they cannot be compiled (no compiler), nda installs and runs its pure-Python fast paths and
vectorised NumPy kernels, with the same results (``NDA_NATIVE=0`` selects them at run time too).

``nda._philox_native`` is nda.random's Philox kernels (``src/nda/_philox_kernels.h``, generated
by ``nda.ops._philox_source``) compiled for the host: its floating-point operations must each
round once, as NumPy's do, so it is compiled without FMA contraction and without fast-math.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("nda._native", ["src/nda/_native.c"], optional=True, extra_compile_args=["-O2"]),
        Extension("nda._philox_native", ["src/nda/_philox_native.c"], depends=["src/nda/_philox_kernels.h"], optional=True,
                  extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno"]),
    ],
)
