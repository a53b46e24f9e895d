"""``workload.kind = "moe"``: one MoE layer's dispatch and/or combine all-to-all on a rail
cluster (the traffic model is :mod:`spraylab.workload.moe`)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from spraylab.model.types import PositiveBytes, TimePs
from spraylab.workload import moe
from spraylab.workload.base import WorkloadSize, register
from spraylab.workload.rail_strategies import RailStrategyName
from spraylab.workload.rail_workload import RailWorkloadSection, rail_size

MOE_PRESETS = {"mixtral-8x7b": moe.MIXTRAL_8X7B, "mixtral-8x22b": moe.MIXTRAL_8X22B}
# Size guard: routing every token over the experts as float arrays.
ROUTING_BYTES_PER_TOKEN_EXPERT = 32


@register
class MoeWorkload(RailWorkloadSection):
    """MoE all-to-all (dispatch and/or combine) on a rail-optimized cluster, sent with one of the
    rail strategies of ``spraylab.workload.rail_strategies`` (see docs/rails.md)."""

    summary = "one MoE layer's dispatch and/or combine (Mixtral presets, top-k routing), sent with `strategy`"

    kind: Literal["moe"] = "moe"
    model: Literal["mixtral-8x7b", "mixtral-8x22b"] = "mixtral-8x7b"
    tokens_per_gpu: int = Field(default=256, ge=1)
    bytes_per_element: int = Field(default=2, ge=1)
    zipf_s: float = Field(default=0.0, ge=0)
    dirichlet_alpha: float | None = Field(default=None, gt=0)
    seed_offset: int = 0  # the routing seed is run.seed + seed_offset
    phase: Literal["dispatch", "combine", "both"] = "dispatch"
    expert_compute: TimePs = 0  # phase "both": combine starts this long after the dispatch ends
    strategy: RailStrategyName = "rails"
    chunk: PositiveBytes = 512_000  # RailS largest chunk (strategy "rails"); sizes follow per-pair volume
    chunk_overhead: TimePs = 0  # RailS: each rail's sender posts at most one chunk per this time
    start: TimePs = 0

    @field_validator("dirichlet_alpha")
    @classmethod
    def _one_skew(cls, alpha: float | None, info: ValidationInfo) -> float | None:
        zipf_s = info.data.get("zipf_s")
        if alpha is not None and zipf_s:
            raise ValueError(f"give one skew: zipf_s = {zipf_s} is set too; use zipf_s or dirichlet_alpha")
        return alpha

    def expert_compute_ps(self) -> int:
        return self.expert_compute

    def phase_matrices(self, n_servers: int, gpus_per_server: int, seed: int) -> list[tuple[str, np.ndarray]]:
        """Phase ``dispatch`` and/or ``combine`` (its transpose); routing seed = run seed +
        ``seed_offset`` (numpy), so the matrix does not depend on what other workloads drew."""
        arrays = self.phase_arrays(n_servers, gpus_per_server, seed)
        return [(phase, d1 if d1.flags.c_contiguous else d1.copy()) for phase, d1 in arrays]

    def phase_arrays(self, n_servers: int, gpus_per_server: int, seed: int) -> list[tuple[str, np.ndarray]]:
        """:meth:`phase_matrices` without copies: combine is a transposed view of dispatch."""
        spec = moe.moe_spec_for(
            MOE_PRESETS[self.model],
            n_servers,
            gpus_per_server,
            self.tokens_per_gpu,
            zipf_s=self.zipf_s,
            dirichlet_alpha=self.dirichlet_alpha,
            seed=seed + self.seed_offset,
            bytes_per_element=self.bytes_per_element,
        )
        dispatch = moe.dispatch_matrix(spec)
        phases = []
        if self.phase in ("dispatch", "both"):
            phases.append(("dispatch", dispatch))
        if self.phase in ("combine", "both"):
            phases.append(("combine", dispatch.T))
        return phases

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        g = n_hosts
        model = MOE_PRESETS[self.model]
        phase_bytes = g * self.tokens_per_gpu * model.top_k * model.hidden * self.bytes_per_element
        routing = g * self.tokens_per_gpu * model.n_experts * ROUTING_BYTES_PER_TOKEN_EXPERT
        return rail_size(g, 2 if self.phase == "both" else 1, phase_bytes, self.chunk, routing)
