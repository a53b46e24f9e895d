# Swift's per-ACK rule, compiled: the delay-based window spraylab.transport.cc.swift states
# (Kumar et al., SIGCOMM'20, as csg-htsim runs it), whose class sets up every field below once
# per queue pair. The floating-point operations are the Python model's, in its order.

from libc.math cimport sqrt as c_sqrt


cdef class SwiftKernel(CcKernel):
    """Per-QP Swift state (set by ``spraylab.transport.cc.swift.Swift``) and its rule."""

    # set up once (spraylab.transport.cc.swift)
    cdef public int64_t line_rate_bps, frame_bytes, hops, fixed_target_ps, fs_range_ps
    cdef public double fs_a, fs_b, min_cwnd, max_cwnd, ai, beta, max_mdf
    # state
    cdef public double cwnd, last_target_ps
    cdef public int64_t last_decrease_ps, decreases, last_delay_ps
    cdef public bint paced

    def target_ps(self, double cwnd) -> float:
        """Base + hops + flow scaling at window ``cwnd``."""
        return self.c_target_ps(cwnd)

    cdef double c_target_ps(self, double cwnd) noexcept:
        cdef double fs = self.fs_a / c_sqrt(cwnd) + self.fs_b
        return self.fixed_target_ps + py_min(py_max(fs, 0.0), <double>self.fs_range_ps)

    cdef int c_on_ack(self, Packet pkt) except -1:
        cdef QueuePair qp = self.core_qp
        cdef int64_t now = self.sim.now
        cdef int64_t delay = now - pkt.sent_ps
        cdef int64_t acked = pkt.psn - qp.snd_una  # before the queue pair applies the cumulative ACK
        cdef double cwnd = self.cwnd
        cdef double target = self.c_target_ps(cwnd)
        self.last_delay_ps = delay
        self.last_target_ps = target
        if delay < target:
            if acked <= 0:
                return 0
            cwnd += self.ai * acked / cwnd if cwnd >= 1 else self.ai * acked
        elif now - self.last_decrease_ps >= delay:
            cwnd *= py_max(1 - self.beta * (delay - target) / delay, 1 - self.max_mdf)
            self.last_decrease_ps = now
            self.decreases += 1
        else:
            return 0
        cwnd = py_min(py_max(cwnd, self.min_cwnd), self.max_cwnd)
        self.cwnd = cwnd
        if cwnd < 1:
            # pacing_delay = rtt / cwnd: one frame per that long
            self.set_rate(py_min(<double>self.line_rate_bps, cwnd * self.frame_bytes * PS_BITS_F / delay))
            self.paced = True
            self.set_window(1)
        else:
            if self.paced:
                self.set_rate(<double>self.line_rate_bps)
                self.paced = False
            self.set_window(<int64_t>c_floor(cwnd))
        return 0
