"""DCQCN reaction point: the sender's rate control driven by CNPs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.transport.params import DcqcnParams

if TYPE_CHECKING:
    from spraylab.transport.qp import QueuePair


class Dcqcn:
    """Per-QP DCQCN state. The alpha decay timer is evaluated lazily at the next CNP (it only
    matters there); the rate-increase timer is a real event, armed only below line rate."""

    __slots__ = (
        "qp",
        "p",
        "line_rate_bps",
        "rate_ai_bps",
        "rate_hai_bps",
        "rc",
        "rt",
        "alpha",
        "alpha_updated_ps",
        "bytes_since_increase",
        "timer_rounds",
        "byte_rounds",
        "timer_gen",
        "cnps",
        "_timer_cb",
    )

    def __init__(self, qp: QueuePair, params: DcqcnParams, line_rate_bps: int) -> None:
        self.qp = qp
        self.p = params
        self.line_rate_bps = line_rate_bps
        self.rate_ai_bps = params.rate_ai_bps_per_100g * line_rate_bps // 100_000_000_000
        self.rate_hai_bps = params.rate_hai_bps_per_100g * line_rate_bps // 100_000_000_000
        self.rc = float(line_rate_bps)
        self.rt = float(line_rate_bps)
        self.alpha = 1.0
        self.alpha_updated_ps = 0
        self.bytes_since_increase = 0
        self.timer_rounds = 0
        self.byte_rounds = 0
        self.timer_gen = 0
        self.cnps = 0
        self._timer_cb = self._on_timer

    def on_cnp(self, now: int) -> None:
        p = self.p
        self.cnps += 1
        periods = (now - self.alpha_updated_ps) // p.alpha_timer_ps
        if periods > 0:
            self.alpha *= (1 - p.g) ** periods
        self.alpha = (1 - p.g) * self.alpha + p.g
        self.alpha_updated_ps = now
        self.rt = self.rc
        self.rc = max(float(p.min_rate_bps), self.rc * (1 - self.alpha / 2))
        self.timer_rounds = self.byte_rounds = 0
        self.bytes_since_increase = 0
        self.qp.set_rate(self.rc)
        # A CNP restarts the increase timer: events armed before it are stale.
        self.timer_gen += 1
        self.qp.sim.after(p.increase_timer_ps, self._timer_cb, self.timer_gen)

    def on_sent(self, size: int) -> None:
        if self.rc >= self.line_rate_bps:
            return
        self.bytes_since_increase += size
        if self.bytes_since_increase >= self.p.byte_counter_bytes:
            self.bytes_since_increase = 0
            self.byte_rounds += 1
            self._increase()

    def _on_timer(self, gen: int) -> None:
        if gen != self.timer_gen or self.rc >= self.line_rate_bps or self.qp.sender_done:
            return
        self.timer_rounds += 1
        self._increase()
        if self.rc < self.line_rate_bps:
            self.qp.sim.after(self.p.increase_timer_ps, self._timer_cb, gen)

    def _increase(self) -> None:
        f = self.p.fast_recovery_rounds
        t, b = self.timer_rounds, self.byte_rounds
        if max(t, b) < f:
            pass  # fast recovery: move halfway back towards the target rate
        elif min(t, b) > f:
            self.rt += (min(t, b) - f) * self.rate_hai_bps
        else:
            self.rt += self.rate_ai_bps
        self.rt = min(self.rt, float(self.line_rate_bps))
        self.rc = min((self.rt + self.rc) / 2, float(self.line_rate_bps))
        self.qp.set_rate(self.rc)
