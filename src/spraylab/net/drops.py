"""Why a packet was lost: one small-int cause per drop, counted per network, per flow and
per port (where it happened, or for a drop inside a node the port it arrived through).

Plain ints indexing plain lists, like the packet kinds: a drop costs a few list-item
increments, never a dict lookup or a string.

* ``BUFFER``: the switch's shared buffer refused it (dynamic threshold; lossy fabrics only).
* ``LINK_DOWN``: sent into a failed link (before routing has converged around it).
* ``NO_ROUTE``: a switch had no route to the destination (a partitioned fabric).
* ``RANDOM_LOSS``: a ``loss`` link event (bit errors, a flaky optic). On a lossless fabric too:
  PFC prevents buffer overflow, not corruption, so a corrupted frame is lost there as well.
* ``RESEQUENCER``: ToR-assisted spraying's resequencing ring (``reorder`` mode) dropped it:
  beyond the ring, or a duplicate of a PSN it holds.
* ``TOR_FILTER``: ToR-assisted spraying absorbed a NACK or CNP (``nack_filter`` mode: stale,
  merged with a held one, or held until its PSN passed). Intended, but a packet that was sent
  and never arrived, so conservation counts it.
* ``BEYOND_BITMAP``: the receiving RNIC discarded a data packet that arrived beyond its
  out-of-order bitmap: PSN >= ePSN + ``ooo_bitmap`` for selective repeat, any PSN ahead of
  ePSN for go-back-N (a bitmap of one). It reached the host but not the application, so it is
  a drop, not a delivery (the receiver's ``discards`` counts the same packets).
"""

from __future__ import annotations

BUFFER = 0
LINK_DOWN = 1
NO_ROUTE = 2
RANDOM_LOSS = 3
RESEQUENCER = 4
TOR_FILTER = 5
BEYOND_BITMAP = 6

DROP_CAUSES = ("buffer", "link_down", "no_route", "random_loss", "resequencer", "tor_filter", "beyond_bitmap")
N_CAUSES = len(DROP_CAUSES)
# The causes that happen at an egress port; the others happen inside a node and are counted on
# the link the packet arrived over (``sim_drop``), so the links table has a column for each cause.
PORT_CAUSES = (BUFFER, LINK_DOWN, RANDOM_LOSS)
# Lost before reaching the receiving host: the summary's ``drops`` (every cause but the RNIC's).
NETWORK_CAUSES = tuple(c for c in range(N_CAUSES) if c != BEYOND_BITMAP)


def no_drops() -> list[int]:
    """A fresh per-cause counter."""
    return [0] * N_CAUSES
