import pytest
from hypothesis import given
from hypothesis import strategies as st

from spraylab.units import (
    UnitError,
    format_bytes,
    format_rate,
    format_time,
    parse_bytes,
    parse_rate_bps,
    parse_time_ps,
)


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("400Gbps", 400 * 10**9),
        ("400 Gb/s", 400 * 10**9),
        ("100G", 100 * 10**9),
        ("3.6Tbps", 3_600_000_000_000),
        ("40Mbps", 40_000_000),
        ("1e9bps", 10**9),
        ("25Kbps", 25_000),
        ("25Kb/s", 25_000),
        ("1 Tb/s", 10**12),
        ("  7bps ", 7),
        ("1000", 1000),
        (400_000_000_000, 400 * 10**9),
        (1e9, 10**9),
        (0, 0),
    ],
)
def test_parse_rate(text: object, bps: int) -> None:
    assert parse_rate_bps(text) == bps
    assert type(parse_rate_bps(text)) is int


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("4096", 4096),
        ("4096B", 4096),
        ("2MB", 2_000_000),
        ("64 KB", 64_000),
        ("1.5GB", 1_500_000_000),
        ("512KiB", 512 * 1024),
        ("64MiB", 64 * 2**20),
        ("1TiB", 2**40),
        ("0.5B", 0),  # round half to even
        ("1.6B", 2),
        (4096, 4096),
        (4096.4, 4096),
    ],
)
def test_parse_bytes(text: object, n: int) -> None:
    assert parse_bytes(text) == n
    assert type(parse_bytes(text)) is int


@pytest.mark.parametrize(
    ("text", "ps"),
    [
        ("1us", 10**6),
        ("1\u00b5s", 10**6),
        ("1\u03bcs", 10**6),
        ("55 us", 55 * 10**6),
        ("300ns", 300_000),
        ("4ps", 4),
        ("10ms", 10 * 10**9),
        ("0.5s", 5 * 10**11),
        ("0.1us", 100_000),
        (1234, 1234),
    ],
)
def test_parse_time(text: object, ps: int) -> None:
    assert parse_time_ps(text) == ps


@pytest.mark.parametrize(
    "bad",
    ["400Gbs", "400GBps", "Gbps", "", "fast", "1e999999bps", "-5Gbps", -1, True, None, [1], float("nan")],
)
def test_bad_rate(bad: object) -> None:
    with pytest.raises(UnitError) as info:
        parse_rate_bps(bad)
    msg = str(info.value)
    assert "\n" not in msg
    assert repr(bad) in msg
    assert "Gbps" in msg


def test_rate_error_message_example() -> None:
    with pytest.raises(ValueError, match=r"^'400Gbs' is not a rate: use a number with bps, .*'400Gbps'$"):
        parse_rate_bps("400Gbs")


@pytest.mark.parametrize("bad", ["2Mb", "4 KiiB", "iB", "-1B", "2 M", False, "1.5.2KB"])
def test_bad_bytes(bad: object) -> None:
    with pytest.raises(UnitError, match="KiB"):
        parse_bytes(bad)


@pytest.mark.parametrize("bad", ["1 sec", "10Us", "1m", "-3ns", True, "us"])
def test_bad_time(bad: object) -> None:
    with pytest.raises(UnitError, match="is not a time"):
        parse_time_ps(bad)


def test_negative_message_says_negative() -> None:
    with pytest.raises(UnitError, match="negative"):
        parse_time_ps("-1us")


@pytest.mark.parametrize(
    ("fn", "value", "text"),
    [
        (format_rate, 400 * 10**9, "400Gbps"),
        (format_rate, 3_600_000_000_000, "3.6Tbps"),
        (format_rate, 0, "0bps"),
        (format_rate, 12.5e9, "12.5Gbps"),
        (format_bytes, 2_000_000, "2MB"),
        (format_bytes, 2_500_000, "2.5MB"),
        (format_bytes, 65536, "64KiB"),
        (format_bytes, 4096, "4KiB"),
        (format_bytes, 1000, "1KB"),
        (format_bytes, 999, "999B"),
        (format_bytes, 0, "0B"),
        (format_time, 10**6, "1us"),
        (format_time, 1_500_000_000, "1.5ms"),
        (format_time, 999_999_600, "1ms"),
        (format_time, 4, "4ps"),
        (format_time, 2 * 10**12, "2s"),
    ],
)
def test_format(fn: object, value: int, text: str) -> None:
    assert fn(value) == text  # type: ignore[operator]


@given(st.integers(min_value=0, max_value=10**15))
def test_exact_formats_round_trip(n: int) -> None:
    # Formats are exact whenever they print at most 3 decimals.
    for fmt, parse in (
        (format_rate, parse_rate_bps),
        (format_bytes, parse_bytes),
        (format_time, parse_time_ps),
    ):
        back = parse(fmt(n))
        assert abs(back - n) <= max(1, n) * 1e-3


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["K", "M", "G", "T"]))
def test_rate_prefixes_scale(k: int, prefix: str) -> None:
    factor = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[prefix]
    assert parse_rate_bps(f"{k}{prefix}bps") == k * factor
    assert parse_rate_bps(f"{k} {prefix}b/s") == k * factor
    assert parse_bytes(f"{k}{prefix}iB") == k * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[prefix]


def test_time_labels_say_micro_sign_and_parse_back_stays_ascii() -> None:
    from spraylab.units import format_time, format_time_label, parse_time_ps

    assert format_time_label(1_000_000) == "1µs" and format_time(1_000_000) == "1us"
    assert format_time_label(1_500_000_000) == "1.5ms" and format_time_label(300_000) == "300ns"
    assert parse_time_ps(format_time(2_500_000)) == 2_500_000  # what users type back keeps "us"
