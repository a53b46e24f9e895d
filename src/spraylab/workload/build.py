"""Turn the scenario's workload sections into flows on a concrete fabric."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

import numpy as np

from spraylab.config import (
    AllToAllWorkload,
    CdfWorkload,
    CollectiveWorkload,
    IncastWorkload,
    MoeWorkload,
    PermutationWorkload,
    RailAllToAllWorkload,
    RandomPairsWorkload,
)
from spraylab.net.framing import data_wire_bytes
from spraylab.topology.fabric import Fabric
from spraylab.workload import collectives, moe, patterns
from spraylab.workload.cdf import FlowSizeCdf, poisson_flows
from spraylab.workload.explicit import FlowsWorkload
from spraylab.workload.flows import FlowSpec
from spraylab.workload.rail_strategies import RailLinks, rail_flows

MOE_PRESETS = {"mixtral-8x7b": moe.MIXTRAL_8X7B, "mixtral-8x22b": moe.MIXTRAL_8X22B}


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """What a named group of flows is, for CCT/algbw/busbw reporting."""

    name: str
    kind: str
    size_bytes: int
    ranks: int


def build_flows(
    workloads: list, fabric: Fabric, rng: random.Random, seed: int = 0
) -> tuple[list[FlowSpec], dict[str, GroupInfo]]:
    """Flows of every workload section and the groups (collectives, phases) they form.

    ``seed`` is the run seed; MoE routing draws from ``seed + seed_offset`` (numpy), so its
    traffic matrix does not depend on what other workloads drew from ``rng``."""
    flows: list[FlowSpec] = []
    groups: dict[str, GroupInfo] = {}
    hosts = list(range(fabric.n_hosts))
    for index, w in enumerate(workloads):
        first = len(flows)
        name = f"{index}:{w.kind}"
        if isinstance(w, PermutationWorkload):
            tors = fabric.host_tor
            groups_by_tor = [tors.index(t) for t in tors] if w.cross_tor else None
            new = patterns.permutation(hosts, w.size, rng, w.start, first, avoid_same_group=groups_by_tor)
            info = GroupInfo(name, "permutation", w.size, len(hosts))
        elif isinstance(w, IncastWorkload):
            senders = [h for h in hosts if h != w.receiver]
            senders = rng.sample(senders, w.senders)
            new = patterns.incast(sorted(senders), w.receiver, w.size, w.start, first)
            info = GroupInfo(name, "incast", w.size, w.senders)
        elif isinstance(w, AllToAllWorkload):
            members = hosts[: w.hosts] if w.hosts else hosts
            new = patterns.all_to_all(members, w.size, w.start, first, w.peers_in_flight)
            info = GroupInfo(name, "alltoall", w.size * len(members), len(members))
        elif isinstance(w, RandomPairsWorkload):
            new = patterns.random_pairs(hosts, w.flows, w.size, rng, w.start, first)
            info = GroupInfo(name, "random_pairs", w.size, w.flows)
        elif isinstance(w, CdfWorkload):
            cdf = FlowSizeCdf.load(w.cdf)
            new = poisson_flows(hosts, cdf, w.load, fabric.host_rate_bps, w.duration, rng, first)
            new = [dataclasses.replace(f, start_ps=f.start_ps + w.start) for f in new]
            info = GroupInfo(name, "cdf", 0, len(hosts))
        elif isinstance(w, CollectiveWorkload):
            members = hosts[: w.hosts] if w.hosts else hosts
            maker = {
                "allreduce": collectives.ring_allreduce,
                "allgather": collectives.all_gather,
                "reducescatter": collectives.reduce_scatter,
            }.get(w.collective)
            if maker is not None:
                new = maker(members, w.size, first, name, w.start)
            else:
                per_pair = max(1, w.size // len(members))
                new = collectives.all_to_all_collective(
                    members, per_pair, first, name, w.start, peers_in_flight=w.peers_in_flight
                )
            info = GroupInfo(name, w.collective, w.size, len(members))
        elif isinstance(w, FlowsWorkload):
            new = w.specs(first, name, fabric.info.get("host_of"))  # type: ignore[arg-type]
            ranks = len({f.src for f in new} | {f.dst for f in new})
            info = GroupInfo(name, "flows", sum(f.size_bytes for f in new), ranks)
        elif isinstance(w, (MoeWorkload, RailAllToAllWorkload)):
            new, phase_groups = rail_workload_flows(w, fabric, first, name, seed)
            flows.extend(new)
            groups.update(phase_groups)
            continue
        else:  # pragma: no cover - the config's discriminated union makes this unreachable
            raise TypeError(f"unsupported workload {w!r}")
        flows.extend(dataclasses.replace(f, group=name) for f in new)
        groups[name] = info
    return flows, groups


def rail_workload_flows(
    w: MoeWorkload | RailAllToAllWorkload, fabric: Fabric, first: int, name: str, seed: int = 0
) -> tuple[list[FlowSpec], dict[str, GroupInfo]]:
    """Messages of a ``moe`` or ``rail_alltoall`` workload; one group per all-to-all phase.

    Groups are ``<name>:dispatch`` / ``<name>:combine`` (``moe``) or ``<name>`` (``rail_alltoall``),
    of kind ``alltoall`` with ``size_bytes`` = total bytes / (G - 1): NCCL's per-rank buffer for a
    uniform all-to-all, so that busbw = algbw x (G-1)/G = mean bytes a GPU sends to others / CCT.
    Phase ``both``: one 1-byte NVLink message (group ``<name>:barrier``) waits for the whole
    dispatch, and the combine starts ``expert_compute`` after it (minus its own latency).
    """
    links = RailLinks.from_fabric(fabric)
    g = links.n_gpus
    matrices = rail_phase_matrices(w, links.n_servers, links.gpus_per_server, seed)
    phases = [(f"{name}:{phase}" if phase else name, d1) for phase, d1 in matrices]
    flows: list[FlowSpec] = []
    groups: dict[str, GroupInfo] = {}
    start, after = w.start, ()
    for index, (group, d1) in enumerate(phases):
        if index:  # combine after dispatch: a barrier message, then expert compute time
            barrier = first + len(flows)
            flows.append(FlowSpec(barrier, 0, 1, 1, 0, tuple(f.flow_id for f in flows), f"{name}:barrier"))
            token = data_wire_bytes(1)  # host 1 is an NVLink peer of host 0 unless servers have one GPU
            lag = (
                links.nvlink_one_way_ps(token) if links.gpus_per_server > 1 else links.rail_one_way_ps(token)
            )
            start = max(0, getattr(w, "expert_compute", 0) - lag)
            after = (barrier,)
        phase = rail_flows(
            d1,
            links,
            w.strategy,
            first + len(flows),
            chunk_bytes=w.chunk,
            chunk_overhead_ps=w.chunk_overhead,
            start_ps=start,
            after=after,
            group=group,
        )
        flows.extend(phase.flows)
        total = int(d1.sum())
        groups[group] = GroupInfo(group, "alltoall", round(total / (g - 1)), g)
    return flows, groups


def rail_phase_matrices(
    w: MoeWorkload | RailAllToAllWorkload, n_servers: int, gpus_per_server: int, seed: int = 0
) -> list[tuple[str, np.ndarray]]:
    """The GPU x GPU byte matrix of each phase of a rail workload, as ``(phase, d1)``: phase
    ``dispatch`` / ``combine`` for ``moe`` (routing seed = run seed + ``seed_offset``), ``""``
    for ``rail_alltoall``. Tests and reports use it to compute T* for a scenario."""
    g = n_servers * gpus_per_server
    if isinstance(w, RailAllToAllWorkload):
        d1 = np.full((g, g), w.size, dtype=np.int64)
        np.fill_diagonal(d1, 0)
        return [("", d1)]
    spec = moe.moe_spec_for(
        MOE_PRESETS[w.model],
        n_servers,
        gpus_per_server,
        w.tokens_per_gpu,
        zipf_s=w.zipf_s,
        dirichlet_alpha=w.dirichlet_alpha,
        seed=seed + w.seed_offset,
        bytes_per_element=w.bytes_per_element,
    )
    dispatch = moe.dispatch_matrix(spec)
    phases = []
    if w.phase in ("dispatch", "both"):
        phases.append(("dispatch", dispatch))
    if w.phase in ("combine", "both"):
        phases.append(("combine", dispatch.T.copy()))
    return phases
