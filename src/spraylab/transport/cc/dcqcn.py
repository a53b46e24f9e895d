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

from spraylab.core._core import DcqcnKernel  # compiled: core/cc_dcqcn.pxi
from spraylab.transport.cc.base import CongestionControl, register_cc
from spraylab.transport.params import DcqcnParams, DcqcnSection

if TYPE_CHECKING:
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair


@register_cc
class Dcqcn(DcqcnKernel, CongestionControl):
    """Per-QP DCQCN state. Timers are real events only while they matter: the decrease check
    when a CNP arrived, the increase timer while below line rate.

    The rules above (alpha, the decrease tick, the increase events) are the compiled kernel's,
    ``DcqcnKernel`` in ``core/cc_dcqcn.pxi``, which the queue pair calls directly; this class
    sets its fields up once per queue pair."""

    name = "dcqcn"
    summary = "DCQCN reaction point with ConnectX firmware timing (CNP-driven rate control)"
    uses_cnp = True
    params_section: ClassVar[str] = "dcqcn"
    section_model = DcqcnSection
    params_type = DcqcnParams
    section_description = "DCQCN reaction-point parameters (docs/congestion-control.md)"

    __slots__ = ("p",)

    def __init__(self, qp: QueuePair, transport: TransportParams, line_rate_bps: int) -> None:
        super().__init__(qp, transport, line_rate_bps)  # the kernel binds its queue pair
        params = transport.cc_params["dcqcn"]
        self.p = params
        self.line_rate_bps = line_rate_bps
        self.rate_ai_bps = params.rate_ai_bps_per_100g * line_rate_bps // 100_000_000_000
        self.rate_hai_bps = params.rate_hai_bps_per_100g * line_rate_bps // 100_000_000_000
        # the parameters the rules read, as the kernel's own fields
        self.g = params.g
        self.alpha_timer_ps = params.alpha_timer_ps
        self.rate_decrease_interval_ps = params.rate_decrease_interval_ps
        self.increase_timer_ps = params.increase_timer_ps
        self.byte_counter_bytes = params.byte_counter_bytes
        self.fast_recovery_rounds = params.fast_recovery_rounds
        self.min_rate_bps = params.min_rate_bps
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
