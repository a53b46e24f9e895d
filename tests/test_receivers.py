"""The selective-repeat responder (DESIGN: accept into the W-packet bitmap, NACK(ePSN) at the first
out-of-order arrival of each gap): a sprayed flow pays one NACK, hence one spurious
retransmission, per *overtaken* packet, not per reordering event. This is why sender-side
spraying (DFS) cannot avoid spurious retransmissions on such RNICs (docs/results.md, section 4)."""

from __future__ import annotations

from simutil import make_net, small_leaf_spine

from spraylab.net.framing import data_wire_bytes
from spraylab.net.packet import DATA, Packet
from spraylab.workload.flows import FlowSpec


def deliver(order: list[int], n_packets: int = 16) -> tuple[int, int]:
    """Feed one flow's data packets to its receiver in ``order``; (NACKs sent, final ePSN)."""
    _, net = make_net(small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=1), recovery="sr")
    (qp,) = net.add_flows([FlowSpec(0, 0, 1, n_packets * 4096)])
    for psn in order:
        net.injected_packets += 1  # as if sent: the receiver consumes it
        qp.rx.on_data(Packet(DATA, qp, 0, 1, psn, data_wire_bytes(4096), 4096, 0, 0, 0))
    return qp.rx.nacks_sent, qp.rx.epsn


def test_one_nack_per_overtaken_packet() -> None:
    # PSNs 0-3 went on a slow path; 4-11 on a fast one overtook them, and the fast path keeps
    # delivering while the slow packets trickle in: the expected PSN walks through 0, 1, 2, 3,
    # each a new gap that the next out-of-order arrival NACKs.
    nacks, epsn = deliver([4, 5, 6, 7, 0, 8, 1, 9, 2, 10, 3, 11])
    assert (nacks, epsn) == (4, 12)


def test_one_nack_per_gap_when_nothing_arrives_in_between() -> None:
    # The same four late packets arriving back to back: one gap, one NACK.
    nacks, epsn = deliver([4, 5, 6, 7, 0, 1, 2, 3, 8, 9])
    assert (nacks, epsn) == (1, 10)


def test_in_order_arrivals_never_nack() -> None:
    assert deliver(list(range(16))) == (0, 16)
