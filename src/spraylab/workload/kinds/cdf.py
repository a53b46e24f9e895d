"""``workload.kind = "cdf"``: Poisson arrivals at a target load, sizes from a flow-size CDF."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Literal

from pydantic import Field, field_validator

from spraylab.model.types import PositiveTimePs, TimePs, one_of
from spraylab.units import PS_PER_S
from spraylab.workload.base import FlowContext, Flows, WorkloadSection, WorkloadSize, one_group, register
from spraylab.workload.cdf import FlowSizeCdf, poisson_flows


@register
class CdfWorkload(WorkloadSection):
    summary = "Poisson arrivals offering `load` of every host link, sizes from the `cdf` distribution"

    kind: Literal["cdf"] = "cdf"
    cdf: str = "websearch"
    load: float = Field(default=0.5, gt=0, le=1)
    duration: PositiveTimePs = 1_000_000_000
    start: TimePs = 0

    @field_validator("cdf")
    @classmethod
    def _known_cdf(cls, name: str) -> str:
        if name.lower() not in FlowSizeCdf.names():
            raise ValueError(f"unknown flow-size distribution; allowed: {one_of(FlowSizeCdf.names())}")
        return name.lower()

    def build_flows(self, ctx: FlowContext) -> Flows:
        hosts = ctx.hosts
        cdf = FlowSizeCdf.load(self.cdf)
        new = poisson_flows(
            hosts, cdf, self.load, ctx.fabric.host_rate_bps, self.duration, ctx.rng, ctx.first_flow_id
        )
        new = [dataclasses.replace(f, start_ps=f.start_ps + self.start) for f in new]
        return one_group(ctx, new, "cdf", 0, len(hosts))

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        mean_bytes = _mean_bytes(self.cdf)
        # Poisson arrivals: aggregate rate = load x capacity / mean size (workload.cdf.poisson_flows).
        flows = math.ceil(self.load * host_rate_bps * n_hosts / (8 * mean_bytes) * self.duration / PS_PER_S)
        return WorkloadSize(flows, math.ceil(flows * mean_bytes))


@functools.cache
def _mean_bytes(name: str) -> float:
    # Cached: a sweep estimates every point, and each load reads the distribution's file.
    return FlowSizeCdf.load(name).mean_bytes()
