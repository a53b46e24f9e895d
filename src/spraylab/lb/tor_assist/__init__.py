"""ToR-assisted packet spraying over commodity RNICs (docs/schemes.md, ToR-assisted spraying).

Every packet of a flow is sprayed over the source ToR's uplinks, and the RNICs stay
unmodified: the **destination** ToR tells reordering from loss and hides reordering from them.
A program runs on every ToR (tier-1 switch with attached hosts); every other switch keeps the
network's default (ECMP) selector. One module per part:

* ``params``: ``TorAssistParams`` and the shared constants;
* ``stamping``: the source ToR sprays each packet over an uplink and stamps (path, seq);
* ``tracker``: the destination ToR's per-flow state, loss evidence and hold times;
* ``nack_filter``: mode ``nack_filter`` (selective-repeat RNICs): NACKs for reordering are
  held or dropped, NACKs for losses forwarded;
* ``resequencer``: mode ``reorder`` (go-back-N RNICs): packets leave in PSN order;
* ``counters``: the decisions counted and the ``stats()`` of the run summary;
* ``program``: one ToR's program, dispatching each packet to its role;
* ``scheme``: the registered ``tor_assist`` scheme, installing the programs.

Flow state is created at a ToR on a flow's first packet and retired when the flow is complete
at that ToR (destination: every PSN passed; source: the ACK of the whole message passes
back), leaving a tombstone so late duplicates pass untouched. ``stats()`` reports the
decisions, state sizes and peaks.
"""

from spraylab.lb.tor_assist.params import TorAssistParams
from spraylab.lb.tor_assist.scheme import TorAssist

__all__ = ["TorAssist", "TorAssistParams"]
