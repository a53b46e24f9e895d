"""ACK frames in the fluid engine: a strict-priority reservation on every reverse link.

A packet-level receiver answers data with ACK frames (``transport.ack_every`` packets or
``ack_every_bytes`` payload bytes per ACK) that travel back from receiver to sender and leave
every port ahead of queued data (``Port.send_control``). A flow sending at rate ``r`` therefore
takes ``a x r`` of each link of its ACKs' route, where ``a`` is its ACK wire bytes per data wire
byte (86 against a full 4 KiB frame's 4,178: about 2%), and data flows share what is left.

That is not a max-min share: an ACK is never held back, so a flow whose ACKs cross a
saturated link is not bottlenecked there. Putting the ACK entries into the max-min problem
would cap such a flow at the level of the data on that link. Instead the rates are the fixed
point ``r = maxmin(C - A r)`` (``A``: each link's ACK bytes per byte of each flow's rate),
reached by iterating from the ACK load the flows still sending put on the links at their last
rates (the fluid engine's start; finished flows send none). Each step changes a link's ACK load by at
most ``a`` times the change of the rates it depends on, so the iteration contracts by about
``a`` per solve: one to three solves from a warm start, four from none, to ``ACK_RTOL``.

It contracts only while ``a < 1``. A message of a few bytes has ``a > 1`` (one 86-byte ACK for
a 63-byte frame): its ACKs cost more than its data, the step expands, and the fixed point may
not be unique (two hosts exchanging 1-byte messages: either may starve the other). The
iteration is therefore bounded (``MAX_ITERATIONS``, or ``STALL_ITERATIONS`` without getting
closer), and when it has not converged (or converged to ACKs alone overfilling a link) the rates fall back to the exact max-min allocation in
which each flow's ACK bytes are entries of its own row (coefficient ``a`` on each ACK link):
the ACKs *share* the links with data instead of preempting it. That allocation is unique,
feasible (data plus ACK bytes within every capacity) and certified like any other; it differs
from the reservation in that a flow may be capped at a link only its ACKs cross (and the others
on that link get what the cap leaves). The fluid summary counts
the solves that fell back (``fluid.ack_fallbacks``).

Time-coalesced ACKs alone (``ack_delay`` with no packet or byte threshold) depend on arrival
times the fluid model does not have: they are charged as one per packet, an upper bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from spraylab.fluid._maxmin import solve_acks_compiled, solve_compiled
from spraylab.fluid._sparse import link_sums
from spraylab.fluid.solver import Problem
from spraylab.net.framing import ACK_WIRE_BYTES

__all__ = [
    "ACK_RTOL",
    "AckRates",
    "packets_per_ack",
    "ack_bytes_per_byte",
    "solve_with_acks",
    "shared_problem",
]

# Converged when no link's ACK load moves by more than this fraction of the largest capacity:
# the rates are then within about that fraction of the fixed point (the step contracts by ~a),
# which moves a completion by under a nanosecond in a millisecond, far inside the re-solve
# quantum. 1e-9 cost 1.2-1.4x the solves for the same completion times to the picosecond
# (1024-host ECMP and spray_rr permutations).
ACK_RTOL = 1e-6
MAX_ITERATIONS = 50  # a contraction by ~2% per step never needs this many
# Steps without a new smallest change of the ACK load before the iteration is given up as not
# contracting (a > 1: the changes grow or cycle); a contraction makes a new smallest one every step.
STALL_ITERATIONS = 4


def packets_per_ack(ack_every: int, ack_every_bytes: int, mtu_bytes: int) -> int:
    """Data packets per ACK under the receiver's count thresholds (the smaller one wins; one
    per packet when neither is set: see the module doc)."""
    counts = [k for k in (ack_every, -(-ack_every_bytes // mtu_bytes) if ack_every_bytes else 0) if k]
    return min(counts) if counts else 1


def ack_bytes_per_byte(n_packets: int, volume_bytes: float, per_ack: int) -> float:
    """ACK wire bytes per data wire byte of a message of ``n_packets`` packets and
    ``volume_bytes`` wire bytes (the ACK that completes the message is never delayed)."""
    return -(-n_packets // per_ack) * ACK_WIRE_BYTES / volume_bytes


class AckRates(NamedTuple):
    """Rates with the ACK reservation, and what certifies them: ``rates`` are the max-min fair
    allocation of ``problem`` (its rows ``rows``, None: all) on ``capacity`` (the data rows on
    the capacity the ACKs leave, or after a fallback the shared rows on the full capacity).
    ``ack_load``: the ACK bytes per second the rates put on every link."""

    rates: np.ndarray
    capacity: np.ndarray
    ack_load: np.ndarray
    problem: Problem
    fell_back: bool
    rows: np.ndarray | None = None


def solve_with_acks(
    solve: Callable[[Problem, np.ndarray], np.ndarray],
    problem: Problem,
    acks: Problem,
    capacity: np.ndarray,
    ack_load: np.ndarray,
    fallback_solve: Callable[[Problem, np.ndarray], np.ndarray] | None = None,
    rows: np.ndarray | None = None,
) -> AckRates:
    """Rates of ``problem``'s flows with their ACKs (``acks``: the same rows, entries on the
    ACK routes, coefficients in ACK bytes per byte of rate) reserved ahead of data, from the
    starting ACK load ``ack_load`` (the closer to the fixed point, the fewer solves). When the
    iteration does not converge, the shared allocation of the module doc (``fell_back``),
    solved by ``fallback_solve`` (default ``solve``; a warm solver must not see the shared rows,
    which are not the rows it last solved). ``rows``: of these rows of ``problem`` and
    ``acks`` alone (as restricted to them; the compiled loop reads them in place)."""
    finite = capacity[np.isfinite(capacity)]
    atol = ACK_RTOL * max(float(finite.max(initial=0.0)), 1e-30)
    if solve is solve_compiled:  # the loop below in C, transposing the problem once
        rates, data_cap, new, ok = solve_acks_compiled(
            problem, acks, capacity, ack_load, atol, MAX_ITERATIONS, STALL_ITERATIONS, rows=rows
        )
        if ok:
            return AckRates(rates, data_cap, new, problem, False, rows)
    if rows is not None:  # the fallback and the Python loop work on copies of the rows
        problem, acks = problem.restrict(rows), acks.restrict(rows)
    if solve is solve_compiled:
        return _fall_back(problem, acks, capacity, fallback_solve or solve)
    load = ack_load
    best, since_best = np.inf, 0
    for _ in range(MAX_ITERATIONS):
        data_cap = np.maximum(capacity - load, 0.0)
        rates = solve(problem, data_cap)
        new = _ack_load(acks, rates, len(capacity))
        change = float(np.abs(new - load).max(initial=0.0))
        # a fixed point whose ACKs alone overfill a link (a > 1: the other flow starved to 0)
        # sends more than the link carries: not a solution, so it falls back too
        if change <= atol:
            if (new <= capacity + atol).all():
                return AckRates(rates, data_cap, new, problem, False)
            break
        best, since_best = (change, 0) if change < best else (best, since_best + 1)
        if since_best >= STALL_ITERATIONS:
            break
        load = new
    return _fall_back(problem, acks, capacity, fallback_solve or solve)


def _fall_back(
    problem: Problem, acks: Problem, capacity: np.ndarray, solve: Callable[[Problem, np.ndarray], np.ndarray]
) -> AckRates:
    """The shared allocation (module doc)."""
    shared = shared_problem(problem, acks)
    rates = solve(shared, capacity)
    return AckRates(rates, capacity, _ack_load(acks, rates, len(capacity)), shared, True)


def _ack_load(acks: Problem, rates: np.ndarray, n_links: int) -> np.ndarray:
    # np.bincount(acks.link, weights=acks.coef * sent[acks.entry_flow]) with sent the finite
    # rates (0 for an unconstrained flow), summed in the same order (fluid/_sparse.pyx)
    return link_sums(acks.ptr, acks.link, acks.coef, rates, n_links, True)


def shared_problem(problem: Problem, acks: Problem) -> Problem:
    """Every flow's data and ACK entries in one row (a link in both: the coefficients summed),
    links in increasing order within a row: the fallback's max-min problem."""
    n_links = problem.n_links
    flow = np.concatenate([problem.entry_flow, acks.entry_flow])
    key = flow * n_links + np.concatenate([problem.link, acks.link])
    unique, inverse = np.unique(key, return_inverse=True)
    coef = np.bincount(inverse, weights=np.concatenate([problem.coef, acks.coef]))
    ptr = np.zeros(problem.n_flows + 1, dtype=np.int64)
    np.cumsum(np.bincount(unique // n_links, minlength=problem.n_flows), out=ptr[1:])
    return Problem(ptr, unique % n_links, coef, problem.weight, n_links)
