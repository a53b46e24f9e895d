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
    "lossy one overflows the buffer (docs/congestion-control.md)"
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
