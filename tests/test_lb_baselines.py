"""Baseline load balancers (wcmp, spray_rr, flowlet, drill, adaptive, reps) against what theory
says they do: weighted splits, round-robin shares, flowlet stickiness, queue-aware balance,
REPS's recycling rules; plus parameter validation and determinism."""

from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace

import pytest
from simutil import US, make_net, run_flows, small_leaf_spine

from spraylab.engine.simulator import Simulator
from spraylab.lb.base import REGISTRY, load_builtin_schemes, make_lb
from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes
from spraylab.net.packet import ACK, DATA, Packet
from spraylab.net.routes import packet_hash
from spraylab.net.switch import ecmp_select
from spraylab.topology.leaf_spine import leaf_spine
from spraylab.workload.flows import FlowSpec

G = 1_000_000_000
SCHEMES = ("wcmp", "spray_rr", "flowlet", "drill", "adaptive", "reps")
HOSTS_PER_LEAF = 4


def leaf_uplinks(net, leaf: str = "leaf0"):
    return net.switches[leaf].uplinks


def uplink_imbalance(net) -> float:
    """max/mean of data bytes over each leaf's uplinks, worst leaf."""
    worst = 0.0
    for switch in net.switches.values():
        if switch.tier == 1:
            sent = [p.tx_bytes for p in switch.uplinks]
            worst = max(worst, max(sent) / (sum(sent) / len(sent)))
    return worst


def cross_leaf_permutation(n_hosts: int, size: int, seed: int = 3) -> list[FlowSpec]:
    """A permutation in which no host sends inside its own leaf (all traffic crosses spines)."""
    rng = random.Random(seed)
    perm = list(range(n_hosts))
    while True:
        rng.shuffle(perm)
        if all(perm[i] // HOSTS_PER_LEAF != i // HOSTS_PER_LEAF for i in range(n_hosts)):
            break
    return [FlowSpec(i, i, perm[i], size) for i in range(n_hosts)]


def fake_packet(flow_id: int, src: int, dst: int, kind: int = DATA, entropy: int = 0):
    """A packet as a switch sees it (the compiled selectors take real packets); its queue pair
    is a stand-in that has only the flow id."""
    qp = SimpleNamespace(flow_id=flow_id)
    return Packet(kind, qp, src, dst, 0, 0, 0, entropy, packet_hash(flow_id, entropy), 0)


# --- registry and parameters ----------------------------------------------------------


def test_all_baselines_registered() -> None:
    load_builtin_schemes()
    for name in SCHEMES:
        cls = REGISTRY[name]
        assert cls.name == name and cls.where in ("switch", "sender", "tor") and cls.summary
        make_lb(name)  # defaults are valid


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("wcmp", {"max_table": 0}),
        ("wcmp", {"refresh_us": -1}),
        ("spray_rr", {"paths": 0}),
        ("spray_rr", {"paths": 1 << 17}),
        ("flowlet", {"gap_us": 0}),
        ("flowlet", {"gap_us": -5}),
        ("drill", {"d": 0}),
        ("drill", {"m": -1}),
        ("adaptive", {"granularity": "byte"}),
        ("reps", {"buffer": 0}),
        ("reps", {"freeze_us": 0}),
        ("reps", {"bufer": 8}),  # unknown key
        ("reps", {"paths": 48}),  # not a power of two
        ("reps", {"paths": 0}),
        ("reps", {"paths": 1 << 17}),
    ],
)
def test_bad_params_rejected(name: str, params: dict) -> None:
    with pytest.raises(ValueError):
        make_lb(name, params)


def test_good_params_accepted() -> None:
    assert make_lb("spray_rr", {"paths": 4}).params.paths == 4
    assert make_lb("drill", {"d": 3, "m": 2}).params.m == 2
    assert make_lb("adaptive", {"granularity": "flow"}).params.granularity == "flow"
    assert make_lb("reps", {"buffer": 16, "freeze_us": 20}).freeze_ps == 20 * US


# --- WCMP -------------------------------------------------------------------------------


def test_wcmp_select_is_proportional_to_rate() -> None:
    """Hash-level check: over many flow hashes, shares equal rate shares (1 : 1/4 : 1 : 1)."""
    sim, net = make_net(small_leaf_spine(), lb="wcmp", recovery="ideal")
    net.schedule_link_rate(0, "leaf0", "spine1", 0.25)
    sim.run(until_ps=1)
    leaf0 = net.switches["leaf0"]
    dst = 2 * HOSTS_PER_LEAF
    cands = leaf0.table[dst]
    counts = dict.fromkeys(cands, 0)
    n = 40_000
    for flow_id in range(n):
        counts[leaf0.select(leaf0, fake_packet(flow_id, 0, dst), cands)] += 1
    expected = [4 / 13, 1 / 13, 4 / 13, 4 / 13]  # spine1 is the second candidate
    assert [p.peer_owner.name for p in cands] == ["spine0", "spine1", "spine2", "spine3"]
    for port, share in zip(cands, expected):
        assert counts[port] / n == pytest.approx(share, abs=0.01)
    # a flow keeps one path (deterministic hash)
    pkt = fake_packet(7, 0, dst, entropy=3)
    assert len({leaf0.select(leaf0, pkt, cands) for _ in range(10)}) == 1


def test_wcmp_traffic_follows_degraded_rates() -> None:
    """1200 one-packet flows from leaf0 after spine1's link dropped to 25%: byte shares on
    leaf0's uplinks are 4/13, 1/13, 4/13, 4/13, each within 4 binomial sd (sqrt(p(1-p)/n):
    1.3% on 4/13, 0.8% on 1/13)."""
    sim, net = make_net(small_leaf_spine(), lb="wcmp", recovery="ideal", cc="none")
    net.schedule_link_rate(0, "leaf0", "spine1", 0.25)
    rng = random.Random(5)
    flows = [
        FlowSpec(i, i % HOSTS_PER_LEAF, rng.randrange(HOSTS_PER_LEAF, 16), 4096, start_ps=US + i * 50_000)
        for i in range(1200)
    ]
    run_flows(sim, net, flows)
    sent = [p.tx_bytes for p in leaf_uplinks(net)]
    shares = [b / sum(sent) for b in sent]
    for share, expected in zip(shares, [4 / 13, 1 / 13, 4 / 13, 4 / 13]):
        assert share == pytest.approx(expected, abs=4 * (expected * (1 - expected) / len(flows)) ** 0.5)
    # ECMP on the same workload ignores the rate: ~1/4 each
    sim, net = make_net(small_leaf_spine(), lb="ecmp", recovery="ideal", cc="none")
    net.schedule_link_rate(0, "leaf0", "spine1", 0.25)
    run_flows(sim, net, flows)
    sent = [p.tx_bytes for p in leaf_uplinks(net)]
    assert sent[1] / sum(sent) == pytest.approx(0.25, abs=0.04)


def test_wcmp_equals_ecmp_on_a_symmetric_fabric() -> None:
    """Equal rates reduce to one slot per port, i.e. exactly ECMP's choice."""
    counts = []
    for lb in ("wcmp", "ecmp"):
        sim, net = make_net(small_leaf_spine(), lb=lb, recovery="ideal")
        run_flows(sim, net, cross_leaf_permutation(16, 200_000))
        counts.append([p.tx_bytes for p in net.ports])
    assert counts[0] == counts[1]


def test_wcmp_reweights_when_a_link_goes_down() -> None:
    """A port whose link is down gets weight 0 at once (before routes reconverge): flows
    started after the failure lose nothing, while ECMP keeps hashing a quarter of them onto
    the dead port. (Routing does not reconverge within the run: only the weights can help.)"""
    flows = [FlowSpec(i, i % HOSTS_PER_LEAF, 4 + i % 12, 8192, start_ps=20 * US + i * US) for i in range(60)]
    drops = {}
    for lb in ("wcmp", "ecmp"):
        sim, net = make_net(small_leaf_spine(), lb=lb, recovery="ideal", cc="none", rto_ps=50 * US)
        net.add_flows([FlowSpec(1000, 0, 4, 100_000)])  # builds leaf0's groups before the failure
        net.schedule_link_down(
            10 * US, "leaf0", "spine2", convergence_ps=10_000 * US
        )  # no reroute in the run
        run_flows(sim, net, flows, until_ps=1000 * US)
        drops[lb] = net.dropped_packets
        if lb == "wcmp":
            assert all(qp.rx.finish_ps > 0 for qp in net.qps)
            assert net.lb.stats()["wcmp_rebuilds"] >= 1
    assert drops["wcmp"] == 0
    assert drops["ecmp"] > 0


def test_wcmp_weights_remote_degraded_downlink_by_path_capacity() -> None:
    """8 spines, the spine0 -> leaf0 downlink at 25%. A remote leaf (leaf1) gives spine0 the
    path capacity min(400G, 100G) against 400G for each other spine: toward leaf0 a
    0.25 / (7 + 0.25) = 1/29 share, toward leaf2 the plain 1/8. Over n flow hashes each
    landing on one of the 29 slots, spine0's count is binomial(n, 1/29): sd of the share
    sqrt(p(1 - p) / n) = 0.0009 at n = 40,000; 4 sd = 0.0037 (and 0.0066 for p = 1/8)."""
    sim, net = make_net(small_leaf_spine(leaves=4, spines=8, hosts_per_leaf=2), lb="wcmp", recovery="ideal")
    net.schedule_link_rate(0, "leaf0", "spine0", 0.25)
    sim.run(until_ps=2 * US)  # past one refresh period: the scheme has seen the new rate
    leaf1 = net.switches["leaf1"]
    spine0_port = net.link_ports[("leaf1", "spine0")][0]
    n = 40_000
    for dst, share, tol in ((0, 1 / 29, 0.0037), (4, 1 / 8, 0.0066)):  # host 0 on leaf0, host 4 on leaf2
        cands = leaf1.table[dst]
        assert spine0_port in cands and len(cands) == 8
        picks = sum(leaf1.select(leaf1, fake_packet(f, 2, dst), cands) is spine0_port for f in range(n))
        assert picks / n == pytest.approx(share, abs=tol)
        group = cands.state
        assert group.n == (29 if dst == 0 else 8) and group.table.count(spine0_port) == 1
    # the degraded leaf itself sees the same 1/29 on its own uplink (its own port is the bottleneck)
    leaf0 = net.switches["leaf0"]
    cands = leaf0.table[2]
    leaf0.select(leaf0, fake_packet(1, 0, 2), cands)
    assert cands.state.table.count(net.link_ports[("leaf0", "spine0")][0]) == 1


def test_wcmp_remote_leaf_traffic_follows_path_capacity() -> None:
    """2,000 one-packet flows from leaf1 to leaf0 with spine0 -> leaf0 at 25%: the packet
    count on leaf1 -> spine0 is binomial(2000, 1/29) (mean 69, sd 8.2): within 4 sd of the
    mean, and far below ECMP's 1/8 (250)."""
    counts = {}
    for lb in ("wcmp", "ecmp"):
        sim, net = make_net(
            small_leaf_spine(leaves=4, spines=8, hosts_per_leaf=2), lb=lb, recovery="ideal", cc="none"
        )
        net.schedule_link_rate(0, "spine0", "leaf0", 0.25)
        flows = [FlowSpec(i, 2 + i % 2, i % 2, 4096, start_ps=2 * US + i * 20_000) for i in range(2000)]
        run_flows(sim, net, flows)
        assert all(qp.rx.finish_ps > 0 for qp in net.qps)
        counts[lb] = net.link_ports[("leaf1", "spine0")][0].tx_packets
    assert abs(counts["wcmp"] - 2000 / 29) <= 4 * 8.2
    assert abs(counts["ecmp"] - 2000 / 8) <= 4 * 14.8  # binomial(2000, 1/8): sd 14.8


def test_wcmp_remote_failure_reweights_before_reconvergence() -> None:
    """spine0 <-> leaf0 dies at 10 µs and routes never reconverge during the run. Remote
    leaves' groups toward leaf0 drop spine0 to weight 0 within one refresh period, so flows
    started after the failure lose nothing; toward other leaves spine0 keeps its share."""
    sim, net = make_net(
        small_leaf_spine(leaves=4, spines=4, hosts_per_leaf=2), lb="wcmp", recovery="ideal", cc="none"
    )
    net.add_flows([FlowSpec(1000, 2, 0, 100_000)])  # builds leaf1's group toward leaf0 first
    net.schedule_link_down(10 * US, "spine0", "leaf0", convergence_ps=10_000 * US)
    flows = [FlowSpec(i, 2 + i % 6, i % 2, 8192, start_ps=20 * US + i * US) for i in range(60)]
    run_flows(sim, net, flows, until_ps=1000 * US)
    assert net.dropped_packets == 0
    assert all(qp.rx.finish_ps > 0 for qp in net.qps)
    assert net.lb.stats()["wcmp_rebuilds"] >= 1
    leaf1 = net.switches["leaf1"]
    spine0_port = net.link_ports[("leaf1", "spine0")][0]
    assert spine0_port not in leaf1.table[0].state.table
    cands = leaf1.table[6]  # host 6 on leaf3: unaffected
    leaf1.select(leaf1, fake_packet(1, 2, 6), cands)
    assert cands.state.table == cands


def test_wcmp_reaction_delay_keeps_old_weights_until_it_passes() -> None:
    """As above with ``reaction_us = 100``: the controller reweights 100 us after the
    failure. One-packet flows from leaf1 to leaf0 sent before then keep hashing a share onto
    the dead spine0 (and are lost there); sent after, none is."""
    lost = {}
    for window, start_us in (("before", 20), ("after", 200)):
        sim, net = make_net(
            small_leaf_spine(leaves=4, spines=4, hosts_per_leaf=2),
            lb="wcmp",
            lb_params={"reaction_us": 100},
            recovery="ideal",
            cc="none",
        )
        net.add_flows([FlowSpec(1000, 2, 0, 100_000)])  # builds leaf1's group toward leaf0 first
        net.schedule_link_down(10 * US, "spine0", "leaf0", convergence_ps=10_000 * US)
        flows = [FlowSpec(i, 2, 0, 4096, start_ps=(start_us + i) * US) for i in range(60)]
        run_flows(sim, net, flows, until_ps=3000 * US)
        lost[window] = sum(1 for qp in net.qps if qp.flow_id < 1000 and qp.retx_packets)
    assert lost["after"] == 0
    assert lost["before"] >= 5  # binomial(60, 1/4): mean 15, P(< 5) ~ 0.1%


def test_wcmp_parallel_links_share_what_their_next_hop_delivers() -> None:
    """2 leaves x 4 spines with 2 parallel 200G links per leaf-spine pair; one of the two
    spine0 <-> leaf0 links fails and routing reconverges. spine0 still reaches leaf0 (over
    the other link), so routing keeps both leaf1 -> spine0 links; but spine0 delivers only
    200G onward, so the two share 200G (100G each) against 200G each via the other spines:
    spine0 gets 200 / (200 + 3 x 400) = 1/7 of leaf1's slots toward leaf0, not ECMP's 2/8."""
    fabric = leaf_spine(2, 4, 2, 400 * G, 200 * G, 1 * US, links_per_spine=2)
    sim, net = make_net(fabric, lb="wcmp", recovery="ideal", cc="none")
    net.schedule_link_down(0, "leaf0", "spine0", convergence_ps=1 * US, parallel=1)
    sim.run(until_ps=3 * US)
    leaf1, spine0 = net.switches["leaf1"], net.switches["spine0"]
    assert len(spine0.table[0]) == 1  # the surviving spine0 -> leaf0 link
    cands = leaf1.table[0]
    to_spine0 = net.link_ports[("leaf1", "spine0")]
    assert len(cands) == 8 and all(p in cands for p in to_spine0)
    leaf1.select(leaf1, fake_packet(1, 2, 0), cands)
    table = cands.state.table
    assert len(table) == 14 and sum(table.count(p) for p in to_spine0) == 2
    # leaf0 itself: 7 surviving uplinks, each delivering its full 200G
    leaf0 = net.switches["leaf0"]
    cands = leaf0.table[2]
    assert len(cands) == 7 and net.link_ports[("leaf0", "spine0")][1] not in cands
    leaf0.select(leaf0, fake_packet(1, 0, 2), cands)
    assert cands.state.table == cands


def test_wcmp_beats_ecmp_when_the_asymmetry_decides() -> None:
    """256 flows of 64 KB from leaf1's 4 hosts to leaf0's (2 leaves, 4 spines, 400G, DCQCN,
    selective repeat), spine0 -> leaf0 at 25%. With many small flows, hash collisions average
    out and the slow downlink decides: ECMP hashes binomial(256, 1/4) flows onto it (64, sd
    6.9), WCMP binomial(256, 1/13) (19.7, sd 4.3). Completion is at least the busiest
    downlink's bytes over its rate; WCMP ends close to that bound (within 25% + 10 µs of
    start-up and round trip), ECMP cannot beat its 100 Gb/s link's share."""
    per_flow = 15 * data_wire_bytes(4096) + data_wire_bytes(64_000 - 15 * 4096)  # link bytes of one flow
    results = {}
    for lb in ("ecmp", "wcmp"):
        sim, net = make_net(small_leaf_spine(leaves=2, spines=4, hosts_per_leaf=4), lb=lb, recovery="sr")
        net.schedule_link_rate(0, "spine0", "leaf0", 0.25)
        run_flows(sim, net, [FlowSpec(i, 4 + i % 4, (i // 4) % 4, 64_000) for i in range(256)])
        assert all(qp.retx_packets == 0 for qp in net.qps)  # one path per flow: no reordering
        downlinks = [net.link_ports[(f"spine{s}", "leaf0")][0] for s in range(4)]
        bound_ps = max(p.tx_bytes * 8 * 10**12 // p.rate_bps for p in downlinks)
        completion = max(qp.rx.finish_ps for qp in net.qps)
        results[lb] = (downlinks[0].tx_bytes / per_flow, bound_ps, completion)
        assert completion >= bound_ps
    flows_slow, bound_ps, completion = results["wcmp"]
    assert abs(flows_slow - 256 / 13) <= 4 * 4.3
    assert completion <= 1.25 * bound_ps + 10 * US
    flows_slow, _, ecmp_completion = results["ecmp"]
    assert abs(flows_slow - 64) <= 4 * 6.9
    assert ecmp_completion >= flows_slow * per_flow * 8 * 10**12 // (100 * G)
    assert completion < ecmp_completion / 2


# --- spray_rr -----------------------------------------------------------------------------


def test_spray_rr_cycles_entropies_and_matches_hash_shares() -> None:
    """One long flow, ideal transport: packet i carries entropy i mod 16, so the packets on
    each of leaf0's uplinks are exactly those whose entropy ECMP-hashes onto it."""
    sim, net = make_net(small_leaf_spine(), lb="spray_rr", recovery="ideal", cc="none")
    sent_entropies: list[int] = []
    entropy = net.lb.entropy

    def record(q, psn):
        e = entropy(q, psn)
        sent_entropies.append(e)
        return e

    net.lb.entropy = record  # a Python entropy hook replaces the compiled one
    qp = net.add_flows([FlowSpec(0, 0, 5, 1000 * 4096)])[0]
    run_flows(sim, net, [])
    entropies = qp.lb_state.entropies
    assert len(set(entropies)) == 16
    assert sent_entropies[:32] == entropies + entropies
    leaf0 = net.switches["leaf0"]
    cands = leaf0.table[5]
    predicted = dict.fromkeys(cands, 0)
    for psn in range(qp.n_packets):
        pkt = fake_packet(0, 0, 5, entropy=entropies[psn % 16])
        predicted[ecmp_select(leaf0, pkt, cands)] += 1
    assert qp.retx_packets == 0
    assert [p.tx_packets for p in cands] == [predicted[p] for p in cands]
    assert sum(1 for p in cands if p.tx_packets) >= 3  # spreads (ECMP would use one)
    assert qp.rx.max_reorder == 0  # equal, uncongested paths: no reordering


def test_spray_rr_with_one_path_is_single_path() -> None:
    sim, net = make_net(small_leaf_spine(), lb="spray_rr", lb_params={"paths": 1}, recovery="ideal")
    run_flows(sim, net, [FlowSpec(0, 0, 5, 400 * 4096)])
    assert sum(1 for p in leaf_uplinks(net) if p.tx_packets) == 1


def test_spray_rr_many_paths_near_even() -> None:
    """With 1024 entropies the per-uplink share of one flow is within a few % of 1/4
    (multinomial sd of a share ~1.4%)."""
    sim, net = make_net(small_leaf_spine(), lb="spray_rr", lb_params={"paths": 1024}, recovery="ideal")
    run_flows(sim, net, [FlowSpec(0, 0, 5, 2048 * 4096)])
    sent = [p.tx_packets for p in leaf_uplinks(net)]
    for s in sent:
        assert s / sum(sent) == pytest.approx(0.25, abs=0.05)


# --- flowlet ------------------------------------------------------------------------------


def test_flowlet_gap_free_flow_stays_on_one_uplink() -> None:
    sim, net = make_net(small_leaf_spine(), lb="flowlet", recovery="ideal")
    run_flows(sim, net, [FlowSpec(0, 0, 5, 2_000_000)])
    assert sum(1 for p in leaf_uplinks(net) if p.tx_packets) == 1
    assert net.lb.stats()["flowlets"] == 2  # one data flowlet at leaf0, one ACK flowlet at leaf1


def test_flowlet_gaps_repick_uplinks() -> None:
    """Window of one packet and 10 µs links: every packet of the flow follows an RTT
    (~80 µs) gap > δ = 50 µs, so each starts a flowlet on a random uplink; with δ = 1 ms the
    flow never leaves its first uplink."""
    fabric = leaf_spine(2, 4, 2, 100 * G, 100 * G, 10 * US)
    used = {}
    for gap_us in (50.0, 1000.0):
        sim, net = make_net(
            fabric,
            lb="flowlet",
            lb_params={"gap_us": gap_us},
            recovery="ideal",
            window_bytes=data_wire_bytes(4096),
        )
        run_flows(sim, net, [FlowSpec(0, 0, 2, 40 * 4096)])
        used[gap_us] = [p.tx_packets for p in leaf_uplinks(net)]
        assert sum(used[gap_us]) == 40
    assert net.lb.stats()["flowlets"] == 2
    assert sum(1 for n in used[50.0] if n) == 4  # 40 random picks over 4 uplinks
    assert max(used[50.0]) < 20
    assert sum(1 for n in used[1000.0] if n) == 1


def test_flowlet_select_unit() -> None:
    """Direct calls: keep within δ, re-pick after δ, ECMP for non-local sources."""
    sim, net = make_net(small_leaf_spine(), lb="flowlet", lb_params={"gap_us": 50})
    leaf0 = net.switches["leaf0"]
    cands = leaf0.table[8]
    pkt = fake_packet(3, 0, 8)
    first = leaf0.select(leaf0, pkt, cands)
    for t in range(1, 100):  # 40 µs spacing < δ: never moves
        sim.now = t * 40 * US
        assert leaf0.select(leaf0, pkt, cands) is first
    picks = set()
    for t in range(1, 60):  # 60 µs spacing > δ: a fresh random uplink each time
        sim.now = 100 * 40 * US + t * 60 * US
        picks.add(leaf0.select(leaf0, pkt, cands))
    assert picks == set(cands)
    foreign = fake_packet(4, 12, 8)  # src on leaf3: not leaf0's flow
    assert leaf0.select(leaf0, foreign, cands) is ecmp_select(leaf0, foreign, cands)
    spine0 = net.switches["spine0"]
    assert spine0.select(spine0, pkt, cands) is ecmp_select(spine0, pkt, cands)


# --- drill and adaptive -------------------------------------------------------------------


def set_queues(ports, queue_bytes: list[int]) -> None:
    for port, q in zip(ports, queue_bytes):
        port.busy_until = port.sim.now + int(q * port.ps_per_byte)


def test_drill_unit_picks_shortest_sampled_queue() -> None:
    sim, net = make_net(small_leaf_spine(), lb="drill", lb_params={"d": 4, "m": 1})
    leaf0 = net.switches["leaf0"]
    cands = leaf0.table[8]
    set_queues(cands, [30_000, 10_000, 50_000, 20_000])
    pkt = fake_packet(1, 0, 8)
    assert all(leaf0.select(leaf0, pkt, cands) is cands[1] for _ in range(50))
    # d = 1 with memory: once the least loaded port is sampled, memory keeps it
    sim, net = make_net(small_leaf_spine(), lb="drill", lb_params={"d": 1, "m": 1})
    leaf0 = net.switches["leaf0"]
    cands = leaf0.table[8]
    set_queues(cands, [30_000, 10_000, 50_000, 20_000])
    picks = [leaf0.select(leaf0, pkt, cands) for _ in range(200)]
    assert all(p is cands[1] for p in picks[50:])
    # m = 2 (general path) also converges to the minimum
    sim, net = make_net(small_leaf_spine(), lb="drill", lb_params={"d": 1, "m": 2})
    leaf0 = net.switches["leaf0"]
    cands = leaf0.table[8]
    set_queues(cands, [30_000, 10_000, 50_000, 20_000])
    picks = [leaf0.select(leaf0, pkt, cands) for _ in range(200)]
    assert all(p is cands[1] for p in picks[50:])


def test_adaptive_unit_least_queued_ties_random_down_avoided() -> None:
    sim, net = make_net(small_leaf_spine(), lb="adaptive")
    leaf0 = net.switches["leaf0"]
    cands = leaf0.table[8]
    pkt = fake_packet(1, 0, 8)
    counts = dict.fromkeys(cands, 0)
    for _ in range(8000):  # all queues empty: uniform ties
        counts[leaf0.select(leaf0, pkt, cands)] += 1
    assert all(c / 8000 == pytest.approx(0.25, abs=0.03) for c in counts.values())
    set_queues(cands, [30_000, 10_000, 10_000, 20_000])
    picks = [leaf0.select(leaf0, pkt, cands) for _ in range(400)]
    assert set(picks) == {cands[1], cands[2]}
    cands[1].up = False  # a dead link's queue reads empty; it must not attract traffic
    set_queues(cands, [30_000, 0, 10_000, 20_000])
    assert all(leaf0.select(leaf0, pkt, cands) is cands[2] for _ in range(50))


@pytest.mark.parametrize("lb", ["drill", "adaptive"])
def test_queue_aware_schemes_balance_better_than_ecmp(lb: str) -> None:
    """Cross-leaf permutation of 16 x 1 MB: ECMP collides flows on some uplinks; per-packet
    queue-aware choices keep every leaf's uplink bytes within a few % of the mean."""
    results = {}
    for scheme in ("ecmp", lb):
        sim, net = make_net(small_leaf_spine(), lb=scheme, recovery="ideal")
        run_flows(sim, net, cross_leaf_permutation(16, 1_000_000))
        results[scheme] = (uplink_imbalance(net), max(qp.rx.finish_ps for qp in net.qps))
    assert results["ecmp"][0] > 1.5
    assert results[lb][0] < 1.1
    assert results[lb][1] < 0.6 * results["ecmp"][1]  # completion time follows


def test_adaptive_flow_granularity_sticks() -> None:
    """Flow granularity: one decision per flow and switch, so no reordering at all."""
    sim, net = make_net(
        small_leaf_spine(), lb="adaptive", lb_params={"granularity": "flow"}, recovery="ideal"
    )
    run_flows(sim, net, cross_leaf_permutation(16, 500_000))
    assert all(qp.rx.max_reorder == 0 for qp in net.qps)
    stats = net.lb.stats()
    assert 0 < stats["adaptive_max_flow_entries"] <= 2 * 16
    for switch in net.switches.values():  # each leaf sends 4 flows: at most 4 uplinks in use
        if switch.tier == 1:
            assert sum(1 for p in switch.uplinks if p.tx_packets) <= HOSTS_PER_LEAF


# --- REPS -----------------------------------------------------------------------------------


def reps_with_fake_qp(nacks_trimmed: bool = False, **params):
    lb = make_lb("reps", params)
    sim = Simulator(7)
    lb.setup(SimpleNamespace(sim=sim))
    qp = SimpleNamespace(lb=None, lb_state=None, recovery=SimpleNamespace(nacks_trimmed=nacks_trimmed))
    lb.init_qp(qp)
    return lb, qp, sim


def ack(entropy: int, ecn: bool = False, psn: int = 1, sack_psn: int = 0) -> Packet:
    """An ACK of PSN ``sack_psn`` echoing ``entropy``, cumulative PSN ``psn``."""
    pkt = Packet(ACK, None, 1, 0, psn, ACK_WIRE_BYTES, 0, entropy, 0, 0)
    pkt.ecn = ecn
    pkt.sack_psn = sack_psn
    return pkt


def test_reps_fifo_unit() -> None:
    lb, qp, sim = reps_with_fake_qp(buffer=4)
    assert qp.lb is lb
    fresh = [lb.entropy(qp, i) for i in range(6)]  # nothing recycled yet: fresh randoms
    assert lb.kernel.fresh == 6 and len(set(fresh)) == 6
    for e in (11, 22, 33):
        lb.on_ack(qp, ack(e))
    lb.on_ack(qp, ack(44, ecn=True))  # marked: never recycled
    assert [lb.entropy(qp, 0) for _ in range(3)] == [11, 22, 33]  # FIFO order
    before = lb.kernel.fresh
    lb.entropy(qp, 0)
    assert lb.kernel.fresh == before + 1  # FIFO empty (44 was not recycled): a fresh draw
    # overflow: capacity 4 keeps the 4 newest
    for e in range(100, 106):
        lb.on_ack(qp, ack(e))
    assert [lb.entropy(qp, 0) for _ in range(4)] == [102, 103, 104, 105]
    # an ECN-marked ACK strikes its entropy from the FIFO
    for e in (1, 2, 3):
        lb.on_ack(qp, ack(e))
    lb.on_ack(qp, ack(2, ecn=True))
    assert [lb.entropy(qp, 0) for _ in range(2)] == [1, 3]
    # NACK echoes recycle like ACKs, unless marked
    lb.on_nack(qp, ack(7))
    lb.on_nack(qp, ack(8, ecn=True))
    assert lb.entropy(qp, 0) == 7
    assert lb.kernel.recycled == 3 + 4 + 2 + 1


def test_reps_fresh_entropies_uniform_over_paths() -> None:
    """uet-htsim's REPS draws a fresh entropy uniformly from 0 .. paths - 1 (uec_mp.cpp
    UecMpReps::nextEntropy, rand() % 64): with paths = 64, 64,000 draws stay below 64 and fill
    every value; each count is Binomial(64000, 1/64) (mean 1000, sd 31), so all within 6 sd
    (a chance miss is below 1e-7 over the 64). With the default every 16-bit value may come."""
    lb, qp, sim = reps_with_fake_qp(paths=64)
    counts = Counter(lb.entropy(qp, 0) for _ in range(64_000))
    assert set(counts) == set(range(64))
    assert all(abs(n - 1000) <= 6 * 31 for n in counts.values())
    lb, qp, sim = reps_with_fake_qp()
    assert max(lb.entropy(qp, 0) for _ in range(10_000)) >= 1 << 15


def test_reps_trim_nack_strikes_its_entropy() -> None:
    """Over a recovery whose NACKs answer trimmed headers (uec), a NACK is REPS's congestion
    signal (Bonato et al.: a trimmed packet's path is congested): its entropy is struck, not
    recycled, as a marked ACK's would be."""
    lb, qp, sim = reps_with_fake_qp(nacks_trimmed=True, buffer=4)
    for e in (1, 2):
        lb.on_ack(qp, ack(e))
    lb.on_nack(qp, ack(1))
    lb.on_nack(qp, ack(3))
    assert qp.lb_state.fifo == [2] and qp.lb_state.good == [2]


def test_reps_freeze_cycles_known_good() -> None:
    lb, qp, sim = reps_with_fake_qp(buffer=4, freeze_us=100)
    for e in (5, 6, 7, 8, 9):  # known-good keeps the entropies of the 4 newest clean ACKs: 6 7 8 9
        lb.on_ack(qp, ack(e))
    lb.on_ack(qp, ack(8, ecn=True))  # 8 is no longer known-good
    assert [lb.entropy(qp, 0) for _ in range(3)] == [6, 7, 9]  # FIFO drained
    sim.now = 10 * US
    lb.on_timeout(qp)
    fresh = lb.kernel.fresh
    assert [lb.entropy(qp, 0) for _ in range(7)] == [6, 7, 9, 6, 7, 9, 6]
    assert lb.kernel.fresh == fresh and lb.kernel.frozen_reuses == 7
    lb.on_ack(qp, ack(42))  # while frozen the FIFO still comes first
    assert lb.entropy(qp, 0) == 42
    sim.now = 10 * US + 100 * US  # freeze over: fresh entropies again
    lb.entropy(qp, 0)
    assert lb.kernel.fresh == fresh + 1


def test_reps_known_good_ages_out_unconfirmed_entropies() -> None:
    """Known-good = the entropies of the last `buffer` clean ACKs, repeats included: an
    entropy whose path died (no ACK since) leaves it once `buffer` newer clean ACKs came back,
    even if they all carry the same few entropies, as a sprayed flow's do. A list of distinct
    entropies would keep it forever and the freeze would keep sending onto the dead path."""
    lb, qp, sim = reps_with_fake_qp(buffer=4, freeze_us=100)
    for e in (1, 2, 3, 2, 3, 2):
        lb.on_ack(qp, ack(e))
    assert list(qp.lb_state.good) == [3, 2, 3, 2]  # 1 aged out
    lb.on_ack(qp, ack(2, ecn=True))  # a mark strikes every copy
    assert list(qp.lb_state.good) == [3, 3]
    while qp.lb_state.fifo:
        lb.entropy(qp, 0)
    lb.on_timeout(qp)
    assert {lb.entropy(qp, 0) for _ in range(6)} == {3}


def test_reps_overtaken_acks_not_recycled_when_disabled() -> None:
    """An ACK whose cumulative PSN moved more than one past the echoed PSN (a hole filler, a
    late duplicate) was overtaken by packets sent after it: recycled by default (the paper's
    rule), skipped with recycle_overtaken = false. In-order ACKs (sack_psn = psn - 1) and the
    ideal transport's SACKs of early arrivals (sack_psn >= psn) are recycled either way, and a
    marked overtaken ACK still strikes its entropy."""

    def cum_ack(entropy: int, sack_psn: int, psn: int, ecn: bool = False) -> Packet:
        return ack(entropy, ecn, psn=psn, sack_psn=sack_psn)

    for recycle in (True, False):
        lb, qp, sim = reps_with_fake_qp(buffer=8, recycle_overtaken=recycle)
        lb.on_ack(qp, cum_ack(11, sack_psn=4, psn=5))  # in order
        lb.on_ack(qp, cum_ack(22, sack_psn=9, psn=6))  # SACK of an early arrival (ideal)
        lb.on_ack(qp, cum_ack(33, sack_psn=6, psn=10))  # hole filler: 7..9 overtook it
        lb.on_ack(qp, cum_ack(44, sack_psn=2, psn=10))  # late duplicate
        lb.on_nack(qp, cum_ack(55, sack_psn=12, psn=10))  # NACK: echoes the early arrival 12
        expected = [11, 22, 33, 44, 55] if recycle else [11, 22, 55]
        assert list(qp.lb_state.fifo) == expected
        assert lb.stats()["reps_overtaken_skipped"] == (0 if recycle else 2)
        lb.on_ack(qp, cum_ack(11, sack_psn=3, psn=10, ecn=True))
        assert 11 not in qp.lb_state.fifo and 11 not in qp.lb_state.good


def test_reps_never_reuses_marked_entropy_in_incast() -> None:
    """8-to-1 incast (ECN marks at the receiver's downlink): after an ECN-marked ACK for
    entropy e, the QP never sends e again unless a later clean ACK vouched for it (or it was
    drawn fresh by chance). Clean entropies are recycled."""
    sim, net = make_net(small_leaf_spine(), lb="reps", recovery="ideal")
    lb = net.lb
    banned: dict[int, set[int]] = {}
    marked_acks = 0
    violations = []
    entropy, on_ack = lb.entropy, lb.on_ack

    def record_entropy(qp, psn):
        fresh = lb.kernel.fresh
        e = entropy(qp, psn)
        if lb.kernel.fresh == fresh and e in banned.setdefault(qp.flow_id, set()):
            violations.append((qp.flow_id, psn, e))
        return e

    def record_ack(qp, pkt):
        nonlocal marked_acks
        bad = banned.setdefault(qp.flow_id, set())
        if pkt.ecn:
            marked_acks += 1
            bad.add(pkt.entropy)
        else:
            bad.discard(pkt.entropy)
        on_ack(qp, pkt)

    lb.entropy, lb.on_ack = record_entropy, record_ack
    flows = [FlowSpec(i, 4 + i, 0, 1_000_000) for i in range(8)]
    run_flows(sim, net, flows)
    assert marked_acks > 50
    assert not violations
    stats = lb.stats()
    # last-hop congestion marks most ACKs whatever the path, so REPS mostly explores here
    assert stats["reps_recycled"] > 0 and stats["reps_fresh"] > 0


def test_reps_freeze_avoids_failed_path() -> None:
    """A spine link fails and routes never reconverge during the run. Without freezing a
    sprayed flow keeps exploring fresh entropies, some onto the dead link, timeout after
    timeout (selective repeat: a lost tail is found by the RTO only); REPS freezes on its
    first timeout and then sends only on known-good entropies. Its first freeze may still
    hold an entropy whose ACK came back just after the failure (a packet sent before it):
    at most one more timeout."""
    results = {}
    for lb in ("reps", "spray_rr"):
        sim, net = make_net(small_leaf_spine(), lb=lb, recovery="sr", cc="none", rto_ps=100 * US)
        net.schedule_link_down(5 * US, "spine1", "leaf1", convergence_ps=100_000 * US)
        run_flows(sim, net, [FlowSpec(0, 0, 5, 2_000_000)], until_ps=50_000 * US)
        qp = net.qps[0]
        assert qp.rx.finish_ps > 0
        results[lb] = (qp.timeouts, qp.rx.finish_ps)
        if lb == "reps":
            assert net.lb.stats()["reps_freezes"] == qp.timeouts
            assert net.lb.stats()["reps_frozen_reuses"] > 0
    assert 1 <= results["reps"][0] <= 2
    assert results["spray_rr"][0] > results["reps"][0]
    assert results["reps"][1] < results["spray_rr"][1]


# --- all schemes --------------------------------------------------------------------------


@pytest.mark.parametrize("lb", SCHEMES)
def test_deterministic_and_complete_under_gbn(lb: str) -> None:
    """Same seed -> identical per-port byte counts; every flow completes (go-back-N, with
    conservation checked by run_flows)."""
    runs = []
    for _ in range(2):
        sim, net = make_net(small_leaf_spine(), lb=lb, recovery="gbn", seed=11)
        run_flows(sim, net, cross_leaf_permutation(16, 300_000, seed=4))
        assert all(qp.rx.finish_ps > 0 for qp in net.qps)
        runs.append([p.tx_bytes for p in net.ports])
    assert runs[0] == runs[1]
