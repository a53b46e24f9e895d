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
    """

    cdef public int kind
    cdef public object qp
    cdef public int64_t src, dst, psn, sack_psn, size, payload, entropy, sent_ps, path_id, path_seq
    cdef public uint64_t hash
    cdef public bint ecn, retx
    cdef public object ingress  # the IngressCounter that holds its bytes (lossless switches)
    cdef public object via  # the Port it last left through

    def __init__(
        self,
        int kind,
        object qp,
        int64_t src,
        int64_t dst,
        int64_t psn,
        int64_t size,
        int64_t payload,
        int64_t entropy,
        uint64_t hash_,
        int64_t sent_ps,
    ):
        self.kind = kind
        self.qp = qp
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
