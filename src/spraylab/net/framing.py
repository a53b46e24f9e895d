"""RoCEv2 framing: the bytes each packet type occupies on an Ethernet link.

A packet's ``size`` in the simulator is its cost on the wire (what a port serializes and
counts in ``tx_bytes``): the Ethernet frame, padded to the minimum frame, plus the preamble
and the inter-frame gap, which take link time like any other byte. Per-packet options that
only some operations carry (RETH on an RDMA WRITE's first packet, ImmDt, a VLAN tag) are not
modelled: every data packet is a SEND-style packet with BTH only.
"""

from __future__ import annotations

# --- headers and trailers (IEEE 802.3, RFC 791, RFC 768, InfiniBand Annex A17 "RoCEv2") ----
ETHERNET_HEADER_BYTES = 14  # destination MAC 6 + source MAC 6 + EtherType 2
IPV4_HEADER_BYTES = 20  # no IP options
UDP_HEADER_BYTES = 8  # destination port 4791 (RoCEv2); the source port is the entropy
BTH_BYTES = 12  # InfiniBand Base Transport Header: opcode, P_Key, dest QP, PSN
AETH_BYTES = 4  # ACK Extended Transport Header (syndrome + MSN) of an ACK or a NAK
CNP_RESERVED_BYTES = 16  # a CNP's payload: 16 reserved bytes after its BTH (Annex A17)
ICRC_BYTES = 4  # invariant CRC over the transport headers and payload
FCS_BYTES = 4  # Ethernet frame check sequence

# --- the Ethernet physical layer --------------------------------------------------------
MIN_FRAME_BYTES = 64  # shortest Ethernet frame, FCS included; shorter frames are padded
PREAMBLE_SFD_BYTES = 8  # preamble 7 + start-of-frame delimiter 1, before every frame
INTER_FRAME_GAP_BYTES = 12  # minimum idle time between frames (96 bit times)
PHY_OVERHEAD_BYTES = PREAMBLE_SFD_BYTES + INTER_FRAME_GAP_BYTES

# Everything in front of a RoCEv2 packet's IB transport headers, and behind them.
_ROCE_ENVELOPE_BYTES = ETHERNET_HEADER_BYTES + IPV4_HEADER_BYTES + UDP_HEADER_BYTES + ICRC_BYTES + FCS_BYTES


def wire_bytes(frame_bytes: int) -> int:
    """Link bytes of one Ethernet frame of ``frame_bytes`` (FCS included): padding to the
    minimum frame, then preamble, SFD and inter-frame gap."""
    return max(frame_bytes, MIN_FRAME_BYTES) + PHY_OVERHEAD_BYTES


def data_wire_bytes(payload_bytes: int) -> int:
    """Link bytes of a RoCEv2 data packet carrying ``payload_bytes`` of message data."""
    return wire_bytes(_ROCE_ENVELOPE_BYTES + BTH_BYTES + payload_bytes)


# A data packet's overhead over its payload (82 B) whenever the frame needs no padding, i.e.
# for any payload of at least MIN_DATA_PAYLOAD_BYTES (2 B); shorter ones cost data_wire_bytes.
DATA_OVERHEAD_BYTES = data_wire_bytes(MIN_FRAME_BYTES) - MIN_FRAME_BYTES
MIN_DATA_PAYLOAD_BYTES = MIN_FRAME_BYTES - (_ROCE_ENVELOPE_BYTES + BTH_BYTES)
# ACK and NAK: BTH + AETH, no payload (66 B frame, no padding needed): 86 B on the wire.
ACK_WIRE_BYTES = wire_bytes(_ROCE_ENVELOPE_BYTES + BTH_BYTES + AETH_BYTES)
NACK_WIRE_BYTES = ACK_WIRE_BYTES
# CNP: BTH + 16 reserved bytes (78 B frame): 98 B on the wire.
CNP_WIRE_BYTES = wire_bytes(_ROCE_ENVELOPE_BYTES + BTH_BYTES + CNP_RESERVED_BYTES)

# A trimmed data packet (switch.trimming): a full switch queue cuts a data packet to its headers
# and forwards those. uet-htsim trims to 64 B (main_uec.cpp's default -trimsize, which it asserts
# is at least 64), the minimum Ethernet frame, which is also what the RoCEv2 headers without
# payload pad to here (62 B -> 64 B); plus the preamble and gap every frame costs: 84 B.
TRIMMED_FRAME_BYTES = MIN_FRAME_BYTES
TRIMMED_WIRE_BYTES = wire_bytes(TRIMMED_FRAME_BYTES)
