"""The packet: one RoCEv2 data packet or one control frame, or the header a trimming switch
left of a data packet (kind ``TRIMMED``) (compiled: ``spraylab.core``)."""

from __future__ import annotations

from spraylab.core._core import ACK, CNP, DATA, KIND_NAMES, NACK, PAUSE, RESUME, TRIMMED, IntRecord, Packet
from spraylab.net.framing import ACK_WIRE_BYTES, CNP_WIRE_BYTES, NACK_WIRE_BYTES

__all__ = [
    "ACK",
    "CNP",
    "DATA",
    "KIND_NAMES",
    "NACK",
    "PAUSE",
    "RESUME",
    "IntRecord",
    "TRIMMED",
    "Packet",
    "CONTROL_WIRE_BYTES",
]

# Link bytes of each control frame (``spraylab.net.framing``); data packets cost
# ``data_wire_bytes(payload)``. PFC PAUSE/RESUME are modelled as a link delay, not as frames.
CONTROL_WIRE_BYTES = {ACK: ACK_WIRE_BYTES, NACK: NACK_WIRE_BYTES, CNP: CNP_WIRE_BYTES}
