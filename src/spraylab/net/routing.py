"""The packet engine's forwarding state, installed from the route table both engines read
(:class:`spraylab.net.route_table.RouteTable`): every switch's forwarding arrays and every
host's NIC table. The route model itself (``RouteGroup``, the path tracer) is in
``spraylab.net.routes``.

The table computes, per routing version, each switch's candidate links towards every
destination ToR and to its attached hosts, and holds every switch's hash salt; this module
writes them into each switch as C arrays (``Switch.install_routes``): the destination's local
group, each group's candidates as link ids, which index the network's ports as one C array
(``PortArray``; ``Network.ports[l]`` is directed link ``l``), and the salt. A Python view
(``RouteGroup``) of a (switch, destination ToR) group, or of a directly attached host's, is
made when first read (a Python selector, ``switch.table``), lives for the whole run, and the
core rewrites its ports at every recomputation."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from spraylab.net.host import UniformRoute
from spraylab.net.route_table import RouteTable
from spraylab.net.switch import PortArray

# the key of a switch's local group 0 (no candidate); the others are ToR rows and ~host ids
UNROUTED = np.iinfo(np.int64).max

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.port import Port


class Routing:
    """The routing state of one network: its route table and the groups installed from it."""

    __slots__ = ("net", "table", "_link_of", "_port_array")

    def __init__(self, net: Network) -> None:
        self.net = net
        self.table = RouteTable(net.fabric)
        self._link_of: dict[int, int] | None = None  # id(port) -> directed link id
        self._port_array: PortArray | None = None  # net.ports as the core's C array

    @property
    def version(self) -> int:
        """Bumped by every recomputation (``RouteGroup.version``)."""
        return self.table.version

    @property
    def routed_down(self) -> set[int]:
        """Directed link ids (``Network.ports`` indices) routing has removed."""
        return self.table.routed_down

    def remove(self, ports: Iterable[Port]) -> None:
        """Routing has converged around failed ``ports``: recompute without them."""
        if self._link_of is None:
            self._link_of = {id(p): lid for lid, p in enumerate(self.net.ports)}
        self.table.routed_down.update(self._link_of[id(p)] for p in ports)
        self.compute()

    def compute(self) -> None:
        """A new table version, written into every switch's forwarding arrays."""
        net = self.net
        table = self.table
        table.compute()
        version = table.version
        if self._port_array is None:
            self._port_array = PortArray(net.ports)  # directed link l is net.ports[l]
        n = len(net.hosts)
        ns, n_tors = table.n_switches, len(table.tors)
        # every (switch, destination ToR) group in one request
        gid = table.tor_groups(np.repeat(np.arange(ns), n_tors), np.tile(np.arange(n_tors), ns))
        gid = gid.reshape(ns, n_tors)
        ptr, links = table.group_ptr, table.group_links
        host_row = table.tor_row[table.tor_of_host]
        for s, switch in enumerate(net.switches.values()):
            # local groups: 0 unrouted, then one per destination ToR row other than its own
            # (its own hosts: the direct groups), then one per attached host
            rows = np.flatnonzero(np.arange(n_tors) != table.tor_row[s])
            g = gid[s, rows]
            count = ptr[g + 1] - ptr[g]
            at = np.repeat(ptr[g] - np.cumsum(count) + count, count) + np.arange(int(count.sum()))
            egress = table.egress(s)
            hosts = np.unique(table.link_dst[egress]) - ns
            hosts = hosts[hosts >= 0]
            direct = table.links_to_hosts(np.full(len(hosts), s), hosts)
            group_ptr = np.concatenate([[0, 0], np.cumsum(count), np.arange(1, len(hosts) + 1) + count.sum()])
            row_group = np.zeros(n_tors, dtype=np.int32)
            row_group[rows] = np.arange(1, len(rows) + 1)
            fib = row_group[host_row]
            fib[hosts] = np.arange(1 + len(rows), 1 + len(rows) + len(hosts))
            # each group's key, the same in every version: a destination ToR row, ~host for an
            # attached host, UNROUTED for local group 0
            keys = np.concatenate([[UNROUTED], rows, ~hosts]).astype(np.int64)
            switch.install_routes(
                self._port_array,
                fib,
                group_ptr.astype(np.int32),
                np.concatenate([links[at], direct]).astype(np.int32),
                keys,
                version,
                int(table.salt[s]),
            )
            for host in (table.link_dst[egress] - ns).tolist():  # in port order
                if host >= 0 and table.tor_of_host[host] == s and host not in switch.hosts:
                    switch.hosts.append(host)
        ports = net.ports
        peer_key, peer_link = table.peer_key.tolist(), table.peer_link.tolist()
        first_peer = np.searchsorted(table.peer_key, np.arange(n + 1) * n).tolist()
        for host in net.hosts:
            nic_of = {id(nic.port): nic for nic in host.nics}
            tor_nic = nic_of[id(ports[int(table.host_nic[host.id])])]
            if len(host.nics) == 1:
                host.route = UniformRoute(tor_nic, n)
                continue
            route = [tor_nic] * n
            for i in range(first_peer[host.id], first_peer[host.id + 1]):
                route[peer_key[i] - host.id * n] = nic_of[id(ports[peer_link[i]])]
            host.route = route
