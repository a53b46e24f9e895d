"""The validation page: the simulator against closed-form truths and the targets a congestion
control, a switch hash and a rail planner must meet.

Each :class:`Check` runs small scenarios and returns rows of (case, truth, simulated, ratio,
target, verdict). :func:`render` turns them into ``docs/validation.md``; every number on that page
is computed here, at generation time (``spraylab validate --out docs/validation.md``). The unit
tests hold the same quantities to the same targets on the cases that fit in a test's time."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spraylab.config import validate
from spraylab.experiment import build
from spraylab.metrics.maxmin import jain_index
from spraylab.net.framing import data_wire_bytes

US = 1_000_000
GBPS = 1_000_000_000
RATE_BPS = 400 * GBPS


@dataclass
class Row:
    case: str
    truth: str
    simulated: str
    ratio: float | None
    target: str
    met: bool | None  # None: reported, not judged
    note: str = ""


@dataclass
class Check:
    title: str
    theory: str
    command: str
    run: Callable[[bool], list[Row]]  # argument: quick (fewer, smaller cases)
    rows: list[Row] = field(default_factory=list)


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
    max_queue_bytes: int
    mean_queue_bytes: float  # sampled every microsecond


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

    def sample(_: object) -> None:
        samples.append(bottleneck.queue_bytes())
        if not net.all_done:
            sim.after(US, sample)

    sim.at(0, sample)
    simulation.run()
    result = simulation.result()
    flows = result.flows
    start = int(flows.start_ps.min())
    cct = int((flows.start_ps + flows.fct_ps).max()) - start
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
        max_queue_bytes=bottleneck.max_queue_bytes,
        mean_queue_bytes=sum(samples) / len(samples),
    )


def _wire_bytes(size_bytes: int, mtu: int = 4096) -> int:
    n_packets = max(1, -(-size_bytes // mtu))
    return (n_packets - 1) * data_wire_bytes(mtu) + data_wire_bytes(size_bytes - (n_packets - 1) * mtu)


def _fabric(lossless: bool) -> str:
    return "lossless" if lossless else "lossy"


def _queue_note(out: IncastOutcome) -> str:
    return (
        f"drops {out.drops:,}; bottleneck queue max {out.max_queue_bytes / 1e6:.2f} MB, "
        f"time-average {out.mean_queue_bytes / 1e6:.2f} MB"
    )


def incast_rows(quick: bool) -> list[Row]:
    rows = []
    for lossless in (True, False):
        for n in (2, 4, 8, 16) if not quick else (2, 8):
            out = incast(n, 8_000_000, lossless)
            ratio = out.cct_ps / out.bound_ps
            rows.append(
                Row(
                    f"{n}:1, 8 MB, {_fabric(lossless)}",
                    f"{out.bound_ps / US:,.1f} us",
                    f"{out.cct_ps / US:,.1f} us",
                    ratio,
                    "<= 1.2, no drops",
                    ratio <= 1.2 and out.drops == 0,
                    _queue_note(out),
                )
            )
    return rows


def long_flow_rows(quick: bool) -> list[Row]:
    rows = []
    for size_mb, target in ((8, 0.85), (64, 0.90)) if not quick else ((8, 0.85),):
        for lossless in (True, False):
            out = incast(2, size_mb * 1_000_000, lossless)
            rows.append(
                Row(
                    f"2 x {size_mb} MB, {_fabric(lossless)}",
                    f">= {target:.0%} busy, Jain >= 0.95",
                    f"{out.busy_fraction:.1%} busy, Jain {out.jain:.3f}",
                    out.busy_fraction,
                    f">= {target:.2f}",
                    out.busy_fraction >= target and out.jain >= 0.95,
                    _queue_note(out),
                )
            )
    return rows


def marking_point_rows(quick: bool) -> list[Row]:
    """The evidence for the default ``switch.ecn_mark_at``: the same incast, both settings."""
    rows = []
    for n, size in ((2, 8_000_000), (8, 8_000_000)) if not quick else ((2, 8_000_000),):
        for lossless in (True, False):
            for mark_at in ("dequeue", "enqueue"):
                out = incast(n, size, lossless, switch={"lossless": lossless, "ecn_mark_at": mark_at})
                rows.append(
                    Row(
                        f"{n}:1, {size // 1_000_000} MB, {_fabric(lossless)}, mark at {mark_at}",
                        f"{out.bound_ps / US:,.1f} us",
                        f"{out.cct_ps / US:,.1f} us",
                        out.cct_ps / out.bound_ps,
                        "reported",
                        None,
                        _queue_note(out),
                    )
                )
    return rows


# --- ECMP permutation: DCQCN against line-rate senders on the same hashes --------------------


def permutation_rows(quick: bool) -> list[Row]:
    hosts_per_leaf, leaves = (8, 8) if quick else (8, 16)
    rows = []
    for lossless in (True, False):
        completion = {}
        for cc in ("none", "dcqcn"):
            result = _run(
                {
                    "topology": {
                        "kind": "leaf_spine",
                        "leaves": leaves,
                        "spines": 8,
                        "hosts_per_leaf": hosts_per_leaf,
                        "host_rate": "400Gbps",
                    },
                    "switch": {"lossless": lossless},
                    "transport": {"cc": cc},
                    "lb": {"scheme": "ecmp"},
                    "workload": {"kind": "permutation", "size": "8MB"},
                }
            )
            completion[cc] = (result.summary["completion_ps"], result.summary["drops_total"])
        (none_ps, none_drops), (dcqcn_ps, dcqcn_drops) = completion["none"], completion["dcqcn"]
        ratio = dcqcn_ps / none_ps
        rows.append(
            Row(
                f"{leaves * hosts_per_leaf} hosts, 8 MB, {_fabric(lossless)}",
                f"cc = none: {none_ps / US:,.1f} us ({none_drops:,} drops)",
                f"DCQCN: {dcqcn_ps / US:,.1f} us ({dcqcn_drops:,} drops)",
                ratio,
                "<= 1.25",
                ratio <= 1.25,
            )
        )
    return rows


def _run(data: dict[str, Any]) -> Any:
    from spraylab.experiment import run

    data.setdefault("run", {})["progress"] = False
    return run(validate(data))


# --- closed forms of the engine ----------------------------------------------------------------


def single_flow_rows(quick: bool) -> list[Row]:
    """One flow alone over host - leaf - spine - leaf - host: its first packet is stored and
    forwarded at each of the 4 hops (1 us propagation each), the rest streams behind it at line
    rate, every packet carrying RoCEv2's 82 B envelope."""
    rows = []
    for size in (64_000, 16_000_000):
        result = _run(
            {
                "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1},
                "transport": {"cc": "none"},
                "workload": {"kind": "random_pairs", "flows": 1, "size": size},
            }
        )
        wire = _wire_bytes(size)
        first = data_wire_bytes(min(size, 4096))
        ps_per_byte = 8 * 1e12 / RATE_BPS
        truth = 4 * (US + first * ps_per_byte) + (wire - first) * ps_per_byte
        fct = int(result.flows.fct_ps.iloc[0])
        rows.append(
            Row(
                f"{size:,} B flow, 400 Gb/s, 4 hops",
                f"{truth / US:,.4f} us",
                f"{fct / US:,.4f} us",
                fct / truth,
                "= 1 (to the ps)",
                abs(fct - truth) < 1,
            )
        )
    return rows


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


def hash_rows(quick: bool) -> list[Row]:
    rows = []
    for k in (4, 8) if quick else (4, 8, 16):
        x2, p, df = uplink_uniformity(k)
        rows.append(
            Row(
                f"k = {k} fat-tree, pod 0 -> pod {k - 1}",
                f"uniform over {df + 1} cells",
                f"X^2 = {x2:.1f}",
                p,
                "p > 0.001",
                p > 0.001,
            )
        )
    return rows


# --- RailS ------------------------------------------------------------------------------------


def rails_rows(quick: bool) -> list[Row]:
    from spraylab.rails.families import FAMILIES, family_matrix
    from spraylab.rails.simulate import rail_scenario, simulate_matrix

    rows = []
    shapes = ((8, 8),) if quick else ((8, 8), (16, 8))
    for servers, gpus in shapes:
        for family in FAMILIES:
            d1 = family_matrix(family, servers, gpus, seed=1)
            scenario = rail_scenario(servers, gpus)
            run = simulate_matrix(d1, scenario, "rails")
            plan = run.plan
            assert plan is not None
            nic_rate_bps = scenario.topology.nic_rate
            t_star = plan.t_star_ps(nic_rate_bps)
            planned = plan.planned_time_ps(nic_rate_bps)
            limit = 1.1 * t_star + run.base_rtt_ps
            rows.append(
                Row(
                    f"{family}, {servers}x{gpus} GPUs",
                    f"T* = {t_star / US:,.1f} us; plan {planned / t_star:.3f} T*",
                    f"CCT {run.cct_ps / US:,.1f} us = {run.cct_ps / t_star:.3f} T*",
                    run.cct_ps / limit,
                    "CCT <= 1.1 T* + RTT; plan <= 1.05 T*",
                    run.completed and run.cct_ps <= limit and planned <= 1.05 * t_star,
                )
            )
    return rows


CHECKS: list[Check] = [
    Check(
        "Single flow: FCT against the closed form",
        "store-and-forward of the first packet per hop plus serialization of the rest at line rate, "
        "with RoCEv2 framing (82 B per data packet)",
        "spraylab validate --only single_flow",
        single_flow_rows,
    ),
    Check(
        "N:1 incast under DCQCN",
        "no schedule finishes N flows of S bytes through one link of capacity C before N x S / C",
        "spraylab validate --only incast",
        incast_rows,
    ),
    Check(
        "Two long flows on one 400 Gb/s link under DCQCN",
        "work conservation (the link busy over the flows' lifetime) and fair shares (Jain's index)",
        "spraylab validate --only long_flows",
        long_flow_rows,
    ),
    Check(
        "Where ECN samples the queue",
        "the same incasts with marking at dequeue (the default) and at enqueue",
        "spraylab validate --only marking_point",
        marking_point_rows,
    ),
    Check(
        "ECMP permutation: DCQCN against line-rate senders on the same hashes",
        "the collisions are the same in both runs, so the gap is what congestion control costs",
        "spraylab validate --only permutation",
        permutation_rows,
    ),
    Check(
        "Switch hash: independent choices at every tier",
        "Pearson's chi-square over the joint uplink choice, (k/2)^2 - 1 degrees of freedom, "
        "p-value by Wilson-Hilferty",
        "spraylab validate --only hash",
        hash_rows,
    ),
    Check(
        "RailS against its bound T*",
        "T* = the busiest server's wire bytes over its N rail NICs; a plan within one packet per "
        "pair of the even split meets 1.05 T*",
        "spraylab validate --only rails",
        rails_rows,
    ),
]
CHECK_NAMES = {
    "single_flow": 0,
    "incast": 1,
    "long_flows": 2,
    "marking_point": 3,
    "permutation": 4,
    "hash": 5,
    "rails": 6,
}


def run_checks(
    names: list[str] | None = None, quick: bool = False, on_check: Callable[[Check], None] | None = None
) -> list[Check]:
    selected = [CHECKS[CHECK_NAMES[n]] for n in names] if names else list(CHECKS)
    for check in selected:
        check.rows = check.run(quick)
        if on_check is not None:
            on_check(check)
    return selected


GENERATED_MARK = "<!-- generated by `spraylab validate`; edit src/spraylab/validation.py instead -->"


def _verdict(met: bool | None) -> str:
    return "reported" if met is None else ("met" if met else "**not met**")


def render(checks: list[Check], version: str, quick: bool) -> str:
    lines = [GENERATED_MARK, "", "# Validation", ""]
    lines.append(
        f"spraylab {version}, generated with `spraylab validate{' --quick' if quick else ''} --out docs/validation.md`. "
        "Every number below was computed when the page was generated; the unit tests hold the "
        "same quantities to the same targets on the cases that fit in a test."
    )
    judged = [r for c in checks for r in c.rows if r.met is not None]
    lines += ["", f"{sum(r.met for r in judged)} of {len(judged)} judged cases meet their target.", ""]
    for check in checks:
        lines += [f"## {check.title}", "", f"Theory: {check.theory}. Reproduce: `{check.command}`.", ""]
        lines.append("| case | truth / target | simulated | ratio | target | verdict | notes |")
        lines.append("|---|---|---|---:|---|---|---|")
        for r in check.rows:
            ratio = "" if r.ratio is None else f"{r.ratio:.3f}"
            lines.append(
                f"| {r.case} | {r.truth} | {r.simulated} | {ratio} | {r.target} | {_verdict(r.met)} | {r.note} |"
            )
        lines.append("")
    return "\n".join(lines)
