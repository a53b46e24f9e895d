# HPCC's per-ACK rule, compiled: the paper's Algorithm 1 as spraylab.transport.cc.hpcc states
# it (Li et al., SIGCOMM'19, and the HPCC ns-3 model), whose class sets up every field below
# once per queue pair. It reads the ACK's in-band telemetry (IntRecord, core/packet.pxi), which
# the switches stamp only on a network whose control reads it (spraylab.net.telemetry). The
# floating-point operations are the Python model's, in its order.

from libc.math cimport ceil as c_ceil

cdef double HPCC_PS_PER_S = 1e12


cdef struct IntSample:
    int64_t qlen_bytes, tx_bytes, ts_ps


cdef class HpccKernel(CcKernel):
    """Per-QP HPCC state (set by ``spraylab.transport.cc.hpcc.Hpcc``) and its rule; the last
    INT sample of every port seen is kept in C (``samples`` reads it as a dict)."""

    # set up once (spraylab.transport.cc.hpcc)
    cdef public int64_t line_rate_bps, frame_bytes, max_stage
    cdef public double base_rtt_ps, w_max_bytes, w_min_bytes, w_ai_bytes, eta
    # state
    cdef public double wc_bytes, w_bytes, u
    cdef public int64_t inc_stage, last_update_psn, updates
    cdef unordered_map[int64_t, IntSample] _samples

    @property
    def samples(self) -> dict:
        """Port id -> its last INT sample ``(qlen_bytes, tx_bytes, ts_ps)``."""
        out = {}
        for kv in self._samples:
            out[kv.first] = (kv.second.qlen_bytes, kv.second.tx_bytes, kv.second.ts_ps)
        return out

    def apply(self, double w_bytes) -> None:
        """Send within ``w_bytes`` at ``w_bytes / T``."""
        self.c_apply(w_bytes)

    cdef int c_apply(self, double w_bytes) except -1:
        self.w_bytes = w_bytes
        self.set_rate(py_min(<double>self.line_rate_bps, w_bytes * 8 * HPCC_PS_PER_S / self.base_rtt_ps))
        self.set_window(<int64_t>c_ceil(w_bytes / self.frame_bytes))
        return 0

    cdef int c_on_ack(self, Packet pkt) except -1:
        if pkt.int_record is None:  # the packet crossed no switch (an NVLink hop): nothing measured
            return 0
        cdef IntRecord record = <IntRecord>pkt.int_record
        cdef int i
        cdef IntSample sample
        cdef unordered_map[int64_t, IntSample].iterator prev
        if self.last_update_psn < 0:
            for i in range(record.nhop):
                sample.qlen_bytes = record.qlen_bytes[i]
                sample.tx_bytes = record.tx_bytes[i]
                sample.ts_ps = record.ts_ps[i]
                self._samples[record.port_id[i]] = sample
            self.last_update_psn = self.core_qp.snd_nxt
            return 0
        cdef double base_rtt = self.base_rtt_ps
        cdef double u_max = -1.0
        cdef double u
        cdef int64_t tau = 0
        cdef int64_t dt, qlen
        for i in range(record.nhop):
            sample.qlen_bytes = record.qlen_bytes[i]
            sample.tx_bytes = record.tx_bytes[i]
            sample.ts_ps = record.ts_ps[i]
            prev = self._samples.find(record.port_id[i])
            if prev == self._samples.end():
                self._samples[record.port_id[i]] = sample
                continue
            dt = sample.ts_ps - deref(prev).second.ts_ps
            if dt <= 0:  # this port's sample is not newer (a sprayed packet overtaken): skip it
                continue
            qlen = deref(prev).second.qlen_bytes
            if sample.qlen_bytes < qlen:
                qlen = sample.qlen_bytes
            # bytes/ps over bytes/ps: the port's transmit rate and its standing queue drained
            # over one T, each as a fraction of its capacity
            u = (
                (<double>(sample.tx_bytes - deref(prev).second.tx_bytes) / <double>dt + qlen / base_rtt)
                * 8 * HPCC_PS_PER_S / record.rate_bps[i]
            )
            deref(prev).second = sample
            if u > u_max:
                u_max = u
                tau = dt
        cdef bint update_reference = pkt.psn > self.last_update_psn
        if update_reference:
            self.last_update_psn = self.core_qp.snd_nxt
        if u_max < 0:
            return 0  # no port with two samples yet
        cdef double tau_ps = py_min(<double>tau, base_rtt)
        self.u = (self.u * (base_rtt - tau_ps) + u_max * tau_ps) / base_rtt
        cdef double eta = self.eta
        cdef double w
        cdef int64_t stage
        if self.u >= eta or self.inc_stage >= self.max_stage:
            w = self.wc_bytes * eta / py_max(self.u, 1e-9) + self.w_ai_bytes
            stage = 0
        else:
            w = self.wc_bytes + self.w_ai_bytes
            stage = self.inc_stage + 1
        w = py_min(py_max(w, self.w_min_bytes), self.w_max_bytes)
        if update_reference:
            self.wc_bytes = w
            self.inc_stage = stage
            self.updates += 1
        return self.c_apply(w)
