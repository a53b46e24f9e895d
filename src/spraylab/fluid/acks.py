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

Time-coalesced ACKs alone (``ack_delay`` with no packet or byte threshold) depend on arrival
times the fluid model does not have: they are charged as one per packet, an upper bound.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spraylab.fluid.solver import Problem
from spraylab.net.framing import ACK_WIRE_BYTES

__all__ = ["ACK_RTOL", "packets_per_ack", "ack_bytes_per_byte", "solve_with_acks"]

# Converged when no link's ACK load moves by more than this fraction of the largest capacity:
# the rates are then within about that fraction of the fixed point (the step contracts by ~a),
# which moves a completion by under a nanosecond in a millisecond, far inside the re-solve
# quantum. 1e-9 cost 1.2-1.4x the solves for the same completion times to the picosecond
# (1024-host ECMP and spray_rr permutations).
ACK_RTOL = 1e-6
MAX_ITERATIONS = 50  # a contraction by ~2% per step never needs this many


def packets_per_ack(ack_every: int, ack_every_bytes: int, mtu_bytes: int) -> int:
    """Data packets per ACK under the receiver's count thresholds (the smaller one wins; one
    per packet when neither is set: see the module doc)."""
    counts = [k for k in (ack_every, -(-ack_every_bytes // mtu_bytes) if ack_every_bytes else 0) if k]
    return min(counts) if counts else 1


def ack_bytes_per_byte(n_packets: int, volume_bytes: float, per_ack: int) -> float:
    """ACK wire bytes per data wire byte of a message of ``n_packets`` packets and
    ``volume_bytes`` wire bytes (the ACK that completes the message is never delayed)."""
    return -(-n_packets // per_ack) * ACK_WIRE_BYTES / volume_bytes


def solve_with_acks(
    solve: Callable[[Problem, np.ndarray], np.ndarray],
    problem: Problem,
    acks: Problem,
    capacity: np.ndarray,
    ack_load: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rates of ``problem``'s flows with their ACKs (``acks``: the same rows, entries on the
    ACK routes, coefficients in ACK bytes per byte of rate) reserved ahead of data, from the
    starting ACK load ``ack_load`` (the closer to the fixed point, the fewer solves). Returns the rates, the capacities they were
    solved on (``capacity`` less the ACK load: what the certificate checks them against) and
    the ACK load they put on every link (within ``ACK_RTOL`` of the one solved on)."""
    finite = capacity[np.isfinite(capacity)]
    atol = ACK_RTOL * max(float(finite.max(initial=0.0)), 1e-30)
    load = ack_load
    for _ in range(MAX_ITERATIONS):
        data_cap = np.maximum(capacity - load, 0.0)
        rates = solve(problem, data_cap)
        sent = np.where(np.isfinite(rates), rates, 0.0)
        new = np.bincount(acks.link, weights=acks.coef * sent[acks.entry_flow], minlength=len(capacity))
        if np.abs(new - load).max(initial=0.0) <= atol:
            return rates, data_cap, new
        load = new
    raise RuntimeError("ACK reservation did not converge (a bug: the iteration contracts)")
