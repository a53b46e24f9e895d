import random
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simutil import make_net, run_flows, small_leaf_spine

from spraylab.model.scenario import Scenario, ScenarioError, validate
from spraylab.workload.build import build_flows
from spraylab.workload.cdf import FlowSizeCdf, poisson_flows
from spraylab.workload.collectives import all_to_all_collective
from spraylab.workload.flows import FlowSpec
from spraylab.workload.patterns import all_to_all, incast, permutation, random_pairs

# ---------------------------------------------------------------- CDF


def test_all_shipped_cdfs_load_case_insensitively() -> None:
    assert FlowSizeCdf.names() == ["websearch", "fb_hadoop", "alistorage2019", "googlerpc2008", "solar2022"]
    for name in FlowSizeCdf.names():
        cdf = FlowSizeCdf.load(name.upper())
        assert cdf.fractions[-1] == 1.0
        assert 0 < cdf.mean_bytes() <= cdf.sizes[-1]


def test_unknown_cdf_lists_names() -> None:
    with pytest.raises(ValueError, match="websearch.*solar2022"):
        FlowSizeCdf.load("datamining")


def test_mean_bytes_exact_for_simple_cdf() -> None:
    # Uniform on [0, 100] -> 50; half mass at 10 then uniform on [10, 30] -> 0.5*10 + 0.5*20.
    assert FlowSizeCdf([(0, 0), (100, 1)]).mean_bytes() == 50
    assert FlowSizeCdf([(10, 0.5), (30, 1)]).mean_bytes() == 15


def test_websearch_sample_mean_matches() -> None:
    cdf = FlowSizeCdf.load("websearch")
    rng = random.Random(1)
    samples = [cdf.sample(rng) for _ in range(20_000)]
    assert min(samples) >= 1
    assert max(samples) <= 30_000_000
    assert abs(sum(samples) / len(samples) - cdf.mean_bytes()) < 0.05 * cdf.mean_bytes()


def test_sample_interpolates_linearly() -> None:
    cdf = FlowSizeCdf([(0, 0), (1000, 0.5), (1000, 0.5), (3000, 1.0)])
    rng = random.Random(3)
    samples = [cdf.sample(rng) for _ in range(20_000)]
    below = sum(s <= 1000 for s in samples) / len(samples)
    assert abs(below - 0.5) < 0.02
    assert min(samples) >= 1 and max(samples) <= 3000


@given(
    st.lists(st.tuples(st.integers(1, 10**7), st.floats(0.0, 1.0)), min_size=1, max_size=20), st.integers()
)
def test_samples_stay_in_support(raw: list[tuple[int, float]], seed: int) -> None:
    sizes = sorted(s for s, _ in raw)
    fracs = sorted(f for _, f in raw)
    cdf = FlowSizeCdf([(0, 0.0), *zip(sizes, fracs, strict=True), (sizes[-1] + 1, 1.0)])
    rng = random.Random(seed)
    for _ in range(50):
        assert 1 <= cdf.sample(rng) <= sizes[-1] + 1


def test_bad_cdfs_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        FlowSizeCdf([(0, 0)])
    with pytest.raises(ValueError):
        FlowSizeCdf([(0, 0), (10, 0.9)])  # does not reach 1
    with pytest.raises(ValueError):
        FlowSizeCdf([(0, 0), (10, 0.6), (5, 1.0)])  # sizes go backwards
    path = tmp_path / "bad.txt"
    path.write_text("0 0\n10 fifty\n")
    with pytest.raises(ValueError, match="bad.txt:2"):
        FlowSizeCdf.from_file(path)


def test_from_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.txt"
    path.write_text("# comment\n0 0\n\n100 50\n300 100  # tail\n")
    cdf = FlowSizeCdf.from_file(path)
    assert cdf.name == "mine"
    assert cdf.sizes == (0, 100, 300)
    assert cdf.mean_bytes() == pytest.approx(0.5 * 50 + 0.5 * 200)


# ---------------------------------------------------------------- Poisson


def test_poisson_flow_count_near_lambda_duration() -> None:
    cdf = FlowSizeCdf.load("websearch")
    hosts = list(range(32))
    load, rate, duration = 0.5, 100 * 10**9, 10**10  # 10 ms
    flows = poisson_flows(hosts, cdf, load, rate, duration, random.Random(7), first_flow_id=100)
    expected = load * rate * len(hosts) / (8 * cdf.mean_bytes()) * duration / 1e12
    # Poisson: stddev = sqrt(expected) (~34 here), allow 4 sigma.
    assert abs(len(flows) - expected) < 4 * expected**0.5
    assert [f.flow_id for f in flows] == list(range(100, 100 + len(flows)))
    assert all(0 <= f.start_ps < duration for f in flows)
    assert all(f.src != f.dst and f.src in hosts and f.dst in hosts for f in flows)
    assert [f.start_ps for f in flows] == sorted(f.start_ps for f in flows)
    # Offered bytes should be near load * capacity * duration (heavy tail: loose bound).
    offered = sum(f.size_bytes for f in flows) * 8
    assert 0.8 < offered / (load * rate * len(hosts) * duration / 1e12) < 1.2


def test_poisson_is_deterministic_and_uniform_over_pairs() -> None:
    cdf = FlowSizeCdf.load("googlerpc2008")
    args = ([10, 20, 30, 40], cdf, 0.9, 10**9, 10**10)  # ~1550 flows
    a = poisson_flows(*args, random.Random(5))
    assert a == poisson_flows(*args, random.Random(5))
    srcs = Counter(f.src for f in a)
    assert len(a) > 1000 and set(srcs) == {10, 20, 30, 40}
    assert max(srcs.values()) / min(srcs.values()) < 1.3


@pytest.mark.parametrize("load", [0, -0.1, 1.01, float("nan")])
def test_poisson_rejects_bad_load(load: float) -> None:
    with pytest.raises(ValueError, match="load"):
        poisson_flows([0, 1], FlowSizeCdf.load("websearch"), load, 10**9, 10**6, random.Random(0))


def test_poisson_needs_two_hosts() -> None:
    with pytest.raises(ValueError, match="2 distinct hosts"):
        poisson_flows([0], FlowSizeCdf.load("websearch"), 0.5, 10**9, 10**6, random.Random(0))


# ---------------------------------------------------------------- patterns


def _assert_derangement(flows: list, hosts: list[int]) -> None:
    assert sorted(f.src for f in flows) == sorted(hosts)
    assert sorted(f.dst for f in flows) == sorted(hosts)
    assert all(f.src != f.dst for f in flows)


@given(st.integers(2, 200), st.integers())
def test_permutation_is_derangement(n: int, seed: int) -> None:
    hosts = [100 + 3 * i for i in range(n)]
    flows = permutation(hosts, 4096, random.Random(seed), start_ps=7, first_flow_id=5)
    _assert_derangement(flows, hosts)
    assert [f.flow_id for f in flows] == list(range(5, 5 + n))
    assert all(f.size_bytes == 4096 and f.start_ps == 7 for f in flows)


def test_permutation_avoids_same_tor_64_hosts_8_groups() -> None:
    hosts = list(range(64))
    tor = [h // 8 for h in hosts]
    for seed in range(20):
        flows = permutation(hosts, 1000, random.Random(seed), avoid_same_group=tor)
        _assert_derangement(flows, hosts)
        assert all(tor[f.src] != tor[f.dst] for f in flows)


@settings(max_examples=200)
@given(st.lists(st.integers(0, 6), min_size=2, max_size=60), st.integers())
def test_permutation_groups_property(groups: list[int], seed: int) -> None:
    hosts = list(range(len(groups)))
    flows = permutation(hosts, 1, random.Random(seed), avoid_same_group=groups)
    _assert_derangement(flows, hosts)
    inside = sum(groups[f.src] == groups[f.dst] for f in flows)
    # Hall's condition: only a group larger than n/2 forces internal flows, and then exactly
    # 2*g - n of them (its members beyond what the rest of the hosts can absorb).
    biggest = max(Counter(groups).values())
    assert inside == max(0, 2 * biggest - len(hosts))


def test_permutation_deterministic_and_varied() -> None:
    hosts = list(range(16))
    a = permutation(hosts, 1, random.Random(42))
    assert a == permutation(hosts, 1, random.Random(42))
    assert len({tuple(f.dst for f in permutation(hosts, 1, random.Random(s))) for s in range(20)}) > 15


def test_permutation_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        permutation([1], 1, random.Random(0))
    with pytest.raises(ValueError):
        permutation([1, 1, 2], 1, random.Random(0))
    with pytest.raises(ValueError, match="avoid_same_group"):
        permutation([1, 2, 3], 1, random.Random(0), avoid_same_group=[0, 1])


def test_incast() -> None:
    flows = incast([1, 2, 3], 9, 500, start_ps=10, first_flow_id=3)
    assert [(f.flow_id, f.src, f.dst, f.size_bytes, f.start_ps) for f in flows] == [
        (3, 1, 9, 500, 10),
        (4, 2, 9, 500, 10),
        (5, 3, 9, 500, 10),
    ]
    with pytest.raises(ValueError, match="receiver"):
        incast([1, 2], 2, 500)


@given(st.integers(2, 12))
def test_all_to_all(n: int) -> None:
    hosts = list(range(n))
    flows = all_to_all(hosts, 64)
    pairs = [(f.src, f.dst) for f in flows]
    assert len(pairs) == n * (n - 1) == len(set(pairs))
    assert all(s != d for s, d in pairs)
    assert [f.flow_id for f in flows] == list(range(len(flows)))
    # The default (peers_in_flight = 0) is the pattern as it always was: everything at once, in
    # (src, dst) order, so existing scenarios run exactly as before.
    assert pairs == sorted(pairs)
    assert all(f.deps == () and f.start_ps == 0 for f in flows)
    assert all_to_all(hosts, 64, peers_in_flight=0) == flows


# ---------------------------------------------------------------- all-to-all, bounded peers in flight


def _windowed_schedule(flows: list[FlowSpec], duration: dict[int, int]) -> dict[int, tuple[int, int]]:
    """(start, finish) of every flow when flow f takes ``duration[f]`` once started and a flow with
    deps starts ``start_ps`` after its last dep finishes (the Network's rule)."""
    times: dict[int, tuple[int, int]] = {}
    for f in sorted(flows, key=lambda f: f.flow_id):  # deps always point to smaller ids
        assert all(d < f.flow_id for d in f.deps)
        begin = f.start_ps + max((times[d][1] for d in f.deps), default=0)
        times[f.flow_id] = (begin, begin + duration[f.flow_id])
    return times


def _max_overlap(intervals: list[tuple[int, int]]) -> int:
    """Most half-open intervals [start, finish) covering one instant."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])  # ends first
    most = active = 0
    for _, step in events:
        active += step
        most = max(most, active)
    return most


def _assert_shift_order(flows: list[FlowSpec], hosts: list[int]) -> None:
    """Each rank's flows, by id, go to rank + 1, rank + 2, ... (positions in ``hosts``, mod n)."""
    n = len(hosts)
    pos = {h: i for i, h in enumerate(hosts)}
    for r, host in enumerate(hosts):
        dsts = [f.dst for f in sorted(flows, key=lambda f: f.flow_id) if f.src == host]
        assert [pos[d] for d in dsts] == [(r + k) % n for k in range(1, n)]


@settings(max_examples=150)
@given(st.integers(2, 12), st.data())
def test_all_to_all_peers_in_flight_structure(n: int, data: st.DataObject) -> None:
    hosts = [7 + 5 * i for i in range(n)]
    p = data.draw(st.integers(1, n + 2), label="peers_in_flight")
    flows = all_to_all(hosts, 64, start_ps=9, first_flow_id=4, peers_in_flight=p)
    pairs = [(f.src, f.dst) for f in flows]
    assert len(pairs) == n * (n - 1) == len(set(pairs))  # every ordered pair exactly once
    assert [f.flow_id for f in flows] == list(range(4, 4 + len(flows)))
    _assert_shift_order(flows, hosts)
    by_src: dict[int, list[FlowSpec]] = defaultdict(list)
    by_dst: dict[int, list[FlowSpec]] = defaultdict(list)
    for f in flows:
        by_src[f.src].append(f)
        by_dst[f.dst].append(f)
    for f in flows:
        k, m = by_src[f.src].index(f), by_dst[f.dst].index(f)
        # It takes the send lane of the sender's flow P places earlier and the receive lane of
        # the receiver's flow P places earlier; the first P of both open at the start time.
        lanes = [side[i - p].flow_id for side, i in ((by_src[f.src], k), (by_dst[f.dst], m)) if i >= p]
        if lanes:
            assert f.deps == tuple(dict.fromkeys(lanes)) and f.start_ps == 0
        else:
            assert f.deps == () and f.start_ps == 9


@settings(max_examples=150)
@given(st.integers(2, 10), st.data())
def test_all_to_all_never_more_than_p_sends_in_flight(n: int, data: st.DataObject) -> None:
    """Whatever each flow takes, a rank never has more than P flows between start and completion
    (and has P at the start); every later flow starts the instant one of the rank's flows ends."""
    hosts = list(range(n))
    p = data.draw(st.integers(1, n - 1), label="peers_in_flight")
    flows = all_to_all(hosts, 64, peers_in_flight=p)
    duration = {f.flow_id: data.draw(st.integers(1, 50), label=f"duration {f.flow_id}") for f in flows}
    times = _windowed_schedule(flows, duration)
    finishes = {b for _, b in times.values()}
    for host in hosts:
        sends = [times[f.flow_id] for f in flows if f.src == host]
        receives = [times[f.flow_id] for f in flows if f.dst == host]
        assert _max_overlap(sends) == p
        assert _max_overlap(receives) <= p
        # A lane that frees is taken at once: every later flow starts when a flow ends.
        assert all(a in finishes for a, _ in sorted(sends)[p:])


def test_all_to_all_peers_in_flight_in_the_simulator() -> None:
    """End to end through the Network's dependency mechanism: with P = 2 on 8 hosts no host has
    more than 2 flows between start and full receipt, each host starts its flows in shift order,
    and every flow completes."""
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=4)
    hosts = list(range(fabric.n_hosts))
    flows = all_to_all(hosts, 20_000, peers_in_flight=2)
    sim, net = make_net(fabric, lb="rps")
    run_flows(sim, net, flows)
    assert net.all_done
    n = len(hosts)
    by_src: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)  # src -> shift -> (start, finish)
    for qp in net.qps:
        assert 0 <= qp.start_ps < qp.rx.finish_ps
        by_src[qp.spec.src][(qp.spec.dst - qp.spec.src) % n] = (qp.start_ps, qp.rx.finish_ps)
    for src, mine in by_src.items():
        assert sorted(mine) == list(range(1, n))
        assert _max_overlap(list(mine.values())) == 2
        assert mine[1][0] == mine[2][0] == 0
        # Shift k starts the instant both its lanes are free: the sender's shift k - 2 and the
        # receiver's (its message from src + 2, also shift k - 2) have been received.
        for k in range(3, n):
            receiver_lane = by_src[(src + 2) % n][k - 2][1]
            assert mine[k][0] == max(mine[k - 2][1], receiver_lane)
    for dst in hosts:
        receives = [by_src[s][(dst - s) % n] for s in hosts if s != dst]
        assert _max_overlap(receives) <= 2


def test_all_to_all_collective_window_skips_empty_pairs() -> None:
    """Matrix sizes (e.g. MoE): the window counts a rank's non-empty messages in shift order; the
    first P wait for ``after`` and ``start_ps``."""
    sizes = np.array([[0, 5, 0, 7], [1, 0, 2, 3], [4, 4, 0, 0], [0, 0, 0, 0]])
    flows = all_to_all_collective([0, 1, 2, 3], sizes, 10, "a2a", 3, after=(1, 2), peers_in_flight=1)
    assert sum(f.size_bytes for f in flows) == sizes.sum()
    assert {(f.src, f.dst): f.size_bytes for f in flows} == {
        (i, j): int(sizes[i, j]) for i in range(4) for j in range(4) if sizes[i, j]
    }
    assert all(f.group == "a2a" for f in flows)
    ids = {(f.src, f.dst): f for f in flows}
    # Rank 0 sends to 1 then 3 (2 is empty); rank 1 to 2, 3, 0; rank 2 to 0, 1.
    assert ids[0, 1].deps == (1, 2) and ids[0, 1].start_ps == 3
    assert ids[0, 3].start_ps == 0
    assert ids[1, 2].deps == (1, 2)
    assert ids[1, 3].deps == (ids[1, 2].flow_id,)
    assert ids[2, 0].deps == (1, 2)
    # Later messages also wait for the receiver's previous receive (receive order: 3 gets from 1
    # then 0; 0 from 2 then 1; 1 from 0 then 2).
    assert ids[0, 3].deps == (ids[0, 1].flow_id, ids[1, 3].flow_id)
    assert ids[1, 0].deps == (ids[1, 3].flow_id, ids[2, 0].flow_id)
    assert ids[2, 1].deps == (ids[2, 0].flow_id, ids[0, 1].flow_id)
    # Default: unchanged, everything waits only for ``after``.
    flat = all_to_all_collective([0, 1, 2, 3], sizes, 10, "a2a", 3, after=(1, 2))
    assert [(f.src, f.dst) for f in flat] == sorted((f.src, f.dst) for f in flat)
    assert all(f.deps == (1, 2) and f.start_ps == 3 for f in flat)


@pytest.mark.parametrize("bad", [-1, -8])
def test_all_to_all_rejects_negative_peers_in_flight(bad: int) -> None:
    with pytest.raises(ValueError, match="peers_in_flight"):
        all_to_all([0, 1, 2], 10, peers_in_flight=bad)
    with pytest.raises(ValueError, match="peers_in_flight"):
        all_to_all_collective([0, 1, 2], 10, peers_in_flight=bad)


# ---------------------------------------------------------------- all-to-all options in scenarios


def _scenario(workload: dict) -> dict:
    return {
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
        "workload": workload,
    }


@pytest.mark.parametrize(
    ("workload", "expect"),
    [
        ({"kind": "all_to_all", "peers_in_flight": -1}, ("workload.peers_in_flight = -1", ">= 0")),
        ({"kind": "all_to_all", "peers_in_flight": 8}, ("workload.peers_in_flight = 8", "at most 7")),
        (
            {"kind": "all_to_all", "hosts": 4, "peers_in_flight": 4},
            ("workload.peers_in_flight = 4", "at most 3", "4-rank"),
        ),
        (
            {"kind": "collective", "collective": "alltoall", "peers_in_flight": 9},
            ("workload.peers_in_flight = 9", "at most 7"),
        ),
        (
            {"kind": "collective", "collective": "allreduce", "peers_in_flight": 2},
            ("workload.peers_in_flight = 2", "only for collective = 'alltoall'"),
        ),
    ],
)
def test_peers_in_flight_config_errors(workload: dict, expect: tuple[str, ...]) -> None:
    with pytest.raises(ScenarioError) as info:
        validate(_scenario(workload))
    assert len(info.value.lines) == 1
    for text in expect:
        assert text in info.value.lines[0], (text, info.value.lines[0])


def test_peers_in_flight_reaches_the_flows_and_default_is_not_dumped() -> None:
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=4)
    plain = Scenario.from_dict(_scenario({"kind": "all_to_all"}))
    # Not in the dump at its default, so a scenario's identity (store key, report cache) is the
    # same as before the option existed.
    assert "peers_in_flight" not in plain.to_dict()["workload"][0]
    flows, _ = build_flows(plain.workload, fabric, random.Random(0))
    assert all(f.deps == () for f in flows)

    windowed = plain.with_overrides({"workload.peers_in_flight": 3})
    assert windowed.to_dict()["workload"][0]["peers_in_flight"] == 3
    flows, groups = build_flows(windowed.workload, fabric, random.Random(0))
    assert len(flows) == 8 * 7 and sum(1 for f in flows if not f.deps) == 8 * 3
    assert groups["0:all_to_all"].ranks == 8
    _assert_shift_order(flows, list(range(8)))

    coll = Scenario.from_dict(
        _scenario({"kind": "collective", "collective": "alltoall", "size": "8KB", "peers_in_flight": 1})
    )
    flows, _ = build_flows(coll.workload, fabric, random.Random(0))
    assert sum(1 for f in flows if not f.deps) == 8
    assert all(f.group == "0:collective" and f.size_bytes == 1000 for f in flows)
    _assert_shift_order(flows, list(range(8)))


def test_random_pairs() -> None:
    hosts = [5, 6, 7]
    flows = random_pairs(hosts, 3000, 100, random.Random(9), start_ps=1, first_flow_id=10)
    assert flows == random_pairs(hosts, 3000, 100, random.Random(9), start_ps=1, first_flow_id=10)
    assert len(flows) == 3000 and flows[0].flow_id == 10
    counts = Counter((f.src, f.dst) for f in flows)
    assert set(counts) == {(s, d) for s in hosts for d in hosts if s != d}
    assert max(counts.values()) / min(counts.values()) < 1.3
    assert random_pairs(hosts, 0, 100, random.Random(0)) == []
