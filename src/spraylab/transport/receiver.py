"""The RoCEv2 responder (receiver side): what every recovery mode's receiver shares
(compiled: ``spraylab.core``; a mode written in Python subclasses :class:`Receiver`). Each
mode's own receiver (``on_data``) lives with its recovery in ``spraylab.transport.recovery``.
Every receiver sends ACK/NACK/CNP echoing the data packet's entropy, ECN mark and send
timestamp, so sender-side schemes learn per-path state.

**ACK coalescing.** Every ACK and NACK carries the cumulative ePSN, so one ACK covers every
packet accepted before it. The receiver counts the data packets it accepted since its last
ACK or NACK (in order for every mode; out of order too for selective repeat and the ideal
transport) and their bytes (payload, or with ``ack_bytes`` payload plus a per-packet header as
htsim counts), and ACKs the packet that reaches ``ack_every`` packets or
``ack_every_bytes`` counted bytes (0 = that threshold off), or, with ``ack_delay``, the last
accepted packet once ``ack_delay`` has passed since the first unacknowledged one arrived (one
timer event per coalescing window). Never delayed: the ACK of an ECN-marked packet (the echo
DCQCN and sender-side schemes read), the ACK that completes the message, ACKs of duplicates,
NACKs and CNPs; an ACK or NACK sent for any of these reasons resets the pending count. A
selective-repeat receiver never ACKs an out-of-order arrival (it NACKs the gap or stays
silent), so those only count towards the next ACK.
"""

from __future__ import annotations

from spraylab.core._core import NEVER, Receiver

__all__ = ["NEVER", "Receiver"]
