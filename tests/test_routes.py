"""The route model (``spraylab.net.routes``): route groups and the path tracer.

Theory: a k-ary fat-tree has (k/2)^2 shortest paths between hosts of different pods, k/2
between different edge switches of one pod, one under one edge switch, and 6 / 4 / 2 links
on them; a leaf-spine with S spines has S paths between leaves. Routing reinstalls groups in
place, so a group keeps its identity and gets a new version and cleared state."""

from __future__ import annotations

import pytest
from simutil import US, make_net, small_leaf_spine

from spraylab.net.packet import DATA, Packet
from spraylab.net.routes import RouteGroup, hop_hash, trace_route
from spraylab.net.switch import ecmp_select
from spraylab.topology.fat_tree import fat_tree

G = 1_000_000_000


def test_fat_tree_representative_routes() -> None:
    k = 4
    _, net = make_net(fat_tree(k, 100 * G, 1 * US))
    # hosts 0, 1 under edge0_0; 2, 3 under edge0_1 (pod 0); 4.. in pod 1
    for dst, paths, links in ((1, 1, 2), (2, k // 2, 4), (4, (k // 2) ** 2, 6)):
        route = trace_route(net, 0, dst)
        assert route.complete and route.end_node is net.hosts[dst]
        assert route.paths == paths
        assert len(route.hops) == links
        assert all(h.hash == -1 for h in route.hops)  # no packet hash traced
        assert route.ports[-1].peer_owner is net.hosts[dst]


def test_hashed_trace_is_what_ecmp_forwarding_does() -> None:
    """With a packet hash, each hop is ``hop_hash(hash, salt) % n`` of the switch's group:
    the choice ``ecmp_select`` makes for a packet carrying that hash."""
    _, net = make_net(fat_tree(4, 100 * G, 1 * US))

    for pkt_hash in range(200):
        route = trace_route(net, 0, 12, pkt_hash=pkt_hash)
        assert route.complete
        probe = Packet(DATA, None, 0, 12, 0, 0, 0, 0, pkt_hash, 0)
        for before, hop in zip(route.hops, route.hops[1:]):
            switch = before.port.peer_owner
            group = switch.table[12]
            assert hop.fanout == len(group)
            assert hop.hash == hop_hash(pkt_hash, switch.salt)
            assert hop.port is ecmp_select(switch, probe, group)


def test_groups_shared_per_destination_tor_and_reinstalled_in_place() -> None:
    sim, net = make_net(small_leaf_spine(leaves=4, spines=4, hosts_per_leaf=4), lb="drill")
    leaf0 = net.switches["leaf0"]
    group = leaf0.table[4]
    assert isinstance(group, RouteGroup) and len(group) == 4
    assert all(leaf0.table[h] is group for h in range(4, 8))  # hosts of leaf1 share it
    assert leaf0.table[8] is not group
    group.state = "scheme state"
    version = group.version
    net.schedule_link_down(1 * US, "leaf0", "spine0", convergence_ps=1 * US)
    sim.run(until_ps=3 * US)
    assert leaf0.table[4] is group  # the same object, reinstalled
    assert group.version > version and group.state is None
    assert len(group) == 3 and all(p.peer_owner.name != "spine0" for p in group)
    assert trace_route(net, 0, 4).paths == 3


def test_a_route_group_is_a_read_only_view() -> None:
    """The core forwards by its arrays, not by the view: writing to a view would make the two
    disagree, so every list mutator refuses, and the switch keeps forwarding as routed."""
    _, net = make_net(small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=1))
    leaf0 = net.switches["leaf0"]
    group = leaf0.table[1]
    before = list(group)
    for mutate in (
        lambda: group.__setitem__(0, before[1]),
        lambda: group.__delitem__(0),
        lambda: group.append(before[0]),
        lambda: group.extend(before),
        lambda: group.insert(0, before[0]),
        lambda: group.pop(),
        lambda: group.remove(before[0]),
        lambda: group.clear(),
        lambda: group.sort(key=id),
        lambda: group.reverse(),
    ):
        with pytest.raises(TypeError, match="read-only"):
            mutate()
    assert list(group) == before
    with pytest.raises(TypeError):
        leaf0.table[1] = []  # the table is a tuple of views


def test_trace_reports_unreachable() -> None:
    sim, net = make_net(small_leaf_spine(leaves=2, spines=1, hosts_per_leaf=2))
    net.schedule_link_down(1 * US, "leaf1", "spine0", convergence_ps=1 * US)
    sim.run(until_ps=3 * US)
    route = trace_route(net, 0, 2)
    assert route.end == "unreachable" and not route.complete
    assert route.end_node is net.switches["leaf0"]
    assert len(route.hops) == 1  # only the NIC's port: leaf0 has no candidate left
