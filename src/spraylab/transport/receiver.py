"""The RoCEv2 responder (receiver side): what every recovery mode's receiver shares. Each
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

from typing import TYPE_CHECKING

from spraylab.net.drops import BEYOND_BITMAP
from spraylab.net.framing import ACK_WIRE_BYTES
from spraylab.net.packet import ACK, CNP, CONTROL_WIRE_BYTES, NACK, Packet
from spraylab.net.port import sim_drop
from spraylab.transport.cc.base import CONGESTION_CONTROLS
from spraylab.transport.params import ACK_COUNTED_HEADER_BYTES, TransportParams
from spraylab.transport.recovery.base import RECOVERIES

if TYPE_CHECKING:
    from spraylab.net.host import Nic
    from spraylab.transport.qp import QueuePair

NEVER = 1 << 62  # a coalescing threshold that is off


class Receiver:
    """Common state and counters; subclasses implement ``on_data``."""

    __slots__ = (
        "qp",
        "sim",
        "net",
        "nic",
        "n_packets",
        "epsn",
        "received",
        "ack_every",
        "ack_every_bytes",
        "ack_header_bytes",
        "ack_delay_ps",
        "unacked",
        "unacked_bytes",
        "last_unacked",
        "ack_deadline_ps",
        "ack_timer_armed",
        "_ack_timer_cb",
        "nack_timer_ps",
        "nacked_epsn",
        "nacked_ps",
        "cnp_on_ooo",
        "cnp_interval_ps",
        "last_cnp_ps",
        "cc_enabled",
        "max_psn_seen",
        "finish_ps",
        "delivered_bytes",
        "ooo_arrivals",
        "max_reorder",
        "discards",
        "spurious",
        "duplicates",
        "nacks_sent",
        "cnps_sent",
        "acks_sent",
    )

    def __init__(self, qp: QueuePair, nic: Nic, params: TransportParams) -> None:
        self.qp = qp
        self.sim = qp.sim
        self.net = qp.net
        self.nic = nic
        self.n_packets = qp.n_packets
        self.epsn = 0
        self.received = bytearray(qp.n_packets)
        self.ack_every = params.ack_every or NEVER
        self.ack_every_bytes = params.ack_every_bytes or NEVER
        # Bytes counted per packet beyond its payload (transport.ack_bytes; 0 by default).
        self.ack_header_bytes = ACK_COUNTED_HEADER_BYTES[params.ack_bytes]
        self.ack_delay_ps = params.ack_delay_ps
        self.unacked = 0  # packets accepted since the last ACK or NACK
        self.unacked_bytes = 0  # their counted bytes (payload, plus ack_header_bytes each)
        self.last_unacked: Packet | None = None  # the one a delayed ACK echoes
        self.ack_deadline_ps = -1  # when the pending ACK is due (ack_delay), -1: none pending
        self.ack_timer_armed = False
        self._ack_timer_cb = self._on_ack_timer
        self.nack_timer_ps = params.nack_timer_ps
        self.nacked_epsn = -1
        self.nacked_ps = 0
        cc_enabled = CONGESTION_CONTROLS.get(params.cc).uses_cnp
        cnp_on_ooo = params.cnp_on_ooo
        if cnp_on_ooo is None:
            cnp_on_ooo = RECOVERIES.get(params.recovery).cnp_on_ooo
        self.cnp_on_ooo = cnp_on_ooo and cc_enabled
        self.cnp_interval_ps = params.dcqcn.cnp_interval_ps
        self.last_cnp_ps = -(1 << 62)
        self.cc_enabled = cc_enabled
        self.max_psn_seen = -1
        self.finish_ps = -1
        self.delivered_bytes = 0
        self.ooo_arrivals = 0
        self.max_reorder = 0
        self.discards = 0
        self.spurious = 0
        self.duplicates = 0
        self.nacks_sent = 0
        self.cnps_sent = 0
        self.acks_sent = 0

    # --- helpers shared by the recovery modes -----------------------------------------
    def _reply(self, kind: int, data: Packet) -> None:
        qp = self.qp
        pkt = Packet(
            kind,
            qp,
            qp.dst,
            qp.src,
            self.epsn,
            CONTROL_WIRE_BYTES[kind],
            0,
            data.entropy,
            data.hash,
            data.sent_ps,
        )
        pkt.sack_psn = data.psn
        pkt.ecn = data.ecn
        pkt.path_id = data.path_id
        self.net.injected_packets += 1
        self.nic.port.send_control(pkt)

    def _reply_ack(self, data: Packet) -> None:
        """The ACK of ``data``, in ``data``'s own object: the receiver consumed the data packet
        and nothing else holds it (callers make this its last use), so turning it into its ACK
        saves an allocation per data packet. The fields the ACK echoes (entropy, hash, send
        time, ECN mark, path) stay as they are; the rest become what :meth:`_reply` gives."""
        qp = self.qp
        data.kind = ACK
        data.src = qp.dst
        data.dst = qp.src
        data.sack_psn = data.psn
        data.psn = self.epsn
        data.size = ACK_WIRE_BYTES
        data.payload = 0
        data.retx = False
        data.path_seq = -1
        data.ingress = None
        self.net.injected_packets += 1
        self.nic.port.send_control(data)

    def _observe(self, pkt: Packet) -> None:
        """Reorder degree and ECN-triggered CNPs, common to every mode."""
        psn = pkt.psn
        if psn > self.max_psn_seen:
            self.max_psn_seen = psn
        elif not pkt.retx and not self.received[psn]:
            # First arrivals only: a late original overtaken by its own retransmission is a
            # duplicate, not reordering the receiver has to absorb.
            degree = self.max_psn_seen - psn
            if degree > self.max_reorder:
                self.max_reorder = degree
        if pkt.ecn and self.cc_enabled:
            self._maybe_cnp(pkt)

    def _maybe_cnp(self, pkt: Packet) -> None:
        now = self.sim.now
        if now - self.last_cnp_ps >= self.cnp_interval_ps:
            self.last_cnp_ps = now
            self.cnps_sent += 1
            self._reply(CNP, pkt)

    def _maybe_nack(self, pkt: Packet) -> None:
        now = self.sim.now
        if self.nacked_epsn != self.epsn or now - self.nacked_ps >= self.nack_timer_ps:
            self.nacked_epsn = self.epsn
            self.nacked_ps = now
            self.nacks_sent += 1
            self._clear_pending()  # the NACK carries the cumulative ePSN
            self._reply(NACK, pkt)

    def _place(self, pkt: Packet) -> None:
        self.received[pkt.psn] = 1
        self.delivered_bytes += pkt.payload

    def _gap(self, pkt: Packet) -> None:
        """An out-of-order arrival: NACK the ePSN (and CNP, where the RNIC does so)."""
        self.ooo_arrivals += 1
        self._maybe_nack(pkt)
        if self.cnp_on_ooo:
            self._maybe_cnp(pkt)

    def _in_order(self, pkt: Packet) -> None:
        """Place the ePSN packet, advance ePSN over everything received, ACK per coalescing,
        detect completion."""
        self._place(pkt)
        received = self.received
        epsn = self.epsn
        n = self.n_packets
        while epsn < n and received[epsn]:
            epsn += 1
        self.epsn = epsn
        self._coalesce(pkt)
        if epsn == n and self.finish_ps < 0:
            self.finish_ps = self.sim.now
            self.net.on_flow_received(self.qp)

    def _discard(self, pkt: Packet) -> None:
        """The RNIC throws away a packet beyond its out-of-order bitmap. The host counted its
        arrival as a delivery; it is a drop (cause ``BEYOND_BITMAP``) instead."""
        self.discards += 1
        self.net.consumed_packets -= 1
        sim_drop(self.sim, pkt, BEYOND_BITMAP)

    def _duplicate(self, pkt: Packet, nack: bool = False) -> None:
        """A PSN received before: ACK it, or NAK it when the hole at ePSN is still open."""
        self.duplicates += 1
        if pkt.retx:
            self.spurious += 1
        if nack:
            self._maybe_nack(pkt)
        else:
            self._ack(pkt)

    # --- ACK coalescing (see the module doc) ---------------------------------------------
    def _ack(self, data: Packet) -> None:
        """ACK now, echoing ``data`` (in its object: its last use), the cumulative ePSN
        covers everything pending."""
        self._clear_pending()
        self.acks_sent += 1
        self._reply_ack(data)

    def _clear_pending(self) -> None:
        self.unacked = 0
        self.unacked_bytes = 0
        self.last_unacked = None
        self.ack_deadline_ps = -1

    def _count(self, pkt: Packet) -> None:
        """An accepted packet the receiver does not answer by itself (selective repeat,
        out of order): it only counts towards the next ACK."""
        self.unacked += 1
        self.unacked_bytes += pkt.payload + self.ack_header_bytes

    def _coalesce(self, pkt: Packet) -> None:
        """``pkt`` was accepted: ACK it now if a threshold is reached, it is ECN-marked or it
        completes the message (in ``pkt``'s object: callers make this its last use); otherwise
        leave the ACK pending (armed on ``ack_delay``)."""
        unacked = self.unacked + 1
        unacked_bytes = self.unacked_bytes + pkt.payload + self.ack_header_bytes
        if (
            unacked >= self.ack_every
            or unacked_bytes >= self.ack_every_bytes
            or pkt.ecn
            or self.epsn == self.n_packets
        ):
            # _ack, inlined: this runs once per data packet at the default ack_every = 1
            self.unacked = self.unacked_bytes = 0
            self.last_unacked = None
            self.ack_deadline_ps = -1
            self.acks_sent += 1
            self._reply_ack(pkt)
            return
        self.unacked = unacked
        self.unacked_bytes = unacked_bytes
        self.last_unacked = pkt
        delay = self.ack_delay_ps
        if delay and self.ack_deadline_ps < 0:
            deadline = self.sim.now + delay
            self.ack_deadline_ps = deadline
            if not self.ack_timer_armed:
                self.ack_timer_armed = True
                self.sim.at(deadline, self._ack_timer_cb)

    def _on_ack_timer(self, _: object) -> None:
        """One event per coalescing window: a timer left over from a window that a
        threshold closed early moves on to the current window's deadline."""
        deadline = self.ack_deadline_ps
        if deadline > self.sim.now:
            self.sim.at(deadline, self._ack_timer_cb)
            return
        self.ack_timer_armed = False
        if deadline >= 0 and self.last_unacked is not None:
            self._ack(self.last_unacked)

    def on_data(self, pkt: Packet) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
