"""A lower bound on every flow's completion time that holds whatever the load balancer, the
transport and the other traffic do: the reference FCT slowdown is measured against.

The idle-fabric FCT (``collect.ideal_fct_ps``) follows one path, so a scheme that sprays a
flow over paths whose bottleneck links add up to more than one path's (an oversubscribed
fabric, a slow core) beats it. What no scheme can beat, from the flow's start:

* **source side**: the flow's NIC port serializes every packet (the NIC is fixed per flow),
  then the packet that leaves it last still has to reach the destination: propagation plus a
  store-and-forward serialization at every further hop, of at least the flow's smallest
  packet, along the cheapest path in the whole fabric (not only the routed ones: a failure
  can only make routes longer);
* **destination side** (when one switch port is the only way into the destination host, as
  in every topology here): the first packet to get there needs at least the cheapest path's
  time, then that port serializes every packet and the last one crosses its link.

The bound is the larger of the two. It uses the rates at build time: link events only lower
rates, and queueing, pauses, retransmissions and control frames only add time. The simulator
truncates each serialization to whole picoseconds, so hops with a non-integer ps-per-byte are
charged one picosecond less per packet.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING

from spraylab.net.framing import data_wire_bytes
from spraylab.net.host import Host
from spraylab.net.switch import Switch

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.port import Port
    from spraylab.transport.qp import QueuePair


def packet_bytes(payload_bytes: int) -> int:
    """Bytes a data packet of ``payload_bytes`` occupies on the wire (RoCEv2 framing)."""
    return data_wire_bytes(payload_bytes)


# No packet is smaller than this; charging ps_per_byte - 1/MIN_PACKET_BYTES per byte instead
# of ps_per_byte takes at least 1 ps off every packet (the simulator's truncation).
MIN_PACKET_BYTES = packet_bytes(1)


def _ser_ps(size_bytes: int, port: Port) -> int:
    """The simulator's serialization time of one packet, or 1 ps less where it truncates."""
    exact = size_bytes * port.ps_per_byte
    return int(exact) if exact == int(exact) else int(exact) - 1


def _per_byte(port: Port) -> float:
    ppb = port.ps_per_byte
    return ppb if ppb == int(ppb) else ppb - 1 / MIN_PACKET_BYTES


class _Distances:
    """Cheapest propagation delay and cheapest per-byte serialization sum from every switch to
    a given switch over switch-to-switch ports (two separate minima: their sum bounds any one
    path from below). Computed once per target switch: by breadth-first search (hops x the
    one cost) when every switch-to-switch port has the same delay and rate, as in every
    built-in topology, else by Dijkstra."""

    def __init__(self, net: Network) -> None:
        self.into: dict[str, list[Port]] = {name: [] for name in net.switches}
        costs = set()
        for port in net.ports:
            if isinstance(port.owner, Switch) and isinstance(port.peer_owner, Switch):
                self.into[port.peer_owner.name].append(port)
                costs.add((port.delay_ps, _per_byte(port)))
        self.uniform = costs.pop() if len(costs) == 1 else None
        self.preds = {name: [p.owner.name for p in ports] for name, ports in self.into.items()}
        self.cache: dict[str, tuple[dict[str, float], dict[str, float]]] = {}

    def to(self, target: str) -> tuple[dict[str, float], dict[str, float]]:
        found = self.cache.get(target)
        if found is None:
            if self.uniform is not None:
                delay, per_byte = self.uniform
                hops = self._hops(target)
                found = ({n: h * delay for n, h in hops.items()}, {n: h * per_byte for n, h in hops.items()})
            else:
                found = (self._dijkstra(target, lambda p: p.delay_ps), self._dijkstra(target, _per_byte))
            self.cache[target] = found
        return found

    def _hops(self, target: str) -> dict[str, int]:
        hops = {target: 0}
        frontier = [target]
        preds = self.preds
        h = 0
        while frontier:
            h += 1
            nxt = []
            for node in frontier:
                for prev in preds[node]:
                    if prev not in hops:
                        hops[prev] = h
                        nxt.append(prev)
            frontier = nxt
        return hops

    def _dijkstra(self, target: str, cost: Callable[[Port], float]) -> dict[str, float]:
        dist: dict[str, float] = {target: 0}
        heap: list[tuple[float, str]] = [(0, target)]
        while heap:
            d, node = heapq.heappop(heap)
            if d > dist[node]:
                continue
            for port in self.into[node]:
                prev = port.owner.name
                nd = d + cost(port)
                if nd < dist.get(prev, float("inf")):
                    dist[prev] = nd
                    heapq.heappush(heap, (nd, prev))
        return dist


def fct_lower_bounds_ps(net: Network, qps: list[QueuePair]) -> list[int]:
    """The lower bound of each flow's FCT (module docstring), in ps; 0 if the destination is
    unreachable. Call before the run (rates at build time)."""
    distances = _Distances(net)
    ingress: dict[int, list[Port]] = {}
    for port in net.ports:
        if isinstance(port.peer_owner, Host) and isinstance(port.owner, Switch):
            ingress.setdefault(port.peer_owner.id, []).append(port)
    bounds = []
    for qp in qps:
        nic = qp.nic.port
        n_full = qp.n_packets - 1
        full = packet_bytes(qp.mtu)
        smallest = packet_bytes(qp.last_payload)
        nic_all = n_full * _ser_ps(full, nic) + _ser_ps(smallest, nic)
        first_hop = nic.peer_owner
        if isinstance(first_hop, Host):  # a direct host-to-host link
            bounds.append(nic_all + nic.delay_ps)
            continue
        delay_rest = ser_rest = float("inf")
        reachable: list[tuple[Port, float, float]] = []
        for port in ingress.get(qp.dst, ()):
            to_delay, to_ser = distances.to(port.owner.name)
            if first_hop.name not in to_delay:
                continue
            d, s = to_delay[first_hop.name], to_ser[first_hop.name]
            reachable.append((port, d, s))
            delay_rest = min(delay_rest, d + port.delay_ps)
            ser_rest = min(ser_rest, s + _per_byte(port))
        if not reachable:
            bounds.append(0)
            continue
        bound = nic_all + nic.delay_ps + int(delay_rest) + int(smallest * ser_rest)
        if len(reachable) == 1:
            port, d, s = reachable[0]
            port_all = n_full * _ser_ps(full, port) + _ser_ps(smallest, port)
            arrive = _ser_ps(smallest, nic) + nic.delay_ps + int(d) + int(smallest * s)
            bound = max(bound, arrive + port_all + port.delay_ps)
        bounds.append(bound)
    return bounds
