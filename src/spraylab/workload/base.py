"""What every workload kind provides, and their registry.

A workload kind is one module of :mod:`spraylab.workload.kinds`: a :class:`WorkloadSection`
subclass (its ``[workload]`` keys, validated) that checks itself against the fabric, generates
its flows and estimates its size for the size guard, decorated with :func:`register`. The
scenario schema, its error hints and ``spraylab list`` read :data:`WORKLOADS`, so nothing else
changes to add one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from spraylab.model.kinds import KindRegistry
from spraylab.model.types import Section
from spraylab.units import format_time
from spraylab.workload.flows import FlowSpec

if TYPE_CHECKING:
    from spraylab.topology.base import TopologySection
    from spraylab.topology.fabric import Fabric


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """What a named group of flows is, for CCT/algbw/busbw reporting."""

    name: str
    kind: str
    size_bytes: int
    ranks: int


@dataclass(frozen=True, slots=True)
class FlowContext:
    """What a workload section needs to generate its flows on a built fabric."""

    fabric: Fabric
    rng: random.Random  # shared by the scenario's sections, in order
    seed: int  # the run seed (for generators that draw from their own seeded stream)
    first_flow_id: int  # ids are consecutive from here
    group: str  # the section's group name, "<index>:<kind>"

    @property
    def hosts(self) -> list[int]:
        return list(range(self.fabric.n_hosts))


@dataclass(frozen=True, slots=True)
class WorkloadSize:
    """A section's size from its description alone (the size guard, ``spraylab.runs.budget``)."""

    flows: int
    total_bytes: int
    memory_bytes: int = 0  # beyond the per-flow and per-packet costs the guard counts itself


Flows = tuple[list[FlowSpec], dict[str, GroupInfo]]


class WorkloadSection(Section):
    """Base of the ``[[workload]]`` sections. Subclasses declare ``kind: Literal["x"] = "x"``
    first (field order is the order of keys in listings and error hints)."""

    summary: ClassVar[str] = ""
    kind: str

    def check_fabric(self, topology: TopologySection, n_hosts: int, where: str) -> None:
        """Raise ValueError (one line naming ``where``'s key) if the section cannot run on the
        fabric. Default: it sends between every host, so it needs two of them."""
        check_ranks(where, self.kind, 0, n_hosts)

    def late_start(self, time_limit_ps: int, where: str) -> str | None:
        """The problem (one line naming the key) if the section has a start time at or after
        the run's time limit: nothing of it could run, and a run would report its flows as
        unfinished with the time limit as their "FCT". Default: the ``start`` key, if any."""
        start = getattr(self, "start", None)
        if isinstance(start, int) and start >= time_limit_ps:
            return (
                f"{where}.start = {format_time(start)}: at or after run.time_limit = {format_time(time_limit_ps)}, "
                "so the workload could never start; raise run.time_limit or move the start"
            )
        return None

    def build_flows(self, ctx: FlowContext) -> Flows:
        """The section's flows (ids from ``ctx.first_flow_id``) and the groups they form."""
        raise NotImplementedError

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        raise NotImplementedError


def check_ranks(where: str, kind: str, hosts: int, n_hosts: int) -> None:
    """A section over ``hosts`` ranks (0 = every host of the fabric) needs two, and no more than
    the fabric has."""
    ranks = hosts or n_hosts
    if ranks < 2:
        key = f"{where}.hosts = {hosts}" if hosts else f"{where}.kind = {kind!r}"
        raise ValueError(f"{key}: needs at least 2 hosts to send between, got {ranks}")
    if hosts > n_hosts:
        raise ValueError(f"{where}.hosts = {hosts}: at most {n_hosts} on this fabric")


def one_group(ctx: FlowContext, flows: list[FlowSpec], kind: str, size_bytes: int, ranks: int) -> Flows:
    """``flows`` as the single group ``ctx.group`` (the common case)."""
    # FlowSpec(...) is dataclasses.replace(f, group=...) without its per-call field lookup (a
    # 1024-host permutation: 1,024 flows, 4 ms)
    g = ctx.group
    named = [FlowSpec(f.flow_id, f.src, f.dst, f.size_bytes, f.start_ps, f.deps, g) for f in flows]
    return named, {ctx.group: GroupInfo(ctx.group, kind, size_bytes, ranks)}


WORKLOADS: KindRegistry[WorkloadSection] = KindRegistry(
    "workload", WorkloadSection, "spraylab.workload.kinds"
)
register = WORKLOADS.register
