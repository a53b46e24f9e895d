# DCQCN's reaction point, compiled: the rules spraylab.transport.cc.dcqcn states (Zhu et al.,
# SIGCOMM'15, with the ConnectX firmware's timing), whose class sets up every field below once
# per queue pair. The floating-point operations are the Python model's, in its order (docs/core.md,
# "One model, to the bit"); timers are Python-callable events, as they were.

from libc.math cimport pow as c_pow


cdef class DcqcnKernel(CcKernel):
    """Per-QP DCQCN state (set by ``spraylab.transport.cc.dcqcn.Dcqcn``) and its rules. Timers
    are real events only while they matter: the decrease check when a CNP arrived, the
    increase timer while below line rate."""

    # set up once (spraylab.transport.cc.dcqcn)
    cdef public int64_t line_rate_bps, rate_ai_bps, rate_hai_bps
    cdef public int64_t alpha_timer_ps, rate_decrease_interval_ps, increase_timer_ps
    cdef public int64_t byte_counter_bytes, fast_recovery_rounds, min_rate_bps
    cdef public double g
    # state
    cdef public double rc, rt, alpha
    cdef public int64_t alpha_epoch_ps, alpha_period
    cdef public bint cnp_in_period, decrease_armed
    cdef public int64_t bytes_since_increase, timer_rounds, byte_rounds, timer_gen, cuts
    cdef object timer_cb, decrease_cb

    def __init__(self, qp, params, line_rate_bps) -> None:
        CcKernel.__init__(self, qp, params, line_rate_bps)
        self.timer_cb = self.on_increase_timer
        self.decrease_cb = self.on_decrease_tick

    # --- alpha -------------------------------------------------------------------------
    cdef void advance_alpha(self, int64_t now) noexcept:
        """Apply the alpha updates of every period that ended before ``now`` (``now`` is never
        before the epoch, so C's division is Python's floor division here)."""
        cdef int64_t period = (now - self.alpha_epoch_ps) // self.alpha_timer_ps
        cdef int64_t elapsed = period - self.alpha_period
        cdef double keep, alpha
        if elapsed > 0:
            keep = 1.0 - self.g
            alpha = self.alpha * keep + (self.g if self.cnp_in_period else 0.0)
            if elapsed > 1:
                alpha *= c_pow(keep, <double>(elapsed - 1))  # Python's float ** int is C's pow
            self.alpha = alpha
            self.alpha_period = period
            self.cnp_in_period = False

    # --- decrease ----------------------------------------------------------------------
    cdef int c_on_cnp(self, int64_t now) except -1:
        cdef int64_t interval, ticks
        if self.alpha_epoch_ps < 0:
            # The first CNP starts alpha (at 1) and the periodic timers; it is not itself
            # counted as a CNP of the first alpha period.
            self.alpha_epoch_ps = now
        else:
            self.advance_alpha(now)
            self.cnp_in_period = True
        if not self.decrease_armed:
            self.decrease_armed = True
            interval = self.rate_decrease_interval_ps
            # The next tick of the decrease period (ticks at epoch + k * interval, k >= 1).
            ticks = (now - self.alpha_epoch_ps) // interval + 1
            self.sim.at(self.alpha_epoch_ps + ticks * interval, self.decrease_cb, None)
        return 0

    def on_decrease_tick(self, _: object) -> None:
        self.decrease_armed = False
        if self.sender_done():
            return
        cdef int64_t now = self.sim.now
        self.advance_alpha(now)
        if self.timer_rounds > 0 or self.cuts == 0:
            self.rt = self.rc
        self.rc = py_max(<double>self.min_rate_bps, self.rc * (1 - self.alpha / 2))
        self.cuts += 1
        self.timer_rounds = self.byte_rounds = 0
        self.bytes_since_increase = 0
        self.set_rate(self.rc)
        # A cut restarts the increase timer: events armed before it are stale.
        self.timer_gen += 1
        self.sim.after(self.increase_timer_ps, self.timer_cb, self.timer_gen)

    # --- increase ----------------------------------------------------------------------
    cdef int c_on_sent(self, int64_t size_bytes) except -1:
        if self.rc >= self.line_rate_bps:
            return 0
        self.bytes_since_increase += size_bytes
        if self.bytes_since_increase >= self.byte_counter_bytes:
            self.bytes_since_increase = 0
            self.increase(self.timer_rounds, self.byte_rounds)
            self.byte_rounds += 1
        return 0

    def on_increase_timer(self, int64_t gen) -> None:
        if gen != self.timer_gen or self.rc >= self.line_rate_bps or self.sender_done():
            return
        self.increase(self.timer_rounds, self.byte_rounds)
        self.timer_rounds += 1
        if self.rc < self.line_rate_bps:
            self.sim.after(self.increase_timer_ps, self.timer_cb, gen)

    cdef int increase(self, int64_t t, int64_t b) except -1:
        """One increase event; ``t`` and ``b`` count the timer and byte events before it."""
        cdef int64_t f = self.fast_recovery_rounds
        cdef double line = <double>self.line_rate_bps
        if (t if t > b else b) < f:
            pass  # fast recovery: move halfway back towards the target rate
        elif (b if b < t else t) > f:
            self.rt += <double>(((b if b < t else t) - f) * self.rate_hai_bps)
        else:
            self.rt += <double>self.rate_ai_bps
        self.rt = py_min(self.rt, line)
        self.rc = py_min((self.rt + self.rc) / 2, line)
        return self.set_rate(self.rc)
