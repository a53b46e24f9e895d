"""The fluid engine's routes: each flow's share of every link it uses, walked on the route
table both engines read.

:class:`FluidFabric` reads the :class:`~spraylab.net.route_table.RouteTable` of its fabric (the
one a :class:`spraylab.net.network.Network` installs into its switches' forwarding arrays, or
one built the same way without creating a port or a switch object,
:func:`spraylab.fluid.engine.network_streams`): directed link ``2 i`` is fabric link ``i`` from
``a`` to ``b`` and ``2 i + 1`` the reverse (the order of ``Network.ports``, so link tables line
up row for row), the equal-cost candidate groups in CSR form, direct groups towards attached
hosts, each host's NIC choice and the switch salts (``RouteTable.salt``, drawn from the packet
engine's random stream: the array the packet core's switches hash with); it adds every link's
rate and delay. A flow's route is then one of these models:

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

import math
import random

import numpy as np

from spraylab.lb.base import REGISTRY as lb_registry
from spraylab.net.route_table import RouteTable
from spraylab.net.routes import MAX_HOPS, hop_hash

__all__ = [
    "FluidFabric",
    "ROUTE_MODELS",
    "fluid_schemes",
    "hop_hash_array",
    "packet_hash_array",
    "route_model",
    "random_words",
    "random_samples",
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


def random_samples(rng: random.Random, population: int, k: int, count: int) -> list[list[int]]:
    """``[rng.sample(range(population), k) for _ in range(count)]``, leaving ``rng`` in the same
    state, for a population far larger than ``k`` (``population`` < 2^32).

    ``sample`` then draws each pick by ``_randbelow``: ``getrandbits(b)`` with ``b`` the
    population's bit length, repeated while the value is out of range, and again while it
    repeats an earlier pick of the same sample. Each such draw is one 32-bit output's top ``b``
    bits, so the outputs are drawn in bulk from a copy of the generator (``random_words``),
    the in-range ones taken ``k`` at a time (a sample with a repeat is redone one value at a
    time, skipping it, as ``sample`` does), and the generator is then advanced by exactly the
    outputs used. 1024 samples of 16 (spray_rr's entropies): 10 -> 2.5 ms."""
    if not (0 < population < 1 << 32 and k >= 0 and population > _sample_set_size(k)):
        return [rng.sample(range(population), k) for _ in range(count)]
    bits = population.bit_length()
    copy = random.Random()
    copy.setstate(rng.getstate())
    drawn = 0  # outputs drawn from the copy
    kept = np.zeros(0, dtype=np.int64)  # the in-range values, in draw order ...
    output = np.zeros(0, dtype=np.int64)  # ... and the output each is

    def draw(n_values: int) -> None:  # about population / 2^b of the outputs are in range
        nonlocal drawn, kept, output
        n = 64 + n_values * (1 << bits) * 9 // (8 * population)
        words = random_words(copy, n, bits)
        ok = np.flatnonzero(words < population)
        kept, output = np.concatenate([kept, words[ok]]), np.concatenate([output, ok + drawn])
        drawn += n

    samples: list[list[int]] = []
    at = 0  # the next value of kept
    while len(samples) < count:
        rows = min(count - len(samples), (len(kept) - at) // k) if k else count
        if k and not rows:
            draw((count - len(samples)) * k)
            continue
        block = kept[at : at + rows * k].reshape(rows, k)
        ordered = np.sort(block, axis=1)
        repeats = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        good = int(repeats[0]) if len(repeats) else rows
        samples += block[:good].tolist()
        at += good * k
        if good < rows:  # this sample repeats a value: redraw it as sample does
            picks: list[int] = []
            while len(picks) < k:
                if at == len(kept):
                    draw(k)
                value = int(kept[at])
                at += 1
                if value not in picks:
                    picks.append(value)
            samples.append(picks)
    if at:  # one output per draw used, as sample took them
        rng.getrandbits(32 * (int(output[at - 1]) + 1))
    return samples


def _sample_set_size(k: int) -> int:
    """``random.sample``'s threshold: a population above it is sampled by redrawing repeats
    (CPython's ``setsize``), the only path ``random_samples`` reproduces."""
    return 21 + (4 ** math.ceil(math.log(k * 3, 4)) if k > 5 else 0)


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


class FluidFabric:
    """The fluid engine's view of one fabric: the route table both engines read (with the
    switch salts, ``RouteTable.salt``) and every directed link's rate and delay (module
    docstring)."""

    def __init__(self, table: RouteTable) -> None:
        # the table of a network (Network.routing.table) or of network_streams: routes and
        # salts, one routing version at a time
        fabric = table.fabric
        self.fabric = fabric
        self.table = table
        self.node_index = table.node_index
        self.n_switches = table.n_switches
        self.link_src, self.link_dst = table.link_src, table.link_dst
        self.tor_of_host = table.tor_of_host
        self.rate_bps = np.repeat(np.array([link.rate_bps for link in fabric.links], dtype=np.int64), 2)
        self.delay_ps = np.repeat(np.array([link.delay_ps for link in fabric.links], dtype=np.int64), 2)

    @property
    def n_links(self) -> int:
        return len(self.link_src)

    def is_host(self, node: int) -> bool:
        return node >= self.n_switches

    def host_node(self, host: int) -> int:
        return self.n_switches + host

    def candidates(self, switch: int, dst: int) -> list[int]:
        """``switch.table[dst]``: the egress links of ``switch`` towards host ``dst``."""
        return self.table.candidates(switch, dst)

    def first_link(self, src: int, dst: int) -> int:
        return self.table.first_link(src, dst)

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
        lid = self.table.first_links(src, dst)
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
            start, n_cand = self._hop_candidates(node, dst[walking])
            pick = np.zeros(len(walking), dtype=np.int64)
            if pkt_hash is not None:
                hashed = n_cand > 1
                h = hop_hash_array(pkt_hash[walking[hashed]], salts[node[hashed]])
                pick[hashed] = (h % n_cand[hashed].astype(np.uint64)).astype(np.int64)
            dead = n_cand == 0
            if dead.any():
                length[walking[dead]] = 0
                walking, start, pick = walking[~dead], start[~dead], pick[~dead]
            nxt = self.table.group_links[start + pick]
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
        lid = self.table.first_links(src, dst)
        out_flow, out_link, out_share = [np.arange(n)], [lid], [np.ones(n)]
        flow, node, mass = np.arange(n), self.link_dst[lid], np.ones(n)
        dead = np.zeros(n, dtype=bool)
        for _ in range(MAX_HOPS):
            at_switch = self._arrived(node, dst[flow], src[flow])
            flow, node, mass = flow[at_switch], node[at_switch], mass[at_switch]
            if not len(flow):
                break
            start, n_cand = self._hop_candidates(node, dst[flow])
            dead[flow[n_cand == 0]] = True
            # every candidate takes an equal part of what reached the switch
            each = np.repeat(np.arange(len(flow)), n_cand)
            rank = np.arange(len(each)) - np.repeat(np.cumsum(n_cand) - n_cand, n_cand)
            links = self.table.group_links[start[each] + rank]
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

    def _hop_candidates(self, node: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``candidates(node[i], dst[i])`` for every i at once: where its candidates start in
        the table's ``group_links`` and how many there are (0: unreachable)."""
        g = self.table.group_ids(node, dst)
        ptr = self.table.group_ptr  # after group_ids: it may have added groups
        return ptr[g], ptr[g + 1] - ptr[g]

    def _salt_array(self) -> np.ndarray:
        """Every node's switch salt as uint64, the table's ``salt`` (hosts: 0, never used)."""
        out = np.zeros(len(self.node_index), dtype=np.uint64)
        out[: self.n_switches] = self.table.salt
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
        salt = self.table.salt
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
            lid = cands[0] if n == 1 or pkt_hash is None else cands[hop_hash(pkt_hash, int(salt[node])) % n]
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
