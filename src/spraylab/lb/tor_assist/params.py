"""The scheme's parameters and the constants its parts share."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from spraylab.lb.base import LbParams
from spraylab.units import PS_PER_US, parse_time_ps

HOLD_CAP_PS = 100 * PS_PER_US
HOLD_FLOOR_PS = 1 * PS_PER_US
NO_LIMIT = 1 << 62
RETIRED: Any = object()  # tombstone of a completed flow in a ToR's flow tables


class TorAssistParams(LbParams):
    mode: Literal["auto", "nack_filter", "reorder"] = Field(
        default="auto",
        description="nack_filter: selective-repeat RNICs; reorder: go-back-N RNICs; auto: by transport.recovery",
    )
    uplink: Literal["random", "round_robin", "least_queued"] = Field(
        default="round_robin", description="uplink choice per packet at the source ToR"
    )
    hold_timeout: int = Field(
        default=0, ge=0, description="ps (or a string like '20us'); 0 = 2x largest queueing delay, <= 100 us"
    )
    window: int = Field(
        default=256, ge=1, le=1 << 16, description="packets tracked above the lowest unseen PSN"
    )
    retarget: bool = Field(
        default=True,
        description="nack_filter: a NACK whose PSN passed becomes NACK(ePSN) when that PSN is known lost",
    )
    nic_bitmap: int = Field(
        default=0,
        ge=0,
        description="RNIC out-of-order bitmap the ToR mirrors; 0 = from the transport settings",
    )

    @field_validator("hold_timeout", mode="before")
    @classmethod
    def _time(cls, value: Any) -> Any:
        return parse_time_ps(value) if isinstance(value, str) else value
