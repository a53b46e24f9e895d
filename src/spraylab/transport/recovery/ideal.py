"""The ideal reorder-tolerant transport (a reference, not an RNIC): the receiver accepts any
PSN and SACKs every first arrival; the requester resends only what was not SACKed, and learns
of every loss from an oracle notice.

**Loss recovery** (an idealisation of packet trimming as in NDP or Ultra Ethernet; the ideal
receiver itself never NACKs, so without it a real loss waits for the RTO). Every drop of one of
the flow's packets reaches :meth:`IdealRecovery.on_drop` (``sim_drop`` calls the queue pair's
``drop_hook``, None for the other modes, so they pay one attribute test):

* a lost **data** packet is reported to the sender at ``max(sent + base RTT, drop + return)``
  (``_path_delays``: base RTT = idle-fabric round trip of a data packet and its ACK along the
  flow's route, return = its ACK half). That is when the NACK for a trimmed header that went on
  from the drop point to the receiver gets back if the packet had not queued before the drop
  point, as on lossy and failed links; it is never earlier than a header bounced straight back
  from the drop point (NDP's return-to-sender) could arrive, so a real mechanism achieves it;
  and never later than a selective-repeat NACK, which needs a later-sent packet to reach the
  receiver (at least sent + base RTT). The PSN is then resent selectively (on whatever entropy
  the load balancer picks) unless the receiver holds it (it would not NACK it), it is already
  queued, or another copy (an RTO resend) is still in the network and decides on its own: a
  notice never causes a spurious retransmission;
* a lost **ACK** causes no resend: SACK state is cumulative (``CumulativeSack``, core/receiver.pxi), so
  any later ACK repairs the sender's view; and its content reaches the transport at drop +
  return (``_on_late_ack``), so a window-limited sender whose last ACKs die (a failed link in
  the ACK direction) does not wait for the RTO either;
* lost CNPs are lost. The load balancer hears of none of this (it sees the ACKs that arrive).
  The RTO (default 1 ms) stays as the last resort, and resends only un-SACKed PSNs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.core._core import CumulativeSack, IdealReceiver  # compiled: core/receiver.pxi
from spraylab.net.framing import ACK_WIRE_BYTES
from spraylab.net.packet import ACK, DATA, Packet
from spraylab.net.routes import trace_route
from spraylab.transport.recovery.base import Recovery, register_recovery
from spraylab.transport.recovery.sr import SelectiveRepeat

if TYPE_CHECKING:
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair


@register_recovery
class IdealRecovery(SelectiveRepeat):
    name = "ideal"
    summary = "ideal reference: reorder-tolerant, cumulative SACK, oracle loss notice, no spurious resend"
    receiver = IdealReceiver
    acks_every_arrival = True
    notices_losses = True
    # no bitmap and no NACK: the oracle reports losses
    reads = Recovery.reads
    # Two int lists on the sender (tx_copies, lost_copies, 8 B a slot; made at the flow's first
    # resend or loss, counted here as if every flow had one), on the receiver a 32-bit rank and
    # the received flag.
    state_bytes_per_packet = 21

    __slots__ = (
        "sack",
        "tx_copies",
        "lost_copies",
        "base_rtt_ps",
        "return_ps",
        "loss_notices",
        "late_acks",
        "_notice_cb",
        "_late_ack_cb",
    )

    def __init__(self, qp: QueuePair, params: TransportParams) -> None:
        super().__init__(qp, params)
        # The receiver's first arrivals the sender has heard of (SACK); the queue pair updates
        # it on every ACK.
        self.sack = qp.sack = CumulativeSack(qp.rx)
        # Copies of each PSN put on the wire (the first send is counted in advance) and copies
        # lost in the network: a PSN has a copy in flight while the first exceeds the second
        # (and the receiver does not hold it yet). None until the flow's first resend or loss
        # (``_count_copies``): most flows have neither, and at 8,192 flows of 2 MB the two
        # lists were 62 MB of a run's peak RSS (docs/performance.md, Memory).
        self.tx_copies: list[int] | None = None
        self.lost_copies: list[int] | None = None
        self.base_rtt_ps = -1  # computed at the first loss (_path_delays)
        self.return_ps = -1
        self.loss_notices = 0
        self.late_acks = 0
        self._notice_cb = self._on_loss_notice
        self._late_ack_cb = self._on_late_ack

    @classmethod
    def ooo_window_packets(cls, params: TransportParams) -> int | None:
        """No bitmap: the ideal receiver accepts any PSN."""
        return None

    def skip_resend(self, psn: int) -> bool:
        return self.sack.holds(psn)

    def _count_copies(self) -> tuple[list[int], list[int]]:
        """``(tx_copies, lost_copies)``, made at the first call: one copy sent of every PSN
        (the first send, counted in advance), none lost."""
        if self.tx_copies is None or self.lost_copies is None:
            n = self.qp.n_packets
            self.tx_copies = [1] * n
            self.lost_copies = [0] * n
        return self.tx_copies, self.lost_copies

    def on_resent(self, psn: int) -> None:
        self._count_copies()[0][psn] += 1

    def on_timeout(self) -> None:
        qp = self.qp
        holds = self.sack.holds
        retx_queue = qp.retx_queue
        retx_queue.clear()  # the un-SACKed range below includes anything still queued
        retx_queue.extend(p for p in range(qp.snd_una, qp.max_sent) if not holds(p))

    # --- oracle loss notification ----------------------------------------------------------
    def on_drop(self, pkt: Packet) -> None:
        """A packet of this flow was lost (see the module doc)."""
        qp = self.qp
        if qp.sender_done:
            return
        back = self.return_ps
        if back < 0:
            self._path_delays()
            back = self.return_ps
        sim = qp.sim
        now = sim.now
        kind = pkt.kind
        if kind == DATA:
            self._count_copies()[1][pkt.psn] += 1
            at = pkt.sent_ps + self.base_rtt_ps
            sim.at(at if at > now + back else now + back, self._notice_cb, pkt.psn)
        elif kind == ACK:
            # Not the packet itself: an event holding a Packet would count as in flight.
            sim.at(now + back, self._late_ack_cb, (pkt.psn, pkt.sack_psn))

    def _on_late_ack(self, info: tuple[int, int]) -> None:
        """A lost ACK's content (ePSN, SACK) reaches the transport ``return_ps`` after the drop.
        The load balancer is not told: the path it came back on did not deliver it."""
        qp = self.qp
        if qp.sender_done:
            return
        epsn, sack_psn = info
        self.late_acks += 1
        self.sack.heard(sack_psn)
        qp.advance(epsn, qp.sim.now)
        if not qp.sender_done:
            qp.kick()

    def _on_loss_notice(self, psn: int) -> None:
        """The (trimmed-header) NACK for ``psn`` reaches the sender: resend it selectively
        unless that would be spurious or redundant."""
        qp = self.qp
        if qp.sender_done or psn < qp.snd_una or qp.rx.received[psn]:
            return  # delivered: the receiver would not NACK a PSN it holds
        tx_copies, lost_copies = self._count_copies()  # made by the drop this notice is of
        if tx_copies[psn] > lost_copies[psn]:
            return  # another copy (an RTO resend) is still in the network
        if psn in qp.retx_queue:
            return  # already queued (by an RTO)
        self.loss_notices += 1
        qp.retx_queue.append(psn)
        qp.kick()

    def _path_delays(self) -> None:
        """``base_rtt_ps``: round trip of a data packet and its ACK on the idle fabric along
        the representative route (``trace_route``: the first equal-cost candidate at each
        switch; if the destination is unreachable right now, the route so far), i.e.
        propagation both ways plus one data and one control serialization per hop;
        ``return_ps``: its ACK half (destination to source)."""
        qp = self.qp
        data = qp.full_wire_bytes
        forward = back = 0
        for hop in trace_route(qp.net, qp.src, qp.dst).hops:
            port = hop.port
            forward += port.delay_ps + int(data * port.ps_per_byte)
            back += port.delay_ps + int(ACK_WIRE_BYTES * port.ps_per_byte)
        self.base_rtt_ps = forward + back
        self.return_ps = back
