"""A fabric described as data: named nodes and links, before any simulation object exists.

Topology builders (one module each) return a :class:`Fabric`; :class:`spraylab.net.network.Network`
turns it into ports, switches and hosts. Routing is computed here too, as plain data: for each
switch and destination ToR, the neighbours one hop closer (equal-cost next hops)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

HOST_TIER = -1
NVLINK_TIER = 0


@dataclass(frozen=True, slots=True)
class LinkSpec:
    a: str
    b: str
    rate_bps: int
    delay_ps: int


@dataclass(slots=True)
class Fabric:
    """``hosts[i]`` is the name of host id i; ``host_tor[i]`` the switch its NIC attaches to;
    ``host_server[i]`` its server (rail-optimized clusters: GPUs of one server share NVLink)."""

    kind: str
    hosts: list[str] = field(default_factory=list)
    host_tor: list[str] = field(default_factory=list)
    host_server: list[int] = field(default_factory=list)
    switch_tier: dict[str, int] = field(default_factory=dict)
    links: list[LinkSpec] = field(default_factory=list)
    host_rate_bps: int = 0
    info: dict[str, object] = field(default_factory=dict)

    def add_host(self, name: str, tor: str, server: int = -1) -> int:
        self.hosts.append(name)
        self.host_tor.append(tor)
        self.host_server.append(server)
        return len(self.hosts) - 1

    def add_switch(self, name: str, tier: int) -> None:
        self.switch_tier[name] = tier

    def add_link(self, a: str, b: str, rate_bps: int, delay_ps: int) -> None:
        self.links.append(LinkSpec(a, b, rate_bps, delay_ps))

    @property
    def n_hosts(self) -> int:
        return len(self.hosts)

    def tors(self) -> list[str]:
        seen: dict[str, None] = {}
        for tor in self.host_tor:
            seen.setdefault(tor, None)
        return list(seen)

    def switch_neighbours(self, excluded: set[tuple[str, str]] | None = None) -> dict[str, list[str]]:
        """Switch-to-switch adjacency (with parallel links repeated), skipping links that are down."""
        adj: dict[str, list[str]] = {name: [] for name in self.switch_tier}
        for link in self.links:
            if link.a in adj and link.b in adj:
                if excluded and ((link.a, link.b) in excluded or (link.b, link.a) in excluded):
                    continue
                adj[link.a].append(link.b)
                adj[link.b].append(link.a)
        return adj

    def distances_to(self, tor: str, adj: dict[str, list[str]]) -> dict[str, int]:
        """Hop distances from every switch to ``tor`` over switch links (hosts never transit)."""
        dist = {tor: 0}
        frontier = deque([tor])
        while frontier:
            node = frontier.popleft()
            for nxt in adj[node]:
                if nxt not in dist:
                    dist[nxt] = dist[node] + 1
                    frontier.append(nxt)
        return dist
