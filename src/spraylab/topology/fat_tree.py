"""Three-tier k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge and k/2 aggregation
switches, (k/2)^2 core switches, k^3/4 hosts."""

from __future__ import annotations

from spraylab.topology.fabric import Fabric


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
