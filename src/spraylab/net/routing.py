"""Route computation: fills every switch's forwarding table and every host's NIC table from
the fabric and the links routing has removed. The route model itself (``RouteGroup``, the
path tracer) is in ``spraylab.net.routes``.

For every destination ToR, hop distances from every switch over switch-to-switch links (hosts
never transit); each switch's candidates for every host behind that ToR are its routed ports
toward neighbours one hop closer. One route group per (switch, destination ToR), and per
directly attached host, lives for the whole run and is re-installed in place at every
recomputation (see ``RouteGroup``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from spraylab.net.host import Host, UniformRoute
from spraylab.net.routes import RouteGroup
from spraylab.net.switch import Switch

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.port import Port


class Routing:
    """The routing state of one network: the ports it has removed, its version, its groups."""

    __slots__ = ("net", "routed_down", "version", "_groups")

    def __init__(self, net: Network) -> None:
        self.net = net
        self.routed_down: set[int] = set()  # ids of ports routing has removed (both directions)
        self.version = 0  # bumped by every recomputation (RouteGroup.version)
        self._groups: dict[tuple[str, str | int], RouteGroup] = {}  # (switch, dst ToR or host id)

    def remove(self, ports: Iterable[Port]) -> None:
        """Routing has converged around failed ``ports``: recompute without them."""
        self.routed_down.update(id(p) for p in ports)
        self.compute()

    def compute(self) -> None:
        """Equal-cost next hops per (switch, destination host), re-installed in place."""
        net = self.net
        fabric = net.fabric
        routed_down = self.routed_down
        self.version += 1
        version = self.version
        # A switch pair is cut only when all of its parallel links are down.
        down_pairs = {
            pair for pair, ports in net.link_ports.items() if all(id(p) in routed_down for p in ports)
        }
        adj = fabric.switch_neighbours(down_pairs)
        n = len(net.hosts)
        unrouted = RouteGroup(version=version)  # never installed: no candidate
        tables: dict[str, list[RouteGroup]] = {name: [unrouted] * n for name in net.switches}
        hosts_by_tor: dict[str, list[int]] = {}
        for h in net.hosts:
            hosts_by_tor.setdefault(fabric.host_tor[h.id], []).append(h.id)
        # per switch: its routed ports towards other switches, with the peer's name
        fabric_ports = {
            name: [
                (p, p.peer_owner.name)
                for p in switch.ports
                if isinstance(p.peer_owner, Switch) and id(p) not in routed_down
            ]
            for name, switch in net.switches.items()
        }
        for tor, tor_hosts in hosts_by_tor.items():
            dist = fabric.distances_to(tor, adj)
            for name in net.switches:
                if name == tor:
                    continue
                want = dist[name] - 1 if name in dist else -2  # unreachable: no candidate
                cands = self._group(name, tor)
                cands.install([p for p, peer in fabric_ports[name] if dist.get(peer, -1) == want], version)
                table = tables[name]
                for h in tor_hosts:
                    table[h] = cands
        for name, switch in net.switches.items():
            for port in switch.ports:
                if isinstance(port.peer_owner, Host):
                    direct = self._group(name, port.peer_owner.id)
                    direct.install((port,), version)
                    tables[name][port.peer_owner.id] = direct
                    if fabric.host_tor[port.peer_owner.id] == name and port.peer_owner.id not in switch.hosts:
                        switch.hosts.append(port.peer_owner.id)
            switch.table = tables[name]
        for host in net.hosts:
            tor_nic = next(nic for nic in host.nics if nic.port.peer_owner.name == fabric.host_tor[host.id])
            if len(host.nics) == 1:
                host.route = UniformRoute(tor_nic, n)
                continue
            route = [tor_nic] * n
            for nic in host.nics:
                peer = nic.port.peer_owner
                if nic is not tor_nic:
                    for port in peer.ports:
                        if isinstance(port.peer_owner, Host):
                            route[port.peer_owner.id] = nic
            host.route = route

    def _group(self, switch: str, dst: str | int) -> RouteGroup:
        group = self._groups.get((switch, dst))
        if group is None:
            group = self._groups[(switch, dst)] = RouteGroup()
        return group
