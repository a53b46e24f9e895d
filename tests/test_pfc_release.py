"""PFC ingress accounting on a lossless fabric when a switch itself drops a packet.

Theory each test checks: an ingress counter holds the bytes that came in on its link and are
still buffered in the switch (the PFC model of IEEE 802.1Qbb: a frame stops counting against
its ingress when it leaves the buffer, whichever way it leaves). So at any instant

    counter.bytes == bytes of the data packets it counted that are still queued at an egress
                     port of that switch or held by its ToR program,

and a packet the switch drops (no route, a ToR program's resequencer) must stop counting the
moment it is dropped. A counter that keeps a dropped packet's bytes never drains: once the
leaked bytes pass XOFF the upstream port stays paused for good, and every flow sharing it
stops (head-of-line blocking by a packet that no longer exists).
"""

from __future__ import annotations

from simutil import US, run_flows, small_leaf_spine

from spraylab.engine.simulator import Simulator
from spraylab.lb.base import make_lb
from spraylab.net.drops import NO_ROUTE, RESEQUENCER
from spraylab.net.network import Network, SwitchParams
from spraylab.net.port import PfcPort
from spraylab.topology.fabric import Fabric
from spraylab.transport.params import TransportParams
from spraylab.workload.flows import FlowSpec

XOFF_BYTES = 100_000  # small, so that a leak of a few dozen packets pauses the upstream port
XON_BYTES = 50_000


def lossless_net(
    fabric: Fabric, lb: str, lb_params: dict | None = None, **transport: object
) -> tuple[Simulator, Network]:
    sim = Simulator(1)
    switch = SwitchParams(lossless=True, pfc_xoff_bytes=XOFF_BYTES, pfc_xon_bytes=XON_BYTES)
    net = Network(sim, fabric, switch, TransportParams(**transport), make_lb(lb, lb_params))
    return sim, net


def buffered_bytes_by_counter(net: Network) -> dict[int, int]:
    """Bytes each ingress counter should hold: the data packets it counted that are still
    in a switch (in an egress queue, or held by a resequencing ring)."""
    held: dict[int, int] = {}

    def add(pkt: object) -> None:
        counter = getattr(pkt, "ingress", None)
        if counter is not None:
            held[id(counter)] = held.get(id(counter), 0) + pkt.size  # type: ignore[attr-defined]

    for port in net.ports:
        if isinstance(port, PfcPort):
            for pkt in port.data_queue:
                add(pkt)
    for program in getattr(net.lb, "programs", ()):
        for fs in program.tracker.dst.values():
            for pkt in getattr(fs, "buf", None) or ():
                if pkt is not None:
                    add(pkt)
    return held


def assert_accounting_exact(net: Network) -> None:
    held = buffered_bytes_by_counter(net)
    for counter in net.ingress_counters:
        assert counter.bytes == held.get(id(counter), 0), (counter.upstream.name, counter.bytes)
        # PFC state follows the bytes: pausing only above XON, and the upstream port with it
        assert not counter.pausing or counter.bytes > counter.xon, counter.upstream.name


def test_no_route_drops_release_their_ingress_bytes() -> None:
    # leaf2 loses both uplinks before any flow starts: leaf0 has no route to its hosts.
    # Host 0 sends 1 MB to an unreachable host (dropped at leaf0, NO_ROUTE, ten times XOFF)
    # and, on the same NIC, 200 KB to a reachable one.
    fabric = small_leaf_spine(leaves=3, spines=2, hosts_per_leaf=2, rate_gbps=100)
    sim, net = lossless_net(fabric, "ecmp", recovery="sr")
    for spine in ("spine0", "spine1"):
        net.schedule_link_down(1 * US, "leaf2", spine, convergence_ps=1 * US)
    unreachable = FlowSpec(0, 0, 4, 1_000_000, start_ps=10 * US)
    reachable = FlowSpec(1, 0, 2, 200_000, start_ps=10 * US)
    assert run_flows(sim, net, [unreachable, reachable], until_ps=2_500 * US) == "time_limit"
    assert net.qps[0].drops_by_cause[NO_ROUTE] >= 1_000_000 // 4096
    # The reachable flow shares host 0's NIC: a leaked counter at leaf0 would pause it forever.
    assert net.qps[1].rx.finish_ps > 0
    assert_accounting_exact(net)
    host_up = net.link_ports[("h0", "leaf0")][0]
    assert not host_up.paused


def test_resequencer_drops_release_their_ingress_bytes() -> None:
    # ToR-assisted spraying in reorder mode with a ring of 2 packets: sprayed packets that
    # overtake by more than the ring are dropped at the destination ToR (RESEQUENCER); one
    # slow spine link makes sure they do.
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, rate_gbps=100)
    sim, net = lossless_net(fabric, "tor_assist", {"mode": "reorder", "window": 2}, recovery="gbn")
    net.schedule_link_rate(0, "spine0", "leaf1", 0.25)
    flows = [FlowSpec(h, h, h + 2, 500_000) for h in range(2)]
    assert run_flows(sim, net, flows) == "done"
    assert sum(qp.drops_by_cause[RESEQUENCER] for qp in net.qps) > 0
    assert_accounting_exact(net)
    # Received and acknowledged; stale copies may still be queued. Let them drain: an idle
    # fabric buffers nothing, so every counter is back at zero and no port is left paused.
    assert sim.run(until_ps=sim.now + 100_000 * US) == "idle"
    assert all(c.bytes == 0 and not c.pausing for c in net.ingress_counters)
    assert not any(p.paused for p in net.ports if isinstance(p, PfcPort))
