"""``workload.kind = "collective"``: one NCCL-style collective as a dependency DAG of messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from spraylab.model.types import PositiveBytes, TimePs
from spraylab.workload import collectives
from spraylab.workload.base import (
    FlowContext,
    Flows,
    WorkloadSection,
    WorkloadSize,
    check_ranks,
    one_group,
    register,
)
from spraylab.workload.kinds.all_to_all import (
    PeersInFlight,
    check_peers_in_flight,
    dump_without_default_window,
)

if TYPE_CHECKING:
    from spraylab.topology.base import TopologySection

RINGS = {
    "allreduce": collectives.ring_allreduce,
    "allgather": collectives.all_gather,
    "reducescatter": collectives.reduce_scatter,
}


@register
class CollectiveWorkload(WorkloadSection):
    summary = "ring all-reduce, all-gather, reduce-scatter or all-to-all of a `size` buffer (nccl-tests)"

    kind: Literal["collective"] = "collective"
    collective: Literal["allreduce", "allgather", "reducescatter", "alltoall"] = "allreduce"
    size: PositiveBytes = 8_000_000
    hosts: int = Field(default=0, ge=0)  # 0 = every host
    start: TimePs = 0
    peers_in_flight: PeersInFlight = 0  # collective = "alltoall" only, as in AllToAllWorkload

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return dump_without_default_window(self, handler)

    def check_fabric(self, topology: TopologySection, n_hosts: int, where: str) -> None:
        check_ranks(where, self.kind, self.hosts, n_hosts)
        if self.peers_in_flight and self.collective != "alltoall":
            # Checked here rather than on the field, as the error of a cross-field rule.
            raise ValueError(
                f"{where}.peers_in_flight = {self.peers_in_flight}: only for collective = 'alltoall' "
                f"(a ring {self.collective} has one message per rank in flight anyway); use 0"
            )
        check_peers_in_flight(where, self.peers_in_flight, self.hosts or n_hosts)
        ranks = self.hosts or n_hosts
        if self.collective in RINGS and self.size < ranks:
            # a ring splits the buffer into one part per rank, each a message of at least a byte
            raise ValueError(
                f"{where}.size = {self.size}: a ring {self.collective} of {ranks} ranks sends the buffer "
                f"in {ranks} parts of at least 1 byte; give at least {ranks} bytes"
            )

    def build_flows(self, ctx: FlowContext) -> Flows:
        hosts = ctx.hosts
        members = hosts[: self.hosts] if self.hosts else hosts
        ring = RINGS.get(self.collective)
        if ring is not None:
            new = ring(members, self.size, ctx.first_flow_id, ctx.group, self.start)
        else:
            per_pair = max(1, self.size // len(members))
            new = collectives.all_to_all_collective(
                members,
                per_pair,
                ctx.first_flow_id,
                ctx.group,
                self.start,
                peers_in_flight=self.peers_in_flight,
            )
        return one_group(ctx, new, self.collective, self.size, len(members))

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        m = self.hosts or n_hosts
        steps = {"allreduce": 2 * (m - 1), "allgather": m - 1, "reducescatter": m - 1}.get(self.collective)
        if steps is None:  # all-to-all: size / m per ordered pair
            return WorkloadSize(m * (m - 1), m * (m - 1) * max(1, self.size // m))
        return WorkloadSize(steps * m, steps * self.size)
