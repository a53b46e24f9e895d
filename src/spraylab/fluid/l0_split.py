"""L0 under the ``split`` route model (rps) without per-flow routes.

A split route is the flow's first link, an equal split down the equal-cost DAG from its source
ToR to its destination ToR, and the ToR's link to the destination. The middle part depends on
the ToR pair only and the link loads are linear in the bytes, so a phase's loads come from
pushing its ToR x ToR bytes down each destination ToR's DAG, one hop for all pairs at a time;
a flow's busiest link is a maximum over the DAG below its source ToR, computed once per
(destination ToR, switch) from the nearest switches up. This is the same arithmetic as summing
:meth:`FluidFabric.split_route` rows (tested equal), in memory proportional to the (ToR, switch)
pairs a phase reaches instead of the flows x route length (about 2,100 links per flow on a
k = 64 fat-tree).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from spraylab.fluid.routing import FluidFabric

__all__ = ["SplitPaths"]

EXPAND_CHUNK = 4_000_000  # candidate links examined at once (memory: a few arrays of this size)


class SplitPaths:
    """Every flow's first link, last link and ToR pair, or ``None`` from :meth:`build` when a
    flow cannot use this path (unreachable, or a fabric without all hop distances)."""

    def __init__(
        self,
        ff: FluidFabric,
        first: np.ndarray,
        second: np.ndarray,
        ts: np.ndarray,
        td: np.ndarray,
        tors: np.ndarray,
        dist: np.ndarray,
    ) -> None:
        self.ff = ff
        self.first, self.second, self.ts, self.td = first, second, ts, td  # td: row of dist, -1 = no middle
        self.tors, self.dist = tors, dist
        table = ff.table  # every switch's routed links to switches, in port order
        self.eg_link = table.switch_egress_links
        self.eg_peer = table.switch_egress_peer
        self.eg_count = np.diff(table.switch_egress_ptr)
        self.eg_ptr = table.switch_egress_ptr[:-1]
        self._visited: list[np.ndarray] = []  # (destination, switch) keys the last loads() reached

    @staticmethod
    def build(ff: FluidFabric, src: list[int], dst: list[int]) -> SplitPaths | None:
        table = ff.table
        ns = ff.n_switches
        s = np.asarray(src, dtype=np.int64)
        d = np.asarray(dst, dtype=np.int64)
        n = len(s)
        first = table.first_links(s, d)
        second = np.full(n, -1, dtype=np.int64)
        ts = np.full(n, -1, dtype=np.int64)
        td_node = np.full(n, -1, dtype=np.int64)
        node = table.link_dst[first]
        if ((node >= ns) & (node - ns != d)).any():
            return None  # a first hop into the wrong host
        at_switch = np.flatnonzero(node < ns)
        # the first switch's link to an attached destination, else the destination ToR's
        direct = table.links_to_hosts(node[at_switch], d[at_switch])
        second[at_switch] = direct
        via = at_switch[direct < 0]
        tor = table.tor_of_host[d[via]]
        last = table.links_to_hosts(tor, d[via])
        if (last < 0).any():
            return None
        second[via], ts[via], td_node[via] = last, node[via], tor
        used = np.unique(td_node[td_node >= 0])
        dist = table.distances(table.tor_row[used])
        td = np.full(n, -1, dtype=np.int64)
        middle = td_node >= 0
        td[middle] = np.searchsorted(used, td_node[middle])
        if middle.any() and (dist[td[middle], ts[middle]] <= 0).any():
            return None  # a source ToR that cannot reach the destination ToR
        return SplitPaths(ff, first, second, ts, td, used, dist)

    def _expand(self, keys: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Candidate links of (destination row, switch) keys, in chunks: (key index, link,
        peer key) of every candidate."""
        ns = self.ff.n_switches
        sw = keys % ns
        row = keys // ns
        counts = self.eg_count[sw]
        start = 0
        while start < len(keys):
            cum = np.cumsum(counts[start:])
            stop = start + max(1, int(np.searchsorted(cum, EXPAND_CHUNK, side="right")))
            idx = np.arange(start, stop)
            rep = np.repeat(idx, counts[idx])
            offsets = np.concatenate([[0], np.cumsum(counts[idx])[:-1]])
            pos = self.eg_ptr[sw[rep]] + (np.arange(len(rep)) - np.repeat(offsets, counts[idx]))
            peer = self.eg_peer[pos]
            ok = self.dist[row[rep], peer] == self.dist[row[rep], sw[rep]] - 1
            rep, pos, peer = rep[ok], pos[ok], peer[ok]
            yield rep, self.eg_link[pos], row[rep] * ns + peer, peer
            start = stop

    def loads(self, members: np.ndarray, volume: np.ndarray, n_links: int) -> np.ndarray:
        """Bytes per link of the flows ``members`` (each ``volume`` wire bytes)."""
        ns = self.ff.n_switches
        vol = volume[members]
        load = np.bincount(self.first[members], weights=vol, minlength=n_links).astype(float)
        two = self.second[members] >= 0
        load += np.bincount(self.second[members][two], weights=vol[two], minlength=n_links)
        mid = self.td[members] >= 0
        keys = self.td[members][mid] * ns + self.ts[members][mid]
        amount = vol[mid]
        self._visited = []
        while len(keys):
            keys, inv = np.unique(keys, return_inverse=True)
            amount = np.bincount(inv, weights=amount)
            self._visited.append(keys)
            ncand = np.zeros(len(keys))
            parts = list(self._expand(keys))
            for rep, _, _, _ in parts:
                ncand += np.bincount(rep, minlength=len(keys))
            next_keys, next_amount = [], []
            for rep, link, peer_key, peer in parts:
                share = amount[rep] / ncand[rep]
                load += np.bincount(link, weights=share, minlength=n_links)
                on = self.dist[peer_key // ns, peer] > 0  # not yet at the destination ToR
                next_keys.append(peer_key[on])
                next_amount.append(share[on])
            keys = np.concatenate(next_keys) if next_keys else np.zeros(0, dtype=np.int64)
            amount = np.concatenate(next_amount) if next_amount else np.zeros(0)
        return load

    def busiest(self, members: np.ndarray, busy: np.ndarray) -> np.ndarray:
        """Each member's largest ``busy`` over its links (call after :meth:`loads` for the same
        members: it reuses the (destination, switch) pairs reached)."""
        ns = self.ff.n_switches
        out = busy[self.first[members]].copy()
        two = self.second[members] >= 0
        out[two] = np.maximum(out[two], busy[self.second[members][two]])
        keys = np.unique(np.concatenate(self._visited)) if self._visited else np.zeros(0, dtype=np.int64)
        if not len(keys):
            return out
        level = self.dist[keys // ns, keys % ns]
        best = np.zeros(len(keys))  # max busy below each (destination, switch)
        for h in range(1, int(level.max()) + 1):
            at = np.flatnonzero(level == h)
            vals = np.zeros(len(at))
            for rep, link, peer_key, peer in self._expand(keys[at]):
                below = np.zeros(len(rep))
                deeper = self.dist[peer_key // ns, peer] > 0
                below[deeper] = best[np.searchsorted(keys, peer_key[deeper])]
                if len(rep):  # a key's candidates are contiguous and within one chunk
                    starts = np.flatnonzero(np.r_[True, rep[1:] != rep[:-1]])
                    vals[rep[starts]] = np.maximum.reduceat(np.maximum(busy[link], below), starts)
            best[at] = vals
        mid = self.td[members] >= 0
        kq = self.td[members][mid] * ns + self.ts[members][mid]
        out[mid] = np.maximum(out[mid], best[np.searchsorted(keys, kq)])
        return out
