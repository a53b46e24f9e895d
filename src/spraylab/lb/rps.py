"""Random packet spraying: every switch picks a uniformly random equal-cost candidate per packet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.lb.base import LoadBalancer, register

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.net.port import Port
    from spraylab.net.switch import Switch


@register
class RandomPacketSpraying(LoadBalancer):
    name = "rps"
    where = "switch"
    summary = "a uniformly random equal-cost candidate per packet"

    def setup(self, net: Network) -> None:
        super().setup(net)
        random = net.sim.derive_rng(0x6295).random

        def select(switch: Switch, pkt: Packet, cands: list[Port]) -> Port:
            return cands[int(random() * len(cands))]

        for switch in net.switches.values():
            switch.select = select
