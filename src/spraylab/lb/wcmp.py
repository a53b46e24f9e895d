"""WCMP: ECMP weighted by the capacity each candidate can deliver to the destination
(Zhou et al., "WCMP: Weighted Cost Multipathing for Improved Fairness in Data Centers",
EuroSys'14).

Weights are per destination ToR, as WCMP groups are per destination prefix: the weight of
candidate ``p`` of switch ``S`` toward ToR ``T`` is the capacity deliverable through ``p``
to ``T``, ``min(rate(p), C(next hop, T))``, where ``C(X, T)`` is the sum of the weights of
``X``'s own candidates toward ``T`` (recursively over the routing DAG, ``C(T, T)``
unbounded; a down port weighs 0); parallel links to one next hop ``X`` share
``min(their summed rate, C(X, T))`` in proportion to their rates. So a remote leaf whose
path via spine0 ends on a spine0 -> leaf0 downlink at 25% gives spine0 a quarter share
toward leaf0 and a full share toward every other leaf. A local-only weight (the
candidate's own rate) would miss that downlink: it is the degradation that remote switches
cannot see. The destination's access link is common
to every path, so it does not cap (the weight would then equal it for every candidate and
the asymmetry would vanish with slower hosts).

Like a real WCMP group, each candidate list is expanded into a table of slots in which
every port appears in proportion to its weight; a packet takes
``table[hop_hash(pkt.hash, switch salt) % len(table)]`` (``spraylab.net.routes``). So a
flow keeps one path and, across
many flows, traffic splits in proportion to path capacity. Equal weights give one slot per
port, i.e. exactly ECMP's choice.

Weights are cached per route group (``group.state``; routing shares one group per
destination ToR, and a reroute clears its state).
Rates change only at scheduled link events (degradation, failure, reroute), which bump the
network's ``link_changes`` counter; the scheme looks at it at most once per ``refresh_us`` of
simulated time (default 1 µs: the packet path costs one time comparison). When it moved,
``reaction_us`` after the change (default 0) an epoch counter advances and each group recomputes its
weights, from the links' state at that moment, at its next packet; the slot table is
rebuilt only when its weights changed. So the defaults model a WCMP controller that knows
every link's state within ``refresh_us``, remote links included: an idealisation, since
real controllers take milliseconds; ``reaction_us`` sets that delay (a group first used
during it is built from the links' current state). ``refresh_us = 0`` re-checks on every
packet."""

from __future__ import annotations

from math import gcd
from typing import TYPE_CHECKING, Any

from pydantic import Field

from spraylab.lb.base import LbParams, LoadBalancer, register
from spraylab.net.routes import hop_hash
from spraylab.net.switch import Switch
from spraylab.units import PS_PER_US

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.net.port import Port
    from spraylab.net.routes import RouteGroup

UNBOUNDED = 1 << 62  # the destination ToR delivers whatever reaches it


class WcmpParams(LbParams):
    max_table: int = Field(default=1024, ge=1, le=1 << 20, description="max slots per weighted group")
    refresh_us: float = Field(default=1.0, ge=0, description="re-check link rates at most this often")
    reaction_us: float = Field(
        default=0.0, ge=0, description="reweight this long after a link change is seen"
    )


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


class PathCapacity:
    """Capacity deliverable from a switch to a destination over the routing DAG, memoised per
    route group (in its WCMP state) until :meth:`clear` (called when a link changed)."""

    __slots__ = ("epoch",)

    def __init__(self) -> None:
        self.epoch = 0  # memos of an older epoch are stale

    def clear(self) -> None:
        self.epoch += 1

    def weights(self, cands: list[Port], dst: int) -> list[int]:
        """Weight of each candidate toward host ``dst``. Parallel links to one next hop share
        what it can deliver onward, in proportion to their rates: two links to a spine
        whose own link to the destination leaf is half gone get half a share between them,
        not one each."""
        out = [0] * len(cands)
        by_peer: dict[int, list[int]] = {}
        for i, port in enumerate(cands):
            if port.up:  # a down port weighs 0
                by_peer.setdefault(id(port.peer_owner), []).append(i)
        for indices in by_peer.values():
            peer = cands[indices[0]].peer_owner
            if not isinstance(peer, Switch):  # the last hop to the host: common to every path
                for i in indices:
                    out[i] = UNBOUNDED
                continue
            links_bps = sum(cands[i].rate_bps for i in indices)
            cap = min(links_bps, self.deliverable(peer, dst))
            for i in indices:
                out[i] = cap * cands[i].rate_bps // links_bps
        return out

    def deliverable(self, switch: Switch, dst: int) -> int:
        cands = switch.table[dst]
        state = cands.state
        if state is None:
            state = cands.state = _Group()
        elif state.capacity_epoch == self.epoch:
            return state.capacity
        # Routes are shortest paths, so the recursion only moves closer to the destination
        # and ends (at its ToR, whose only candidate is the host port: unbounded); a switch
        # with no route left (all links down) delivers 0.
        cap = sum(self.weights(cands, dst))
        state.capacity = cap
        state.capacity_epoch = self.epoch
        return cap


class _Group:
    """WCMP state of one route group: its weighted slot table (``n`` = 0 until the group
    first forwards a packet) and the memoised capacity it delivers."""

    __slots__ = ("weights", "table", "n", "epoch", "capacity", "capacity_epoch")

    def __init__(self) -> None:
        self.weights: list[int] = []
        self.table: list[Port] = []
        self.n = 0
        self.epoch = -1
        self.capacity = 0
        self.capacity_epoch = -1

    def build(self, cands: list[Port], weights: list[int], max_table: int, epoch: int) -> None:
        self.weights = weights
        self.table = build_table(cands, weights, max_table)
        self.n = len(self.table)
        self.epoch = epoch


@register
class Wcmp(LoadBalancer):
    name = "wcmp"
    where = "switch"
    summary = "hash(5-tuple, entropy, salt) into a table weighted by each candidate's path capacity to the destination"
    Params = WcmpParams

    def setup(self, net: Network) -> None:
        super().setup(net)
        params: WcmpParams = self.params  # type: ignore[assignment]
        max_table = params.max_table
        refresh_ps = int(params.refresh_us * PS_PER_US)
        reaction_ps = int(params.reaction_us * PS_PER_US)
        sim = net.sim
        capacity = PathCapacity()
        groups: list[_Group] = []  # every slot table built (a reroute builds new ones)
        self._groups = groups
        self.rebuilds = 0
        self.epochs = 0
        # Link events (reroutes included: a group built in the instant before a reroute
        # memoised the old tables) bump net.link_changes; the value applied last is the epoch.
        state = [net.link_changes, sim.now, net.link_changes]  # [applied, last check, seen]

        def apply(changes: int) -> None:
            state[0] = changes
            self.epochs += 1
            capacity.clear()

        def select(switch: Switch, pkt: Packet, cands: RouteGroup) -> Port:
            now = sim.now
            if now - state[1] >= refresh_ps:
                state[1] = now
                changes = net.link_changes
                if changes != state[2]:
                    state[2] = changes
                    at = net.link_changed_ps + reaction_ps
                    if at > now:
                        sim.at(at, apply, changes)
                    else:
                        apply(changes)
            epoch = state[0]
            group = cands.state
            if group is None:
                group = cands.state = _Group()
            if not group.n:
                group.build(cands, capacity.weights(cands, pkt.dst), max_table, epoch)
                groups.append(group)
            elif group.epoch != epoch:
                group.epoch = epoch
                weights = capacity.weights(cands, pkt.dst)
                if weights != group.weights:
                    group.build(cands, weights, max_table, epoch)
                    self.rebuilds += 1
            return group.table[hop_hash(pkt.hash, switch.salt) % group.n]

        for switch in net.switches.values():
            switch.select = select

    def stats(self) -> dict[str, Any]:
        groups = getattr(self, "_groups", [])
        return {
            "wcmp_groups": len(groups),
            "wcmp_max_table": max((g.n for g in groups), default=0),
            "wcmp_rebuilds": getattr(self, "rebuilds", 0),
        }
