"""Rail-optimized GPU cluster: ``topology.kind = "rail"``. M servers x N GPUs, NIC n of every
server on rail leaf n, rail leaves meshed to spines, and one NVLink switch per server."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from spraylab.model.types import RateBps, TimePs
from spraylab.topology.base import FabricSize, LinkEvent, TopologySection, register
from spraylab.topology.fabric import Fabric
from spraylab.units import PS_PER_US


@register
class RailTopology(TopologySection):
    summary = "rail-optimized GPU cluster: servers x GPUs, NIC n on rail leaf n, NVLink per server"

    kind: Literal["rail"] = "rail"
    servers: int = Field(default=8, ge=2)
    gpus_per_server: int = Field(default=8, ge=1)
    spines: int = Field(default=8, ge=1)
    nic_rate: RateBps = 400_000_000_000
    spine_rate: RateBps | None = None
    nvlink_rate: RateBps = 3_600_000_000_000
    link_delay: TimePs = PS_PER_US  # 1 us
    nvlink_delay: TimePs = 250_000
    events: list[LinkEvent] = []

    def n_hosts(self) -> int:
        return self.servers * self.gpus_per_server

    def build_fabric(self) -> Fabric:
        return rail_optimized(
            self.servers,
            self.gpus_per_server,
            self.spines,
            self.nic_rate,
            self.spine_rate or self.nic_rate,
            self.nvlink_rate,
            self.link_delay,
            self.nvlink_delay,
        )

    def estimate_size(self) -> FabricSize:
        hosts = self.n_hosts()
        switches = self.spines + self.gpus_per_server + self.servers
        links = self.gpus_per_server * self.spines + 2 * hosts
        return FabricSize(hosts, switches, links, self.nic_rate, 4)


def rail_optimized(
    servers: int,
    gpus_per_server: int,
    spines: int,
    nic_rate_bps: int,
    spine_rate_bps: int,
    nvlink_rate_bps: int,
    delay_ps: int,
    nvlink_delay_ps: int,
) -> Fabric:
    """GPU (server d, index n) is host id d*N + n. Its NIC connects to ``rail{n}``; its NVLink
    port to ``nvsw{d}``. Traffic between servers never transits NVLink (GPUs do not forward);
    relaying through a peer GPU's NIC (PXN, RailS) is modelled by the workload as messages."""
    fabric = Fabric(kind="rail", host_rate_bps=nic_rate_bps)
    for s in range(spines):
        fabric.add_switch(f"spine{s}", 2)
    for n in range(gpus_per_server):
        fabric.add_switch(f"rail{n}", 1)
        for s in range(spines):
            fabric.add_link(f"rail{n}", f"spine{s}", spine_rate_bps, delay_ps)
    for d in range(servers):
        nvsw = f"nvsw{d}"
        fabric.add_switch(nvsw, 0)
        for n in range(gpus_per_server):
            host = fabric.add_host(f"gpu{d}_{n}", f"rail{n}", server=d)
            fabric.add_link(fabric.hosts[host], f"rail{n}", nic_rate_bps, delay_ps)
            fabric.add_link(fabric.hosts[host], nvsw, nvlink_rate_bps, nvlink_delay_ps)
    fabric.info = {
        "servers": servers,
        "gpus_per_server": gpus_per_server,
        "rails": gpus_per_server,
        "spines": spines,
        "nvlink_rate_bps": nvlink_rate_bps,
        "oversubscription": servers * nic_rate_bps / (spines * spine_rate_bps),
    }
    return fabric
