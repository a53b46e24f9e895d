"""What the rail-cluster workload kinds (``moe``, ``rail_alltoall``) share: each describes one or
more all-to-all phases as GPU x GPU byte matrices, sent with one of the rail strategies
(:mod:`spraylab.workload.rail_strategies`) on a rail-optimized fabric."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from spraylab.net.framing import data_wire_bytes
from spraylab.workload.base import FlowContext, Flows, GroupInfo, WorkloadSection, WorkloadSize
from spraylab.workload.flows import FlowSpec
from spraylab.workload.rail_strategies import RailLinks, rail_flows

if TYPE_CHECKING:
    from spraylab.topology.base import TopologySection

# Size guard (spraylab.runs.budget): rail workloads build G x G int64 byte matrices (dispatch, its
# transpose, the planner's copies). Rail strategies' NVLink relay messages and chunks add bytes
# and messages over the GPU-pair matrix (measured on 4 x 4 GPUs: at most 1.6x the bytes and 6x
# the G(G-1) messages).
RAIL_MATRIX_BYTES_PER_PAIR = 32
RAIL_BYTES_FACTOR = 3


class RailWorkloadSection(WorkloadSection):
    """Base of the rail workload kinds. Subclasses have the keys ``strategy``, ``chunk``,
    ``chunk_overhead`` and ``start`` (declared there, to keep their order of keys) and give
    :meth:`phase_matrices`."""

    if TYPE_CHECKING:
        strategy: str
        chunk: int
        chunk_overhead: int
        start: int

    def phase_matrices(self, n_servers: int, gpus_per_server: int, seed: int) -> list[tuple[str, np.ndarray]]:
        """The GPU x GPU byte matrix of each phase as ``(phase, d1)``; phase ``""`` for a
        single unnamed phase. ``seed`` is the run seed."""
        raise NotImplementedError

    def phase_arrays(self, n_servers: int, gpus_per_server: int, seed: int) -> list[tuple[str, np.ndarray]]:
        """:meth:`phase_matrices` as read-only arrays that may be views of each other (MoE's
        combine is dispatch transposed): what needs no copies reads these."""
        return self.phase_matrices(n_servers, gpus_per_server, seed)

    def expert_compute_ps(self) -> int:
        """The pause between two phases (after a barrier that waits for the whole first one)."""
        return 0

    def check_fabric(self, topology: TopologySection, n_hosts: int, where: str) -> None:
        if topology.kind != "rail":
            raise ValueError(
                f"{where}.kind = {self.kind!r}: needs a rail-optimized cluster (topology.kind = 'rail'), "
                f"got topology.kind = {topology.kind!r}"
            )

    def build_flows(self, ctx: FlowContext) -> Flows:
        """One group per all-to-all phase: ``<name>:<phase>``, or ``<name>`` for an unnamed one,
        of kind ``alltoall`` with ``size_bytes`` = total bytes / (G - 1): NCCL's per-rank buffer
        for a uniform all-to-all, so that busbw = algbw x (G-1)/G = mean bytes a GPU sends to
        others / CCT. Between two phases one 1-byte NVLink message (group ``<name>:barrier``)
        waits for the whole first phase, and the next starts ``expert_compute_ps`` after it
        (minus its own latency)."""
        name, first = ctx.group, ctx.first_flow_id
        links = RailLinks.from_fabric(ctx.fabric)
        g = links.n_gpus
        matrices = self.phase_matrices(links.n_servers, links.gpus_per_server, ctx.seed)
        phases = [(f"{name}:{phase}" if phase else name, d1) for phase, d1 in matrices]
        flows: list[FlowSpec] = []
        groups: dict[str, GroupInfo] = {}
        start, after = self.start, ()
        for index, (group, d1) in enumerate(phases):
            if index:  # combine after dispatch: a barrier message, then expert compute time
                barrier = first + len(flows)
                flows.append(
                    FlowSpec(barrier, 0, 1, 1, 0, tuple(f.flow_id for f in flows), f"{name}:barrier")
                )
                token = data_wire_bytes(1)  # host 1 is an NVLink peer of host 0 unless servers have one GPU
                lag = (
                    links.nvlink_one_way_ps(token)
                    if links.gpus_per_server > 1
                    else links.rail_one_way_ps(token)
                )
                start = max(0, self.expert_compute_ps() - lag)
                after = (barrier,)
            phase = rail_flows(
                d1,
                links,
                self.strategy,
                first + len(flows),
                chunk_bytes=self.chunk,
                chunk_overhead_ps=self.chunk_overhead,
                start_ps=start,
                after=after,
                group=group,
            )
            flows.extend(phase.flows)
            total = int(d1.sum())
            groups[group] = GroupInfo(group, "alltoall", round(total / (g - 1)), g)
        return flows, groups


def rail_size(
    n_gpus: int, phases: int, phase_bytes: int, chunk_bytes: int, extra_memory: int
) -> WorkloadSize:
    """The size guard's estimate of ``phases`` phases of ``phase_bytes`` each over ``n_gpus``."""
    g = n_gpus
    total = phases * RAIL_BYTES_FACTOR * phase_bytes
    flows = phases * (2 * g * g + 3 * RAIL_BYTES_FACTOR * phase_bytes // chunk_bytes)
    return WorkloadSize(flows, total, extra_memory + phases * g * g * RAIL_MATRIX_BYTES_PER_PAIR)
