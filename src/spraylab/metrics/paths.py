"""The path a flow's data packets take, traced without sending anything.

Meaningful for schemes whose switch choice is a deterministic function of the packet's
header hash (ECMP, WCMP with static weights): every packet of a flow then follows the same
path. Schemes that choose at random or by queue state (packet spraying, adaptive routing)
have no single path; tracing them would also consume their random draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.net.framing import data_wire_bytes
from spraylab.net.packet import DATA, Packet
from spraylab.net.routes import MAX_HOPS, packet_hash, trace_route

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.port import Port
    from spraylab.transport.qp import QueuePair

__all__ = ["flow_path", "data_packet_hash"]


def data_packet_hash(qp: QueuePair, entropy: int | None = None) -> int:
    """The header hash a data packet of ``qp`` carries: flow id and entropy (UDP source port),
    the flow's own entropy unless another is given."""
    return packet_hash(qp.flow_id, qp.entropy if entropy is None else entropy)


def flow_path(net: Network, qp: QueuePair, reverse: bool = False, entropy: int | None = None) -> list[Port]:
    """Egress ports from the source host to the destination host that a data packet of
    ``qp`` (with the flow's own entropy, or ``entropy``) crosses: first the source NIC's port,
    then one port per switch, chosen as ``Switch.forward`` does (the only candidate, or
    ``switch.select``). ToR programs are not run.

    With ``reverse``, the path of the flow's control packets (ACK, NACK, CNP) instead: they
    echo the data packet's hash and travel from the destination back to the source."""
    src, dst = (qp.dst, qp.src) if reverse else (qp.src, qp.dst)
    if entropy is None:
        entropy = qp.entropy
    probe = Packet(
        DATA, qp, src, dst, 0, data_wire_bytes(qp.mtu), qp.mtu, entropy, data_packet_hash(qp, entropy), 0
    )
    route = trace_route(net, src, dst, probe=probe)
    if route.end == "wrong_host":
        raise ValueError(f"flow {qp.flow_id}: path reached host {route.end_node.id}, not host {dst}")
    if route.end == "unreachable":
        raise ValueError(f"flow {qp.flow_id}: no route to host {dst} at {route.end_node.name}")
    if route.end == "loop":
        raise ValueError(f"flow {qp.flow_id}: no destination within {MAX_HOPS} hops (routing loop?)")
    return route.ports
