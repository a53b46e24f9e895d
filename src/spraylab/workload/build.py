"""Turn the scenario's workload sections into flows on a concrete fabric."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from spraylab.config import (
    AllToAllWorkload,
    CdfWorkload,
    CollectiveWorkload,
    IncastWorkload,
    PermutationWorkload,
    RandomPairsWorkload,
)
from spraylab.topology.fabric import Fabric
from spraylab.workload import collectives, patterns
from spraylab.workload.cdf import FlowSizeCdf, poisson_flows
from spraylab.workload.flows import FlowSpec


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """What a named group of flows is, for CCT/algbw/busbw reporting."""

    name: str
    kind: str
    size_bytes: int
    ranks: int


def build_flows(workloads: list, fabric: Fabric, rng: random.Random) -> tuple[list[FlowSpec], dict[str, GroupInfo]]:
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
            new = patterns.all_to_all(members, w.size, w.start, first)
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
                new = collectives.all_to_all_collective(members, per_pair, first, name, w.start)
            info = GroupInfo(name, w.collective, w.size, len(members))
        else:  # pragma: no cover - the config's discriminated union makes this unreachable
            raise TypeError(f"unsupported workload {w!r}")
        flows.extend(dataclasses.replace(f, group=name) for f in new)
        groups[name] = info
    return flows, groups
