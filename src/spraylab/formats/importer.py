"""``spraylab import``: a scenario file that runs another simulator's input as it is.

The scenario refers to the files (``[topology] kind = "imported"``, ``[workload] kind =
"flows"``) by paths relative to the scenario file, so the three can move together; building it
here parses them all, so a file spraylab cannot read exactly is refused now, with its line and
field, not at run time. What differs between simulators (a settings file, the notes on what does
not carry over) is their module's, in :mod:`spraylab.formats.importers`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spraylab.model.files import relative_to
from spraylab.model.scenario import Scenario, ScenarioError, apply_override, validate


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
        rows, _nodes = parse_file(flows, flows.read_bytes(), tool)
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
    from spraylab.formats.importers import IMPORT_TOOLS, Imported
    from spraylab.model.scenario import RunSection

    reader = IMPORT_TOOLS.get(tool)
    out_dir = (out.parent if out is not None else Path.cwd()).resolve()
    data: dict[str, Any] = {k: v for k, v in (base or {}).items()}
    notes: list[str] = []
    read_config, mapped = reader.read_config(config) if config is not None else (None, {})
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
    notes.extend(reader.notes(Imported(scenario, transport, topology, flows, base, read_config, mapped)))
    return data, scenario, notes


def read_base(path: str) -> dict[str, Any]:
    """A scenario file's sections, with the files it names made absolute (they are relative to it)."""
    from spraylab.model.files import absolutize
    from spraylab.model.scenario import read_toml

    return absolutize(read_toml(path, "scenario"), Path(path).resolve().parent)


@dataclass(frozen=True)
class ImportedFile:
    """A scenario file made by :func:`import_file`: its ``text`` (headed by the scenario card),
    the validated ``scenario`` and the ``notes`` on what of the peer's run does not carry over."""

    text: str
    scenario: Scenario
    notes: list[str]

    def write(self, out: Path) -> None:
        """Write the file to ``out`` (a new file) atomically."""
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(self.text, encoding="utf-8")
        tmp.replace(out)


def import_file(
    tool: str,
    topology: Path | None = None,
    flows: Path | None = None,
    out: Path | None = None,
    base: str | None = None,
    ignore: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
    config: Path | None = None,
) -> ImportedFile:
    """``spraylab import``: the scenario file that runs ``tool``'s (``htsim``, ``ns3``) topology
    and flow files as they are, to be written to ``out`` (which must not exist; None: printed,
    paths relative to the working directory). ``base`` (a scenario file or ``example:NAME``)
    gives the other sections; ``ignore`` the htsim keys to read and drop; ``config`` HPCC's
    ``config.txt``. Every line of the inputs is checked now."""
    import tomli_w

    from spraylab.formats.importers import IMPORT_TOOLS
    from spraylab.model.library import EXAMPLE_PREFIX, example_path
    from spraylab.results.card import scenario_card

    if tool not in IMPORT_TOOLS:
        raise ScenarioError(
            [f"import {tool!r}: unknown simulator; allowed: {', '.join(IMPORT_TOOLS.names())}"]
        )
    if topology is None and flows is None:
        raise ScenarioError([f"import {tool}: give --topology and/or --flows"])
    if out is not None and out.exists():
        raise ScenarioError(
            [f"--out {out}: exists; refusing to overwrite it (remove it or choose another name)"]
        )
    base_data = None
    if base is not None:
        base_data = read_base(str(example_path(base)) if base.startswith(EXAMPLE_PREFIX) else base)
    data, scenario, notes = import_scenario(tool, topology, flows, out, base_data, ignore, overrides, config)
    header = (
        f"# Imported from {tool} by spraylab import.\n# "
        + "\n# ".join(scenario_card(scenario).lines)
        + "\n\n"
    )
    return ImportedFile(header + tomli_w.dumps(data), scenario, notes)
