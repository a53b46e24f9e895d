"""The simulators ``spraylab import`` reads: one module each, registering an :class:`ImportTool`
(:data:`IMPORT_TOOLS`); :mod:`spraylab.formats.importer` does what is common to all of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from spraylab.registry import Registry


@dataclass
class Imported:
    """What an import read, for its tool's notes."""

    scenario: Any  # the validated scenario
    transport: dict[str, Any]  # its transport section, dumped
    topology: Path | None
    flows: Path | None
    base: dict[str, Any] | None  # the --base scenario's sections
    config: Any = None  # what read_config returned (None: no --config)
    mapped: dict[str, Any] = field(default_factory=dict)  # the overrides the config gave


class ImportTool:
    """One simulator's input files. ``name`` is the import's argument and the files' ``format``
    (``[topology] format``, ``[workload] format``)."""

    name: ClassVar[str] = ""

    def read_config(self, path: Path) -> tuple[Any, dict[str, Any]]:
        """The simulator's run settings file (``--config``): what it says, and the scenario
        overrides it maps to. A simulator without one refuses it."""
        from spraylab.model.scenario import ScenarioError

        readers = [
            n for n in IMPORT_TOOLS.names() if type(IMPORT_TOOLS[n]).read_config is not ImportTool.read_config
        ]
        which = ", ".join(f"import {n}" for n in readers)
        raise ScenarioError([f"--config {path}: is HPCC's config.txt ({which}); {self.name} has none"])

    def notes(self, imported: Imported) -> list[str]:
        """One note per setting of the simulator's run that does not carry over."""
        return []


IMPORT_TOOLS: Registry[ImportTool] = Registry("import", "spraylab.formats.importers", what="simulator")
