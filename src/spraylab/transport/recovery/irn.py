"""IRN, Improved RoCE NIC (Mittal et al., "Revisiting Network Support for RDMA", SIGCOMM 2018):
the published design for RDMA without PFC. Two changes to a RoCE NIC, both here:

* **selective repeat** (section 3.1): the receiver places out-of-order packets and NACKs the
  first hole, the sender resends only what is missing (the ``sr`` mode's receiver and sender);
* **BDP-FC** (section 3.2): each flow keeps at most one bandwidth-delay product in flight, the
  base round trip of its route at line rate, so a bottleneck queue never holds more than the
  senders' windows less the link's own round trip (``transport.window = "bdp"``, applied
  whenever ``transport.window`` is left at 0; a window in bytes given there wins).

IRN runs beside any congestion control (its paper evaluates it with DCQCN and with TIMELY).
Not modelled: IRN's two retransmission timeouts (``RTO_low`` while few packets are in flight,
``RTO_high`` otherwise); the mode uses ``transport.rto``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.transport.recovery.base import register_recovery
from spraylab.transport.recovery.sr import SelectiveRepeat

if TYPE_CHECKING:
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair


@register_recovery
class Irn(SelectiveRepeat):
    name = "irn"
    summary = "IRN (Mittal et al. SIGCOMM'18): selective repeat plus a one-BDP transmit window (BDP-FC)"
    reads = (*SelectiveRepeat.reads, "window")

    __slots__ = ()

    def __init__(self, qp: QueuePair, params: TransportParams) -> None:
        super().__init__(qp, params)
        if not params.window_bytes:
            # BDP-FC: one base round trip of this flow's route at line rate (the cap a congestion
            # control's own window stays under, as transport.window's)
            cap = qp._window_cap(qp.net, "bdp", qp.line_rate_bps)
            qp.window_cap_packets = cap
            qp.window_packets = min(qp.window_packets, cap)
