"""A fabric described as data: named nodes and links, before any simulation object exists.

Topology builders (one module each) return a :class:`Fabric`; :class:`spraylab.net.network.Network`
turns it into ports, switches and hosts; :class:`spraylab.net.route_table.RouteTable` computes its
routes (hop distances and equal-cost next hops), which both engines read."""

from __future__ import annotations

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
