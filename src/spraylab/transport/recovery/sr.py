"""Selective repeat (ConnectX-6 Dx/7 with out-of-order placement, IRN-like): the receiver
places PSNs in [ePSN, ePSN + W) into a bitmap and NACKs the ePSN on an out-of-order arrival;
the requester resends only the NACKed PSN."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.net.packet import Packet
from spraylab.transport.receiver import Receiver
from spraylab.transport.recovery.base import Recovery, register_recovery

if TYPE_CHECKING:
    from spraylab.net.host import Nic
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair


class SelectiveRepeatReceiver(Receiver):
    """OOO placement into a W-packet bitmap; the first OOO arrival of a gap NACKs ePSN."""

    __slots__ = ("bitmap",)

    def __init__(self, qp: QueuePair, nic: Nic, params: TransportParams) -> None:
        super().__init__(qp, nic, params)
        self.bitmap = params.ooo_bitmap_packets

    def on_data(self, pkt: Packet) -> None:
        self._observe(pkt)
        psn = pkt.psn
        epsn = self.epsn
        if psn == epsn:
            self._in_order(pkt)
        elif psn >= epsn + self.bitmap:
            self._discard(pkt)
        elif psn > epsn:
            if self.received[psn]:
                # e.g. after a go-back-N resend on timeout: the hole at ePSN is still open,
                # a sequence error, which the RNIC NAKs.
                self._duplicate(pkt, nack=True)
                return
            self._place(pkt)
            self._count(pkt)
            self._gap(pkt)
        else:
            self._duplicate(pkt)


@register_recovery
class SelectiveRepeat(Recovery):
    name = "sr"
    summary = "selective repeat (out-of-order placement in a W-packet bitmap): a NACK resends one PSN"
    receiver = SelectiveRepeatReceiver
    selective = True

    __slots__ = ()

    def on_nack(self, psn: int) -> None:
        qp = self.qp
        if psn < qp.max_sent:
            qp.retx_queue.append(psn)
