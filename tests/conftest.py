"""Test-suite settings: property tests are derandomized under CI so a run is reproducible; the
fluid engine's max-min kernels, for tests that hold for each."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# run.fluid_solver values of the two max-min kernels (the compiled one is built with the package)
FLUID_KERNELS = [pytest.param("numpy"), pytest.param("compiled")]

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
