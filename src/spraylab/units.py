"""Parse and format human-friendly quantities: rates, sizes and times; the units of metrics.

Internally everything is an int: rates in bits/s, sizes in bytes, times in picoseconds.
Parsing goes through ``Decimal`` so that e.g. "3.6Tbps" or "0.1us" land on the exact
integer instead of being off by one after a binary float multiplication.

This module owns every conversion between units and every way a number is shown:
:data:`UNITS` names the unit of a metric (:mod:`spraylab.metrics.catalog` gives each metric
one), :func:`format_value` writes a value the way tables do (the terminal, reports, the run
viewer), :func:`format_page` the way study pages do (a fixed unit per quantity, so a column of
a page reads in one unit).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

__all__ = [
    "BITS_PER_BYTE",
    "PS_PER_BYTE_AT_1BPS",
    "PS_PER_MS",
    "PS_PER_NS",
    "PS_PER_S",
    "PS_PER_US",
    "UNITS",
    "Unit",
    "UnitError",
    "format_bytes",
    "format_bytes_rounded",
    "format_page",
    "format_rate",
    "format_time",
    "format_time_label",
    "format_value",
    "parse_bytes",
    "parse_rate_bps",
    "parse_time_ps",
]

# spraylab's base units are picoseconds, bits/s and bytes; these convert to the others.
PS_PER_NS = 10**3
PS_PER_US = 10**6
PS_PER_MS = 10**9
PS_PER_S = 10**12
BITS_PER_BYTE = 8
# A byte at 1 bit/s takes 8e12 ps: bytes x this / rate_bps = serialization time in ps. A float, as
# the expressions that use it always were (the same doubles as before, bit for bit).
PS_PER_BYTE_AT_1BPS = 8e12


class UnitError(ValueError):
    """A value could not be read as the requested kind of quantity."""


_NUMBER_UNIT = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(.*)")

_SI = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}

_RATE_HELP = "use a number with bps, Kbps, Mbps, Gbps or Tbps, e.g. '400Gbps'"
_BYTES_HELP = "use a number with B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. '64KiB'"
_TIME_HELP = "use a number with ps, ns, us, ms or s, e.g. '10us'"


def _split_prefix(unit: str) -> tuple[str, str]:
    # Only the multiplier letter is case-insensitive: "b" vs "B" (bits vs bytes) must stay strict.
    if unit and unit[0].lower() in "kmgt":
        return unit[0].lower(), unit[1:]
    return "", unit


def _rate_factor(unit: str) -> int | None:
    prefix, rest = _split_prefix(unit)
    if rest in ("bps", "b/s") or (rest == "" and (prefix or unit == "")):
        return _SI[prefix]
    return None


def _bytes_factor(unit: str) -> int | None:
    prefix, rest = _split_prefix(unit)
    if rest == "B" or unit == "":
        return _SI[prefix]
    if rest == "iB" and prefix:
        return _BINARY[prefix]
    return None


_TIME_FACTORS = {
    "": 1,
    "ps": 1,
    "ns": PS_PER_NS,
    "us": PS_PER_US,
    "\u00b5s": PS_PER_US,  # micro sign
    "\u03bcs": PS_PER_US,  # greek small mu, what most keyboards produce
    "ms": PS_PER_MS,
    "s": PS_PER_S,
}


def _parse(value: object, what: str, factor_of: Callable[[str], int | None], help_text: str) -> int:
    bad = UnitError(f"{value!r} is not a {what}: {help_text}")
    # bool is an int subclass; True meaning "1 bps" is never what the user meant.
    if isinstance(value, bool):
        raise bad
    if isinstance(value, str):
        match = _NUMBER_UNIT.fullmatch(value.strip())
        factor = factor_of(match.group(2)) if match else None
        if match is None or factor is None:
            raise bad
        number = Decimal(match.group(1))
    elif isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise bad
        number, factor = Decimal(value), 1
    else:
        raise bad
    if number < 0:
        raise UnitError(f"{value!r} is not a {what}: it is negative; {help_text}")
    if number.adjusted() > 30:
        # Guard against "1e999999" building a million-digit int; nothing real is that big.
        raise UnitError(f"{value!r} is not a {what}: it is absurdly large; {help_text}")
    return int((number * factor).to_integral_value(rounding=ROUND_HALF_EVEN))


def parse_rate_bps(value: int | float | str) -> int:
    """Rate in bits/s from a number (bits/s) or a string like "400Gbps", "400 Gb/s", "100G"."""
    return _parse(value, "rate", _rate_factor, _RATE_HELP)


def parse_bytes(value: int | float | str) -> int:
    """Size in bytes from a number or a string like "4096", "2MB" (decimal) or "64MiB" (binary)."""
    return _parse(value, "size in bytes", _bytes_factor, _BYTES_HELP)


def parse_time_ps(value: int | float | str) -> int:
    """Time in picoseconds from a number (ps) or a string like "1us", "300ns", "0.5s"."""
    return _parse(value, "time", _TIME_FACTORS.get, _TIME_HELP)


def _format(value: float, units: list[tuple[int, str]]) -> str:
    """Largest unit that keeps the mantissa >= 1 after rounding to 3 decimals."""
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    for factor, suffix in units:
        # Compare after rounding so 999.9996us prints as "1ms", not "1000us".
        if round(magnitude / factor, 3) >= 1 or factor == 1:
            text = f"{magnitude / factor:.3f}".rstrip("0").rstrip(".")
            return f"{sign}{text}{suffix}"
    raise AssertionError("unreachable: the last unit has factor 1")


_RATE_UNITS = [(10**12, "Tbps"), (10**9, "Gbps"), (10**6, "Mbps"), (10**3, "Kbps"), (1, "bps")]
_DEC_BYTE_UNITS = [(10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "KB"), (1, "B")]
_BIN_BYTE_UNITS = [(2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")]
_TIME_UNITS = [(PS_PER_S, "s"), (PS_PER_MS, "ms"), (PS_PER_US, "us"), (PS_PER_NS, "ns"), (1, "ps")]


def format_rate(bps: float) -> str:
    """Short rate string, e.g. 400e9 -> "400Gbps", 3.6e12 -> "3.6Tbps"."""
    return _format(bps, _RATE_UNITS)


def format_bytes(n: int) -> str:
    """Short size string, e.g. 2_000_000 -> "2MB", 2_500_000 -> "2.5MB", 65536 -> "64KiB"."""
    magnitude, sign = abs(n), "-" if n < 0 else ""
    # Prefer an exact whole number: decimal first, then binary (buffer sizes are usually 2**k).
    for units in (_DEC_BYTE_UNITS, _BIN_BYTE_UNITS):
        largest = next(((f, s) for f, s in units if magnitude >= f), None)
        if largest is not None and magnitude % largest[0] == 0:
            return f"{sign}{int(magnitude // largest[0])}{largest[1]}"
    return _format(n, _DEC_BYTE_UNITS)


def format_time(ps: int) -> str:
    """Short time string, e.g. 1_000_000 -> "1us", 1_500_000_000 -> "1.5ms"."""
    return _format(ps, _TIME_UNITS)


def format_time_label(ps: int) -> str:
    """:func:`format_time` for people, in pages, plots and cards: microseconds as "µs"
    ("1µs"). Not for values a user types back (config keys, defaults in the reference), which
    keep the ASCII "us" the parser reads."""
    text = format_time(ps)
    return text[:-2] + "µs" if text.endswith("us") else text


def format_bytes_rounded(n: float) -> str:
    """Three significant digits and a decimal unit up to exabytes, for estimates (``3.1 GB``):
    :func:`format_bytes` is exact, this one is short."""
    for unit, factor in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= factor:
            return f"{n / factor:.3g} {unit}" if n < 1e21 else f"{n / 1e18:.2e} EB"
    return f"{int(n)} B"


# --- the unit of a metric ------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    name: str  # what the metric catalog and study files call it
    raw: str  # what a raw value is in, as `--format csv|json` tables state it ("" for none)
    meaning: str  # for the generated docs


UNITS: dict[str, Unit] = {
    u.name: u
    for u in (
        Unit("ps", "ps", "picoseconds"),
        Unit("bps", "bps", "bits/s"),
        Unit("bytes", "B", "bytes"),
        Unit("pct", "fraction", "a share, 0.05 = 5%"),
        Unit("count", "", "a count"),
        Unit("float", "", "a plain number"),
        Unit("text", "", "text"),
        Unit("x", "", "a ratio of two quantities of the same unit"),
        Unit("change", "fraction", "a signed relative change, 0.05 = +5%"),
        Unit("flops", "FLOP/s", "floating-point operations per second"),
        Unit("p", "", "a p-value"),
    )
}


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def format_value(value: object, unit: str, show: str | None = None) -> str:
    """A value as tables show it (the terminal, ``--format markdown``, reports, the run viewer):
    times and rates with the unit that fits (``174.5µs``, ``93.863Gbps``), shares in percent
    with two decimals, plain numbers with three (whole above 1000), counts whole. ``show``
    picks another presentation of the same unit: ``GB/s`` for a rate in gigabytes per second
    (nccl-tests prints bus bandwidth so). Missing values are ``-``."""
    if _missing(value):
        return "-"
    if unit == "text":
        return str(value)
    v = float(value)  # type: ignore[arg-type]
    if unit == "ps":
        return format_time_label(int(round(v)))
    if unit == "bps":
        if show == "GB/s":
            return f"{v / (BITS_PER_BYTE * 1e9):.2f} GB/s"
        return format_rate(v)
    if unit == "bytes":
        return format_bytes(int(round(v)))
    if unit == "pct":
        return f"{100 * v:.2f}%"
    if unit == "count" and v.is_integer():
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3f}"


def format_page(value: float | None, unit: str, digits: int | None = None) -> str:
    """A value as study pages show it: one fixed unit per quantity (``123.4 us``, ``400 Gb/s``,
    ``12.3%``), so the numbers of a column compare at a glance; ``digits`` overrides the unit's
    default precision."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    v = float(value)
    if unit == "ps":
        us = v / PS_PER_US
        if digits is not None:
            return f"{us:,.{digits}f} us"
        return f"{us:,.0f} us" if abs(us) >= 1000 else f"{us:.1f} us"
    if unit == "bps":
        return f"{v / 1e9:.{0 if digits is None else digits}f} Gb/s"
    if unit == "bytes":
        for name, div in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
            if abs(v) >= div:
                text = f"{v / div:.{2 if digits is None else digits}f}"
                if digits is None and "." in text:
                    text = text.rstrip("0").rstrip(".")
                return f"{text} {name}"
        return f"{v:.0f} B"
    if unit == "pct":
        return f"{100 * v:.{1 if digits is None else digits}f}%"
    if unit == "change":  # a signed relative change
        return f"{100 * v:+.{0 if digits is None else digits}f}%"
    if unit == "x":
        return f"{v:.{2 if digits is None else digits}f}x"
    if unit == "count":
        if digits is None and float(v).is_integer():
            return f"{int(v):,}"
        return f"{v:,.{1 if digits is None else digits}f}"
    if unit == "float":
        return f"{v:.{2 if digits is None else digits}f}"
    if unit == "flops":
        return f"{v / 1e12:,.{0 if digits is None else digits}f} TFLOP/s"
    if unit == "p":  # a p-value
        return f"{v:.{3 if digits is None else digits}g}"
    return str(value)
