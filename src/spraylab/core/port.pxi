# Egress ports: a FIFO queue feeding one direction of a link (see spraylab.net.port for the model).
#
# * Port (lossy): the queue is FIFO and never paused, so a packet's departure time is known at
#   enqueue, max(now, busy_until) + size * ps_per_byte. One event per hop (the arrival at the
#   far end) and the backlog is (busy_until - now) / ps_per_byte, with no dequeue event at all.
# * PfcPort (lossless): a real queue served by "transmission done" events, because a PFC PAUSE
#   can stop it at any time. Dequeues release the ingress accounting of the switch.
#
# In-band telemetry (HPCC): a port with ``int_port_id >= 0`` (switch ports of a network whose
# congestion control reads INT, ``spraylab.net.telemetry``) stamps every data packet that leaves
# it as the HPCC ns-3 switch does at dequeue: its queue in bytes behind the packet when the
# packet starts transmission (the data that arrived before that instant: what arrives in the
# same picosecond counts as behind it on neither port model, so the event order within one
# instant decides nothing), the bytes the port transmitted before it, that start time and the
# port's rate. A lossless port dequeues for real and stamps there. A lossy port knows the start
# time and the bytes before the packet at enqueue (FIFO: everything accepted before it has left
# by then); the queue behind it is only known once its start has passed, so it is filled in
# when the packet arrives at the far end, from the same send log dequeue marking reads
# (``busy_log``). Elsewhere ``int_port_id`` is -1 and the data path pays one test per packet.
#
# Serialization times are exact integers: a link's rate is whole bits per second, and ``size``
# bytes take ``floor(size x 8 x 10^12 / rate_bps)`` ps, computed as ``size x per_byte_ps +
# floor(size x per_byte_rem / rate_bps)`` (the quotient and remainder of 8 x 10^12 / rate_bps),
# the product in 128 bits. For the usual rates the remainder is 0 (400G: 20 ps per byte) and this
# is one multiplication; for others (NVLink's 7.2 Tb/s: 10/9 ps per byte) every frame is the
# exact floor whatever the compiler, where a double product could land on either side of an
# integer. A queue's length in bytes (``backlog / per_byte``) stays a double division.


cdef extern from *:
    ctypedef long long int128_t "__int128"  # gcc's 128-bit integer: size x remainder never overflows


cdef inline int64_t ser_ps(Port port, int64_t size) noexcept:
    """Serialization time of ``size`` bytes on ``port``, exact (see the comment above)."""
    if port.per_byte_rem == 0:
        return size * port.per_byte_ps
    return size * port.per_byte_ps + <int64_t>((<int128_t>size * port.per_byte_rem) // port.rate_int)


cdef class Port:
    """Lossy FIFO egress port.

    ``receive_at_peer`` is what a packet arriving at the far end goes through: the link's
    delivery stages (``spraylab.net.link``), compiled into one callable whenever they change.
    A packet keeps the stages it left under (a later change, e.g. a failure, does not reach
    the wire behind it), except a data packet that queued, whose arrival looks them up when it
    arrives (``arrive_queued``). When the stages are only the peer switch's forwarding, the
    core calls it directly (``fast_switch``)."""

    cdef public Simulator sim
    cdef public object name, owner, peer_owner, link, rate_bps, rng, waiter, monitor
    cdef public SharedBuffer buffer  # the switch's shared buffer, None at hosts
    cdef public int64_t delay_ps, busy_until, kmin, kmax, marks_pending
    cdef public int64_t int_port_id  # >= 0: stamps INT into data packets (see above); -1: off
    cdef public bint up, is_uplink, paused, mark_at_dequeue
    cdef public double pmax, mark_slope, kmin_ps
    cdef double per_byte
    cdef object per_byte_value
    cdef int64_t rate_int, per_byte_ps, per_byte_rem  # exact serialization (see above)
    # Dequeue marking and INT on a lossy port (``arrive_queued``): (enqueue time, busy_until
    # after it) of every send since the oldest data packet still to be judged or stamped.
    # Made at its first use (``_busy_log``; NULL until then: the allocation zeroes it): an
    # empty std::deque already holds its map and a 512-byte node, 20 MB over the 32,768 ports
    # of an 8,192-host leaf-spine, where most ports never use it (docs/performance.md, Memory).
    cdef cdeque[pair[int64_t, int64_t]]* busy_log
    cdef object _receive
    cdef Switch fast_switch
    cdef Host fast_host
    cdef public int64_t generation  # of the delivery stages; bumped at every change
    cdef dict _old_receivers
    # counters
    cdef public int64_t tx_bytes, tx_packets, drops, ecn_marks, max_queue_bytes
    cdef public int64_t pauses_received, paused_ps
    cdef public object drops_by_cause
    # Packet trimming (switch.trimming): a data packet the buffer refuses is cut to this many
    # link bytes and sent on as a header instead of dropped; 0 = off (drop).
    cdef public int64_t trim_bytes, trimmed_packets
    # With trimming on: the last data packet queued here and its departure, the packet a full
    # queue may trim instead of the arriving one (``_trim_tail``).
    cdef Packet tail_pkt
    cdef int64_t tail_depart
    # The chance a full queue trims its tail instead of the arriving packet (0: always the
    # arriving one); the wiring sets uet-htsim's 0.5 (spraylab.net.wiring, TRIM_TAIL_FRACTION).
    cdef public double trim_tail_fraction

    def __init__(self, Simulator sim, name, owner, rate_bps, int64_t delay_ps, ecn, rng) -> None:
        self.sim = sim
        self.name = name
        self.owner = owner
        self.peer_owner = None
        self._receive = None
        self.fast_switch = None
        self.fast_host = None
        self.generation = 0
        self._old_receivers = {}
        self.link = None  # its delivery stages (spraylab.net.link), which set receive_at_peer
        self.delay_ps = delay_ps
        self.busy_until = 0
        self.up = True
        self.mark_at_dequeue = False
        self.int_port_id = -1
        if ecn is not None and ecn.enabled:
            self.kmin = ecn.kmin_bytes
            self.kmax = ecn.kmax_bytes
            self.pmax = ecn.pmax
            self.mark_at_dequeue = ecn.mark_at == "dequeue"
        else:
            self.kmin = self.kmax = <int64_t>1 << 62
            self.pmax = 0.0
        self.set_rate(rate_bps)
        self.marks_pending = 0
        self.monitor = None
        span = self.kmax - self.kmin
        self.mark_slope = self.pmax / span if span > 0 else 0.0
        self.rng = rng
        self.buffer = None
        self.is_uplink = False
        self.paused = False
        self.waiter = None
        self.tx_bytes = 0
        self.tx_packets = 0
        self.drops = 0  # every cause; ToR programs compare it around a send to spot their own drops
        self.drops_by_cause = no_drops()
        self.ecn_marks = 0
        self.max_queue_bytes = 0
        self.pauses_received = 0
        self.paused_ps = 0
        self.trim_bytes = 0
        self.trimmed_packets = 0
        self.tail_pkt = None
        self.tail_depart = -1
        self.trim_tail_fraction = 0.0

    def __dealloc__(self):
        del self.busy_log

    cdef inline cdeque[pair[int64_t, int64_t]]* _busy_log(self) except NULL:
        if self.busy_log == NULL:
            self.busy_log = new cdeque[pair[int64_t, int64_t]]()
        return self.busy_log

    # --- configuration --------------------------------------------------------------------
    @property
    def ps_per_byte(self):
        """Serialization time of one byte (an int when exact, as ``rates.ps_per_byte``)."""
        return self.per_byte_value

    @property
    def receive_at_peer(self):
        return self._receive

    @receive_at_peer.setter
    def receive_at_peer(self, receive) -> None:
        if self._receive is not None:
            self._old_receivers[self.generation] = self._receive
            self.generation += 1
        self._receive = receive
        self.fast_switch = _bound_to(receive, Switch, "forward")
        self.fast_host = _bound_to(receive, Host, "receive")

    def connect(self, peer_owner, receive) -> None:
        self.peer_owner = peer_owner
        self.receive_at_peer = receive

    def set_rate(self, rate_bps) -> None:
        if rate_bps != int(rate_bps) or rate_bps < 1:
            raise ValueError(f"link rate {rate_bps!r} bps: a link's rate is a whole number of bits per second >= 1")
        self.rate_bps = rate_bps
        self.rate_int = int(rate_bps)
        self.per_byte_ps, self.per_byte_rem = divmod(PS_BITS, self.rate_int)  # PS_BITS: core/qp.pxi
        self.per_byte_value = ps_per_byte(rate_bps)
        self.per_byte = self.per_byte_value
        self.kmin_ps = kmin_span_ps(self.kmin, self.per_byte_value)

    def fail(self) -> None:
        """The link goes down: everything sent into it from now on is lost (counted as drops),
        and so is every data packet still queued (its arrival looks the link's stages up when
        it arrives; a lossless port flushes its queue, ``PfcPort.link_down``). Packets that
        found the port idle and control frames already on the wire (at most one serialization
        plus the propagation delay) still arrive."""
        self.link.fail()

    def link_down(self) -> None:
        """The link just went down (``Link.fail``). A lossy port keeps serializing what it is
        given into the dead link (lost there) until routing converges: nothing to do."""

    cpdef int64_t queue_bytes(self):
        cdef int64_t backlog = self.busy_until - self.sim.now
        return <int64_t>(backlog / self.per_byte) if backlog > 0 else 0

    cdef bint _mark(self, double backlog) except -1:
        if backlog >= self.kmax:
            return True
        return self.rng.random() < (backlog - self.kmin) * self.mark_slope

    cdef int _int_stamp(self, Packet pkt, int64_t start_ps, int64_t qlen_bytes) except -2:
        """Append this port's INT entry to ``pkt``'s record (made at its first stamped hop);
        returns the entry's index (-1: the record is full). ``tx_bytes`` is read before the
        packet's own bytes are counted."""
        cdef IntRecord record
        if pkt.int_record is None:
            record = IntRecord.__new__(IntRecord)
            pkt.int_record = record
        else:
            record = <IntRecord>pkt.int_record
        return record.push(self.int_port_id, qlen_bytes, self.tx_bytes, start_ps, <double>self.rate_bps)

    # --- the hot path ---------------------------------------------------------------------
    cpdef send(self, Packet pkt):
        cdef Simulator sim = self.sim
        cdef int64_t now = sim.now
        cdef int64_t busy = self.busy_until
        cdef int64_t backlog, size, depart
        cdef SharedBuffer buffer = self.buffer
        cdef bint queued = busy > now
        if queued:
            backlog = <int64_t>((busy - now) / self.per_byte)
            if backlog > self.max_queue_bytes:
                self.max_queue_bytes = backlog
            if (
                buffer is not None
                and backlog > buffer.safe_port_bytes
                and not buffer.admits(self, backlog, pkt.size)
            ):
                if self.trim_tail_fraction and pkt.kind == DATA and self._trim_tail(now):
                    # the tail's room goes to the arriving packet, which queues as usual
                    busy = self.busy_until
                    backlog = <int64_t>((busy - now) / self.per_byte)
                elif self.trim_bytes and pkt.kind == DATA:
                    c_trim(pkt, self)
                    self.send_control(pkt)
                    return
                else:
                    c_sim_drop(pkt, BUFFER, self)
                    return
            if (
                backlog > self.kmin
                and not self.mark_at_dequeue
                and pkt.kind == DATA
                and self._mark(backlog)
            ):
                pkt.ecn = True
                self.ecn_marks += 1
        else:
            busy = now
        size = pkt.size
        pkt.via = self
        if buffer is not None:
            buffer.added_bytes += size
        cdef int int_slot = -1
        if self.int_port_id >= 0 and pkt.kind == DATA:
            # starts at ``busy``; the queue behind it then is filled in at its arrival
            int_slot = self._int_stamp(pkt, busy, 0)
        depart = busy + ser_ps(self, size)
        self.busy_until = depart
        self.tx_bytes += size
        self.tx_packets += 1
        # A packet that found the port idle starts at once with nothing behind it: never marked
        # at dequeue, stamped with an empty queue, and no later packet's judgement needs its
        # log entry.
        if queued and pkt.kind == DATA:
            if self.trim_tail_fraction:
                self.tail_pkt = pkt
                self.tail_depart = depart
            if self.mark_at_dequeue or self.int_port_id >= 0:
                self._busy_log().push_back(pair[int64_t, int64_t](now, depart))
                self.marks_pending += 1
                if int_slot >= 0:
                    (<IntRecord>pkt.int_record).pending = int_slot
            sim.push(depart + self.delay_ps, EV_ARRIVE_QUEUED, self, pkt, 0)
        else:
            sim.push(depart + self.delay_ps, EV_ARRIVE, self, pkt, self.generation)

    cdef bint _trim_tail(self, int64_t now) except -1:
        """A data packet found the queue full: with chance ``trim_tail_fraction`` (uet-htsim's
        0.5) trim the last data packet queued instead, if it is still the queue's tail and has not started, and let the
        arriving one take its room (uet-htsim's ``CompositeQueue::receivePacket``: ``drand() <
        0.5`` boots the queued tail to a header). When packets of several flows reach a full
        queue at the same instants (line-rate starts on paths of one length) this is what
        spreads the trims over them: always trimming the arriving packet, the same flows lose
        every time. The header keeps its place at the tail (htsim moves it to its header queue,
        ahead of the data) and its bytes shrink to a header's there."""
        cdef Packet tail = self.tail_pkt
        cdef int64_t full
        if tail is None or tail.kind != DATA or self.tail_depart != self.busy_until:
            return False
        full = tail.size
        if self.tail_depart - ser_ps(self, full) <= now or self.rng.random() >= self.trim_tail_fraction:
            return False
        c_trim(tail, self)
        self.busy_until -= ser_ps(self, full) - ser_ps(self, tail.size)
        self.tx_bytes -= full - tail.size
        self.tail_pkt = None
        return True

    cdef int arrive(self, Packet pkt, int64_t generation) except -1:
        """A packet reaches the far end, through the stages it left under."""
        if generation != self.generation:
            self._old_receivers[generation](pkt)
            return 0
        return self.deliver(pkt)

    cdef inline int deliver(self, Packet pkt) except -1:
        """Through the link's current stages: the peer's compiled entry point when they are
        only that, else the compiled callable."""
        if self.fast_switch is not None:
            self.fast_switch.forward(pkt)
        elif self.fast_host is not None:
            self.fast_host.receive(pkt)
        else:
            self._receive(pkt)
        return 0

    cdef int arrive_queued(self, Packet pkt) except -1:
        """A data packet that queued here reaches the far end, through the link's stages as
        they are now (a link that failed or started losing while it waited treats it as it
        treats every later packet). On a dequeue-marking port it is first judged by the queue
        that was behind it when it started transmission: every byte sent after it and before
        that instant (a send at the very instant it starts comes after it, as on a lossless
        port), ``busy_until`` as of then minus its own departure. The log holds ``busy_until``
        after each send, and its sends before that instant have all happened by now. A port
        that stamps INT writes the same queue into the packet's entry."""
        cdef int64_t depart
        cdef double start, behind
        cdef bint stamps = self.int_port_id >= 0
        cdef IntRecord record
        cdef cdeque[pair[int64_t, int64_t]]* log
        if self.mark_at_dequeue or stamps:
            log = self._busy_log()
            depart = self.sim.now - self.delay_ps
            self.marks_pending -= 1
            # busy_until never decreases, so today's bounds the queue behind the packet at its
            # start: below Kmin there is nothing to judge, and the log is searched (and trimmed:
            # each entry is popped once) only when it is or when it has grown long. (``kmin_ps``
            # is Kmin's serialization time or just below it: entering the search changes no
            # decision.) INT needs the queue whatever its size.
            if stamps or self.busy_until - depart > self.kmin_ps or log.size() > 32:
                start = <double>(depart - ser_ps(self, pkt.size))
                while log.size() > 1 and <double>deref(log)[1].first < start:
                    log.pop_front()
                behind = (deref(log)[0].second - depart) / self.per_byte
                if stamps and pkt.int_record is not None:
                    record = <IntRecord>pkt.int_record
                    if record.pending >= 0:
                        record.qlen_bytes[record.pending] = <int64_t>behind if behind > 0 else 0
                        record.pending = -1
                # a header trimmed while it queued (``_trim_tail``) is never marked here
                if self.mark_at_dequeue and pkt.kind == DATA and behind > self.kmin and self._mark(behind):
                    pkt.ecn = True
                    self.ecn_marks += 1
            if not self.marks_pending:
                log.clear()
        return self.deliver(pkt)

    cpdef send_control(self, Packet pkt):
        """Strict priority over data: a control frame (ACK/NACK/CNP, each its own size) leaves
        after its own serialization (preempting the data backlog at packet granularity is
        ignored) and its time is charged to the data queue so link capacity is conserved."""
        cdef Simulator sim = self.sim
        cdef int64_t now = sim.now
        cdef int64_t size = pkt.size
        cdef int64_t ser, busy
        pkt.via = self
        if self.buffer is not None:
            self.buffer.added_bytes += size
        ser = ser_ps(self, size)
        busy = self.busy_until
        self.busy_until = (busy if busy > now else now) + ser
        if self.marks_pending:
            self._busy_log().push_back(pair[int64_t, int64_t](now, self.busy_until))
        self.tx_bytes += size
        self.tx_packets += 1
        sim.push(now + ser + self.delay_ps, EV_ARRIVE, self, pkt, self.generation)


cdef class PfcPort(Port):
    """Lossless egress port with a real queue, PFC PAUSE/RESUME and a strict-priority
    control queue. Never drops for lack of buffer (PFC headroom is assumed sufficient)."""

    cdef public object data_queue, ctrl_queue  # collections.deque of Packet
    cdef public int64_t queued_bytes, paused_since
    # INT: the data bytes queued at the instant ``int_arrival_ps`` (not behind a packet that
    # starts in that same instant)
    cdef int64_t int_arrival_ps, int_arrival_bytes
    cdef public bint transmitting

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.data_queue = deque()
        self.ctrl_queue = deque()
        self.queued_bytes = 0
        self.transmitting = False
        self.paused_since = 0
        self.int_arrival_ps = -1
        self.int_arrival_bytes = 0

    cpdef int64_t queue_bytes(self):
        return self.queued_bytes

    cpdef send(self, Packet pkt):
        cdef int64_t backlog = self.queued_bytes
        if backlog > self.kmin and not self.mark_at_dequeue and pkt.kind == DATA and self._mark(backlog):
            pkt.ecn = True
            self.ecn_marks += 1
        pkt.via = self
        if self.int_port_id >= 0:
            if self.int_arrival_ps != self.sim.now:
                self.int_arrival_ps = self.sim.now
                self.int_arrival_bytes = 0
            self.int_arrival_bytes += pkt.size
        self.data_queue.append(pkt)
        backlog += pkt.size
        self.queued_bytes = backlog
        if backlog > self.max_queue_bytes:
            self.max_queue_bytes = backlog
        if not self.transmitting:
            self._start_next()

    cpdef send_control(self, Packet pkt):
        pkt.via = self
        self.ctrl_queue.append(pkt)
        if not self.transmitting:
            self._start_next()

    cdef int _start_next(self) except -1:
        cdef Packet pkt
        cdef IngressCounter ingress
        cdef int64_t behind
        if self.ctrl_queue:
            pkt = self.ctrl_queue.popleft()
        elif self.data_queue and not self.paused:
            pkt = self.data_queue.popleft()
            self.queued_bytes -= pkt.size
            if self.mark_at_dequeue and self.queued_bytes > self.kmin and self._mark(self.queued_bytes):
                pkt.ecn = True
                self.ecn_marks += 1
            if pkt.ingress is not None:
                ingress = pkt.ingress
                pkt.ingress = None
                ingress.release(pkt.size)
            if self.int_port_id >= 0:
                # FIFO: what arrived in this instant is all behind ``pkt`` (with ``pkt`` itself
                # when it arrived now too, to an empty queue: nothing is behind it, as on a
                # lossy port)
                behind = self.queued_bytes
                if self.int_arrival_ps == self.sim.now:
                    behind = max(0, behind - self.int_arrival_bytes)
                self._int_stamp(pkt, self.sim.now, behind)
        else:
            self.transmitting = False
            return 0
        cdef Simulator sim = self.sim
        cdef int64_t now = sim.now
        self.transmitting = True
        cdef int64_t done = now + ser_ps(self, pkt.size)
        self.busy_until = done
        self.tx_bytes += pkt.size
        self.tx_packets += 1
        sim.push(done + self.delay_ps, EV_ARRIVE, self, pkt, self.generation)
        sim.push(done, EV_TX_DONE, self, None, 0)
        return 0

    cdef int tx_done(self) except -1:
        self._start_next()
        if not self.transmitting and self.waiter is not None:
            waiter, self.waiter = self.waiter, None
            waiter(None)
        return 0

    def link_down(self) -> None:
        """The link just went down: as a real port does, flush the queue (every packet in it is
        lost, ``LINK_DOWN``, and leaves its ingress accounting) and drop the PFC state. The peer
        is gone, so no PAUSE is in force and no RESUME will come (PFC frames cross no down link,
        ``IngressCounter``): kept paused, the port would hold its queue, and through the ingress
        bytes of that queue the ports upstream of it, for good. What routing still sends here
        before it converges is serialized into the dead link and lost there, as on a lossy port."""
        ctrl, self.ctrl_queue = self.ctrl_queue, deque()
        data, self.data_queue = self.data_queue, deque()
        self.queued_bytes = 0
        # drops may make a sender resend at once (ideal recovery); it finds the new, empty queues
        for pkt in ctrl:
            c_sim_drop(pkt, LINK_DOWN, self)
        for pkt in data:
            c_sim_drop(pkt, LINK_DOWN, self)
        self.resume()

    def pause(self, _=None) -> None:
        if not self.paused:
            self.paused = True
            self.pauses_received += 1
            self.paused_since = self.sim.now

    def resume(self, _=None) -> None:
        if self.paused:
            self.paused = False
            self.paused_ps += self.sim.now - self.paused_since
            if not self.transmitting:
                self._start_next()
            if not self.transmitting and self.waiter is not None:
                waiter, self.waiter = self.waiter, None
                waiter(None)


cdef class IngressCounter:
    """PFC accounting for one ingress link of a lossless switch: bytes that arrived on it and
    are still buffered. Above ``xoff`` it PAUSEs the upstream port, below ``xon`` RESUMEs it;
    the frames take the link's propagation delay and, like everything else, do not cross a
    link that is down when they would arrive (a link fails in both directions at once, so
    the upstream port's link stands for the reverse one)."""

    cdef public Simulator sim
    cdef public Port upstream
    cdef public int64_t delay_ps, xoff, xon, bytes, pauses_sent
    cdef public bint pausing
    cdef object _forward
    cdef Switch fast_switch

    def __init__(self, Simulator sim, Port upstream, int64_t xoff, int64_t xon, forward) -> None:
        self.sim = sim
        self.upstream = upstream
        self.delay_ps = upstream.delay_ps
        self.xoff = xoff
        self.xon = xon
        self.bytes = 0
        self.pausing = False
        self.forward = forward
        self.pauses_sent = 0

    @property
    def forward(self):
        return self._forward

    @forward.setter
    def forward(self, forward) -> None:
        self._forward = forward
        self.fast_switch = _bound_to(forward, Switch, "forward")

    cpdef receive(self, Packet pkt):
        if pkt.kind == DATA:
            pkt.ingress = self
            self.bytes += pkt.size
            if self.bytes > self.xoff and not self.pausing:
                self.pausing = True
                self.pauses_sent += 1
                self.sim.after(self.delay_ps, self._pause_arrives)
        if self.fast_switch is not None:
            self.fast_switch.forward(pkt)
        else:
            self._forward(pkt)

    cpdef release(self, int64_t size):
        self.bytes -= size
        if self.pausing and self.bytes <= self.xon:
            self.pausing = False
            self.sim.after(self.delay_ps, self._resume_arrives)

    def _pause_arrives(self, _) -> None:
        if not self.upstream.link.down:
            self.upstream.pause()

    def _resume_arrives(self, _) -> None:
        if not self.upstream.link.down:
            self.upstream.resume()


cdef int c_trim(Packet pkt, Port port) except -1:
    """Packet trimming (uet-htsim's CompositeQueue; NDP, Handley et al., SIGCOMM'17): the
    payload of a data packet that found ``port``'s queue full is cut off and its header
    (``port.trim_bytes`` link bytes, kind TRIMMED) goes on at the priority of control frames,
    which every later hop gives it too (its kind is not DATA). The payload is lost, the header
    is still the same packet in flight, so packet conservation holds as it is; the trim is
    counted for the network, the flow and the port (``check_conservation`` compares them)."""
    pkt.kind = TRIMMED
    pkt.size = port.trim_bytes
    pkt.payload = 0
    port.trimmed_packets += 1
    qp = pkt.qp
    if qp is not None:
        qp.net.trimmed_packets += 1
        qp.trimmed_packets += 1
    return 0


cdef int c_sim_drop(Packet pkt, int cause, Port port) except -1:
    cdef IngressCounter ingress
    if pkt.ingress is not None:
        ingress = pkt.ingress
        pkt.ingress = None
        ingress.release(pkt.size)
    if port is None:
        port = pkt.via
    if port is not None:  # None only for a packet that never left its sender: the check fails
        port.drops += 1
        port.drops_by_cause[cause] += 1
    qp = pkt.qp
    if qp is not None:
        qp.net.drops_by_cause[cause] += 1
        qp.drops_by_cause[cause] += 1
        hook = qp.drop_hook
        if hook is not None:
            hook(pkt)
    return 0


def sim_drop(sim, Packet pkt, int cause, Port port=None) -> None:
    """Every drop goes through here, with its cause (``spraylab.net.drops``): counted for the
    network (the conservation check reads these counters), for the packet's flow and for one
    port: the egress ``port`` where it happened (buffer, link down, random loss) or, for a drop
    inside a node (no route, a ToR program, the receiving RNIC), the port whose link brought the
    packet there (``pkt.via``). So the links table's drop columns add up to the network's, cause
    by cause (``check_conservation``). A recovery mode that watches losses (the ideal
    transport's oracle notice) sees it through ``QueuePair.drop_hook`` (its ``on_drop``; None
    for the other modes, which pay this one attribute test).

    A data packet still counted by a lossless switch's ingress accounting (dropped inside
    the switch: no route, a ToR program's resequencer) leaves the buffer here, so its bytes
    are released: kept, they would never drain and would hold the upstream port paused."""
    c_sim_drop(pkt, cause, port)


cdef object _bound_to(receive, type cls, str name):
    """The ``cls`` instance whose method ``name`` ``receive`` is (the core then calls that
    method directly), or None."""
    target = getattr(receive, "__self__", None)
    if isinstance(target, cls) and getattr(receive, "__name__", None) == name:
        return target
    return None
