"""A fluid run's outcome as the packet engine's :class:`~spraylab.metrics.result.Result` tables.

Same columns, same summary keys. What the fluid model has no notion of (packets, queues,
drops, ECN, PFC, retransmissions, reordering, NACKs, CNPs, timeouts, ACKs) is NaN in the tables
and ``None`` in the summary, never a made-up zero. ``summary["engine"]`` says which engine made
the result; the fluid engine's solver counters are ``fluid.*``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from spraylab.fluid.engine import FluidOutcome, FluidRun
from spraylab.metrics.collect import (
    FLOW_COLUMNS,
    LINK_DROP_COLUMNS,
    bucket_and_group_statistics,
    flow_statistics,
    group_table,
)
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


def flow_table(run: FluidRun, out: FluidOutcome) -> pd.DataFrame:
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
    return pd.DataFrame({c: data[c] for c in FLOW_COLUMNS})


def link_table(run: FluidRun, out: FluidOutcome) -> pd.DataFrame:
    ff = run.fabric
    fabric = ff.fabric
    names = np.array(list(fabric.switch_tier) + list(fabric.hosts), dtype=object)
    ns = ff.n_switches
    tiers = np.array([*fabric.switch_tier.values(), *([HOST_TIER] * fabric.n_hosts)], dtype=np.int64)
    a, b = ff.link_src, ff.link_dst
    a_host, b_host = a >= ns, b >= ns
    role = np.where(
        a_host, "host_up", np.where(b_host, "host_down", np.where(tiers[b] > tiers[a], "uplink", "downlink"))
    )
    rate = out.rate_bps.astype(np.int64)
    capacity_bytes = rate.astype(float) * max(1, out.end_ps) / 8e12
    tx = out.tx_bytes.astype(float)
    data: dict[str, Any] = {
        "link": [f"{x}->{y}" for x, y in zip(names[a], names[b])],
        "from": names[a],
        "to": names[b],
        "role": role.astype(object),
        "tier": tiers[a],
        "rate_bps": rate,
        "up": out.up.astype(bool),
        "tx_bytes": np.round(tx).astype(np.int64),
        "utilization": np.where(capacity_bytes > 0, tx / np.maximum(capacity_bytes, 1e-300), 0.0),
    }
    for column in UNKNOWN_LINK_COLUMNS:
        data[column] = np.full(ff.n_links, np.nan)
    order = [
        "link", "from", "to", "role", "tier", "rate_bps", "up", "tx_bytes", "tx_packets", "utilization",
        "max_queue_bytes", "drops", *LINK_DROP_COLUMNS, "ecn_marks", "pfc_pauses", "paused_ps",
    ]  # fmt: skip
    return pd.DataFrame({c: data[c] for c in order})


def uplink_imbalance(links: pd.DataFrame) -> tuple[float, float]:
    """As :func:`spraylab.metrics.collect.uplink_imbalance`, from the link table."""
    up = links[links["role"] == "uplink"]
    if up.empty:
        return 1.0, 1.0
    stats = up.groupby("from")["tx_bytes"].agg(["max", "mean", "count", "sum"])
    stats = stats[(stats["count"] >= 2) & (stats["sum"] > 0)]
    if stats.empty:
        return 1.0, 1.0
    ratios = (stats["max"] / stats["mean"]).to_numpy(dtype=float)
    return float(ratios.max()), float(ratios.mean())


def summarize(
    flows: pd.DataFrame, links: pd.DataFrame, groups: pd.DataFrame, run_info: dict[str, Any]
) -> dict[str, Any]:
    imbalance_max, imbalance_mean = uplink_imbalance(links)
    summary: dict[str, Any] = {
        **run_info,
        **flow_statistics(flows.to_dict("list"), int(run_info["sim_time_ps"])),
        "uplink_imbalance_max": imbalance_max,
        "uplink_imbalance_mean": imbalance_mean,
    }
    for key in UNKNOWN_SUMMARY_KEYS:
        summary[key] = None
    summary.update(bucket_and_group_statistics(flows.to_dict("list"), groups.to_dict("records")))
    return summary


def collect(run: FluidRun, out: FluidOutcome, scenario: dict[str, Any], run_info: dict[str, Any]) -> Result:
    flows = flow_table(run, out)
    links = link_table(run, out)
    groups = group_table(flows, run.groups)
    summary = summarize(flows, links, groups, run_info)
    return Result(scenario=scenario, summary=summary, flows=flows, links=links, groups=groups)
