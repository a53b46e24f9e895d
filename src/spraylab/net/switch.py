"""A switch: per-destination equal-cost egress candidates, a load balancer picks one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spraylab.net.drops import NO_ROUTE
from spraylab.net.packet import DATA, Packet
from spraylab.net.port import sim_drop
from spraylab.net.routes import RouteGroup, hop_hash

if TYPE_CHECKING:
    from spraylab.net.port import Port

assert DATA == 0  # Switch.forward tests the kind's truth

# A switch-side load balancer: (switch, packet, equal-cost candidates) -> chosen port.
Selector = Callable[["Switch", Packet, RouteGroup], "Port"]


class SharedBuffer:
    """A switch's shared packet buffer with a dynamic per-port threshold (Choudhury-Hahne):
    a port may queue at most ``alpha * (capacity - used)``.

    Summing every port's backlog on each packet would cost O(ports) per hop. Under dynamic
    thresholds the buffer never fills beyond ``capacity * alpha*n / (1 + alpha*n)``, so a port
    whose backlog stays below ``alpha * capacity / (1 + alpha*n)`` is always admitted; only
    longer queues pay for the exact check (``safe_port_bytes``). That check first tries an upper
    bound of ``used``: its last exact value plus every byte the switch's ports accepted since
    (``added_bytes``; queues only drain in between). Only when the bound does not admit the
    packet is the sum taken again, so every decision is the one the exact sum gives.

    A ToR program that holds packets (ToR-assisted spraying's resequencing rings) holds them in
    this buffer: ``held_bytes`` counts in ``used`` for every port's admission, and the holds
    are one more queue under the same threshold (``add_hold_queue``, ``admits_hold``), so the
    bound above still holds with that queue counted."""

    __slots__ = (
        "capacity_bytes",
        "alpha",
        "ports",
        "hold_queues",
        "held_bytes",
        "safe_port_bytes",
        "used_bytes_then",
        "added_bytes",
    )

    def __init__(self, capacity_bytes: int, alpha: float) -> None:
        self.capacity_bytes = capacity_bytes
        self.alpha = alpha
        self.ports: list[Port] = []
        self.hold_queues = 0
        self.held_bytes = 0  # held by the switch's ToR program (hold / unhold)
        self.safe_port_bytes = capacity_bytes
        self.used_bytes_then = 0
        self.added_bytes = 0

    def add_port(self, port: Port) -> None:
        self.ports.append(port)
        self._set_safe()

    def add_hold_queue(self) -> None:
        """A ToR program will hold packets here (one queue under the dynamic threshold)."""
        self.hold_queues += 1
        self._set_safe()

    def _set_safe(self) -> None:
        n = len(self.ports) + self.hold_queues
        self.safe_port_bytes = int(self.alpha * self.capacity_bytes / (1 + self.alpha * n))

    def used_bytes(self) -> int:
        return sum(p.queue_bytes() for p in self.ports) + self.held_bytes

    def admits_hold(self, size: int) -> bool:
        """May the switch's program hold ``size`` more bytes (the dynamic threshold, as a port)?"""
        held = self.held_bytes
        return held <= self.safe_port_bytes or self.admits(None, held, size)

    def hold(self, size: int) -> None:
        self.held_bytes += size
        self.added_bytes += size  # ``used`` grew: the upper bound of ``admits`` must see it

    def unhold(self, size: int) -> None:
        self.held_bytes -= size

    def admits(self, port: Port | None, backlog: int, size: int) -> bool:
        """May a queue of ``backlog`` bytes (a port's, or the holds' for ``port`` None) take
        ``size`` more?"""
        limit = backlog + size
        # + one byte per port: each port's backlog is rounded down to whole bytes
        bound = self.used_bytes_then + self.added_bytes + len(self.ports)
        if limit <= self.alpha * (self.capacity_bytes - bound):
            return True
        used = self.used_bytes()
        self.used_bytes_then = used
        self.added_bytes = 0
        return limit <= self.alpha * (self.capacity_bytes - used)


class Switch:
    """Forwards by destination host: ``table[dst]`` is the route group (the equal-cost egress
    ports, see ``spraylab.net.routes``).

    ``select`` is the load balancer's per-packet choice (ECMP unless a scheme installs its
    own). A ToR ``program`` (ToR-assisted spraying, flowlets) sees every packet first and
    returns False when it consumed (held or dropped) the packet."""

    __slots__ = (
        "sim",
        "name",
        "index",
        "tier",
        "salt",
        "ports",
        "uplinks",
        "table",
        "select",
        "program",
        "buffer",
        "hosts",
    )

    def __init__(self, sim: Any, name: str, index: int, tier: int, salt: int) -> None:
        self.sim = sim
        self.name = name
        self.index = index
        self.tier = tier  # 1 = ToR/leaf/edge/rail leaf, 2 = spine/agg, 3 = core, 0 = NVLink switch
        self.salt = salt
        self.ports: list[Port] = []
        self.uplinks: list[Port] = []
        self.table: list[RouteGroup] = []
        self.select: Selector = ecmp_select
        self.program: Any = None
        self.buffer: SharedBuffer | None = None
        self.hosts: list[int] = []  # hosts attached directly (ToRs)

    def receive(self, pkt: Packet) -> None:
        program = self.program
        if program is not None and not program.on_packet(self, pkt):
            return
        self.forward(pkt)

    def forward(self, pkt: Packet) -> None:
        """Pick the egress among the equal-cost candidates and send. ToR programs call this
        to release packets they held (it does not run the program again)."""
        cands = self.table[pkt.dst]
        n = len(cands)
        if n == 1:
            port = cands[0]
        elif n:
            port = self.select(self, pkt, cands)
        else:  # destination unreachable (failed links, before or after reconvergence)
            sim_drop(self.sim, pkt, NO_ROUTE)
            return
        if pkt.kind:  # a control frame (DATA is kind 0: one test fewer per hop)
            port.send_control(pkt)
        else:
            port.send(pkt)

    def __repr__(self) -> str:
        return f"Switch({self.name})"


def ecmp_select(switch: Switch, pkt: Packet, cands: RouteGroup) -> Port:
    """ECMP: hash of the flow's 5-tuple and entropy with a per-switch salt."""
    return cands[hop_hash(pkt.hash, switch.salt) % len(cands)]
