"""Transport settings as plain values the hot path reads (built from the validated scenario)."""

from __future__ import annotations

from dataclasses import dataclass

RECOVERY_MODES = ("gbn", "sr", "ideal")
CC_MODES = ("dcqcn", "none")


@dataclass(frozen=True, slots=True)
class DcqcnParams:
    """DCQCN with the ConnectX defaults (NVIDIA "DCQCN parameters": ``dce_tcp_g`` = 1019/1024,
    ``dce_tcp_rtt`` = 1 us, ``rate_reduce_monitor_period`` = 4 us, ``rpg_time_reset`` = 300 us,
    ``rpg_byte_reset`` = 32767 x 64 B, ``rpg_threshold`` = 1, ``min_time_between_cnps`` = 4 us).
    The additive/hyper increase steps scale with line rate (per 100 Gb/s, as the HPCC/ConWeave
    simulators scale them); ConnectX's absolute 5/50 Mb/s would take seconds to matter at 400G."""

    g: float = 5 / 1024
    alpha_timer_ps: int = 1_000_000
    rate_decrease_interval_ps: int = 4_000_000
    increase_timer_ps: int = 300_000_000
    byte_counter_bytes: int = 32767 * 64
    fast_recovery_rounds: int = 1
    rate_ai_bps_per_100g: int = 40_000_000
    rate_hai_bps_per_100g: int = 200_000_000
    min_rate_bps: int = 100_000_000
    cnp_interval_ps: int = 4_000_000


@dataclass(frozen=True, slots=True)
class TransportParams:
    cc: str = "dcqcn"
    recovery: str = "gbn"
    mtu_bytes: int = 4096
    ooo_bitmap_packets: int = 128
    cnp_on_ooo: bool | None = None  # None: on for go-back-N (ConnectX behaviour), off otherwise
    nack_timer_ps: int = 4_000_000
    rto_ps: int = 1_000_000_000
    ack_every: int = 1  # ACK every n accepted packets; 0 = off (see transport.receiver)
    ack_every_bytes: int = 0  # ... or every n payload bytes; 0 = off
    ack_delay_ps: int = 0  # ... or this long after the first unacknowledged packet; 0 = off
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
