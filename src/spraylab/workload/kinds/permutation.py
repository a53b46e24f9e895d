"""``workload.kind = "permutation"``: every host sends one message to another, a derangement."""

from __future__ import annotations

from typing import Literal

from spraylab.model.types import PositiveBytes, TimePs
from spraylab.workload import patterns
from spraylab.workload.base import FlowContext, Flows, WorkloadSection, WorkloadSize, one_group, register


@register
class PermutationWorkload(WorkloadSection):
    summary = "every host sends `size` to another (a derangement; across ToRs unless cross_tor = false)"

    kind: Literal["permutation"] = "permutation"
    size: PositiveBytes = 2_000_000
    start: TimePs = 0
    cross_tor: bool = True  # never pair two hosts of the same ToR when avoidable

    def build_flows(self, ctx: FlowContext) -> Flows:
        hosts = ctx.hosts
        tors = ctx.fabric.host_tor
        first_of_tor: dict[str, int] = {}  # a ToR's first host index (tors.index, in linear time)
        for i, t in enumerate(tors):
            first_of_tor.setdefault(t, i)
        groups_by_tor = [first_of_tor[t] for t in tors] if self.cross_tor else None
        new = patterns.permutation(
            hosts, self.size, ctx.rng, self.start, ctx.first_flow_id, avoid_same_group=groups_by_tor
        )
        return one_group(ctx, new, "permutation", self.size, len(hosts))

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        return WorkloadSize(n_hosts, n_hosts * self.size)
