"""Destination ToR, mode ``nack_filter`` (selective-repeat RNICs): pass data at once, mirror
what the RNIC accepted, and keep NACKs for reordering (not loss) from reaching the sender.

``low`` is the lowest PSN that has not passed, with a ``window``-bit ring of the PSNs passed
above it. "Passed" means *accepted by the RNIC*: the ToR's downlink is a FIFO, so the ToR
mirrors the receiver exactly: a packet dropped by the ToR's own downlink port, or beyond the
RNIC's out-of-order bitmap (``nic_bitmap``; default: the transport's ``ooo_bitmap_packets``
for selective repeat, 1 for go-back-N), does not pass and is known lost. Without this, a NACK
for a PSN that passed the ToR but was discarded by the NIC would be dropped as stale and the
flow would stall until the sender's RTO. Hence ``low`` is the receiver's ePSN once the
downlink drains. ``nic_bitmap`` must be the NIC's real bitmap: smaller causes spurious
retransmissions, larger can stall a flow until its RTO. The window is widened to the bitmap
if narrower (a narrower one could not mirror the NIC); a PSN beyond the window (ideal
transport) slides it forward, and NACKs for the skipped PSNs are forwarded (unknown).

A NACK(x) (or a CNP sent for an out-of-order arrival, i.e. without the ECN echo) leaving the
receiver through its ToR is:

* dropped if x < ``low`` (x passed: stale; also every NACK of a flow that completed at the
  ToR);
* forwarded if a loss bracket contains x, or if every path has delivered a PSN > x (x's
  first transmission went on some FIFO path before every later PSN on it, so x is lost);
* else held (one hold slot per flow; a duplicate NACK from the NIC's NACK timer is merged,
  i.e. dropped), then dropped when x passes, forwarded when new loss evidence covers x, or
  forwarded after ``hold_timeout`` (plus a round trip when x's recovery was already
  requested: ``DestinationTracker.hold_for``).

Once a NACK(x) was forwarded, a later NACK for the same x is forwarded only on new evidence
(``DestinationTracker.lost``). Retransmissions below ``low`` pass untouched.

Extension beyond the original spec (docs/schemes.md; ``retarget``, default on; off = plain
drop): a NACK that would be dropped because x passed is instead sent as NACK(``low``) when
``low`` is known lost. It is the NACK the NIC would send at its next out-of-order arrival; but
at a flow's tail, or while the sender is window-blocked, no arrival comes, and two close
losses (or a loss behind a bitmap overrun) would cost the sender's RTO. NACK(``low``) is
truthful: every PSN below ``low`` has passed and the NIC will accept it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spraylab.lb.tor_assist.counters import TorCounters
from spraylab.lb.tor_assist.params import RETIRED
from spraylab.lb.tor_assist.tracker import DestinationTracker, FlowTrack
from spraylab.net.drops import TOR_FILTER
from spraylab.net.packet import NACK
from spraylab.net.port import sim_drop

if TYPE_CHECKING:
    from spraylab.net.packet import Packet
    from spraylab.net.switch import Switch


class FilterFlow(FlowTrack):
    """A flow's state in ``nack_filter`` mode: the passed-PSN ring and the hold slot."""

    __slots__ = ("bits", "unknown_below", "held", "held_x")

    def __init__(self, fid: int, n_packets: int, n_paths: int, window: int) -> None:
        super().__init__(fid, n_packets, n_paths, window)
        self.bits = bytearray(window)
        self.unknown_below = 0  # PSNs below it were skipped by a window slide: NACKs pass
        self.held: list[Packet] | None = None  # held control packets for PSN held_x
        self.held_x = -1


class NackFilter:
    """The ``nack_filter`` destination role of one ToR (see the module doc)."""

    __slots__ = ("sim", "switch", "tracker", "counters", "window", "nic_w", "retarget_on")

    def __init__(
        self,
        switch: Switch,
        tracker: DestinationTracker,
        counters: TorCounters,
        window: int,
        nic_w: int,
        retarget: bool,
    ) -> None:
        self.sim = switch.sim
        self.switch = switch
        self.tracker = tracker
        self.counters = counters
        self.window = window
        self.nic_w = nic_w
        self.retarget_on = retarget
        tracker.flow_cls = FilterFlow
        tracker.timer_cb = self.on_timer

    # --- data toward the attached host ----------------------------------------------------
    def track(self, switch: Switch, pkt: Packet) -> bool:
        tracker = self.tracker
        fs = tracker.state(pkt)
        if fs is RETIRED:
            return True
        now = self.sim.now
        tracker.observe(fs, pkt, now)
        psn = pkt.psn
        port = switch.table[pkt.dst][0]
        drops = port.drops
        port.send(pkt)
        low = fs.low
        if psn >= low:
            if port.drops != drops:  # dropped by this ToR's downlink: the NIC never sees it
                self.counters.last_hop_drops += 1
                tracker.evidence(fs, psn - 1, psn + 1, now, False)
            elif psn >= low + self.nic_w:  # beyond the NIC's out-of-order bitmap: discarded
                self.counters.nic_discards += 1
                tracker.evidence(fs, psn - 1, psn + 1, now, False)
            else:
                self._passed(fs, psn)
        if fs.held_x >= 0:
            self._resolve(fs, now)
        if fs.low >= fs.n_packets and fs.held_x < 0:
            tracker.retire(fs)
        return False

    def _passed(self, fs: FilterFlow, psn: int) -> None:
        w = self.window
        bits = fs.bits
        low = fs.low
        if psn >= low + w:  # beyond the tracked window (only when the NIC accepts more): slide
            new_low = psn - w + 1
            if new_low - low >= w:
                bits[:] = bytes(w)
            else:
                for q in range(low, new_low):
                    bits[q % w] = 0
            low = fs.low = fs.unknown_below = new_low
            self.counters.window_slides += 1
            bits[psn % w] = 1
            psn = low  # advance over what had passed above the new low
        else:
            bits[psn % w] = 1
        if psn == low:
            i = low % w
            while bits[i]:
                bits[i] = 0
                low += 1
                i = low % w
            fs.low = low

    def _resolve(self, fs: FilterFlow, now: int) -> None:
        """Held NACK(x): drop once x passed; forward once x is known lost."""
        x = fs.held_x
        counters = self.counters
        if fs.low > x:
            if self.retarget_on:
                for pkt in fs.held:  # type: ignore[union-attr]
                    if pkt.kind == NACK and self._retarget(fs, pkt, now):
                        fs.held.remove(pkt)  # type: ignore[union-attr]
                        counters.held -= 1
                        self.switch.forward(pkt)
                        break
            counters.nacks_dropped_passed += self._drop_held(fs)
        elif (fs.minmax > x or fs.ev) and self.tracker.lost(fs, x):
            counters.nacks_released_loss += self._release_held(fs, now)

    def _retarget(self, fs: FilterFlow, pkt: Packet, now: int) -> bool:
        """A NACK whose PSN passed: if the receiver's next expected PSN (``low``) is known
        lost, turn it into NACK(low), the NACK the NIC would send at its next out-of-order
        arrival (which never comes at a flow's tail or while the sender is window-blocked)."""
        low = fs.low
        if not ((fs.minmax > low or fs.ev) and self.tracker.lost(fs, low)):
            return False
        pkt.psn = low
        fs.fwd_x = fs.fwd_hi = low
        fs.fwd_t = now
        self.counters.nacks_retargeted += 1
        return True

    def _drop_held(self, fs: FilterFlow) -> int:
        held: list[Packet] = fs.held  # type: ignore[assignment]
        n_nack = 0
        for pkt in held:
            if pkt.kind == NACK:
                n_nack += 1
            else:
                self.counters.cnps_dropped += 1
            sim_drop(self.sim, pkt, TOR_FILTER)
        self.counters.held -= len(held)
        fs.held = None
        fs.held_x = -1
        fs.deadline = -1
        return n_nack

    def _release_held(self, fs: FilterFlow, now: int) -> int:
        held: list[Packet] = fs.held  # type: ignore[assignment]
        x = fs.held_x
        fs.held = None
        fs.held_x = -1
        fs.deadline = -1
        self.counters.held -= len(held)
        n_nack = 0
        forward = self.switch.forward
        for pkt in held:
            if pkt.kind == NACK:
                n_nack += 1
            else:
                self.counters.cnps_forwarded += 1
            forward(pkt)
        if n_nack:
            fs.fwd_x = fs.fwd_hi = x
            fs.fwd_t = now
        return n_nack

    # --- NACKs and out-of-order CNPs from the attached host -------------------------------
    def filter(self, switch: Switch, pkt: Packet) -> bool:
        fs: Any = self.tracker.dst.get(pkt.flow_id)
        c = self.counters
        is_nack = pkt.kind == NACK
        if fs is None:
            if is_nack:
                c.nacks_forwarded_untracked += 1
            else:
                c.cnps_forwarded += 1
            return True
        x = pkt.psn
        now = self.sim.now
        if fs is RETIRED or x < fs.low:  # retired: every PSN passed, the NIC took them all
            if fs is RETIRED or x >= fs.unknown_below:  # x passed the ToR and the NIC took it: stale
                if is_nack and self.retarget_on and fs is not RETIRED and self._retarget(fs, pkt, now):
                    return True
                if is_nack:
                    c.nacks_dropped_stale += 1
                else:
                    c.cnps_dropped += 1
                sim_drop(self.sim, pkt, TOR_FILTER)
                return False
            if is_nack:
                c.nacks_forwarded_untracked += 1
            else:
                c.cnps_forwarded += 1
            return True
        if x == fs.low and fs.held_x != x:
            if (fs.minmax > x or fs.ev) and self.tracker.lost(fs, x):
                if is_nack:
                    c.nacks_forwarded_loss += 1
                    fs.fwd_x = fs.fwd_hi = x
                    fs.fwd_t = now
                else:
                    c.cnps_forwarded += 1
                return True
        elif x != fs.held_x:  # x above the receiver's ePSN: cannot happen with an exact mirror
            if is_nack:
                c.nacks_forwarded_untracked += 1
            else:
                c.cnps_forwarded += 1
            return True
        # hold (x is most likely still in flight on a slower path)
        if fs.held_x == x:
            held = fs.held
            if any(h.kind == pkt.kind for h in held):
                if is_nack:
                    c.nacks_merged += 1
                else:
                    c.cnps_dropped += 1
                sim_drop(self.sim, pkt, TOR_FILTER)
                return False
            held.append(pkt)
        else:
            if fs.held_x >= 0:  # defensive: an older hold cannot outlive its PSN passing
                c.nacks_released_loss += self._release_held(fs, now)
            fs.held = [pkt]
            fs.held_x = x
            self.tracker.arm(fs, now + self.tracker.hold_for(fs, x))
        if is_nack:
            c.nacks_held += 1
        c.held += 1
        return False

    def on_timer(self, fs: FilterFlow) -> None:
        fs.timer_armed = False
        if fs.held_x < 0:
            return
        now = self.sim.now
        if now < fs.deadline:
            self.tracker.arm(fs, fs.deadline)
            return
        self.counters.nacks_timed_out += self._release_held(fs, now)
