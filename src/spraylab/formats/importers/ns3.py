"""``spraylab import ns3``: HPCC's ns-3 ``topology.txt`` and ``flow.txt``, and its
``config.txt`` (``--config``) for the run settings that carry over (:mod:`spraylab.formats.settings`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spraylab.formats.importers import IMPORT_TOOLS, Imported, ImportTool


class Ns3(ImportTool):
    name = "ns3"

    def read_config(self, path: Path) -> tuple[Any, dict[str, Any]]:
        from spraylab.formats import settings
        from spraylab.formats.rows import FormatError, read_bytes
        from spraylab.model.scenario import ScenarioError

        try:
            hpcc = settings.parse_hpcc_config(read_bytes(path).decode("utf-8", "replace"), path.name)
            return hpcc, settings.hpcc_config_overrides(hpcc)
        except FormatError as exc:
            raise ScenarioError([f"--config {path}: {exc}"]) from None

    def notes(self, imported: Imported) -> list[str]:
        from spraylab.formats import settings

        notes: list[str] = []
        if imported.config is not None:
            notes.extend(settings.hpcc_mapped_notes(imported.config, imported.mapped))
            notes.extend(settings.hpcc_config_notes(imported.config, imported.transport))
        elif "transport" not in (imported.base or {}):
            notes.append(
                "no HPCC config.txt (--config): its payload size, buffer, stop time and CC are not read; "
                "spraylab's defaults follow"
            )
            notes.extend(settings.spraylab_transport_notes("HPCC", imported.transport))
        if imported.topology is not None:
            host_of = imported.scenario.topology.host_of or {}
            if any(node != host for node, host in host_of.items()):
                notes.append(
                    "ns-3 node ids are not host ids here: spraylab numbers the hosts 0.. in node-id order "
                    f"(node {min(host_of)} is host 0); exports write node ids back"
                )
            notes.append("pg and dport of flow.txt are not modelled (spraylab has one data class)")
        return notes + _unread_notes(imported.topology, imported.flows)


def _unread_notes(topology: Path | None, flows: Path | None) -> list[str]:
    """ns-3 reads only what the first line counts: say which lines it (and spraylab) skip."""
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


IMPORT_TOOLS.register(Ns3())
