# Built-in sender schemes' per-packet hooks, compiled (the first of the three tiers in
# docs/core.md): the queue pair calls a kernel's ``entropy`` and ``on_ack`` directly instead of
# the scheme's Python methods. The scheme stays a registered Python class (spraylab.lb); it
# installs its kernel in ``init_qp`` and keeps everything that is not per packet.


cdef class SenderKernel:
    """What a compiled sender scheme does per packet: the entropy of each data packet it
    sends and what each ACK tells it. A queue pair with ``lb_kernel`` set calls these instead
    of ``lb.entropy`` / ``lb.on_ack`` (its ``lb`` still gets every other hook)."""

    cdef int64_t entropy(self, QueuePair qp, int64_t psn) except -1:
        raise NotImplementedError

    cdef int on_ack(self, QueuePair qp, Packet pkt) except -1:
        return 0


cdef class SprayFlow:
    """One flow's oblivious-spraying entropies, cycled one per packet."""

    cdef vector[int64_t] _entropies
    cdef public Py_ssize_t i

    def __init__(self, entropies) -> None:
        for entropy in entropies:
            self._entropies.push_back(entropy)
        self.i = 0

    @property
    def entropies(self) -> list:
        return [e for e in self._entropies]


cdef class SprayRoundRobinKernel(SenderKernel):
    """spray_rr: the flow's entropies in turn (``spraylab.lb.spray_rr``)."""

    cdef int64_t entropy(self, QueuePair qp, int64_t psn) except -1:
        return self.entropy_for(<SprayFlow>qp.lb_state)

    cpdef int64_t entropy_for(self, SprayFlow flow) except -1:
        """The flow's next entropy (the scheme's Python ``entropy`` calls this too)."""
        cdef Py_ssize_t i = flow.i
        flow.i = i + 1 if i + 1 < <Py_ssize_t>flow._entropies.size() else 0
        return flow._entropies[i]


cdef void _strike(cdeque[int64_t]& ring, int64_t value) noexcept:
    """Remove every copy of ``value``, keeping the others in order."""
    cdef size_t kept = 0
    cdef size_t k
    for k in range(ring.size()):
        if ring[k] != value:
            ring[kept] = ring[k]
            kept += 1
    ring.resize(kept)


cdef inline void _append_bounded(cdeque[int64_t]& ring, int64_t value, int64_t capacity) noexcept:
    """``collections.deque(maxlen=capacity).append``: a full ring forgets its oldest."""
    if <int64_t>ring.size() >= capacity:
        ring.pop_front()
    ring.push_back(value)


cdef class RepsFlow:
    """One queue pair's REPS state (``spraylab.lb.reps``): the recycled-entropy FIFO and the
    entropies of the last clean ACKs, oldest first, each holding at most ``capacity``."""

    cdef cdeque[int64_t] _fifo, _good
    cdef public int64_t capacity, frozen_until
    cdef public Py_ssize_t cycle

    def __init__(self, int64_t capacity) -> None:
        self.capacity = capacity
        self.frozen_until = -1
        self.cycle = 0

    @property
    def fifo(self) -> list:
        return [e for e in self._fifo]

    @property
    def good(self) -> list:
        return [e for e in self._good]


cdef class RepsKernel(SenderKernel):
    """REPS's per-packet rules (the module doc of ``spraylab.lb.reps`` states them): recycle
    the entropies of clean ACKs, strike marked ones, cycle the known-good list while frozen.
    ``getrandbits`` is the scheme's seeded stream, drawn exactly as the Python form draws it."""

    cdef Simulator sim
    cdef object getrandbits
    cdef public bint recycle_overtaken
    # Fresh entropies are 0 .. paths - 1 (a power of two up to 2^16): the low bits of the same
    # 16-bit draw, so paths = 2^16 draws exactly what it drew before the parameter existed.
    cdef public int64_t paths_mask
    cdef public int64_t fresh, recycled, frozen_reuses, overtaken_skipped

    def __init__(self, Simulator sim, getrandbits, bint recycle_overtaken, int64_t paths=65536) -> None:
        self.sim = sim
        self.getrandbits = getrandbits
        self.recycle_overtaken = recycle_overtaken
        self.paths_mask = paths - 1
        self.fresh = self.recycled = self.frozen_reuses = self.overtaken_skipped = 0

    cdef int64_t entropy(self, QueuePair qp, int64_t psn) except -1:
        return self.entropy_for(<RepsFlow>qp.lb_state)

    cdef int on_ack(self, QueuePair qp, Packet pkt) except -1:
        return self.echo(<RepsFlow>qp.lb_state, pkt)

    cpdef int64_t entropy_for(self, RepsFlow flow) except -1:
        """The flow's next entropy (the scheme's Python ``entropy`` calls this too)."""
        cdef int64_t entropy
        cdef Py_ssize_t i
        if not flow._fifo.empty():
            self.recycled += 1
            entropy = flow._fifo.front()
            flow._fifo.pop_front()
            return entropy
        if flow.frozen_until > self.sim.now and not flow._good.empty():
            i = flow.cycle
            if i >= <Py_ssize_t>flow._good.size():
                i = 0
            flow.cycle = i + 1
            self.frozen_reuses += 1
            return flow._good[i]
        self.fresh += 1
        return self.getrandbits(16) & self.paths_mask

    cpdef int echo(self, RepsFlow flow, Packet pkt) except -1:
        """An ACK's echo. ``pkt.psn`` is the receiver's cumulative PSN after the echoed packet
        (``pkt.sack_psn``) arrived: below psn - 1, packets sent after it had arrived first."""
        if not self.recycle_overtaken and not pkt.ecn and pkt.sack_psn < pkt.psn - 1:
            self.overtaken_skipped += 1
            return 0
        return self.feedback(flow, pkt.entropy, pkt.ecn)

    cpdef int feedback(self, RepsFlow flow, int64_t entropy, bint ecn) except -1:
        """A clean echo of ``entropy`` recycles it; a marked one strikes it everywhere."""
        if ecn:
            _strike(flow._fifo, entropy)
            _strike(flow._good, entropy)
            return 0
        _append_bounded(flow._fifo, entropy, flow.capacity)
        _append_bounded(flow._good, entropy, flow.capacity)
        return 0
