"""What one direction of a link does to a packet between the far end of the wire and the
peer: a fixed-order pipeline of delivery stages.

An egress port (``spraylab.net.port``) serializes a packet and schedules its arrival at the
far end after the propagation delay; the callback it schedules is ``port.receive_at_peer``.
That callback is *compiled* here, by :meth:`Link.rebuild`, from the stages the link has, in
this order:

1. **failure** (``down``): the link is dead; the packet is lost (``LINK_DOWN``) and no later
   stage sees it. First, because nothing crosses a dead link: a dead link draws no random
   loss and its losses are all counted as ``LINK_DOWN``, whatever the order of the events.
   PFC frames do not cross it either (``IngressCounter``), and at the failure a lossless port
   flushes its queue and its pause state (``PfcPort.link_down``).
2. **random loss** (``loss_rate``): each packet is lost with that probability (``RANDOM_LOSS``,
   bit errors). Before the peer's accounting, so a corrupted frame never counts as buffered
   at the peer, and only a lossy link pays for the draw.
3. **taps**: observers or injectors installed with :meth:`Link.add_tap` (tests use them to
   lose chosen packets). A tap returns False when it consumed the packet. After the link's own
   losses (a tap sees what the wire delivered) and before the peer's accounting, so a packet a
   tap drops never reached the peer either.
4. **lossless ingress accounting** (``ingress``, PFC fabrics into a switch): the bytes that came
   in on this link and are still buffered at the peer; it pauses and resumes this port. Last
   before the peer: it counts exactly the packets the peer receives.
5. **peer**: ``Switch.forward`` when the peer switch runs no ToR program (the ToR bypass: one
   call less per packet-hop), else ``Switch.receive`` (the program sees the packet first),
   or ``Host.receive``.

Each stage is present only when configured: with none of stages 1-4, ``receive_at_peer`` is
the peer's bound method itself, as fast as a link can be. A stage change (a link event, a tap)
recompiles the callback; packets already on the wire keep the callback they were scheduled
with (they left before the change), except data on a dequeue-marking port, whose delivery
looks the callback up when it arrives (``Port._deliver_marking``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spraylab.net.drops import LINK_DOWN, RANDOM_LOSS
from spraylab.net.port import sim_drop
from spraylab.net.switch import Switch

if TYPE_CHECKING:
    from spraylab.net.packet import Packet
    from spraylab.net.port import IngressCounter, Port

Deliver = Callable[["Packet"], None]
Tap = Callable[["Packet"], bool]  # False: the tap consumed the packet


class Link:
    """The delivery stages of one port (one direction of a link); see the module doc."""

    __slots__ = ("port", "peer", "down", "loss_rate", "loss_random", "taps", "ingress")

    def __init__(self, port: Port, peer: Any, ingress: IngressCounter | None = None) -> None:
        self.port = port
        self.peer = peer
        self.down = False
        self.loss_rate = 0.0
        self.loss_random: Callable[[], float] | None = None
        self.taps: list[Tap] = []
        self.ingress = ingress
        port.link = self
        self.rebuild()

    # --- stage changes ------------------------------------------------------------------
    def fail(self) -> None:
        """The link goes down for good (stage 1); the port reads as down to load balancers,
        and a lossless port flushes its queue and forgets its PFC state (``PfcPort.link_down``)."""
        if self.down:
            return
        self.port.up = False
        self.down = True
        self.rebuild()
        self.port.link_down()

    def set_loss(self, loss_rate: float, random: Callable[[], float]) -> None:
        """From now on each packet is lost with ``loss_rate`` (stage 2), drawn from
        ``random``; a later call replaces the rate, 0 ends the loss."""
        self.loss_rate = loss_rate
        self.loss_random = random if loss_rate > 0 else None
        self.rebuild()

    def add_tap(self, tap: Tap) -> None:
        """Stage 3: ``tap(pkt)`` sees every packet the wire delivers; it returns False when
        it consumed the packet (and must then count it with ``sim_drop`` if it lost it)."""
        self.taps.append(tap)
        self.rebuild()

    # --- the compiled callback ----------------------------------------------------------
    def peer_receive(self) -> Deliver:
        """Stage 5: the peer's entry point (the ToR bypass where no program runs)."""
        peer = self.peer
        if isinstance(peer, Switch) and peer.program is None:
            return peer.forward
        return peer.receive  # type: ignore[no-any-return]

    def rebuild(self) -> None:
        """Compile the stages, innermost (the peer) first, into ``port.receive_at_peer``."""
        port = self.port
        if self.down:
            port.receive_at_peer = _dropper(port)
            return
        deliver = self.peer_receive()
        if self.ingress is not None:
            self.ingress.forward = deliver
            deliver = self.ingress.receive
        for tap in reversed(self.taps):
            deliver = _tapped(tap, deliver)
        if self.loss_random is not None:
            deliver = _lossy(port, deliver, self.loss_rate, self.loss_random)
        port.receive_at_peer = deliver


def _lose(port: Port, pkt: Packet, cause: int) -> None:
    # A packet on a wire has been released by the ingress accounting of the switch it left
    # (at dequeue), and this link's own counter (stage 4) has not seen it; should a sender
    # ever skip the release, sim_drop frees what the packet still carries.
    sim_drop(port.sim, pkt, cause, port)


def _dropper(port: Port) -> Deliver:
    def drop(pkt: Packet) -> None:
        _lose(port, pkt, LINK_DOWN)

    return drop


def _lossy(port: Port, deliver: Deliver, loss_rate: float, random: Callable[[], float]) -> Deliver:
    def receive(pkt: Packet) -> None:
        if random() < loss_rate:
            _lose(port, pkt, RANDOM_LOSS)
        else:
            deliver(pkt)

    return receive


def _tapped(tap: Tap, deliver: Deliver) -> Deliver:
    def receive(pkt: Packet) -> None:
        if tap(pkt):
            deliver(pkt)

    return receive
