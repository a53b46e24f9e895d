"""The path a flow's data packets take, traced without sending anything.

Meaningful for schemes whose switch choice is a deterministic function of the packet's
header hash (ECMP, WCMP with static weights): every packet of a flow then follows the same
path. Schemes that choose at random or by queue state (packet spraying, adaptive routing)
have no single path; tracing them would also consume their random draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.net.framing import data_wire_bytes
from spraylab.net.host import Host
from spraylab.net.packet import DATA, Packet

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.port import Port
    from spraylab.transport.qp import QueuePair

__all__ = ["flow_path", "data_packet_hash"]

MAX_HOPS = 64


def data_packet_hash(qp: QueuePair, entropy: int | None = None) -> int:
    """The header hash a data packet of ``qp`` carries: flow id and entropy (UDP source port),
    the flow's own entropy unless another is given."""
    return (qp.flow_id << 16) | (qp.entropy if entropy is None else entropy)


def flow_path(net: Network, qp: QueuePair, reverse: bool = False, entropy: int | None = None) -> list[Port]:
    """Egress ports from the source host to the destination host that a data packet of
    ``qp`` (with the flow's own entropy, or ``entropy``) crosses: first the source NIC's port,
    then one port per switch, chosen as ``Switch.receive`` does (the only candidate, or
    ``switch.select``). ToR programs are not run.

    With ``reverse``, the path of the flow's control packets (ACK, NACK, CNP) instead: they
    echo the data packet's hash and travel from the destination back to the source."""
    src, dst = (qp.dst, qp.src) if reverse else (qp.src, qp.dst)
    if entropy is None:
        entropy = qp.entropy
    probe = Packet(
        DATA, qp, src, dst, 0, data_wire_bytes(qp.mtu), qp.mtu, entropy, data_packet_hash(qp, entropy), 0
    )
    port = net.hosts[src].route[dst].port
    path = [port]
    for _ in range(MAX_HOPS):
        node = port.peer_owner
        if isinstance(node, Host):
            if node.id != dst:
                raise ValueError(f"flow {qp.flow_id}: path reached host {node.id}, not host {dst}")
            return path
        cands = node.table[dst]
        if not cands:
            raise ValueError(f"flow {qp.flow_id}: no route to host {dst} at {node.name}")
        port = cands[0] if len(cands) == 1 else node.select(node, probe, cands)
        path.append(port)
    raise ValueError(f"flow {qp.flow_id}: no destination within {MAX_HOPS} hops (routing loop?)")
