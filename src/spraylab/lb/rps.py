"""Random packet spraying: every switch picks a uniformly random equal-cost candidate per packet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.lb.base import LoadBalancer, register
from spraylab.net.switch import UniformSelect

if TYPE_CHECKING:
    from spraylab.net.network import Network


@register
class RandomPacketSpraying(LoadBalancer):
    name = "rps"
    where = "switch"
    summary = "a uniformly random equal-cost candidate per packet"
    fluid_model = "split"

    def setup(self, net: Network) -> None:
        super().setup(net)
        # the compiled selector draws cands[int(random() * len(cands))], one stream for all
        select = UniformSelect(net.sim.derive_rng(0x6295).random)
        for switch in net.switches.values():
            switch.select = select
