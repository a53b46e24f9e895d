"""Test-suite settings: property tests are derandomized under CI so a run is reproducible; the
fluid engine's max-min kernels, for tests that hold for each."""

from __future__ import annotations

import os
from importlib.util import find_spec

import pytest
from hypothesis import settings

# run.fluid_solver values: numba's where the `fast` extra is installed (the test extra installs
# it, so CI runs both kernels)
FLUID_KERNELS = [
    pytest.param("numpy"),
    pytest.param("numba", marks=pytest.mark.skipif(find_spec("numba") is None, reason="numba not installed")),
]

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
