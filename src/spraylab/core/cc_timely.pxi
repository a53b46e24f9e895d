# TIMELY's per-RTT rule, compiled: the RTT-gradient rate control spraylab.transport.cc.timely
# states (Mittal et al., SIGCOMM'15, Algorithm 1, updated once per round trip as the HPCC ns-3
# model's RdmaHw::UpdateRateTimely does), whose class sets up every field below once per queue
# pair. The floating-point operations are the Python model's, in its order.


cdef class TimelyKernel(CcKernel):
    """Per-QP TIMELY state (set by ``spraylab.transport.cc.timely.Timely``) and its rule."""

    # set up once (spraylab.transport.cc.timely)
    cdef public int64_t t_low_ps, t_high_ps, min_rtt_ps, hai_n
    cdef public double line_rate_f, min_rate_bps, delta_bps, alpha, beta
    # state
    cdef public double rate_bps, rtt_diff_ps, last_gradient
    cdef public int64_t prev_rtt_ps, last_update_psn, last_delay_ps, neg_gradients
    cdef public int64_t updates, increases, decreases

    cdef int c_on_ack(self, Packet pkt) except -1:
        cdef int64_t rtt = self.sim.now - pkt.sent_ps
        self.last_delay_ps = rtt
        # One update per round trip: on the first ACK of a packet sent after the last update
        # (the ns-3 model's ack_seq > m_lastUpdateSeq); the ACKs in between do nothing (its
        # FastReactTimely is empty). The first ACK only records the RTT the next one compares with.
        if pkt.psn <= self.last_update_psn:
            return 0
        cdef bint first = self.last_update_psn < 0
        self.last_update_psn = self.core_qp.snd_nxt
        if first:
            self.prev_rtt_ps = rtt
            return 0
        cdef double rtt_diff = (1 - self.alpha) * self.rtt_diff_ps + self.alpha * (rtt - self.prev_rtt_ps)
        cdef double gradient = rtt_diff / self.min_rtt_ps
        cdef double rate = self.rate_bps
        cdef double factor
        self.prev_rtt_ps = rtt
        self.rtt_diff_ps = rtt_diff
        self.last_gradient = gradient
        self.updates += 1
        # HAI: N x delta once the gradient has been negative for N updates in a row
        self.neg_gradients = self.neg_gradients + 1 if gradient < 0 else 0
        if rtt < self.t_low_ps:
            rate += self.delta_bps
            self.increases += 1
        elif rtt > self.t_high_ps:
            rate *= 1 - self.beta * (1 - <double>self.t_high_ps / rtt)
            self.decreases += 1
        elif gradient <= 0:
            rate += self.delta_bps * (self.hai_n if self.neg_gradients >= self.hai_n else 1)
            self.increases += 1
        else:
            factor = 1 - self.beta * gradient
            rate *= factor if factor > 0 else 0.0
            self.decreases += 1
        rate = py_min(py_max(rate, self.min_rate_bps), self.line_rate_f)
        self.rate_bps = rate
        self.set_rate(rate)
        return 0
