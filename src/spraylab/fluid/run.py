"""Scenario -> fluid (or L0) Result: what ``spraylab.run`` calls when ``run.engine`` is not
``"packet"``."""

from __future__ import annotations

import time
from typing import Any

from spraylab.fluid.collect import collect
from spraylab.fluid.engine import prepare, simulate
from spraylab.metrics.result import Result
from spraylab.model.scenario import Scenario
from spraylab.results import provenance
from spraylab.runs.budget import check as check_budget
from spraylab.workload.rail_strategies import lb_override


def run_fluid(scenario: Scenario, check_size: bool = True) -> Result:
    """Run ``scenario`` with the fluid engine (``run.engine = "fluid"``) or its L0 bound
    (``"l0"``, :mod:`spraylab.fluid.l0`) and return the packet engine's Result tables. A
    scenario beyond the size guard (:mod:`spraylab.runs.budget`) is refused before anything is built."""
    if check_size:
        check_budget(scenario)
    wall0 = time.perf_counter()
    scenario = lb_override(scenario)  # rail_spray means per-packet spraying, as in the packet engine
    engine = scenario.run.engine
    if engine == "l0_rail":  # no messages: straight from the byte matrices
        from spraylab.fluid.l0_rail import run_l0_rail

        return run_l0_rail(scenario)
    fluid = prepare(scenario)
    if engine == "l0":
        from spraylab.fluid.l0 import simulate_l0

        out = simulate_l0(fluid)
    else:
        out = simulate(fluid, scenario.run.time_limit, scenario.run.max_wall_s, scenario.run.max_events)
    completed = bool((out.finish_ps >= 0).all())
    run_info: dict[str, Any] = {
        "name": scenario.name,
        "engine": engine,
        "scheme": scenario.lb.scheme,
        "recovery": scenario.transport.recovery,
        "cc": scenario.transport.cc,
        "topology": scenario.topology.kind,
        "hosts": fluid.fabric.fabric.n_hosts,
        "seed": scenario.run.seed,
        "stop_reason": out.stop_reason,
        "completed": completed,
        "sim_time_ps": out.end_ps,
        "events": out.steps,
        "fluid.route_model": fluid.model,
        "fluid.solves": out.solves,
        "fluid.reused": out.reused,
        "fluid.quantum_ps": fluid.quantum_ps,
        **provenance.current(),
    }
    if engine == "fluid":  # L0 solves nothing
        run_info["fluid.solver"] = fluid.solver
        run_info["fluid.ack_fallbacks"] = out.ack_fallbacks
    result = collect(fluid, out, scenario.to_dict(), run_info)
    result.summary["wall_s"] = round(time.perf_counter() - wall0, 3)
    return result
