"""DFS: dynamic flow spraying with bounded reordering (sender side; ``SCHEMES.md`` § DFS).

A flow starts on one entropy (plain ECMP). A flow whose unsent + in-flight bytes exceed the
spray threshold ``T`` sprays over ``k = min(K, paths)`` entropies. Per active path (entropy) the
sender keeps a smoothed RTT (from the send time echoed in ACKs/NACKs), an ECN-marked fraction
(EWMA) and a count of packets in flight. A path whose ECN fraction exceeds ``theta`` or whose
RTT exceeds ``(1 + gamma) * min RTT`` of the flow's active paths is retired and replaced by a
fresh random entropy; retired paths get no new packets and simply drain. Each new packet goes
to the eligible path with the smallest ``in_flight * RTT`` (= ``in_flight / weight`` with
weight ∝ 1/RTT); a path is eligible when ``RTT_p - RTT_min <= B * serialization time`` of one
packet at the flow's current rate. Retransmissions go on the fastest path.

**Hard bound.** ``qp.psn_window = B`` for every flow DFS manages (sprayed or not): the sender
never transmits PSN >= snd_una + B. Since snd_una <= the receiver's ePSN, a first arrival of PSN
q always satisfies q < ePSN + B, and any PSN that arrived before it was sent before q's hole
could be acknowledged, so its reorder degree is < B and a selective-repeat NIC with bitmap
W >= B never discards a packet. (A late *duplicate*, an original overtaken by its own
retransmission, is outside this argument: it is already delivered.) Note the bound is a window:
a flow's rate is at most ``B * packet / RTT``, so B should be at least one BDP in packets for
sprayed flows to reach line rate.

Choices the spec leaves open (documented here, tested in ``tests/test_dfs.py``):

* **Paths**: the number of equal-cost paths between the two ToRs, walked along one
  representative route: the product over hops of ``len(switch.table[dst])`` (exact for
  symmetric leaf-spine and fat-tree fabrics; 1 inside a ToR).
* **Base RTT** (for the default ``T`` = 1 BDP): along the same representative route, the sum of
  per-hop propagation delay and serialization of one full data packet forward and one control
  frame back. ``T = line rate * base RTT``.
* **The flow's mode is decided once at its start**: a flow whose whole message exceeds ``T``
  sprays until it ends (no collapse back to one path for its tail).
* **In-flight accounting** uses a ring of ``B`` slots indexed by PSN (a window never spans more
  than B PSNs): a slot remembers the path that carried the PSN; the slot is released by an
  ACK/NACK triggered by that PSN or when the cumulative ACK passes it, so ACK coalescing and
  selective-repeat receivers (which do not ACK out-of-order arrivals) never drive a count
  negative and never leak.
* **Loss counts as a mark**: when a PSN is retransmitted while its slot still holds the path
  that carried it, that path gets an ECN-fraction sample of 1. A path that silently drops
  (failed link before reroute) therefore gets retired after a few losses even though no ACK
  ever echoes its entropy.
* **Common congestion is not a path's fault**: a path is retired for ECN only if at least one
  other active path is below ``theta`` (under incast every path is marked at the last hop; churn
  would not help).
* **Stale paths**: an ineligible path with nothing in flight would never be measured again; it
  is retired when placement finds it so.
* A new path's RTT starts at the flow's current minimum RTT (optimistic, so it is tried at
  once); its EWMA then moves towards samples with weight 1/8, which damps one-off spikes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from spraylab.lb.base import LbParams, LoadBalancer, register
from spraylab.net.packet import CONTROL_BYTES, HEADER_BYTES

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.packet import Packet
    from spraylab.transport.qp import QueuePair

PS_BITS = 8_000_000_000_000  # ps per byte at 1 bit/s


class DfsParams(LbParams):
    reorder_bound_packets: int = Field(64, ge=1, description="B: hard reorder bound (PSN window), packets")
    max_paths: int = Field(8, ge=1, description="K: max active entropies of a sprayed flow")
    spray_threshold_bytes: int = Field(0, ge=0, description="T: spray above this many bytes; 0 = 1 BDP")
    rtt_slack: float = Field(0.5, ge=0.0, description="gamma: retire a path above (1+gamma)*min RTT")
    ecn_threshold: float = Field(0.3, ge=0.0, le=1.0, description="theta: retire a path above this ECN fraction")
    ewma_weight: float = Field(0.125, gt=0.0, le=1.0, description="EWMA weight of RTT and ECN samples")


class _Path:
    """One active (or retired, draining) entropy of a sprayed flow."""

    __slots__ = ("entropy", "rtt", "ecn", "in_flight", "samples", "active")

    def __init__(self, entropy: int, rtt: float) -> None:
        self.entropy = entropy
        self.rtt = rtt
        self.ecn = 0.0
        self.in_flight = 0
        self.samples = 0
        self.active = True


class _FlowState:
    __slots__ = ("sprayed", "paths", "ring", "una", "rtt_min", "base_rtt")

    def __init__(self, bound: int, base_rtt: float) -> None:
        self.sprayed = False
        self.paths: list[_Path] = []
        self.ring: list[_Path | None] = [None] * bound
        self.una = 0  # PSNs below this have been released from the ring
        self.rtt_min = base_rtt
        self.base_rtt = base_rtt


@register
class DynamicFlowSpraying(LoadBalancer):
    name = "dfs"
    where = "sender"
    summary = "sender spraying over up to K adaptive entropies with a hard B-packet reorder bound"
    Params = DfsParams

    def __init__(self, params: LbParams | None = None) -> None:
        super().__init__(params)
        p: Any = self.params
        self.bound = int(p.reorder_bound_packets)
        self.max_paths = int(p.max_paths)
        self.threshold_bytes = int(p.spray_threshold_bytes)
        self.slack = 1.0 + float(p.rtt_slack)
        self.theta = float(p.ecn_threshold)
        self.weight = float(p.ewma_weight)
        self.rng: Any = None
        self._route_cache: dict[tuple[int, int], tuple[int, float]] = {}
        # statistics
        self.flows = 0
        self.flows_sprayed = 0
        self.paths_explored = 0
        self.retired_rtt = 0
        self.retired_ecn = 0
        self.retired_stale = 0
        self.loss_marks = 0

    def setup(self, net: Network) -> None:
        super().setup(net)
        self.rng = net.sim.derive_rng(0xDF5)

    # --- fabric introspection (once per ToR pair) --------------------------------------
    def route_info(self, qp: QueuePair) -> tuple[int, float]:
        """(equal-cost paths, base RTT in ps) between the flow's endpoints, from one
        representative route: product of the candidate counts and sum of per-hop delays."""
        first = qp.nic.port
        key = (id(first), qp.dst)
        cached = self._route_cache.get(key)
        if cached is not None:
            return cached
        data_bytes = qp.mtu + HEADER_BYTES
        paths = 1
        rtt = first.delay_ps + data_bytes * first.ps_per_byte + first.delay_ps + CONTROL_BYTES * first.ps_per_byte
        node = first.peer_owner
        for _ in range(64):
            table = getattr(node, "table", None)
            if table is None:  # reached a host
                break
            cands = table[qp.dst]
            if not cands:
                break
            paths *= len(cands)
            port = cands[0]
            rtt += 2 * port.delay_ps + (data_bytes + CONTROL_BYTES) * port.ps_per_byte
            node = port.peer_owner
        info = (max(1, paths), float(rtt))
        self._route_cache[key] = info
        return info

    # --- wiring --------------------------------------------------------------------------
    def init_qp(self, qp: QueuePair) -> None:
        qp.lb = self
        qp.psn_window = self.bound
        self.flows += 1

    def on_flow_start(self, qp: QueuePair) -> None:
        paths, base_rtt = self.route_info(qp)
        state = _FlowState(self.bound, base_rtt)
        qp.lb_state = state
        threshold = self.threshold_bytes or int(qp.line_rate_bps * base_rtt / PS_BITS)
        remaining = (qp.n_packets - qp.snd_una) * qp.mtu
        k = min(self.max_paths, paths)
        if remaining <= threshold or k <= 1:
            return
        state.sprayed = True
        self.flows_sprayed += 1
        state.paths.append(_Path(qp.entropy, base_rtt))
        for _ in range(k - 1):
            state.paths.append(_Path(self._fresh_entropy(state), base_rtt))

    def _fresh_entropy(self, state: _FlowState) -> int:
        getrandbits = self.rng.getrandbits
        used = [p.entropy for p in state.paths]
        entropy = getrandbits(16)
        while entropy in used:
            entropy = getrandbits(16)
        self.paths_explored += 1
        return entropy

    def _replace(self, state: _FlowState, index: int) -> None:
        old = state.paths[index]
        old.active = False
        state.paths[index] = _Path(self._fresh_entropy(state), state.rtt_min)

    # --- per packet ----------------------------------------------------------------------
    def entropy(self, qp: QueuePair, psn: int) -> int:
        state: _FlowState = qp.lb_state
        if state is None or not state.sprayed:
            return qp.entropy
        paths = state.paths
        rtt_min = state.rtt_min
        if psn < qp.max_sent:  # retransmission: the fastest path
            best = paths[0]
            for p in paths:
                if p.rtt < best.rtt:
                    best = p
        else:
            budget = self.bound * (qp.mtu + HEADER_BYTES) * PS_BITS / qp.rate_bps
            limit = rtt_min + budget
            best = None
            best_score = 0.0
            stale = -1
            for i, p in enumerate(paths):
                if p.rtt > limit:
                    if p.in_flight == 0:
                        stale = i
                    continue
                score = p.in_flight * p.rtt
                if best is None or score < best_score:
                    best = p
                    best_score = score
            if stale >= 0:
                self.retired_stale += 1
                self._replace(state, stale)
            if best is None:  # nothing eligible (cannot happen: the fastest path always is)
                best = min(paths, key=_rtt_of)
        ring = state.ring
        slot = psn % self.bound
        old = ring[slot]
        if old is not None:  # PSN resent while still outstanding on ``old``: count a loss there
            old.in_flight -= 1
            if old.active:
                self.loss_marks += 1
                old.ecn += (1.0 - old.ecn) * self.weight
                if old.ecn > self.theta and old is not best:
                    self._check_ecn(state, old)
        ring[slot] = best
        best.in_flight += 1
        return best.entropy

    # --- feedback ------------------------------------------------------------------------
    def on_ack(self, qp: QueuePair, pkt: Packet) -> None:
        state: _FlowState = qp.lb_state
        if state is None or not state.sprayed:
            return
        self._release(state, qp.snd_una, pkt.sack_psn)
        self._sample(state, pkt)

    def on_nack(self, qp: QueuePair, pkt: Packet) -> None:
        # A selective-repeat NACK is triggered by an out-of-order packet that was received:
        # its echo is a valid sample of its path.
        self.on_ack(qp, pkt)

    def _release(self, state: _FlowState, una: int, sack_psn: int) -> None:
        ring = state.ring
        bound = self.bound
        start = state.una
        if una > start:
            if una - start > bound:
                start = una - bound
            for psn in range(start, una):
                slot = psn % bound
                p = ring[slot]
                if p is not None:
                    p.in_flight -= 1
                    ring[slot] = None
            state.una = una
        if sack_psn >= una:
            slot = sack_psn % bound
            p = ring[slot]
            if p is not None:
                p.in_flight -= 1
                ring[slot] = None

    def _sample(self, state: _FlowState, pkt: Packet) -> None:
        entropy = pkt.entropy
        paths = state.paths
        for index, path in enumerate(paths):
            if path.entropy == entropy:
                break
        else:
            return  # a retired path draining
        w = self.weight
        sample = self.net.sim.now - pkt.sent_ps
        path.rtt += (sample - path.rtt) * w
        path.ecn += ((1.0 if pkt.ecn else 0.0) - path.ecn) * w
        path.samples += 1
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
            self._replace(state, index)
        elif path.ecn > theta and ecn_ok:
            self.retired_ecn += 1
            self._replace(state, index)

    def _check_ecn(self, state: _FlowState, path: _Path) -> None:
        theta = self.theta
        paths = state.paths
        if any(p.ecn <= theta for p in paths):
            self.retired_ecn += 1
            self._replace(state, paths.index(path))

    def stats(self) -> dict[str, Any]:
        return {
            "flows": self.flows,
            "flows_sprayed": self.flows_sprayed,
            "paths_explored": self.paths_explored,
            "paths_retired": self.retired_rtt + self.retired_ecn + self.retired_stale,
            "retired_rtt": self.retired_rtt,
            "retired_ecn": self.retired_ecn,
            "retired_stale": self.retired_stale,
            "loss_marks": self.loss_marks,
        }


def _rtt_of(path: _Path) -> float:
    return path.rtt
