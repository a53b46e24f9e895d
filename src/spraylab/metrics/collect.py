"""Read the counters of a finished (or stopped) network into a :class:`Result`.

The counters are read into plain rows at once and the summary is computed from them; the
DataFrames are built from the same rows only when a table is read (see
:class:`~spraylab.metrics.result.Result`). The summary's reductions are the ones pandas made
when it was computed from the tables (``_mean_skipna``), so its numbers are the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from spraylab.metrics.columns import ColumnTable
from spraylab.metrics.result import Result, percentile, size_bucket
from spraylab.net.drops import DROP_CAUSES, NETWORK_CAUSES
from spraylab.net.framing import (
    ACK_WIRE_BYTES,
    CNP_WIRE_BYTES,
    DATA_OVERHEAD_BYTES,
    NACK_WIRE_BYTES,
    data_wire_bytes,
)
from spraylab.net.host import Host
from spraylab.net.routes import trace_route
from spraylab.net.switch import Switch
from spraylab.transport.qp import NO_WINDOW
from spraylab.workload.collectives import algbw_bps, busbw_bps

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.workload.build import GroupInfo


def ideal_fct_ps(net: Network, src: int, dst: int, size_bytes: int, mtu: int) -> int:
    """FCT of the flow alone on the idle fabric: the first packet is stored and forwarded hop by
    hop along the representative route (``trace_route``), the rest stream behind it at the
    bottleneck rate. 0 if the destination is unreachable."""
    n_packets = max(1, -(-size_bytes // mtu))
    last = size_bytes - (n_packets - 1) * mtu
    wire_bytes = (n_packets - 1) * data_wire_bytes(mtu) + data_wire_bytes(last)
    first = data_wire_bytes(min(size_bytes, mtu))
    route = trace_route(net, src, dst)
    if route.end == "unreachable":
        return 0
    total = 0.0
    slowest = 0.0
    for hop in route.hops:
        port = hop.port
        total += port.delay_ps + first * port.ps_per_byte
        slowest = max(slowest, port.ps_per_byte)
    return int(total + (wire_bytes - first) * slowest)


FLOW_DROP_COLUMNS = tuple(f"drops_{name}" for name in DROP_CAUSES)
# Every cause: a drop inside a node is counted on the link the packet arrived over (sim_drop).
LINK_DROP_COLUMNS = FLOW_DROP_COLUMNS
FLOW_COLUMNS = (
    "flow_id", "src", "dst", "group", "size_bytes", "start_ps", "finish_ps", "fct_ps", "ideal_fct_ps",
    "fct_bound_ps", "slowdown", "throughput_bps", "completed", "censored", "acked_ps", "packets_sent", "retx_packets",
    "spurious_retx", "nacks", "cnps", "ooo_arrivals", "max_reorder", "psn_window", "discards", "timeouts",
    "drops", *FLOW_DROP_COLUMNS, "size_bucket",
)  # fmt: skip
# dtypes of the columns that hold no int (an empty table keeps them through Parquet)
_FLOW_DTYPES = {
    "group": "object",
    "slowdown": "float64",
    "throughput_bps": "float64",
    "completed": "bool",
    "censored": "bool",
}
_FLOW_DTYPES["size_bucket"] = "object"


def flow_table(rows: dict[str, list[Any]]) -> ColumnTable:
    """The flow table of :func:`flow_rows`' columns, every column not named in ``_FLOW_DTYPES``
    an int64."""
    return ColumnTable(rows, {c: _FLOW_DTYPES.get(c, "int64") for c in FLOW_COLUMNS})


def flow_rows(net: Network, ideal_ps: list[int], bound_ps: list[int]) -> dict[str, list[Any]]:
    """The flow table's columns. One row per flow. ``slowdown`` = FCT / ``fct_bound_ps`` (``spraylab.metrics.fct_bound``),
    a lower bound whatever the scheme: never below 1, and not clamped, so a bound that failed
    would show. ``ideal_fct_ps`` is the flow alone on the idle fabric along one path.

    A flow unfinished when the run ended is *censored*: its FCT is known only to be at least the
    run's end minus its start, and that lower bound is what ``fct_ps`` and ``slowdown`` hold
    (``censored`` = True, ``finish_ps`` = -1), so statistics never drop it."""
    end_ps = net.sim.now
    rows: dict[str, list[Any]] = {name: [] for name in FLOW_COLUMNS}
    for qp, ideal, bound in zip(net.qps, ideal_ps, bound_ps):
        rx = qp.rx
        done = rx.finish_ps >= 0
        fct = rx.finish_ps - qp.start_ps if done else max(0, end_ps - qp.start_ps)
        rows["flow_id"].append(qp.flow_id)
        rows["src"].append(qp.src)
        rows["dst"].append(qp.dst)
        rows["group"].append(qp.spec.group)
        rows["size_bytes"].append(qp.spec.size_bytes)
        rows["start_ps"].append(qp.start_ps)
        rows["finish_ps"].append(rx.finish_ps)
        rows["fct_ps"].append(fct)
        rows["ideal_fct_ps"].append(ideal)
        rows["fct_bound_ps"].append(bound)
        rows["slowdown"].append(fct / bound if bound > 0 else float("nan"))
        rows["throughput_bps"].append(qp.spec.size_bytes * 8e12 / fct if done and fct > 0 else float("nan"))
        rows["completed"].append(done)
        rows["censored"].append(not done)
        rows["acked_ps"].append(qp.acked_ps)
        rows["packets_sent"].append(qp.sent_packets)
        rows["retx_packets"].append(qp.retx_packets)
        rows["spurious_retx"].append(rx.spurious)
        rows["nacks"].append(rx.nacks_sent)
        rows["cnps"].append(rx.cnps_sent)
        rows["ooo_arrivals"].append(rx.ooo_arrivals)
        rows["max_reorder"].append(rx.max_reorder)
        # the sender's PSN window (DFS's reorder bound B); 0 = unbounded
        rows["psn_window"].append(qp.psn_window if qp.psn_window < NO_WINDOW else 0)
        rows["discards"].append(rx.discards)
        rows["timeouts"].append(qp.timeouts)
        by_cause = qp.drops_by_cause
        rows["drops"].append(sum(by_cause))
        for column, count in zip(FLOW_DROP_COLUMNS, by_cause):
            rows[column].append(count)
        rows["size_bucket"].append(size_bucket(qp.spec.size_bytes))
    return rows


LINK_COLUMNS = (
    "link", "from", "to", "role", "tier", "rate_bps", "up", "tx_bytes", "tx_packets", "utilization",
    "max_queue_bytes", "drops", *LINK_DROP_COLUMNS, "ecn_marks", "pfc_pauses", "paused_ps",
)  # fmt: skip


def link_columns(net: Network, duration_ps: int) -> dict[str, list[Any]]:
    """One row per port (directed link), as columns."""
    columns: dict[str, list[Any]] = {name: [] for name in LINK_COLUMNS}
    drop_columns = [columns[name] for name in LINK_DROP_COLUMNS]
    for port in net.ports:
        owner, peer = port.owner, port.peer_owner
        if isinstance(owner, Host):
            role = "host_up"
        elif isinstance(peer, Host):
            role = "host_down"
        elif port.is_uplink:
            role = "uplink"
        else:
            role = "downlink"
        capacity_bytes = port.rate_bps * duration_ps / 8e12 if duration_ps > 0 else 0
        columns["link"].append(port.name)
        columns["from"].append(owner.name)
        columns["to"].append(peer.name)
        columns["role"].append(role)
        columns["tier"].append(owner.tier if isinstance(owner, Switch) else -1)
        columns["rate_bps"].append(port.rate_bps)
        columns["up"].append(port.up)
        columns["tx_bytes"].append(port.tx_bytes)
        columns["tx_packets"].append(port.tx_packets)
        columns["utilization"].append(port.tx_bytes / capacity_bytes if capacity_bytes else 0.0)
        columns["max_queue_bytes"].append(port.max_queue_bytes)
        columns["drops"].append(port.drops)
        for column, count in zip(drop_columns, port.drops_by_cause):
            column.append(count)
        columns["ecn_marks"].append(port.ecn_marks)
        columns["pfc_pauses"].append(port.pauses_received)
        columns["paused_ps"].append(port.paused_ps)
    return columns


GROUP_COLUMNS = (
    "group", "kind", "flows", "ranks", "size_bytes", "completed", "censored", "cct_ps", "algbw_bps", "busbw_bps",
)  # fmt: skip


def group_table(rows: list[dict[str, Any]]) -> ColumnTable:
    # the columns are named even when no group ran, so an empty table loads back the same
    return ColumnTable.from_records(rows, GROUP_COLUMNS)


def group_rows(flows: dict[str, list[Any]], groups: dict[str, GroupInfo]) -> list[dict[str, Any]]:
    """One row per group that has flows, from the flow table's columns."""
    members: dict[str, list[int]] = {}
    for i, name in enumerate(flows["group"]):
        members.setdefault(name, []).append(i)
    completed, starts, fcts = flows["completed"], flows["start_ps"], flows["fct_ps"]
    rows = []
    for name, info in groups.items():
        part = members.get(name)
        if not part:
            continue
        done = all(completed[i] for i in part)
        start = min(starts[i] for i in part)
        # start + fct is a flow's finish, or for a censored flow the run's end: an unfinished
        # group's CCT is censored too (at least the run's end minus its start)
        cct = max(starts[i] + fcts[i] for i in part) - start
        row: dict[str, Any] = {
            "group": name,
            "kind": info.kind,
            "flows": len(part),
            "ranks": info.ranks,
            "size_bytes": info.size_bytes,
            "completed": done,
            "censored": not done,
            "cct_ps": cct,
            "algbw_bps": float("nan"),
            "busbw_bps": float("nan"),
        }
        if done and cct > 0 and info.kind in ("allreduce", "allgather", "reducescatter", "alltoall"):
            row["algbw_bps"] = algbw_bps(info.size_bytes, cct)
            row["busbw_bps"] = busbw_bps(info.kind, info.size_bytes, info.ranks, cct)
        rows.append(row)
    return rows


def _mean_skipna(values: list[float] | np.ndarray) -> float:
    """pandas' ``Series.mean()`` of float64 values (``nanops.nanmean``, no bottleneck): NaNs
    become 0 in the (pairwise) sum and leave the count; NaN when nothing is left."""
    arr = np.array(values, dtype=float)
    mask = np.isnan(arr)
    count = len(arr) - int(mask.sum())
    if count == 0:
        return float("nan")
    if count < len(arr):
        arr[mask] = 0.0
    return float(arr.sum() / np.float64(count))


def packet_summary(net: Network, flows: dict[str, list[Any]], links: dict[str, list[Any]]) -> dict[str, Any]:
    """The summary keys only the packet engine knows, from the tables' columns (:func:`flow_rows`,
    :func:`link_columns`) and the network's counters."""
    from spraylab.metrics.build import uplink_imbalance

    n_flows = len(flows["flow_id"])
    sent = sum(flows["packets_sent"])
    retx = sum(flows["retx_packets"])
    spurious = sum(flows["spurious_retx"])
    imbalance_max, imbalance_mean = uplink_imbalance(
        [p.tx_bytes for p in switch.uplinks] for switch in net.switches.values()
    )
    summary: dict[str, Any] = {
        "packets_sent": sent,
        "retx_packets": retx,
        "retx_ratio": retx / sent if sent else 0.0,
        "spurious_retx": spurious,
        "spurious_retx_ratio": spurious / sent if sent else 0.0,
        "nacks": sum(flows["nacks"]),
        "cnps": sum(flows["cnps"]),
        "ooo_arrivals": sum(flows["ooo_arrivals"]),
        "max_reorder": max(flows["max_reorder"]) if n_flows else 0,
        "discards": sum(flows["discards"]),
        "timeouts": sum(flows["timeouts"]),
        # every drop, by cause (spraylab.net.drops); "drops": those before the receiving RNIC
        "drops_total": sum(net.drops_by_cause),
        **{f"drops_{name}": count for name, count in zip(DROP_CAUSES, net.drops_by_cause)},
        "drops": sum(net.drops_by_cause[c] for c in NETWORK_CAUSES),
        "ecn_marks": sum(links["ecn_marks"]),
        "pfc_pauses": sum(links["pfc_pauses"]),
        "max_queue_bytes": max(links["max_queue_bytes"], default=0),
        "uplink_imbalance_max": imbalance_max,
        "uplink_imbalance_mean": imbalance_mean,
        "packet_hops": sum(links["tx_packets"]),
        "acks": sum(qp.rx.acks_sent for qp in net.qps),  # what ACK coalescing saves
        # Link bytes per packet type (spraylab.net.framing), to re-derive wire loads.
        "data_overhead_bytes": DATA_OVERHEAD_BYTES,
        "ack_wire_bytes": ACK_WIRE_BYTES,
        "nack_wire_bytes": NACK_WIRE_BYTES,
        "cnp_wire_bytes": CNP_WIRE_BYTES,
    }
    if net.switch_params.trimming:
        # not a drop: the header went on and was NACKed (spraylab.net.conservation.check_trimmed)
        summary["trimmed_packets"] = net.trimmed_packets
    return summary


def flow_statistics(flows: dict[str, list[Any]], end_ps: int) -> dict[str, Any]:
    """Completion, FCT and slowdown statistics from a flows table's columns (both engines). They
    cover every flow; a censored flow counts with its lower bound."""
    done = [i for i, c in enumerate(flows["completed"]) if c]
    fct = np.array(flows["fct_ps"], dtype=float)
    slow = np.array(flows["slowdown"], dtype=float)
    slow = slow[~np.isnan(slow)]
    censored = sum(flows["censored"])
    throughput = flows["throughput_bps"]
    return {
        "flows": len(flows["flow_id"]),
        "flows_completed": len(done),
        "flows_censored": censored,
        "fct_mean_ps": float(fct.mean()) if len(fct) else None,
        "fct_p50_ps": percentile(fct, 50),
        "fct_p99_ps": percentile(fct, 99),
        "fct_max_ps": float(fct.max()) if len(fct) else None,
        "slowdown_mean": float(slow.mean()) if len(slow) else None,
        "slowdown_p50": percentile(slow, 50),
        "slowdown_p99": percentile(slow, 99),
        "completion_ps": _completion_from_rows(flows, done, end_ps, censored),
        "goodput_bps": _goodput_from_rows(flows, done),
        "mean_flow_throughput_bps": _mean_skipna([throughput[i] for i in done]) if done else None,
    }


def bucket_and_group_statistics(flows: dict[str, list[Any]], groups: list[dict[str, Any]]) -> dict[str, Any]:
    """Slowdown per flow-size bucket, and each group's CCT and bus bandwidth (both engines)."""
    out: dict[str, Any] = {}
    by_bucket: dict[str, list[float]] = {}
    for bucket, value in zip(flows["size_bucket"], flows["slowdown"]):
        by_bucket.setdefault(bucket, []).append(value)
    for bucket in sorted(by_bucket):  # groupby's order
        values = by_bucket[bucket]
        out[f"slowdown_mean[{bucket}]"] = _mean_skipna(values)
        out[f"slowdown_p99[{bucket}]"] = percentile(np.array(values, dtype=float), 99)
    for g in groups:
        out[f"cct_ps[{g['group']}]"] = int(g["cct_ps"])
        if not np.isnan(g["busbw_bps"]):
            out[f"busbw_bps[{g['group']}]"] = float(g["busbw_bps"])
    return out


def _completion_from_rows(
    flows: dict[str, list[Any]], done: list[int], end_ps: int, censored: int
) -> int | None:
    """Last finish minus first start (``done``: the completed rows); with censored flows, a lower
    bound: the run's end minus first start."""
    starts = flows["start_ps"]
    if not starts:
        return None
    if censored:
        return end_ps - min(starts)
    finish = flows["finish_ps"]
    return max(finish[i] for i in done) - min(starts)


def _goodput_from_rows(flows: dict[str, list[Any]], done: list[int]) -> float | None:
    """Delivered payload bits per second of the busiest receiver's active span, averaged over
    receivers (``done``: the completed rows): near line rate means receivers were kept busy."""
    if not done:
        return None
    spans: dict[int, list[int]] = {}  # dst -> [bytes, first start, last finish]
    for i in done:
        size, start, end = flows["size_bytes"][i], flows["start_ps"][i], flows["finish_ps"][i]
        span = spans.get(flows["dst"][i])
        if span is None:
            spans[flows["dst"][i]] = [size, start, end]
        else:
            span[0] += size
            span[1] = min(span[1], start)
            span[2] = max(span[2], end)
    rates = [b * 8e12 / (e - s) for b, s, e in (spans[d] for d in sorted(spans)) if e > s]
    if not rates:
        return None
    return _mean_skipna(rates)


def collect(
    net: Network,
    ideal_ps: list[int],
    groups: dict[str, GroupInfo],
    scenario: dict[str, Any],
    run_info: dict[str, Any],
    bound_ps: list[int],
) -> Result:
    from spraylab.metrics.build import build_result

    duration = max(1, net.sim.now)
    flows = flow_rows(net, ideal_ps, bound_ps)
    links = link_columns(net, duration)
    # compact now, while the network is alive: the rows' objects are freed with it instead of
    # outliving it among its objects in the allocator's arenas (docs/performance.md, Memory)
    collected = flow_table(flows).compact(), ColumnTable(links if net.ports else {}).compact()
    lb_stats = {f"lb.{key}": value for key, value in net.lb.stats().items()}
    return build_result(
        scenario,
        run_info,
        flows,
        net.sim.now,
        groups,
        packet_summary(net, flows, links),
        lambda: collected,
        lb_stats,
    )
