"""DRILL (Ghorbani et al., SIGCOMM'17): per packet, every switch samples ``d`` distinct
random candidates plus the ``m`` least-loaded candidates remembered from its previous
decision for the same candidate list, and sends the packet to the one with the shortest
local queue (``port.queue_bytes()``; a port whose link is down counts as full). Ties go to the earlier sample (the random ones before
the remembered ones), so an idle fabric sprays randomly instead of sticking to the memory.

Memory is per switch per route group (``group.state``; groups are shared per destination ToR,
so this is "per destination group"; a reroute clears it). Sampling is without replacement
via an in-place partial
Fisher-Yates shuffle of a per-list port array: no allocation per packet."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from spraylab.lb.base import LbParams, LoadBalancer, register

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.net.port import Port
    from spraylab.net.routes import RouteGroup
    from spraylab.net.switch import Switch

# A port whose link is down looks infinitely loaded: its queue reads empty (nothing is
# admitted), and a switch knows its own link state at once, before routes reconverge.
DOWN_QUEUE = 1 << 61


class DrillParams(LbParams):
    d: int = Field(default=2, ge=1, le=64, description="random samples per packet")
    m: int = Field(default=1, ge=0, le=64, description="remembered best candidates")


class _Memory:
    __slots__ = ("perm", "best")

    def __init__(self, cands: list[Port]) -> None:
        self.perm = list(cands)  # a permutation of cands, partially reshuffled per packet
        self.best: list[Port] = []  # the m least loaded ports of the last decision


@register
class Drill(LoadBalancer):
    name = "drill"
    where = "switch"
    summary = "DRILL(d, m): least local queue among d random + m remembered candidates"
    fluid_model = "pool"
    Params = DrillParams

    def setup(self, net: Network) -> None:
        super().setup(net)
        params: DrillParams = self.params  # type: ignore[assignment]
        d, m = params.d, params.m
        random = net.sim.derive_rng(0xD2111).random
        self.memories = 0  # route groups given a memory (reroutes clear them: counted again)

        def select_m1(switch: Switch, pkt: Packet, cands: RouteGroup) -> Port:
            """The default DRILL(d, 1), allocation-free."""
            mem = cands.state
            if mem is None:
                mem = cands.state = _Memory(cands)
                self.memories += 1
                mem.best.append(cands[0])
            perm = mem.perm
            n = len(perm)
            k = d if d < n else n
            best = None
            best_q = 1 << 62
            for i in range(k):
                j = i + int(random() * (n - i))
                port = perm[j]
                perm[j] = perm[i]
                perm[i] = port
                q = port.queue_bytes() if port.up else DOWN_QUEUE
                if q < best_q:
                    best, best_q = port, q
            remembered = mem.best[0]
            if remembered.up and remembered.queue_bytes() < best_q:
                best = remembered
            mem.best[0] = best
            return best

        def select_general(switch: Switch, pkt: Packet, cands: RouteGroup) -> Port:
            mem = cands.state
            if mem is None:
                mem = cands.state = _Memory(cands)
                self.memories += 1
            perm = mem.perm
            n = len(perm)
            k = d if d < n else n
            for i in range(k):
                j = i + int(random() * (n - i))
                perm[i], perm[j] = perm[j], perm[i]
            pool = perm[:k]
            for port in mem.best:
                if port not in pool:
                    pool.append(port)
            pool.sort(key=_queue_bytes)  # stable: ties keep the random samples first
            mem.best = pool[:m]
            return pool[0]

        select = select_m1 if m == 1 else select_general
        for switch in net.switches.values():
            switch.select = select

    def stats(self) -> dict[str, Any]:
        return {"drill_groups": getattr(self, "memories", 0)}


def _queue_bytes(port: Port) -> int:
    return port.queue_bytes() if port.up else DOWN_QUEUE
