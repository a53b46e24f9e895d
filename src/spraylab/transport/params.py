"""Transport settings as plain values the hot path reads (built from the validated scenario)."""

from __future__ import annotations

from dataclasses import dataclass

RECOVERY_MODES = ("gbn", "sr", "ideal")
CC_MODES = ("dcqcn", "none")


@dataclass(frozen=True, slots=True)
class DcqcnParams:
    """DCQCN (Zhu et al., SIGCOMM'15) with the HPCC/ConWeave simulators' defaults; the
    additive/hyper increase steps scale with line rate (per 100 Gb/s)."""

    g: float = 1 / 256
    alpha_timer_ps: int = 55_000_000
    increase_timer_ps: int = 300_000_000
    byte_counter_bytes: int = 10_000_000  # DCQCN paper; a small counter starves slow flows under PFC
    fast_recovery_rounds: int = 5
    rate_ai_bps_per_100g: int = 40_000_000
    rate_hai_bps_per_100g: int = 200_000_000
    min_rate_bps: int = 100_000_000
    cnp_interval_ps: int = 50_000_000


@dataclass(frozen=True, slots=True)
class TransportParams:
    cc: str = "dcqcn"
    recovery: str = "gbn"
    mtu_bytes: int = 4096
    ooo_bitmap_packets: int = 128
    cnp_on_ooo: bool | None = None  # None: on for go-back-N (ConnectX behaviour), off otherwise
    nack_timer_ps: int = 4_000_000
    rto_ps: int = 1_000_000_000
    ack_every: int = 1
    window_bytes: int = 0  # 0 = no window cap
    dcqcn: DcqcnParams = DcqcnParams()

    def __post_init__(self) -> None:
        if self.recovery not in RECOVERY_MODES:
            raise ValueError(f"transport.recovery = {self.recovery!r}: allowed {', '.join(RECOVERY_MODES)}")
        if self.cc not in CC_MODES:
            raise ValueError(f"transport.cc = {self.cc!r}: allowed {', '.join(CC_MODES)}")

    @property
    def cnp_on_out_of_order(self) -> bool:
        return self.recovery == "gbn" if self.cnp_on_ooo is None else self.cnp_on_ooo
