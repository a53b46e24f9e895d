"""``spraylab import htsim``: an htsim fat-tree description (``.topo``) and connection matrix
(``.cm``); htsim has no run settings file, its UEC transport defaults are noted instead."""

from __future__ import annotations

from spraylab.formats.importers import IMPORT_TOOLS, Imported, ImportTool


class Htsim(ImportTool):
    name = "htsim"

    def notes(self, imported: Imported) -> list[str]:
        from spraylab.formats import settings
        from spraylab.formats.htsim import parse_cm

        notes = list(settings.htsim_notes(imported.transport))
        if imported.flows is not None:
            cm = parse_cm(imported.flows.read_text(encoding="utf-8"), imported.flows.name)
            if "send_done" in cm.signals:
                notes.append(
                    "send_done_trigger: spraylab starts dependent flows when the flow is received (its last "
                    "byte at the receiver), which is up to one ACK's trip earlier than htsim's sender-side "
                    "completion"
                )
        return notes


IMPORT_TOOLS.register(Htsim())
