import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spraylab.metrics.maxmin import jain_index, max_min_rates


def test_textbook_line_network() -> None:
    # Link A (cap 1) carries f1, f2; link B (cap 2) carries f2, f3.
    rates = max_min_rates([["A"], ["A", "B"], ["B"]], {"A": 1, "B": 2})
    assert rates == pytest.approx([0.5, 0.5, 1.5])


def test_parking_lot() -> None:
    # Long flow over 3 unit links, one short flow per link: everybody gets 1/2.
    flows = [["l1", "l2", "l3"], ["l1"], ["l2"], ["l3"]]
    assert max_min_rates(flows, {"l1": 1, "l2": 1, "l3": 1}) == pytest.approx([0.5] * 4)


def test_two_level_bottlenecks() -> None:
    # Unit links 1-3 plus a big link 4 used only by the last flow.
    flows = [[1, 2], [1, 3], [2, 3], [3], [4]]
    cap = {1: 1.0, 2: 1.0, 3: 1.0, 4: 10.0}
    # Link 3 has 3 flows -> 1/3 each for flows 1, 2, 3; flow 0 then gets the rest of link 1.
    assert max_min_rates(flows, cap) == pytest.approx([2 / 3, 1 / 3, 1 / 3, 1 / 3, 10])


def test_special_cases() -> None:
    assert max_min_rates([], {}) == []
    assert max_min_rates([[], ["a"]], {"a": 3}) == [math.inf, 3]
    assert max_min_rates([["a", "a"]], {"a": 3}) == [3]  # duplicate link counts once
    assert max_min_rates([["a"], ["a", "b"]], {"a": 4, "b": math.inf}) == [2, 2]
    assert max_min_rates([["b"]], {"b": math.inf}) == [math.inf]
    assert max_min_rates([["z"], ["z"]], {"z": 0}) == [0, 0]
    with pytest.raises(ValueError, match="no capacity"):
        max_min_rates([["x"]], {})


instances = st.integers(1, 6).flatmap(
    lambda n_links: st.tuples(
        st.lists(st.integers(1, 100), min_size=n_links, max_size=n_links),
        st.lists(st.lists(st.integers(0, n_links - 1), max_size=n_links), min_size=1, max_size=10),
    )
)


@settings(max_examples=300)
@given(instances)
def test_max_min_bottleneck_property(instance: tuple[list[int], list[list[int]]]) -> None:
    caps, flow_links = instance
    capacity = dict(enumerate(caps))
    rates = max_min_rates(flow_links, capacity)
    eps = 1e-9
    load = {
        link: sum(r for r, links in zip(rates, flow_links, strict=True) if link in links) for link in capacity
    }
    # Feasible: no link over capacity.
    for link, cap in capacity.items():
        assert load[link] <= cap * (1 + eps)
    # Max-min optimal iff every flow has a bottleneck: a saturated link on which no flow is faster.
    for f, links in enumerate(flow_links):
        if not links:
            assert rates[f] == math.inf
            continue
        assert rates[f] > 0
        assert any(
            load[link] >= capacity[link] * (1 - eps)
            and all(rates[f] >= rates[g] * (1 - eps) for g, other in enumerate(flow_links) if link in other)
            for link in links
        )


def test_jain_index() -> None:
    assert jain_index([1, 1, 1, 1]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([1, 2]) == pytest.approx(9 / 10)
    assert jain_index([0, 0]) == 1.0
    with pytest.raises(ValueError):
        jain_index([])
    with pytest.raises(ValueError):
        jain_index([1, -1])


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=50))
def test_jain_bounds(xs: list[float]) -> None:
    j = jain_index(xs)
    assert 1 / len(xs) - 1e-9 <= j <= 1 + 1e-9
