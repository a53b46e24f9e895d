"""Where a switch samples the queue for ECN (``switch.ecn_mark_at``).

Theory: a FIFO port serving a burst of n equal packets that all arrived at once holds, when
packet i (0-based) joins, i packets ahead of it (counting the one in service; a lossless port's queue excludes it, so
i - 1 there), and when packet i starts transmission, n - 1 - i packets behind it (none behind
packet 0, which starts the instant it arrives). With a step marking profile (kmin = kmax = K: mark iff the
sampled queue exceeds K) enqueue marking therefore marks the *last* packets of the burst and
dequeue marking the *first* ones, each exactly the count the formula gives."""

from __future__ import annotations

import pytest

from spraylab.engine.simulator import Simulator
from spraylab.net.packet import DATA, Packet
from spraylab.net.port import EcnConfig, PfcPort, Port

RATE_BPS = 100_000_000_000
SIZE = 1000
N = 20
K_PACKETS = 7  # mark iff more than 7 packets' worth are queued at the sampling point


class Sink:
    def __init__(self) -> None:
        self.got: list[Packet] = []

    def receive(self, pkt: Packet) -> None:
        self.got.append(pkt)


class StubRng:
    def random(self) -> float:
        return 0.5


def burst(port_cls: type[Port], mark_at: str) -> list[bool]:
    sim = Simulator(1)
    k = K_PACKETS * SIZE
    port = port_cls(sim, "p", None, RATE_BPS, 1_000_000, EcnConfig(k, k, 1.0, mark_at=mark_at), StubRng())
    sink = Sink()
    port.connect(sink, sink.receive)
    for psn in range(N):
        port.send(Packet(DATA, None, 0, 1, psn, SIZE, SIZE, 0, 0, 0))
    sim.run(until_ps=10**9)
    assert [p.psn for p in sink.got] == list(range(N))
    return [p.ecn for p in sink.got]


@pytest.mark.parametrize("port_cls", [Port, PfcPort], ids=["lossy", "lossless"])
def test_enqueue_marking_samples_the_queue_ahead(port_cls: type[Port]) -> None:
    ahead = 0 if port_cls is Port else 1  # the lossless queue does not hold the packet in service
    assert burst(port_cls, "enqueue") == [i - ahead > K_PACKETS for i in range(N)]


@pytest.mark.parametrize("port_cls", [Port, PfcPort], ids=["lossy", "lossless"])
def test_dequeue_marking_samples_the_queue_behind(port_cls: type[Port]) -> None:
    assert burst(port_cls, "dequeue") == [i > 0 and N - 1 - i > K_PACKETS for i in range(N)]


def test_dequeue_marking_sees_packets_that_arrive_while_it_waits() -> None:
    """A packet that found the port idle but was followed by a burst before it finished
    serializing is judged by that burst at dequeue: for packet 0 the burst arrives after its
    transmission *started*, so it is not behind it; packet 1 has all later ones behind it."""
    sim = Simulator(1)
    k = 3 * SIZE
    port = Port(sim, "p", None, RATE_BPS, 0, EcnConfig(k, k, 1.0), StubRng())
    sink = Sink()
    port.connect(sink, sink.receive)
    port.send(Packet(DATA, None, 0, 1, 0, SIZE, SIZE, 0, 0, 0))
    ser_ps = SIZE * 8 * 10  # 1000 B at 100 Gb/s = 80 ns
    for psn in range(1, 7):
        sim.at(ser_ps // 2, lambda psn: port.send(Packet(DATA, None, 0, 1, psn, SIZE, SIZE, 0, 0, 0)), psn)
    sim.run(until_ps=10**9)
    # packet 0 started at t = 0 with nothing behind it; packet i >= 1 starts at i * ser with
    # 6 - i behind it: marked iff 6 - i > 3.
    assert [p.ecn for p in sink.got] == [False] + [6 - i > 3 for i in range(1, 7)]
