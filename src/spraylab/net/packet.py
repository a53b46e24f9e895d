"""The packet: one RoCEv2 data packet or one control frame, a plain ``__slots__`` object."""

from __future__ import annotations

from typing import Any

from spraylab.net.framing import ACK_WIRE_BYTES, CNP_WIRE_BYTES, NACK_WIRE_BYTES

# Packet kinds. Plain ints: compared on every hop.
DATA = 0
ACK = 1
NACK = 2
CNP = 3
PAUSE = 4
RESUME = 5

KIND_NAMES = ("data", "ack", "nack", "cnp", "pause", "resume")

# Link bytes of each control frame (``spraylab.net.framing``); data packets cost
# ``data_wire_bytes(payload)``. PFC PAUSE/RESUME are modelled as a link delay, not as frames.
CONTROL_WIRE_BYTES = {ACK: ACK_WIRE_BYTES, NACK: NACK_WIRE_BYTES, CNP: CNP_WIRE_BYTES}


class Packet:
    """A packet in flight.

    ``qp`` is the sending queue pair (data) or the queue pair the control packet is about;
    ``dst`` is the host id switches route on; ``hash`` is the flow 5-tuple hash mixed with
    ``entropy`` (the UDP source port that ECMP hashes). ``psn`` is the data packet's PSN or,
    for ACK/NACK, the receiver's expected PSN; ``sack_psn`` is the PSN that triggered it.
    ``path_id``/``path_seq`` are stamped by ToR programs; ``ingress`` is set by lossless
    switches for PFC accounting. ``via`` is the egress port the packet last left through (set
    by every send): a packet that dies inside a node (no route, a ToR program, the receiving
    RNIC) is counted on the link it arrived over, so the links table accounts for every drop.
    """

    __slots__ = (
        "kind",
        "qp",
        "src",
        "dst",
        "psn",
        "sack_psn",
        "size",
        "payload",
        "ecn",
        "entropy",
        "hash",
        "sent_ps",
        "retx",
        "path_id",
        "path_seq",
        "ingress",
        "via",
    )

    def __init__(
        self,
        kind: int,
        qp: Any,
        src: int,
        dst: int,
        psn: int,
        size: int,
        payload: int,
        entropy: int,
        hash_: int,
        sent_ps: int,
    ) -> None:
        self.kind = kind
        self.qp = qp
        self.src = src
        self.dst = dst
        self.psn = psn
        self.sack_psn = psn
        self.size = size
        self.payload = payload
        self.ecn = False
        self.entropy = entropy
        self.hash = hash_
        self.sent_ps = sent_ps
        self.retx = False
        self.path_id = -1
        self.path_seq = -1
        self.ingress = None
        self.via: Any = None

    def __repr__(self) -> str:
        return (
            f"Packet({KIND_NAMES[self.kind]} {self.src}->{self.dst} psn={self.psn} "
            f"size={self.size} entropy={self.entropy})"
        )
