"""``workload.kind = "all_to_all"``: every ordered pair of hosts exchanges one message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

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


def _check_peers_in_flight(value: int) -> int:
    if value < 0:
        raise ValueError("must be >= 0: 0 = every peer at once, P >= 1 = at most P peers per rank")
    return value


# How many peers a rank sends to (and receives from) at once (0 = all of them, as before the option
# existed). Collective libraries bound it (MPI pairwise exchange: 1; NCCL: a few p2p channels),
# which changes what spraying does to go-back-N: see workload.collectives.all_to_all_collective.
PeersInFlight = Annotated[int, AfterValidator(_check_peers_in_flight)]


def dump_without_default_window(model: BaseModel, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
    """The section's dump, without ``peers_in_flight`` when it is 0 (the default).

    A dumped scenario identifies a run (store keys, tools/lb_report.py's --reuse), so leaving the
    default out keeps every scenario written before the option existed the same run as before."""
    data = handler(model)
    if not getattr(model, "peers_in_flight", 0):
        data.pop("peers_in_flight", None)
    return data


def check_peers_in_flight(where: str, peers_in_flight: int, ranks: int) -> None:
    if peers_in_flight > ranks - 1:
        raise ValueError(
            f"{where}.peers_in_flight = {peers_in_flight}: at most {ranks - 1} (the other "
            f"ranks of a {ranks}-rank all-to-all); 0 = all of them at once"
        )


@register
class AllToAllWorkload(WorkloadSection):
    summary = "every ordered pair of `hosts` sends `size`; at most `peers_in_flight` peers at a time"

    kind: Literal["all_to_all"] = "all_to_all"
    size: PositiveBytes = 1_000_000
    start: TimePs = 0
    hosts: int = Field(default=0, ge=0)  # 0 = every host
    peers_in_flight: PeersInFlight = 0  # 0 = all hosts - 1 peers at once; else 1 .. hosts - 1

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return dump_without_default_window(self, handler)

    def check_fabric(self, topology: TopologySection, n_hosts: int, where: str) -> None:
        check_ranks(where, self.kind, self.hosts, n_hosts)
        check_peers_in_flight(where, self.peers_in_flight, self.hosts or n_hosts)

    def build_flows(self, ctx: FlowContext) -> Flows:
        hosts = ctx.hosts
        members = hosts[: self.hosts] if self.hosts else hosts
        new = patterns.all_to_all(members, self.size, self.start, ctx.first_flow_id, self.peers_in_flight)
        return one_group(ctx, new, "alltoall", self.size * len(members), len(members))

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        m = self.hosts or n_hosts
        return WorkloadSize(m * (m - 1), m * (m - 1) * self.size)
