"""A switch: per-destination equal-cost egress candidates, a load balancer picks one
(compiled: ``spraylab.core``). The candidates are C arrays of indices into a
:class:`PortArray` (the network's ports by directed link id), written by routing
(``Switch.install_routes``); ``switch.table[dst]`` is their read-only Python view
(``spraylab.net.routes.RouteGroup``).

``Switch.select`` is the per-packet choice among two or more candidates: a compiled
:class:`Selector` (``ecmp_select``, the default; :class:`UniformSelect`, random spraying), or
any Python callable ``(switch, pkt, cands) -> Port`` (a scheme's own, called per packet).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from spraylab.core._core import (
    HashSelect,
    PortArray,
    Selector,
    SharedBuffer,
    Switch,
    UniformSelect,
    ecmp_select,
)
from spraylab.net.packet import DATA

if TYPE_CHECKING:
    from spraylab.net.packet import Packet
    from spraylab.net.port import Port
    from spraylab.net.routes import RouteGroup

__all__ = [
    "HashSelect",
    "PortArray",
    "Selector",
    "SharedBuffer",
    "Switch",
    "UniformSelect",
    "ecmp_select",
    "SelectFn",
]

assert DATA == 0  # Switch.forward tests the kind's truth

# A switch-side load balancer in Python: (switch, packet, equal-cost candidates) -> chosen port.
SelectFn = Callable[["Switch", "Packet", "RouteGroup"], "Port"]
