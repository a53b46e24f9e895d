"""DCTCP (transport.cc = "dctcp") against its theory.

* The DCTCP paper's steady state (Alizadeh et al., SIGCOMM'10, section 3.3): with a step mark at
  K and N long-lived flows of one RTT, the bottleneck queue is a sawtooth whose peak is
  ``Q_max = K + N`` packets and whose amplitude is ``A = (1/2) sqrt(2 N (C x RTT + K))``
  packets; with ``K > C x RTT / 7`` its trough stays above zero, so the link stays busy (the
  paper's 100% throughput) while the queue stays near K.
* The estimator (section 3.1, RFC 8257 section 3.3): ``alpha <- (1 - g) alpha + g F`` once per
  window; a window with every packet marked cuts ``W`` by ``alpha / 2``.
* Fairness: equal flows of one RTT under AIMD converge to equal windows (Chiu and Jain), which
  DCTCP keeps (its decrease is proportional to W, its increase one packet per RTT for all).
"""

from __future__ import annotations

import functools
import math

import pytest

from spraylab.model.scenario import ScenarioError, validate
from spraylab.net.framing import data_wire_bytes
from spraylab.net.packet import ACK, Packet
from spraylab.runs.experiment import build
from spraylab.study.validation import BASE_RTT_PS, bottleneck_case, dctcp_switch
from spraylab.transport.cc.dctcp import DctcpParams, dctcp_k_bytes_per_100g
from spraylab.transport.cc.hpcc import fabric_base_rtt_ps

FRAME = data_wire_bytes(4096)
# each case runs once for the tests that read it
_bottleneck = functools.cache(bottleneck_case)


def _summary(out: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.4g}" for k, v in out.items())


def _check_steady_state(out: dict[str, float]) -> None:
    # at least 95% of the link in steady state (the paper's full throughput, less ACK-clocking
    # granularity), and the queue near K: its time-average within the sawtooth (from Q_max - A to
    # Q_max) give or take one packet per flow, its maximum at most Q_max + A
    assert out["steady_utilization_ratio"] >= 0.95, _summary(out)
    low, high = out["dctcp_queue_low_bytes"], out["dctcp_queue_high_bytes"]
    assert low <= out["steady_mean_queue_bytes"] <= high, _summary(out)
    assert out["steady_max_queue_bytes"] <= out["dctcp_q_max_bytes"] + out["dctcp_amplitude_bytes"], _summary(
        out
    )


@pytest.mark.parametrize("lossless", [True, False], ids=["lossless", "lossy"])
def test_dctcp_16_to_1_incast_holds_the_queue_near_k_at_full_throughput(lossless: bool) -> None:
    out = _bottleneck("dctcp", "incast_16_one_rtt", lossless)
    _check_steady_state(out)
    assert out["drops"] == 0
    assert out["lifetime_utilization_ratio"] >= 0.95, _summary(out)
    assert out["jain"] >= 0.95, _summary(out)


@pytest.mark.parametrize("lossless", [True, False], ids=["lossless", "lossy"])
def test_dctcp_two_long_flows_of_one_rtt_hold_the_queue_near_k_and_share_the_link(lossless: bool) -> None:
    out = _bottleneck("dctcp", "long_flows_one_rtt", lossless)
    _check_steady_state(out)
    assert out["drops"] == 0
    assert out["lifetime_utilization_ratio"] >= 0.95, _summary(out)
    assert out["jain"] >= 0.95, _summary(out)


@pytest.mark.parametrize("lossless", [True, False], ids=["lossless", "lossy"])
def test_dctcp_two_long_flows_of_two_rtts_hold_the_queue_near_k(lossless: bool) -> None:
    """One flow on the receiver's leaf (half the base RTT), one across the spine: the queue and
    the steady-state throughput are the same theory's; their shares are not (DCTCP keeps TCP's
    one packet per RTT, so the shorter RTT grows twice as fast: RTT unfairness, Jain about 0.93,
    reported on docs/validation.md, not judged)."""
    out = _bottleneck("dctcp", "long_flows", lossless)
    _check_steady_state(out)
    assert out["drops"] == 0


@pytest.mark.parametrize("case", ["long_flows", "long_flows_one_rtt"])
@pytest.mark.parametrize("lossless", [True, False], ids=["lossless", "lossy"])
def test_dctcp_two_long_flows_lose_what_the_additive_increase_predicts(case: str, lossless: bool) -> None:
    """AIMD after a departure (DCTCP keeps TCP's additive increase of one packet per RTT:
    Alizadeh et al. SIGCOMM'10 section 3.1; Chiu and Jain): when the first of two long flows
    finishes, the survivor has ``W_0`` packets in flight (measured: its window then) on a link
    that carries ``B = C x R`` per base RTT ``R``, and it climbs to ``B`` by one packet per
    RTT, so the link idles ``(B - W_k) / B`` of each round ``k`` of the climb, about ``R (B -
    W_0)^2 / (2 B)`` in all (``spraylab.study.validation.aimd_climb_idle_ps``, cut short when
    the survivor runs out of data). Over the flows' lifetime the link is then busy ``T_wire /
    (T_wire + idle)``, ``T_wire`` the wire bytes at line rate. With two base RTTs the short one
    takes the larger share (RTT unfairness) and finishes early, so the survivor climbs from about
    a fifth of ``B`` and the lifetime utilization is about 0.90: no control that keeps TCP's
    additive increase can keep this link 95% busy over it (the paper's full throughput is a
    steady-state claim, held above). Measured within 1.5 percentage points below the prediction
    and at most 0.5 above: the prediction counts only the climb, and the line-rate start (two
    BDPs in flight, alpha = 1 halving both windows) idles the link a little more."""
    out = _bottleneck("dctcp", case, lossless)
    predicted = out["aimd_lifetime_utilization_ratio"]
    measured = out["lifetime_utilization_ratio"]
    assert -0.015 <= measured - predicted <= 0.005, f"predicted {predicted:.4f}; " + _summary(out)
    if case == "long_flows":
        assert predicted < 0.95, _summary(out)


def test_the_step_mark_is_the_papers_k_guideline() -> None:
    """K = C x RTT / 7 (section 3.3) at the fabric's base RTT: about 14 frames at 400 Gb/s and
    8.3 us; the constant the validation cases use is that fabric's RTT."""
    simulation = build(
        validate(
            {
                "topology": {
                    "kind": "leaf_spine",
                    "leaves": 2,
                    "spines": 2,
                    "hosts_per_leaf": 16,
                    "host_rate": "400Gbps",
                },
                "switch": dctcp_switch(),
                "transport": {"cc": "dctcp"},
                "workload": {"kind": "incast", "size": 4096, "senders": 1, "receiver": 0},
                "run": {"progress": False},
            }
        )
    )
    net = simulation.net
    assert fabric_base_rtt_ps(net, 4096) == BASE_RTT_PS
    port = next(p for p in net.ports if p.peer_owner is net.hosts[0])
    k = 400e9 * BASE_RTT_PS / 8e12 / 7
    assert port.kmin == port.kmax == math.ceil(dctcp_k_bytes_per_100g(BASE_RTT_PS)) * 4
    assert abs(port.kmin - k) <= 4
    assert 13 <= port.kmin / FRAME <= 15


def _one_flow(n_packets: int):
    simulation = build(
        validate(
            {
                "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1},
                "transport": {"cc": "dctcp"},
                "workload": {"kind": "random_pairs", "flows": 1, "size": n_packets * 4096},
                "run": {"progress": False},
            }
        )
    )
    (qp,) = simulation.net.qps
    return qp


def test_alpha_follows_the_marked_fraction_and_the_cut_is_alpha_over_two() -> None:
    """Windows with every packet marked drive alpha towards 1 by (1 - g) per window
    (``1 - alpha_k = (1 - g)^k (1 - alpha_0)``); the first marked ACK of a window cuts W by
    alpha / 2, and no other ACK of that window cuts again."""
    qp = _one_flow(1000)
    cc = qp.cc
    g = DctcpParams().g
    cc.alpha = 0.0
    w0 = cc.w

    def ack(psn: int, ecn: bool) -> None:
        pkt = Packet(ACK, qp, qp.dst, qp.src, psn, 64, 0, 0, 0, 0)
        pkt.ecn = ecn
        cc.on_ack(pkt)
        qp.snd_una = psn

    qp.snd_nxt = 10
    ack(1, True)  # closes window 0 (every ACK marked): alpha = g; then cuts once
    assert cc.alpha == pytest.approx(g)
    assert cc.w == pytest.approx(w0 * (1 - g / 2))
    for psn in range(2, 10):
        ack(psn, True)  # same window: no second estimate, no second cut
    assert cc.alpha == pytest.approx(g) and cc.cuts == 1
    for k in range(2, 6):
        qp.snd_nxt = 10 * k + 10
        ack(qp.snd_nxt - 10 + 1, True)
        assert 1 - cc.alpha == pytest.approx((1 - g) ** k)


def test_dctcp_section_is_validated_and_left_out_at_its_defaults() -> None:
    base = {"topology": {"kind": "leaf_spine"}, "workload": {"kind": "incast"}}
    with pytest.raises(ScenarioError) as err:
        validate({**base, "transport": {"cc": "dctcp", "dctcp": {"g": 2}}})
    assert str(err.value).startswith("transport.dctcp.g = 2")
    assert "dctcp" not in validate(base).to_dict()["transport"]
    tuned = validate({**base, "transport": {"cc": "dctcp", "dctcp": {"g": 0.125}}})
    assert tuned.transport.to_params().cc_params["dctcp"].g == 0.125
