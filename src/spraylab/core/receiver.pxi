# The RoCEv2 responder (receiver side): what every recovery mode's receiver shares, and the
# built-in modes' receivers (go-back-N, selective repeat, the ideal transport). The model is in
# spraylab.transport.receiver's module doc (ACK coalescing) and each mode's module.

NEVER = 1 << 62  # a coalescing threshold that is off

cdef int64_t C_NEVER = NEVER
# link bytes of each control frame (spraylab.net.framing, as net.packet.CONTROL_WIRE_BYTES)
cdef int64_t ACK_BYTES = ACK_WIRE_BYTES
cdef int64_t NACK_BYTES = NACK_WIRE_BYTES
cdef int64_t CNP_BYTES = CNP_WIRE_BYTES


cdef class Receiver:
    """Common state and counters; subclasses implement ``on_data``.

    A recovery mode written in Python subclasses this class and overrides ``on_data`` (the core
    calls the override); the helpers below are its vocabulary."""

    cdef public QueuePair qp
    cdef public Simulator sim
    cdef public object net, last_unacked
    cdef public Nic nic
    cdef public bytearray received
    cdef public int64_t n_packets, epsn, ack_every, ack_every_bytes, ack_header_bytes, ack_delay_ps
    cdef public int64_t unacked, unacked_bytes, ack_deadline_ps
    cdef public bint ack_timer_armed, cnp_on_ooo, cc_enabled
    cdef public int64_t nack_timer_ps, nacked_epsn, nacked_ps, cnp_interval_ps, last_cnp_ps
    cdef public int64_t max_psn_seen, finish_ps, delivered_bytes, ooo_arrivals, max_reorder
    cdef public int64_t discards, spurious, duplicates, nacks_sent, cnps_sent, acks_sent
    cdef public int64_t trimmed_headers  # headers of trimmed data packets that reached it
    cdef object _ack_timer_cb

    def __init__(self, QueuePair qp, Nic nic, params) -> None:
        from spraylab.transport.cc.base import CONGESTION_CONTROLS
        from spraylab.transport.params import ACK_COUNTED_HEADER_BYTES
        from spraylab.transport.recovery.base import RECOVERIES

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
        self.last_unacked = None  # the one a delayed ACK echoes
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
        self.trimmed_headers = 0

    # --- helpers shared by the recovery modes -----------------------------------------
    cpdef _reply(self, int kind, Packet data):
        cdef QueuePair qp = self.qp
        cdef int64_t size = ACK_BYTES if kind == ACK else NACK_BYTES if kind == NACK else CNP_BYTES
        cdef Packet pkt = new_packet(
            kind, qp, qp.dst, qp.src, self.epsn, size, 0, data.entropy, data.hash, data.sent_ps
        )
        pkt.sack_psn = data.psn
        pkt.ecn = data.ecn
        pkt.path_id = data.path_id
        self.net.injected_packets += 1
        self.nic.port.send_control(pkt)

    cpdef _reply_ack(self, Packet data):
        """The ACK of ``data``, in ``data``'s own object: the receiver consumed the data packet
        and nothing else holds it (callers make this its last use), so turning it into its ACK
        saves an allocation per data packet. The fields the ACK echoes (entropy, hash, send
        time, ECN mark, path) stay as they are; the rest become what :meth:`_reply` gives."""
        cdef QueuePair qp = self.qp
        data.kind = ACK
        data.src = qp.dst
        data.dst = qp.src
        data.sack_psn = data.psn
        data.psn = self.epsn
        data.size = ACK_BYTES
        data.payload = 0
        data.retx = False
        data.path_seq = -1
        data.ingress = None
        self.net.injected_packets += 1
        self.nic.port.send_control(data)

    cpdef _observe(self, Packet pkt):
        """Reorder degree and ECN-triggered CNPs, common to every mode."""
        cdef int64_t psn = pkt.psn
        cdef int64_t degree
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

    cpdef _maybe_cnp(self, Packet pkt):
        cdef int64_t now = self.sim.now
        if now - self.last_cnp_ps >= self.cnp_interval_ps:
            self.last_cnp_ps = now
            self.cnps_sent += 1
            self._reply(CNP, pkt)

    cpdef _maybe_nack(self, Packet pkt):
        cdef int64_t now = self.sim.now
        if self.nacked_epsn != self.epsn or now - self.nacked_ps >= self.nack_timer_ps:
            self.nacked_epsn = self.epsn
            self.nacked_ps = now
            self.nacks_sent += 1
            self._clear_pending()  # the NACK carries the cumulative ePSN
            self._reply(NACK, pkt)

    cpdef _place(self, Packet pkt):
        self.received[pkt.psn] = 1
        self.delivered_bytes += pkt.payload

    cpdef _gap(self, Packet pkt):
        """An out-of-order arrival: NACK the ePSN (and CNP, where the RNIC does so)."""
        self.ooo_arrivals += 1
        self._maybe_nack(pkt)
        if self.cnp_on_ooo:
            self._maybe_cnp(pkt)

    cpdef _in_order(self, Packet pkt):
        """Place the ePSN packet, advance ePSN over everything received, ACK per coalescing,
        detect completion."""
        self._place(pkt)
        cdef bytearray received = self.received
        cdef int64_t epsn = self.epsn
        cdef int64_t n = self.n_packets
        while epsn < n and received[epsn]:
            epsn += 1
        self.epsn = epsn
        self._coalesce(pkt)
        if epsn == n and self.finish_ps < 0:
            self.finish_ps = self.sim.now
            self.net.on_flow_received(self.qp)

    cpdef _discard(self, Packet pkt):
        """The RNIC throws away a packet beyond its out-of-order bitmap. The host counted its
        arrival as a delivery; it is a drop (cause ``BEYOND_BITMAP``) instead."""
        self.discards += 1
        self.net.consumed_packets -= 1
        c_sim_drop(pkt, BEYOND_BITMAP, None)

    cpdef _duplicate(self, Packet pkt, bint nack=False):
        """A PSN received before: ACK it, or NAK it when the hole at ePSN is still open."""
        self.duplicates += 1
        if pkt.retx:
            self.spurious += 1
        if nack:
            self._maybe_nack(pkt)
        else:
            self._ack(pkt)

    # --- ACK coalescing (see the module doc) ---------------------------------------------
    cpdef _ack(self, Packet data):
        """ACK now, echoing ``data`` (in its object: its last use), the cumulative ePSN
        covers everything pending."""
        self._clear_pending()
        self.acks_sent += 1
        self._reply_ack(data)

    cpdef _clear_pending(self):
        self.unacked = 0
        self.unacked_bytes = 0
        self.last_unacked = None
        self.ack_deadline_ps = -1

    cpdef _count(self, Packet pkt):
        """An accepted packet the receiver does not answer by itself (selective repeat,
        out of order): it only counts towards the next ACK."""
        self.unacked += 1
        self.unacked_bytes += pkt.payload + self.ack_header_bytes

    cpdef _coalesce(self, Packet pkt):
        """``pkt`` was accepted: ACK it now if a threshold is reached, it is ECN-marked, it asks
        for an ACK (``ack_request``: its sender's byte window is full) or it completes the
        message (in ``pkt``'s object: callers make this its last use); otherwise leave the ACK
        pending (armed on ``ack_delay``)."""
        cdef int64_t unacked = self.unacked + 1
        cdef int64_t unacked_bytes = self.unacked_bytes + pkt.payload + self.ack_header_bytes
        cdef int64_t deadline
        if (
            unacked >= self.ack_every
            or unacked_bytes >= self.ack_every_bytes
            or pkt.ecn
            or self.epsn == self.n_packets
            or pkt.ack_request
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
        if self.ack_delay_ps and self.ack_deadline_ps < 0:
            deadline = self.sim.now + self.ack_delay_ps
            self.ack_deadline_ps = deadline
            if not self.ack_timer_armed:
                self.ack_timer_armed = True
                self.sim.at(deadline, self._ack_timer_cb)

    def _on_ack_timer(self, _) -> None:
        """One event per coalescing window: a timer left over from a window that a
        threshold closed early moves on to the current window's deadline."""
        deadline = self.ack_deadline_ps
        if deadline > self.sim.now:
            self.sim.at(deadline, self._ack_timer_cb)
            return
        self.ack_timer_armed = False
        if deadline >= 0 and self.last_unacked is not None:
            self._ack(self.last_unacked)

    cpdef on_data(self, Packet pkt):
        raise NotImplementedError

    cpdef on_trimmed(self, Packet pkt):
        """The header of a data packet a switch trimmed (``switch.trimming``). Only a mode
        whose receiver answers it may run on a trimming fabric (``Recovery.nacks_trimmed``,
        checked when the network is built), so this is never reached otherwise."""
        raise NotImplementedError(
            f"{type(self).__name__}: a trimmed header arrived, and this receiver has no answer to one"
        )


cdef class GoBackNReceiver(Receiver):
    """Accept only PSN == ePSN; discard anything ahead and NACK(ePSN)."""

    cpdef on_data(self, Packet pkt):
        self._observe(pkt)
        cdef int64_t psn = pkt.psn
        cdef int64_t epsn = self.epsn
        if psn == epsn:
            self._in_order(pkt)
        elif psn > epsn:
            self._discard(pkt)
            self._gap(pkt)
        else:
            self._duplicate(pkt)


cdef class SelectiveRepeatReceiver(Receiver):
    """OOO placement into a W-packet bitmap; the first OOO arrival of a gap NACKs ePSN."""

    cdef public int64_t bitmap

    def __init__(self, QueuePair qp, Nic nic, params) -> None:
        super().__init__(qp, nic, params)
        self.bitmap = params.ooo_bitmap_packets

    cpdef on_data(self, Packet pkt):
        self._observe(pkt)
        cdef int64_t psn = pkt.psn
        cdef int64_t epsn = self.epsn
        if psn == epsn:
            self._in_order(pkt)
        elif psn >= epsn + self.bitmap:
            self._discard(pkt)
        elif psn > epsn:
            if self.received[psn]:
                # e.g. after a go-back-N resend on timeout: the hole at ePSN is still open,
                # a sequence error, which the RNIC NAKs.
                self._duplicate(pkt, True)
                return
            self._place(pkt)
            self._count(pkt)
            self._gap(pkt)
        else:
            self._duplicate(pkt)


cdef class IdealReceiver(Receiver):
    """Accepts any PSN, SACKs each packet, never NACKs (real losses are reported to the sender
    by the oracle notice of ``IdealRecovery``).

    SACK state is cumulative: ``rank[p]`` is the number of first arrivals the receiver had
    once PSN p had arrived (0: not yet), so the ACK triggered by p reports all of the first
    ``rank[p]`` arrivals, and losing one ACK costs the sender nothing once a later one arrives."""

    # 32-bit: a rank is at most the flow's packet count (checked below), and the ranks are
    # the largest per-flow array of a run (8,192 flows of 2 MB: 16 MB at 32 bits, not 32 MB).
    cdef vector[int32_t] _rank
    cdef public int64_t n_arrived

    def __init__(self, QueuePair qp, Nic nic, params) -> None:
        super().__init__(qp, nic, params)
        self._rank.assign(qp.n_packets, 0)
        self.n_arrived = 0

    @property
    def rank(self) -> list:
        """``rank[p]`` per PSN (a copy)."""
        return [r for r in self._rank]

    cpdef on_data(self, Packet pkt):
        # Once per data packet: _observe, _place and _in_order inlined (the same steps in the
        # same order as the other modes' receivers take through them).
        cdef int64_t psn = pkt.psn
        cdef bytearray received = self.received
        cdef int64_t degree, n, epsn, n_packets
        if psn > self.max_psn_seen:
            self.max_psn_seen = psn
        elif not pkt.retx and not received[psn]:
            degree = self.max_psn_seen - psn
            if degree > self.max_reorder:
                self.max_reorder = degree
        if pkt.ecn and self.cc_enabled:
            self._maybe_cnp(pkt)
        if received[psn]:
            self._duplicate(pkt)
            return
        n = self.n_arrived + 1
        self.n_arrived = n
        self._rank[psn] = <int32_t>n
        received[psn] = 1
        self.delivered_bytes += pkt.payload
        epsn = self.epsn
        if psn == epsn:
            n_packets = self.n_packets
            epsn += 1
            while epsn < n_packets and received[epsn]:
                epsn += 1
            self.epsn = epsn
            self._coalesce(pkt)
            if epsn == n_packets and self.finish_ps < 0:
                self.finish_ps = self.sim.now
                self.net.on_flow_received(self.qp)
        else:
            self.ooo_arrivals += 1
            # SACKed like any arrival (at once without coalescing), so the sender learns of
            # this PSN even while ePSN is stuck.
            self._coalesce(pkt)


cdef class UecReceiver(IdealReceiver):
    """The UEC-style receiver (``transport.recovery = "uec"``; uet-htsim's UecSink): places any
    PSN out of order and SACKs cumulatively as :class:`IdealReceiver` does (its ``on_data``),
    and answers the header of a trimmed packet (``on_trimmed``) at once: a NACK naming that PSN
    in ``sack_psn`` (``psn`` carries the ePSN, as every NACK here), or, if that PSN is already
    here (another copy arrived), an ACK, so the sender does not resend it.

    Besides its coalescing (``ack_every_bytes``), ECN marks and the sender's ``ack_request``,
    it ACKs at once what uet-htsim's UecSink ACKs at once (``uec.cpp`` ``processData``): the
    first packet (``_received_bytes == 0``), every retransmission (UecSrc sets ``ar`` on every
    resend, ``sendRtxPacket``; a resend carries ``retx``, so the receiver reads it as the flag)
    and, once an ``ar`` packet arrived, the in-order arrival after which no out-of-order packet
    is left (``_ack_request``). Each ACK echoes its packet's entropy: these are the echoes of
    the resent packets' new paths, the feedback a path-aware scheme (REPS) learns from when
    trimming is heavy (benchmarks/nscc_side_by_side.md, failed links)."""

    cdef public bint ack_requested  # an ``ar`` packet arrived with out-of-order packets left

    cpdef on_data(self, Packet pkt):
        cdef int64_t psn = pkt.psn, epsn, last
        cdef bytearray received
        if pkt.retx or self.n_arrived == 0:
            pkt.ack_request = True
        if pkt.ack_request:
            self.ack_requested = True
        if self.ack_requested and psn == self.epsn:
            # In order: does it leave no out-of-order packet (the ePSN it moves to passes the
            # highest PSN seen)? Then it is ACKed at once and the request is answered.
            received = self.received
            epsn = psn + 1
            while epsn < self.n_packets and received[epsn]:
                epsn += 1
            last = psn if psn > self.max_psn_seen else self.max_psn_seen
            if last < epsn:
                pkt.ack_request = True
                self.ack_requested = False
        IdealReceiver.on_data(self, pkt)

    cpdef on_trimmed(self, Packet pkt):
        self.trimmed_headers += 1
        # A header keeps the ECN mark its data packet got before the trim point: the
        # notification point reacts to it as to any marked arrival.
        if pkt.ecn and self.cc_enabled:
            self._maybe_cnp(pkt)
        if self.received[pkt.psn]:
            self.duplicates += 1
            self._ack(pkt)
            return
        self.nacks_sent += 1
        self._reply(NACK, pkt)


cdef class CumulativeSack:
    """The sender's view of a cumulative-SACK receiver (``IdealReceiver`` and its kin): an ACK
    triggered by PSN ``sack_psn`` reports the receiver's first ``rank[sack_psn]`` arrivals, and
    the sender keeps the largest count heard, so PSN p is SACKed iff ``0 < rank[p] <= count``
    and one lost ACK is repaired by any later one. A queue pair whose recovery sets ``qp.sack``
    updates it on every ACK without a Python call."""

    cdef IdealReceiver rx
    cdef public int64_t count
    # ``covered``: the PSNs below ``prefix_end`` scanned so far, and their largest rank
    cdef int64_t prefix_end, prefix_rank

    def __init__(self, IdealReceiver rx) -> None:
        self.rx = rx
        self.count = 0
        self.prefix_end = 0
        self.prefix_rank = 0

    cpdef covered(self, int64_t epsn):
        """A NACK reported the receiver's ePSN: every PSN below it had arrived, so the count of
        first arrivals it had then is at least the largest of their ranks. Without this, a PSN
        acknowledged only cumulatively by a NACK (its own ACK coalesced away) would count as in
        flight for good, and a window of one frame would never send again. Each PSN is scanned
        once (the ePSN only grows)."""
        cdef int64_t p = self.prefix_end
        cdef int64_t best = self.prefix_rank
        cdef int64_t rank
        while p < epsn:
            rank = self.rx._rank[p]
            if rank > best:
                best = rank
            p += 1
        self.prefix_end = p
        self.prefix_rank = best
        if best > self.count:
            self.count = best

    cpdef heard(self, int64_t sack_psn):
        """An ACK triggered by ``sack_psn`` (or its content, when the ACK itself was lost)."""
        cdef int64_t count = self.rx._rank[sack_psn]
        if count > self.count:
            self.count = count

    cpdef bint holds(self, int64_t psn):
        """Is ``psn`` SACKed?"""
        cdef int64_t rank = self.rx._rank[psn]
        return 0 < rank <= self.count
