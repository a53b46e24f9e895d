"""The route table both engines read (``spraylab.net.route_table``).

Theory: equal-cost multipath over shortest paths. A switch's candidates towards a destination
ToR are exactly its routed links to switches one hop closer to that ToR (breadth-first hop
distances over switch links, hosts never transit), in port order; at the ToR itself and where
the ToR is unreachable there are none. A switch pair stops being adjacent only when all its
parallel links are routed down. Both engines must read one table: the packet engine's installed
groups are its link ids mapped to ``Network.ports``, and the fluid engine walks the same arrays."""

from __future__ import annotations

from collections import deque
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from simutil import US, G, make_net, small_leaf_spine

from spraylab.fluid.engine import network_streams
from spraylab.fluid.routing import FluidFabric, packet_hash_array
from spraylab.net import route_table
from spraylab.net.route_table import RouteTable
from spraylab.net.routes import packet_hash, trace_route
from spraylab.topology.fabric import Fabric
from spraylab.topology.fat_tree import fat_tree
from spraylab.topology.leaf_spine import leaf_spine
from spraylab.topology.rail import rail_optimized


def _reference(
    fabric: Fabric, down: set[int]
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], list[int]]]:
    """Hop distances (switch, ToR) -> hops and candidates (switch, ToR) -> directed link ids,
    from the fabric's names alone (no RouteTable code)."""
    switches = list(fabric.switch_tier)
    directed: list[tuple[int, str, str]] = []
    for k, link in enumerate(fabric.links):
        directed += [(2 * k, link.a, link.b), (2 * k + 1, link.b, link.a)]
    between: dict[tuple[str, str], list[int]] = {}
    for lid, a, b in directed:
        if a in fabric.switch_tier and b in fabric.switch_tier:
            between.setdefault((a, b), []).append(lid)
    cut = {pair for pair, lids in between.items() if all(lid in down for lid in lids)}
    adj: dict[str, set[str]] = {s: set() for s in switches}
    for a, b in between:
        if (a, b) not in cut and (b, a) not in cut:
            adj[a].add(b)
    dist: dict[tuple[str, str], int] = {}
    cands: dict[tuple[str, str], list[int]] = {}
    for tor in dict.fromkeys(fabric.host_tor):
        seen = {tor: 0}
        queue = deque([tor])
        while queue:
            node = queue.popleft()
            for nxt in adj[node]:
                if nxt not in seen:
                    seen[nxt] = seen[node] + 1
                    queue.append(nxt)
        for s in switches:
            d = seen.get(s, -1)
            dist[(s, tor)] = d
            cands[(s, tor)] = [
                lid
                for lid, a, b in directed
                if a == s and b in fabric.switch_tier and lid not in down and d > 0 and seen.get(b) == d - 1
            ]
    return dist, cands


FABRICS = {
    "leaf-spine": lambda n: leaf_spine(2 + n % 3, 1 + n % 2, 2, 100 * G, 100 * G, US),
    "leaf-spine, parallel links": lambda n: leaf_spine(3, 2, 1, 100 * G, 100 * G, US, links_per_spine=2),
    "leaf-spine, 9 leaves": lambda n: leaf_spine(9, 3, 1, 100 * G, 100 * G, US),
    "fat-tree": lambda n: fat_tree(4, 100 * G, US),
    "rail": lambda n: rail_optimized(2 + n % 2, 4, 2, 100 * G, 100 * G, 400 * G, US, US // 4),
}


def switch_links_down(fabric: Fabric, cuts: list[int]) -> set[int]:
    """Both directed ids of the switch-to-switch links ``cuts`` picks (modulo their number)."""
    switch_links = [
        k
        for k, link in enumerate(fabric.links)
        if link.a in fabric.switch_tier and link.b in fabric.switch_tier
    ]
    return {lid for c in cuts for k in [switch_links[c % len(switch_links)]] for lid in (2 * k, 2 * k + 1)}


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(sorted(FABRICS)),
    n=st.integers(0, 5),
    dense=st.booleans(),
    cuts=st.lists(st.integers(0, 10**6), max_size=6),
)
def test_candidates_are_the_routed_links_one_hop_closer(
    kind: str, n: int, dense: bool, cuts: list[int]
) -> None:
    """Distances and candidates equal a breadth-first search written from the fabric's names,
    whichever search (one for all ToRs at once or one per ToR) the table uses, with random
    switch links routed down in both directions (some of them one of two parallel links)."""
    fabric = FABRICS[kind](n)
    down = switch_links_down(fabric, cuts)
    with mock.patch.object(route_table, "DENSE_MIN_TORS", 1 if dense else 10**9):
        table = RouteTable(fabric)
        table.compute()
        table.remove(down)
        assert table.dense == dense
        dist, cands = _reference(fabric, down)
        names = list(fabric.switch_tier)
        rows = np.arange(len(table.tors))
        matrix = table.distances(rows)
        for (s, tor), d in dist.items():
            row = int(table.tor_row[table.node_index[tor]])
            assert matrix[row, names.index(s)] == d
        for h, tor in enumerate(fabric.host_tor):
            for s in names:
                got = table.candidates(names.index(s), h)
                if s == tor:
                    assert got == [table.link_to_host(names.index(s), h)]  # the direct group
                elif table.link_to_host(names.index(s), h) < 0:
                    assert got == cands[(s, tor)]


@settings(max_examples=10, deadline=None)
@given(cuts=st.lists(st.integers(0, 10**6), max_size=40))
def test_the_all_tor_search_spans_several_words_of_tors(cuts: list[int]) -> None:
    """With more than 64 ToRs (a word of the bitset search holds 64) and switch links routed
    down, the search for all ToRs at once gives every distance the one-ToR search gives."""
    fabric = leaf_spine(130, 3, 1, 100 * G, 100 * G, US)
    down = switch_links_down(fabric, cuts)
    matrices = []
    for dense, cut in ((True, set()), (True, down), (False, down)):
        with mock.patch.object(route_table, "DENSE_MIN_TORS", 1 if dense else 10**9):
            table = RouteTable(fabric)
            table.compute()
            table.remove(cut)
            assert table.dense == dense and len(table.tors) == 130
            matrices.append(table.distances(np.arange(len(table.tors))))
    whole, dense, one_by_one = matrices
    assert (dense == one_by_one).all()
    assert (dense != whole).any() == bool(down)  # a cut spine-leaf link: that pair 1 -> 3 or -1


def test_the_network_and_the_fluid_fabric_read_one_table() -> None:
    """Built once: the network's table is the fluid fabric's, every installed group is its
    candidates as ports, every host's NIC its first link, and the fluid engine's hash walks
    follow the packet engine's traced routes link for link."""
    fabric = fat_tree(4, 100 * G, US)
    _, net = make_net(fabric)
    table = net.routing.table
    ff = FluidFabric(table)
    assert ff.table is table and ff.link_src is table.link_src and ff.link_dst is table.link_dst
    index = {id(p): lid for lid, p in enumerate(net.ports)}
    n = len(net.hosts)
    for s, switch in enumerate(net.switches.values()):
        # the core forwards by link ids into the network's ports; the view lists those ports
        assert switch.port_array.ports == net.ports and switch.salt == table.salt[s]
        g = table.group_ids(np.full(n, s), np.arange(n))
        ptr, links = table.group_ptr, table.group_links
        for h in range(n):
            installed = [index[id(p)] for p in switch.table[h]]
            assert installed == links[ptr[g[h]] : ptr[g[h] + 1]].tolist() == ff.candidates(s, h)
            assert switch.group_ports(h) == installed
    for host in net.hosts:
        for d in range(n):
            assert index[id(host.route[d].port)] == table.first_link(host.id, d)
    src, dst = np.meshgrid(np.arange(n), np.arange(n))
    src, dst = src.ravel(), dst.ravel()
    keep = src != dst
    src, dst = src[keep], dst[keep]
    flow_id = np.arange(len(src))
    walks, length = ff.hash_walks(src, dst, packet_hash_array(flow_id, flow_id % 7))
    for w in range(len(src)):
        traced = trace_route(net, int(src[w]), int(dst[w]), pkt_hash=packet_hash(w, w % 7))
        assert [index[id(p)] for p in traced.ports] == walks[w, : length[w]].tolist()


def test_a_reroute_is_one_new_version_for_both() -> None:
    """A link-down's reroute removes the ports' link ids from the network's table (a new
    version); a fluid fabric on that table sees the new groups at once."""
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=1)
    sim, net = make_net(fabric)
    ff = FluidFabric(net.routing.table)
    leaf0 = net.switches["leaf0"].index
    assert len(ff.candidates(leaf0, 1)) == 2
    version = net.routing.version
    net.schedule_link_down(1 * US, "leaf0", "spine0", convergence_ps=1 * US)
    sim.run(until_ps=3 * US)
    ports = net.ports_between("leaf0", "spine0")
    assert net.routing.routed_down == {net.ports.index(p) for p in ports}
    assert net.routing.version == version + 1
    (lid,) = ff.candidates(leaf0, 1)
    assert net.ports[lid].peer_owner.name == "spine1"
    assert list(net.switches["leaf0"].table[1]) == [net.ports[lid]]
    assert net.switches["leaf0"].group_ports(1) == [lid]  # the core's arrays were rewritten


def test_both_engines_hash_with_one_salt_array() -> None:
    """The salts are one draw per switch from the stream the run derives after the flows' and
    the ECN marking's (``Simulator.derive_rng``): a network and the fluid engine's streams on
    the same seed hold the same ``RouteTable.salt``, each switch hashes with its entry, and
    another seed gives other salts (64 random bits: equal by chance with probability 2^-64)."""
    fabric = fat_tree(4, 100 * G, US)
    _, net = make_net(fabric, seed=5)
    _, _, table = network_streams(5, fabric)
    assert table.salt.dtype == np.uint64 and len(table.salt) == len(fabric.switch_tier)
    assert table.salt.tolist() == net.routing.table.salt.tolist()
    assert [sw.salt for sw in net.switches.values()] == table.salt.tolist()
    assert FluidFabric(table)._salt_array()[: table.n_switches].tolist() == table.salt.tolist()
    _, _, other = network_streams(6, fabric)
    assert other.salt.tolist() != table.salt.tolist()


def test_gpus_reach_their_server_over_nvlink_and_the_rest_over_their_rail_nic() -> None:
    """A rail-optimized GPU has a rail NIC and an NVLink port: the peers behind its NVLink
    switch (its own server's GPUs) are reached through the NVLink port, every other GPU
    through the NIC to its rail leaf."""
    servers, gpus = 3, 4
    fabric = rail_optimized(servers, gpus, 2, 100 * G, 100 * G, 400 * G, US, US // 4)
    table = RouteTable(fabric)
    table.compute()
    n = fabric.n_hosts
    for h in range(n):
        nic = int(table.host_nic[h])
        assert fabric.switch_tier[list(fabric.switch_tier)[table.link_dst[nic]]] == 1  # a rail leaf
        for d in range(n):
            first = table.first_link(h, d)
            same_server = fabric.host_server[h] == fabric.host_server[d]
            assert (first != nic) == same_server
    src, dst = np.divmod(np.arange(n * n), n)
    assert table.first_links(src, dst).tolist() == [table.first_link(a, b) for a, b in zip(src, dst)]
