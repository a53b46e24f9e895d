"""The route model (``spraylab.net.routes``): route groups and the path tracer.

Theory: a k-ary fat-tree has (k/2)^2 shortest paths between hosts of different pods, k/2
between different edge switches of one pod, one under one edge switch, and 6 / 4 / 2 links
on them; a leaf-spine with S spines has S paths between leaves. Routing reinstalls groups in
place, so a group keeps its identity and gets a new version and cleared state."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from simutil import US, make_net, small_leaf_spine

from spraylab.net.packet import DATA, Packet
from spraylab.net.routes import RouteGroup, hop_hash, trace_route
from spraylab.net.switch import PortArray, Switch, ecmp_select
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


class _Recorder:
    """A stand-in egress: records what the switch sends through it."""

    def __init__(self) -> None:
        self.sent: list[Packet] = []

    def send(self, pkt: Packet) -> None:
        self.sent.append(pkt)

    send_control = send


def test_forwarding_reads_the_arrays_of_a_hand_made_table() -> None:
    """A table set by hand is copied into the switch's arrays: entries given as one list are one
    group (one view, the same object for both destinations), and ECMP forwarding from the arrays
    picks candidate ``hop_hash(hash, salt) % n``, the index ``ecmp_select`` picks on the view;
    a Python selector gets the view itself."""
    sim, _ = make_net(small_leaf_spine(leaves=2, spines=1, hosts_per_leaf=1))
    salt = 0x9E3779B97F4A7C15
    switch = Switch(sim, "s", 0, 1, salt)
    ports = [_Recorder() for _ in range(3)]
    shared = RouteGroup(ports)
    switch.table = [shared, shared, [ports[1]]]
    assert switch.table[0] is switch.table[1] is shared and switch.group_ports(1) == [0, 1, 2]
    assert switch.group_ports(2) == [1]
    for h in range(60):
        pkt = Packet(DATA, None, 2, h % 2, h, 100, 100, 0, h * 0x1234567, 0)
        switch.forward(pkt)
        chosen = ports[hop_hash(pkt.hash, salt) % 3]
        assert chosen.sent[-1] is pkt and ecmp_select(switch, pkt, shared) is chosen
    seen = []
    switch.select = lambda sw, pkt, cands: seen.append(cands) or cands[2]
    switch.forward(Packet(DATA, None, 2, 0, 0, 100, 100, 0, 0, 0))
    assert seen == [shared] and seen[0] is shared
    switch.forward(Packet(DATA, None, 2, 2, 0, 100, 100, 0, 0, 0))  # one candidate: no choice
    assert len(seen) == 1


def test_install_refuses_arrays_forwarding_could_not_read() -> None:
    """Forwarding reads the arrays unchecked, so installing checks them once: a candidate must
    index the port array and every destination must name a group."""
    sim, _ = make_net(small_leaf_spine(leaves=2, spines=1, hosts_per_leaf=1))
    switch = Switch(sim, "s", 0, 1)
    ports = PortArray([_Recorder(), _Recorder()])
    i32 = np.int32
    ptr, keys = np.array([0, 1], dtype=i32), np.array([5], dtype=np.int64)
    with pytest.raises(ValueError, match="port index 2 outside 0..1"):
        switch.install_routes(ports, np.zeros(1, i32), ptr, np.array([2], i32), keys, 1, 0)
    with pytest.raises(ValueError, match=r"fib\[0\] = 1 is no group"):
        switch.install_routes(ports, np.ones(1, i32), ptr, np.array([1], i32), keys, 1, 0)
    switch.install_routes(ports, np.zeros(1, i32), ptr, np.array([1], i32), keys, 7, 42)
    group = switch.table[0]
    assert list(group) == [ports.ports[1]] and group.version == 7 and switch.salt == 42
    # the view of key 5, once made, is the one the next version rewrites
    switch.install_routes(ports, np.zeros(1, i32), ptr, np.array([0], i32), keys, 8, 42)
    assert switch.table[0] is group and list(group) == [ports.ports[0]] and group.version == 8


def test_trace_reports_unreachable() -> None:
    sim, net = make_net(small_leaf_spine(leaves=2, spines=1, hosts_per_leaf=2))
    net.schedule_link_down(1 * US, "leaf1", "spine0", convergence_ps=1 * US)
    sim.run(until_ps=3 * US)
    route = trace_route(net, 0, 2)
    assert route.end == "unreachable" and not route.complete
    assert route.end_node is net.switches["leaf0"]
    assert len(route.hops) == 1  # only the NIC's port: leaf0 has no candidate left


def _route_groups() -> int:
    gc.collect()
    return sum(isinstance(o, RouteGroup) for o in gc.get_objects())


def test_views_are_made_on_first_read() -> None:
    """Routes are installed as C arrays; a group's Python view is made when first read (a
    Python selector, ``switch.table``), once, and shared by every destination of the group."""
    before = _route_groups()
    _, net = make_net(small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=2))
    assert _route_groups() == before  # ECMP is compiled: nothing read a view
    leaf0 = net.switches["leaf0"]
    group = leaf0.table[2]
    assert _route_groups() == before + 1 and len(group) == 2
    assert leaf0.table[3] is group  # both hosts of leaf1
    assert list(leaf0.table[2:4]) == [group, group] and len(leaf0.table) == 4
