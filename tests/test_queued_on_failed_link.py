"""A packet queued on a lossy port when its link fails is lost, whatever the ECN marking point.

Theory: once a link is down nothing crosses it. Only what is already on the wire at the failure
(at most one frame being serialized plus one propagation delay's worth) still arrives; every data
packet still waiting in the port's queue meets the dead link and is counted as a link_down drop.
Before the fix, an enqueue-marking port had bound its queued packets to the working link's
delivery at enqueue time, so its whole queue crossed the dead link."""

from __future__ import annotations

import pytest
from simutil import US, G

from spraylab.engine.simulator import Simulator
from spraylab.lb.base import make_lb
from spraylab.net.drops import LINK_DOWN
from spraylab.net.network import Network, SwitchParams
from spraylab.net.packet import DATA, Packet
from spraylab.topology.leaf_spine import leaf_spine
from spraylab.transport.params import TransportParams
from spraylab.workload.flows import FlowSpec

FAIL_PS = 40 * US
DELAY_PS = 1 * US


@pytest.mark.parametrize("mark_at", ["dequeue", "enqueue"])
def test_queued_packets_do_not_cross_a_failed_link(mark_at: str) -> None:
    fabric = leaf_spine(2, 1, 4, 100 * G, 100 * G, DELAY_PS)  # one spine: the leaf0 uplink queues
    sim = Simulator(1)
    net = Network(
        sim,
        fabric,
        SwitchParams(lossless=False, ecn_mark_at=mark_at),
        TransportParams(cc="none", recovery="sr"),
        make_lb("ecmp", None),
    )
    net.add_flows([FlowSpec(i, h, 4, 4_000_000) for i, h in enumerate([0, 1, 2, 3])])  # 4:1 into leaf1
    port = net.link_ports[("leaf0", "spine0")][0]  # four hosts into one 100G uplink
    arrivals: list[int] = []

    def tap(pkt: Packet) -> bool:
        if pkt.kind == DATA:
            arrivals.append(sim.now)
        return True

    port.link.add_tap(tap)
    net.schedule_link_down(FAIL_PS, "leaf0", "spine0", convergence_ps=10 * US)
    sim.run(until_ps=FAIL_PS)
    queued_bytes = port.queue_bytes()
    before = port.drops_by_cause[LINK_DOWN]
    sim.run(until_ps=FAIL_PS + 200 * US)
    frame_ps = 4178 * 8 * 1_000_000_000_000 // (100 * G)
    late = [t for t in arrivals if t > FAIL_PS]
    assert queued_bytes > 100 * 4178  # a standing queue when the link died
    assert len(late) <= DELAY_PS // frame_ps + 1  # only what was already on the wire
    assert port.drops_by_cause[LINK_DOWN] - before >= queued_bytes // 4178 - 1
