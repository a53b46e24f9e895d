"""What a link does to a packet: the fixed-order delivery pipeline of ``spraylab.net.link``.

Theory each test checks:

* nothing crosses a dead link: once a link is down every packet sent into it is lost as
  ``link_down``, and a loss event that starts later draws nothing there (the failure stage
  comes first, whatever the order of the events);
* a ``loss`` event sets the link's loss probability: a second event replaces it, so the
  measured loss fraction is the binomial estimate of p, not of 1 - (1 - p)^2;
* a link with no stage delivers straight to the peer's entry point (``Switch.forward`` where
  no ToR program runs), so the common case costs one call per hop;
* PFC ingress accounting comes after every stage that can lose a packet: it counts exactly
  what the peer received, so a lossless fabric that loses packets on a link ends with every
  ingress counter back at zero bytes.
"""

from __future__ import annotations

import math

from simutil import US, make_net, run_flows, small_leaf_spine

from spraylab.net.drops import LINK_DOWN, RANDOM_LOSS
from spraylab.net.packet import DATA, Packet
from spraylab.net.port import sim_drop
from spraylab.net.switch import Switch
from spraylab.workload.flows import FlowSpec


def cross_leaf(n_leaves: int, hosts_per_leaf: int, size: int) -> list[FlowSpec]:
    """Host h sends to the host with the same index on the next leaf (every flow crosses a spine)."""
    n = n_leaves * hosts_per_leaf
    return [FlowSpec(h, h, (h + hosts_per_leaf) % n, size) for h in range(n)]


def link_drops(net, a: str, b: str, cause: int) -> int:
    return sum(p.drops_by_cause[cause] for p in net.ports_between(a, b))


def test_a_dead_link_draws_no_random_loss_even_if_the_loss_event_comes_later() -> None:
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, rate_gbps=100)
    sim, net = make_net(fabric, "rps", recovery="ideal", cc="none")
    net.schedule_link_down(10 * US, "leaf0", "spine0", convergence_ps=10_000 * US)
    net.schedule_link_loss(20 * US, "leaf0", "spine0", 0.5)
    assert run_flows(sim, net, cross_leaf(2, 2, 2_000_000)) == "done"
    assert link_drops(net, "leaf0", "spine0", LINK_DOWN) > 0
    assert link_drops(net, "leaf0", "spine0", RANDOM_LOSS) == 0
    # ... while on a live link the same loss event does draw
    sim, net = make_net(fabric, "rps", recovery="ideal", cc="none")
    net.schedule_link_loss(20 * US, "leaf0", "spine0", 0.5)
    assert run_flows(sim, net, cross_leaf(2, 2, 2_000_000)) == "done"
    assert link_drops(net, "leaf0", "spine0", RANDOM_LOSS) > 0


def test_a_second_loss_event_replaces_the_rate() -> None:
    p = 0.3
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, rate_gbps=100)
    sim, net = make_net(fabric, "rps", recovery="ideal", cc="none")
    net.schedule_link_loss(0, "leaf0", "spine0", p)
    net.schedule_link_loss(0, "leaf0", "spine0", p)
    assert run_flows(sim, net, cross_leaf(2, 2, 1_000_000)) == "done"
    crossed = sum(port.tx_packets for port in net.ports_between("leaf0", "spine0"))
    lost = link_drops(net, "leaf0", "spine0", RANDOM_LOSS)
    sigma = math.sqrt(p * (1 - p) / crossed)
    assert crossed > 1000
    assert abs(lost / crossed - p) < 4 * sigma, (lost, crossed)  # stacked would be 0.51
    # a rate of 0 removes the stage: the link delivers straight to its peer again
    port = net.link_ports[("leaf0", "spine0")][0]
    port.link.set_loss(0.0, lambda: 0.0)
    assert port.receive_at_peer == port.peer_owner.forward


def test_links_without_stages_deliver_straight_to_the_peer() -> None:
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=2)
    for lb, programmed in (("ecmp", set()), ("tor_assist", {"leaf0", "leaf1"})):
        _, net = make_net(fabric, lb)
        for port in net.ports:
            peer = port.peer_owner
            if isinstance(peer, Switch) and peer.name not in programmed:
                assert peer.program is None and port.receive_at_peer == peer.forward
            else:
                assert port.receive_at_peer == peer.receive
    # lossless: the ingress counter is the only stage, and it hands over to the bypass
    _, net = make_net(fabric, "ecmp", lossless=True)
    counters = {id(c.upstream): c for c in net.ingress_counters}
    for port in net.ports:
        peer = port.peer_owner
        if isinstance(peer, Switch):
            counter = counters[id(port)]
            assert port.receive_at_peer == counter.receive and counter.forward == peer.forward
        else:
            assert id(port) not in counters and port.receive_at_peer == peer.receive


def test_pfc_accounting_sees_only_what_the_peer_received() -> None:
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=2, rate_gbps=100)
    sim, net = make_net(fabric, "rps", lossless=True, recovery="sr")
    port = net.link_ports[("leaf0", "spine0")][0]
    seen = [0]

    def lose_every_seventh(pkt: Packet) -> bool:
        if pkt.kind != DATA:
            return True
        seen[0] += 1
        if seen[0] % 7:
            return True
        sim_drop(sim, pkt, RANDOM_LOSS, port)
        return False

    port.link.add_tap(lose_every_seventh)
    net.schedule_link_loss(0, "leaf0", "spine1", 0.01)  # a loss stage before the counter too
    assert run_flows(sim, net, cross_leaf(2, 2, 1_000_000)) == "done"
    assert port.drops_by_cause[RANDOM_LOSS] == seen[0] // 7 > 0
    assert link_drops(net, "leaf0", "spine1", RANDOM_LOSS) > 0
    assert all(c.bytes == 0 and not c.pausing for c in net.ingress_counters)
