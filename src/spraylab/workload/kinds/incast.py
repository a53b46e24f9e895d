"""``workload.kind = "incast"``: N senders, one message each, to one receiver."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from spraylab.model.types import PositiveBytes, TimePs
from spraylab.workload import patterns
from spraylab.workload.base import (
    FlowContext,
    Flows,
    WorkloadSection,
    WorkloadSize,
    check_ranks,
    one_group,
    register,
)

if TYPE_CHECKING:
    from spraylab.topology.base import TopologySection


@register
class IncastWorkload(WorkloadSection):
    summary = "`senders` random hosts send `size` each to host `receiver` at once"

    kind: Literal["incast"] = "incast"
    size: PositiveBytes = 2_000_000
    start: TimePs = 0
    senders: int = Field(default=16, ge=1)
    receiver: int = Field(default=0, ge=0)

    def check_fabric(self, topology: TopologySection, n_hosts: int, where: str) -> None:
        check_ranks(where, self.kind, 0, n_hosts)
        if self.receiver >= n_hosts:
            raise ValueError(f"{where}.receiver = {self.receiver}: must be a host id below {n_hosts}")
        if self.senders > n_hosts - 1:
            raise ValueError(
                f"{where}.senders = {self.senders}: at most {n_hosts - 1} on a {n_hosts}-host fabric"
            )

    def build_flows(self, ctx: FlowContext) -> Flows:
        senders = [h for h in ctx.hosts if h != self.receiver]
        senders = ctx.rng.sample(senders, self.senders)
        new = patterns.incast(sorted(senders), self.receiver, self.size, self.start, ctx.first_flow_id)
        return one_group(ctx, new, "incast", self.size, self.senders)

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        return WorkloadSize(self.senders, self.senders * self.size)
