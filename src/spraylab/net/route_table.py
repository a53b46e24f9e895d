"""The route table of one fabric as arrays: the one route computation both engines read.

The packet engine's :class:`spraylab.net.routing.Routing` writes it into every switch of the
compiled core as C arrays (``Switch.install_routes``: each destination's group, each group's
candidates as link ids, which index the network's ports, ``Network.ports[l]``, held as a C array
of pointers, and the switch's salt), with a read-only ``RouteGroup`` view of ports per group for
Python selectors; the fluid engine's :class:`spraylab.fluid.routing.FluidFabric` walks it as
link ids, and the L0 bounds (``fluid/l0_split.py``, ``fluid/l0_rail.py``) read its distances,
egress lists, candidates and salts. So both engines route and hash alike by construction, not by
a test comparing two computations.

**Salts.** ``salt[switch]`` (uint64) is every switch's ECMP hash seed
(``spraylab.net.routes.hop_hash``), drawn once per run by :meth:`draw_salts` from the stream
the run derives after the flows' and the ECN marking's (``Network``, and
``fluid.engine.network_streams`` in the same order); zero until drawn. Routing does not change
it: a new routing version keeps the salts.

**Nodes and links.** Node ``i`` is the ``i``-th switch of ``Fabric.switch_tier`` (``Switch.index``)
for ``i < n_switches``, then host ``i - n_switches``. Directed link ``2 k`` is fabric link ``k``
from ``a`` to ``b`` and ``2 k + 1`` the reverse: the order ``Network.ports`` is built in, so every
node's egress links in ascending id are its ports in order (``egress_ptr``, ``egress_links``).

**Hosts.** ``host_nic[h]`` is host ``h``'s first link to its ToR; a host with more NICs (a GPU's
NVLink port) reaches the hosts behind their peers through them (``peer_key = src * n_hosts + dst``
sorted, ``peer_link``; a later NIC or peer port wins, as the packet engine always chose). The NIC
choice never changes with routing.

**Routing, one version at a time.** :meth:`compute` (at setup, then after every routing event:
``routed_down`` holds the directed link ids routing has removed) bumps ``version`` and derives:

* the switch adjacency: a switch pair is cut only when all its parallel links are routed down;
* hop distances from every switch to every ToR over switch links (hosts never transit): one
  bitset search for all ToRs at once on fabrics of up to ``DENSE_MAX_SWITCHES``, else a breadth-first
  search per ToR, each computed on first use;
* the candidate groups in CSR form: group ``g``'s links are
  ``group_links[group_ptr[g]:group_ptr[g + 1]]``. The first ``len(direct_key)`` groups are the
  links from a switch to an attached host (``direct_key = switch * n_hosts + host`` sorted, group
  ``i`` for key ``i``); ``group_of[switch, tor_row[tor]]`` is the group towards every host behind
  ``tor``: the switch's routed links towards switches one hop closer to ``tor``, in port order
  (none at ``tor`` itself and none where ``tor`` is unreachable). These are filled on first
  request, many pairs in one vectorised step, and kept until the next version: the packet engine
  requests them all at once, a flow-level walk only the few a large fabric's routes touch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

import numpy as np

# np.unique imports numpy.ma on its first call (numpy 2.x); imported here, before a network is
# built, its 1.5 MB of module objects do not land among the network's objects in the
# allocator's arenas and keep them resident after the network is freed (docs/performance.md, Memory)
import numpy.ma  # noqa: F401

from spraylab.topology.fabric import Fabric

__all__ = ["RouteTable", "DENSE_MAX_SWITCHES", "DENSE_MIN_TORS", "SALT_STREAM"]

# the derivation key of the switch salts' random stream (Simulator.derive_rng); part of every
# run's identity since the first release: changing it changes every ECMP choice
SALT_STREAM = 0x5A17

# The dense search keeps a (switches x ToRs) bitset: 8192 switches is the most it may take (a
# k = 64 fat-tree has 5120); below 8 ToRs a breadth-first search per ToR is cheaper.
# Where a Python search per ToR was the slow part of routing a large fat-tree: docs/fluid.md,
# "Scale (measured)" (the dense hop-distance search, up to 8192 switches).
DENSE_MAX_SWITCHES = 8192
DENSE_MIN_TORS = 8
# candidate links examined at once when filling groups (memory: a few int64 arrays this long)
FILL_CHUNK = 4_000_000


class RouteTable:
    """Links, distances and equal-cost candidate groups of one fabric (module docstring)."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        names = [*fabric.switch_tier, *fabric.hosts]
        self.node_index: dict[str, int] = {name: i for i, name in enumerate(names)}
        ns = self.n_switches = len(fabric.switch_tier)
        nh = self.n_hosts = fabric.n_hosts
        self.n_nodes = ns + nh
        idx = self.node_index
        a = np.array([idx[link.a] for link in fabric.links], dtype=np.int64)
        b = np.array([idx[link.b] for link in fabric.links], dtype=np.int64)
        src = np.empty(2 * len(a), dtype=np.int64)
        dst = np.empty(2 * len(a), dtype=np.int64)
        src[0::2], src[1::2], dst[0::2], dst[1::2] = a, b, b, a
        self.link_src, self.link_dst = src, dst
        # every node's egress links in ascending id: its ports in the order the network made them
        self.egress_links = np.argsort(src, kind="stable").astype(np.int64)
        self.egress_ptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=self.n_nodes))]).astype(
            np.int64
        )
        self.tor_of_host = np.array([idx[t] for t in fabric.host_tor], dtype=np.int64)
        self.tors = np.unique(self.tor_of_host)  # row r of the distances and groups: ToR tors[r]
        self.tor_row = np.full(ns, -1, dtype=np.int64)
        self.tor_row[self.tors] = np.arange(len(self.tors))
        self._build_hosts()
        self._build_direct()
        self.salt = np.zeros(ns, dtype=np.uint64)  # every switch's ECMP hash seed (draw_salts)
        self.routed_down: set[int] = set()  # directed link ids routing has removed
        self.version = 0  # bumped by every compute (RouteGroup.version in the packet engine)

    # --- the fabric's fixed part ------------------------------------------------------------
    @property
    def n_links(self) -> int:
        return len(self.link_src)

    def egress(self, node: int) -> np.ndarray:
        """``node``'s egress links in port order."""
        return self.egress_links[self.egress_ptr[node] : self.egress_ptr[node + 1]]

    def draw_salts(self, sim: Any) -> None:
        """Every switch's 64-bit ECMP hash seed, ``getrandbits(64)`` in switch order from the
        stream ``sim.derive_rng(SALT_STREAM)`` (``Simulator.derive_rng``). Both engines call it
        at the same point of the run's derivations (after the flows' and the ECN marking's
        streams: ``Network``, ``fluid.engine.network_streams``), so on one seed they hash alike."""
        rng = sim.derive_rng(SALT_STREAM)
        self.salt = np.array([rng.getrandbits(64) for _ in range(self.n_switches)], dtype=np.uint64)

    def _build_hosts(self) -> None:
        """Each host's NIC to its ToR, and the NIC towards hosts another NIC reaches directly."""
        ns, nh = self.n_switches, self.n_hosts
        src, dst = self.link_src, self.link_dst
        out = np.flatnonzero(src >= ns)  # ascending: each host's ports in order
        to_tor = out[dst[out] == self.tor_of_host[src[out] - ns]]
        hosts, first = np.unique(src[to_tor] - ns, return_index=True)
        self.host_nic = np.full(nh, -1, dtype=np.int64)
        self.host_nic[hosts] = to_tor[first]
        if (self.host_nic < 0).any():
            h = int(np.flatnonzero(self.host_nic < 0)[0])
            raise ValueError(f"host {self.fabric.hosts[h]!r}: no link to its ToR {self.fabric.host_tor[h]!r}")
        peers: dict[int, int] = {}  # src * n_hosts + dst -> link; later NICs and ports win
        multi = np.flatnonzero(np.diff(self.egress_ptr)[ns:] > 1)
        for h in multi.tolist():
            for lid in self.egress(ns + h).tolist():
                if lid == self.host_nic[h]:
                    continue
                for out_lid in self.egress(int(dst[lid])).tolist():
                    far = int(dst[out_lid])
                    if far >= ns:
                        peers[h * nh + far - ns] = lid
        keys = sorted(peers)
        self.peer_key = np.array(keys, dtype=np.int64)
        self.peer_link = np.array([peers[k] for k in keys], dtype=np.int64)
        self._peers = peers

    def _build_direct(self) -> None:
        """Every switch's link to each attached host (a later parallel link wins)."""
        ns, nh = self.n_switches, self.n_hosts
        lids = np.flatnonzero((self.link_src < ns) & (self.link_dst >= ns))[::-1]
        keys = self.link_src[lids] * nh + self.link_dst[lids] - ns
        self.direct_key, last = np.unique(keys, return_index=True)
        self.direct_link = lids[last]
        self._direct = dict(zip(self.direct_key.tolist(), range(len(self.direct_key))))

    def first_link(self, src: int, dst: int) -> int:
        """The link a packet from host ``src`` to host ``dst`` leaves on (``Host.route[dst]``)."""
        return self._peers.get(src * self.n_hosts + dst, int(self.host_nic[src]))

    def first_links(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """:meth:`first_link` of every (src, dst)."""
        lid = self.host_nic[src]
        if len(self.peer_key) and len(src):
            key = src * self.n_hosts + dst
            at = np.minimum(np.searchsorted(self.peer_key, key), len(self.peer_key) - 1)
            hit = self.peer_key[at] == key
            lid = np.where(hit, self.peer_link[at], lid)
        return lid

    def link_to_host(self, switch: int, host: int) -> int:
        """The link from ``switch`` to an attached ``host``; -1 if it has none."""
        g = self._direct.get(switch * self.n_hosts + host)
        return -1 if g is None else int(self.direct_link[g])

    def links_to_hosts(self, switch: np.ndarray, host: np.ndarray) -> np.ndarray:
        """The link from each ``switch`` to an attached ``host``; -1 where it has none."""
        g = self._direct_groups(switch, host)
        return np.where(g >= 0, self.direct_link[np.maximum(g, 0)], -1) if len(g) else g

    def _direct_groups(self, switch: np.ndarray, host: np.ndarray) -> np.ndarray:
        key = np.asarray(switch, dtype=np.int64) * self.n_hosts + np.asarray(host, dtype=np.int64)
        if not len(self.direct_key):
            return np.full(len(key), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.direct_key, key), len(self.direct_key) - 1)
        return np.where(self.direct_key[at] == key, at, -1)

    # --- one routing version ----------------------------------------------------------------
    def remove(self, links: Iterable[int]) -> None:
        """Routing has converged around the failed directed ``links``: recompute without them."""
        self.routed_down.update(int(lid) for lid in links)
        self.compute()

    def compute(self) -> None:
        """A new routing version from ``routed_down``: adjacency, routed egress, empty groups."""
        self.version += 1
        ns = self.n_switches
        src, dst = self.link_src, self.link_dst
        down = np.zeros(self.n_links, dtype=bool)
        down[sorted(self.routed_down)] = True
        sw = np.flatnonzero((src < ns) & (dst < ns))
        # a switch pair is cut only when all its parallel links (in either direction) are down
        key = src[sw] * ns + dst[sw]
        pairs, inverse = np.unique(key, return_inverse=True)
        cut_pairs = pairs[np.bincount(inverse, weights=~down[sw], minlength=len(pairs)) == 0]
        cut = np.isin(key, cut_pairs) | np.isin(dst[sw] * ns + src[sw], cut_pairs)
        self._adj_src, self._adj_dst = src[sw[~cut]], dst[sw[~cut]]
        # every switch's routed links towards switches, in port order
        routed = sw[~down[sw]]
        routed = routed[np.argsort(src[routed], kind="stable")]
        self.switch_egress_links = routed
        self.switch_egress_peer = dst[routed]
        self.switch_egress_ptr = np.concatenate(
            [[0], np.cumsum(np.bincount(src[routed], minlength=ns))]
        ).astype(np.int64)
        self._dense: np.ndarray | None = None  # [ToR row, switch], when the dense search applies
        self._rows: dict[int, np.ndarray] = {}  # ToR row -> distances, searched one ToR at a time
        self._adj_lists: list[list[int]] | None = None
        n_direct = len(self.direct_key)
        self._ptr = np.arange(n_direct + 1, dtype=np.int64)
        self._links = self.direct_link.copy()
        self._n_groups = n_direct
        self.group_of = np.full((ns, len(self.tors)), -1, dtype=np.int32)
        self._lists: dict[int, list[int]] = {}  # group -> candidates as a list (the scalar walks)

    @property
    def dense(self) -> bool:
        """Whether the distances come from one matrix search for all ToRs."""
        return self.n_switches <= DENSE_MAX_SWITCHES and len(self.tors) >= DENSE_MIN_TORS

    def distances(self, rows: np.ndarray) -> np.ndarray:
        """Hop distances ``[len(rows), n_switches]`` from every switch to the ToRs of ``rows``
        (-1 where unreachable)."""
        matrix, at = self._distance_rows(np.asarray(rows, dtype=np.int64))
        return matrix[at]

    def _distance_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A distance matrix holding ``rows`` and the row of each in it (no copy when dense)."""
        if self.dense:
            if self._dense is None:
                self._dense = self._all_distances()
            return self._dense, rows
        wanted, at = np.unique(rows, return_inverse=True)
        matrix = np.empty((len(wanted), self.n_switches), dtype=np.int64)
        for i, r in enumerate(wanted.tolist()):
            row = self._rows.get(r)
            if row is None:
                row = self._rows[r] = self._search(int(self.tors[r]))
            matrix[i] = row
        return matrix, at.reshape(-1)

    def _all_distances(self) -> np.ndarray:
        """Breadth-first search from every ToR at once: each switch holds the set of ToRs whose
        frontier it is on as a bitset (64 ToRs a word), and a hop ORs the sets of every switch's
        in-neighbours: a word per 64 ToRs and link instead of the float matrix product per hop
        this replaced (k = 64 fat-tree: 0.9 s against 4.9 s, docs/fluid.md)."""
        ns, n_tors = self.n_switches, len(self.tors)
        dist = np.full((n_tors, ns), -1, dtype=np.int64)
        rows = np.arange(n_tors)
        dist[rows, self.tors] = 0
        order = np.argsort(self._adj_dst, kind="stable")  # every switch's in-links together
        src = self._adj_src[order]
        heads, starts = np.unique(self._adj_dst[order], return_index=True)
        n_words = -(-n_tors // 64)
        frontier = np.zeros((ns, n_words), dtype="<u8")  # bit r of switch s: ToR row r
        frontier[self.tors, rows >> 6] |= np.left_shift(np.uint64(1), (rows & 63).astype(np.uint64))
        seen = frontier.copy()
        hop = 0
        while len(src) and frontier.any():
            hop += 1
            reached = np.zeros_like(frontier)
            reached[heads] = np.bitwise_or.reduceat(frontier[src], starts, axis=0)
            frontier = reached & ~seen
            seen |= frontier
            switch, row = np.nonzero(
                np.unpackbits(frontier.view(np.uint8), axis=1, bitorder="little")[:, :n_tors]
            )
            dist[row, switch] = hop
        return dist

    def _search(self, tor: int) -> np.ndarray:
        """Breadth-first search from one ToR over the switch adjacency."""
        if self._adj_lists is None:
            self._adj_lists = [[] for _ in range(self.n_switches)]
            for u, v in zip(self._adj_src.tolist(), self._adj_dst.tolist()):
                self._adj_lists[u].append(v)
        adj = self._adj_lists
        dist = [-1] * self.n_switches
        dist[tor] = 0
        frontier = deque([tor])
        while frontier:
            node = frontier.popleft()
            for nxt in adj[node]:
                if dist[nxt] < 0:
                    dist[nxt] = dist[node] + 1
                    frontier.append(nxt)
        return np.array(dist, dtype=np.int64)

    @property
    def group_ptr(self) -> np.ndarray:
        return self._ptr[: self._n_groups + 1]

    @property
    def group_links(self) -> np.ndarray:
        return self._links[: self._ptr[self._n_groups]]

    def tor_groups(self, switch: np.ndarray, row: np.ndarray) -> np.ndarray:
        """``group_of[switch, row]`` of every pair, filling the pairs not built yet."""
        switch = np.asarray(switch, dtype=np.int64)
        row = np.asarray(row, dtype=np.int64)
        g = self.group_of[switch, row]
        missing = g < 0
        if missing.any():
            n_tors = len(self.tors)
            key = np.unique(switch[missing] * n_tors + row[missing])
            self._fill(key // n_tors, key % n_tors)
            g = self.group_of[switch, row]
        return g

    def group_ids(self, switch: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The group of every switch towards host ``dst`` (``switch.table[dst]``): its link to
        an attached ``dst``, else its group towards the ToR of ``dst``."""
        switch = np.asarray(switch, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        g = self._direct_groups(switch, dst)
        via_tor = g < 0
        if via_tor.any():
            g[via_tor] = self.tor_groups(switch[via_tor], self.tor_row[self.tor_of_host[dst[via_tor]]])
        return g

    def candidates(self, switch: int, dst: int) -> list[int]:
        """``switch.table[dst]`` as link ids."""
        g = self._direct.get(switch * self.n_hosts + dst)
        if g is None:
            g = int(self.group_of[switch, self.tor_row[self.tor_of_host[dst]]])
            if g < 0:
                g = int(self.tor_groups(np.array([switch]), self.tor_row[self.tor_of_host[[dst]]])[0])
        cands = self._lists.get(g)
        if cands is None:
            cands = self._lists[g] = self._links[self._ptr[g] : self._ptr[g + 1]].tolist()
        return cands

    def _fill(self, switch: np.ndarray, row: np.ndarray) -> None:
        """Build the groups of distinct (switch, ToR row) pairs: the switch's routed links to
        switches one hop closer to the ToR, in port order."""
        matrix, at = self._distance_rows(row)
        here = matrix[at, switch]
        ptr = self.switch_egress_ptr
        # at the ToR itself (0) and where it is unreachable (-1): no candidate
        degree = np.where(here > 0, ptr[switch + 1] - ptr[switch], 0)
        ends = np.cumsum(degree)
        start = 0
        while start < len(switch):
            base = int(ends[start - 1]) if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, base + FILL_CHUNK, side="right")))
            deg = degree[start:stop]
            pair = np.repeat(np.arange(start, stop), deg)
            rank = np.arange(len(pair)) - np.repeat(np.cumsum(deg) - deg, deg)
            edge = ptr[switch[pair]] + rank
            ok = matrix[at[pair], self.switch_egress_peer[edge]] == here[pair] - 1
            counts = np.bincount(pair[ok] - start, minlength=stop - start)
            ids = self._append(counts, self.switch_egress_links[edge[ok]])
            self.group_of[switch[start:stop], row[start:stop]] = ids
            start = stop

    def _append(self, counts: np.ndarray, links: np.ndarray) -> np.ndarray:
        """New groups of ``counts`` candidates each, ``links`` their candidates in order: their ids."""
        n, m = self._n_groups, int(self._ptr[self._n_groups])
        if n + 1 + len(counts) > len(self._ptr):
            self._ptr = np.resize(self._ptr, max(2 * len(self._ptr), n + 1 + len(counts)))
        if m + len(links) > len(self._links):
            self._links = np.resize(self._links, max(2 * len(self._links), m + len(links)))
        self._ptr[n + 1 : n + 1 + len(counts)] = m + np.cumsum(counts)
        self._links[m : m + len(links)] = links
        self._n_groups = n + len(counts)
        return np.arange(n, n + len(counts), dtype=np.int64)
