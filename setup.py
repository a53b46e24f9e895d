"""Builds spraylab's compiled packet core (``spraylab.core._core``, Cython over C++).

Everything else is declared in pyproject.toml. The core is compiled without floating-point
contraction (no fused multiply-add), so its times and marking draws are the same doubles on
every compiler and machine.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

core = Extension(
    "spraylab.core._core",
    ["src/spraylab/core/_core.pyx"],
    include_dirs=["src/spraylab/core"],
    language="c++",
    extra_compile_args=["-O2", "-ffp-contract=off", "-std=c++17"],
)

setup(ext_modules=cythonize([core], language_level=3, compiler_directives={"embedsignature": True}))
