"""The RoCEv2 requester core (sender side of a reliable-connection queue pair), compiled:
``spraylab.core``. Its recovery mode (``spraylab.transport.recovery``), congestion control
(``spraylab.transport.cc``) and sender-side load balancer stay Python objects it calls through
their hooks; the optional hooks are bound once per queue pair and cost nothing when unused."""

from __future__ import annotations

from spraylab.core._core import NO_WINDOW, PS_BITS, QueuePair

__all__ = ["NO_WINDOW", "PS_BITS", "QueuePair"]
