"""Scenario → simulation → Result: the one entry point notebooks, the CLI and sweeps share."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spraylab.engine.simulator import Simulator
from spraylab.lb.base import make_lb
from spraylab.metrics.build import build_result  # noqa: F401  (collect's, imported before a build: net/route_table.py)
from spraylab.metrics.collect import collect, ideal_fct_ps
from spraylab.metrics.fct_bound import fct_lower_bounds_ps
from spraylab.metrics.result import Result
from spraylab.model.scenario import Scenario, ScenarioError
from spraylab.net.link_events import LINK_ACTIONS
from spraylab.net.network import Network, SwitchParams
from spraylab.results import provenance
from spraylab.results.card import scenario_card
from spraylab.runs.budget import check as check_budget
from spraylab.runs.monitor import Monitor
from spraylab.topology.base import TopologySection
from spraylab.topology.fabric import Fabric
from spraylab.transport.params import TransportParams
from spraylab.workload.build import GroupInfo, build_flows
from spraylab.workload.rail_strategies import lb_override

ProgressFn = Callable[[Simulator, float], None]


def build_fabric(topology: TopologySection) -> Fabric:
    return topology.build_fabric()


def transport_params(scenario: Scenario) -> TransportParams:
    return scenario.transport.to_params()


def switch_params(scenario: Scenario) -> SwitchParams:
    return scenario.switch.to_params()


@dataclass
class Simulation:
    """A built, not yet finished run: exposes the simulator and network for step-wise use
    (``sim.run(until_ps=...)`` in tests and notebooks) and turns into a Result."""

    scenario: Scenario
    sim: Simulator
    net: Network
    groups: dict[str, GroupInfo]
    ideal_fct: list[int]
    fct_bound: list[int]
    wall_s: float = 0.0
    monitor: Monitor | None = None  # the [monitor] sampler, when the scenario has one

    def run(self, progress: ProgressFn | None = None, until_ps: int | None = None) -> str:
        """Run until the stop condition, or until simulated time ``until_ps`` (at most
        ``run.time_limit``); a later call continues from there. Returns the stop reason."""
        r = self.scenario.run
        bind = getattr(progress, "bind", None)
        if bind is not None:
            bind(self.net)
        self.sim.set_progress(progress)
        start = time.perf_counter()
        reason = self.sim.run(
            until_ps=r.time_limit if until_ps is None else min(until_ps, r.time_limit),
            max_events=r.max_events or None,
            max_wall_s=r.max_wall_s or None,
        )
        self.wall_s += time.perf_counter() - start
        return reason

    def result(self) -> Result:
        conservation = self.net.check_conservation()
        stop = self.sim.stop_reason
        if stop == "idle" and self.net.all_done:
            stop = "done"
        run_info: dict[str, Any] = {
            "name": self.scenario.name,
            "engine": "packet",
            "scheme": self.scenario.lb.scheme,
            "recovery": self.scenario.transport.recovery,
            "cc": self.scenario.transport.cc,
            "topology": self.scenario.topology.kind,
            "hosts": self.net.fabric.n_hosts,
            "seed": self.scenario.run.seed,
            "stop_reason": stop,
            "completed": self.net.all_done,
            "sim_time_ps": self.sim.now,
            "events": self.sim.events,
            "wall_s": round(self.wall_s, 3),
            "conservation": conservation,
            **provenance.current(),
            # what the numbers were run on, for every output made from this summary
            "card": scenario_card(self.scenario, self.net.fabric).as_dict(),
        }
        scenario = self.scenario.to_dict()
        # first: it gives the ports back their run's queue maxima (spraylab.runs.monitor)
        timeseries = self.monitor.finish() if self.monitor is not None else None
        result = collect(self.net, self.ideal_fct, self.groups, scenario, run_info, self.fct_bound)
        result.timeseries = timeseries
        return result


def build(scenario: Scenario, check_size: bool = True) -> Simulation:
    """The simulator and network of ``scenario``, before running. ``check_size = False`` skips
    the size guard (:mod:`spraylab.runs.budget`), for callers that checked already (sweep workers)."""
    if check_size:
        check_budget(scenario)
    scenario = lb_override(scenario)  # strategy "rail_spray" runs under per-packet spraying
    sim = Simulator(scenario.run.seed)
    fabric = build_fabric(scenario.topology)
    params = transport_params(scenario)
    net = Network(
        sim, fabric, switch_params(scenario), params, make_lb(scenario.lb.scheme, scenario.lb.params)
    )
    for event in scenario.topology.events:
        a, b = event.link
        parallel = event.parallel
        try:
            LINK_ACTIONS.get(event.action).schedule(net, event)
        except KeyError:
            raise ScenarioError(
                [
                    f"topology.events.link = {[a, b]!r}: no such link; names look like {fabric.links[-1].a!r}, {fabric.links[-1].b!r}"
                ]
            ) from None
        except IndexError as exc:
            raise ScenarioError([f"topology.events.parallel = {parallel}: {exc.args[0]}"]) from None
    flows, groups = build_flows(scenario.workload, fabric, sim.derive_rng(0xF10A), scenario.run.seed)
    qps = net.add_flows(flows)
    ideal = [ideal_fct_ps(net, qp.src, qp.dst, qp.spec.size_bytes, params.mtu_bytes) for qp in qps]
    monitor = Monitor(net, scenario.monitor) if scenario.monitor is not None else None
    return Simulation(scenario, sim, net, groups, ideal, fct_lower_bounds_ps(net, qps), monitor=monitor)


def run(
    scenario: Scenario | str | Path | dict[str, Any],
    progress: ProgressFn | None = None,
    check_size: bool = True,
) -> Result:
    """Run one scenario (object, TOML path or dict) to its stop condition and return its Result.
    A scenario beyond the size guard raises :class:`ScenarioError` before anything is built."""
    if isinstance(scenario, (str, Path)):
        scenario = Scenario.load(scenario)
    elif isinstance(scenario, dict):
        from spraylab.model.scenario import validate

        scenario = validate(scenario)
    if scenario.run.engine != "packet":  # flow-level engines: spraylab.fluid
        from spraylab.fluid.run import run_fluid

        return run_fluid(scenario, check_size)
    simulation = build(scenario, check_size)
    if scenario.run.stop == "time":
        simulation.net.stop_when_done = False
    simulation.run(progress)
    result = simulation.result()
    # The finished run's pending timers hold the network alive through the simulator (the
    # cyclic collector cannot see the calendar's events): drop them, so the network is garbage.
    simulation.sim.discard_pending()
    return result
