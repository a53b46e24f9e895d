"""Transport settings as plain values the hot path reads (built from the validated scenario)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spraylab.model.types import PositiveBytes, PositiveTimePs, RateBps, Section, TimePs, param, to_params
from spraylab.net.framing import DATA_OVERHEAD_BYTES

# Bytes ``ack_every_bytes`` counts per data packet beyond its payload, per ``ack_bytes`` rule.
# htsim's UEC sink adds each packet's size() (its MSS plus UecSrc::_hdr_size = 64 B) to the
# bytes it has accepted and ACKs when they reach 16384: with its 4150 B MTU that is every 4th
# packet, where counting the 4086 B payload alone would ACK every 5th.
HTSIM_UEC_HEADER_BYTES = 64
ACK_COUNTED_HEADER_BYTES = {"payload": 0, "wire": DATA_OVERHEAD_BYTES, "htsim": HTSIM_UEC_HEADER_BYTES}


@dataclass(frozen=True, slots=True)
class DcqcnParams:
    """DCQCN reaction-point settings. Every default is the ConnectX firmware default as
    ``mlxconfig`` reports it (parameter name in brackets) unless the comment says otherwise;
    docs/congestion-control.md tabulates them against the DCQCN paper and the HPCC ns-3 model
    and says why each was chosen where the sources disagree."""

    # [DCE_TCP_G = 1019]: alpha <- (1019/1024) alpha (+ 5/1024 with a CNP), i.e. g = 5/1024.
    g: float = 5 / 1024
    # [DCE_TCP_RTT = 1 us]: alpha update period.
    alpha_timer_ps: int = 1_000_000
    # [RATE_REDUCE_MONITOR_PERIOD = 4 us]: at most one cut per period.
    rate_decrease_interval_ps: int = 4_000_000
    # [RPG_TIME_RESET = 300 us]: the increase timer.
    increase_timer_ps: int = 300_000_000
    # [RPG_BYTE_RESET = 32767]: "transmitted data between rate increases ... given in bytes"
    # (the firmware tools' and Linux dcbnl's ieee_qcn description of the field).
    byte_counter_bytes: int = 32767
    # [RPG_THRESHOLD = 1]: increase events in fast recovery before additive increase.
    fast_recovery_rounds: int = 1
    # ConnectX's steps are absolute ([RPG_AI_RATE = 5], [RPG_HAI_RATE = 50] Mb/s). They are
    # scaled with line rate here, as the HPCC/ConWeave ns-3 models scale theirs: with the
    # absolute 5 Mb/s a target clamped low after an increase-timer event climbs 0.1% per
    # event at 400 Gb/s, and an 8:1 incast takes 26x its ideal time in this model.
    rate_ai_bps_per_100g: int = 40_000_000
    rate_hai_bps_per_100g: int = 200_000_000
    # ConnectX's floor is [RPG_MIN_RATE = 1 Mb/s]; the HPCC ns-3 model's MIN_RATE, 100 Mb/s,
    # is kept: a flow cut to 1 Mb/s in an incast needs 262 ms to send one byte-counter's worth,
    # so its recovery waits on the 300 us timer, and a 16:1 incast took 13x its ideal time.
    min_rate_bps: int = 100_000_000
    # [MIN_TIME_BETWEEN_CNPS = 4 us] at the notification point (the receiving NIC).
    cnp_interval_ps: int = 4_000_000


_DCQCN = DcqcnParams()


class DcqcnSection(Section):
    """Defaults: ``spraylab.transport.params.DcqcnParams`` (ConnectX firmware, with sources)."""

    g: float = param(_DCQCN, "g", gt=0, le=1)
    alpha_timer: PositiveTimePs = param(_DCQCN, "alpha_timer_ps")
    rate_decrease_interval: PositiveTimePs = param(_DCQCN, "rate_decrease_interval_ps")
    increase_timer: PositiveTimePs = param(_DCQCN, "increase_timer_ps")
    byte_counter: PositiveBytes = param(_DCQCN, "byte_counter_bytes")
    fast_recovery_rounds: int = param(_DCQCN, "fast_recovery_rounds", ge=0)
    rate_ai_per_100g: RateBps = param(_DCQCN, "rate_ai_bps_per_100g")
    rate_hai_per_100g: RateBps = param(_DCQCN, "rate_hai_bps_per_100g")
    min_rate: RateBps = param(_DCQCN, "min_rate_bps")
    cnp_interval: TimePs = param(_DCQCN, "cnp_interval_ps")

    def to_params(self) -> DcqcnParams:
        return to_params(self, DcqcnParams)


def default_cc_params() -> dict[str, Any]:
    """Every registered congestion control's parameters at their defaults, by section key."""
    from spraylab.transport.cc.base import cc_sections

    return {key: cc.params_type() for key, cc in cc_sections().items()}  # type: ignore[misc]


@dataclass(frozen=True, slots=True)
class TransportParams:
    cc: str = "dcqcn"  # a registered congestion control (spraylab.transport.cc)
    recovery: str = "gbn"  # a registered recovery mode (spraylab.transport.recovery)
    mtu_bytes: int = 4096
    ooo_bitmap_packets: int = 128
    cnp_on_ooo: bool | None = None  # None: the recovery mode's default (on for go-back-N, as ConnectX)
    nack_timer_ps: int = 4_000_000
    rto_ps: int = 1_000_000_000
    ack_every: int = 1  # ACK every n accepted packets; 0 = off (see transport.receiver)
    ack_every_bytes: int = 0  # ... or every n counted bytes; 0 = off
    # Which bytes of a data packet ack_every_bytes counts: "payload" (its message bytes),
    # "wire" (payload + the 82 B RoCEv2 framing spraylab puts on the link) or "htsim"
    # (payload + the 64 B header htsim's UEC sink adds to each packet's count), so an htsim
    # workload can get htsim's ACK count (transport.receiver, ACK_COUNTED_HEADER_BYTES).
    ack_bytes: str = "payload"
    ack_delay_ps: int = 0  # ... or this long after the first unacknowledged packet; 0 = off
    # Cap on bytes in flight per flow: 0 = none, or "bdp" = one base round trip of the flow's
    # route at line rate (IRN's BDP-FC; ConnectX's lossy-RoCE "TX window", off by default).
    window_bytes: int | str = 0
    # Each congestion control's own parameters by its section key (``cc_params["nscc"]``, an
    # NsccParams): one entry per registered control with a ``params_section``, of its
    # ``params_type``; keys not given take the defaults. A control reads its own entry.
    cc_params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Imported here: the registries import the modules that import this one.
        from spraylab.transport.cc.base import CONGESTION_CONTROLS
        from spraylab.transport.recovery.base import RECOVERIES

        if self.ack_bytes not in ACK_COUNTED_HEADER_BYTES:
            raise ValueError(f"ack_bytes {self.ack_bytes!r}: allowed: {', '.join(ACK_COUNTED_HEADER_BYTES)}")
        RECOVERIES.get(self.recovery)  # ValueError naming the allowed modes
        CONGESTION_CONTROLS.get(self.cc)
        object.__setattr__(self, "cc_params", {**default_cc_params(), **self.cc_params})

    @property
    def dcqcn(self) -> DcqcnParams:
        """DCQCN's parameters: the receiver paces CNPs by ``cnp_interval_ps`` (DCQCN's
        notification point) under any control that asks for CNPs."""
        return self.cc_params["dcqcn"]
