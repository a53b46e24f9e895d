"""Selective repeat (ConnectX-6 Dx/7 with out-of-order placement, IRN-like): the receiver
places PSNs in [ePSN, ePSN + W) into a bitmap and NACKs the ePSN on an out-of-order arrival;
the requester resends only the NACKed PSN."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.core._core import SelectiveRepeatReceiver  # compiled: core/receiver.pxi
from spraylab.transport.recovery.base import Recovery, register_recovery

if TYPE_CHECKING:
    pass


@register_recovery
class SelectiveRepeat(Recovery):
    name = "sr"
    summary = "selective repeat (out-of-order placement in a W-packet bitmap): a NACK resends one PSN"
    receiver = SelectiveRepeatReceiver
    selective = True
    # its receiver places PSNs within ooo_bitmap of ePSN and NACKs a gap at most once per
    # nack_timer (and CNPs it with cnp_on_ooo)
    reads = (*Recovery.reads, "ooo_bitmap", "nack_timer", "cnp_on_ooo")

    __slots__ = ()

    def on_nack(self, psn: int) -> None:
        qp = self.qp
        if psn < qp.max_sent:
            qp.retx_queue.append(psn)
