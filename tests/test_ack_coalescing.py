"""ACK coalescing (``spraylab.transport.receiver``): an ACK per ``ack_every`` accepted packets,
per ``ack_every_bytes`` payload bytes or ``ack_delay`` after the first unacknowledged packet,
whichever comes first; never delayed for ECN-marked packets, the message's last packet,
duplicates, NACKs and CNPs.

Theory used: the rule itself, counted exactly. With a byte threshold T and full packets of
payload P, every ceil(T / P)-th accepted packet reaches T, and the message's last packet is
ACKed at once, so a loss-free flow of n packets gets ceil(n / ceil(T / P)) ACKs. With a delay
D and packets arriving every s ps (line rate, framing included), a window opened by an arrival
at t covers the arrivals in [t, t + D]: floor(D / s) + 1 packets when D / s is not whole. An
ACK carries the cumulative expected PSN, so coalescing never changes what the receiver holds
or when: a loss-free flow's FCT is unchanged, and a window-limited sender is held back by at
most one coalescing window.
"""

from __future__ import annotations

import math

import pytest
from simutil import US, make_net, run_flows, small_leaf_spine

from spraylab.engine.simulator import Simulator
from spraylab.model.scenario import ScenarioError, validate
from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes
from spraylab.net.host import Nic
from spraylab.net.packet import ACK, DATA, NACK, Packet
from spraylab.net.port import Port
from spraylab.runs.experiment import run
from spraylab.transport.params import TransportParams
from spraylab.transport.recovery.base import RECOVERIES
from spraylab.workload.flows import FlowSpec

MTU = 4096
KIB16 = 16 * 1024
PS_PER_BYTE = 20  # 400 Gb/s
SPACING_PS = data_wire_bytes(MTU) * PS_PER_BYTE  # back-to-back full packets at line rate


def one_flow(size: int, **transport: object):
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=1)
    sim, net = make_net(fabric, cc="none", **transport)
    assert run_flows(sim, net, [FlowSpec(0, 0, 1, size)]) == "done"
    return net, net.qps[0]


@pytest.mark.parametrize(("threshold", "per_ack"), [(KIB16, 4), (16_000, 4), (10_000, 3), (4096, 1)])
def test_byte_coalescing_acks_every_k_th_packet_and_the_last(threshold: int, per_ack: int) -> None:
    """k = ceil(T / 4096) packets per ACK; 16 KB (either unit) is 4, as htsim's default."""
    assert per_ack == math.ceil(threshold / MTU)
    size = 37 * MTU + 100  # 38 packets, the last one short
    net, qp = one_flow(size, ack_every=0, ack_every_bytes=threshold)
    n = qp.n_packets
    assert n == 38
    assert qp.rx.acks_sent == math.ceil(n / per_ack)
    assert qp.sent_packets == n and qp.retx_packets == qp.timeouts == 0
    # The ACK direction's NIC port carries exactly those ACK frames.
    assert net.hosts[1].route[0].port.tx_bytes == qp.rx.acks_sent * ACK_WIRE_BYTES


def test_packet_and_byte_thresholds_whichever_comes_first() -> None:
    size = 40 * MTU
    _, qp = one_flow(size, ack_every=3, ack_every_bytes=KIB16)
    assert qp.rx.acks_sent == math.ceil(40 / 3)
    _, qp = one_flow(size, ack_every=8, ack_every_bytes=KIB16)
    assert qp.rx.acks_sent == math.ceil(40 / 4)


def test_coalescing_leaves_a_loss_free_fct_unchanged() -> None:
    """Without a window the sender never waits for ACKs: same FCT to the picosecond. With a
    window of one BDP plus the coalescing slack, the FCT grows by at most one coalescing
    window (3 packet times: the ACK of a window's first packet waits for 3 more)."""
    size = 2000 * MTU
    _, base = one_flow(size)
    _, coalesced = one_flow(size, ack_every=0, ack_every_bytes=KIB16)
    assert coalesced.rx.finish_ps - coalesced.start_ps == base.rx.finish_ps - base.start_ps
    assert coalesced.rx.acks_sent == 500 and base.rx.acks_sent == 2000

    window = 110 * data_wire_bytes(MTU)  # base RTT ~ 8.4 us ~ 101 packets at 400G
    _, base = one_flow(size, window_bytes=window)
    _, coalesced = one_flow(size, window_bytes=window, ack_every=0, ack_every_bytes=KIB16)
    fct_base = base.rx.finish_ps - base.start_ps
    fct = coalesced.rx.finish_ps - coalesced.start_ps
    assert fct_base <= fct <= fct_base + 3 * SPACING_PS


def test_time_based_coalescing_one_ack_and_one_timer_event_per_window(monkeypatch) -> None:
    delay_ps = 1 * US
    per_window = delay_ps // SPACING_PS + 1
    assert delay_ps % SPACING_PS and per_window == 12
    fired: list[int] = []
    recovery = RECOVERIES.get(TransportParams().recovery)

    class CountingReceiver(recovery.receiver):  # the default mode's receiver, its timer counted
        def _on_ack_timer(self, arg: object) -> None:
            fired.append(self.sim.now)
            super()._on_ack_timer(arg)

    monkeypatch.setattr(recovery, "receiver", CountingReceiver)
    n = 200
    _, qp = one_flow(n * MTU, ack_every=0, ack_delay_ps=delay_ps)
    windows = math.ceil(n / per_window)
    assert qp.rx.acks_sent == windows
    # One timer event per window (the last window's timer finds it already closed by the
    # message's last packet): cheap, not one per packet.
    assert len(fired) == windows


def test_delay_and_bytes_together() -> None:
    # 16 KB closes each window after 4 packets, long before 1 us: the timer never ACKs.
    _, qp = one_flow(100 * MTU, ack_every=0, ack_every_bytes=KIB16, ack_delay_ps=1 * US)
    assert qp.rx.acks_sent == 25
    # A delay shorter than 4 packet times closes it first: 2 packets per window (s < D < 2s).
    _, qp = one_flow(100 * MTU, ack_every=0, ack_every_bytes=KIB16, ack_delay_ps=SPACING_PS + 1000)
    assert qp.rx.acks_sent == 50


# --- the receiver driven packet by packet ------------------------------------------------


class Recorder(Port):
    """The receiver NIC's port, recording the control frames it is given instead of sending
    them (the compiled receiver calls this Python override)."""

    def __init__(self, sim: Simulator) -> None:
        super().__init__(sim, "recorder", None, 100 * 10**9, 0, None, None)
        self.sent: list[Packet] = []

    def send_control(self, pkt: Packet) -> None:
        self.sent.append(pkt)


def receiver(recovery: str, n_packets: int = 32, **transport: object):
    sim, net = make_net(
        small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=1), recovery=recovery, **transport
    )
    (qp,) = net.add_flows([FlowSpec(0, 0, 1, n_packets * MTU)])
    nic = Nic(sim, None, Recorder(sim))
    qp.rx.nic = nic

    def feed(psn: int, ecn: bool = False) -> list[Packet]:
        """Deliver PSN ``psn``; the control frames it triggered."""
        pkt = Packet(DATA, qp, 0, 1, psn, data_wire_bytes(MTU), MTU, psn, 0, 0)
        pkt.ecn = ecn
        net.injected_packets += 1
        before = len(nic.port.sent)
        qp.rx.on_data(pkt)
        return nic.port.sent[before:]

    return qp, feed


COALESCE = {"ack_every": 0, "ack_every_bytes": KIB16}


@pytest.mark.parametrize("recovery", ["gbn", "sr", "ideal"])
def test_ecn_marked_packet_is_echoed_at_once(recovery: str) -> None:
    """An ECN-marked packet is ACKed on arrival (echoing its mark and entropy) and the ACK
    covers the packets pending before it; the count restarts after it."""
    _, feed = receiver(recovery, cc="none", **COALESCE)
    assert feed(0) == [] and feed(1) == []
    (ack,) = feed(2, ecn=True)
    assert (ack.kind, ack.psn, ack.ecn, ack.entropy) == (ACK, 3, True, 2)
    assert feed(3) == [] and feed(4) == [] and feed(5) == []
    (ack,) = feed(6)
    assert (ack.kind, ack.psn, ack.ecn, ack.sack_psn) == (ACK, 7, False, 6)


@pytest.mark.parametrize("recovery", ["gbn", "sr"])
def test_nack_timing_is_unchanged_and_resets_the_count(recovery: str) -> None:
    """The same arrivals NACK at the same packets with and without coalescing; a NACK carries
    the cumulative ePSN, so the packets pending before it need no ACK of their own."""
    order = [0, 1, 3, 4, 2, 5, 6, 7, 8]
    if recovery == "gbn":
        order = [0, 1, 3, 4, 2, 3, 4, 5, 6, 7, 8]  # go-back-N discarded 3 and 4: resent
    nacks = {}
    for label, extra in (("per_packet", {}), ("coalesced", COALESCE)):
        _, feed = receiver(recovery, cc="none", **extra)
        nacks[label] = [i for i, psn in enumerate(order) if any(p.kind == NACK for p in feed(psn))]
    assert nacks["coalesced"] == nacks["per_packet"] == [2]
    _, feed = receiver(recovery, cc="none", **COALESCE)
    assert feed(0) == [] and feed(1) == []
    (nack,) = feed(3)
    assert (nack.kind, nack.psn) == (NACK, 2)
    # After the NACK nothing is pending: the ACK comes after 4 more accepted packets.
    replies = [feed(psn) for psn in order[3:]]
    acks = [order[3 + i] for i, r in enumerate(replies) if r]
    assert all(r[0].kind == ACK for r in replies if r)
    if recovery == "sr":  # 4 was accepted out of order and counts: 4, 2, 5, 6 -> ACK at 6
        assert acks == [6]
    else:  # go-back-N discarded 4 (no NACK: one per ePSN); 2, 3, 4, 5 -> ACK at 5
        assert acks == [5]


def test_duplicates_are_acked_at_once() -> None:
    _, feed = receiver("gbn", cc="none", **COALESCE)
    feed(0)
    (ack,) = feed(0)
    assert (ack.kind, ack.psn) == (ACK, 1)


def test_ideal_transport_coalesces_out_of_order_sacks_and_completes() -> None:
    """Packet spraying on the ideal transport (ECN off, so no echo is forced): every first
    arrival counts, so each flow of n full packets gets exactly n / 4 ACKs whatever the
    arrival order (with a short last packet the count would depend on when it arrives), and
    cumulative SACKs lose the sender nothing: no retransmission."""
    sc = {
        "topology": {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 2},
        "switch": {"lossless": True, "ecn": False},
        "transport": {"cc": "none", "recovery": "ideal", "ack_every": 0, "ack_every_bytes": "16KiB"},
        "lb": {"scheme": "rps"},
        "workload": {"kind": "permutation", "size": "1MiB"},
        "run": {"seed": 1, "progress": False},
    }
    result = run(sc)
    flows = result.flows
    assert flows["completed"].all() and result.summary["ooo_arrivals"] > 0
    assert result.summary["retx_packets"] == result.summary["timeouts"] == 0
    n = 2**20 // MTU
    acks = int(result.links[result.links["from"].str.startswith("h")]["tx_packets"].sum()) - len(flows) * n
    assert acks == result.summary["acks"] == len(flows) * n // 4


@pytest.mark.parametrize("key", ["ack_every_bytes", "ack_delay"])
def test_coalescing_needs_the_packet_threshold_off(key: str) -> None:
    value = "16KB" if key == "ack_every_bytes" else "1us"
    with pytest.raises(ScenarioError, match=f"transport.{key}"):
        validate(
            {
                "transport": {key: value},
                "workload": {"kind": "permutation", "size": "1MB"},
            }
        )
