"""A single-NIC host's route table is one shared entry (``UniformRoute``), not a list of one slot
per destination; it must still answer exactly as that list would, and multi-NIC hosts (a GPU's
rail NIC and NVLink port) keep a real per-destination list."""

from __future__ import annotations

import pytest
from simutil import US, G, make_net, small_leaf_spine

from spraylab.net.host import UniformRoute
from spraylab.topology.rail import rail_optimized


def test_single_nic_route_reads_like_the_list_of_equal_entries() -> None:
    _, net = make_net(small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=2))
    n = len(net.hosts)
    for host in net.hosts:
        assert isinstance(host.route, UniformRoute) and len(host.route) == n
        (nic,) = host.nics
        assert [host.route[d] for d in range(n)] == [nic] * n
        assert host.route[-1] is nic  # a list's negative index
        with pytest.raises(IndexError):
            host.route[n]


def test_multi_nic_hosts_keep_a_per_destination_list() -> None:
    fabric = rail_optimized(2, 2, 1, 400 * G, 400 * G, 3600 * G, 1 * US, US // 4)
    _, net = make_net(fabric)
    for host in net.hosts:
        assert len(host.nics) == 2 and isinstance(host.route, list)
        # the other GPU of the same server is behind the NVLink switch, the rest behind the rail leaf
        peers = {host.route[d].port.peer_owner.tier for d in range(len(net.hosts)) if d != host.id}
        assert peers == {0, 1}
