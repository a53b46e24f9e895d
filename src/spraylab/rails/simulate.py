"""Packet-level completion time of one all-to-all matrix under a rail strategy.

``spraylab.run`` builds its traffic from a workload section (MoE routing or uniform pairs);
checks of the planner against its bound also need other matrix shapes
(:mod:`spraylab.rails.families`). :func:`simulate_matrix` runs an arbitrary GPU x GPU matrix
on the fabric, transport and switches of a scenario, through
:func:`spraylab.workload.rail_strategies.rail_flows`, exactly as a ``moe`` workload phase would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from spraylab.engine.simulator import Simulator
from spraylab.lb.base import make_lb
from spraylab.model.scenario import Scenario, validate
from spraylab.net.network import Network
from spraylab.rails.planner import RailPlan
from spraylab.runs.experiment import build_fabric, switch_params, transport_params
from spraylab.workload.rail_strategies import RailLinks, lb_override, rail_flows


@dataclass(frozen=True)
class MatrixRun:
    """What one run of a matrix measured: completion time (first byte to last byte received),
    the fabric's base RTT of a relayed message and the RailS plan (strategy ``rails`` only)."""

    cct_ps: int
    base_rtt_ps: int
    completed: bool
    plan: RailPlan | None


def rail_scenario(n_servers: int, gpus_per_server: int, **sections: dict[str, Any]) -> Scenario:
    """The rail fabric of ``scenarios/rails/``: 400 Gb/s NICs, 3.6 Tb/s NVLink, 1 us links, as
    many spines as servers (rail leaf uplinks 1:1), lossless, line-rate senders, reorder-tolerant
    NICs; ``sections`` update any of it (``topology={"spines": 4}``)."""
    data: dict[str, Any] = {
        "topology": {
            "kind": "rail",
            "servers": n_servers,
            "gpus_per_server": gpus_per_server,
            "spines": n_servers,
        },
        "switch": {"lossless": True},
        "transport": {"cc": "none", "recovery": "ideal"},
        "workload": {"kind": "rail_alltoall", "size": 1},  # unused: the matrix replaces it
        "run": {"progress": False, "seed": 1, "time_limit": "50ms"},
    }
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return validate(data)


def simulate_matrix(d1: np.ndarray, scenario: Scenario, strategy: str, **rail_flow_options: Any) -> MatrixRun:
    """Run ``d1`` with ``strategy`` on ``scenario``'s fabric (its workload section is ignored);
    ``rail_flow_options`` go to :func:`rail_flows` (``chunk_bytes``, ``chunk_overhead_ps``, ...)."""
    scenario = lb_override(
        scenario.with_overrides({"workload": [{"kind": "rail_alltoall", "strategy": strategy}]})
    )
    sim = Simulator(scenario.run.seed)
    fabric = build_fabric(scenario.topology)
    params = transport_params(scenario)
    net = Network(
        sim, fabric, switch_params(scenario), params, make_lb(scenario.lb.scheme, scenario.lb.params)
    )
    links = RailLinks.from_fabric(fabric)
    phase = rail_flows(d1, links, strategy, mtu_bytes=params.mtu_bytes, **rail_flow_options)
    qps = net.add_flows(phase.flows)
    sim.run(until_ps=scenario.run.time_limit)
    done = all(qp.rx.finish_ps >= 0 for qp in qps)
    start = min(qp.spec.start_ps for qp in qps)
    cct = max(qp.rx.finish_ps for qp in qps) - start if done else -1
    return MatrixRun(cct, links.base_rtt_ps(), done, phase.plan)
