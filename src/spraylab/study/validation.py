"""Truths the validation study (``spraylab validate``, the packaged study ``validation``) and
the unit tests measure the simulator against: an incast instrumented at its bottleneck, and the
uniformity of the switch hash over a fat-tree's tiers.

The page itself (``docs/validation.md``) is rendered by :mod:`spraylab.study` from the stored runs;
the closed forms it compares with are registered metrics (:mod:`spraylab.study.metrics`) and
analyses (:mod:`spraylab.study.analyses`)."""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from spraylab.metrics.maxmin import jain_index
from spraylab.model.scenario import validate
from spraylab.net.framing import data_wire_bytes
from spraylab.runs.experiment import build
from spraylab.transport.cc.base import route_of
from spraylab.transport.cc.hpcc import fabric_base_rtt_ps
from spraylab.units import PS_PER_US

# --- incast and long flows -------------------------------------------------------------------


@dataclass
class IncastOutcome:
    """What an N:1 incast into one 400 Gb/s host did on its bottleneck (the receiver's link)."""

    cct_ps: int
    bound_ps: float  # N x S / C, payload only
    # the wire bytes the flows needed (payload in full packets, RoCEv2 framing) / (C x lifetime):
    # retransmissions keep a link busy without doing work, so they do not count
    busy_fraction: float
    jain: float  # over the flows' throughputs
    drops: int
    retx_packets: int  # data packets the senders put on the wire again
    buffer_drops: int  # lost to a full switch buffer
    discards: int  # reached the receiver beyond its out-of-order bitmap and thrown away there
    max_queue_bytes: int
    mean_queue_bytes: float  # sampled every microsecond
    # Steady state: from half the time the first flow took to finish until it finished (every
    # flow sending, the start-up transient over): the bottleneck's transmitted bytes (every
    # frame) over its capacity, and its queue sampled every microsecond.
    steady_utilization: float
    steady_mean_queue_bytes: float
    steady_max_queue_bytes: int
    # one base RTT at the bottleneck's rate, the RTT the fabric's largest (a full frame out, its
    # ACK back, queues empty): HPCC's W_init
    bdp_bytes: float
    # the bottleneck's ECN marking threshold (its kmin, bytes) and the fabric's largest base RTT
    ecn_k_bytes: int
    base_rtt_ps: float
    # Steady state, for a control that measures delay (``last_delay_ps`` on its per-QP state:
    # Swift, TIMELY) and one that holds it against a target (Swift's ``last_target_ps``): the
    # mean over the samples and the flows still sending of each flow's last measured RTT and of
    # its target; NaN for other controls (the target: NaN for a control without one).
    steady_mean_rtt_ps: float
    steady_mean_target_ps: float
    # At the first sample (every microsecond) after the first flow finished: each flow still
    # sending, as (its window in full frames, ``QueuePair.window_packets``; its packets not yet
    # acknowledged; its base RTT, ps). What a window control's additive increase climbs from
    # (:func:`aimd_climb_idle_ps`).
    survivors: list[tuple[int, int, float]]


def incast(n: int, size_bytes: int, lossless: bool, **sections: dict[str, Any]) -> IncastOutcome:
    data: dict[str, Any] = {
        "topology": {
            "kind": "leaf_spine",
            "leaves": 2,
            "spines": 2,
            "hosts_per_leaf": 16,
            "host_rate": "400Gbps",
        },
        "switch": {"lossless": lossless},
        "lb": {"scheme": "ecmp"},
        "workload": {"kind": "incast", "size": size_bytes, "senders": n, "receiver": 0},
        "run": {"progress": False},
    }
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    simulation = build(validate(data))
    net, sim = simulation.net, simulation.sim
    receiver = net.hosts[0]
    (bottleneck,) = [p for p in net.ports if p.peer_owner is receiver]
    samples: list[int] = []
    sent: list[int] = []  # the bottleneck's tx_bytes at every sample
    delays: list[tuple[float, float]] = []  # (mean RTT, mean target) of the sending flows
    nan = float("nan")
    measures_delay = hasattr(net.qps[0].cc, "last_delay_ps")
    has_target = hasattr(net.qps[0].cc, "last_target_ps")
    # flow index -> (window, packets not yet acknowledged), at the first completion
    survivor_windows: dict[int, tuple[int, int]] = {}

    def sample(_: object) -> None:
        if not survivor_windows and any(qp.rx.finish_ps >= 0 for qp in net.qps):
            survivor_windows.update(
                (i, (qp.window_packets, qp.n_packets - qp.snd_una))
                for i, qp in enumerate(net.qps)
                if qp.rx.finish_ps < 0
            )
        samples.append(bottleneck.queue_bytes())
        sent.append(bottleneck.tx_bytes)
        if measures_delay:
            pairs = [
                (qp.cc.last_delay_ps, qp.cc.last_target_ps if has_target else nan)
                for qp in net.qps
                if not qp.sender_done and qp.cc.last_delay_ps
            ]
            n_pairs = len(pairs) or 1
            delays.append((sum(d for d, _ in pairs) / n_pairs, sum(t for _, t in pairs) / n_pairs))
        if not net.all_done:
            sim.after(PS_PER_US, sample)

    sim.at(0, sample)
    simulation.run()
    result = simulation.result()
    flows = result.flows
    start = int(flows.start_ps.min())
    cct = int((flows.start_ps + flows.fct_ps).max()) - start
    # samples are taken at start + k us (the flows start at 0)
    first_done_us = int((flows.start_ps + flows.fct_ps).min() - start) // PS_PER_US
    lo, hi = first_done_us // 2, max(first_done_us // 2 + 1, first_done_us)
    steady = samples[lo:hi]
    steady_delays = delays[lo:hi]
    mtu = simulation.scenario.transport.mtu
    return IncastOutcome(
        cct_ps=cct,
        bound_ps=n * size_bytes * 8 * 1e12 / bottleneck.rate_bps,
        busy_fraction=sum(_wire_bytes(int(z)) for z in flows.size_bytes)
        * 8
        * 1e12
        / bottleneck.rate_bps
        / cct,
        jain=jain_index((flows.size_bytes / flows.fct_ps).tolist()),
        drops=int(result.summary["drops_total"]),
        retx_packets=sum(qp.retx_packets for qp in net.qps),
        buffer_drops=int(result.summary["drops_buffer"]),
        discards=int(result.summary["drops_beyond_bitmap"]),
        max_queue_bytes=bottleneck.max_queue_bytes,
        mean_queue_bytes=sum(samples) / len(samples),
        steady_utilization=(sent[hi] - sent[lo]) * 8 * 1e12 / bottleneck.rate_bps / ((hi - lo) * PS_PER_US),
        steady_mean_queue_bytes=sum(steady) / len(steady),
        steady_max_queue_bytes=max(steady),
        bdp_bytes=fabric_base_rtt_ps(net, simulation.scenario.transport.mtu) * bottleneck.rate_bps / 8e12,
        ecn_k_bytes=bottleneck.kmin,
        base_rtt_ps=fabric_base_rtt_ps(net, simulation.scenario.transport.mtu),
        steady_mean_rtt_ps=sum(d for d, _ in steady_delays) / len(steady_delays) if steady_delays else nan,
        steady_mean_target_ps=sum(t for _, t in steady_delays) / len(steady_delays) if steady_delays else nan,
        survivors=[
            (w, left, route_of(net.qps[i]).base_rtt_ps(mtu)) for i, (w, left) in survivor_windows.items()
        ],
    )


def aimd_climb_idle_ps(
    window_packets: float,
    bdp_packets: float,
    rtt_ps: float,
    ai_packets: float = 1.0,
    remaining_packets: float = math.inf,
) -> float:
    """The time a bottleneck idles while a lone window-limited flow climbs from ``window_packets``
    towards the link's bandwidth-delay product ``bdp_packets`` by ``ai_packets`` per round trip
    (additive increase: TCP's congestion avoidance, which DCTCP keeps; Alizadeh et al.
    SIGCOMM'10 section 3.1; Chiu and Jain's AIMD). In round ``k`` the flow has ``W_k = W_0 + k
    x ai`` packets in flight per base RTT ``R`` on a link that carries ``B`` per RTT, so the link
    idles ``(B - W_k) / B`` of that round: ``R / B x sum over k of (B - W_k)`` while ``W_k <
    B``, about ``R (B - W_0)^2 / (2 B ai)``. The climb ends early when the flow has sent its
    ``remaining_packets``: its last round sends what is left back to back, and the run ends."""
    idle_ps = 0.0
    window = window_packets
    left = remaining_packets
    while window < bdp_packets and left > window:
        idle_ps += rtt_ps * (bdp_packets - window) / bdp_packets
        left -= window
        window += ai_packets
    return idle_ps


# HPCC's bottleneck cases (tests/test_hpcc.py, the validation study's ``cc_bottleneck``):
# (senders, bytes each, topology keys over incast()'s 2 x 16-host leaf-spine).
BOTTLENECK_CASES: dict[str, tuple[int, int, dict[str, Any]]] = {
    # 16:1 incast: senders on the receiver's leaf and across the spine (two base RTTs)
    "incast_16": (16, 8_000_000, {}),
    # 16:1 incast with every sender across the spine (one base RTT)
    "incast_16_one_rtt": (16, 8_000_000, {"leaves": 17, "hosts_per_leaf": 1}),
    # two long flows sharing the receiver's link (one on the receiver's leaf, one across the spine)
    "long_flows": (2, 64_000_000, {}),
    # two long flows, both across the spine (one base RTT); 800 Gb/s leaf-spine links, so the
    # receiver's link stays the bottleneck when both flows hash onto one spine
    "long_flows_one_rtt": (2, 64_000_000, {"leaves": 3, "hosts_per_leaf": 1, "uplink_rate": "800Gbps"}),
    # TIMELY's (tests/test_timely.py): the same bottlenecks with eight times the bytes, so a
    # steady state follows its start-up cut (its additive climb back to C / N at delta per base
    # RTT takes C / N / delta x 8.3 us: 4.2 ms for two flows, 0.5 ms for 16 at 400 Gb/s)
    "incast_16_64mb": (16, 64_000_000, {}),
    "incast_16_one_rtt_64mb": (16, 64_000_000, {"leaves": 17, "hosts_per_leaf": 1}),
    "long_flows_one_rtt_512mb": (
        2,
        512_000_000,
        {"leaves": 3, "hosts_per_leaf": 1, "uplink_rate": "800Gbps"},
    ),
    "long_flows_512mb": (2, 512_000_000, {}),
}


# The largest base RTT of incast()'s leaf-spine (a 4 KB frame out over four 400 Gb/s links of
# 1 us each, its ACK back), for settings that depend on it before a network is built.
BASE_RTT_PS = 8_341_120.0


def dctcp_switch(base_rtt_ps: float = BASE_RTT_PS) -> dict[str, Any]:
    """The ``[switch]`` keys of DCTCP's step mark at the paper's guideline ``K = C x RTT / 7``
    (Alizadeh et al. SIGCOMM'10, section 3.3), ``base_rtt_ps`` the fabric's largest base RTT:
    ``kmin = kmax = K`` marks every packet that leaves a queue above K, and none below."""
    from spraylab.transport.cc.dctcp import dctcp_k_bytes_per_100g

    k = math.ceil(dctcp_k_bytes_per_100g(base_rtt_ps))
    return {"ecn_kmin_per_100g": k, "ecn_kmax_per_100g": k, "ecn_pmax": 1.0}


def uec_switch(bdp_bytes: float, rate_gbps: float = 400) -> dict[str, Any]:
    """The ``[switch]`` keys of uet-htsim's UEC defaults (``main_uec.cpp``): a queue of one BDP
    per port with packet trimming, ECN marking from 20% to 80% of a BDP with the probability
    rising to 1 (its ``[switch]`` ECN thresholds are per 100 Gb/s of port rate)."""
    per_100g = 100 / rate_gbps
    return {
        "lossless": False,
        "trimming": True,
        "port_buffer": int(bdp_bytes),
        "ecn_kmin_per_100g": int(0.2 * bdp_bytes * per_100g),
        "ecn_kmax_per_100g": int(0.8 * bdp_bytes * per_100g),
        "ecn_pmax": 1.0,
    }


# Switch settings and transport keys each control is measured with at the bottleneck: DCTCP
# needs its step mark, NSCC runs as UEC specifies it (trimming switches, the uec recovery);
# the others run on the default RED profile (docs/congestion-control.md).
CC_SWITCH: dict[str, dict[str, Any]] = {
    "dctcp": dctcp_switch(),
    "nscc": uec_switch(BASE_RTT_PS * 400e9 / 8e12),
}
CC_TRANSPORT: dict[str, dict[str, Any]] = {"nscc": {"recovery": "uec"}}


def bottleneck_case(cc: str, case: str, lossless: bool) -> dict[str, float]:
    """One of :data:`BOTTLENECK_CASES` under congestion control ``cc``: the steady state
    (utilization, queue) and the whole run (completion, queue, fairness, drops) at the
    bottleneck, with the bounds a line-rate start implies: one BDP, and (N - 1) BDPs (the
    first round trip of N senders at line rate, less the BDP the link carries)."""
    senders, size, topology = BOTTLENECK_CASES[case]
    out = incast(
        senders,
        size,
        lossless,
        transport={"cc": cc, **CC_TRANSPORT.get(cc, {})},
        topology=topology,
        switch=CC_SWITCH.get(cc, {}),
    )
    frame = data_wire_bytes(4096)
    q_max = out.ecn_k_bytes + senders * frame
    # Two flows: once the first finishes, the survivor (window W_0, R its base RTT) climbs to the
    # link's C x R by one packet per RTT, and the link idles meanwhile (aimd_climb_idle_ps); over
    # the lifetime that predicts T_wire / (T_wire + idle), T_wire the flows' wire bytes at line
    # rate. For a window control (DCTCP's W in frames); NaN otherwise.
    wire_ps = out.busy_fraction * out.cct_ps
    climb_idle_ps = window_packets = nan = float("nan")
    if cc == "dctcp" and len(out.survivors) == 1:
        ((window, left, rtt_ps),) = out.survivors
        window_packets = float(window)
        climb_idle_ps = aimd_climb_idle_ps(
            window, out.bdp_bytes * rtt_ps / out.base_rtt_ps / frame, rtt_ps, remaining_packets=left
        )
    amplitude = 0.5 * math.sqrt(2 * senders * (out.bdp_bytes + out.ecn_k_bytes) / frame) * frame
    return {
        "senders": float(senders),
        "ecn_k_bytes": float(out.ecn_k_bytes),
        # DCTCP's queue (Alizadeh et al. SIGCOMM'10, section 3.3): Q_max = K + N packets, and a
        # sawtooth of amplitude A = (1/2) sqrt(2 N (C x RTT + K)) packets below it
        "dctcp_q_max_bytes": float(q_max),
        "dctcp_amplitude_bytes": amplitude,
        # the band tests/test_dctcp.py holds the steady-state mean queue in: the sawtooth's
        # trough to its peak, widened by one packet per flow (ACK clocking's granularity)
        "dctcp_queue_high_bytes": q_max + senders * frame,
        "dctcp_queue_low_bytes": q_max - amplitude - senders * frame,
        "base_rtt_ps": out.base_rtt_ps,
        "steady_mean_rtt_ps": out.steady_mean_rtt_ps,
        "steady_mean_target_ps": out.steady_mean_target_ps,
        # the queue's mean over the steady state as the delay it adds (bytes over the link rate)
        "steady_mean_queue_delay_ps": out.steady_mean_queue_bytes * out.base_rtt_ps / out.bdp_bytes,
        "completion_ps": float(out.cct_ps),
        "bound_ps": out.bound_ps,
        "lifetime_utilization_ratio": out.busy_fraction,
        # the additive increase's prediction of it for two flows (above), and its inputs
        "aimd_lifetime_utilization_ratio": wire_ps / (wire_ps + climb_idle_ps) if climb_idle_ps >= 0 else nan,
        "aimd_survivor_window_packets": window_packets,
        "aimd_climb_idle_ps": climb_idle_ps,
        "steady_utilization_ratio": out.steady_utilization,
        "steady_mean_queue_bytes": out.steady_mean_queue_bytes,
        "steady_max_queue_bytes": float(out.steady_max_queue_bytes),
        "max_queue_bytes": float(out.max_queue_bytes),
        "mean_queue_bytes": out.mean_queue_bytes,
        "jain": out.jain,
        "drops": float(out.drops),
        "bdp_bytes": out.bdp_bytes,
        "burst_bound_bytes": (senders - 1) * out.bdp_bytes,
    }


def _wire_bytes(size_bytes: int, mtu: int = 4096) -> int:
    n_packets = max(1, -(-size_bytes // mtu))
    return (n_packets - 1) * data_wire_bytes(mtu) + data_wire_bytes(size_bytes - (n_packets - 1) * mtu)


# --- switch hash -------------------------------------------------------------------------------


def chi_square_p_value(x2: float, df: int) -> float:
    """P(chi-square with ``df`` degrees of freedom > ``x2``), Wilson-Hilferty."""
    mean = 1 - 2 / (9 * df)
    z = ((x2 / df) ** (1 / 3) - mean) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def uplink_uniformity(k: int, routes_per_cell: int = 50) -> tuple[float, float, int]:
    """Pearson's chi-square over the joint (edge uplink, aggregation uplink) a random entropy
    takes from pod 0 to pod k - 1 of a k-ary fat-tree: (X^2, p-value, degrees of freedom)."""
    from spraylab.net.routes import packet_hash, trace_route

    simulation = build(
        validate(
            {
                "topology": {"kind": "fat_tree", "k": k, "rate": "100Gbps"},
                "workload": {"kind": "random_pairs", "flows": 1, "size": 1000},
                "run": {"seed": k, "progress": False},
            }
        )
    )
    net = simulation.net
    cells = (k // 2) ** 2
    n = routes_per_cell * cells
    rng = random.Random(k)
    counts: Counter[tuple[str, str]] = Counter()
    for _ in range(n):
        route = trace_route(
            net, 0, net.fabric.n_hosts - 1, pkt_hash=packet_hash(rng.getrandbits(24), rng.getrandbits(16))
        )
        counts[(route.hops[1].port.name, route.hops[2].port.name)] += 1
    expected = n / cells
    x2 = sum((c - expected) ** 2 / expected for c in counts.values()) + (cells - len(counts)) * expected
    return x2, chi_square_p_value(x2, cells - 1), cells - 1


# --- ECMP: balls into bins, and max-min shares on the hashed paths ------------------------------


def _ecmp_permutation(leaves: int, spines: int, hosts_per_leaf: int, seed: int, size: str) -> Any:
    return build(
        validate(
            {
                "topology": {
                    "kind": "leaf_spine",
                    "leaves": leaves,
                    "spines": spines,
                    "hosts_per_leaf": hosts_per_leaf,
                    "host_rate": "400Gbps",
                },
                "switch": {"lossless": True},
                "transport": {"cc": "none"},
                "lb": {"scheme": "ecmp"},
                "workload": {"kind": "permutation", "size": size},
                "run": {"seed": seed, "progress": False},
            }
        )
    )


def ecmp_collisions(leaves: int, spines: int, hosts_per_leaf: int, seeds: int) -> dict[str, float]:
    """ECMP as balls into bins: every cross-leaf flow of a permutation lands on one of its
    leaf's ``spines`` uplinks, independently and uniformly. Over ``seeds`` permutations, the
    number of uplinks carrying k flows against the binomial expectation (a leaf with m
    cross-leaf flows has ``spines x Binomial(m, 1/spines)(k)`` uplinks with k), by Pearson's
    chi-square with the tail k >= 3 pooled, plus the idle-uplink fraction against (1 - 1/S)^m."""
    from spraylab.net.routes import trace_route

    observed: Counter[int] = Counter()
    expected: Counter[int] = Counter()
    idle = idle_expected = 0.0
    uplinks = 0
    for seed in range(1, seeds + 1):
        net = _ecmp_permutation(leaves, spines, hosts_per_leaf, seed, "64KB").net
        load: Counter[str] = Counter()
        flows_per_leaf: Counter[int] = Counter()
        for qp in net.qps:
            leaf = qp.src // hosts_per_leaf
            if leaf == qp.dst // hosts_per_leaf:
                continue
            route = trace_route(net, qp.src, qp.dst, pkt_hash=qp.flow_hash)
            load[route.hops[1].port.name] += 1
            flows_per_leaf[leaf] += 1
        for leaf in range(leaves):
            m = flows_per_leaf[leaf]
            for k in range(m + 1):
                expected[min(k, 3)] += spines * math.comb(m, k) * spines**-k * (1 - 1 / spines) ** (m - k)
            idle_expected += spines * (1 - 1 / spines) ** m
        uplinks += leaves * spines
        for count in load.values():
            observed[min(count, 3)] += 1
        observed[0] += leaves * spines - len(load)
        idle += leaves * spines - len(load)
    x2 = sum((observed[k] - expected[k]) ** 2 / expected[k] for k in range(4) if expected[k] > 0)
    return {
        "uplinks": uplinks,
        "idle_fraction": idle / uplinks,
        "idle_fraction_expected": idle_expected / uplinks,
        "chi_square": x2,
        "p_value": chi_square_p_value(x2, 3),
    }


def ecmp_max_min(leaves: int, spines: int, hosts_per_leaf: int, seed: int) -> dict[str, float]:
    """Flows of an ECMP permutation without congestion control, lossless, measured over a
    window in which every flow is active, against the max-min fair shares of their hashed
    paths (``spraylab.metrics.maxmin``, each link's capacity its payload rate). Returns the
    mean absolute error relative to each flow's share and the ratio of mean throughputs."""
    from spraylab.metrics.maxmin import max_min_rates
    from spraylab.metrics.paths import flow_path

    t1_ps, t2_ps = 50 * PS_PER_US, 250 * PS_PER_US
    simulation = _ecmp_permutation(leaves, spines, hosts_per_leaf, seed, "40MB")  # still sending at t2
    simulation.net.stop_when_done = False
    net, sim = simulation.net, simulation.sim
    payload_share = net.qps[0].mtu / data_wire_bytes(net.qps[0].mtu)
    sim.run(until_ps=t1_ps)
    before = [qp.rx.delivered_bytes for qp in net.qps]
    sim.run(until_ps=t2_ps)
    throughput = [
        (qp.rx.delivered_bytes - b) * 8e12 / (t2_ps - t1_ps) for qp, b in zip(net.qps, before, strict=True)
    ]
    paths = [flow_path(net, qp) for qp in net.qps]
    capacity = {id(p): p.rate_bps * payload_share for path in paths for p in path}
    shares = max_min_rates([[id(p) for p in path] for path in paths], capacity)
    errors = [abs(t - s) / s for t, s in zip(throughput, shares, strict=True)]
    return {
        "flows": len(shares),
        "mean_relative_error": sum(errors) / len(errors),
        "throughput_over_share": sum(throughput) / sum(shares),
        "min_share_over_line": min(shares) / (net.qps[0].line_rate_bps * payload_share),
    }
