"""TIMELY: RTT-gradient rate control (Mittal et al., SIGCOMM 2015).

Every ACK echoes its data packet's send time (``pkt.sent_ps``), so the sender measures the
round trip ``rtt = now - sent`` of every packet, as Swift does (the paper's NIC completion
timestamps; spraylab's receivers ACK at once). Once per round trip, on the first ACK of a packet
sent after the last update (the HPCC ns-3 model's ``RdmaHw::UpdateRateTimely``, whose
``m_lastUpdateSeq`` stands for the paper's per-completion-event update), the sender runs the
paper's Algorithm 1:

* ``rtt_diff = (1 - alpha) rtt_diff + alpha (rtt - prev_rtt)``, the EWMA of the RTT's change
  between updates, and ``gradient = rtt_diff / min_rtt``;
* **below** ``t_low``: additive increase, ``rate += delta``;
* **above** ``t_high``: ``rate *= 1 - beta (1 - t_high / rtt)``;
* **in between**, on the gradient: ``rate += N delta`` when ``gradient <= 0`` (``N = hai_n``,
  hyperactive increase, once the gradient has been negative for ``hai_n`` updates in a row,
  else ``N = 1``), ``rate *= 1 - beta x gradient`` (not below 0) when it is positive;
* the rate stays within ``[min_rate, line rate]`` and paces the queue pair (``qp.set_rate``).

The first ACK only records the RTT the next update compares with. It is a rate control: no
window beyond ``transport.window`` (the ns-3 model runs TIMELY with ``HAS_WIN 0``), and the
flow starts at line rate, as an RDMA NIC does. ``delta`` scales with the line rate (the ns-3
run.py's ``RATE_AI``). Parameters: :class:`TimelyParams` (``[transport.timely]``); the sources
of the defaults, and what they mean on a 400 Gb/s fabric, are in docs/congestion-control.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from pydantic import model_validator

from spraylab.core._core import TimelyKernel  # compiled: core/cc_timely.pxi
from spraylab.model.types import PositiveTimePs, RateBps, Section, param, to_params
from spraylab.transport.cc.base import CongestionControl, register_cc

if TYPE_CHECKING:
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair

# The paper (Algorithm 1) defines the rule; the numbers are the HPCC ns-3 model's
# (alibaba-edu/High-Precision-Congestion-Control, simulation/src/point-to-point/model/rdma-hw.cc,
# the RdmaHw attributes, and simulation/run.py's TIMELY configuration), the implementation the
# load-balancing papers' ns-3 code bases ship. Its thresholds are the paper's 10 Gb/s ones.


@dataclass(frozen=True, slots=True)
class TimelyParams:
    """TIMELY sender settings; each default names its public source."""

    # T_low: rdma-hw.cc "TimelyTLow" = 50000 ns (the paper's T_low = 50 us at 10 Gb/s).
    t_low_ps: int = 50_000_000
    # T_high: rdma-hw.cc "TimelyTHigh" = 500000 ns (the paper's T_high = 500 us).
    t_high_ps: int = 500_000_000
    # minRTT, the gradient's normalizer: rdma-hw.cc "TimelyMinRtt" = 20000 ns.
    min_rtt_ps: int = 20_000_000
    # alpha, the EWMA weight of the newest RTT difference: rdma-hw.cc "TimelyAlpha" = 0.875.
    alpha: float = 0.875
    # beta, the multiplicative decrease factor: rdma-hw.cc "TimelyBeta" = 0.8.
    beta: float = 0.8
    # delta, the additive step per update, per 100 Gb/s of line rate: run.py sets RATE_AI =
    # 10 x bw / 10 Mb/s for TIMELY (bw in Gb/s), 100 Mb/s at 100 Gb/s: the paper's 10 Mb/s at
    # 10 Gb/s, scaled with the line rate.
    rate_ai_bps_per_100g: int = 100_000_000
    # N, hyperactive increase: the paper's N = 5 (Algorithm 1); rdma-hw.cc switches to
    # RATE_HAI = 5 x RATE_AI (run.py: hai = 50 x bw / 10) after m_incStage 5 increases.
    hai_n: int = 5
    # The lowest rate a flow is cut to: run.py's MIN_RATE = 1000 Mb/s (every CC).
    min_rate_bps: int = 1_000_000_000


_TIMELY = TimelyParams()


class TimelySection(Section):
    """Defaults: ``spraylab.transport.cc.timely.TimelyParams`` (TIMELY paper, HPCC ns-3 model, with sources)."""

    t_low: PositiveTimePs = param(_TIMELY, "t_low_ps", description="RTT below which the rate grows by delta")
    t_high: PositiveTimePs = param(
        _TIMELY, "t_high_ps", description="RTT above which the rate is cut by beta (1 - t_high / rtt)"
    )
    min_rtt: PositiveTimePs = param(
        _TIMELY, "min_rtt_ps", description="minRTT, the RTT gradient's normalizer"
    )
    alpha: float = param(_TIMELY, "alpha", gt=0, le=1, description="EWMA weight of the newest RTT difference")
    beta: float = param(_TIMELY, "beta", gt=0, le=1, description="multiplicative decrease factor")
    rate_ai_per_100g: RateBps = param(
        _TIMELY,
        "rate_ai_bps_per_100g",
        description="additive increase delta per update, per 100 Gb/s of line rate",
    )
    hai_n: int = param(
        _TIMELY,
        "hai_n",
        ge=1,
        description="hyperactive increase: N x delta after N updates of negative gradient",
    )
    min_rate: RateBps = param(_TIMELY, "min_rate_bps", description="lowest rate a flow is cut to")

    @model_validator(mode="after")
    def _band(self) -> TimelySection:
        if self.t_low >= self.t_high:
            raise ValueError(
                f"transport.timely.t_low = {self.t_low} ps: must be below t_high = {self.t_high} ps"
            )
        return self

    def to_params(self) -> TimelyParams:
        return to_params(self, TimelyParams)


@register_cc
class Timely(TimelyKernel, CongestionControl):
    """Per-QP TIMELY state: the rate, the RTT-difference EWMA, the RTT of the last update and
    the run of negative gradients.

    The per-round-trip rule (Algorithm 1 above) is the compiled kernel's, ``TimelyKernel`` in
    ``core/cc_timely.pxi``, which the queue pair calls directly; this class sets its fields up
    once per queue pair."""

    name = "timely"
    summary = "TIMELY: rate from the RTT gradient (T_low, T_high, AI, MD, HAI), once per RTT"
    # The fluid engines' max-min rates are not its fixed point: the gradient rule has a
    # continuum of fixed points, none of them unique or fair (Zhu et al., CoNEXT'16).
    fluid_engine = False
    params_section: ClassVar[str] = "timely"
    section_model = TimelySection
    params_type = TimelyParams
    section_description = "TIMELY sender parameters, read when cc = 'timely' (docs/congestion-control.md)"

    __slots__ = ("p",)

    def __init__(self, qp: QueuePair, transport: TransportParams, line_rate_bps: int) -> None:
        super().__init__(qp, transport, line_rate_bps)  # the kernel binds its queue pair
        self.p = p = transport.cc_params["timely"]
        # the parameters the rule reads, as the kernel's own fields
        self.t_low_ps = p.t_low_ps
        self.t_high_ps = p.t_high_ps
        self.min_rtt_ps = p.min_rtt_ps
        self.hai_n = p.hai_n
        self.alpha = p.alpha
        self.beta = p.beta
        self.line_rate_f = float(line_rate_bps)
        self.delta_bps = p.rate_ai_bps_per_100g * line_rate_bps / 100e9
        self.min_rate_bps = float(min(p.min_rate_bps, line_rate_bps))
        self.rate_bps = float(line_rate_bps)  # an RDMA NIC starts at line rate
        self.rtt_diff_ps = 0.0
        self.last_gradient = 0.0
        self.prev_rtt_ps = 0
        self.last_update_psn = -1  # -1: no ACK seen yet (the first only records its RTT)
        self.last_delay_ps = 0
        self.neg_gradients = 0
        self.updates = 0
        self.increases = 0
        self.decreases = 0
