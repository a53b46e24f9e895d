"""Parse and format human-friendly quantities: rates, sizes and times.

Internally everything is an int: rates in bits/s, sizes in bytes, times in picoseconds.
Parsing goes through ``Decimal`` so that e.g. "3.6Tbps" or "0.1us" land on the exact
integer instead of being off by one after a binary float multiplication.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal

__all__ = [
    "UnitError",
    "format_bytes",
    "format_rate",
    "format_time",
    "format_time_label",
    "parse_bytes",
    "parse_rate_bps",
    "parse_time_ps",
]


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
    "ns": 10**3,
    "us": 10**6,
    "\u00b5s": 10**6,  # micro sign
    "\u03bcs": 10**6,  # greek small mu, what most keyboards produce
    "ms": 10**9,
    "s": 10**12,
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
_TIME_UNITS = [(10**12, "s"), (10**9, "ms"), (10**6, "us"), (10**3, "ns"), (1, "ps")]


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
