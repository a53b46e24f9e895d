"""DCQCN reaction point: the sender's rate control driven by CNPs, as ConnectX NICs run it.

The algorithm is DCQCN (Zhu et al., SIGCOMM'15); its timing follows the ConnectX firmware
(the NVIDIA "DCQCN parameters" defaults, also the HPCC/ConWeave ns-3 "mlx" model):

* **alpha** is updated every ``alpha_timer`` (1 us) from the flow's first CNP on:
  ``alpha = (1 - g) * alpha + g`` if a CNP arrived in that period, ``(1 - g) * alpha`` if
  not. Evaluated lazily (only read at a rate cut), so idle periods cost nothing.
* **Rate decrease** at most once per ``rate_decrease_interval`` (4 us): a CNP arms a check at
  the next tick of that period; the check cuts ``rc *= 1 - alpha / 2``. The target rate
  ``rt`` takes the current rate only if the increase timer has fired since the last cut
  (ConnectX ``clamp_tgt_rate = 0``, ``clamp_tgt_rate_after_time_inc = 1``): back-to-back
  cuts of one congestion episode keep the rate it started from as the target, so the flow
  climbs straight back to it once the queue has drained.
* **Rate increase** events come from a timer (every ``increase_timer``, 300 us, restarted by
  each cut) and a byte counter (every ``byte_counter`` bytes sent). Each event: fast
  recovery (``rc = (rt + rc) / 2``) while both event counts since the cut are below
  ``fast_recovery_rounds``, hyper increase (``rt += n * R_HAI``) once both exceed it,
  additive increase (``rt += R_AI``) otherwise; then ``rc = (rt + rc) / 2``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from spraylab.transport.cc.base import CongestionControl, register_cc
from spraylab.transport.params import DcqcnParams, DcqcnSection

if TYPE_CHECKING:
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair


@register_cc
class Dcqcn(CongestionControl):
    """Per-QP DCQCN state. Timers are real events only while they matter: the decrease check
    when a CNP arrived, the increase timer while below line rate."""

    name = "dcqcn"
    summary = "DCQCN reaction point with ConnectX firmware timing (CNP-driven rate control)"
    uses_cnp = True
    params_section: ClassVar[str] = "dcqcn"
    section_model = DcqcnSection
    params_type = DcqcnParams
    section_description = "DCQCN reaction-point parameters (docs/congestion-control.md)"

    __slots__ = (
        "qp",
        "p",
        "line_rate_bps",
        "rate_ai_bps",
        "rate_hai_bps",
        "rc",
        "rt",
        "alpha",
        "alpha_epoch_ps",
        "alpha_period",
        "cnp_in_period",
        "decrease_armed",
        "bytes_since_increase",
        "timer_rounds",
        "byte_rounds",
        "timer_gen",
        "cuts",
        "_timer_cb",
        "_decrease_cb",
    )

    def __init__(self, qp: QueuePair, transport: TransportParams, line_rate_bps: int) -> None:
        params = transport.cc_params["dcqcn"]
        self.qp = qp
        self.p = params
        self.line_rate_bps = line_rate_bps
        self.rate_ai_bps = params.rate_ai_bps_per_100g * line_rate_bps // 100_000_000_000
        self.rate_hai_bps = params.rate_hai_bps_per_100g * line_rate_bps // 100_000_000_000
        self.rc = float(line_rate_bps)
        self.rt = float(line_rate_bps)
        self.alpha = 1.0
        self.alpha_epoch_ps = -1  # first CNP: alpha periods and decrease ticks count from it
        self.alpha_period = 0  # index of the alpha period ``alpha`` is current for
        self.cnp_in_period = False
        self.decrease_armed = False
        self.bytes_since_increase = 0
        self.timer_rounds = 0
        self.byte_rounds = 0
        self.timer_gen = 0
        self.cuts = 0
        self._timer_cb = self._on_timer
        self._decrease_cb = self._on_decrease_tick

    # --- alpha -------------------------------------------------------------------------
    def _advance_alpha(self, now: int) -> None:
        """Apply the alpha updates of every period that ended before ``now``."""
        period = (now - self.alpha_epoch_ps) // self.p.alpha_timer_ps
        elapsed = period - self.alpha_period
        if elapsed > 0:
            keep = 1.0 - self.p.g
            alpha = self.alpha * keep + (self.p.g if self.cnp_in_period else 0.0)
            if elapsed > 1:
                alpha *= keep ** (elapsed - 1)
            self.alpha = alpha
            self.alpha_period = period
            self.cnp_in_period = False

    # --- decrease ----------------------------------------------------------------------
    def on_cnp(self, now: int) -> None:
        if self.alpha_epoch_ps < 0:
            # The first CNP starts alpha (at 1) and the periodic timers; it is not itself
            # counted as a CNP of the first alpha period.
            self.alpha_epoch_ps = now
        else:
            self._advance_alpha(now)
            self.cnp_in_period = True
        if not self.decrease_armed:
            self.decrease_armed = True
            interval = self.p.rate_decrease_interval_ps
            # The next tick of the decrease period (ticks at epoch + k * interval, k >= 1).
            ticks = (now - self.alpha_epoch_ps) // interval + 1
            self.qp.sim.at(self.alpha_epoch_ps + ticks * interval, self._decrease_cb, None)

    def _on_decrease_tick(self, _: object) -> None:
        self.decrease_armed = False
        qp = self.qp
        if qp.sender_done:
            return
        now = qp.sim.now
        self._advance_alpha(now)
        if self.timer_rounds > 0 or self.cuts == 0:
            self.rt = self.rc
        self.rc = max(float(self.p.min_rate_bps), self.rc * (1 - self.alpha / 2))
        self.cuts += 1
        self.timer_rounds = self.byte_rounds = 0
        self.bytes_since_increase = 0
        qp.set_rate(self.rc)
        # A cut restarts the increase timer: events armed before it are stale.
        self.timer_gen += 1
        qp.sim.after(self.p.increase_timer_ps, self._timer_cb, self.timer_gen)

    # --- increase ----------------------------------------------------------------------
    def on_sent(self, size_bytes: int) -> None:
        if self.rc >= self.line_rate_bps:
            return
        self.bytes_since_increase += size_bytes
        if self.bytes_since_increase >= self.p.byte_counter_bytes:
            self.bytes_since_increase = 0
            self._increase(self.timer_rounds, self.byte_rounds)
            self.byte_rounds += 1

    def _on_timer(self, gen: int) -> None:
        if gen != self.timer_gen or self.rc >= self.line_rate_bps or self.qp.sender_done:
            return
        self._increase(self.timer_rounds, self.byte_rounds)
        self.timer_rounds += 1
        if self.rc < self.line_rate_bps:
            self.qp.sim.after(self.p.increase_timer_ps, self._timer_cb, gen)

    def _increase(self, t: int, b: int) -> None:
        """One increase event; ``t`` and ``b`` count the timer and byte events before it."""
        f = self.p.fast_recovery_rounds
        if max(t, b) < f:
            pass  # fast recovery: move halfway back towards the target rate
        elif min(t, b) > f:
            self.rt += (min(t, b) - f) * self.rate_hai_bps
        else:
            self.rt += self.rate_ai_bps
        self.rt = min(self.rt, float(self.line_rate_bps))
        self.rc = min((self.rt + self.rc) / 2, float(self.line_rate_bps))
        self.qp.set_rate(self.rc)
