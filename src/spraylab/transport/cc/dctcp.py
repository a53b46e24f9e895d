"""DCTCP for RDMA: ECN window control (Alizadeh et al., SIGCOMM 2010; RFC 8257).

The switches mark a data packet whose queue exceeds K (``switch.ecn_kmin_per_100g`` =
``ecn_kmax_per_100g`` = K gives DCTCP's step mark; :func:`dctcp_k_bytes_per_100g` is the
paper's lower bound for K) and the ACK echoes the mark (``pkt.ecn``; a marked packet is
acknowledged at once). Per ACK the sender:

* **counts** the packets the ACK newly acknowledges, and those of them it echoes a mark for;
* **estimates** once per window of data (when the cumulative ACK passes the ``snd_nxt`` of the
  previous estimate, RFC 8257 section 3.3's ``DCTCP.WindowEnd``) the marked fraction ``F`` of
  that window and ``alpha <- (1 - g) alpha + g F``;
* **cuts** at the first marked ACK of a window: ``W <- W (1 - alpha / 2)``, then not again
  until the ACKs cover what was sent before the cut (at most once per window);
* **increases** otherwise by one packet per window (``W += ai x acked / W``: TCP's congestion
  avoidance, which DCTCP keeps), not while a cut's window is outstanding (TCP's CWR state).

An RDMA NIC has no slow start: the flow starts at line rate with one BDP in flight (the base
RTT of the fabric's longest route, as HPCC's ``W_init``), which also caps ``W``: a window
beyond a BDP at line rate only queues. ``W`` is sent as ``floor(W)`` full frames in flight,
at least one. Parameters: :class:`DctcpParams` (``[transport.dctcp]``); the sources of the
defaults are in docs/congestion-control.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from spraylab.core._core import DctcpKernel  # compiled: core/cc_dctcp.pxi
from spraylab.model.types import Section, param, to_params
from spraylab.transport.cc.base import CongestionControl, line_rate_bdp_packets, register_cc

if TYPE_CHECKING:
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair

PS_PER_S = 1e12


@dataclass(frozen=True, slots=True)
class DctcpParams:
    """DCTCP sender settings; each default names its public source."""

    # g, the estimation gain: 1/16, the value of the paper's experiments and RFC 8257's
    # recommended default (its estimator: section 3.3); within the paper's stability bound
    # g < 1.386 / sqrt(2 (C x RTT + K)) (section 3.3): 0.09 at 400 Gb/s, 8.3 us and K = 14 frames.
    g: float = 1 / 16
    # alpha at the start: 1, the conservative choice (the first marks halve the window, as TCP
    # would), Linux's default (net/ipv4/tcp_dctcp.c: dctcp_alpha_on_init = DCTCP_MAX_ALPHA).
    alpha_init: float = 1.0
    # Additive increase in packets per window: one, TCP's congestion avoidance, which DCTCP
    # leaves unchanged (paper section 3.1; RFC 8257 section 3.3 changes only the decrease).
    ai_packets: float = 1.0
    # The smallest window in packets: one full frame, TCP's floor after a cut (RFC 5681), which
    # DCTCP keeps; a window of less than a frame cannot send.
    min_window_packets: float = 1.0


_DCTCP = DctcpParams()


class DctcpSection(Section):
    """Defaults: ``spraylab.transport.cc.dctcp.DctcpParams`` (DCTCP paper, RFC 8257, with sources)."""

    g: float = param(_DCTCP, "g", gt=0, le=1, description="estimation gain g of alpha")
    alpha_init: float = param(_DCTCP, "alpha_init", ge=0, le=1, description="alpha before the first window")
    ai_packets: float = param(_DCTCP, "ai_packets", gt=0, description="additive increase, packets per window")
    min_window_packets: float = param(
        _DCTCP, "min_window_packets", ge=1, description="smallest window after a cut, in full frames"
    )

    def to_params(self) -> DctcpParams:
        return to_params(self, DctcpParams)


def dctcp_k_bytes_per_100g(base_rtt_ps: float) -> float:
    """The DCTCP paper's lower bound on the marking threshold, ``K > C x RTT / 7`` (section
    3.3, "Guidelines for choosing parameters": with it the queue's sawtooth never empties the
    link), per 100 Gb/s of port rate as ``switch.ecn_kmin_per_100g`` is given."""
    return 100e9 * base_rtt_ps / (8 * PS_PER_S) / 7


@register_cc
class Dctcp(DctcpKernel, CongestionControl):
    """Per-QP DCTCP state: the window ``w`` (packets), ``alpha``, the current observation
    window's acknowledged and marked packets and the PSNs that end the observation window and
    the last cut's window.

    The per-ACK rule (count, estimate, cut, increase) is the compiled kernel's, ``DctcpKernel``
    in ``core/cc_dctcp.pxi``, which the queue pair calls directly; this class sets its fields
    up once per queue pair."""

    name = "dctcp"
    summary = "DCTCP: ECN window control, alpha from the marked fraction per window (g = 1/16)"
    params_section: ClassVar[str] = "dctcp"
    section_model = DctcpSection
    params_type = DctcpParams
    section_description = "DCTCP sender parameters, read when cc = 'dctcp' (docs/congestion-control.md)"
    # The fluid engines run it at max-min fair rates: equal flows on a bottleneck converge to
    # equal windows under its AIMD (Chiu and Jain; tests/test_dctcp.py), as under DCQCN.
    fluid_engine = True

    __slots__ = ("p",)

    def __init__(self, qp: QueuePair, transport: TransportParams, line_rate_bps: int) -> None:
        super().__init__(qp, transport, line_rate_bps)  # the kernel binds its queue pair
        self.p = params = transport.cc_params["dctcp"]
        # the parameters the rule reads, as the kernel's own fields
        self.g = params.g
        self.ai_packets = params.ai_packets
        self.min_window_packets = params.min_window_packets
        # one BDP at line rate in full frames: the start window and the largest useful one
        self.w_max = max(params.min_window_packets, line_rate_bdp_packets(qp, line_rate_bps))
        self.w = self.w_max
        self.alpha = params.alpha_init
        self.acked = 0
        self.marked = 0
        self.window_end_psn = 0  # the first ACK beyond PSN 0 closes the first window
        self.cut_end_psn = -1  # no cut yet
        self.cuts = 0
        qp.set_window(math.floor(self.w))
