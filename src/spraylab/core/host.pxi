# Hosts (GPUs with their RDMA NICs) and the NIC's queue-pair scheduler.


cdef class Nic:
    """Schedules the queue pairs sharing one egress port: round-robin among QPs allowed to
    send now, QPs paced below line rate wait in a heap keyed by their next send time. One
    event per data packet; the port is never handed more than one data packet at a time, so
    the NIC never builds a queue of its own."""

    cdef public Simulator sim
    cdef public object host
    cdef public Port port
    cdef public object ready  # collections.deque of QueuePair
    cdef public list paced  # heap of (next_send_ps, flow_id, QueuePair)
    cdef public int64_t tx_at  # time of the pending transmit event, -1 if none
    cdef object _kick_cb

    def __init__(self, Simulator sim, host, Port port) -> None:
        self.sim = sim
        self.host = host
        self.port = port
        self.ready = deque()
        self.paced = []
        self.tx_at = -1
        self._kick_cb = self._kick

    cpdef activate(self, QueuePair qp):
        """A QP has something to send (new flow, ACK opened the window, NACK)."""
        qp.in_sched = True
        if qp.next_send_ps > self.sim.now:
            heappush(self.paced, (qp.next_send_ps, qp.flow_id, qp))
        else:
            self.ready.append(qp)
        self.kick()

    def _kick(self, _=None) -> None:
        self.kick()

    cdef int kick(self) except -1:
        cdef int64_t now = self.sim.now
        cdef int64_t when = self.port.busy_until
        cdef int64_t first
        if when < now:
            when = now
        if not self.ready:
            if not self.paced:
                return 0
            first = self.paced[0][0]
            if first > when:
                when = first
        if self.tx_at < 0 or when < self.tx_at:
            self.tx_at = when
            self.sim.push(when, EV_NIC_TX, self, None, when)
        return 0

    cdef int tx(self, int64_t when) except -1:
        """The transmit event scheduled for ``when``: hand the port one data packet."""
        if when != self.tx_at:
            return 0  # superseded by an earlier transmit event
        self.tx_at = -1
        cdef Simulator sim = self.sim
        cdef int64_t now = sim.now
        cdef Port port = self.port
        cdef QueuePair qp
        cdef Packet pkt
        if port.paused:
            port.waiter = self._kick_cb
            return 0
        if port.busy_until > now:
            return self.kick()
        ready = self.ready
        paced = self.paced
        while paced and paced[0][0] <= now:
            ready.append(heappop(paced)[2])
        while ready:
            qp = ready.popleft()
            pkt = qp.next_packet(now)
            if pkt is None:
                qp.in_sched = False
                continue
            port.send(pkt)
            if qp.has_work():
                if qp.next_send_ps > port.busy_until:
                    heappush(paced, (qp.next_send_ps, qp.flow_id, qp))
                else:
                    ready.append(qp)
            else:
                qp.in_sched = False
            break
        return self.kick()


cdef class Host:
    """An endpoint: consumes packets addressed to it and owns one NIC per egress port
    (one for a plain server NIC; a GPU in a rail-optimized server also has its NVLink port).
    ``route[dst]`` is the NIC that reaches ``dst``."""

    cdef public Simulator sim
    cdef public object net, name, ports, nics, route
    cdef public int64_t id, server

    def __init__(self, Simulator sim, net, int64_t host_id, name, int64_t server=-1) -> None:
        self.sim = sim
        self.net = net
        self.id = host_id
        self.name = name
        self.server = server
        self.ports = []
        self.nics = []
        self.route = []

    cpdef receive(self, Packet pkt):
        self.net.consumed_packets += 1
        cdef int kind = pkt.kind
        cdef QueuePair qp
        if isinstance(pkt.qp, QueuePair):
            qp = <QueuePair>pkt.qp
            if kind == DATA:
                if isinstance(qp.rx, Receiver):
                    (<Receiver>qp.rx).on_data(pkt)
                else:
                    qp.rx.on_data(pkt)
            elif kind == ACK:
                qp.on_ack(pkt)
            elif kind == NACK:
                qp.on_nack(pkt)
            elif kind == CNP:
                qp.on_cnp(pkt)
            elif kind == TRIMMED:
                if isinstance(qp.rx, Receiver):
                    (<Receiver>qp.rx).on_trimmed(pkt)
                else:
                    qp.rx.on_trimmed(pkt)
        elif kind == DATA:  # a stand-in queue pair (tests)
            pkt.qp.rx.on_data(pkt)
        elif kind == ACK:
            pkt.qp.on_ack(pkt)
        elif kind == NACK:
            pkt.qp.on_nack(pkt)
        elif kind == CNP:
            pkt.qp.on_cnp(pkt)
        elif kind == TRIMMED:
            pkt.qp.rx.on_trimmed(pkt)

    def __repr__(self) -> str:
        return f"Host({self.name})"
