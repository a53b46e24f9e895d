"""One registry mechanism: every named choice (schemes, congestion controls, recovery modes,
section kinds, table formats, export layouts, import tools, link-event actions, executors, study
metrics) is a :class:`spraylab.registry.Registry`; an entry registered in one place is usable
by name at once, and an unknown name is one line naming the allowed ones."""

from __future__ import annotations

import io
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from rich.console import Console

from spraylab.cli import check_format
from spraylab.formats.export import EXPORT_LAYOUTS, export
from spraylab.formats.importers import IMPORT_TOOLS
from spraylab.lb.base import REGISTRY, load_builtin_schemes, register
from spraylab.net.link_events import LINK_ACTIONS, fluid_actions
from spraylab.registry import Registry, RegistryError
from spraylab.results.tables import ResultTable, render
from spraylab.study.analyses import ANALYSES
from spraylab.study.metrics import METRICS
from spraylab.sweeps.executors import EXECUTORS
from spraylab.table_formats import TABLE_FORMATS, text_format
from spraylab.topology.base import TOPOLOGIES, LinkEvent
from spraylab.transport.cc.base import CONGESTION_CONTROLS, register_cc
from spraylab.transport.recovery.base import RECOVERIES, register_recovery
from spraylab.workload.base import WORKLOADS

REGISTRIES = (REGISTRY, CONGESTION_CONTROLS, RECOVERIES, TOPOLOGIES, WORKLOADS, TABLE_FORMATS,
              EXPORT_LAYOUTS, IMPORT_TOOLS, LINK_ACTIONS, EXECUTORS, METRICS, ANALYSES)  # fmt: skip


def test_every_named_choice_is_one_registry_and_the_old_names_still_work() -> None:
    for registry in REGISTRIES:
        assert isinstance(registry, Registry) and registry.names(), registry
    # the names other code registers with
    assert register == REGISTRY.register and load_builtin_schemes == REGISTRY.load_builtins
    assert register_cc == CONGESTION_CONTROLS.register and register_recovery == RECOVERIES.register
    assert {"ecmp", "dfs", "tor_assist"} <= set(REGISTRY) and "dcqcn" in CONGESTION_CONTROLS.classes


def test_an_unknown_name_is_one_line_naming_the_allowed_ones() -> None:
    with pytest.raises(RegistryError) as exc:
        REGISTRY.get("nope")
    line = str(exc.value)
    assert "\n" not in line and line.startswith("lb.scheme = 'nope': unknown scheme; allowed: ")
    assert line.endswith(", ".join(sorted(REGISTRY.classes)))
    assert (
        TABLE_FORMATS.unknown("xml") == "--format 'xml': unknown format; allowed: csv, json, markdown, table"
    )
    assert REGISTRY.find("nope") is None and REGISTRY.get("nope", None) is None and "nope" not in REGISTRY


def test_a_package_registry_imports_its_modules_once_and_keeps_entries_from_elsewhere() -> None:
    registry: Registry[typing.Any] = Registry("test.thing", "spraylab.net.link_events", what="thing")
    registry.register("mine")(object())
    # the package's modules registered into LINK_ACTIONS, not here: nothing of theirs, ours kept
    assert registry.names() == ["mine"]
    with pytest.raises(ValueError, match="no name"):
        registry.register(object())


def test_looking_up_a_builtin_imports_its_own_module_alone_and_an_unknown_name_imports_all() -> None:
    # in a fresh process: this one has imported every scheme already
    code = """
import sys
from spraylab.lb.base import REGISTRY
from spraylab.workload.base import WORKLOADS
assert REGISTRY.find("rps").name == "rps" and WORKLOADS.find("incast") is not None
schemes = {m for m in sys.modules if m.startswith("spraylab.lb.") and m != "spraylab.lb.base"}
assert schemes == {"spraylab.lb.rps"}, schemes
assert "spraylab.lb.tor_assist" not in sys.modules
assert REGISTRY.find("no_such_scheme") is None and "spraylab.lb.tor_assist" in sys.modules
assert {"dfs", "reps", "tor_assist"} <= set(REGISTRY.names())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_no_name_is_registered_twice_so_a_lookup_by_own_module_is_the_full_lookup() -> None:
    """A lookup imports the name's own module only; that finds what importing every module
    finds as long as no built-in name is registered by two modules (or twice by one)."""
    code = """
import collections
from spraylab import registry
seen = collections.defaultdict(list)
add = registry.Registry._add
def recording(self, name, entry):
    seen[(self.key, name)].append(getattr(entry, "__module__", "?"))
    add(self, name, entry)
registry.Registry._add = recording
from test_registry_generic import REGISTRIES
for r in REGISTRIES:
    r.load_builtins()
twice = {k: v for k, v in seen.items() if len(v) > 1}
assert not twice, twice
assert len(seen) > 50, len(seen)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=Path(__file__).parent
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_table_format_is_one_registered_function() -> None:
    @text_format("tsv")
    def to_tsv(tables: list[ResultTable]) -> str:
        return "\n".join("\t".join([r.key, *map(str, r.values)]) for t in tables for r in t.rows)

    try:
        table = ResultTable("t", ["a"])
        table.add("x", "drops", "count", [3], ["3"])
        out = io.StringIO()
        assert check_format("tsv") == "tsv"
        render("tsv", [table], Console(file=out))
        assert out.getvalue() == "drops\t3\n"
    finally:
        TABLE_FORMATS.unregister("tsv")
    assert "tsv" not in TABLE_FORMATS


def test_an_export_layout_is_one_registered_function() -> None:
    import pandas as pd

    @EXPORT_LAYOUTS.register("ids")
    def ids(flows: pd.DataFrame, done: pd.DataFrame, naming: typing.Any) -> list[str]:
        return [str(int(f)) for f in done["flow_id"]]

    try:
        flows = pd.DataFrame(
            {"flow_id": [0, 1, 2], "acked_ps": [30, -1, 10], "src": [0, 0, 1], "dst": [1, 1, 0]}
        )
        exported = export(flows, {"topology": {"kind": "leaf_spine"}, "workload": []}, "ids")
        # flows in the order their senders had every byte acknowledged; the unacknowledged one left out
        assert exported.text == "2\n0\n" and exported.left_out == 1
    finally:
        EXPORT_LAYOUTS.unregister("ids")


def test_the_schema_allows_exactly_the_registered_link_actions() -> None:
    allowed = typing.get_args(LinkEvent.model_fields["action"].annotation)
    assert set(allowed) == set(LINK_ACTIONS)
    # a flow-level engine has no packets to lose: it models rate changes only
    assert set(fluid_actions()) == {"down", "degrade"}
