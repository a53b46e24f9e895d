# The RoCEv2 requester core (sender side of a reliable-connection queue pair).

PS_BITS = 8_000_000_000_000  # ps per byte at 1 bit/s
cdef double PS_BITS_F = PS_BITS  # the same, as the double a rate divides
NO_WINDOW = 1 << 62  # psn_window / window_packets when nothing caps them


cdef inline uint64_t c_packet_hash(int64_t flow_id, int64_t entropy) noexcept nogil:
    # spraylab.net.routes.packet_hash: mix64((flow_id << 16) | entropy)
    return c_hop_hash((<uint64_t>flow_id << 16) | <uint64_t>entropy, 0)


# The largest PSN, message length and flow id a packet carries (its 32-bit fields)
cdef int64_t MAX_PACKETS = 2_147_483_647


cdef Packet new_packet(
    int kind, QueuePair qp, int64_t src, int64_t dst, int64_t psn, int64_t size, int64_t payload,
    int64_t entropy, uint64_t hash_, int64_t sent_ps,
):
    """``Packet(...)`` without parsing Python arguments (once per data packet)."""
    cdef Packet pkt = Packet.__new__(Packet)
    pkt.kind = kind
    pkt.qp = qp
    pkt.flow_id = qp.flow_id
    pkt.msg_packets = qp.n_packets
    pkt.src = src
    pkt.dst = dst
    pkt.psn = psn
    pkt.sack_psn = psn
    pkt.size = size
    pkt.payload = payload
    pkt.ecn = False
    pkt.entropy = entropy
    pkt.hash = hash_
    pkt.sent_ps = sent_ps
    pkt.retx = False
    pkt.path_id = -1
    pkt.path_seq = -1
    pkt.ingress = None
    pkt.via = None
    return pkt


def _both(first, second):
    """One ACK hook from two optional ones (the recovery's first)."""
    if first is None or second is None:
        return first if second is None else second

    def both(pkt):
        first(pkt)
        second(pkt)

    return both


cdef class Transmissions:
    """When each outstanding PSN's last transmission left, for a recovery that times each
    transmission (``Recovery.rto_per_packet``, uet-htsim's RTO; made for such queue pairs only):
    one slot per PSN from ``base`` to the highest sent, -1 once a NACK answered it or it timed
    out (an ACKed PSN is recognised by the SACK, or by ``snd_una`` passing it). The slots below
    ``snd_una`` are dropped at the next send, so the memory follows what is outstanding. The
    timer looks for the oldest unanswered transmission only when it fires (about once per RTO),
    so an ACK costs nothing here."""

    cdef int64_t base
    cdef cdeque[int64_t] sent_ps

    def __cinit__(self):
        self.base = 0

    cdef inline void sent(self, int64_t psn, int64_t now, int64_t snd_una):
        while self.base < snd_una and not self.sent_ps.empty():
            self.sent_ps.pop_front()
            self.base += 1
        if psn - self.base == <int64_t>self.sent_ps.size():
            self.sent_ps.push_back(now)  # a new PSN (the slots end at the highest sent)
        else:
            self.sent_ps[psn - self.base] = now

    cdef inline void answered(self, int64_t psn):
        if self.base <= psn < self.base + <int64_t>self.sent_ps.size():
            self.sent_ps[psn - self.base] = -1

    cdef int64_t oldest(self, int64_t snd_una, CumulativeSack sack, int64_t* psn) except -2:
        """The send time of the oldest unanswered transmission (its PSN in ``psn``), -1 if none."""
        cdef int64_t p, t, best = -1
        cdef int64_t end = self.base + <int64_t>self.sent_ps.size()
        for p in range(max(snd_una, self.base), end):
            t = self.sent_ps[p - self.base]
            if t >= 0 and (best < 0 or t < best) and (sack is None or not sack.holds(p)):
                best = t
                psn[0] = p
        return best


cdef class SenderKernel  # core/sender_kernels.pxi
cdef class CcKernel  # core/cc_kernel.pxi
cdef class CumulativeSack  # core/receiver.pxi


cdef class QueuePair:
    """Segments one message into PSN-numbered packets, paces them at the congestion control's
    rate, keeps the PSN bookkeeping (``snd_una``, ``snd_nxt``, ``max_sent``, the resend queue)
    and processes ACKs; what NACKs and timeouts do is the recovery mode's
    (``spraylab.transport.recovery``), rate and window the congestion control's
    (``spraylab.transport.cc``). Both are chosen by name from the transport settings, and the
    queue pair builds its recovery's receiver (``rx``) at the destination.

    ``psn_window`` caps ``next PSN - snd_una`` (a scheme's bound, DFS's B);
    ``window_packets`` caps it too (``transport.window``, or the congestion control's window).
    ``cwnd_bytes`` is a congestion window in bytes over :meth:`inflight_bytes` instead (NSCC's),
    retransmissions included; ``NO_WINDOW`` (the default) turns it off.
    ``lb`` is the sender-side load balancer, or None; it sees this object as a
    :class:`~spraylab.transport.view.SenderView`. A built-in scheme sets ``lb_kernel`` too: its
    compiled per-packet hooks, called instead of ``lb.entropy`` and ``lb.on_ack``; a scheme
    that does not override ``on_ack`` is not called per ACK. Likewise ``cc_kernel`` is the
    congestion control when it is a compiled one (``CcKernel``, core/cc_kernel.pxi): its C
    hooks are called instead of the control's Python methods.

    The optional hooks of the recovery and the congestion control are bound once here (None
    when a part does not override them), so per packet the core pays one test per hook it
    does not use."""

    cdef public object net, spec, rx, recovery, cc, lb_state, retx_queue, drops_by_cause
    cdef object _lb, _lb_on_ack
    cdef public SenderKernel lb_kernel
    cdef public CcKernel cc_kernel  # the congestion control, when it runs compiled (or None)
    cdef public CumulativeSack sack  # the recovery's SACK view, updated per ACK (or None)
    cdef public object line_rate_bps, drop_hook
    cdef public Simulator sim
    cdef public Nic nic
    cdef public int64_t flow_id, src, dst, n_packets, mtu, last_payload, full_wire_bytes, last_wire_bytes
    cdef public double rate_bps, paced_ps_per_byte
    cdef double line_rate_f  # line_rate_bps as a double (exact: rates are below 2^53 bit/s)
    cdef public int64_t next_send_ps, snd_una, snd_nxt, max_sent, entropy
    cdef public int64_t psn_window, window_packets, window_cap_packets, cwnd_bytes
    cdef public uint64_t flow_hash
    cdef public bint in_sched, sender_done, rto_armed
    cdef public int64_t start_ps, acked_ps, last_progress_ps, rto_ps
    cdef public int64_t sent_packets, retx_packets, nacks_received, timeouts, trimmed_packets
    cdef public bint nack_names_psn  # the recovery's NACKs name the PSN to resend in sack_psn
    # The recovery times each transmission (Recovery.rto_per_packet, uet-htsim's RTO); None
    # for a recovery that times the flow's progress.
    cdef Transmissions _unanswered
    cdef object _rto_cb, _ack_hook, _skip_resend, _on_resent, _cc_sent, _recovery_nack
    cdef object _cc_nack, _cc_timeout

    def __init__(self, net, spec, Nic nic, params, line_rate_bps) -> None:
        from spraylab.net.framing import data_wire_bytes
        from spraylab.transport.cc.base import CONGESTION_CONTROLS, CongestionControl
        from spraylab.transport.recovery.base import RECOVERIES, Recovery
        from spraylab.transport.registry import optional_hook

        self.net = net
        self.sim = net.sim
        self.spec = spec
        self.flow_id = spec.flow_id
        self.src = spec.src
        self.dst = spec.dst
        self.mtu = params.mtu_bytes
        self.n_packets = max(1, -(-spec.size_bytes // self.mtu))
        if self.n_packets > MAX_PACKETS or self.flow_id > MAX_PACKETS:  # packet.pxi: 32-bit fields
            raise ValueError(
                f"flow {self.flow_id}: {self.n_packets} packets; a flow id and a message's packets "
                f"must be at most 2**31 - 1"
            )
        self.last_payload = spec.size_bytes - (self.n_packets - 1) * self.mtu
        self.full_wire_bytes = data_wire_bytes(self.mtu)
        self.last_wire_bytes = data_wire_bytes(self.last_payload)
        self.nic = nic
        self.line_rate_bps = line_rate_bps
        self.line_rate_f = float(line_rate_bps)
        self.rate_bps = float(line_rate_bps)
        self.paced_ps_per_byte = 0.0  # 0: line rate, no pacing beyond the NIC port
        self.next_send_ps = 0
        self.snd_una = 0
        self.snd_nxt = 0
        self.max_sent = 0
        self.retx_queue = deque()
        self.entropy = net.flow_rng.getrandbits(16)
        self.flow_hash = c_packet_hash(self.flow_id, self.entropy)  # the header hash on that entropy
        self.psn_window = NO_WINDOW
        self.window_cap_packets = self._window_cap(net, params.window_bytes, line_rate_bps)
        self.window_packets = self.window_cap_packets
        self.cwnd_bytes = NO_WINDOW
        self._lb = self._lb_on_ack = None
        self.lb_kernel = None
        self.sack = None
        self.lb_state = None
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
        self.trimmed_packets = 0  # this flow's data packets trimmed to their header (switch.trimming)
        self.drops_by_cause = no_drops()  # this flow's packets (data and control) lost, by cause
        self._rto_cb = self._on_rto
        # The parts, in dependency order: the receiver reads the congestion control's and the
        # recovery's traits from the settings, the recovery may keep references into its receiver.
        cc = CONGESTION_CONTROLS.get(params.cc)(self, params, line_rate_bps)
        self.cc = cc
        recovery_cls = RECOVERIES.get(params.recovery)
        self.rx = recovery_cls.receiver(self, net.hosts[self.dst].route[self.src], params)
        recovery = recovery_cls(self, params)
        self.recovery = recovery
        self._recovery_nack = recovery.on_nack
        self.nack_names_psn = recovery_cls.nack_names_psn
        self._unanswered = Transmissions() if recovery_cls.rto_per_packet else None
        self._skip_resend = optional_hook(recovery, "skip_resend", Recovery)
        self._on_resent = optional_hook(recovery, "on_resent", Recovery)
        self.drop_hook = optional_hook(recovery, "on_drop", Recovery)
        recovery_ack = optional_hook(recovery, "on_ack", Recovery)
        if runs_compiled(cc):
            # A compiled control: its C hooks, called where the Python ones would be.
            self.cc_kernel = cc
            self._cc_sent = self._cc_nack = self._cc_timeout = None
            self._ack_hook = recovery_ack
        else:
            self.cc_kernel = None
            self._cc_sent = optional_hook(cc, "on_sent", CongestionControl)
            self._cc_nack = optional_hook(cc, "on_nack", CongestionControl)
            self._cc_timeout = optional_hook(cc, "on_timeout", CongestionControl)
            self._ack_hook = _both(recovery_ack, optional_hook(cc, "on_ack", CongestionControl))

    def _window_cap(self, net, window, line_rate_bps) -> int:
        """``transport.window`` in packets: the full-size frames that fit in its bytes, or for
        "bdp" the frames that fill one base round trip of this flow's route at line rate."""
        from spraylab.net.routes import trace_route

        if window == "bdp":
            rtt_ps = trace_route(net, self.src, self.dst).base_rtt_ps(self.mtu)
            return max(1, -(-int(line_rate_bps * rtt_ps / PS_BITS) // self.full_wire_bytes))
        if not window:
            return NO_WINDOW
        return max(1, int(window) // self.full_wire_bytes)

    @property
    def lb(self):
        return self._lb

    @lb.setter
    def lb(self, lb) -> None:
        from spraylab.lb.base import LoadBalancer
        from spraylab.transport.registry import optional_hook

        self._lb = lb
        self._lb_on_ack = None if lb is None else optional_hook(lb, "on_ack", LoadBalancer)

    # --- rate and window (the congestion control sets them) -------------------------------
    cpdef set_rate(self, double rate_bps):
        self.rate_bps = rate_bps
        self.paced_ps_per_byte = 0.0 if rate_bps >= self.line_rate_f else PS_BITS_F / rate_bps

    cpdef set_window(self, int64_t packets):
        """Cap ``next PSN - snd_una`` at ``packets`` (at least 1; never above transport.window)."""
        self.window_packets = min(max(1, packets), self.window_cap_packets)
        if self.start_ps >= 0 and not self.sender_done:
            self.kick()

    cpdef set_cwnd_bytes(self, int64_t cwnd_bytes):
        """Send only while :meth:`inflight_bytes` plus one full frame fits in ``cwnd_bytes``
        (``NO_WINDOW``: no byte window). The queue pair rechecks after every ACK, NACK and
        timeout; a change made elsewhere kicks it here."""
        self.cwnd_bytes = cwnd_bytes
        if self.start_ps >= 0 and not self.sender_done:
            self.kick()

    cpdef int64_t inflight_bytes(self):
        """Bytes in flight as the sender knows them, in full wire frames: PSNs sent and neither
        SACKed nor queued for a resend (declared lost by a NACK or a timeout), as uet-htsim's
        UecSrc counts ``_in_flight``; without a SACK view (go-back-N, selective repeat) the PSNs
        between ``snd_una`` and ``snd_nxt``. A PSN with two copies out counts once."""
        cdef int64_t packets
        if self.sack is not None:
            packets = self.max_sent - self.sack.count - len(self.retx_queue)
        else:
            packets = self.snd_nxt - self.snd_una
        return packets * self.full_wire_bytes if packets > 0 else 0

    cdef inline bint _cwnd_blocks(self):
        """A byte window is set and leaves no room for one more full frame."""
        return (
            self.cwnd_bytes < NO_WINDOW
            and self.inflight_bytes() + self.full_wire_bytes > self.cwnd_bytes
        )

    # --- sending ---------------------------------------------------------------------
    def start(self) -> None:
        self.start_ps = self.sim.now
        self.last_progress_ps = self.sim.now
        if self._lb is not None:
            self._lb.on_flow_start(self)
        self.nic.activate(self)

    cpdef bint has_work(self):
        if self._cwnd_blocks():
            return False
        if self.retx_queue:
            return True
        cdef int64_t nxt = self.snd_nxt
        return (
            nxt < self.n_packets
            and nxt < self.snd_una + self.psn_window
            and nxt - self.snd_una < self.window_packets
        )

    cpdef kick(self):
        """Hand the queue pair to its NIC if it can send and is not scheduled yet."""
        if not self.in_sched and self.has_work():
            self.nic.activate(self)

    cpdef Packet next_packet(self, int64_t now):
        """The next packet to put on the wire, or None when blocked (window) or done."""
        cdef int64_t psn = 0
        cdef int64_t payload, size, entropy
        cdef uint64_t h
        cdef bint resend = False
        if self._cwnd_blocks():
            return None
        retx_queue = self.retx_queue
        while retx_queue:
            psn = retx_queue.popleft()
            if psn >= self.snd_una:
                skip = self._skip_resend
                if skip is None or not skip(psn):
                    resend = True
                    break
        if not resend:
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
        if self.lb_kernel is not None:
            entropy = self.lb_kernel.entropy(self, psn)
        elif self._lb is None:
            entropy = self.entropy
        else:
            entropy = self._lb.entropy(self, psn)
        h = self.flow_hash if entropy == self.entropy else c_packet_hash(self.flow_id, entropy)
        cdef Packet pkt = new_packet(DATA, self, self.src, self.dst, psn, size, payload, entropy, h, now)
        if psn < self.max_sent:
            pkt.retx = True
            self.retx_packets += 1
            resent = self._on_resent
            if resent is not None:
                resent(psn)
        else:
            self.max_sent = psn + 1
        if self._unanswered is not None:
            self._unanswered.sent(psn, now, self.snd_una)
        self.sent_packets += 1
        if self.cwnd_bytes < NO_WINDOW and (
            psn == self.n_packets - 1
            or self.inflight_bytes() + self.full_wire_bytes >= self.cwnd_bytes
        ):
            # uet-htsim's UecSrc sets "ar" when its window is full after this packet or the
            # message has no more: the receiver ACKs it at once, so a window below the ACK
            # threshold (ack_every_bytes) still gets its ACK clock.
            pkt.ack_request = True
        if self.paced_ps_per_byte:
            self.next_send_ps = now + <int64_t>(<double>size * self.paced_ps_per_byte)
        if self.cc_kernel is not None:
            self.cc_kernel.c_on_sent(size)
        else:
            cc_sent = self._cc_sent
            if cc_sent is not None:
                cc_sent(size)
        if not self.rto_armed:
            self.rto_armed = True
            self.sim.after(self.rto_ps, self._rto_cb)
        self.net.injected_packets += 1
        return pkt

    # --- sender view (spraylab.transport.view) ---------------------------------------------
    def outstanding(self) -> range:
        """PSNs sent and not cumulatively acknowledged."""
        return range(self.snd_una, self.max_sent)

    def queued_resends(self) -> set:
        return set(self.retx_queue)

    def resend(self, psns) -> None:
        """Queue ``psns`` for retransmission (a sender scheme's own loss detection uses this)."""
        self.retx_queue.extend(psns)
        self.kick()

    # --- feedback --------------------------------------------------------------------
    cpdef advance(self, int64_t cum_psn, int64_t now):
        """Apply a cumulative acknowledgement of every PSN below ``cum_psn``."""
        if cum_psn > self.snd_una:
            self.snd_una = cum_psn
            self.last_progress_ps = now
            if self.snd_nxt < cum_psn:
                self.snd_nxt = cum_psn
            if cum_psn >= self.n_packets and not self.sender_done:
                self.sender_done = True
                self.acked_ps = now
                self.net.on_sender_done(self)

    cpdef on_ack(self, Packet pkt):
        if self.sack is not None:
            self.sack.heard(pkt.sack_psn)
        hook = self._ack_hook
        if hook is not None:
            hook(pkt)
        if self.cc_kernel is not None:
            self.cc_kernel.c_on_ack(pkt)  # after the recovery's hook, as _both orders them
        cdef int64_t cum_psn = pkt.psn
        if cum_psn > self.snd_una:
            self.advance(cum_psn, self.sim.now)
        if self.lb_kernel is not None:
            self.lb_kernel.on_ack(self, pkt)
        elif self._lb_on_ack is not None:
            self._lb_on_ack(self, pkt)
        if not self.sender_done and not self.in_sched and self.has_work():
            self.nic.activate(self)

    cpdef on_nack(self, Packet pkt):
        cdef int64_t now = self.sim.now
        self.nacks_received += 1
        cdef int64_t psn = pkt.psn
        self.advance(psn, now)
        if self.sack is not None and psn > 0:
            self.sack.covered(psn)
        if self._unanswered is not None and self.nack_names_psn:
            self._unanswered.answered(pkt.sack_psn)  # its transmission is answered
        # A scheme may take over the one retransmission a selective NACK asks for.
        claimed = self._lb is not None and self._lb.on_nack(self, pkt) and self.recovery.selective
        if self.sender_done:
            return
        if self.cc_kernel is not None:
            self.cc_kernel.c_on_nack(pkt)
        else:
            cc_nack = self._cc_nack
            if cc_nack is not None:
                cc_nack(pkt)
        if not claimed:
            self._recovery_nack(pkt.sack_psn if self.nack_names_psn else psn)
        if not self.in_sched and self.has_work():
            self.nic.activate(self)

    cpdef on_cnp(self, Packet pkt):
        if self.sender_done:
            return
        if self.cc_kernel is not None:
            self.cc_kernel.c_on_cnp(self.sim.now)
        else:
            self.cc.on_cnp(self.sim.now)

    def _on_rto(self, _) -> None:
        self.rto_armed = False
        if self.sender_done:
            return
        if self._unanswered is not None:
            self._packet_rto(self.sim.now)
            return
        now = self.sim.now
        if self.snd_una >= self.max_sent:
            return  # nothing outstanding: re-armed by the next send
        deadline = self.last_progress_ps + self.rto_ps
        if now < deadline:
            self.rto_armed = True
            self.sim.at(deadline, self._rto_cb)
            return
        self.last_progress_ps = now
        self.recovery.on_timeout()
        self._timed_out()
        self.rto_armed = True
        self.sim.after(self.rto_ps, self._rto_cb)
        self.kick()

    cdef _timed_out(self):
        """One timeout, after the recovery acted on it: counted, and heard by the congestion
        control and the scheme."""
        self.timeouts += 1
        if self.cc_kernel is not None:
            self.cc_kernel.c_on_timeout()
        elif self._cc_timeout is not None:
            self._cc_timeout()
        if self._lb is not None:
            self._lb.on_timeout(self)

    cdef _packet_rto(self, int64_t now):
        """uet-htsim's RTO (``UecSrc::rtxTimerExpired``): the timer runs for the oldest
        transmission not yet answered by an ACK or a NACK; when it has been out ``rto_ps``, that
        PSN alone times out (the recovery resends it, the congestion control and the scheme
        hear of one timeout) and the timer moves on to the next oldest."""
        cdef Transmissions unanswered = self._unanswered
        cdef int64_t psn = -1
        cdef int64_t sent_ps = unanswered.oldest(self.snd_una, self.sack, &psn)
        if sent_ps < 0:
            return  # nothing unanswered: armed again by the next send
        if now < sent_ps + self.rto_ps:
            self.rto_armed = True
            self.sim.at(sent_ps + self.rto_ps, self._rto_cb)
            return
        unanswered.answered(psn)
        self.recovery.on_packet_timeout(psn)
        self._timed_out()
        sent_ps = unanswered.oldest(self.snd_una, self.sack, &psn)
        if sent_ps >= 0:  # the next oldest, at once if it is overdue too
            self.rto_armed = True
            self.sim.at(max(now, sent_ps + self.rto_ps), self._rto_cb)
        self.kick()
