"""Egress ports: a FIFO queue feeding one direction of a link (compiled: ``spraylab.core``).

Two implementations share one interface (``send`` for data, ``send_control`` for the
strict-priority control class, counters for metrics):

* :class:`Port` (lossy): the queue is FIFO and never paused, so a packet's departure time is
  known at enqueue, ``max(now, busy_until) + size * ps_per_byte``. One event per hop (the
  arrival at the far end) and the backlog is ``(busy_until - now) / ps_per_byte``, with no
  dequeue event at all.
* :class:`PfcPort` (lossless): a real queue served by "transmission done" events, because a
  PFC PAUSE can stop it at any time. Dequeues release the ingress accounting of the switch.

Their ECN marking settings (:class:`EcnConfig`) are plain Python, read once when a port is built.
"""

from __future__ import annotations

from spraylab.core._core import IngressCounter, PfcPort, Port, sim_drop
from spraylab.net.rates import PS_PER_BIT_AT_1BPS, kmin_span_ps, ps_per_byte

__all__ = [
    "ECN_MARK_POINTS",
    "EcnConfig",
    "IngressCounter",
    "PS_PER_BIT_AT_1BPS",
    "PfcPort",
    "Port",
    "kmin_span_ps",
    "ps_per_byte",
    "sim_drop",
]

ECN_MARK_POINTS = ("dequeue", "enqueue")


class EcnConfig:
    """RED marking on the instantaneous queue: probability 0 below ``kmin``, rising linearly
    to ``pmax`` at ``kmax``, 1 above.

    ``mark_at`` is where the queue is sampled. ``"dequeue"`` (the default) judges a packet by
    the queue behind it when it starts transmission, as switch ASICs do and as the HPCC ns-3
    model and htsim do: congestion news is then one queueing delay fresher, and marks stop as
    soon as the queue drains below ``kmin``. ``"enqueue"`` judges it by the queue it joins,
    which keeps marking a draining start-up queue for a whole queueing delay."""

    __slots__ = ("kmin_bytes", "kmax_bytes", "pmax", "enabled", "mark_at")

    def __init__(
        self, kmin_bytes: int, kmax_bytes: int, pmax: float, enabled: bool = True, mark_at: str = "dequeue"
    ) -> None:
        if mark_at not in ECN_MARK_POINTS:
            raise ValueError(f"switch.ecn_mark_at = {mark_at!r}: allowed {', '.join(ECN_MARK_POINTS)}")
        self.kmin_bytes = kmin_bytes
        self.kmax_bytes = kmax_bytes
        self.pmax = pmax
        self.enabled = enabled
        self.mark_at = mark_at
