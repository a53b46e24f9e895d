"""Synthetic traffic patterns: permutation, incast, all-to-all and random pairs.

All randomness comes from the ``rng`` argument, so a pattern is reproducible from a seed.
Flow ids are consecutive from ``first_flow_id`` in the order the flows are returned.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

import numpy as np

from spraylab.workload.collectives import all_to_all_collective
from spraylab.workload.flows import FlowSpec

__all__ = ["all_to_all", "incast", "permutation", "random_pairs"]


def _check_hosts(hosts: Sequence[int], minimum: int) -> None:
    if len(hosts) < minimum or len(set(hosts)) != len(hosts):
        raise ValueError(f"need at least {minimum} distinct hosts, got {list(hosts)}")


def _repair(perm: list[int], key: Sequence[Hashable], rng: random.Random) -> None:
    """Swap targets until no ``i`` has ``key[i] == key[perm[i]]`` (a bad entry), where a fixing
    swap exists.

    A swap of ``perm[i]`` and ``perm[j]`` is only taken when neither side ends up bad, so
    the count of bad entries never grows and already-fixed entries stay fixed. The fixing swaps
    of a bad entry are found for all ``j`` at once (numpy), in increasing ``j``.
    """
    n = len(perm)
    keys = list(key)
    key_at = np.asarray(keys)
    target = np.asarray(perm)
    for i in range(n):
        if keys[i] != keys[perm[i]]:
            continue
        # j such that neither i nor j is bad after the swap
        fixing = (key_at[target] != keys[i]) & (key_at != keys[perm[i]])
        candidates = np.flatnonzero(fixing).tolist()
        if candidates:
            j = rng.choice(candidates)
            perm[i], perm[j] = perm[j], perm[i]
            target[i], target[j] = perm[i], perm[j]


def permutation(
    hosts: Sequence[int],
    size_bytes: int,
    rng: random.Random,
    start_ps: int = 0,
    first_flow_id: int = 0,
    avoid_same_group: Sequence[int] | None = None,
) -> list[FlowSpec]:
    """Each host sends one flow to one other host and receives exactly one (a derangement).

    With ``avoid_same_group`` (a group id per host, e.g. its ToR), no flow stays inside a
    group whenever the largest group holds at most half the hosts; otherwise as few as
    possible do (only the oversized group keeps internal flows).
    """
    _check_hosts(hosts, 2)
    n = len(hosts)
    perm = list(range(n))
    rng.shuffle(perm)
    # A random shuffle plus local swaps: cheap for any n and, unlike rejection sampling,
    # it does not blow up when the group constraint makes valid shuffles rare.
    _repair(perm, range(n), rng)  # no host sends to itself
    if avoid_same_group is not None:
        groups = list(avoid_same_group)
        if len(groups) != n:
            raise ValueError(f"avoid_same_group has {len(groups)} entries for {n} hosts")
        # Same host implies same group, so this pass cannot reintroduce self-flows.
        _repair(perm, groups, rng)
    return [FlowSpec(first_flow_id + i, hosts[i], hosts[perm[i]], size_bytes, start_ps) for i in range(n)]


def incast(
    senders: Sequence[int], receiver: int, size_bytes: int, start_ps: int = 0, first_flow_id: int = 0
) -> list[FlowSpec]:
    """Every sender sends ``size_bytes`` to ``receiver`` at the same time."""
    _check_hosts(senders, 1)
    if receiver in senders:
        raise ValueError(f"receiver {receiver} is also listed as a sender")
    return [FlowSpec(first_flow_id + i, src, receiver, size_bytes, start_ps) for i, src in enumerate(senders)]


def all_to_all(
    hosts: Sequence[int],
    size_bytes: int,
    start_ps: int = 0,
    first_flow_id: int = 0,
    peers_in_flight: int = 0,
) -> list[FlowSpec]:
    """One flow for every ordered pair of distinct hosts.

    ``peers_in_flight = 0``: all at once, ordered by (src, dst) position. ``P >= 1``: host r sends
    to r+1, r+2, ... (positions in ``hosts``, mod n) with at most P flows in flight, each later flow
    waiting for the one P places before it; see :func:`collectives.all_to_all_collective`.
    """
    _check_hosts(hosts, 2)
    if peers_in_flight:
        # One implementation of the windowed schedule for both all-to-all workloads.
        return all_to_all_collective(hosts, size_bytes, first_flow_id, "", start_ps, (), peers_in_flight)
    pairs = [(s, d) for s in hosts for d in hosts if s != d]
    return [FlowSpec(first_flow_id + i, s, d, size_bytes, start_ps) for i, (s, d) in enumerate(pairs)]


def random_pairs(
    hosts: Sequence[int],
    n_flows: int,
    size_bytes: int,
    rng: random.Random,
    start_ps: int = 0,
    first_flow_id: int = 0,
) -> list[FlowSpec]:
    """``n_flows`` flows, each from a uniform host to a uniform different host."""
    _check_hosts(hosts, 2)
    if n_flows < 0:
        raise ValueError(f"n_flows must be >= 0, got {n_flows}")
    flows = []
    for i in range(n_flows):
        s = rng.randrange(len(hosts))
        d = rng.randrange(len(hosts) - 1)
        if d >= s:
            d += 1
        flows.append(FlowSpec(first_flow_id + i, hosts[s], hosts[d], size_bytes, start_ps))
    return flows
