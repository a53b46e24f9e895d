"""DFS: dynamic flow spraying with bounded reordering (sender side; ``docs/schemes.md``, DFS rules 1-8).

A flow starts on one entropy (plain ECMP). A flow whose unsent + in-flight bytes exceed the
spray threshold ``T`` sprays over ``k = min(K, paths)`` entropies. Per active path (entropy) the
sender keeps a smoothed RTT (from the send time echoed in ACKs/NACKs), an ECN-marked fraction
(EWMA) and a count of packets in flight. A path whose ECN fraction exceeds ``theta`` or whose
RTT exceeds ``(1 + gamma) * min RTT`` of the flow's active paths is retired and replaced by a
fresh random entropy; retired paths get no new packets and simply drain. Each new packet goes
to the eligible path with the smallest ``in_flight * RTT`` (= ``in_flight / weight`` with
weight ∝ 1/RTT); a path is eligible when ``RTT_p - RTT_min <= B * serialization time`` of one
packet at the flow's current rate. Retransmissions go on the path expected to deliver them
soonest, by the same rule (measured, not suspect, not the path that carried the original).

**Hard bound.** ``qp.psn_window = B`` for every flow DFS manages (sprayed or not): the sender
never transmits PSN >= snd_una + B. Since snd_una <= the receiver's ePSN, a first arrival of PSN
q always satisfies q < ePSN + B, and any PSN that arrived before it was sent before q's hole
could be acknowledged, so its reorder degree is < B and a selective-repeat NIC with bitmap
W >= B never discards a packet. (A late *duplicate*, an original overtaken by its own
retransmission, is outside this argument: it is already delivered.) Note the bound is a window:
a flow's rate is at most ``B * packet / RTT``, so B should be at least one BDP in packets for
sprayed flows to reach line rate. The spec's default B = 64 is below one BDP on a 400 Gb/s
fabric (~100 packets at an 8.3 us base RTT) and caps every sprayed flow at ~64% of line rate,
so the default here is ``"auto"``: per flow, ``max(64, (1 + gamma) x BDP)`` packets, at most
the selective-repeat bitmap W (128 by default). It is 64 wherever 64 suffices (a 100 Gb/s
fabric) and W = 128 on the 400 Gb/s leaf-spine; an integer fixes B for every flow.

Choices the spec leaves open (documented here, tested in ``tests/test_dfs.py``):

* **Paths**: the number of equal-cost paths between the two ToRs, walked along one
  representative route: the product over hops of ``len(switch.table[dst])`` (exact for
  symmetric leaf-spine and fat-tree fabrics; 1 inside a ToR).
* **Base RTT** (for the default ``T`` = 1 BDP): along the same representative route, the sum of
  per-hop propagation delay and serialization of one full data packet forward and one control
  frame back. ``T = line rate * base RTT``.
* **k paths, not k entropies** (``path_aware``, default true): ``k = min(K, paths)`` reads
  as k distinct paths, but k random entropies hash onto only ~5.3 distinct spines of 8 on
  average, so some spines carry two or three of a flow's shares (measured with B = 128 on the
  128-host permutation: the busiest uplink carries 1.30x the mean, against 1.02x). The
  sender resolves the path an entropy hashes to (deterministic ECMP with known seeds, as
  AI fabrics configure it) and a new path takes the first of up to ``PATH_DRAWS`` random
  entropies whose switch links no active path of the flow uses, else the one sharing
  fewest, avoiding the links of the path it replaces. ``false``: any unused random entropy.
* **"Fastest" for retransmissions** is the placement rule's soonest delivery (least
  ``in_flight * RTT``), not the least smoothed RTT: on equal paths the latter is noise, and
  every retransmission of a flow piled onto one path queues it (and reorders more).
* **Loss detection** (``loss_detection``): ``"rnic"`` (default, the spec's rule 6) acts on
  each selective-repeat NACK at once, as the RNIC does, and so resends every packet a later
  one overtook. ``"dfs"`` uses what DFS knows about its paths: a NACKed PSN is resent only
  once overdue, ``(1 + gamma)`` x the RTT of the path that carried it after it was sent
  (``on_nack`` takes the retransmission over from a selective recovery and resends through
  the sender view; the resend is dropped if the cumulative ACK passes it first), and
  a flow that can send nothing new and has heard nothing for two such RTTs resends its
  oldest unacknowledged PSN (a tail-loss probe: a selective-repeat RNIC NACKs a hole again
  only on a later arrival, so a lost NACK with a full window otherwise waits for the RTO),
  and the packets outstanding on a path retired as broken are resent at once (the RNIC
  would report them one hole, i.e. one round trip, at a time: when introduced, this took
  ``scenarios/lb/fat_tree_failure_unseen.toml`` with B = 128 from 977 us to 273 us).
* **The flow's mode is decided once at its start**: a flow whose whole message exceeds ``T``
  sprays until it ends (no collapse back to one path for its tail).
* **In-flight accounting** uses a ring of ``B`` slots indexed by PSN (a window never spans more
  than B PSNs): a slot remembers the path that carried the PSN; the slot is released by an
  ACK/NACK triggered by that PSN or when the cumulative ACK passes it, so ACK coalescing and
  selective-repeat receivers (which do not ACK out-of-order arrivals) never drive a count
  negative and never leak.
* **Dead paths** (failed links before rerouting; a path can also die in the ACK direction
  only, since ACKs hash the same entropy on the way back):

  - when the PSN the receiver reports missing (snd_una) is retransmitted while its slot still
    holds the path that carried it, that path is charged one loss; a path charged
    ``dead_path_losses`` (3) times with no ACK/NACK echo in between is retired, while a path
    that is merely late (spurious NACKs under spraying) echoes in between and is kept;
  - over the ideal transport, which acknowledges every packet, a path that was sent packets
    but has echoed nothing for 4 min RTTs is retired ("silent"). Not over an RNIC: it ACKs
    only packets that advance its expected PSN, so behind a hole every path is silent, and a
    silence rule there retired healthy paths by the hundred (a dead path makes holes, which
    the rule above charges to it). A cumulative ACK that covers a path's packet counts as
    hearing from it;
  - paths charged a loss, or unheard for 2 min RTTs while carrying packets, are *suspect*: no
    new packets, no retransmissions, until they echo again; with every path suspect, the
    most-charged one is retired ("stuck") and its replacement carries the packet;
  - path-aware: the links (both directions) of a path retired as broken (dead, silent or
    stuck) are avoided by every later path of the flow;
  - on a timeout (go-back-N resend of the window) nothing tells which path lost what: DFS
    keeps the paths heard from within 2 min RTTs of the flow's last echo (and since the
    previous timeout) and replaces the others with fresh entropies; when no path is known
    good, retransmissions are spread by the placement rule instead of piling on one path.
* **Common congestion is not a path's fault**: a path is retired for ECN only if at least one
  other active path is below ``theta`` (under incast every path is marked at the last hop; churn
  would not help).
* **Stale paths**: an ineligible path with nothing in flight would never be measured again; it
  is retired when placement finds it so.
* A new path's RTT starts at the flow's current minimum RTT (optimistic, so it is tried at
  once); its EWMA then moves towards samples with weight 1/8, which damps one-off spikes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from spraylab.lb.base import LbParams, LoadBalancer, register
from spraylab.metrics.paths import flow_path
from spraylab.net.framing import data_wire_bytes
from spraylab.net.routes import trace_route
from spraylab.transport.qp import PS_BITS

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.net.port import Port
    from spraylab.transport.view import SenderView


PATH_DRAWS = 32  # random entropies tried for a path-aware new path
AUTO_BOUND_MIN = 64  # the spec's default B, kept as the floor of "auto"


def _bdp_packets(qp: SenderView, base_rtt_ps: float) -> int:
    """One bandwidth-delay product at the flow's line rate, in (whole) data packets."""
    return -(-int(qp.line_rate_bps * base_rtt_ps / PS_BITS) // data_wire_bytes(qp.mtu))


class DfsParams(LbParams):
    reorder_bound_packets: Annotated[int, Field(ge=1)] | Literal["auto"] = Field(
        "auto",
        description="B: hard reorder bound (PSN window), packets; auto = max(64, (1+gamma) x BDP) "
        "per flow, at most the selective-repeat bitmap W",
    )
    max_paths: int = Field(8, ge=1, description="K: max active entropies of a sprayed flow")
    spray_threshold_bytes: int = Field(0, ge=0, description="T: spray above this many bytes; 0 = 1 BDP")
    rtt_slack: float = Field(0.5, ge=0.0, description="gamma: retire a path above (1+gamma)*min RTT")
    ecn_threshold: float = Field(
        0.3, ge=0.0, le=1.0, description="theta: retire a path above this ECN fraction"
    )
    ewma_weight: float = Field(0.125, gt=0.0, le=1.0, description="EWMA weight of RTT and ECN samples")
    dead_path_losses: int = Field(
        3, ge=1, description="retire a path charged with this many retransmissions and no echo in between"
    )
    path_aware: bool = Field(
        True,
        description="draw each new entropy so its path overlaps the flow's other paths least "
        "(the sender resolves the path an entropy hashes to); false: any random entropy",
    )
    loss_detection: Literal["rnic", "dfs"] = Field(
        "rnic",
        description="rnic: act on each NACK at once, RTO for the rest (the RNIC's own); dfs: resend a "
        "NACKed packet only once overdue on its path, probe a stalled window",
    )


class _Path:
    """One active (or retired, draining) entropy of a sprayed flow."""

    __slots__ = (
        "entropy",
        "rtt",
        "ecn",
        "in_flight",
        "samples",
        "active",
        "silent_losses",
        "last_echo_ps",
        "unechoed_since_ps",
        "links",
        "ack_links",
    )

    def __init__(
        self,
        entropy: int,
        rtt: float,
        links: frozenset[int] = frozenset(),
        ack_links: frozenset[int] = frozenset(),
    ) -> None:
        self.entropy = entropy
        # path_aware only: the switch-to-switch ports the entropy's packets cross, and those
        # its ACKs cross on the way back (they echo the entropy, hashed by other switches)
        self.links = links
        self.ack_links = ack_links
        self.rtt = rtt  # smoothed RTT, ps
        self.ecn = 0.0  # smoothed ECN-marked fraction
        self.in_flight = 0
        self.samples = 0
        self.active = True
        self.silent_losses = 0  # retransmissions charged to this path since its last echo
        self.last_echo_ps = -1  # time of the last ACK/NACK echoing this entropy
        self.unechoed_since_ps = -1  # first send since the last echo, -1 if none


class _FlowState:
    __slots__ = (
        "sprayed",
        "paths",
        "ring",
        "sent_ps",
        "una",
        "rtt_min",
        "last_timeout_ps",
        "last_echo_ps",
        "probe_armed",
        "bad_links",
        "bound",
        "silence_is_loss",
    )

    def __init__(self, bound: int, base_rtt: float, silence_is_loss: bool) -> None:
        self.bound = bound  # B of this flow (= qp.psn_window)
        # The receiver acknowledges every arrival (the ideal transport), so a path that
        # carries packets and echoes nothing for many RTTs is dead (see the module doc).
        self.silence_is_loss = silence_is_loss
        self.sprayed = False
        self.paths: list[_Path] = []
        self.ring: list[_Path | None] = [None] * bound  # path of each outstanding PSN (psn % B)
        self.sent_ps = [0] * bound  # when each outstanding PSN was last sent (psn % B)
        self.una = 0  # PSNs below this have been released from the ring
        self.rtt_min = base_rtt
        self.last_timeout_ps = -1
        self.last_echo_ps = 0  # last ACK/NACK of the flow, any path
        self.probe_armed = False
        self.bad_links: set[int] = set()  # links of paths retired as dead or silent


@register
class DynamicFlowSpraying(LoadBalancer):
    name = "dfs"
    where = "sender"
    summary = "sender spraying over up to K adaptive entropies with a hard B-packet reorder bound"
    fluid_model = "pool"
    Params = DfsParams
    param_aliases = {"B": "reorder_bound_packets", "loss": "loss_detection"}

    def __init__(self, params: LbParams | None = None) -> None:
        super().__init__(params)
        p: Any = self.params
        # 0: "auto", resolved per flow from its route (init_qp)
        self.bound = 0 if p.reorder_bound_packets == "auto" else int(p.reorder_bound_packets)
        self.max_paths = int(p.max_paths)
        self.threshold_bytes = int(p.spray_threshold_bytes)
        self.slack = 1.0 + float(p.rtt_slack)
        self.theta = float(p.ecn_threshold)
        self.weight = float(p.ewma_weight)
        self.dead_after = int(p.dead_path_losses)
        self.path_aware = bool(p.path_aware)
        self.own_loss_detection = p.loss_detection == "dfs"
        self.silence_rtts = 4.0  # a path carrying packets and unheard for this many min RTTs is dead
        self.rng: Any = None
        self.sim: Any = None
        self._route_cache: dict[tuple[Port, int], tuple[int, float]] = {}
        # statistics
        self.flows = 0
        self.flows_sprayed = 0
        self.paths_explored = 0
        self.retired_rtt = 0
        self.retired_ecn = 0
        self.retired_dead = 0
        self.retired_stale = 0
        self.retired_silent = 0
        self.retired_timeout = 0
        self.retired_stuck = 0
        self.loss_marks = 0
        self.bdp_packets_max = 0
        self.bound_min = 0  # smallest and largest B given to a flow
        self.bound_max = 0
        self.window_capped_flows = 0
        self.path_overlaps = 0
        self.nacks_held = 0
        self.stall_probes = 0
        self.presumed_lost = 0

    def setup(self, net: Network) -> None:
        super().setup(net)
        self.sim = net.sim
        self.rng = net.sim.derive_rng(0xDF5)

    # --- fabric introspection (once per ToR pair) --------------------------------------
    def route_info(self, qp: SenderView) -> tuple[int, float]:
        """(equal-cost paths, base RTT in ps) between the flow's endpoints, from the
        representative route (``trace_route``): product of the candidate counts and sum of
        per-hop delays. Cached per (source NIC port, destination)."""
        first = qp.nic.port
        key = (first, qp.dst)
        cached = self._route_cache.get(key)
        if cached is not None:
            return cached
        route = trace_route(self.net, qp.src, qp.dst)
        info = (max(1, route.paths), route.base_rtt_ps(qp.mtu))
        self._route_cache[key] = info
        return info

    # --- wiring --------------------------------------------------------------------------
    def init_qp(self, qp: SenderView) -> None:
        qp.lb = self
        bound = self.bound or self.auto_bound(qp)
        qp.psn_window = bound
        self.flows += 1
        self.bound_min = min(self.bound_min, bound) if self.bound_min else bound
        self.bound_max = max(self.bound_max, bound)

    def auto_bound(self, qp: SenderView) -> int:
        """B for ``reorder_bound_packets = "auto"``: the window must not cap a flow on its
        slowest eligible path, (1 + gamma) x the base RTT (rule 3), so B >= (1 + gamma) x BDP;
        never below the spec's 64; and, over a selective recovery, at most the receiver's
        out-of-order bitmap W, which B must not exceed for the no-discard guarantee (a
        go-back-N receiver discards any reordering: no B can guarantee it)."""
        bound = max(AUTO_BOUND_MIN, math.ceil(self.slack * _bdp_packets(qp, self.route_info(qp)[1])))
        recovery = type(qp.recovery)
        if recovery.selective:
            bitmap = recovery.ooo_window_packets(self.net.transport)
            if bitmap is not None:
                bound = min(bound, bitmap)
        return bound

    def on_flow_start(self, qp: SenderView) -> None:
        paths, base_rtt = self.route_info(qp)
        state = _FlowState(qp.psn_window, base_rtt, qp.recovery.acks_every_arrival)
        qp.lb_state = state
        threshold = self.threshold_bytes or int(qp.line_rate_bps * base_rtt / PS_BITS)
        # The B-packet window caps a flow at B packets per RTT: below one BDP it cannot reach
        # line rate even on an idle fabric. Counted so results show when B is the limit.
        bdp_packets = _bdp_packets(qp, base_rtt)
        self.bdp_packets_max = max(self.bdp_packets_max, bdp_packets)
        remaining = (qp.n_packets - qp.snd_una) * qp.mtu
        k = min(self.max_paths, paths)
        if remaining <= threshold or k <= 1:
            return
        state.sprayed = True
        self.flows_sprayed += 1
        if state.bound < bdp_packets:
            self.window_capped_flows += 1
        links = self._links(qp, qp.entropy) if self.path_aware else ()
        state.paths.append(_Path(qp.entropy, base_rtt, *links))
        for _ in range(k - 1):
            state.paths.append(self._fresh_path(qp, state, base_rtt))

    def _links(self, qp: SenderView, entropy: int) -> tuple[frozenset[int], frozenset[int]]:
        """The switch links an entropy's packets cross, and those its ACKs cross back."""
        # The first (NIC) and last (to the host) ports are shared by every path of the flow.
        forward = flow_path(self.net, qp, entropy=entropy)[1:-1]
        backward = flow_path(self.net, qp, reverse=True, entropy=entropy)[1:-1]
        return frozenset(map(id, forward)), frozenset(map(id, backward))

    def _fresh_path(
        self, qp: SenderView, state: _FlowState, rtt: float, retired: _Path | None = None
    ) -> _Path:
        """A new path on a random entropy. Path-aware: of up to ``PATH_DRAWS`` random
        entropies, the first whose path shares no switch link with the flow's active paths,
        else the one sharing fewest (a link of the path being retired, or of any path found
        dead before, counts as many: with the others in use, a dead link is the free one)."""
        getrandbits = self.rng.getrandbits
        used = {p.entropy for p in state.paths}
        self.paths_explored += 1
        if not self.path_aware:
            entropy = getrandbits(16)
            while entropy in used:
                entropy = getrandbits(16)
            return _Path(entropy, rtt)
        load: dict[int, int] = {}
        for p in state.paths:
            if p.active:
                for link in p.links:
                    load[link] = load.get(link, 0) + 1
        avoid = (
            state.bad_links if retired is None else state.bad_links.union(retired.links, retired.ack_links)
        )
        penalty = len(state.paths) + 1
        best: _Path | None = None
        best_score = 0
        for _ in range(PATH_DRAWS):
            entropy = getrandbits(16)
            if entropy in used:
                continue
            links, ack_links = self._links(qp, entropy)
            score = sum(load.get(link, 0) for link in links) + penalty * (
                len(links & avoid) + len(ack_links & avoid)
            )
            if best is None or score < best_score:
                best = _Path(entropy, rtt, links, ack_links)
                best_score = score
                if score == 0:
                    break
        assert best is not None  # 16-bit draws: PATH_DRAWS of them are never all in use
        if best_score:
            self.path_overlaps += 1
        return best

    def _replace(
        self, qp: SenderView, state: _FlowState, index: int, broken: bool = False, sending: int = -1
    ) -> None:
        """Retire ``paths[index]`` (it drains, gets no new packets) for a fresh entropy;
        ``broken``: it lost packets or went silent, so new paths avoid its links, and with
        DFS's own loss detection its outstanding packets (but ``sending``, the one being
        resent now) are resent at once: a selective-repeat RNIC would report them one
        hole, and one round trip, at a time."""
        retired = state.paths[index]
        retired.active = False
        if broken:
            state.bad_links.update(retired.links, retired.ack_links)
            # A transport that notices every loss itself needs no presuming.
            if self.own_loss_detection and not qp.recovery.notices_losses and retired.in_flight:
                ring, bound = state.ring, state.bound
                queued = qp.queued_resends()
                lost = [
                    psn
                    for psn in qp.outstanding()
                    if ring[psn % bound] is retired and psn != sending and psn not in queued
                ]
                self.presumed_lost += len(lost)
                qp.resend(lost)
        state.paths[index] = self._fresh_path(qp, state, state.rtt_min, retired)

    # --- per packet ----------------------------------------------------------------------
    def entropy(self, qp: SenderView, psn: int) -> int:
        state: _FlowState = qp.lb_state
        if state is None or not state.sprayed:
            return qp.entropy
        now = self.sim.now
        paths = state.paths
        ring = state.ring
        slot = psn % state.bound
        old = ring[slot]  # not None: PSN resent while still outstanding on ``old``
        rtt_min = state.rtt_min
        # The eligible path with the least in_flight / weight (weight = 1 / RTT), i.e. the
        # one expected to deliver soonest: eligible if its RTT is within B packet times of
        # the fastest and it is not suspect (charged with a loss). A retransmission avoids
        # the path that carried the original and, if it can, paths not yet measured or
        # silent for over 2 min RTTs while carrying packets.
        limit = rtt_min + state.bound * qp.full_wire_bytes * PS_BITS / qp.rate_bps
        # Silence means death only over the ideal transport, which acknowledges every packet
        # (an RNIC acknowledges nothing behind a hole: see the module doc).
        dead_before = now - self.silence_rtts * rtt_min if state.silence_is_loss else -1
        retx = psn < qp.max_sent
        recent = now - 2 * rtt_min
        best = unproven = None
        best_score = unproven_score = 0.0
        stale = silent = -1
        for i, p in enumerate(paths):
            if p.rtt > limit:
                if p.in_flight == 0:  # stale: would never be measured again
                    stale = i
                continue
            if p.silent_losses or p is old:
                continue
            since = p.unechoed_since_ps
            if 0 <= since < dead_before:  # nothing heard for many RTTs: dead either way
                silent = i
                continue
            score = p.in_flight * p.rtt
            if retx and (not p.samples or 0 <= since < recent):
                if unproven is None or score < unproven_score:
                    unproven = p
                    unproven_score = score
            elif best is None or score < best_score:
                best = p
                best_score = score
        if stale >= 0:
            self.retired_stale += 1
            self._replace(qp, state, stale)
        elif silent >= 0:
            self.retired_silent += 1
            self._replace(qp, state, silent, broken=True, sending=psn)
        if best is None:
            best = unproven
            if best is None:
                # Every path suspect: sending on the fastest could keep feeding a dead one (its
                # charges never reach dead_path_losses while it is also the retransmission's
                # path). Retire the most-charged path and use its fresh replacement.
                worst = max(range(len(paths)), key=lambda i: paths[i].silent_losses)
                self.retired_stuck += 1
                self._replace(qp, state, worst, broken=True, sending=psn)
                best = paths[worst]
        if old is not None:
            old.in_flight -= 1
            if psn == qp.snd_una and old.active:  # the PSN the receiver reported missing
                self.loss_marks += 1
                old.silent_losses += 1
                if old.silent_losses >= self.dead_after and old is not best:
                    self.retired_dead += 1
                    self._replace(qp, state, paths.index(old), broken=True, sending=psn)
        ring[slot] = best
        state.sent_ps[slot] = now
        if self.own_loss_detection and not state.probe_armed:
            state.probe_armed = True
            self.sim.after(self._probe_wait(state), self._on_probe, qp)
        best.in_flight += 1
        if best.unechoed_since_ps < 0:
            best.unechoed_since_ps = now
        return best.entropy

    # --- feedback ------------------------------------------------------------------------
    def on_ack(self, qp: SenderView, pkt: Packet) -> None:
        state: _FlowState = qp.lb_state
        if state is None or not state.sprayed:
            return
        state.last_echo_ps = self.sim.now
        self._release(state, qp.snd_una, pkt.sack_psn)
        self._sample(qp, state, pkt)

    def on_nack(self, qp: SenderView, pkt: Packet) -> bool:
        # A selective-repeat NACK is triggered by an out-of-order packet that was received:
        # its echo is a valid sample of its path.
        self.on_ack(qp, pkt)
        return self._hold_nack(qp, pkt.psn)

    def _release(self, state: _FlowState, una: int, sack_psn: int) -> None:
        ring = state.ring
        bound = state.bound
        start = state.una
        if una > start:
            if una - start > bound:
                start = una - bound
            sent_ps = state.sent_ps
            for psn in range(start, una):
                slot = psn % bound
                p = ring[slot]
                if p is not None:
                    p.in_flight -= 1
                    ring[slot] = None
                    # Delivered: alive when it sent this packet. A selective-repeat RNIC ACKs
                    # only packets that advance its expected PSN, so a path whose packets
                    # always arrive a little early is never echoed, only covered like this.
                    since = p.unechoed_since_ps
                    if 0 <= since <= sent_ps[slot]:
                        p.unechoed_since_ps = sent_ps[slot] if p.in_flight else -1
            state.una = una
        if sack_psn >= una:
            slot = sack_psn % bound
            p = ring[slot]
            if p is not None:
                p.in_flight -= 1
                ring[slot] = None

    # --- loss_detection = "dfs" -------------------------------------------------------
    def _hold_nack(self, qp: SenderView, psn: int) -> bool:
        """With DFS's own loss detection over a selective recovery, a NACKed PSN is resent
        only once overdue, ``(1 + gamma)`` x the RTT of the path that carried it after it was
        sent (a path slower than that is retired anyway); if it arrives first, the cumulative
        ACK passes it and nothing is resent. True: DFS took the retransmission over."""
        if not self.own_loss_detection or qp.sender_done or not qp.recovery.selective:
            return False
        state: _FlowState = qp.lb_state
        if state is None or not state.sprayed or psn >= qp.max_sent:
            return False
        slot = psn % state.bound
        path = state.ring[slot]
        if path is None:
            return False
        self.nacks_held += 1
        at = state.sent_ps[slot] + int(self.slack * max(path.rtt, state.rtt_min))
        if at <= self.sim.now:
            return False  # overdue already: the recovery resends it at once
        self.sim.at(at, self._on_held_nack, (qp, psn))
        return True

    def _on_held_nack(self, held: tuple[SenderView, int]) -> None:
        qp, psn = held
        if qp.sender_done or psn < qp.snd_una:
            return  # delivered meanwhile: the NACK was for reordering, not loss
        qp.resend([psn])

    def _probe_wait(self, state: _FlowState) -> int:
        return int(2 * self.slack * max(p.rtt for p in state.paths))

    def _on_probe(self, qp: SenderView) -> None:
        """A selective-repeat RNIC NACKs a hole once, on the next out-of-order arrival, and
        again only on a later one: if that NACK (or the retransmission) is lost while the
        flow can send nothing new (window full, or all sent), nothing arrives to trigger
        another and the flow waits for the RTO. So: with nothing left to send and nothing
        heard for two slack RTTs of the slowest path, resend the oldest unacknowledged PSN
        (a tail-loss probe)."""
        state: _FlowState = qp.lb_state
        state.probe_armed = False
        if qp.sender_done or qp.snd_una >= qp.max_sent:
            return
        wait = self._probe_wait(state)
        quiet_until = state.last_echo_ps + wait
        now = self.sim.now
        if now >= quiet_until:
            blocked = qp.snd_nxt >= min(qp.n_packets, qp.snd_una + state.bound)
            if blocked and not qp.queued_resends():
                self.stall_probes += 1
                qp.resend([qp.snd_una])
            quiet_until = now + wait
        state.probe_armed = True
        self.sim.at(quiet_until, self._on_probe, qp)

    def _sample(self, qp: SenderView, state: _FlowState, pkt: Packet) -> None:
        entropy = pkt.entropy
        paths = state.paths
        index = 0
        for path in paths:
            if path.entropy == entropy:
                break
            index += 1
        else:
            return  # a retired path draining
        now = self.sim.now
        w = self.weight
        path.rtt += (now - pkt.sent_ps - path.rtt) * w
        path.ecn += ((1.0 if pkt.ecn else 0.0) - path.ecn) * w
        path.samples += 1
        path.silent_losses = 0
        path.last_echo_ps = now
        path.unechoed_since_ps = -1
        rtt_min = path.rtt
        ecn_ok = False
        theta = self.theta
        for p in paths:
            if p.samples and p.rtt < rtt_min:
                rtt_min = p.rtt
            if p.ecn <= theta:
                ecn_ok = True
        state.rtt_min = rtt_min
        if path.rtt > self.slack * rtt_min:
            self.retired_rtt += 1
            self._replace(qp, state, index)
        elif path.ecn > theta and ecn_ok:
            self.retired_ecn += 1
            self._replace(qp, state, index)

    def on_timeout(self, qp: SenderView) -> None:
        """Everything outstanding is resent and we cannot tell which path lost what (under
        selective repeat nothing past the hole is ACKed, and a path may have died in the ACK
        direction only). Keep the paths heard from last (within 2 min RTTs of the flow's
        latest echo, and since the previous timeout): the critical retransmission goes on
        the fastest of them; explore fresh entropies for the others."""
        state: _FlowState = qp.lb_state
        if state is None or not state.sprayed:
            return
        ring = state.ring
        for slot, p in enumerate(ring):
            if p is not None:
                p.in_flight -= 1
                ring[slot] = None
        paths = state.paths
        latest = max(p.last_echo_ps for p in paths)
        recent = max(latest - 2 * state.rtt_min, state.last_timeout_ps)
        state.last_timeout_ps = self.sim.now
        for i, p in enumerate(paths):
            if p.last_echo_ps >= 0 and p.last_echo_ps >= recent:
                p.silent_losses = 0
                p.unechoed_since_ps = -1
            else:
                self.retired_timeout += 1
                self._replace(qp, state, i)

    def stats(self) -> dict[str, Any]:
        retired = {
            "rtt": self.retired_rtt,
            "ecn": self.retired_ecn,
            "dead": self.retired_dead,
            "stale": self.retired_stale,
            "silent": self.retired_silent,
            "timeout": self.retired_timeout,
            "stuck": self.retired_stuck,
        }
        return {
            "flows": self.flows,
            "flows_sprayed": self.flows_sprayed,
            "paths_explored": self.paths_explored,
            "paths_retired": sum(retired.values()),
            **{f"retired_{reason}": n for reason, n in retired.items()},
            "loss_marks": self.loss_marks,
            "bdp_packets": self.bdp_packets_max,
            "bound_min_packets": self.bound_min,
            "bound_max_packets": self.bound_max,
            "window_capped_flows": self.window_capped_flows,
            "path_overlaps": self.path_overlaps,
            "nacks_held": self.nacks_held,
            "stall_probes": self.stall_probes,
            "presumed_lost": self.presumed_lost,
        }
