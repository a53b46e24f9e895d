"""DCQCN on a fabric, against what a congestion control must deliver (issue targets).

* Work conservation: N senders into one 400 Gb/s receiver link keep that link busy with useful
  bytes: (the wire bytes the flows need) / (C x lifetime), retransmissions not counted.
* N:1 incast completion: no schedule beats N x S / C (payload only, so the bound is a little
  stricter than the wire-exact one); DCQCN must stay within 1.2x of it.
* Fairness: equal flows sharing one bottleneck get equal throughput (Jain's index -> 1).
* Queue: under lossless operation the controller must hold the bottleneck queue well below
  the buffer; the time-average is sampled every microsecond.

Targets the model does not meet are strict xfails carrying the measured number and the
reason (docs/congestion-control.md): they turn red the day the model meets them."""

from __future__ import annotations

import pytest

from spraylab.validation import incast

LOSSY_UNSTABLE = (
    "ConnectX DCQCN keeps a congestion episode's target rate until the 300 us timer fires, "
    "and its 32 KB byte counter climbs back to it within one 4 us cut period at 400 Gb/s: "
    "long-lived senders average above their share, PFC holds them on a lossless fabric, a "
    "lossy one overflows the buffer (docs/congestion-control.md); with transport.window = "
    "'bdp' the same cases meet the targets (the tests at the end)"
)


def lossy_xfail(what: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"{what} (measured: docs/validation.md): {LOSSY_UNSTABLE}")


@pytest.mark.parametrize(
    ("size_mb", "busy_target", "lossless"),
    [
        (8, 0.85, True),
        (8, 0.85, False),
        (64, 0.90, True),
        pytest.param(
            64, 0.90, False, marks=lossy_xfail("buffer drops, the link mostly carries retransmissions")
        ),
    ],
    ids=["8MB-lossless", "8MB-lossy", "64MB-lossless", "64MB-lossy"],
)
def test_two_long_flows_keep_the_link_busy_and_share_it_fairly(
    size_mb: int, busy_target: float, lossless: bool
) -> None:
    out = incast(2, size_mb * 1_000_000, lossless)
    assert out.busy_fraction >= busy_target
    assert out.jain >= 0.95
    assert out.drops == 0


@pytest.mark.parametrize(
    ("n", "lossless"),
    [
        (2, True),
        (4, True),
        (8, True),
        (16, True),
        (2, False),
        (4, False),
        pytest.param(8, False, marks=lossy_xfail("buffer drops, completion beyond 1.2x")),
        pytest.param(16, False, marks=lossy_xfail("buffer drops, completion beyond 1.2x")),
    ],
)
def test_incast_completes_within_1_2_of_n_s_over_c(n: int, lossless: bool) -> None:
    out = incast(n, 8_000_000, lossless)
    assert out.cct_ps <= 1.2 * out.bound_ps
    assert out.drops == 0
    if lossless:
        # PFC pauses before the buffer fills; the controller keeps the average queue far below.
        assert out.mean_queue_bytes < 0.25 * 64_000_000


# --- with the NIC's transmit window (transport.window = "bdp") -------------------------------
# Each flow keeps at most one base round trip of its route at line rate in flight (IRN's BDP-FC,
# ConnectX's lossy-RoCE TX window). Little's law bounds the bottleneck queue by the flows'
# windows less the one round trip the link itself holds: N x BDP - BDP, far below the buffer,
# so the lossy fabric drops nothing and the targets above hold on it too.

WINDOW = {"transport": {"window": "bdp"}}
BDP_BYTES = 8_340_000 * 400 // 8_000  # ~8.3 us base RTT across the spine at 400 Gb/s


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_lossy_incast_with_the_transmit_window_meets_the_targets(n: int) -> None:
    out = incast(n, 8_000_000, False, **WINDOW)
    assert out.cct_ps <= 1.2 * out.bound_ps
    assert out.drops == 0
    assert out.max_queue_bytes <= n * BDP_BYTES


@pytest.mark.parametrize(("size_mb", "busy_target"), [(8, 0.85), (64, 0.90)])
def test_lossy_long_flows_with_the_transmit_window_keep_the_link_busy(
    size_mb: int, busy_target: float
) -> None:
    out = incast(2, size_mb * 1_000_000, False, **WINDOW)
    assert out.busy_fraction >= busy_target
    assert out.jain >= 0.95
    assert out.drops == 0
