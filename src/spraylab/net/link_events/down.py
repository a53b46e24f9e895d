"""``down``: from ``at`` the link fails (both directions lose everything); routing removes it
``convergence`` later."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.net.link_events import LINK_ACTIONS, CapEvent, LinkAction

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.topology.base import LinkEvent


class Down(LinkAction):
    name = "down"
    summary = "fails"

    def schedule(self, net: Network, event: LinkEvent) -> None:
        a, b = event.link
        net.schedule_link_down(event.at, a, b, event.convergence, event.parallel, event.direction)

    def fluid_events(self, event: LinkEvent, order: int, links: list[int]) -> list[CapEvent]:
        return [
            (float(event.at), 2 * order, "down", links, 0.0),
            (float(event.at + event.convergence), 2 * order + 1, "reroute", links, 0.0),
        ]


LINK_ACTIONS.register(Down())
