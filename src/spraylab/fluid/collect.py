"""A fluid run's outcome as the packet engine's :class:`~spraylab.metrics.result.Result` tables.

Same columns, same summary keys. What the fluid model has no notion of (packets, queues,
drops, ECN, PFC, retransmissions, reordering, NACKs, CNPs, timeouts, ACKs) is NaN in the tables
and ``None`` in the summary, never a made-up zero. ``summary["engine"]`` says which engine made
the result; the fluid engine's solver counters are ``fluid.*``.

The summary is computed from the columns as arrays; the DataFrames are built when first read
(as the packet engine's), so a run read for its summary never imports pandas.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spraylab.fluid.engine import FluidOutcome, FluidRun
from spraylab.fluid.routing import FluidFabric
from spraylab.metrics.build import build_result, uplink_imbalance
from spraylab.metrics.collect import FLOW_COLUMNS, LINK_DROP_COLUMNS
from spraylab.metrics.columns import ColumnTable
from spraylab.metrics.result import Result, size_bucket
from spraylab.net.drops import DROP_CAUSES
from spraylab.topology.fabric import HOST_TIER

# flow columns the fluid model cannot know
UNKNOWN_FLOW_COLUMNS = (
    "acked_ps", "packets_sent", "retx_packets", "spurious_retx", "nacks", "cnps", "ooo_arrivals",
    "max_reorder", "psn_window", "discards", "timeouts", "drops",
    *(f"drops_{name}" for name in DROP_CAUSES),
)  # fmt: skip
UNKNOWN_LINK_COLUMNS = (
    "tx_packets", "max_queue_bytes", "drops", *LINK_DROP_COLUMNS, "ecn_marks", "pfc_pauses", "paused_ps",
)  # fmt: skip
UNKNOWN_SUMMARY_KEYS = (
    "packets_sent", "retx_packets", "retx_ratio", "spurious_retx", "spurious_retx_ratio", "nacks", "cnps",
    "ooo_arrivals", "max_reorder", "discards", "timeouts", "drops_total", "drops", "ecn_marks",
    "pfc_pauses", "max_queue_bytes", "packet_hops", "acks", *(f"drops_{name}" for name in DROP_CAUSES),
)  # fmt: skip
LINK_COLUMNS = (
    "link", "from", "to", "role", "tier", "rate_bps", "up", "tx_bytes", "tx_packets", "utilization",
    "max_queue_bytes", "drops", *LINK_DROP_COLUMNS, "ecn_marks", "pfc_pauses", "paused_ps",
)  # fmt: skip
# the flow columns the summary reads (flow_statistics, group_rows, the size buckets)
SUMMARY_FLOW_COLUMNS = (
    "flow_id", "dst", "group", "size_bytes", "start_ps", "finish_ps", "fct_ps", "slowdown", "throughput_bps",
    "completed", "censored", "size_bucket",
)  # fmt: skip


def flow_columns(run: FluidRun, out: FluidOutcome) -> dict[str, Any]:
    """The flow table's columns (arrays; the packet engine's names and meanings)."""
    flows = run.flows
    n = len(flows)
    size = np.array([f.size_bytes for f in flows], dtype=np.int64)
    started = out.start_ps >= 0
    done = out.finish_ps >= 0
    start = np.where(started, np.round(out.start_ps), -1).astype(np.int64)
    finish = np.where(done, np.round(out.finish_ps), -1).astype(np.int64)
    # unfinished: censored at the run's end (as the packet engine's flow table)
    fct = np.where(done, finish - start, np.where(started, np.maximum(0, out.end_ps - start), 0))
    bound = out.bound_ps
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(bound > 0, fct / np.maximum(bound, 1), np.nan)
        throughput = np.where(done & (fct > 0), size * 8e12 / np.maximum(fct, 1), np.nan)
    data: dict[str, Any] = {
        "flow_id": np.array([f.flow_id for f in flows], dtype=np.int64),
        "src": np.array([f.src for f in flows], dtype=np.int64),
        "dst": np.array([f.dst for f in flows], dtype=np.int64),
        "group": [f.group for f in flows],
        "size_bytes": size,
        "start_ps": start,
        "finish_ps": finish,
        "fct_ps": fct.astype(np.int64),
        "ideal_fct_ps": out.ideal_ps,
        "fct_bound_ps": bound,
        "slowdown": slowdown.astype(float),
        "throughput_bps": throughput.astype(float),
        "completed": done,
        "censored": ~done,
        "size_bucket": [size_bucket(int(s)) for s in size],
    }
    for column in UNKNOWN_FLOW_COLUMNS:
        data[column] = np.full(n, np.nan)
    return {c: data[c] for c in FLOW_COLUMNS}


def _node_tiers(ff: FluidFabric) -> np.ndarray:
    """The tier of every node, switches then hosts (the fabric's node order)."""
    fabric = ff.fabric
    return np.array([*fabric.switch_tier.values(), *([HOST_TIER] * fabric.n_hosts)], dtype=np.int64)


def link_roles(ff: FluidFabric) -> np.ndarray:
    """Each directed link's role: host_up, host_down, uplink (to a higher tier) or downlink."""
    ns = ff.n_switches
    tiers = _node_tiers(ff)
    a, b = ff.link_src, ff.link_dst
    return np.where(
        a >= ns,
        "host_up",
        np.where(b >= ns, "host_down", np.where(tiers[b] > tiers[a], "uplink", "downlink")),
    )


def link_columns(ff: FluidFabric, out: FluidOutcome) -> dict[str, Any]:
    """The link table's columns (arrays; the packet engine's names and meanings)."""
    fabric = ff.fabric
    names = np.array(list(fabric.switch_tier) + list(fabric.hosts), dtype=object)
    a, b = ff.link_src, ff.link_dst
    rate = out.rate_bps.astype(np.int64)
    capacity_bytes = rate.astype(float) * max(1, out.end_ps) / 8e12
    tx = out.tx_bytes.astype(float)
    data: dict[str, Any] = {
        "link": [f"{x}->{y}" for x, y in zip(names[a], names[b])],
        "from": names[a],
        "to": names[b],
        "role": link_roles(ff).astype(object),
        "tier": _node_tiers(ff)[a],
        "rate_bps": rate,
        "up": out.up.astype(bool),
        "tx_bytes": np.round(tx).astype(np.int64),
        "utilization": np.where(capacity_bytes > 0, tx / np.maximum(capacity_bytes, 1e-300), 0.0),
    }
    for column in UNKNOWN_LINK_COLUMNS:
        data[column] = np.full(ff.n_links, np.nan)
    return {c: data[c] for c in LINK_COLUMNS}


def uplink_bytes(ff: FluidFabric, role: np.ndarray, tx: np.ndarray) -> list[list[int]]:
    """Bytes sent on each switch's uplinks (rounded to whole bytes), switches in name order:
    what :func:`spraylab.metrics.build.uplink_imbalance` reads."""
    up = np.flatnonzero(role == "uplink")
    names = list(ff.fabric.switch_tier)
    sent = np.round(tx[up]).astype(np.int64)
    by_switch: dict[str, list[int]] = {}
    for lid, nbytes in zip(ff.link_src[up].tolist(), sent.tolist()):
        by_switch.setdefault(names[lid], []).append(nbytes)
    return [by_switch[name] for name in sorted(by_switch)]


def collect(run: FluidRun, out: FluidOutcome, scenario: dict[str, Any], run_info: dict[str, Any]) -> Result:
    flows = flow_columns(run, out)
    rows = {
        c: v if isinstance(v, list) else v.tolist() for c, v in flows.items() if c in SUMMARY_FLOW_COLUMNS
    }
    imbalance_max, imbalance_mean = uplink_imbalance(
        uplink_bytes(run.fabric, link_roles(run.fabric), out.tx_bytes)
    )
    engine_summary: dict[str, Any] = {
        "uplink_imbalance_max": imbalance_max,
        "uplink_imbalance_mean": imbalance_mean,
        **dict.fromkeys(UNKNOWN_SUMMARY_KEYS),
    }

    def tables() -> tuple[ColumnTable, ColumnTable]:
        return ColumnTable(flows), ColumnTable(link_columns(run.fabric, out))

    return build_result(
        scenario, run_info, rows, int(run_info["sim_time_ps"]), run.groups, engine_summary, tables
    )
