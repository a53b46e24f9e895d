"""The sender view: what a load balancer may see and do on a flow's requester.

Sender-side schemes get every queue pair typed as :class:`SenderView` (the hooks of
``spraylab.lb.base.LoadBalancer``). The requester core implements it directly, with no wrapper
object, so reading it costs a slot load; anything not listed here is the transport's own and
may change. Members fall in four groups:

* **identity** (fixed for the flow's life): ``flow_id``, ``src``, ``dst``, ``n_packets``,
  ``mtu``, ``full_wire_bytes`` (link bytes of a full data packet), ``line_rate_bps``,
  ``entropy`` (the flow's own, used when the scheme has no opinion), ``nic`` (its port is the
  flow's first hop) and ``recovery``, whose class traits tell the scheme what the transport
  does (``selective``, ``acks_every_arrival``, ``notices_losses``; see
  ``spraylab.transport.recovery.base.Recovery``);
* **outstanding PSNs**: ``snd_una`` (lowest PSN not cumulatively acknowledged), ``max_sent``
  (one past the highest PSN ever sent), so ``outstanding()`` is ``range(snd_una, max_sent)``;
  ``snd_nxt`` (the next PSN the sender sends when no resend is queued); ``sender_done``;
* **rate**: ``rate_bps``, the congestion control's current rate (line rate without one);
* **actions**: ``resend(psns)`` queues PSNs for retransmission (the scheme's own loss
  detection; it does not deduplicate: ``queued_resends()`` tells what is queued), and the
  **window** ``psn_window``: the sender never sends a PSN at or above ``snd_una +
  psn_window`` (set it in ``init_qp``; DFS's reorder bound B). ``lb`` (the scheme whose hooks
  run, set in ``init_qp``) and ``lb_state`` (the scheme's per-flow state) are the scheme's own.

The sender calls the scheme back with ``on_flow_start``, ``entropy`` (every data packet),
``on_ack``, ``on_nack`` (which may take over the retransmission a selective NACK asks for) and
``on_timeout``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from spraylab.net.host import Nic
    from spraylab.transport.recovery.base import Recovery


class SenderView(Protocol):
    """A flow's requester as load balancers see it (module doc)."""

    # --- identity --------------------------------------------------------------------
    @property
    def flow_id(self) -> int: ...
    @property
    def src(self) -> int: ...
    @property
    def dst(self) -> int: ...
    @property
    def n_packets(self) -> int: ...
    @property
    def mtu(self) -> int: ...
    @property
    def full_wire_bytes(self) -> int: ...
    @property
    def line_rate_bps(self) -> int: ...
    @property
    def entropy(self) -> int: ...
    @property
    def nic(self) -> Nic: ...
    @property
    def recovery(self) -> Recovery: ...

    # --- outstanding PSNs and rate ----------------------------------------------------
    @property
    def snd_una(self) -> int: ...
    @property
    def snd_nxt(self) -> int: ...
    @property
    def max_sent(self) -> int: ...
    @property
    def sender_done(self) -> bool: ...
    @property
    def rate_bps(self) -> float: ...
    def outstanding(self) -> range: ...
    def queued_resends(self) -> set[int]: ...

    # --- actions and the scheme's own slots --------------------------------------------
    def resend(self, psns: Iterable[int]) -> None: ...

    psn_window: int
    lb: Any
    lb_state: Any
