import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spraylab.workload.cdf import FlowSizeCdf, poisson_flows
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


def test_random_pairs() -> None:
    hosts = [5, 6, 7]
    flows = random_pairs(hosts, 3000, 100, random.Random(9), start_ps=1, first_flow_id=10)
    assert flows == random_pairs(hosts, 3000, 100, random.Random(9), start_ps=1, first_flow_id=10)
    assert len(flows) == 3000 and flows[0].flow_id == 10
    counts = Counter((f.src, f.dst) for f in flows)
    assert set(counts) == {(s, d) for s in hosts for d in hosts if s != d}
    assert max(counts.values()) / min(counts.values()) < 1.3
    assert random_pairs(hosts, 0, 100, random.Random(0)) == []
