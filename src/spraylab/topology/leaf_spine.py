"""Two-tier leaf-spine (Clos) fabric."""

from __future__ import annotations

from spraylab.topology.fabric import Fabric


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
