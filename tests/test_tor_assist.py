"""ToR-assisted spraying over commodity RNICs (docs/schemes.md, ToR-assisted spraying).

* Decision rules, packet by packet, on a destination ToR fed hand-made packets: stale NACKs
  dropped, in-flight ones held then dropped when the PSN passes, released on a path_seq gap,
  forwarded when every path is past x, forwarded after hold_timeout; the resequencer releases
  in PSN order and flushes on a known loss or a timeout.
* Whole fabric (4 leaves x 4 spines x 4 hosts, 400G, cross-leaf permutation): nack_filter
  over selective-repeat NICs has (almost) no spurious retransmissions and matches ideal
  spraying; reorder over go-back-N NICs too; plain RPS has many.
* Real losses (random drops on one spine->leaf link) are still recovered, at most a
  hold_timeout per loss later than the unfiltered run; conservation holds with packets held.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from simutil import US, fct_ps, make_net, run_flows, small_leaf_spine

from spraylab.lb.base import REGISTRY, load_builtin_schemes, make_lb
from spraylab.net.drops import RANDOM_LOSS
from spraylab.net.framing import NACK_WIRE_BYTES, data_wire_bytes
from spraylab.net.packet import DATA, NACK, Packet
from spraylab.net.port import sim_drop
from spraylab.workload.flows import FlowSpec

HOSTS_PER_LEAF = 4
MTU = 4096


def cross_leaf_permutation(n_hosts: int, size: int, seed: int = 3) -> list[FlowSpec]:
    rng = random.Random(seed)
    perm = list(range(n_hosts))
    while True:
        rng.shuffle(perm)
        if all(perm[i] // HOSTS_PER_LEAF != i // HOSTS_PER_LEAF for i in range(n_hosts)):
            return [FlowSpec(i, i, perm[i], size) for i in range(n_hosts)]


def into_leaf1(rounds: int, size: int) -> list[FlowSpec]:
    """Back-to-back 4 MB messages into each host of leaf1 from hosts of the other leaves (one
    at a time per receiver: no incast), so that leaf1's downlinks carry most of the bytes."""
    flows: list[FlowSpec] = []
    senders = [h for h in range(16) if h // HOSTS_PER_LEAF != 1]
    for r in range(rounds):
        for j in range(HOSTS_PER_LEAF):
            fid = r * HOSTS_PER_LEAF + j
            deps = (fid - HOSTS_PER_LEAF,) if r else ()
            flows.append(FlowSpec(fid, senders[(r * 5 + j * 3) % 12], 4 + j, size, deps=deps))
    return flows


def lossy(net, a: str, b: str, p: float, seed: int = 99) -> list[int]:
    """Drop each data packet arriving over link a->b with probability p; returns [drops]."""
    port = net.link_ports[(a, b)][0]
    rnd = random.Random(seed).random
    sim = net.sim
    dropped = [0]

    def tap(pkt: Packet) -> bool:
        if pkt.kind == DATA and rnd() < p:
            dropped[0] += 1
            sim_drop(sim, pkt, RANDOM_LOSS, port)
            return False
        return True

    port.link.add_tap(tap)
    return dropped


def run(
    lb: str,
    recovery: str,
    flows: list[FlowSpec],
    params: dict | None = None,
    drop: float = 0.0,
    link_loss: float = 0.0,
    seed: int = 1,
    **transport,
):
    """``drop``: data packets only, spine0 -> leaf1 (``lossy``); ``link_loss``: every packet
    in both directions of leaf1 <-> spine0, data and control, as a topology ``loss`` event."""
    sim, net = make_net(
        small_leaf_spine(), lb=lb, lb_params=params, recovery=recovery, seed=seed, **transport
    )
    if drop:
        lossy(net, "spine0", "leaf1", drop)
    if link_loss:
        net.schedule_link_loss(0, "leaf1", "spine0", link_loss)
    assert run_flows(sim, net, flows) == "done"
    assert all(qp.rx.finish_ps >= 0 for qp in net.qps)
    qps = net.qps
    # both kinds of loss are counted at the link's ports
    dropped = sum(port.drops for port in net.ports_between("leaf1", "spine0"))
    return SimpleNamespace(
        net=net,
        completion=max(qp.rx.finish_ps for qp in qps),
        fct=fct_ps(net),
        data=sum(qp.sent_packets for qp in qps),
        retx=sum(qp.retx_packets for qp in qps),
        spurious=sum(qp.rx.spurious for qp in qps),
        discards=sum(qp.rx.discards for qp in qps),
        nacks=sum(qp.rx.nacks_sent for qp in qps),
        drops=dropped,
        stats=net.lb.stats(),
    )


# --- registration and parameters ---------------------------------------------------------


def test_registered_with_defaults_and_validation() -> None:
    load_builtin_schemes()
    cls = REGISTRY["tor_assist"]
    assert cls.where == "tor" and cls.summary
    lb = make_lb("tor_assist")
    assert (lb.params.mode, lb.params.uplink, lb.params.hold_timeout, lb.params.window) == (
        "auto",
        "round_robin",
        0,
        256,
    )
    # auto picks the mode that fits the RNICs: reorder for go-back-N, nack_filter otherwise
    for recovery, mode in (("gbn", "reorder"), ("sr", "nack_filter"), ("ideal", "nack_filter")):
        _, net = make_net(small_leaf_spine(), lb="tor_assist", recovery=recovery)
        assert net.lb.mode == mode
    assert make_lb("tor_assist", {"hold_timeout": "20us"}).params.hold_timeout == 20 * US
    for bad in (
        {"mode": "resequence"},
        {"uplink": "ecmp"},
        {"window": 0},
        {"hold_timeout": -1},
        {"windw": 8},
    ):
        with pytest.raises(ValueError):
            make_lb("tor_assist", bad)


# --- decision rules on hand-made packets -------------------------------------------------


class FakePort:
    """Stands in for a ToR port: records what the program sends."""

    def __init__(self) -> None:
        self.drops = 0
        self.sent: list[Packet] = []

    def send(self, pkt: Packet) -> None:
        self.sent.append(pkt)

    send_control = send


def dst_tor(mode: str, recovery: str, hold_timeout: int = 10 * US, **params):
    """leaf1's program for a flow host 0 (leaf0, 4 uplinks) -> host 4 (leaf1), with both of
    leaf1's ports for the flow replaced by recorders. The flow itself never starts."""
    sim, net = make_net(
        small_leaf_spine(),
        lb="tor_assist",
        lb_params={"mode": mode, "hold_timeout": hold_timeout, **params},
        recovery=recovery,
    )
    qp = net.add_flows([FlowSpec(0, 0, 4, 1000 * MTU, start_ps=10**12)])[0]
    leaf1 = net.switches["leaf1"]
    to_host, to_sender = FakePort(), FakePort()
    table = list(leaf1.table)
    table[4], table[0] = [to_host], [to_sender]
    leaf1.table = table
    program = leaf1.program

    def data(psn: int, path: int, seq: int) -> bool:
        pkt = Packet(DATA, qp, 0, 4, psn, data_wire_bytes(MTU), MTU, 0, 0, sim.now)
        pkt.path_id, pkt.path_seq = path, seq
        return program.on_packet(leaf1, pkt)

    def nack(x: int) -> bool:
        return program.on_packet(leaf1, Packet(NACK, qp, 4, 0, x, NACK_WIRE_BYTES, 0, 0, 0, sim.now))

    return SimpleNamespace(
        sim=sim, net=net, lb=net.lb, data=data, nack=nack, to_host=to_host, to_sender=to_sender
    )


def test_nack_filter_rules() -> None:
    t = dst_tor("nack_filter", "sr")
    lb = t.lb
    # PSN i goes on path i % 4 (seq i // 4); PSN 2 is late on path 2
    for psn in (0, 1, 3):
        assert t.data(psn, psn % 4, psn // 4) is False  # consumed: the program forwards itself
    assert [p.psn for p in t.to_host.sent] == [0, 1, 3]
    # NACK(2): 2 is still in flight on path 2 -> held
    assert t.nack(2) is False and lb.counters.nacks_held == 1 and lb.held_packets() == 1
    assert t.nack(2) is False and lb.counters.nacks_merged == 1  # the NIC's NACK timer repeats it: merged
    # 2 arrives -> the held NACK is dropped; a late NACK(2) is stale
    t.data(2, 2, 0)
    assert lb.counters.nacks_dropped_passed == 1 and lb.held_packets() == 0
    assert t.nack(2) is False and lb.counters.nacks_dropped_stale == 1
    # PSN 6 lost on path 2: NACK(6) held until path 2's next packet shows the seq gap
    for psn in (4, 5, 7):
        t.data(psn, psn % 4, psn // 4)
    assert t.nack(6) is False and lb.counters.nacks_held == 2
    t.data(10, 2, 2)  # seq 1 missing on path 2, bracket (2, 10) contains 6
    assert lb.counters.path_gaps == 1 and lb.counters.nacks_released_loss == 1
    assert [p.psn for p in t.to_sender.sent if p.kind == NACK] == [6]
    # the rest of round 2, then the retransmission of 6 and PSN 8: ePSN moves to 12, which
    # no path carried; once every path delivered a PSN above 12, NACK(12) is forwarded at once
    for psn, path, seq in ((9, 1, 2), (11, 3, 2), (6, 0, 2), (8, 0, 3)):
        t.data(psn, path, seq)
    assert t.nack(12) is False  # no path is past 12 yet: held
    for psn, path, seq in ((13, 1, 3), (14, 2, 3), (15, 3, 3)):
        t.data(psn, path, seq)
    assert lb.counters.nacks_released_loss == 1  # path 0 (at 8) could still carry 12
    t.data(16, 0, 4)
    assert lb.counters.nacks_released_loss == 2  # every path past 12 (minmax = 13)
    assert t.nack(12) is False and lb.counters.nacks_held == 4  # recovery of 12 already requested: held
    t.data(17, 1, 4)
    assert lb.held_packets() == 1  # no new evidence: still held
    # ... and, with no news at all, released after hold_timeout
    t.sim.run(until_ps=t.sim.now + 20 * US)
    assert lb.counters.nacks_timed_out == 1
    assert [p.psn for p in t.to_sender.sent if p.kind == NACK] == [6, 12, 12]
    assert lb.held_packets() == 0


@pytest.mark.parametrize("retarget", [True, False])
def test_nack_filter_retargets_a_passed_nack_to_the_next_loss(retarget: bool) -> None:
    """PSNs 1 and 5 are lost on path 1. NACK(1) is forwarded, the NIC repeats it (held); when
    the retransmission of 1 passes, ePSN becomes 5, known lost: the held NACK goes out as
    NACK(5) (the NIC itself would only NACK 5 at its next out-of-order arrival). With
    ``retarget = False`` it is dropped, as the original spec words it (docs/schemes.md)."""
    t = dst_tor("nack_filter", "sr", retarget=retarget)
    for psn in (0, 2, 3, 4, 6, 7):
        t.data(psn, psn % 4, psn // 4)
    t.data(9, 1, 2)  # path 1: seq 0 and 1 missing
    assert t.lb.counters.path_lost_packets == 2
    assert t.nack(1) is True
    assert t.nack(1) is False  # retransmission requested: held
    t.data(1, 2, 2)  # the retransmission passes
    assert t.lb.held_packets() == 0
    nacks = [p.psn for p in t.to_sender.sent if p.kind == NACK]
    if retarget:
        assert nacks == [5] and t.lb.counters.nacks_retargeted == 1  # NACK(1) itself went out directly
    else:
        assert nacks == [] and t.lb.counters.nacks_dropped_passed == 1


def test_nack_filter_mirrors_the_nic_bitmap() -> None:
    """A packet beyond ePSN + bitmap is discarded by a selective-repeat NIC: it did not
    'pass', so a NACK for it once ePSN gets there is forwarded, not dropped as stale."""
    t = dst_tor("nack_filter", "sr")  # bitmap 128
    t.data(1, 1, 0)  # PSN 0 late on path 0
    t.data(129, 1, 1)  # >= 0 + 128: discarded by the NIC
    t.data(0, 0, 0)
    for psn in range(2, 129):
        t.data(psn, 2 + psn % 2, psn // 2 - 1)
    assert t.lb.counters.nic_discards == 1
    assert t.nack(129) is True and t.lb.counters.nacks_forwarded_loss == 1


def test_reorder_resequences_and_flushes() -> None:
    t = dst_tor("reorder", "gbn", hold_timeout=5 * US)
    sent = t.to_host.sent
    t.data(1, 1, 0)
    t.data(3, 3, 0)
    t.data(2, 2, 0)
    assert sent == [] and t.lb.held_packets() == 3
    t.data(0, 0, 0)
    assert [p.psn for p in sent] == [0, 1, 2, 3] and t.lb.held_packets() == 0
    # PSN 4 lost on path 0: 5, 6, 7 held; path 0's next packet (8, seq 2) reveals the gap
    for psn in (5, 6, 7):
        t.data(psn, psn % 4, psn // 4)
    assert len(sent) == 4
    t.data(8, 0, 2)
    assert t.lb.counters.reseq_flush_loss == 1
    assert [p.psn for p in sent[4:]] == [5, 6, 7, 8]  # flushed in order: the NIC NACKs 4
    # the retransmission of 4 passes at once; 5-8 were discarded by the NIC and are resent
    # by go-back-N: 10 waits for them, at most hold_timeout
    t.data(4, 1, 2)
    assert sent[-1].psn == 4
    t.data(10, 2, 2)
    assert sent[-1].psn == 4 and t.lb.held_packets() == 1
    t.sim.run(until_ps=t.sim.now + 50 * US)
    assert t.lb.counters.reseq_flush_timeout == 1 and sent[-1].psn == 10
    assert t.lb.stats()["reseq_peak_bytes"] == 4 * (data_wire_bytes(MTU))


# --- whole fabric, no loss ---------------------------------------------------------------


@pytest.fixture(scope="module")
def permutation() -> list[FlowSpec]:
    return cross_leaf_permutation(16, 2_000_000)


@pytest.fixture(scope="module")
def ideal(permutation):
    return run("rps", "ideal", permutation)


@pytest.mark.parametrize("uplink", ["round_robin", "random"])
def test_nack_filter_over_selective_repeat_matches_ideal_spraying(permutation, ideal, uplink: str) -> None:
    tor = run("tor_assist", "sr", permutation, {"mode": "nack_filter", "uplink": uplink})
    rps = run("rps", "sr", permutation)
    assert tor.spurious <= 0.01 * tor.data
    assert tor.completion <= 1.10 * ideal.completion
    assert tor.stats["nacks_dropped"] > 100  # the NIC did NACK reordering; the ToR hid it
    # sanity baseline: the same NICs under plain packet spraying retransmit a lot for nothing
    assert rps.spurious > 0.05 * rps.data and rps.spurious > 20 * max(1, tor.spurious)
    assert rps.completion > tor.completion
    # state: per flow 4 paths x (seq + PSN) + 256-bit window + 16 B; all retired at the end
    assert tor.stats["tor_dst_flow_state_bytes"] == 4 * 8 + 16 + 32
    assert tor.stats["tor_max_flows_tracked"] >= 2
    assert tor.stats["tor_flows_tracked_now"] == 0 and tor.stats["tor_held_now"] == 0


def test_round_robin_stamping_balances_uplinks(permutation) -> None:
    # one ACK per message, so that the uplinks carry (nearly) only data
    tor = run("tor_assist", "sr", permutation, {"mode": "nack_filter"}, ack_every=10**6)
    assert tor.stats["tor_path_gaps"] == 0  # FIFO paths, no loss: every path_seq is contiguous
    for switch in tor.net.switches.values():
        if switch.tier == 1:
            sent = [p.tx_packets for p in switch.uplinks]
            # per-flow round-robin: each flow is off by at most one packet per uplink
            assert max(sent) - min(sent) <= 2 * HOSTS_PER_LEAF, sent


def test_reorder_over_go_back_n_matches_ideal_spraying(permutation, ideal) -> None:
    tor = run("tor_assist", "gbn", permutation, {"mode": "reorder"})
    rps = run("rps", "gbn", permutation)
    assert tor.completion <= 1.15 * ideal.completion
    assert tor.discards <= 0.01 * tor.data
    assert tor.stats["reseq_peak_bytes"] > 0
    assert all(v >= 0 for v in tor.stats["reseq_peak_bytes_per_tor"].values())
    assert tor.stats["tor_held_now"] == 0 and tor.stats["tor_flows_tracked_now"] == 0
    # sanity baseline: go-back-N NICs discard sprayed packets and rewind
    assert rps.discards > 0.1 * rps.data and rps.completion > 2 * tor.completion


def test_conservation_mid_run_counts_held_packets(permutation) -> None:
    sim, net = make_net(small_leaf_spine(), lb="tor_assist", lb_params={"mode": "reorder"}, recovery="gbn")
    net.add_flows(permutation)
    held_seen = 0
    for t in range(2, 40, 2):
        sim.run(until_ps=t * US)
        net.check_conservation()
        held_seen = max(held_seen, net.lb.held_packets())
    assert held_seen > 0


# --- real losses -------------------------------------------------------------------------

# A sender window of about one BDP (400G x ~8 us): without one, a line-rate sender overruns
# the selective-repeat NIC's 128-packet bitmap while a loss is repaired; the NIC discards
# silently and only its 1 ms RTO recovers, with or without the ToR, which would drown the
# hold_timeout-per-loss bound in RTO noise (see the next test for that regime).
BDP_BYTES = 400_000


@pytest.mark.parametrize("p", [0.001, 0.01])
@pytest.mark.parametrize(("mode", "recovery"), [("nack_filter", "sr"), ("reorder", "gbn")])
def test_real_losses_are_recovered(mode: str, recovery: str, p: float) -> None:
    flows = into_leaf1(5, 4_000_000)
    tor = run("tor_assist", recovery, flows, {"mode": mode}, drop=p, window_bytes=BDP_BYTES)
    base = run("rps", recovery, flows, drop=p, window_bytes=BDP_BYTES)
    assert tor.drops >= 1
    assert tor.retx >= tor.drops  # every dropped packet was retransmitted
    assert tor.stats["tor_path_gaps"] >= 1  # the ToR saw the losses as path_seq gaps
    hold = tor.stats["tor_max_hold_timeout_ps"]
    assert 0 < hold <= 100 * US
    assert tor.completion <= base.completion + tor.drops * hold
    if mode == "nack_filter":
        assert tor.stats["nacks_forwarded"] >= 1
        assert tor.spurious < base.spurious
    else:
        assert tor.stats["reseq_flush_loss"] + tor.stats["reseq_flush_timeout"] >= 1


def test_losses_without_a_window_still_complete() -> None:
    """Selective repeat, no window, 1% loss: bitmap overruns cost RTOs (NIC behaviour, the
    plain-spraying baseline pays them too) but every flow completes and every drop is
    retransmitted."""
    flows = into_leaf1(5, 4_000_000)
    tor = run("tor_assist", "sr", flows, {"mode": "nack_filter"}, drop=0.01)
    assert tor.drops >= 10 and tor.retx >= tor.drops
    assert tor.stats["tor_nic_discards_mirrored"] > 0 and tor.stats["nacks_retargeted"] > 0


def test_reorder_recovers_each_loss_with_one_rewind() -> None:
    """Claim 3 at test scale (scenarios/lb/lossy_spine_1p.toml: 1% of all packets lost both
    ways on leaf1 <-> spine0, go-back-N NICs, one-BDP window). After a flush the NIC NACKs
    and the sender goes back N; the packets still arriving from before that rewind are held
    for the retransmission for hold_timeout plus the round trip of the flush, which includes
    the two ToR <-> NIC hops. Without them the ToR flushed again just before the
    retransmission arrived: the NIC NACKed a second time (2-2.5 NACKs per loss), the sender
    rewound a second window it had just resent, and the extra rewinds' out-of-order CNPs
    cut its rate: here completion exceeded the bound below. A gap revealed by a packet sent
    before the sender can have heard the NACK is another loss, not the retransmission's,
    and does not trigger a second recovery either."""
    flows = cross_leaf_permutation(16, 4_000_000)
    tor = run("tor_assist", "gbn", flows, {"mode": "reorder"}, link_loss=0.01, seed=4, window_bytes=BDP_BYTES)
    base = run("rps", "gbn", flows, link_loss=0.01, seed=4, window_bytes=BDP_BYTES)
    lost = tor.stats["tor_path_lost_packets"]
    assert lost >= 10 and tor.drops >= lost
    assert tor.retx >= lost  # every loss the ToR saw was retransmitted
    assert tor.nacks <= 1.25 * lost  # one NACK, i.e. one go-back-N rewind, per loss
    hold = tor.stats["tor_max_hold_timeout_ps"]
    assert tor.completion <= base.completion + tor.drops * hold
