"""The RoCEv2 requester core (sender side of a reliable-connection queue pair), compiled:
``spraylab.core``. Its recovery mode (``spraylab.transport.recovery``) and sender-side load
balancer stay Python objects it calls through their hooks, as is a congestion control written in
Python (``spraylab.transport.cc``); the optional hooks are bound once per queue pair and cost
nothing when unused. A built-in congestion control (or scheme) is a compiled kernel whose C hooks
it calls directly (docs/core.md)."""

from __future__ import annotations

from spraylab.core._core import NO_WINDOW, PS_BITS, QueuePair

__all__ = ["NO_WINDOW", "PS_BITS", "QueuePair"]
