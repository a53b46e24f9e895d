"""RailS: the per-server LPT rail planner for all-to-all traffic on a rail-optimized cluster.

Usable without the simulator: give it a GPU->GPU byte matrix ``d1`` and the number of rails, get
back a plan (per source server, per rail, an ordered list of :class:`RailChunk`), the predicted
per-NIC send/receive loads and the lower bound T* (``docs/schemes.md``, RailS: Bound, LPT planner).

GPU (server d, index n) has id ``d * n_rails + n``; NIC n of every server sits on rail n.

Planning, for each source server d independently (local information only):

1. D2[d, f] (bytes from server d to server f != d) is cut into full chunks of ``chunk_bytes`` and
   one smaller tail chunk. Each destination's *full* chunks are spread so every rail gets the floor
   or the ceiling of their count, and the tail may only go to a rail holding the fewest full chunks
   of that destination. Chunk counts per rail are then still floor/ceil of the total, and in bytes
   every rail carries D2[d, f] / N within one chunk (receive loads stay uniform).
2. Chunks are placed largest first (LPT) on the allowed rail with the least planned bytes (ties: the
   rail with least bytes to that destination, then the lowest rail index). Equal-size chunks are
   taken round by round over destinations, starting with server d + 1, so that the per-rail lists
   visit destinations in a shifted (all-to-all friendly) order instead of hammering one server.
3. The chunks of (d, f) are mapped back onto GPU pairs by cutting the byte stream of the pairs
   (source GPU major, then destination GPU) in placement order: a chunk that straddles two pairs
   becomes two entries. Per (src_gpu, dst_gpu), the planned bytes therefore equal d1 exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

DEFAULT_CHUNK_BYTES = 512_000
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

    ``chunks[d][n]`` is the ordered list of entries source server d sends on rail n.
    ``d2`` is the server-level matrix (diagonal zero) the plan was made from.
    """

    chunks: list[list[list[RailChunk]]]
    nic_send_bytes: np.ndarray
    nic_recv_bytes: np.ndarray
    d2: np.ndarray
    chunk_bytes: int

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
        """Optimal max NIC load: busiest server's bytes spread evenly over its N NICs."""
        return self.busiest_server_bytes / self.n_rails

    def t_star_ps(self, nic_rate_bps: int) -> int:
        """Lower bound T* on the all-to-all completion time at NIC rate ``nic_rate_bps`` (rounded up)."""
        _check_rate(nic_rate_bps)
        return _bytes_to_ps(self.busiest_server_bytes, nic_rate_bps * self.n_rails)

    def planned_time_ps(self, nic_rate_bps: int) -> int:
        """Time the busiest NIC of this plan needs at ``nic_rate_bps`` (rounded up)."""
        _check_rate(nic_rate_bps)
        return _bytes_to_ps(self.max_load_bytes, nic_rate_bps)

    @property
    def max_load_bytes(self) -> int:
        """Largest planned send or receive load of any NIC."""
        return _max_load(self.nic_send_bytes, self.nic_recv_bytes)

    @property
    def imbalance(self) -> float:
        """Max over mean planned NIC load (1.0 is perfect balance)."""
        return _imbalance(self.nic_send_bytes, self.nic_recv_bytes)

    def iter_chunks(self) -> Iterator[RailChunk]:
        """Every entry of the plan, server by server, rail by rail, in order."""
        for per_rail in self.chunks:
            for entries in per_rail:
                yield from entries


def plan_rails(d1: np.ndarray, n_rails: int, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> RailPlan:
    """Plan every server's off-server traffic of ``d1`` onto its ``n_rails`` NICs (RailS LPT)."""
    d1 = _validate(d1, n_rails)
    if not isinstance(chunk_bytes, (int, np.integer)) or chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be a positive integer, got {chunk_bytes!r}")
    n_servers = d1.shape[0] // n_rails
    blocks = _server_blocks(d1, n_rails)
    d2 = server_matrix(d1, n_rails)
    send = np.zeros((n_servers, n_rails), dtype=np.int64)
    recv = np.zeros((n_servers, n_rails), dtype=np.int64)
    chunks: list[list[list[RailChunk]]] = []
    for d in range(n_servers):
        placements = _lpt_server(d, d2[d], n_rails, int(chunk_bytes))
        per_rail = _split_onto_gpus(d, blocks, placements, n_rails)
        for f, rail, size in placements:
            send[d, rail] += size
            recv[f, rail] += size
        chunks.append(per_rail)
    return RailPlan(chunks, nic_send_bytes=send, nic_recv_bytes=recv, d2=d2, chunk_bytes=int(chunk_bytes))


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


def _lpt_server(d: int, row: np.ndarray, n_rails: int, chunk: int) -> list[tuple[int, int, int]]:
    """LPT placement of server ``d``'s chunks; returns (dst_server, rail, bytes) in placement order."""
    n_servers = row.shape[0]
    order = [(d + k) % n_servers for k in range(1, n_servers)]
    full = {f: int(row[f]) // chunk for f in order}
    tail = {f: int(row[f]) % chunk for f in order}
    load = [0] * n_rails
    to_dst = {f: [0] * n_rails for f in order}  # bytes to f per rail
    count = {f: [0] * n_rails for f in order}  # full chunks to f per rail
    extras_used = dict.fromkeys(order, 0)
    placements: list[tuple[int, int, int]] = []

    def place(f: int, size: int, allowed: list[int]) -> int:
        rail = min(allowed, key=lambda n: (load[n], to_dst[f][n], n))
        load[rail] += size
        to_dst[f][rail] += size
        placements.append((f, rail, size))
        return rail

    for k in range(max(full.values(), default=0)):
        for f in order:
            if k < full[f]:
                base, extra = divmod(full[f], n_rails)
                cnt = count[f]
                spare = extras_used[f] < extra  # rails may still take a ceil count
                allowed = [n for n in range(n_rails) if cnt[n] < base or (cnt[n] == base and spare)]
                rail = place(f, chunk, allowed)
                if cnt[rail] == base:
                    extras_used[f] += 1
                cnt[rail] += 1
    for f in sorted((f for f in order if tail[f]), key=lambda f: -tail[f]):
        fewest = min(count[f])
        place(f, tail[f], [n for n in range(n_rails) if count[f][n] == fewest])
    return placements


def _split_onto_gpus(
    d: int, blocks: np.ndarray, placements: list[tuple[int, int, int]], n_rails: int
) -> list[list[RailChunk]]:
    """Cut each destination's GPU-pair byte stream into the placed chunks, per rail in order."""
    per_rail: list[list[RailChunk]] = [[] for _ in range(n_rails)]
    streams: dict[int, list[list[int]]] = {}  # f -> remaining [src_gpu, dst_gpu, bytes], in order
    for f, rail, size in placements:
        stream = streams.get(f)
        if stream is None:
            stream = streams[f] = _pair_stream(d, f, blocks[d, :, f, :], n_rails)
        while size > 0:
            head = stream[-1]
            take = min(size, head[2])
            per_rail[rail].append(RailChunk(head[0], head[1], rail, take))
            head[2] -= take
            size -= take
            if head[2] == 0:
                stream.pop()
    return per_rail


def _pair_stream(d: int, f: int, block: np.ndarray, n_rails: int) -> list[list[int]]:
    """Non-zero GPU pairs of server d -> server f, source GPU major, reversed so pop() takes the next."""
    pairs = [
        [d * n_rails + n, f * n_rails + m, int(block[n, m])]
        for n in range(n_rails)
        for m in range(n_rails)
        if block[n, m] > 0
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
