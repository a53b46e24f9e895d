"""Swift (transport.cc = "swift") against its theory (Kumar et al., SIGCOMM'20).

* Algorithm 1: below the target delay the window grows by ``ai`` packets per round trip; above
  it, it is cut at most once per round trip by ``max(1 - beta (delay - target) / delay,
  1 - max_mdf)``; below one packet the sender paces one packet per ``rtt / cwnd``.
* Section 3.2: the target is ``base + hops x h + fs(cwnd)``, with flow scaling ``fs`` equal to
  ``fs_range`` at ``fs_min_cwnd`` and to 0 at ``fs_max_cwnd`` (and clamped beyond).
* The AIMD steady state: the measured delay oscillates about the target (additive steps bring it
  up to the target, a cut brings it below), so on a busy bottleneck its mean sits near the
  target and the standing queue holds the link busy; equal flows with one RTT converge to equal
  windows (Chiu and Jain).
"""

from __future__ import annotations

import math

import pytest

from spraylab.model.scenario import ScenarioError, validate
from spraylab.net.packet import ACK, Packet
from spraylab.runs.experiment import build
from spraylab.study.validation import bottleneck_case
from spraylab.transport.cc.swift import SwiftParams

P = SwiftParams()


def _summary(out: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.4g}" for k, v in out.items())


def _check_delay_near_target(out: dict[str, float]) -> None:
    # the mean RTT within 10% of the mean target, the link at least 95% busy
    assert abs(out["steady_mean_rtt_ps"] / out["steady_mean_target_ps"] - 1) <= 0.10, _summary(out)
    assert out["steady_utilization_ratio"] >= 0.95, _summary(out)


@pytest.mark.parametrize("lossless", [True, False], ids=["lossless", "lossy"])
def test_swift_16_to_1_incast_holds_its_delay_near_the_target(lossless: bool) -> None:
    out = bottleneck_case("swift", "incast_16_one_rtt", lossless)
    _check_delay_near_target(out)
    assert out["jain"] >= 0.95, _summary(out)
    assert out["drops"] == 0


@pytest.mark.parametrize("case", ["long_flows", "long_flows_one_rtt"])
@pytest.mark.parametrize("lossless", [True, False], ids=["lossless", "lossy"])
def test_swift_two_long_flows_hold_the_delay_near_the_target_and_share(case: str, lossless: bool) -> None:
    """Also with one flow on the receiver's leaf and one across the spine: their targets differ
    by two hops' scaling, which offsets most of the difference of their base RTTs, and the
    shares measured stay equal (reported on docs/validation.md)."""
    out = bottleneck_case("swift", case, lossless)
    _check_delay_near_target(out)
    assert out["jain"] >= 0.95, _summary(out)
    assert out["drops"] == 0


def _flows(pairs: list[tuple[int, int]]):
    simulation = build(
        validate(
            {
                "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
                "transport": {"cc": "swift"},
                "workload": {
                    "kind": "flows",
                    "rows": [{"src": s, "dst": d, "size": 4_096_000} for s, d in pairs],
                },
                "run": {"progress": False},
            }
        )
    )
    return simulation.net.qps


def test_target_scales_with_hops_and_with_the_window() -> None:
    """One switch between hosts of a leaf, three across the spine; fs(fs_min_cwnd) = fs_range,
    fs(fs_max_cwnd) = 0, clamped outside."""
    local, remote = (qp.cc for qp in _flows([(0, 1), (0, 2)]))
    assert (local.hops, remote.hops) == (1, 3)
    big = P.fs_max_cwnd
    assert remote.target_ps(big) - local.target_ps(big) == pytest.approx(2 * P.hop_scale_ps)
    assert local.target_ps(big) == pytest.approx(P.base_target_ps + P.hop_scale_ps)
    assert local.target_ps(P.fs_min_cwnd) - local.target_ps(big) == pytest.approx(P.fs_range_ps)
    assert local.target_ps(P.fs_min_cwnd / 100) == pytest.approx(local.target_ps(P.fs_min_cwnd))
    assert local.target_ps(10 * big) == pytest.approx(local.target_ps(big))
    # in between, fs falls as 1 / sqrt(cwnd)
    a = P.fs_range_ps / (1 / math.sqrt(P.fs_min_cwnd) - 1 / math.sqrt(P.fs_max_cwnd))
    assert local.target_ps(4.0) - local.target_ps(big) == pytest.approx(a / 2 - a / math.sqrt(big))


def test_algorithm_one_increase_decrease_and_pacing() -> None:
    """Driven by hand-made ACKs: AI of ai / cwnd per acknowledged packet below the target; one
    cut of max(1 - beta (d - t) / d, 1 - max_mdf) at a delay above it, none again within one
    RTT; below one packet a window of one frame paced at cwnd frames per RTT."""
    (qp,) = _flows([(0, 2)])
    cc = qp.cc
    sim = qp.sim
    frame = qp.full_wire_bytes

    def ack(psn: int, delay_ps: int) -> None:
        sim.now = max(sim.now, delay_ps)
        pkt = Packet(ACK, qp, qp.dst, qp.src, psn, 64, 0, 0, 0, sim.now - delay_ps)
        cc.on_ack(pkt)
        qp.snd_una = max(qp.snd_una, psn)

    cc.cwnd = 10.0
    ack(1, 1_000_000)  # 1 us, far below the target
    assert cc.cwnd == pytest.approx(10.0 + P.ai / 10.0)
    w = cc.cwnd
    target = cc.target_ps(w)
    delay = int(1.5 * target)
    ack(2, delay)
    assert cc.cwnd == pytest.approx(w * max(1 - P.beta * (delay - target) / delay, 1 - P.max_mdf))
    w = cc.cwnd
    ack(3, delay)  # within one RTT of the last cut: no cut
    assert cc.cwnd == w and cc.decreases == 1
    # far above the target, each cut is max_mdf; keep cutting (one RTT apart) below a packet
    while cc.cwnd >= 1:
        sim.now += 100 * delay
        ack(4, 10 * int(cc.target_ps(cc.cwnd)))
    assert qp.window_packets == 1
    rtt = cc.last_delay_ps
    assert qp.rate_bps == pytest.approx(cc.cwnd * frame * 8e12 / rtt)
    # and back at line rate once the window reaches a packet again
    cc.cwnd = 0.999
    for psn in range(5, 10):
        ack(psn, 1_000_000)
    assert cc.cwnd >= 1 and qp.rate_bps == qp.line_rate_bps


def test_swift_section_is_validated_and_left_out_at_its_defaults() -> None:
    base = {"topology": {"kind": "leaf_spine"}, "workload": {"kind": "incast"}}
    with pytest.raises(ScenarioError) as err:
        validate({**base, "transport": {"cc": "swift", "swift": {"max_mdf": 1.5}}})
    assert str(err.value).startswith("transport.swift.max_mdf = 1.5")
    with pytest.raises(ScenarioError) as err:
        validate({**base, "transport": {"cc": "swift", "swift": {"fs_min_cwnd": 200}}})
    assert "transport.swift.fs_min_cwnd = 200" in str(err.value)
    assert "swift" not in validate(base).to_dict()["transport"]
    tuned = validate({**base, "transport": {"cc": "swift", "swift": {"base_target": "30us"}}})
    assert tuned.transport.to_params().cc_params["swift"].base_target_ps == 30_000_000
