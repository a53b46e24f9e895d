"""spraylab: design, simulate and compare load balancing for AI-training networks.

The public names below load on first use (PEP 562), so ``import spraylab`` costs milliseconds
and a command or script pays only for what it touches (the scenario schema, the engine, pandas).
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import TYPE_CHECKING, Any

# One BLAS thread unless the user chose otherwise (read when numpy is first imported): spraylab
# does no heavy linear algebra, and OpenBLAS's thread pool spins at start-up for about 0.08 s of
# CPU per process, a sixth of a 128-host run on the compiled core.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Arrow's buffers from the C library's allocator unless the user chose otherwise (the variable
# is read when pyarrow is first imported: arrow.apache.org/docs/r/reference/MemoryPool.html,
# "ARROW_DEFAULT_MEMORY_POOL"). Its default pool reserves about 10 MB when a process first
# writes a Parquet table, more than a run's few small tables need (docs/performance.md, Memory).
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

if TYPE_CHECKING:
    from spraylab.lb.base import LbParams, LoadBalancer, register
    from spraylab.metrics.maxmin import jain_index, max_min_rates
    from spraylab.metrics.result import Result
    from spraylab.model.choices import Choices, choices
    from spraylab.model.library import load_scenario
    from spraylab.model.scenario import Scenario, ScenarioError, validate
    from spraylab.rails.planner import RailPlan, plan_rails
    from spraylab.results.frames import SweepFrames, load_sweep
    from spraylab.results.summary import summary_table
    from spraylab.runs.comparison import Comparison, compare
    from spraylab.runs.experiment import Simulation, build, run
    from spraylab.workload.flows import FlowSpec

try:
    # written by the build (setuptools-scm, from git tags: pyproject.toml [tool.setuptools_scm])
    from spraylab._version import __version__
except ImportError:  # a source tree on sys.path that was never built or installed
    __version__ = "0+unknown"

# public name -> the module that defines it
_HOMES = {
    "Choices": "spraylab.model.choices",
    "Comparison": "spraylab.runs.comparison",
    "FlowSpec": "spraylab.workload.flows",
    "LbParams": "spraylab.lb.base",
    "LoadBalancer": "spraylab.lb.base",
    "RailPlan": "spraylab.rails.planner",
    "Result": "spraylab.metrics.result",
    "Scenario": "spraylab.model.scenario",
    "ScenarioError": "spraylab.model.scenario",
    "Simulation": "spraylab.runs.experiment",
    "SweepFrames": "spraylab.results.frames",
    "build": "spraylab.runs.experiment",
    "choices": "spraylab.model.choices",
    "compare": "spraylab.runs.comparison",
    "jain_index": "spraylab.metrics.maxmin",
    "load_scenario": "spraylab.model.library",
    "load_sweep": "spraylab.results.frames",
    "max_min_rates": "spraylab.metrics.maxmin",
    "plan_rails": "spraylab.rails.planner",
    "register": "spraylab.lb.base",
    "run": "spraylab.runs.experiment",
    "summary_table": "spraylab.results.summary",
    "validate": "spraylab.model.scenario",
}

__all__ = [
    "Choices",
    "Comparison",
    "FlowSpec",
    "LbParams",
    "LoadBalancer",
    "RailPlan",
    "Result",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "SweepFrames",
    "build",
    "choices",
    "compare",
    "jain_index",
    "load_scenario",
    "load_sweep",
    "max_min_rates",
    "plan_rails",
    "register",
    "run",
    "summary_table",
    "validate",
]
assert sorted(__all__) == sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'spraylab' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
