"""Per-flow results in other simulators' layouts, read by their own analysis tools.

* ``fct``: HPCC's ``fct.txt``, one line per flow as ``scratch/third.cc`` prints it
  (``%08x %08x %u %u %lu %lu %lu %lu``)::

      sip dip sport dport size start_ns fct_ns standalone_fct_ns

  ``sip``/``dip`` are the hosts' IPv4 addresses as HPCC numbers them (node n is
  0x0b000001 + (n / 256) x 0x10000 + (n % 256) x 0x100, in hex), ``sport`` counts from 10000 per
  source-destination pair in start order (HPCC's port numbers), ``dport`` is flow.txt's for a
  run imported from ns-3 and 100 otherwise (HPCC's example flows use 100, and its
  ``fct_analysis.py`` keeps the flows with ``dport == 100``). As in HPCC the flow completes when
  the sender has its last ACK (the flows table's ``acked_ps``), so ``fct_ns`` is that minus the
  start; times are whole nanoseconds (ns-3's time step), start and end rounded to the nearest
  one, so ``start_ns + fct_ns`` is the end. ``standalone_fct_ns`` is HPCC's formula
  (:mod:`spraylab.formats.standalone`). A run imported from ns-3 writes ns-3 node ids.
* ``htsim``: one line per flow, ``Flow <name> flowId <id> size <bytes> start <us> finished at
  <us> fct <us>``, in microseconds (exact decimals) with the flow ids of the connection matrix
  when the run's flows came from one. htsim prints ``finished at`` when the sender has every
  byte acknowledged, so the line does too (``acked_ps``); ``fct`` is that minus the start.

Flows whose sender never had every byte acknowledged are left out, as both simulators print
nothing for them; :func:`export` says how many."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from spraylab.units import PS_PER_NS, PS_PER_US

FCT_COLUMNS = ("sip", "dip", "sport", "dport", "size", "start_ns", "fct_ns", "standalone_fct_ns")
DEFAULT_DPORT = 100  # HPCC's example flows' dport, which fct_analysis.py selects
FIRST_SPORT = 10000  # HPCC's first port number of each host pair


class ExportError(ValueError):
    """The run cannot be written in the layout (one line, for the command line)."""


def hpcc_ip(node: int) -> int:
    """The IPv4 address HPCC's ns-3 gives node ``node`` (``node_id_to_ip``)."""
    return 0x0B000001 + (node // 256) * 0x00010000 + (node % 256) * 0x00000100


def ns_round(ps: int) -> int:
    return (int(ps) + PS_PER_NS // 2) // PS_PER_NS


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
    left_out: int  # flows whose sender never had every byte acknowledged
    ids: str  # what the node / flow ids are


@dataclass
class Naming:
    node_of: dict[int, int] | None  # host id -> ns-3 node id
    flow_name: dict[int, int] | None  # spraylab flow id -> file flow id
    dports: dict[int, int] | None  # spraylab flow id -> flow.txt dport
    note: str
    scenario: Any = None  # the validated scenario, None if it could not be read again


def _names(scenario: dict[str, Any]) -> Naming:
    from spraylab.config import ScenarioError, validate

    try:
        sc = validate(scenario)
    except ScenarioError as exc:
        return Naming(None, None, None, f"host ids (the input files could not be read again: {exc.lines[0]})")
    topo = scenario.get("topology", {})
    workloads = scenario.get("workload", [])
    if topo.get("kind") != "imported" and not any(w.get("kind") == "flows" for w in workloads):
        return Naming(None, None, None, "host ids", sc)
    node_of = None
    host_of = getattr(sc.topology, "host_of", None)
    if host_of:
        node_of = {h: n for n, h in host_of.items()}
    flow_name = dports = None
    if len(sc.workload) == 1 and sc.workload[0].kind == "flows":
        flow_name = {i: row.flow_id for i, row in enumerate(sc.workload[0].flow_rows)}
        w = sc.workload[0]
        if w.file and w.format == "ns3":
            from spraylab.formats.ns3 import read_flows

            text = Path(w.file).read_text(encoding="utf-8")
            dports = dict(enumerate(read_flows(text, Path(w.file).name).dports))
    note = "ns-3 node ids" if node_of else "host ids"
    return Naming(node_of, flow_name, dports, note + (", the flow file's flow ids" if flow_name else ""), sc)


def _hpcc_lines(flows: pd.DataFrame, done: pd.DataFrame, naming: Naming) -> list[str]:
    from spraylab.formats.standalone import paths_to, standalone_fct_ns

    sc = naming.scenario
    if sc is None:
        raise ExportError(
            f"--format fct: needs the run's fabric for standalone_fct, but {naming.note.split('(', 1)[-1].rstrip(')')}"
        )
    fabric = sc.topology.build_fabric()
    mtu = sc.transport.mtu
    nodes = naming.node_of or {}
    # HPCC numbers each pair's flows from port 10000 as they start (flow.txt order)
    sport: dict[int, int] = {}
    pair_count: dict[tuple[int, int], int] = {}
    started = flows[flows["start_ps"] >= 0]  # a flow that never started never took a port
    for f in started.sort_values(["start_ps", "flow_id"], kind="stable").itertuples(index=False):
        pair = (int(f.src), int(f.dst))
        sport[int(f.flow_id)] = FIRST_SPORT + pair_count.get(pair, 0)
        pair_count[pair] = pair_count.get(pair, 0) + 1
    paths: dict[int, dict] = {}
    lines = []
    for f in done.itertuples(index=False):
        src, dst, fid = int(f.src), int(f.dst), int(f.flow_id)
        path = paths.setdefault(dst, paths_to(fabric, dst))[fabric.hosts[src]]
        start_ns = ns_round(f.start_ps)
        dport = (naming.dports or {}).get(fid, DEFAULT_DPORT)
        lines.append(
            f"{hpcc_ip(nodes.get(src, src)):08x} {hpcc_ip(nodes.get(dst, dst)):08x} {sport[fid]} {dport} "
            f"{int(f.size_bytes)} {start_ns} {ns_round(f.acked_ps) - start_ns} "
            f"{standalone_fct_ns(path, int(f.size_bytes), mtu)}"
        )
    return lines


def export(flows: pd.DataFrame, scenario: dict[str, Any], layout: str) -> Exported:
    """The run's flows in ``layout`` (fct or htsim), finished as the peer defines it: when the
    sender had every byte acknowledged."""
    if len(flows) and flows["acked_ps"].isna().all():
        # fluid / l0 engines model no ACKs; the peers' completion is the sender's last ACK
        raise ExportError(
            f"--format {layout}: the run has no acked_ps (its engine models no ACKs); HPCC and htsim "
            "complete a flow at the sender's last ACK: export a run of run.engine = 'packet'"
        )
    done = flows[flows["acked_ps"] >= 0].sort_values(["acked_ps", "flow_id"], kind="stable")
    naming = _names(scenario)
    if layout == "fct":
        lines = _hpcc_lines(flows, done, naming)
    else:
        nodes = naming.node_of or {}
        lines = []
        for f in done.itertuples(index=False):
            src, dst = nodes.get(int(f.src), int(f.src)), nodes.get(int(f.dst), int(f.dst))
            fid = (naming.flow_name or {}).get(int(f.flow_id), int(f.flow_id))
            lines.append(
                f"Flow flow_{src}_{dst} flowId {fid} size {int(f.size_bytes)} start {ps_as(f.start_ps, PS_PER_US)} "
                f"finished at {ps_as(f.acked_ps, PS_PER_US)} fct {ps_as(f.acked_ps - f.start_ps, PS_PER_US)}"
            )
    text = "\n".join(lines) + ("\n" if lines else "")
    return Exported(text, len(flows) - len(done), naming.note)
