"""HPCC: High Precision Congestion Control (Li et al., SIGCOMM 2019), window and rate from
in-band telemetry.

Every switch egress port stamps each data packet with its queue, its transmitted bytes, a
timestamp and its rate (``spraylab.net.telemetry``; what each value is: ``IntRecord`` in
``spraylab.core``); the ACK echoes the record. Per ACK the sender (the paper's Algorithm 1):

* **measures the inflight bytes** of every hop against the previous sample of that same port:
  ``u = min(qlen, qlen_prev) / (B T) + txRate / B``, with ``txRate`` the bytes the port sent
  between the two samples over their time apart; the most loaded hop counts, and
  ``U = (1 - tau/T) U + (tau/T) u`` smooths it over one base RTT ``T``;
* **computes the window**: ``W = Wc / (U / eta) + W_AI`` when ``U >= eta`` or after
  ``max_stage`` additive steps, else ``W = Wc + W_AI``;
* **updates the reference window** ``Wc`` (and the stage) only once per round trip: on the
  first ACK that covers a packet sent after the last update (``ack PSN > lastUpdateSeq``,
  then ``lastUpdateSeq = snd_nxt``); the ACKs in between react from ``Wc`` without moving it
  (the ns-3 model's ``FastReact``);
* **sends** within ``W`` (``ceil(W / frame)`` full frames in flight: at least one) at the pace
  ``R = W / T``.

The previous sample is kept per port (the ns-3 model keeps it per hop index, and its flows
follow one path): a sprayed flow's consecutive ACKs cross different ports, and only two
samples of one port give that port's transmit rate. Parameters: :class:`HpccParams`
(``[transport.hpcc]``); the defaults, their sources and what differs from the ns-3 model are
in docs/congestion-control.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar
from weakref import WeakKeyDictionary

from spraylab.core._core import HpccKernel  # compiled: core/cc_hpcc.pxi
from spraylab.model.types import RateBps, Section, TimePs, param, to_params
from spraylab.transport.cc.base import CongestionControl, register_cc

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair

PS_PER_S = 1e12


@dataclass(frozen=True, slots=True)
class HpccParams:
    """HPCC sender settings; each default names its public source (docs/congestion-control.md
    tabulates them against the paper and the ns-3 model)."""

    # eta, the target utilization: 95% in the paper (section 3.3) and the ns-3 model
    # (RdmaHw "TargetUtil" = 0.95; run.py --utgt 95 -> U_TARGET 0.95).
    eta: float = 0.95
    # maxStage, additive steps before a multiplicative one: 5 in the paper's evaluation and
    # the ns-3 model's RdmaHw "MiThresh" default (its run.py passes --mi 0 unless told).
    max_stage: int = 5
    # W_AI as a rate, W_AI = rate_ai x T: the ns-3 run.py sets RATE_AI = 10 Mb/s per 25 Gb/s of
    # NIC rate for HPCC ("ai = 10 * bw / 25"), i.e. 40 Mb/s per 100 Gb/s. At 400 Gb/s and an
    # 8.3 us T that is W_AI = 166 B, the paper's W_init (1 - eta) / N for N = 125 flows.
    rate_ai_bps_per_100g: int = 40_000_000
    # The lowest rate a flow is cut to: the ns-3 run.py's MIN_RATE (1000 Mb/s, every CC).
    min_rate_bps: int = 1_000_000_000
    # T, the base RTT (0: the largest base RTT of the fabric's routes, as the ns-3 model's
    # GLOBAL_T = 1 takes the largest over all host pairs; see HpccParams users).
    base_rtt_ps: int = 0


_HPCC = HpccParams()


class HpccSection(Section):
    """Defaults: ``spraylab.transport.cc.hpcc.HpccParams`` (HPCC paper, ns-3 model, with sources)."""

    eta: float = param(_HPCC, "eta", gt=0, le=1, description="target utilization eta of every link")
    max_stage: int = param(
        _HPCC, "max_stage", ge=0, description="additive increase steps before a multiplicative one (maxStage)"
    )
    rate_ai_per_100g: RateBps = param(
        _HPCC,
        "rate_ai_bps_per_100g",
        description="additive increase W_AI as a rate (W_AI = rate x T), per 100 Gb/s of line rate",
    )
    min_rate: RateBps = param(_HPCC, "min_rate_bps", description="lowest rate (W / T) a flow is cut to")
    base_rtt: TimePs = param(
        _HPCC,
        "base_rtt_ps",
        description="T, the base round trip rate and window relate by; 0: the fabric's largest base RTT",
    )

    def to_params(self) -> HpccParams:
        return to_params(self, HpccParams)


# The fabric's largest base RTT, per network (traced once).
_FABRIC_RTT_PS: WeakKeyDictionary[Network, float] = WeakKeyDictionary()


def fabric_base_rtt_ps(net: Network, mtu_bytes: int) -> float:
    """The largest base RTT (``Route.base_rtt_ps``: a full frame out and its ACK back, queues
    empty) from the first host to every other host. On the symmetric fabrics spraylab builds
    that is the largest of any pair, at one trace per host instead of one per pair."""
    cached = _FABRIC_RTT_PS.get(net)
    if cached is None:
        from spraylab.net.routes import trace_route

        cached = 0.0
        for dst in range(1, len(net.hosts)):
            route = trace_route(net, 0, dst)
            if route.complete:
                cached = max(cached, route.base_rtt_ps(mtu_bytes))
        _FABRIC_RTT_PS[net] = cached
    return cached


@register_cc
class Hpcc(HpccKernel, CongestionControl):
    """Per-QP HPCC state: the reference window ``wc_bytes``, the smoothed utilization ``u``,
    the additive-increase stage and the last INT sample of every port seen.

    The per-ACK rule (Algorithm 1 above) is the compiled kernel's, ``HpccKernel`` in
    ``core/cc_hpcc.pxi``, which the queue pair calls directly; this class sets its fields up
    once per queue pair."""

    name = "hpcc"
    summary = "HPCC: window and rate from switch in-band telemetry (eta, maxStage, W_AI)"
    uses_int = True
    # It holds every link at eta of its capacity (5% below the max-min rates the fluid engines
    # give), and its start-up burst and queue are outside their model.
    fluid_engine = False
    params_section: ClassVar[str] = "hpcc"
    section_model = HpccSection
    params_type = HpccParams
    section_description = "HPCC sender parameters, read when cc = 'hpcc' (docs/congestion-control.md)"

    __slots__ = ("p",)

    def __init__(self, qp: QueuePair, transport: TransportParams, line_rate_bps: int) -> None:
        from spraylab.net.routes import trace_route

        super().__init__(qp, transport, line_rate_bps)  # the kernel binds its queue pair
        params = transport.cc_params["hpcc"]
        self.p = params
        base_rtt = float(params.base_rtt_ps)
        if not base_rtt:
            own = trace_route(qp.net, qp.src, qp.dst)
            base_rtt = max(
                fabric_base_rtt_ps(qp.net, qp.mtu), own.base_rtt_ps(qp.mtu) if own.complete else 0.0
            )
        self.base_rtt_ps = base_rtt
        self.line_rate_bps = line_rate_bps
        self.frame_bytes = qp.full_wire_bytes
        bytes_per_bps = base_rtt / (8 * PS_PER_S)  # a rate times T, in bytes
        self.w_max_bytes = line_rate_bps * bytes_per_bps  # W_init: one BDP at line rate
        self.w_min_bytes = min(params.min_rate_bps, line_rate_bps) * bytes_per_bps
        self.w_ai_bytes = params.rate_ai_bps_per_100g * line_rate_bps / 100e9 * bytes_per_bps
        # the parameters the rule reads, as the kernel's own fields
        self.eta = params.eta
        self.max_stage = params.max_stage
        self.wc_bytes = self.w_max_bytes
        self.w_bytes = self.w_max_bytes
        self.u = 1.0  # as the ns-3 model starts it
        self.inc_stage = 0
        self.last_update_psn = -1  # -1: no INT seen yet (the first ACK only sets the reference)
        self.updates = 0  # reference-window updates (one per round trip)
        self.apply(self.w_bytes)
