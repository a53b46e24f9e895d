"""Destination ToR: what it knows about each flow arriving over its uplinks (stamped data to
an attached host), shared by both destination modes (``nack_filter``, ``reorder``).

Per flow:

* per path: last ``path_seq`` and highest PSN seen (``seq``, ``pmax``), and the minimum of
  ``pmax`` over the source ToR's paths (``minmax``, maintained incrementally);
* ``low`` = lowest PSN that has not passed (each mode decides what passing means);
* loss evidence: each ``path_seq`` gap records the PSN bracket (previous ``pmax`` of the
  path, arriving PSN) the lost packets lie in, and the send time of the packet revealing it
  (the lost packets were sent before it); packets dropped/discarded after the ToR record
  their own PSN and the time of the drop;
* the recovery already requested (a NACK forwarded, a flush): PSNs ``fwd_x..fwd_hi`` at
  ``fwd_t``. Once recovery of x was requested the sender retransmits x, so x is known lost
  again only on *new* evidence: an exact loss of x after the request, or a path gap (it may
  be the lost retransmission) revealed by a packet sent at least a one-way delay (the flow's
  minimum) after the request: the retransmission leaves the sender only once the request
  reached it, so a gap revealed by an earlier packet is some other loss (typically the next
  one in the same window) and must not trigger a second recovery of x.

``hold_timeout`` = 0 (default) adapts: 2 x the largest queueing delay the ToR has seen,
capped at 100 µs and floored at 1 µs (before any queue forms, 2 x 0 would release at once).
Queueing delay = a packet's one-way delay (arrival at the destination ToR - NIC send time)
minus the flow's minimum: it covers the source uplink and the spine queues, i.e. the delay
difference between paths that reordering comes from.

A flow's state is created on its first packet and retired when every PSN has passed, leaving
a tombstone so late duplicates pass untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spraylab.lb.tor_assist.counters import TorCounters, TorFlows
from spraylab.lb.tor_assist.params import HOLD_CAP_PS, HOLD_FLOOR_PS, NO_LIMIT, RETIRED

if TYPE_CHECKING:
    from spraylab.net.packet import Packet


class FlowTrack:
    """Destination-ToR state of one flow common to both modes (see the module doc); each
    mode's subclass adds its own."""

    __slots__ = (
        "fid",
        "n_packets",
        "seq",
        "pmax",
        "minmax",
        "low",
        "ev",
        "fwd_x",
        "fwd_hi",
        "fwd_t",
        "min_owd",
        # timer (hold deadline of the held NACK / of the resequencing head)
        "deadline",
        "timer_armed",
    )

    def __init__(self, fid: int, n_packets: int, n_paths: int, window: int) -> None:
        self.fid = fid
        self.n_packets = n_packets
        self.seq = [-1] * n_paths
        self.pmax = [-1] * n_paths
        self.minmax = -1
        self.low = 0
        self.ev: list[tuple[int, int, int, bool]] | None = None  # (lo, hi, time, path gap?)
        self.fwd_x = -1  # recovery requested (NACK forwarded / flushed) for PSNs fwd_x..fwd_hi
        self.fwd_hi = -2
        self.fwd_t = -1
        self.min_owd = NO_LIMIT
        self.deadline = -1
        self.timer_armed = False


class DestinationTracker:
    """The destination flow table of one ToR and the evidence rules (see the module doc).
    The mode in charge sets ``flow_cls`` (its flow state) and ``timer_cb`` (its hold timer)."""

    __slots__ = (
        "sim",
        "dst",
        "window",
        "paths_of_host",
        "counters",
        "flows",
        "hold_param",
        "maxq",
        "max_hold",
        "rerequest_extra_ps",
        "flow_cls",
        "timer_cb",
    )

    def __init__(
        self,
        sim: Any,
        window: int,
        hold_param: int,
        paths_of_host: list[int],
        counters: TorCounters,
        flows: TorFlows,
    ) -> None:
        self.sim = sim
        self.dst: dict[int, Any] = {}  # flow id -> flow state or RETIRED
        self.window = window
        self.paths_of_host = paths_of_host
        self.counters = counters
        self.flows = flows
        self.hold_param = hold_param
        self.maxq = 0
        self.max_hold = 0
        self.rerequest_extra_ps = 0  # see hold_for
        self.flow_cls: type[FlowTrack] = FlowTrack
        self.timer_cb: Callable[[Any], None] | None = None

    def state(self, pkt: Packet) -> Any:
        """The flow's state, created on its first packet, or RETIRED."""
        fid = pkt.flow_id
        fs = self.dst.get(fid)
        if fs is None:
            n_paths = self.paths_of_host[pkt.src]
            fs = self.dst[fid] = self.flow_cls(fid, pkt.msg_packets, n_paths, self.window)
            self.flows.live_dst += 1
            self.counters.dst_paths_max = max(self.counters.dst_paths_max, n_paths)
            self.flows.note()
        return fs

    def retire(self, fs: FlowTrack) -> None:
        self.dst[fs.fid] = RETIRED
        self.flows.live_dst -= 1

    def observe(self, fs: FlowTrack, pkt: Packet, now: int) -> None:
        """Queueing delay, per-path sequence (gap = loss) and highest PSN per path."""
        owd = now - pkt.sent_ps
        if owd < fs.min_owd:
            fs.min_owd = owd
        elif owd - fs.min_owd > self.maxq:
            self.maxq = owd - fs.min_owd
        p = pkt.path_id
        if p >= len(fs.seq):
            return
        s = pkt.path_seq
        psn = pkt.psn
        seq = fs.seq
        last = seq[p]
        pmax = fs.pmax
        m = pmax[p]
        if s > last:
            if s != last + 1:
                counters = self.counters
                counters.path_gaps += 1
                counters.path_lost_packets += s - last - 1
                if m < psn:
                    self.evidence(fs, m, psn, pkt.sent_ps, True)
                else:
                    self.evidence(fs, psn, m, pkt.sent_ps, True)
            seq[p] = s
        if psn > m:
            pmax[p] = psn
            if m == fs.minmax:
                fs.minmax = min(pmax)

    def evidence(self, fs: FlowTrack, lo: int, hi: int, t: int, gap: bool) -> None:
        """PSNs strictly between lo and hi may have been lost. ``gap``: from a path_seq gap
        (which packet is unknown; ``t`` = send time of the packet revealing it); else exactly
        PSN lo + 1 was lost after the ToR (downlink drop, NIC discard, resequencer overflow;
        ``t`` = now)."""
        ev = fs.ev
        if not ev:
            fs.ev = [(lo, hi, t, gap)]
            return
        if not gap:  # runs of discards: coalesce with the recent exact brackets it touches
            k = len(ev) - 1
            stop = k - 6
            while k > stop and k >= 0:
                a, b, _, g = ev[k]
                if not g and lo < b and a < hi:
                    if a < lo:
                        lo = a
                    if b > hi:
                        hi = b
                    del ev[k]
                k -= 1
        ev.append((lo, hi, t, gap))

    def lost(self, fs: FlowTrack, x: int) -> bool:
        """Is PSN x (not passed) known lost? Callers pre-check ``fs.minmax > x or fs.ev``."""
        ev = fs.ev
        if ev:
            low = fs.low
            if ev[0][1] <= low or ev[-1][1] <= low:  # brackets wholly passed are spent
                ev[:] = [e for e in ev if e[1] > low]
        if fs.fwd_x <= x <= fs.fwd_hi:
            # recovery of x was already requested: only evidence newer than that request
            # counts: an exact loss of x, or a path gap (it may be the lost retransmission)
            # revealed by a packet sent after the request can have reached the sender
            if not ev:
                return False
            t0 = fs.fwd_t
            t_gap = t0 + fs.min_owd
            return any(t > t_gap if g else t > t0 and lo < x < hi for lo, hi, t, g in ev)
        if fs.minmax > x:  # every path delivered a PSN above x: x's path is past it
            return True
        return any(lo < x < hi for lo, hi, _, _ in ev) if ev else False

    def hold_ps(self) -> int:
        """The hold time: ``hold_timeout``, or the adaptive one (see the module doc)."""
        hold = self.hold_param
        if not hold:
            hold = 2 * self.maxq
            if hold > HOLD_CAP_PS:
                hold = HOLD_CAP_PS
            elif hold < HOLD_FLOOR_PS:
                hold = HOLD_FLOOR_PS
        if hold > self.max_hold:
            self.max_hold = hold
        return hold

    def hold_for(self, fs: FlowTrack, x: int) -> int:
        """Hold time for x; when x's recovery was already requested, plus the round trip
        from that request to the retransmission's arrival here: 2 x the flow's minimum
        one-way delay for a NACK this ToR forwarded (nack_filter); for a flush (reorder) also
        the hop to the NIC and the NIC's NACK back through this ToR
        (``rerequest_extra_ps``). Without those two hops the re-flush fired just before the
        retransmission arrived: a second NACK, i.e. a second go-back-N rewind, for most
        losses."""
        hold = self.hold_ps()
        if fs.fwd_x <= x <= fs.fwd_hi:
            hold += 2 * fs.min_owd + self.rerequest_extra_ps
        return hold

    def arm(self, fs: FlowTrack, deadline: int) -> None:
        """Set the flow's hold deadline; one timer event at a time per flow (a timer that
        fires early re-arms itself for the current deadline)."""
        fs.deadline = deadline
        if not fs.timer_armed:
            fs.timer_armed = True
            self.sim.at(deadline, self.timer_cb, fs)
