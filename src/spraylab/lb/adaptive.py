"""Adaptive routing (InfiniBand AR / Spectrum-X style): every switch sends each packet to the
equal-cost candidate with the fewest queued bytes, ties broken uniformly at random
(reservoir sampling over the tied ports). A port whose link is down counts as full: a switch
knows its own link state at once, before routes reconverge.

``granularity = "flow"``: the decision is taken at the flow's first packet at each switch
and kept (per-switch dict keyed by flow id and direction, so a flow's ACKs crossing the same
switch get their own decision); the entry remembers its candidate list, so after a reroute
the flow decides again, and so it does when its port's link went down."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from spraylab.lb.base import LbParams, LoadBalancer, register
from spraylab.net.packet import DATA
from spraylab.net.switch import ecmp_select

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.net.port import Port
    from spraylab.net.routes import RouteGroup
    from spraylab.net.switch import Switch

DOWN_QUEUE = 1 << 61


class AdaptiveParams(LbParams):
    granularity: Literal["packet", "flow"] = "packet"


def make_least_queued(random: Any) -> Any:
    def least_queued(switch: Switch, pkt: Packet, cands: RouteGroup) -> Port:
        best = cands[0]
        best_q = best.queue_bytes() if best.up else DOWN_QUEUE
        ties = 1
        for i in range(1, len(cands)):
            port = cands[i]
            q = port.queue_bytes() if port.up else DOWN_QUEUE
            if q < best_q:
                best, best_q, ties = port, q, 1
            elif q == best_q:
                ties += 1
                if random() * ties < 1.0:
                    best = port
        return best

    return least_queued


@register
class AdaptiveRouting(LoadBalancer):
    name = "adaptive"
    where = "switch"
    summary = "least queued bytes among the candidates, ties random; granularity packet or flow"
    fluid_model = "pool"
    Params = AdaptiveParams

    def setup(self, net: Network) -> None:
        super().setup(net)
        params: AdaptiveParams = self.params  # type: ignore[assignment]
        least_queued = make_least_queued(net.sim.derive_rng(0xADA97).random)
        # per switch: flow (and direction) -> (group, its routing version, chosen port)
        self.tables: dict[str, dict[int, tuple[RouteGroup, int, Port]]] = {}

        def make_select_flow(table: dict[int, tuple[RouteGroup, int, Port]]) -> Any:
            def select_flow(switch: Switch, pkt: Packet, cands: RouteGroup) -> Port:
                if pkt.flow_id < 0:
                    return ecmp_select(switch, pkt, cands)
                key = pkt.flow_id << 1 | (pkt.kind != DATA)
                entry = table.get(key)
                if entry is not None and entry[0] is cands and entry[1] == cands.version and entry[2].up:
                    return entry[2]
                port = least_queued(switch, pkt, cands)
                table[key] = (cands, cands.version, port)
                return port

            return select_flow

        for switch in net.switches.values():
            if params.granularity == "packet":
                switch.select = least_queued
            else:
                table: dict[int, tuple[RouteGroup, int, Port]] = {}
                self.tables[switch.name] = table
                switch.select = make_select_flow(table)

    def stats(self) -> dict[str, Any]:
        tables = getattr(self, "tables", {})
        if not tables:
            return {}
        return {"adaptive_max_flow_entries": max(len(t) for t in tables.values())}
