"""A degraded link as uet-htsim builds a failed one (``-failed N``: ``fat_tree_topology.cpp``
gives the core-to-aggregation queue a quarter of the speed, a quarter of the queue size and a
quarter of the ECN thresholds; the other direction stays healthy), expressed as a ``degrade``
link event with ``direction = "forward"`` and ``scale_queue = true``.

Theory each test checks:

* ``direction = "forward"`` degrades only the ports from ``link[0]`` to ``link[1]``: the
  reverse direction keeps its base rate;
* ``scale_queue`` keeps the queueing *delay* at which a port marks and at which its queue is
  full: thresholds and cap are ``rate_fraction`` of the healthy port's bytes, so bytes / rate
  is unchanged;
* a fixed-size queue never holds more than its cap (a packet is admitted only if backlog plus
  its size fits), so the largest backlog a packet finds is below the scaled cap, while the
  unscaled port, under the same overload, queues far beyond it.
"""

from __future__ import annotations

import pytest
from simutil import US, run_flows, small_leaf_spine

from spraylab.engine.simulator import Simulator
from spraylab.lb.base import make_lb
from spraylab.model.scenario import Scenario
from spraylab.net.network import Network
from spraylab.net.wiring import SwitchParams
from spraylab.runs.experiment import run
from spraylab.transport.params import TransportParams
from spraylab.workload.flows import FlowSpec

PORT_BUFFER = 200_000
FRACTION = 0.25


def degraded_net(scale_queue: bool) -> tuple[Simulator, Network]:
    """Two leaves under one spine; the spine's port down to leaf1 degraded forward only."""
    fabric = small_leaf_spine(leaves=2, spines=1, hosts_per_leaf=2, rate_gbps=100)
    sim = Simulator(1)
    switch = SwitchParams(
        port_buffer_bytes=PORT_BUFFER, ecn_kmin_bytes_per_100g=40_000, ecn_kmax_bytes_per_100g=160_000
    )
    net = Network(sim, fabric, switch, TransportParams(recovery="ideal", cc="none"), make_lb("ecmp"))
    net.schedule_link_rate(0, "spine0", "leaf1", FRACTION, direction="forward", scale_queue=scale_queue)
    return sim, net


def test_forward_degrade_scales_rate_thresholds_and_cap_of_one_direction() -> None:
    sim, net = degraded_net(scale_queue=True)
    (down,) = net.ports_between("spine0", "leaf1", direction="forward")
    (up,) = net.ports_between("leaf1", "spine0", direction="forward")
    sim.run(until_ps=1)
    assert down.rate_bps == 25e9 and up.rate_bps == 100e9
    # same marking delay: 40 KB at 100 Gb/s = 10 KB at 25 Gb/s
    assert (down.kmin, down.kmax) == (10_000, 40_000) and (up.kmin, up.kmax) == (40_000, 160_000)
    assert down.buffer.port_limit_bytes == PORT_BUFFER * FRACTION
    assert up.buffer.port_limit_bytes == PORT_BUFFER


@pytest.mark.parametrize("scale_queue", [True, False])
def test_scaled_queue_never_holds_more_than_its_cap(scale_queue: bool) -> None:
    sim, net = degraded_net(scale_queue)
    # two 100 Gb/s senders into the 25 Gb/s port: 8x overload, the queue fills
    flows = [FlowSpec(i, h, 2 + h, 2_000_000) for i, h in enumerate((0, 1))]
    assert run_flows(sim, net, flows, until_ps=10_000 * US) == "done"
    (down,) = net.ports_between("spine0", "leaf1", direction="forward")
    cap = PORT_BUFFER * FRACTION
    if scale_queue:
        assert cap / 2 < down.max_queue_bytes < cap
    else:
        assert down.max_queue_bytes > 2 * cap


def test_scale_queue_only_with_degrade() -> None:
    base = {"topology": {"kind": "leaf_spine"}, "workload": {"kind": "permutation"}}
    event = {"link": ["leaf0", "spine0"], "action": "down", "scale_queue": True}
    with pytest.raises(ValueError, match="scale_queue"):
        Scenario.from_dict({**base, "topology": {"kind": "leaf_spine", "events": [event]}})


def test_defaults_stay_out_of_the_dumped_scenario() -> None:
    """A dumped scenario identifies its run: an event written before the options existed
    dumps as it did (no direction, no scale_queue keys)."""
    event = {"link": ["leaf0", "spine0"], "action": "degrade", "rate_fraction": 0.5}
    scenario = Scenario.from_dict(
        {"topology": {"kind": "leaf_spine", "events": [event]}, "workload": {"kind": "permutation"}}
    )
    dumped = scenario.model_dump()["topology"]["events"][0]
    assert "direction" not in dumped and "scale_queue" not in dumped


@pytest.mark.parametrize("engine", ["packet", "fluid"])
def test_forward_degrade_slows_one_direction_only(engine: str) -> None:
    """Two hosts under one spine exchange 4 MB each way (a permutation of two). Degrading the
    spine-to-leaf1 direction to a quarter leaves h0 -> h1 a quarter of the rate (max-min on one
    bottleneck: FCT about 4x) and h1 -> h0 its full rate, on both engines."""
    scenario = Scenario.from_dict(
        {
            "topology": {
                "kind": "leaf_spine",
                "leaves": 2,
                "spines": 1,
                "hosts_per_leaf": 1,
                "host_rate": "100Gbps",
                "events": [
                    {
                        "link": ["spine0", "leaf1"],
                        "action": "degrade",
                        "rate_fraction": 0.25,
                        "direction": "forward",
                    }
                ],
            },
            "transport": {"recovery": "ideal", "cc": "none"},
            "workload": {"kind": "permutation", "size": "4MB"},
            "run": {"engine": engine, "progress": False},
        }
    )
    flows = run(scenario).flows.set_index("src")
    slow, fast = float(flows.loc[0, "fct_ps"]), float(flows.loc[1, "fct_ps"])
    assert 3.6 < slow / fast < 4.2
