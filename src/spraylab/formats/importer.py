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


def _last_start_ps(tool: str, flows: Path) -> int | None:
    """The latest start time of the flow file, or None if it cannot be read (validation then
    reports why, naming the key)."""
    from spraylab.formats.rows import FormatError
    from spraylab.workload.kinds.flows import parse_file

    try:
        rows, _nodes = parse_file(flows, flows.read_bytes(), "htsim" if tool == "htsim" else "ns3")
    except (OSError, FormatError):
        return None
    return max((r.start_ps for r in rows), default=0)


def _time_text(ps: int) -> str | int:
    from spraylab.units import format_time, parse_time_ps

    text = format_time(ps)
    return text if parse_time_ps(text) == ps else ps


def import_scenario(
    tool: str,
    topology: Path | None,
    flows: Path | None,
    out: Path | None,
    base: dict[str, Any] | None = None,
    ignore: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
    config: Path | None = None,
) -> tuple[dict[str, Any], Scenario, list[str]]:
    """The scenario dict to write (paths relative to ``out``'s directory), the validated
    scenario, and notes on how the input maps onto spraylab: one per setting of the peer's
    run that does not carry over (formats.settings)."""
    from spraylab.config import RunSection
    from spraylab.formats import settings

    out_dir = (out.parent if out is not None else Path.cwd()).resolve()
    data: dict[str, Any] = {k: v for k, v in (base or {}).items()}
    notes: list[str] = []
    mapped: dict[str, Any] = {}
    hpcc = None
    if config is not None:
        if tool != "ns3":
            raise ScenarioError([f"--config {config}: is HPCC's config.txt (import ns3); htsim has none"])
        from spraylab.formats.rows import FormatError, read_bytes

        try:
            hpcc = settings.parse_hpcc_config(read_bytes(config).decode("utf-8", "replace"), config.name)
            mapped = settings.hpcc_config_overrides(hpcc)
        except FormatError as exc:
            raise ScenarioError([f"--config {config}: {exc}"]) from None
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
    for key, value in mapped.items():
        apply_override(data, key, value)
    limit_given = "time_limit" in data.get("run", {}) or "run.time_limit" in (overrides or {})
    last_start = _last_start_ps(tool, flows) if flows is not None and not limit_given else None
    if last_start:
        # A workload that starts late (HPCC's flows start at 2 s) must not run against the
        # default limit measured from 0: give it the default measured from its last start.
        default_ps = RunSection.model_fields["time_limit"].default
        limit = _time_text(last_start + default_ps)
        apply_override(data, "run.time_limit", limit)
        notes.append(
            f"run.time_limit = {limit}: the last flow starts at {_time_text(last_start)}; the limit is that plus "
            f"spraylab's default {_time_text(default_ps)} (--set run.time_limit=... to change it)"
        )
    for key, value in (overrides or {}).items():
        apply_override(data, key, value)
    with relative_to(out_dir):
        scenario = validate(data)
    transport = scenario.transport.model_dump(mode="json")
    if hpcc is not None:
        notes.extend(settings.hpcc_mapped_notes(hpcc, mapped))
        notes.extend(settings.hpcc_config_notes(hpcc, transport))
    elif tool == "ns3" and "transport" not in (base or {}):
        notes.append(
            "no HPCC config.txt (--config): its payload size, buffer, stop time and CC are not read; "
            "spraylab's defaults follow"
        )
        notes.extend(settings.spraylab_transport_notes("HPCC", transport))
    if tool == "htsim":
        notes.extend(settings.htsim_notes(transport))
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
    notes.extend(_unread_notes(tool, topology, flows))
    return data, scenario, notes


def _unread_notes(tool: str, topology: Path | None, flows: Path | None) -> list[str]:
    """ns-3 reads only what the first line counts: say which lines it (and spraylab) skip."""
    if tool != "ns3":
        return []
    from spraylab.formats import ns3

    notes = []
    for path, what in ((topology, "links"), (flows, "flows")):
        if path is None:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if what == "links":
            unread = ns3.parse_topology(text, path.name).unread_from
        else:
            unread = ns3.read_flows(text, path.name).unread_from
        if unread is not None:
            last = len(text.splitlines())
            notes.append(
                f"{path.name}: lines {unread}-{last} come after the {what} its first line counts; ns-3 does not "
                "read them, nor does spraylab"
            )
    return notes


def read_base(path: str) -> dict[str, Any]:
    """A scenario file's sections, with the files it names made absolute (they are relative to it)."""
    from spraylab.config import read_toml
    from spraylab.files import absolutize

    return absolutize(read_toml(path, "scenario"), Path(path).resolve().parent)
