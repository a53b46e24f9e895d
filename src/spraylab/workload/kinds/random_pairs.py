"""``workload.kind = "random_pairs"``: messages between uniformly drawn host pairs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from spraylab.model.types import PositiveBytes, TimePs
from spraylab.workload import patterns
from spraylab.workload.base import FlowContext, Flows, WorkloadSection, WorkloadSize, one_group, register


@register
class RandomPairsWorkload(WorkloadSection):
    summary = "`flows` messages of `size` between random distinct host pairs"

    kind: Literal["random_pairs"] = "random_pairs"
    size: PositiveBytes = 1_000_000
    start: TimePs = 0
    flows: int = Field(default=64, ge=1)

    def build_flows(self, ctx: FlowContext) -> Flows:
        new = patterns.random_pairs(ctx.hosts, self.flows, self.size, ctx.rng, self.start, ctx.first_flow_id)
        return one_group(ctx, new, "random_pairs", self.size, self.flows)

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        return WorkloadSize(self.flows, self.flows * self.size)
