"""Hosts (GPUs with their RDMA NICs) and the NIC's queue-pair scheduler."""

from __future__ import annotations

from collections import deque
from heapq import heappop, heappush
from typing import TYPE_CHECKING, Any

from spraylab.net.packet import ACK, CNP, DATA, NACK, Packet

if TYPE_CHECKING:
    from spraylab.net.port import Port
    from spraylab.transport.qp import QueuePair


class Nic:
    """Schedules the queue pairs sharing one egress port: round-robin among QPs allowed to
    send now, QPs paced below line rate wait in a heap keyed by their next send time. One
    event per data packet; the port is never handed more than one data packet at a time, so
    the NIC never builds a queue of its own."""

    __slots__ = ("sim", "host", "port", "ready", "paced", "tx_at", "_tx_cb", "_kick_cb")

    def __init__(self, sim: Any, host: Host, port: Port) -> None:
        self.sim = sim
        self.host = host
        self.port = port
        self.ready: deque[QueuePair] = deque()
        self.paced: list[tuple[int, int, QueuePair]] = []
        self.tx_at = -1  # time of the pending transmit event, -1 if none
        self._tx_cb = self._tx
        self._kick_cb = self._kick

    def activate(self, qp: QueuePair) -> None:
        """A QP has something to send (new flow, ACK opened the window, NACK)."""
        qp.in_sched = True
        if qp.next_send_ps > self.sim.now:
            heappush(self.paced, (qp.next_send_ps, qp.flow_id, qp))
        else:
            self.ready.append(qp)
        self._kick(None)

    def _kick(self, _: Any) -> None:
        sim = self.sim
        when = self.port.busy_until
        if when < sim.now:
            when = sim.now
        if not self.ready:
            if not self.paced:
                return
            if self.paced[0][0] > when:
                when = self.paced[0][0]
        if self.tx_at < 0 or when < self.tx_at:
            self.tx_at = when
            sim.schedule(when, self._tx_cb, when)

    def _tx(self, when: int) -> None:
        if when != self.tx_at:
            return  # superseded by an earlier transmit event
        self.tx_at = -1
        sim = self.sim
        now = sim.now
        port = self.port
        if port.paused:
            port.waiter = self._kick_cb
            return
        if port.busy_until > now:
            self._kick(None)
            return
        ready = self.ready
        paced = self.paced
        while paced and paced[0][0] <= now:
            ready.append(heappop(paced)[2])
        while ready:
            qp = ready.popleft()
            pkt = qp.next_packet(now)
            if pkt is None:
                qp.in_sched = False
                continue
            port.send(pkt)
            # qp.has_work(), inlined (once per data packet)
            nxt = qp.snd_nxt
            una = qp.snd_una
            if qp.retx_queue or (
                nxt < qp.n_packets and nxt < una + qp.psn_window and nxt - una < qp.window_packets
            ):
                if qp.next_send_ps > port.busy_until:
                    heappush(paced, (qp.next_send_ps, qp.flow_id, qp))
                else:
                    ready.append(qp)
            else:
                qp.in_sched = False
            break
        # _kick, inlined (one call per data packet): the next transmit event
        when = port.busy_until
        if when < now:
            when = now
        if not ready:
            if not paced:
                return
            if paced[0][0] > when:
                when = paced[0][0]
        if self.tx_at < 0 or when < self.tx_at:
            self.tx_at = when
            sim.schedule(when, self._tx_cb, when)


class UniformRoute:
    """``Host.route`` of a host whose every destination is reached through one NIC: reads like
    the list of ``n`` equal entries, without its ``n`` slots (8 bytes per host and destination:
    0.5 GB on an 8192-host fabric). Only set-up code and the path tracer read it."""

    __slots__ = ("nic", "n")

    def __init__(self, nic: Nic, n: int) -> None:
        self.nic = nic
        self.n = n

    def __getitem__(self, dst: int) -> Nic:
        if not -self.n <= dst < self.n:
            raise IndexError(f"host {dst} out of range ({self.n} hosts)")
        return self.nic

    def __len__(self) -> int:
        return self.n


class Host:
    """An endpoint: consumes packets addressed to it and owns one NIC per egress port
    (one for a plain server NIC; a GPU in a rail-optimized server also has its NVLink port).
    ``route[dst]`` is the NIC that reaches ``dst``."""

    __slots__ = ("sim", "net", "id", "name", "server", "ports", "nics", "route")

    def __init__(self, sim: Any, net: Any, host_id: int, name: str, server: int = -1) -> None:
        self.sim = sim
        self.net = net
        self.id = host_id
        self.name = name
        self.server = server
        self.ports: list[Port] = []
        self.nics: list[Nic] = []
        self.route: list[Nic] | UniformRoute = []

    def receive(self, pkt: Packet) -> None:
        self.net.consumed_packets += 1
        kind = pkt.kind
        qp = pkt.qp
        if kind == DATA:
            qp.rx.on_data(pkt)
        elif kind == ACK:
            qp.on_ack(pkt)
        elif kind == NACK:
            qp.on_nack(pkt)
        elif kind == CNP:
            qp.on_cnp(pkt)

    def __repr__(self) -> str:
        return f"Host({self.name})"
