"""The RoCEv2 requester (sender side of a reliable-connection queue pair)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from spraylab.net.drops import no_drops
from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes
from spraylab.net.packet import ACK, DATA, Packet
from spraylab.net.routes import packet_hash, trace_route
from spraylab.transport.dcqcn import Dcqcn
from spraylab.transport.params import TransportParams

if TYPE_CHECKING:
    from spraylab.net.host import Nic
    from spraylab.net.network import Network
    from spraylab.workload.flows import FlowSpec

PS_BITS = 8_000_000_000_000  # ps per byte at 1 bit/s
NO_WINDOW = 1 << 62  # psn_window / window_packets when nothing caps them


class QueuePair:
    """Segments one message into PSN-numbered packets, paces them at the DCQCN rate, and
    recovers from NACKs and timeouts per the receiver's recovery mode (go-back-N rewinds,
    selective repeat resends one PSN, the ideal transport resends only un-SACKed PSNs).

    ``psn_window`` caps ``next PSN - snd_una`` (DFS sets it to its reorder bound B).
    ``lb`` is the sender-side load balancer hook (entropy per packet, ACK feedback), or None.

    **Ideal transport loss recovery** (an idealisation of packet trimming as in NDP or Ultra
    Ethernet; the ideal receiver itself never NACKs, so without it a real loss waits for the
    RTO). Every drop of one of this QP's packets calls ``drop_hook`` from ``sim_drop`` (None
    for the other recovery modes, so they pay one attribute test):

    * a lost **data** packet is reported to the sender at ``max(sent + base RTT, drop +
      return)`` (``_path_delays``: base RTT = idle-fabric round trip of a data packet and its
      ACK along the flow's route, return = its ACK half). That is when the NACK for a trimmed
      header that went on from the drop point to the receiver gets back (trimming as in NDP
      or Ultra Ethernet) if the packet had not queued before the drop point, as on lossy and
      failed links; and it is never earlier than a header bounced straight back from the
      drop point (NDP's return-to-sender) could arrive, so a real mechanism achieves it. It
      is also never later than a selective-repeat NACK, which needs a later-sent packet to
      reach the receiver (at least sent + base RTT); "drop + base RTT" would be, by up to the
      forward path already travelled. The PSN is then resent selectively (on whatever
      entropy the load balancer picks) unless the receiver holds it (it would not NACK it),
      it is already queued, or another copy (an RTO resend) is still in the network and
      decides on its own: a notice never causes a spurious retransmission;
    * a lost **ACK** causes no resend: SACK state is cumulative (``_sack``), so any later ACK
      repairs the sender's view; and its content reaches the transport at drop + return
      (``_on_late_ack``), so a window-limited sender whose last ACKs die (a failed link in the
      ACK direction) does not wait for the RTO either;
    * lost CNPs are lost. The load balancer hears of none of this (it sees the ACKs that
      arrive, as before). The RTO (default 1 ms) stays as the last resort.
    """

    __slots__ = (
        "net",
        "sim",
        "spec",
        "flow_id",
        "src",
        "dst",
        "n_packets",
        "mtu",
        "last_payload",
        "full_wire_bytes",
        "last_wire_bytes",
        "nic",
        "rx",
        "recovery",
        "cc",
        "line_rate_bps",
        "paced_ps_per_byte",
        "next_send_ps",
        "snd_una",
        "snd_nxt",
        "max_sent",
        "retx_queue",
        "ideal",
        "sack_count",
        "entropy",
        "flow_hash",
        "psn_window",
        "window_packets",
        "lb",
        "lb_state",
        "in_sched",
        "sender_done",
        "start_ps",
        "acked_ps",
        "last_progress_ps",
        "rto_ps",
        "rto_armed",
        "sent_packets",
        "retx_packets",
        "nacks_received",
        "timeouts",
        "drops_by_cause",
        "_rto_cb",
        "_deferred_nack_cb",
        # ideal transport only (None / unused otherwise)
        "drop_hook",
        "tx_copies",
        "lost_copies",
        "base_rtt_ps",
        "return_ps",
        "loss_notices",
        "late_acks",
        "_notice_cb",
        "_late_ack_cb",
    )

    def __init__(
        self, net: Network, spec: FlowSpec, nic: Nic, params: TransportParams, line_rate_bps: int
    ) -> None:
        self.net = net
        self.sim = net.sim
        self.spec = spec
        self.flow_id = spec.flow_id
        self.src = spec.src
        self.dst = spec.dst
        self.mtu = params.mtu_bytes
        self.n_packets = max(1, -(-spec.size_bytes // self.mtu))
        self.last_payload = spec.size_bytes - (self.n_packets - 1) * self.mtu
        self.full_wire_bytes = data_wire_bytes(self.mtu)
        self.last_wire_bytes = data_wire_bytes(self.last_payload)
        self.nic = nic
        self.rx: Any = None
        self.recovery = params.recovery
        self.line_rate_bps = line_rate_bps
        self.cc = Dcqcn(self, params.dcqcn, line_rate_bps) if params.cc == "dcqcn" else None
        self.paced_ps_per_byte = 0.0  # 0: line rate, no pacing beyond the NIC port
        self.next_send_ps = 0
        self.snd_una = 0
        self.snd_nxt = 0
        self.max_sent = 0
        self.retx_queue: deque[int] = deque()
        self.ideal = params.recovery == "ideal"
        self.sack_count = 0  # ideal: the receiver's first arrivals the sender has heard of (SACK)
        self.entropy = net.flow_rng.getrandbits(16)
        self.flow_hash = packet_hash(self.flow_id, self.entropy)  # the header hash on that entropy
        self.psn_window = NO_WINDOW
        self.window_packets = (
            max(1, params.window_bytes // self.full_wire_bytes) if params.window_bytes else NO_WINDOW
        )
        self.lb: Any = None
        self.lb_state: Any = None
        self.in_sched = False
        self.sender_done = False
        self.start_ps = -1
        self.acked_ps = -1
        self.last_progress_ps = 0
        self.rto_ps = params.rto_ps
        self.rto_armed = False
        self.sent_packets = 0
        self.retx_packets = 0
        self.nacks_received = 0
        self.timeouts = 0
        self.drops_by_cause = no_drops()  # this flow's packets (data and control) lost, by cause
        self._rto_cb = self._on_rto
        self._deferred_nack_cb = self._on_deferred_nack
        ideal = self.ideal
        self.drop_hook = self._on_drop if ideal else None
        # Copies of each PSN put on the wire (the first send is counted in advance) and copies
        # lost in the network: a PSN has a copy in flight while the first exceeds the second
        # (and the receiver does not hold it yet).
        self.tx_copies: list[int] | None = [1] * self.n_packets if ideal else None
        self.lost_copies: list[int] | None = [0] * self.n_packets if ideal else None
        self.base_rtt_ps = -1  # computed at the first loss (_path_delays)
        self.return_ps = -1
        self.loss_notices = 0
        self.late_acks = 0
        self._notice_cb = self._on_loss_notice
        self._late_ack_cb = self._on_late_ack

    # --- rate ------------------------------------------------------------------------
    def set_rate(self, rate_bps: float) -> None:
        self.paced_ps_per_byte = 0.0 if rate_bps >= self.line_rate_bps else PS_BITS / rate_bps

    @property
    def rate_bps(self) -> float:
        return self.cc.rc if self.cc is not None else float(self.line_rate_bps)

    # --- sending ---------------------------------------------------------------------
    def start(self) -> None:
        self.start_ps = self.sim.now
        self.last_progress_ps = self.sim.now
        if self.lb is not None:
            self.lb.on_flow_start(self)
        self.nic.activate(self)

    def has_work(self) -> bool:
        if self.retx_queue:
            return True
        nxt = self.snd_nxt
        return (
            nxt < self.n_packets
            and nxt < self.snd_una + self.psn_window
            and nxt - self.snd_una < self.window_packets
        )

    def next_packet(self, now: int) -> Packet | None:
        """The next packet to put on the wire, or None when blocked (window) or done."""
        retx_queue = self.retx_queue
        while retx_queue:
            psn = retx_queue.popleft()
            if psn >= self.snd_una and not (self.ideal and self._sacked(psn)):
                break
        else:
            psn = self.snd_nxt
            if (
                psn >= self.n_packets
                or psn >= self.snd_una + self.psn_window
                or psn - self.snd_una >= self.window_packets
            ):
                return None
            self.snd_nxt = psn + 1
        if psn < self.n_packets - 1:
            payload, size = self.mtu, self.full_wire_bytes
        else:
            payload, size = self.last_payload, self.last_wire_bytes
        lb = self.lb
        entropy = self.entropy if lb is None else lb.entropy(self, psn)
        h = self.flow_hash if entropy == self.entropy else packet_hash(self.flow_id, entropy)
        pkt = Packet(DATA, self, self.src, self.dst, psn, size, payload, entropy, h, now)
        if psn < self.max_sent:
            pkt.retx = True
            self.retx_packets += 1
            if self.tx_copies is not None:
                self.tx_copies[psn] += 1
        else:
            self.max_sent = psn + 1
        self.sent_packets += 1
        if self.paced_ps_per_byte:
            self.next_send_ps = now + int(size * self.paced_ps_per_byte)
        if self.cc is not None:
            self.cc.on_sent(size)
        if not self.rto_armed:
            self.rto_armed = True
            self.sim.after(self.rto_ps, self._rto_cb)
        self.net.injected_packets += 1
        return pkt

    # --- feedback --------------------------------------------------------------------
    def _advance(self, cum_psn: int, now: int) -> None:
        if cum_psn > self.snd_una:
            self.snd_una = cum_psn
            self.last_progress_ps = now
            if self.snd_nxt < cum_psn:
                self.snd_nxt = cum_psn
            if cum_psn >= self.n_packets and not self.sender_done:
                self.sender_done = True
                self.acked_ps = now
                self.net.on_sender_done(self)

    def on_ack(self, pkt: Packet) -> None:
        now = self.sim.now
        if self.ideal:  # cumulative SACK (see _sack), inlined on this hot path
            count = self.rx.rank[pkt.sack_psn]
            if count > self.sack_count:
                self.sack_count = count
        self._advance(pkt.psn, now)
        if self.lb is not None:
            self.lb.on_ack(self, pkt)
        if not self.sender_done and not self.in_sched and self.has_work():
            self.nic.activate(self)

    def on_nack(self, pkt: Packet) -> None:
        now = self.sim.now
        self.nacks_received += 1
        psn = pkt.psn
        self._advance(psn, now)
        if self.lb is not None:
            self.lb.on_nack(self, pkt)
        if self.sender_done:
            return
        if self.recovery == "gbn":
            if self.snd_nxt > psn:
                self.snd_nxt = psn
        elif psn < self.max_sent:
            at = -1 if self.lb is None else self.lb.nack_retransmit_at(self, psn)
            if at > now:
                self.sim.at(at, self._deferred_nack_cb, psn)
            else:
                self.retx_queue.append(psn)
        if not self.in_sched and self.has_work():
            self.nic.activate(self)

    def _on_deferred_nack(self, psn: int) -> None:
        if self.sender_done or psn < self.snd_una:
            return  # delivered meanwhile: the NACK was for reordering, not loss
        self.resend([psn])

    def resend(self, psns: list[int]) -> None:
        """Queue ``psns`` for retransmission (a sender scheme's own loss detection uses this)."""
        self.retx_queue.extend(psns)
        if not self.in_sched and self.has_work():
            self.nic.activate(self)

    def on_cnp(self, pkt: Packet) -> None:
        if self.cc is not None and not self.sender_done:
            self.cc.on_cnp(self.sim.now)

    def _on_rto(self, _: object) -> None:
        self.rto_armed = False
        if self.sender_done:
            return
        now = self.sim.now
        if self.snd_una >= self.max_sent:
            return  # nothing outstanding: re-armed by the next send
        deadline = self.last_progress_ps + self.rto_ps
        if now < deadline:
            self.rto_armed = True
            self.sim.at(deadline, self._rto_cb)
            return
        self.timeouts += 1
        self.last_progress_ps = now
        if self.ideal:
            rank, count = self.rx.rank, self.sack_count
            self.retx_queue.clear()  # the un-SACKed range below includes anything still queued
            self.retx_queue.extend(p for p in range(self.snd_una, self.max_sent) if not 0 < rank[p] <= count)
        else:
            self.snd_nxt = self.snd_una  # go back N (selective-repeat RNICs also do so on timeout)
        if self.lb is not None:
            self.lb.on_timeout(self)
        self.rto_armed = True
        self.sim.after(self.rto_ps, self._rto_cb)
        if not self.in_sched and self.has_work():
            self.nic.activate(self)

    # --- ideal transport: oracle loss notification -----------------------------------
    def _on_drop(self, pkt: Packet) -> None:
        """``sim_drop`` hook (ideal mode): a packet of this QP was lost (see the class doc)."""
        if self.sender_done:
            return
        back = self.return_ps
        if back < 0:
            self._path_delays()
            back = self.return_ps
        now = self.sim.now
        kind = pkt.kind
        if kind == DATA:
            self.lost_copies[pkt.psn] += 1  # type: ignore[index]
            at = pkt.sent_ps + self.base_rtt_ps
            self.sim.at(at if at > now + back else now + back, self._notice_cb, pkt.psn)
        elif kind == ACK:
            # Not the packet itself: an event holding a Packet would count as in flight.
            self.sim.at(now + back, self._late_ack_cb, (pkt.psn, pkt.sack_psn))

    def _sack(self, sack_psn: int) -> None:
        """Cumulative SACK: the ideal receiver's ACK triggered by PSN ``sack_psn`` reports
        every PSN it held when it sent that ACK, i.e. its first ``rank[sack_psn]`` arrivals
        (for an ACK of a duplicate, a lower bound), so one lost ACK is repaired by any later
        one. The sender keeps the largest count heard; PSN p is SACKed iff
        ``0 < rank[p] <= sack_count``."""
        count = self.rx.rank[sack_psn]
        if count > self.sack_count:
            self.sack_count = count

    def _sacked(self, psn: int) -> bool:
        rank = self.rx.rank[psn]
        return 0 < rank <= self.sack_count

    def _on_late_ack(self, info: tuple[int, int]) -> None:
        """A lost ACK's content (ePSN, SACK) reaches the transport ``return_ps`` after the drop.
        The load balancer is not told: the path it came back on did not deliver it."""
        if self.sender_done:
            return
        epsn, sack_psn = info
        self.late_acks += 1
        self._sack(sack_psn)
        self._advance(epsn, self.sim.now)
        if not self.sender_done and not self.in_sched and self.has_work():
            self.nic.activate(self)

    def _on_loss_notice(self, psn: int) -> None:
        """The (trimmed-header) NACK for ``psn`` reaches the sender: resend it selectively
        unless that would be spurious or redundant."""
        if self.sender_done or psn < self.snd_una or self.rx.received[psn]:
            return  # delivered: the receiver would not NACK a PSN it holds
        if self.tx_copies[psn] > self.lost_copies[psn]:  # type: ignore[index]
            return  # another copy (an RTO resend) is still in the network
        if psn in self.retx_queue:
            return  # already queued (by an RTO)
        self.loss_notices += 1
        self.retx_queue.append(psn)
        if not self.in_sched:
            self.nic.activate(self)

    def _path_delays(self) -> None:
        """``base_rtt_ps``: round trip of a data packet and its ACK on the idle fabric along
        the representative route (``trace_route``: the first equal-cost candidate at each
        switch; if the destination is unreachable right now, the route so far), i.e.
        propagation both ways plus one data and one control serialization per hop;
        ``return_ps``: its ACK half (destination to source)."""
        data = self.full_wire_bytes
        forward = back = 0
        for hop in trace_route(self.net, self.src, self.dst).hops:
            port = hop.port
            forward += port.delay_ps + int(data * port.ps_per_byte)
            back += port.delay_ps + int(ACK_WIRE_BYTES * port.ps_per_byte)
        self.base_rtt_ps = forward + back
        self.return_ps = back
