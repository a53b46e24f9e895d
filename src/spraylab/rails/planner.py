"""RailS: the rail planner for all-to-all traffic on a rail-optimized cluster.

Usable without the simulator: give it a GPU->GPU byte matrix ``d1`` and the number of rails, get
back a plan (per source server, per rail, an ordered list of chunks and the GPU pairs each one
carries), the predicted per-NIC send/receive loads and the lower bound T* (``docs/schemes.md``, RailS).

GPU (server d, index n) has id ``d * n_rails + n``; NIC n of every server sits on rail n.

The bound: with fractions P[d, f, n] of D2[d, f] on rail n, T* is reached at P = 1/N, where every
NIC of server d sends sum_f D2[d, f] / N and every NIC of server f receives sum_d D2[d, f] / N.
The planner reaches it up to one packet per server pair, each server using local information only:

1. **Rail shares.** D2[d, f] is cut into whole packets (``mtu_bytes``) and one partial packet. Every
   rail gets floor(packets / N) of them; the ``packets mod N`` leftover packets go to the N rails
   starting at rail (d + f) mod N, and the partial packet to the next rail after those. Each share
   is therefore within one packet of D2[d, f] / N, so every NIC's send and receive load is within
   (M - 1) packets of the bound (M servers), whatever the matrix. Rotating the start by (d + f)
   matters: rounding every pair alike (a fixed tie-break) would put all senders' leftovers on the
   same receive NICs, and it keeps the typical excess to one or two packets.
2. **Chunks.** Server d sends in R rounds, R = ceil(its largest share / ``chunk_bytes``), and cuts
   every share into R chunks (fewer for shares below R x 64 KB, so no chunk is needlessly small;
   more if one would exceed ``chunk_bytes``), equal in whole packets. Chunk sizes thus follow the
   per-pair volume (about share / R), and no chunk ends in a partial packet except a share's last
   one: the plan's wire bytes stay within one header per chunk of the framed lower bound.
3. **Order.** A rail's chunks go round by round (a chunk belongs to the round holding its middle),
   inside a round in the shifted destination order d + 1, d + 2, ...: with similar volumes the
   senders of a rail aim at different receivers at any moment, as in a shifted all-to-all
   schedule. Cutting every share of a server into the same rounds keeps that alignment; cutting
   only the shares above ``chunk_bytes`` slid small shares between the pieces of large ones,
   skewed the senders' schedules against each other and cost 0.1 T* on skewed MoE dispatch.
4. **GPU pairs.** The chunks of (d, f) are mapped onto GPU pairs by cutting the byte stream of the
   pairs (source GPU major, then destination GPU) in posting order (by bytes before the chunk on
   its rail, then by rail): a chunk that straddles two pairs becomes two entries. Per (src_gpu,
   dst_gpu) the planned bytes equal d1 exactly. (The simulator's ``rails`` strategy re-assigns GPU
   pairs to chunks to shorten NVLink paths; NIC loads do not depend on that choice.)

The paper's planner (``SCHEMES.md``) cuts fixed-size chunks and places them longest first (LPT).
At the default 512 KB chunk and Mixtral-sized messages a server pair has only 4-9 chunks for 8
rails, so each server rounded whole chunks alone and the leftovers of different senders met on the
same receive NICs (planned max load up to 1.5 T*). Rail shares balance to one packet at any chunk
size, which leaves the chunk size to what it should trade off: per-chunk cost against interleaving.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from spraylab.net.framing import DATA_OVERHEAD_BYTES

DEFAULT_CHUNK_BYTES = 512_000
DEFAULT_MTU_BYTES = 4096  # the transport's default (``transport.mtu``)
MIN_CHUNK_BYTES = 64_000  # ~1.3 us at 400 Gb/s: shares are not cut finer than this
PS_PER_S = 10**12
STRATEGIES = ("rail_matched", "rail_local", "rail_spray", "rails")


@dataclass(frozen=True, slots=True)
class RailChunk:
    """``bytes`` from ``src_gpu`` to ``dst_gpu`` carried on NIC rail ``rail``.

    Path: src_gpu -> NVLink -> GPU (src server, rail) -> NIC rail -> NIC (dst server, rail)
    -> NVLink -> dst_gpu (the NVLink hops vanish when the GPU index already equals ``rail``).
    """

    src_gpu: int
    dst_gpu: int
    rail: int
    bytes: int


@dataclass(frozen=True)
class NicLoads:
    """Bytes each NIC sends and receives, shape (servers, rails)."""

    send_bytes: np.ndarray
    recv_bytes: np.ndarray

    @property
    def max_load_bytes(self) -> int:
        """Largest send or receive load of any NIC."""
        return _max_load(self.send_bytes, self.recv_bytes)

    @property
    def imbalance(self) -> float:
        """Max over mean NIC load (1.0 is perfect balance)."""
        return _imbalance(self.send_bytes, self.recv_bytes)


@dataclass(frozen=True)
class RailPlan:
    """Output of :func:`plan_rails`.

    ``rail_chunks[d][n]`` is the ordered list of chunks, as (destination server, bytes), that
    source server d sends on rail n: one rail message each. ``chunks[d][n]`` is the same list cut
    into GPU-pair entries (a chunk's entries are consecutive). ``shares[d, f, n]`` is the bytes
    of D2[d, f] on rail n; ``d2`` the server-level matrix (diagonal zero) the plan was made from.
    Loads (``nic_*_bytes``) are payload bytes; ``nic_*_wire_bytes`` add one header per packet.
    """

    chunks: list[list[list[RailChunk]]]
    rail_chunks: list[list[list[tuple[int, int]]]]
    shares: np.ndarray
    nic_send_bytes: np.ndarray
    nic_recv_bytes: np.ndarray
    nic_send_wire_bytes: np.ndarray
    nic_recv_wire_bytes: np.ndarray
    d2: np.ndarray
    chunk_bytes: int
    mtu_bytes: int

    @property
    def n_servers(self) -> int:
        return self.nic_send_bytes.shape[0]

    @property
    def n_rails(self) -> int:
        return self.nic_send_bytes.shape[1]

    @property
    def busiest_server_bytes(self) -> int:
        """max(max_d sum_f D2, max_f sum_d D2): the bytes the busiest server must send or receive."""
        if self.d2.size == 0:
            return 0
        return int(max(self.d2.sum(axis=1).max(), self.d2.sum(axis=0).max()))

    @property
    def bound_bytes(self) -> float:
        """Optimal max NIC load (payload): busiest server's bytes spread evenly over its N NICs."""
        return self.busiest_server_bytes / self.n_rails

    def t_star_ps(self, nic_rate_bps: int) -> int:
        """Lower bound T* on the all-to-all completion time at NIC rate ``nic_rate_bps``.

        The busiest server must put at least its bytes plus one header per ``mtu_bytes`` of them
        on the wire (a packet carries at most one MTU; N NICs need at least as many packets as
        one would), spread at best evenly over its N NICs: T* = wire(B) / (N x rate), rounded up.
        ACKs (64 B per packet the other way) are not counted: those of the last packets may leave
        after the phase ends, so counting them all would not be a bound.
        """
        _check_rate(nic_rate_bps)
        wire = wire_bytes(self.busiest_server_bytes, self.mtu_bytes)
        return _bytes_to_ps(wire, nic_rate_bps * self.n_rails)

    def planned_time_ps(self, nic_rate_bps: int) -> int:
        """Time the busiest NIC of this plan needs at ``nic_rate_bps``: its wire bytes (each chunk
        is one message, one header per started packet) over the rate, rounded up."""
        _check_rate(nic_rate_bps)
        return _bytes_to_ps(_max_load(self.nic_send_wire_bytes, self.nic_recv_wire_bytes), nic_rate_bps)

    @property
    def max_load_bytes(self) -> int:
        """Largest planned send or receive load (payload) of any NIC."""
        return _max_load(self.nic_send_bytes, self.nic_recv_bytes)

    @property
    def imbalance(self) -> float:
        """Max over mean planned NIC load (1.0 is perfect balance)."""
        return _imbalance(self.nic_send_bytes, self.nic_recv_bytes)

    @property
    def max_chunks_per_server(self) -> int:
        """The most chunks (rail messages) any server sends."""
        return max((sum(len(lst) for lst in per_rail) for per_rail in self.rail_chunks), default=0)

    def iter_chunks(self) -> Iterator[RailChunk]:
        """Every entry of the plan, server by server, rail by rail, in order."""
        for per_rail in self.chunks:
            for entries in per_rail:
                yield from entries


def plan_rails(
    d1: np.ndarray, n_rails: int, chunk_bytes: int = DEFAULT_CHUNK_BYTES, mtu_bytes: int = DEFAULT_MTU_BYTES
) -> RailPlan:
    """Plan every server's off-server traffic of ``d1`` onto its ``n_rails`` NICs (see the module
    docstring); ``chunk_bytes`` is the largest chunk, ``mtu_bytes`` the packet payload."""
    d1 = _validate(d1, n_rails)
    for name, value in (("chunk_bytes", chunk_bytes), ("mtu_bytes", mtu_bytes)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    chunk_bytes, mtu_bytes = int(chunk_bytes), int(mtu_bytes)
    n_servers = d1.shape[0] // n_rails
    blocks = _server_blocks(d1, n_rails)
    d2 = server_matrix(d1, n_rails)
    shares = rail_shares(d2, n_rails, mtu_bytes)
    send_wire = np.zeros((n_servers, n_rails), dtype=np.int64)
    recv_wire = np.zeros((n_servers, n_rails), dtype=np.int64)
    chunks: list[list[list[RailChunk]]] = []
    rail_chunks: list[list[list[tuple[int, int]]]] = []
    for d in range(n_servers):
        rounds = _rounds(shares[d], chunk_bytes, mtu_bytes)
        per_rail = [_rail_list(d, shares[d, :, n], rounds, chunk_bytes, mtu_bytes) for n in range(n_rails)]
        for n, lst in enumerate(per_rail):
            for f, size in lst:
                wire = wire_bytes(size, mtu_bytes)
                send_wire[d, n] += wire
                recv_wire[f, n] += wire
        rail_chunks.append(per_rail)
        chunks.append(_split_onto_gpus(d, blocks, per_rail, n_rails))
    return RailPlan(
        chunks,
        rail_chunks,
        shares,
        nic_send_bytes=shares.sum(axis=1),
        nic_recv_bytes=shares.sum(axis=0),
        nic_send_wire_bytes=send_wire,
        nic_recv_wire_bytes=recv_wire,
        d2=d2,
        chunk_bytes=chunk_bytes,
        mtu_bytes=mtu_bytes,
    )


def rail_shares(d2: np.ndarray, n_rails: int, mtu_bytes: int = DEFAULT_MTU_BYTES) -> np.ndarray:
    """[d, f, n]: bytes of D2[d, f] on rail n (step 1 of the module docstring).

    Every rail gets floor(P / N) of the pair's P whole packets; the P mod N leftovers go to rails
    (d + f) mod N, (d + f + 1) mod N, ... and the partial packet to the rail after them, which
    took no leftover (fewer than N of them), so no share exceeds D2 / N by a packet or more.
    """
    d2 = np.asarray(d2, dtype=np.int64)
    m = d2.shape[0]
    packets, partial = np.divmod(d2, mtu_bytes)
    base, extra = np.divmod(packets, n_rails)
    start = (np.arange(m)[:, None] + np.arange(m)[None, :]) % n_rails
    offset = (np.arange(n_rails)[None, None, :] - start[:, :, None]) % n_rails  # rank of the rail
    shares = (base[:, :, None] + (offset < extra[:, :, None])) * mtu_bytes
    return shares + np.where(offset == extra[:, :, None], partial[:, :, None], 0)


def wire_bytes(payload_bytes: int, mtu_bytes: int = DEFAULT_MTU_BYTES) -> int:
    """Bytes on the wire of one message: its payload plus one RoCEv2 envelope per packet
    (``spraylab.net.framing``; an empty message sends nothing). Padding of sub-minimum frames is
    ignored: a rail message's packets carry at least hundreds of bytes."""
    return int(payload_bytes) + -(-int(payload_bytes) // mtu_bytes) * DATA_OVERHEAD_BYTES


def server_matrix(d1: np.ndarray, n_rails: int) -> np.ndarray:
    """D2: bytes server d -> server f summed over GPU blocks, same-server (NVLink) traffic zeroed."""
    d1 = _validate(d1, n_rails)
    d2 = _server_blocks(d1, n_rails).sum(axis=(1, 3))
    np.fill_diagonal(d2, 0)
    return d2


def rail_loads_for_strategy(d1: np.ndarray, n_rails: int, strategy: str) -> NicLoads:
    """Per-NIC send/receive bytes of off-server traffic under ``strategy``, for analytical comparison.

    ``rail_matched``: traffic to GPU m leaves on NIC m of the source server, arrives at NIC m.
    ``rail_local`` / ``rail_spray``: leaves on the source GPU's own NIC n, arrives at NIC m.
    ``rails``: the :func:`plan_rails` plan with the default chunk size.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    if strategy == "rails":
        plan = plan_rails(d1, n_rails)
        return NicLoads(plan.nic_send_bytes, plan.nic_recv_bytes)
    d1 = _validate(d1, n_rails)
    blocks = _server_blocks(d1, n_rails).copy()  # [d, n, f, m]
    n_servers = blocks.shape[0]
    blocks[np.arange(n_servers), :, np.arange(n_servers), :] = 0
    recv = blocks.sum(axis=(0, 1))  # arrives at NIC m of server f: [f, m]
    send = blocks.sum(axis=(1, 2)) if strategy == "rail_matched" else blocks.sum(axis=(2, 3))
    return NicLoads(send_bytes=send, recv_bytes=recv)


# --- planning steps --------------------------------------------------------------------------------


def _rounds(shares: np.ndarray, chunk: int, mtu: int) -> int:
    """Rounds of a server's rail lists: as many chunks as its largest share needs (counted in
    whole packets per chunk, as :func:`_cut` cuts)."""
    unit = mtu if chunk >= mtu else 1
    units = -(-int(shares.max(initial=0)) // unit)
    return max(1, -(-units // (chunk // unit)))


def _rail_list(d: int, shares: np.ndarray, rounds: int, chunk: int, mtu: int) -> list[tuple[int, int]]:
    """Server d's chunks on one rail, (dst_server, bytes) in sending order (steps 2 and 3)."""
    m = shares.shape[0]
    smallest = min(MIN_CHUNK_BYTES, chunk)
    keyed = []
    for rank, f in enumerate((d + k) % m for k in range(1, m)):
        share = int(shares[f])
        if share == 0:
            continue
        pieces = min(rounds, -(-share // smallest))
        sizes = _cut(share, pieces, chunk, mtu)
        for i, size in enumerate(sizes):
            # piece i of p sits in the round holding its middle: the pieces span all rounds
            keyed.append(((2 * i + 1) * rounds // (2 * len(sizes)), rank, f, size))
    keyed.sort()
    return [(f, size) for _, _, f, size in keyed]


def _cut(share: int, pieces: int, chunk: int, mtu: int) -> list[int]:
    """``share`` bytes as ``pieces`` chunks (more if one would exceed ``chunk``), equal in whole
    packets, the partial packet (if any) ending the last one. Shares or chunks smaller than a
    packet per piece are cut in bytes instead."""
    unit = mtu if chunk >= mtu and share >= pieces * mtu else 1
    units = -(-share // unit)
    pieces = max(pieces, -(-units // (chunk // unit)))
    base, extra = divmod(units, pieces)
    sizes = [(base + (i < extra)) * unit for i in range(pieces)]
    sizes[-1] -= units * unit - share
    return sizes


def _split_onto_gpus(
    d: int, blocks: np.ndarray, per_rail: list[list[tuple[int, int]]], n_rails: int
) -> list[list[RailChunk]]:
    """Cut each destination's GPU-pair byte stream into the chunks in posting order (bytes before
    the chunk on its rail, then rail), and return each rail's entries in its sending order."""
    posted = []
    for rail, lst in enumerate(per_rail):
        offset = 0
        for pos, (f, size) in enumerate(lst):
            posted.append((offset, rail, pos, f, size))
            offset += size
    posted.sort()
    pieces: dict[tuple[int, int], list[RailChunk]] = {}
    streams: dict[int, list[list[int]]] = {}  # f -> remaining [src_gpu, dst_gpu, bytes], in order
    for _, rail, pos, f, size in posted:
        stream = streams.get(f)
        if stream is None:
            stream = streams[f] = _pair_stream(d, f, blocks[d, :, f, :], n_rails)
        out = pieces[(rail, pos)] = []
        while size > 0:
            head = stream[-1]
            take = min(size, head[2])
            out.append(RailChunk(head[0], head[1], rail, take))
            head[2] -= take
            size -= take
            if head[2] == 0:
                stream.pop()
    return [[e for pos in range(len(lst)) for e in pieces[(rail, pos)]] for rail, lst in enumerate(per_rail)]


def _pair_stream(d: int, f: int, block: np.ndarray, n_rails: int) -> list[list[int]]:
    """Non-zero GPU pairs of server d -> server f, source GPU major, reversed so pop() takes the next."""
    rows = block.tolist()
    pairs = [
        [d * n_rails + n, f * n_rails + m, rows[n][m]]
        for n in range(n_rails)
        for m in range(n_rails)
        if rows[n][m] > 0
    ]
    pairs.reverse()
    return pairs


# --- helpers ---------------------------------------------------------------------------------------


def _validate(d1: np.ndarray, n_rails: int) -> np.ndarray:
    """Check d1 and n_rails; return d1 as an int64 matrix."""
    if not isinstance(n_rails, (int, np.integer)) or n_rails <= 0:
        raise ValueError(f"n_rails must be a positive integer, got {n_rails!r}")
    arr = np.asarray(d1)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"d1 must be a square 2-D matrix (GPUs x GPUs), got shape {arr.shape}")
    if arr.shape[0] % n_rails:
        raise ValueError(
            f"d1 size {arr.shape[0]} must be divisible by n_rails={n_rails} (GPUs = servers x rails)"
        )
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError("d1 must hold finite byte counts, found NaN or infinity")
    if arr.size and arr.min() < 0:
        raise ValueError(f"d1 must hold non-negative byte counts, found {arr.min()}")
    as_int = arr.astype(np.int64)
    if not np.array_equal(as_int, arr):
        raise ValueError("d1 must hold whole byte counts (integers), found fractional values")
    return as_int


def _server_blocks(d1: np.ndarray, n_rails: int) -> np.ndarray:
    """View d1 as [src_server, src_index, dst_server, dst_index]."""
    n_servers = d1.shape[0] // n_rails
    return d1.reshape(n_servers, n_rails, n_servers, n_rails)


def _check_rate(nic_rate_bps: int) -> None:
    if nic_rate_bps <= 0:
        raise ValueError(f"nic_rate_bps must be > 0 (bits/s), got {nic_rate_bps}")


def _bytes_to_ps(n_bytes: int, rate_bps: int) -> int:
    """Serialization time of ``n_bytes`` at ``rate_bps``, rounded up to a whole picosecond."""
    return -(-int(n_bytes) * 8 * PS_PER_S // int(rate_bps))


def _max_load(send: np.ndarray, recv: np.ndarray) -> int:
    if send.size == 0:
        return 0
    return int(max(send.max(), recv.max()))


def _imbalance(send: np.ndarray, recv: np.ndarray) -> float:
    total = int(send.sum())
    if total == 0:
        return 1.0
    return _max_load(send, recv) / (total / send.size)
