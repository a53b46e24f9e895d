"""Read the counters of a finished (or stopped) network into a :class:`Result`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spraylab.metrics.result import Result, percentile, size_bucket
from spraylab.net.host import Host
from spraylab.net.packet import CONTROL_BYTES, HEADER_BYTES
from spraylab.net.port import Port
from spraylab.net.switch import Switch
from spraylab.transport.qp import NO_WINDOW
from spraylab.workload.collectives import algbw_bps, busbw_bps

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.workload.build import GroupInfo


def ideal_fct_ps(net: Network, src: int, dst: int, size_bytes: int, mtu: int) -> int:
    """FCT of the flow alone on the idle fabric: the first packet is stored and forwarded hop by
    hop along one equal-cost path, the rest stream behind it at the bottleneck rate."""
    n_packets = max(1, -(-size_bytes // mtu))
    wire_bytes = size_bytes + n_packets * HEADER_BYTES
    first = min(size_bytes, mtu) + HEADER_BYTES
    port: Port = net.hosts[src].route[dst].port
    total = 0.0
    slowest = 0.0
    for _ in range(64):
        total += port.delay_ps + first * port.ps_per_byte
        slowest = max(slowest, port.ps_per_byte)
        node = port.peer_owner
        if isinstance(node, Host):
            break
        cands = node.table[dst]
        if not cands:
            return 0
        port = cands[0]
    return int(total + (wire_bytes - first) * slowest)


def flow_table(net: Network, ideal_ps: list[int]) -> pd.DataFrame:
    rows: dict[str, list[Any]] = {
        name: []
        for name in (
            "flow_id", "src", "dst", "group", "size_bytes", "start_ps", "finish_ps", "fct_ps", "ideal_fct_ps",
            "slowdown", "throughput_bps", "completed", "acked_ps", "packets_sent", "retx_packets", "spurious_retx",
            "nacks", "cnps", "ooo_arrivals", "max_reorder", "psn_window", "discards", "timeouts", "size_bucket",
        )
    }  # fmt: skip
    for qp, ideal in zip(net.qps, ideal_ps):
        rx = qp.rx
        done = rx.finish_ps >= 0
        fct = rx.finish_ps - qp.start_ps if done else -1
        rows["flow_id"].append(qp.flow_id)
        rows["src"].append(qp.src)
        rows["dst"].append(qp.dst)
        rows["group"].append(qp.spec.group)
        rows["size_bytes"].append(qp.spec.size_bytes)
        rows["start_ps"].append(qp.start_ps)
        rows["finish_ps"].append(rx.finish_ps)
        rows["fct_ps"].append(fct)
        rows["ideal_fct_ps"].append(ideal)
        rows["slowdown"].append(max(1.0, fct / ideal) if done and ideal > 0 else float("nan"))
        rows["throughput_bps"].append(qp.spec.size_bytes * 8e12 / fct if done and fct > 0 else float("nan"))
        rows["completed"].append(done)
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
        rows["size_bucket"].append(size_bucket(qp.spec.size_bytes))
    return pd.DataFrame(rows)


def link_table(net: Network, duration_ps: int) -> pd.DataFrame:
    rows = []
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
        rows.append(
            {
                "link": port.name,
                "from": owner.name,
                "to": peer.name,
                "role": role,
                "tier": owner.tier if isinstance(owner, Switch) else -1,
                "rate_bps": port.rate_bps,
                "up": port.up,
                "tx_bytes": port.tx_bytes,
                "tx_packets": port.tx_packets,
                "utilization": port.tx_bytes / capacity_bytes if capacity_bytes else 0.0,
                "max_queue_bytes": port.max_queue_bytes,
                "drops": port.drops,
                "ecn_marks": port.ecn_marks,
                "pfc_pauses": port.pauses_received,
                "paused_ps": port.paused_ps,
            }
        )
    return pd.DataFrame(rows)


def uplink_imbalance(net: Network) -> tuple[float, float]:
    """Max and mean over switches with ≥2 uplinks of (max / mean bytes across its uplinks)."""
    ratios = []
    for switch in net.switches.values():
        sent = [p.tx_bytes for p in switch.uplinks]
        if len(sent) >= 2 and sum(sent) > 0:
            ratios.append(max(sent) / (sum(sent) / len(sent)))
    if not ratios:
        return 1.0, 1.0
    return max(ratios), sum(ratios) / len(ratios)


def group_table(flows: pd.DataFrame, groups: dict[str, GroupInfo]) -> pd.DataFrame:
    rows = []
    for name, info in groups.items():
        part = flows[flows["group"] == name]
        if part.empty:
            continue
        done = bool(part["completed"].all())
        start = int(part["start_ps"].min())
        cct = int(part["finish_ps"].max() - start) if done else -1
        row: dict[str, Any] = {
            "group": name,
            "kind": info.kind,
            "flows": len(part),
            "ranks": info.ranks,
            "size_bytes": info.size_bytes,
            "completed": done,
            "cct_ps": cct,
            "algbw_bps": float("nan"),
            "busbw_bps": float("nan"),
        }
        if done and cct > 0 and info.kind in ("allreduce", "allgather", "reducescatter", "alltoall"):
            row["algbw_bps"] = algbw_bps(info.size_bytes, cct)
            row["busbw_bps"] = busbw_bps(info.kind, info.size_bytes, info.ranks, cct)
        rows.append(row)
    return pd.DataFrame(rows)


def summarize(
    net: Network,
    flows: pd.DataFrame,
    links: pd.DataFrame,
    groups: pd.DataFrame,
    run_info: dict[str, Any],
) -> dict[str, Any]:
    done = flows[flows["completed"]]
    fct = done["fct_ps"].to_numpy(dtype=float)
    slow = done["slowdown"].to_numpy(dtype=float)
    sent = int(flows["packets_sent"].sum())
    imbalance_max, imbalance_mean = uplink_imbalance(net)
    summary: dict[str, Any] = {
        **run_info,
        "flows": len(flows),
        "flows_completed": len(done),
        "fct_mean_ps": float(fct.mean()) if len(fct) else None,
        "fct_p50_ps": percentile(fct, 50),
        "fct_p99_ps": percentile(fct, 99),
        "fct_max_ps": float(fct.max()) if len(fct) else None,
        "slowdown_mean": float(slow.mean()) if len(slow) else None,
        "slowdown_p50": percentile(slow, 50),
        "slowdown_p99": percentile(slow, 99),
        "completion_ps": int(done["finish_ps"].max() - flows["start_ps"].min()) if len(done) else None,
        "goodput_bps": _goodput(done),
        "mean_flow_throughput_bps": float(done["throughput_bps"].mean()) if len(done) else None,
        "packets_sent": sent,
        "retx_packets": int(flows["retx_packets"].sum()),
        "retx_ratio": float(flows["retx_packets"].sum() / sent) if sent else 0.0,
        "spurious_retx": int(flows["spurious_retx"].sum()),
        "spurious_retx_ratio": float(flows["spurious_retx"].sum() / sent) if sent else 0.0,
        "nacks": int(flows["nacks"].sum()),
        "cnps": int(flows["cnps"].sum()),
        "ooo_arrivals": int(flows["ooo_arrivals"].sum()),
        "max_reorder": int(flows["max_reorder"].max()) if len(flows) else 0,
        "discards": int(flows["discards"].sum()),
        "timeouts": int(flows["timeouts"].sum()),
        "drops": int(links["drops"].sum()),
        "ecn_marks": int(links["ecn_marks"].sum()),
        "pfc_pauses": int(links["pfc_pauses"].sum()),
        "max_queue_bytes": int(links["max_queue_bytes"].max()) if len(links) else 0,
        "uplink_imbalance_max": imbalance_max,
        "uplink_imbalance_mean": imbalance_mean,
        "packet_hops": int(links["tx_packets"].sum()),
        "control_bytes_per_packet": CONTROL_BYTES,
    }
    for bucket, part in done.groupby("size_bucket"):
        summary[f"slowdown_mean[{bucket}]"] = float(part["slowdown"].mean())
        summary[f"slowdown_p99[{bucket}]"] = percentile(part["slowdown"].to_numpy(dtype=float), 99)
    if not groups.empty:
        for _, g in groups.iterrows():
            summary[f"cct_ps[{g['group']}]"] = int(g["cct_ps"])
            if not np.isnan(g["busbw_bps"]):
                summary[f"busbw_bps[{g['group']}]"] = float(g["busbw_bps"])
    for key, value in net.lb.stats().items():
        summary[f"lb.{key}"] = value
    return summary


def _goodput(done: pd.DataFrame) -> float | None:
    """Delivered payload bits per second of the busiest receiver's active span, averaged over
    receivers: near line rate means receivers were kept busy."""
    if done.empty:
        return None
    spans = done.groupby("dst").agg(bytes=("size_bytes", "sum"), start=("start_ps", "min"), end=("finish_ps", "max"))
    spans = spans[spans["end"] > spans["start"]]
    if spans.empty:
        return None
    return float((spans["bytes"] * 8e12 / (spans["end"] - spans["start"])).mean())


def collect(net: Network, ideal_ps: list[int], groups: dict[str, GroupInfo], scenario: dict[str, Any], run_info: dict[str, Any]) -> Result:
    duration = max(1, net.sim.now)
    flows = flow_table(net, ideal_ps)
    links = link_table(net, duration)
    group_df = group_table(flows, groups)
    summary = summarize(net, flows, links, group_df, run_info)
    return Result(scenario=scenario, summary=summary, flows=flows, links=links, groups=group_df)
