"""Collectives as DAGs of point-to-point messages (:class:`FlowSpec`), plus NCCL bandwidth conventions.

Ring collectives: ranks are ``gpus[0..n-1]`` in ring order, rank r sends to rank r + 1 (mod n). Step
s of rank r sends buffer part (r - s) mod n and depends on the message rank r received at step s - 1
(the one its predecessor sent). Flow ids are ``first_flow_id + step * n + rank``.

Size convention (as nccl-tests): ``size_bytes`` is the whole buffer: the all-reduce buffer, the
all-gather *output* buffer and the reduce-scatter *input* buffer, so every ring message carries
``size_bytes / n`` (parts differ by at most one byte when n does not divide the size).

``start_ps`` delays the first messages; ``after`` lists flow ids the first messages wait for (to chain
a collective after another, e.g. combine after dispatch with ``start_ps`` = expert compute time).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spraylab.workload.flows import FlowSpec

PS_PER_S = 10**12
_BUS_FACTOR_KINDS = ("allreduce", "allgather", "reducescatter", "alltoall")


def ring_allreduce(
    gpus: Sequence[int],
    size_bytes: int,
    first_flow_id: int = 0,
    group: str = "allreduce",
    start_ps: int = 0,
    after: Sequence[int] = (),
) -> list[FlowSpec]:
    """Ring all-reduce: reduce-scatter then all-gather, 2(n-1) steps of n messages of size/n."""
    return _ring(gpus, size_bytes, 2 * (len(gpus) - 1), first_flow_id, group, start_ps, after)


def all_gather(
    gpus: Sequence[int],
    size_bytes: int,
    first_flow_id: int = 0,
    group: str = "allgather",
    start_ps: int = 0,
    after: Sequence[int] = (),
) -> list[FlowSpec]:
    """Ring all-gather of a ``size_bytes`` output buffer: n-1 steps of n messages of size/n."""
    return _ring(gpus, size_bytes, len(gpus) - 1, first_flow_id, group, start_ps, after)


def reduce_scatter(
    gpus: Sequence[int],
    size_bytes: int,
    first_flow_id: int = 0,
    group: str = "reducescatter",
    start_ps: int = 0,
    after: Sequence[int] = (),
) -> list[FlowSpec]:
    """Ring reduce-scatter of a ``size_bytes`` input buffer: n-1 steps of n messages of size/n."""
    return _ring(gpus, size_bytes, len(gpus) - 1, first_flow_id, group, start_ps, after)


def all_to_all_collective(
    gpus: Sequence[int],
    bytes_per_pair: int | np.ndarray,
    first_flow_id: int = 0,
    group: str = "alltoall",
    start_ps: int = 0,
    after: Sequence[int] = (),
    peers_in_flight: int = 0,
) -> list[FlowSpec]:
    """One message per ordered pair.

    ``bytes_per_pair`` is one size for every pair or an n x n matrix indexed by position in ``gpus``
    (e.g. a MoE dispatch matrix); zero entries and the diagonal (local copies) make no message.

    ``peers_in_flight = 0`` (default): every message at once, ids in (sender, receiver) order. A rank's
    NIC then interleaves all n - 1 of its QPs packet by packet.

    ``peers_in_flight = P >= 1``: rank r sends to r+1, r+2, ..., r+n-1 (mod n, positions in ``gpus``)
    and receives from r-1, r-2, ... in the same order; a message starts when the rank's (k-P)-th send
    and the receiver's (k-P)-th receive have completed: P send lanes and P receive lanes, so no rank
    ever has more than P sends or P receives in flight. Collective libraries do
    bound this: MPI's pairwise exchange sends to rank + step, one step at a time (Open MPI
    ``alltoall_intra_pairwise`` in coll_base_alltoall.c; P = 1 without its coupling to the matching
    receive); Open MPI's ``alltoall_intra_linear_sync`` keeps at most ``max_outstanding_reqs`` isends
    posted (it refills whichever completes first, where a lane here waits for its own message);
    NCCL's grouped ncclSend/ncclRecv walks rounds with ``p2pSchedule[round].sendRank`` = rank + delta
    (recent versions permute the deltas) over a few p2p channels, at most
    NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 operations per work batch. Ids are step-major (every rank's
    first message, then every second one, ...). A rank's first P messages wait for ``after`` and
    ``start_ps``; later ones start as soon as their lane frees.
    """
    n = _check_gpus(gpus, minimum=2)
    if peers_in_flight < 0:
        raise ValueError(f"peers_in_flight must be >= 0 (0 = all peers at once), got {peers_in_flight}")
    if np.isscalar(bytes_per_pair):
        sizes = np.full((n, n), bytes_per_pair, dtype=np.int64)
    else:
        sizes = np.asarray(bytes_per_pair)
    if sizes.shape != (n, n):
        raise ValueError(f"bytes_per_pair matrix must be {n} x {n} (row = sender), got shape {sizes.shape}")
    if sizes.min() < 0:
        raise ValueError(f"bytes_per_pair must be >= 0, found {sizes.min()}")
    flows: list[FlowSpec] = []
    deps = tuple(after)
    if peers_in_flight == 0:
        # Kept exactly as before the option existed (order included): flow ids fix QP creation
        # order and hence the NICs' round-robin order, so results of existing scenarios stay put.
        for i in range(n):
            for j in range(n):
                if i != j and sizes[i, j] > 0:
                    fid = first_flow_id + len(flows)
                    flows.append(FlowSpec(fid, gpus[i], gpus[j], int(sizes[i, j]), start_ps, deps, group))
        return flows
    p = peers_in_flight
    sent: list[list[int]] = [[] for _ in range(n)]  # flow ids of each rank's messages, in send order
    received: list[list[int]] = [[] for _ in range(n)]  # ... and of the messages it receives
    for shift in range(1, n):
        for i in range(n):
            j = (i + shift) % n
            if sizes[i, j] <= 0:
                continue
            fid = first_flow_id + len(flows)
            # A message needs a free send lane at i and a free receive lane at j (the matching
            # receive is posted in the same shift order with the same bound): it waits for the
            # messages P places earlier on both sides. Without the receive side a rank whose
            # senders drift apart would take more than P messages at once (an incast).
            lanes = tuple(side[-p] for side in (sent[i], received[j]) if len(side) >= p)
            if lanes:
                flow = FlowSpec(
                    fid, gpus[i], gpus[j], int(sizes[i, j]), 0, tuple(dict.fromkeys(lanes)), group
                )
            else:
                flow = FlowSpec(fid, gpus[i], gpus[j], int(sizes[i, j]), start_ps, deps, group)
            sent[i].append(fid)
            received[j].append(fid)
            flows.append(flow)
    return flows


def algbw_bps(size_bytes: int, time_ps: int) -> float:
    """NCCL algorithm bandwidth: buffer size over completion time, in bits/s."""
    if time_ps <= 0:
        raise ValueError(f"time_ps must be > 0, got {time_ps}")
    return size_bytes * 8 * PS_PER_S / time_ps


def busbw_bps(kind: str, size_bytes: int, n: int, time_ps: int) -> float:
    """NCCL bus bandwidth: algbw x 2(n-1)/n for all-reduce, x (n-1)/n for the other collectives.

    ``kind`` is allreduce, allgather, reducescatter or alltoall ("_" and "-" are ignored).
    """
    key = kind.lower().replace("_", "").replace("-", "")
    if key not in _BUS_FACTOR_KINDS:
        raise ValueError(f"kind must be one of {', '.join(_BUS_FACTOR_KINDS)}; got {kind!r}")
    if n <= 0:
        raise ValueError(f"n (ranks) must be > 0, got {n}")
    factor = 2 * (n - 1) / n if key == "allreduce" else (n - 1) / n
    return algbw_bps(size_bytes, time_ps) * factor


# --- helpers ---------------------------------------------------------------------------------------


def _ring(
    gpus: Sequence[int],
    size_bytes: int,
    n_steps: int,
    first_flow_id: int,
    group: str,
    start_ps: int,
    after: Sequence[int],
) -> list[FlowSpec]:
    """``n_steps`` ring steps; step s of rank r waits for step s-1 of rank r-1 (what r received)."""
    n = _check_gpus(gpus, minimum=2)
    if size_bytes < n:
        raise ValueError(f"size_bytes must be >= the {n} ranks (each message >= 1 byte), got {size_bytes}")
    parts = _split(size_bytes, n)
    flows: list[FlowSpec] = []
    for step in range(n_steps):
        for rank in range(n):
            fid = first_flow_id + step * n + rank
            if step == 0:
                deps, start = tuple(after), start_ps
            else:
                deps, start = (first_flow_id + (step - 1) * n + (rank - 1) % n,), 0
            dst = gpus[(rank + 1) % n]
            flows.append(FlowSpec(fid, gpus[rank], dst, parts[(rank - step) % n], start, deps, group))
    return flows


def _split(size_bytes: int, n: int) -> list[int]:
    """n near-equal parts of size_bytes (the first size % n parts one byte larger)."""
    base, extra = divmod(size_bytes, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def _check_gpus(gpus: Sequence[int], minimum: int) -> int:
    if len(gpus) < minimum:
        raise ValueError(f"gpus must list at least {minimum} GPUs, got {len(gpus)}")
    if len(set(gpus)) != len(gpus):
        raise ValueError(f"gpus must be distinct, got {list(gpus)}")
    return len(gpus)
