"""``degrade``: from ``at`` the link's rate is ``rate_fraction`` of its base rate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.net.link_events import LINK_ACTIONS, CapEvent, LinkAction

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.topology.base import LinkEvent


class Degrade(LinkAction):
    name = "degrade"
    summary = "rate_fraction of its rate"

    def schedule(self, net: Network, event: LinkEvent) -> None:
        a, b = event.link
        net.schedule_link_rate(
            event.at, a, b, event.rate_fraction, event.parallel, event.direction, event.scale_queue
        )

    def fluid_events(self, event: LinkEvent, order: int, links: list[int]) -> list[CapEvent]:
        return [(float(event.at), 2 * order, "degrade", links, event.rate_fraction)]


LINK_ACTIONS.register(Degrade())
