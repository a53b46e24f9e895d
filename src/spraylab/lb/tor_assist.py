"""ToR-assisted packet spraying over commodity RNICs (docs/schemes.md, ToR-assisted spraying).

Every packet of a flow is sprayed over the source ToR's uplinks, and the RNICs stay
unmodified: the **destination** ToR tells reordering from loss and hides reordering from them.
A program runs on every ToR (tier-1 switch with attached hosts); every other switch keeps the
network's default (ECMP) selector.

**Source ToR** (data from an attached host to a remote host). Per flow it picks an uplink
among the equal-cost candidates toward the destination (``uplink``: per-flow round-robin
from a random offset, uniform random, or the least-queued candidate; a port whose link is
down is skipped) and stamps ``path_id`` = the uplink's index in ``switch.uplinks`` and
``path_seq`` = that flow's packet count on that path. **Every** packet is stamped,
retransmissions included: the destination then sees an unbroken sequence per path, so a
gap always means a loss on that path, and a lost *retransmission* is detected like any other
loss (this is what lets the destination re-forward a NACK for a PSN whose retransmission was
lost, instead of waiting for a timeout). In a 2-tier leaf-spine the uplink is the path (a
spine has one down-port per leaf); in deeper fabrics the uplink picks the first hop and the
other switches hash the flow's fixed 5-tuple (ECMP), so each ``path_id`` is still one FIFO
path.

**Destination ToR** (stamped data from an uplink to an attached host), per flow:

* per path: last ``path_seq`` and highest PSN seen (``seq``, ``pmax``), and the minimum of
  ``pmax`` over the source ToR's paths (``minmax``, maintained incrementally);
* ``low`` = lowest PSN that has not passed, and a ``window``-bit ring of the PSNs passed
  above it. "Passed" means *accepted by the RNIC*: the ToR's downlink is a FIFO, so the ToR
  mirrors the receiver exactly: a packet dropped by the ToR's own downlink port, or beyond
  the RNIC's out-of-order bitmap (``nic_bitmap``; default: the transport's
  ``ooo_bitmap_packets`` for selective repeat, 1 for go-back-N), does not pass and is known
  lost. Without this, a NACK for a PSN that passed the ToR but was discarded by the NIC
  would be dropped as stale and the flow would stall until the sender's RTO. Hence ``low``
  is the receiver's ePSN once the downlink drains. ``nic_bitmap`` must be the NIC's real
  bitmap: smaller causes spurious retransmissions, larger can stall a flow until its RTO.
  In ``nack_filter`` mode the window is widened to the bitmap if narrower (a narrower one
  could not mirror the NIC); a PSN beyond the window (ideal transport) slides it forward,
  and NACKs for the skipped PSNs are forwarded (unknown).
* loss evidence: each ``path_seq`` gap records the PSN bracket (previous ``pmax`` of the
  path, arriving PSN) the lost packets lie in, and the send time of the packet revealing it
  (the lost packets were sent before it); packets dropped/discarded after the ToR record
  their own PSN and the time of the drop.

Mode ``nack_filter`` (selective-repeat RNICs). A NACK(x) (or a CNP sent for an out-of-order
arrival, i.e. without the ECN echo) leaving the receiver through its ToR is:

* dropped if x < ``low`` (x passed: stale; also every NACK of a flow that completed at the
  ToR);
* forwarded if a loss bracket contains x, or if every path has delivered a PSN > x (x's
  first transmission went on some FIFO path before every later PSN on it, so x is lost);
* else held (one hold slot per flow; a duplicate NACK from the NIC's NACK timer is merged,
  i.e. dropped), then dropped when x passes, forwarded when new loss evidence covers x, or
  forwarded after ``hold_timeout``.

Once a NACK(x) was forwarded the sender retransmits x, so a later NACK for the same x is not
forwarded on old evidence or on "every path past x" (true again at once): only on new
evidence, i.e. an exact loss of x after the request, or a path gap (it may be the lost
retransmission) revealed by a packet sent at least a one-way delay (the flow's minimum)
after the request: the retransmission leaves the sender only once the request reached it,
so a gap revealed by an earlier packet is some other loss (typically the next one in the
same window) and must not trigger a second recovery of x. Or after ``hold_timeout`` plus a
round trip (see ``_hold_for``).
Retransmissions below ``low`` pass untouched.

Extension beyond the original spec (docs/schemes.md; ``retarget``, default on; off = plain drop): a NACK
that would be dropped because x passed is instead sent as NACK(``low``) when ``low`` is
known lost. It is the NACK the NIC would send at its next out-of-order arrival; but at a
flow's tail, or while the sender is window-blocked, no arrival comes, and two close losses
(or a loss behind a bitmap overrun) would cost the sender's RTO. NACK(``low``) is truthful:
every PSN below ``low`` has passed and the NIC will accept it.

Mode ``reorder`` (go-back-N RNICs). Out-of-order packets wait in a per-flow resequencing
ring (``window`` packets) and leave in PSN order. The gap at the head (``low``) waits at most
``hold_timeout`` (restarted when the head advances); a known loss of the head (bracket, or
every path past it) or the timeout flushes the held packets in PSN order: the NIC discards
them and NACKs as usual (if nothing is held, the next out-of-order arrival is passed through
to trigger the NACK). The sender then goes back to the head and resends everything, so
after a flush the heads up to the highest PSN seen wait for their retransmission (hold +
a round trip) and are not flushed again on old evidence (same rule as above). Each extra
flush makes the NIC discard and NACK again, i.e. one more go-back-N rewind of a window of
packets already resent (and, 50 µs after the last one, one more out-of-order CNP halving the
sender's rate): the round trip and the evidence rule above keep it to one NACK per
loss. A packet beyond the ring is dropped
(counted) and recorded as lost:
the go-back-N NIC would have discarded it anyway, without a NACK storm. Duplicates of a held
PSN are dropped. Held packets do not count against the switch's shared buffer (reported
separately: ``reseq_peak_bytes``).

``hold_timeout`` = 0 (default) adapts: 2 x the largest queueing delay the ToR has seen,
capped at 100 µs and floored at 1 µs (before any queue forms, 2 x 0 would release at once).
Queueing delay = a packet's one-way delay (arrival at the destination ToR - NIC send time)
minus the flow's minimum: it covers the source uplink and the spine queues, i.e. the delay
difference between paths that reordering comes from.

Flow state is created at a ToR on a flow's first packet and retired when the flow is complete
at that ToR (destination: every PSN passed; source: the ACK of the whole message passes
back), leaving a tombstone so late duplicates pass untouched. ``stats()`` reports the
decisions, state sizes and peaks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from spraylab.lb.base import LbParams, LoadBalancer, register
from spraylab.net.drops import NO_ROUTE, RESEQUENCER, TOR_FILTER
from spraylab.net.packet import ACK, CNP, DATA, NACK
from spraylab.net.port import sim_drop
from spraylab.units import parse_time_ps

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.net.switch import Switch

PS_PER_US = 1_000_000
HOLD_CAP_PS = 100 * PS_PER_US
HOLD_FLOOR_PS = 1 * PS_PER_US
NO_LIMIT = 1 << 62


class TorAssistParams(LbParams):
    mode: Literal["auto", "nack_filter", "reorder"] = Field(
        default="auto",
        description="nack_filter: selective-repeat RNICs; reorder: go-back-N RNICs; auto: by transport.recovery",
    )
    uplink: Literal["random", "round_robin", "least_queued"] = Field(
        default="round_robin", description="uplink choice per packet at the source ToR"
    )
    hold_timeout: int = Field(
        default=0, ge=0, description="ps (or a string like '20us'); 0 = 2x largest queueing delay, <= 100 us"
    )
    window: int = Field(
        default=256, ge=1, le=1 << 16, description="packets tracked above the lowest unseen PSN"
    )
    retarget: bool = Field(
        default=True,
        description="nack_filter: a NACK whose PSN passed becomes NACK(ePSN) when that PSN is known lost",
    )
    nic_bitmap: int = Field(
        default=0,
        ge=0,
        description="RNIC out-of-order bitmap the ToR mirrors; 0 = from the transport settings",
    )

    @field_validator("hold_timeout", mode="before")
    @classmethod
    def _time(cls, value: Any) -> Any:
        return parse_time_ps(value) if isinstance(value, str) else value


class _Src:
    """Source-ToR state of one flow: packets sent per path and the round-robin pointer."""

    __slots__ = ("seq", "rr")

    def __init__(self, n_uplinks: int, rr: int) -> None:
        self.seq = [0] * n_uplinks
        self.rr = rr


class _Dst:
    """Destination-ToR state of one flow (see the module docstring)."""

    __slots__ = (
        "fid",
        "n_packets",
        "seq",
        "pmax",
        "minmax",
        "low",
        "bits",
        "unknown_below",
        "ev",
        "fwd_x",
        "fwd_hi",
        "fwd_t",
        "min_owd",
        # nack_filter: held control packets for PSN held_x
        "held",
        "held_x",
        # timer (hold deadline of the held NACK / of the resequencing head)
        "deadline",
        "timer_armed",
        # reorder
        "buf",
        "nheld",
        "held_bytes",
        "hi",
        "pass_next",
    )

    def __init__(self, tor: _TorProgram, fid: int, n_packets: int, n_paths: int, window: int) -> None:
        self.fid = fid
        self.n_packets = n_packets
        self.seq = [-1] * n_paths
        self.pmax = [-1] * n_paths
        self.minmax = -1
        self.low = 0
        self.bits = bytearray(window) if tor.filter else None
        self.unknown_below = 0
        self.ev: list[tuple[int, int, int, bool]] | None = None  # (lo, hi, time, path gap?)
        self.fwd_x = -1  # recovery requested (NACK forwarded / flushed) for PSNs fwd_x..fwd_hi
        self.fwd_hi = -2
        self.fwd_t = -1
        self.min_owd = NO_LIMIT
        self.held: list[Packet] | None = None
        self.held_x = -1
        self.deadline = -1
        self.timer_armed = False
        self.buf: list[Packet | None] | None = None
        self.nheld = 0
        self.held_bytes = 0
        self.hi = -1
        self.pass_next = False


_RETIRED: Any = object()  # tombstone of a completed flow


class _TorProgram:
    """The program of one ToR (``switch.program``): both the source and the destination role."""

    __slots__ = (
        "lb",
        "switch",
        "sim",
        "attached",
        "filter",
        "window",
        "nic_w",
        "uplink_mode",
        "hold_param",
        "src",
        "dst",
        "maxq",
        "bytes",
        "peak_bytes",
        "live_src",
        "live_dst",
        "peak_flows",
        "max_hold",
        "retarget",
        "host_hop",
        "_rng",
        "_timer_cb",
    )

    def __init__(self, lb: TorAssist, switch: Switch, n_hosts: int, window: int, nic_w: int) -> None:
        params: TorAssistParams = lb.params  # type: ignore[assignment]
        self.lb = lb
        self.switch = switch
        self.sim = switch.sim
        self.attached = bytearray(n_hosts)
        for h in switch.hosts:
            self.attached[h] = 1
        self.filter = lb.mode == "nack_filter"
        self.window = window
        self.nic_w = nic_w
        self.uplink_mode = params.uplink
        self.hold_param = params.hold_timeout
        self.retarget = params.retarget and self.filter
        self.src: dict[int, Any] = {}
        self.dst: dict[int, Any] = {}
        self.maxq = 0
        self.bytes = 0
        self.peak_bytes = 0
        self.live_src = 0
        self.live_dst = 0
        self.peak_flows = 0
        self.max_hold = 0
        # propagation delay to the attached NICs (a flush's round trip crosses it twice)
        self.host_hop = max((switch.table[h][0].delay_ps for h in switch.hosts), default=0)
        self._rng = lb.rng
        self._timer_cb = self._on_timer if self.filter else self._on_reseq_timer

    # --- dispatch -----------------------------------------------------------------------
    def on_packet(self, switch: Switch, pkt: Packet) -> bool:
        kind = pkt.kind
        attached = self.attached
        if kind == DATA:
            if attached[pkt.src]:
                if attached[pkt.dst]:
                    return True
                return self._spray(switch, pkt)
            if attached[pkt.dst] and pkt.path_id >= 0:
                return self._track(switch, pkt) if self.filter else self._reseq(switch, pkt)
            return True
        if kind == ACK:
            if attached[pkt.dst] and pkt.psn >= pkt.qp.n_packets and not attached[pkt.src]:
                self._retire_src(pkt.qp.flow_id)
            return True
        if (
            self.filter
            and (kind == NACK or (kind == CNP and not pkt.ecn))
            and attached[pkt.src]
            and not attached[pkt.dst]
        ):
            return self._filter(switch, pkt)
        return True

    def _note_flows(self) -> None:
        live = self.live_src + self.live_dst
        if live > self.peak_flows:
            self.peak_flows = live

    def hold_ps(self) -> int:
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

    # --- source ToR: spray and stamp ------------------------------------------------------
    def _spray(self, switch: Switch, pkt: Packet) -> bool:
        fid = pkt.qp.flow_id
        st = self.src.get(fid)
        if st is None:
            n = len(switch.uplinks)
            st = self.src[fid] = _Src(n, int(self._rng() * n))
            self.live_src += 1
            self._note_flows()
        elif st is _RETIRED:
            return True
        cands = switch.table[pkt.dst]
        # The route group's state: each candidate's path id (its index in switch.uplinks,
        # -1 if it is no uplink); a reroute clears it.
        paths = cands.state
        if paths is None:
            index = {id(p): i for i, p in enumerate(switch.uplinks)}
            paths = cands.state = [index.get(id(p), -1) for p in cands]
        n = len(cands)
        if n == 0:
            sim_drop(self.sim, pkt, NO_ROUTE)
            return False
        mode = self.uplink_mode
        if mode == "round_robin":
            i = st.rr % n
            st.rr = i + 1
        elif mode == "random":
            i = int(self._rng() * n)
        else:
            start = st.rr % n
            st.rr = start + 1
            i = start
            best = NO_LIMIT
            for k in range(n):
                j = start + k
                if j >= n:
                    j -= n
                port = cands[j]
                if port.up:
                    q = port.queue_bytes()
                    if q < best:
                        best = q
                        i = j
        port = cands[i]
        if not port.up:  # local link down (before reconvergence): try the next live candidate
            for k in range(1, n):
                j = (i + k) % n
                if cands[j].up:
                    i = j
                    port = cands[j]
                    break
        path = paths[i]
        if path < 0:  # not an uplink (e.g. a direct route): plain forwarding
            port.send(pkt)
            return False
        seq = st.seq
        pkt.path_id = path
        pkt.path_seq = seq[path]
        seq[path] += 1
        port.send(pkt)
        return False

    def _retire_src(self, fid: int) -> None:
        st = self.src.get(fid)
        if st is not None and st is not _RETIRED:
            self.src[fid] = _RETIRED
            self.live_src -= 1

    # --- destination ToR: common per-packet bookkeeping -------------------------------------
    def _dst_state(self, pkt: Packet) -> Any:
        qp = pkt.qp
        fid = qp.flow_id
        fs = self.dst.get(fid)
        if fs is None:
            n_paths = self.lb.paths_of_host[pkt.src]
            fs = self.dst[fid] = _Dst(self, fid, qp.n_packets, n_paths, self.window)
            self.live_dst += 1
            self.lb.dst_paths_max = max(self.lb.dst_paths_max, n_paths)
            self._note_flows()
        return fs

    def _observe(self, fs: _Dst, pkt: Packet, now: int) -> None:
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
                lb = self.lb
                lb.path_gaps += 1
                lb.path_lost_packets += s - last - 1
                if m < psn:
                    self._evidence(fs, m, psn, pkt.sent_ps, True)
                else:
                    self._evidence(fs, psn, m, pkt.sent_ps, True)
            seq[p] = s
        if psn > m:
            pmax[p] = psn
            if m == fs.minmax:
                fs.minmax = min(pmax)

    def _evidence(self, fs: _Dst, lo: int, hi: int, t: int, gap: bool) -> None:
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

    def _lost(self, fs: _Dst, x: int) -> bool:
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

    def _hold_for(self, fs: _Dst, x: int) -> int:
        """Hold time for x; when x's recovery was already requested, plus the round trip
        from that request to the retransmission's arrival here: 2 x the flow's minimum
        one-way delay for a NACK this ToR forwarded (nack_filter); for a flush (reorder) also
        the hop to the NIC and the NIC's NACK back through this ToR. Without those two hops
        the re-flush fired just before the retransmission arrived: a second NACK, i.e. a
        second go-back-N rewind, for most losses."""
        hold = self.hold_ps()
        if fs.fwd_x <= x <= fs.fwd_hi:
            hold += 2 * fs.min_owd
            if not self.filter:
                hold += 2 * self.host_hop
        return hold

    def _arm(self, fs: _Dst, deadline: int) -> None:
        fs.deadline = deadline
        if not fs.timer_armed:
            fs.timer_armed = True
            self.sim.at(deadline, self._timer_cb, fs)

    def _retire_dst(self, fs: _Dst) -> None:
        self.dst[fs.fid] = _RETIRED
        self.live_dst -= 1

    # --- destination ToR, mode nack_filter ---------------------------------------------------
    def _track(self, switch: Switch, pkt: Packet) -> bool:
        fs = self._dst_state(pkt)
        if fs is _RETIRED:
            return True
        now = self.sim.now
        self._observe(fs, pkt, now)
        psn = pkt.psn
        port = switch.table[pkt.dst][0]
        drops = port.drops
        port.send(pkt)
        low = fs.low
        if psn >= low:
            if port.drops != drops:  # dropped by this ToR's downlink: the NIC never sees it
                self.lb.last_hop_drops += 1
                self._evidence(fs, psn - 1, psn + 1, now, False)
            elif psn >= low + self.nic_w:  # beyond the NIC's out-of-order bitmap: discarded
                self.lb.nic_discards += 1
                self._evidence(fs, psn - 1, psn + 1, now, False)
            else:
                self._passed(fs, psn)
        if fs.held_x >= 0:
            self._resolve(fs, now)
        if fs.low >= fs.n_packets and fs.held_x < 0:
            self._retire_dst(fs)
        return False

    def _passed(self, fs: _Dst, psn: int) -> None:
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
            self.lb.window_slides += 1
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

    def _resolve(self, fs: _Dst, now: int) -> None:
        """Held NACK(x): drop once x passed; forward once x is known lost."""
        x = fs.held_x
        lb = self.lb
        if fs.low > x:
            if self.retarget:
                for pkt in fs.held:
                    if pkt.kind == NACK and self._retarget(fs, pkt, now):
                        fs.held.remove(pkt)
                        lb.held -= 1
                        self.switch.forward(pkt)
                        break
            lb.nacks_dropped_passed += self._drop_held(fs)
        elif (fs.minmax > x or fs.ev) and self._lost(fs, x):
            lb.nacks_released_loss += self._release_held(fs, now)

    def _retarget(self, fs: _Dst, pkt: Packet, now: int) -> bool:
        """A NACK whose PSN passed: if the receiver's next expected PSN (``low``) is known
        lost, turn it into NACK(low), the NACK the NIC would send at its next out-of-order
        arrival (which never comes at a flow's tail or while the sender is window-blocked)."""
        low = fs.low
        if not ((fs.minmax > low or fs.ev) and self._lost(fs, low)):
            return False
        pkt.psn = low
        fs.fwd_x = fs.fwd_hi = low
        fs.fwd_t = now
        self.lb.nacks_retargeted += 1
        return True

    def _drop_held(self, fs: _Dst) -> int:
        held = fs.held
        n_nack = 0
        for pkt in held:
            if pkt.kind == NACK:
                n_nack += 1
            else:
                self.lb.cnps_dropped += 1
            sim_drop(self.sim, pkt, TOR_FILTER)
        self.lb.held -= len(held)
        fs.held = None
        fs.held_x = -1
        fs.deadline = -1
        return n_nack

    def _release_held(self, fs: _Dst, now: int) -> int:
        held = fs.held
        x = fs.held_x
        fs.held = None
        fs.held_x = -1
        fs.deadline = -1
        self.lb.held -= len(held)
        n_nack = 0
        forward = self.switch.forward
        for pkt in held:
            if pkt.kind == NACK:
                n_nack += 1
            else:
                self.lb.cnps_forwarded += 1
            forward(pkt)
        if n_nack:
            fs.fwd_x = fs.fwd_hi = x
            fs.fwd_t = now
        return n_nack

    def _filter(self, switch: Switch, pkt: Packet) -> bool:
        fs = self.dst.get(pkt.qp.flow_id)
        lb = self.lb
        is_nack = pkt.kind == NACK
        if fs is None:
            if is_nack:
                lb.nacks_forwarded_untracked += 1
            else:
                lb.cnps_forwarded += 1
            return True
        x = pkt.psn
        now = self.sim.now
        if fs is _RETIRED or x < fs.low:  # retired: every PSN passed, the NIC took them all
            if fs is _RETIRED or x >= fs.unknown_below:  # x passed the ToR and the NIC took it: stale
                if is_nack and self.retarget and fs is not _RETIRED and self._retarget(fs, pkt, now):
                    return True
                if is_nack:
                    lb.nacks_dropped_stale += 1
                else:
                    lb.cnps_dropped += 1
                sim_drop(self.sim, pkt, TOR_FILTER)
                return False
            if is_nack:
                lb.nacks_forwarded_untracked += 1
            else:
                lb.cnps_forwarded += 1
            return True
        if x == fs.low and fs.held_x != x:
            if (fs.minmax > x or fs.ev) and self._lost(fs, x):
                if is_nack:
                    lb.nacks_forwarded_loss += 1
                    fs.fwd_x = fs.fwd_hi = x
                    fs.fwd_t = now
                else:
                    lb.cnps_forwarded += 1
                return True
        elif x != fs.held_x:  # x above the receiver's ePSN: cannot happen with an exact mirror
            if is_nack:
                lb.nacks_forwarded_untracked += 1
            else:
                lb.cnps_forwarded += 1
            return True
        # hold (x is most likely still in flight on a slower path)
        if fs.held_x == x:
            held = fs.held
            if any(h.kind == pkt.kind for h in held):
                if is_nack:
                    lb.nacks_merged += 1
                else:
                    lb.cnps_dropped += 1
                sim_drop(self.sim, pkt, TOR_FILTER)
                return False
            held.append(pkt)
        else:
            if fs.held_x >= 0:  # defensive: an older hold cannot outlive its PSN passing
                lb.nacks_released_loss += self._release_held(fs, now)
            fs.held = [pkt]
            fs.held_x = x
            self._arm(fs, now + self._hold_for(fs, x))
        if is_nack:
            lb.nacks_held += 1
        lb.held += 1
        return False

    def _on_timer(self, fs: _Dst) -> None:
        fs.timer_armed = False
        if fs.held_x < 0:
            return
        now = self.sim.now
        if now < fs.deadline:
            self._arm(fs, fs.deadline)
            return
        self.lb.nacks_timed_out += self._release_held(fs, now)

    # --- destination ToR, mode reorder -------------------------------------------------------
    def _reseq(self, switch: Switch, pkt: Packet) -> bool:
        fs = self._dst_state(pkt)
        if fs is _RETIRED:
            return True
        now = self.sim.now
        self._observe(fs, pkt, now)
        psn = pkt.psn
        exp = fs.low
        lb = self.lb
        if psn < exp:  # retransmission / duplicate below the window: untouched
            switch.table[pkt.dst][0].send(pkt)
            return False
        if psn == exp:
            self._release_run(fs, pkt, now)
            if fs.low >= fs.n_packets:
                self._retire_dst(fs)
                return False
        elif fs.pass_next:  # head known lost and nothing held: let the NIC see a gap now
            fs.pass_next = False
            lb.reseq_passed_ooo += 1
            switch.table[pkt.dst][0].send(pkt)
            return False
        else:
            w = self.window
            if psn >= exp + w:
                lb.reseq_overflow_drops += 1
                self._evidence(fs, psn - 1, psn + 1, now, False)
                sim_drop(self.sim, pkt, RESEQUENCER)
                return False
            buf = fs.buf
            if buf is None:
                buf = fs.buf = [None] * w
            i = psn % w
            if buf[i] is not None:
                lb.reseq_duplicate_drops += 1
                sim_drop(self.sim, pkt, RESEQUENCER)
                return False
            buf[i] = pkt
            lb.reseq_held_packets += 1
            lb.held += 1
            fs.nheld += 1
            fs.held_bytes += pkt.size
            if psn > fs.hi:
                fs.hi = psn
            size = self.bytes + pkt.size
            self.bytes = size
            if size > self.peak_bytes:
                self.peak_bytes = size
            if fs.nheld == 1:
                self._arm(fs, now + self._hold_for(fs, exp))
        if fs.nheld:
            exp = fs.low
            if (fs.minmax > exp or fs.ev) and self._lost(fs, exp):
                lb.reseq_flush_loss += 1
                self._flush(fs, now)
        return False

    def _release_run(self, fs: _Dst, pkt: Packet, now: int) -> None:
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
            buf = fs.buf
            released = 0
            freed = 0
            i = exp % w
            q = buf[i]
            while q is not None:
                buf[i] = None
                released += 1
                freed += q.size
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
            self._arm(fs, now + self._hold_for(fs, exp))
        else:
            fs.deadline = -1
            fs.hi = -1

    def _unhold(self, fs: _Dst, released: int, freed: int) -> None:
        self.lb.held -= released
        fs.nheld -= released
        fs.held_bytes -= freed
        self.bytes -= freed

    def _lost_at_last_hop(self, fs: _Dst, psn: int, now: int) -> None:
        """The ToR's own downlink dropped ``psn``: the NIC's ePSN stays there."""
        self.lb.last_hop_drops += 1
        fs.low = psn
        self._evidence(fs, psn - 1, psn + 1, now, False)
        self.lb.reseq_flush_loss += 1
        self._flush(fs, now)

    def _flush(self, fs: _Dst, now: int) -> None:
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
        buf = fs.buf
        send = None
        released = 0
        freed = 0
        for psn in range(fs.low + 1, fs.hi + 1):
            i = psn % w
            q = buf[i]
            if q is not None:
                buf[i] = None
                if send is None:
                    send = self.switch.table[q.dst][0].send
                released += 1
                freed += q.size
                send(q)
        self._unhold(fs, released, freed)
        self.lb.reseq_flushed_packets += released
        fs.hi = -1

    def _on_reseq_timer(self, fs: _Dst) -> None:
        fs.timer_armed = False
        if fs.deadline < 0 or not fs.nheld:
            return
        now = self.sim.now
        if now < fs.deadline:
            self._arm(fs, fs.deadline)
            return
        self.lb.reseq_flush_timeout += 1
        self._flush(fs, now)


@register
class TorAssist(LoadBalancer):
    name = "tor_assist"
    where = "tor"
    summary = "source ToR sprays and stamps (path, seq); destination ToR filters NACKs or resequences"
    Params = TorAssistParams

    def __init__(self, params: LbParams | None = None) -> None:
        super().__init__(params)
        self.programs: list[_TorProgram] = []
        self.held = 0
        self.paths_of_host: list[int] = []
        self.dst_paths_max = 0
        self.window_eff = 0
        self.nic_w = 0
        self.mode = self.params.mode  # "auto" is resolved in setup()
        self.rng: Any = None
        # counters
        self.nacks_held = 0
        self.nacks_merged = 0
        self.nacks_dropped_stale = 0
        self.nacks_dropped_passed = 0
        self.nacks_forwarded_loss = 0
        self.nacks_released_loss = 0
        self.nacks_timed_out = 0
        self.nacks_forwarded_untracked = 0
        self.nacks_retargeted = 0
        self.cnps_dropped = 0
        self.cnps_forwarded = 0
        self.path_gaps = 0
        self.path_lost_packets = 0
        self.last_hop_drops = 0
        self.nic_discards = 0
        self.window_slides = 0
        self.reseq_held_packets = 0
        self.reseq_flush_loss = 0
        self.reseq_flush_timeout = 0
        self.reseq_flushed_packets = 0
        self.reseq_overflow_drops = 0
        self.reseq_duplicate_drops = 0
        self.reseq_passed_ooo = 0

    def setup(self, net: Network) -> None:
        super().setup(net)
        params: TorAssistParams = self.params  # type: ignore[assignment]
        self.rng = net.sim.derive_rng(0x70A55).random
        transport = net.transport
        self.mode = params.mode
        if self.mode == "auto":  # the mode that fits the RNICs the scenario has
            self.mode = "reorder" if transport.recovery == "gbn" else "nack_filter"
        if params.nic_bitmap:
            nic_w = params.nic_bitmap
        elif transport.recovery == "sr":
            nic_w = transport.ooo_bitmap_packets
        elif transport.recovery == "gbn":
            nic_w = 1
        else:
            nic_w = NO_LIMIT
        window = params.window
        if self.mode == "nack_filter" and nic_w != NO_LIMIT and window < nic_w:
            window = nic_w  # a narrower window could not mirror the NIC's ePSN (see docstring)
        self.window_eff = window
        self.nic_w = nic_w
        n_hosts = len(net.hosts)
        self.paths_of_host = [0] * n_hosts
        for switch in net.switches.values():
            if switch.tier == 1 and switch.hosts:
                program = _TorProgram(self, switch, n_hosts, window, nic_w)
                switch.program = program
                self.programs.append(program)
                for h in switch.hosts:
                    self.paths_of_host[h] = len(switch.uplinks)

    def held_packets(self) -> int:
        return self.held

    def stats(self) -> dict[str, Any]:
        params: TorAssistParams = self.params  # type: ignore[assignment]
        programs = self.programs
        paths = self.dst_paths_max or max((len(p.switch.uplinks) for p in programs), default=0)
        window = self.window_eff or params.window
        # per-flow table entry at the destination ToR: per path a 32-bit path_seq and a 32-bit
        # PSN, the passed-PSN bitmap (nack_filter), low / held PSN / forwarded PSN / deadline.
        dst_bytes = paths * 8 + 16 + ((window + 7) // 8 if self.mode == "nack_filter" else 0)
        src_bytes = paths * 4 + 2
        out: dict[str, Any] = {
            "tor_mode": self.mode,
            "tor_uplink": params.uplink,
            "tor_window": window,
            "tor_nic_bitmap": self.nic_w if self.nic_w != NO_LIMIT else 0,
            "tor_dst_flow_state_bytes": dst_bytes,
            "tor_src_flow_state_bytes": src_bytes,
            "tor_max_flows_tracked": max((p.peak_flows for p in programs), default=0),
            "tor_flows_tracked_now": sum(p.live_src + p.live_dst for p in programs),
            "tor_max_queue_delay_ps": max((p.maxq for p in programs), default=0),
            "tor_max_hold_timeout_ps": max((p.max_hold for p in programs), default=0),
            "tor_path_gaps": self.path_gaps,
            "tor_path_lost_packets": self.path_lost_packets,
            "tor_last_hop_drops": self.last_hop_drops,
            "tor_held_now": self.held,
        }
        if self.mode == "nack_filter":
            out.update(
                {
                    "nacks_held": self.nacks_held,
                    "nacks_merged": self.nacks_merged,
                    "nacks_dropped_stale": self.nacks_dropped_stale,
                    "nacks_dropped_after_hold": self.nacks_dropped_passed,
                    "nacks_dropped": self.nacks_dropped_stale + self.nacks_dropped_passed + self.nacks_merged,
                    "nacks_forwarded_loss": self.nacks_forwarded_loss,
                    "nacks_released_on_loss": self.nacks_released_loss,
                    "nacks_timed_out": self.nacks_timed_out,
                    "nacks_forwarded_untracked": self.nacks_forwarded_untracked,
                    "nacks_retargeted": self.nacks_retargeted,
                    "nacks_forwarded": self.nacks_forwarded_loss
                    + self.nacks_released_loss
                    + self.nacks_timed_out
                    + self.nacks_forwarded_untracked
                    + self.nacks_retargeted,
                    "cnps_dropped": self.cnps_dropped,
                    "cnps_forwarded": self.cnps_forwarded,
                    "tor_window_slides": self.window_slides,
                    "tor_nic_discards_mirrored": self.nic_discards,
                }
            )
        else:
            peaks = {p.switch.name: p.peak_bytes for p in programs}
            out.update(
                {
                    "reseq_peak_bytes": max(peaks.values(), default=0),
                    "reseq_peak_bytes_per_tor": peaks,
                    "reseq_held_packets": self.reseq_held_packets,
                    "reseq_flush_loss": self.reseq_flush_loss,
                    "reseq_flush_timeout": self.reseq_flush_timeout,
                    "reseq_flushed_packets": self.reseq_flushed_packets,
                    "reseq_overflow_drops": self.reseq_overflow_drops,
                    "reseq_duplicate_drops": self.reseq_duplicate_drops,
                    "reseq_passed_ooo": self.reseq_passed_ooo,
                }
            )
        return out
