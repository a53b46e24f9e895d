"""The RoCEv2 requester (sender side of a reliable-connection queue pair)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from spraylab.net.packet import DATA, HEADER_BYTES, Packet
from spraylab.transport.dcqcn import Dcqcn
from spraylab.transport.params import TransportParams

if TYPE_CHECKING:
    from spraylab.net.host import Nic
    from spraylab.net.network import Network
    from spraylab.workload.flows import FlowSpec

PS_BITS = 8_000_000_000_000  # ps per byte at 1 bit/s


class QueuePair:
    """Segments one message into PSN-numbered packets, paces them at the DCQCN rate, and
    recovers from NACKs and timeouts per the receiver's recovery mode (go-back-N rewinds,
    selective repeat resends one PSN, the ideal transport resends only un-SACKed PSNs).

    ``psn_window`` caps ``next PSN - snd_una`` (DFS sets it to its reorder bound B).
    ``lb`` is the sender-side load balancer hook (entropy per packet, ACK feedback), or None.
    """

    __slots__ = (
        "net",
        "sim",
        "spec",
        "flow_id",
        "src",
        "dst",
        "n_packets",
        "mtu",
        "last_payload",
        "nic",
        "rx",
        "recovery",
        "cc",
        "line_rate_bps",
        "paced_ps_per_byte",
        "next_send_ps",
        "snd_una",
        "snd_nxt",
        "max_sent",
        "retx_queue",
        "sacked",
        "entropy",
        "psn_window",
        "window_packets",
        "lb",
        "lb_state",
        "in_sched",
        "sender_done",
        "start_ps",
        "acked_ps",
        "last_progress_ps",
        "rto_ps",
        "rto_armed",
        "sent_packets",
        "retx_packets",
        "nacks_received",
        "timeouts",
        "_rto_cb",
    )

    def __init__(self, net: Network, spec: FlowSpec, nic: Nic, params: TransportParams, line_rate_bps: int) -> None:
        self.net = net
        self.sim = net.sim
        self.spec = spec
        self.flow_id = spec.flow_id
        self.src = spec.src
        self.dst = spec.dst
        self.mtu = params.mtu_bytes
        self.n_packets = max(1, -(-spec.size_bytes // self.mtu))
        self.last_payload = spec.size_bytes - (self.n_packets - 1) * self.mtu
        self.nic = nic
        self.rx: Any = None
        self.recovery = params.recovery
        self.line_rate_bps = line_rate_bps
        self.cc = Dcqcn(self, params.dcqcn, line_rate_bps) if params.cc == "dcqcn" else None
        self.paced_ps_per_byte = 0.0  # 0: line rate, no pacing beyond the NIC port
        self.next_send_ps = 0
        self.snd_una = 0
        self.snd_nxt = 0
        self.max_sent = 0
        self.retx_queue: deque[int] = deque()
        self.sacked = bytearray(self.n_packets) if params.recovery == "ideal" else None
        self.entropy = net.flow_rng.getrandbits(16)
        self.psn_window = 1 << 62
        self.window_packets = (
            max(1, params.window_bytes // (self.mtu + HEADER_BYTES)) if params.window_bytes else 1 << 62
        )
        self.lb: Any = None
        self.lb_state: Any = None
        self.in_sched = False
        self.sender_done = False
        self.start_ps = -1
        self.acked_ps = -1
        self.last_progress_ps = 0
        self.rto_ps = params.rto_ps
        self.rto_armed = False
        self.sent_packets = 0
        self.retx_packets = 0
        self.nacks_received = 0
        self.timeouts = 0
        self._rto_cb = self._on_rto

    # --- rate ------------------------------------------------------------------------
    def set_rate(self, rate_bps: float) -> None:
        self.paced_ps_per_byte = 0.0 if rate_bps >= self.line_rate_bps else PS_BITS / rate_bps

    @property
    def rate_bps(self) -> float:
        return self.cc.rc if self.cc is not None else float(self.line_rate_bps)

    # --- sending ---------------------------------------------------------------------
    def start(self) -> None:
        self.start_ps = self.sim.now
        self.last_progress_ps = self.sim.now
        if self.lb is not None:
            self.lb.on_flow_start(self)
        self.nic.activate(self)

    def has_work(self) -> bool:
        if self.retx_queue:
            return True
        nxt = self.snd_nxt
        return (
            nxt < self.n_packets
            and nxt < self.snd_una + self.psn_window
            and nxt - self.snd_una < self.window_packets
        )

    def next_packet(self, now: int) -> Packet | None:
        """The next packet to put on the wire, or None when blocked (window) or done."""
        retx_queue = self.retx_queue
        while retx_queue:
            psn = retx_queue.popleft()
            if psn >= self.snd_una and (self.sacked is None or not self.sacked[psn]):
                break
        else:
            psn = self.snd_nxt
            if (
                psn >= self.n_packets
                or psn >= self.snd_una + self.psn_window
                or psn - self.snd_una >= self.window_packets
            ):
                return None
            self.snd_nxt = psn + 1
        payload = self.mtu if psn < self.n_packets - 1 else self.last_payload
        size = payload + HEADER_BYTES
        lb = self.lb
        entropy = self.entropy if lb is None else lb.entropy(self, psn)
        pkt = Packet(DATA, self, self.src, self.dst, psn, size, payload, entropy, (self.flow_id << 16) | entropy, now)
        if psn < self.max_sent:
            pkt.retx = True
            self.retx_packets += 1
        else:
            self.max_sent = psn + 1
        self.sent_packets += 1
        if self.paced_ps_per_byte:
            self.next_send_ps = now + int(size * self.paced_ps_per_byte)
        if self.cc is not None:
            self.cc.on_sent(size)
        if not self.rto_armed:
            self.rto_armed = True
            self.sim.after(self.rto_ps, self._rto_cb)
        self.net.injected_packets += 1
        return pkt

    # --- feedback --------------------------------------------------------------------
    def _advance(self, cum_psn: int, now: int) -> None:
        if cum_psn > self.snd_una:
            self.snd_una = cum_psn
            self.last_progress_ps = now
            if self.snd_nxt < cum_psn:
                self.snd_nxt = cum_psn
            if cum_psn >= self.n_packets and not self.sender_done:
                self.sender_done = True
                self.acked_ps = now
                self.net.on_sender_done(self)

    def on_ack(self, pkt: Packet) -> None:
        now = self.sim.now
        if self.sacked is not None:
            self.sacked[pkt.sack_psn] = 1
        self._advance(pkt.psn, now)
        if self.lb is not None:
            self.lb.on_ack(self, pkt)
        if not self.sender_done and not self.in_sched and self.has_work():
            self.nic.activate(self)

    def on_nack(self, pkt: Packet) -> None:
        now = self.sim.now
        self.nacks_received += 1
        psn = pkt.psn
        self._advance(psn, now)
        if self.lb is not None:
            self.lb.on_nack(self, pkt)
        if self.sender_done:
            return
        if self.recovery == "gbn":
            if self.snd_nxt > psn:
                self.snd_nxt = psn
        elif psn < self.max_sent:
            self.retx_queue.append(psn)
        if not self.in_sched and self.has_work():
            self.nic.activate(self)

    def on_cnp(self, pkt: Packet) -> None:
        if self.cc is not None and not self.sender_done:
            self.cc.on_cnp(self.sim.now)

    def _on_rto(self, _: object) -> None:
        self.rto_armed = False
        if self.sender_done:
            return
        now = self.sim.now
        if self.snd_una >= self.max_sent:
            return  # nothing outstanding: re-armed by the next send
        deadline = self.last_progress_ps + self.rto_ps
        if now < deadline:
            self.rto_armed = True
            self.sim.at(deadline, self._rto_cb)
            return
        self.timeouts += 1
        self.last_progress_ps = now
        if self.sacked is not None:
            sacked = self.sacked
            self.retx_queue.extend(p for p in range(self.snd_una, self.max_sent) if not sacked[p])
        else:
            self.snd_nxt = self.snd_una  # go back N (selective-repeat RNICs also do so on timeout)
        if self.lb is not None:
            self.lb.on_timeout(self)
        self.rto_armed = True
        self.sim.after(self.rto_ps, self._rto_cb)
        if not self.in_sched and self.has_work():
            self.nic.activate(self)
