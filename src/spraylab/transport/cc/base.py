"""The congestion-control interface and registry.

A congestion control sets how fast (``qp.set_rate``) and how much (``qp.set_window``) its
queue pair may send, from what the queue pair tells it. It is one module of this package with
a ``@register``ed :class:`CongestionControl` subclass; ``transport.cc`` selects it by name.

Hooks, each optional and bound once per queue pair (one not overridden is never called, so it
costs nothing per packet): :meth:`on_sent` (every data packet put on the wire), :meth:`on_ack`
(every ACK, before its cumulative ePSN is applied; it echoes the data packet's ECN mark and
send time), :meth:`on_nack` (every NACK while the sender is not done, after its cumulative
ePSN is applied and before the recovery mode acts on it: a NACK of a trimmed header is a
congestion signal), :meth:`on_cnp` and :meth:`on_timeout` (after the recovery mode has queued
its resends). What a congestion control may use of its queue pair: ``sim``, ``net``,
``sender_done``, ``line_rate_bps``, ``full_wire_bytes``, ``mtu``, ``snd_una``, ``max_sent``,
``sack`` (the recovery's SACK view, or None), ``inflight_bytes()``, ``set_rate(rate_bps)``,
``set_window(packets)`` and ``set_cwnd_bytes(bytes)`` (a window in bytes over the bytes in
flight).

A control written in Python is called through these methods. The built-in ones are compiled
kernels instead (``spraylab.transport.cc.kernel``): their class subclasses its kernel and this
one, sets the kernel up once per queue pair, and the queue pair calls the kernel's C hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from spraylab.transport.registry import Registry

if TYPE_CHECKING:
    from spraylab.model.types import Section
    from spraylab.net.packet import Packet
    from spraylab.net.routes import Route
    from spraylab.transport.params import TransportParams
    from spraylab.transport.qp import QueuePair


class CongestionControl:
    """Per-queue-pair congestion state. The base class is no control at all: line rate, no
    window beyond ``transport.window``."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    # The receiver answers ECN-marked packets with CNPs (DCQCN's notification point, at most
    # one per transport.dcqcn.cnp_interval), and out-of-order ones too with transport.cnp_on_ooo.
    uses_cnp: ClassVar[bool] = False
    # Switches stamp in-band telemetry into data packets and ACKs echo it (``pkt.int_record``,
    # spraylab.net.telemetry): set by a control that reads it (HPCC); off, it costs nothing.
    uses_int: ClassVar[bool] = False
    # The fluid engines (run.engine != "packet") may stand in for it: they run every flow at
    # its converged max-min rate (docs/fluid.md). False refuses the scenario, with one line.
    fluid_engine: ClassVar[bool] = True
    # Its own parameter section under [transport] ("" for none): the key (``[transport.nscc]``),
    # the pydantic model that validates it (a spraylab.model.types.Section whose fields are
    # ``param()``-linked to ``params_type``), the frozen dataclass the hooks read
    # (``transport.cc_params[params_section]``) and the line the configuration reference shows.
    # The scenario schema, TransportParams, `spraylab list` and `spraylab docs config` read these
    # from the registry, so a control with parameters is this one file.
    params_section: ClassVar[str] = ""
    section_model: ClassVar[type[Section] | None] = None
    params_type: ClassVar[type | None] = None
    section_description: ClassVar[str] = ""

    __slots__ = ()

    def __init__(self, qp: QueuePair, params: TransportParams, line_rate_bps: int) -> None:
        pass

    def on_sent(self, size_bytes: int) -> None:
        """A data packet of ``size_bytes`` on the wire was sent."""

    def on_ack(self, pkt: Packet) -> None:
        """An ACK arrived (``pkt.ecn``, ``pkt.sent_ps`` echo the data packet that triggered it)."""

    def on_nack(self, pkt: Packet) -> None:
        """A NACK arrived while the sender is not done (``pkt.sack_psn`` names the PSN where the
        recovery's NACKs name one; ``pkt.sent_ps`` and ``pkt.ecn`` echo the NACKed copy)."""

    def on_cnp(self, now: int) -> None:
        """A CNP arrived (only while the sender is not done)."""

    def on_timeout(self) -> None:
        """The retransmission timer expired with packets outstanding (after the recovery mode
        queued its resends)."""


def route_of(qp: QueuePair) -> Route:
    """The route of ``qp``'s flow as traced on its first equal-cost candidates
    (``spraylab.net.routes.trace_route``): on spraylab's symmetric fabrics every candidate path
    of a flow has the same hops and base RTT, so a control reads them from this one."""
    from spraylab.net.routes import trace_route

    return trace_route(qp.net, qp.src, qp.dst)


def switch_hops(qp: QueuePair) -> int:
    """The switches ``qp``'s packets cross (what a receiver reads from the TTL a packet
    arrives with: Swift's hop count, Kumar et al. SIGCOMM'20 section 3.2)."""
    return len(route_of(qp).hops) - 1  # every hop but the source NIC's is a switch egress


def line_rate_bdp_packets(qp: QueuePair, line_rate_bps: float) -> float:
    """One bandwidth-delay product at line rate in full frames, over the larger of the fabric's
    longest base RTT and this flow's own: the window an RDMA NIC starts a flow with (line rate
    from the first packet; HPCC's W_init, Li et al. SIGCOMM'19 section 3.2), and the most a
    window-based control needs (more only queues)."""
    from spraylab.transport.cc.hpcc import fabric_base_rtt_ps

    own = route_of(qp)
    rtt_ps = max(fabric_base_rtt_ps(qp.net, qp.mtu), own.base_rtt_ps(qp.mtu) if own.complete else 0.0)
    return line_rate_bps * rtt_ps / 8e12 / qp.full_wire_bytes


CONGESTION_CONTROLS: Registry[type[CongestionControl]] = Registry("transport.cc", "spraylab.transport.cc")
register_cc = CONGESTION_CONTROLS.register


def cc_sections() -> dict[str, type[CongestionControl]]:
    """The congestion controls with a parameter section, by section key, in name order."""
    found: dict[str, type[CongestionControl]] = {}
    for name in CONGESTION_CONTROLS.names():
        cc = CONGESTION_CONTROLS.classes[name]
        if cc.params_section:
            if cc.section_model is None or cc.params_type is None:
                raise TypeError(
                    f"congestion control {name!r}: params_section needs section_model and params_type"
                )
            found[cc.params_section] = cc
    return found
