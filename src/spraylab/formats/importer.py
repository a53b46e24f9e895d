"""``spraylab import``: a scenario file that runs another simulator's input as it is.

The scenario refers to the files (``[topology] kind = "imported"``, ``[workload] kind =
"flows"``) by paths relative to the scenario file, so the three can move together; building it
here parses them all, so a file spraylab cannot read exactly is refused now, with its line and
field, not at run time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from spraylab.config import Scenario, ScenarioError, apply_override, validate
from spraylab.files import relative_to


def _relative(path: Path, out_dir: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), out_dir.resolve())
    except ValueError:  # another drive (Windows)
        return str(path.resolve())


def import_scenario(
    tool: str,
    topology: Path | None,
    flows: Path | None,
    out: Path | None,
    base: dict[str, Any] | None = None,
    ignore: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], Scenario, list[str]]:
    """The scenario dict to write (paths relative to ``out``'s directory), the validated
    scenario, and notes on how the input maps onto spraylab."""
    out_dir = (out.parent if out is not None else Path.cwd()).resolve()
    data: dict[str, Any] = {k: v for k, v in (base or {}).items()}
    notes: list[str] = []
    if topology is not None:
        section: dict[str, Any] = {"kind": "imported", "format": tool, "file": _relative(topology, out_dir)}
        if ignore:
            section["ignore"] = sorted(ignore)
        data["topology"] = section
    elif "topology" not in data:
        raise ScenarioError(
            [
                f"import {tool}: no topology; give the {tool} topology file or --base SCENARIO whose topology to use"
            ]
        )
    if flows is not None:
        data["workload"] = {"kind": "flows", "format": tool, "file": _relative(flows, out_dir)}
    elif "workload" not in data:
        raise ScenarioError([f"import {tool}: no flows; give the {tool} flow file or --base SCENARIO"])
    data.setdefault("output", {}).setdefault("name", f"{tool}-{(flows or topology or Path('import')).stem}")
    for key, value in (overrides or {}).items():
        apply_override(data, key, value)
    with relative_to(out_dir):
        scenario = validate(data)
    if tool == "htsim" and flows is not None:
        from spraylab.formats.htsim import parse_cm

        cm = parse_cm(flows.read_text(encoding="utf-8"), flows.name)
        if "send_done" in cm.signals:
            notes.append(
                "send_done_trigger: spraylab starts dependent flows when the flow is received (its last byte "
                "at the receiver), which is up to one ACK's trip earlier than htsim's sender-side completion"
            )
    if tool == "ns3" and topology is not None:
        host_of = scenario.topology.host_of or {}
        if any(node != host for node, host in host_of.items()):
            notes.append(
                "ns-3 node ids are not host ids here: spraylab numbers the hosts 0.. in node-id order "
                f"(node {min(host_of)} is host 0); exports write node ids back"
            )
        notes.append("pg and dport of flow.txt are not modelled (spraylab has one data class)")
    return data, scenario, notes


def read_base(path: str) -> dict[str, Any]:
    """A scenario file's sections, with the files it names made absolute (they are relative to it)."""
    from spraylab.config import read_toml
    from spraylab.files import absolutize

    return absolutize(read_toml(path, "scenario"), Path(path).resolve().parent)
