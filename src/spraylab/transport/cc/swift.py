"""Swift: delay-based window control (Kumar et al., SIGCOMM 2020).

Every ACK echoes its data packet's send time (``pkt.sent_ps``), so the sender measures the
round trip ``delay = now - sent`` of every packet: the fabric delay the paper measures with NIC
timestamps (spraylab's receivers ACK at once, so there is no endpoint delay to take out). Per
ACK (the paper's Algorithm 1):

* the **target delay** is ``base_target + hops x hop_scale + fs(cwnd)`` (section 3.2): the
  hops are the switches of the flow's route (:func:`~spraylab.transport.cc.base.switch_hops`),
  and flow scaling ``fs = clamp(a / sqrt(cwnd) + b, 0, fs_range)`` with ``a = fs_range /
  (1 / sqrt(fs_min_cwnd) - 1 / sqrt(fs_max_cwnd))`` and ``b = -a / sqrt(fs_max_cwnd)`` raises
  the target of flows with small windows, so many flows sharing a link still converge;
* **below the target**, additive increase of ``ai`` packets per round trip: ``cwnd += ai x
  acked / cwnd`` (``cwnd += ai x acked`` below one packet);
* **at or above it**, multiplicative decrease at most once per round trip (``now - t_last_decrease
  >= rtt``, ``rtt`` this ACK's delay): ``cwnd *= max(1 - beta (delay - target) / delay,
  1 - max_mdf)``;
* ``cwnd`` stays within ``[min_cwnd, max_cwnd]``; at one packet or more the queue pair sends
  ``floor(cwnd)`` full frames in flight at line rate; below one packet it sends one frame at a
  time **paced** at ``cwnd`` frames per ``rtt`` (``qp.set_rate``), the paper's
  ``pacing_delay = rtt / cwnd``.

An RDMA NIC has no slow start: the flow starts at line rate with one BDP in flight (the base
RTT of the fabric's longest route, as HPCC's ``W_init``). The paper's reactions to
retransmissions (a cut per fast recovery or timeout) are not modelled: the congestion-control
hooks of this version see ACKs only. Parameters: :class:`SwiftParams` (``[transport.swift]``);
the sources of the defaults are in docs/congestion-control.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from pydantic import model_validator

from spraylab.core._core import SwiftKernel  # compiled: core/cc_swift.pxi
from spraylab.model.types import Bytes, PositiveTimePs, Section, TimePs, param, to_params
from spraylab.transport.cc.base import CongestionControl, line_rate_bdp_packets, register_cc, switch_hops

if TYPE_CHECKING:
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair

# The paper (Algorithm 1, section 3) defines the formulas; the numbers below are those of
# Broadcom's htsim Swift model (csg-htsim sim/swift.cpp, the SwiftSrc constructor), the public
# implementation the field compares against, which itself marks several of them as estimates.


@dataclass(frozen=True, slots=True)
class SwiftParams:
    """Swift sender settings; each default names its public source."""

    # base_target: csg-htsim SwiftSrc _base_delay = 20 us (Algorithm 1's base target,
    # section 3.2).
    base_target_ps: int = 20_000_000
    # h, the target added per switch hop: csg-htsim _h = _base_delay / 6.55 (section 3.2,
    # topology-based scaling).
    hop_scale_ps: int = 3_053_435
    # fs_range: csg-htsim _fs_range = 5 x _base_delay (section 3.2, flow-based scaling).
    fs_range_ps: int = 100_000_000
    # fs_min_cwnd / fs_max_cwnd, the windows (packets) at which flow scaling is fs_range / 0:
    # csg-htsim _fs_min_cwnd = 0.1, _fs_max_cwnd = 100.
    fs_min_cwnd: float = 0.1
    fs_max_cwnd: float = 100.0
    # ai, packets per round trip below the target: csg-htsim _ai = 1.0 (Algorithm 1's ai).
    ai: float = 1.0
    # beta, the decrease per unit of relative excess delay: csg-htsim _beta = 0.8.
    beta: float = 0.8
    # max_mdf, the largest cut at once: csg-htsim _max_mdf = 0.5.
    max_mdf: float = 0.5
    # min_cwnd in bytes: csg-htsim _min_cwnd = 10 (bytes; pacing below one packet).
    min_cwnd_bytes: int = 10
    # max_cwnd in packets: csg-htsim _max_cwnd = 1000 x _mss.
    max_cwnd: float = 1000.0


_SWIFT = SwiftParams()


class SwiftSection(Section):
    """Defaults: ``spraylab.transport.cc.swift.SwiftParams`` (Swift paper, csg-htsim, with sources)."""

    base_target: PositiveTimePs = param(_SWIFT, "base_target_ps", description="base target delay")
    hop_scale: TimePs = param(_SWIFT, "hop_scale_ps", description="target delay added per switch hop (h)")
    fs_range: TimePs = param(_SWIFT, "fs_range_ps", description="largest target delay flow scaling adds")
    fs_min_cwnd: float = param(
        _SWIFT, "fs_min_cwnd", gt=0, description="window (packets) at which flow scaling adds fs_range"
    )
    fs_max_cwnd: float = param(_SWIFT, "fs_max_cwnd", gt=0, description="window (packets) at which it adds 0")
    ai: float = param(_SWIFT, "ai", gt=0, description="additive increase, packets per round trip")
    beta: float = param(_SWIFT, "beta", gt=0, description="multiplicative decrease per relative excess delay")
    max_mdf: float = param(
        _SWIFT, "max_mdf", gt=0, lt=1, description="largest multiplicative decrease at once"
    )
    min_cwnd: Bytes = param(
        _SWIFT, "min_cwnd_bytes", gt=0, description="smallest window (paced below a packet)"
    )
    max_cwnd: float = param(_SWIFT, "max_cwnd", ge=1, description="largest window, in packets")

    @model_validator(mode="after")
    def _fs_windows(self) -> SwiftSection:
        if self.fs_min_cwnd >= self.fs_max_cwnd:
            raise ValueError(
                f"transport.swift.fs_min_cwnd = {self.fs_min_cwnd}: must be below fs_max_cwnd = {self.fs_max_cwnd}"
            )
        return self

    def to_params(self) -> SwiftParams:
        return to_params(self, SwiftParams)


@register_cc
class Swift(SwiftKernel, CongestionControl):
    """Per-QP Swift state: the window ``cwnd`` (packets, fractional), the fixed part of the
    target (base and hops) and the time of the last decrease.

    The per-ACK rule (target, increase, decrease, pacing below one frame) is the compiled
    kernel's, ``SwiftKernel`` in ``core/cc_swift.pxi``, which the queue pair calls directly
    (``target_ps(cwnd)`` too); this class sets its fields up once per queue pair."""

    name = "swift"
    summary = "Swift: delay-based window (target = base + hops + flow scaling), AI/MD on the RTT"
    params_section: ClassVar[str] = "swift"
    section_model = SwiftSection
    params_type = SwiftParams
    section_description = "Swift sender parameters, read when cc = 'swift' (docs/congestion-control.md)"
    # The fluid engines run it at max-min fair rates: equal flows on a bottleneck converge to
    # equal windows under its AIMD (Chiu and Jain; tests/test_swift.py), as under DCQCN.
    fluid_engine = True

    __slots__ = ("p",)

    def __init__(self, qp: QueuePair, transport: TransportParams, line_rate_bps: int) -> None:
        super().__init__(qp, transport, line_rate_bps)  # the kernel binds its queue pair
        self.p = p = transport.cc_params["swift"]
        self.line_rate_bps = line_rate_bps
        self.frame_bytes = qp.full_wire_bytes
        self.hops = switch_hops(qp)
        self.fixed_target_ps = p.base_target_ps + self.hops * p.hop_scale_ps
        self.fs_a = p.fs_range_ps / (1 / math.sqrt(p.fs_min_cwnd) - 1 / math.sqrt(p.fs_max_cwnd))
        self.fs_b = -self.fs_a / math.sqrt(p.fs_max_cwnd)
        self.min_cwnd = p.min_cwnd_bytes / self.frame_bytes
        # the parameters the rule reads, as the kernel's own fields
        self.fs_range_ps = p.fs_range_ps
        self.max_cwnd = p.max_cwnd
        self.ai = p.ai
        self.beta = p.beta
        self.max_mdf = p.max_mdf
        self.cwnd = min(max(line_rate_bdp_packets(qp, line_rate_bps), 1.0), p.max_cwnd)
        self.last_decrease_ps = -(1 << 62)
        self.paced = False
        self.decreases = 0
        self.last_delay_ps = 0
        self.last_target_ps = 0.0
        qp.set_window(math.floor(self.cwnd))
