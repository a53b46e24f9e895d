"""Destination ToR, mode ``reorder`` (go-back-N RNICs): out-of-order packets wait in a
per-flow resequencing ring (``window`` packets) and leave in PSN order.

The gap at the head (``low``) waits at most ``hold_timeout`` (restarted when the head
advances); a known loss of the head (bracket, or every path past it) or the timeout flushes
the held packets in PSN order: the NIC discards them and NACKs as usual (if nothing is held,
the next out-of-order arrival is passed through to trigger the NACK). The sender then goes
back to the head and resends everything, so after a flush the heads up to the highest PSN
seen wait for their retransmission (hold + a round trip) and are not flushed again on old
evidence (``DestinationTracker.lost``). Each extra flush makes the NIC discard and NACK again,
i.e. one more go-back-N rewind of a window of packets already resent (and, 50 µs after the
last one, one more out-of-order CNP halving the sender's rate): the round trip and the
evidence rule keep it to one NACK per loss. A packet beyond the ring is dropped (counted) and
recorded as lost: the go-back-N NIC would have discarded it anyway, without a NACK storm.
Duplicates of a held PSN are dropped.

Held packets sit in the switch's packet memory, as in a real ToR (a switch ASIC has one shared
packet buffer; a packet it keeps back is a packet in that buffer). On a lossy fabric they count
against the shared buffer: every port's dynamic-threshold admission sees them, and the holds
are one more queue under that threshold, so a hold the buffer cannot take is a ``buffer``
drop, counted on the downlink the packet was waiting for and recorded as lost like a packet
beyond the ring. On a lossless fabric they are charged to their ingress links' PFC counters
until they leave (``IngressCounter``), and PFC never drops. Their peak is reported per ToR
(``reseq_peak_bytes``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.lb.tor_assist.counters import TorCounters
from spraylab.lb.tor_assist.params import RETIRED
from spraylab.lb.tor_assist.tracker import DestinationTracker, FlowTrack
from spraylab.net.drops import BUFFER, RESEQUENCER
from spraylab.net.port import sim_drop

if TYPE_CHECKING:
    from spraylab.net.packet import Packet
    from spraylab.net.switch import SharedBuffer, Switch


class ReseqFlow(FlowTrack):
    """A flow's state in ``reorder`` mode: its resequencing ring."""

    __slots__ = ("buf", "nheld", "held_bytes", "hi", "pass_next")

    def __init__(self, fid: int, n_packets: int, n_paths: int, window: int) -> None:
        super().__init__(fid, n_packets, n_paths, window)
        self.buf: list[Packet | None] | None = None  # allocated on the first held packet
        self.nheld = 0
        self.held_bytes = 0
        self.hi = -1  # highest PSN held
        self.pass_next = False  # head known lost with nothing held: pass the next arrival


class Resequencer:
    """The ``reorder`` destination role of one ToR (see the module doc)."""

    __slots__ = ("sim", "switch", "buffer", "tracker", "counters", "window", "bytes", "peak_bytes")

    def __init__(
        self,
        switch: Switch,
        tracker: DestinationTracker,
        counters: TorCounters,
        window: int,
        host_hop_ps: int,
        buffer: SharedBuffer | None,
    ) -> None:
        self.sim = switch.sim
        self.switch = switch
        # the shared buffer the holds are charged to (lossy fabrics), None on a lossless one
        self.buffer = buffer
        if buffer is not None:
            buffer.add_hold_queue()
        self.tracker = tracker
        self.counters = counters
        self.window = window
        self.bytes = 0  # held at this ToR now
        self.peak_bytes = 0
        tracker.flow_cls = ReseqFlow
        tracker.timer_cb = self.on_timer
        # a flush's round trip also crosses the hop to the NIC twice (its NACK comes back)
        tracker.rerequest_extra_ps = 2 * host_hop_ps

    def reseq(self, switch: Switch, pkt: Packet) -> bool:
        tracker = self.tracker
        fs = tracker.state(pkt)
        if fs is RETIRED:
            return True
        now = self.sim.now
        tracker.observe(fs, pkt, now)
        psn = pkt.psn
        exp = fs.low
        c = self.counters
        if psn < exp:  # retransmission / duplicate below the window: untouched
            switch.table[pkt.dst][0].send(pkt)
            return False
        if psn == exp:
            self._release_run(fs, pkt, now)
            if fs.low >= fs.n_packets:
                tracker.retire(fs)
                return False
        elif fs.pass_next:  # head known lost and nothing held: let the NIC see a gap now
            fs.pass_next = False
            c.reseq_passed_ooo += 1
            switch.table[pkt.dst][0].send(pkt)
            return False
        else:
            w = self.window
            if psn >= exp + w:
                c.reseq_overflow_drops += 1
                tracker.evidence(fs, psn - 1, psn + 1, now, False)
                sim_drop(self.sim, pkt, RESEQUENCER)
                return False
            buf = fs.buf
            if buf is None:
                buf = fs.buf = [None] * w
            i = psn % w
            if buf[i] is not None:
                c.reseq_duplicate_drops += 1
                sim_drop(self.sim, pkt, RESEQUENCER)
                return False
            buffer = self.buffer
            if buffer is not None:
                if not buffer.admits_hold(pkt.size):
                    c.reseq_buffer_drops += 1
                    tracker.evidence(fs, psn - 1, psn + 1, now, False)
                    sim_drop(self.sim, pkt, BUFFER, switch.table[pkt.dst][0])
                    return False
                buffer.hold(pkt.size)
            buf[i] = pkt
            c.reseq_held_packets += 1
            c.held += 1
            fs.nheld += 1
            fs.held_bytes += pkt.size
            if psn > fs.hi:
                fs.hi = psn
            size = self.bytes + pkt.size
            self.bytes = size
            if size > self.peak_bytes:
                self.peak_bytes = size
            if fs.nheld == 1:
                tracker.arm(fs, now + tracker.hold_for(fs, exp))
        if fs.nheld:
            exp = fs.low
            if (fs.minmax > exp or fs.ev) and tracker.lost(fs, exp):
                c.reseq_flush_loss += 1
                self._flush(fs, now)
        return False

    def _release_run(self, fs: ReseqFlow, pkt: Packet, now: int) -> None:
        """``pkt`` is the head: send it and every consecutive held packet after it."""
        port = self.switch.table[pkt.dst][0]
        exp = pkt.psn
        fs.pass_next = False
        drops = port.drops
        port.send(pkt)
        if port.drops != drops:
            self._lost_at_last_hop(fs, exp, now)
            return
        exp += 1
        if fs.nheld:
            w = self.window
            buf: list[Packet | None] = fs.buf  # type: ignore[assignment]
            released = 0
            freed = 0
            i = exp % w
            q = buf[i]
            buffer = self.buffer
            while q is not None:
                buf[i] = None
                released += 1
                freed += q.size
                if buffer is not None:  # it leaves the hold for the port's queue (admitted anew)
                    buffer.unhold(q.size)
                port.send(q)
                if port.drops != drops:
                    self._unhold(fs, released, freed)
                    self._lost_at_last_hop(fs, exp, now)
                    return
                exp += 1
                i = exp % w
                q = buf[i]
            self._unhold(fs, released, freed)
        fs.low = exp
        if fs.nheld:
            self.tracker.arm(fs, now + self.tracker.hold_for(fs, exp))
        else:
            fs.deadline = -1
            fs.hi = -1

    def _unhold(self, fs: ReseqFlow, released: int, freed: int) -> None:
        self.counters.held -= released
        fs.nheld -= released
        fs.held_bytes -= freed
        self.bytes -= freed

    def _lost_at_last_hop(self, fs: ReseqFlow, psn: int, now: int) -> None:
        """The ToR's own downlink dropped ``psn``: the NIC's ePSN stays there."""
        self.counters.last_hop_drops += 1
        fs.low = psn
        self.tracker.evidence(fs, psn - 1, psn + 1, now, False)
        self.counters.reseq_flush_loss += 1
        self._flush(fs, now)

    def _flush(self, fs: ReseqFlow, now: int) -> None:
        """The head is taken as lost: release everything held, in PSN order; the go-back-N
        NIC discards it and NACKs the head (ConnectX behaviour)."""
        # go-back-N: the sender rewinds to low and resends everything it had sent, so heads
        # up to the highest PSN seen now wait for their retransmission, not for old evidence
        fs.fwd_x = fs.low
        fs.fwd_hi = max(fs.low, max(fs.pmax))
        fs.fwd_t = now
        fs.deadline = -1
        if not fs.nheld:
            fs.pass_next = True
            return
        w = self.window
        buf: list[Packet | None] = fs.buf  # type: ignore[assignment]
        send = None
        released = 0
        freed = 0
        buffer = self.buffer
        for psn in range(fs.low + 1, fs.hi + 1):
            i = psn % w
            q = buf[i]
            if q is not None:
                buf[i] = None
                if send is None:
                    send = self.switch.table[q.dst][0].send
                released += 1
                freed += q.size
                if buffer is not None:
                    buffer.unhold(q.size)
                send(q)
        self._unhold(fs, released, freed)
        self.counters.reseq_flushed_packets += released
        fs.hi = -1

    def on_timer(self, fs: ReseqFlow) -> None:
        fs.timer_armed = False
        if fs.deadline < 0 or not fs.nheld:
            return
        now = self.sim.now
        if now < fs.deadline:
            self.tracker.arm(fs, fs.deadline)
            return
        self.counters.reseq_flush_timeout += 1
        self._flush(fs, now)
