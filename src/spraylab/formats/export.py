"""Per-flow results in other simulators' layouts, to compare them with the same tools.

* ``fct``: the HPCC/ns-3 ``fct.txt`` layout with spraylab's columns, one completed flow per
  line: ``src dst size start_ns fct_ns standalone_fct_ns``. ``standalone_fct_ns`` is the
  flow's FCT on an idle fabric (spraylab's ``ideal_fct_ps``: store-and-forward of the first
  packet, the rest at the bottleneck rate), which HPCC's standalone FCT approximates with
  base RTT + size / rate. Times are exact: picoseconds written as nanoseconds with up to three
  decimals. A run imported from ns-3 writes ns-3 node ids (the topology file's numbering).
* ``htsim``: one line per completed flow, ``Flow <name> flowId <id> size <bytes> start <us>
  finished at <us> fct <us>``, in microseconds as htsim prints them, with the flow ids of the
  connection matrix when the run's flows came from one.

Flows that did not finish are left out, as both simulators do; :func:`export` says how many."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

FCT_COLUMNS = ("src", "dst", "size", "start_ns", "fct_ns", "standalone_fct_ns")


def ps_as(ps: int, per: int) -> str:
    """``ps`` in a unit of ``per`` picoseconds, exactly (no float rounding, no trailing zeros)."""
    whole, rest = divmod(int(ps), per)
    if not rest:
        return str(whole)
    digits = len(str(per)) - 1
    return f"{whole}.{rest:0{digits}d}".rstrip("0")


@dataclass
class Exported:
    text: str
    left_out: int  # unfinished flows
    ids: str  # what the node / flow ids are


def _names(scenario: dict[str, Any]) -> tuple[dict[int, int] | None, dict[int, int] | None, str]:
    """(host id -> ns-3 node id, spraylab flow id -> file flow id, note) from a run's scenario."""
    from spraylab.config import ScenarioError, validate

    topo = scenario.get("topology", {})
    workloads = scenario.get("workload", [])
    if topo.get("kind") != "imported" and not any(w.get("kind") == "flows" for w in workloads):
        return None, None, "host ids"
    try:
        sc = validate(scenario)
    except ScenarioError as exc:
        return None, None, f"host ids (the input files could not be read again: {exc.lines[0]})"
    node_of = None
    host_of = getattr(sc.topology, "host_of", None)
    if host_of:
        node_of = {h: n for n, h in host_of.items()}
    flow_name = None
    if len(sc.workload) == 1 and sc.workload[0].kind == "flows":
        flow_name = {i: row.flow_id for i, row in enumerate(sc.workload[0].flow_rows)}
    note = "ns-3 node ids" if node_of else "host ids"
    return node_of, flow_name, note + (", the flow file's flow ids" if flow_name else "")


def export(flows: pd.DataFrame, scenario: dict[str, Any], layout: str) -> Exported:
    done = flows[flows["completed"]].sort_values(["finish_ps", "flow_id"], kind="stable")
    node_of, flow_name, note = _names(scenario)
    nodes = node_of or {}
    lines = []
    for f in done.itertuples(index=False):
        src, dst = nodes.get(int(f.src), int(f.src)), nodes.get(int(f.dst), int(f.dst))
        if layout == "fct":
            lines.append(
                f"{src} {dst} {int(f.size_bytes)} {ps_as(f.start_ps, 1000)} {ps_as(f.fct_ps, 1000)} "
                f"{ps_as(f.ideal_fct_ps, 1000)}"
            )
        else:
            fid = (flow_name or {}).get(int(f.flow_id), int(f.flow_id))
            lines.append(
                f"Flow flow_{src}_{dst} flowId {fid} size {int(f.size_bytes)} start {ps_as(f.start_ps, 10**6)} "
                f"finished at {ps_as(f.finish_ps, 10**6)} fct {ps_as(f.fct_ps, 10**6)}"
            )
    text = "\n".join(lines) + ("\n" if lines else "")
    return Exported(text, len(flows) - len(done), note)
