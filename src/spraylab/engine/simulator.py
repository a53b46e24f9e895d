"""The event loop: a calendar queue of ``(time_ps, callback, arg)`` events (compiled:
``spraylab.core``).

Time is an integer number of picoseconds so runs are bit-for-bit reproducible. Events are
kept in buckets of ``2**BUCKET_SHIFT`` ps: scheduling appends to a bucket; a bucket is sorted
once when its time comes and then read in order. With one event per packet-hop the pending set
is every packet in flight; a binary heap over all of it costs a cache-hostile O(log n) per
event, the buckets cost an append and a share of one sort. Ties keep FIFO order: a bucket is
sorted stably by time alone, and an event scheduled into the bucket being processed goes
after every event of its time, so no sequence number is needed.
"""

from __future__ import annotations

from spraylab.core._core import BUCKET_SHIFT, PS_PER_S, PS_PER_US, Simulator, StopSimulation

__all__ = ["BUCKET_SHIFT", "PS_PER_S", "PS_PER_US", "Simulator", "StopSimulation"]
