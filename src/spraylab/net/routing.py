"""The packet engine's forwarding state, installed from the route table both engines read
(:class:`spraylab.net.route_table.RouteTable`): every switch's forwarding table and every host's
NIC table. The route model itself (``RouteGroup``, the path tracer) is in ``spraylab.net.routes``.

The table computes, per routing version, each switch's candidate links towards every
destination ToR and to its attached hosts; this module only maps link ids to ports
(``Network.ports[l]`` is directed link ``l``). One route group per (switch, destination ToR),
and per directly attached host, lives for the whole run and is re-installed in place at every
recomputation (see ``RouteGroup``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from spraylab.net.host import UniformRoute
from spraylab.net.route_table import RouteTable
from spraylab.net.routes import RouteGroup

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.port import Port


class Routing:
    """The routing state of one network: its route table and the groups installed from it."""

    __slots__ = ("net", "table", "_groups", "_link_of")

    def __init__(self, net: Network) -> None:
        self.net = net
        self.table = RouteTable(net.fabric)
        self._groups: dict[tuple[int, int], RouteGroup] = {}  # (switch, ToR row or ~host id)
        self._link_of: dict[int, int] | None = None  # id(port) -> directed link id

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
        """A new table version, its candidates installed in place as ports."""
        net = self.net
        table = self.table
        table.compute()
        version = table.version
        ports = net.ports
        n = len(net.hosts)
        ns, n_tors = table.n_switches, len(table.tors)
        unrouted = RouteGroup(version=version)  # never installed: no candidate
        # every (switch, destination ToR) group in one request
        gid = table.tor_groups(np.repeat(np.arange(ns), n_tors), np.tile(np.arange(n_tors), ns))
        gid = gid.reshape(ns, n_tors).tolist()
        ptr, links = table.group_ptr.tolist(), table.group_links.tolist()
        tor_hosts: list[list[int]] = [[] for _ in range(n_tors)]
        for h, row in enumerate(table.tor_row[table.tor_of_host].tolist()):
            tor_hosts[row].append(h)
        tor_of_row = table.tors.tolist()
        link_dst = table.link_dst.tolist()
        for s, switch in enumerate(net.switches.values()):
            fib = [unrouted] * n
            groups = gid[s]
            for row, hosts in enumerate(tor_hosts):
                if tor_of_row[row] == s:
                    continue  # its own hosts: the direct groups below
                g = groups[row]
                group = self._group(s, row)
                group.install([ports[lid] for lid in links[ptr[g] : ptr[g + 1]]], version)
                for h in hosts:
                    fib[h] = group
            for lid in table.egress(s).tolist():
                host = link_dst[lid] - ns
                if host < 0:
                    continue
                group = self._group(s, ~host)
                group.install((ports[table.link_to_host(s, host)],), version)
                fib[host] = group
                if table.tor_of_host[host] == s and host not in switch.hosts:
                    switch.hosts.append(host)
            switch.table = fib
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

    def _group(self, switch: int, dst: int) -> RouteGroup:
        group = self._groups.get((switch, dst))
        if group is None:
            group = self._groups[(switch, dst)] = RouteGroup()
        return group
