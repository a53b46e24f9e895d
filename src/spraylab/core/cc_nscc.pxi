# NSCC's per-ACK and per-NACK rules, compiled: the UEC 1.0 sender congestion control as
# uet-htsim's UecSrc implements it (htsim/sim/uec.cpp). spraylab.transport.cc.nscc states the
# algorithm, its sources and parameters, and sets up every field below once per queue pair.
# The floating-point operations are the Python model's, in its order (docs/core.md, "One
# model, to the bit"): py_max / py_min are Python's max / min on two floats.


cdef class NsccKernel(CcKernel):
    """Per-QP NSCC state (set by ``spraylab.transport.cc.nscc.Nscc``) and its rules."""

    # set up once (spraylab.transport.cc.nscc)
    cdef public int64_t frame_bytes, adjust_bytes, qa_gate
    cdef public double line_bytes_per_ps, network_rtt_ps, target_ps, min_cwnd
    cdef public double fi, alpha, eta, fi_scale, qa_threshold_ps
    cdef public double delay_ewma, gamma, md_floor, max_window_bdp, fast_increase_delay_ps
    cdef public bint quick_adapt, reacts_to_nack
    # state
    cdef public double base_rtt_ps, max_cwnd, cwnd, avg_delay_ps, inc
    cdef public int64_t heard, achieved, received, to_ignore, ignored, fi_count
    cdef public int64_t qa_end_ps, last_adjust_ps, last_dec_ps
    cdef public bint increasing, trigger_qa
    # reactions taken
    cdef public int64_t fair, proportional, fast, decreases, quick_adapts, nack_cuts

    # --- signals --------------------------------------------------------------------------
    cdef inline void lower_base_rtt(self, double rtt_ps) noexcept:
        """A round trip below the base RTT: it is the new base, and the cap follows its BDP."""
        self.base_rtt_ps = rtt_ps
        self.max_cwnd = py_max(self.min_cwnd, self.max_window_bdp * rtt_ps * self.line_bytes_per_ps)

    cdef inline void smooth_delay(self, double delay_ps, bint marked) noexcept:
        """The smoothed delay the decrease reads. An unmarked sample above target says the
        delay is not this flow's queue (no switch marked it), so it is pulled towards a quarter
        of the base RTT instead ([htsim] update_delay)."""
        cdef double g = self.delay_ewma
        cdef double sample = 0.25 * self.base_rtt_ps if not marked and delay_ps > self.target_ps else delay_ps
        self.avg_delay_ps = g * sample + (1 - g) * self.avg_delay_ps

    cdef bint take_quick_adapt(self, bint loss, bint marked, double delay_ps, int64_t now) except -1:
        """True when quick adapt took this signal (cut the window, or ignored the marked ACK
        of bytes that were in flight at the last cut): no other reaction then."""
        if not self.quick_adapt:
            return False
        cdef bint done = False
        if self.ignored < self.to_ignore and marked:
            done = True
        elif now > self.qa_end_ps:
            if (
                self.qa_end_ps
                and (self.trigger_qa or loss or delay_ps > self.qa_threshold_ps)
                and self.achieved < self.max_cwnd / (1 << self.qa_gate)
            ):
                self.cwnd = py_max(<double>self.achieved, self.min_cwnd)
                self.to_ignore = self.core_qp.inflight_bytes()
                self.ignored = 0
                self.trigger_qa = False
                self.quick_adapts += 1
                done = True
            self.achieved = 0
            self.qa_end_ps = now + <int64_t>(self.base_rtt_ps + self.target_ps)
        if done:
            self.inc = 0.0
            self.received = 0
        return done

    cdef int apply(self) except -1:
        cdef double cwnd = py_min(py_max(self.cwnd, self.min_cwnd), self.max_cwnd)
        self.cwnd = cwnd
        self.core_qp.set_cwnd_bytes(<int64_t>cwnd)
        return 0

    # --- hooks ----------------------------------------------------------------------------
    cdef int c_on_ack(self, Packet pkt) except -1:
        cdef QueuePair qp = self.core_qp
        cdef int64_t now = self.sim.now
        cdef int64_t count = qp.sack.count if qp.sack is not None else pkt.psn
        cdef int64_t newly = 0
        if count > self.heard:
            newly = (count - self.heard) * self.frame_bytes
            self.heard = count
            self.achieved += newly
            self.received += newly
            self.ignored += newly
        cdef bint marked = pkt.ecn
        cdef double rtt = <double>(now - pkt.sent_ps)
        if rtt < self.base_rtt_ps:
            self.lower_base_rtt(rtt)
        cdef double delay = rtt - self.base_rtt_ps
        self.smooth_delay(delay, marked)
        if self.take_quick_adapt(False, marked, delay, now):
            return self.apply()
        cdef double target = self.target_ps
        cdef double avg
        if not marked:
            if delay >= target:
                self.inc += self.fi * newly
                self.fair += 1
            else:
                if delay < self.fast_increase_delay_ps:
                    self.fi_count += newly
                    if self.fi_count > self.cwnd or self.increasing:
                        self.cwnd += newly * self.fi_scale
                        self.increasing = True
                        self.fast += 1
                else:
                    self.fi_count = 0
                    self.increasing = False
                if not self.increasing:
                    self.inc += self.alpha * newly * (target - delay)
                    self.proportional += 1
        elif delay >= target:
            self.increasing = False
            self.fi_count = 0
            avg = self.avg_delay_ps
            if avg > target and now - self.last_dec_ps > self.base_rtt_ps:
                self.cwnd *= py_max(1 - self.gamma * (avg - target) / avg, self.md_floor)
                self.last_dec_ps = now
                self.decreases += 1
        self.cwnd = py_min(py_max(self.cwnd, self.min_cwnd), self.max_cwnd)
        cdef int64_t since = now - self.last_adjust_ps
        if self.received > self.adjust_bytes or since > self.network_rtt_ps:
            self.cwnd += self.inc / self.cwnd
            if since >= self.network_rtt_ps:
                self.cwnd += self.eta
                self.last_adjust_ps = now
            self.inc = 0.0
            self.received = 0
        return self.apply()

    cdef int c_on_nack(self, Packet pkt) except -1:
        if not self.reacts_to_nack:
            return 0
        cdef QueuePair qp = self.core_qp
        cdef int64_t psn = pkt.sack_psn
        if psn < qp.snd_una or (qp.sack is not None and qp.sack.holds(psn)):
            return 0  # answered meanwhile: uet-htsim finds no send record and ignores it
        cdef int64_t now = self.sim.now
        cdef double rtt = <double>(now - pkt.sent_ps)
        if rtt < self.base_rtt_ps:
            self.lower_base_rtt(rtt)
        self.ignored += self.frame_bytes
        # A trim means a full queue: the smoothed delay takes one network RTT as its sample.
        self.smooth_delay(self.network_rtt_ps, True)
        self.trigger_qa = True
        if not self.take_quick_adapt(True, True, 0.0, now):
            self.cwnd -= self.frame_bytes
            self.nack_cuts += 1
        return self.apply()

    cdef int c_on_timeout(self) except -1:
        self.cwnd -= self.frame_bytes
        return self.apply()
