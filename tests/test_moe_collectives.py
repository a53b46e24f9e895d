"""MoE dispatch/combine matrices, ring and all-to-all collectives as DAGs, NCCL bandwidth conventions."""

from __future__ import annotations

import numpy as np
import pytest

from spraylab.workload.collectives import (
    algbw_bps,
    all_gather,
    all_to_all_collective,
    busbw_bps,
    reduce_scatter,
    ring_allreduce,
)
from spraylab.workload.moe import (
    MIXTRAL_8X7B,
    MIXTRAL_8X22B,
    MoeSpec,
    combine_matrix,
    dispatch_matrix,
    expert_popularity,
    expert_replicas,
    iteration_time_ps,
    moe_spec_for,
    token_counts,
)

# --- MoE ---------------------------------------------------------------------------------------------


def small_spec(**kw) -> MoeSpec:
    base = dict(n_servers=4, gpus_per_server=4, n_experts=16, top_k=2, tokens_per_gpu=512, hidden=64)
    return MoeSpec(**(base | kw))


@pytest.mark.parametrize("n_experts", [4, 6, 16, 40])
def test_dispatch_total_is_all_tokens_minus_local(n_experts: int) -> None:
    spec = small_spec(n_experts=n_experts, zipf_s=1.0, seed=3)
    counts = token_counts(spec)
    assert counts.sum() == spec.n_gpus * spec.tokens_per_gpu * spec.top_k
    d = dispatch_matrix(spec)
    assert d.shape == (16, 16) and np.all(np.diag(d) == 0) and d.min() >= 0
    local = np.trace(counts) * spec.hidden * spec.bytes_per_element
    assert d.sum() == 16 * 512 * 2 * 64 * 2 - local
    # nothing is sent to a GPU that hosts no chosen expert
    hosts = {g for gpus in expert_replicas(spec) for g in gpus}
    assert set(np.flatnonzero(counts.sum(axis=0))) <= hosts


def test_each_gpu_sends_top_k_per_token() -> None:
    spec = small_spec(n_experts=8, top_k=3, dirichlet_alpha=0.3)
    assert np.all(token_counts(spec).sum(axis=1) == spec.tokens_per_gpu * 3)


def test_expert_placement_round_robin_and_replicated() -> None:
    assert expert_replicas(small_spec(n_experts=20))[17] == [1]  # 17 % 16
    assert expert_replicas(small_spec(n_experts=8))[3] == [3, 11]
    assert expert_replicas(small_spec(n_experts=6))[5] == [5, 11]  # 16 GPUs, 6 experts: uneven replicas
    assert expert_replicas(small_spec(n_experts=6))[0] == [0, 6, 12]


def test_zipf_skew_raises_hottest_receiver() -> None:
    def max_col(s: float) -> int:
        return int(dispatch_matrix(small_spec(zipf_s=s, seed=11)).sum(axis=0).max())

    uniform, mild, heavy = max_col(0.0), max_col(0.8), max_col(1.5)
    assert uniform < mild < heavy
    p = expert_popularity(small_spec(zipf_s=1.5, seed=11))
    assert np.isclose(p.sum(), 1.0) and p.max() / p.min() == pytest.approx(16**1.5)


def test_dirichlet_skew() -> None:
    flat = dispatch_matrix(small_spec(dirichlet_alpha=1000.0)).sum(axis=0).max()
    skewed = dispatch_matrix(small_spec(dirichlet_alpha=0.1)).sum(axis=0).max()
    assert skewed > flat


def test_deterministic_by_seed() -> None:
    a = dispatch_matrix(small_spec(zipf_s=1.2, seed=5))
    assert np.array_equal(a, dispatch_matrix(small_spec(zipf_s=1.2, seed=5)))
    assert not np.array_equal(a, dispatch_matrix(small_spec(zipf_s=1.2, seed=6)))


def test_combine_is_transpose_of_dispatch() -> None:
    spec = small_spec(seed=2)
    assert np.array_equal(combine_matrix(spec), dispatch_matrix(spec).T)


def test_presets_and_iteration_time() -> None:
    m = MIXTRAL_8X7B
    assert (m.hidden, m.n_experts, m.top_k, m.n_layers) == (4096, 8, 2, 32)
    assert (MIXTRAL_8X22B.hidden, MIXTRAL_8X22B.n_layers) == (6144, 56)
    spec = moe_spec_for(MIXTRAL_8X7B, n_servers=2, gpus_per_server=8, tokens_per_gpu=256, zipf_s=1.0, seed=1)
    assert (spec.n_experts, spec.top_k, spec.hidden, spec.bytes_per_element) == (8, 2, 4096, 2)
    d = dispatch_matrix(spec)
    assert d.shape == (16, 16) and d.sum() > 0
    assert iteration_time_ps(MIXTRAL_8X22B, 10, 20, 30, 40) == 56 * 100
    with pytest.raises(ValueError, match="combine_ps must be >= 0, got -1"):
        iteration_time_ps(MIXTRAL_8X7B, 1, -1, 1, 1)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"top_k": 17}, "top_k must be <= n_experts=16, got 17"),
        ({"tokens_per_gpu": 0}, "tokens_per_gpu must be a positive integer, got 0"),
        ({"zipf_s": -1.0}, "zipf_s must be >= 0"),
        ({"dirichlet_alpha": 0.0}, "dirichlet_alpha must be > 0"),
        ({"dirichlet_alpha": 1.0, "zipf_s": 1.0}, "give one skew"),
    ],
)
def test_moe_spec_validation(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        small_spec(**kw)


# --- collectives ------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_ring_allreduce_structure(n: int) -> None:
    gpus = [10 * i + 1 for i in range(n)]  # arbitrary ids
    size = 1000 * n
    flows = ring_allreduce(gpus, size, first_flow_id=100)
    assert len(flows) == 2 * n * (n - 1)
    by_id = {f.flow_id: f for f in flows}
    assert sorted(by_id) == list(range(100, 100 + len(flows)))
    for f in flows:
        assert f.size_bytes == size // n and f.group == "allreduce"
        rank = gpus.index(f.src)
        assert f.dst == gpus[(rank + 1) % n]
        step = (f.flow_id - 100) // n
        if step == 0:
            assert f.deps == ()
        else:
            (dep,) = f.deps
            prev = by_id[dep]
            assert prev.dst == f.src  # waits for what this rank received at the previous step
            assert (prev.flow_id - 100) // n == step - 1


def test_ring_step_carries_every_part_once() -> None:
    n = 4
    flows = ring_allreduce(list(range(n)), 10, group="ar")  # parts 3, 3, 2, 2
    assert all(f.group == "ar" for f in flows)
    for step in range(2 * (n - 1)):
        assert sum(f.size_bytes for f in flows[step * n : (step + 1) * n]) == 10


def test_all_gather_and_reduce_scatter() -> None:
    for make in (all_gather, reduce_scatter):
        flows = make([0, 1, 2, 3], 4000, start_ps=7, after=(99,))
        assert len(flows) == 4 * 3 and all(f.size_bytes == 1000 for f in flows)
        first = [f for f in flows if f.flow_id < 4]
        assert all(f.deps == (99,) and f.start_ps == 7 for f in first)
        assert all(len(f.deps) == 1 and f.start_ps == 0 for f in flows if f.flow_id >= 4)
    assert all_gather([0, 1], 10)[0].group == "allgather"
    assert reduce_scatter([0, 1], 10)[0].group == "reducescatter"


def test_ring_rejects_bad_inputs() -> None:
    with pytest.raises(ValueError, match="at least 2 GPUs"):
        ring_allreduce([0], 100)
    with pytest.raises(ValueError, match="size_bytes must be >= the 4 ranks"):
        ring_allreduce([0, 1, 2, 3], 3)
    with pytest.raises(ValueError, match="gpus must be distinct"):
        all_gather([0, 1, 1], 300)


def test_all_to_all_collective() -> None:
    flows = all_to_all_collective([4, 5, 6], 100, first_flow_id=10)
    assert len(flows) == 6 and all(f.deps == () and f.size_bytes == 100 for f in flows)
    assert {(f.src, f.dst) for f in flows} == {(a, b) for a in (4, 5, 6) for b in (4, 5, 6) if a != b}
    assert [f.flow_id for f in flows] == list(range(10, 16))
    m = np.array([[5, 1, 0], [0, 0, 2], [3, 0, 9]])
    flows = all_to_all_collective([0, 1, 2], m)
    assert [(f.src, f.dst, f.size_bytes) for f in flows] == [(0, 1, 1), (1, 2, 2), (2, 0, 3)]
    with pytest.raises(ValueError, match="must be 3 x 3"):
        all_to_all_collective([0, 1, 2], np.zeros((2, 2)))


def test_moe_matrix_feeds_all_to_all() -> None:
    spec = small_spec(seed=4)
    d = dispatch_matrix(spec)
    flows = all_to_all_collective(list(range(spec.n_gpus)), d, group="dispatch")
    assert sum(f.size_bytes for f in flows) == d.sum()


def test_bandwidth_conventions() -> None:
    size, t = 10**9, 10**9  # 1 GB in 1 ms
    assert algbw_bps(size, t) == 8e12
    assert busbw_bps("allreduce", size, 8, t) == pytest.approx(8e12 * 2 * 7 / 8)
    for kind in ("allgather", "reduce_scatter", "all-to-all", "AllToAll"):
        assert busbw_bps(kind, size, 8, t) == pytest.approx(8e12 * 7 / 8)
    with pytest.raises(ValueError, match="kind must be one of"):
        busbw_bps("broadcast", size, 8, t)
    with pytest.raises(ValueError, match="time_ps must be > 0"):
        algbw_bps(size, 0)
