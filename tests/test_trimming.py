"""Switch packet trimming (``switch.trimming``) and the UEC-style recovery mode (``uec``), each
test against the theory it names (docs/design.md, "Packet trimming and the uec mode"):

* trimming loses no data: every trimmed packet's header reaches its receiver, is NACKed and its
  PSN resent exactly once, every byte is delivered, the trims are counted (network = flows =
  ports) and nothing is dropped;
* a header travels at control priority: from the trim point (and through every later hop) it
  takes one serialization of its 84 B plus the propagation delay, overtaking the queued data;
* an N:1 incast on a small buffer completes under trimming with no buffer drop, where without
  trimming the same buffer drops and only the RTO recovers;
* off by default changes nothing, and on without a full queue changes nothing either (it acts
  only on the drop path, drawing no random number);
* the RTO is the backstop for losses trimming cannot report (a lossy link), timed per
  transmission as uet-htsim's UecSrc times it: each timeout resends exactly the one PSN whose
  transmission went unanswered, and where nothing is lost (every packet ACKed or its header
  NACKed) it never fires, whatever ``transport.rto``; every resend answers one NACK or one
  timeout (random loss rates, RTOs and seeds);
* a header whose PSN already arrived is ACKed, not NACKed;
* the receiver ACKs at once what uet-htsim's UecSink does (uec.cpp processData): the first
  packet, every retransmission (its sender sets ``ar`` on each resend) and, after such a request,
  the in-order arrival that leaves no out-of-order packet; the rest waits for 16 KiB;
* bad combinations are refused with one line.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simutil import US, G

from spraylab.engine.simulator import Simulator
from spraylab.lb.base import make_lb
from spraylab.model.scenario import Scenario, ScenarioError
from spraylab.net.framing import TRIMMED_FRAME_BYTES, TRIMMED_WIRE_BYTES, data_wire_bytes
from spraylab.net.network import Network, SwitchParams
from spraylab.net.packet import DATA, TRIMMED, Packet
from spraylab.net.port import Port
from spraylab.net.switch import SharedBuffer, Switch
from spraylab.runs.experiment import run
from spraylab.topology.leaf_spine import leaf_spine
from spraylab.transport.params import TransportParams
from spraylab.workload.flows import FlowSpec

DATA_WIRE = data_wire_bytes(4096)


def incast_scenario(
    trimming: bool, buffer: str = "300KB", port_buffer: int = 0, **transport: object
) -> Scenario:
    """8:1 incast on a 2x2 leaf-spine at 100 Gb/s, no congestion control unless ``transport``
    names one: the receiver's downlink gets 8x its rate, so a small buffer overflows."""
    return Scenario.from_dict(
        {
            "topology": {
                "kind": "leaf_spine",
                "leaves": 2,
                "spines": 2,
                "hosts_per_leaf": 8,
                "host_rate": "100Gbps",
            },
            "switch": {"buffer": buffer, "trimming": trimming, "port_buffer": port_buffer},
            "transport": {"cc": "none", "recovery": "uec", **transport},
            "workload": {"kind": "incast", "senders": 8, "receiver": 0, "size": "1MB"},
            "run": {"time_limit": "50ms", "progress": False},
        }
    )


def incast_net(trimming: bool = True, buffer_bytes: int = 300_000) -> tuple[Simulator, Network]:
    sim = Simulator(1)
    fabric = leaf_spine(2, 2, 8, 100 * G, 100 * G, 1 * US)
    net = Network(
        sim,
        fabric,
        SwitchParams(buffer_bytes=buffer_bytes, trimming=trimming),
        TransportParams(cc="none", recovery="uec"),
        make_lb("ecmp", None),
    )
    net.add_flows([FlowSpec(i, src, 0, 1_000_000) for i, src in enumerate(range(8, 16))])
    return sim, net


# --- trimming loses no data ---------------------------------------------------------------------


def test_trimming_loses_no_data() -> None:
    """Conservation under trimming: a trimmed packet is not lost, its header goes on to the
    receiver, which NACKs it, and the sender resends that PSN. So with no other loss and no
    timeout, per flow: headers received = NACKs = packets trimmed = retransmissions; every
    byte delivered, no drop of any cause; and the trim counts agree (network = flows = ports)."""
    sim, net = incast_net()
    sim.run(until_ps=50_000 * US)
    counts = net.check_conservation()  # packets, bytes, and the trim counts (check_trimmed)
    assert net.all_done
    assert counts["trimmed"] == net.trimmed_packets > 0
    assert sum(net.drops_by_cause) == 0
    for qp in net.qps:
        rx = qp.rx
        assert rx.delivered_bytes == qp.spec.size_bytes
        assert qp.timeouts == 0
        assert rx.trimmed_headers == rx.nacks_sent == qp.trimmed_packets == qp.retx_packets
        assert rx.spurious == 0
    assert sum(p.trimmed_packets for p in net.ports) == net.trimmed_packets


# --- headers at priority ----------------------------------------------------------------------


def _port(sim: Simulator, rate_bps: int, delay_ps: int, seen: list) -> Port:
    port = Port(sim, "p", None, rate_bps, delay_ps, None, None)
    port.connect(None, lambda pkt: seen.append((sim.now, pkt.kind, pkt.psn, pkt.size)))
    return port


def _data(psn: int) -> Packet:
    return Packet(DATA, None, 0, 1, psn, DATA_WIRE, 4096, 0, 0, 0)


def test_trimmed_header_overtakes_the_queue_at_the_trim_point() -> None:
    """Strict priority at the trim point: a data packet the buffer refuses goes on as its
    84 B header (64 B frame, htsim's trim size, plus preamble and gap), arriving one header
    serialization plus the propagation delay after the trim, ahead of the data queued before it
    (which arrives only once the backlog has drained)."""
    sim = Simulator(1)
    seen: list = []
    ps_per_byte = 80  # 100 Gb/s
    delay_ps = 1 * US
    port = _port(sim, 100 * G, delay_ps, seen)
    buffer = SharedBuffer(20_000, 1.0)  # dynamic threshold: this port alone may queue ~10 KB
    buffer.add_port(port)
    port.buffer = buffer
    port.trim_bytes = TRIMMED_WIRE_BYTES
    for psn in range(6):
        port.send(_data(psn))
    sim.run()
    assert TRIMMED_FRAME_BYTES == 64 and TRIMMED_WIRE_BYTES == 84
    data = [(t, psn) for t, kind, psn, _ in seen if kind == DATA]
    headers = [(t, psn, size) for t, kind, psn, size in seen if kind == TRIMMED]
    assert headers, "the buffer never filled: the test does not exercise trimming"
    assert port.trimmed_packets == len(headers) and port.drops == 0
    for t, _psn, size in headers:
        assert size == TRIMMED_WIRE_BYTES
        assert t == TRIMMED_WIRE_BYTES * ps_per_byte + delay_ps  # trimmed at t = 0
        assert t < max(td for td, _ in data)  # ahead of the queued data
    # The admitted data leave back to back as queued (the lossy port fixed their departures at
    # enqueue); the headers' time is charged to the link, so the next packet to come would
    # start only after every byte sent (capacity conserved).
    assert sorted(data) == [((psn + 1) * DATA_WIRE * ps_per_byte + delay_ps, psn) for psn in range(len(data))]
    assert port.busy_until == (len(data) * DATA_WIRE + len(headers) * TRIMMED_WIRE_BYTES) * ps_per_byte


def test_a_full_queue_may_trim_its_tail_instead() -> None:
    """uet-htsim's CompositeQueue boots the queued tail to a header instead of trimming the
    arriving packet half of the time (compositequeue.cpp; spraylab.net.wiring.TRIM_TAIL_FRACTION).
    With that chance at 1 every refusal trims the packet queued last, if it has not started, and
    the arriving one takes its room: each packet reaches the far end once (conservation), whole
    or as its 84 B header; the headers keep their places in the FIFO (PSN order), the packet
    sent last is never trimmed, and the link carries exactly the bytes that arrive."""
    sim = Simulator(1)
    seen: list = []
    ps_per_byte = 80  # 100 Gb/s
    port = Port(sim, "p", None, 100 * G, 1 * US, None, random.Random(1))
    port.connect(None, lambda pkt: seen.append((sim.now, pkt.kind, pkt.psn, pkt.size)))
    buffer = SharedBuffer(20_000, 1.0)  # dynamic threshold: this port alone may queue ~10 KB
    buffer.add_port(port)
    port.buffer = buffer
    port.trim_bytes = TRIMMED_WIRE_BYTES
    port.trim_tail_fraction = 1.0
    for psn in range(6):
        port.send(_data(psn))
    sim.run()
    kinds = {psn: kind for _, kind, psn, _ in seen}
    assert sorted(kinds) == list(range(6)) and len(seen) == 6
    headers = [psn for psn, kind in kinds.items() if kind == TRIMMED]
    assert headers and port.trimmed_packets == len(headers) and port.drops == 0
    assert kinds[5] == DATA and kinds[0] == DATA  # the last sent, and the one already on the wire
    assert [psn for _, _, psn, _ in sorted(seen)] == list(range(6))  # FIFO order kept
    assert all(size == TRIMMED_WIRE_BYTES for _, kind, _, size in seen if kind == TRIMMED)
    assert port.busy_until == sum(size for *_, size in seen) * ps_per_byte
    assert port.tx_bytes == sum(size for *_, size in seen)


def test_trimmed_header_keeps_priority_at_later_hops() -> None:
    """A header is not kind DATA, so a switch further on sends it on the control path too: its
    hop takes one serialization plus propagation however long that port's data queue is."""
    sim = Simulator(1)
    seen: list = []
    ps_per_byte = 80
    delay_ps = 1 * US
    port = _port(sim, 100 * G, delay_ps, seen)
    switch = Switch(sim, "s", 0, 1, 0)
    switch.table = [[port], [port]]
    for psn in range(10):  # ten data packets queued: ~334 ns of backlog
        switch.forward(_data(psn))
    header = _data(99)
    header.kind = TRIMMED
    header.size = TRIMMED_WIRE_BYTES
    header.payload = 0
    switch.forward(header)
    sim.run()
    (arrival,) = [t for t, kind, psn, _ in seen if psn == 99]
    assert arrival == TRIMMED_WIRE_BYTES * ps_per_byte + delay_ps
    assert arrival < min(t for t, kind, psn, _ in seen if 1 <= psn < 10)  # data still queued


# --- N:1 incast on a small buffer -------------------------------------------------------------


def test_incast_on_a_small_buffer_trims_instead_of_dropping() -> None:
    """With trimming, a full queue never drops (the header goes on, the NACK returns within a
    round trip), so the incast completes with zero buffer drops and no timeout. Without it, the
    same buffer drops (the scenario does overflow), the uec receiver has no gap to NACK, and only
    the RTO (1 ms) recovers: the incast completes later."""
    trimmed = run(incast_scenario(True)).summary
    dropped = run(incast_scenario(False)).summary
    assert trimmed["completed"] and dropped["completed"]
    assert trimmed["drops_buffer"] == 0 and trimmed["drops_total"] == 0
    assert trimmed["trimmed_packets"] > 0 and trimmed["timeouts"] == 0
    assert trimmed["conservation"]["trimmed"] == trimmed["trimmed_packets"]
    assert dropped["drops_buffer"] > 0 and dropped["timeouts"] > 0
    assert "trimmed_packets" not in dropped
    assert trimmed["completion_ps"] < dropped["completion_ps"]


def test_port_buffer_caps_every_switch_queue() -> None:
    """``switch.port_buffer`` is a fixed-size queue (htsim's switch queues) besides the shared
    buffer's threshold. Without trimming, no switch port ever holds more than the cap
    (``max_queue_bytes`` is the backlog a packet found; what is admitted keeps backlog + size
    within the cap, and the incast's hot port carries data only); the cap is what refuses
    packets here (the 64 MB shared buffer alone takes the whole incast). With trimming the
    refused packets are trimmed, none dropped. (Their headers are charged to the same link
    time, so there the backlog may pass the cap by header bytes: htsim keeps headers in a
    queue of their own.)"""
    cap = 100_000
    for trimming in (False, True):
        scenario = incast_scenario(trimming, buffer="64MB").with_overrides({"switch.port_buffer": cap})
        result = run(scenario)
        assert result.summary["completed"]
        if trimming:
            assert result.summary["trimmed_packets"] > 0 and result.summary["drops_total"] == 0
        else:
            switch_ports = result.links[result.links["tier"] >= 0]
            assert switch_ports["max_queue_bytes"].max() <= cap
            assert result.summary["drops_buffer"] > 0
    uncapped = run(incast_scenario(True, buffer="64MB")).summary
    assert uncapped["trimmed_packets"] == 0 and uncapped["max_queue_bytes"] > cap


def test_port_buffer_smaller_than_a_packet_is_refused() -> None:
    with pytest.raises(ScenarioError, match="switch.port_buffer"):
        incast_scenario(True).with_overrides({"switch.port_buffer": 1000})


# --- off by default -----------------------------------------------------------------------------


def test_off_by_default() -> None:
    """The default is no trimming: no port trims, the scenario (and so every stored run's
    identity) has no trimming key, and the summary no trim count."""
    assert SwitchParams().trimming is False
    scenario = incast_scenario(False)
    assert "trimming" not in scenario.to_dict()["switch"]
    sim, net = incast_net(trimming=False)
    assert all(port.trim_bytes == 0 for port in net.ports)
    sim, net = incast_net(trimming=True)
    switch_ports = [p for p in net.ports if isinstance(p.owner, Switch)]
    assert all(p.trim_bytes == TRIMMED_WIRE_BYTES for p in switch_ports)
    assert all(p.trim_bytes == 0 for p in net.ports if not isinstance(p.owner, Switch))


def test_trimming_without_a_full_queue_changes_nothing() -> None:
    """Trimming acts only where a packet would have been dropped for buffer, and draws no random
    number: on a buffer that never fills, trimming on and off give the same flows and links
    tables and the same summary but for the trim count (0)."""
    on = run(incast_scenario(True, buffer="64MB"))
    off = run(incast_scenario(False, buffer="64MB"))
    assert on.summary["trimmed_packets"] == 0
    assert on.flows.equals(off.flows)
    assert on.links.equals(off.links)
    skip = {"wall_s", "card", "conservation", "trimmed_packets"}
    assert {k: v for k, v in on.summary.items() if k not in skip} == {
        k: v for k, v in off.summary.items() if k not in skip
    }


# --- the uec mode -------------------------------------------------------------------------------


def test_rto_is_the_backstop_for_losses_trimming_cannot_report() -> None:
    """A lossy link loses packets outright (no header, no NACK): the uec mode recovers them by
    the RTO, resending only what was not SACKed, and still delivers every byte."""
    scenario = Scenario.from_dict(
        {
            "topology": {
                "kind": "leaf_spine",
                "leaves": 2,
                "spines": 1,
                "hosts_per_leaf": 2,
                "host_rate": "100Gbps",
                "events": [{"at": "0us", "link": ["leaf0", "spine0"], "action": "loss", "loss_rate": 0.01}],
            },
            "switch": {"trimming": True},
            "transport": {"cc": "none", "recovery": "uec", "rto": "50us"},
            "workload": {"kind": "permutation", "size": "400KB"},
            "run": {"time_limit": "20ms", "progress": False},
        }
    )
    result = run(scenario)
    summary = result.summary
    assert summary["completed"]
    assert summary["drops_random_loss"] > 0
    assert summary["timeouts"] > 0
    assert summary["trimmed_packets"] == 0
    # no trimming, so no NACK: every resend is one timeout's, of the one PSN that timed out
    flows = result.flows
    assert (flows["retx_packets"] == flows["timeouts"]).all()
    assert (flows["timeouts"] > 1).any()  # a flow with several losses times each one out


@pytest.mark.parametrize("cc", ["none", "nscc"])
def test_the_rto_never_fires_where_every_transmission_is_answered(cc: str) -> None:
    """An 8:1 incast on a 60 KB port buffer trims hundreds of packets (thousands without a
    congestion control) and loses none: every transmission is answered within a queue and a
    round trip (an ACK, or the NACK of its header), so a per-transmission RTO as short as 20 us
    never expires and the run does not depend on it. (Timed from the flow's last progress instead, a PSN trimmed again and again
    stalls the cumulative ACK: 180 timeouts at 20 us, 293 spurious resends, 14% longer.)"""
    results = []
    for rto in ("20us", "100us"):
        scenario = incast_scenario(True, port_buffer=60_000, cc=cc, rto=rto)
        results.append(run(scenario))
    for result in results:
        assert result.summary["completed"] and result.summary["trimmed_packets"] > 100
        assert result.summary["timeouts"] == 0 and result.summary["spurious_retx"] == 0
        assert result.summary["drops"] == 0
    assert results[0].flows.equals(results[1].flows)


@settings(max_examples=8, deadline=None)
@given(
    loss_rate=st.sampled_from([0.0, 0.003, 0.02]),
    rto=st.sampled_from(["15us", "60us", "300us"]),
    cc=st.sampled_from(["none", "nscc"]),
    seed=st.integers(1, 1000),
)
def test_every_resend_answers_one_nack_or_one_timeout(loss_rate: float, rto: str, cc: str, seed: int) -> None:
    """On a trimming fabric with a lossy spine link: every flow completes, each resend was asked
    for by one NACK of its trimmed header or one timeout of its transmission (a queued resend of
    a PSN SACKed meanwhile is skipped, so at most that many), and with nothing lost no timeout
    fires, whatever the RTO."""
    events = [{"at": "0us", "link": ["leaf0", "spine0"], "action": "loss", "loss_rate": loss_rate}]
    result = run(
        Scenario.from_dict(
            {
                "topology": {
                    "kind": "leaf_spine",
                    "leaves": 2,
                    "spines": 2,
                    "hosts_per_leaf": 4,
                    "events": events,
                },
                "switch": {"trimming": True, "port_buffer": 30_000},
                "transport": {"cc": cc, "recovery": "uec", "rto": rto},
                "workload": {"kind": "permutation", "size": "200KB"},
                "run": {"seed": seed, "time_limit": "50ms", "progress": False},
            }
        )
    )
    flows = result.flows
    assert result.summary["completed"]
    assert (flows["retx_packets"] <= flows["nacks"] + flows["timeouts"]).all()
    if loss_rate == 0.0:
        assert result.summary["drops"] == 0 and result.summary["timeouts"] == 0


def test_a_header_of_a_psn_already_received_is_acked_not_nacked() -> None:
    """A trimmed copy of a PSN the receiver holds (another copy arrived) needs no resend: the
    receiver ACKs it. A header of a PSN not yet here is NACKed, naming that PSN."""
    sim, net = incast_net()
    qp = net.qps[0]
    rx = qp.rx
    rx.on_data(Packet(DATA, qp, qp.src, qp.dst, 0, DATA_WIRE, 4096, 0, 0, 0))
    acks, nacks = rx.acks_sent, rx.nacks_sent
    for psn in (0, 3):
        header = Packet(TRIMMED, qp, qp.src, qp.dst, psn, TRIMMED_WIRE_BYTES, 0, 0, 0, 0)
        rx.on_trimmed(header)
    assert rx.acks_sent == acks + 1  # PSN 0: held
    assert rx.nacks_sent == nacks + 1  # PSN 3: not held
    assert rx.trimmed_headers == 2


def test_uec_receiver_acks_first_packet_retransmissions_and_drained_requests_at_once() -> None:
    """htsim's ACK rule (UecSink::processData): an ACK per 16384 counted bytes (four 4 KiB
    packets here), and at once for the first packet, for every retransmission (``ar``) and,
    after an ``ar``, for the in-order arrival that leaves no out-of-order packet behind."""
    sim = Simulator(1)
    net = Network(
        sim,
        leaf_spine(2, 2, 8, 100 * G, 100 * G, 1 * US),
        SwitchParams(trimming=True),
        TransportParams(cc="none", recovery="uec", ack_every=0, ack_every_bytes=16384, ack_bytes="htsim"),
        make_lb("ecmp", None),
    )
    net.add_flows([FlowSpec(0, 8, 0, 100 * 4096)])
    qp = net.qps[0]
    rx = qp.rx

    def arrive(psn: int, retx: bool = False) -> int:
        pkt = Packet(DATA, qp, qp.src, qp.dst, psn, DATA_WIRE, 4096, 0, 0, 0)
        pkt.retx = retx
        before = rx.acks_sent
        rx.on_data(pkt)
        return rx.acks_sent - before

    assert arrive(0) == 1  # the first packet
    assert [arrive(1), arrive(3)] == [0, 0]  # 2 x (4096 + 64) B counted: below 16384
    assert arrive(4, retx=True) == 1  # a retransmission, out of order: ACKed, request stays
    assert arrive(5) == 0  # out of order, and the count restarted at the last ACK
    assert arrive(2) == 1  # fills the hole, nothing out of order left: the request is answered
    assert [arrive(6), arrive(7), arrive(8)] == [0, 0, 0]
    assert arrive(9) == 1  # the fourth packet since the last ACK: 4 x 4160 B >= 16384


# --- bad combinations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"switch": {"trimming": True, "lossless": True}}, "lossless"),
        ({"switch": {"trimming": True}, "transport": {"recovery": "sr"}}, "'uec'"),
        ({"switch": {"trimming": True}, "run": {"engine": "fluid"}}, "run.engine"),
    ],
)
def test_bad_combinations_are_refused_in_one_line(change: dict, words: str) -> None:
    base = {
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
        "transport": {"recovery": "uec"},
        "workload": {"kind": "permutation", "size": "40KB"},
    }
    for section, values in change.items():
        base[section] = {**base.get(section, {}), **values}
    with pytest.raises(ScenarioError) as exc:
        Scenario.from_dict(base)
    assert len(exc.value.lines) == 1
    assert "switch.trimming" in exc.value.lines[0] and words in exc.value.lines[0]


def test_a_network_built_directly_refuses_trimming_without_an_answer() -> None:
    """Below the scenario layer too: a receiver that cannot answer a trimmed header is refused."""
    fabric = leaf_spine(2, 2, 2, 100 * G, 100 * G, 1 * US)
    with pytest.raises(ValueError, match="switch.trimming"):
        Network(
            Simulator(1),
            fabric,
            SwitchParams(trimming=True),
            TransportParams(recovery="gbn"),
            make_lb("ecmp", None),
        )
