"""Recovery modes and congestion controls are registered by name: a test module adds a new one
of each at run time (a fixed-window congestion control and a recovery that ignores NACKs and
relies on the retransmission timer alone) and runs a scenario that names them, checked against
the timing of a window-limited sender on an idle fabric:

* a window of W packets at line rate on an idle path sends packet j at
  ``(j // W) * RTT + (j % W) * s`` (s: one packet's serialization at the NIC, RTT: a data
  packet's forward time plus its ACK's return time, W * s < RTT), so the last packet arrives
  ``F`` after it is sent (F: the data packet's forward time);
* without fast retransmit, a lost packet k is resent only by the timeout: ``rto`` after the last
  progress (the ACK of k - 1, which released packet k - 1 + W), and the window then restarts
  from k with every outstanding packet (W of them) resent once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import spraylab
from spraylab import transport
from spraylab.net.drops import RANDOM_LOSS
from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes
from spraylab.net.packet import DATA
from spraylab.net.port import sim_drop
from spraylab.net.routes import trace_route
from spraylab.transport.cc.base import CONGESTION_CONTROLS, CongestionControl
from spraylab.transport.params import TransportParams
from spraylab.transport.qp import QueuePair
from spraylab.transport.recovery.base import RECOVERIES, Recovery
from spraylab.transport.recovery.gbn import GoBackNReceiver

US = 1_000_000
WINDOW = 4
PACKETS = 16
RTO_PS = 50 * US


class FixedWindow(CongestionControl):
    """A fixed window of WINDOW packets at line rate (no reaction to congestion)."""

    name = "test_fixed_window"
    __slots__ = ()

    def __init__(self, qp: QueuePair, params: TransportParams, line_rate_bps: int) -> None:
        qp.set_window(WINDOW)


class TimeoutOnly(Recovery):
    """Go-back-N without fast retransmit: NACKs are ignored, the timeout goes back to snd_una."""

    name = "test_timeout_only"
    receiver = GoBackNReceiver
    __slots__ = ()

    def on_nack(self, psn: int) -> None:
        pass


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    CONGESTION_CONTROLS.register(FixedWindow)
    RECOVERIES.register(TimeoutOnly)
    yield
    del CONGESTION_CONTROLS.classes[FixedWindow.name]
    del RECOVERIES.classes[TimeoutOnly.name]


def scenario(recovery: str) -> spraylab.Scenario:
    """One flow across a spine of an idle 2 x 2 leaf-spine (host 1 -> host 0)."""
    return spraylab.validate(
        {
            "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 1},
            "transport": {"cc": FixedWindow.name, "recovery": recovery, "rto": "50us"},
            "workload": {"kind": "incast", "senders": 1, "receiver": 0, "size": PACKETS * 4096},
            "run": {"seed": 1, "progress": False},
        }
    )


def path_times(qp: QueuePair) -> tuple[int, int, int]:
    """(F, RTT, s) along the flow's route on the idle fabric."""
    data = data_wire_bytes(qp.mtu)
    forward = back = 0
    for hop in trace_route(qp.net, qp.src, qp.dst).hops:
        forward += hop.port.delay_ps + int(data * hop.port.ps_per_byte)
        back += hop.port.delay_ps + int(ACK_WIRE_BYTES * hop.port.ps_per_byte)
    return forward, forward + back, int(data * qp.nic.port.ps_per_byte)


def sent_at(j: int, rtt: int, s: int) -> int:
    return (j // WINDOW) * rtt + (j % WINDOW) * s


def test_registered_names_are_listed_and_accepted() -> None:
    assert FixedWindow.name in transport.cc_names() and TimeoutOnly.name in transport.recovery_names()
    assert transport.cc_names() == sorted(transport.cc_names())
    assert {"dcqcn", "none"} <= set(transport.cc_names())
    assert {"gbn", "sr", "ideal"} <= set(transport.recovery_names())
    with pytest.raises(spraylab.ScenarioError, match="transport.recovery = 'tcp'.*test_timeout_only"):
        scenario("tcp")


def test_fixed_window_paces_one_window_per_round_trip() -> None:
    sim = spraylab.build(scenario("gbn"))
    assert sim.run() == "done"
    (qp,) = sim.net.qps
    forward, rtt, s = path_times(qp)
    assert WINDOW * s < rtt  # the window, not the link, limits the flow
    assert qp.window_packets == WINDOW
    assert qp.rx.finish_ps - qp.start_ps == sent_at(PACKETS - 1, rtt, s) + forward
    assert qp.retx_packets == qp.timeouts == qp.nacks_received == 0


def test_timeout_only_recovery_waits_for_the_rto() -> None:
    lost = 5
    sim = spraylab.build(scenario(TimeoutOnly.name))
    (qp,) = sim.net.qps
    port = qp.nic.port
    deliver: Any = port.receive_at_peer

    def receive(pkt: Any) -> None:  # the first copy of PSN ``lost`` dies on the host link
        if pkt.kind == DATA and not pkt.retx and pkt.psn == lost:
            sim_drop(sim.sim, pkt, RANDOM_LOSS, port)
        else:
            deliver(pkt)

    port.receive_at_peer = receive
    assert sim.run() == "done"
    sim.net.check_conservation()
    forward, rtt, s = path_times(qp)
    resent = sent_at(lost - 1 + WINDOW, rtt, s) + RTO_PS  # last progress + rto
    expected = resent + sent_at(PACKETS - 1 - lost, rtt, s) + forward
    assert qp.rx.finish_ps - qp.start_ps == expected
    assert qp.nacks_received >= 1  # the receiver did NACK: the recovery ignored it
    assert qp.timeouts == 1 and qp.retx_packets == WINDOW
    # go-back-N proper acts on that NACK and finishes well before the timeout would fire
    gbn = spraylab.build(scenario("gbn"))
    (fast,) = gbn.net.qps
    gbn_port = fast.nic.port
    gbn_deliver: Any = gbn_port.receive_at_peer

    def receive_gbn(pkt: Any) -> None:
        if pkt.kind == DATA and not pkt.retx and pkt.psn == lost:
            sim_drop(gbn.sim, pkt, RANDOM_LOSS, gbn_port)
        else:
            gbn_deliver(pkt)

    gbn_port.receive_at_peer = receive_gbn
    assert gbn.run() == "done"
    assert fast.timeouts == 0 and fast.rx.finish_ps - fast.start_ps < expected - RTO_PS + rtt
