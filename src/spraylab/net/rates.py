"""Link rates as serialization times: the one conversion every port and delay model uses."""

from __future__ import annotations

from spraylab.units import PS_PER_S

PS_PER_BIT_AT_1BPS = PS_PER_S  # a bit at 1 bit/s takes 10^12 ps


def ps_per_byte(rate_bps: int) -> float:
    """Serialization time of one byte; exact (an integer) for the usual rates (400G: 20 ps)."""
    value = 8 * PS_PER_BIT_AT_1BPS / rate_bps
    return int(value) if value == int(value) else value


def kmin_span_ps(kmin_bytes: int, per_byte: float) -> float:
    """The time Kmin bytes take to serialize, for comparing a backlog in ps without a division:
    exact when ``per_byte`` is an integer, else rounded down a little, so that ``backlog_ps >
    kmin_span_ps`` holds whenever ``backlog_ps / per_byte > kmin_bytes`` does."""
    span = kmin_bytes * per_byte
    return span if span.__class__ is int else span * (1 - 1e-9)
