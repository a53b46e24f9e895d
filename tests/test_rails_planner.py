"""RailS planner: per-destination balance, loads near the bound, conservation, validation.

Theory checked: the bound T* of ``SCHEMES.md`` (busiest server's bytes over N NICs, plus one
header per packet), and the planner's guarantee that each (src server, dst server, rail) share is
within one packet of D2 / N, hence every NIC within M - 1 packets of the bound.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spraylab.net.framing import DATA_OVERHEAD_BYTES as HEADER_BYTES
from spraylab.rails.families import FAMILIES, family_matrix
from spraylab.rails.planner import (
    DEFAULT_MTU_BYTES,
    RailChunk,
    plan_rails,
    rail_loads_for_strategy,
    rail_shares,
    server_matrix,
    wire_bytes,
)

MTU = DEFAULT_MTU_BYTES
NIC_BPS = 400 * 10**9


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
    assert np.array_equal(pair, plan.shares)
    # per-destination balance: every rail within one packet of the even share
    assert np.all(np.abs(pair - d2[:, :, None] / n_rails) < MTU)
    assert np.all(pair.max(axis=2) - pair.min(axis=2) <= MTU)
    # predicted NIC loads agree with the entries
    assert np.array_equal(plan.nic_send_bytes, pair.sum(axis=1))
    assert np.array_equal(plan.nic_recv_bytes, pair.sum(axis=0))
    # uniform send => uniform receive: each NIC within M - 1 packets of its server's mean
    slack = max((m - 1) * MTU, 1)
    assert np.all(np.abs(plan.nic_recv_bytes - d2.sum(axis=0)[:, None] / n_rails) < slack)
    assert np.all(np.abs(plan.nic_send_bytes - d2.sum(axis=1)[:, None] / n_rails) < slack)
    assert plan.max_load_bytes < plan.bound_bytes + slack
    # chunks: the rail lists hold the shares, each chunk at most `chunk`; wire loads = framed chunks
    send_wire = np.zeros_like(plan.nic_send_wire_bytes)
    for d, per_rail in enumerate(plan.rail_chunks):
        for rail, lst in enumerate(per_rail):
            to = np.zeros(m, dtype=np.int64)
            for f, size in lst:
                assert 0 < size <= chunk and f != d
                to[f] += size
                send_wire[d, rail] += wire_bytes(size)
            assert np.array_equal(to, plan.shares[d, :, rail])
            assert sum(c.bytes for c in plan.chunks[d][rail]) == to.sum()
    assert np.array_equal(send_wire, plan.nic_send_wire_bytes)
    assert plan.nic_send_wire_bytes.sum() == plan.nic_recv_wire_bytes.sum()
    assert plan.t_star_ps(NIC_BPS) <= plan.planned_time_ps(NIC_BPS)
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


@settings(max_examples=50, deadline=None)
@given(
    family=st.sampled_from(FAMILIES),
    servers=st.sampled_from([8, 16]),
    seed=st.integers(0, 2**32 - 1),
    tokens=st.sampled_from([64, 256]),
)
def test_planned_load_within_5_percent_of_t_star(family: str, servers: int, seed: int, tokens: int) -> None:
    """Mixtral-sized matrices of every family on 8x8 and 16x8 GPUs at the default chunk: the
    busiest NIC's wire bytes over the rate stay within 1.05 T* (shares within one packet of
    D2 / N: fewer than M - 1 packets above the bound, a small fraction of a NIC's megabytes)."""
    d1 = family_matrix(family, servers, 8, seed, tokens_per_gpu=tokens)
    plan = plan_rails(d1, 8)
    t_star = plan.t_star_ps(NIC_BPS)
    assert t_star <= plan.planned_time_ps(NIC_BPS) <= 1.05 * t_star
    assert plan.max_load_bytes < plan.bound_bytes + (servers - 1) * MTU


def n_chunks(plan) -> int:
    return sum(len(lst) for per_rail in plan.rail_chunks for lst in per_rail)


def test_loads_do_not_depend_on_chunk_size() -> None:
    """Shares are fixed before chunking: any chunk size gives the same NIC loads; finer chunks
    only add headers (at most one per extra chunk: chunks are whole packets but a share's last)."""
    d1 = skewed_d1(4, 8, seed=7) // 10  # shares of a few MB
    plans = [plan_rails(d1, 8, chunk) for chunk in (4_000_000, 512_000, 64_000)]
    for plan in plans[1:]:
        assert np.array_equal(plan.nic_send_bytes, plans[0].nic_send_bytes)
        assert np.array_equal(plan.nic_recv_bytes, plans[0].nic_recv_bytes)
    for coarse, fine in zip(plans, plans[1:]):
        extra_chunks = n_chunks(fine) - n_chunks(coarse)
        assert extra_chunks > 0
        excess = fine.nic_send_wire_bytes - coarse.nic_send_wire_bytes
        assert excess.min() >= 0 and excess.sum() <= extra_chunks * HEADER_BYTES


def test_shares_rotate_leftover_packets_by_src_plus_dst() -> None:
    """Every rail gets floor(P / N) of a pair's P packets, the P mod N leftovers go to the rails
    from (d + f) mod N on and the partial packet to the rail after them."""
    d2 = np.zeros((3, 3), dtype=np.int64)
    d2[0, 1] = 3 * 100 + 10  # 3 packets of 100 B and 10 B, two rails: start (0 + 1) mod 2 = 1
    d2[0, 2] = 2 * 100 + 10  # no leftover packet: the 10 B go to the start, (0 + 2) mod 2 = 0
    d2[1, 2] = 5 * 100  # start (1 + 2) mod 2 = 1
    shares = rail_shares(d2, 2, mtu_bytes=100)
    assert shares[0, 1].tolist() == [110, 200]
    assert shares[0, 2].tolist() == [110, 100]
    assert shares[1, 2].tolist() == [200, 300]
    assert shares[1, 0].tolist() == [0, 0] and shares[2].sum() == 0


def test_leftovers_of_different_senders_meet_different_receive_nics() -> None:
    """Uniform all-to-all with N + 1 packets per server pair (one leftover each): a fixed
    tie-break would put every sender's leftover on receive NIC 0 (M - 1 extra packets there);
    rotated by (d + f) mod N the M - 1 = N - 1 leftovers reaching a server land on different
    NICs, so no NIC carries more than one leftover packet."""
    m = n = 4
    d1 = np.zeros((m * n, m * n), dtype=np.int64)
    for d in range(m):
        for f in range(m):
            if d != f:
                d1[d * n, f * n] = (n + 1) * MTU
    plan = plan_rails(d1, n)
    assert plan.nic_recv_bytes.max() == (m - 1) * MTU + MTU
    assert plan.nic_recv_bytes.min() == (m - 1) * MTU
    assert plan.nic_send_bytes.max() == (m - 1) * MTU + MTU


def test_rounds_are_shared_by_every_destination() -> None:
    """A server cuts every share into the rounds its largest share needs and sends round by
    round in shifted destination order: each round of a rail visits every other server once."""
    d1 = random_d1(4, 8, seed=3, high=50_000)  # shares of about 8 x 8 x 25 KB / 8 = 200 KB
    plan = plan_rails(d1, 8, 20 * MTU)
    for d, per_rail in enumerate(plan.rail_chunks):
        rounds = -(-int(plan.shares[d].max()) // (20 * MTU))
        assert rounds > 1
        for lst in per_rail:
            assert len(lst) == 3 * rounds
            assert [f for f, _ in lst] == [(d + k) % 4 for k in (1, 2, 3)] * rounds


def test_chunk_straddling_two_gpu_pairs_is_split() -> None:
    d1 = np.zeros((4, 4), dtype=np.int64)
    d1[0, 2], d1[0, 3] = 150, 50  # GPU 0 -> GPUs 2 and 3 of server 1: 2 packets of 100 B
    plan = plan_rails(d1, n_rails=2, chunk_bytes=100, mtu_bytes=100)
    assert plan.rail_chunks[0] == [[(1, 100)], [(1, 100)]]
    assert plan.chunks[0] == [
        [RailChunk(0, 2, 0, 100)],
        [RailChunk(0, 2, 1, 50), RailChunk(0, 3, 1, 50)],
    ]
    assert plan.chunks[1] == [[], []]


def test_same_server_traffic_is_excluded() -> None:
    d1 = np.zeros((4, 4), dtype=np.int64)
    d1[0, 1] = d1[3, 2] = 10**6
    plan = plan_rails(d1, n_rails=2)
    assert plan.max_load_bytes == 0 and list(plan.iter_chunks()) == []
    assert plan.imbalance == 1.0 and plan.t_star_ps(400 * 10**9) == 0


def test_bound_and_t_star_for_uniform_all_to_all() -> None:
    """T* = busiest server's bytes plus one header per packet, over N NICs at line rate; a
    uniform all-to-all of whole packets in packet-multiple chunks reaches it exactly."""
    m, n, b = 4, 8, 250 * MTU
    g = m * n
    d1 = np.full((g, g), b, dtype=np.int64)
    plan = plan_rails(d1, n, chunk_bytes=b)
    per_server = (m - 1) * n * n * b
    assert plan.bound_bytes == per_server / n
    assert plan.max_load_bytes == per_server // n  # perfectly balanced
    assert plan.imbalance == 1.0
    rate = 400 * 10**9
    wire = per_server + per_server // MTU * HEADER_BYTES
    assert plan.t_star_ps(rate) == -(-wire * 8 * 10**12 // (n * rate))
    assert plan.planned_time_ps(rate) == plan.t_star_ps(rate)
    assert plan.max_chunks_per_server == n * (m - 1) * n  # a rail share is n chunks of b bytes


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
        (np.zeros((4, 4)), 2, 1.5, r"chunk_bytes must be a positive integer, got 1.5"),
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
