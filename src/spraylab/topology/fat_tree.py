"""Three-tier k-ary fat-tree (Al-Fares et al.): ``topology.kind = "fat_tree"``. k pods of k/2
edge and k/2 aggregation switches, (k/2)^2 core switches, k^3/4 hosts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from spraylab.model.types import RateBps, TimePs
from spraylab.topology.base import FabricSize, LinkEvent, TopologySection, register
from spraylab.topology.fabric import Fabric
from spraylab.units import PS_PER_US


@register
class FatTreeTopology(TopologySection):
    summary = "three-tier k-ary fat-tree (Al-Fares): k pods, (k/2)^2 cores, k^3/4 hosts"

    kind: Literal["fat_tree"] = "fat_tree"
    k: int = Field(default=8, ge=2)
    rate: RateBps = 100_000_000_000
    link_delay: TimePs = PS_PER_US  # 1 us
    events: list[LinkEvent] = []

    @field_validator("k")
    @classmethod
    def _even(cls, k: int) -> int:
        if k % 2:
            raise ValueError(f"topology.k = {k}: a fat-tree needs an even k")
        return k

    def n_hosts(self) -> int:
        return self.k**3 // 4

    def build_fabric(self) -> Fabric:
        return fat_tree(self.k, self.rate, self.link_delay)

    def estimate_size(self) -> FabricSize:
        k = self.k
        return FabricSize(k**3 // 4, 5 * k * k // 4, 3 * k**3 // 4, self.rate, 6)


def fat_tree(k: int, rate_bps: int, delay_ps: int) -> Fabric:
    if k < 2 or k % 2:
        raise ValueError(f"topology.k = {k}: a fat-tree needs an even k >= 2")
    half = k // 2
    fabric = Fabric(kind="fat_tree", host_rate_bps=rate_bps)
    for c in range(half * half):
        fabric.add_switch(f"core{c}", 3)
    for pod in range(k):
        for a in range(half):
            agg = f"agg{pod}_{a}"
            fabric.add_switch(agg, 2)
            # aggregation switch a of each pod connects to cores a*half .. a*half+half-1
            for c in range(half):
                fabric.add_link(agg, f"core{a * half + c}", rate_bps, delay_ps)
        for e in range(half):
            edge = f"edge{pod}_{e}"
            fabric.add_switch(edge, 1)
            for h in range(half):
                host = fabric.add_host(f"h{(pod * half + e) * half + h}", edge)
                fabric.add_link(fabric.hosts[host], edge, rate_bps, delay_ps)
            for a in range(half):
                fabric.add_link(edge, f"agg{pod}_{a}", rate_bps, delay_ps)
    fabric.info = {"k": k, "pods": k, "hosts": k**3 // 4, "core": half * half}
    return fabric
