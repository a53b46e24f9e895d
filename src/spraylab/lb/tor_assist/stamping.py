"""Source ToR: spray and stamp (data from an attached host to a remote host).

Per flow the ToR picks an uplink among the equal-cost candidates toward the destination
(``uplink``: per-flow round-robin from a random offset, uniform random, or the least-queued
candidate; a port whose link is down is skipped) and stamps ``path_id`` = the uplink's index
in ``switch.uplinks`` and ``path_seq`` = that flow's packet count on that path. **Every**
packet is stamped, retransmissions included: the destination then sees an unbroken sequence
per path, so a gap always means a loss on that path, and a lost *retransmission* is detected
like any other loss (this is what lets the destination re-forward a NACK for a PSN whose
retransmission was lost, instead of waiting for a timeout). In a 2-tier leaf-spine the uplink
is the path (a spine has one down-port per leaf); in deeper fabrics the uplink picks the first
hop and the other switches hash the flow's fixed 5-tuple (ECMP), so each ``path_id`` is still
one FIFO path.

A flow's source state is retired when the ACK of the whole message passes back through the
ToR, leaving a tombstone so late packets pass untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spraylab.lb.tor_assist.counters import TorFlows
from spraylab.lb.tor_assist.params import NO_LIMIT, RETIRED
from spraylab.net.drops import NO_ROUTE
from spraylab.net.port import sim_drop

if TYPE_CHECKING:
    from spraylab.net.packet import Packet
    from spraylab.net.switch import Switch


class _Src:
    """Source-ToR state of one flow: packets sent per path and the round-robin pointer."""

    __slots__ = ("seq", "rr")

    def __init__(self, n_uplinks: int, rr: int) -> None:
        self.seq = [0] * n_uplinks
        self.rr = rr


class SourceStamper:
    """The source role of one ToR (see the module doc)."""

    __slots__ = ("sim", "src", "uplink_mode", "rng", "flows")

    def __init__(self, sim: Any, uplink_mode: str, rng: Callable[[], float], flows: TorFlows) -> None:
        self.sim = sim
        self.src: dict[int, Any] = {}  # flow id -> _Src or RETIRED
        self.uplink_mode = uplink_mode
        self.rng = rng
        self.flows = flows

    def spray(self, switch: Switch, pkt: Packet) -> bool:
        fid = pkt.flow_id
        st = self.src.get(fid)
        if st is None:
            n = len(switch.uplinks)
            st = self.src[fid] = _Src(n, int(self.rng() * n))
            self.flows.live_src += 1
            self.flows.note()
        elif st is RETIRED:
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
            i = int(self.rng() * n)
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

    def retire(self, fid: int) -> None:
        """The ACK of the whole message passed back: the flow is done at this ToR."""
        st = self.src.get(fid)
        if st is not None and st is not RETIRED:
            self.src[fid] = RETIRED
            self.flows.live_src -= 1
