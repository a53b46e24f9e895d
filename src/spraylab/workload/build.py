"""Turn the scenario's workload sections into flows on a concrete fabric.

Each section generates its own flows (:meth:`spraylab.workload.base.WorkloadSection.build_flows`);
this module numbers them consecutively across sections and names their groups."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from spraylab.topology.fabric import Fabric
from spraylab.workload.base import FlowContext, GroupInfo, WorkloadSection
from spraylab.workload.flows import FlowSpec
from spraylab.workload.kinds.moe import MOE_PRESETS
from spraylab.workload.rail_workload import RailWorkloadSection

__all__ = ["MOE_PRESETS", "GroupInfo", "build_flows", "rail_phase_matrices"]


def build_flows(
    workloads: Sequence[WorkloadSection], fabric: Fabric, rng: random.Random, seed: int = 0
) -> tuple[list[FlowSpec], dict[str, GroupInfo]]:
    """Flows of every workload section and the groups (collectives, phases) they form.

    ``rng`` is shared by the sections in order; ``seed`` is the run seed (MoE routing draws from
    ``seed + seed_offset``, so its traffic matrix does not depend on what other sections drew)."""
    flows: list[FlowSpec] = []
    groups: dict[str, GroupInfo] = {}
    for index, w in enumerate(workloads):
        ctx = FlowContext(fabric, rng, seed, len(flows), f"{index}:{w.kind}")
        new, new_groups = w.build_flows(ctx)
        flows.extend(new)
        groups.update(new_groups)
    return flows, groups


def rail_phase_matrices(
    w: RailWorkloadSection, n_servers: int, gpus_per_server: int, seed: int = 0
) -> list[tuple[str, np.ndarray]]:
    """The GPU x GPU byte matrix of each phase of a rail workload, as ``(phase, d1)``. Tests and
    reports use it to compute T* for a scenario."""
    return w.phase_matrices(n_servers, gpus_per_server, seed)
