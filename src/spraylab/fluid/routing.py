"""The packet engine's routes as flat arrays, and each flow's share of every link it uses.

:class:`FluidFabric` rebuilds, from the same :class:`~spraylab.topology.fabric.Fabric`, exactly
what :class:`spraylab.net.network.Network` builds, without creating a port or a switch
object: directed link ``2 i`` is fabric link ``i`` from ``a`` to ``b`` and ``2 i + 1`` the
reverse (the order of ``Network.ports``, so link tables line up row for row), every node's
egress links in the order the network gives its ports, the equal-cost candidates of each
(switch, destination ToR) from hop distances over switch links (hosts never transit), direct
groups towards attached hosts, each host's NIC choice, and the switch salts drawn from the
same random stream. A flow's route is then one of three models:

* ``hash`` (ECMP): the walk of :func:`spraylab.net.routes.trace_route` with the flow's header
  hash, ``hop_hash(hash, salt) % n`` at each switch: the same collisions as the packet engine;
* ``split`` (rps): the flow divides equally among the candidates at every switch, so link
  ``l`` carries the fraction of the flow that the uniform random walk down the equal-cost DAG
  puts on it (per-packet random choices even out to that share);
* ``entropies`` (spray_rr): the sender cycles over ``paths`` random entropies, each packet
  hashed by ECMP: the flow divides equally among the hash routes of those entropies, which
  the fluid engine draws from the scheme's own random stream (so the same uneven shares as
  the packet engine when flows start in the order they are listed);
* ``tor_split`` (tor_assist): the source ToR sprays round-robin over its candidates and every
  later switch hashes the flow's header (ECMP): an equal split at the first switch, one hash
  route below each of its candidates;
* ``pool`` (adaptive schemes: REPS, adaptive, DRILL, DFS): ideal adaptive splitting. The links at
  each hop depth of the DAG form one pooled constraint with their summed capacity, as a scheme
  that always found the free path would see them. A relaxation of the real constraints, so a
  bound on what adaptive schemes reach, not a model of any one of them.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from spraylab.lb.base import REGISTRY as lb_registry
from spraylab.net.routes import MAX_HOPS, hop_hash
from spraylab.topology.fabric import Fabric

__all__ = [
    "FluidFabric",
    "ROUTE_MODELS",
    "fluid_schemes",
    "hop_hash_array",
    "packet_hash_array",
    "route_model",
    "random_words",
]


def hop_hash_array(pkt_hash: np.ndarray, seed: np.ndarray | int) -> np.ndarray:
    """:func:`spraylab.net.routes.hop_hash` of every element (uint64 arithmetic wraps modulo
    2^64 as the scalar version masks)."""
    z = np.asarray(pkt_hash, dtype=np.uint64) ^ np.asarray(seed, dtype=np.uint64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def packet_hash_array(flow_id: np.ndarray, entropy: np.ndarray) -> np.ndarray:
    """:func:`spraylab.net.routes.packet_hash` of every (flow id, entropy)."""
    header = (np.asarray(flow_id, dtype=np.uint64) << np.uint64(16)) | np.asarray(entropy, dtype=np.uint64)
    return hop_hash_array(header, 0)


def random_words(rng: random.Random, count: int, bits: int) -> np.ndarray:
    """``[rng.getrandbits(bits) for _ in range(count)]`` (``bits`` <= 32) as one draw: CPython
    fills a long ``getrandbits`` with consecutive 32-bit outputs, lowest word first, and a short
    one keeps an output's top ``bits``; the generator ends in the same state."""
    if not 0 < bits <= 32:
        raise ValueError(f"bits = {bits}: 1 to 32")
    words = np.frombuffer(rng.getrandbits(32 * count).to_bytes(4 * count, "little"), dtype="<u4")
    return (words >> np.uint32(32 - bits)).astype(np.int64)


def _rows(columns: list[np.ndarray], length: np.ndarray) -> np.ndarray:
    """Hop columns as one row per walk, -1 past each walk's end (and all -1 if unreachable)."""
    links = np.stack(columns, axis=1)
    links[np.arange(links.shape[1]) >= length[:, None]] = -1
    return links


# the route models of the module docstring; a scheme names its own (LoadBalancer.fluid_model)
ROUTE_MODELS = ("hash", "split", "entropies", "tor_split", "pool")


def fluid_schemes() -> list[str]:
    """The registered schemes the flow-level engines model, by name."""
    return [name for name in lb_registry.names() if lb_registry.get(name).fluid_model is not None]


def route_model(scheme: str) -> str:
    """The route model ``scheme`` declares (``LoadBalancer.fluid_model``); raises ``ValueError``
    for schemes that declare none (their choice depends on state the fluid engine does not keep)."""
    model = lb_registry.get(scheme).fluid_model
    if model is None:
        raise ValueError(
            f"lb.scheme = {scheme!r}: not modelled by the fluid engine; allowed {', '.join(sorted(fluid_schemes()))}"
        )
    if model not in ROUTE_MODELS:
        raise ValueError(
            f"lb.scheme = {scheme!r}: fluid_model = {model!r} is not a route model; allowed {', '.join(ROUTE_MODELS)}"
        )
    return model


@dataclass
class FluidFabric:
    """Nodes, directed links and routing tables of one fabric (module docstring)."""

    fabric: Fabric
    salts: list[int]
    node_index: dict[str, int] = field(default_factory=dict)
    n_switches: int = 0
    link_src: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    link_dst: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rate_bps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    delay_ps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    egress: list[list[int]] = field(default_factory=list)
    routed_down: set[int] = field(default_factory=set)
    version: int = 0

    def __post_init__(self) -> None:
        f = self.fabric
        names = list(f.switch_tier) + list(f.hosts)
        self.node_index = {name: i for i, name in enumerate(names)}
        self.n_switches = len(f.switch_tier)
        n_links = 2 * len(f.links)
        src = np.empty(n_links, dtype=np.int64)
        dst = np.empty(n_links, dtype=np.int64)
        idx = self.node_index
        for i, link in enumerate(f.links):
            a, b = idx[link.a], idx[link.b]
            src[2 * i], dst[2 * i], src[2 * i + 1], dst[2 * i + 1] = a, b, b, a
        self.link_src, self.link_dst = src, dst
        self.rate_bps = np.repeat(np.array([link.rate_bps for link in f.links], dtype=np.int64), 2)
        self.delay_ps = np.repeat(np.array([link.delay_ps for link in f.links], dtype=np.int64), 2)
        self.egress = [[] for _ in names]
        for lid in range(n_links):  # a->b then b->a per fabric link: the network's port order
            self.egress[int(src[lid])].append(lid)
        self.tor_of_host = [idx[t] for t in f.host_tor]
        self._build_host_routes()
        self.compute_routes()

    # --- tables -------------------------------------------------------------------------
    @property
    def n_links(self) -> int:
        return len(self.link_src)

    def is_host(self, node: int) -> bool:
        return node >= self.n_switches

    def host_node(self, host: int) -> int:
        return self.n_switches + host

    def _build_host_routes(self) -> None:
        """Each host's NIC towards its ToR, and towards hosts its other NICs reach directly
        (NVLink peers), as ``Network._compute_routes`` chooses them."""
        self.host_nic: list[int] = []
        self.host_direct: list[dict[int, int]] = []
        for h in range(self.fabric.n_hosts):
            node = self.host_node(h)
            tor = self.tor_of_host[h]
            nic = next(lid for lid in self.egress[node] if int(self.link_dst[lid]) == tor)
            direct: dict[int, int] = {}
            for lid in self.egress[node]:
                if lid == nic:
                    continue
                peer = int(self.link_dst[lid])
                for out in self.egress[peer]:
                    far = int(self.link_dst[out])
                    if self.is_host(far):
                        direct[far - self.n_switches] = lid
            self.host_nic.append(nic)
            self.host_direct.append(direct)

    def compute_routes(self) -> None:
        """Equal-cost candidates per (switch, destination ToR) and per attached host, skipping
        links routing has removed (a switch pair is cut only when all its links are)."""
        self.version += 1
        ns = self.n_switches
        pair_links: dict[tuple[int, int], list[int]] = {}
        for lid in range(self.n_links):
            a, b = int(self.link_src[lid]), int(self.link_dst[lid])
            if a < ns and b < ns:
                pair_links.setdefault((a, b), []).append(lid)
        adj: list[list[int]] = [[] for _ in range(ns)]
        for (a, b), lids in pair_links.items():
            if not all(lid in self.routed_down for lid in lids):
                adj[a].extend(b for _ in lids)
        self._adj = adj
        # (switch, dst ToR node) -> links; built on first use, since a route touches only a
        # few of the switch x ToR groups of a large fabric
        self.groups: dict[tuple[int, int], list[int]] = {}
        self._dist: dict[int, list[int]] = {}
        self._switch_egress = [
            [
                (lid, int(self.link_dst[lid]))
                for lid in self.egress[sw]
                if int(self.link_dst[lid]) < ns and lid not in self.routed_down
            ]
            for sw in range(ns)
        ]
        # the same as arrays, one row per switch padded with -1 (vectorised candidate groups)
        width = max((len(e) for e in self._switch_egress), default=0)
        self._egress_link = np.full((ns, max(width, 1)), -1, dtype=np.int64)
        self._egress_peer = np.zeros((ns, max(width, 1)), dtype=np.int64)
        for sw, out in enumerate(self._switch_egress):
            for j, (lid, peer) in enumerate(out):
                self._egress_link[sw, j], self._egress_peer[sw, j] = lid, peer
        self._dist_matrix: np.ndarray | None = None  # [ToR row, switch], when dense
        self._tor_row = np.full(ns, -1, dtype=np.int64)
        self.direct: dict[tuple[int, int], int] = {}  # (switch, host) -> link to it
        for sw in range(ns):
            for lid in self.egress[sw]:
                peer = int(self.link_dst[lid])
                if self.is_host(peer):
                    self.direct[(sw, peer - ns)] = lid
        self._direct_arrays: tuple[np.ndarray, np.ndarray] | None = None

    def candidates(self, switch: int, dst: int) -> list[int]:
        """``switch.table[dst]``: the egress links of ``switch`` towards host ``dst``."""
        lid = self.direct.get((switch, dst))
        if lid is not None:
            return [lid]
        return self._group(switch, self.tor_of_host[dst])

    def _distances(self, tor: int) -> list[int]:
        """Hop distances from every switch to ``tor`` over switch links (hosts never transit);
        -1 where unreachable."""
        dist = self._dist.get(tor)
        if dist is None and not self._dist:
            self._all_distances()
            dist = self._dist.get(tor)
        if dist is None:
            dist = [-1] * self.n_switches
            dist[tor] = 0
            frontier = deque([tor])
            adj = self._adj
            while frontier:
                node = frontier.popleft()
                for nxt in adj[node]:
                    if dist[nxt] < 0:
                        dist[nxt] = dist[node] + 1
                        frontier.append(nxt)
            self._dist[tor] = dist
        return dist

    def _all_distances(self) -> None:
        """Breadth-first search from every ToR at once, one matrix product per hop, where
        the switch adjacency fits a dense matrix (a Python BFS per ToR is the slow part of
        routing a large fat-tree)."""
        ns = self.n_switches
        tors = sorted(set(self.tor_of_host))
        if ns > 8192 or len(tors) < 8:  # 8192 switches: a 256 MB float32 adjacency
            return
        adj = np.zeros((ns, ns), dtype=np.float32)
        for a, nbrs in enumerate(self._adj):
            adj[a, nbrs] = 1.0
        rows = np.arange(len(tors))
        dist = np.full((len(tors), ns), -1, dtype=np.int64)
        frontier = np.zeros((len(tors), ns), dtype=np.float32)
        frontier[rows, tors] = 1.0
        dist[rows, tors] = 0
        hop = 0
        while frontier.any():
            hop += 1
            new = ((frontier @ adj) > 0) & (dist < 0)
            dist[new] = hop
            frontier = new.astype(np.float32)
        for row, tor in zip(dist.tolist(), tors):
            self._dist[tor] = row
        self._dist_matrix = dist
        self._tor_row[tors] = np.arange(len(tors))

    def first_link(self, src: int, dst: int) -> int:
        return self.host_direct[src].get(dst, self.host_nic[src])

    # --- routes -------------------------------------------------------------------------
    def hash_route(self, src: int, dst: int, pkt_hash: int | None) -> list[int]:
        """Links of the walk ``trace_route`` takes with header hash ``pkt_hash`` (None: the
        first candidate everywhere, the representative route). Empty if unreachable."""
        return self._walk([self.first_link(src, dst)], src, dst, pkt_hash)

    def hash_walks(
        self, src: np.ndarray, dst: np.ndarray, pkt_hash: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`hash_route` of many walks at once, one hop of all of them per step:
        ``links[w, :length[w]]`` is walk ``w``'s route (``length`` 0: unreachable; the rest of
        the row is -1). ``pkt_hash``: uint64 header hashes, None for the representative route."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        n = len(src)
        lid = self._first_links(src, dst)
        columns = [lid.copy()]  # hop by hop: the rows are as long as the longest walk
        length = np.ones(n, dtype=np.int64)
        salts = self._salt_array()
        walking = np.arange(n)
        for _ in range(MAX_HOPS):
            node = self.link_dst[lid[walking]]
            at_switch = self._arrived(node, dst[walking], src[walking])
            walking, node = walking[at_switch], node[at_switch]
            if not len(walking):
                return _rows(columns, length), length
            table, row, n_cand = self._hop_candidates(node, dst[walking])
            pick = np.zeros(len(walking), dtype=np.int64)
            if pkt_hash is not None:
                hashed = n_cand > 1
                h = hop_hash_array(pkt_hash[walking[hashed]], salts[node[hashed]])
                pick[hashed] = (h % n_cand[hashed].astype(np.uint64)).astype(np.int64)
            nxt = table[row, pick]
            dead = n_cand == 0
            if dead.any():
                length[walking[dead]] = 0
                walking, nxt = walking[~dead], nxt[~dead]
            lid[walking] = nxt
            column = np.full(n, -1, dtype=np.int64)
            column[walking] = nxt
            columns.append(column)
            length[walking] += 1
        raise self._loop(src, dst, walking)

    def split_shares(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`split_route` of many flows at once: the fraction of each flow on every link
        when each switch divides what it receives equally among its candidates, pushed one hop
        of every flow per step. Entries ``(flow, link, share)`` ordered by flow, then hop; a
        flow with an unreachable branch has none."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        n = len(src)
        n_nodes = len(self.node_index)
        lid = self._first_links(src, dst)
        out_flow, out_link, out_share = [np.arange(n)], [lid], [np.ones(n)]
        flow, node, mass = np.arange(n), self.link_dst[lid], np.ones(n)
        dead = np.zeros(n, dtype=bool)
        for _ in range(MAX_HOPS):
            at_switch = self._arrived(node, dst[flow], src[flow])
            flow, node, mass = flow[at_switch], node[at_switch], mass[at_switch]
            if not len(flow):
                break
            table, row, n_cand = self._hop_candidates(node, dst[flow])
            dead[flow[n_cand == 0]] = True
            # every candidate takes an equal part of what reached the switch
            each = np.repeat(np.arange(len(flow)), n_cand)
            rank = np.arange(len(each)) - np.repeat(np.cumsum(n_cand) - n_cand, n_cand)
            links = table[row[each], rank]
            out_flow.append(flow[each])
            out_link.append(links)
            out_share.append(mass[each] / n_cand[each])
            # parts that meet at the next switch travel on together
            key, inverse = np.unique(flow[each] * n_nodes + self.link_dst[links], return_inverse=True)
            mass = np.bincount(inverse, weights=out_share[-1])
            flow, node = key // n_nodes, key % n_nodes
        else:
            raise self._loop(src, dst, flow)
        f, lk, sh = (np.concatenate(parts) for parts in (out_flow, out_link, out_share))
        keep = ~dead[f]
        order = np.argsort(f[keep], kind="stable")
        return f[keep][order], lk[keep][order], sh[keep][order]

    def _first_links(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """:meth:`first_link` of every (src, dst): the NIC, but towards a directly attached peer."""
        lid = np.asarray(self.host_nic, dtype=np.int64)[src]
        peered = np.flatnonzero(np.array([bool(d) for d in self.host_direct])[src])
        for w, a, b in zip(peered.tolist(), src[peered].tolist(), dst[peered].tolist()):
            lid[w] = self.host_direct[a].get(b, lid[w])
        return lid

    def _arrived(self, node: np.ndarray, dst: np.ndarray, src: np.ndarray) -> np.ndarray:
        """Which of ``node`` are switches (walks go on); a walk that reached a host must have
        reached its own."""
        ns = self.n_switches
        wrong = (node >= ns) & (node - ns != dst)
        if wrong.any():
            w = int(np.flatnonzero(wrong)[0])
            raise ValueError(f"route {src[w]}->{dst[w]} reached host {int(node[w]) - ns}")
        return node < ns

    def _loop(self, src: np.ndarray, dst: np.ndarray, walking: np.ndarray) -> ValueError:
        w = int(walking[0])
        return ValueError(f"route {src[w]}->{dst[w]}: no destination within {MAX_HOPS} hops (routing loop?)")

    def _hop_candidates(self, node: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``candidates(node[i], dst[i])`` for every i at once: a table of candidate rows, each
        i's row in it, and its number of candidates (0: unreachable)."""
        ns = self.n_switches
        direct_key, direct_lid = self._direct_table()
        # a switch's link to an attached host, else its candidates towards the host's ToR
        key = node * self.fabric.n_hosts + dst
        at = np.minimum(np.searchsorted(direct_key, key), max(len(direct_key) - 1, 0))
        is_direct = direct_key[at] == key if len(direct_key) else np.zeros(len(key), dtype=bool)
        tor = np.asarray(self.tor_of_host, dtype=np.int64)[dst]
        group_key = np.where(is_direct, -1, node * ns + tor)
        uniq, inverse = np.unique(group_key, return_inverse=True)
        groups, fanout = self._group_table(uniq // ns, uniq % ns, uniq >= 0)
        # direct links get rows of their own after the groups'
        table = np.zeros((len(uniq) + len(key), groups.shape[1]), dtype=np.int64)
        table[: len(uniq)] = groups
        row = np.where(is_direct, len(uniq) + np.arange(len(key)), inverse)
        table[len(uniq) :, 0] = np.where(is_direct, direct_lid[at], 0)
        return table, row, np.where(is_direct, 1, fanout[inverse])

    def _group_table(
        self, switch: np.ndarray, tor: np.ndarray, wanted: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_group` of every (switch, ToR) pair where ``wanted``: candidate rows (left
        aligned, in egress order) and their lengths; from the dense distances when the fabric
        has them, else one pair at a time."""
        if self._dist_matrix is None and not self._dist:
            self._all_distances()  # the dense search, where the fabric allows it
        dense = self._dist_matrix is not None and wanted.any() and (self._tor_row[tor[wanted]] >= 0).all()
        if not dense:
            groups = [self._group(int(a), int(b)) if w else [] for a, b, w in zip(switch, tor, wanted)]
            fanout = np.array([len(g) for g in groups], dtype=np.int64)
            table = np.zeros((len(groups), max(int(fanout.max(initial=0)), 1)), dtype=np.int64)
            for r, g in enumerate(groups):
                table[r, : len(g)] = g
            return table, fanout
        sw = np.where(wanted, switch, 0)
        dist = self._dist_matrix[np.where(wanted, self._tor_row[tor], 0)]
        here = np.take_along_axis(dist, sw[:, None], axis=1)[:, 0]
        peers = self._egress_peer[sw]
        peer_dist = np.take_along_axis(dist, peers, axis=1)
        ok = (self._egress_link[sw] >= 0) & (peer_dist == (here - 1)[:, None]) & (here > 0)[:, None]
        ok &= wanted[:, None]
        # candidates to the left, in egress order
        order = np.argsort(~ok, axis=1, kind="stable")
        table = np.take_along_axis(np.where(ok, self._egress_link[sw], 0), order, axis=1)
        return table, ok.sum(axis=1)

    def _group(self, switch: int, tor: int) -> list[int]:
        """``candidates(switch, host)`` for a host of ``tor`` not attached to ``switch``."""
        if switch == tor:
            return []
        key = (switch, tor)
        group = self.groups.get(key)
        if group is None:
            dist = self._distances(tor)
            want = dist[switch] - 1 if dist[switch] >= 0 else -2  # unreachable: no candidate
            group = self.groups[key] = [
                lid for lid, peer in self._switch_egress[switch] if dist[peer] == want
            ]
        return group

    def _direct_table(self) -> tuple[np.ndarray, np.ndarray]:
        """``direct`` as sorted keys ``switch * n_hosts + host`` and their links."""
        if self._direct_arrays is None:
            n_hosts = self.fabric.n_hosts
            items = sorted((sw * n_hosts + h, lid) for (sw, h), lid in self.direct.items())
            self._direct_arrays = (
                np.array([k for k, _ in items], dtype=np.int64),
                np.array([lid for _, lid in items], dtype=np.int64),
            )
        return self._direct_arrays

    def _salt_array(self) -> np.ndarray:
        """Every node's switch salt as uint64 (hosts: 0, never used)."""
        out = np.zeros(len(self.node_index), dtype=np.uint64)
        out[: len(self.salts)] = np.array(self.salts, dtype=np.uint64)
        return out

    def tor_split_route(self, src: int, dst: int, pkt_hash: int) -> dict[int, float]:
        """Equal shares over the first switch's candidates, one hash walk below each (the
        ``tor_split`` model). Empty if unreachable."""
        first = self.first_link(src, dst)
        node = int(self.link_dst[first])
        if self.is_host(node):
            return {first: 1.0}
        cands = self.candidates(node, dst)
        if not cands:
            return {}
        out = {first: 1.0}
        for lid in cands:
            walk = self._walk([lid], src, dst, pkt_hash)
            if not walk:
                return {}
            for link in walk:
                out[link] = out.get(link, 0.0) + 1.0 / len(cands)
        return out

    def _walk(self, links: list[int], src: int, dst: int, pkt_hash: int | None) -> list[int]:
        lid = links[-1]
        ns = self.n_switches
        for _ in range(MAX_HOPS):
            node = int(self.link_dst[lid])
            if node >= ns:
                if node - ns != dst:
                    raise ValueError(f"route {src}->{dst} reached host {node - ns}")
                return links
            cands = self.candidates(node, dst)
            n = len(cands)
            if not n:
                return []
            lid = cands[0] if n == 1 or pkt_hash is None else cands[hop_hash(pkt_hash, self.salts[node]) % n]
            links.append(lid)
        raise ValueError(f"route {src}->{dst}: no destination within {MAX_HOPS} hops (routing loop?)")

    def split_route(self, src: int, dst: int) -> dict[int, float]:
        """Fraction of a flow from ``src`` to ``dst`` on every link when each switch divides
        what it receives equally among its candidates (:meth:`split_shares` of one flow).
        Empty if unreachable."""
        _, links, shares = self.split_shares(np.array([src]), np.array([dst]))
        return dict(zip(links.tolist(), shares.tolist()))

    def stage_sets(self, src: int, dst: int) -> list[tuple[int, ...]]:
        """The links at each hop depth of the equal-cost DAG from ``src`` to ``dst`` (the
        ``pool`` model's constraints). Empty if unreachable."""
        first = self.first_link(src, dst)
        stages = [(first,)]
        frontier = {int(self.link_dst[first])}
        for _ in range(MAX_HOPS):
            frontier = {n for n in frontier if not self.is_host(n)}
            if not frontier:
                return stages
            links: set[int] = set()
            for node in frontier:
                cands = self.candidates(node, dst)
                if not cands:
                    return []
                links.update(cands)
            stages.append(tuple(sorted(links)))
            frontier = {int(self.link_dst[lid]) for lid in links}
        raise ValueError(f"route {src}->{dst}: no destination within {MAX_HOPS} hops (routing loop?)")
