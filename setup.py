"""Builds spraylab's compiled modules: the packet core (``spraylab.core._core``, Cython over
C++), the fluid engine's max-min kernel (``spraylab.fluid._maxmin``, Cython over C) and its
per-solve bookkeeping (``spraylab.fluid._sparse``).

Everything else is declared in pyproject.toml. All are compiled without floating-point
contraction (no fused multiply-add), so the core's times and marking draws and the kernel's
rates (and the sums between solves) are the same doubles on every compiler and machine.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

NO_CONTRACTION = ["-O2", "-ffp-contract=off"]

core = Extension(
    "spraylab.core._core",
    ["src/spraylab/core/_core.pyx"],
    include_dirs=["src/spraylab/core"],
    language="c++",
    extra_compile_args=[*NO_CONTRACTION, "-std=c++17"],
)
maxmin = Extension(
    "spraylab.fluid._maxmin",
    ["src/spraylab/fluid/_maxmin.pyx"],
    language="c",
    extra_compile_args=NO_CONTRACTION,
)
sparse = Extension(
    "spraylab.fluid._sparse",
    ["src/spraylab/fluid/_sparse.pyx"],
    language="c",
    extra_compile_args=NO_CONTRACTION,
)

setup(
    ext_modules=cythonize(
        [core, maxmin, sparse], language_level=3, compiler_directives={"embedsignature": True}
    )
)
