"""``workload.kind = "rail_alltoall"``: a uniform all-to-all among every GPU of a rail cluster."""

from __future__ import annotations

from typing import Literal

import numpy as np

from spraylab.model.types import PositiveBytes, TimePs
from spraylab.workload.base import WorkloadSize, register
from spraylab.workload.rail_strategies import RailStrategyName
from spraylab.workload.rail_workload import RailWorkloadSection, rail_size


@register
class RailAllToAllWorkload(RailWorkloadSection):
    """Uniform all-to-all among every GPU of a rail-optimized cluster, ``size`` bytes per ordered
    GPU pair, sent with one of the rail strategies."""

    summary = "uniform all-to-all among every GPU of a rail cluster (`size` per pair), sent with `strategy`"

    kind: Literal["rail_alltoall"] = "rail_alltoall"
    size: PositiveBytes = 64_000
    strategy: RailStrategyName = "rails"
    chunk: PositiveBytes = 512_000
    chunk_overhead: TimePs = 0
    start: TimePs = 0

    def phase_matrices(self, n_servers: int, gpus_per_server: int, seed: int) -> list[tuple[str, np.ndarray]]:
        g = n_servers * gpus_per_server
        d1 = np.full((g, g), self.size, dtype=np.int64)
        np.fill_diagonal(d1, 0)
        return [("", d1)]

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        return rail_size(n_hosts, 1, n_hosts * (n_hosts - 1) * self.size, self.chunk, 0)
