"""The event loop: one heap of ``(time_ps, seq, callback, arg)`` tuples.

Time is an integer number of picoseconds so runs are bit-for-bit reproducible. Hot code
pushes onto ``sim.heap`` directly with ``heappush(heap, (t, next(sim.seq), fn, arg))``
instead of calling :meth:`Simulator.at`, which saves a Python call per packet-hop.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

Callback = Callable[[Any], None]

PS_PER_US = 1_000_000
PS_PER_S = 1_000_000_000_000


class StopSimulation(Exception):
    """Raised by a callback to end the run at the current event (e.g. the workload is done)."""


class Simulator:
    """A discrete-event loop with integer-picosecond time and one seeded RNG."""

    __slots__ = ("now", "heap", "seq", "rng", "events", "stop_reason", "_progress")

    def __init__(self, seed: int = 1) -> None:
        self.now: int = 0
        self.heap: list[tuple[int, int, Callback, Any]] = []
        self.seq = itertools.count()
        self.rng = random.Random(seed)
        self.events: int = 0
        self.stop_reason: str = ""
        self._progress: Callable[[Simulator, float], None] | None = None

    def at(self, time_ps: int, fn: Callback, arg: Any = None) -> None:
        """Schedule ``fn(arg)`` at absolute time ``time_ps`` (never in the past)."""
        if time_ps < self.now:
            raise ValueError(f"cannot schedule at {time_ps} ps, before now ({self.now} ps)")
        heappush(self.heap, (time_ps, next(self.seq), fn, arg))

    def after(self, delay_ps: int, fn: Callback, arg: Any = None) -> None:
        heappush(self.heap, (self.now + delay_ps, next(self.seq), fn, arg))

    def derive_rng(self, salt: int) -> random.Random:
        """A child RNG for one component, derived from the run seed, so adding draws in one
        component does not shift the random stream of another."""
        return random.Random(self.rng.getrandbits(64) ^ salt)

    def set_progress(self, fn: Callable[[Simulator, float], None] | None) -> None:
        """``fn(sim, wall_elapsed_s)`` is called every 2^16 events."""
        self._progress = fn

    def run(
        self,
        until_ps: int | None = None,
        max_events: int | None = None,
        max_wall_s: float | None = None,
    ) -> str:
        """Process events until the heap empties, ``until_ps`` is reached, a callback raises
        :class:`StopSimulation`, or an event/wall budget runs out. Returns the stop reason:
        ``"idle"``, ``"time_limit"``, ``"done"``, ``"event_budget"`` or ``"wall_budget"``.
        The run can be continued by calling ``run`` again."""
        heap = self.heap
        limit = until_ps if until_ps is not None else 1 << 62
        event_cap = self.events + max_events if max_events is not None else 1 << 62
        start = time.perf_counter()
        progress = self._progress
        n = self.events
        reason = "idle"
        try:
            while heap:
                if heap[0][0] > limit:
                    self.now = limit
                    reason = "time_limit"
                    break
                t, _, fn, arg = heappop(heap)
                self.now = t
                fn(arg)
                n += 1
                if not n & 0xFFFF:
                    if n >= event_cap:
                        reason = "event_budget"
                        break
                    elapsed = time.perf_counter() - start
                    if progress is not None:
                        progress(self, elapsed)
                    if max_wall_s is not None and elapsed > max_wall_s:
                        reason = "wall_budget"
                        break
            else:
                if until_ps is not None and self.now < until_ps:
                    self.now = until_ps
        except StopSimulation as stop:
            n += 1
            reason = str(stop) or "done"
        self.events = n
        self.stop_reason = reason
        return reason
