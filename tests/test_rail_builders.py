"""The vectorized rail-strategy builders and MoE traffic matrix against straightforward loops.

The references below are the per-pair loops the builders replaced (one message per GPU pair in
the documented shifted orders, ``_chain`` per source GPU, one multinomial per GPU): the
vectorized code must give the same messages (ids, endpoints, sizes, starts, dependencies) in
the same order, and the same token counts from the same random stream.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from spraylab.workload import moe
from spraylab.workload.flows import FlowSpec
from spraylab.workload.rail_strategies import RailLinks, _chain_segments, rail_flows

NIC_BPS = 400 * 10**9
NVLINK_BPS = 3_600 * 10**9


def _links(servers: int, gpus: int) -> RailLinks:
    return RailLinks(servers, gpus, NIC_BPS, NVLINK_BPS, 1_000_000, 250_000)


class _RefBuilder:
    def __init__(self, start_ps: int, after: tuple[int, ...], group: str) -> None:
        self.flows: list[FlowSpec] = []
        self.start_ps, self.after, self.group = start_ps, after, group

    def add(self, src: int, dst: int, size: int, deps: Sequence[int] = ()) -> int:
        fid = len(self.flows)
        if deps:
            self.flows.append(FlowSpec(fid, src, dst, int(size), 0, tuple(deps), self.group))
        else:
            self.flows.append(FlowSpec(fid, src, dst, int(size), self.start_ps, self.after, self.group))
        return fid


def _ref_same_server(b: _RefBuilder, d1: np.ndarray, m_count: int, n: int) -> None:
    for k in range(1, n):
        for d in range(m_count):
            for i in range(n):
                src, dst = d * n + i, d * n + (i + k) % n
                if d1[src, dst] > 0:
                    b.add(src, dst, d1[src, dst])


def _ref_direct(b: _RefBuilder, d1: np.ndarray, m_count: int, n: int) -> None:
    g = m_count * n
    for k in range(1, g):
        for src in range(g):
            dst = (src + k) % g
            if src // n != dst // n and d1[src, dst] > 0:
                b.add(src, dst, d1[src, dst])


def _ref_chain(sizes: Sequence[int], window: int) -> list[int]:
    """One run of :func:`_chain_segments`, message by message: each waits for the latest
    earlier message with at least ``window`` bytes strictly between them (-1: none)."""
    waits: list[int] = []
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + int(s))
    i = -1
    for j in range(len(sizes)):
        # bytes strictly between i and j: prefix[j] - prefix[i + 1]
        while i + 1 < j and prefix[j] - prefix[i + 2] >= window:
            i += 1
        waits.append(i if i >= 0 and prefix[j] - prefix[i + 1] >= window else -1)
    return waits


def _ref_matched(b: _RefBuilder, d1: np.ndarray, m_count: int, n: int, window: int) -> None:
    blocks = d1.reshape(m_count, n, m_count, n)
    piece_id: dict[tuple[int, int, int, int], int] = {}
    for d in range(m_count):
        for i in range(n):
            order = [((d + k) % m_count, (i + j) % n) for k in range(1, m_count) for j in range(1, n)]
            keep = [(fm, int(blocks[d, i, fm[0], fm[1]])) for fm in order if blocks[d, i, fm[0], fm[1]] > 0]
            waits = _ref_chain([s for _, s in keep], window)
            ids: list[int] = []
            for (f, m), s in keep:
                w = waits[len(ids)]
                fid = b.add(d * n + i, d * n + m, s, (ids[w],) if w >= 0 else ())
                ids.append(fid)
                piece_id[(d, i, f, m)] = fid
    for k in range(1, m_count):
        for d in range(m_count):
            f = (d + k) % m_count
            for m in range(n):
                total = int(blocks[d, :, f, m].sum())
                if total:
                    deps = [piece_id[(d, i, f, m)] for i in range(n) if (d, i, f, m) in piece_id]
                    b.add(d * n + m, f * n + m, total, deps)


def _matrix(servers: int, gpus: int, seed: int, density: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    g = servers * gpus
    d1 = rng.integers(1, 50_000, size=(g, g)) * (rng.random((g, g)) < density)
    np.fill_diagonal(d1, 0)
    return d1.astype(np.int64)


CASES = [(2, 2, 0, 1.0), (3, 4, 1, 0.5), (4, 8, 2, 0.3), (5, 3, 3, 0.8), (2, 1, 4, 1.0)]


@pytest.mark.parametrize("strategy", ["rail_local", "rail_spray", "rail_matched"])
@pytest.mark.parametrize(("servers", "gpus", "seed", "density"), CASES)
def test_builders_equal_the_per_pair_loops(
    strategy: str, servers: int, gpus: int, seed: int, density: float
) -> None:
    d1 = _matrix(servers, gpus, seed, density)
    links = _links(servers, gpus)
    for window in (0, 30_000, links.default_nvlink_window()):
        got = rail_flows(d1, links, strategy, nvlink_window=window, start_ps=7, after=(), group="g").flows
        ref = _RefBuilder(7, (), "g")
        _ref_same_server(ref, d1, servers, gpus)
        if strategy == "rail_matched":
            _ref_matched(ref, d1, servers, gpus, window)
        else:
            _ref_direct(ref, d1, servers, gpus)
        assert got == ref.flows


def test_builders_chain_after_a_previous_phase() -> None:
    """Messages that wait for nothing inside the phase wait for ``after`` (ids offset by the
    phase's first id), as the per-pair builder's did."""
    d1 = _matrix(3, 4, 5, 0.6)
    links = _links(3, 4)
    got = rail_flows(d1, links, "rail_matched", 100, start_ps=5, after=(99,), group="g").flows
    assert [f.flow_id for f in got] == list(range(100, 100 + len(got)))
    free = [f for f in got if f.deps == (99,)]
    assert free and all(f.start_ps == 5 for f in free)
    assert all(min(f.deps) >= 100 for f in got if f.deps != (99,))


@pytest.mark.parametrize("window", [0, 1, 10, 25, 100, 10**9])
def test_chain_segments_equals_chain_per_segment(window: int) -> None:
    rng = np.random.default_rng(window)
    sizes = rng.integers(1, 20, size=200)
    segment = np.sort(rng.integers(0, 12, size=200))
    got = _chain_segments(sizes, segment, window)
    for seg in np.unique(segment):
        at = np.flatnonzero(segment == seg)
        local = _ref_chain(sizes[at].tolist(), window)
        assert got[at].tolist() == [int(at[w]) if w >= 0 else -1 for w in local]


def _ref_token_counts(spec: moe.MoeSpec) -> np.ndarray:
    """One GPU at a time, replicas looked up per expert (the module docstring's model)."""
    rng = np.random.default_rng(moe._seeds(spec.seed)[1])
    log_p = np.log(np.maximum(moe.expert_popularity(spec), np.finfo(float).tiny))
    replicas = moe.expert_replicas(spec)
    counts = np.zeros((spec.n_gpus, spec.n_gpus), dtype=np.int64)
    for gpu in range(spec.n_gpus):
        per_expert = moe._route_tokens(rng, log_p, spec.tokens_per_gpu, spec.top_k)
        by_count: dict[int, list[int]] = {}
        for expert, gpus in enumerate(replicas):
            by_count.setdefault(len(gpus), []).append(expert)
        for n_rep, experts in by_count.items():
            for x, split in zip(
                experts,
                rng.multinomial(per_expert[experts], np.full(n_rep, 1.0 / n_rep))
                if n_rep > 1
                else per_expert[experts][:, None],
            ):
                for gpu_to, count in zip(replicas[x], split):
                    counts[gpu, gpu_to] += count
    return counts


@pytest.mark.parametrize(
    "spec",
    [
        moe.moe_spec_for(moe.MIXTRAL_8X7B, 4, 8, 64, seed=3),
        moe.moe_spec_for(moe.MIXTRAL_8X7B, 3, 4, 40, zipf_s=1.1, seed=1),
        moe.moe_spec_for(moe.MIXTRAL_8X7B, 1, 4, 40, dirichlet_alpha=0.5, seed=2),
        moe.MoeSpec(
            n_servers=3, gpus_per_server=4, n_experts=5, top_k=2, tokens_per_gpu=30, hidden=8, seed=4
        ),
        moe.MoeSpec(
            n_servers=2, gpus_per_server=2, n_experts=9, top_k=3, tokens_per_gpu=30, hidden=8, seed=5
        ),
    ],
)
def test_token_counts_equal_the_per_expert_loop(spec: moe.MoeSpec) -> None:
    assert np.array_equal(moe.token_counts(spec), _ref_token_counts(spec))
