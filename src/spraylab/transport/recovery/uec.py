"""UEC-style loss recovery with packet trimming, as uet-htsim's UEC transport does it (UecSrc /
UecSink in ``htsim/sim/uec.cpp``, the Ultra Ethernet 1.0 reference simulator), on a fabric whose
switches trim (``switch.trimming``: a data packet that finds its queue full is cut to its header
and forwarded at priority; ``spraylab.core`` ``c_trim``).

* **Receiver** (:class:`~spraylab.core._core.UecReceiver`): places any PSN, in order or not (no
  reordering loss, so per-packet spraying costs nothing), and acknowledges arrivals with a
  cumulative SACK: the ACK triggered by PSN p reports every first arrival the receiver had
  then (as the ideal receiver's ``rank``), so the sender knows exactly what arrived and a lost
  ACK is repaired by any later one. ACK coalescing is the transport's (``ack_every``,
  ``ack_every_bytes``; htsim's rule is ``ack_every = 0, ack_every_bytes = 16384, ack_bytes =
  "htsim"``); an ECN-marked arrival is acknowledged at once, and so are, as uet-htsim's
  UecSink does, the first packet, every retransmission (htsim's ``ar`` flag on resends) and,
  after such a request, the in-order arrival that leaves nothing out of order.
* **Trimmed header**: the receiver NACKs its PSN at once (one NACK per header, no NACK timer),
  or ACKs it if another copy of that PSN already arrived.
* **Sender** (:class:`UecRecovery`): a NACK resends the PSN it names, unless it was SACKed since
  or is already queued; a queued resend of a PSN SACKed meanwhile is skipped.
* **RTO** (``transport.rto``) is the backstop for what trimming cannot report (a header lost to
  a failed link, a lost NACK), timed as uet-htsim's ``UecSrc`` times it: per transmission. The
  timer runs for the oldest transmission not yet answered by an ACK or a NACK (a resend starts
  its own), and when it has been out ``rto`` that PSN alone is resent; the congestion control
  hears of one timeout per PSN. (Timed from the flow's last progress and resending everything
  outstanding, a 127:1 incast whose PSNs are trimmed again and again took 4,996 timeouts and
  ran 3% longer than htsim's; ``benchmarks/nscc_side_by_side.md``.)

What matches uet-htsim and what does not: ``docs/design.md``, "Packet trimming and the uec
recovery mode".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.core._core import CumulativeSack, UecReceiver  # compiled: core/receiver.pxi
from spraylab.transport.recovery.base import Recovery, register_recovery

if TYPE_CHECKING:
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair


@register_recovery
class UecRecovery(Recovery):
    name = "uec"
    summary = "UEC-style (uet-htsim): out-of-order placement, cumulative SACK, NACK of trimmed headers, per-packet RTO"
    receiver = UecReceiver
    # Its NACK names a trimmed PSN, not the ePSN a scheme that takes selective NACKs over (DFS,
    # ToR-assist's NACK filter) would resend: it is not "selective" in that sense.
    selective = False
    acks_every_arrival = True
    nacks_trimmed = True
    nack_names_psn = True
    rto_per_packet = True
    # The receiver's rank list (8 B a slot) and received bitmap (1 B). (The sender's send times
    # cover only the outstanding PSNs: core/qp.pxi, Transmissions.)
    state_bytes_per_packet = 9

    __slots__ = ("sack", "trim_nacks")

    def __init__(self, qp: QueuePair, params: TransportParams) -> None:
        super().__init__(qp, params)
        # The receiver's first arrivals the sender has heard of (SACK); the queue pair updates
        # it on every ACK.
        self.sack = qp.sack = CumulativeSack(qp.rx)
        self.trim_nacks = 0  # NACKs that queued a resend

    @classmethod
    def ooo_window_packets(cls, params: TransportParams) -> int | None:
        """No bitmap limit: the receiver places any PSN."""
        return None

    def skip_resend(self, psn: int) -> bool:
        return self.sack.holds(psn)

    # --- NACK and RTO ----------------------------------------------------------------------
    def on_nack(self, psn: int) -> None:
        """The NACK of the trimmed header of ``psn`` (``nack_names_psn``)."""
        qp = self.qp
        if psn < qp.snd_una or psn >= qp.max_sent or self.sack.holds(psn) or psn in qp.retx_queue:
            return
        self.trim_nacks += 1
        qp.retx_queue.append(psn)

    def on_packet_timeout(self, psn: int) -> None:
        """The one PSN whose transmission went unanswered is resent, unless SACKed or queued."""
        qp = self.qp
        if psn < qp.snd_una or self.sack.holds(psn) or psn in qp.retx_queue:
            return
        qp.retx_queue.append(psn)
