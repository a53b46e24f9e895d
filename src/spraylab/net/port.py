"""Egress ports: a FIFO queue feeding one direction of a link.

Two implementations share one interface (``send`` for data, ``send_control`` for the
strict-priority control class, counters for metrics):

* :class:`Port` (lossy): the queue is FIFO and never paused, so a packet's departure time is
  known at enqueue, ``max(now, busy_until) + size * ps_per_byte``. One event per hop (the
  arrival at the far end) and the backlog is ``(busy_until - now) / ps_per_byte``, with no
  dequeue event at all.
* :class:`PfcPort` (lossless): a real queue served by "transmission done" events, because a
  PFC PAUSE can stop it at any time. Dequeues release the ingress accounting of the switch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spraylab.net.drops import BUFFER, LINK_DOWN, no_drops
from spraylab.net.packet import DATA, Packet

if TYPE_CHECKING:
    from spraylab.engine.simulator import Simulator

PS_PER_BIT_AT_1BPS = 1_000_000_000_000


def ps_per_byte(rate_bps: int) -> float:
    """Serialization time of one byte; exact (an integer) for the usual rates (400G: 20 ps)."""
    value = 8 * PS_PER_BIT_AT_1BPS / rate_bps
    return int(value) if value == int(value) else value


def kmin_span_ps(kmin_bytes: int, per_byte: float) -> float:
    """The time Kmin bytes take to serialize, for comparing a backlog in ps without a division:
    exact when ``per_byte`` is an integer, else rounded down a little, so that ``backlog_ps >
    kmin_span_ps`` holds whenever ``backlog_ps / per_byte > kmin_bytes`` does."""
    span = kmin_bytes * per_byte
    return span if span.__class__ is int else span * (1 - 1e-9)


ECN_MARK_POINTS = ("dequeue", "enqueue")


class EcnConfig:
    """RED marking on the instantaneous queue: probability 0 below ``kmin``, rising linearly
    to ``pmax`` at ``kmax``, 1 above.

    ``mark_at`` is where the queue is sampled. ``"dequeue"`` (the default) judges a packet by
    the queue behind it when it starts transmission, as switch ASICs do and as the HPCC ns-3
    model and htsim do: congestion news is then one queueing delay fresher, and marks stop as
    soon as the queue drains below ``kmin``. ``"enqueue"`` judges it by the queue it joins,
    which keeps marking a draining start-up queue for a whole queueing delay."""

    __slots__ = ("kmin_bytes", "kmax_bytes", "pmax", "enabled", "mark_at")

    def __init__(
        self, kmin_bytes: int, kmax_bytes: int, pmax: float, enabled: bool = True, mark_at: str = "dequeue"
    ) -> None:
        if mark_at not in ECN_MARK_POINTS:
            raise ValueError(f"switch.ecn_mark_at = {mark_at!r}: allowed {', '.join(ECN_MARK_POINTS)}")
        self.kmin_bytes = kmin_bytes
        self.kmax_bytes = kmax_bytes
        self.pmax = pmax
        self.enabled = enabled
        self.mark_at = mark_at


class Port:
    """Lossy FIFO egress port (see module docstring)."""

    __slots__ = (
        "sim",
        "name",
        "owner",
        "peer_owner",
        "receive_at_peer",
        "link",
        "rate_bps",
        "ps_per_byte",
        "delay_ps",
        "busy_until",
        "up",
        "kmin",
        "kmax",
        "pmax",
        "mark_slope",
        "rng",
        "buffer",
        "is_uplink",
        "paused",
        "waiter",
        "mark_at_dequeue",
        "busy_log",
        "marks_pending",
        "kmin_ps",
        "_deliver_cb",
        "monitor",  # the spraylab.monitor.Monitor sampling this port, else None
        # counters
        "tx_bytes",
        "tx_packets",
        "drops",
        "drops_by_cause",
        "ecn_marks",
        "max_queue_bytes",
        "pauses_received",
        "paused_ps",
    )

    def __init__(
        self,
        sim: Simulator,
        name: str,
        owner: Any,
        rate_bps: int,
        delay_ps: int,
        ecn: EcnConfig | None,
        rng: Any,
    ) -> None:
        self.sim = sim
        self.name = name
        self.owner = owner
        self.peer_owner: Any = None
        self.receive_at_peer: Callable[[Packet], None] | None = None
        self.link: Any = None  # its delivery stages (spraylab.net.link), which set receive_at_peer
        self.rate_bps = rate_bps
        self.ps_per_byte = ps_per_byte(rate_bps)
        self.delay_ps = delay_ps
        self.busy_until = 0
        self.up = True
        self.mark_at_dequeue = False
        if ecn is not None and ecn.enabled:
            self.kmin = ecn.kmin_bytes
            self.kmax = ecn.kmax_bytes
            self.pmax = ecn.pmax
            self.mark_at_dequeue = ecn.mark_at == "dequeue"
        else:
            self.kmin = self.kmax = 1 << 62
            self.pmax = 0.0
        # Dequeue marking on a lossy port (see ``_deliver_marking``): (enqueue time, busy_until
        # after it) of every send since the oldest data packet still to be judged.
        self.busy_log: deque[tuple[int, int]] = deque()
        self.marks_pending = 0
        self.kmin_ps = kmin_span_ps(self.kmin, self.ps_per_byte)
        # the delivery of a queued data packet, which looks the link's stages up when it arrives
        self._deliver_cb = self._deliver_marking if self.mark_at_dequeue else self._deliver_queued
        self.monitor: Any = None
        span = self.kmax - self.kmin
        self.mark_slope = self.pmax / span if span > 0 else 0.0
        self.rng = rng
        self.buffer: Any = None  # the switch's SharedBuffer, None at hosts
        self.is_uplink = False
        self.paused = False
        self.waiter: Callable[[Any], None] | None = None
        self.tx_bytes = 0
        self.tx_packets = 0
        self.drops = 0  # every cause; ToR programs compare it around a send to spot their own drops
        self.drops_by_cause = no_drops()
        self.ecn_marks = 0
        self.max_queue_bytes = 0
        self.pauses_received = 0
        self.paused_ps = 0

    def connect(self, peer_owner: Any, receive: Callable[[Packet], None]) -> None:
        self.peer_owner = peer_owner
        self.receive_at_peer = receive

    def set_rate(self, rate_bps: int) -> None:
        self.rate_bps = rate_bps
        self.ps_per_byte = ps_per_byte(rate_bps)
        self.kmin_ps = kmin_span_ps(self.kmin, self.ps_per_byte)

    def fail(self) -> None:
        """The link goes down: everything sent into it from now on is lost (counted as drops),
        and so is every data packet still queued (its delivery looks the link's stages up when
        it arrives; a lossless port flushes its queue, ``PfcPort.link_down``). Packets
        that found the port idle and control frames already on the wire (at most one
        serialization plus the propagation delay) still arrive. The check is the link's first
        delivery stage (``spraylab.net.link``), so working links pay nothing for it."""
        self.link.fail()

    def link_down(self) -> None:
        """The link just went down (``Link.fail``). A lossy port keeps serializing what it is
        given into the dead link (lost there) until routing converges: nothing to do."""

    def queue_bytes(self) -> int:
        backlog = self.busy_until - self.sim.now
        return int(backlog / self.ps_per_byte) if backlog > 0 else 0

    def _mark(self, backlog: int) -> bool:
        if backlog >= self.kmax:
            return True
        return self.rng.random() < (backlog - self.kmin) * self.mark_slope

    def send(self, pkt: Packet) -> None:
        sim = self.sim
        now = sim.now
        busy = self.busy_until
        buffer = self.buffer
        if busy > now:
            backlog = int((busy - now) / self.ps_per_byte)
            if backlog > self.max_queue_bytes:
                self.max_queue_bytes = backlog
            if (
                buffer is not None
                and backlog > buffer.safe_port_bytes
                and not buffer.admits(self, backlog, pkt.size)
            ):
                sim_drop(sim, pkt, BUFFER, self)
                return
            if backlog > self.kmin and not self.mark_at_dequeue and pkt.kind == DATA and self._mark(backlog):
                pkt.ecn = True
                self.ecn_marks += 1
        else:
            busy = now
        size = pkt.size
        pkt.via = self
        if buffer is not None:
            buffer.added_bytes += size
        depart = busy + size * self.ps_per_byte
        if depart.__class__ is float:
            depart = int(depart)
        self.busy_until = depart
        self.tx_bytes += size
        self.tx_packets += 1
        # A packet that found the port idle starts at once with nothing behind it: never marked
        # at dequeue, and no later packet's judgement needs its log entry.
        if busy > now and pkt.kind == DATA:
            if self.mark_at_dequeue:
                self.busy_log.append((now, depart))
                self.marks_pending += 1
            sim.schedule(depart + self.delay_ps, self._deliver_cb, pkt)
        else:
            sim.schedule(depart + self.delay_ps, self.receive_at_peer, pkt)

    def _deliver_queued(self, pkt: Packet) -> None:
        """Arrival of a data packet that queued on an enqueue-marking port: through the link's
        stages as they are now, so a link that failed (or started losing) while it waited in
        the queue treats it as it treats every later packet."""
        self.receive_at_peer(pkt)

    def _deliver_marking(self, pkt: Packet) -> None:
        """Arrival at the far end of a data packet on a dequeue-marking port: judge it by the
        queue that was behind it when it started transmission. That queue is every byte sent
        after it and before that instant (a send at the very instant it starts comes after it,
        as on a lossless port), ``busy_until`` as of then minus its own departure; the
        log holds ``busy_until`` after each send, and its sends before that instant have all
        happened by now (the packet has since been serialized and propagated)."""
        depart = self.sim.now - self.delay_ps
        log = self.busy_log
        self.marks_pending -= 1
        # busy_until never decreases, so today's bounds the queue behind the packet at its start:
        # below Kmin there is nothing to judge, and the log is searched (and trimmed: each entry
        # is popped once) only when it is or when it has grown long. (``kmin_ps`` is Kmin's
        # serialization time or just below it: entering the search changes no decision.)
        if self.busy_until - depart > self.kmin_ps or len(log) > 32:
            start = depart - pkt.size * self.ps_per_byte
            while len(log) > 1 and log[1][0] < start:
                log.popleft()
            behind = (log[0][1] - depart) / self.ps_per_byte
            if behind > self.kmin and self._mark(behind):
                pkt.ecn = True
                self.ecn_marks += 1
        if not self.marks_pending:
            log.clear()
        self.receive_at_peer(pkt)

    def send_control(self, pkt: Packet) -> None:
        """Strict priority over data: a control frame (ACK/NACK/CNP, each its own size) leaves
        after its own serialization (preempting the data backlog at packet granularity is
        ignored) and its time is charged to the data queue so link capacity is conserved."""
        sim = self.sim
        now = sim.now
        size = pkt.size
        pkt.via = self
        if self.buffer is not None:
            self.buffer.added_bytes += size
        ser = int(size * self.ps_per_byte)
        busy = self.busy_until
        self.busy_until = (busy if busy > now else now) + ser
        if self.marks_pending:
            self.busy_log.append((now, self.busy_until))
        self.tx_bytes += size
        self.tx_packets += 1
        sim.schedule(now + ser + self.delay_ps, self.receive_at_peer, pkt)


class PfcPort(Port):
    """Lossless egress port with a real queue, PFC PAUSE/RESUME and a strict-priority
    control queue. Never drops for lack of buffer (PFC headroom is assumed sufficient)."""

    __slots__ = ("data_queue", "ctrl_queue", "queued_bytes", "transmitting", "paused_since", "_tx_done_cb")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.data_queue: deque[Packet] = deque()
        self.ctrl_queue: deque[Packet] = deque()
        self.queued_bytes = 0
        self.transmitting = False
        self.paused_since = 0
        self._tx_done_cb = self._tx_done

    def queue_bytes(self) -> int:
        return self.queued_bytes

    def send(self, pkt: Packet) -> None:
        backlog = self.queued_bytes
        if backlog > self.kmin and not self.mark_at_dequeue and pkt.kind == DATA and self._mark(backlog):
            pkt.ecn = True
            self.ecn_marks += 1
        pkt.via = self
        self.data_queue.append(pkt)
        backlog += pkt.size
        self.queued_bytes = backlog
        if backlog > self.max_queue_bytes:
            self.max_queue_bytes = backlog
        if not self.transmitting:
            self._start_next()

    def send_control(self, pkt: Packet) -> None:
        pkt.via = self
        self.ctrl_queue.append(pkt)
        if not self.transmitting:
            self._start_next()

    def _start_next(self) -> None:
        if self.ctrl_queue:
            pkt = self.ctrl_queue.popleft()
        elif self.data_queue and not self.paused:
            pkt = self.data_queue.popleft()
            self.queued_bytes -= pkt.size
            if self.mark_at_dequeue and self.queued_bytes > self.kmin and self._mark(self.queued_bytes):
                pkt.ecn = True
                self.ecn_marks += 1
            ingress = pkt.ingress
            if ingress is not None:
                pkt.ingress = None
                ingress.release(pkt.size)
        else:
            self.transmitting = False
            return
        sim = self.sim
        now = sim.now
        self.transmitting = True
        done = now + int(pkt.size * self.ps_per_byte)
        self.busy_until = done
        self.tx_bytes += pkt.size
        self.tx_packets += 1
        sim.schedule(done + self.delay_ps, self.receive_at_peer, pkt)
        sim.schedule(done, self._tx_done_cb, None)

    def _tx_done(self, _: Any) -> None:
        self._start_next()
        if not self.transmitting and self.waiter is not None:
            waiter, self.waiter = self.waiter, None
            waiter(None)

    def link_down(self) -> None:
        """The link just went down: as a real port does, flush the queue (every packet in it is
        lost, ``LINK_DOWN``, and leaves its ingress accounting) and drop the PFC state. The peer
        is gone, so no PAUSE is in force and no RESUME will come (PFC frames cross no down link,
        ``IngressCounter``): kept paused, the port would hold its queue, and through the ingress
        bytes of that queue the ports upstream of it, for good. What routing still sends here
        before it converges is serialized into the dead link and lost there, as on a lossy port."""
        sim = self.sim
        ctrl, self.ctrl_queue = self.ctrl_queue, deque()
        data, self.data_queue = self.data_queue, deque()
        self.queued_bytes = 0
        # drops may make a sender resend at once (ideal recovery); it finds the new, empty queues
        for pkt in ctrl:
            sim_drop(sim, pkt, LINK_DOWN, self)
        for pkt in data:
            sim_drop(sim, pkt, LINK_DOWN, self)
        self.resume()

    def pause(self, _: Any = None) -> None:
        if not self.paused:
            self.paused = True
            self.pauses_received += 1
            self.paused_since = self.sim.now

    def resume(self, _: Any = None) -> None:
        if self.paused:
            self.paused = False
            self.paused_ps += self.sim.now - self.paused_since
            if not self.transmitting:
                self._start_next()
            if not self.transmitting and self.waiter is not None:
                waiter, self.waiter = self.waiter, None
                waiter(None)


class IngressCounter:
    """PFC accounting for one ingress link of a lossless switch: bytes that arrived on it and
    are still buffered. Above ``xoff`` it PAUSEs the upstream port, below ``xon`` RESUMEs it;
    the frames take the link's propagation delay and, like everything else, do not cross a
    link that is down when they would arrive (a link fails in both directions at once, so
    the upstream port's link stands for the reverse one)."""

    __slots__ = ("sim", "upstream", "delay_ps", "xoff", "xon", "bytes", "pausing", "forward", "pauses_sent")

    def __init__(
        self, sim: Simulator, upstream: Port, xoff: int, xon: int, forward: Callable[[Packet], None]
    ) -> None:
        self.sim = sim
        self.upstream = upstream
        self.delay_ps = upstream.delay_ps
        self.xoff = xoff
        self.xon = xon
        self.bytes = 0
        self.pausing = False
        self.forward = forward
        self.pauses_sent = 0

    def receive(self, pkt: Packet) -> None:
        if pkt.kind == DATA:
            pkt.ingress = self
            self.bytes += pkt.size
            if self.bytes > self.xoff and not self.pausing:
                self.pausing = True
                self.pauses_sent += 1
                self.sim.after(self.delay_ps, self._pause_arrives)
        self.forward(pkt)

    def release(self, size: int) -> None:
        self.bytes -= size
        if self.pausing and self.bytes <= self.xon:
            self.pausing = False
            self.sim.after(self.delay_ps, self._resume_arrives)

    def _pause_arrives(self, _: Any) -> None:
        upstream = self.upstream
        if not upstream.link.down:
            upstream.pause()

    def _resume_arrives(self, _: Any) -> None:
        upstream = self.upstream
        if not upstream.link.down:
            upstream.resume()


def sim_drop(sim: Simulator, pkt: Packet, cause: int, port: Port | None = None) -> None:
    """Every drop goes through here, with its cause (``spraylab.net.drops``): counted for the
    network (the conservation check reads these counters), for the packet's flow and for one
    port: the egress ``port`` where it happened (buffer, link down, random loss) or, for a drop
    inside a node (no route, a ToR program, the receiving RNIC), the port whose link brought the
    packet there (``pkt.via``). So the links table's drop columns add up to the network's, cause
    by cause (``check_conservation``). A recovery mode that watches losses (the ideal
    transport's oracle notice) sees it through ``QueuePair.drop_hook`` (its ``on_drop``; None
    for the other modes, which pay this one attribute test).

    A data packet still counted by a lossless switch's ingress accounting (dropped inside
    the switch: no route, a ToR program's resequencer) leaves the buffer here, so its bytes
    are released: kept, they would never drain and would hold the upstream port paused."""
    ingress = pkt.ingress
    if ingress is not None:
        pkt.ingress = None
        ingress.release(pkt.size)
    if port is None:
        port = pkt.via
    if port is not None:  # None only for a packet that never left its sender: the check fails
        port.drops += 1
        port.drops_by_cause[cause] += 1
    qp = pkt.qp
    if qp is not None:
        qp.net.drops_by_cause[cause] += 1
        qp.drops_by_cause[cause] += 1
        hook = qp.drop_hook
        if hook is not None:
            hook(pkt)
