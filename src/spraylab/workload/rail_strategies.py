"""Rail strategies: turn a GPU->GPU byte matrix (D1) into messages on a rail-optimized cluster.

GPU (server d, index n) is host ``d * N + n``; its NIC sits on rail n, its NVLink port on the
server's NVLink switch. GPUs do not forward packets, so relaying through a peer GPU's NIC (PXN,
RailS) is a *message* to that peer over NVLink followed by a message from the peer over its NIC,
the second depending on the first (store and forward per message). Same-server traffic always
goes GPU to GPU over NVLink, one message per pair. The four strategies (``docs/schemes.md``, RailS;
registered in :data:`STRATEGIES`, which ``workload.strategy`` and ``spraylab list`` read):

``rail_local``
    One message per GPU pair, GPU (d,n) -> GPU (f,m) over NIC n; cross-rail pairs cross a spine
    (the scenario's load balancer picks it: ECMP by default).
``rail_spray``
    The same messages as ``rail_local``; the run switches to per-packet random spraying at the
    switches (``lb.scheme = "rps"``) when the scenario asks for ECMP; see :func:`lb_override`.
``rail_matched`` (NCCL PXN)
    Traffic to GPU (f,m) leaves on NIC m: GPU (d,n) sends its bytes for (f,m) to GPU (d,m) over
    NVLink (one message per (n, m, f)), and GPU (d,m) sends one rail message (d,m) -> (f,m)
    carrying what all of server d has for (f,m), once those NVLink messages have arrived.
``rails`` (RailS)
    The plan of :func:`spraylab.rails.planner.plan_rails` (per-pair rail shares within a packet
    of D2 / N, cut into chunks of at most ``chunk_bytes``). Each chunk on rail r from server d
    to server f is one rail message (d,r) -> (f,r); the bytes of the chunk that start on another
    GPU first move to (d,r) over NVLink (one message per source GPU and chunk), and the bytes for
    GPUs other than (f,r) move on over NVLink after the chunk arrived (one message per
    destination GPU and chunk).

How ``rails`` sends its plan (choices of this model, see docs/rails.md):

* **Posting schedule.** The chunks of one (server, rail) are posted in plan order at the time a
  NIC sending the list back to back reaches them (bytes before the chunk / NIC rate), as an RDMA
  QP works through its WQEs in order. A chain "chunk j starts when chunk j-k is received" does
  not work here: the NIC round-robins the chunks in flight, so chunks started together finish
  together and the port idles for one latency per batch (measured: 25% idle with 64 KB chunks).
  If the network is slower than planned, posted chunks overlap (the NIC never idles because of
  the schedule); ``chunk_overhead_ps`` adds a per-chunk cost (the sender of each rail posts at
  most one chunk per that time; 0 by default) to model what fine chunks cost a NIC or its proxy.
* **NVLink relaying.** A chunk's NVLink pieces start ``lead_ps`` before its post time (default:
  two NVLink latencies plus twice the largest chunk's NVLink serialization); the rail message
  waits for them. Which GPU pairs a chunk carries is open in the rail-level plan; this module fills chunks
  in posting order with bytes of the rail's own GPU first (no NVLink hop before the NIC; its
  bytes for the destination rail GPU first, no hop after it either), then the same share of every
  remaining GPU pair. The planner's own source-major cut (every first chunk drawn from GPU 0)
  made GPU 0's NVLink port delay every rail's first chunk by ~2 us in a 7.7 MB/server test.

``rail_matched``'s NVLink messages leaving one GPU form a chain in destination order: a message
waits for the latest earlier one with at least ``nvlink_window`` bytes between them (default one
NVLink bandwidth-delay product), so the first rail messages can start after a fraction of a
microsecond instead of after all of the GPU's NVLink traffic. Direct messages are created in a
shifted order (GPU s sends to s+1, s+2, ... first) so that NIC round-robin does not make every
sender hit the same receiver at the same time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

import numpy as np
from pydantic import AfterValidator

from spraylab.model.types import one_of
from spraylab.net.framing import data_wire_bytes
from spraylab.rails.planner import DEFAULT_CHUNK_BYTES, DEFAULT_MTU_BYTES, RailPlan, plan_rails
from spraylab.workload.flows import FlowSpec

if TYPE_CHECKING:
    from spraylab.model.scenario import Scenario
    from spraylab.topology.fabric import Fabric

PS_PER_S = 10**12
WIRE_PACKET_BYTES = data_wire_bytes(4096)  # a full packet on the wire, for latency estimates only


@dataclass(frozen=True, slots=True)
class RailLinks:
    """What the strategies need to know about a rail-optimized fabric."""

    n_servers: int
    gpus_per_server: int
    nic_rate_bps: int
    nvlink_rate_bps: int
    nic_delay_ps: int
    nvlink_delay_ps: int

    @classmethod
    def from_fabric(cls, fabric: Fabric) -> RailLinks:
        if fabric.kind != "rail":
            raise ValueError(
                f"rail strategies need a rail-optimized fabric, got topology kind {fabric.kind!r}"
            )
        info = fabric.info
        gpu0 = fabric.hosts[0]
        nic = next(
            link
            for link in fabric.links
            if gpu0 in (link.a, link.b) and fabric.host_tor[0] in (link.a, link.b)
        )
        nvl = next(link for link in fabric.links if gpu0 in (link.a, link.b) and link is not nic)
        return cls(
            n_servers=int(info["servers"]),  # type: ignore[call-overload]
            gpus_per_server=int(info["gpus_per_server"]),  # type: ignore[call-overload]
            nic_rate_bps=nic.rate_bps,
            nvlink_rate_bps=nvl.rate_bps,
            nic_delay_ps=nic.delay_ps,
            nvlink_delay_ps=nvl.delay_ps,
        )

    @property
    def n_gpus(self) -> int:
        return self.n_servers * self.gpus_per_server

    def rail_one_way_ps(self, packet_bytes: int = WIRE_PACKET_BYTES) -> int:
        """GPU -> rail leaf -> GPU: two links, store and forward of one packet each."""
        return 2 * (self.nic_delay_ps + _ser_ps(packet_bytes, self.nic_rate_bps))

    def nvlink_one_way_ps(self, packet_bytes: int = WIRE_PACKET_BYTES) -> int:
        """GPU -> NVLink switch -> GPU."""
        return 2 * (self.nvlink_delay_ps + _ser_ps(packet_bytes, self.nvlink_rate_bps))

    def base_rtt_ps(self, packet_bytes: int = WIRE_PACKET_BYTES) -> int:
        """Round trip of a relayed message on the idle fabric: NVLink in, the rail, NVLink out
        (six hops), each crossed by one packet's propagation plus its serialization (store and
        forward), there and back. Completion-time checks allow T* plus this: T* counts only the
        NICs' serialization, while a relayed all-to-all also waits for its first chunk to reach
        the NIC over NVLink and for the last one to cross the rail and NVLink to its GPU."""
        return 2 * (self.rail_one_way_ps(packet_bytes) + 2 * self.nvlink_one_way_ps(packet_bytes))

    def default_nvlink_lead_ps(self, chunk_bytes: int) -> int:
        """How long before a chunk's post time its NVLink pieces start: two NVLink one-way
        latencies plus twice the chunk's NVLink serialization (room for sharing the port)."""
        return 2 * self.nvlink_one_way_ps() + 2 * _ser_ps(chunk_bytes, self.nvlink_rate_bps)

    def default_nvlink_window(self) -> int:
        """One bandwidth-delay product of the NVLink hop, in bytes."""
        return self.nvlink_rate_bps * 2 * self.nvlink_one_way_ps() // (8 * PS_PER_S)


@dataclass
class PhaseFlows:
    """The messages of one all-to-all phase.

    ``flows`` are ready for :meth:`Network.add_flows` (consecutive ids from ``first_flow_id``;
    dependencies name messages of the list or the ``after`` ids); ``plan`` is the RailS plan
    (strategy ``rails`` only).
    """

    flows: list[FlowSpec] = field(default_factory=list)
    plan: RailPlan | None = None


class _Builder:
    """Collects FlowSpecs; messages without dependencies inside the phase wait for ``after``."""

    def __init__(self, first_flow_id: int, start_ps: int, after: tuple[int, ...], group: str) -> None:
        self.out = PhaseFlows()
        self.next_id = first_flow_id
        self.start_ps = start_ps
        self.after = after
        self.group = group

    def add(self, src: int, dst: int, size: int, deps: Sequence[int] = (), at_ps: int = 0) -> int:
        """A message; with ``deps`` it starts when they are received, otherwise ``at_ps`` after
        the phase starts."""
        fid = self.next_id
        self.next_id += 1
        if deps:
            spec = FlowSpec(fid, src, dst, int(size), 0, tuple(deps), self.group)
        else:
            spec = FlowSpec(fid, src, dst, int(size), self.start_ps + at_ps, self.after, self.group)
        self.out.flows.append(spec)
        return fid

    def add_many(
        self,
        src: np.ndarray,
        dst: np.ndarray,
        size: np.ndarray,
        *,
        waits: np.ndarray | None = None,
        deps: Sequence[tuple[int, ...]] | None = None,
    ) -> None:
        """Messages in this order, as :meth:`add` with ``at_ps = 0``: message j depends on flow
        ``waits[j]`` (-1: none) or on the ids ``deps[j]`` (empty: none)."""
        count = len(size)
        if waits is not None:
            deps = [(w,) if w >= 0 else () for w in waits.tolist()]
        elif deps is None:
            deps = [()] * count
        first = self.next_id
        self.next_id += count
        start, after, group = self.start_ps, self.after, self.group
        self.out.flows.extend(
            FlowSpec(fid, s, t, z, 0, dep, group) if dep else FlowSpec(fid, s, t, z, start, after, group)
            for fid, s, t, z, dep in zip(
                range(first, first + count), src.tolist(), dst.tolist(), size.tolist(), deps
            )
        )


def rail_flows(
    d1: np.ndarray,
    links: RailLinks,
    strategy: str,
    first_flow_id: int = 0,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    mtu_bytes: int = DEFAULT_MTU_BYTES,
    chunk_overhead_ps: int = 0,
    nvlink_window: int | None = None,
    lead_ps: int | None = None,
    start_ps: int = 0,
    after: Sequence[int] = (),
    group: str = "",
) -> PhaseFlows:
    """Messages that move ``d1`` (G x G bytes, row = sender) with ``strategy``.

    Messages that wait for nothing else in the phase start at ``start_ps`` (absolute), or, when
    ``after`` lists flow ids, ``start_ps`` after those are received (to chain phases).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy = {strategy!r}: unknown; allowed: {', '.join(STRATEGIES)}")
    g = links.n_gpus
    d1 = np.asarray(d1, dtype=np.int64)
    if d1.shape != (g, g):
        raise ValueError(f"d1 must be {g} x {g} for this fabric, got shape {d1.shape}")
    nvlink_window = links.default_nvlink_window() if nvlink_window is None else nvlink_window
    b = _Builder(first_flow_id, start_ps, tuple(after), group)
    _same_server(b, d1, links)
    options = SendOptions(chunk_bytes, mtu_bytes, chunk_overhead_ps, nvlink_window, lead_ps)
    b.out.plan = STRATEGIES[strategy].send(b, d1, links, options)
    return b.out


def lb_override(scenario: Scenario) -> Scenario:
    """``rail_spray`` means per-packet spraying: a scenario that asks for it under ECMP runs with
    ``lb.scheme = "rps"`` instead (the result records the scheme actually used)."""
    if scenario.lb.scheme != "ecmp":
        return scenario
    if any(getattr(w, "strategy", None) == "rail_spray" for w in scenario.workload):
        return scenario.with_overrides({"lb.scheme": "rps"})
    return scenario


# --- strategies ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SendOptions:
    """The knobs of :func:`rail_flows` a strategy may read."""

    chunk_bytes: int
    mtu_bytes: int
    chunk_overhead_ps: int
    nvlink_window: int
    lead_ps: int | None


@dataclass(frozen=True, slots=True)
class RailStrategy:
    """A registered rail strategy: ``send`` adds the off-server messages of ``d1`` (the
    same-server NVLink messages are common to all) and returns the RailS plan, if any."""

    name: str
    summary: str
    send: Callable[[_Builder, np.ndarray, RailLinks, SendOptions], RailPlan | None]


STRATEGIES: dict[str, RailStrategy] = {}  # filled at the end of this module


def register_strategy(strategy: RailStrategy) -> RailStrategy:
    STRATEGIES[strategy.name] = strategy
    return strategy


def check_strategy(name: str) -> str:
    """Validator of a ``strategy`` key: a registered strategy's name."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown rail strategy; allowed: {one_of(list(STRATEGIES))}")
    return name


# A workload section's ``strategy`` key.
RailStrategyName = Annotated[str, AfterValidator(check_strategy)]


def _same_server(b: _Builder, d1: np.ndarray, links: RailLinks) -> None:
    """GPU -> GPU over NVLink inside each server, in shifted order: offset k outermost, then
    server, then GPU index."""
    n, m_count = links.gpus_per_server, links.n_servers
    k, d, i = np.meshgrid(np.arange(1, n), np.arange(m_count), np.arange(n), indexing="ij")
    src = (d * n + i).ravel()
    dst = (d * n + (i + k) % n).ravel()
    size = d1[src, dst]
    keep = size > 0
    b.add_many(src[keep], dst[keep], size[keep])


def _direct(b: _Builder, d1: np.ndarray, links: RailLinks) -> None:
    """rail_local / rail_spray: one message per off-server pair, sender GPU's own NIC, in
    shifted order: offset k = (dst - src) mod G outermost, then sender."""
    g, n = links.n_gpus, links.gpus_per_server
    flat = np.flatnonzero(d1 > 0)
    src, dst = flat // g, flat % g
    off = src // n != dst // n
    src, dst = src[off], dst[off]
    order = np.argsort((dst - src) % g * g + src, kind="stable")
    src, dst = src[order], dst[order]
    b.add_many(src, dst, d1[src, dst])


def _rail_matched(b: _Builder, d1: np.ndarray, links: RailLinks, nvlink_window: int) -> None:
    """PXN: bytes for GPU (f,m) gather on GPU (d,m) over NVLink, then one rail message each."""
    m_count, n = links.n_servers, links.gpus_per_server
    blocks = d1.reshape(m_count, n, m_count, n)
    # NVLink pieces (d,i) -> (d,m) for (f,m): per source GPU, in the order the rail messages
    # need them (server offset (f - d) mod M, then GPU offset (m - i) mod n).
    d, i, f, m = np.nonzero(blocks > 0)
    keep = (f != d) & (m != i)
    d, i, f, m = d[keep], i[keep], f[keep], m[keep]
    order = np.argsort(((d * n + i) * m_count + (f - d) % m_count) * n + (m - i) % n, kind="stable")
    d, i, f, m = d[order], i[order], f[order], m[order]
    size = blocks[d, i, f, m]
    src_gpu = d * n + i
    waits = _chain_segments(size, src_gpu, nvlink_window)
    first = b.next_id
    piece_ids = first + np.arange(len(size), dtype=np.int64)
    b.add_many(src_gpu, d * n + m, size, waits=np.where(waits >= 0, first + waits, -1))
    # Rail messages (d,m) -> (f,m), server offset outermost, then server, then rail; each waits
    # for its pieces in source-GPU order.
    totals = blocks.sum(axis=1)  # (d, f, m)
    rd, rf, rm = np.nonzero(totals)
    keep = rf != rd
    rd, rf, rm = rd[keep], rf[keep], rm[keep]
    order = np.argsort(((rf - rd) % m_count * m_count + rd) * n + rm, kind="stable")
    rd, rf, rm = rd[order], rf[order], rm[order]
    by_rail = np.argsort((d * m_count + f) * n + m, kind="stable")  # pieces by (d, f, m), then i
    piece_key = ((d * m_count + f) * n + m)[by_rail]
    rail_key = (rd * m_count + rf) * n + rm
    lo = np.searchsorted(piece_key, rail_key, side="left")
    hi = np.searchsorted(piece_key, rail_key, side="right")
    sorted_ids = piece_ids[by_rail].tolist()
    deps = [tuple(sorted_ids[a:z]) for a, z in zip(lo.tolist(), hi.tolist())]
    b.add_many(rd * n + rm, rf * n + rm, totals[rd, rf, rm], deps=deps)


def _rails(
    b: _Builder, d1: np.ndarray, links: RailLinks, plan: RailPlan, lead_ps: int | None, overhead_ps: int
) -> RailPlan:
    """RailS: each planned chunk is NVLink in -> rail message -> NVLink out, posted on schedule."""
    n = links.gpus_per_server
    rate = links.nic_rate_bps
    chunks = {
        (d, r): [_Chunk(f, size) for f, size in plan.rail_chunks[d][r]]
        for d in range(plan.n_servers)
        for r in range(n)
    }
    if lead_ps is None:
        largest = max((c.size for lst in chunks.values() for c in lst), default=0)
        lead_ps = links.default_nvlink_lead_ps(largest)
    last_hops: list[tuple[int, int, int, int]] = []  # (rail msg id, relay gpu, dst gpu, bytes)
    longest = max((len(lst) for lst in chunks.values()), default=0)
    offsets = {key: _offsets([c.size for c in lst]) for key, lst in chunks.items()}
    _cut_onto_gpus(d1, n, chunks, longest)
    for pos in range(longest):  # round by round, so equal post times keep the plan's order
        for (d, r), lst in chunks.items():
            if pos >= len(lst):
                continue
            ch = lst[pos]
            post_ps = max(offsets[(d, r)][pos] * 8 * PS_PER_S // rate, pos * overhead_ps)
            relay, dst_relay = d * n + r, ch.dst_server * n + r
            pieces = [
                b.add(src, relay, size, at_ps=max(0, post_ps - lead_ps))
                for src, size in ch.from_gpu.items()
                if src != relay
            ]
            fid = b.add(relay, dst_relay, ch.size, pieces, at_ps=post_ps)
            last_hops.extend(
                (fid, dst_relay, dst, size) for dst, size in ch.to_gpu.items() if dst != dst_relay
            )
    for fid, relay, dst, size in last_hops:
        b.add(relay, dst, size, (fid,))
    return plan


def _send_matched(b: _Builder, d1: np.ndarray, links: RailLinks, o: SendOptions) -> None:
    _rail_matched(b, d1, links, o.nvlink_window)


def _send_direct(b: _Builder, d1: np.ndarray, links: RailLinks, o: SendOptions) -> None:
    _direct(b, d1, links)


def _send_rails(b: _Builder, d1: np.ndarray, links: RailLinks, o: SendOptions) -> RailPlan:
    plan = plan_rails(d1, links.gpus_per_server, o.chunk_bytes, o.mtu_bytes)
    return _rails(b, d1, links, plan, o.lead_ps, o.chunk_overhead_ps)


for _strategy in (
    RailStrategy(
        "rail_matched",
        "NCCL PXN: bytes for GPU (f,m) gather on GPU (d,m) over NVLink, then one message on rail m",
        _send_matched,
    ),
    RailStrategy(
        "rail_local",
        "one message per GPU pair on the sender's own NIC; cross-rail pairs cross a spine (lb picks it)",
        _send_direct,
    ),
    RailStrategy(
        "rail_spray",
        "rail_local's messages sprayed per packet (an ecmp run switches to lb.scheme = 'rps')",
        _send_direct,
    ),
    RailStrategy(
        "rails",
        "RailS: planned per-pair rail shares in chunks of at most `chunk` bytes, relayed over NVLink",
        _send_rails,
    ),
):
    register_strategy(_strategy)


# --- helpers ---------------------------------------------------------------------------------------


@dataclass
class _Chunk:
    """One planned chunk to ``dst_server``; its bytes per source and per destination GPU are
    filled in by :func:`_cut_onto_gpus`."""

    dst_server: int
    size: int = 0
    from_gpu: dict[int, int] = field(default_factory=dict)
    to_gpu: dict[int, int] = field(default_factory=dict)


def _cut_onto_gpus(d1: np.ndarray, n: int, chunks: dict[tuple[int, int], list[_Chunk]], longest: int) -> None:
    """Decide which GPU pairs' bytes each chunk carries (the rail-level plan leaves it open).

    Chunks of server pair (d, f) are filled in posting order (round by round over the rails).
    A chunk on rail r first takes bytes that start on GPU (d, r) itself, so they need no NVLink
    hop before the NIC; those for GPU (f, r) first, which need none after it either. When that
    GPU has nothing left for server f, the chunk takes the same share of every remaining GPU
    pair (largest-remainder rounding), which spreads the NVLink relaying over all GPUs. GPU-pair
    bytes are conserved exactly; NIC loads do not depend on this choice.
    """
    m_count = d1.shape[0] // n
    blocks = d1.reshape(m_count, n, m_count, n)
    left: dict[tuple[int, int], np.ndarray] = {}
    for pos in range(longest):
        for (d, r), lst in chunks.items():
            if pos >= len(lst):
                continue
            ch = lst[pos]
            f = ch.dst_server
            rem = left.get((d, f))
            if rem is None:
                rem = left[(d, f)] = blocks[d, :, f, :].astype(np.int64)
            take = np.zeros_like(rem)
            need = ch.size
            own = min(need, int(rem[r, r]))
            take[r, r] = own
            need -= own
            if need:
                row = _share(rem[r] - take[r], need)
                take[r] += row
                need -= int(row.sum())
            if need:
                take += _share(rem - take, need)
            rem -= take
            ch.from_gpu = {d * n + i: int(v) for i, v in enumerate(take.sum(axis=1)) if v > 0}
            ch.to_gpu = {f * n + j: int(v) for j, v in enumerate(take.sum(axis=0)) if v > 0}


def _share(avail: np.ndarray, amount: int) -> np.ndarray:
    """``amount`` bytes taken from ``avail`` in proportion (all of it if it holds no more)."""
    total = int(avail.sum())
    if amount >= total:
        return avail.copy()
    scaled = avail * amount
    take = scaled // total
    short = amount - int(take.sum())
    if short:
        frac = np.where(avail > take, scaled % total, -1).ravel()
        top = np.argsort(-frac, kind="stable")[:short]
        take.ravel()[top] += 1
    return take


def _offsets(sizes: Sequence[int]) -> list[int]:
    """Bytes before each message of a list sent back to back."""
    out, total = [], 0
    for size in sizes:
        out.append(total)
        total += int(size)
    return out


def _chain_segments(sizes: np.ndarray, segment: np.ndarray, window: int) -> np.ndarray:
    """For messages sent in this order, in runs of equal ``segment`` values (sizes > 0): the
    index (into the whole array) each one waits for, -1 for none.

    Message j waits for the latest message i < j of its run such that the messages strictly
    between them hold at least ``window`` bytes: those keep the port busy while i's last bytes
    land. So at least two messages are in flight, and about ``window`` bytes beyond the oldest.
    """
    count = len(sizes)
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    prefix = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
    starts = np.flatnonzero(np.concatenate(([True], segment[1:] != segment[:-1])))
    seg_start = np.repeat(starts, np.diff(np.append(starts, count)))
    j = np.arange(count)
    # the latest i in [seg_start, j) with prefix[j] - prefix[i + 1] >= window: prefix is
    # strictly increasing (sizes > 0), so the count of prefix[1..j] at or below the threshold
    i = np.searchsorted(prefix[1:], prefix[j] - window, side="right") - 1
    i = np.minimum(i, j - 1)
    return np.where(i >= seg_start, i, -1)


def _ser_ps(n_bytes: int, rate_bps: int) -> int:
    return -(-n_bytes * 8 * PS_PER_S // rate_bps)
