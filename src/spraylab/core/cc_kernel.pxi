# Congestion controls' per-packet hooks, compiled (docs/core.md, "Congestion controls"): the queue
# pair calls a kernel's C hooks directly instead of the control's Python methods. A built-in
# control's registered class (spraylab.transport.cc.<name>) is a Python subclass of its kernel
# and of CongestionControl: the class keeps the name, summary, parameter section and the set-up
# that runs once per queue pair; the kernel holds the state and the per-packet rules.

# The Python hooks of a congestion control (spraylab.transport.cc.base.CongestionControl).
CC_HOOKS = ("on_sent", "on_ack", "on_nack", "on_cnp", "on_timeout")


cdef inline double py_max(double a, double b) noexcept:
    """Python's ``max(a, b)`` on two floats: ``a`` unless ``b`` is larger."""
    return b if b > a else a


cdef inline double py_min(double a, double b) noexcept:
    """Python's ``min(a, b)`` on two floats: ``a`` unless ``b`` is smaller."""
    return b if b < a else a


cdef class CcKernel:
    """A congestion control's per-packet hooks in C: ``c_on_sent``, ``c_on_ack``,
    ``c_on_nack``, ``c_on_cnp`` and ``c_on_timeout`` are called by the queue pair exactly where
    it calls a Python control's ``on_sent`` ... ``on_timeout`` (spraylab.transport.cc.base
    says when). The base's hooks do nothing. The Python methods of the same names call the C
    hooks, so Python code (a test, a subclass's ``super().on_ack(pkt)``) drives a kernel as it
    drives any control; a Python subclass that overrides one of them runs on the Python tier,
    every hook a Python call (``runs_compiled``).

    ``qp`` is the queue pair the control was made for; when it is the core's (not a test's
    stand-in), ``core_qp`` is the same object typed, and the kernel reads and sets it without a
    Python call. Rate, window and done go through :meth:`set_rate`, :meth:`set_window`,
    :meth:`set_cwnd_bytes` and :meth:`sender_done`, which serve a stand-in through its Python
    methods."""

    cdef public object qp
    cdef public QueuePair core_qp
    cdef public Simulator sim

    def __init__(self, qp, params, line_rate_bps) -> None:
        self.qp = qp
        self.core_qp = qp if isinstance(qp, QueuePair) else None
        self.sim = qp.sim

    # --- the hooks (C) ------------------------------------------------------------------
    cdef int c_on_sent(self, int64_t size_bytes) except -1:
        return 0

    cdef int c_on_ack(self, Packet pkt) except -1:
        return 0

    cdef int c_on_nack(self, Packet pkt) except -1:
        return 0

    cdef int c_on_cnp(self, int64_t now) except -1:
        return 0

    cdef int c_on_timeout(self) except -1:
        return 0

    # --- the hooks (Python) ---------------------------------------------------------------
    def on_sent(self, int64_t size_bytes) -> None:
        self.c_on_sent(size_bytes)

    def on_ack(self, Packet pkt) -> None:
        self.c_on_ack(pkt)

    def on_nack(self, Packet pkt) -> None:
        self.c_on_nack(pkt)

    def on_cnp(self, int64_t now) -> None:
        self.c_on_cnp(now)

    def on_timeout(self) -> None:
        self.c_on_timeout()

    # --- the queue pair, as a control drives it ---------------------------------------------
    cdef bint sender_done(self) except -1:
        if self.core_qp is not None:
            return self.core_qp.sender_done
        return bool(self.qp.sender_done)

    cdef int set_rate(self, double rate_bps) except -1:
        if self.core_qp is not None:
            self.core_qp.set_rate(rate_bps)
        else:
            self.qp.set_rate(rate_bps)
        return 0

    cdef int set_window(self, int64_t packets) except -1:
        if self.core_qp is not None:
            self.core_qp.set_window(packets)
        else:
            self.qp.set_window(packets)
        return 0

    cdef int set_cwnd_bytes(self, int64_t cwnd_bytes) except -1:
        if self.core_qp is not None:
            self.core_qp.set_cwnd_bytes(cwnd_bytes)
        else:
            self.qp.set_cwnd_bytes(cwnd_bytes)
        return 0


def runs_compiled(cc) -> bool:
    """Does the queue pair call ``cc``'s C hooks? Yes for a kernel whose class replaced none of
    the Python hooks (a Python subclass that overrides one runs every hook through Python,
    so its override is honoured)."""
    if not isinstance(cc, CcKernel):
        return False
    cls = type(cc)
    return all(getattr(cls, hook) is getattr(CcKernel, hook) for hook in CC_HOOKS)
