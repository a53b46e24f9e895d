# DCTCP's per-ACK rule, compiled: the window control spraylab.transport.cc.dctcp states
# (Alizadeh et al., SIGCOMM 2010; RFC 8257), whose class sets up every field below once per
# queue pair. The floating-point operations are the Python model's, in its order.

from libc.math cimport floor as c_floor


cdef class DctcpKernel(CcKernel):
    """Per-QP DCTCP state (set by ``spraylab.transport.cc.dctcp.Dctcp``) and its rule."""

    # set up once (spraylab.transport.cc.dctcp)
    cdef public double g, ai_packets, min_window_packets, w_max
    # state
    cdef public double w, alpha
    cdef public int64_t acked, marked, window_end_psn, cut_end_psn, cuts

    cdef int c_on_ack(self, Packet pkt) except -1:
        cdef QueuePair qp = self.core_qp
        cdef int64_t cum = pkt.psn
        cdef int64_t acked = cum - qp.snd_una  # before the queue pair applies the cumulative ACK
        if acked < 0:
            acked = 0
        self.acked += acked
        if pkt.ecn:
            self.marked += acked
        if cum > self.window_end_psn and self.acked:
            self.alpha = (1 - self.g) * self.alpha + self.g * self.marked / self.acked
            self.acked = self.marked = 0
            self.window_end_psn = qp.snd_nxt
        cdef double w = self.w
        if pkt.ecn:
            if cum > self.cut_end_psn:
                w = py_max(self.min_window_packets, w * (1 - self.alpha / 2))
                self.cut_end_psn = qp.snd_nxt
                self.cuts += 1
        elif acked and cum > self.cut_end_psn:
            w = py_min(self.w_max, w + self.ai_packets * acked / w)
        if w != self.w:
            self.w = w
            self.set_window(<int64_t>c_floor(w))
        return 0
