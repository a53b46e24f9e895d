"""Two-tier leaf-spine (Clos) fabric: ``topology.kind = "leaf_spine"`` (the default kind)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from spraylab.model.types import RateBps, TimePs
from spraylab.topology.base import FabricSize, LinkEvent, TopologySection, register
from spraylab.topology.fabric import Fabric
from spraylab.units import PS_PER_US


@register
class LeafSpineTopology(TopologySection):
    summary = "two-tier Clos: leaves x spines, hosts per leaf, parallel links for oversubscription"

    kind: Literal["leaf_spine"] = "leaf_spine"
    leaves: int = Field(default=8, ge=1)
    spines: int = Field(default=8, ge=1)
    hosts_per_leaf: int | None = Field(default=None, ge=1)
    hosts: int | None = Field(default=None, ge=2)
    host_rate: RateBps = 400_000_000_000
    uplink_rate: RateBps | None = None
    links_per_spine: int = Field(default=1, ge=1)
    link_delay: TimePs = PS_PER_US  # 1 us
    events: list[LinkEvent] = []

    @model_validator(mode="after")
    def _hosts(self) -> LeafSpineTopology:
        if self.hosts is not None:
            if self.hosts % self.leaves:
                raise ValueError(
                    f"topology.hosts = {self.hosts}: must be divisible by topology.leaves = {self.leaves}"
                )
            if self.hosts_per_leaf is not None and self.hosts_per_leaf * self.leaves != self.hosts:
                raise ValueError(
                    f"topology.hosts = {self.hosts}: contradicts hosts_per_leaf x leaves = "
                    f"{self.hosts_per_leaf * self.leaves}; give only one of them"
                )
        return self

    @property
    def n_hosts_per_leaf(self) -> int:
        if self.hosts_per_leaf is not None:
            return self.hosts_per_leaf
        return self.hosts // self.leaves if self.hosts is not None else 8

    def n_hosts(self) -> int:
        return self.leaves * self.n_hosts_per_leaf

    def build_fabric(self) -> Fabric:
        return leaf_spine(
            self.leaves,
            self.spines,
            self.n_hosts_per_leaf,
            self.host_rate,
            self.uplink_rate or self.host_rate,
            self.link_delay,
            self.links_per_spine,
        )

    def estimate_size(self) -> FabricSize:
        hosts = self.n_hosts()
        links = hosts + self.leaves * self.spines * self.links_per_spine
        hops = 4 if self.leaves > 1 else 2
        return FabricSize(hosts, self.leaves + self.spines, links, self.host_rate, hops)


def leaf_spine(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    host_rate_bps: int,
    uplink_rate_bps: int,
    delay_ps: int,
    links_per_spine: int = 1,
) -> Fabric:
    """Every leaf connects to every spine with ``links_per_spine`` parallel links.
    Oversubscription = hosts_per_leaf * host_rate / (spines * links_per_spine * uplink_rate)."""
    fabric = Fabric(kind="leaf_spine", host_rate_bps=host_rate_bps)
    for s in range(spines):
        fabric.add_switch(f"spine{s}", 2)
    for leaf in range(leaves):
        name = f"leaf{leaf}"
        fabric.add_switch(name, 1)
        for h in range(hosts_per_leaf):
            host = fabric.add_host(f"h{leaf * hosts_per_leaf + h}", name)
            fabric.add_link(fabric.hosts[host], name, host_rate_bps, delay_ps)
        for s in range(spines):
            for _ in range(links_per_spine):
                fabric.add_link(name, f"spine{s}", uplink_rate_bps, delay_ps)
    down = hosts_per_leaf * host_rate_bps
    up = spines * links_per_spine * uplink_rate_bps
    fabric.info = {
        "leaves": leaves,
        "spines": spines,
        "hosts_per_leaf": hosts_per_leaf,
        "oversubscription": down / up,
    }
    return fabric
