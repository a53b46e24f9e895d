"""The ideal transport as a reference upper bound when packets are lost (docs/design.md, Receivers;
the mechanism is described in ``QueuePair``'s docstring).

The ideal receiver SACKs and never NACKs, so real losses used to wait for the 1 ms RTO. Now
every drop goes through ``sim_drop``, which calls the QP's ``drop_hook``: a lost data packet is
reported to the sender at ``max(sent + base RTT, drop + return)`` and resent selectively unless
that would be spurious; a lost ACK's content arrives late instead of never. Checked here on a
16-host leaf-spine (4 leaves x 4 spines x 4 hosts, 400G, 1 us links), each run well under 1 s:

* a lossy link: no timeout, retransmissions == data packets dropped (none spurious);
* the same packets lost under both transports: ideal completes no later than selective repeat
  (with random loss the two transports send different packet sequences, so the random draws
  hit different packets and a per-seed comparison is not a fair test of the theory);
* the notice time, and the base RTT it is built on;
* ACKs alone lost (a spine link dead in the ACK direction): no retransmission, no timeout;
* a failed link: rps/ideal and dfs/ideal finish without timeouts, far ahead of selective repeat;
* without loss nothing changes (numbers recorded before the oracle existed);
* the other recovery modes have no hook (``sim_drop`` costs them one attribute test).
"""

from __future__ import annotations

from collections import Counter

import pytest
from simutil import US, make_net, run_flows, small_leaf_spine

from spraylab.net.drops import RANDOM_LOSS
from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes
from spraylab.net.packet import ACK, DATA
from spraylab.net.port import sim_drop
from spraylab.workload.flows import FlowSpec

RTO_PS = 1_000 * US
DATA_WIRE = data_wire_bytes(4096)  # link bytes of a full data packet
PS_PER_BYTE = 20  # 400 Gb/s


def shifted_permutation(fabric, size: int) -> list[FlowSpec]:
    """Host h sends to the host with the same index on the next leaf (all flows cross a spine)."""
    per_leaf = fabric.n_hosts // len({fabric.host_tor[h] for h in range(fabric.n_hosts)})
    n = fabric.n_hosts
    return [FlowSpec(h, h, (h + per_leaf) % n, size) for h in range(n)]


def count_drops(net) -> Counter:
    """Wrap every QP's drop hook: count what ``sim_drop`` reports, by packet kind."""
    seen: Counter = Counter()
    for qp in net.qps:
        hook = qp.drop_hook

        def counting(pkt, hook=hook) -> None:
            seen[pkt.kind] += 1
            hook(pkt)

        qp.drop_hook = counting
    return seen


def lose_first_copies(net, qp, psns: set[int]) -> None:
    """The first transmission of each PSN in ``psns`` of ``qp`` is lost on the source's host
    link (which every packet of the flow crosses, whatever the load balancer picks)."""
    port = qp.nic.port
    sim = net.sim

    def tap(pkt) -> bool:
        if pkt.kind == DATA and pkt.qp is qp and not pkt.retx and pkt.psn in psns:
            sim_drop(sim, pkt, RANDOM_LOSS, port)
            return False
        return True

    port.link.add_tap(tap)


def totals(net) -> dict[str, int]:
    qps = net.qps
    return {
        "completion": max(qp.rx.finish_ps for qp in qps),
        "timeouts": sum(qp.timeouts for qp in qps),
        "retx": sum(qp.retx_packets for qp in qps),
        "spurious": sum(qp.rx.spurious for qp in qps),
        "duplicates": sum(qp.rx.duplicates for qp in qps),
    }


# ------------------------------------------------------------------ lossy link


@pytest.mark.parametrize("lb", ["rps", "ecmp"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lossy_link_every_loss_repaired_by_one_retransmission(lb: str, seed: int) -> None:
    fabric = small_leaf_spine(4, 4, 4)
    sim, net = make_net(fabric, lb, seed=seed, recovery="ideal", window_bytes=400_000)
    net.schedule_link_loss(0, "leaf1", "spine0", 0.02)  # both directions: data and ACKs
    net.add_flows(shifted_permutation(fabric, 1_000_000))
    drops = count_drops(net)
    assert run_flows(sim, net, []) == "done"
    t = totals(net)
    assert drops[DATA] > 0
    assert t["timeouts"] == 0
    assert t["retx"] == drops[DATA]  # exactly one resend per loss: no spurious, none missed
    assert t["spurious"] == t["duplicates"] == 0
    assert sum(qp.recovery.loss_notices for qp in net.qps) == t["retx"]
    assert sum(drops.values()) == net.dropped_packets  # every drop of its packets reached the hook
    assert t["completion"] < 100 * US  # about 30 us loss-free; the RTO alone would cost 1 ms


def test_lossy_link_loses_acks_too() -> None:
    """The lossy-link runs above do lose ACKs (so the exact retransmission count shows that
    lost ACKs caused none)."""
    fabric = small_leaf_spine(4, 4, 4)
    sim, net = make_net(fabric, "rps", seed=1, recovery="ideal", window_bytes=400_000)
    net.schedule_link_loss(0, "leaf1", "spine0", 0.02)
    net.add_flows(shifted_permutation(fabric, 1_000_000))
    drops = count_drops(net)
    run_flows(sim, net, [])
    assert drops[ACK] > 0


# ------------------------------------------------------------------ no slower than SR


@pytest.mark.parametrize("lb", ["rps", "ecmp"])
@pytest.mark.parametrize("cc", ["dcqcn", "none"])
def test_same_losses_ideal_no_slower_than_selective_repeat(lb: str, cc: str) -> None:
    results = {}
    for recovery in ("ideal", "sr"):
        fabric = small_leaf_spine(4, 4, 4)
        sim, net = make_net(fabric, lb, seed=1, recovery=recovery, cc=cc, window_bytes=400_000)
        qps = net.add_flows(shifted_permutation(fabric, 1_000_000))
        for qp in qps:
            lose_first_copies(net, qp, {20, 120, qp.n_packets - 2})
        assert run_flows(sim, net, []) == "done"
        results[recovery] = totals(net)
        results[recovery]["dropped"] = net.dropped_packets
    ideal, sr = results["ideal"], results["sr"]
    assert ideal["dropped"] == sr["dropped"] == 3 * 16
    assert ideal["timeouts"] == 0 and ideal["spurious"] == 0
    assert ideal["retx"] == ideal["dropped"]
    assert ideal["completion"] <= sr["completion"], (ideal, sr)


# ------------------------------------------------------------------ timing


def test_notice_comes_one_base_rtt_after_the_lost_packet_was_sent() -> None:
    fabric = small_leaf_spine(leaves=2, spines=4, hosts_per_leaf=2)
    sim, net = make_net(fabric, "ecmp", recovery="ideal", cc="none")
    (qp,) = net.add_flows([FlowSpec(0, 0, 2, 1_000_000)])  # cross-leaf: 4 hops each way
    port = qp.nic.port
    seen: dict[str, int] = {}

    def tap(pkt) -> bool:  # lose the first copy of PSN 30 on the host link
        if pkt.kind == DATA and pkt.psn == 30:
            if not pkt.retx:
                seen["sent"], seen["dropped"] = pkt.sent_ps, sim.now
                sim_drop(sim, pkt, RANDOM_LOSS, port)
                return False
            seen["resent"] = pkt.sent_ps
        return True

    port.link.add_tap(tap)
    assert run_flows(sim, net, []) == "done"
    # 4 hops of 1 us each way, a full data packet forward and an ACK frame back per hop.
    assert qp.recovery.return_ps == 4 * US + 4 * ACK_WIRE_BYTES * PS_PER_BYTE
    assert qp.recovery.base_rtt_ps == 8 * US + 4 * (DATA_WIRE + ACK_WIRE_BYTES) * PS_PER_BYTE
    notice = max(seen["sent"] + qp.recovery.base_rtt_ps, seen["dropped"] + qp.recovery.return_ps)
    assert notice == seen["sent"] + qp.recovery.base_rtt_ps  # dropped one hop out: the forward part rules
    # Resent at the notice, or when the NIC finishes the packet it is sending then.
    assert notice <= seen["resent"] <= notice + DATA_WIRE * PS_PER_BYTE
    assert qp.retx_packets == qp.recovery.loss_notices == 1
    assert qp.timeouts == 0 and qp.rx.spurious == 0


# ------------------------------------------------------------------ lost ACKs


@pytest.mark.parametrize("window_bytes", [0, 100_000])
def test_lost_acks_alone_cause_no_retransmission_and_no_timeout(window_bytes: int) -> None:
    """Every flow goes leaf0 -> leaf1, so spine0 -> leaf0 carries only their ACKs; that
    direction fails for good. A quarter of the ACKs (rps) are lost, including some flows'
    last ones; a window-limited sender would stall on them until the RTO without the late
    ACK delivery."""
    fabric = small_leaf_spine(leaves=2, spines=4, hosts_per_leaf=4)
    sim, net = make_net(fabric, "rps", recovery="ideal", window_bytes=window_bytes)
    net.add_flows([FlowSpec(h, h, 4 + h, 1_000_000) for h in range(4)])
    (port,) = [p for p in net.ports if p.name == "spine0->leaf0"]
    port.fail()
    drops = count_drops(net)
    assert run_flows(sim, net, []) == "done"
    t = totals(net)
    assert drops[ACK] > 0 and drops[DATA] == 0
    assert t["retx"] == 0 and t["timeouts"] == 0
    assert 0 < sum(qp.recovery.late_acks for qp in net.qps) <= drops[ACK]  # none once the sender is done
    for qp in net.qps:  # the sender learns of the end about one return trip late at worst
        assert qp.acked_ps - qp.rx.finish_ps <= 2 * qp.recovery.base_rtt_ps


# ------------------------------------------------------------------ failed link


@pytest.mark.parametrize("lb", ["rps", "dfs"])
def test_failed_link_no_timeouts_and_ahead_of_selective_repeat(lb: str) -> None:
    """leaf1 <-> spine0 fails at 20 us, routing reconverges 20 us later (until then its
    packets, data and ACKs, are lost)."""
    results = {}
    drops: dict[str, Counter] = {}
    for recovery in ("ideal", "sr"):
        fabric = small_leaf_spine(4, 4, 4)
        sim, net = make_net(fabric, lb, seed=1, recovery=recovery, window_bytes=400_000)
        net.schedule_link_down(20 * US, "leaf1", "spine0", 20 * US)
        net.add_flows(shifted_permutation(fabric, 1_000_000))
        drops[recovery] = count_drops(net) if recovery == "ideal" else Counter()
        assert run_flows(sim, net, []) == "done"
        results[recovery] = totals(net)
    ideal, sr = results["ideal"], results["sr"]
    lost = drops["ideal"][DATA]
    assert lost > 0
    assert ideal["timeouts"] == 0 and ideal["spurious"] == 0
    assert ideal["retx"] == lost
    assert ideal["completion"] < 100 * US  # about 50 us; every RTO costs 1 ms
    assert ideal["completion"] <= sr["completion"], (ideal, sr)


# ------------------------------------------------------------------ no loss, no change


@pytest.mark.parametrize("lb", ["ecmp", "rps"])
def test_loss_free_run_never_notices_anything(lb: str) -> None:
    """Without a drop the oracle never fires: every PSN is sent exactly once, no notice, no late
    ACK, and the path delays are never even computed (so loss-free runs cost nothing extra)."""
    fabric = small_leaf_spine(4, 4, 4)
    sim, net = make_net(fabric, lb, seed=1, recovery="ideal")
    net.add_flows(shifted_permutation(fabric, 1_000_000))
    assert run_flows(sim, net, []) == "done"
    qps = net.qps
    assert net.dropped_packets == 0
    assert sum(qp.sent_packets for qp in qps) == sum(qp.n_packets for qp in qps)
    assert all(
        qp.recovery.loss_notices == qp.recovery.late_acks == 0 and qp.recovery.base_rtt_ps < 0 for qp in qps
    )


@pytest.mark.parametrize("recovery", ["gbn", "sr"])
def test_other_recovery_modes_have_no_drop_hook(recovery: str) -> None:
    fabric = small_leaf_spine(2, 2, 2)
    _, net = make_net(fabric, "rps", recovery=recovery)
    (qp,) = net.add_flows([FlowSpec(0, 0, 2, 100_000)])
    assert qp.drop_hook is None
    _, net = make_net(fabric, "rps", recovery="ideal")
    (qp,) = net.add_flows([FlowSpec(0, 0, 2, 100_000)])
    assert qp.drop_hook is not None
