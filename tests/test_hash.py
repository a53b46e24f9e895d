"""The switch hash (``spraylab.net.routes.hop_hash``): independent, uniform choices at every tier.

Theory. Between hosts of different pods a k-ary fat-tree offers (k/2)^2 shortest paths: the
edge switch picks one of k/2 aggregation uplinks, the aggregation switch one of k/2 core
uplinks, and the way down is then fixed. With a mixing hash and independent per-switch seeds,
a random packet hash lands on every (edge uplink, aggregation uplink) pair with probability
1/(k/2)^2: Pearson's X^2 over N traced routes follows chi-square with (k/2)^2 - 1 degrees of
freedom. A hash that ties the tiers together (Python's tuple hash did: the aggregation switch
reached only 2 of its k/2 uplinks once the edge uplink was chosen) leaves cells empty and X^2
near N x (cells - reached) / reached, a p-value of 0 to machine precision.

The p-value comes from the Wilson-Hilferty approximation (scipy is not a dependency):
(X^2/df)^(1/3) is close to normal with mean 1 - 2/(9 df) and variance 2/(9 df); its error is
below 0.004, and 12% of p at p = 0.001, for the df used (3 to 63). Threshold: p > 0.001 for each k. The entropies are
drawn from a fixed seed, so the test is deterministic; a correct hash passes with
probability 0.999 per k over seeds, a broken one fails for every seed.
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from simutil import US, make_net

from spraylab.fluid.routing import hop_hash_array, packet_hash_array, random_samples, random_words
from spraylab.net.routes import hop_hash, mix64, packet_hash, trace_route
from spraylab.study.validation import chi_square_p_value
from spraylab.topology.fat_tree import fat_tree

G = 1_000_000_000
P_MIN = 0.001
ROUTES_PER_CELL = 50  # expected count per cell: far above the 5 that Pearson's test needs


def test_wilson_hilferty_matches_exact_tail() -> None:
    """Against the exact chi-square tail for even df, P(X > x) = e^(-x/2) sum_{i<df/2} (x/2)^i / i!:
    within 0.004 everywhere, and within 15% at the p = 0.001 threshold, for df 4, 16 and 64."""

    def exact(x: float, df: int) -> float:
        return math.exp(-x / 2) * sum((x / 2) ** i / math.factorial(i) for i in range(df // 2))

    for df in (4, 16, 64):
        for i in range(1, 200):
            x = df * i / 50
            assert chi_square_p_value(x, df) == pytest.approx(exact(x, df), abs=4e-3)
        lo, hi = 0.0, 1000.0  # bisect for the exact 0.001 quantile
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if exact(mid, df) > P_MIN else (lo, mid)
        assert chi_square_p_value(lo, df) == pytest.approx(P_MIN, rel=0.15)


def test_mix64_is_splitmix64() -> None:
    """The finalizer of splitmix64: seeded with 0, the generator's first two outputs are
    mix64(gamma) and mix64(2 gamma) (gamma = 0x9E3779B97F4A7C15), published as below."""
    gamma = 0x9E3779B97F4A7C15
    assert mix64(gamma) == 0xE220A8397B1DCDAF
    assert mix64(2 * gamma % (1 << 64)) == 0x6E789E6AA1B965F4


@pytest.mark.parametrize("k", [4, 8, 16])
def test_uplinks_are_jointly_uniform_across_tiers(k: int) -> None:
    half = k // 2
    _, net = make_net(fat_tree(k, 100 * G, 1 * US), seed=k)
    src, dst = 0, net.fabric.n_hosts - 1  # pod 0 -> pod k-1
    cells = half * half
    n = ROUTES_PER_CELL * cells
    rng = random.Random(k)
    counts: Counter[tuple[str, str]] = Counter()
    for _ in range(n):
        route = trace_route(net, src, dst, pkt_hash=packet_hash(rng.getrandbits(24), rng.getrandbits(16)))
        assert route.complete
        fanouts = [h.fanout for h in route.hops]
        assert fanouts == [1, half, half, 1, 1, 1]  # egress of NIC, edge, agg, core, agg, edge
        edge_up, agg_up = route.hops[1].port, route.hops[2].port
        counts[(edge_up.name, agg_up.name)] += 1
    assert len(counts) == cells
    expected = n / cells
    x2 = sum((c - expected) ** 2 / expected for c in counts.values())
    p = chi_square_p_value(x2, cells - 1)
    assert p > P_MIN, f"k = {k}: X^2 = {x2:.1f} with {cells - 1} df, p = {p:.2g}"


def test_hashes_are_the_same_in_every_process() -> None:
    """Plain integer arithmetic: a fresh interpreter with another string-hash seed computes the
    same header and hop hashes (Python's hash() of a str would not)."""
    values = [(f, e, s) for f, e, s in ((0, 0, 0), (7, 12345, 1 << 40), (1 << 20, 65535, (1 << 64) - 1))]
    here = [hop_hash(packet_hash(f, e), s) for f, e, s in values]
    code = (
        "from spraylab.net.routes import hop_hash, packet_hash\n"
        f"print([hop_hash(packet_hash(f, e), s) for f, e, s in {values!r}])"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr(here)


@given(
    hashes=st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=50),
    seed=st.integers(0, (1 << 64) - 1),
    flow_ids=st.lists(st.integers(0, (1 << 40) - 1), min_size=1, max_size=50),
)
def test_array_hashes_equal_the_scalar_ones(hashes: list[int], seed: int, flow_ids: list[int]) -> None:
    """The numpy versions the matrix tiers use (``l0_rail``) compute the same 64-bit values."""
    assert hop_hash_array(np.array(hashes, dtype=np.uint64), seed).tolist() == [
        hop_hash(h, seed) for h in hashes
    ]
    entropies = [(f * 7919) & 0xFFFF for f in flow_ids]
    assert packet_hash_array(np.array(flow_ids), np.array(entropies)).tolist() == [
        packet_hash(f, e) for f, e in zip(flow_ids, entropies)
    ]


@given(seed=st.integers(0, 2**32), count=st.integers(0, 300), bits=st.integers(1, 32))
def test_random_words_are_the_generator_s_short_draws(seed: int, count: int, bits: int) -> None:
    """One long draw gives the values, and leaves the generator in the state, of ``count``
    calls of ``getrandbits(bits)``."""
    a, b = random.Random(seed), random.Random(seed)
    assert random_words(a, count, bits).tolist() == [b.getrandbits(bits) for _ in range(count)]
    assert a.getrandbits(64) == b.getrandbits(64)


@given(
    seed=st.integers(0, 2**32),
    population=st.integers(1, 2**32 - 1),
    k=st.integers(0, 40),
    count=st.integers(0, 60),
)
def test_random_samples_are_the_generator_s_samples(seed: int, population: int, k: int, count: int) -> None:
    """The bulk draw gives the samples, and leaves the generator in the state, of ``count``
    calls of ``sample(range(population), k)`` (spray_rr's entropies at every flow's start),
    whatever path ``sample`` takes: redrawing out-of-range values and repeats, or (a population
    not far above ``k``) its own."""
    k = min(k, population)
    a, b = random.Random(seed), random.Random(seed)
    assert random_samples(a, population, k, count) == [b.sample(range(population), k) for _ in range(count)]
    assert a.getrandbits(64) == b.getrandbits(64)


def test_random_samples_redraw_repeats() -> None:
    """A small population forces repeats within a sample (each must be redrawn, as ``sample``
    does) and out-of-range draws (100 of 128 values in range)."""
    a, b = random.Random(7), random.Random(7)
    assert random_samples(a, 100, 12, 500) == [b.sample(range(100), 12) for _ in range(500)]
    assert a.getstate() == b.getstate()
