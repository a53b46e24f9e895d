"""The loss-recovery interface and registry.

A recovery mode is the part of a reliable connection that differs between RNIC generations and
the ideal reference: what the requester does when a NACK arrives or the retransmission timer
expires, and the receiver that decides when to NACK. The requester core
(:class:`~spraylab.transport.qp.QueuePair`) owns segmentation, pacing, PSN bookkeeping and ACK
processing and calls its recovery only at these points.

A mode is one module of this package with a ``@register``ed :class:`Recovery` subclass naming
its :attr:`Recovery.receiver`; ``transport.recovery`` selects it by name. Required:
:meth:`on_nack` (and :meth:`on_timeout`, whose default goes back to ``snd_una``; or, for a
mode with :attr:`Recovery.rto_per_packet`, :meth:`on_packet_timeout`). Optional
hooks (:meth:`on_ack`, :meth:`skip_resend`, :meth:`on_resent`, :meth:`on_drop`) are bound once
per queue pair and cost nothing per packet when not overridden.

What a recovery may touch on its queue pair (``self.qp``): ``snd_una``, ``snd_nxt``,
``max_sent``, ``n_packets``, ``retx_queue`` (PSNs to resend, in order), ``sender_done``,
``rx`` (its own receiver), ``sim``, ``net``, ``advance(cum_psn, now)`` and ``kick()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from spraylab.transport.registry import Registry

if TYPE_CHECKING:
    from spraylab.net.packet import Packet
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair
    from spraylab.transport.receiver import Receiver


class Recovery:
    """Per-queue-pair recovery state. Class attributes describe the mode to the rest of the
    simulator (load balancers read them through ``SenderView.recovery``)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    receiver: ClassVar[type[Receiver]]  # the responder this mode pairs with
    # A NACK asks for the one NACKed PSN (a sender scheme may take that over: see
    # LoadBalancer.on_nack); False for go-back-N, whose NACK rewinds the window.
    selective: ClassVar[bool] = False
    # The receiver acknowledges every first arrival, in order or not, so a path that carried
    # packets and echoes nothing for many RTTs lost them.
    acks_every_arrival: ClassVar[bool] = False
    # The requester learns of every loss by itself (an oracle): a scheme need not presume any.
    notices_losses: ClassVar[bool] = False
    # Default of transport.cnp_on_ooo: an out-of-order arrival also triggers a CNP.
    cnp_on_ooo: ClassVar[bool] = False
    # The receiver answers the header of a trimmed packet (Receiver.on_trimmed): the mode may
    # run on a fabric with switch.trimming on.
    nacks_trimmed: ClassVar[bool] = False
    # Its NACK names the one PSN to resend in ``sack_psn`` (``psn`` is the cumulative ePSN, as
    # in every NACK): the requester passes that PSN to :meth:`on_nack` instead of the ePSN.
    nack_names_psn: ClassVar[bool] = False
    # The [transport] keys the mode reads beyond mtu, cc and its own name (`spraylab list`):
    # every receiver coalesces ACKs and every sender has the retransmission timer.
    reads: ClassVar[tuple[str, ...]] = ("rto", "ack_every", "ack_every_bytes", "ack_bytes", "ack_delay")
    # The retransmission timer times each transmission (uet-htsim's RTO): it runs for the oldest
    # one not yet answered by an ACK or a NACK, and that PSN alone times out
    # (:meth:`on_packet_timeout`). False: the timer measures the flow's progress (the cumulative
    # ACK) and :meth:`on_timeout` acts on everything outstanding, as RNICs do.
    rto_per_packet: ClassVar[bool] = False
    # Memory per packet of a flow's size (both ends), for the size guard (spraylab.runs.budget).
    state_bytes_per_packet: ClassVar[int] = 1

    __slots__ = ("qp",)

    def __init__(self, qp: QueuePair, params: TransportParams) -> None:
        self.qp = qp

    @classmethod
    def ooo_window_packets(cls, params: TransportParams) -> int | None:
        """How many PSNs from ePSN on the receiver accepts, for schemes that must fit under it
        (DFS's reorder bound, ToR-assist's mirror of the RNIC): 1 = in order only, None = any.
        Default from ``selective``: a selective NACK resends one PSN, which presumes the
        receiver kept what came after it, in the ``transport.ooo_bitmap`` bitmap; a
        go-back-N receiver keeps nothing out of order. A receiver without a bitmap overrides it."""
        return params.ooo_bitmap_packets if cls.selective else 1

    # --- required -----------------------------------------------------------------------
    def on_nack(self, psn: int) -> None:
        """A NACK(ePSN = ``psn``) the load balancer did not take over; the cumulative ACK it
        carries is already applied and the sender is not done. (For a mode with
        :attr:`nack_names_psn`, ``psn`` is the PSN the NACK names instead.)"""
        raise NotImplementedError

    def on_timeout(self) -> None:
        """The retransmission timer expired with packets outstanding and no progress for
        ``rto``. Default: go back to ``snd_una`` and resend everything outstanding (RNICs do so
        in every mode)."""
        qp = self.qp
        qp.snd_nxt = qp.snd_una

    def on_packet_timeout(self, psn: int) -> None:
        """With :attr:`rto_per_packet`: the transmission of ``psn`` went unanswered for ``rto``
        (its record is gone; the sender is not done)."""
        raise NotImplementedError

    # --- optional per-packet hooks (not called unless overridden) --------------------------
    def on_ack(self, pkt: Packet) -> None:
        """Every ACK, before its cumulative ePSN is applied (SACK state, say)."""

    def skip_resend(self, psn: int) -> bool:
        """A queued resend of ``psn`` (at or above ``snd_una``) is about to go out: True drops it."""
        return False

    def on_resent(self, psn: int) -> None:
        """A retransmitted copy of ``psn`` was put on the wire."""

    def on_drop(self, pkt: Packet) -> None:
        """One of this flow's packets (data or control) was lost in the network (``sim_drop``)."""


RECOVERIES: Registry[Recovery] = Registry("transport.recovery", "spraylab.transport.recovery")
register_recovery = RECOVERIES.register
