"""Mixture-of-Experts all-to-all traffic: who sends how many bytes to whom in dispatch and combine.

Expert placement (round-robin over the G GPUs, GPU id = server * gpus_per_server + index):

* ``n_experts >= G``: expert e lives on GPU ``e % G`` (several experts per GPU).
* ``n_experts < G``: experts are replicated round-robin, GPU g hosts expert ``g % n_experts``, so expert
  e has replicas on GPUs e, e + E, e + 2E, ... . A token that needs expert e goes to one of its replicas
  chosen uniformly at random (seeded). This keeps the all-to-all spread over the whole cluster; the
  alternative (local expert-parallel groups of E consecutive GPUs) would keep Mixtral's 8 experts on
  one 8-GPU server and put no traffic on the network at all.

With 8 GPUs per server and E = 8, expert e sits on GPU index e of every server: a hot expert makes
GPU index e, hence NIC/rail e, hot under rail-matched forwarding; this is the case RailS targets.

Routing: expert popularity p is uniform, Zipf (p ∝ rank^-s over a seeded random ranking of experts)
or Dirichlet(α); each token picks ``top_k`` distinct experts, sampled without replacement in
proportion to p (Gumbel top-k). Each (token, expert) pair moves ``hidden * bytes_per_element`` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class ModelPreset:
    """The MoE shape of a model: what the network sees of it."""

    name: str
    hidden: int
    n_experts: int
    top_k: int
    n_layers: int


MIXTRAL_8X7B = ModelPreset(name="mixtral-8x7b", hidden=4096, n_experts=8, top_k=2, n_layers=32)
MIXTRAL_8X22B = ModelPreset(name="mixtral-8x22b", hidden=6144, n_experts=8, top_k=2, n_layers=56)


@dataclass(frozen=True, slots=True)
class MoeSpec:
    """One MoE layer's all-to-all: cluster shape, routing and skew (``zipf_s`` or ``dirichlet_alpha``)."""

    n_servers: int
    gpus_per_server: int
    n_experts: int
    top_k: int
    tokens_per_gpu: int
    hidden: int
    bytes_per_element: int = 2
    zipf_s: float = 0.0
    dirichlet_alpha: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_servers", "gpus_per_server", "n_experts", "top_k", "tokens_per_gpu", "hidden"):
            _require_positive_int(name, getattr(self, name))
        _require_positive_int("bytes_per_element", self.bytes_per_element)
        if self.top_k > self.n_experts:
            raise ValueError(f"top_k must be <= n_experts={self.n_experts}, got {self.top_k}")
        if self.zipf_s < 0:
            raise ValueError(f"zipf_s must be >= 0 (0 = uniform), got {self.zipf_s}")
        if self.dirichlet_alpha is not None:
            if self.dirichlet_alpha <= 0:
                raise ValueError(f"dirichlet_alpha must be > 0 or None, got {self.dirichlet_alpha}")
            if self.zipf_s:
                raise ValueError("give one skew: zipf_s must be 0 when dirichlet_alpha is set")

    @property
    def n_gpus(self) -> int:
        return self.n_servers * self.gpus_per_server

    @property
    def bytes_per_token(self) -> int:
        """Bytes one (token, expert) pair moves: one hidden vector."""
        return self.hidden * self.bytes_per_element


def moe_spec_for(
    preset: ModelPreset,
    n_servers: int,
    gpus_per_server: int,
    tokens_per_gpu: int,
    zipf_s: float = 0.0,
    dirichlet_alpha: float | None = None,
    seed: int = 0,
    bytes_per_element: int = 2,
) -> MoeSpec:
    """A :class:`MoeSpec` with the expert count, top-k and hidden size of ``preset``."""
    return MoeSpec(
        n_servers=n_servers,
        gpus_per_server=gpus_per_server,
        n_experts=preset.n_experts,
        top_k=preset.top_k,
        tokens_per_gpu=tokens_per_gpu,
        hidden=preset.hidden,
        bytes_per_element=bytes_per_element,
        zipf_s=zipf_s,
        dirichlet_alpha=dirichlet_alpha,
        seed=seed,
    )


def expert_replicas(spec: MoeSpec) -> list[list[int]]:
    """GPUs hosting each expert (see the module docstring)."""
    g, e = spec.n_gpus, spec.n_experts
    if e >= g:
        return [[x % g] for x in range(e)]
    return [list(range(x, g, e)) for x in range(e)]


def expert_popularity(spec: MoeSpec) -> np.ndarray:
    """Probability of each expert being picked (sums to 1), deterministic given the seed."""
    rng = np.random.default_rng(_seeds(spec.seed)[0])
    e = spec.n_experts
    if spec.dirichlet_alpha is not None:
        p = rng.dirichlet(np.full(e, spec.dirichlet_alpha))
    else:
        by_rank = np.arange(1, e + 1, dtype=float) ** -spec.zipf_s
        p = by_rank[rng.permutation(e)]
    return p / p.sum()


def token_counts(spec: MoeSpec) -> np.ndarray:
    """G x G matrix of (token, expert) pairs GPU i sends to GPU j, diagonal (local) included."""
    rng = np.random.default_rng(_seeds(spec.seed)[1])
    log_p = np.log(np.maximum(expert_popularity(spec), np.finfo(float).tiny))
    groups = _replica_groups(expert_replicas(spec))
    counts = np.zeros((spec.n_gpus, spec.n_gpus), dtype=np.int64)
    # One GPU at a time: the routing and replica draws of GPU g come before GPU g+1's, so the
    # stream (and every count) is the same at any cluster size; the work per GPU is numpy.
    for gpu in range(spec.n_gpus):
        per_expert = _route_tokens(rng, log_p, spec.tokens_per_gpu, spec.top_k)
        _to_gpus(rng, per_expert, groups, counts[gpu])
    return counts


def dispatch_matrix(spec: MoeSpec) -> np.ndarray:
    """G x G bytes of the dispatch all-to-all (tokens to their experts' GPUs), diagonal 0."""
    d = token_counts(spec)
    d *= spec.bytes_per_token
    np.fill_diagonal(d, 0)
    return d


def combine_matrix(spec: MoeSpec) -> np.ndarray:
    """G x G bytes of the combine all-to-all: expert outputs go back, the transpose of dispatch."""
    return dispatch_matrix(spec).T.copy()


def iteration_time_ps(
    preset: ModelPreset, dispatch_ps: int, combine_ps: int, expert_compute_ps: int, other_compute_ps: int
) -> int:
    """Per layer: dispatch -> expert compute -> combine, plus the rest of the layer; times the layers."""
    parts = {
        "dispatch_ps": dispatch_ps,
        "combine_ps": combine_ps,
        "expert_compute_ps": expert_compute_ps,
        "other_compute_ps": other_compute_ps,
    }
    for name, value in parts.items():
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    return preset.n_layers * int(sum(parts.values()))


# --- helpers ---------------------------------------------------------------------------------------


def _route_tokens(rng: np.random.Generator, log_p: np.ndarray, n_tokens: int, top_k: int) -> np.ndarray:
    """(token, expert) pairs per expert for one GPU: top_k distinct experts per token ~ popularity."""
    keys = log_p + rng.gumbel(size=(n_tokens, log_p.size))
    chosen = np.argpartition(-keys, top_k - 1, axis=1)[:, :top_k]
    return np.bincount(chosen.ravel(), minlength=log_p.size)


def _replica_groups(replicas: list[list[int]]) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """Experts with the same replica count, in order of first appearance, as (experts,
    their GPUs (experts x replicas), whether no GPU appears twice)."""
    by_count: dict[int, list[int]] = {}
    for expert, gpus in enumerate(replicas):
        by_count.setdefault(len(gpus), []).append(expert)
    out = []
    for experts in by_count.values():
        gpus = np.array([replicas[x] for x in experts], dtype=np.int64)
        out.append((np.array(experts, dtype=np.int64), gpus, len(np.unique(gpus)) == gpus.size))
    return out


def _to_gpus(
    rng: np.random.Generator,
    per_expert: np.ndarray,
    groups: list[tuple[np.ndarray, np.ndarray, bool]],
    out: np.ndarray,
) -> None:
    """Spread each expert's pairs uniformly at random over its replicas; add pairs per GPU to
    ``out``."""
    for experts, gpus, distinct in groups:
        n_rep = gpus.shape[1]
        if n_rep == 1:
            split = per_expert[experts][:, None]
        else:
            split = rng.multinomial(per_expert[experts], np.full(n_rep, 1.0 / n_rep))
        if distinct:  # no GPU twice: a plain scatter adds
            out[gpus.ravel()] += split.ravel()
        else:
            np.add.at(out, gpus.ravel(), split.ravel())


def _seeds(seed: int) -> list[np.random.SeedSequence]:
    """Independent streams: [popularity, routing]."""
    return np.random.SeedSequence(seed).spawn(2)


def _require_positive_int(name: str, value: object) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
