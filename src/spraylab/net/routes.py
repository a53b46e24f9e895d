"""The route model: what a switch's forwarding table holds, and the one walk along it.

**Route groups.** A switch forwards by C arrays (``Switch.install_routes``): its local group
toward each destination host, each group's equal-cost candidates as indices into the network's
ports (shared by every host behind one destination ToR, as a FIB shares a next-hop group per
prefix). ``switch.table[dst]`` is the group's :class:`RouteGroup` (defined in the core): the
read-only Python view of those candidates as ports, which Python selectors receive as
``cands``. Routing keeps one view per (switch, destination) for the whole run and the core
rewrites its ports from the arrays at every recomputation: ``version`` is then the network's
routing version and ``state`` (a scheme's per-group memory: DRILL's samples, WCMP's weighted
table, ToR-assisted spraying's path ids) is cleared. A scheme keeps per-group data in ``state`` and
per-flow data that depends on the group's ports next to the group's ``version``; it never
needs to key anything on list identities. Link events that do not reroute (a rate change, a
link down before reconvergence) leave groups alone; ``net.link_changes`` counts those.

**Path tracer.** :func:`trace_route` walks from a source host to a destination host the way
``Switch.forward`` would: at each switch the only candidate, or one chosen by the first
candidate (the representative route that the idle-fabric delay models use), by the
switch-side ECMP hash of a given packet hash, or by the switch's installed selector for a
probe packet (ToR programs are not run). Every user of a route's shape (the ideal
transport's loss-notice delays, DFS's path count and base RTT, the ideal-FCT bound, the
path metrics) reads it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spraylab.core._core import RouteGroup
from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.net.port import Port

__all__ = ["RouteGroup", "Hop", "Route", "trace_route", "hop_hash", "packet_hash", "mix64", "MAX_HOPS"]

MAX_HOPS = 64  # switch hops a trace follows before calling it a routing loop


MASK64 = (1 << 64) - 1


def hop_hash(pkt_hash: int, seed: int) -> int:
    """The hash a switch with per-switch ``seed`` (``Switch.salt``, 64 random bits) computes
    over a packet's header hash, as ASICs seed their CRC per switch; the chosen candidate is
    ``hop_hash % len(candidates)``. The one switch hash: ECMP, WCMP and the path tracer.

    It is the splitmix64 finalizer of ``pkt_hash ^ seed``: a bijection whose every output bit
    depends on every input bit, so ``% n`` is uniform for structured input and switches with
    different seeds choose independently. Plain integer arithmetic, the same in every process
    (Python's ``hash()`` of a tuple is stable too but does not mix: on a 3-tier fat-tree it tied
    each aggregation switch's choice to the ToR's). One call frame: it runs at every hop."""
    z = pkt_hash ^ seed
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def mix64(z: int) -> int:
    """The splitmix64 finalizer alone (``hop_hash`` with seed 0)."""
    return hop_hash(z, 0)


def packet_hash(flow_id: int, entropy: int) -> int:
    """The header hash a data packet carries, over its flow (5-tuple) and entropy (UDP source
    port), as a switch ASIC's CRC over the header fields: 64 well-mixed bits."""
    return mix64((flow_id << 16) | entropy)


@dataclass(frozen=True, slots=True)
class Hop:
    """One egress port of a route: the source NIC's, then one per switch."""

    port: Port
    fanout: int  # equal-cost candidates it was chosen among (1 for the NIC)
    hash: int  # hop_hash of the traced packet hash at this switch; -1 if none was traced


@dataclass(frozen=True, slots=True)
class Route:
    """A traced route. ``end`` says how the walk ended: ``"host"`` (reached ``dst``),
    ``"wrong_host"`` (reached another host), ``"unreachable"`` (``end_node`` has no candidate
    toward ``dst``) or ``"loop"`` (no host within ``MAX_HOPS`` switches)."""

    src: int
    dst: int
    hops: list[Hop]
    end: str
    end_node: Any

    @property
    def complete(self) -> bool:
        return self.end == "host"

    @property
    def ports(self) -> list[Port]:
        return [h.port for h in self.hops]

    @property
    def paths(self) -> int:
        """Equal-cost paths through this route's switches: the product of the fan-outs (exact
        on symmetric fabrics, where every candidate leads to the same fan-out downstream)."""
        n = 1
        for h in self.hops:
            n *= h.fanout
        return n

    def base_rtt_ps(self, mtu_bytes: int) -> float:
        """Round trip of a full data packet out and its ACK back over this route's links with
        every queue empty: propagation both ways plus each frame's serialization per hop."""
        frames = data_wire_bytes(mtu_bytes) + ACK_WIRE_BYTES
        rtt = 0
        for hop in self.hops:
            port = hop.port
            rtt += 2 * port.delay_ps + frames * port.ps_per_byte
        return float(rtt)


def trace_route(
    net: Network, src: int, dst: int, pkt_hash: int | None = None, probe: Packet | None = None
) -> Route:
    """The route from host ``src`` to host ``dst``: with neither ``pkt_hash`` nor ``probe``,
    the first candidate at every switch; with ``pkt_hash``, the ECMP choice
    ``hop_hash(pkt_hash, salt) % n``; with ``probe``, ``switch.select`` of that packet (which
    may consume a scheme's random draws: meaningful for hash-based selectors)."""
    from spraylab.net.host import Host  # net.host imports the switch layer

    if probe is not None:
        pkt_hash = probe.hash
    port = net.hosts[src].route[dst].port
    hops = [Hop(port, 1, -1)]
    for _ in range(MAX_HOPS):
        node = port.peer_owner
        if isinstance(node, Host):
            return Route(src, dst, hops, "host" if node.id == dst else "wrong_host", node)
        group = node.table[dst]
        n = len(group)
        if not n:
            return Route(src, dst, hops, "unreachable", node)
        h = -1 if pkt_hash is None else hop_hash(pkt_hash, node.salt)
        if n == 1:
            port = group[0]
        elif probe is not None:
            port = node.select(node, probe, group)
        elif pkt_hash is not None:
            port = group[h % n]
        else:
            port = group[0]
        hops.append(Hop(port, n, h))
    return Route(src, dst, hops, "loop", port.peer_owner)
