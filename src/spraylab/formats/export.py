"""Per-flow results in other simulators' layouts, read by their own analysis tools: one module
of :mod:`spraylab.formats.exports` per layout, registered in :data:`EXPORT_LAYOUTS` (``fct``:
HPCC's ``fct.txt``; ``htsim``: htsim's finish lines). A layout is a function
``(flows, done, naming) -> lines``; this module finds what every layout needs: the flows whose
sender had every byte acknowledged (as both peers define completion) and how the run's hosts and
flows are named in its input files.

Flows whose sender never had every byte acknowledged are left out, as both simulators print
nothing for them; :func:`export` says how many."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from spraylab.registry import Registry
from spraylab.units import PS_PER_NS

# layout name -> (flows, done, naming) -> lines: one module of spraylab.formats.exports each
EXPORT_LAYOUTS: Registry[Callable[[pd.DataFrame, pd.DataFrame, Naming], list[str]]] = Registry(
    "--format", "spraylab.formats.exports", what="layout"
)


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
    from spraylab.model.scenario import ScenarioError, validate

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


def export(flows: pd.DataFrame, scenario: dict[str, Any], layout: str) -> Exported:
    """The run's flows in ``layout`` (a name of :data:`EXPORT_LAYOUTS`), finished as the peer
    defines it: when the sender had every byte acknowledged."""
    if len(flows) and flows["acked_ps"].isna().all():
        # fluid / l0 engines model no ACKs; the peers' completion is the sender's last ACK
        raise ExportError(
            f"--format {layout}: the run has no acked_ps (its engine models no ACKs); HPCC and htsim "
            "complete a flow at the sender's last ACK: export a run of run.engine = 'packet'"
        )
    done = flows[flows["acked_ps"] >= 0].sort_values(["acked_ps", "flow_id"], kind="stable")
    naming = _names(scenario)
    lines = EXPORT_LAYOUTS.get(layout)(flows, done, naming)
    text = "\n".join(lines) + ("\n" if lines else "")
    return Exported(text, len(flows) - len(done), naming.note)


def export_result(result_dir: str | Path, layout: str) -> Exported:
    """A saved run's flows (``spraylab run --out DIR``) in ``layout``; a directory that holds no
    complete result raises :class:`ExportError`."""
    from spraylab.metrics.result import Result

    try:
        loaded = Result.load(result_dir)
    except FileNotFoundError as exc:
        raise ExportError(str(exc)) from None
    return export(loaded.flows, loaded.scenario, layout)
