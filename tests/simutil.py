"""Small helpers for tests that drive the simulator directly (below the scenario layer)."""

from __future__ import annotations

from spraylab.engine.simulator import Simulator
from spraylab.lb.base import make_lb
from spraylab.net.network import Network, SwitchParams
from spraylab.topology.fabric import Fabric
from spraylab.topology.leaf_spine import leaf_spine
from spraylab.transport.params import TransportParams
from spraylab.workload.flows import FlowSpec

G = 1_000_000_000
US = 1_000_000  # ps


def make_net(
    fabric: Fabric,
    lb: str = "ecmp",
    lb_params: dict | None = None,
    seed: int = 1,
    lossless: bool = False,
    **transport: object,
) -> tuple[Simulator, Network]:
    sim = Simulator(seed)
    net = Network(
        sim, fabric, SwitchParams(lossless=lossless), TransportParams(**transport), make_lb(lb, lb_params)
    )
    return sim, net


def small_leaf_spine(
    leaves: int = 4, spines: int = 4, hosts_per_leaf: int = 4, rate_gbps: int = 400
) -> Fabric:
    return leaf_spine(leaves, spines, hosts_per_leaf, rate_gbps * G, rate_gbps * G, 1 * US)


def run_flows(sim: Simulator, net: Network, flows: list[FlowSpec], until_ps: int = 100_000 * US) -> str:
    net.add_flows(flows)
    reason = sim.run(until_ps=until_ps)
    net.check_conservation()
    return reason


def fct_ps(net: Network) -> list[int]:
    return [qp.rx.finish_ps - qp.start_ps for qp in net.qps]
