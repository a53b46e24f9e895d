"""``loss``: from ``at`` each packet crossing the link is lost with ``loss_rate`` (bit errors, a
flaky optic); the fluid engine has no packets to lose and refuses it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.net.link_events import LINK_ACTIONS, LinkAction

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.topology.base import LinkEvent


class Loss(LinkAction):
    name = "loss"
    summary = "loss_rate per packet"

    def schedule(self, net: Network, event: LinkEvent) -> None:
        a, b = event.link
        net.schedule_link_loss(event.at, a, b, event.loss_rate, event.parallel, event.direction)


LINK_ACTIONS.register(Loss())
