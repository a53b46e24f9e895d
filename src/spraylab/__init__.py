"""spraylab: design, simulate and compare load balancing for AI-training networks."""

from spraylab.config import Scenario, ScenarioError, validate
from spraylab.experiment import Simulation, build, run
from spraylab.frames import SweepFrames, load_sweep
from spraylab.lb.base import LbParams, LoadBalancer, register
from spraylab.metrics.maxmin import jain_index, max_min_rates
from spraylab.metrics.result import Result
from spraylab.rails.planner import RailPlan, plan_rails
from spraylab.workload.flows import FlowSpec

__version__ = "0.1.0"

__all__ = [
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
    "jain_index",
    "load_sweep",
    "max_min_rates",
    "plan_rails",
    "register",
    "run",
    "validate",
]
