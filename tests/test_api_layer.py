"""What the command line prints comes from public Python functions: ``load_scenario`` finds
what a ``SCENARIO`` argument names, ``choices()`` is ``spraylab list`` as data (read from the
registries), ``summary_table`` is the table ``run`` prints. Each is checked against the source
it reads (the registry, the file, the CLI's own output), not against a copy of its output."""

from __future__ import annotations

from pathlib import Path

import pytest
from cliutil import invoke

import spraylab
from spraylab.lb.base import REGISTRY, load_builtin_schemes
from spraylab.model.library import EXAMPLE_PREFIX, example_names, example_path, preset_names
from spraylab.model.scenario import Scenario, ScenarioError
from spraylab.topology.base import TOPOLOGIES
from spraylab.transport.cc.base import CONGESTION_CONTROLS, cc_sections
from spraylab.workload.base import WORKLOADS


def test_load_scenario_reads_files_presets_and_examples(tmp_path: Path) -> None:
    """A preset and an example are the files they name, overrides applied as with_overrides;
    a name that finds nothing is one line naming what exists."""
    preset = spraylab.load_scenario("demo", {"run.seed": 7})
    assert preset.run.seed == 7 and preset.name == "demo"
    name = example_names()[0]
    assert spraylab.load_scenario(EXAMPLE_PREFIX + name) == Scenario.load(example_path(name))
    with pytest.raises(ScenarioError) as err:
        spraylab.load_scenario(str(tmp_path / "nope.toml"))
    assert len(err.value.lines) == 1 and ", ".join(preset_names()) in err.value.lines[0]
    with pytest.raises(ScenarioError, match="no such example scenario"):
        spraylab.load_scenario("example:nope")


def test_choices_are_the_registries() -> None:
    """Every registered scheme, kind and congestion control, with its keys and defaults."""
    load_builtin_schemes()
    found = spraylab.choices()
    assert [c.name for c in found.schemes] == sorted(REGISTRY)
    for c in found.schemes:
        assert c.keys == {k: f.default for k, f in REGISTRY[c.name].Params.model_fields.items()}
    assert [c.name for c in found.topologies] == TOPOLOGIES.kinds()
    assert [c.name for c in found.workloads] == WORKLOADS.kinds()
    assert [c.name for c in found.congestion_controls] == CONGESTION_CONTROLS.names()
    sections = cc_sections()
    for c in found.congestion_controls:
        cls = CONGESTION_CONTROLS.get(c.name)
        assert c.section == (f"transport.{cls.params_section}" if cls.params_section else "")
        if cls.params_section:
            assert sections[cls.params_section] is cls
            assert c.keys == {k: f.default for k, f in cls.section_model.model_fields.items()}
    assert found.presets == preset_names() and "demo" in found.presets
    assert [c.name for c in found.examples] == [EXAMPLE_PREFIX + n for n in example_names()]


def test_run_prints_the_api_summary_table(tmp_path: Path) -> None:
    """``spraylab run --format csv`` prints the rows of summary_table over the same run's summary
    (deterministic: the same scenario gives the same numbers), in the catalog's order."""
    import csv
    import io

    from spraylab.cli.common import parse_overrides
    from spraylab.results.summary import summary_table

    args = ["topology.leaves=2", "topology.spines=2", "topology.hosts_per_leaf=2", "workload.size=20KB"]
    args += ["run.progress=false"]
    sets = [part for arg in args for part in ("--set", arg)]
    cli = invoke("run", "example:core/permutation_ecmp", *sets, "--format", "csv", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    header, *rows = [r for r in csv.reader(io.StringIO(cli.stdout)) if r and not r[0].startswith("#")]
    assert header[:4] == ["table", "metric", "key", "unit"]
    summary = spraylab.run(
        spraylab.load_scenario("example:core/permutation_ecmp", parse_overrides(args))
    ).summary
    table = summary_table("t", {"x": summary})
    assert [r[2] for r in rows] == [row.key for row in table.rows]
    for printed, row in zip(rows, table.rows, strict=True):
        assert printed[4] == ("" if row.values[0] is None else str(row.values[0])), row.key
