"""The actions of a link event (``[[topology.events]] action``): one module each, registering a
:class:`LinkAction` in :data:`LINK_ACTIONS`. An action says what it does to the packet engine's
network (:meth:`LinkAction.schedule`, with :mod:`spraylab.net.failures`) and to the fluid
engine's link capacities (:meth:`LinkAction.fluid_events`; None: the fluid engine does not model
it). The scenario schema allows exactly the registered names (``topology.base.LinkEvent``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from spraylab.registry import Registry

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.topology.base import LinkEvent

# a fluid capacity event: (time ps, order, what the fluid engine does, directed link ids, value)
CapEvent = tuple[float, int, str, list[int], float]


class LinkAction:
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""  # what it does, for the configuration reference

    def schedule(self, net: Network, event: LinkEvent) -> None:
        """Schedule the event on the packet engine's network (KeyError: no such link;
        IndexError: no such parallel link)."""
        raise NotImplementedError

    def fluid_events(self, event: LinkEvent, order: int, links: list[int]) -> list[CapEvent] | None:
        """The fluid engine's capacity events for the event (the ``order``-th of the run), or
        None when the fluid engine does not model the action."""
        return None


LINK_ACTIONS: Registry[LinkAction] = Registry(
    "topology.events.action", "spraylab.net.link_events", what="action"
)


def fluid_actions() -> list[str]:
    """The actions the fluid engine models."""
    return [
        name
        for name, action in LINK_ACTIONS.items()
        if type(action).fluid_events is not LinkAction.fluid_events
    ]


def action_names() -> tuple[str, ...]:
    return tuple(LINK_ACTIONS.names())
