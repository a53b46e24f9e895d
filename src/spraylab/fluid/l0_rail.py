"""``run.engine = "l0_rail"``: L0 of a rail workload straight from its GPU x GPU byte matrices.

At 8192 GPUs one MoE layer is millions of messages (top-2 routing reaches ~4 M GPU pairs per
phase, and the relaying strategies add NVLink pieces and chunks), more than a Python
message list can hold in seconds. This tier never builds messages: per all-to-all phase it
adds the wire bytes each rail strategy puts on every link, with numpy over the matrix.

The model, per phase (dispatch, then combine after the barrier and ``expert_compute``):

* **Pipelined phase.** The strategy's messages of the phase at every dependency depth (NVLink
  pieces, rail messages, last hops) share the phase: each link carries its bytes ``B_l`` at
  capacity ``C_l``, and a GPU pair's transfer ends ``max over the links its bytes cross of
  B_l / C_l`` after the phase starts, plus the latency of its message chain (each message's
  base latency as in the fluid engine: propagation plus the first packet's store and forward
  at every hop but the slowest). The phase ends with its last pair. For ``rail_local`` and
  ``rail_spray`` (one message per pair, one depth) this is exactly ``run.engine = "l0"``
  on the same scenario (tested, under a splitting scheme); for ``rail_matched`` and ``rails``
  it assumes the relays pipeline perfectly (``l0`` instead puts a barrier after every
  dependency depth, and ``rails``' posting schedule would make ``l0`` wait for the last post).
* **Spines.** Under ``ecmp`` each cross-rail message takes the spine the packet engine's
  switch hash gives it: the message's flow id (its place in the strategy's message list) and
  entropy, drawn from the same stream, hashed at its rail leaf with that leaf's salt, so both
  engines see the same collisions (tested against ``l0`` on the messages). Under every other
  scheme the bytes split evenly over the spines (a rail leaf has one link to each spine):
  exact for splitting schemes (rps, tor_assist's first-hop round robin), the ideal-adaptive
  bound for REPS, DFS and the adaptive schemes, and an approximation for ``spray_rr``, whose
  entropies' uneven shares it leaves out.
* **Links.** NIC and spine loads are exact for every strategy (``rails``: the planner's rail
  shares, whose chunks are whole packets but the last one, so a share's wire bytes are those
  of one message). NVLink loads are exact for ``rail_local``, ``rail_spray`` and
  ``rail_matched``; for ``rails`` they approximate the chunk cut (a chunk on rail r keeps GPU
  (d, r)'s own bytes first, the rest crosses NVLink), whose sequential fill would be a Python
  loop over chunks. ``summary["l0.binding"]`` names the role of the busiest link.

Its error against the fluid engine and the packet engine, measured where they run, is in
docs/fluid.md ("L0 of rail workloads"; ``benchmarks/fluid_l0_rail.py``).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from spraylab.fluid.engine import PS_PER_S, network_streams
from spraylab.fluid.routing import FluidFabric, hop_hash_array, packet_hash_array, random_words
from spraylab.metrics.result import Result
from spraylab.net.framing import DATA_OVERHEAD_BYTES, MIN_DATA_PAYLOAD_BYTES, data_wire_bytes
from spraylab.rails.planner import rail_shares
from spraylab.results import provenance
from spraylab.workload.base import GroupInfo
from spraylab.workload.rail_strategies import RailLinks
from spraylab.workload.rail_workload import RailWorkloadSection

__all__ = ["RailLinkIds", "SpineHash", "phase_l0", "run_l0_rail", "wire_bytes_array"]

PPB_PER_BPS = 8 * PS_PER_S  # ps per byte at 1 bit/s


def wire_bytes_array(size: np.ndarray, mtu: int) -> np.ndarray:
    """:func:`spraylab.fluid.engine.wire_bytes` of every size (int64; sizes >= 1)."""
    size = np.asarray(size, dtype=np.int64)
    packets = np.maximum(1, -(-size // mtu))
    # every packet carries the envelope; a last packet below the shortest frame is padded
    wire = (
        size
        + packets * DATA_OVERHEAD_BYTES
        + (data_wire_bytes(mtu) - mtu - DATA_OVERHEAD_BYTES) * (packets - 1)
    )
    last = size - (packets - 1) * mtu
    short = last < MIN_DATA_PAYLOAD_BYTES
    if short.any():
        pad = np.array([data_wire_bytes(x) - x - DATA_OVERHEAD_BYTES for x in range(MIN_DATA_PAYLOAD_BYTES)])
        wire[short] += pad[np.clip(last[short], 0, MIN_DATA_PAYLOAD_BYTES - 1)]
    return wire


def distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of non-negative integers, without a sort when
    they are multiples of a common step spanning a small range (MoE sizes: token multiples)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    step = int(np.gcd.reduce(values)) or 1
    index = values // step
    if int(index.max()) > 1 << 22:
        return np.unique(values, return_inverse=True)
    present = np.flatnonzero(np.bincount(index))
    lookup = np.zeros(int(index.max()) + 1, dtype=np.int64)
    lookup[present] = np.arange(len(present))
    return present * step, lookup[index]


def wire_grid(values: np.ndarray, mtu: int) -> np.ndarray:
    """:func:`wire_bytes_array` of every entry, 0 where the entry is 0 (no message)."""
    return np.where(values > 0, wire_bytes_array(values, mtu), 0)


def _pairs(d1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of every positive entry; of a transposed view, found in its base's memory
    order (a different order of the same pairs: results do not depend on it)."""
    g = d1.shape[0]
    if not d1.flags.c_contiguous and d1.T.flags.c_contiguous:
        flat = np.flatnonzero(d1.T > 0)
        return flat % g, flat // g
    flat = np.flatnonzero(d1 > 0)
    return flat // g, flat % g


def server_sums(d1: np.ndarray, m_count: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``row[d, f, i]``: bytes GPU (d, i) sends to server f; ``col[d, f, j]``: bytes server d
    sends to GPU (f, j). Reduced over contiguous memory, also when ``d1`` is a transposed view
    (MoE's combine), whose sums are its base's swapped."""
    g = m_count * n
    if not d1.flags.c_contiguous and d1.T.flags.c_contiguous:
        base_row, base_col = server_sums(d1.T, m_count, n)
        return base_col.transpose(1, 0, 2), base_row.transpose(1, 0, 2)
    d1 = np.ascontiguousarray(d1)
    row = d1.reshape(g, m_count, n).sum(axis=2).reshape(m_count, n, m_count).transpose(0, 2, 1)
    col = d1.reshape(m_count, n, g).sum(axis=1).reshape(m_count, m_count, n)
    return row, col


@dataclass(frozen=True)
class RailLinkIds:
    """Directed link ids of a rail fabric (``FluidFabric`` numbering), per GPU and per rail."""

    nic_up: np.ndarray  # [gpu]
    nic_down: np.ndarray
    nvl_up: np.ndarray
    nvl_down: np.ndarray
    leaf_spine: np.ndarray  # [rail, spine]
    spine_leaf: np.ndarray  # [spine, rail]
    nic_hop: tuple[float, float]  # (delay ps, ps per byte)
    nvl_hop: tuple[float, float]
    spine_hop: tuple[float, float]

    @classmethod
    def build(cls, ff: FluidFabric, links: RailLinks) -> RailLinkIds:
        names = list(ff.fabric.switch_tier) + list(ff.fabric.hosts)
        ns = ff.n_switches
        g, n = links.n_gpus, links.gpus_per_server
        table = ff.table
        nic_up = table.host_nic[:g].copy()
        nvl_up = np.full(g, -1, dtype=np.int64)
        for h in range(g):
            for lid in table.egress(ns + h).tolist():
                if lid != nic_up[h]:
                    nvl_up[h] = lid
        spines = [i for i, name in enumerate(names[:ns]) if name.startswith("spine")]
        rails = [names.index(f"rail{r}") for r in range(n)]
        by_pair = {(int(a), int(b)): lid for lid, (a, b) in enumerate(zip(ff.link_src, ff.link_dst))}
        leaf_spine = np.array([[by_pair[(r, s)] for s in spines] for r in rails], dtype=np.int64)
        spine_leaf = np.array([[by_pair[(s, r)] for r in rails] for s in spines], dtype=np.int64)

        def hop(lid: int) -> tuple[float, float]:
            return float(ff.delay_ps[lid]), PPB_PER_BPS / float(ff.rate_bps[lid])

        return cls(
            nic_up,
            nic_up ^ 1,  # directed link 2i + 1 is link 2i reversed
            nvl_up,
            nvl_up ^ 1,
            leaf_spine,
            spine_leaf,
            hop(int(nic_up[0])),
            hop(int(nvl_up[0])) if (nvl_up >= 0).all() else (0.0, 0.0),
            hop(int(leaf_spine[0, 0])),
        )


@dataclass(frozen=True)
class SpineHash:
    """ECMP's spine for each cross-rail message (module docstring): the entropy of every flow
    id, each rail leaf's salt and candidate order towards each other rail leaf."""

    entropy: np.ndarray  # [flow id]
    leaf_salt: np.ndarray  # uint64 [rail]
    up_link: np.ndarray  # [rail, destination rail, candidate]: leaf -> spine link ids
    down_link: np.ndarray  # [leaf -> spine link id, destination rail]: spine -> leaf link id

    @classmethod
    def build(cls, ff: FluidFabric, ids: RailLinkIds, flow_rng: random.Random, n_flows: int) -> SpineHash:
        n = ids.leaf_spine.shape[0]
        leaves = [int(ff.link_src[ids.leaf_spine[r, 0]]) for r in range(n)]
        up = np.zeros((n, n, ids.leaf_spine.shape[1]), dtype=np.int64)
        for r, leaf in enumerate(leaves):
            for q in range(n):
                if q != r:  # host q (server 0's GPU q) is on rail leaf q
                    up[r, q] = ff.candidates(leaf, q)
        down = np.full((ff.n_links, n), -1, dtype=np.int64)
        for s, spine_links in enumerate(ids.spine_leaf):
            for q in range(n):
                (lid,) = ff.candidates(int(ff.link_src[spine_links[q]]), q)  # one link per leaf
                down[ids.leaf_spine[:, s], q] = lid
        salts = ff.table.salt[leaves]  # each rail leaf's entry of the one salt array
        return cls(random_words(flow_rng, n_flows, 16), salts, up, down)

    def links(
        self, flow_id: np.ndarray, src_rail: np.ndarray, dst_rail: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The (leaf -> spine, spine -> leaf) links of cross-rail messages."""
        h = packet_hash_array(flow_id, self.entropy[flow_id])
        pick = hop_hash_array(h, self.leaf_salt[src_rail]) % np.uint64(self.up_link.shape[2])
        up = self.up_link[src_rail, dst_rail, pick.astype(np.int64)]
        return up, self.down_link[up, dst_rail]


def direct_flow_ids(src: np.ndarray, dst: np.ndarray, g: int, first: int) -> np.ndarray:
    """Flow ids of off-server messages as ``rail_flows`` numbers them for ``rail_local`` and
    ``rail_spray``: in shifted order (offset ``(dst - src) mod g``, then sender) from ``first``."""
    key = (dst - src) % g * g + src
    rank = np.empty(len(key), dtype=np.int64)
    rank[np.argsort(key, kind="stable")] = np.arange(len(key))
    return first + rank


@dataclass
class PhaseL0:
    """One phase: wire bytes per directed link, and every GPU pair's transfer."""

    load: np.ndarray  # [link] wire bytes
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    busy_ps: np.ndarray  # the busiest link the pair's bytes cross, B_l / C_l
    latency_ps: np.ndarray  # its message chain's base latency
    ideal_ps: np.ndarray  # idle-fabric FCT of the pair sent as one message on its route
    bound_ps: np.ndarray


def _route_times(
    hops: list[tuple[float, float]], first: np.ndarray, volume: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``engine.flow_times`` for a route of ``hops`` (delay, ps per byte), every size at once,
    in the same floating-point order (so the same integers)."""
    first = first.astype(float)
    hops_ps = np.zeros(len(first))
    for delay, ppb in hops:
        hops_ps = hops_ps + (delay + first * ppb)
    slowest = max(p for _, p in hops)
    host_slowest = max(hops[0][1], hops[-1][1])
    latency = hops_ps - first * slowest
    ideal = hops_ps + (volume - first) * slowest
    bound = hops_ps - first * (slowest - host_slowest) + (volume - first) * host_slowest
    return latency.astype(np.int64), ideal.astype(np.int64), np.minimum(bound, ideal).astype(np.int64)


def phase_l0(
    d1: np.ndarray,
    links: RailLinks,
    ids: RailLinkIds,
    strategy: str,
    cap_bps: np.ndarray,
    mtu: int,
    spine_hash: SpineHash | None = None,
    first_flow_id: int = 0,
) -> PhaseL0:
    """Link loads and pair transfers of moving ``d1`` with ``strategy`` (module docstring);
    with ``spine_hash``, ``rail_local``'s cross-rail messages take their ECMP spine (the
    phase's messages numbered from ``first_flow_id``)."""
    m_count, n = links.n_servers, links.gpus_per_server
    n_links = len(cap_bps)
    load = np.zeros(n_links)
    d1 = np.asarray(d1)
    src, dst = _pairs(d1)
    size = d1[src, dst].astype(np.int64)
    sd, si, fd, fj = src // n, src % n, dst // n, dst % n
    local = sd == fd
    sizes, at = distinct(size)
    wire = wire_bytes_array(sizes, mtu).astype(float)[at]

    def add(lids: np.ndarray, nbytes: np.ndarray) -> None:
        load[:] += np.bincount(lids, weights=nbytes, minlength=n_links)

    # same-server pairs: one NVLink message each, in every strategy
    add(ids.nvl_up[src[local]], wire[local])
    add(ids.nvl_down[dst[local]], wire[local])
    off = ~local
    n_spines = ids.leaf_spine.shape[1]
    cross = off & (si != fj)
    hashed = spine_hash is not None and strategy == "rail_local"
    if strategy in ("rail_local", "rail_spray"):
        add(ids.nic_up[src[off]], wire[off])
        add(ids.nic_down[dst[off]], wire[off])
        if hashed:
            n_local = int(np.count_nonzero(local & (src != dst)))
            flow_id = direct_flow_ids(src[off], dst[off], m_count * n, first_flow_id + n_local)
            cross_off = cross[off]
            spine_up, spine_down = spine_hash.links(flow_id[cross_off], si[cross], fj[cross])
            add(spine_up, wire[cross])
            add(spine_down, wire[cross])
        else:  # an equal share on every spine: per rail leaf, its cross-rail bytes over the spines
            up_rail = np.bincount(si[cross], weights=wire[cross], minlength=n) / n_spines
            down_rail = np.bincount(fj[cross], weights=wire[cross], minlength=n) / n_spines
            add(ids.leaf_spine.ravel(), np.repeat(up_rail, n_spines))
            add(ids.spine_leaf.T.ravel(), np.repeat(down_rail, n_spines))
    elif strategy == "rail_matched":
        relay = off & (si != fj)  # pieces (d,i) -> (d,j), one per GPU pair
        add(ids.nvl_up[src[relay]], wire[relay])
        add(ids.nvl_down[(sd * n + fj)[relay]], wire[relay])
        _, totals = server_sums(d1, m_count, n)  # (d, f, m): one rail message each
        totals = totals.copy()
        totals[np.arange(m_count), np.arange(m_count), :] = 0
        rail_wire = wire_grid(totals, mtu)
        add(ids.nic_up, rail_wire.sum(axis=1).ravel())  # NIC (d, m), summed over f
        add(ids.nic_down, rail_wire.sum(axis=0).ravel())  # NIC (f, m), summed over d
    elif strategy == "rails":
        row, col = server_sums(d1, m_count, n)
        row, col = row.copy(), col.copy()
        diag = np.arange(m_count)
        row[diag, diag, :] = 0
        col[diag, diag, :] = 0
        shares = rail_shares(col.sum(axis=2), n, mtu)  # (d, f, r) of planner.server_matrix(d1)
        share_wire = wire_grid(shares, mtu)
        add(ids.nic_up, share_wire.sum(axis=1).ravel())
        add(ids.nic_down, share_wire.sum(axis=0).ravel())
        _rails_nvlink(row, col, shares, ids, n, mtu, add)
    else:
        raise ValueError(f"strategy = {strategy!r}: not a rail strategy")

    busy = np.where(load > 0, load / (cap_bps / 8 / PS_PER_S), 0.0)
    if strategy in ("rail_local", "rail_spray"):
        pair_busy = np.maximum(busy[ids.nic_up[src]], busy[ids.nic_down[dst]])
        if hashed:
            pair_busy[cross] = np.maximum(pair_busy[cross], np.maximum(busy[spine_up], busy[spine_down]))
        else:
            spine_busy = np.maximum(
                busy[ids.leaf_spine].max(axis=1)[si], busy[ids.spine_leaf].max(axis=0)[fj]
            )
            pair_busy = np.where(cross, np.maximum(pair_busy, spine_busy), pair_busy)
    elif strategy == "rail_matched":
        relay_gpu = sd * n + fj
        pair_busy = np.maximum(busy[ids.nic_up[relay_gpu]], busy[ids.nic_down[dst]])
        pair_busy = np.where(
            cross,
            np.maximum(pair_busy, np.maximum(busy[ids.nvl_up[src]], busy[ids.nvl_down[relay_gpu]])),
            pair_busy,
        )
    else:  # rails: a pair's bytes may ride every rail its server pair has a share on
        nic = np.maximum(busy[ids.nic_up].reshape(m_count, 1, n), busy[ids.nic_down].reshape(1, m_count, n))
        server_busy = np.where(shares > 0, nic, 0.0).max(axis=2)
        pair_busy = np.maximum(
            server_busy[sd, fd], np.maximum(busy[ids.nvl_up[src]], busy[ids.nvl_down[dst]])
        )
    nvl_busy = np.maximum(busy[ids.nvl_up[src]], busy[ids.nvl_down[dst]])
    pair_busy = np.where(local, nvl_busy, pair_busy)

    # Times depend on a pair's route kind and size only: computed per distinct size (a few
    # multiples of the token size for MoE) and per first-packet size (at most the MTU).
    kind = np.where(local, 0, np.where(cross, 2, 1)).astype(np.int8)
    nvl, nic, spine = ids.nvl_hop, ids.nic_hop, ids.spine_hop
    routes = ([nvl, nvl], [nic, nic], [nic, spine, spine, nic])
    size_first = wire_bytes_array(np.minimum(sizes, mtu), mtu)
    size_wire = wire_bytes_array(sizes, mtu).astype(float)
    by_first = wire_bytes_array(np.arange(mtu + 1), mtu)  # first packet's wire bytes, by payload
    times = [_route_times(hops, size_first, size_wire) for hops in routes]
    ideal = np.stack([t[1] for t in times])[kind, at]
    bound = np.stack([t[2] for t in times])[kind, at]
    lat_by_first = np.stack([_route_times(hops, by_first, by_first.astype(float))[0] for hops in routes])
    first = np.minimum(sizes, mtu)[at]
    if strategy == "rail_matched":  # the rail message (d,j) -> (f,j), after an NVLink piece
        rail_lat = lat_by_first[1][np.minimum(totals[sd, fd, fj], mtu)]
        latency = np.where(off, rail_lat + np.where(cross, lat_by_first[0][first], 0), lat_by_first[0][first])
    elif strategy == "rails":  # NVLink in, the rail, NVLink out
        per_size = 2 * lat_by_first[0] + lat_by_first[1]
        latency = np.where(off, per_size[first], lat_by_first[0][first])
    else:
        latency = lat_by_first[kind, first]
    return PhaseL0(load, src, dst, size, pair_busy, latency, ideal, bound)


def _rails_nvlink(
    row: np.ndarray,
    col: np.ndarray,
    shares: np.ndarray,
    ids: RailLinkIds,
    n: int,
    mtu: int,
    add: Any,
) -> None:
    """NVLink bytes of ``rails`` (approximation, module docstring): of server pair (d, f), rail
    r's share keeps up to GPU (d, r)'s own bytes for server f; the rest of each GPU's bytes
    reach their rail GPUs over NVLink, and on the far side GPU (f, j) gets over NVLink what
    rail j's share did not carry to it directly. ``row``/``col``: :func:`server_sums`,
    same-server entries zeroed."""
    m_count = row.shape[0]
    sent_in = np.maximum(row - shares, 0)  # leaves (d,i) over NVLink
    sent_out = np.maximum(col - shares, 0)  # reaches (f,j) over NVLink
    ratio = 1.0 + DATA_OVERHEAD_BYTES / mtu
    gpu = np.arange(m_count * n)
    add(ids.nvl_up[gpu], sent_in.sum(axis=1).ravel() * ratio)
    add(ids.nvl_down[gpu], sent_out.sum(axis=0).ravel() * ratio)
    # the relays: in at (d, r) what other GPUs sent it, out at (f, r) what it forwards
    relay_in = np.maximum(shares - row, 0).sum(axis=1).ravel()
    relay_out = np.maximum(shares - col, 0).sum(axis=0).ravel()
    add(ids.nvl_down[gpu], relay_in * ratio)
    add(ids.nvl_up[gpu], relay_out * ratio)


def _section(scenario: Any) -> RailWorkloadSection:
    from spraylab.model.scenario import ScenarioError

    rail = [w for w in scenario.workload if isinstance(w, RailWorkloadSection)]
    if len(rail) != 1 or len(scenario.workload) != 1:
        kinds = [w.kind for w in scenario.workload]
        raise ScenarioError(
            [
                f"workload.kind = {kinds!r}: run.engine = 'l0_rail' needs exactly one rail workload (moe, rail_alltoall)"
            ]
        )
    if scenario.topology.events:
        raise ScenarioError(
            ["topology.events: not modelled by run.engine = 'l0_rail'; use 'fluid' or 'packet'"]
        )
    return rail[0]


@dataclass
class _Rows:
    """The flow table's columns (GPU-pair transfers and the barrier), as arrays."""

    src: list[np.ndarray]
    dst: list[np.ndarray]
    size: list[np.ndarray]
    group: list[np.ndarray]
    start: list[np.ndarray]
    finish: list[np.ndarray]
    ideal: list[np.ndarray]
    bound: list[np.ndarray]

    def append(self, group: int, p: PhaseL0 | None, start: float, finish: np.ndarray, **one: Any) -> None:
        if p is None:
            src, dst, size = np.array([one["src"]]), np.array([one["dst"]]), np.array([one["size"]])
            ideal, bound = np.array([one["ideal"]]), np.array([one["bound"]])
        else:
            src, dst, size, ideal, bound = p.src, p.dst, p.size, p.ideal_ps, p.bound_ps
        self.src.append(src)
        self.dst.append(dst)
        self.size.append(size)
        self.group.append(np.full(len(src), group, dtype=np.int64))
        self.start.append(np.full(len(src), start))
        self.finish.append(finish)
        self.ideal.append(ideal)
        self.bound.append(bound)

    def cat(self, name: str) -> np.ndarray:
        return np.concatenate(getattr(self, name))


def run_l0_rail(scenario: Any) -> Result:
    """``scenario`` (one rail workload on a rail fabric) under the matrix L0 (module docstring)."""
    # numpy advises transparent huge pages for large arrays; where the kernel defragments on
    # that advice (THP defrag = madvise) every fresh temporary costs a compaction: measured
    # 1.5-2x the system time of a 4096-GPU layer. The advice is restored afterwards.
    advise = getattr(getattr(np, "_core", None), "multiarray", None)
    toggle = getattr(advise, "_set_madvise_hugepage", None)
    before = toggle(False) if toggle is not None else None
    try:
        return _run_l0_rail(scenario)
    finally:
        if toggle is not None:
            toggle(before)


def _run_l0_rail(scenario: Any) -> Result:
    from spraylab.fluid.routing import route_model
    from spraylab.model.scenario import ScenarioError
    from spraylab.runs.experiment import build_fabric

    wall0 = time.perf_counter()
    w = _section(scenario)
    try:
        route_model(scenario.lb.scheme)
    except ValueError as exc:
        raise ScenarioError([str(exc)]) from None
    fabric = build_fabric(scenario.topology)
    _, flow_rng, table = network_streams(scenario.run.seed, fabric)
    ff = FluidFabric(table)
    links = RailLinks.from_fabric(fabric)
    ids = RailLinkIds.build(ff, links)
    cap = ff.rate_bps.astype(float)
    mtu = scenario.transport.mtu
    name = f"0:{w.kind}"
    matrices = w.phase_arrays(links.n_servers, links.gpus_per_server, scenario.run.seed)
    spine_hash = None
    if route_model(scenario.lb.scheme) == "hash" and w.strategy == "rail_local":
        # one flow per pair of every phase and a barrier between phases (rail_flows' numbering)
        n_flows = sum(int(np.count_nonzero(d1)) for _, d1 in matrices) + len(matrices) - 1
        spine_hash = SpineHash.build(ff, ids, flow_rng, n_flows)
    first_flow_id = 0
    rows = _Rows([], [], [], [], [], [], [], [])
    group_names: list[str] = []
    groups: dict[str, GroupInfo] = {}
    tx = np.zeros(ff.n_links)
    t0 = float(w.start)
    busiest = (-1.0, -1)
    for index, (phase, d1) in enumerate(matrices):
        group = f"{name}:{phase}" if phase else name
        if index:  # the barrier: one 1-byte message after the whole previous phase
            t0 = _barrier(rows, group_names, name, links, ids, cap, tx, mtu, t0, w)
        p = phase_l0(d1, links, ids, w.strategy, cap, mtu, spine_hash, first_flow_id)
        first_flow_id += len(p.src) + 1  # the phase's messages, then the barrier
        tx += p.load
        busy = np.where(p.load > 0, p.load / (cap / 8 / PS_PER_S), 0.0)
        if busy.max(initial=0.0) > busiest[0]:
            busiest = (float(busy.max()), int(busy.argmax()))
        finish = t0 + p.busy_ps + p.latency_ps
        group_names.append(group)
        rows.append(len(group_names) - 1, p, t0, finish)
        groups[group] = GroupInfo(
            group, "alltoall", round(int(np.asarray(d1).sum()) / (links.n_gpus - 1)), links.n_gpus
        )
        t0 = float(finish.max(initial=t0))
    from spraylab.fluid.l0_rail_result import rail_result

    return rail_result(scenario, ff, rows, group_names, groups, tx, cap, busiest, wall0, provenance.current())


def _barrier(
    rows: _Rows,
    group_names: list[str],
    name: str,
    links: RailLinks,
    ids: RailLinkIds,
    cap: np.ndarray,
    tx: np.ndarray,
    mtu: int,
    t0: float,
    w: RailWorkloadSection,
) -> float:
    """The barrier message (host 0 -> host 1, 1 byte) after the previous phase's last pair, as
    the rail workload builds it; returns the next phase's start."""
    token = data_wire_bytes(1)
    hop = ids.nvl_hop if links.gpus_per_server > 1 else ids.nic_hop
    up, down = (ids.nvl_up, ids.nvl_down) if links.gpus_per_server > 1 else (ids.nic_up, ids.nic_down)
    wire = float(wire_bytes_array(np.array([1]), mtu)[0])
    lat, ideal, bound = _route_times([hop, hop], np.array([float(token)]), np.array([wire]))
    busy = wire / (cap[up[0]] / 8 / PS_PER_S)
    tx[up[0]] += wire
    tx[down[1]] += wire
    start_b = t0
    finish_b = start_b + busy + float(lat[0])
    if f"{name}:barrier" not in group_names:
        group_names.append(f"{name}:barrier")
    rows.append(
        group_names.index(f"{name}:barrier"),
        None,
        start_b,
        np.array([finish_b]),
        src=0,
        dst=1,
        size=1,
        ideal=int(ideal[0]),
        bound=int(bound[0]),
    )
    lag = links.nvlink_one_way_ps(token) if links.gpus_per_server > 1 else links.rail_one_way_ps(token)
    return finish_b + max(0, w.expert_compute_ps() - lag)
