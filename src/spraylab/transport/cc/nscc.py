"""NSCC: the Ultra Ethernet 1.0 sender congestion control (network-signal-based), as uet-htsim
implements it (``UecSrc`` in ``htsim/sim/uec.cpp``, the UEC's reference simulator).

NSCC is a window in bytes over the bytes in flight (``QueuePair.set_cwnd_bytes``,
``inflight_bytes``), driven by two network signals each ACK carries: the **queueing delay** of
the acknowledged packet (its round trip less the flow's base RTT) and its **ECN mark**. Per ACK,
``n`` the bytes newly reported received:

====================  ====================  ==============================================
ECN mark              delay vs target       reaction
====================  ====================  ==============================================
no                    >= target             **fair increase**: ``inc += fi x n``
no                    < target              **proportional increase**: ``inc += alpha x n x
                                            (target - delay)``; or, after a window's worth
                                            of ACKs below ``fast_increase_delay``, **fast
                                            increase** ``cwnd += fast_increase_scale x n``
yes                   >= target             **multiplicative decrease** (at most once per base
                                            RTT): ``cwnd x= max(1 - gamma (avg - target) /
                                            avg, md_floor)`` on the smoothed delay ``avg``
yes                   < target              nothing (the load balancer's signal: a new path)
====================  ====================  ==============================================

The increases accumulate in ``inc`` and are applied together (``cwnd += inc / cwnd``) once the
bytes received since the last adjustment pass ``adjust_bytes_mtus`` packets or a network RTT has
passed; once per network RTT the window also grows by ``eta``. So per round trip a window grows
by about ``fi`` bytes when the queue is at or above target (every flow the same: fairness) and
by up to ``alpha x target`` when below (fast towards the target).

**Quick adapt**: once per ``base RTT + target`` the sender compares the bytes received in that
period with its window; after a loss (a NACK of a trimmed packet) or a delay above
``qa_threshold_targets x target``, if they are below ``max window / 2^qa_gate`` the window drops
at once to what was received, and the ACKs of what was in flight then are ignored.

**NACK of a trimmed packet** (a ``uec`` recovery, ``Recovery.nacks_trimmed``): the window loses
the packet's bytes (unless quick adapt just acted), the smoothed delay takes a network RTT as its
sample, and quick adapt is armed. A **timeout** takes one packet's bytes off the window.

**Base RTT and window bounds**: a flow starts from the network's largest unloaded RTT (or
``base_rtt``) and lowers it to any smaller round trip it measures; the window stays between one
full frame and ``max_window_bdp`` x its base-RTT BDP, and starts at that maximum.

The constants scale with the network, as the specification's parameters do: with ``a`` the
network BDP over a reference BDP (100 Gb/s x 12 us) and ``b`` the target over the reference RTT,
``fi = fair_increase_mss x MSS x a``, ``alpha = proportional_increase_mss x MSS x a x b /
target``, ``eta = eta_mss x MSS x a`` and ``fast_increase_scale`` is multiplied by ``a``.
Parameters: :class:`NsccParams` (``[transport.nscc]``); every default, its source and what
differs from uet-htsim are in docs/congestion-control.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from spraylab.core._core import NsccKernel  # compiled: core/cc_nscc.pxi
from spraylab.model.types import PositiveTimePs, RateBps, Section, TimePs, param, to_params
from spraylab.transport.cc.base import CongestionControl, register_cc
from spraylab.transport.cc.hpcc import fabric_base_rtt_ps

if TYPE_CHECKING:
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair

PS_PER_S = 1e12

# Sources, cited per default below:
#   [spec]  Ultra Ethernet Specification 1.0 (UEC, June 2025), the UET congestion-management
#           sublayer (CMS, section 3.6): NSCC, its signals, quadrants and scaled parameters.
#   [htsim] uet-htsim (github.com/ultraethernet/uet-htsim, commit 40ccb05), htsim/sim/uec.cpp:
#           UecSrc::initNsccParams, initNscc, quick_adapt, fair_increase, proportional_increase,
#           fast_increase, multiplicative_decrease, fulfill_adjustment, update_delay,
#           updateCwndOnNack_NSCC; htsim/sim/datacenter/main_uec.cpp for the network RTT.


@dataclass(frozen=True, slots=True)
class NsccParams:
    """NSCC sender settings; each default names its source (module comment above)."""

    # Target queueing delay; 0: 0.75 x the network RTT on a trimming fabric, 1 x without
    # ([htsim] initNsccParams; [spec] the target delay derived from the network RTT).
    target_qdelay_ps: int = 0
    # Multiplicative-decrease gain gamma = 0.8 ([htsim] initNsccParams "_gamma"; [spec]).
    gamma: float = 0.8
    # Floor of one decrease factor: at most halving ([htsim] multiplicative_decrease, 0.5).
    md_floor: float = 0.5
    # EWMA gain of the smoothed delay: 0.0125 ([htsim] initNsccParams "_delay_alpha").
    delay_ewma: float = 0.0125
    # Fair increase per round trip, in MSS x a: 5 ([htsim] "_fi = 5 * _mss * a"; [spec]).
    fair_increase_mss: float = 5.0
    # Proportional increase at zero delay per round trip, in MSS x a x b: 4 ([htsim] "_alpha
    # = 4 * _mss * a * b / target"; [spec]).
    proportional_increase_mss: float = 4.0
    # Window growth once per network RTT, in MSS x a: 0.15 ([htsim] "_eta = 0.15 * _mss * a").
    eta_mss: float = 0.15
    # Fast increase: cwnd += scale x a x acked bytes, 0.25 ([htsim] "_fi_scale = .25 * a") ...
    fast_increase_scale: float = 0.25
    # ... once delays stayed below 1 us for a window's worth of bytes ([htsim] fast_increase).
    fast_increase_delay_ps: int = 1_000_000
    # Quick adapt on, as in uet-htsim by default ([htsim] "_disable_quick_adapt = false"; [spec]).
    quick_adapt: bool = True
    # Quick adapt acts only when the bytes received in a period are below max window / 2^3
    # ([htsim] initNsccParams: qa_gate 3 unless -qa_gate is given).
    qa_gate: int = 3
    # ... and, without a loss, only on a delay above 4 x target ([htsim] "_qa_threshold").
    qa_threshold_targets: float = 4.0
    # Window cap: 1.5 x the base-RTT BDP, also the initial window ([htsim] initNscc, setMaxWnd).
    max_window_bdp: float = 1.5
    # Increases are applied after 8 MTUs received (or a network RTT) ([htsim] initNsccParams
    # "_adjust_bytes_threshold = 8 * _mtu", "_adjust_period_threshold = _network_rtt").
    adjust_bytes_mtus: int = 8
    # The reference network the constants scale from: 100 Gb/s, 12 us ([htsim] initNsccParams
    # "_reference_network_linkspeed", "_reference_network_rtt"; [spec] scaling factors).
    reference_rate_bps: int = 100_000_000_000
    reference_rtt_ps: int = 12_000_000
    # The network RTT; 0: the fabric's largest unloaded RTT (a full frame out and its ACK
    # back), as main_uec.cpp's calculate_rtt gives every flow ([htsim]; -enable_accurate_base_rtt
    # off).
    base_rtt_ps: int = 0


_NSCC = NsccParams()


class NsccSection(Section):
    """Defaults: ``spraylab.transport.cc.nscc.NsccParams`` (UEC 1.0 spec, uet-htsim, with sources)."""

    target_qdelay: TimePs = param(
        _NSCC,
        "target_qdelay_ps",
        description="target queueing delay; 0: 0.75 x network RTT with switch.trimming, else 1 x",
    )
    gamma: float = param(_NSCC, "gamma", gt=0, le=1, description="multiplicative decrease gain")
    md_floor: float = param(
        _NSCC, "md_floor", gt=0, le=1, description="smallest factor of one multiplicative decrease"
    )
    delay_ewma: float = param(_NSCC, "delay_ewma", gt=0, le=1, description="EWMA gain of the smoothed delay")
    fair_increase_mss: float = param(
        _NSCC,
        "fair_increase_mss",
        ge=0,
        description="fair increase per round trip, MSS x network BDP / 150 KB",
    )
    proportional_increase_mss: float = param(
        _NSCC,
        "proportional_increase_mss",
        ge=0,
        description="proportional increase per round trip at zero delay, MSS x BDP scale x target / 12 us",
    )
    eta_mss: float = param(
        _NSCC, "eta_mss", ge=0, description="window growth per network RTT, MSS x BDP scale"
    )
    fast_increase_scale: float = param(
        _NSCC,
        "fast_increase_scale",
        ge=0,
        description="fast increase: window bytes per acked byte x BDP scale",
    )
    fast_increase_delay: TimePs = param(
        _NSCC, "fast_increase_delay_ps", description="fast increase after a window of ACKs below this delay"
    )
    quick_adapt: bool = param(
        _NSCC, "quick_adapt", description="quick adapt: cut the window to what was received"
    )
    qa_gate: int = param(
        _NSCC, "qa_gate", ge=0, le=30, description="quick adapt only below max window / 2^qa_gate received"
    )
    qa_threshold_targets: float = param(
        _NSCC, "qa_threshold_targets", gt=0, description="quick adapt on a delay above this many targets"
    )
    max_window_bdp: float = param(
        _NSCC, "max_window_bdp", gt=0, description="window cap (and start) in base-RTT BDPs"
    )
    adjust_bytes_mtus: int = param(
        _NSCC, "adjust_bytes_mtus", ge=1, description="apply the increases after this many MTUs received"
    )
    reference_rate: RateBps = param(
        _NSCC, "reference_rate_bps", description="reference rate the constants scale from"
    )
    reference_rtt: PositiveTimePs = param(
        _NSCC, "reference_rtt_ps", description="reference RTT the constants scale from"
    )
    base_rtt: TimePs = param(
        _NSCC, "base_rtt_ps", description="network RTT every flow starts from; 0: the fabric's largest"
    )

    def to_params(self) -> NsccParams:
        return to_params(self, NsccParams)


@register_cc
class Nscc(NsccKernel, CongestionControl):
    """Per-QP NSCC state: the window ``cwnd_bytes``, the base RTT, the smoothed delay and the
    increase, quick-adapt and fast-increase bookkeeping. Counters (``fair``, ``proportional``,
    ``fast``, ``decreases``, ``quick_adapts``, ``nack_cuts``) count the reactions taken.

    The per-ACK, per-NACK and timeout rules (the module docstring's table, quick adapt, the
    adjustment) are the compiled kernel's, ``NsccKernel`` in ``core/cc_nscc.pxi``, which the
    queue pair calls directly; this class sets its fields up once per queue pair."""

    name = "nscc"
    summary = "NSCC (UEC 1.0, as uet-htsim): byte window from queueing delay and ECN; trimmed NACKs cut it"
    # A window on delay and ECN, with a start-up at 1.5 BDP: outside the fluid engines' model.
    fluid_engine = False
    params_section: ClassVar[str] = "nscc"
    section_model = NsccSection
    params_type = NsccParams
    section_description = "NSCC sender parameters, read when cc = 'nscc' (docs/congestion-control.md)"

    __slots__ = ("p",)

    def __init__(self, qp: QueuePair, transport: TransportParams, line_rate_bps: int) -> None:
        super().__init__(qp, transport, line_rate_bps)  # the kernel binds its queue pair
        p = transport.cc_params["nscc"]
        self.p = p
        net = qp.net
        self.frame_bytes = qp.full_wire_bytes
        self.line_bytes_per_ps = line_rate_bps / (8 * PS_PER_S)
        network_rtt = float(p.base_rtt_ps) or fabric_base_rtt_ps(net, qp.mtu)
        self.network_rtt_ps = network_rtt
        trimming = bool(net.switch_params.trimming)
        target = float(p.target_qdelay_ps) or (0.75 * network_rtt if trimming else network_rtt)
        self.target_ps = target
        mss = qp.mtu
        a = (network_rtt * line_rate_bps) / (p.reference_rtt_ps * p.reference_rate_bps)
        b = target / p.reference_rtt_ps
        self.fi = p.fair_increase_mss * mss * a
        self.alpha = p.proportional_increase_mss * mss * a * b / target  # bytes per ps of headroom
        self.eta = p.eta_mss * mss * a
        self.fi_scale = p.fast_increase_scale * a
        self.qa_threshold_ps = p.qa_threshold_targets * target
        self.adjust_bytes = p.adjust_bytes_mtus * self.frame_bytes
        # the parameters the rules read per ACK, as the kernel's own fields
        self.delay_ewma = p.delay_ewma
        self.gamma = p.gamma
        self.md_floor = p.md_floor
        self.max_window_bdp = p.max_window_bdp
        self.fast_increase_delay_ps = p.fast_increase_delay_ps
        self.quick_adapt = p.quick_adapt
        self.qa_gate = p.qa_gate
        self.min_cwnd = float(self.frame_bytes)
        self.base_rtt_ps = network_rtt
        self.max_cwnd = max(self.min_cwnd, p.max_window_bdp * network_rtt * self.line_bytes_per_ps)
        self.cwnd = self.max_cwnd
        # Only a NACK that answers a trimmed header is a congestion signal; a go-back-N or
        # selective-repeat NACK reports reordering.
        from spraylab.transport.recovery.base import RECOVERIES

        self.reacts_to_nack = RECOVERIES.get(transport.recovery).nacks_trimmed
        self.heard = 0  # packets the receiver reported received (SACK count or cumulative PSN)
        self.avg_delay_ps = 0.0
        self.inc = 0.0
        self.achieved = 0  # bytes received in this quick-adapt period
        self.received = 0  # bytes received since the last adjustment
        self.to_ignore = 0
        self.ignored = 0
        self.fi_count = 0
        self.increasing = False
        self.trigger_qa = False
        self.qa_end_ps = 0
        self.last_adjust_ps = 0
        self.last_dec_ps = 0
        self.fair = self.proportional = self.fast = self.decreases = self.quick_adapts = self.nack_cuts = 0
        qp.set_cwnd_bytes(int(self.cwnd))
