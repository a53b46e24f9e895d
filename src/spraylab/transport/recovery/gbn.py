"""Go-back-N, the ConnectX default: the receiver accepts only PSN = ePSN and NACKs the ePSN
when anything else arrives; the requester rewinds to the NACKed PSN."""

from __future__ import annotations

from spraylab.core._core import GoBackNReceiver  # compiled: core/receiver.pxi
from spraylab.transport.recovery.base import Recovery, register_recovery


@register_recovery
class GoBackN(Recovery):
    name = "gbn"
    summary = "go-back-N (ConnectX default): a NACK rewinds the sender to the missing PSN"
    receiver = GoBackNReceiver
    cnp_on_ooo = True  # ConnectX also sends a CNP for an out-of-order arrival
    # its receiver NACKs a gap at most once per nack_timer (and CNPs it with cnp_on_ooo)
    reads = (*Recovery.reads, "nack_timer", "cnp_on_ooo")

    __slots__ = ()

    def on_nack(self, psn: int) -> None:
        qp = self.qp
        if qp.snd_nxt > psn:
            qp.snd_nxt = psn
