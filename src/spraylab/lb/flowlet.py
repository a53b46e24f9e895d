"""LetFlow (Vanini et al., NSDI'17) at the source ToR.

Each tier-1 switch keeps a flowlet table for the packets it sends up on behalf of its own
hosts (``pkt.src`` in ``switch.hosts``) and for which it has several equal-cost candidates.
An entry holds the flow's last packet time and its current port: if the gap since the flow's
last packet at this switch exceeds δ (``gap_us``, default 50 µs) a new flowlet starts on a
uniformly random candidate, else the packet follows its flowlet. Every other switch and hop
uses ECMP.

Control packets (ACK/NACK/CNP) are handled like data: they leave the *destination's* ToR
toward the sender, so they get their own flowlets there (the table key is the flow id and
the direction, so the two directions never share an entry even when one switch sees both).
An entry remembers the candidate list it chose from: after a reroute (new list) the next
packet starts a new flowlet. Entries are never evicted; ``stats()`` reports table sizes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from spraylab.lb.base import LbParams, LoadBalancer, register
from spraylab.net.packet import DATA
from spraylab.net.switch import ecmp_select
from spraylab.units import PS_PER_US

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.net.port import Port
    from spraylab.net.routes import RouteGroup
    from spraylab.net.switch import Switch


class FlowletParams(LbParams):
    gap_us: float = Field(default=50.0, gt=0, description="flowlet timeout δ")


class _Flowlet:
    """One flowlet: its port, chosen from ``group`` at routing ``version`` (a reroute starts a
    new flowlet)."""

    __slots__ = ("last_ps", "port", "group", "version")

    def __init__(self, last_ps: int, port: Port, group: RouteGroup) -> None:
        self.last_ps = last_ps
        self.port = port
        self.group = group
        self.version = group.version


@register
class LetFlow(LoadBalancer):
    name = "flowlet"
    where = "tor"
    summary = "LetFlow: per-flow flowlets at the source ToR, a random uplink after a gap > δ"
    Params = FlowletParams

    def setup(self, net: Network) -> None:
        super().setup(net)
        params: FlowletParams = self.params  # type: ignore[assignment]
        gap_ps = int(params.gap_us * PS_PER_US)
        random = net.sim.derive_rng(0xF10E7).random
        sim = net.sim
        self.tables: dict[str, dict[int, _Flowlet]] = {}
        self.flowlets = 0

        def make_select(local: set[int], table: dict[int, _Flowlet]) -> Any:
            def select(switch: Switch, pkt: Packet, cands: RouteGroup) -> Port:
                if pkt.src not in local or pkt.flow_id < 0:
                    return ecmp_select(switch, pkt, cands)
                key = pkt.flow_id << 1 | (pkt.kind != DATA)
                now = sim.now
                entry = table.get(key)
                if entry is None:
                    port = cands[int(random() * len(cands))]
                    table[key] = _Flowlet(now, port, cands)
                    self.flowlets += 1
                    return port
                if now - entry.last_ps > gap_ps or entry.version != cands.version or entry.group is not cands:
                    entry.port = cands[int(random() * len(cands))]
                    entry.group = cands
                    entry.version = cands.version
                    self.flowlets += 1
                entry.last_ps = now
                return entry.port

            return select

        for switch in net.switches.values():
            if switch.tier == 1 and switch.hosts:
                table: dict[int, _Flowlet] = {}
                self.tables[switch.name] = table
                switch.select = make_select(set(switch.hosts), table)

    def stats(self) -> dict[str, Any]:
        tables = getattr(self, "tables", {})
        return {
            "flowlet_max_table_entries": max((len(t) for t in tables.values()), default=0),
            "flowlet_total_entries": sum(len(t) for t in tables.values()),
            "flowlets": getattr(self, "flowlets", 0),
        }
