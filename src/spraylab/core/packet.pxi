# The packet: one RoCEv2 data packet or one control frame (see spraylab.net.packet).

# Packet kinds. Plain ints: compared on every hop.
DATA = 0
ACK = 1
NACK = 2
CNP = 3
PAUSE = 4
RESUME = 5
# A data packet a full switch queue cut to its header (switch.trimming): not kind DATA, so every
# hop sends it on the control path (strict priority) and the receiver NACKs its PSN.
TRIMMED = 6

KIND_NAMES = ("data", "ack", "nack", "cnp", "pause", "resume", "trimmed")

# Hops an in-band telemetry record holds: a 3-tier fat-tree path crosses 5 switches (the HPCC
# ns-3 model's IntHeader holds 5); hops beyond are counted in ``overflow``, not recorded.
cdef enum:
    INT_MAX_HOPS = 8


cdef class IntRecord:
    """In-band network telemetry of one data packet (HPCC, Li et al. SIGCOMM'19, section 3):
    one entry per switch egress port it left through, in path order. Each entry holds the
    port's id (``Port.int_port_id``), its queue in bytes behind the packet when the packet
    started transmission, the bytes the port had transmitted before it (every frame,
    cumulative), that start time in ps and the port's rate. The receiver's ACK echoes the
    record to the sender: the ACK is the data packet's own object (``Receiver._reply_ack``).

    Made only on networks whose congestion control reads it (``spraylab.net.telemetry``)."""

    cdef public int nhop, overflow
    cdef int pending  # the entry whose queue a lossy port fills in when the packet arrives
    cdef int64_t port_id[INT_MAX_HOPS]
    cdef int64_t qlen_bytes[INT_MAX_HOPS]
    cdef int64_t tx_bytes[INT_MAX_HOPS]
    cdef int64_t ts_ps[INT_MAX_HOPS]
    cdef double rate_bps[INT_MAX_HOPS]

    def __cinit__(self) -> None:
        self.nhop = 0
        self.overflow = 0
        self.pending = -1

    cdef inline int push(
        self, int64_t port_id, int64_t qlen_bytes, int64_t tx_bytes, int64_t ts_ps, double rate_bps
    ) except -2:
        """Append one hop's entry; returns its index, or -1 when the record is full."""
        cdef int i = self.nhop
        if i >= INT_MAX_HOPS:
            self.overflow += 1
            return -1
        self.port_id[i] = port_id
        self.qlen_bytes[i] = qlen_bytes
        self.tx_bytes[i] = tx_bytes
        self.ts_ps[i] = ts_ps
        self.rate_bps[i] = rate_bps
        self.nhop = i + 1
        return i

    def hops(self) -> list:
        """``[(port_id, qlen_bytes, tx_bytes, ts_ps, rate_bps), ...]`` in path order."""
        return [
            (self.port_id[i], self.qlen_bytes[i], self.tx_bytes[i], self.ts_ps[i], self.rate_bps[i])
            for i in range(self.nhop)
        ]

    def __repr__(self) -> str:
        return f"IntRecord({self.hops()})"


cdef class Packet:
    """A packet in flight.

    ``qp`` is the sending queue pair (data) or the queue pair the control packet is about;
    ``dst`` is the host id switches route on; ``hash`` is the flow 5-tuple hash mixed with
    ``entropy`` (the UDP source port that ECMP hashes). ``psn`` is the data packet's PSN or,
    for ACK/NACK, the receiver's expected PSN; ``sack_psn`` is the PSN that triggered it.
    ``path_id``/``path_seq`` are stamped by ToR programs; ``ingress`` is set by lossless
    switches for PFC accounting. ``via`` is the egress port the packet last left through (set
    by every send): a packet that dies inside a node (no route, a ToR program, the receiving
    RNIC) is counted on the link it arrived over, so the links table accounts for every drop.
    ``int_record`` is its in-band telemetry (:class:`IntRecord`; HPCC), None elsewhere.

    What a switch may read is the header: ``flow_id`` identifies the connection (the queue
    pair number a switch would key on; -1 for a probe of no flow) and ``msg_packets`` is the
    message's length in packets (an RDMA WRITE's first packet carries the DMA length in its
    RETH). Switch-side schemes and ToR programs read these, never ``qp``: ``qp`` is the
    endpoints' own object, which the receiving host delivers the packet to.
    """

    # Declared widest first, so the object is 128 bytes (144 with the collector's header, a
    # third less than with every field 64-bit): a deep-queued run holds ~100,000 packets at once
    # (docs/performance.md, Memory). 32-bit fields: host ids, bytes of one packet, and PSNs and
    # message lengths (a queue pair refuses a message of 2**31 packets or more), entropies (16-bit).
    cdef public object qp
    cdef public object ingress  # the IngressCounter that holds its bytes (lossless switches)
    cdef public object via  # the Port it last left through
    # In-band telemetry (an IntRecord) on networks whose congestion control reads it, else
    # None (never touched: Cython sets object fields to None when it allocates the packet).
    cdef public object int_record
    cdef public uint64_t hash
    cdef public int64_t sent_ps
    cdef public int32_t src, dst, psn, sack_psn, size, payload, entropy, path_id, path_seq
    cdef public int32_t flow_id, msg_packets
    cdef public int kind
    cdef public bint ecn, retx
    # A data packet that asks for an ACK at once (uet-htsim's "ar" flag): its sender's byte
    # window is full after it (NSCC), or it is the message's last. False unless a byte window is
    # set (zeroed at allocation).
    cdef public bint ack_request

    def __init__(
        self,
        int kind,
        object qp,
        int32_t src,
        int32_t dst,
        int32_t psn,
        int32_t size,
        int32_t payload,
        int32_t entropy,
        uint64_t hash_,
        int64_t sent_ps,
    ):
        self.kind = kind
        self.qp = qp
        self.flow_id = getattr(qp, "flow_id", -1)
        self.msg_packets = getattr(qp, "n_packets", 0)
        self.src = src
        self.dst = dst
        self.psn = psn
        self.sack_psn = psn
        self.size = size
        self.payload = payload
        self.ecn = False
        self.entropy = entropy
        self.hash = hash_
        self.sent_ps = sent_ps
        self.retx = False
        self.path_id = -1
        self.path_seq = -1
        self.ingress = None
        self.via = None

    def __repr__(self) -> str:
        return (
            f"Packet({KIND_NAMES[self.kind]} {self.src}->{self.dst} psn={self.psn} "
            f"size={self.size} entropy={self.entropy})"
        )
