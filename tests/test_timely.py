"""TIMELY (transport.cc = "timely") against its theory (Mittal et al., SIGCOMM'15).

* Algorithm 1, once per round trip: ``rtt_diff`` is an EWMA (weight ``alpha`` on
  the newest) of the RTT's change since the last update and ``gradient = rtt_diff / min_rtt``;
  below ``T_low`` the rate grows by ``delta``; above ``T_high`` it is cut by ``1 - beta (1 -
  T_high / rtt)``; in between it grows by ``N delta`` when the gradient is not positive
  (``N = hai_n`` after ``hai_n`` negative gradients in a row, hyperactive increase, else 1) and
  is cut by ``1 - beta x gradient`` when it is positive; the rate stays within ``[min_rate,
  line rate]``.
* The operating band: below ``T_low`` the rate only grows and above ``T_high`` it is cut every
  round trip, so on a busy bottleneck the RTT cannot settle outside ``[T_low, T_high]``; with
  the sum of the rates above the capacity the queue holds the link busy.
* Fairness: the gradient rule has a continuum of fixed points, so TIMELY does not converge to a
  unique (let alone fair) allocation (Zhu et al., "ECN or Delay: Lessons Learnt from Analysis
  of DCQCN and TIMELY", CoNEXT'16): Jain's index is reported, not asserted.
* PFC: a lossless fabric drops nothing.

The bottleneck cases are ``spraylab.study.validation``'s with eight times the bytes
(``*_64mb``, ``*_512mb``): the start-up cut takes a flow to its minimum rate and the climb back
at ``delta`` per round trip outlasts the 8 MB / 64 MB cases (docs/congestion-control.md).
"""

from __future__ import annotations

from functools import cache

import pytest

from spraylab.model.scenario import ScenarioError, validate
from spraylab.net.packet import ACK, Packet
from spraylab.runs.experiment import build
from spraylab.study.validation import bottleneck_case as _bottleneck_case
from spraylab.transport.cc.timely import TimelyParams

P = TimelyParams()
# each case runs once for the tests below (a second or two each)
bottleneck_case = cache(_bottleneck_case)


def _summary(out: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.4g}" for k, v in out.items())


def _qp(host_rate: str = "400Gbps"):
    simulation = build(
        validate(
            {
                "topology": {
                    "kind": "leaf_spine",
                    "leaves": 2,
                    "spines": 2,
                    "hosts_per_leaf": 2,
                    "host_rate": host_rate,
                },
                "transport": {"cc": "timely"},
                "workload": {"kind": "flows", "rows": [{"src": 0, "dst": 2, "size": 4_096_000}]},
                "run": {"progress": False},
            }
        )
    )
    (qp,) = simulation.net.qps
    return qp


def _algorithm_one(state: dict[str, float], rtt: float, line: float, delta: float) -> str:
    """The paper's Algorithm 1 on ``state`` (rate, prev_rtt, rtt_diff, negative run): the
    oracle the kernel is held to. Returns the branch taken."""
    diff = (1 - P.alpha) * state["diff"] + P.alpha * (rtt - state["prev"])
    gradient = diff / P.min_rtt_ps
    state["prev"], state["diff"] = rtt, diff
    state["neg"] = state["neg"] + 1 if gradient < 0 else 0
    rate = state["rate"]
    if rtt < P.t_low_ps:
        rate, branch = rate + delta, "below"
    elif rtt > P.t_high_ps:
        rate, branch = rate * (1 - P.beta * (1 - P.t_high_ps / rtt)), "above"
    elif gradient <= 0:
        hai = state["neg"] >= P.hai_n
        rate, branch = rate + delta * (P.hai_n if hai else 1), "hai" if hai else "increase"
    else:
        rate, branch = rate * max(1 - P.beta * gradient, 0.0), "decrease"
    state["rate"] = min(max(rate, P.min_rate_bps), line)
    return branch


def test_algorithm_one_once_per_round_trip() -> None:
    """Driven by hand-made ACKs through every branch of Algorithm 1, the kernel's rate, RTT
    difference and negative-gradient run equal the oracle's after each update; one update per
    round trip (the ACK of a packet sent before the last update changes nothing); the queue
    pair is paced at the rate."""
    qp = _qp()
    cc, sim = qp.cc, qp.sim
    line = float(qp.line_rate_bps)
    delta = P.rate_ai_bps_per_100g * line / 100e9
    assert cc.rate_bps == line and delta == pytest.approx(4e8)

    def ack(rtt_ps: int) -> None:
        """One ACK of a packet sent after the last update, ``rtt_ps`` after it was sent."""
        psn = qp.snd_nxt
        qp.snd_nxt += 1
        sim.now += 1_000_000_000
        cc.on_ack(Packet(ACK, qp, qp.dst, qp.src, psn + 1, 64, 0, 0, 0, sim.now - rtt_ps))

    # the first ACK only records its RTT
    ack(10_000_000)
    assert (cc.updates, cc.rate_bps, cc.prev_rtt_ps) == (0, line, 10_000_000)
    state = {"rate": line, "prev": 10_000_000.0, "diff": 0.0, "neg": 0}
    band_mid = (P.t_low_ps + P.t_high_ps) // 2
    rtts = [2 * P.t_high_ps, P.t_low_ps // 2, P.t_low_ps // 2, band_mid, band_mid + 5_000_000]
    rtts += [band_mid - k * 2_000_000 for k in range(1, 12)]  # falling in the band: HAI
    rtts += [P.t_high_ps - 1_000_000]  # a steep rise within the band: the cut's factor is < 0
    branches = []
    for rtt in rtts:
        ack(rtt)
        branches.append(_algorithm_one(state, rtt, line, delta))
        assert cc.rate_bps == pytest.approx(state["rate"]), branches
        assert cc.rtt_diff_ps == pytest.approx(state["diff"]) and cc.neg_gradients == state["neg"]
        assert qp.rate_bps == pytest.approx(cc.rate_bps)
    assert cc.updates == len(rtts)
    assert {"below", "above", "increase", "hai", "decrease"} <= set(branches), branches
    assert cc.rate_bps == P.min_rate_bps  # the steep rise lands on the floor
    # an ACK of a packet sent before that update: nothing changes
    rate = cc.rate_bps
    cc.on_ack(Packet(ACK, qp, qp.dst, qp.src, cc.last_update_psn, 64, 0, 0, 0, sim.now - 3 * P.t_high_ps))
    assert cc.updates == len(rtts) and cc.rate_bps == rate
    # below T_low it climbs back by delta per update, up to line rate and no further
    for _ in range(int((line - rate) / delta) + 5):
        ack(P.t_low_ps // 2)
    assert cc.rate_bps == line


def _check_band(out: dict[str, float]) -> None:
    assert P.t_low_ps <= out["steady_mean_rtt_ps"] <= P.t_high_ps, _summary(out)


# Where TIMELY's defaults (the paper's 10 Gb/s thresholds) leave its band on this 400 Gb/s
# fabric: the cut on a positive gradient (beta x rtt_diff / min_rtt, 15-20% for a queue rising
# by a few microseconds per round trip) overshoots, the queue empties, and the climb back at
# delta = 400 Mb/s per base RTT (below T_low, no hyperactive increase) leaves the link idle for
# part of each cycle, with the mean RTT between the base RTT and T_low.
BELOW_BAND = pytest.mark.xfail(
    strict=True,
    reason="mean RTT below T_low: the gradient cut overshoots at 400 Gb/s (the comment above BELOW_BAND)",
)
UNDER_95 = pytest.mark.xfail(
    strict=True,
    reason="utilization 89-95%: the additive climb after each overshoot (the comment above BELOW_BAND)",
)


@pytest.mark.parametrize(
    "case",
    [
        "incast_16_64mb",
        pytest.param("incast_16_one_rtt_64mb", marks=BELOW_BAND),
        pytest.param("long_flows_one_rtt_512mb", marks=BELOW_BAND),
        pytest.param("long_flows_512mb", marks=BELOW_BAND),
    ],
)
def test_timely_holds_the_rtt_in_its_band(case: str) -> None:
    """The operating band (module docstring): below T_low the rate only grows and above T_high
    it is cut every round trip, so the steady mean RTT lies in [T_low, T_high]."""
    out = bottleneck_case("timely", case, True)
    assert out["drops"] == 0, _summary(out)
    _check_band(out)


@pytest.mark.parametrize(
    "case",
    [
        "incast_16_64mb",
        pytest.param("incast_16_one_rtt_64mb", marks=UNDER_95),
        pytest.param("long_flows_one_rtt_512mb", marks=UNDER_95),
        "long_flows_512mb",
    ],
)
def test_timely_keeps_the_bottleneck_busy_and_drops_nothing_lossless(case: str) -> None:
    """With the RTT in its band the queue is never empty, so the link is busy (>= 95% in
    steady state); PFC drops nothing."""
    out = bottleneck_case("timely", case, True)
    assert out["drops"] == 0, _summary(out)
    assert out["steady_utilization_ratio"] >= 0.95, _summary(out)


@pytest.mark.parametrize(
    "case", ["incast_16_64mb", "incast_16_one_rtt_64mb", "long_flows_one_rtt_512mb", "long_flows_512mb"]
)
def test_timely_rtt_never_settles_above_t_high(case: str) -> None:
    """Above T_high every round trip cuts the rate, so the steady mean RTT stays below it;
    nothing is dropped on the lossless fabric."""
    out = bottleneck_case("timely", case, True)
    assert out["drops"] == 0, _summary(out)
    assert out["steady_mean_rtt_ps"] <= P.t_high_ps, _summary(out)


def test_timely_section_is_validated_and_left_out_at_its_defaults() -> None:
    base = {"topology": {"kind": "leaf_spine"}, "workload": {"kind": "incast"}}
    with pytest.raises(ScenarioError) as err:
        validate({**base, "transport": {"cc": "timely", "timely": {"beta": 1.5}}})
    assert str(err.value).startswith("transport.timely.beta = 1.5")
    with pytest.raises(ScenarioError) as err:
        validate({**base, "transport": {"cc": "timely", "timely": {"t_low": "600us"}}})
    assert "transport.timely.t_low = 600000000" in str(err.value)
    assert "timely" not in validate(base).to_dict()["transport"]
    tuned = validate({**base, "transport": {"cc": "timely", "timely": {"t_low": "30us"}}})
    assert tuned.transport.to_params().cc_params["timely"].t_low_ps == 30_000_000
