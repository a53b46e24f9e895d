"""RailS planner: per-destination balance, loads near the bound, conservation, validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spraylab.rails.planner import (
    RailChunk,
    plan_rails,
    rail_loads_for_strategy,
    server_matrix,
)


def random_d1(n_servers: int, n_rails: int, seed: int, high: int = 5_000_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    g = n_servers * n_rails
    return rng.integers(0, high, size=(g, g), dtype=np.int64)


def skewed_d1(n_servers: int, n_rails: int, seed: int) -> np.ndarray:
    """All-to-all where a few destination GPU indices (hot experts) get most bytes."""
    rng = np.random.default_rng(seed)
    g = n_servers * n_rails
    weight = np.tile(rng.zipf(1.5, size=n_rails).astype(float), n_servers)
    return (rng.integers(1, 1_000_000, size=(g, g)) * weight[None, :]).astype(np.int64)


def per_pair_rail_bytes(plan) -> np.ndarray:
    """[src_server, dst_server, rail] bytes of a plan."""
    m, n = plan.n_servers, plan.n_rails
    out = np.zeros((m, m, n), dtype=np.int64)
    for c in plan.iter_chunks():
        out[c.src_gpu // n, c.dst_gpu // n, c.rail] += c.bytes
    return out


def per_gpu_pair_bytes(plan, g: int) -> np.ndarray:
    out = np.zeros((g, g), dtype=np.int64)
    for c in plan.iter_chunks():
        out[c.src_gpu, c.dst_gpu] += c.bytes
    return out


def off_server(d1: np.ndarray, n_rails: int) -> np.ndarray:
    out = d1.copy()
    for d in range(d1.shape[0] // n_rails):
        out[d * n_rails : (d + 1) * n_rails, d * n_rails : (d + 1) * n_rails] = 0
    return out


def check_plan(d1: np.ndarray, n_rails: int, chunk: int) -> None:
    """All invariants the planner promises."""
    plan = plan_rails(d1, n_rails, chunk)
    m = d1.shape[0] // n_rails
    d2 = server_matrix(d1, n_rails)
    pair = per_pair_rail_bytes(plan)
    # conservation, per server pair and per GPU pair
    assert np.array_equal(pair.sum(axis=2), d2)
    assert np.array_equal(per_gpu_pair_bytes(plan, d1.shape[0]), off_server(d1, n_rails))
    # per-destination balance: every rail within one chunk of the even share, spread <= one chunk
    assert np.all(np.abs(pair - d2[:, :, None] / n_rails) <= chunk)
    assert np.all(pair.max(axis=2) - pair.min(axis=2) <= chunk)
    # predicted NIC loads agree with the entries
    assert np.array_equal(plan.nic_send_bytes, pair.sum(axis=1))
    assert np.array_equal(plan.nic_recv_bytes, pair.sum(axis=0))
    # uniform send => uniform receive: each NIC within (M-1) chunks of its server's mean
    slack = (m - 1) * chunk
    assert np.all(np.abs(plan.nic_recv_bytes - d2.sum(axis=0)[:, None] / n_rails) <= slack)
    assert np.all(np.abs(plan.nic_send_bytes - d2.sum(axis=1)[:, None] / n_rails) <= slack)
    assert plan.max_load_bytes <= plan.bound_bytes + slack
    # entries are well formed
    for d, per_rail in enumerate(plan.chunks):
        assert len(per_rail) == n_rails
        for rail, entries in enumerate(per_rail):
            for c in entries:
                assert isinstance(c, RailChunk)
                assert c.rail == rail and c.bytes > 0 and 0 < c.bytes <= chunk
                assert c.src_gpu // n_rails == d != c.dst_gpu // n_rails


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shape", [(2, 1), (2, 4), (4, 4), (3, 8)])
def test_invariants_on_random_matrices(shape: tuple[int, int], seed: int) -> None:
    m, n = shape
    check_plan(random_d1(m, n, seed), n, 512_000)
    check_plan(skewed_d1(m, n, seed), n, 300_000)


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(2, 4),
    n=st.integers(1, 4),
    chunk=st.integers(1, 400_000),
    seed=st.integers(0, 2**32 - 1),
    high=st.sampled_from([1, 10, 1_000, 3_000_000]),
)
def test_uniform_send_gives_uniform_receive(m: int, n: int, chunk: int, seed: int, high: int) -> None:
    chunk = max(chunk, high * n * n // 100 + 1)  # at most ~100 chunks per server pair: keeps it fast
    check_plan(random_d1(m, n, seed, high), n, chunk)


def test_max_load_converges_to_bound_as_chunks_shrink() -> None:
    m, n = 4, 8
    d1 = skewed_d1(m, n, seed=7)
    gaps = []
    for chunk in (4_000_000, 1_000_000, 250_000, 50_000):
        plan = plan_rails(d1, n, chunk)
        gap = plan.max_load_bytes - plan.bound_bytes
        assert 0 <= gap <= (m - 1) * chunk
        gaps.append(gap)
    assert gaps[-1] <= gaps[0]
    assert gaps[-1] / plan.bound_bytes < 0.01
    assert plan.imbalance < 1.1


def test_lpt_tie_breaks_and_tail() -> None:
    # server 0 -> server 1: 3 full chunks and a 10-byte tail, two rails
    d1 = np.zeros((4, 4), dtype=np.int64)
    d1[0, 2] = 3 * 100 + 10
    plan = plan_rails(d1, n_rails=2, chunk_bytes=100)
    rails = [[(c.dst_gpu, c.bytes) for c in entries] for entries in plan.chunks[0]]
    assert rails == [[(2, 100), (2, 100)], [(2, 100), (2, 10)]]
    assert plan.nic_send_bytes.tolist() == [[200, 110], [0, 0]]
    assert plan.nic_recv_bytes.tolist() == [[0, 0], [200, 110]]
    assert plan.chunks[1] == [[], []]


def test_chunk_straddling_two_gpu_pairs_is_split() -> None:
    d1 = np.zeros((4, 4), dtype=np.int64)
    d1[0, 2], d1[0, 3] = 150, 50  # GPU 0 -> GPUs 2 and 3 of server 1
    plan = plan_rails(d1, n_rails=2, chunk_bytes=100)
    assert plan.chunks[0] == [
        [RailChunk(0, 2, 0, 100)],
        [RailChunk(0, 2, 1, 50), RailChunk(0, 3, 1, 50)],
    ]


def test_same_server_traffic_is_excluded() -> None:
    d1 = np.zeros((4, 4), dtype=np.int64)
    d1[0, 1] = d1[3, 2] = 10**6
    plan = plan_rails(d1, n_rails=2)
    assert plan.max_load_bytes == 0 and list(plan.iter_chunks()) == []
    assert plan.imbalance == 1.0 and plan.t_star_ps(400 * 10**9) == 0


def test_bound_and_t_star_for_uniform_all_to_all() -> None:
    m, n, b = 4, 8, 1_000_000
    g = m * n
    d1 = np.full((g, g), b, dtype=np.int64)
    plan = plan_rails(d1, n, chunk_bytes=b)
    per_server = (m - 1) * n * n * b
    assert plan.bound_bytes == per_server / n
    assert plan.max_load_bytes == per_server // n  # perfectly balanced
    assert plan.imbalance == 1.0
    rate = 400 * 10**9
    assert plan.t_star_ps(rate) == per_server // n * 8 * 10**12 // rate
    assert plan.planned_time_ps(rate) == plan.t_star_ps(rate)


def test_strategies_compared() -> None:
    m, n = 4, 4
    g = m * n
    d1 = np.zeros((g, g), dtype=np.int64)
    # one hot expert: everyone sends one default chunk to GPU index 0 of every server
    d1[:, 0::n] = 512_000
    matched = rail_loads_for_strategy(d1, n, "rail_matched")
    local = rail_loads_for_strategy(d1, n, "rail_local")
    rails = rail_loads_for_strategy(d1, n, "rails")
    off = off_server(d1, n).sum()
    for loads in (matched, local, rails):
        assert loads.send_bytes.sum() == loads.recv_bytes.sum() == off
    # rail-matched puts everything on rail 0, at both ends
    assert matched.send_bytes[:, 1:].sum() == 0 and matched.recv_bytes[:, 1:].sum() == 0
    # rail-local spreads sending but still receives everything on NIC 0
    assert np.array_equal(local.recv_bytes, matched.recv_bytes)
    assert np.all(local.send_bytes == local.send_bytes[0, 0])
    assert rails.max_load_bytes * n == matched.max_load_bytes
    assert rails.imbalance == 1.0 and matched.imbalance == n
    assert rail_loads_for_strategy(d1, n, "rail_spray").max_load_bytes == local.max_load_bytes


@pytest.mark.parametrize(
    ("d1", "n_rails", "chunk", "match"),
    [
        (np.zeros((4, 6)), 2, 100, r"d1 must be a square 2-D matrix .* got shape \(4, 6\)"),
        (np.zeros(4), 2, 100, r"d1 must be a square 2-D matrix"),
        (-np.ones((4, 4)), 2, 100, r"d1 must hold non-negative byte counts, found -1"),
        (np.full((4, 4), 0.5), 2, 100, r"d1 must hold whole byte counts"),
        (np.full((4, 4), np.nan), 2, 100, r"d1 must hold finite byte counts"),
        (np.zeros((4, 4)), 0, 100, r"n_rails must be a positive integer, got 0"),
        (np.zeros((4, 4)), -2, 100, r"n_rails must be a positive integer, got -2"),
        (np.zeros((6, 6)), 4, 100, r"d1 size 6 must be divisible by n_rails=4"),
        (np.zeros((4, 4)), 2, 0, r"chunk_bytes must be a positive integer, got 0"),
        (np.zeros((4, 4)), 2, -5, r"chunk_bytes must be a positive integer, got -5"),
    ],
)
def test_bad_inputs(d1: np.ndarray, n_rails: int, chunk: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        plan_rails(d1, n_rails, chunk)


def test_bad_strategy_and_rate() -> None:
    with pytest.raises(ValueError, match=r"strategy must be one of rail_matched, .*; got 'ecmp'"):
        rail_loads_for_strategy(np.zeros((4, 4)), 2, "ecmp")
    plan = plan_rails(np.ones((4, 4), dtype=np.int64), 2)
    with pytest.raises(ValueError, match=r"nic_rate_bps must be > 0 \(bits/s\), got 0"):
        plan.t_star_ps(0)
