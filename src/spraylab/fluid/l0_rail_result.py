"""The Result of a ``run.engine = "l0_rail"`` run: the fluid engine's tables and summary keys,
computed from arrays.

The flow table has one row per GPU-pair transfer of each phase (and the barrier between
phases), which at 8192 GPUs is millions of rows: the summary statistics are computed here with
numpy, by the same definitions as :func:`spraylab.metrics.collect.flow_statistics` and
:func:`~spraylab.metrics.collect.bucket_and_group_statistics` (tested equal on small runs),
and the tables are built only when read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from spraylab.fluid.collect import (
    UNKNOWN_FLOW_COLUMNS,
    UNKNOWN_SUMMARY_KEYS,
    link_columns,
    link_roles,
    uplink_bytes,
)
from spraylab.fluid.engine import FluidOutcome
from spraylab.fluid.routing import FluidFabric, route_model
from spraylab.metrics.build import uplink_imbalance
from spraylab.metrics.collect import FLOW_COLUMNS, GROUP_COLUMNS, _mean_skipna
from spraylab.metrics.columns import ColumnTable
from spraylab.metrics.result import SIZE_BUCKETS, Result, percentile
from spraylab.units import PS_PER_BYTE_AT_1BPS
from spraylab.workload.base import GroupInfo
from spraylab.workload.collectives import algbw_bps, busbw_bps

if TYPE_CHECKING:
    from spraylab.fluid.l0_rail import _Rows

COLLECTIVE_KINDS = ("allreduce", "allgather", "reducescatter", "alltoall")


def rail_result(
    scenario: Any,
    ff: FluidFabric,
    rows: _Rows,
    group_names: list[str],
    groups: dict[str, GroupInfo],
    tx: np.ndarray,
    cap_bps: np.ndarray,
    busiest: tuple[float, int],
    wall0: float,
    provenance: dict[str, Any],
) -> Result:
    import time

    src, dst, size = rows.cat("src"), rows.cat("dst"), rows.cat("size").astype(np.int64)
    group = rows.cat("group")
    start = np.round(rows.cat("start")).astype(np.int64)
    finish = np.round(rows.cat("finish")).astype(np.int64)
    ideal, bound = rows.cat("ideal"), rows.cat("bound")
    n = len(src)
    fct = finish - start
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(bound > 0, fct / np.maximum(bound, 1), np.nan).astype(float)
        throughput = np.where(fct > 0, size * PS_PER_BYTE_AT_1BPS / np.maximum(fct, 1), np.nan).astype(float)
    end_ps = int(finish.max(initial=0))
    uppers = np.array([upper for _, upper in SIZE_BUCKETS[:-1]])
    bucket = np.searchsorted(uppers, size, side="left")
    out = FluidOutcome(
        np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
        tx, cap_bps, np.ones(ff.n_links, dtype=bool), end_ps, 0, 0, 0, "done",
    )  # fmt: skip
    group_rows = _group_rows(group, start, fct, group_names, groups)
    role = link_roles(ff)
    imbalance_max, imbalance_mean = uplink_imbalance(uplink_bytes(ff, role, tx))
    names = list(ff.fabric.switch_tier) + list(ff.fabric.hosts)
    lid = busiest[1]
    run_info: dict[str, Any] = {
        "name": scenario.name,
        "engine": "l0_rail",
        "scheme": scenario.lb.scheme,
        "recovery": scenario.transport.recovery,
        "cc": scenario.transport.cc,
        "topology": scenario.topology.kind,
        "hosts": ff.fabric.n_hosts,
        "seed": scenario.run.seed,
        "stop_reason": "done",
        "completed": True,
        "sim_time_ps": end_ps,
        "events": len(group_names),
        "fluid.route_model": route_model(scenario.lb.scheme),
        "fluid.solves": 0,
        "fluid.reused": 0,
        "fluid.quantum_ps": getattr(scenario.run, "fluid_quantum", 0),
        "l0.binding": str(role[lid]) if lid >= 0 else None,
        "l0.binding_link": f"{names[ff.link_src[lid]]}->{names[ff.link_dst[lid]]}" if lid >= 0 else None,
        **provenance,
    }
    summary: dict[str, Any] = {
        **run_info,
        **flow_statistics(src, dst, size, start, finish, fct, slowdown, throughput),
        "uplink_imbalance_max": imbalance_max,
        "uplink_imbalance_mean": imbalance_mean,
    }
    for key in UNKNOWN_SUMMARY_KEYS:
        summary[key] = None
    summary.update(bucket_statistics(bucket, slowdown))
    for g in group_rows:
        summary[f"cct_ps[{g['group']}]"] = int(g["cct_ps"])
        if not np.isnan(g["busbw_bps"]):
            summary[f"busbw_bps[{g['group']}]"] = float(g["busbw_bps"])
    summary["wall_s"] = round(time.perf_counter() - wall0, 3)

    def tables() -> tuple[ColumnTable, ColumnTable, ColumnTable]:
        names_arr = np.array(group_names, dtype=object)
        bucket_names = np.array([name for name, _ in SIZE_BUCKETS], dtype=object)
        data: dict[str, Any] = {
            "flow_id": np.arange(n, dtype=np.int64),
            "src": src.astype(np.int64),
            "dst": dst.astype(np.int64),
            "group": names_arr[group],
            "size_bytes": size,
            "start_ps": start,
            "finish_ps": finish,
            "fct_ps": fct,
            "ideal_fct_ps": ideal.astype(np.int64),
            "fct_bound_ps": bound.astype(np.int64),
            "slowdown": slowdown,
            "throughput_bps": throughput,
            "completed": np.ones(n, dtype=bool),
            "censored": np.zeros(n, dtype=bool),
            "size_bucket": bucket_names[bucket],
        }
        for column in UNKNOWN_FLOW_COLUMNS:
            data[column] = np.full(n, np.nan)
        flows = ColumnTable({c: data[c] for c in FLOW_COLUMNS})
        return flows, ColumnTable(link_columns(ff, out)), ColumnTable.from_records(group_rows, GROUP_COLUMNS)

    return Result(scenario=scenario.to_dict(), summary=summary, tables=tables)


def flow_statistics(
    src: np.ndarray,
    dst: np.ndarray,
    size: np.ndarray,
    start: np.ndarray,
    finish: np.ndarray,
    fct: np.ndarray,
    slowdown: np.ndarray,
    throughput: np.ndarray,
) -> dict[str, Any]:
    """:func:`spraylab.metrics.collect.flow_statistics` of a table whose flows all completed."""
    del src
    fct_f = fct.astype(float)
    slow = slowdown[~np.isnan(slowdown)]
    n = len(fct)
    goodput = None
    if n:
        # per receiver, in receiver order, as the row-wise version sums its integer bytes
        g = int(dst.max()) + 1
        nbytes = np.bincount(dst, weights=size.astype(float), minlength=g)
        first = np.full(g, np.iinfo(np.int64).max)
        last = np.full(g, np.iinfo(np.int64).min)
        np.minimum.at(first, dst, start)
        np.maximum.at(last, dst, finish)
        has = np.bincount(dst, minlength=g) > 0
        busy = has & (last > first)
        rates = [
            int(b) * PS_PER_BYTE_AT_1BPS / (e - s)
            for b, s, e in zip(nbytes[busy], first[busy].tolist(), last[busy].tolist())
        ]
        goodput = _mean_skipna(rates) if rates else None
    return {
        "flows": n,
        "flows_completed": n,
        "flows_censored": 0,
        "fct_mean_ps": float(fct_f.mean()) if n else None,
        "fct_p50_ps": percentile(fct_f, 50),
        "fct_p99_ps": percentile(fct_f, 99),
        "fct_max_ps": float(fct_f.max()) if n else None,
        "slowdown_mean": float(slow.mean()) if len(slow) else None,
        "slowdown_p50": percentile(slow, 50),
        "slowdown_p99": percentile(slow, 99),
        "completion_ps": int(finish.max() - start.min()) if n else None,
        "goodput_bps": goodput,
        "mean_flow_throughput_bps": _mean_skipna(throughput) if n else None,
    }


def bucket_statistics(bucket: np.ndarray, slowdown: np.ndarray) -> dict[str, Any]:
    """The size-bucket half of :func:`spraylab.metrics.collect.bucket_and_group_statistics`."""
    out: dict[str, Any] = {}
    names = [name for name, _ in SIZE_BUCKETS]
    present = sorted((names[b], b) for b in np.unique(bucket))
    for name, b in present:
        values = slowdown[bucket == b]
        out[f"slowdown_mean[{name}]"] = _mean_skipna(values)
        out[f"slowdown_p99[{name}]"] = percentile(values, 99)
    return out


def _group_rows(
    group: np.ndarray,
    start: np.ndarray,
    fct: np.ndarray,
    group_names: list[str],
    groups: dict[str, GroupInfo],
) -> list[dict[str, Any]]:
    """:func:`spraylab.metrics.collect.group_rows` of a table whose flows all completed."""
    rows = []
    for name, info in groups.items():
        if name not in group_names:
            continue
        part = group == group_names.index(name)
        if not part.any():
            continue
        first = int(start[part].min())
        cct = int((start[part] + fct[part]).max()) - first
        row: dict[str, Any] = {
            "group": name,
            "kind": info.kind,
            "flows": int(part.sum()),
            "ranks": info.ranks,
            "size_bytes": info.size_bytes,
            "completed": True,
            "censored": False,
            "cct_ps": cct,
            "algbw_bps": float("nan"),
            "busbw_bps": float("nan"),
        }
        if cct > 0 and info.kind in COLLECTIVE_KINDS:
            row["algbw_bps"] = algbw_bps(info.size_bytes, cct)
            row["busbw_bps"] = busbw_bps(info.kind, info.size_bytes, info.ranks, cct)
        rows.append(row)
    return rows
