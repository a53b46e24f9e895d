"""HPCC's ``standalone_fct``: a flow's FCT alone on the fabric, by HPCC's own formula.

HPCC's ns-3 (``scratch/third.cc``) finds, from every destination host, the hop-shortest paths
(hosts never transit) and along one of them keeps the one-way propagation delay, the
serialization of one *payload-sized* packet at every hop, and the bottleneck rate; then::

    base_rtt       = 2 * delay_ns + sum over hops of (payload * 8e9 // rate_bps)
    standalone_fct = base_rtt + total_bytes * 8e9 // bottleneck_bps

with ``total_bytes`` the message plus every packet's headers (its minimum bytes on the wire),
all in integer nanoseconds. spraylab applies the same formula to its fabric, its MTU (payload
per packet) and its framing (``data_wire_bytes``: headers, padding, preamble and gap), which
is what HPCC's definition means on spraylab's wire. It is not spraylab's ``ideal_fct_ps``
(store-and-forward of the first packet, one way), which answers a different question.

On fabrics whose equal-hop paths have equal delays and rates (every spraylab builder, and the
HPCC example topologies) the choice of path does not matter; elsewhere HPCC's choice depends
on its node pointers' order and spraylab takes the first path of a breadth-first search from
the destination in link order."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from spraylab.net.framing import data_wire_bytes
from spraylab.topology.fabric import Fabric
from spraylab.units import PS_PER_NS


@dataclass(frozen=True)
class PathInfo:
    delay_ps: int  # one-way propagation delay
    rates_bps: tuple[int, ...]  # each hop's link rate, source side first


def paths_to(fabric: Fabric, dst: int) -> dict[str, PathInfo]:
    """From every node, one hop-shortest path to host ``dst`` (breadth-first from it)."""
    adj: dict[str, list[tuple[str, int, int]]] = {}
    for link in fabric.links:
        adj.setdefault(link.a, []).append((link.b, link.rate_bps, link.delay_ps))
        adj.setdefault(link.b, []).append((link.a, link.rate_bps, link.delay_ps))
    host = fabric.hosts[dst]
    info = {host: PathInfo(0, ())}
    frontier = deque([host])
    while frontier:
        node = frontier.popleft()
        here = info[node]
        for nxt, rate, delay in adj.get(node, []):
            if nxt in info:
                continue
            info[nxt] = PathInfo(here.delay_ps + delay, (rate, *here.rates_bps))
            if nxt in fabric.switch_tier:  # only switches carry traffic onwards
                frontier.append(nxt)
    return info


def message_wire_bytes(size_bytes: int, mtu_bytes: int) -> int:
    """A message's minimum bytes on the wire: its packets' payload and framing."""
    n_packets = max(1, -(-size_bytes // mtu_bytes))
    last = size_bytes - (n_packets - 1) * mtu_bytes
    return (n_packets - 1) * data_wire_bytes(mtu_bytes) + data_wire_bytes(last)


def standalone_fct_ns(path: PathInfo, size_bytes: int, mtu_bytes: int) -> int:
    """HPCC's formula (module doc), in integer nanoseconds."""
    tx_ns = sum(mtu_bytes * 8 * 10**9 // rate for rate in path.rates_bps)
    base_rtt_ns = 2 * (path.delay_ps // PS_PER_NS) + tx_ns
    return base_rtt_ns + message_wire_bytes(size_bytes, mtu_bytes) * 8 * 10**9 // min(path.rates_bps)
