"""WCMP: ECMP weighted by the current capacity of each candidate (asymmetric fabrics).

Like a real WCMP group, each candidate list is expanded into a table of slots in which every
port appears in proportion to its weight (``rate_bps`` now; 0 when ``up`` is False); a
packet takes ``table[hash(pkt.hash, switch salt) % len(table)]``. So a flow keeps one path
and, across many flows, traffic splits in proportion to rate.

Weights are cached per candidate list. Rates change only at scheduled events (link
degradation, failure), so the cache re-reads the candidates' rates at most once per
``refresh_us`` of simulated time per list (default 1 µs: the packet path costs one time
comparison; a real WCMP controller reacts in milliseconds). ``refresh_us = 0`` re-checks on
every packet. The table is rebuilt only when the signature (rates and up bits) changed."""

from __future__ import annotations

from math import gcd
from typing import TYPE_CHECKING, Any

from pydantic import Field

from spraylab.lb.base import LbParams, LoadBalancer, register

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.net.port import Port
    from spraylab.net.switch import Switch

PS_PER_US = 1_000_000


class WcmpParams(LbParams):
    max_table: int = Field(default=1024, ge=1, le=1 << 20, description="max slots per weighted group")
    refresh_us: float = Field(default=1.0, ge=0, description="re-check candidate rates at most this often")


def weights_of(cands: list[Port]) -> list[int]:
    return [p.rate_bps if p.up else 0 for p in cands]


def build_table(cands: list[Port], weights: list[int], max_table: int) -> list[Port]:
    """Slots in proportion to ``weights``: exact when the reduced weights sum to at most
    ``max_table``, else largest-remainder apportionment of ``max_table`` slots (every port
    with a positive weight keeps at least one slot). All weights 0: plain ECMP over all."""
    if not any(weights):
        return list(cands)
    g = 0
    for w in weights:
        g = gcd(g, w)
    reduced = [w // g for w in weights]
    total = sum(reduced)
    if total <= max_table:
        counts = reduced
    else:
        size = max(max_table, sum(1 for w in reduced if w))
        quotas = [w * size / total for w in reduced]
        counts = [max(1, int(q)) if w else 0 for q, w in zip(quotas, reduced)]
        left = size - sum(counts)
        order = sorted(range(len(cands)), key=lambda i: (-(quotas[i] - int(quotas[i])), i))
        for i in order:
            if left <= 0:
                break
            if reduced[i]:
                counts[i] += 1
                left -= 1
    table: list[Port] = []
    for port, count in zip(cands, counts):
        table.extend([port] * count)
    return table


class _Group:
    """Cached weighted table of one candidate list."""

    __slots__ = ("cands", "signature", "table", "n", "checked_ps")

    def __init__(self, cands: list[Port], max_table: int, now: int) -> None:
        self.cands = cands
        self.signature = weights_of(cands)
        self.table = build_table(cands, self.signature, max_table)
        self.n = len(self.table)
        self.checked_ps = now


@register
class Wcmp(LoadBalancer):
    name = "wcmp"
    where = "switch"
    summary = "hash(5-tuple, entropy, salt) into a table weighted by each candidate's current rate"
    Params = WcmpParams

    def setup(self, net: Network) -> None:
        super().setup(net)
        params: WcmpParams = self.params  # type: ignore[assignment]
        max_table = params.max_table
        refresh_ps = int(params.refresh_us * PS_PER_US)
        sim = net.sim
        groups: dict[int, _Group] = {}  # id(cands) -> group; the group keeps cands alive
        self._groups = groups
        self.rebuilds = 0

        def select(switch: Switch, pkt: Packet, cands: list[Port]) -> Port:
            group = groups.get(id(cands))
            now = sim.now
            if group is None:
                group = groups[id(cands)] = _Group(cands, max_table, now)
            elif now - group.checked_ps >= refresh_ps:
                group.checked_ps = now
                signature = weights_of(cands)
                if signature != group.signature:
                    group.signature = signature
                    group.table = build_table(cands, signature, max_table)
                    group.n = len(group.table)
                    self.rebuilds += 1
            return group.table[hash((pkt.hash, switch.salt)) % group.n]

        for switch in net.switches.values():
            switch.select = select

    def stats(self) -> dict[str, Any]:
        groups = getattr(self, "_groups", {})
        return {
            "wcmp_groups": len(groups),
            "wcmp_max_table": max((g.n for g in groups.values()), default=0),
            "wcmp_rebuilds": getattr(self, "rebuilds", 0),
        }
